/* cuda_loop.c - `laya train --device cuda [--gpus N]`: train_loop.c's loop
 * (train_run_on: the same options, schedule, batches, dropout keys,
 * evaluation, log.csv, best.safetensors and last.ckpt in the CPU trainer's
 * format, so either trainer resumes the other's run) with the steps on the
 * GPUs. This file is only the GPU train_backend over cuda_dp (one GPU, or
 * N data-parallel replicas: the loop never sees the ranks). The
 * parameters, moments and carried states live on the devices; `load`
 * copies the loop's host copies in (every replica), `store` copies them
 * back (replica 0's parameters, every replica's rows of the state) before
 * every save, so only this one process writes files. */
#include <stdio.h>
#include <string.h>

#include "cuda/cuda_dp.h"

typedef struct {
    cuda_math math;
    int gpus;     /* 0: one GPU without NCCL; N >= 1: N replicas through NCCL */
    const train_opts *o;
    cuda_dp dp;
    int dp_ok;
    char name[64];
} gpu_backend;

static laya_status gpu_init(void *self, const model_cfg *c, const train_opts *o, char *err, size_t errlen) {
    gpu_backend *g = self;
    g->o = o;
    int n = g->gpus ? g->gpus : 1;
    laya_status st = cuda_dp_init(&g->dp, n, g->gpus > 0, c, o->B, o->T, o->dropout, g->math, err, errlen);
    g->dp_ok = st == LAYA_OK;
    if (g->dp_ok && g->dp.ct[0].ctx.persist) snprintf(g->name, sizeof g->name, "laya cuda (bf16, persistent)");
    if (g->dp_ok && g->gpus > 1) {
        size_t len = strlen(g->name);
        snprintf(g->name + len, sizeof g->name - len, " x%d", g->gpus);
    }
    if (g->dp_ok && g->dp.nccl.lib)
        fprintf(stderr, "laya train: %d GPU%s, NCCL %d from %s\n", n, n == 1 ? "" : "s", g->dp.nccl.version,
                g->dp.nccl.path);
    return st;
}

static void gpu_free(void *self) {
    gpu_backend *g = self;
    if (g->dp_ok) cuda_dp_free(&g->dp);
}

static laya_status gpu_load(void *self, float *params, float *m, float *v, float *state, char *err, size_t errlen) {
    gpu_backend *g = self;
    return cuda_dp_load(&g->dp, params, m, v, state, err, errlen);
}

static laya_status gpu_reset_state(void *self, char *err, size_t errlen) {
    gpu_backend *g = self;
    return cuda_dp_state_zero(&g->dp, CUDA_SLOT_TRAIN, err, errlen);
}

static laya_status gpu_step(void *self, const int32_t *toks, const int32_t *soft_tok, const float *soft_w,
                            uint64_t seed, int64_t step, const train_adamw *adam, float lr, float clip, double *loss,
                            char *err, size_t errlen) {
    gpu_backend *g = self;
    int slot = g->o->carry ? CUDA_SLOT_TRAIN : CUDA_SLOT_NONE;
    cuda_dp_soft(&g->dp, soft_tok, soft_w);
    laya_status st = cuda_dp_step(&g->dp, toks, slot, seed, step, adam, lr, clip, loss, NULL, err, errlen);
    cuda_dp_soft(&g->dp, NULL, NULL);
    return st;
}

static laya_status gpu_eval_begin(void *self, char *err, size_t errlen) {
    gpu_backend *g = self;
    return cuda_dp_state_zero(&g->dp, CUDA_SLOT_EVAL, err, errlen);
}

static laya_status gpu_eval_batch(void *self, const int32_t *toks, int nb, double *loss_sum, int64_t *count,
                                  char *err, size_t errlen) {
    gpu_backend *g = self;
    return cuda_dp_eval(&g->dp, toks, nb, g->o->carry ? CUDA_SLOT_EVAL : CUDA_SLOT_NONE, loss_sum, count, err,
                        errlen);
}

static laya_status gpu_store(void *self, float *params, float *m, float *v, float *state, char *err,
                             size_t errlen) {
    gpu_backend *g = self;
    return cuda_dp_store(&g->dp, params, m, v, state, err, errlen);
}

laya_status cuda_train_run(const train_opts *o, cuda_math math, int gpus, train_progress_fn fn, void *ctx,
                           volatile int *stop, char *err, size_t errlen) {
    gpu_backend g = {.math = math, .gpus = gpus};
    snprintf(g.name, sizeof g.name, "laya cuda (%s)",
             math == CUDA_MATH_F32 ? "f32" : math == CUDA_MATH_TF32 ? "tf32" : "bf16");
    train_backend b = {.trainer = g.name, .self = &g, .init = gpu_init, .free = gpu_free, .load = gpu_load,
                       .reset_state = gpu_reset_state, .step = gpu_step, .eval_begin = gpu_eval_begin,
                       .eval_batch = gpu_eval_batch, .store = gpu_store};
    return train_run_on(o, &b, fn, ctx, stop, err, errlen);
}
