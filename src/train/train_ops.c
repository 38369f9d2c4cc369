/* train_ops.c - forward and backward of every op of the network, over a
 * batch of B streams of T positions (row n = b*T + t). The math is the
 * comment at the top of src/model/model.h; the matrix products go through
 * train_sgemm, the element-wise parts are OpenMP loops over rows. Loops that
 * reduce over rows into one vector (bias and gain gradients) run over
 * columns so no two threads write one element and sums keep a fixed order. */
#include "train/train_ops.h"

#include <math.h>
#include <string.h>

#include "model/model.h"
#include "kern/vmath.h"

/* Element-wise loops smaller than this run on one thread: a parallel region
 * costs a few microseconds. */
#define PAR_MIN 8192

static inline uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

int train_dropout_keep(uint64_t seed, uint64_t salt, size_t i, float p) {
    uint64_t r = mix64(mix64(seed ^ mix64(salt)) + (uint64_t)i);
    return (double)(r >> 40) * (1.0 / 16777216.0) >= (double)p;
}

void train_vmath_apply(int which, size_t n, const float *x, float *y) {
    for (size_t i = 0; i < n; i += 8) {
        float a[8] = {0}, r[8];
        size_t k = n - i < 8 ? n - i : 8;
        memcpy(a, x + i, k * sizeof(float));
        __m256 v = _mm256_loadu_ps(a);
        _mm256_storeu_ps(r, which == 0 ? vexp(v) : which == 1 ? vsigmoid(v) : vtanh(v));
        memcpy(y + i, r, k * sizeof(float));
    }
}

/* ---- embedding ---- */

void train_embed_fwd(const float *emb, const int32_t *ids, int N, int H, float *x) {
#pragma omp parallel for schedule(static) if ((size_t)N * H >= PAR_MIN)
    for (int n = 0; n < N; n++) memcpy(x + (size_t)n * H, emb + (size_t)ids[n] * H, (size_t)H * sizeof(float));
}

/* Two rows may share a token, so threads split the columns, not the rows:
 * each element still sums over n in order. */
void train_embed_bwd(const int32_t *ids, int N, int H, const float *dx, float *demb, int V) {
#pragma omp parallel for schedule(static) if ((size_t)N * H >= 4 * PAR_MIN)
    for (int j = 0; j < H; j += 8) {
        __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(H - j), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        for (int n = 0; n < N; n++) {
            if (ids[n] < 0 || ids[n] >= V) continue;
            float *d = demb + (size_t)ids[n] * H + j;
            _mm256_maskstore_ps(d, m, _mm256_add_ps(_mm256_maskload_ps(d, m), _mm256_maskload_ps(dx + (size_t)n * H + j, m)));
        }
    }
}

/* ---- dropout ---- */

/* 64-bit lane products (low halves) from 32-bit multiplies: AVX2 has none. */
static inline __m256i mul64(__m256i a, uint64_t b) {
    __m256i bl = _mm256_set1_epi64x((long long)(b & 0xFFFFFFFFu)), bh = _mm256_set1_epi64x((long long)(b >> 32));
    __m256i lo = _mm256_mul_epu32(a, bl);
    __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), bl), _mm256_mul_epu32(a, bh));
    return _mm256_add_epi64(lo, _mm256_slli_epi64(cross, 32));
}
static inline __m256i vmix64(__m256i x) {
    x = _mm256_add_epi64(x, _mm256_set1_epi64x((long long)0x9E3779B97F4A7C15ull));
    x = mul64(_mm256_xor_si256(x, _mm256_srli_epi64(x, 30)), 0xBF58476D1CE4E5B9ull);
    x = mul64(_mm256_xor_si256(x, _mm256_srli_epi64(x, 27)), 0x94D049BB133111EBull);
    return _mm256_xor_si256(x, _mm256_srli_epi64(x, 31));
}

/* Eight elements at a time: the same keep decision as train_dropout_keep,
 * (r >> 40) / 2^24 >= p being (r >> 40) >= ceil(p * 2^24) exactly. */
void train_dropout_fwd(uint64_t seed, uint64_t salt, float p, size_t n, float *x) {
    if (p <= 0.0f) return;
    float sc = 1.0f / (1.0f - p);
    uint64_t base = mix64(seed ^ mix64(salt));
    long long thr = (long long)ceil((double)p * 16777216.0);
    size_t n8 = n / 8 * 8;
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n8; i += 8) {
        __m256i idx = _mm256_add_epi64(_mm256_set1_epi64x((long long)(base + i)), _mm256_setr_epi64x(0, 1, 2, 3));
        __m256i r0 = _mm256_srli_epi64(vmix64(idx), 40);
        __m256i r1 = _mm256_srli_epi64(vmix64(_mm256_add_epi64(idx, _mm256_set1_epi64x(4))), 40);
        __m256i vt = _mm256_set1_epi64x(thr);
        /* keep where r >= thr: not (thr > r); low dwords of the 64-bit masks. */
        __m256i d0 = _mm256_cmpgt_epi64(vt, r0), d1 = _mm256_cmpgt_epi64(vt, r1);
        __m256i pick = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
        __m256i drop = _mm256_blend_epi32(_mm256_permutevar8x32_epi32(d0, pick), _mm256_permutevar8x32_epi32(d1, pick), 0xF0);
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), _mm256_set1_ps(sc));
        _mm256_storeu_ps(x + i, _mm256_andnot_ps(_mm256_castsi256_ps(drop), v));
    }
    for (size_t i = n8; i < n; i++) x[i] = train_dropout_keep(seed, salt, i, p) ? x[i] * sc : 0.0f;
}

void train_dropout_bwd(uint64_t seed, uint64_t salt, float p, size_t n, float *dx) {
    train_dropout_fwd(seed, salt, p, n, dx);
}

/* The GRU layer is in train_gru.c. */

/* ---- local attention + residual ---- */

/* sum a[i] b[i] in eight lanes, then the lanes in order, then the tail. */
static inline float vdot(const float *a, const float *b, int n) {
    __m256 s = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8) s = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s);
    float l[8], r = 0;
    _mm256_storeu_ps(l, s);
    for (int k = 0; k < 8; k++) r += l[k];
    for (; i < n; i++) r += a[i] * b[i];
    return r;
}

void train_attn_fwd(const float *wqkv, const float *wo, int B, int T, int H, int D, int W,
                    const float *h, float *qkv, float *att, float *ctx, float *out) {
    int N = B * T, D3 = 3 * D;
    float scale = 1.0f / sqrtf((float)D);
    train_sgemm(0, 1, N, D3, H, 1.0f, h, H, wqkv, H, 0.0f, qkv, D3);
#pragma omp parallel for schedule(static) if ((size_t)N * W * D >= PAR_MIN)
    for (int n = 0; n < N; n++) {
        int t = n % T;
        const float *q = qkv + (size_t)n * D3;
        float *a = att + (size_t)n * W, mx = -INFINITY;
        for (int j = 0; j < W; j++) {
            int dt = W - 1 - j; /* how far back slot j looks */
            if (dt > t) { a[j] = -INFINITY; continue; }
            a[j] = vdot(q, qkv + (size_t)(n - dt) * D3 + D, D) * scale;
            if (a[j] > mx) mx = a[j];
        }
        float sum = 0;
        for (int j = 0; j < W; j++) {
            a[j] = a[j] == -INFINITY ? 0.0f : expf(a[j] - mx);
            sum += a[j];
        }
        float *c = ctx + (size_t)n * D;
        memset(c, 0, (size_t)D * sizeof(float));
        for (int j = 0; j < W; j++) {
            a[j] /= sum;
            if (a[j] == 0.0f) continue;
            const float *v = qkv + (size_t)(n - (W - 1 - j)) * D3 + 2 * D;
            for (int i = 0; i < D; i++) c[i] += a[j] * v[i];
        }
    }
    memcpy(out, h, (size_t)N * H * sizeof(float));
    train_sgemm(0, 1, N, H, D, 1.0f, ctx, D, wo, D, 1.0f, out, H);
}

void train_attn_bwd(const float *wqkv, const float *wo, int B, int T, int H, int D, int W,
                    const float *h, const float *qkv, const float *att, const float *ctx,
                    const float *dout, float *dqkv, float *dctx, float *dwqkv, float *dwo,
                    float *dh) {
    int N = B * T, D3 = 3 * D;
    float scale = 1.0f / sqrtf((float)D);
    train_sgemm(1, 0, H, D, N, 1.0f, dout, H, ctx, D, 1.0f, dwo, D);
    train_sgemm(0, 0, N, D, H, 1.0f, dout, H, wo, D, 0.0f, dctx, D);
    memset(dqkv, 0, (size_t)N * D3 * sizeof(float));
    /* One stream per thread: position t writes dk, dv of earlier positions
     * of its own stream only. */
#pragma omp parallel for schedule(static) if ((size_t)N * W * D >= PAR_MIN)
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            size_t n = (size_t)b * T + t;
            const float *a = att + n * W, *dc = dctx + n * D, *q = qkv + n * D3;
            float da[MODEL_MAX_W], dot = 0;
            for (int j = 0; j < W; j++) {
                da[j] = 0;
                int dt = W - 1 - j;
                if (dt > t) continue;
                const float *v = qkv + (n - dt) * D3 + 2 * D;
                float *dv = dqkv + (n - dt) * D3 + 2 * D;
                da[j] = vdot(dc, v, D);
                for (int i = 0; i < D; i++) dv[i] += a[j] * dc[i];
                dot += a[j] * da[j];
            }
            float *dq = dqkv + n * D3;
            for (int j = 0; j < W; j++) {
                int dt = W - 1 - j;
                if (dt > t) continue;
                float ds = a[j] * (da[j] - dot) * scale;
                const float *k = qkv + (n - dt) * D3 + D;
                float *dk = dqkv + (n - dt) * D3 + D;
                for (int i = 0; i < D; i++) {
                    dq[i] += ds * k[i];
                    dk[i] += ds * q[i];
                }
            }
        }
    }
    train_sgemm(1, 0, D3, H, N, 1.0f, dqkv, D3, h, H, 1.0f, dwqkv, H);
    memcpy(dh, dout, (size_t)N * H * sizeof(float));
    train_sgemm(0, 0, N, H, D3, 1.0f, dqkv, D3, wqkv, H, 1.0f, dh, H);
}

/* ---- RMSNorm ---- */

void train_rmsnorm_fwd(const float *g, int N, int H, const float *x, float *y, float *rs) {
#pragma omp parallel for schedule(static) if ((size_t)N * H >= PAR_MIN)
    for (int n = 0; n < N; n++) {
        const float *xr = x + (size_t)n * H;
        float ss = 0;
        for (int j = 0; j < H; j++) ss += xr[j] * xr[j];
        float r = 1.0f / sqrtf(ss / (float)H + MODEL_NORM_EPS);
        rs[n] = r;
        for (int j = 0; j < H; j++) y[(size_t)n * H + j] = xr[j] * r * g[j];
    }
}

void train_rmsnorm_bwd(const float *g, int N, int H, const float *x, const float *rs,
                       const float *dy, float *dx, float *dg) {
#pragma omp parallel for schedule(static) if ((size_t)N * H >= PAR_MIN)
    for (int n = 0; n < N; n++) {
        const float *xr = x + (size_t)n * H, *d = dy + (size_t)n * H;
        float r = rs[n], dot = 0;
        for (int j = 0; j < H; j++) dot += d[j] * g[j] * xr[j];
        float c = r * r * r * dot / (float)H;
        for (int j = 0; j < H; j++) dx[(size_t)n * H + j] = r * d[j] * g[j] - c * xr[j];
    }
    /* Eight columns at a time, each summed over n in order as the scalar
     * loop would (same operations, no contraction). */
#pragma omp parallel for schedule(static) if ((size_t)N * H >= PAR_MIN)
    for (int j = 0; j < H; j += 8) {
        __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(H - j), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        __m256 s = _mm256_setzero_ps();
        for (int n = 0; n < N; n++) {
            __m256 t = _mm256_mul_ps(_mm256_maskload_ps(dy + (size_t)n * H + j, m),
                                     _mm256_maskload_ps(x + (size_t)n * H + j, m));
            s = _mm256_add_ps(s, _mm256_mul_ps(t, _mm256_set1_ps(rs[n])));
        }
        _mm256_maskstore_ps(dg + j, m, _mm256_add_ps(_mm256_maskload_ps(dg + j, m), s));
    }
}

/* ---- tied logits + softmax cross-entropy ---- */

/* Softmax of one row in place; returns the sum of exp(p - max) (double
 * lanes, then lane order) and *mx the max. */
static double softmax_row(float *p, int V, float *mx_out) {
    __m256 vm = _mm256_set1_ps(-INFINITY);
    int i = 0;
    for (; i + 8 <= V; i += 8) vm = _mm256_max_ps(vm, _mm256_loadu_ps(p + i));
    float lanes[8], mx = -INFINITY;
    _mm256_storeu_ps(lanes, vm);
    for (int k = 0; k < 8; k++) mx = lanes[k] > mx ? lanes[k] : mx;
    for (; i < V; i++) mx = p[i] > mx ? p[i] : mx;
    __m256 vmx = _mm256_set1_ps(mx);
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    for (i = 0; i + 8 <= V; i += 8) {
        __m256 e = vexp(_mm256_sub_ps(_mm256_loadu_ps(p + i), vmx));
        _mm256_storeu_ps(p + i, e);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    double d[4], sum = 0;
    _mm256_storeu_pd(d, _mm256_add_pd(s0, s1));
    sum = (d[0] + d[1]) + (d[2] + d[3]);
    for (; i < V; i++) {
        p[i] = expf(p[i] - mx);
        sum += p[i];
    }
    float inv = (float)(1.0 / sum);
    __m256 vi = _mm256_set1_ps(inv);
    for (i = 0; i + 8 <= V; i += 8) _mm256_storeu_ps(p + i, _mm256_mul_ps(_mm256_loadu_ps(p + i), vi));
    for (; i < V; i++) p[i] *= inv;
    *mx_out = mx;
    return sum;
}

/* Exp in softmax rows is kern/vmath.h's vexp (2 ulp), the tail libm's. */
double train_xent_fwd(const float *emb, int N, int V, int H, const float *y, const int32_t *tgt,
                      int32_t skip, float *probs, int64_t *count, float *row_loss) {
    train_sgemm(0, 1, N, V, H, 1.0f, y, H, emb, H, 0.0f, probs, V);
#pragma omp parallel for schedule(static) if ((size_t)N * V >= PAR_MIN)
    for (int n = 0; n < N; n++) {
        float *p = probs + (size_t)n * V, mx;
        int32_t c = tgt[n];
        int counted = c != skip && c >= 0 && c < V;
        float logit = counted ? p[c] : 0.0f;
        double sum = softmax_row(p, V, &mx);
        /* -log p = log(sum) - (logit - mx), from the logit, not from the
         * rounded probability, so tiny probabilities keep their accuracy. */
        row_loss[n] = counted ? (float)(log(sum) - (double)(logit - mx)) : 0.0f;
    }
    double total = 0;
    int64_t cnt = 0;
    for (int n = 0; n < N; n++)
        if (tgt[n] != skip && tgt[n] >= 0 && tgt[n] < V) {
            total += row_loss[n];
            cnt++;
        }
    *count = cnt;
    return total;
}

/* dlogits = scale * (probs - onehot(target)) is never formed: the products
 * run on probs with alpha = scale, and the one-hot part is subtracted after,
 * dy[n] -= scale * emb[c] and demb[c] -= scale * y[n] (over n in order, each
 * thread owning columns, so the sum order is fixed). */
void train_xent_bwd(const float *emb, int N, int V, int H, const float *y, const int32_t *tgt,
                    int32_t skip, float scale, float *probs, float *demb, float *dy) {
    for (int n = 0; n < N; n++)
        if (tgt[n] == skip || tgt[n] < 0 || tgt[n] >= V) memset(probs + (size_t)n * V, 0, (size_t)V * sizeof(float));
    train_sgemm(0, 0, N, H, V, scale, probs, V, emb, H, 0.0f, dy, H);
    train_sgemm(1, 0, V, H, N, scale, probs, V, y, H, 1.0f, demb, H);
#pragma omp parallel for schedule(static) if ((size_t)N * H >= PAR_MIN)
    for (int j = 0; j < H; j += 8) {
        __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(H - j), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        __m256 sc = _mm256_set1_ps(scale);
        for (int n = 0; n < N; n++) {
            int32_t c = tgt[n];
            if (c == skip || c < 0 || c >= V) continue;
            float *d = dy + (size_t)n * H + j, *de = demb + (size_t)c * H + j;
            const float *e = emb + (size_t)c * H + j, *yr = y + (size_t)n * H + j;
            _mm256_maskstore_ps(d, m, _mm256_fnmadd_ps(sc, _mm256_maskload_ps(e, m), _mm256_maskload_ps(d, m)));
            _mm256_maskstore_ps(de, m, _mm256_fnmadd_ps(sc, _mm256_maskload_ps(yr, m), _mm256_maskload_ps(de, m)));
        }
    }
}
