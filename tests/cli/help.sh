#!/bin/sh
# tests/cli/help.sh - what a new user tries first: `--help` on every command
# and tokenizer subcommand, `--version`, the manual (docs/laya.1) and the
# bash completion (dist/laya.bash-completion) covering every command, and
# progress output only on a terminal. Ends with "N passed, N failed".
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LAYA=$ROOT/$BUILD/laya
T=$(mktemp -d /tmp/laya-cli-help-XXXXXX)
# Never the user's own memory or settings: a store of its own under $T.
export XDG_DATA_HOME="$T/xdg" XDG_CONFIG_HOME="$T/config"
unset LAYA_MEMORY
trap 'rm -rf "$T"' EXIT
passed=0
failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }
check() { name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }

# The commands, as `laya --help` lists them.
CMDS=$("$LAYA" --help | sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p')
check "laya --help lists the commands" [ "$(echo "$CMDS" | wc -w)" -ge 8 ]
SUBS="train encode decode info"

# --- --help everywhere ----------------------------------------------------------
for c in $CMDS; do
    for h in --help -h; do
        "$LAYA" "$c" "$h" >"$T/out" 2>"$T/err"
        rc=$?
        if [ $rc -eq 0 ] && grep -q "^usage: laya $c" "$T/out" && [ ! -s "$T/err" ]; then ok "laya $c $h"; else
            bad "laya $c $h (status $rc)"; cat "$T/out" "$T/err"; fi
    done
    "$LAYA" "$c" --frobnicate >"$T/out" 2>"$T/err" </dev/null
    rc=$?
    if [ $rc -ne 0 ] && grep -q -- "--frobnicate" "$T/err"; then ok "laya $c --frobnicate is refused, naming it"; else
        bad "laya $c --frobnicate is refused, naming it (status $rc)"; cat "$T/err"; fi
done
for s in $SUBS; do
    "$LAYA" tokenizer "$s" --help >"$T/out" 2>"$T/err"
    rc=$?
    if [ $rc -eq 0 ] && grep -q "^usage: laya tokenizer $s" "$T/out" && [ "$(wc -l <"$T/out")" -ge 2 ]; then
        ok "laya tokenizer $s --help"
    else
        bad "laya tokenizer $s --help (status $rc)"; cat "$T/out" "$T/err"
    fi
done
"$LAYA" tokenizer nosuch --help >"$T/out" 2>"$T/err"
check "laya tokenizer nosuch --help: a usage error" sh -c "[ $? -eq 2 ] && grep -q nosuch '$T/err'"

# --- --version --------------------------------------------------------------------
want=$(sed -n 's/^#define LAYA_VERSION "\(.*\)"/\1/p' "$ROOT/include/laya.h")
check "laya --version prints laya $want" [ "$("$LAYA" --version)" = "laya $want" ]

# --- the manual -------------------------------------------------------------------
MAN=$ROOT/docs/laya.1
missing=""
for c in $CMDS; do grep -q "^\.SS \"laya $c" "$MAN" || missing="$missing $c"; done
for s in $SUBS; do grep -q "^\.SS \"laya tokenizer $s" "$MAN" || missing="$missing tokenizer-$s"; done
check "the manual has a section for every command${missing:+ (missing:$missing)}" [ -z "$missing" ]
if command -v groff >/dev/null; then
    groff -man -ww -z "$MAN" 2>"$T/groff.err"
    check "groff reads the manual without a warning" sh -c "[ ! -s '$T/groff.err' ]"
    [ -s "$T/groff.err" ] && cat "$T/groff.err"
else
    bad "groff is missing (scripts/deps.sh installs groff-base)"
fi

# --- bash completion -------------------------------------------------------------
complete_words() {  # WORDS... (the last one is completed): prints the candidates
    bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _laya; printf "%s\n" "${COMPREPLY[@]}"' \
        sh "$ROOT/dist/laya.bash-completion" "$LAYA" "$@" | sort | tr '\n' ' '
}
check "completion: the commands" [ "$(complete_words "")" = "$(printf '%s\n' $CMDS --help --version | sort | tr '\n' ' ')" ]
check "completion: tokenizer subcommands" [ "$(complete_words tokenizer "")" = "--help decode encode info train " ]
check "completion: tokenizer train options" [ "$(complete_words tokenizer train -)" = "--help --vocab -o " ]
check "completion: --mo completes to --model" [ "$(complete_words complete --mo)" = "--model " ]
check "completion: --device values" [ "$(complete_words train --device "")" = "cpu cuda " ]
miss=""
for c in $(echo "$CMDS" | grep -v '^tokenizer$') $(for s in $SUBS; do echo "tokenizer:$s"; done); do
    c=$(echo "$c" | tr ':' ' ')
    got=" $(complete_words $c -)"
    for o in $("$LAYA" $c --help | grep -oE -- '(^|[][ (|])--[a-z][a-z0-9-]*' | sed 's/^[^-]*//' | sort -u); do
        case $got in *" $o "*) ;; *) miss="$miss $(echo $c | tr ' ' ':'):$o" ;; esac
    done
done
check "completion: every option of every command's --help${miss:+ (missing:$miss)}" [ -z "$miss" ]

# --- progress only on a terminal -------------------------------------------------
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
    echo "Best regards, and thank you for the quick reply. The meeting is on Monday at ten."
done >"$T/text.txt"
"$LAYA" tokenizer train --vocab 300 -o "$T/t.tok" "$T/text.txt" 2>"$T/tt.err" &&
    "$LAYA" tokenizer encode --tok "$T/t.tok" "$T/text.txt" "$T/t.tokens" 2>"$T/te.err" &&
    "$LAYA" train --train "$T/t.tokens" --valid "$T/t.tokens" --tok "$T/t.tok" -o "$T/run" --steps 40 \
        --H 16 --D 8 --L 1 --W 2 --batch 4 --seq 16 --threads 1 --eval-every 20 2>"$T/tr.err"
check "tokenizer train, encode and train run with stderr in a file" [ $? -eq 0 ]
cr=$(printf '\r')
for f in tt te tr; do
    if grep -q "$cr" "$T/$f.err" || grep -q '\[#\|\[\.\.\.\.' "$T/$f.err"; then
        bad "no progress in a log ($f)"; cat -A "$T/$f.err" | head -5
    else ok "no progress in a log ($f)"; fi
done
check "a log still has the results (wrote, bytes/token, valid loss)" sh -c \
    "grep -q '^wrote ' '$T/tt.err' && grep -q 'bytes/token' '$T/te.err' && grep -q 'valid loss' '$T/tr.err'"
# ... and on a terminal the progress is there (so the checks above can fail).
python3 - "$LAYA" "$T" <<'PY' >"$T/pty.out" 2>&1
import os, subprocess, sys
laya, t = sys.argv[1], sys.argv[2]
master, slave = os.openpty()
p = subprocess.Popen([laya, "train", "--train", t + "/t.tokens", "--valid", t + "/t.tokens", "--tok",
                      t + "/t.tok", "-o", t + "/run2", "--steps", "40", "--H", "16", "--D", "8", "--L", "1",
                      "--W", "2", "--batch", "4", "--seq", "16", "--threads", "1", "--eval-every", "20"],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave)
os.close(slave)
out = b""
while True:
    try:
        b = os.read(master, 65536)
    except OSError:
        break
    if not b:
        break
    out += b
p.wait()
sys.exit(0 if p.returncode == 0 and b"\r\x1b[K[" in out else 1)
PY
check "on a terminal, laya train draws its progress bar" [ $? -eq 0 ]

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
