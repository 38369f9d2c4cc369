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
#   TRAIN_XZ          another packed stream to train on instead of
#                     .cudadata/train.tokens.xz
#   MIX_EN, MIX_ZH    or: the English and Chinese train.txt of a corpus
#                     (xz-packed), mixed and encoded here as
#                     scripts/prepare_tokens.sh does (BOS_EVERY, default 30):
#                     a corpus is a third of its token stream's size packed,
#                     so one call can carry and train several mixes
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
train_xz=${TRAIN_XZ:-.cudadata/train.tokens.xz}
mkdir -p "$tok"
unxz() { # FILE.xz OUT
    if command -v xz >/dev/null 2>&1; then
        xz -d -c "$1" >"$2"
    else
        python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"
    fi
}
if [ -n "${MIX_EN:-}" ]; then
    unxz "$MIX_EN" "$tok/en.txt"
    unxz "${MIX_ZH:?MIX_EN needs MIX_ZH}" "$tok/zh.txt"
    python3 scripts/corpus/mix.py "$tok/mix.txt" "$tok/en.txt" "$tok/zh.txt"
    .cudadata/laya tokenizer encode --tok .cudadata/tokenizer.tok --bos-every "${BOS_EVERY:-30}" \
        "$tok/mix.txt" "$tok/train.tokens"
else
    unxz "$train_xz" "$tok/train.tokens"
fi
sha256sum "$tok/train.tokens" >"$OUT/train.sha256"
cp .cudadata/*valid*.tokens "$tok/"
valid=en_valid.tokens,zh_valid.tokens
for f in "$tok"/*_valid-*.tokens; do valid="$valid,$(basename "$f")"; done
run=/tmp/laya-run
rm -rf "$run"
echo "valid: $valid" | tee "$OUT/settings.txt"
env | grep -E '^(H|D|L|W|BATCH|SEQ|LR|WD|DROPOUT|WARMUP|BUDGET|EVAL_EVERY|INIT|TEACHER|TEACHER_WEIGHT)=' | sort | tee -a "$OUT/settings.txt"
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
