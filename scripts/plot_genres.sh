#!/bin/sh
# scripts/plot_genres.sh OUT.png RUN... - KSR@3 (CSR@3 for Chinese) per held-out
# split as grouped bars, one bar per run: the figure of docs/RESULTS.md "Per
# genre" (issue 15). A RUN is LABEL=DIR, DIR a folder of scripts/genre_eval.sh
# (build/genre_eval/NAME: one JSON of `laya eval --json` per split, named
# after the split). Splits a run lacks (a peer measured in one language only)
# leave its bar out. Needs gnuplot (gnuplot-nox).
set -eu
[ $# -ge 2 ] || { echo "usage: $0 OUT.png LABEL=DIR..." >&2; exit 2; }
out=$1; shift
command -v gnuplot >/dev/null || { echo "$0: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
dat=$(mktemp)
trap 'rm -f "$dat"' EXIT
python3 - "$dat" "$@" <<'PY'
import glob, json, os, re, sys
dat, runs = sys.argv[1], [a.split("=", 1) for a in sys.argv[2:]]
for label, d in runs:
    if not os.path.isdir(d):
        sys.exit("plot_genres: %s is not a folder" % d)
def split_name(path):
    """en_valid-dialogue -> "en dialogue", eval_en-everyday -> "en everyday"
    (genre_eval.sh's names; older runs put the corpus folder first:
    corpus_en_valid-dialogue)."""
    n = re.sub(r"^(corpus\w*?_|eval_)", "", os.path.basename(path)[:-5])
    return n.replace("_valid-", " ").replace("_valid", " valid.txt").replace("-", " ", 1)
splits = []
for _, d in runs:
    for p in sorted(glob.glob(os.path.join(d, "*.json"))):
        s = split_name(p)
        if s not in splits:
            splits.append(s)
splits.sort(key=lambda s: (not s.startswith("en"), s))
val = {}
for label, d in runs:
    for p in glob.glob(os.path.join(d, "*.json")):
        t = json.load(open(p))["texts"][0]
        val[(label, split_name(p))] = next(q["ksr"] for q in t["passes"] if q["k"] == 3)
with open(dat, "w") as f:
    f.write("split " + " ".join('"%s"' % l for l, _ in runs) + "\n")
    for s in splits:
        f.write('"%s" ' % s + " ".join("%.4f" % val[(l, s)] if (l, s) in val else "-" for l, _ in runs) + "\n")
PY
n=$#
gnuplot <<GP
set terminal pngcairo size 1200,560 font ',10' noenhanced
set output '$out'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set datafile missing '-'
set key top right
set grid ytics
set ylabel 'KSR at k=3 (CSR for Chinese)'
set yrange [0:*]
set xtics rotate by -30
plot for [i=2:$((n + 1))] '$dat' using i:xtic(1) title columnheader(i)
GP
echo "wrote $out"
