/* bench_cuda_dp.c - data-parallel training throughput (cuda_dp.h) at the
 * base training shape (V=8192, H=768, D=128, L=3, W=5, global batch 256 x
 * 256 tokens, bf16): tokens per second of whole steps on one GPU without
 * NCCL, then through NCCL on 1, 2, 4, ... GPUs (each taking batch/n
 * streams), the speed-up over one GPU, and the time of the gradient
 * all-reduce alone (P floats in place; the bus bandwidth NCCL reports as
 * busbw = 2(n-1)/n * bytes / time), which bounds what overlapping it with
 * the backward pass could save. Environment: LAYA_BENCH_B, LAYA_BENCH_T,
 * LAYA_BENCH_STEPS as bench_cuda_train.c; LAYA_BENCH_GPUS the largest n
 * (default: every device). */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cuda/cuda_dp.h"

static int env_int(const char *name, int def) {
    const char *s = getenv(name);
    return s && atoi(s) > 0 ? atoi(s) : def;
}

/* Milliseconds of one in-place all-reduce of every replica's gradients. */
static double reduce_ms(cuda_dp *dp, int reps) {
    const cuda_nccl *nc = &dp->nccl;
    double t0 = 0;
    for (int k = 0; k < reps + 1; k++) {
        if (k == 1) t0 = bench_now();
        nc->GroupStart();
        for (int r = 0; r < dp->n; r++)
            nc->AllReduce(dp->ct[r].grads, dp->ct[r].grads, dp->P, NCCL_FLOAT32, NCCL_SUM, dp->comm[r],
                          dp->ct[r].ctx.stream);
        nc->GroupEnd();
        for (int r = 0; r < dp->n; r++) {
            cuda_trainer_use(&dp->ct[r]);
            cudaStreamSynchronize((cudaStream_t)dp->ct[r].ctx.stream);
        }
    }
    return 1e3 * (bench_now() - t0) / reps;
}

BENCH(bench_cuda_dp) {
    int have = cuda_device_count();
    if (have < 1) {
        printf("no CUDA device: skipped\n");
        return;
    }
    char dev[256], err[512];
    cuda_device_name(dev, sizeof dev);
    model_cfg cfg = {.V = 8192, .H = env_int("LAYA_BENCH_H", 768), .D = env_int("LAYA_BENCH_D", 128), .L = 3, .W = 5};
    int B = env_int("LAYA_BENCH_B", 256), T = env_int("LAYA_BENCH_T", 256), steps = env_int("LAYA_BENCH_STEPS", 10);
    int maxn = env_int("LAYA_BENCH_GPUS", have);
    if (maxn > have) maxn = have;
    size_t P = model_n_params(&cfg);
    printf("%s x%d\nV=%d H=%d D=%d L=%d W=%d, %zu params (%.1f MB of f32 gradients), global batch %d x %d, bf16\n",
           dev, have, cfg.V, cfg.H, cfg.D, cfg.L, cfg.W, P, P * 4 / 1e6, B, T);
    float *p = malloc(P * 4);
    int32_t *toks = malloc(sizeof(int32_t) * B * (T + 1));
    uint64_t s = 1;
    for (int i = 0; i < B * (T + 1); i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        toks[i] = (int32_t)((s >> 33) % (uint64_t)cfg.V);
    }
    train_init_params(&cfg, p, 1);
    train_adamw o = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f, .wd = 0.1f};
    printf("  %4s %-5s %-10s %10s %12s %8s %12s %10s\n", "gpus", "nccl", "recurrence", "ms/step", "tokens/s",
           "speedup", "allreduce ms", "busbw GB/s");
    double base = 0;
    /* One GPU without NCCL, then n = 1, 2, 4, ... through NCCL. */
    for (int i = 0;; i++) {
        int nccl = i > 0, n = nccl ? 1 << (i - 1) : 1;
        if (n > maxn || B % n) break;
        cuda_dp dp;
        if (cuda_dp_init(&dp, n, nccl, &cfg, B, T, 0.1f, CUDA_MATH_BF16, err, sizeof err) != LAYA_OK ||
            cuda_dp_load(&dp, p, NULL, NULL, NULL, err, sizeof err) != LAYA_OK) {
            printf("  %4d %-5s %s\n", n, nccl ? "yes" : "no", err);
            if (!nccl) break;
            continue;
        }
        double loss = 0, t0 = 0;
        int ok = 1;
        for (int k = 0; k < steps + 2 && ok; k++) {
            if (k == 2) t0 = bench_now(); /* after capture and one replay */
            ok = cuda_dp_step(&dp, toks, CUDA_SLOT_TRAIN, 1, k, &o, 1e-3f, 1.0f, &loss, NULL, err, sizeof err) ==
                 LAYA_OK;
        }
        if (!ok) {
            printf("  %4d %-5s step failed: %s\n", n, nccl ? "yes" : "no", err);
            cuda_dp_free(&dp);
            continue;
        }
        double dt = (bench_now() - t0) / steps, tps = (double)B * T / dt;
        if (!base) base = tps;
        printf("  %4d %-5s %-10s %10.2f %12.0f %7.2fx", n, nccl ? "yes" : "no",
               dp.ct[0].ctx.persist ? "persistent" : "cuBLAS", 1e3 * dt, tps, tps / base);
        if (nccl) {
            double ms = reduce_ms(&dp, 10);
            printf(" %12.3f %10.0f", ms, 2.0 * (n - 1) / n * (double)P * 4 / (ms * 1e-3) / 1e9);
        }
        printf("   (loss %.3f, %.1f GB per GPU)\n", loss, dp.ct[0].mem_bytes / 1e9);
        cuda_dp_free(&dp);
    }
    free(p);
    free(toks);
}
