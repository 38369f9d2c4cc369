#!/bin/sh
# scripts/cuda_device.sh - one whole session on a GPU machine: build (or use
# binaries built beforehand), the GPU checks, a memory-checker pass over the
# indexing-heavy kernels, the throughput benchmark, and a short end-to-end
# `laya train --device cuda` run that is stopped, resumed on the GPU, then
# resumed one step on the CPU from the GPU's checkpoint. Logs go to $OUT.
#
# Expects (ignored folders, carried to the machine):
#   .cudabin/   laya, laya_cuda_tests, laya_cuda_bench built with
#               `make cuda BUILD=build-cuda/base CUDA_DEPS=.cudadeps` (optional)
#   .cudadeps/  include/ and lib/ with jansson, libsodium and sqlite3 (static;
#               liblaya.a holds the memory store, src/learn/learn_store.c)
#   .cudadata/  tokenizer.tok, train.tokens, valid_en.tokens, valid_zh.tokens
# Usage: OUT=/tmp/out sh scripts/cuda_device.sh [tests|bench|train|all]
set -u
OUT=${OUT:-/tmp/laya-cuda-out}
what=${1:-all}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv | tee "$OUT/gpu.txt"

BIN=.cudabin
if ! "$BIN/laya_cuda_tests" no_test_has_this_name >/dev/null 2>&1; then
    echo "== prebuilt binaries do not run here: building with nvcc"
    t0=$(date +%s)
    if ! make -j16 cuda BUILD=build-cuda/base CUDA_DEPS=.cudadeps >"$OUT/build.log" 2>&1; then
        tail -40 "$OUT/build.log"
        exit 1
    fi
    echo "   built in $(($(date +%s) - t0)) s"
    BIN=build-cuda
fi
rc=0

if [ "$what" = all ] || [ "$what" = tests ]; then
    echo "== GPU checks"
    timeout 300 "$BIN/laya_cuda_tests" >"$OUT/tests.log" 2>&1 || rc=1
    cat "$OUT/tests.log"
    echo "== compute-sanitizer memcheck (attention, GRU, persistent GRU, cross-entropy, embedding)"
    for t in cuda_attn cuda_gru_matches cuda_gru_persistent cuda_xent cuda_embed; do
        LAYA_TEST_NOFORK=1 timeout 120 compute-sanitizer --tool memcheck --print-limit 5 "$BIN/laya_cuda_tests" $t \
            >"$OUT/memcheck_$t.log" 2>&1
        grep -E "ERROR SUMMARY|passed, " "$OUT/memcheck_$t.log" | tr '\n' ' '
        echo " [$t]"
    done
fi

if [ "$what" = all ] || [ "$what" = bench ]; then
    echo "== benchmark"
    timeout 240 "$BIN/laya_cuda_bench" 2>&1 | tee "$OUT/bench.log"
fi

if [ "$what" = all ] || [ "$what" = train ]; then
    echo "== laya train --device cuda (SIGTERM after 2 evaluations, resume to 200, then 1 CPU step)"
    run=/tmp/laya-cuda-run
    rm -rf "$run"
    common="--train .cudadata/train.tokens --valid .cudadata/valid_en.tokens,.cudadata/valid_zh.tokens
            --tok .cudadata/tokenizer.tok -o $run --H 256 --D 64 --batch 64 --seq 64 --lr 3e-3
            --warmup 20 --eval-every 50 --f16 --device cuda"
    # shellcheck disable=SC2086
    timeout 120 "$BIN/laya" train $common --steps 200 >"$OUT/train1.log" 2>&1 &
    pid=$!
    # Stop it part way (SIGTERM: checkpoint, then exit), as a 10-minute lease would.
    n=0
    while kill -0 $pid 2>/dev/null && [ $n -lt 600 ]; do
        if [ -f "$run/log.csv" ] && [ "$(wc -l <"$run/log.csv")" -ge 3 ]; then kill -TERM $pid; break; fi
        sleep 0.1
        n=$((n + 1))
    done
    wait $pid
    echo "   first run exit $?"
    tail -3 "$OUT/train1.log"
    # shellcheck disable=SC2086
    timeout 120 "$BIN/laya" train $common --steps 200 --resume >"$OUT/train2.log" 2>&1
    echo "   resumed run exit $?"
    tail -4 "$OUT/train2.log"
    cp "$run/log.csv" "$OUT/train_log.csv"
    cat "$run/log.csv"
    ls -la "$run"
    echo "== CPU trainer resumes the GPU checkpoint for one more step"
    timeout 120 "$BIN/laya" train --train .cudadata/train.tokens --valid .cudadata/valid_en.tokens,.cudadata/valid_zh.tokens \
        --tok .cudadata/tokenizer.tok -o "$run" --H 256 --D 64 --batch 64 --seq 64 --lr 3e-3 --warmup 20 \
        --eval-every 50 --f16 --steps 201 --resume >"$OUT/train3.log" 2>&1
    echo "   CPU resume exit $?"
    tail -2 "$run/log.csv"
fi
exit $rc
