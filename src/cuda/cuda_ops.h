/* cuda_ops.h - the CUDA trainer's building blocks (C6): the GPU
 * twin of src/train/train_ops.h, one function per CPU op, over DEVICE
 * pointers, enqueued on the context's stream (nothing here synchronizes, so
 * a whole training step can be captured into one CUDA graph).
 *
 * Contract, as train_ops.h: rows are batch-major (row n = b*T + t); backward
 * functions ACCUMULATE into parameter gradients and WRITE the gradient of
 * their input. Every output element is written (tests/cuda poisons outputs
 * with NaN to show it). Reductions are deterministic: fixed work split,
 * fixed summation order, no atomics, so a run is bit-reproducible on one GPU
 * model.
 *
 * Numerics: element-wise math is f32 with expf/tanhf (no fast-math); the
 * matrix products go through cuBLAS with the context's math mode: F32 (plain
 * f32 FMA), TF32 (tensor cores, 10-bit mantissa inputs, f32 accumulation,
 * relative error near 3e-4) or BF16 (cuBLAS converts the f32 operands to
 * bf16 on the fly, f32 accumulation, relative error near 3e-3). Weights,
 * gradients and optimizer moments stay f32 in every mode.
 *
 * Errors: cuBLAS failures and failed cooperative launches are remembered
 * in the context (the first one wins); other launch errors stay in the CUDA
 * runtime. cuda_ctx_check() reports them as a laya_status with a message.
 *
 * Shape letters: V vocab, H hidden, D attention width, W window, G = 3H,
 * B batch, T time, N = B*T rows. */
#ifndef LAYA_CUDA_OPS_H
#define LAYA_CUDA_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "laya.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { CUDA_MATH_F32 = 0, CUDA_MATH_TF32 = 1, CUDA_MATH_BF16 = 2 } cuda_math;

/* Rows of partial sums the column reductions use: scratch is
 * CUDA_COLSUM_PARTS * cols floats. */
enum { CUDA_COLSUM_PARTS = 32, CUDA_SUMSQ_BLOCKS = 1024 };
/* The largest attention window the kernels hold in registers (MODEL_MAX_W). */
enum { CUDA_MAX_W = 16 };

/* The GRU recurrences may run the batch as up to CUDA_MAX_SPLIT independent
 * chains of streams (rows are independent across b), each on its own
 * stream, cuBLAS handle and workspace, forked from and joined back into the
 * main stream with events (a graph captures them as parallel branches). A
 * small (B,H)x(H,3H) product leaves most of the chip idle and pays its
 * latency once per step, so concurrent chains overlap those latencies. */
enum { CUDA_MAX_SPLIT = 8 };

typedef struct cuda_ctx {
    void *stream;       /* cudaStream_t */
    void *blas;         /* cublasHandle_t */
    void *blas_ws;      /* cuBLAS workspace (device), fixed so graphs can capture */
    int split;          /* batch chains of the GRU recurrences, 1..CUDA_MAX_SPLIT */
    void *side[CUDA_MAX_SPLIT], *side_blas[CUDA_MAX_SPLIT], *side_ws[CUDA_MAX_SPLIT];
    void *ev_fork, *ev_join[CUDA_MAX_SPLIT];
    float *red;         /* (red_floats) reduction scratch (device) */
    size_t red_floats;
    cuda_math math;
    int blas_status;    /* first cuBLAS failure, 0 = none */
    /* Persistent recurrences (cuda_ctx_set_persist, src/cuda/cuda_rec.cu). */
    int persist;        /* 1: GRU recurrences of rec_H and up to rec_B rows run persistent */
    int rec_B, rec_H;
    void *rec_xch;      /* 2 buffers of rec_B x 3 rec_H bf16: the state exchanged between steps */
    void *rec_w16;      /* (3 rec_H, rec_H) bf16: W_ih for the backward's products (in rec_xch's block) */
    size_t rec_xch_bytes;
    unsigned *rec_bar;  /* (rec_B/64) step counters, one per batch block */
    int rec_bar_n;
    int rec_status;     /* first failed cooperative launch (a cudaError_t), 0 = none */
} cuda_ctx;

/* Creates a stream, a cuBLAS handle and red_floats of scratch (at least
 * CUDA_COLSUM_PARTS * the widest column reduction, and 2*CUDA_SUMSQ_BLOCKS).
 * Fails with LAYA_ERR_UNSUPPORTED when no CUDA device is usable. */
laya_status cuda_ctx_init(cuda_ctx *c, cuda_math math, size_t red_floats, char *err, size_t errlen);
void cuda_ctx_free(cuda_ctx *c);
/* LAYA_OK, or the first cuBLAS / CUDA error since the last check. */
laya_status cuda_ctx_check(cuda_ctx *c, const char *what, char *err, size_t errlen);
/* Waits for the stream, then as cuda_ctx_check. */
laya_status cuda_ctx_sync(cuda_ctx *c, const char *what, char *err, size_t errlen);
/* Number of usable CUDA devices (0 when there is no driver or device). */
int cuda_device_count(void);
/* Sets the number of batch chains of the GRU recurrences (clamped to
 * 1..CUDA_MAX_SPLIT; results differ from split 1 only by cuBLAS's choice of
 * algorithm for the smaller products). Creates the side streams on first
 * use. */
laya_status cuda_ctx_set_split(cuda_ctx *c, int split, char *err, size_t errlen);
/* "NVIDIA H100 80GB HBM3, 132 SMs" style name of device 0. */
void cuda_device_name(char *buf, size_t n);

/* C(M,N) = alpha op(A) op(B) + beta C, row-major, exactly the contract of
 * train_sgemm (ta: A is stored (K,M); tb: B is stored (N,K)). */
void cuda_gemm(cuda_ctx *c, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
               const float *B, int ldb, float beta, float *C, int ldc);

/* out[j] += sum_n a[n*ld + j] (* x[n*ld + j] * rs[n] when x is not NULL),
 * j < cols: two passes over CUDA_COLSUM_PARTS row blocks, fixed order. */
void cuda_colsum_acc(cuda_ctx *c, const float *a, const float *x, const float *rs, int rows, int cols,
                     int ld, float *out);

/* ---- embedding ---- */
void cuda_embed_fwd(cuda_ctx *c, const float *emb, const int32_t *ids, int N, int H, float *x);
/* The gradient scatter without atomics: rows grouped by token on the host
 * (cuda_embed_index), one block per group adds its rows in row order, so
 * demb[tok] = ((demb[tok] + dx[n1]) + dx[n2]) + ... exactly as the CPU loop.
 * idx: the device copy of the index (cuda_embed_index_ints ints), N the
 * row count it was built for. */
void cuda_embed_bwd(cuda_ctx *c, const int32_t *idx, int N, int V, int H, const float *dx, float *demb);
/* Host: builds the index of ids (N) into idx (cuda_embed_index_ints(N)
 * ints): [ngroups, tok (N), start (N+1), order (N)]; counts (V) scratch. */
size_t cuda_embed_index_ints(int N);
void cuda_embed_index(const int32_t *ids, int N, int V, int32_t *counts, int32_t *idx);

/* ---- inverted dropout, in place, keyed as train_dropout_keep ----
 * key: device pointer to cuda_dropout_key(seed, salt), so a captured graph
 * replays with new masks when the key in memory changes. */
uint64_t cuda_dropout_key(uint64_t seed, uint64_t salt);
void cuda_dropout(cuda_ctx *c, const uint64_t *key, float p, size_t n, float *x);

/* ---- GRU layer over T steps (train_gru_fwd / train_gru_bwd) ---- */
typedef struct {
    const float *w_ih, *w_hh, *b_ih, *b_hh;
} cuda_gru_w;
typedef struct {
    float *w_ih, *w_hh, *b_ih, *b_hh;
} cuda_gru_g;
/* h0 (B,H) the state before t=0 (NULL = zeros); scratch (B,G).
 * Backward: dgi, dgh (N,G) are scratch (their contents on return are not
 * part of the contract: the persistent path keeps bf16 copies of dgi, dgh,
 * hprev and x in them, the operands of its weight-gradient products). */
void cuda_gru_fwd(cuda_ctx *c, const cuda_gru_w *w, int B, int T, int H, const float *x, const float *h0,
                  float *gates, float *ghn, float *hprev, float *h, float *scratch);
void cuda_gru_bwd(cuda_ctx *c, const cuda_gru_w *w, cuda_gru_g *g, int B, int T, int H, const float *x,
                  const float *gates, const float *ghn, const float *hprev, const float *dh, float *dgi,
                  float *dgh, float *dhc, float *dx);

/* ---- persistent recurrences (cuda_rec.cu) ----
 * cuda_ctx_set_persist makes cuda_gru_fwd / cuda_gru_bwd run each layer's T
 * recurrent steps in one cooperative kernel with W_hh held in registers as
 * bf16 (products with bf16 operands and f32 accumulation, whatever the
 * context's math mode; cuda_gru_bwd's weight-gradient and dx products then
 * take bf16 operands too) for H = rec_H and batches of up to B rows that
 * are multiples of 64. Fails with LAYA_ERR_UNSUPPORTED (and leaves the cuBLAS
 * recurrences in place) for other H, for B not a multiple of 64, or when
 * the (H/24)*(B/64) blocks cannot all be resident on the GPU at once. */
laya_status cuda_ctx_set_persist(cuda_ctx *c, int B, int H, char *err, size_t errlen);
/* 1 when the persistent kernels run a recurrence of B rows and width H. */
int cuda_rec_applies(const cuda_ctx *c, int B, int H);
void cuda_rec_free(cuda_ctx *c);
/* The recurrences alone (called by cuda_gru_fwd / cuda_gru_bwd when
 * cuda_rec_applies): gates holds x W_ih^T on entry, hprev row t=0 h0; the
 * backward writes dgi16, dgh16 (N,G) as bf16. */
void cuda_rec_fwd(cuda_ctx *c, const cuda_gru_w *w, int B, int T, int H, float *gates, float *ghn, float *hprev,
                  float *h);
void cuda_rec_bwd(cuda_ctx *c, const cuda_gru_w *w, int B, int T, int H, const float *gates, const float *ghn,
                  const float *hprev, const float *dh, void *dgi16, void *dgh16, float *dhc);

/* ---- local attention + residual (train_attn_fwd / train_attn_bwd) ----
 * dsc (N,W) scratch: the score gradients, so dk and dv are gathered per
 * position instead of scattered (no atomics). */
void cuda_attn_fwd(cuda_ctx *c, const float *wqkv, const float *wo, int B, int T, int H, int D, int W,
                   const float *h, float *qkv, float *att, float *ctx, float *out);
void cuda_attn_bwd(cuda_ctx *c, const float *wqkv, const float *wo, int B, int T, int H, int D, int W,
                   const float *h, const float *qkv, const float *att, const float *ctx, const float *dout,
                   float *dqkv, float *dctx, float *dsc, float *dwqkv, float *dwo, float *dh);

/* ---- RMSNorm ---- */
void cuda_rmsnorm_fwd(cuda_ctx *c, const float *g, int N, int H, float eps, const float *x, float *y,
                      float *rs);
void cuda_rmsnorm_bwd(cuda_ctx *c, const float *g, int N, int H, const float *x, const float *rs,
                      const float *dy, float *dx, float *dg);

/* ---- tied logits + softmax cross-entropy, one block per row ----
 * Computes logits = y emb^T into probs (N,V), then per row, by mode:
 *   CUDA_XENT_PROBS: probabilities (train_xent_fwd);
 *   CUDA_XENT_GRAD:  dlogits = scale*(p - onehot(target)), 0 for skipped
 *                    rows (train_xent_fwd then the first half of
 *                    train_xent_bwd, fused: one pass less over N*V);
 *   CUDA_XENT_LOSS:  row_loss only, probs left as logits (evaluation).
 * row_loss (N) as the CPU (0 for skipped rows). scale: device pointer to
 * one float (1/count), read only in GRAD mode. soft_tok, soft_w (N,
 * CUDA_SOFT_K) (NULL: none), read only in GRAD mode: the rows' soft
 * targets (src/train/train.h, TRAIN_SOFT_K), so that GRAD gives
 * scale*(p - target) with target = (1 - s) onehot + sum_j w_j onehot(tok_j);
 * a token outside 0..V-1 is an empty slot. row_loss stays the one-hot loss. */
enum { CUDA_XENT_PROBS = 0, CUDA_XENT_GRAD = 1, CUDA_XENT_LOSS = 2 };
enum { CUDA_SOFT_K = 8 };
void cuda_xent_fwd(cuda_ctx *c, const float *emb, int N, int V, int H, const float *y, const int32_t *tgt,
                   int32_t skip, int mode, const float *scale, const int32_t *soft_tok, const float *soft_w,
                   float *probs, float *row_loss);
/* probs -> dlogits in place (the first half of train_xent_bwd). */
void cuda_xent_grad(cuda_ctx *c, int N, int V, const int32_t *tgt, int32_t skip, float scale, float *probs);
/* The two products of train_xent_bwd: dy = dlogits emb; demb += dlogits^T y. */
void cuda_xent_bwd(cuda_ctx *c, const float *emb, int N, int V, int H, const float *y, const float *dlogits,
                   float *demb, float *dy);

/* The same with bf16 operands (CUDA_MATH_BF16 trainers, whose cuBLAS
 * products would round the f32 operands to bf16 anyway): emb16 (V,H) and
 * y16 (N,H) bf16; logits (N,V) f32 scratch; in CUDA_XENT_GRAD mode the
 * dlogits go to dl16 (N,V) as bf16 and logits is left holding the logits;
 * CUDA_XENT_LOSS as cuda_xent_fwd. cuda_xent_bwd16 takes dl16. */
void cuda_xent_fwd16(cuda_ctx *c, const void *emb16, int N, int V, int H, const void *y16, const int32_t *tgt,
                     int32_t skip, int mode, const float *scale, const int32_t *soft_tok, const float *soft_w,
                     float *logits, void *dl16, float *row_loss);
void cuda_xent_bwd16(cuda_ctx *c, const void *emb16, int N, int V, int H, const void *y16, const void *dl16,
                     float *demb, float *dy);
/* y[0..n) = bf16(x) rounded to nearest even; x 8-byte and y 4-byte
 * aligned. */
void cuda_to_bf16(cuda_ctx *c, const float *x, size_t n, void *y);

/* ---- reductions and the optimizer ---- */
/* *out = sum of x[0..n) in double, one block, fixed order. */
void cuda_sum(cuda_ctx *c, const float *x, int n, double *out);
/* *norm = sqrt(sum g^2) in double (train_clip_grads' norm). */
void cuda_grad_norm(cuda_ctx *c, const float *g, size_t n, double *norm);

/* Per-step scalars the optimizer reads from device memory (graph-safe). */
typedef struct {
    float lr, bc1, bc2;   /* rate, 1-beta1^step, 1-beta2^step */
    float clip;           /* gradient norm limit, 0 = off */
} cuda_adam_vars;
/* AdamW over n elements of one tensor, gradients first scaled by
 * clip/norm when norm > clip > 0 (train_clip_grads then
 * train_adamw_step). decay: this tensor is a 2-D matrix (weight decay wd). */
void cuda_adamw(cuda_ctx *c, const cuda_adam_vars *vars, const double *norm, float beta1, float beta2,
                float eps, float wd, int decay, size_t n, float *params, const float *grads, float *m,
                float *v);

/* Fills n floats with NaN (test poisoning). */
void cuda_fill_nan(cuda_ctx *c, float *x, size_t n);

#ifdef __cplusplus
}
#endif

#endif
