/* model_params.c - the one definition of the f32 parameter layout, shared by
 * the trainer, the model files and inference. */
#include "model/model.h"

#include <stdio.h>
#include <string.h>

#include "kern/kern.h"
#include "util/err.h"

model_cfg model_cfg_default(void) {
    model_cfg c = {.V = TOK_DEFAULT_VOCAB, .H = 768, .D = 128, .L = 3, .W = 5};
    return c;
}

laya_status model_cfg_check(const model_cfg *c, char *err, size_t errlen) {
    if (c->V < TOK_FIRST_MERGE || c->V > TOK_MAX_VOCAB)
        return err_set(err, errlen, LAYA_ERR_FORMAT, "vocabulary size V=%d outside %d..%d",
                       c->V, TOK_FIRST_MERGE, TOK_MAX_VOCAB);
    if (c->H < 8 || c->H > 4096)
        return err_set(err, errlen, LAYA_ERR_FORMAT, "hidden width H=%d outside 8..4096", c->H);
    if (c->D < 1 || c->D > c->H)
        return err_set(err, errlen, LAYA_ERR_FORMAT, "attention width D=%d outside 1..H=%d", c->D, c->H);
    if (c->L < 1 || c->L > MODEL_MAX_L)
        return err_set(err, errlen, LAYA_ERR_FORMAT, "layer count L=%d outside 1..%d", c->L, MODEL_MAX_L);
    if (c->W < 1 || c->W > MODEL_MAX_W)
        return err_set(err, errlen, LAYA_ERR_FORMAT, "attention window W=%d outside 1..%d", c->W, MODEL_MAX_W);
    return LAYA_OK;
}

static void add(model_tensor *out, int cap, int *n, size_t *off, const char *name,
                int64_t r, int64_t c, int is_matrix) {
    if (*n < cap) {
        model_tensor *t = &out[*n];
        snprintf(t->name, sizeof t->name, "%s", name);
        t->ndim = c ? 2 : 1;
        t->shape[0] = r;
        t->shape[1] = c;
        t->offset = *off;
        t->is_matrix = is_matrix;
    }
    (*n)++;
    *off += (size_t)r * (size_t)(c ? c : 1);
}

int model_tensors(const model_cfg *c, model_tensor *out, int cap) {
    int n = 0;
    size_t off = 0;
    int64_t H = c->H, D = c->D, G = 3 * (int64_t)c->H;
    add(out, cap, &n, &off, "emb", c->V, H, 1);
    for (int l = 0; l < c->L; l++) {
        static const char *names[] = {"w_ih", "w_hh", "b_ih", "b_hh", "wq", "wk", "wv", "wo"};
        const int64_t rows[] = {G, G, G, G, D, D, D, H};
        const int64_t cols[] = {H, H, 0, 0, H, H, H, D};
        for (int i = 0; i < 8; i++) {
            char name[24];
            snprintf(name, sizeof name, "l%d.%s", l, names[i]);
            add(out, cap, &n, &off, name, rows[i], cols[i], cols[i] != 0);
        }
    }
    add(out, cap, &n, &off, "norm", H, 0, 0);
    return n;
}

size_t model_n_params(const model_cfg *c) {
    model_tensor t[2 + 8 * MODEL_MAX_L];
    int n = model_tensors(c, t, (int)(sizeof t / sizeof t[0]));
    const model_tensor *last = &t[n - 1];
    return last->offset + (size_t)last->shape[0];
}

void model_params_point(const model_cfg *c, float *base, model_params *p) {
    model_tensor t[2 + 8 * MODEL_MAX_L];
    int n = model_tensors(c, t, (int)(sizeof t / sizeof t[0]));
    memset(p, 0, sizeof *p);
    int i = 0;
    p->emb = base + t[i++].offset;
    for (int l = 0; l < c->L; l++) {
        model_layer_params *lp = &p->layer[l];
        lp->w_ih = base + t[i++].offset;
        lp->w_hh = base + t[i++].offset;
        lp->b_ih = base + t[i++].offset;
        lp->b_hh = base + t[i++].offset;
        lp->wq = base + t[i++].offset;
        lp->wk = base + t[i++].offset;
        lp->wv = base + t[i++].offset;
        lp->wo = base + t[i++].offset;
    }
    p->norm = base + t[i++].offset;
    (void)n;
}

void model_params_read(const model *m, float *p) {
    const model_cfg *c = &m->cfg;
    model_params mp;
    model_params_point(c, p, &mp);
    const qmat *mats[1 + 6 * MODEL_MAX_L];
    float *dst[1 + 6 * MODEL_MAX_L];
    int n = 0;
    mats[n] = &m->emb;
    dst[n++] = mp.emb;
    for (int l = 0; l < c->L; l++) {
        const model_layer *ly = &m->layer[l];
        model_layer_params *lp = &mp.layer[l];
        const qmat *src[6] = {&ly->w_ih, &ly->w_hh, &ly->wq, &ly->wk, &ly->wv, &ly->wo};
        float *to[6] = {lp->w_ih, lp->w_hh, lp->wq, lp->wk, lp->wv, lp->wo};
        for (int k = 0; k < 6; k++) {
            mats[n] = src[k];
            dst[n++] = to[k];
        }
        memcpy(lp->b_ih, ly->b_ih, 3 * (size_t)c->H * sizeof(float));
        memcpy(lp->b_hh, ly->b_hh, 3 * (size_t)c->H * sizeof(float));
    }
    memcpy(mp.norm, m->norm, (size_t)c->H * sizeof(float));
    for (int i = 0; i < n; i++)
        for (int32_t r = 0; r < mats[i]->rows; r++)
            kern_row_f32(mats[i], r, dst[i] + (size_t)r * (size_t)mats[i]->cols);
}
