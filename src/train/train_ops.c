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

static inline float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }

/* out[j] += sum over n of a[n*ld + j], for j < cols. */
static void colsum_acc(const float *a, int rows, int cols, int ld, float *out) {
#pragma omp parallel for schedule(static) if ((size_t)rows * cols >= PAR_MIN)
    for (int j = 0; j < cols; j++) {
        float s = 0;
        for (int n = 0; n < rows; n++) s += a[(size_t)n * ld + j];
        out[j] += s;
    }
}

/* ---- embedding ---- */

void train_embed_fwd(const float *emb, const int32_t *ids, int N, int H, float *x) {
#pragma omp parallel for schedule(static) if ((size_t)N * H >= PAR_MIN)
    for (int n = 0; n < N; n++) memcpy(x + (size_t)n * H, emb + (size_t)ids[n] * H, (size_t)H * sizeof(float));
}

/* Serial: two rows may share a token, and N*H adds are cheap. */
void train_embed_bwd(const int32_t *ids, int N, int H, const float *dx, float *demb, int V) {
    for (int n = 0; n < N; n++) {
        if (ids[n] < 0 || ids[n] >= V) continue;
        float *d = demb + (size_t)ids[n] * H;
        const float *s = dx + (size_t)n * H;
        for (int j = 0; j < H; j++) d[j] += s[j];
    }
}

/* ---- dropout ---- */

void train_dropout_fwd(uint64_t seed, uint64_t salt, float p, size_t n, float *x) {
    if (p <= 0.0f) return;
    float sc = 1.0f / (1.0f - p);
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) x[i] = train_dropout_keep(seed, salt, i, p) ? x[i] * sc : 0.0f;
}

void train_dropout_bwd(uint64_t seed, uint64_t salt, float p, size_t n, float *dx) {
    train_dropout_fwd(seed, salt, p, n, dx);
}

/* ---- GRU ---- */

void train_gru_fwd(const train_gru_w *w, int B, int T, int H, const float *x, const float *h0,
                   float *gates, float *ghn, float *hprev, float *h, float *scratch) {
    int N = B * T, G = 3 * H;
    size_t ldt = (size_t)T * H;
    /* Input projections for all N rows at once. */
    train_sgemm(0, 1, N, G, H, 1.0f, x, H, w->w_ih, H, 0.0f, gates, G);
    for (int b = 0; b < B; b++) {
        float *hp = hprev + (size_t)b * ldt;
        if (h0) memcpy(hp, h0 + (size_t)b * H, (size_t)H * sizeof(float));
        else memset(hp, 0, (size_t)H * sizeof(float));
    }
    for (int t = 0; t < T; t++) {
        /* Recurrent projections of the B states: rows b*T+t of hprev. */
        train_sgemm(0, 1, B, G, H, 1.0f, hprev + (size_t)t * H, (int)ldt, w->w_hh, H, 0.0f, scratch, G);
#pragma omp parallel for schedule(static) if ((size_t)B * H >= PAR_MIN)
        for (int b = 0; b < B; b++) {
            size_t n = (size_t)b * T + t;
            float *gi = gates + n * G;
            const float *gh = scratch + (size_t)b * G;
            const float *hp = hprev + n * H;
            for (int j = 0; j < H; j++) {
                float r = sigm(gi[j] + w->b_ih[j] + gh[j] + w->b_hh[j]);
                float z = sigm(gi[H + j] + w->b_ih[H + j] + gh[H + j] + w->b_hh[H + j]);
                float hn = gh[2 * H + j] + w->b_hh[2 * H + j];
                float nn = tanhf(gi[2 * H + j] + w->b_ih[2 * H + j] + r * hn);
                float hv = (1.0f - z) * nn + z * hp[j];
                gi[j] = r;
                gi[H + j] = z;
                gi[2 * H + j] = nn;
                ghn[n * H + j] = hn;
                h[n * H + j] = hv;
                if (t + 1 < T) hprev[(n + 1) * H + j] = hv;
            }
        }
    }
}

void train_gru_bwd(const train_gru_w *w, train_gru_g *g, int B, int T, int H, const float *x,
                   const float *gates, const float *ghn, const float *hprev, const float *dh,
                   float *dgi, float *dgh, float *dhc, float *dx) {
    int N = B * T, G = 3 * H;
    memset(dhc, 0, (size_t)B * H * sizeof(float));
    for (int t = T - 1; t >= 0; t--) {
#pragma omp parallel for schedule(static) if ((size_t)B * H >= PAR_MIN)
        for (int b = 0; b < B; b++) {
            size_t n = (size_t)b * T + t;
            const float *ga = gates + n * G;
            float *di = dgi + n * G, *dg = dgh + n * G, *dc = dhc + (size_t)b * H;
            for (int j = 0; j < H; j++) {
                float r = ga[j], z = ga[H + j], nn = ga[2 * H + j];
                float d = dh[n * H + j] + dc[j];
                float dnp = d * (1.0f - z) * (1.0f - nn * nn);
                float dzp = d * (hprev[n * H + j] - nn) * z * (1.0f - z);
                float drp = dnp * ghn[n * H + j] * r * (1.0f - r);
                di[j] = drp;
                di[H + j] = dzp;
                di[2 * H + j] = dnp;
                dg[j] = drp;
                dg[H + j] = dzp;
                dg[2 * H + j] = dnp * r;
                dc[j] = d * z;
            }
        }
        /* Through W_hh into the previous state (none into h0). */
        if (t > 0)
            train_sgemm(0, 0, B, H, G, 1.0f, dgh + (size_t)t * G, T * G, w->w_hh, H, 1.0f, dhc, H);
    }
    train_sgemm(1, 0, G, H, N, 1.0f, dgh, G, hprev, H, 1.0f, g->w_hh, H);
    train_sgemm(1, 0, G, H, N, 1.0f, dgi, G, x, H, 1.0f, g->w_ih, H);
    colsum_acc(dgh, N, G, G, g->b_hh);
    colsum_acc(dgi, N, G, G, g->b_ih);
    train_sgemm(0, 0, N, H, G, 1.0f, dgi, G, w->w_ih, H, 0.0f, dx, H);
}

/* ---- local attention + residual ---- */

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
            const float *k = qkv + (size_t)(n - dt) * D3 + D;
            float s = 0;
            for (int i = 0; i < D; i++) s += q[i] * k[i];
            a[j] = s * scale;
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
                for (int i = 0; i < D; i++) {
                    da[j] += dc[i] * v[i];
                    dv[i] += a[j] * dc[i];
                }
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
#pragma omp parallel for schedule(static) if ((size_t)N * H >= PAR_MIN)
    for (int j = 0; j < H; j++) {
        float s = 0;
        for (int n = 0; n < N; n++) s += dy[(size_t)n * H + j] * x[(size_t)n * H + j] * rs[n];
        dg[j] += s;
    }
}

/* ---- tied logits + softmax cross-entropy ---- */

double train_xent_fwd(const float *emb, int N, int V, int H, const float *y, const int32_t *tgt,
                      int32_t skip, float *probs, int64_t *count, float *row_loss) {
    train_sgemm(0, 1, N, V, H, 1.0f, y, H, emb, H, 0.0f, probs, V);
#pragma omp parallel for schedule(static) if ((size_t)N * V >= PAR_MIN)
    for (int n = 0; n < N; n++) {
        float *p = probs + (size_t)n * V, mx = p[0];
        for (int i = 1; i < V; i++) mx = p[i] > mx ? p[i] : mx;
        int32_t c = tgt[n];
        int counted = c != skip && c >= 0 && c < V;
        float lc = counted ? p[c] - mx : 0.0f;
        double sum = 0;
        for (int i = 0; i < V; i++) {
            p[i] = expf(p[i] - mx);
            sum += p[i];
        }
        float inv = (float)(1.0 / sum);
        /* -log p = log(sum) - (logit - mx), from the logit, not from the
         * rounded probability, so tiny probabilities keep their accuracy. */
        row_loss[n] = counted ? (float)(log(sum) - (double)lc) : 0.0f;
        for (int i = 0; i < V; i++) p[i] *= inv;
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

void train_xent_bwd(const float *emb, int N, int V, int H, const float *y, const int32_t *tgt,
                    int32_t skip, float scale, float *probs, float *demb, float *dy) {
#pragma omp parallel for schedule(static) if ((size_t)N * V >= PAR_MIN)
    for (int n = 0; n < N; n++) {
        float *p = probs + (size_t)n * V;
        int32_t c = tgt[n];
        if (c == skip || c < 0 || c >= V) {
            memset(p, 0, (size_t)V * sizeof(float));
            continue;
        }
        for (int i = 0; i < V; i++) p[i] *= scale;
        p[c] -= scale;
    }
    train_sgemm(0, 0, N, H, V, 1.0f, probs, V, emb, H, 0.0f, dy, H);
    train_sgemm(1, 0, V, H, N, 1.0f, probs, V, y, H, 1.0f, demb, H);
}
