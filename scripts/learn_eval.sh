#!/bin/sh
# scripts/learn_eval.sh - the learning figures of docs/RESULTS.md ("Learning"):
# KSR@3 on held-out slices of the validation split (data/corpus, `make
# corpus`), each of one source, for the model alone (`serve --no-learn`),
# with learning (the typed text and a commit after every line: first and
# second pass in one process), and with a junk flood of 1,000 random strings
# committed first. Slices: 6,000 bytes from a line start at fixed offsets
# (the split is ordered by source); the first CHARS characters are typed.
#   LAYA   the laya binary (default build/laya)    CHARS  characters (default 3000)
#   OUT    where the slices and JSON go (default build/learn_eval)
set -eu
cd "$(dirname "$0")/.."
LAYA=${LAYA:-build/laya}
CHARS=${CHARS:-3000}
OUT=${OUT:-build/learn_eval}
mkdir -p "$OUT"
for f in data/corpus/en/valid.txt data/corpus/zh/valid.txt; do
    [ -s "$f" ] || { echo "learn_eval: $f missing (make corpus)" >&2; exit 1; }
done
slice() {   # slice NAME FILE OFFSET
    tail -c +"$3" "$2" | tail -n +2 | head -c 6000 >"$OUT/$1.txt"
}
slice en-manual-gimp data/corpus/en/valid.txt 1100000
slice en-speech data/corpus/en/valid.txt 300000
slice en-manual-kernel data/corpus/en/valid.txt 600000
slice en-quotes data/corpus/en/valid.txt 900000
slice zh-manual-man data/corpus/zh/valid.txt 50000
slice zh-manual-kernel data/corpus/zh/valid.txt 200000
slice zh-manual-debian data/corpus/zh/valid.txt 300000
python3 -c '
import random; random.seed(5)
print("\n".join("".join(random.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(random.randint(3, 12))) for _ in range(1000)))' >"$OUT/junk.txt"
for lang in en zh; do
    n=$CHARS; [ "$lang" = zh ] && n=$((CHARS / 2))
    set -- "$OUT"/$lang-*.txt
    "$LAYA" eval "$@" --max-chars "$n" --k 3 --json --engine "$LAYA serve --stdio --no-learn" >"$OUT/$lang-model.json"
    "$LAYA" eval "$@" --max-chars "$n" --k 3 --json --learn --passes 2 >"$OUT/$lang-learn.json"
    "$LAYA" eval "$@" --max-chars "$n" --k 3 --json --history "$OUT/junk.txt" >"$OUT/$lang-junk.json"
done
python3 - "$OUT" <<'PY'
import json, sys, os
out = sys.argv[1]
print("%-20s %7s %9s %9s %9s %9s %9s" % ("text", "chars", "model", "typed", "learn p1", "learn p2", "junk"))
for lang in ("en", "zh"):
    m, l, j = (json.load(open(os.path.join(out, "%s-%s.json" % (lang, k)))) for k in ("model", "learn", "junk"))
    for tm, tl, tj in zip(m["texts"], l["texts"], j["texts"]):
        k3 = lambda t, learn, p: next(r["ksr"] for r in t["runs"] if r["k"] == 3 and r["learn"] == learn and r["pass"] == p)
        name = os.path.basename(tm["text"]).replace(".txt", "") if tm["text"] != "(all)" else lang + " (all)"
        print("%-20s %7d %9.4f %9.4f %9.4f %9.4f %9.4f" % (name, tm["chars"], k3(tm, False, 1), k3(tl, False, 1),
              k3(tl, True, 1), k3(tl, True, 2), k3(tj, False, 1)))
PY
