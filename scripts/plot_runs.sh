#!/bin/sh
# scripts/plot_runs.sh OUT.png RUNDIR... - validation bits per byte (English
# solid, Chinese dashed) against training tokens for each run's log.csv, as
# `laya train` writes it (columns: step, tokens, train loss, valid losses,
# bits per byte per valid file, lr, seconds). Needs gnuplot (gnuplot-nox).
set -eu
[ $# -ge 2 ] || { echo "usage: $0 OUT.png RUNDIR..." >&2; exit 2; }
out=$1; shift
command -v gnuplot >/dev/null || { echo "$0: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
plot=""; i=1
for d in "$@"; do
    [ -f "$d/log.csv" ] || { echo "$0: $d/log.csv not found" >&2; exit 1; }
    n=$(basename "$d")
    plot="$plot${plot:+, }'$d/log.csv' every ::1 using (\$2/1e6):6 with lines lw 2 lc $i title '$n en',"
    plot="$plot '$d/log.csv' every ::1 using (\$2/1e6):7 with lines lw 2 dt 2 lc $i title '$n zh'"
    i=$((i + 1))
done
gnuplot <<GP
set terminal pngcairo size 960,600
set output '$out'
set datafile separator ','
set grid
set key top right
set xlabel 'training tokens (millions)'
set ylabel 'validation bits per byte'
set yrange [1.4:2.8]
plot $plot
GP
echo "wrote $out"
