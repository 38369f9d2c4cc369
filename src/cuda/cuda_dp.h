/* cuda_dp.h - data-parallel training on the GPUs of one host (C6).
 *
 * n replicas, one cuda_trainer per GPU 0..n-1, each holding the whole
 * model and taking the contiguous rows [r*B/n, (r+1)*B/n) of every global
 * batch of B rows. A step: every replica runs forward and backward on its
 * rows, with the cross-entropy scaled by 1/(targets counted in the whole
 * batch) and dropout keyed by the global row index (cuda_shard), so the sum
 * of the replicas' gradients is the one-GPU gradient of the whole batch;
 * NCCL sums the gradients (P floats) and the loss sums in place; then every
 * replica runs the same clipping and AdamW on the same sums, so the
 * replicas stay bit-identical without ever broadcasting parameters.
 * Each replica carries the GRU states of its own rows; load and store
 * scatter and gather them to and from the (L,B,H) layout of train.h's
 * checkpoints, so a run resumes on any n.
 *
 * One host thread drives every GPU: all the work of a step is enqueued
 * asynchronously (two graph launches per replica around one grouped NCCL
 * all-reduce), so a thread per GPU would only add barriers; the host work
 * per replica (staging B/n rows of tokens) is well under a millisecond
 * against tens of milliseconds of GPU time per step. See docs/DESIGN.md.
 *
 * n == 1 without NCCL (use_nccl 0) is the plain one-GPU trainer: no
 * reduction at all. Any n with NCCL, 1 included, runs the all-reduce. */
#ifndef LAYA_CUDA_DP_H
#define LAYA_CUDA_DP_H

#include "cuda/cuda_nccl.h"
#include "cuda/cuda_train.h"

enum { CUDA_DP_MAX = 16 };

typedef struct {
    int n;                    /* replicas: GPUs 0..n-1 */
    int B, T, Bl;             /* global batch, window, rows per replica (B/n) */
    model_cfg cfg;
    size_t P;
    cuda_nccl nccl;           /* .lib NULL: no NCCL (n == 1, no reduction) */
    cuda_nccl_comm comm[CUDA_DP_MAX];
    cuda_trainer ct[CUDA_DP_MAX];
    int n_ok;                 /* trainers initialised */
    float *h_state;           /* (L,Bl,H) host scratch for scatter and gather */
} cuda_dp;

/* Fails with LAYA_ERR_ARG when B is not a multiple of n or n is outside
 * 1..CUDA_DP_MAX, LAYA_ERR_UNSUPPORTED when fewer than n GPUs are usable or
 * (use_nccl) NCCL cannot be loaded; on failure nothing is left to free. */
laya_status cuda_dp_init(cuda_dp *dp, int n, int use_nccl, const model_cfg *c, int B, int T, float dropout,
                         cuda_math math, char *err, size_t errlen);
void cuda_dp_free(cuda_dp *dp);

/* Every replica gets params, m, v (P floats; m, v NULL: zeroes) and its
 * rows of state (L,B,H) in slot CUDA_SLOT_TRAIN (state NULL: zeroes). */
laya_status cuda_dp_load(cuda_dp *dp, const float *params, const float *m, const float *v, const float *state,
                         char *err, size_t errlen);
/* params, m, v from replica 0 (any may be NULL), state (L,B,H) gathered
 * from every replica's slot CUDA_SLOT_TRAIN (NULL: skipped). */
laya_status cuda_dp_store(cuda_dp *dp, float *params, float *m, float *v, float *state, char *err, size_t errlen);
laya_status cuda_dp_state_zero(cuda_dp *dp, int slot, char *err, size_t errlen);

/* The first half of a step on toks (B, T+1): every replica's forward and
 * backward, then the all-reduce; waits. Afterwards every replica's
 * ct->grads holds the summed gradient (tests read them). */
laya_status cuda_dp_forward_backward(cuda_dp *dp, const int32_t *toks, int slot, uint64_t seed, int64_t step,
                                     const train_adamw *o, float lr, float clip, char *err, size_t errlen);
/* cuda_trainer_soft for the whole batch: soft_tok, soft_w (B*T,
 * CUDA_SOFT_K), each replica given its rows' (NULL: none). */
void cuda_dp_soft(cuda_dp *dp, const int32_t *soft_tok, const float *soft_w);
/* cuda_trainer_step over the replicas: *loss the mean over the whole
 * batch, *norm (may be NULL) the global gradient norm before clipping. */
laya_status cuda_dp_step(cuda_dp *dp, const int32_t *toks, int slot, uint64_t seed, int64_t step,
                         const train_adamw *o, float lr, float clip, double *loss, double *norm, char *err,
                         size_t errlen);
/* Evaluation (no dropout, no gradient) of nb <= B streams toks (nb, T+1),
 * rows split as evenly as the count allows, carrying slot (or
 * CUDA_SLOT_NONE); adds the summed loss and the target count. */
laya_status cuda_dp_eval(cuda_dp *dp, const int32_t *toks, int nb, int slot, double *loss_sum, int64_t *count,
                         char *err, size_t errlen);

#endif
