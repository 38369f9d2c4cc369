/* cuda_train.h - the CUDA trainer (C6): the whole network of
 * src/train/train_model.c on one NVIDIA GPU, with the same truncated-BPTT
 * semantics (train.h), the same dropout masks, the same AdamW, clipping and
 * schedule, and the flat f32 parameter layout of src/model/model_params.c,
 * so parameters, moments, carried states and checkpoints move between the
 * CPU and the GPU trainer unchanged.
 *
 * Everything lives on the device: parameters, gradients, Adam moments (f32
 * master copies in every math mode), activations sized for B x T, and two
 * carried-state slots of (L,B,H): CUDA_SLOT_TRAIN for the training shards,
 * CUDA_SLOT_EVAL for validation. A training step (cuda_trainer_step) is
 * captured once into a CUDA graph and replayed: the per-step scalars
 * (dropout keys, 1/count, learning rate, bias corrections) are read from
 * device memory, so replays need no re-capture.
 *
 * Shape letters: V vocab, H hidden, D attention width, L layers, W window,
 * G = 3H, B batch, T time, N = B*T rows (row n = b*T + t). */
#ifndef LAYA_CUDA_TRAIN_H
#define LAYA_CUDA_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "cuda/cuda_ops.h"
#include "model/model.h"
#include "train/train.h"

enum { CUDA_SLOT_NONE = -1, CUDA_SLOT_TRAIN = 0, CUDA_SLOT_EVAL = 1 };

typedef struct {
    float *xin, *gates, *ghn, *hprev, *h, *qkv, *att, *ctx; /* as train_layer_cache */
} cuda_layer_cache;

/* Per-step scalars in device memory (see above). */
typedef struct {
    uint64_t key[MODEL_MAX_L];   /* dropout key of each layer input */
    float xent_scale;            /* 1 / counted targets */
    float pad_;
    cuda_adam_vars adam;
} cuda_step_vars;

/* A replica's share of a data-parallel step (cuda_dp.h): its streams are
 * rows [row0, row0 + nb) of a global batch whose counted targets are
 * count, so the cross-entropy scale is 1/count (not 1/its own count) and
 * the dropout masks are those the global row indices get on one GPU. */
typedef struct {
    int row0;
    int64_t count;
} cuda_shard;

typedef struct {
    model_cfg cfg;
    int B, T;
    float dropout;
    int device;                      /* the CUDA device it lives on (current at init) */
    cuda_ctx ctx;
    size_t P;                        /* model_n_params */
    /* device */
    float *params, *grads, *m, *v;   /* (P) flat layout */
    float *state[2];                 /* (L,B,H) per slot */
    cuda_layer_cache lc[MODEL_MAX_L];
    float *xL, *rs, *y, *probs, *row_loss;  /* (N,H) (N) (N,H) (N,V) (N) */
    /* CUDA_MATH_BF16 only (else NULL): bf16 copies of emb (V,H) and y (N,H)
     * and the dlogits (N,V), the operands of the logits products. */
    void *emb16, *y16, *dl16;
    float *da, *db, *dgi, *dgh, *dqkv, *dctx, *dsc, *dhc, *ghs;
    int32_t *in, *tgt, *eidx;        /* (N) (N) embedding-gradient index */
    int32_t *soft_tok;               /* (N,CUDA_SOFT_K) the rows' soft targets (cuda_trainer_soft) */
    float *soft_w;                   /* (N,CUDA_SOFT_K) their weights, 0 where none */
    cuda_step_vars *vars;
    double *out;                     /* [loss sum, gradient norm] */
    void *mem;                       /* the one device allocation */
    size_t mem_bytes;
    /* host (pinned) staging */
    int32_t *h_in, *h_tgt, *h_eidx, *h_counts, *h_soft_tok;
    float *h_soft_w;
    const int32_t *soft_next_tok;    /* the caller's soft targets for the next training forwards, or NULL */
    const float *soft_next_w;
    int soft_on;                     /* the device holds soft targets of weight > 0 */
    cuda_step_vars *h_vars;
    double *h_out;
    /* the last forward */
    int nb, drop_on;
    int64_t count;                   /* targets counted in these streams */
    int64_t scale_count;             /* the loss's denominator: count, or the shard's global count */
    double loss_sum;
    /* the captured training step, in two graphs (forward + backward, then
     * clipping + AdamW: a data-parallel step sums the gradients between
     * them), and what they were captured for */
    void *graph[2], *graph_exec[2];
    int g_slot;
    train_adamw g_adam;
    /* profiling (cuda_trainer_profile) */
    int prof_n;
    void *prof_ev[128];
    const char *prof_name[128];
} cuda_trainer;

/* Batch chains of the GRU recurrences a new trainer uses (cuda_ctx_set_split).
 * One: on an H200 at B=256 the graph step took 51.7 ms with 1 chain, 54.0
 * with 2, 57.6 with 4, 76.4 with 8 (bench/cuda/NOTES.md). */
enum { CUDA_TRAIN_SPLIT = 1 };

laya_status cuda_trainer_init(cuda_trainer *ct, const model_cfg *c, int B, int T, float dropout,
                              cuda_math math, char *err, size_t errlen);
void cuda_trainer_free(cuda_trainer *ct);

/* Changes the batch chains of the GRU recurrences (re-captures the step). */
laya_status cuda_trainer_set_split(cuda_trainer *ct, int split, char *err, size_t errlen);

/* Turns the persistent GRU recurrences (cuda_ctx_set_persist) on or off
 * (re-captures the step). A new trainer has them on in CUDA_MATH_BF16 where
 * the shape allows, off otherwise; ct->ctx.persist says which. Turning them
 * on fails with LAYA_ERR_UNSUPPORTED for shapes they do not cover. */
laya_status cuda_trainer_set_persist(cuda_trainer *ct, int on, char *err, size_t errlen);

/* Host <-> device copies of the flat f32 arrays (P floats each; m, v may be
 * NULL: set zeroes them, get skips them). */
laya_status cuda_trainer_set(cuda_trainer *ct, const float *params, const float *m, const float *v,
                             char *err, size_t errlen);
laya_status cuda_trainer_get(cuda_trainer *ct, float *params, float *m, float *v, char *err, size_t errlen);
laya_status cuda_trainer_get_grads(cuda_trainer *ct, float *grads, char *err, size_t errlen);
/* A carried-state slot (L*nb*H floats, layout of train_forward's state). */
laya_status cuda_state_set(cuda_trainer *ct, int slot, const float *state, size_t floats, char *err,
                           size_t errlen);
laya_status cuda_state_get(cuda_trainer *ct, int slot, float *state, size_t floats, char *err, size_t errlen);
laya_status cuda_state_zero(cuda_trainer *ct, int slot, char *err, size_t errlen);

/* train_model_soft on the GPU: soft_tok, soft_w (nb*T, CUDA_SOFT_K), host,
 * for the training forwards and steps that follow until the next call
 * (NULL: none); copied at each of them, so they must stay valid until
 * then. Evaluation forwards never use them. */
void cuda_trainer_soft(cuda_trainer *ct, const int32_t *soft_tok, const float *soft_w);

/* train_forward on the GPU: toks (nb, T+1) host; slot CUDA_SLOT_NONE starts
 * from zero. training: dropout on, keyed by (seed, salt). grad: leave
 * dlogits of the mean loss in probs for cuda_trainer_backward (else only
 * the loss is computed). *loss gets the mean loss in nats (synchronizes). */
laya_status cuda_trainer_forward(cuda_trainer *ct, const int32_t *toks, int nb, int slot, int training,
                                 int grad, uint64_t seed, uint64_t salt, double *loss, char *err,
                                 size_t errlen);
/* train_backward of the last forward (which had grad set), but WRITES the
 * gradients (zeroed first). Synchronizes. */
laya_status cuda_trainer_backward(cuda_trainer *ct, char *err, size_t errlen);

/* One whole training step as train_loop.c does it: forward (dropout keyed
 * by (seed, step)), backward, global-norm clipping at o->... clip, AdamW at
 * rate lr with bias corrections for step+1, via the captured graph. toks
 * (B, T+1); slot CUDA_SLOT_TRAIN carries the state, CUDA_SLOT_NONE does
 * not. *loss: mean loss of the batch; *norm (may be NULL): gradient norm
 * before clipping. */
laya_status cuda_trainer_step(cuda_trainer *ct, const int32_t *toks, int slot, uint64_t seed, int64_t step,
                              const train_adamw *o, float lr, float clip, double *loss, double *norm,
                              char *err, size_t errlen);

/* cuda_trainer_step in three calls, for data parallelism (cuda_dp.c):
 * step_launch stages toks (B, T+1) and enqueues forward + backward (no
 * wait); sh (NULL: these rows are the whole batch) places them in a global
 * batch. Between launch and apply the caller may enqueue on ct->ctx.stream
 * a sum of ct->grads (P floats) and ct->out[0] (the loss sum, one double)
 * over the replicas. step_apply enqueues clipping + AdamW and the copy of
 * the loss and norm to the host (no wait); step_finish waits and reports
 * them (*loss: the loss sum over sh->count, or the mean of this batch). */
laya_status cuda_trainer_step_launch(cuda_trainer *ct, const int32_t *toks, int slot, uint64_t seed, int64_t step,
                                     const train_adamw *o, float lr, float clip, const cuda_shard *sh, char *err,
                                     size_t errlen);
laya_status cuda_trainer_step_apply(cuda_trainer *ct, char *err, size_t errlen);
laya_status cuda_trainer_step_finish(cuda_trainer *ct, double *loss, double *norm, char *err, size_t errlen);

/* Makes ct's device the current one (every cuda_trainer_* call does it
 * itself; other CUDA calls on ct's memory need it). */
void cuda_trainer_use(const cuda_trainer *ct);

/* Runs one step's forward, backward and optimizer without the graph, with
 * an event between phases, and prints the table of milliseconds per phase
 * to stdout (for bench/cuda). Changes the parameters like a step. */
laya_status cuda_trainer_profile(cuda_trainer *ct, const int32_t *toks, char *err, size_t errlen);

/* Fills every activation and gradient buffer with NaN (tests: whatever a
 * step reads must have been written by it). */
void cuda_trainer_poison(cuda_trainer *ct);

/* The loop behind `laya train --device cuda`: train_run's contract
 * (train.h), the same files (log.csv, best.safetensors, last.ckpt in the
 * CPU trainer's format) and schedule, on the GPU. gpus 0: one GPU (device
 * 0), no NCCL; gpus N >= 1: data parallel over devices 0..N-1 through NCCL
 * (cuda_dp.h; o->B must be a multiple of N). */
laya_status cuda_train_run(const train_opts *o, cuda_math math, int gpus, train_progress_fn fn, void *ctx,
                           volatile int *stop, char *err, size_t errlen);

#endif
