#!/bin/sh
# tests/cli/tokenizer.sh - `laya tokenizer` end to end on the fixtures:
# train, encode, decode (byte-exact), info, and clear errors for bad input.
BUILD=${BUILD:-build}
LAYA=${LAYA:-$BUILD/laya}
FIX=tests/fixtures/tok
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1"; }
check() { name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }

check "train writes a tokenizer" "$LAYA" tokenizer train --vocab 600 -o "$tmp/t.tok" "$FIX/mixed.txt" 2>"$tmp/train.err"
check "train reports what it wrote, without progress (stderr is a file)" sh -c \
    "grep -q '^wrote ' '$tmp/train.err' && ! grep -q 'counting chunks' '$tmp/train.err'"
check "encode" "$LAYA" tokenizer encode --tok "$tmp/t.tok" "$FIX/mixed.txt" "$tmp/m.tokens" 2>/dev/null
check "decode is byte-exact" sh -c "'$LAYA' tokenizer decode --tok '$tmp/t.tok' '$tmp/m.tokens' | cmp -s - '$FIX/mixed.txt'"
# Random bytes (invalid UTF-8, NUL) round trip through the files too.
head -c 20000 /dev/urandom >"$tmp/rand.bin"
"$LAYA" tokenizer encode --tok "$tmp/t.tok" "$tmp/rand.bin" "$tmp/r.tokens" 2>/dev/null
check "random bytes round trip" sh -c "'$LAYA' tokenizer decode --tok '$tmp/t.tok' '$tmp/r.tokens' | cmp -s - '$tmp/rand.bin'"
: >"$tmp/empty.txt"
"$LAYA" tokenizer encode --tok "$tmp/t.tok" "$tmp/empty.txt" "$tmp/e.tokens" 2>/dev/null
check "empty file is BOS only" test "$(wc -c <"$tmp/e.tokens")" -eq 58
# --bos-every N: the same tokens with a BOS before every Nth line (lines N, 2N, ...).
check "encode --bos-every 2" "$LAYA" tokenizer encode --tok "$tmp/t.tok" --bos-every 2 "$FIX/mixed.txt" "$tmp/b.tokens" 2>/dev/null
check "--bos-every 2 decodes to the same text" sh -c "'$LAYA' tokenizer decode --tok '$tmp/t.tok' '$tmp/b.tokens' | cmp -s - '$FIX/mixed.txt'"
check "--bos-every 2 is the plain stream with a BOS after every second line break" python3 - "$tmp/m.tokens" "$tmp/b.tokens" "$FIX/mixed.txt" <<'PY'
import array, sys
def ids(p):
    a = array.array("H"); a.frombytes(open(p, "rb").read()[56:]); return list(a)
plain, bos, text = ids(sys.argv[1]), ids(sys.argv[2]), open(sys.argv[3], "rb").read()
BOS = 256
# a BOS after break n (n = 1, 2, ...) when n is even, after the run of breaks
# it lies in, when the text goes on after the run
want, n, i = 1, 0, 0
while i < len(text):
    if text[i] == 10:
        n += 1
        if n % 2 == 0:
            while i + 1 < len(text) and text[i + 1] == 10:
                i += 1; n += 1
            want += i + 1 < len(text)
    i += 1
stripped = bos[:1] + [t for t in bos[1:] if t != BOS]
sys.exit(0 if stripped == plain and bos.count(BOS) == want and want > 1 else 1)
PY
check "info reports vocab" sh -c "'$LAYA' tokenizer info --tok '$tmp/t.tok' '$FIX/mixed.txt' | grep -q 'bytes/token'"
# Errors: nonzero status and a message naming the problem.
fails_with() {
    name=$1; want=$2; shift 2
    if "$@" >/dev/null 2>"$tmp/err"; then bad "$name (succeeded)"; return; fi
    if grep -q "$want" "$tmp/err"; then ok "$name"; else bad "$name: $(cat "$tmp/err")"; fi
}
fails_with "missing tokenizer" "cannot open tokenizer" "$LAYA" tokenizer decode --tok "$tmp/none.tok" "$tmp/m.tokens"
fails_with "missing --tok" "missing --tok" "$LAYA" tokenizer encode "$FIX/mixed.txt" "$tmp/x.tokens"
fails_with "missing input" "cannot open" "$LAYA" tokenizer encode --tok "$tmp/t.tok" "$tmp/none.txt" "$tmp/x.tokens"
fails_with "--bos-every 0 refused" "bos-every" "$LAYA" tokenizer encode --tok "$tmp/t.tok" --bos-every 0 "$FIX/mixed.txt" "$tmp/x.tokens"
fails_with "no training files" "no training files" "$LAYA" tokenizer train -o "$tmp/x.tok"
fails_with "bad vocab" "vocab" "$LAYA" tokenizer train --vocab 12 "$FIX/mixed.txt"
head -c 100 "$tmp/t.tok" >"$tmp/trunc.tok"
fails_with "truncated tokenizer" "truncated" "$LAYA" tokenizer info --tok "$tmp/trunc.tok"
head -c 100 "$tmp/m.tokens" >"$tmp/trunc.tokens"
fails_with "truncated token stream" "promises" "$LAYA" tokenizer decode --tok "$tmp/t.tok" "$tmp/trunc.tokens"
"$LAYA" tokenizer train --vocab 400 -o "$tmp/u.tok" "$FIX/mixed.txt" 2>/dev/null
fails_with "stream from another tokenizer" "different tokenizer" "$LAYA" tokenizer decode --tok "$tmp/u.tok" "$tmp/m.tokens"
fails_with "unknown subcommand" "unknown subcommand" "$LAYA" tokenizer frobnicate
# Hostile paths: a FIFO must not hang open() (timeout 10 s catches a hang),
# a directory is named as one, and a failed encode leaves no OUT.tmp.
mkfifo "$tmp/fifo"
fails_with "--tok FIFO: refused at once, not a hang" "FIFO" timeout 10 "$LAYA" tokenizer info --tok "$tmp/fifo"
fails_with "encode from a FIFO: refused at once" "FIFO" timeout 10 "$LAYA" tokenizer encode --tok "$tmp/t.tok" "$tmp/fifo" "$tmp/f.tokens"
fails_with "decode of a FIFO: refused at once" "FIFO" timeout 10 "$LAYA" tokenizer decode --tok "$tmp/t.tok" "$tmp/fifo"
fails_with "train on a FIFO: refused at once" "regular file" timeout 10 "$LAYA" tokenizer train -o "$tmp/f.tok" "$tmp/fifo"
mkdir "$tmp/dir"
fails_with "info TEXT on a directory says so (not 'out of memory')" "is a directory" "$LAYA" tokenizer info --tok "$tmp/t.tok" "$tmp/dir"
"$LAYA" tokenizer encode --tok "$tmp/t.tok" "$tmp/dir" "$tmp/d.tokens" 2>"$tmp/err"
check "encode from a directory: refused, no d.tokens.tmp left" \
    sh -c "[ $? -ne 0 ] && grep -q 'is a directory' '$tmp/err' && [ ! -e '$tmp/d.tokens.tmp' ] && [ ! -e '$tmp/d.tokens' ]"
# A full disk, as a file-size limit (SIGXFSZ ignored, so write() fails with EFBIG).
head -c 300000 /dev/urandom >"$tmp/big.bin"
sh -c "trap '' XFSZ; ulimit -f 64; exec '$LAYA' tokenizer encode --tok '$tmp/t.tok' '$tmp/big.bin' '$tmp/full.tokens'" 2>"$tmp/err"
check "encode on a full disk: an error, no full.tokens.tmp left" \
    sh -c "[ $? -ne 0 ] && grep -q 'error writing' '$tmp/err' && [ ! -e '$tmp/full.tokens.tmp' ] && [ ! -e '$tmp/full.tokens' ]"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
