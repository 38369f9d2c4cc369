#!/bin/sh
# scripts/same_eval.sh - proves a change leaves what users get unchanged: runs
# `laya eval` over every held-out split (data/corpus/<lang>/valid*.txt and
# data/eval/*.txt) in four modes (the model alone; --learn; --feedback;
# --sim, with the decision, timing and typos) and `laya bench` (model steps
# and logits vectors per key), and writes one line per split and mode:
# KSR@3 (CSR for Chinese), KSR@1, precision, and steps/logits per key,
# to the last digit.
#   sh scripts/same_eval.sh LAYA OUT     e.g. build/laya build/same/new
#   python3 scripts/same_eval.py OUT_OLD OUT_NEW   (below) compares two runs
#   CHARS (2000)  ZH_CHARS (1000)  BENCH_BYTES (4096)
set -eu
cd "$(dirname "$0")/.."
LAYA=${1:?usage: same_eval.sh LAYA OUT}
OUT=${2:?usage: same_eval.sh LAYA OUT}
CHARS=${CHARS:-2000}
ZH_CHARS=${ZH_CHARS:-1000}
BENCH_BYTES=${BENCH_BYTES:-4096}
mkdir -p "$OUT"
[ -d data/eval ] || python3 scripts/corpus/everyday.py
for f in data/corpus/en/valid*.txt data/corpus/zh/valid*.txt data/eval/*.txt; do
    [ -s "$f" ] || continue
    case "$f" in data/eval/zh-*|data/corpus/zh/*) lang=zh; n=$ZH_CHARS ;; *) lang=en; n=$CHARS ;; esac
    tag="$(basename "$(dirname "$f")")_$(basename "$f" .txt)"
    for mode in plain learn feedback sim; do
        case $mode in
        plain) extra="" ;;
        learn) extra="--learn" ;;
        feedback) extra="--learn --feedback" ;;
        sim) extra="--sim --seed 7 --decide on" ;;
        esac
        # shellcheck disable=SC2086
        "$LAYA" eval "$f" --max-chars "$n" --k 3 --lang "$lang" --json $extra >"$OUT/$tag.$mode.json"
    done
    head -c "$BENCH_BYTES" "$f" >"$OUT/$tag.bench.txt"
    "$LAYA" bench "$OUT/$tag.bench.txt" >"$OUT/$tag.bench.out" 2>&1
    echo "same_eval: $tag" >&2
done
