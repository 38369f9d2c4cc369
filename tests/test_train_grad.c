/* test_train_grad.c - the trainer's analytic gradients against central
 * finite differences of an independent double-precision forward, written
 * here from the math of src/model/model.h (loops only, no shared code with
 * src/train). Each op is checked alone with loss = sum(R * out) for a fixed
 * random R, then the whole model on a tiny config with dropout and a carried
 * state, every parameter of every tensor. */
#include "test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "train/train.h"
#include "train/train_ops.h"

static uint64_t rs_state = 12345;
static double urand(void) {
    rs_state = rs_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rs_state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}
static void fill(float *a, size_t n, double s) {
    for (size_t i = 0; i < n; i++) a[i] = (float)(s * urand());
}
static double *dup(const float *a, size_t n) {
    double *d = malloc(n * sizeof *d);
    for (size_t i = 0; i < n; i++) d[i] = a[i];
    return d;
}
static double sig(double x) { return 1.0 / (1.0 + exp(-x)); }

/* ---- double-precision reference forward of each op ---- */

static void ref_gru(int B, int T, int H, const double *x, const double *h0, const double *wih,
                    const double *whh, const double *bih, const double *bhh, double *hout) {
    double *h = malloc((size_t)H * sizeof *h), *hn = malloc((size_t)H * sizeof *hn);
    for (int b = 0; b < B; b++) {
        for (int j = 0; j < H; j++) h[j] = h0 ? h0[b * H + j] : 0.0;
        for (int t = 0; t < T; t++) {
            const double *xt = x + ((size_t)b * T + t) * H;
            for (int j = 0; j < H; j++) {
                double a[3], c[3];
                for (int g = 0; g < 3; g++) {
                    a[g] = bih[g * H + j];
                    c[g] = bhh[g * H + j];
                    for (int k = 0; k < H; k++) {
                        a[g] += wih[(size_t)(g * H + j) * H + k] * xt[k];
                        c[g] += whh[(size_t)(g * H + j) * H + k] * h[k];
                    }
                }
                double r = sig(a[0] + c[0]), z = sig(a[1] + c[1]);
                double n = tanh(a[2] + r * c[2]);
                hn[j] = (1 - z) * n + z * h[j];
            }
            memcpy(h, hn, (size_t)H * sizeof *h);
            memcpy(hout + ((size_t)b * T + t) * H, h, (size_t)H * sizeof *h);
        }
    }
    free(h);
    free(hn);
}

/* out = h + wo * sum_j a_j v_j over the window's last W positions. */
static void ref_attn(int B, int T, int H, int D, int W, const double *h, const double *wq,
                     const double *wk, const double *wv, const double *wo, double *out) {
    int N = B * T;
    double *q = calloc((size_t)N * D, sizeof *q), *k = calloc((size_t)N * D, sizeof *k),
           *v = calloc((size_t)N * D, sizeof *v);
    for (int n = 0; n < N; n++)
        for (int d = 0; d < D; d++)
            for (int i = 0; i < H; i++) {
                q[n * D + d] += wq[d * H + i] * h[n * H + i];
                k[n * D + d] += wk[d * H + i] * h[n * H + i];
                v[n * D + d] += wv[d * H + i] * h[n * H + i];
            }
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            int n = b * T + t, s0 = t - W + 1 < 0 ? 0 : t - W + 1;
            double sc[MODEL_MAX_W], mx = -1e300, sum = 0, ctx[64] = {0};
            for (int s = s0; s <= t; s++) {
                double dot = 0;
                for (int d = 0; d < D; d++) dot += q[n * D + d] * k[(b * T + s) * D + d];
                sc[s - s0] = dot / sqrt((double)D);
                if (sc[s - s0] > mx) mx = sc[s - s0];
            }
            for (int s = s0; s <= t; s++) sum += (sc[s - s0] = exp(sc[s - s0] - mx));
            for (int s = s0; s <= t; s++)
                for (int d = 0; d < D; d++) ctx[d] += sc[s - s0] / sum * v[(b * T + s) * D + d];
            for (int i = 0; i < H; i++) {
                double o = h[n * H + i];
                for (int d = 0; d < D; d++) o += wo[i * D + d] * ctx[d];
                out[n * H + i] = o;
            }
        }
    free(q);
    free(k);
    free(v);
}

static void ref_rmsnorm(int N, int H, const double *x, const double *g, double *y) {
    for (int n = 0; n < N; n++) {
        double ss = 0;
        for (int i = 0; i < H; i++) ss += x[n * H + i] * x[n * H + i];
        double r = 1.0 / sqrt(ss / H + 1e-5);
        for (int i = 0; i < H; i++) y[n * H + i] = x[n * H + i] * r * g[i];
    }
}

/* Sum over rows with a target other than TOK_PAD of -log softmax(emb y)
 * (ref_xent_soft, below, without soft targets). */
static double ref_xent_soft(int N, int V, int H, const double *y, const double *emb, const int32_t *tgt,
                            const int32_t *st, const float *sw);
static double ref_xent(int N, int V, int H, const double *y, const double *emb, const int32_t *tgt) {
    return ref_xent_soft(N, V, H, y, emb, tgt, NULL, NULL);
}

/* ---- the checker ---- */

typedef double (*loss_fn)(void *ctx);

/* Central differences on every element of arr (a double copy the loss
 * reads) against the float analytic gradient. Returns the worst error
 * relative to tol; > 1 fails. */
static double check_grad(const char *what, double *arr, size_t n, const float *grad, loss_fn f,
                         void *ctx, double atol, double rtol) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double keep = arr[i], h = 1e-5 * (fabs(keep) > 1 ? fabs(keep) : 1);
        arr[i] = keep + h;
        double lp = f(ctx);
        arr[i] = keep - h;
        double lm = f(ctx);
        arr[i] = keep;
        double fd = (lp - lm) / (2 * h);
        double e = fabs(grad[i] - fd) / (atol + rtol * fabs(fd));
        if (e > worst) worst = e;
        if (e > 1) {
            fprintf(stderr, "    %s[%zu]: analytic %.9g, finite difference %.9g\n", what, i, grad[i], fd);
            return e;
        }
    }
    return worst;
}

static double dot_r(const double *a, const double *r, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += a[i] * r[i];
    return s;
}

/* ---- GRU ---- */

typedef struct {
    int B, T, H;
    double *x, *h0, *wih, *whh, *bih, *bhh, *r, *out;
} gru_ctx;

static double gru_loss(void *p) {
    gru_ctx *c = p;
    ref_gru(c->B, c->T, c->H, c->x, c->h0, c->wih, c->whh, c->bih, c->bhh, c->out);
    return dot_r(c->out, c->r, (size_t)c->B * c->T * c->H);
}

static void grad_gru(int B, int T, int H) {
    int G = 3 * H, N = B * T;
    float *x = malloc(sizeof(float) * N * H), *h0 = malloc(sizeof(float) * B * H);
    float *wih = malloc(sizeof(float) * G * H), *whh = malloc(sizeof(float) * G * H);
    float *bih = malloc(sizeof(float) * G), *bhh = malloc(sizeof(float) * G), *r = malloc(sizeof(float) * N * H);
    fill(x, (size_t)N * H, 1);
    fill(h0, (size_t)B * H, 0.5);
    fill(wih, (size_t)G * H, 0.6);
    fill(whh, (size_t)G * H, 0.6);
    fill(bih, G, 0.3);
    fill(bhh, G, 0.3);
    fill(r, (size_t)N * H, 1);
    float *gates = calloc((size_t)N * G, 4), *ghn = calloc((size_t)N * H, 4), *hprev = calloc((size_t)N * H, 4);
    float *h = calloc((size_t)N * H, 4), *scr = calloc((size_t)B * G, 4), *dgi = calloc((size_t)N * G, 4);
    float *dgh = calloc((size_t)N * G, 4), *dhc = calloc((size_t)B * H, 4), *dx = calloc((size_t)N * H, 4);
    float *gwih = calloc((size_t)G * H, 4), *gwhh = calloc((size_t)G * H, 4), *gbih = calloc(G, 4), *gbhh = calloc(G, 4);
    train_gru_w w = {wih, whh, bih, bhh};
    train_gru_g g = {gwih, gwhh, gbih, gbhh};
    train_gru_fwd(&w, B, T, H, x, h0, gates, ghn, hprev, h, scr);
    train_gru_bwd(&w, &g, B, T, H, x, gates, ghn, hprev, r, dgi, dgh, dhc, dx);
    gru_ctx c = {B, T, H, dup(x, (size_t)N * H), dup(h0, (size_t)B * H), dup(wih, (size_t)G * H),
                 dup(whh, (size_t)G * H), dup(bih, G), dup(bhh, G), dup(r, (size_t)N * H),
                 malloc(sizeof(double) * N * H)};
    /* The forward itself first: float path vs double reference. */
    gru_loss(&c);
    for (int i = 0; i < N * H; i++) CHECK_NEAR(h[i], c.out[i], 1e-5, 1e-4);
    double tol_a = 1e-4, tol_r = 1e-3;
    CHECK(check_grad("gru.x", c.x, (size_t)N * H, dx, gru_loss, &c, tol_a, tol_r) <= 1);
    CHECK(check_grad("gru.w_ih", c.wih, (size_t)G * H, gwih, gru_loss, &c, tol_a, tol_r) <= 1);
    CHECK(check_grad("gru.w_hh", c.whh, (size_t)G * H, gwhh, gru_loss, &c, tol_a, tol_r) <= 1);
    CHECK(check_grad("gru.b_ih", c.bih, G, gbih, gru_loss, &c, tol_a, tol_r) <= 1);
    CHECK(check_grad("gru.b_hh", c.bhh, G, gbhh, gru_loss, &c, tol_a, tol_r) <= 1);
}

/* H = 37 spans several unit chunks of the recurrent kernel, the last one
 * partial. */
TEST(train_grad_gru) {
    grad_gru(2, 5, 7);
    grad_gru(3, 4, 37);
}

/* ---- attention ---- */

typedef struct {
    int B, T, H, D, W;
    double *h, *wqkv, *wo, *r, *out;
} attn_ctx;

static double attn_loss(void *p) {
    attn_ctx *c = p;
    size_t dh = (size_t)c->D * c->H;
    ref_attn(c->B, c->T, c->H, c->D, c->W, c->h, c->wqkv, c->wqkv + dh, c->wqkv + 2 * dh, c->wo, c->out);
    return dot_r(c->out, c->r, (size_t)c->B * c->T * c->H);
}

TEST(train_grad_attention) {
    int B = 2, T = 7, H = 6, D = 4, W = 3, N = B * T;
    float *h = malloc(4 * N * H), *wqkv = malloc(4 * 3 * D * H), *wo = malloc(4 * H * D), *r = malloc(4 * N * H);
    fill(h, (size_t)N * H, 1);
    fill(wqkv, (size_t)3 * D * H, 0.8);
    fill(wo, (size_t)H * D, 0.5);
    fill(r, (size_t)N * H, 1);
    float *qkv = calloc((size_t)N * 3 * D, 4), *att = calloc((size_t)N * W, 4), *ctx = calloc((size_t)N * D, 4);
    float *out = calloc((size_t)N * H, 4), *dqkv = calloc((size_t)N * 3 * D, 4), *dctx = calloc((size_t)N * D, 4);
    float *gw = calloc((size_t)3 * D * H, 4), *gwo = calloc((size_t)H * D, 4), *dh = calloc((size_t)N * H, 4);
    train_attn_fwd(wqkv, wo, B, T, H, D, W, h, qkv, att, ctx, out);
    train_attn_bwd(wqkv, wo, B, T, H, D, W, h, qkv, att, ctx, r, dqkv, dctx, gw, gwo, dh);
    attn_ctx c = {B, T, H, D, W, dup(h, (size_t)N * H), dup(wqkv, (size_t)3 * D * H), dup(wo, (size_t)H * D),
                  dup(r, (size_t)N * H), malloc(sizeof(double) * N * H)};
    attn_loss(&c);
    for (int i = 0; i < N * H; i++) CHECK_NEAR(out[i], c.out[i], 1e-5, 1e-4);
    CHECK(check_grad("attn.h", c.h, (size_t)N * H, dh, attn_loss, &c, 1e-4, 1e-3) <= 1);
    CHECK(check_grad("attn.wqkv", c.wqkv, (size_t)3 * D * H, gw, attn_loss, &c, 1e-4, 1e-3) <= 1);
    CHECK(check_grad("attn.wo", c.wo, (size_t)H * D, gwo, attn_loss, &c, 1e-4, 1e-3) <= 1);
}

/* ---- RMSNorm ---- */

typedef struct {
    int N, H;
    double *x, *g, *r, *y;
} norm_ctx;

static double norm_loss(void *p) {
    norm_ctx *c = p;
    ref_rmsnorm(c->N, c->H, c->x, c->g, c->y);
    return dot_r(c->y, c->r, (size_t)c->N * c->H);
}

TEST(train_grad_rmsnorm) {
    int N = 5, H = 9;
    float *x = malloc(4 * N * H), *g = malloc(4 * H), *r = malloc(4 * N * H);
    fill(x, (size_t)N * H, 2);
    fill(g, H, 1.5);
    fill(r, (size_t)N * H, 1);
    float *y = calloc((size_t)N * H, 4), *rs = calloc(N, 4), *dx = calloc((size_t)N * H, 4), *dg = calloc(H, 4);
    train_rmsnorm_fwd(g, N, H, x, y, rs);
    train_rmsnorm_bwd(g, N, H, x, rs, r, dx, dg);
    norm_ctx c = {N, H, dup(x, (size_t)N * H), dup(g, H), dup(r, (size_t)N * H), malloc(sizeof(double) * N * H)};
    norm_loss(&c);
    for (int i = 0; i < N * H; i++) CHECK_NEAR(y[i], c.y[i], 1e-6, 1e-5);
    CHECK(check_grad("norm.x", c.x, (size_t)N * H, dx, norm_loss, &c, 1e-4, 1e-3) <= 1);
    CHECK(check_grad("norm.g", c.g, H, dg, norm_loss, &c, 1e-4, 1e-3) <= 1);
}

/* ---- tied logits + cross-entropy ---- */

typedef struct {
    int N, V, H;
    double *y, *emb;
    const int32_t *tgt;
} xent_ctx;

static double xent_loss(void *p) {
    xent_ctx *c = p;
    return ref_xent(c->N, c->V, c->H, c->y, c->emb, c->tgt) / 3.0;
}

TEST(train_grad_xent) {
    int N = 4, V = 300, H = 6;
    int32_t tgt[4] = {3, TOK_PAD, 299, 3};
    float *y = malloc(4 * N * H), *emb = malloc(4 * V * H);
    fill(y, (size_t)N * H, 1);
    fill(emb, (size_t)V * H, 0.7);
    float *probs = calloc((size_t)N * V, 4), *rl = calloc(N, 4), *demb = calloc((size_t)V * H, 4), *dy = calloc((size_t)N * H, 4);
    int64_t count = 0;
    double sum = train_xent_fwd(emb, N, V, H, y, tgt, TOK_PAD, probs, &count, rl);
    CHECK(count == 3);
    xent_ctx c = {N, V, H, dup(y, (size_t)N * H), dup(emb, (size_t)V * H), tgt};
    CHECK_NEAR(sum / 3.0, xent_loss(&c), 1e-6, 1e-5);
    train_xent_bwd(emb, N, V, H, y, tgt, TOK_PAD, 1.0f / 3.0f, probs, demb, dy);
    CHECK(check_grad("xent.y", c.y, (size_t)N * H, dy, xent_loss, &c, 1e-5, 1e-3) <= 1);
    CHECK(check_grad("xent.emb", c.emb, (size_t)V * H, demb, xent_loss, &c, 1e-5, 1e-3) <= 1);
}

/* ---- embedding and dropout ---- */

TEST(train_grad_embedding_scatter) {
    int N = 6, V = 5, H = 3;
    int32_t ids[6] = {1, 4, 1, 0, 1, 4};
    float emb[15], x[18], dx[18], demb[15] = {0};
    fill(emb, 15, 1);
    fill(dx, 18, 1);
    train_embed_fwd(emb, ids, N, H, x);
    for (int n = 0; n < N; n++)
        for (int i = 0; i < H; i++) CHECK(x[n * H + i] == emb[ids[n] * H + i]);
    train_embed_bwd(ids, N, H, dx, demb, V);
    /* d/d emb[v] of sum(dx * x) is the sum of dx over rows with id v. */
    for (int v = 0; v < V; v++)
        for (int i = 0; i < H; i++) {
            double s = 0;
            for (int n = 0; n < N; n++) s += ids[n] == v ? dx[n * H + i] : 0;
            CHECK_NEAR(demb[v * H + i], s, 1e-6, 1e-6);
        }
}

TEST(train_dropout_mask) {
    size_t n = 100000;
    float *x = malloc(n * 4), *d = malloc(n * 4);
    for (size_t i = 0; i < n; i++) x[i] = d[i] = 1.0f;
    train_dropout_fwd(7, 3, 0.25f, n, x);
    train_dropout_bwd(7, 3, 0.25f, n, d);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        CHECK(x[i] == d[i]);
        CHECK(x[i] == 0.0f || fabsf(x[i] - 1.0f / 0.75f) < 1e-6f);
        kept += x[i] != 0.0f;
    }
    CHECK_NEAR((double)kept / n, 0.75, 0.01, 0);
    /* Another salt gives another mask. */
    size_t same = 0;
    for (size_t i = 0; i < n; i++) same += train_dropout_keep(7, 3, i, 0.25f) == train_dropout_keep(7, 4, i, 0.25f);
    CHECK(same < n * 0.7);
}

/* ---- the whole model ---- */

typedef struct {
    model_cfg cfg;
    int B, T;
    const int32_t *toks;
    double *p;          /* flat parameters, double */
    const float *state; /* (L,B,H) */
    float drop;
    uint64_t seed, salt;
    const int32_t *soft_tok; /* (N,TRAIN_SOFT_K) soft targets, or NULL */
    const float *soft_w;
} whole_ctx;

/* Sum over rows with a target of the loss against the soft targets st, sw
 * (N,TRAIN_SOFT_K; NULL: none): (1 - s) (-log p_y) + sum_j w_j (-log p_j),
 * s = sum_j w_j (train.h). */
static double ref_xent_soft(int N, int V, int H, const double *y, const double *emb, const int32_t *tgt,
                            const int32_t *st, const float *sw) {
    double total = 0, *lg = malloc((size_t)V * sizeof *lg);
    for (int n = 0; n < N; n++) {
        if (tgt[n] == TOK_PAD) continue;
        double mx = -1e300, s = 0;
        for (int v = 0; v < V; v++) {
            lg[v] = 0;
            for (int i = 0; i < H; i++) lg[v] += emb[(size_t)v * H + i] * y[n * H + i];
            if (lg[v] > mx) mx = lg[v];
        }
        for (int v = 0; v < V; v++) s += exp(lg[v] - mx);
        double lse = log(s) + mx, hard = 1;
        for (int j = 0; st && j < TRAIN_SOFT_K; j++) {
            int32_t t = st[n * TRAIN_SOFT_K + j];
            if (t < 0) continue;
            hard -= sw[n * TRAIN_SOFT_K + j];
            total += sw[n * TRAIN_SOFT_K + j] * (lse - lg[t]);
        }
        total += hard * (lse - lg[tgt[n]]);
    }
    free(lg);
    return total;
}

/* Mean loss of the double reference over the whole model. */
static double whole_loss(void *vp) {
    whole_ctx *c = vp;
    const model_cfg *m = &c->cfg;
    int B = c->B, T = c->T, H = m->H, D = m->D, N = B * T;
    model_tensor ts[2 + 8 * MODEL_MAX_L];
    model_tensors(m, ts, 2 + 8 * MODEL_MAX_L);
    const double *emb = c->p + ts[0].offset;
    double *x = malloc(sizeof(double) * N * H), *h = malloc(sizeof(double) * N * H);
    double *h0 = malloc(sizeof(double) * B * H);
    int32_t *tgt = malloc(sizeof(int32_t) * N);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            int32_t id = c->toks[b * (T + 1) + t];
            for (int i = 0; i < H; i++) x[(b * T + t) * H + i] = emb[(size_t)id * H + i];
            tgt[b * T + t] = c->toks[b * (T + 1) + t + 1];
        }
    for (int l = 0; l < m->L; l++) {
        const model_tensor *lt = &ts[1 + 8 * l];
        if (c->drop > 0)
            for (size_t i = 0; i < (size_t)N * H; i++)
                x[i] = train_dropout_keep(c->seed, (c->salt << 4) | (uint64_t)l, i, c->drop) ? x[i] / (1.0 - c->drop) : 0;
        for (int i = 0; i < B * H; i++) h0[i] = c->state[(size_t)l * B * H + i];
        ref_gru(B, T, H, x, h0, c->p + lt[0].offset, c->p + lt[1].offset, c->p + lt[2].offset,
                c->p + lt[3].offset, h);
        ref_attn(B, T, H, D, m->W, h, c->p + lt[4].offset, c->p + lt[5].offset, c->p + lt[6].offset,
                 c->p + lt[7].offset, x);
    }
    ref_rmsnorm(N, H, x, c->p + ts[1 + 8 * m->L].offset, h);
    int cnt = 0;
    for (int n = 0; n < N; n++) cnt += tgt[n] != TOK_PAD;
    double loss = ref_xent_soft(N, m->V, H, h, emb, tgt, c->soft_tok, c->soft_w) / cnt;
    free(x);
    free(h);
    free(h0);
    free(tgt);
    return loss;
}

/* Every tensor's analytic gradient g against c's reference loss. */
static void check_whole_grads(whole_ctx *c, const float *g) {
    model_tensor ts[2 + 8 * MODEL_MAX_L];
    int nt = model_tensors(&c->cfg, ts, 2 + 8 * MODEL_MAX_L);
    for (int i = 0; i < nt; i++) {
        size_t cnt = (size_t)ts[i].shape[0] * (size_t)(ts[i].ndim == 2 ? ts[i].shape[1] : 1);
        double e = check_grad(ts[i].name, c->p + ts[i].offset, cnt, g + ts[i].offset, whole_loss, c, 2e-5, 2e-3);
        CHECKF(e <= 1, "tensor %s: gradient mismatch (%.2f x tolerance)", ts[i].name, e);
    }
}

TEST(train_grad_whole_model) {
    model_cfg cfg = {.V = 270, .H = 8, .D = 4, .L = 2, .W = 3};
    int B = 2, T = 6;
    size_t np = model_n_params(&cfg);
    float *p = malloc(np * 4), *g = calloc(np, 4);
    train_init_params(&cfg, p, 1);
    /* Larger than the init so every path (attention, gates) matters. */
    for (size_t i = 0; i < np; i++) p[i] = p[i] * 4.0f + 0.05f * (float)urand();
    int32_t toks[2 * 7] = {TOK_BOS, 72, 101, 108, 108, 111, 269, 3, 259, TOK_PAD, 32, 200, 201, 33};
    float state[2 * 2 * 8], state0[2 * 2 * 8];
    fill(state, 32, 0.5);
    memcpy(state0, state, sizeof state);
    train_model tm;
    char err[256];
    CHECK(train_model_init(&tm, &cfg, B, T, 0.2f, err, sizeof err) == LAYA_OK);
    double loss = train_forward(&tm, p, toks, B, state, 1, 99, 5);
    train_backward(&tm, p, g);
    whole_ctx c = {cfg, B, T, toks, dup(p, np), state0, 0.2f, 99, 5, NULL, NULL};
    CHECK_NEAR(loss, whole_loss(&c), 1e-6, 1e-5);
    /* The carried state moved on to the last step's hidden state. */
    CHECK(memcmp(state, state0, sizeof state) != 0);
    check_whole_grads(&c, g);
    train_model_free(&tm);
}

/* Soft targets (train_model_soft): the gradient is that of the loss
 * against them, the loss returned the one-hot one, obj_sum the soft one;
 * slots that are empty, on the target itself, or on a padded row (not
 * counted) behave. The one-hot gradient fails against the soft loss, so
 * the check sees what the soft targets move. */
TEST(train_grad_whole_model_soft_targets) {
    model_cfg cfg = {.V = 270, .H = 8, .D = 4, .L = 2, .W = 3};
    int B = 2, T = 6, N = B * T;
    size_t np = model_n_params(&cfg);
    float *p = malloc(np * 4), *g = calloc(np, 4), *g1 = calloc(np, 4);
    train_init_params(&cfg, p, 1);
    for (size_t i = 0; i < np; i++) p[i] = p[i] * 4.0f + 0.05f * (float)urand();
    int32_t toks[2 * 7] = {TOK_BOS, 72, 101, 108, 108, 111, 269, 3, 259, TOK_PAD, 32, 200, 201, 33};
    int32_t st[12 * TRAIN_SOFT_K];
    float sw[12 * TRAIN_SOFT_K];
    for (int i = 0; i < N * TRAIN_SOFT_K; i++) st[i] = -1, sw[i] = 0;
    /* row 0 (target 72): two followers; row 2 (108): one on the target
     * itself and one elsewhere; row 7 (target TOK_PAD): ignored; row 9
     * (target 201): a full slate */
    st[0] = 60, sw[0] = 0.2f, st[1] = 61, sw[1] = 0.05f;
    st[2 * TRAIN_SOFT_K] = 108, sw[2 * TRAIN_SOFT_K] = 0.15f, st[2 * TRAIN_SOFT_K + 3] = 5, sw[2 * TRAIN_SOFT_K + 3] = 0.1f;
    st[7 * TRAIN_SOFT_K] = 9, sw[7 * TRAIN_SOFT_K] = 0.3f;
    for (int j = 0; j < TRAIN_SOFT_K; j++) st[9 * TRAIN_SOFT_K + j] = 262 + j, sw[9 * TRAIN_SOFT_K + j] = 0.04f;
    float state[32], state0[32];
    fill(state, 32, 0.5);
    memcpy(state0, state, sizeof state);
    train_model tm;
    char err[256];
    CHECK(train_model_init(&tm, &cfg, B, T, 0.2f, err, sizeof err) == LAYA_OK);
    train_model_soft(&tm, st, sw);
    double loss = train_forward(&tm, p, toks, B, state, 1, 99, 5);
    train_backward(&tm, p, g);
    whole_ctx hard = {cfg, B, T, toks, dup(p, np), state0, 0.2f, 99, 5, NULL, NULL};
    whole_ctx c = {cfg, B, T, toks, dup(p, np), state0, 0.2f, 99, 5, st, sw};
    CHECK_NEAR(loss, whole_loss(&hard), 1e-6, 1e-5);
    CHECK_NEAR(tm.obj_sum / (double)tm.count, whole_loss(&c), 1e-6, 1e-5);
    CHECK(fabs(whole_loss(&c) - whole_loss(&hard)) > 1e-3);
    check_whole_grads(&c, g);
    model_tensor ts[2 + 8 * MODEL_MAX_L];
    model_tensors(&cfg, ts, 2 + 8 * MODEL_MAX_L);
    /* the same step without them: its embedding gradient fails the soft check */
    memcpy(state, state0, sizeof state);
    train_model_soft(&tm, NULL, NULL);
    train_forward(&tm, p, toks, B, state, 1, 99, 5);
    train_backward(&tm, p, g1);
    CHECK(check_grad("one-hot", c.p + ts[0].offset, (size_t)cfg.V * cfg.H, g1 + ts[0].offset, whole_loss, &c, 2e-5,
                     2e-3) > 1);
    train_model_free(&tm);
    free(p);
    free(g);
    free(g1);
    free(hard.p);
    free(c.p);
}

/* The checker catches a broken gradient: flip one GRU gate derivative by
 * perturbing the analytic result and expect a failure report. */
TEST(train_grad_checker_catches_error) {
    int N = 3, H = 4;
    float x[12], g[4], r[12], y[12], rs[3], dx[12], dg[4] = {0};
    fill(x, 12, 1);
    fill(g, 4, 1);
    fill(r, 12, 1);
    train_rmsnorm_fwd(g, N, H, x, y, rs);
    train_rmsnorm_bwd(g, N, H, x, rs, r, dx, dg);
    dx[5] *= 1.01f;
    norm_ctx c = {N, H, dup(x, 12), dup(g, 4), dup(r, 12), malloc(sizeof(double) * 12)};
    CHECK(check_grad("broken", c.x, 12, dx, norm_loss, &c, 1e-4, 1e-3) > 1);
}

/* The vector dropout keeps exactly the elements train_dropout_keep names,
 * scaled by 1/(1-p), over lengths that end mid-vector. */
TEST(train_dropout_vector_equals_keep) {
    static const float ps[] = {0.1f, 0.5f, 0.3333f, 0.9f};
    for (int k = 0; k < 4; k++) {
        size_t n = 1003 + (size_t)k;
        float *x = malloc(n * sizeof(float));
        for (size_t i = 0; i < n; i++) x[i] = 1.0f + (float)i;
        train_dropout_fwd(77, 5 + (uint64_t)k, ps[k], n, x);
        float sc = 1.0f / (1.0f - ps[k]);
        for (size_t i = 0; i < n; i++) {
            float want = train_dropout_keep(77, 5 + (uint64_t)k, i, ps[k]) ? (1.0f + (float)i) * sc : 0.0f;
            CHECKF(x[i] == want, "p=%g element %zu: %g, want %g", ps[k], i, x[i], want);
        }
        free(x);
    }
}
