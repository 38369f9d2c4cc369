#!/bin/sh
# scripts/sweep_base.sh - the base-model sweep as run on one GPU machine:
# unpack the packed token streams, build the CUDA trainer if the prebuilt one
# does not run there, then train each candidate with scripts/train_base.sh,
# one after the other, and leave the logs and best checkpoints under $OUT.
#   CONFIGS="H D LR DROPOUT WD BUDGET; ..."   the candidates
#   TOKDIR  folder with train.tokens.xz (or train.tokens) and *_valid.tokens
# MODEL.md lists the sweep that picked the shipped model.
set -eu
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/laya-sweep}
TOKDIR=${TOKDIR:-.dev/tok}
mkdir -p "$OUT" /tmp/laya-tok /tmp/runs
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv,noheader >"$OUT/gpu.txt" || true
if [ -f "$TOKDIR/train.tokens.xz" ]; then xz -dc "$TOKDIR/train.tokens.xz" >/tmp/laya-tok/train.tokens
else cp "$TOKDIR/train.tokens" /tmp/laya-tok/; fi
for f in "$TOKDIR"/*.tokens; do [ "$(basename "$f")" = train.tokens ] || cp "$f" /tmp/laya-tok/; done
LAYA=.cudabin/laya
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$PWD/.cudabin   # libgomp, if the machine lacks it
if ! "$LAYA" --help >/dev/null 2>&1; then
    make -j"$(nproc)" build-cuda/laya BUILD=build-cuda/base CUDA_DEPS=.cudadeps >"$OUT/build.log" 2>&1
    LAYA=build-cuda/laya
fi
echo "$CONFIGS" | tr ';' '\n' | while read -r h d lr drop wd budget; do
    [ -n "$h" ] || continue
    name="H$h-d$drop-wd$wd"
    echo "== $name (D=$d lr=$lr budget ${budget}s)"
    H=$h D=$d LR=$lr DROPOUT=$drop WD=$wd BUDGET=$budget LAYA=$LAYA TOKENS=/tmp/laya-tok \
        OUT="/tmp/runs/$name" sh scripts/train_base.sh >"/tmp/runs-$name.log" 2>&1 || echo "   failed: $?"
    tail -n 2 "/tmp/runs/$name/log.csv" || true
done
# Back: every log, and each best checkpoint as f16 when it fits in 15 MiB,
# else as q8 (group 32), split into 15 MiB parts where still larger.
(cd /tmp && tar -czf "$OUT/logs.tgz" runs-*.log runs/*/log.csv runs/*/*.png) || true
for d in /tmp/runs/*/; do
    name=$(basename "$d")
    [ -f "$d/best.safetensors" ] || continue
    f="$d/best.safetensors"; ext=f16
    if [ "$(stat -c %s "$f")" -gt 15728640 ]; then
        "$LAYA" quantize "$f" "$d/best-q8.safetensors" --bits 8 --group 32 >/dev/null || continue
        f="$d/best-q8.safetensors"; ext=q8
    fi
    if [ "$(stat -c %s "$f")" -gt 15728640 ]; then split -b 15M -d "$f" "$OUT/$name.$ext.safetensors.part"
    else cp "$f" "$OUT/$name.$ext.safetensors"; fi
done
ls -la "$OUT"
