#!/bin/sh
# tests/cli/sign.sh - signed models end to end: laya keygen, sign, verify;
# the loader refusing unsigned, tampered and foreign-signed models with a
# message saying which, and the ways to load a model you trained
# (--allow-unsigned, LAYA_ALLOW_UNSIGNED=1, your own key in
# LAYA_TRUSTED_KEYS). Ends with "N passed, N failed".
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LAYA=$ROOT/$BUILD/laya
T=$(mktemp -d /tmp/laya-cli-sign-XXXXXX)
# Never the user's own memory or settings: a store of its own under $T.
export XDG_DATA_HOME="$T/xdg" XDG_CONFIG_HOME="$T/config"
unset LAYA_MEMORY
trap 'rm -rf "$T"' EXIT
unset LAYA_ALLOW_UNSIGNED LAYA_TRUSTED_KEYS
passed=0
failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }
check() { name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
# fails_with NAME TEXT CMD...: CMD exits non-zero and says TEXT on stderr.
fails_with() {
    name=$1; want=$2; shift 2
    if "$@" >/dev/null 2>"$T/err"; then bad "$name (succeeded)"; return; fi
    if grep -q -- "$want" "$T/err"; then ok "$name"; else bad "$name: $(cat "$T/err")"; fi
}

# --- a model trained here (unsigned), and a copy of the shipped one ----------
for i in 1 2 3 4 5 6 7 8; do
    printf 'Best regards, and thank you for the quick reply.\nThe meeting is on Monday at ten.\n'
done >"$T/big.txt"
M=$T/out/best.safetensors
if ! { "$LAYA" tokenizer train --vocab 280 -o "$T/t.tok" "$T/big.txt" &&
       "$LAYA" tokenizer encode --tok "$T/t.tok" "$T/big.txt" "$T/tr.tokens" &&
       "$LAYA" train --train "$T/tr.tokens" --valid "$T/tr.tokens" --tok "$T/t.tok" -o "$T/out" \
           --steps 30 --H 32 --D 32 --L 1 --W 3 --batch 4 --seq 16 --threads 1 --eval-every 30; } \
       >"$T/train.log" 2>&1 || [ ! -f "$M" ]; then
    cat "$T/train.log"
    bad "build the fixture model"
    echo "$passed passed, $failed failed"
    exit 1
fi
ok "build the fixture model"
cp "$ROOT/models/default.safetensors" "$ROOT/models/default.safetensors.sig" "$T/"
D=$T/default.safetensors

# --- the shipped model ------------------------------------------------------
"$LAYA" verify "$D" >"$T/v.out" 2>"$T/err"
check "verify: the shipped model is signed by the project key" \
    sh -c "[ $? -eq 0 ] && grep -q 'the Laya project key' '$T/v.out'"
check "the shipped model loads with no option" sh -c "'$LAYA' complete --model '$D' 'Best re' >/dev/null"
cp "$D" "$T/tampered.safetensors"
cp "$D.sig" "$T/tampered.safetensors.sig"
printf '\001' | dd of="$T/tampered.safetensors" bs=1 seek=3000000 conv=notrunc 2>/dev/null
fails_with "one byte changed in the shipped model: refused as a bad signature" "bad signature" \
    "$LAYA" complete --model "$T/tampered.safetensors" "Best re"
fails_with "... even with LAYA_ALLOW_UNSIGNED=1" "bad signature" \
    env LAYA_ALLOW_UNSIGNED=1 "$LAYA" complete --model "$T/tampered.safetensors" "Best re"
fails_with "... and verify says so" "modified after it was signed" "$LAYA" verify "$T/tampered.safetensors"

# --- a model you trained ------------------------------------------------------
fails_with "an unsigned model is refused, saying how to load it" "is not signed" \
    "$LAYA" complete --model "$M" "Best re"
grep -q "LAYA_ALLOW_UNSIGNED=1" "$T/err" && grep -q -- "--allow-unsigned" "$T/err"
check "... the message names LAYA_ALLOW_UNSIGNED=1 and --allow-unsigned" [ $? -eq 0 ]
check "complete --allow-unsigned loads it" sh -c "'$LAYA' complete --allow-unsigned --model '$M' 'Best re' >/dev/null"
check "LAYA_ALLOW_UNSIGNED=1 loads it" sh -c "LAYA_ALLOW_UNSIGNED=1 '$LAYA' complete --model '$M' 'Best re' >/dev/null"
fails_with "LAYA_ALLOW_UNSIGNED=yes does not (only 1)" "is not signed" \
    env LAYA_ALLOW_UNSIGNED=yes "$LAYA" complete --model "$M" "Best re"
fails_with "serve refuses it too" "is not signed" sh -c "echo '{\"op\":\"reset\"}' | '$LAYA' serve --stdio --model '$M'"
check "serve --allow-unsigned answers" \
    sh -c "echo '{\"op\":\"reset\"}' | '$LAYA' serve --stdio --allow-unsigned --model '$M' | grep -q '\"ok\":true'"

# --- keygen, sign, verify with your own key -------------------------------------
"$LAYA" keygen --out "$T/me" >"$T/kg.out"
check "keygen writes PREFIX.key (0600) and PREFIX.pub" \
    sh -c "[ \"\$(stat -c %a '$T/me.key')\" = 600 ] && grep -q '^laya-ed25519-public-v1 ' '$T/me.pub'"
cp "$T/me.key" "$T/me.key.orig"
fails_with "keygen never overwrites a key" "not overwriting" "$LAYA" keygen --out "$T/me"
check "... and the key is unchanged" cmp -s "$T/me.key" "$T/me.key.orig"
"$LAYA" sign "$M" --key "$T/me.key" >"$T/s.out" 2>"$T/err"
check "sign writes MODEL.sig (v2: over the header, which names the data's BLAKE2b)" \
    sh -c "[ $? -eq 0 ] && grep -q '^laya-model-signature-v2 ' '$M.sig'"
fails_with "a model signed by your key is refused until you trust it" "signed by another key" \
    "$LAYA" complete --model "$M" "Best re"
check "LAYA_TRUSTED_KEYS=me.pub loads it" \
    sh -c "LAYA_TRUSTED_KEYS='$T/me.pub' '$LAYA' complete --model '$M' 'Best re' >/dev/null"
check "verify --pubkey me.pub: good" sh -c "'$LAYA' verify '$M' --pubkey '$T/me.pub' | grep -q 'good signature'"
fails_with "verify without it: another key" "another key" "$LAYA" verify "$M"
fails_with "verify --pubkey with the secret key file is refused" "is a secret key" \
    "$LAYA" verify "$M" --pubkey "$T/me.key"
chmod 644 "$T/me.key"
fails_with "sign refuses a secret key others may read" "chmod 600" "$LAYA" sign "$M" --key "$T/me.key"
chmod 600 "$T/me.key"
printf 'not a model at all' >"$T/junk.safetensors"
fails_with "sign refuses a file that is not a valid model" "not signing" \
    "$LAYA" sign "$T/junk.safetensors" --key "$T/me.key"
check "... and writes no .sig for it" [ ! -e "$T/junk.safetensors.sig" ]
fails_with "verify of an unsigned model: not signed" "is not signed" "$LAYA" verify "$T/junk.safetensors"

# --- quantize: the input must be trusted; the output is unsigned -------------------
rm -f "$M.sig"
fails_with "quantize refuses an unsigned input" "is not signed" \
    "$LAYA" quantize "$M" "$T/q8.safetensors" --bits 8 --group 32
check "quantize --allow-unsigned writes it" \
    sh -c "'$LAYA' quantize '$M' '$T/q8.safetensors' --bits 8 --group 32 --allow-unsigned >/dev/null"
# --layout panel: without --bits the same weights laid out again, the same suggestions
check "quantize --layout panel lays a q8 model out again" \
    sh -c "'$LAYA' quantize '$T/q8.safetensors' '$T/q8p.safetensors' --layout panel --allow-unsigned | grep -q 'panel layout'"
check "... and it suggests exactly what the row-major file does" \
    sh -c "'$LAYA' complete --allow-unsigned --model '$T/q8p.safetensors' 'Best regards, and th' | grep -q . && [ \"\$('$LAYA' complete --allow-unsigned --model '$T/q8.safetensors' 'Best regards, and th')\" = \
              \"\$('$LAYA' complete --allow-unsigned --model '$T/q8p.safetensors' 'Best regards, and th')\" ]"
"$LAYA" sign "$T/q8p.safetensors" --key "$T/me.key" >/dev/null
check "a panel-layout model signed with your key loads when you trust it" \
    sh -c "LAYA_TRUSTED_KEYS='$T/me.pub' '$LAYA' complete --model '$T/q8p.safetensors' 'Best re' >/dev/null"
head -c $(($(wc -c <"$T/q8p.safetensors") / 2)) "$T/q8p.safetensors" >"$T/q8t.safetensors"
fails_with "a truncated panel-layout model is refused" "truncated" \
    "$LAYA" complete --allow-unsigned --model "$T/q8t.safetensors" "Best re"
fails_with "quantize --layout takes rows or panel" "rows or panel" \
    "$LAYA" quantize "$T/q8.safetensors" "$T/x.safetensors" --layout tiles --allow-unsigned
fails_with "quantize without --bits needs a quantized input" "not quantized" \
    "$LAYA" quantize "$M" "$T/x.safetensors" --layout panel --allow-unsigned
"$LAYA" sign "$T/q8.safetensors" --key "$T/me.key" >/dev/null
check "the quantized model, signed with your key, loads when you trust it" \
    sh -c "LAYA_TRUSTED_KEYS='$T/me.pub' '$LAYA' complete --model '$T/q8.safetensors' 'Best re' >/dev/null"
# A signature survives only while the bytes do: re-signing after a change works.
printf ' ' | dd of="$T/q8.safetensors" bs=1 seek=100 conv=notrunc 2>/dev/null
fails_with "a signed model changed afterwards: bad signature" "bad signature" \
    env LAYA_TRUSTED_KEYS="$T/me.pub" "$LAYA" complete --model "$T/q8.safetensors" "Best re"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
