/* train_ops.h - the trainer's building blocks: a blocked sgemm and the
 * forward/backward pair of every op of the network (C6).
 *
 * Each op is two plain functions over row-major arrays, so the CUDA trainer
 * (src/cuda) can mirror them one by one and be checked against them. Rows are
 * batch-major: row n = b*T + t. Backward functions ACCUMULATE (+=) into
 * parameter gradients and WRITE (=) the gradient of their input, unless the
 * comment says otherwise. None allocates, except the packed copies of
 * weights inside train_sgemm and the GRU (freed before they return); none
 * may be called from inside an OpenMP parallel region (they open their own).
 *
 * Shape letters: V vocab, H hidden, D attention width, W window, G = 3H gate
 * rows (r, z, n), B batch, T time, N = B*T rows. */
#ifndef LAYA_TRAIN_OPS_H
#define LAYA_TRAIN_OPS_H

#include <stddef.h>
#include <stdint.h>

/* C(M,N) = alpha * op(A) op(B) + beta * C, row-major with leading
 * dimensions; op(A) is (M,K): A (M,K) if !ta else A^T of a (K,M) array; op(B)
 * is (K,N): B (K,N) if !tb else B^T of an (N,K) array. beta == 0 never reads
 * C. Blocked, packed, OpenMP-parallel over tiles of C; the sum over K is in a
 * fixed order for a given shape, so results do not depend on thread count. */
void train_sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                 const float *B, int ldb, float beta, float *C, int ldc);
/* The specification: three loops, double accumulation. */
void train_sgemm_ref(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc);

/* Counter-based dropout: element i of stream (seed, salt) is kept with
 * probability 1-p, as a pure function, so forward and backward (and a
 * resumed run) agree without storing masks, in any thread order. */
int train_dropout_keep(uint64_t seed, uint64_t salt, size_t i, float p);

/* The 8-lane exp, sigmoid, tanh of kern/vmath.h over an array (which = 0,
 * 1, 2), so tests can check them against libm. */
void train_vmath_apply(int which, size_t n, const float *x, float *y);

/* ---- embedding: x(N,H) = emb[ids] ---- */
void train_embed_fwd(const float *emb, const int32_t *ids, int N, int H, float *x);
/* demb += scatter of dx by ids. */
void train_embed_bwd(const int32_t *ids, int N, int H, const float *dx, float *demb, int V);

/* ---- inverted dropout, in place: x *= keep / (1-p); the same for dx ---- */
void train_dropout_fwd(uint64_t seed, uint64_t salt, float p, size_t n, float *x);
void train_dropout_bwd(uint64_t seed, uint64_t salt, float p, size_t n, float *dx);

/* ---- GRU layer over T steps (gates r, z, n as PyTorch) ----
 * Weights w_ih, w_hh (G,H), b_ih, b_hh (G). x (N,H) input, h0 (B,H) the
 * state before t=0 (NULL = zeros). Outputs h (N,H). Caches for backward:
 * gates (N,G) = r, z, n after their nonlinearities, ghn (N,H) = W_hn h + b_hn
 * (before r scales it), hprev (N,H) = the state each step started from. */
typedef struct {
    const float *w_ih, *w_hh, *b_ih, *b_hh;
} train_gru_w;
typedef struct {
    float *w_ih, *w_hh, *b_ih, *b_hh;
} train_gru_g;
/* scratch (B,G): unused now (the recurrent products stay in per-thread
 * tiles, train_gru.c); kept in the signature the tests and the CUDA mirror
 * share. */
void train_gru_fwd(const train_gru_w *w, int B, int T, int H, const float *x, const float *h0,
                   float *gates, float *ghn, float *hprev, float *h, float *scratch);
/* dh (N,H) the gradient of h. dgi, dgh (N,G) and dhc (B,H) scratch. Writes
 * dx (N,H). No gradient flows into h0 (truncated BPTT: it is a constant). */
void train_gru_bwd(const train_gru_w *w, train_gru_g *g, int B, int T, int H, const float *x,
                   const float *gates, const float *ghn, const float *hprev, const float *dh,
                   float *dgi, float *dgh, float *dhc, float *dx);

/* ---- local attention + residual ----
 * wqkv (3D,H): wq, wk, wv stacked (they are adjacent in the parameter
 * layout); wo (H,D). For each stream, position t attends to positions
 * max(0,t-W+1)..t of the same window, scale 1/sqrt(D). Writes qkv (N,3D),
 * att (N,W) the softmax weights (slot j = position t-W+1+j, 0 where before
 * the window start), ctx (N,D), and out (N,H) = h + ctx wo^T. */
void train_attn_fwd(const float *wqkv, const float *wo, int B, int T, int H, int D, int W,
                    const float *h, float *qkv, float *att, float *ctx, float *out);
/* dout (N,H) gradient of out. dqkv (N,3D), dctx (N,D) scratch. Accumulates
 * dwqkv (3D,H), dwo (H,D); writes dh (N,H) = dout + the attention path. */
void train_attn_bwd(const float *wqkv, const float *wo, int B, int T, int H, int D, int W,
                    const float *h, const float *qkv, const float *att, const float *ctx,
                    const float *dout, float *dqkv, float *dctx, float *dwqkv, float *dwo,
                    float *dh);

/* ---- RMSNorm with gain: y = x / sqrt(mean(x^2) + eps) * g ---- */
void train_rmsnorm_fwd(const float *g, int N, int H, const float *x, float *y, float *rs);
/* rs (N) the cached 1/rms. Accumulates dg; writes dx. */
void train_rmsnorm_bwd(const float *g, int N, int H, const float *x, const float *rs,
                       const float *dy, float *dx, float *dg);

/* ---- tied logits + softmax cross-entropy ----
 * logits(N,V) = y emb^T, then turned in place into probabilities. Targets
 * equal to skip (TOK_PAD) are not predicted and not counted. Returns the sum
 * over counted rows of -log p(target) (nats, double); *count gets the rows. */
double train_xent_fwd(const float *emb, int N, int V, int H, const float *y, const int32_t *tgt,
                      int32_t skip, float *probs, int64_t *count, float *row_loss);
/* Loss = scale * sum. probs is clobbered (rows of skipped targets zeroed).
 * Accumulates demb (V,H) (the output half of the tied matrix); writes dy
 * (N,H). */
void train_xent_bwd(const float *emb, int N, int V, int H, const float *y, const int32_t *tgt,
                    int32_t skip, float scale, float *probs, float *demb, float *dy);

#endif
