/* nc.c - the continuous cache (Grave et al. 2017, "Improving neural
 * language models with a continuous cache"): the text typed so far as a
 * memory of (output vector, next token) pairs.
 *
 * Every stable position p the model has read leaves its unit output vector
 * y_p and the token that followed, tok[p]. For a search node with output
 * vector y, the cache's distribution is
 *     pc(w) = sum over p with tok[p] = w of softmax_p(theta * cos(y, y_p))
 * and the node's next-token probability becomes
 *     p(w) = (1 - lambda) p_model(w) + lambda pc(w),
 * lambda the search's weight (w: ec.cache_weight, or ec.cjk_cache_weight
 * after a CJK character; suggest.c sets it per search). The softmax has one
 * more term, a null position of cosine ENGINE_NC_NULL_COS whose share q
 * goes back to the model: p(w) = (1 - lambda (1 - q)) p_model(w) + lambda
 * pc(w), pc summing to 1 - q. Without it a window of a few positions gave
 * them all its mass however little they resembled the node's context:
 * English typed, then "谢谢你的", got "Three" and "Think" (the "Th" that
 * followed the text's start). With it, a context like none of the window's
 * leaves the model alone, and one like a position of it (cosine 0.6: e^3
 * times the null) still takes the cache's weight. A name or phrase
 * that recurs in the document is then proposed where the context resembles
 * the one it followed before, even when the words around it differ (where
 * the n-gram memory of the typed text, blend.c, needs the same words).
 *
 * The window is the last m positions (ENGINE_NC_SIZE), in a ring keyed
 * by position: only positions below cur's count are read, and those were
 * fed from the same tokens, so a rewind needs no bookkeeping (but see
 * NC_SLACK). A node keeps its cache distribution (its ENGINE_NC_TOP most
 * likely tokens) while cur is unchanged. Cost and the settings' choice:
 * docs/RESULTS.md, "The continuous cache"; laya_bench nc_cache.
 *
 * The cache owns its ring and scratch (engine_nc, nc.h); it reads the
 * context (the stable tokens, cur) and writes the distributions the search
 * keeps at its nodes (engine_nc_dist). Memory: the ring of ENGINE_NC_SIZE +
 * NC_SLACK rows of H q8 codes with their scales and biases, and about V +
 * NC_BATCH (rows + H) floats of scratch: 0.3 MB for the shipped model. */
#include "engine/nc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kern/kern.h"
#include "kern/quant.h"
#include "util/privacy.h"
#include "util/topk.h"

/* The q8 group of a model of width H: 64, or 32 where 64 does not divide
 * H; 0 (no cache) where neither does. */
static int nc_group(int H) { return H % 64 == 0 ? 64 : H % 32 == 0 ? 32 : 0; }

/* The ring holds NC_SLACK slots beyond the window, so that a rewind of up
 * to NC_SLACK tokens finds every position of its window still there once
 * the text is fed again; a longer jump back leaves the window short of the
 * positions it overwrote until they scroll out. The vector kernels read it
 * in panel form (kern.h), the only form it is kept in, and a query
 * takes every slot in one product (the rows outside the window are
 * computed and ignored: cheaper than a product per run). */
enum { NC_SLACK = 64 };

/* Nodes scored in one pass: the kernels take four vectors a pass (kern.h). */
enum { NC_BATCH = 4 };

static int nc_cap(int m) { return m + NC_SLACK; }

/* 1 / |y| for an output vector y of H floats (0 maps to a huge finite). */
static double nc_inv_norm(const float *y, int H) {
    double nr = 0;
    for (int h = 0; h < H; h++) nr += (double)y[h] * y[h];
    return 1.0 / sqrt(nr + 1e-20);
}

static qmat nc_ring(const engine_nc *nc) {
    qmat w = {.type = QT_Q8, .rows = nc_cap(nc->m), .cols = nc->H, .group = nc_group(nc->H), .panel = nc->panel};
    return w;
}

void engine_nc_free(engine_nc *nc) {
    free(nc->panel);
    free(nc->rowq);
    free(nc->rowsb);
    free(nc->pos);
    free(nc->acc);
    free(nc->sim);
    free(nc->x);
    free(nc->touch);
    nc->panel = nc->rowq = NULL;
    nc->rowsb = nc->acc = nc->sim = nc->x = NULL;
    nc->pos = NULL;
    nc->touch = NULL;
    nc->m = 0;
}

laya_status engine_nc_init(engine_nc *nc, const model_cfg *c, int m) {
    engine_nc_free(nc);
    const int H = c->H, G = nc_group(H);
    nc->H = H;
    nc->V = c->V;
    if (m <= 0 || !G) return LAYA_OK;
    const int cap = nc_cap(m);
    /* The ring lives in the kernels' panel form only (a shape without one,
     * H > 4096, has no cache); all zero is an empty ring. */
    qmat v = {.type = QT_Q8, .rows = cap, .cols = H, .group = G};
    const size_t bytes = kern_panel_bytes(&v);
    if (!bytes) return LAYA_OK;
    void *mem = NULL;
    if (posix_memalign(&mem, 64, bytes)) return LAYA_ERR_NOMEM;
    memset(mem, 0, bytes);
    nc->panel = mem;
    nc->rowq = malloc((size_t)H);
    nc->rowsb = malloc(2 * (size_t)(H / G) * sizeof(float));
    nc->pos = malloc((size_t)cap * sizeof(int64_t));
    nc->acc = calloc((size_t)c->V, sizeof(float));
    nc->sim = malloc((size_t)NC_BATCH * (size_t)(cap > H ? cap : H) * sizeof(float));  /* also the
                                                                               record's unit vector */
    nc->x = malloc((size_t)NC_BATCH * (size_t)H * sizeof(float));
    nc->touch = malloc((size_t)m * sizeof(int32_t));
    if (!nc->rowq || !nc->rowsb || !nc->pos || !nc->acc || !nc->sim || !nc->x || !nc->touch) {
        engine_nc_free(nc);
        return LAYA_ERR_NOMEM;
    }
    for (int i = 0; i < cap; i++) nc->pos[i] = -1;
    nc->m = m;
    return LAYA_OK;
}

/* 1 if a byte of stable token t lies in a secret: after a prompt for one
 * on its line (util/privacy.h; the prompt's own last token counts too,
 * erring as that rule errs). A token that spans a line break is judged on
 * each line it touches. */
static int nc_token_secret(const engine_context *cx, int64_t t) {
    const char *ctx = (const char *)cx->ctx;
    const size_t a = cx->origin + (t > 0 ? cx->tok_end[t - 1] : 0), b = cx->origin + cx->tok_end[t];
    for (size_t i = a; i < b; i++)
        if ((ctx[i] == '\n' || ctx[i] == '\r') && i > a && privacy_secret_typed(ctx, i)) return 1;
    return privacy_secret_typed(ctx, b);
}

void engine_nc_record(engine_nc *nc, const engine_context *cx, int private_field) {
    if (!nc->m) return;
    const int H = nc->H, G = nc_group(H), NG = H / G;
    int64_t p = cx->cur.st.n;
    const int cap = nc_cap(nc->m);
    int slot = (int)(p % cap);
    /* The token just consumed is the target of position p - 1: nothing
     * typed in a private field or after a password prompt may be proposed
     * again, so such a position leaves the window (the rule the memory's
     * index keeps with privacy_redact, learn_index.c). */
    if (p >= 2 && (private_field || nc_token_secret(cx, p - 1)) && nc->pos[(p - 1) % cap] == p - 1)
        nc->pos[(p - 1) % cap] = -1;
    float *u = nc->sim;
    const float inv = (float)nc_inv_norm(cx->cur.y, H);
    for (int h = 0; h < H; h++) u[h] = cx->cur.y[h] * inv;
    /* A unit vector quantizes (its entries are finite and at most 1); the
     * row then goes into its panel (kern_panel.c holds the layout). */
    if (quant_quantize(u, 1, H, 8, G, nc->rowq, nc->rowsb, nc->rowsb + NG, NULL, 0) != LAYA_OK) {
        nc->pos[slot] = -1;
        return;
    }
    qmat w = nc_ring(nc);
    kern_panel_write_row(&w, slot, nc->rowq, nc->rowsb, nc->rowsb + NG, nc->panel);
    nc->pos[slot] = p;
}

int engine_nc_on(const engine_nc *nc) { return nc->m > 0 && nc->w > 0; }

/* A cache of a few positions puts all its mass on their few tokens, however
 * little their contexts resemble the node's: after "谢谢你的帮" typed key
 * by key the list was "助你的" / "助。" / "助你的你的". Its weight grows
 * with the positions in the window, n / (n + ENGINE_NC_RAMP): a quarter at
 * 11 tokens, half at 32, 94% at 512. Measured (docs/RESULTS.md, "The
 * continuous cache"): short messages +1.0 points of KSR@3 in English, +0.16
 * of CSR@3 in Chinese; long texts within 0.12 points either way. */
double engine_nc_trust(const engine_nc *nc, const engine_context *cx) {
    int64_t n = cx->cur.st.n - 1;   /* positions read but the first (BOS) */
    if (n > nc->m) n = nc->m;
    return n > 0 ? (double)n / ((double)n + ENGINE_NC_RAMP) : 0;
}

typedef struct {
    int32_t id;
    float mass;
} nc_entry;

static int mass_beats(const void *x, const void *y) { return ((const nc_entry *)x)->mass > ((const nc_entry *)y)->mass; }

/* d's cache distribution from its similarities sim (cap, raw dot
 * products with the ring's unit vectors) and its norm's scale, over the
 * window [lo, n): the len slots from slot first (wrapping at the ring's
 * end), each counted if it holds its position (written by engine_nc_record
 * since the last rewind past it). The window is walked as its (at most
 * two) runs of consecutive slots, so the loops index plainly. */
static void nc_dist(engine_nc *nc, const engine_context *cx, engine_nc_dist *d, float *sim, float scale,
                    int64_t lo, int64_t n) {
    const int cap = nc_cap(nc->m);
    const int first = (int)(lo % cap), len = (int)(n - lo);
    const int run0 = len < cap - first ? len : cap - first;   /* slots first .. first + run0 - 1 */
    const int a[2] = {first, 0}, b[2] = {first + run0, len - run0};
    const int64_t *pos = nc->pos;
    float mx = -INFINITY;
    for (int r = 0; r < 2; r++) {
        const int64_t at = lo + (r ? run0 : 0) - a[r];   /* the position slot i holds: at + i */
        for (int i = a[r]; i < b[r]; i++) {
            const float v = pos[i] == at + i ? sim[i] * scale : -INFINITY;
            sim[i] = v;
            mx = v > mx ? v : mx;
        }
    }
    if (mx == -INFINITY) return;
    /* the null position: a context of cosine ENGINE_NC_NULL_COS that
     * proposes nothing (its share goes back to the model) */
    const double enull = exp((double)ENGINE_NC_THETA * ENGINE_NC_NULL_COS - (double)mx);
    double z = enull;
    int nt = 0;
    const float cut = mx - 16;   /* terms below e^-16 of the largest (1e-7 each) are left out */
    for (int r = 0; r < 2; r++)
        for (int i = a[r]; i < b[r]; i++) {
            if (!(sim[i] >= cut)) continue;
            float e = expf(sim[i] - mx);
            z += e;
            int32_t t = cx->tok[pos[i]];
            if (nc->acc[t] == 0) nc->touch[nt++] = t;
            nc->acc[t] += e;
        }
    /* The ENGINE_NC_TOP tokens of most mass. */
    nc_entry best[ENGINE_NC_TOP];
    int nb = 0;
    for (int i = 0; i < nt; i++) {
        nc_entry e = {.id = nc->touch[i], .mass = nc->acc[nc->touch[i]]};
        topk_insert(best, sizeof *best, &nb, ENGINE_NC_TOP, &e, mass_beats);
    }
    for (int i = 0; i < nb; i++) {
        d->id[i] = best[i].id;
        d->p[i] = (float)(best[i].mass / z);
    }
    d->null = (float)(enull / z);
    for (int i = 0; i < nt; i++) nc->acc[nc->touch[i]] = 0;
    d->n = nb;
}

/* Scores the m nodes of distributions d and vectors y together: every
 * slot against their vectors in one pass over the ring. */
static void nc_score(engine_nc *nc, const engine_context *cx, engine_nc_dist *const *d, const float *const *y,
                     int m, int64_t lo, int64_t n) {
    const int H = nc->H, cap = nc_cap(nc->m);
    for (int j = 0; j < m; j++) memcpy(nc->x + (size_t)j * H, y[j], (size_t)H * sizeof(float));
    qmat w = nc_ring(nc);
    kern_get()->matmat(&w, nc->x, m, nc->sim);
    for (int j = 0; j < m; j++) {
        const float scale = (float)((double)ENGINE_NC_THETA * nc_inv_norm(y[j], H));
        nc_dist(nc, cx, d[j], nc->sim + (size_t)j * cap, scale, lo, n);
    }
}

void engine_nc_ensure_batch(engine_nc *nc, const engine_context *cx, engine_nc_dist *const *d,
                            const float *const *y, int n_nodes) {
    if (!engine_nc_on(nc)) return;
    const int64_t n = cx->cur.st.n, lo = n - nc->m > 1 ? n - nc->m : 1;
    engine_nc_dist *todo[NC_BATCH];
    const float *ty[NC_BATCH];
    int m = 0;
    for (int i = 0; i < n_nodes; i++) {
        engine_nc_dist *nd = d[i];
        if (nd->ver == cx->cur_ver + 1) continue;  /* fresh, or a repeat */
        nd->ver = cx->cur_ver + 1;
        nd->n = 0;
        if (lo > n - 1) continue;  /* nothing in the window yet */
        ty[m] = y[i];
        todo[m++] = nd;
        if (m == NC_BATCH) {
            nc_score(nc, cx, todo, ty, m, lo, n);
            m = 0;
        }
    }
    if (m) nc_score(nc, cx, todo, ty, m, lo, n);
}

/* The model's share of d's mixture: 1 - w (1 - the null's share). */
static double nc_keep(const engine_nc *nc, const engine_nc_dist *d) {
    return 1 - (double)nc->w * (1 - (double)d->null);
}

void engine_nc_mark(engine_nc *nc, const engine_nc_dist *d, int on) {
    nc->mixing = on && engine_nc_on(nc) && d->n;  /* an empty cache mixes nothing in */
    if (nc->mixing) {
        nc->keep = nc_keep(nc, d);
        nc->l1m = log(nc->keep);
    }
    for (int i = 0; i < d->n; i++) nc->acc[d->id[i]] = on ? d->p[i] : 0;
}

double engine_nc_mix(const engine_nc *nc, int32_t id, double lpm) {
    if (!nc->mixing) return lpm;
    const double pc = nc->acc[id];
    if (pc > 0) return log(nc->keep * exp(lpm) + (double)nc->w * pc);
    return nc->l1m + lpm;
}

double engine_nc_pend(const engine_nc *nc, const engine_nc_dist *d, double pend, const float *wend) {
    if (!engine_nc_on(nc) || !d->n) return pend;
    double pc = 0;
    for (int i = 0; i < d->n; i++) pc += (double)d->p[i] * wend[d->id[i]];
    return nc_keep(nc, d) * pend + (double)nc->w * pc;
}
