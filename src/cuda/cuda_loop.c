/* cuda_loop.c - `laya train --device cuda`: train_loop.c's loop
 * (train_run_on: the same options, schedule, batches, dropout keys,
 * evaluation, log.csv, best.safetensors and last.ckpt in the CPU trainer's
 * format, so either trainer resumes the other's run) with the steps on the
 * GPU. This file is only the GPU train_backend: the parameters, moments and
 * carried states live on the device; `load` copies the loop's host copies
 * in, `store` copies them back before every save. */
#include <stdio.h>
#include <string.h>

#include "cuda/cuda_train.h"

typedef struct {
    cuda_math math;
    const train_opts *o;
    cuda_trainer ct;
    int ct_ok;
    size_t S;     /* floats of one carried state (L, B, H) */
    char name[32];
} gpu_backend;

static laya_status gpu_init(void *self, const model_cfg *c, const train_opts *o, char *err, size_t errlen) {
    gpu_backend *g = self;
    g->o = o;
    g->S = (size_t)c->L * o->B * c->H;
    laya_status st = cuda_trainer_init(&g->ct, c, o->B, o->T, o->dropout, g->math, err, errlen);
    g->ct_ok = st == LAYA_OK;
    if (g->ct_ok && g->ct.ctx.persist) snprintf(g->name, sizeof g->name, "laya cuda (bf16, persistent)");
    return st;
}

static void gpu_free(void *self) {
    gpu_backend *g = self;
    if (g->ct_ok) cuda_trainer_free(&g->ct);
}

static laya_status gpu_load(void *self, float *params, float *m, float *v, float *state, char *err, size_t errlen) {
    gpu_backend *g = self;
    laya_status st = cuda_trainer_set(&g->ct, params, m, v, err, errlen);
    if (st == LAYA_OK) st = cuda_state_set(&g->ct, CUDA_SLOT_TRAIN, state, g->S, err, errlen);
    return st;
}

static laya_status gpu_reset_state(void *self, char *err, size_t errlen) {
    gpu_backend *g = self;
    return cuda_state_zero(&g->ct, CUDA_SLOT_TRAIN, err, errlen);
}

static laya_status gpu_step(void *self, const int32_t *toks, uint64_t seed, int64_t step, const train_adamw *adam,
                            float lr, float clip, double *loss, char *err, size_t errlen) {
    gpu_backend *g = self;
    int slot = g->o->carry ? CUDA_SLOT_TRAIN : CUDA_SLOT_NONE;
    return cuda_trainer_step(&g->ct, toks, slot, seed, step, adam, lr, clip, loss, NULL, err, errlen);
}

static laya_status gpu_eval_begin(void *self, char *err, size_t errlen) {
    gpu_backend *g = self;
    return cuda_state_zero(&g->ct, CUDA_SLOT_EVAL, err, errlen);
}

static laya_status gpu_eval_batch(void *self, const int32_t *toks, int nb, double *loss_sum, int64_t *count,
                                  char *err, size_t errlen) {
    gpu_backend *g = self;
    double l;
    laya_status st = cuda_trainer_forward(&g->ct, toks, nb, g->o->carry ? CUDA_SLOT_EVAL : CUDA_SLOT_NONE, 0, 0,
                                          0, 0, &l, err, errlen);
    if (st != LAYA_OK) return st;
    *loss_sum += g->ct.loss_sum;
    *count += g->ct.count;
    return LAYA_OK;
}

static laya_status gpu_store(void *self, float *params, float *m, float *v, float *state, char *err,
                             size_t errlen) {
    gpu_backend *g = self;
    laya_status st = cuda_trainer_get(&g->ct, params, m, v, err, errlen);
    if (st == LAYA_OK) st = cuda_state_get(&g->ct, CUDA_SLOT_TRAIN, state, g->S, err, errlen);
    return st;
}

laya_status cuda_train_run(const train_opts *o, cuda_math math, train_progress_fn fn, void *ctx,
                           volatile int *stop, char *err, size_t errlen) {
    gpu_backend g = {.math = math};
    snprintf(g.name, sizeof g.name, "laya cuda (%s)",
             math == CUDA_MATH_F32 ? "f32" : math == CUDA_MATH_TF32 ? "tf32" : "bf16");
    train_backend b = {.trainer = g.name, .self = &g, .init = gpu_init, .free = gpu_free, .load = gpu_load,
                       .reset_state = gpu_reset_state, .step = gpu_step, .eval_begin = gpu_eval_begin,
                       .eval_batch = gpu_eval_batch, .store = gpu_store};
    return train_run_on(o, &b, fn, ctx, stop, err, errlen);
}
