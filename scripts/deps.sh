#!/bin/sh
# scripts/deps.sh - installs the Debian 12 packages Laya builds and tests with
# (only what is missing; needs root or sudo).
#   scripts/deps.sh          build + unit/CLI tests + peers + IBus end-to-end test
#   scripts/deps.sh --build  only what building and running `laya` needs
set -eu
build="build-essential pkg-config libjansson-dev libsodium-dev libsqlite3-dev python3 gnuplot-nox"
# corpus extractor tests convert Traditional Chinese; the Presage and libime
# peer tests (libime's headers need fcitx5's, and its lattice header, which
# the learning adapter uses, Boost's); the IBus engine and its
# end-to-end test under Xvfb; the fcitx5 addon (core and module headers) and
# its end-to-end test (fcitx5 with pinyin, the GTK3 IM module, xwininfo, a
# font with Chinese characters for the screenshot); GTK 3's headers for the
# settings window (laya-settings); tmux runs the terminal demo's screen
# test; groff checks the manual.
tests="opencc presage libpresage-dev libpresage-data
       libimecore-dev libfcitx5utils-dev libime-data-language-model libboost-dev
       libibus-1.0-dev ibus ibus-gtk3 xvfb xauth xdotool x11-utils imagemagick dbus dbus-x11
       dconf-gsettings-backend libglib2.0-bin python3-gi gir1.2-gtk-3.0 gir1.2-ibus-1.0
       libfcitx5core-dev fcitx5-modules-dev fcitx5 fcitx5-chinese-addons fcitx5-frontend-gtk3
       fonts-wqy-microhei libgtk-3-dev tmux groff-base"
pkgs=$build
[ "${1:-}" = "--build" ] || pkgs="$build $tests"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
echo "installing:$missing"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing
