#!/bin/sh
# scripts/intent/plot_confusion.sh LANG [OUT.png] - runs `laya intent eval`
# on tests/fixtures/intent/LANG.tsv and draws its confusion matrix (rows: the
# hand-checked label, columns: the head's most likely class; each cell's
# count printed, colour = the share of its row) to OUT.png (default
# docs/intent-confusion-LANG.png). Needs gnuplot (gnuplot-nox) and build/laya.
set -eu
[ $# -ge 1 ] || { echo "usage: $0 en|zh [OUT.png]" >&2; exit 2; }
lang=$1
out=${2:-docs/intent-confusion-$lang.png}
command -v gnuplot >/dev/null || { echo "$0: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
build/laya intent eval "tests/fixtures/intent/$lang.tsv" --matrix "$tmp/m.dat" > "$tmp/eval.txt"
acc=$(sed -n 1p "$tmp/eval.txt" | sed 's/.*accuracy \([0-9.]*\).*/\1/')
# The row sums, to colour each cell by its share of the row.
awk 'NF == 3 { s[$2] += $3; c[NR] = $0 } END { for (i = 1; i <= NR; i++) if (i in c) { split(c[i], f, " "); print f[1], f[2], f[3], (s[f[2]] ? f[3] / s[f[2]] : 0) } else print "" }' \
    "$tmp/m.dat" > "$tmp/share.dat"
gnuplot <<GP
set terminal pngcairo size 900,760 noenhanced
set output '$out'
set title "intent head on the hand-checked $lang test set (accuracy $acc)"
names = "schedule_meeting send_email search_web file_operation app_switch system_control text_edit other"
set xtics () rotate by 35 right
set ytics ()
do for [i=0:7] { set xtics add (word(names, i + 1) i); set ytics add (word(names, i + 1) i) }
set yrange [7.5:-0.5]
set xrange [-0.5:7.5]
set xlabel "predicted"
set ylabel "label"
set cbrange [0:1]
set cblabel "share of the label's lines"
set palette defined (0 "white", 1 "#2b6cb0")
unset key
plot '$tmp/share.dat' using 1:2:4 with image, \
     '' using 1:2:(sprintf("%d", \$3)) with labels
GP
echo "wrote $out"
