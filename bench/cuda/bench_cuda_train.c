/* bench_cuda_train.c - CUDA trainer throughput for the base training shape
 * (V=8192, H=768, D=128, L=3, W=5, tied embeddings, batch 256 x 256
 * tokens): training tokens per second of whole graph-replayed steps
 * (forward, backward, clipping, AdamW) in each math mode, the FLOP rate
 * that implies, the chip's measured ceilings (a large gemm per math mode,
 * a device-to-device copy), and a per-phase profile of one step.
 * Environment: LAYA_BENCH_B, LAYA_BENCH_T, LAYA_BENCH_STEPS, LAYA_BENCH_H,
 * LAYA_BENCH_D override the batch, the window, the timed steps, the width
 * and the attention width. Tokens are random (uniform over
 * V): the step's cost does not depend on them. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_cuda_rec.h"
#include "cuda/cuda_train.h"

static int env_int(const char *name, int def) {
    const char *s = getenv(name);
    return s && atoi(s) > 0 ? atoi(s) : def;
}

/* Matrix-product FLOPs of one training step (forward 1x, backward 2x). */
static double step_flops(const model_cfg *c, int B, int T) {
    double N = (double)B * T, H = c->H, D = c->D, V = c->V;
    double fwd = 2 * N * (H * V + c->L * (3 * H * H * 2 + 3 * D * H + H * D));
    double attn = 2 * N * c->L * (2.0 * c->W * D); /* scores and weighted sum */
    return 3 * (fwd + attn);
}

static double gemm_rate(cuda_ctx *c, int n) {
    float *a, *b, *d;
    size_t bytes = (size_t)n * n * 4;
    if (cudaMalloc((void **)&a, bytes) || cudaMalloc((void **)&b, bytes) || cudaMalloc((void **)&d, bytes)) return 0;
    cudaMemset(a, 0x3c, bytes); /* 0x3c3c3c3c ~ 0.0115: not zeros */
    cudaMemset(b, 0x3b, bytes);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    cuda_gemm(c, 0, 1, n, n, n, 1.0f, a, n, b, n, 0.0f, d, n);
    cudaEventRecord(e0, (cudaStream_t)c->stream);
    int reps = 10;
    for (int r = 0; r < reps; r++) cuda_gemm(c, 0, 1, n, n, n, 1.0f, a, n, b, n, 0.0f, d, n);
    cudaEventRecord(e1, (cudaStream_t)c->stream);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    cudaFree(a), cudaFree(b), cudaFree(d);
    cudaEventDestroy(e0), cudaEventDestroy(e1);
    return 2.0 * n * (double)n * n * reps / (ms * 1e-3);
}

static double copy_rate(void) {
    size_t bytes = (size_t)2 << 30;
    void *a, *b;
    if (cudaMalloc(&a, bytes) || cudaMalloc(&b, bytes)) return 0;
    cudaMemset(a, 1, bytes);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(e0, 0);
    for (int r = 0; r < 5; r++) cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0);
    cudaEventRecord(e1, 0);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    cudaFree(a), cudaFree(b);
    return 2.0 * bytes * 5 / (ms * 1e-3);
}

BENCH(bench_cuda_train_step) {
    if (cuda_device_count() < 1) {
        printf("no CUDA device: skipped\n");
        return;
    }
    char dev[256], err[512];
    cuda_device_name(dev, sizeof dev);
    model_cfg cfg = {.V = 8192, .H = env_int("LAYA_BENCH_H", 768), .D = env_int("LAYA_BENCH_D", 128), .L = 3, .W = 5};
    int B = env_int("LAYA_BENCH_B", 256), T = env_int("LAYA_BENCH_T", 256), steps = env_int("LAYA_BENCH_STEPS", 10);
    size_t P = model_n_params(&cfg);
    printf("%s\nV=%d H=%d D=%d L=%d W=%d, %zu params, batch %d x %d tokens\n", dev, cfg.V, cfg.H, cfg.D, cfg.L,
           cfg.W, P, B, T);

    cuda_ctx c;
    static const char *mname[] = {"f32", "tf32", "bf16"};
    if (cuda_ctx_init(&c, CUDA_MATH_F32, 0, err, sizeof err) != LAYA_OK) {
        printf("%s\n", err);
        return;
    }
    printf("ceilings: device copy %.0f GB/s (read+write)", copy_rate() / 1e9);
    double ceil_rate[3];
    for (int m = 0; m < 3; m++) {
        c.math = (cuda_math)m;
        ceil_rate[m] = gemm_rate(&c, 8192);
        printf(", %s gemm %.0f TFLOP/s", mname[m], ceil_rate[m] / 1e12);
    }
    printf(" (8192^3, f32 operands)\n");
    cuda_ctx_free(&c);

    float *p = malloc(P * 4);
    int32_t *toks = malloc(sizeof(int32_t) * B * (T + 1));
    uint64_t s = 1;
    for (int i = 0; i < B * (T + 1); i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        toks[i] = (int32_t)((s >> 33) % (uint64_t)cfg.V);
    }
    train_init_params(&cfg, p, 1);
    double flops = step_flops(&cfg, B, T);
    train_adamw o = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f, .wd = 0.1f};
    printf("  %-5s %5s %-10s %10s %12s %10s %8s\n", "math", "split", "recurrence", "ms/step", "tokens/s", "TFLOP/s",
           "of gemm");
    /* {math, split, persistent}: the tf32 baseline, bf16 through cuBLAS,
     * bf16 with the persistent recurrences (cuda_rec.cu). */
    static const int runs[][3] = {{1, 1, 0}, {2, 1, 0}, {2, 1, 1}};
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        int m = runs[r][0], split = runs[r][1], pers = runs[r][2];
        cuda_trainer ct;
        if (cuda_trainer_init(&ct, &cfg, B, T, 0.1f, (cuda_math)m, err, sizeof err) != LAYA_OK ||
            cuda_trainer_set_split(&ct, split, err, sizeof err) != LAYA_OK ||
            cuda_trainer_set_persist(&ct, pers, err, sizeof err) != LAYA_OK ||
            cuda_trainer_set(&ct, p, NULL, NULL, err, sizeof err) != LAYA_OK) {
            printf("  %-5s %s\n", mname[m], err);
            continue;
        }
        double loss = 0, t0 = 0;
        int ok = 1;
        for (int k = 0; k < steps + 2 && ok; k++) {
            if (k == 2) t0 = bench_now(); /* after capture and one replay */
            ok = cuda_trainer_step(&ct, toks, CUDA_SLOT_TRAIN, 1, k, &o, 1e-3f, 1.0f, &loss, NULL, err, sizeof err) ==
                 LAYA_OK;
        }
        if (!ok) {
            printf("  %-5s step failed: %s\n", mname[m], err);
            cuda_trainer_free(&ct);
            continue;
        }
        double dt = (bench_now() - t0) / steps;
        printf("  %-5s %5d %-10s %10.2f %12.0f %10.1f %7.0f%%   (loss %.3f, %.1f GB on the GPU)\n", mname[m], split,
               pers ? "persistent" : "cuBLAS", 1e3 * dt, (double)B * T / dt, flops / dt / 1e12,
               100 * flops / dt / ceil_rate[m], loss, ct.mem_bytes / 1e9);
        if (m == 2) {
            printf("profile of one %s step without the graph (%s recurrences):\n", mname[m],
                   pers ? "persistent" : "cuBLAS");
            if (cuda_trainer_profile(&ct, toks, err, sizeof err) != LAYA_OK) printf("  %s\n", err);
        }
        cuda_trainer_free(&ct);
    }
    printf("matrix FLOPs per step %.2f T (%.0f M per token); PyTorch+cuDNN bf16 reference: 1.19M tokens/s on H200\n",
           flops / 1e12, flops / B / T / 1e6);
    free(p);
    free(toks);
}

/* Times reps calls of one row-major product C(M,N) = A(M,K) op B in the given
 * operand type (CUDA_R_32F with the context's math, or CUDA_R_16BF native),
 * microseconds per call. ta: A stored (K,M); tb: B stored (N,K). */
static double time_gemm(cuda_ctx *c, int bf16, int ta, int tb, int M, int N, int K) {
    size_t es = bf16 ? 2 : 4;
    void *a, *b;
    float *o;
    if (cudaMalloc(&a, (size_t)M * K * es) || cudaMalloc(&b, (size_t)N * K * es) ||
        cudaMalloc((void **)&o, (size_t)M * N * 4))
        return 0;
    cudaMemset(a, 0x3c, (size_t)M * K * es);
    cudaMemset(b, 0x3b, (size_t)N * K * es);
    cublasComputeType_t ct = bf16 ? CUBLAS_COMPUTE_32F
                             : c->math == CUDA_MATH_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                             : c->math == CUDA_MATH_BF16 ? CUBLAS_COMPUTE_32F_FAST_16BF : CUBLAS_COMPUTE_32F;
    cudaDataType_t dt = bf16 ? CUDA_R_16BF : CUDA_R_32F;
    float one = 1.0f, zero = 0.0f;
    int reps = (double)M * N * K > 1e11 ? 10 : 256;
    double t0 = 0;
    for (int r = -1; r < reps; r++) {
        if (r == 0) {
            cudaStreamSynchronize((cudaStream_t)c->stream);
            t0 = bench_now();
        }
        cublasGemmEx((cublasHandle_t)c->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K,
                     &one, b, dt, tb ? K : N, a, dt, ta ? M : K, &zero, o, CUDA_R_32F, N, ct, CUBLAS_GEMM_DEFAULT);
    }
    cudaStreamSynchronize((cudaStream_t)c->stream);
    double us = 1e6 * (bench_now() - t0) / reps;
    cudaFree(a), cudaFree(b), cudaFree(o);
    return us;
}

/* The recurrent products alone, as the GRU loops issue them (forward
 * (B,H)x(H,3H), backward (B,3H)x(3H,H)), one after another on one stream:
 * the latency each step of the recurrence pays, against native bf16. */
BENCH(bench_cuda_recurrent_gemm) {
    if (cuda_device_count() < 1) return;
    char err[256];
    int B = env_int("LAYA_BENCH_B", 256), H = 768, G = 3 * H;
    printf("  %-34s %10s %10s\n", "recurrent product (us per call)", "forward", "backward");
    static const char *names[] = {"f32", "tf32", "bf16 (f32 operands)", "bf16 native operands"};
    for (int m = 0; m < 4; m++) {
        cuda_ctx c;
        if (cuda_ctx_init(&c, m == 3 ? CUDA_MATH_F32 : (cuda_math)m, 0, err, sizeof err) != LAYA_OK) return;
        double f = time_gemm(&c, m == 3, 0, 1, B, G, H), b = time_gemm(&c, m == 3, 0, 0, B, H, G);
        printf("  %-34s %10.1f %10.1f   (%.0f / %.0f TFLOP/s)\n", names[m], f, b, 2.0 * B * H * G / f / 1e6,
               2.0 * B * H * G / b / 1e6);
        cuda_ctx_free(&c);
    }
    printf("  x %d calls each per step (L=3, T=256)\n", 3 * 256);
}

/* The persistent recurrences alone (cuda_rec.cu, timed by bench_cuda_rec.cu), per time step, and what
 * each stage costs: the step's time less the time of a variant that leaves
 * the stage out. */
BENCH(bench_cuda_rec) {
    if (cuda_device_count() < 1) return;
    static const int shapes[][3] = {{256, 256, 768}, {256, 128, 384}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int B = shapes[i][0], T = shapes[i][1], H = shapes[i][2];
        printf("  persistent recurrence B=%d T=%d H=%d (us per step)   forward   backward\n", B, T, H);
        printf("    %-44s %9.2f %10.2f\n", "whole step", cuda_rec_time(B, T, H, 0, 0, 5),
               cuda_rec_time(B, T, H, 1, 0, 5));
        if (H != 768) continue;
        static const char *ko[] = {"without the wait between steps", "without the state load",
                                   "without the products", "without the gates' global reads/writes"};
        for (int k = 0; k < 4; k++)
            printf("    %-44s %9.2f %10.2f\n", ko[k], cuda_rec_time(B, T, H, 0, 1 << k, 5),
                   cuda_rec_time(B, T, H, 1, 1 << k, 5));
    }
}

/* The large products of one training step at the base shape (each per
 * layer, or once for the logits), as the trainer issues them in bf16 mode
 * (f32 operands that cuBLAS converts) and with native bf16 operands. */
BENCH(bench_cuda_step_gemms) {
    if (cuda_device_count() < 1) return;
    char err[256];
    int N = env_int("LAYA_BENCH_B", 256) * env_int("LAYA_BENCH_T", 256), H = env_int("LAYA_BENCH_H", 768);
    int G = 3 * H, V = 8192;
    cuda_ctx c;
    if (cuda_ctx_init(&c, CUDA_MATH_BF16, 0, err, sizeof err) != LAYA_OK) return;
    static const struct {
        const char *name;
        int ta, tb, m, n, k; /* m,n,k: 0 N, 1 H, 2 G, 3 V */
    } g[] = {{"gru input projection x W_ih^T", 0, 1, 0, 2, 1}, {"gru dW = dg^T h", 1, 0, 2, 1, 0},
             {"gru dx = dgi W_ih", 0, 0, 0, 1, 2},       {"logits y emb^T", 0, 1, 0, 3, 1},
             {"logits bwd dy = dl emb", 0, 0, 0, 1, 3},   {"logits bwd demb = dl^T y", 1, 0, 3, 1, 0}};
    int dim[4] = {N, H, G, V};
    printf("  %-30s %9s %9s %8s %8s   (us; TFLOP/s)\n", "product", "f32 ops", "bf16 ops", "", "");
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        int M = dim[g[i].m], Nn = dim[g[i].n], K = dim[g[i].k];
        double f = time_gemm(&c, 0, g[i].ta, g[i].tb, M, Nn, K), b = time_gemm(&c, 1, g[i].ta, g[i].tb, M, Nn, K);
        double fl = 2.0 * M * Nn * K;
        printf("  %-30s %9.0f %9.0f %8.0f %8.0f\n", g[i].name, f, b, fl / f / 1e6, fl / b / 1e6);
    }
    cuda_ctx_free(&c);
}
