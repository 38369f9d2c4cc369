/* train.h - the CPU reference trainer (C6): whole-model forward/backward
 * over (B,T), AdamW with clipping and a warm-up + cosine schedule, batches
 * from packed token streams, and the training loop behind `laya train`.
 *
 * Truncated BPTT semantics (the CUDA trainer must match them):
 *  - A batch is B streams of T+1 tokens: inputs 0..T-1, targets 1..T.
 *  - The GRU hidden state of each layer may be carried from one window of a
 *    stream to the next (a constant: no gradient flows into it).
 *  - Local attention restarts at each window: position t of a window sees
 *    positions max(0,t-W+1)..t of that window only. So a window that starts
 *    from the zero state computes exactly what the step path of
 *    src/model computes for a fresh session fed the same tokens.
 *
 * Shape letters: V vocab, H hidden, D attention width, L layers, W window,
 * G = 3H, B batch, T time, N = B*T rows (row n = b*T + t). */
#ifndef LAYA_TRAIN_H
#define LAYA_TRAIN_H

#include <stddef.h>
#include <stdint.h>
#include "laya.h"
#include "model/model.h"
#include "prior/prior.h"
#include "tok/tok.h"
#include "tok/tok_stream.h"

/* ---- whole model (train_model.c) ---- */

typedef struct {
    float *xin;    /* (N,H) layer input after dropout (x_0 = embedding) */
    float *gates;  /* (N,G) r, z, n */
    float *ghn;    /* (N,H) W_hn h + b_hn */
    float *hprev;  /* (N,H) the GRU state each step started from */
    float *h;      /* (N,H) GRU outputs */
    float *qkv;    /* (N,3D) */
    float *att;    /* (N,W) attention weights */
    float *ctx;    /* (N,D) */
} train_layer_cache;

/* Seconds spent per op, summed over every forward and backward (for
 * benchmarks; reading the clock costs nanoseconds per op call). */
enum {
    TRAIN_OP_EMBED, TRAIN_OP_GRU, TRAIN_OP_ATTN, TRAIN_OP_NORM, TRAIN_OP_XENT, TRAIN_OP_DROPOUT,
    TRAIN_OP_EMBED_B, TRAIN_OP_GRU_B, TRAIN_OP_ATTN_B, TRAIN_OP_NORM_B, TRAIN_OP_XENT_B, TRAIN_OP_DROPOUT_B,
    TRAIN_OP_COUNT
};
extern const char *const train_op_names[TRAIN_OP_COUNT];

typedef struct {
    model_cfg cfg;
    int B, T;                /* the largest batch this model was sized for */
    double op_time[TRAIN_OP_COUNT];
    int nb;                  /* streams in the last forward (<= B) */
    float dropout;           /* probability on every layer input; 0 = off */
    uint64_t drop_seed, drop_salt; /* of the last forward, for backward */
    int drop_on;
    train_layer_cache lc[MODEL_MAX_L];
    float *xL;               /* (N,H) last layer output */
    float *rs;               /* (N) 1/rms of xL */
    float *y;                /* (N,H) normalized */
    float *probs;            /* (N,V) softmax, then dlogits */
    float *row_loss;         /* (N) */
    float *da, *db;          /* (N,H) gradient ping-pong */
    float *dgi, *dgh;        /* (N,G) */
    float *dqkv;             /* (N,3D) */
    float *dctx;             /* (N,D) */
    float *dhc;              /* (B,H) */
    float *ghs;              /* (B,G) */
    int32_t *in, *tgt;       /* (N) */
    int64_t count;           /* targets counted in the last forward */
    double loss_sum;         /* their summed loss, nats */
    const int32_t *soft_tok; /* (N,TRAIN_SOFT_K) soft targets (train_model_soft), or NULL */
    const float *soft_w;     /* (N,TRAIN_SOFT_K) */
    double obj_sum;          /* the last forward's summed loss against the soft targets (loss_sum without) */
    float *mem;              /* the one allocation behind every array above */
} train_model;

laya_status train_model_init(train_model *tm, const model_cfg *c, int B, int T, float dropout,
                             char *err, size_t errlen);
void train_model_free(train_model *tm);

/* Forward over nb <= B streams: toks (nb, T+1). state (L, nb, H): the GRU
 * states to start from, updated to the states after the window (NULL: start
 * from zero, nothing kept). training: dropout on, keyed by (seed, salt).
 * Returns the mean loss (nats) over targets that are not TOK_PAD. */
double train_forward(train_model *tm, const float *params, const int32_t *toks, int nb,
                     float *state, int training, uint64_t seed, uint64_t salt);
/* Soft targets (the teacher's, below) for the forwards and backwards that
 * follow, until the next call: soft_tok and soft_w (nb*T, TRAIN_SOFT_K) of
 * the batch, or NULL for none. Not copied: they must outlive the backward.
 * train_forward still returns the one-hot loss; tm->obj_sum is the summed
 * loss against the soft targets, which train_backward differentiates. */
void train_model_soft(train_model *tm, const int32_t *soft_tok, const float *soft_w);
/* Backward of the last forward's mean loss (against the soft targets when
 * set): ACCUMULATES into grads (the flat parameter layout). */
void train_backward(train_model *tm, const float *params, float *grads);

/* Initial parameters, documented in train_model.c. Deterministic in seed. */
void train_init_params(const model_cfg *c, float *params, uint64_t seed);

/* ---- optimizer (train_opt.c) ---- */

typedef struct {
    float lr, beta1, beta2, eps, wd;
} train_adamw;

/* Warm-up then cosine: linear from lr/warmup to lr over the first warmup
 * steps, then cosine from lr down to lr*TRAIN_LR_FLOOR as frac goes 0..1. */
#define TRAIN_LR_FLOOR 0.1f
float train_lr_schedule(float lr, int64_t step, int64_t warmup, double frac);
/* Global L2 norm of grads (double accumulation); if above clip (> 0), the
 * grads are scaled down to norm clip. Returns the norm before clipping. */
double train_clip_grads(float *grads, size_t n, float clip);
/* One AdamW step (step counts from 1). Weight decay only on the 2-D
 * matrices of model_tensors (not biases, not the norm gain). */
void train_adamw_step(const model_cfg *c, const train_adamw *o, float lr, int64_t step,
                      float *params, const float *grads, float *m, float *v);

/* ---- token streams (train_data.c) ---- */

/* Token streams are tok_stream (src/tok/tok_stream.h), validated there.
 * Stream b of B owns tokens [b*S, (b+1)*S), S = n/B; window w (taken modulo
 * the count) of it starts at w*T. Returns the windows per stream (0: the
 * file is too small for B streams of T+1 tokens). */
int64_t train_windows(const tok_stream *t, int B, int T);
void train_batch(const tok_stream *t, int B, int T, int64_t w, int32_t *toks);
/* The stream index of row b's first token in window w (what train_batch
 * reads from). */
uint64_t train_row_start(const tok_stream *t, int B, int T, int64_t w, int b);

/* ---- soft targets from a teacher (train_teacher.c) ----
 *
 * Row n of a batch may carry TRAIN_SOFT_K soft targets: tokens soft_tok
 * (N,K) (-1: an empty slot) with weights soft_w (N,K), s_n their sum
 * (<= 1). The row's target distribution is then
 *   (1 - s_n) onehot(y_n) + sum_j soft_w[n,j] onehot(soft_tok[n,j]),
 * its loss the cross-entropy against it, and the gradient of the logits
 * scale * (p - target). A row without soft targets is the plain one-hot.
 * What a run reports (train loss, validation, bits per byte) stays the
 * one-hot cross-entropy, comparable with runs without a teacher. */
enum { TRAIN_SOFT_K = 8 };

typedef struct {
    uint32_t *off;     /* (n+1) soft targets of the target at stream index i: [off[i], off[i+1]) */
    uint16_t *tok;     /* (off[n]) */
    float *w;          /* (off[n]) weight * P(follower), best first per position */
    uint64_t n;        /* the stream's tokens */
    uint64_t positions; /* positions with at least one soft target */
    float weight;
} train_teacher;

/* The teacher's soft targets for every position of stream s (tokenized by
 * tk) from the next-word prior pr with weight a in (0, 1] (the file's top
 * says where and how). progress: a line on stderr every tenth of the
 * stream. On error nothing is left allocated. */
laya_status train_teacher_build(train_teacher *t, const tok_stream *s, const tok *tk, const prior *pr, float weight,
                                int progress, char *err, size_t errlen);
void train_teacher_free(train_teacher *t);
/* The soft targets (B*T, K) of the batch train_batch(s, B, T, w) reads. */
void train_teacher_batch(const train_teacher *t, const tok_stream *s, int B, int T, int64_t w, int32_t *soft_tok,
                         float *soft_w);

/* ---- resume checkpoints (train_ckpt.c; format there) ---- */

typedef struct {
    int64_t step, tokens;
    uint64_t seed;
    double elapsed;     /* training seconds so far, over all resumed runs */
    double best_valid;  /* best validation loss so far (first file) */
} train_ckpt_meta;

/* state (L,B,H). Written atomically (temp file + rename). */
laya_status train_ckpt_save(const char *path, const model_cfg *c, int B, int T, int carry,
                            const train_ckpt_meta *meta, const float *params, const float *m,
                            const float *v, const float *state, char *err, size_t errlen);
/* Refuses a checkpoint of another shape (c, B, T, carry), a truncated or
 * corrupt one (sha256), with a message naming the difference. */
laya_status train_ckpt_load(const char *path, const model_cfg *c, int B, int T, int carry,
                            train_ckpt_meta *meta, float *params, float *m, float *v, float *state,
                            char *err, size_t errlen);

/* ---- the training loop (train_loop.c) ---- */

enum { TRAIN_MAX_VALID = 8 };

typedef struct {
    const char *train_path;
    const char *valid_paths[TRAIN_MAX_VALID];
    int n_valid;
    const char *tok_path;
    const char *out_dir;
    model_cfg cfg;
    int B, T;
    float lr, wd, dropout, clip;
    int64_t warmup;
    int64_t steps;         /* total optimizer steps; 0 with a time budget */
    double time_budget;    /* seconds of wall time for the whole run, or 0 */
    int resume;
    const char *init_path; /* start from this model file's weights (fresh optimizer), or NULL */
    int eval_every;
    int64_t eval_tokens;   /* cap per valid file per evaluation (0 = all) */
    uint64_t seed;
    int f16;               /* best.safetensors in f16 instead of f32 */
    int carry;             /* carry GRU states across windows */
    const char *teacher_path; /* distill toward this model file's next-word prior (train_teacher.c), or NULL */
    float teacher_weight;  /* its weight a in (0, 1] */
} train_opts;

void train_opts_default(train_opts *o);

typedef struct {
    int64_t step, steps;     /* steps is 0 under a time budget */
    int64_t tokens;
    double frac;             /* progress 0..1 */
    double loss, lr, tokens_per_s, elapsed_s, eta_s;
    int evaluated;           /* this report follows an evaluation */
    int n_valid;
    double valid_loss[TRAIN_MAX_VALID], valid_bpb[TRAIN_MAX_VALID];
    int best_saved;          /* best.safetensors was just written */
} train_progress;
typedef void (*train_progress_fn)(void *ctx, const train_progress *p);

/* Trains per o on the CPU, writing OUTDIR/log.csv, OUTDIR/best.safetensors
 * and OUTDIR/last.ckpt. *stop (may be NULL) is polled: when it becomes
 * non-zero the loop checkpoints and returns LAYA_OK early. */
laya_status train_run(const train_opts *o, train_progress_fn fn, void *ctx,
                      volatile int *stop, char *err, size_t errlen);

/* Where the steps run. train_run_on's loop (schedule, batches, evaluation,
 * log, best model, checkpoints) is the same for every backend; a backend
 * only computes. The loop owns host copies of the parameters, the AdamW
 * moments and the carried training state (P, P, P, and S = L*B*H floats);
 * a backend may work on them in place (the CPU) or keep its own (the GPU:
 * `load` copies them in, `store` copies them back before every save). */
typedef struct {
    const char *trainer;   /* provenance in best.safetensors, e.g. "laya cpu reference" */
    void *self;
    /* Shape known (V from the tokenizer): allocate for batches (B, T+1). */
    laya_status (*init)(void *self, const model_cfg *c, const train_opts *o, char *err, size_t errlen);
    void (*free)(void *self);
    /* The host params, m, v, state hold the run's start (fresh or resumed). */
    laya_status (*load)(void *self, float *params, float *m, float *v, float *state, char *err, size_t errlen);
    /* The carried training state starts over (a new pass over the shards). */
    laya_status (*reset_state)(void *self, char *err, size_t errlen);
    /* One optimizer step on toks (B, T+1): forward with dropout keyed by
     * (seed, step), backward (against the soft targets soft_tok, soft_w
     * (B*T, TRAIN_SOFT_K) when not NULL), clipping, AdamW at lr (step
     * counts from 0); *loss: mean one-hot nats per target token. */
    laya_status (*step)(void *self, const int32_t *toks, const int32_t *soft_tok, const float *soft_w, uint64_t seed,
                        int64_t step, const train_adamw *adam, float lr, float clip, double *loss, char *err,
                        size_t errlen);
    /* Evaluation: eval_begin zeroes the evaluation state, each eval_batch
     * runs nb streams of toks (nb, T+1) without dropout, carrying that state
     * when o->carry, and adds the summed loss and target count. */
    laya_status (*eval_begin)(void *self, char *err, size_t errlen);
    laya_status (*eval_batch)(void *self, const int32_t *toks, int nb, double *loss_sum, int64_t *count,
                              char *err, size_t errlen);
    /* Bring params, m, v and the training state back to the host copies. */
    laya_status (*store)(void *self, float *params, float *m, float *v, float *state, char *err, size_t errlen);
} train_backend;

/* train_run with the steps on backend b (train_run: the CPU backend). */
laya_status train_run_on(const train_opts *o, const train_backend *b, train_progress_fn fn, void *ctx,
                         volatile int *stop, char *err, size_t errlen);

#endif
