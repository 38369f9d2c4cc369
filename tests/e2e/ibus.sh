#!/bin/sh
# tests/e2e/ibus.sh - the IBus engine end to end (make test-e2e): a tiny
# model trained here on a fixture text, then, under xvfb-run and
# dbus-run-session with a throw-away HOME, ibus-daemon with our component,
# a GTK3 window (tests/e2e/window.py) typed into with xdotool
# (tests/e2e/drive.py). Ends with "N passed, N failed".
# SHOT=path saves the screenshot of the ghost text (default $BUILD/e2e/ibus-ghost.png).
# PYTHON_GI: a Python 3 with Debian's python3-gi (default /usr/bin/python3).
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LAYA=$ROOT/$BUILD/laya
ENGINE=$ROOT/$BUILD/ibus-engine-laya
SHOT=${SHOT:-$ROOT/$BUILD/e2e/ibus-ghost.png}
PYTHON_GI=${PYTHON_GI:-/usr/bin/python3}
T=$(mktemp -d /tmp/laya-e2e-XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$ROOT" || exit 1
mkdir -p "$(dirname "$SHOT")"

for tool in xvfb-run dbus-run-session ibus-daemon xdotool import; do
    command -v $tool >/dev/null || { echo "FAIL missing $tool (see make test-e2e)"; echo "0 passed, 1 failed"; exit 1; }
done

cat >"$T/text.txt" <<'TXT'
Best regards, and thank you for the quick reply.
The meeting is on Monday at ten. Please bring the report and the slides.
I would like to book a table for two people tonight.
TXT
for i in 1 2 3 4 5 6 7 8; do cat "$T/text.txt"; done >"$T/big.txt"
M=$T/out/best.safetensors
if ! { "$LAYA" tokenizer train --vocab 300 -o "$T/t.tok" "$T/big.txt" &&
       "$LAYA" tokenizer encode --tok "$T/t.tok" "$T/big.txt" "$T/tr.tokens" &&
       "$LAYA" train --train "$T/tr.tokens" --valid "$T/tr.tokens" --tok "$T/t.tok" -o "$T/out" \
           --steps 300 --H 32 --D 16 --L 1 --W 3 --batch 8 --seq 32 --threads 1 \
           --eval-every 300 --lr 1e-2 --warmup 20 --dropout 0; } >"$T/train.log" 2>&1 ||
   [ ! -f "$M" ]; then
    cat "$T/train.log"
    echo "FAIL build the fixture model"
    echo "0 passed, 1 failed"
    exit 1
fi
"$LAYA" complete --model "$M" -k 3 --json "Best re" >"$T/expect.json" || exit 1

mkdir -p "$T/home" "$T/run" && chmod 700 "$T/run"
HOME=$T/home XDG_CONFIG_HOME=$T/home/.config XDG_CACHE_HOME=$T/home/.cache \
XDG_DATA_HOME=$T/home/.local/share XDG_RUNTIME_DIR=$T/run GSETTINGS_BACKEND=memory \
LAYA_MODEL=$M NO_AT_BRIDGE=1 \
    xvfb-run -a -s "-screen 0 800x400x24" \
    dbus-run-session -- "$PYTHON_GI" tests/e2e/drive.py "$ENGINE" "$T" "$T/expect.json" "$SHOT" \
    2>"$T/stderr.log"
rc=$?
# The desktop services' chatter goes to a log, shown only when something failed.
[ $rc -ne 0 ] && tail -n 40 "$T/stderr.log"
exit $rc
