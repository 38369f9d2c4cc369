#!/bin/sh
# scripts/genre_eval.sh - one model on every held-out split that docs/RESULTS.md
# reports per genre (issue 15): the genre splits of `make corpus`
# (data/corpus/<lang>/valid-<genre>.txt), valid.txt, and the everyday texts of
# scripts/corpus/everyday.py (data/eval: text no model trained on). For each:
# KSR@3 with its standard error (docs/EVALUATION.md) and KSR@1 (CSR for
# Chinese) over the first CHARS characters (ZH_CHARS for Chinese) with the
# model alone (no learning), and bits per UTF-8 byte over the whole file
# (scripts/bpb.py).
#   sh scripts/genre_eval.sh MODEL [NAME]     prints a table; JSON under $OUT/NAME
#   ENGINE="CMD" LANGS=en sh scripts/genre_eval.sh - NAME
#                                     a peer (laya eval --engine CMD) on the
#                                     splits of LANGS (en, zh or "en zh"); no
#                                     bits per byte (peers do not score)
#   LAYA (build/laya)  CHARS (4000)  ZH_CHARS (2000)  OUT (build/genre_eval)
#   CORPUS (data/corpus: the folder of `make corpus` whose splits are read)
# A model that is not signed by a trusted key is evaluated with
# LAYA_ALLOW_UNSIGNED=1 set by the caller.
set -eu
cd "$(dirname "$0")/.."
MODEL=${1:?usage: genre_eval.sh MODEL [NAME]}
ENGINE=${ENGINE:-}
LANGS=${LANGS:-en zh}
NAME=${2:-$(basename "$MODEL" .safetensors)}
LAYA=${LAYA:-build/laya}
CHARS=${CHARS:-4000}
ZH_CHARS=${ZH_CHARS:-2000}
OUT=${OUT:-build/genre_eval}/$NAME
CORPUS=${CORPUS:-data/corpus}
mkdir -p "$OUT"
[ -d data/eval ] || python3 scripts/corpus/everyday.py
set --
for l in $LANGS; do
    for f in "$CORPUS/$l/valid.txt" "$CORPUS/$l"/valid-*.txt data/eval/"$l"-*.txt; do
        [ -s "$f" ] && set -- "$@" "$f"
    done
done
[ $# -gt 0 ] || { echo "genre_eval: no split found (make corpus)" >&2; exit 1; }
# A split's results are named FOLDER_FILE (en_valid-dialogue, eval_en-everyday),
# whatever CORPUS is, so runs over different corpus folders line up.
tag_of() { echo "$(basename "$(dirname "$1")")_$(basename "$1" .txt)"; }
for f in "$@"; do
    n=$CHARS
    case "$f" in data/eval/zh-*|"$CORPUS"/zh/*) lang=zh; n=$ZH_CHARS ;; *) lang=en ;; esac
    tag=$(tag_of "$f")
    if [ -n "$ENGINE" ]; then
        "$LAYA" eval "$f" --engine "$ENGINE" --max-chars "$n" --k 3 --lang "$lang" --json >"$OUT/$tag.json"
    else
        "$LAYA" eval "$f" --model "$MODEL" --max-chars "$n" --k 3 --lang "$lang" --json >"$OUT/$tag.json"
    fi
done
: >"$OUT/bpb.txt"
[ -n "$ENGINE" ] || LAYA=$LAYA python3 scripts/bpb.py "$MODEL" "$@" >"$OUT/bpb.txt"
python3 - "$OUT" "$@" <<'PY'
import json, os, re, sys
out, files = sys.argv[1], sys.argv[2:]
bpb = {}
for ln in open(os.path.join(out, "bpb.txt")):
    m = re.match(r"(\S+)\s+([0-9.]+) bits/byte", ln)
    if m:
        bpb[m.group(1)] = float(m.group(2))
print("%-34s %7s %7s %7s %7s %8s" % ("split", "KSR@3", "+-se", "KSR@1", "prec@3", "bpb"))
for f in files:
    tag = os.path.basename(os.path.dirname(f)) + "_" + re.sub(r"\.txt$", "", os.path.basename(f))  # tag_of
    t = json.load(open(os.path.join(out, tag + ".json")))["texts"][0]
    ps = {p["k"]: p for p in t["passes"]}
    b = bpb.get(f)
    se = ps[3].get("ksr_se")   # laya eval's standard error (docs/EVALUATION.md); peers' runs have it too
    print("%-34s %7.4f %7s %7.4f %7.3f %8s" % (f, ps[3]["ksr"], "%.4f" % se if se is not None else "n/a",
                                              ps[1]["ksr"], ps[3]["precision"], "%.4f" % b if b is not None else "n/a"))
PY
