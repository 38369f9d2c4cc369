#!/bin/sh
# scripts/train_base.sh - trains one base-model candidate with the CUDA trainer
# (`make cuda`), the command behind models/default.safetensors (MODEL.md says
# which settings were shipped; the defaults are the shipped model's: H=384
# D=64, lr 3e-3, wd 0.1, dropout 0.15, 470 s, bf16 products with the
# persistent recurrences). Settings come from the environment:
#   H D L W BATCH SEQ LR WD DROPOUT WARMUP BUDGET OUT LAYA TOKENS CUDA_MATH
#   VALID (comma-separated token files under $TOKENS; the first one picks the
#   best checkpoint), EVAL_EVERY (steps, default 100), INIT (a model file to
#   start from, same shape: laya train --init, a fresh schedule; the q8
#   shipped model works, its weights are read back to f32), TEACHER (a model
#   file whose next-word prior the run distills: laya train --teacher) and
#   TEACHER_WEIGHT (default 0.3)
# Inputs: $TOKENS/{train,en_valid,zh_valid}.tokens and models/tokenizer.tok
# (scripts/prepare_tokens.sh makes them).
set -eu
H=${H:-384}; D=${D:-64}; L=${L:-3}; W=${W:-5}
BATCH=${BATCH:-256}; SEQ=${SEQ:-128}; LR=${LR:-3e-3}; WD=${WD:-0.1}
DROPOUT=${DROPOUT:-0.15}; WARMUP=${WARMUP:-100}; BUDGET=${BUDGET:-470}
CUDA_MATH=${CUDA_MATH:-bf16}
LAYA=${LAYA:-build-cuda/laya}; TOKENS=${TOKENS:-data/tokens}
OUT=${OUT:-runs/base-H$H}
VALID=${VALID:-en_valid.tokens,zh_valid.tokens}; EVAL_EVERY=${EVAL_EVERY:-100}
valid=$(echo "$VALID" | tr ',' '\n' | sed "s|^|$TOKENS/|" | paste -sd, -)
init=
[ -z "${INIT:-}" ] || init="--init $INIT"
[ -z "${TEACHER:-}" ] || init="$init --teacher $TEACHER --teacher-weight ${TEACHER_WEIGHT:-0.3}"
# shellcheck disable=SC2086
"$LAYA" train $init --device cuda --train "$TOKENS/train.tokens" \
    --valid "$valid" --tok models/tokenizer.tok \
    -o "$OUT" --H "$H" --D "$D" --L "$L" --W "$W" --batch "$BATCH" --seq "$SEQ" \
    --lr "$LR" --wd "$WD" --dropout "$DROPOUT" --warmup "$WARMUP" \
    --eval-every "$EVAL_EVERY" --time-budget "$BUDGET" --f16 --cuda-math "$CUDA_MATH"
