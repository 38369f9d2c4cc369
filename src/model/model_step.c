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

void model_state_init(const model_cfg *c, model_state *s, float *mem) {
    s->n = 0;
    s->h = mem;                                            /* (L, H) */
    s->k = s->h + (size_t)c->L * (size_t)c->H;             /* (L, W, D) */
    s->v = s->k + (size_t)c->L * (size_t)c->W * (size_t)c->D; /* (L, W, D) */
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

static float sigmoidf(float a) { return 1.0f / (1.0f + expf(-a)); }

/* Precondition: 0 <= token < V (the engine feeds tokenizer ids only). */
void model_step(const model *m, model_state *s, int32_t token, float *scratch, float *y) {
    const kern_table *k = kern_get();
    const int H = m->cfg.H, D = m->cfg.D, W = m->cfg.W, G = 3 * H;
    float *x = scratch, *gi = x + H, *gh = gi + G, *q = gh + G, *ctx = q + D, *o = ctx + D;
    float *sc = o + H;
    const int64_t pos = s->n;
    const int slot = (int)(pos % W);
    const int n_att = pos + 1 < W ? (int)pos + 1 : W;  /* positions pos-n_att+1 .. pos */
    const float scale = 1.0f / sqrtf((float)D);

    kern_row_f32(&m->emb, token, x);
    for (int l = 0; l < m->cfg.L; l++) {
        const model_layer *ly = &m->layer[l];
        float *h = s->h + (size_t)l * H;
        float *kr = s->k + (size_t)l * W * D, *vr = s->v + (size_t)l * W * D;

        k->matvec(&ly->w_ih, x, gi);
        k->matvec(&ly->w_hh, h, gh);
        for (int i = 0; i < H; i++) {
            float r = sigmoidf(gi[i] + ly->b_ih[i] + gh[i] + ly->b_hh[i]);
            float z = sigmoidf(gi[H + i] + ly->b_ih[H + i] + gh[H + i] + ly->b_hh[H + i]);
            float n = tanhf(gi[2 * H + i] + ly->b_ih[2 * H + i] + r * (gh[2 * H + i] + ly->b_hh[2 * H + i]));
            h[i] = (1.0f - z) * n + z * h[i];
        }

        k->matvec(&ly->wq, h, q);
        k->matvec(&ly->wk, h, kr + (size_t)slot * D);
        k->matvec(&ly->wv, h, vr + (size_t)slot * D);
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
        k->matvec(&ly->wo, ctx, o);
        for (int i = 0; i < H; i++) x[i] = h[i] + o[i];
    }
    /* RMSNorm; the mean of squares in double costs nothing at H floats */
    double ss = 0;
    for (int i = 0; i < H; i++) ss += (double)x[i] * x[i];
    float inv = (float)(1.0 / sqrt(ss / H + (double)MODEL_NORM_EPS));
    for (int i = 0; i < H; i++) y[i] = x[i] * inv * m->norm[i];
    s->n = pos + 1;
}

void model_logits(const model *m, const float *y, float *logits) {
    kern_get()->matvec(&m->emb, y, logits);
}

void model_logits_ids(const model *m, const float *y, const int32_t *ids, int n, float *out) {
    kern_get()->dot_rows(&m->emb, ids, n, y, out);
}
