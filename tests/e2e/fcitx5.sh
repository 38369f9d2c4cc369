#!/bin/sh
# tests/e2e/fcitx5.sh - the fcitx5 addon end to end (make test-e2e): under
# xvfb-run and dbus-run-session with a throw-away HOME holding an fcitx5
# profile (keyboard-us + pinyin, pinyin active) and our addon file, fcitx5
# and a GTK3 window (tests/e2e/window.py, through the GTK IM module) typed
# into with xdotool (tests/e2e/fcitx5_drive.py). The model is the shipped
# one (MODEL=... to change it); what it should suggest is asked of `laya
# serve --stdio --no-learn` on the same model (the addon learns into the
# throw-away HOME's memory, which the checks of its feedback read with `laya
# memory list` and the privacy checks scan byte by byte: memory.db, -wal and
# -shm). Ends with "N passed, N failed"; where fcitx5 or the display packages
# are missing it skips (one "skip" line, counted as passed).
# SHOT=path saves the screenshot of Laya's list (default $BUILD/e2e/fcitx5-laya.png).
# PYTHON_GI: a Python 3 with Debian's python3-gi (default /usr/bin/python3).
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LAYA=$ROOT/$BUILD/laya
ADDON=$ROOT/$BUILD/fcitx5/liblaya-fcitx5.so
MODEL=${MODEL:-$ROOT/models/default.safetensors}
SHOT=${SHOT:-$ROOT/$BUILD/e2e/fcitx5-laya.png}
PYTHON_GI=${PYTHON_GI:-/usr/bin/python3}
cd "$ROOT" || exit 1

skip() {
    echo "skip fcitx5 end to end: $1 (scripts/deps.sh installs it)"
    echo "1 passed, 0 failed"
    exit 0
}
for tool in fcitx5 xvfb-run dbus-run-session xdotool xwininfo import; do
    command -v $tool >/dev/null || skip "no $tool"
done
ADDONDIR=$(pkg-config --variable=libdir Fcitx5Core 2>/dev/null)/fcitx5
[ -f "$ADDONDIR/libpinyin.so" ] || skip "no pinyin engine (fcitx5-chinese-addons)"
ls /usr/lib/*/gtk-3.0/3.0.0/immodules/im-fcitx5.so >/dev/null 2>&1 || skip "no GTK3 IM module (fcitx5-frontend-gtk3)"
"$PYTHON_GI" -c 'import gi; gi.require_version("Gtk", "3.0"); from gi.repository import Gtk' 2>/dev/null ||
    skip "no GTK3 for Python (python3-gi, gir1.2-gtk-3.0)"
if [ ! -f "$ADDON" ] || [ ! -x "$LAYA" ]; then
    echo "FAIL build the addon and laya first (make all fcitx5)"
    echo "0 passed, 1 failed"
    exit 1
fi

T=$(mktemp -d /tmp/laya-fcitx5-XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$(dirname "$SHOT")"

# "Monday morning" is typed as "Monday morninx", Backspace, "g": the decision
# sees the same three contexts in turn.
printf '%s\n' '{"op":"suggest","session":"zh","context":"你好","k":3,"decide":true}' \
              '{"op":"suggest","session":"en","context":"Best re","k":3,"decide":true}' \
              '{"op":"suggest","session":"bs","context":"Monday morninx","k":3,"decide":true}' \
              '{"op":"suggest","session":"bs","context":"Monday mornin","k":3,"decide":true}' \
              '{"op":"suggest","session":"bs","context":"Monday morning","k":3,"decide":true}' \
              '{"op":"suggest","session":"us","context":"the United Sta","k":3,"decide":true}' |
    "$LAYA" serve --stdio --no-learn --model "$MODEL" >"$T/replies" 2>"$T/serve.log"
"$PYTHON_GI" - "$T/replies" "$T/expect.json" <<'PY' || { cat "$T/serve.log"; echo "FAIL laya serve answers"; echo "0 passed, 1 failed"; exit 1; }
import json, sys
r = [json.loads(l)["suggestions"] for l in open(sys.argv[1], encoding="utf-8")]
expect = {"你好": r[0], "Best re": r[1], "Monday morning": r[4], "the United Sta": r[5]}
assert all(expect.values()), "the model suggests nothing for a test context"
json.dump(expect, open(sys.argv[2], "w", encoding="utf-8"), ensure_ascii=False)
PY

# The throw-away HOME: one group, keyboard-us then pinyin, new input
# contexts start on pinyin; no pop-ups of fcitx5's own on focus.
H=$T/home
mkdir -p "$H/.config/fcitx5" "$H/.local/share/fcitx5/addon" "$T/run" && chmod 700 "$T/run"
cat >"$H/.config/fcitx5/profile" <<'INI'
[Groups/0]
Name=Default
Default Layout=us
DefaultIM=pinyin

[Groups/0/Items/0]
Name=keyboard-us
Layout=

[Groups/0/Items/1]
Name=pinyin
Layout=

[GroupOrder]
0=Default
INI
cat >"$H/.config/fcitx5/config" <<'INI'
[Behavior]
ActiveByDefault=True
ShareInputState=No
ShowInputMethodInformation=False
showInputMethodInformationWhenFocusIn=False
ShowFirstInputMethodInformation=False
INI
sed "s|@LIBRARY@|${ADDON%.so}|; s|@VERSION@|$(sed -n 's/^#define LAYA_VERSION "\(.*\)"/\1/p' include/laya.h)|" \
    dist/laya-fcitx5.conf.in >"$H/.local/share/fcitx5/addon/laya.conf"

# A display of our own, away from other tests' (xvfb-run -a moves on from
# there if it is taken).
DISPLAY_NUM=$((200 + $$ % 500))
HOME=$H XDG_CONFIG_HOME=$H/.config XDG_CACHE_HOME=$H/.cache XDG_DATA_HOME=$H/.local/share \
XDG_RUNTIME_DIR=$T/run GSETTINGS_BACKEND=memory NO_AT_BRIDGE=1 \
    xvfb-run -a -n "$DISPLAY_NUM" -s "-screen 0 800x400x24" \
    dbus-run-session -- "$PYTHON_GI" tests/e2e/fcitx5_drive.py "$T" "$MODEL" "$T/expect.json" "$SHOT" "$LAYA" \
    2>"$T/stderr.log"
rc=$?
# fcitx5's and the desktop services' chatter, shown only when something failed.
if [ $rc -ne 0 ]; then
    tail -n 30 "$T/stderr.log"
    tail -n 40 "$T"/fcitx5-*.log
fi
exit $rc
