#!/bin/sh
# tests/e2e/settings.sh - the settings window end to end (make
# test-e2e-settings, and make test where laya-settings was built): under
# xvfb-run and dbus-run-session with a throw-away HOME, XDG_CONFIG_HOME and
# XDG_DATA_HOME holding a memory with a few entries, `laya settings` is
# started and driven with real key presses (xdotool, through the window's
# mnemonics); tests/e2e/settings_drive.py has every check. Ends with
# "N passed, N failed"; where the display tools are missing it skips (one
# "skip" line, counted as passed).
# SHOT=path saves the screenshot of the window (default $BUILD/e2e/settings.png;
# the README's picture: SHOT=docs/settings.png sh tests/e2e/settings.sh).
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LAYA=$ROOT/$BUILD/laya
SHOT=${SHOT:-$ROOT/$BUILD/e2e/settings.png}
cd "$ROOT" || exit 1

skip() {
    echo "skip settings window end to end: $1 (scripts/deps.sh installs it)"
    echo "1 passed, 0 failed"
    exit 0
}
for tool in xvfb-run dbus-run-session xdotool xwininfo import python3; do
    command -v $tool >/dev/null || skip "no $tool"
done
[ -x "$ROOT/$BUILD/laya-settings" ] || skip "no $BUILD/laya-settings (make settings; needs libgtk-3-dev)"
T=$(mktemp -d /tmp/laya-settings-e2e-XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$(dirname "$SHOT")" "$T/home" "$T/run" && chmod 700 "$T/run"
# A display number of our own (from the pid), so parallel X tests do not
# collide; xvfb-run -a moves on from it if it is taken.
HOME=$T/home XDG_CONFIG_HOME=$T/home/.config XDG_CACHE_HOME=$T/home/.cache \
XDG_DATA_HOME=$T/home/.local/share XDG_RUNTIME_DIR=$T/run NO_AT_BRIDGE=1 GTK_IM_MODULE=gtk-im-context-simple \
    xvfb-run -a -n $((300 + $$ % 600)) -s "-screen 0 800x700x24" \
    dbus-run-session -- python3 tests/e2e/settings_drive.py "$LAYA" "$SHOT" "$T" \
    2>"$T/stderr.log"
rc=$?
[ $rc -ne 0 ] && tail -n 40 "$T/stderr.log"
exit $rc
