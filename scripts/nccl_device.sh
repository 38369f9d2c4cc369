#!/bin/sh
# scripts/nccl_device.sh - data-parallel training (issue 19, --gpus N) on a
# machine with 2+ GPUs, in under 10 minutes: find or build the binaries,
# find libnccl.so.2 (the Python package nvidia-nccl-cu13), run the NCCL
# tests and the other CUDA tests, measure tokens/s at the base shape on 1
# and N GPUs, and train end to end on a synthetic token stream (2 GPUs,
# resumed on 1, then on one GPU without NCCL). Everything lands in $OUT;
# a short table is printed last.
#
# Run from the repository root:  OUT=/tmp/out sh scripts/nccl_device.sh
# Binaries, first that runs: .dev/nccl/ (copied there beforehand),
# build-cuda/, else a build (`make cuda BUILD=build-cuda/base
# CUDA_DEPS=.cudadeps`, after copying .dev/nccl/src-overlay/ over the tree
# when it exists). .cudabin/ supplies libjansson, libsodium, libsqlite3 and
# libgomp where the machine lacks them.
set -u
OUT=${OUT:-/tmp/laya-nccl-out}
mkdir -p "$OUT"
T_START=$(date +%s)
elapsed() { echo $(($(date +%s) - T_START)); }
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}:$PWD/.cudabin"
export NCCL_NVLS_ENABLE="${NCCL_NVLS_ENABLE:-0}"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
nvidia-smi topo -m >"$OUT/topo.txt" 2>&1 || true
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
echo "GPUs: $NGPU"

# ---- (a) binaries ----
runs() { [ -x "$1/laya_cuda_tests" ] && "$1/laya_cuda_tests" no_test_has_this_name >/dev/null 2>&1 &&
         [ -x "$1/laya" ] && "$1/laya" train --help 2>/dev/null | grep -q -- --gpus; }
BIN=
for d in .dev/nccl build-cuda; do
    if runs "$d"; then BIN=$d; break; fi
done
if [ -z "$BIN" ]; then
    echo "== no prebuilt binary runs here: building (log in build.log)"
    [ -d .dev/nccl/src-overlay ] && cp -r .dev/nccl/src-overlay/. .
    if timeout 330 make -j"$(nproc)" cuda BUILD=build-cuda/base CUDA_DEPS=.cudadeps >"$OUT/build.log" 2>&1; then
        BIN=build-cuda
    else
        tail -30 "$OUT/build.log"
        echo "build failed"
        exit 1
    fi
fi
echo "binaries: $BIN ($(elapsed) s)"
ldd "$BIN/laya" >"$OUT/ldd.txt" 2>&1

# ---- (b) NCCL from the Python package ----
if [ -z "${LAYA_NCCL_LIB:-}" ]; then
    d=$(python3 -c 'import os, nvidia.nccl as m; print(os.path.dirname(m.__file__) if getattr(m, "__file__", None) else list(m.__path__)[0])' 2>/dev/null)
    if [ -n "$d" ] && [ -f "$d/lib/libnccl.so.2" ]; then
        LAYA_NCCL_LIB=$d/lib
    else
        f=$(timeout 30 find / -name libnccl.so.2 -not -path '/proc/*' 2>/dev/null | head -1)
        [ -n "$f" ] && LAYA_NCCL_LIB=$(dirname "$f")
    fi
fi
export LAYA_NCCL_LIB="${LAYA_NCCL_LIB:-}"
echo "LAYA_NCCL_LIB=$LAYA_NCCL_LIB" | tee "$OUT/nccl.txt"
pip show nvidia-nccl-cu13 nvidia-nccl-cu12 2>/dev/null | grep -E '^(Name|Version)' >>"$OUT/nccl.txt"

# ---- (c) tests ----
echo "== NCCL tests"
timeout 180 "$BIN/laya_cuda_tests" cuda_dp >"$OUT/tests_dp.log" 2>&1
rc_dp=$?
cat "$OUT/tests_dp.log"
rc_all=0
if [ "$(elapsed)" -lt 300 ]; then
    echo "== every CUDA test ($(elapsed) s)"
    timeout 150 "$BIN/laya_cuda_tests" >"$OUT/tests_all.log" 2>&1
    rc_all=$?
    tail -15 "$OUT/tests_all.log"
else
    echo "== every CUDA test: skipped, $(elapsed) s spent" | tee "$OUT/tests_all.log"
fi

# ---- (d) tokens/s at the base shape: 1 GPU, 1 GPU through NCCL, 2, 4... ----
echo "== benchmark (base shape, bf16) ($(elapsed) s)"
LAYA_BENCH_STEPS=${LAYA_BENCH_STEPS:-20} timeout 150 "$BIN/laya_cuda_bench" bench_cuda_dp 2>&1 | tee "$OUT/bench_dp.log"

# ---- (e) end to end on a synthetic token stream ----
# One 60-step schedule: 2 GPUs to step 30 (stopped by SIGTERM after its
# second evaluation), resumed on 1 GPU through NCCL to step 45 (stopped the
# same way), then on one GPU without NCCL to the end; beside it a reference
# run of all 60 steps on one GPU. The two log.csv should agree closely (bf16;
# the gradient sums differ only in order).
# run_until DIR ROWS ARGS...: train, SIGTERM once log.csv has ROWS rows.
run_until() {
    dir=$1; rows=$2; shift 2
    timeout 100 "$BIN/laya" train "$@" -o "$dir" &
    pid=$!
    n=0
    while kill -0 $pid 2>/dev/null && [ $n -lt 950 ]; do
        if [ "$rows" -gt 0 ] && [ -f "$dir/log.csv" ] && [ "$(wc -l <"$dir/log.csv")" -gt "$rows" ]; then
            kill -TERM $pid; break
        fi
        sleep 0.1; n=$((n + 1))
    done
    wait $pid
}
if [ "$(elapsed)" -lt 400 ]; then
    echo "== laya train --gpus on a synthetic stream ($(elapsed) s)"
    syn=/tmp/laya-nccl-syn
    rm -rf "$syn" && mkdir -p "$syn"
    i=0
    while [ $i -lt 3 ]; do cat README.md docs/*.md src/*/*.c src/*/*.h; i=$((i + 1)); done >"$syn/train.txt" 2>/dev/null
    cat docs/*.md >"$syn/valid.txt"
    timeout 60 "$BIN/laya" tokenizer encode --tok models/tokenizer.tok "$syn/train.txt" "$syn/train.tokens" >"$OUT/encode.log" 2>&1
    timeout 30 "$BIN/laya" tokenizer encode --tok models/tokenizer.tok "$syn/valid.txt" "$syn/valid.tokens" >>"$OUT/encode.log" 2>&1
    ls -la "$syn" >>"$OUT/encode.log"
    common="--train $syn/train.tokens --valid $syn/valid.tokens --tok models/tokenizer.tok --H 768 --D 128 --L 3
            --W 5 --batch 256 --seq 256 --lr 2e-3 --warmup 10 --steps 60 --eval-every 15 --eval-tokens 131072
            --device cuda"
    n2=2; [ "$NGPU" -ge 2 ] || n2=1
    # shellcheck disable=SC2086
    run_until "$syn/run" 2 $common --gpus $n2 >"$OUT/train_a.log" 2>&1; echo "   $n2 GPUs to step 30: exit $?"
    # shellcheck disable=SC2086
    run_until "$syn/run" 3 $common --gpus 1 --resume >"$OUT/train_b.log" 2>&1; echo "   1 GPU (NCCL) to 45: exit $?"
    # shellcheck disable=SC2086
    run_until "$syn/run" 0 $common --resume >"$OUT/train_c.log" 2>&1; echo "   1 GPU (no NCCL) to 60: exit $?"
    # shellcheck disable=SC2086
    run_until "$syn/ref" 0 $common >"$OUT/train_ref.log" 2>&1; echo "   reference, 1 GPU, 60 steps: exit $?"
    cp "$syn/run/log.csv" "$OUT/train_log.csv" 2>/dev/null
    cp "$syn/ref/log.csv" "$OUT/train_log_ref.csv" 2>/dev/null
    echo "-- resumed across GPU counts"; cat "$OUT/train_log.csv"
    echo "-- reference"; cat "$OUT/train_log_ref.csv"
    grep -h "NCCL\|tokens/s\|laya train:" "$OUT"/train_a.log | tail -4
    echo "== errors: --batch not a multiple of --gpus; --gpus without NCCL"
    # shellcheck disable=SC2086
    timeout 30 "$BIN/laya" train $common -o "$syn/bad" --batch 255 --gpus 2 --steps 1 2>&1 | tail -1 | tee "$OUT/err_batch.txt"
    # No $LAYA_NCCL_LIB file, no NCCL on the library path, no python3 on PATH.
    # shellcheck disable=SC2086
    env LAYA_NCCL_LIB=/nonexistent LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.cudabin PATH=/nonexistent \
        /usr/bin/timeout 60 "$BIN/laya" train $common -o "$syn/bad" --gpus 1 --steps 1 2>&1 | tail -1 | tee "$OUT/err_nccl.txt"
else
    echo "== end-to-end run skipped: $(elapsed) s spent"
fi

# ---- the table ----
echo
echo "== summary ($(elapsed) s)"
printf '%-34s %s\n' "NCCL library" "${LAYA_NCCL_LIB:-not found}"
printf '%-34s %s\n' "NCCL tests (cuda_dp*)" "$( [ $rc_dp = 0 ] && echo pass || echo "FAIL rc=$rc_dp"): $(grep -E '^(ok|skip|FAIL) ' "$OUT/tests_dp.log" | tr '\n' ' ')"
printf '%-34s %s\n' "all CUDA tests" "$( [ $rc_all = 0 ] && echo pass || echo "FAIL rc=$rc_all"): $(tail -1 "$OUT/tests_all.log")"
grep -E '^ +[0-9]+ +(yes|no) ' "$OUT/bench_dp.log" | while read -r g nc _rec ms tps sp rest; do
    printf '%-34s %s tokens/s  %s ms/step  %s  allreduce ms/busbw: %s\n' "bench: $g GPU(s), nccl $nc" "$tps" "$ms" "$sp" "$rest"
done
if [ -f "$OUT/train_log.csv" ]; then
    printf '%-34s %s\n' "end to end, 2->1->1 GPUs, last row" "$(tail -1 "$OUT/train_log.csv")"
    printf '%-34s %s\n' "end to end, 1 GPU reference" "$(tail -1 "$OUT/train_log_ref.csv" 2>/dev/null)"
fi
exit $((rc_dp | rc_all))
