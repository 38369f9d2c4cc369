/* model_step.c - the stateful step (C1): one token in, the state updated in
 * constant work and memory, the normalized hidden vector out. The math is
 * exactly the comment at the top of model.h; every matrix product goes
 * through the kernel table (kern_get), nothing here allocates.
 *
 * Shape letters: V vocab, H hidden, D attention width, L layers, W window,
 * G = 3H gate rows (r, z, n). */
#include "model/model.h"

#include <math.h>
#include <string.h>

size_t model_state_floats(const model_cfg *c) {
    return (size_t)c->L * ((size_t)c->H + 2 * (size_t)c->W * (size_t)c->D);
}

void model_state_place(const model_cfg *c, model_state *s, float *mem) {
    s->n = 0;
    s->h = mem;                                            /* (L, H) */
    s->k = s->h + (size_t)c->L * (size_t)c->H;             /* (L, W, D) */
    s->v = s->k + (size_t)c->L * (size_t)c->W * (size_t)c->D; /* (L, W, D) */
}

void model_state_init(const model_cfg *c, model_state *s, float *mem) {
    model_state_place(c, s, mem);
    memset(mem, 0, model_state_floats(c) * sizeof *mem);
}

/* The three arrays are one block (model_state_init), copied in one go. */
void model_state_copy(const model_cfg *c, model_state *dst, const model_state *src) {
    dst->n = src->n;
    memcpy(dst->h, src->h, model_state_floats(c) * sizeof *dst->h);
}

/* x (H), gi (G), gh (G), q (D), ctx (D), o (H), scores (W) */
size_t model_scratch_floats(const model_cfg *c) {
    return 8 * (size_t)c->H + 2 * (size_t)c->D + (size_t)c->W;
}

/* Attention of query q (D) over the ring kr/vr (W, D) of one layer, whose
 * newest entry is position pos: ctx (D); sc (W) scratch. */
static void attend(int D, int W, int64_t pos, const float *q, const float *kr, const float *vr,
                   float *sc, float *ctx) {
    const int n_att = pos + 1 < W ? (int)pos + 1 : W;  /* positions pos-n_att+1 .. pos */
    const float scale = 1.0f / sqrtf((float)D);
    /* softmax over the window, oldest position first */
    float mx = -INFINITY;
    for (int j = 0; j < n_att; j++) {
        const float *kj = kr + (size_t)((pos - n_att + 1 + j) % W) * D;
        float d = 0;
        for (int e = 0; e < D; e++) d += q[e] * kj[e];
        sc[j] = d * scale;
        if (sc[j] > mx) mx = sc[j];
    }
    float sum = 0;
    for (int j = 0; j < n_att; j++) {
        sc[j] = expf(sc[j] - mx);
        sum += sc[j];
    }
    memset(ctx, 0, (size_t)D * sizeof *ctx);
    for (int j = 0; j < n_att; j++) {
        const float *vj = vr + (size_t)((pos - n_att + 1 + j) % W) * D, a = sc[j] / sum;
        for (int e = 0; e < D; e++) ctx[e] += a * vj[e];
    }
}

/* y = rmsnorm(x) * norm; the mean of squares in double costs nothing at H floats. */
static void final_norm(const model *m, const float *x, float *y) {
    const int H = m->cfg.H;
    double ss = 0;
    for (int i = 0; i < H; i++) ss += (double)x[i] * x[i];
    float inv = (float)(1.0 / sqrt(ss / H + (double)MODEL_NORM_EPS));
    for (int i = 0; i < H; i++) y[i] = x[i] * inv * m->norm[i];
}

/* Precondition: 0 <= token < V (the engine feeds tokenizer ids only). */
void model_step(const model *m, model_state *s, int32_t token, float *scratch, float *y) {
    const kern_table *k = kern_get();
    const int H = m->cfg.H, D = m->cfg.D, W = m->cfg.W, G = 3 * H;
    float *x = scratch, *gi = x + H, *gh = gi + G, *q = gh + G, *ctx = q + D, *o = ctx + D;
    float *sc = o + H;
    const int64_t pos = s->n;
    const int slot = (int)(pos % W);

    kern_row_f32(&m->emb, token, x);
    for (int l = 0; l < m->cfg.L; l++) {
        const model_layer *ly = &m->layer[l];
        float *h = s->h + (size_t)l * H;
        float *kr = s->k + (size_t)l * W * D, *vr = s->v + (size_t)l * W * D;

        k->matvec(&ly->w_ih, x, gi);
        k->matvec(&ly->w_hh, h, gh);
        k->gru_gates(H, gi, gh, ly->b_ih, ly->b_hh, h);   /* GRU update of h in place */
        k->matvec(&ly->wq, h, q);
        k->matvec(&ly->wk, h, kr + (size_t)slot * D);
        k->matvec(&ly->wv, h, vr + (size_t)slot * D);
        attend(D, W, pos, q, kr, vr, sc, ctx);
        k->matvec(&ly->wo, ctx, o);
        for (int i = 0; i < H; i++) x[i] = h[i] + o[i];
    }
    final_norm(m, x, y);
    s->n = pos + 1;
}

/* X, Hc, O (N, H); GI, GH (N, G); Q, K, Vv, C (N, D); sc (W) */
size_t model_batch_scratch_floats(const model_cfg *c, int n) {
    return (size_t)n * (9 * (size_t)c->H + 4 * (size_t)c->D) + (size_t)c->W;
}

/* model_step for n states at once: the vectors of all n are gathered into
 * rows of (N, .) blocks so that every matrix is streamed once (kern matmat)
 * for the batch; the per-state math (gates, attention, norm) is the same
 * code as model_step's. */
void model_step_batch(const model *m, model_state *const *s, const int32_t *tokens, int n,
                      float *scratch, float *const *y) {
    const kern_table *k = kern_get();
    const int H = m->cfg.H, D = m->cfg.D, W = m->cfg.W, G = 3 * H;
    float *X = scratch, *Hc = X + (size_t)n * H, *O = Hc + (size_t)n * H;
    float *GI = O + (size_t)n * H, *GH = GI + (size_t)n * G;
    float *Q = GH + (size_t)n * G, *K = Q + (size_t)n * D, *Vv = K + (size_t)n * D, *C = Vv + (size_t)n * D;
    float *sc = C + (size_t)n * D;

    for (int b = 0; b < n; b++) kern_row_f32(&m->emb, tokens[b], X + (size_t)b * H);
    for (int l = 0; l < m->cfg.L; l++) {
        const model_layer *ly = &m->layer[l];
        for (int b = 0; b < n; b++) memcpy(Hc + (size_t)b * H, s[b]->h + (size_t)l * H, (size_t)H * sizeof(float));
        k->matmat(&ly->w_ih, X, n, GI);
        k->matmat(&ly->w_hh, Hc, n, GH);
        for (int b = 0; b < n; b++) {
            float *h = s[b]->h + (size_t)l * H;
            k->gru_gates(H, GI + (size_t)b * G, GH + (size_t)b * G, ly->b_ih, ly->b_hh, h);
            memcpy(Hc + (size_t)b * H, h, (size_t)H * sizeof(float));
        }
        k->matmat(&ly->wq, Hc, n, Q);
        k->matmat(&ly->wk, Hc, n, K);
        k->matmat(&ly->wv, Hc, n, Vv);
        for (int b = 0; b < n; b++) {
            const int64_t pos = s[b]->n;
            const size_t slot = (size_t)(pos % W);
            float *kr = s[b]->k + (size_t)l * W * D, *vr = s[b]->v + (size_t)l * W * D;
            memcpy(kr + slot * D, K + (size_t)b * D, (size_t)D * sizeof(float));
            memcpy(vr + slot * D, Vv + (size_t)b * D, (size_t)D * sizeof(float));
            attend(D, W, pos, Q + (size_t)b * D, kr, vr, sc, C + (size_t)b * D);
        }
        k->matmat(&ly->wo, C, n, O);
        for (size_t i = 0; i < (size_t)n * H; i++) X[i] = Hc[i] + O[i];
    }
    for (int b = 0; b < n; b++) {
        final_norm(m, X + (size_t)b * H, y[b]);
        s[b]->n++;
    }
}

void model_logits(const model *m, const float *y, float *logits) {
    kern_get()->matvec(&m->emb, y, logits);
}

void model_logits_ids(const model *m, const float *y, const int32_t *ids, int n, float *out) {
    kern_get()->dot_rows(&m->emb, ids, n, y, out);
}

void model_logits_batch(const model *m, const float *y, int n, float *logits) {
    kern_get()->matmat(&m->emb, y, n, logits);
}
