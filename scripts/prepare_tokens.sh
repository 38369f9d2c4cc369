#!/bin/sh
# scripts/prepare_tokens.sh - corpus -> tokenizer -> packed token streams, the
# inputs of `laya train`. Reproducible: the corpus pipeline is byte-identical
# across runs, the tokenizer trainer is deterministic.
#   RETRAIN_TOKENIZER=1  also retrain models/tokenizer.tok (8192 ids)
#   BOS_EVERY=N          a BOS (start of a text) after every Nth line of the
#                        training stream (laya tokenizer encode --bos-every; 0:
#                        only the stream's first). The mix's lines are unrelated
#                        paragraphs, and every session starts with BOS: without
#                        them the model never learns how a text begins.
# Writes data/tokens/{train,en_valid,zh_valid}.tokens and, for each genre split
# data/corpus/<lang>/valid-<genre>.txt, data/tokens/<lang>_valid-<genre>.tokens.
set -eu
cd "$(dirname "$0")/.."
LAYA=${LAYA:-build/laya}
[ -x "$LAYA" ] || make -j"$(nproc)" all
[ -f data/corpus/en/train.txt ] || make corpus
if [ "${RETRAIN_TOKENIZER:-0}" = 1 ]; then
    "$LAYA" tokenizer train --vocab 8192 -o models/tokenizer.tok \
        data/corpus/en/train.txt data/corpus/zh/train.txt
fi
mkdir -p data/tokens
python3 scripts/corpus/mix.py data/tokens/mix_train.txt data/corpus/en/train.txt data/corpus/zh/train.txt
# (anything but 0 goes to laya, which refuses what is not a count of lines)
bos=
[ "${BOS_EVERY:-0}" = 0 ] || bos="--bos-every $BOS_EVERY"
# shellcheck disable=SC2086
"$LAYA" tokenizer encode --tok models/tokenizer.tok $bos data/tokens/mix_train.txt data/tokens/train.tokens
"$LAYA" tokenizer encode --tok models/tokenizer.tok data/corpus/en/valid.txt data/tokens/en_valid.tokens
"$LAYA" tokenizer encode --tok models/tokenizer.tok data/corpus/zh/valid.txt data/tokens/zh_valid.tokens
for f in data/corpus/en/valid-*.txt data/corpus/zh/valid-*.txt; do
    [ -f "$f" ] || continue
    lang=$(basename "$(dirname "$f")")
    "$LAYA" tokenizer encode --tok models/tokenizer.tok "$f" "data/tokens/${lang}_$(basename "$f" .txt).tokens"
done
