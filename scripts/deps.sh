#!/bin/sh
# scripts/deps.sh - installs the Debian 12 packages Laya builds and tests with
# (only what is missing; needs root or sudo). Extra package names may be given.
set -eu
pkgs="build-essential libjansson-dev libsodium-dev pkg-config python3 gnuplot-nox $*"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
echo "installing:$missing"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q $missing
