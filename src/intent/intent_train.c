/* intent_train.c - the intent head's trainer: class-weighted cross-entropy,
 * Adam on minibatches, plain C (the head has 50k parameters; an epoch over
 * 10k examples is about 1 GFLOP, a second on one core).
 *
 * intent_loss is the specification: forward and backward of one example at
 * a time, summed in double; tests check its gradient by finite differences
 * and that training lowers it. The trainer calls the same function on each
 * minibatch, so there is no second implementation to keep in step.
 *
 * Shape letters: N examples, H input, F head hidden, C classes. */
#include "intent/intent.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"

intent_train_cfg intent_train_defaults(void) {
    return (intent_train_cfg){.epochs = 12, .batch = 64, .lr = 1e-3f, .decay = 1e-4f, .seed = 1};
}

void intent_class_weights(const int *label, int N, float *wc) {
    int n[INTENT_C] = {0};
    for (int i = 0; i < N; i++) n[label[i]]++;
    for (int c = 0; c < INTENT_C; c++) wc[c] = n[c] ? (float)N / ((float)INTENT_C * (float)n[c]) : 0.f;
}

/* One example: adds its weighted loss to the return value's caller and,
 * with g, its gradient (g laid out as the head's parameters). */
static double example(const intent_head *h, const float *y, int label, float w, double *g, float *hid) {
    const int H = h->H;
    float p[INTENT_C];
    intent_forward(h, y, hid, p);
    double l = -w * log(p[label] > 1e-30f ? (double)p[label] : 1e-30);
    if (!g) return l;
    double *gw1 = g, *gb1 = gw1 + (size_t)INTENT_F * H, *gw2 = gb1 + INTENT_F, *gb2 = gw2 + (size_t)INTENT_C * INTENT_F;
    double dl[INTENT_C], dh[INTENT_F];
    for (int c = 0; c < INTENT_C; c++) dl[c] = w * ((double)p[c] - (c == label));   /* d loss / d logit */
    memset(dh, 0, sizeof dh);
    for (int c = 0; c < INTENT_C; c++) {
        gb2[c] += dl[c];
        const float *w2 = h->w2 + (size_t)c * INTENT_F;
        for (int f = 0; f < INTENT_F; f++) {
            gw2[(size_t)c * INTENT_F + f] += dl[c] * hid[f];
            dh[f] += dl[c] * w2[f];
        }
    }
    for (int f = 0; f < INTENT_F; f++) {
        if (hid[f] <= 0) continue;   /* relu'(0) taken as 0 */
        gb1[f] += dh[f];
        double *gr = gw1 + (size_t)f * H;
        for (int i = 0; i < H; i++) gr[i] += dh[f] * y[i];
    }
    return l;
}

double intent_loss(const intent_head *h, const float *X, const int *label, int N, const float *wc, double *grad) {
    float hid[INTENT_F];
    if (grad) memset(grad, 0, intent_n_params(h->H) * sizeof *grad);
    double l = 0;
    for (int i = 0; i < N; i++) l += example(h, X + (size_t)i * h->H, label[i], wc[label[i]], grad, hid);
    if (N > 0) {
        l /= N;
        if (grad)
            for (size_t k = 0; k < intent_n_params(h->H); k++) grad[k] /= N;
    }
    return l;
}

/* xorshift64*: deterministic initialisation and shuffles. */
static uint64_t rnd(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}
static float uniform(uint64_t *s) { return (float)((rnd(s) >> 11) * (1.0 / 9007199254740992.0)) * 2.f - 1.f; }

laya_status intent_train(intent_head *h, const float *X, const int *label, int N, const intent_train_cfg *cfg,
                         intent_progress fn, void *ctx, double *final_loss, char *err, size_t errlen) {
    const int H = h->H;
    if (N < 1 || !cfg || cfg->epochs < 1 || cfg->batch < 1 || !(cfg->lr > 0))
        return err_set(err, errlen, LAYA_ERR_ARG, "intent_train: no examples or a bad configuration");
    for (int i = 0; i < N; i++)
        if (label[i] < 0 || label[i] >= INTENT_C)
            return err_set(err, errlen, LAYA_ERR_ARG, "intent_train: label %d of example %d out of range", label[i], i);
    const size_t P = intent_n_params(H);
    double *g = calloc(P, sizeof *g);
    float *m1 = calloc(P, sizeof *m1), *m2 = calloc(P, sizeof *m2);
    float *Xs = malloc((size_t)N * H * sizeof *Xs);
    float *mu = calloc((size_t)H, sizeof *mu), *sd = calloc((size_t)H, sizeof *sd);
    int *order = malloc((size_t)N * sizeof *order), *bl = malloc((size_t)cfg->batch * sizeof *bl);
    float *bx = malloc((size_t)cfg->batch * H * sizeof *bx);
    laya_status st = LAYA_OK;
    if (!g || !m1 || !m2 || !Xs || !mu || !sd || !order || !bl || !bx) {
        st = err_set(err, errlen, LAYA_ERR_NOMEM, "intent_train: out of memory");
        goto done;
    }
    /* Standardise: the GRU's normalised outputs differ in scale per
     * feature by orders of magnitude (the final norm's gains). */
    for (int i = 0; i < H; i++) {
        double s = 0, s2 = 0;
        for (int n = 0; n < N; n++) s += X[(size_t)n * H + i];
        s /= N;
        for (int n = 0; n < N; n++) {
            double d = X[(size_t)n * H + i] - s;
            s2 += d * d;
        }
        mu[i] = (float)s;
        sd[i] = (float)sqrt(s2 / N + 1e-8);
    }
    for (int n = 0; n < N; n++)
        for (int i = 0; i < H; i++) Xs[(size_t)n * H + i] = (X[(size_t)n * H + i] - mu[i]) / sd[i];
    float wc[INTENT_C];
    intent_class_weights(label, N, wc);
    uint64_t seed = cfg->seed * 0x9E3779B97F4A7C15ull + 1;
    /* He-uniform for the relu layer, Glorot for the output. */
    float a1 = sqrtf(6.f / (float)H), a2 = sqrtf(6.f / (float)(INTENT_F + INTENT_C));
    for (size_t k = 0; k < (size_t)INTENT_F * H; k++) h->w1[k] = a1 * uniform(&seed);
    for (int f = 0; f < INTENT_F; f++) h->b1[f] = 0.01f;
    for (size_t k = 0; k < (size_t)INTENT_C * INTENT_F; k++) h->w2[k] = a2 * uniform(&seed);
    memset(h->b2, 0, INTENT_C * sizeof *h->b2);
    for (int n = 0; n < N; n++) order[n] = n;
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    const size_t nw1 = (size_t)INTENT_F * H, w2o = nw1 + INTENT_F, nw2 = (size_t)INTENT_C * INTENT_F;
    int64_t t = 0;
    for (int ep = 1; ep <= cfg->epochs; ep++) {
        for (int n = N - 1; n > 0; n--) {
            int j = (int)(rnd(&seed) % (uint64_t)(n + 1)), tmp = order[n];
            order[n] = order[j];
            order[j] = tmp;
        }
        double lsum = 0;
        int correct = 0;
        for (int s0 = 0; s0 < N; s0 += cfg->batch) {
            int nb = N - s0 < cfg->batch ? N - s0 : cfg->batch;
            for (int b = 0; b < nb; b++) {
                memcpy(bx + (size_t)b * H, Xs + (size_t)order[s0 + b] * H, (size_t)H * sizeof *bx);
                bl[b] = label[order[s0 + b]];
            }
            lsum += intent_loss(h, bx, bl, nb, wc, g) * nb;
            t++;
            double c1 = 1 - pow(b1, (double)t), c2 = 1 - pow(b2, (double)t);
            for (size_t k = 0; k < P; k++) {
                int decayed = k < nw1 || (k >= w2o && k < w2o + nw2);
                double gk = g[k] + (decayed ? cfg->decay * h->mem[k] : 0);
                m1[k] = (float)(b1 * m1[k] + (1 - b1) * gk);
                m2[k] = (float)(b2 * m2[k] + (1 - b2) * gk * gk);
                h->mem[k] -= (float)(cfg->lr * (m1[k] / c1) / (sqrt(m2[k] / c2) + eps));
            }
        }
        if (fn) {
            float hid[INTENT_F], p[INTENT_C];
            for (int n = 0; n < N; n++) {
                intent_forward(h, Xs + (size_t)n * H, hid, p);
                int best = 0;
                for (int c = 1; c < INTENT_C; c++)
                    if (p[c] > p[best]) best = c;
                correct += best == label[n];
            }
            fn(ctx, ep, lsum / N, (double)correct / N);
        }
    }
    /* Fold the standardisation into the first layer:
     * W1 ((x - mu) / sd) + b1 = (W1 / sd) x + (b1 - W1 (mu / sd)). */
    for (int f = 0; f < INTENT_F; f++) {
        float *w = h->w1 + (size_t)f * H;
        double shift = 0;
        for (int i = 0; i < H; i++) {
            w[i] /= sd[i];
            shift += (double)w[i] * mu[i];
        }
        h->b1[f] -= (float)shift;
    }
    if (final_loss) *final_loss = intent_loss(h, X, label, N, wc, NULL);
done:
    free(g);
    free(m1);
    free(m2);
    free(Xs);
    free(mu);
    free(sd);
    free(order);
    free(bl);
    free(bx);
    return st;
}
