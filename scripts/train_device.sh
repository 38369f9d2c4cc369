#!/bin/sh
# scripts/train_device.sh - one base-model training run on a lent GPU machine
# (the device tool), the way models/default.safetensors was trained: unpacks
# the carried token streams, runs scripts/train_base.sh with the settings in
# the environment (H D L DROPOUT BUDGET ...), and leaves under $OUT the run's
# log.csv and its best checkpoint, cut in 15 MB parts (the tool brings back
# files of at most 16 MiB): join them with `cat best.f16.part* >best.safetensors`.
#
# Expects .cudadata/ (an ignored folder, carried with the call):
#   laya              built here by `make cuda BUILD=build-cuda/base CUDA_DEPS=.cudadeps`
#   tokenizer.tok     models/tokenizer.tok
#   train.tokens.xz   data/tokens/train.tokens (scripts/prepare_tokens.sh), xz-packed
#   *valid*.tokens    the validation streams, en_valid.tokens first
# Usage: OUT=/tmp/out H=576 D=64 BUDGET=480 sh scripts/train_device.sh
# (the bf16 trainer runs its persistent recurrences only for H = 192, 384,
# 576 or 768 with a batch a multiple of 64; other widths take the slower
# step-by-step path)
set -eu
OUT=${OUT:-/tmp/laya-train-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,memory.total,clocks.sm,driver_version --format=csv >"$OUT/gpu.txt" 2>&1 || true
tok=/tmp/laya-tokens
mkdir -p "$tok"
if command -v xz >/dev/null 2>&1; then
    xz -d -c .cudadata/train.tokens.xz >"$tok/train.tokens"
else
    python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
        .cudadata/train.tokens.xz "$tok/train.tokens"
fi
cp .cudadata/*valid*.tokens "$tok/"
valid=en_valid.tokens,zh_valid.tokens
for f in "$tok"/*_valid-*.tokens; do valid="$valid,$(basename "$f")"; done
run=/tmp/laya-run
rm -rf "$run"
echo "valid: $valid" | tee "$OUT/settings.txt"
env | grep -E '^(H|D|L|W|BATCH|SEQ|LR|WD|DROPOUT|WARMUP|BUDGET|EVAL_EVERY|INIT)=' | sort | tee -a "$OUT/settings.txt"
rc=0
LAYA=.cudadata/laya TOKENS="$tok" OUT="$run" VALID="$valid" \
    sh scripts/train_base.sh >"$OUT/train.log" 2>&1 || rc=$?
tail -5 "$OUT/train.log"
cp "$run/log.csv" "$OUT/log.csv" 2>/dev/null || true
if [ -f "$run/best.safetensors" ]; then
    split -b 15000000 -d "$run/best.safetensors" "$OUT/best.f16.part"
    sha256sum "$run/best.safetensors" | tee "$OUT/best.sha256"
fi
exit "$rc"
