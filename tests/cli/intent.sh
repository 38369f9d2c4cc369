#!/bin/sh
# tests/cli/intent.sh - `laya intent` and the intent in `laya serve`, end to
# end with the shipped model and its signed head: classify and eval print
# what they promise, a tampered or unsigned head is refused with the
# reason, `laya sign` signs a head and refuses other files, train writes a
# head that loads (a tiny training set, 2 epochs), and `laya serve --stdio`
# adds "intent" to a suggest reply only when confident, never when private
# or with --no-intent. Ends with "N passed, N failed".
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LAYA=$ROOT/$BUILD/laya
T=$(mktemp -d /tmp/laya-cli-intent-XXXXXX)
trap 'rm -rf "$T"' EXIT
export HOME="$T/home" XDG_DATA_HOME="$T/xdg"
unset LAYA_ALLOW_UNSIGNED LAYA_TRUSTED_KEYS LAYA_MODEL
passed=0
failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }
check() { name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
fails_with() {
    name=$1; want=$2; shift 2
    if "$@" >/dev/null 2>"$T/err"; then bad "$name (succeeded)"; return; fi
    if grep -q -- "$want" "$T/err"; then ok "$name"; else bad "$name: $(cat "$T/err")"; fi
}
M=$ROOT/models/default.safetensors
HEAD=$ROOT/models/default.intent.safetensors

"$LAYA" intent classify --model "$M" "please send an email to Anna about the budget" >"$T/out" 2>"$T/err"
check "classify: send_email, reported" grep -q "^send_email	[0-9.]*	reported	please send" "$T/out"

"$LAYA" intent eval --model "$M" "$ROOT/tests/fixtures/intent/en.tsv" --matrix "$T/m.dat" >"$T/out" 2>"$T/err"
check "eval: per-class precision and recall" sh -c "grep -q '^send_email  *[0-9.]* *[0-9.]* *30$' '$T/out' && grep -q '^macro mean' '$T/out'"
check "eval: the confusion matrix, 8 rows of 8 counts" sh -c "[ \$(grep -cE '^[a-z_]+( +[0-9]+){8}\$' '$T/out') -eq 8 ]"
check "eval --matrix: 64 cells summing to the 322 lines" sh -c "[ \"\$(awk 'NF==3{s+=\$3;n++} END{print n\" \"s}' '$T/m.dat')\" = '64 322' ]"

# Hostile heads: a copy with one byte changed (its .sig no longer matches),
# an unsigned copy, and a model file passed as a head.
cp "$HEAD" "$T/h.intent.safetensors"
cp "$HEAD.sig" "$T/h.intent.safetensors.sig"
check "a signed copy loads" sh -c "'$LAYA' intent classify --model '$M' --head '$T/h.intent.safetensors' hello >/dev/null"
printf 'x' | dd of="$T/h.intent.safetensors" bs=1 seek=2000 conv=notrunc 2>/dev/null
fails_with "a modified head: refused, bad signature" "signature" "$LAYA" intent classify --model "$M" --head "$T/h.intent.safetensors" hi
rm "$T/h.intent.safetensors.sig"
fails_with "a modified unsigned head with --allow-unsigned: the checksum" "checksum mismatch" \
    "$LAYA" intent classify --model "$M" --head "$T/h.intent.safetensors" --allow-unsigned hi
fails_with "a model as a head: not an intent head" "not an intent head" \
    "$LAYA" intent classify --model "$M" --head "$M" hi
head -c 300 "$HEAD" >"$T/short.intent.safetensors"
fails_with "a truncated head: refused" "short\|header\|bytes" \
    "$LAYA" intent classify --model "$M" --head "$T/short.intent.safetensors" --allow-unsigned hi

# Training writes a head that loads; laya sign signs it with a new key.
printf 'send_email\temail Bob the report\nsend_email\tsend a mail to Ann\nsearch_web\tsearch for pizza\nsearch_web\tgoogle the weather\nother\tthe cat sat on the mat\nother\tit rained all day\n' >"$T/tiny.tsv"
for i in 1 2 3 4 5 6 7 8 9; do cat "$T/tiny.tsv"; done >"$T/train.tsv"
"$LAYA" intent train --model "$M" --data "$T/train.tsv" --out "$T/new.intent.safetensors" --epochs 2 >"$T/out" 2>"$T/err"
check "train: writes a head and says its threshold" sh -c "[ -s '$T/new.intent.safetensors' ] && grep -q '^threshold' '$T/out'"
fails_with "the new head is unsigned: refused" "not signed" "$LAYA" intent classify --model "$M" --head "$T/new.intent.safetensors" hi
"$LAYA" keygen --out "$T/k" >/dev/null 2>&1
check "laya sign signs a head" sh -c "'$LAYA' sign '$T/new.intent.safetensors' --key '$T/k.key' >/dev/null"
check "signed by a trusted key: it loads" sh -c "LAYA_TRUSTED_KEYS='$T/k.pub' '$LAYA' intent classify --model '$M' --head '$T/new.intent.safetensors' hi >/dev/null"
printf 'not a model' >"$T/junk.bin"
fails_with "laya sign refuses a file that is neither" "not signing" "$LAYA" sign "$T/junk.bin" --key "$T/k.key"

"$LAYA" verify "$HEAD" >"$T/out" 2>"$T/err"
check "laya verify: the shipped head, signed by the project key" grep -q "Laya project key), and a valid intent head" "$T/out"

# The daemon's replies.
printf '%s\n' '{"op":"suggest","session":"a","context":"please send an email to Anna about the budget"}' \
    '{"op":"suggest","session":"b","context":"the weather was lovely yesterday and we"}' \
    '{"op":"suggest","session":"c","context":"please send an email to Anna about the budget","private":true}' \
    '{"op":"suggest","session":"d","context":"[sudo] password for anna: please send an email to Anna about the budget"}' |
    "$LAYA" serve --stdio --no-learn --model "$M" >"$T/out" 2>"$T/err"
check "serve: a confident intent in the reply" sh -c "sed -n 1p '$T/out' | grep -q '\"intent\":{\"name\":\"send_email\",\"p\":0\\.[0-9]*\\|\"intent\":{\"name\":\"send_email\",\"p\":1\\.0'"
check "serve: none for other" sh -c "! sed -n 2p '$T/out' | grep -q intent"
check "serve: none when private" sh -c "! sed -n 3p '$T/out' | grep -q intent"
# after a password prompt the secret is typed: no intent, no suggestion (issue 39)
check "serve: none after a password prompt" sh -c "sed -n 4p '$T/out' | grep -q '\"suggestions\":\[\]' && ! sed -n 4p '$T/out' | grep -q intent"
printf '%s\n' '{"op":"suggest","session":"a","context":"please send an email to Anna about the budget"}' |
    "$LAYA" serve --stdio --no-learn --no-intent --model "$M" >"$T/out" 2>"$T/err"
check "serve --no-intent: none" sh -c "! grep -q intent '$T/out'"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
