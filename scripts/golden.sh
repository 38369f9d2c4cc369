#!/bin/sh
# scripts/golden.sh - regenerates the fixtures of the unit test
# engine_golden_suggestions_*: the shipped model's top-3 suggestions for
# fixed English and Chinese contexts (texts exact, probabilities to 1e-4
# relative), from the default search, as `laya complete --json` prints them:
#   tests/fixtures/golden/suggest.jsonl      the AVX2 and AVX-512 tables
#   tests/fixtures/golden/suggest_ref.jsonl  the ref table (its q8 products
#       keep x in f32 where the vector ones quantize it: other figures)
# Run it after a deliberate change of the model or the search, on a CPU
# with AVX2, and review the diff:  make && sh scripts/golden.sh
# LAYA=path/to/laya (default build/laya), MODEL=... (default the shipped one).
set -eu
LAYA=${LAYA:-build/laya}
MODEL=${MODEL:-models/default.safetensors}
DIR=tests/fixtures/golden
grep -q avx2 /proc/cpuinfo || { echo "golden.sh: needs a CPU with AVX2" >&2; exit 1; }
write() {  # write TABLE FILE
    tmp=$(mktemp)
    for c in "I would like to" "Thank you for your" "the United Sta" "in the middle of the" \
             "She opened the do" "Hi " "It was nice to " "Hi Anna, thanks for the upd" "send the rep" "他说" "我们的生活" "今天天气很" "中华人民"; do
        # the timing field is dropped: it changes every run
        LAYA_KERN=$1 "$LAYA" complete --model "$MODEL" -k 3 --json "$c" | sed 's/,"us":[0-9]*}$/}/' >>"$tmp"
    done
    mv "$tmp" "$2"
    echo "wrote $2 ($(wc -l <"$2") contexts, table $1)"
}
mkdir -p "$DIR"
write avx2 "$DIR/suggest.jsonl"
write ref "$DIR/suggest_ref.jsonl"
