#!/bin/sh
# scripts/layers.sh - `make layers`: src/ folders depend downwards only.
# Reads the order of docs/DESIGN.md ("Layers": the indented line
# `util < tok < ... < cli / ibus / ...`, lowest first, folders of one level
# separated by '/') and every `#include "folder/..."` line of src/ (*.c,
# *.h, *.cc, *.cu, *.cuh). A file may include its own folder's headers and
# those of lower levels; each include of a folder above it, or beside it on
# its level, is printed as
#     src/a/x.c includes b/y.h (b is above a)
# and the exit status is 1. A src/ folder the order does not name is an
# error too (exit 1), so a new folder gets its place. Exit 2: no order found.
set -eu
cd "$(dirname "$0")/.."

order=$(awk '/^## Layers/ { s = 1; next } /^## / { s = 0 } s && /^    [a-z]/ && / < / { print; exit }' docs/DESIGN.md)
[ -n "$order" ] || { echo "layers: no order in docs/DESIGN.md (section \"Layers\")" >&2; exit 2; }

{
    for d in src/*/; do d=${d%/}; echo "dir ${d#src/}"; done
    find src -type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.cu' -o -name '*.cuh' \) \
        -exec grep -HE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"/]+/' {} + | sort
} | awk -v order="$order" '
BEGIN {
    n = split(order, level, "<")
    for (i = 1; i <= n; i++) {
        m = split(level[i], f, "/")
        for (j = 1; j <= m; j++) { g = f[j]; gsub(/[[:space:]]/, "", g); if (g != "") rank[g] = i }
    }
}
$1 == "dir" {
    if (!($2 in rank)) { print "src/" $2 " is in no layer of docs/DESIGN.md (section \"Layers\")"; bad = 1 }
    next
}
{
    file = $0; sub(/:.*/, "", file)
    split(file, p, "/"); a = p[2]
    inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
    b = inc; sub(/\/.*/, "", b)
    if (b == a || !(a in rank) || !(b in rank)) next
    if (rank[b] > rank[a]) { print file " includes " inc " (" b " is above " a ")"; bad = 1 }
    else if (rank[b] == rank[a]) { print file " includes " inc " (" b " is beside " a ")"; bad = 1 }
}
END { exit bad }'
