#!/bin/sh
# tests/e2e/ibus.sh - the IBus engine end to end (make test-e2e), from a
# fresh install: `make install-ibus` into a temporary PREFIX, then, under
# Xvfb and dbus-run-session with a throw-away HOME (dconf settings
# included), ibus-daemon pointed at that prefix's component, a GTK3 window
# (tests/e2e/window.py) typed into with xdotool (tests/e2e/drive.py has
# every check). Ends with "N passed, N failed".
# MODEL=path: the model the engine is given (default: a tiny one trained
# here on a fixture text, so the checks do not move with the shipped model).
# The intent, notes and password-prompt checks use the shipped model
# (models/default.safetensors and its intent head) whatever MODEL is.
# SHOT=path saves the screenshot of the ghost text (default $BUILD/e2e/ibus-ghost.png).
# TEXT=... the English text typed (default "Best re"). The README's picture:
#   MODEL=models/default.safetensors TEXT="Could you please send me the" SHOT=docs/ibus-ghost.png sh tests/e2e/ibus.sh
# PYTHON_GI: a Python 3 with Debian's python3-gi (default /usr/bin/python3).
BUILD=${BUILD:-build}
# The fixture model is trained here, so it is unsigned (tests/cli/sign.sh
# covers signatures).
export LAYA_ALLOW_UNSIGNED=1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LAYA=$ROOT/$BUILD/laya
SHOT=${SHOT:-$ROOT/$BUILD/e2e/ibus-ghost.png}
PYTHON_GI=${PYTHON_GI:-/usr/bin/python3}
T=$(mktemp -d /tmp/laya-e2e-XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$ROOT" || exit 1
mkdir -p "$(dirname "$SHOT")"
fail() { echo "FAIL $1"; echo "0 passed, 1 failed"; exit 1; }

for tool in xvfb-run dbus-run-session ibus-daemon xdotool xwininfo import gsettings make; do
    command -v $tool >/dev/null || fail "missing $tool (see make test-e2e)"
done

M=${MODEL:-}
if [ -z "$M" ]; then
    cat >"$T/text.txt" <<'TXT'
Best regards, and thank you for the quick reply.
The meeting is on Monday at ten. Please bring the report and the slides.
I would like to book a table for two people tonight.
他听完点了点头。这家店的外卖很好吃，我们明天再来。
TXT
    for i in 1 2 3 4 5 6 7 8; do cat "$T/text.txt"; done >"$T/big.txt"
    M=$T/out/best.safetensors
    if ! { "$LAYA" tokenizer train --vocab 320 -o "$T/t.tok" "$T/big.txt" &&
           "$LAYA" tokenizer encode --tok "$T/t.tok" "$T/big.txt" "$T/tr.tokens" &&
           "$LAYA" train --train "$T/tr.tokens" --valid "$T/tr.tokens" --tok "$T/t.tok" -o "$T/out" \
               --steps 800 --H 48 --D 16 --L 1 --W 3 --batch 8 --seq 32 --threads 1 \
               --eval-every 800 --lr 1e-2 --warmup 20 --dropout 0; } >"$T/train.log" 2>&1 ||
       [ ! -f "$M" ]; then
        cat "$T/train.log"
        fail "build the fixture model"
    fi
fi
M=$(cd "$(dirname "$M")" && pwd)/$(basename "$M")

# The install path a new user takes, into a prefix of our own: the
# component goes where this ibus-daemon is told to look.
P=$T/prefix
make -s BUILD="$BUILD" PREFIX="$P" IBUS_COMPONENT_DIR="$P/share/ibus/component" install-ibus \
    >"$T/install.log" 2>&1 || { cat "$T/install.log"; fail "make install-ibus into a fresh prefix"; }

# A display number of our own (from the pid), so parallel X tests do not
# collide; xvfb-run -a moves on from it if it is taken.
mkdir -p "$T/home" "$T/run" && chmod 700 "$T/run"
HOME=$T/home XDG_CONFIG_HOME=$T/home/.config XDG_CACHE_HOME=$T/home/.cache \
XDG_DATA_HOME=$T/home/.local/share XDG_RUNTIME_DIR=$T/run NO_AT_BRIDGE=1 \
    xvfb-run -a -n $((200 + $$ % 700)) -s "-screen 0 800x400x24" \
    dbus-run-session -- "$PYTHON_GI" tests/e2e/drive.py "$LAYA" "$P" "$T" "$M" "$SHOT" \
    2>"$T/stderr.log"
rc=$?
# The desktop services' chatter goes to a log, shown only when something failed.
[ $rc -ne 0 ] && tail -n 40 "$T/stderr.log"
exit $rc
