/* train_model.c - the whole network over a batch of windows: forward with
 * activation caches, backward through them, and the initial parameters.
 * The op order is the comment at the top of src/model/model.h; each op is
 * one call into train_ops.c. */
#include "train/train.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "train/train_ops.h"
#include "util/err.h"

const char *const train_op_names[TRAIN_OP_COUNT] = {
    "embed", "gru", "attention", "rmsnorm", "logits+xent", "dropout",
    "embed'", "gru'", "attention'", "rmsnorm'", "logits+xent'", "dropout'",
};

/* Charges the time since *t to op and restarts the clock. */
static void lap(train_model *tm, int op, double *t) {
    double now = omp_get_wtime();
    tm->op_time[op] += now - *t;
    *t = now;
}

/* A bump allocator over one block: every array 64-byte aligned. */
typedef struct {
    char *base;
    size_t off;
} bump;

static void *take(bump *b, size_t bytes) {
    void *p = b->base ? b->base + b->off : NULL;
    b->off += (bytes + 63) / 64 * 64;
    return p;
}

static void layout(train_model *tm, bump *bp) {
    size_t H = (size_t)tm->cfg.H, D = (size_t)tm->cfg.D, V = (size_t)tm->cfg.V;
    size_t W = (size_t)tm->cfg.W, N = (size_t)tm->B * tm->T, B = (size_t)tm->B, G = 3 * H;
    size_t f = sizeof(float);
    for (int l = 0; l < tm->cfg.L; l++) {
        train_layer_cache *c = &tm->lc[l];
        c->xin = take(bp, N * H * f);
        c->gates = take(bp, N * G * f);
        c->ghn = take(bp, N * H * f);
        c->hprev = take(bp, N * H * f);
        c->h = take(bp, N * H * f);
        c->qkv = take(bp, N * 3 * D * f);
        c->att = take(bp, N * W * f);
        c->ctx = take(bp, N * D * f);
    }
    tm->xL = take(bp, N * H * f);
    tm->rs = take(bp, N * f);
    tm->y = take(bp, N * H * f);
    tm->probs = take(bp, N * V * f);
    tm->row_loss = take(bp, N * f);
    tm->da = take(bp, N * H * f);
    tm->db = take(bp, N * H * f);
    tm->dgi = take(bp, N * G * f);
    tm->dgh = take(bp, N * G * f);
    tm->dqkv = take(bp, N * 3 * D * f);
    tm->dctx = take(bp, N * D * f);
    tm->dhc = take(bp, B * H * f);
    tm->ghs = take(bp, B * G * f);
    tm->in = take(bp, N * sizeof(int32_t));
    tm->tgt = take(bp, N * sizeof(int32_t));
}

laya_status train_model_init(train_model *tm, const model_cfg *c, int B, int T, float dropout,
                             char *err, size_t errlen) {
    memset(tm, 0, sizeof *tm);
    laya_status st = model_cfg_check(c, err, errlen);
    if (st != LAYA_OK) return st;
    if (B < 1 || T < 1 || (int64_t)B * T > (1 << 24))
        return err_set(err, errlen, LAYA_ERR_ARG, "batch %d x sequence %d out of range (1..2^24 rows)", B, T);
    if (!(dropout >= 0.0f && dropout < 1.0f))
        return err_set(err, errlen, LAYA_ERR_ARG, "dropout %g outside [0,1)", dropout);
    tm->cfg = *c;
    tm->B = B;
    tm->T = T;
    tm->dropout = dropout;
    bump b = {0};
    layout(tm, &b);
    tm->mem = aligned_alloc(64, b.off);
    if (!tm->mem)
        return err_set(err, errlen, LAYA_ERR_NOMEM, "cannot allocate %.1f MB of activations for B=%d T=%d",
                       (double)b.off / 1e6, B, T);
    memset(tm->mem, 0, b.off);
    b.base = (char *)tm->mem;
    b.off = 0;
    layout(tm, &b);
    return LAYA_OK;
}

void train_model_free(train_model *tm) {
    free(tm->mem);
    memset(tm, 0, sizeof *tm);
}

/* wq, wk, wv are adjacent (D,H) blocks in the layout: one (3D,H) matrix. */
static train_gru_w gru_w(const model_layer_params *p) {
    train_gru_w w = {p->w_ih, p->w_hh, p->b_ih, p->b_hh};
    return w;
}

static uint64_t layer_salt(uint64_t salt, int l) { return (salt << 4) | (uint64_t)l; }

void train_model_soft(train_model *tm, const int32_t *soft_tok, const float *soft_w) {
    tm->soft_tok = soft_tok;
    tm->soft_w = soft_w;
}

/* The summed loss against the soft targets, from the softmax rows in
 * probs: (1 - s) row_loss + sum_j w_j (-log p_j). The soft terms read the
 * rounded float probability (a relative error of ~1e-7 in p: ~1e-7 nats). */
static double soft_objective(const train_model *tm, int N) {
    const int32_t V = tm->cfg.V;
    double sum = 0;
    for (int n = 0; n < N; n++) {
        int32_t y = tm->tgt[n];
        if (y == TOK_PAD || y < 0 || y >= V) continue;
        const int32_t *st = tm->soft_tok + (size_t)n * TRAIN_SOFT_K;
        const float *sw = tm->soft_w + (size_t)n * TRAIN_SOFT_K;
        double s = 0, soft = 0;
        for (int j = 0; j < TRAIN_SOFT_K; j++)
            if (st[j] >= 0 && st[j] < V) {
                double pj = tm->probs[(size_t)n * V + st[j]];
                s += sw[j];
                soft -= sw[j] * log(pj > 1e-300 ? pj : 1e-300);
            }
        sum += (1 - s) * tm->row_loss[n] + soft;
    }
    return sum;
}

/* dlogits = p - target, as train_xent_bwd forms it from probs: the soft
 * targets move mass from the one-hot (which it subtracts after) onto
 * their tokens, in probs, before its products. */
static void soft_grad(const train_model *tm, int N) {
    const int32_t V = tm->cfg.V;
    for (int n = 0; n < N; n++) {
        int32_t y = tm->tgt[n];
        if (y == TOK_PAD || y < 0 || y >= V) continue;
        const int32_t *st = tm->soft_tok + (size_t)n * TRAIN_SOFT_K;
        const float *sw = tm->soft_w + (size_t)n * TRAIN_SOFT_K;
        float *p = tm->probs + (size_t)n * V;
        for (int j = 0; j < TRAIN_SOFT_K; j++)
            if (st[j] >= 0 && st[j] < V) {
                p[y] += sw[j];
                p[st[j]] -= sw[j];
            }
    }
}

double train_forward(train_model *tm, const float *params, const int32_t *toks, int nb,
                     float *state, int training, uint64_t seed, uint64_t salt) {
    const model_cfg *c = &tm->cfg;
    int T = tm->T, H = c->H, N = nb * T;
    model_params p;
    model_params_point(c, (float *)params, &p);
    tm->nb = nb;
    tm->drop_on = training && tm->dropout > 0.0f;
    tm->drop_seed = seed;
    tm->drop_salt = salt;
    for (int b = 0; b < nb; b++)
        for (int t = 0; t < T; t++) {
            tm->in[b * T + t] = toks[(size_t)b * (T + 1) + t];
            tm->tgt[b * T + t] = toks[(size_t)b * (T + 1) + t + 1];
        }
    double clk = omp_get_wtime();
    train_embed_fwd(p.emb, tm->in, N, H, tm->lc[0].xin);
    lap(tm, TRAIN_OP_EMBED, &clk);
    for (int l = 0; l < c->L; l++) {
        train_layer_cache *lc = &tm->lc[l];
        const model_layer_params *lp = &p.layer[l];
        if (tm->drop_on) train_dropout_fwd(seed, layer_salt(salt, l), tm->dropout, (size_t)N * H, lc->xin);
        lap(tm, TRAIN_OP_DROPOUT, &clk);
        train_gru_w w = gru_w(lp);
        float *h0 = state ? state + (size_t)l * nb * H : NULL;
        train_gru_fwd(&w, nb, T, H, lc->xin, h0, lc->gates, lc->ghn, lc->hprev, lc->h, tm->ghs);
        lap(tm, TRAIN_OP_GRU, &clk);
        float *out = l + 1 < c->L ? tm->lc[l + 1].xin : tm->xL;
        train_attn_fwd(lp->wq, lp->wo, nb, T, H, c->D, c->W, lc->h, lc->qkv, lc->att, lc->ctx, out);
        if (state)
            for (int b = 0; b < nb; b++)
                memcpy(h0 + (size_t)b * H, lc->h + ((size_t)b * T + T - 1) * H, (size_t)H * sizeof(float));
        lap(tm, TRAIN_OP_ATTN, &clk);
    }
    train_rmsnorm_fwd(p.norm, N, H, tm->xL, tm->y, tm->rs);
    lap(tm, TRAIN_OP_NORM, &clk);
    tm->loss_sum = train_xent_fwd(p.emb, N, c->V, H, tm->y, tm->tgt, TOK_PAD, tm->probs, &tm->count,
                                  tm->row_loss);
    tm->obj_sum = tm->soft_tok ? soft_objective(tm, N) : tm->loss_sum;
    lap(tm, TRAIN_OP_XENT, &clk);
    return tm->count ? tm->loss_sum / (double)tm->count : 0.0;
}

void train_backward(train_model *tm, const float *params, float *grads) {
    const model_cfg *c = &tm->cfg;
    int T = tm->T, H = c->H, nb = tm->nb, N = nb * T;
    if (!tm->count) return;
    model_params p, g;
    model_params_point(c, (float *)params, &p);
    model_params_point(c, grads, &g);
    float scale = (float)(1.0 / (double)tm->count);
    double clk = omp_get_wtime();
    if (tm->soft_tok) soft_grad(tm, N);
    train_xent_bwd(p.emb, N, c->V, H, tm->y, tm->tgt, TOK_PAD, scale, tm->probs, g.emb, tm->da);
    lap(tm, TRAIN_OP_XENT_B, &clk);
    train_rmsnorm_bwd(p.norm, N, H, tm->xL, tm->rs, tm->da, tm->db, g.norm);
    lap(tm, TRAIN_OP_NORM_B, &clk);
    for (int l = c->L - 1; l >= 0; l--) {
        train_layer_cache *lc = &tm->lc[l];
        const model_layer_params *lp = &p.layer[l];
        model_layer_params *lg = &g.layer[l];
        /* db: gradient of this layer's output x_{l+1}; da: of its GRU output. */
        train_attn_bwd(lp->wq, lp->wo, nb, T, H, c->D, c->W, lc->h, lc->qkv, lc->att, lc->ctx, tm->db,
                       tm->dqkv, tm->dctx, lg->wq, lg->wo, tm->da);
        lap(tm, TRAIN_OP_ATTN_B, &clk);
        train_gru_w w = gru_w(lp);
        train_gru_g gg = {lg->w_ih, lg->w_hh, lg->b_ih, lg->b_hh};
        train_gru_bwd(&w, &gg, nb, T, H, lc->xin, lc->gates, lc->ghn, lc->hprev, tm->da, tm->dgi,
                      tm->dgh, tm->dhc, tm->db);
        lap(tm, TRAIN_OP_GRU_B, &clk);
        if (tm->drop_on)
            train_dropout_bwd(tm->drop_seed, layer_salt(tm->drop_salt, l), tm->dropout, (size_t)N * H, tm->db);
        lap(tm, TRAIN_OP_DROPOUT_B, &clk);
    }
    train_embed_bwd(tm->in, N, H, tm->db, g.emb, c->V);
    lap(tm, TRAIN_OP_EMBED_B, &clk);
}

/* ---- initialization ----
 * emb ~ N(0, 0.02): with y of unit RMS the initial logits have std
 * 0.02*sqrt(H), so the first loss is close to log V.
 * GRU weights and biases ~ U(-1/sqrt(H), 1/sqrt(H)), as PyTorch's nn.GRU.
 * wq, wk, wv ~ U(-1/sqrt(H), 1/sqrt(H)) (fan-in H, as nn.Linear).
 * wo ~ N(0, 0.02/sqrt(L)): the attention branch starts as a small
 * correction to the residual stream.
 * norm = 1. */

static uint64_t rng_next(uint64_t *s) {
    uint64_t x = (*s += 0x9E3779B97F4A7C15ull);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
static double rng_unit(uint64_t *s) { return ((double)(rng_next(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
static double rng_normal(uint64_t *s) {
    double u = rng_unit(s), v = rng_unit(s);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

void train_init_params(const model_cfg *c, float *params, uint64_t seed) {
    model_tensor ts[2 + 8 * MODEL_MAX_L];
    int n = model_tensors(c, ts, (int)(sizeof ts / sizeof ts[0]));
    uint64_t s = seed ^ 0x4C4159415F494E49ull; /* "LAYA_INI" */
    double bound = 1.0 / sqrt((double)c->H);
    for (int i = 0; i < n; i++) {
        const model_tensor *t = &ts[i];
        size_t cnt = (size_t)t->shape[0] * (size_t)(t->ndim == 2 ? t->shape[1] : 1);
        float *w = params + t->offset;
        const char *dot = strchr(t->name, '.');
        const char *kind = dot ? dot + 1 : t->name;
        for (size_t j = 0; j < cnt; j++) {
            double x;
            if (!strcmp(kind, "emb")) x = 0.02 * rng_normal(&s);
            else if (!strcmp(kind, "norm")) x = 1.0;
            else if (!strcmp(kind, "wo")) x = 0.02 / sqrt((double)c->L) * rng_normal(&s);
            else x = bound * (2.0 * rng_unit(&s) - 1.0);
            w[j] = (float)x;
        }
    }
}
