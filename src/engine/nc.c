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
 * lambda the search's weight (nc_w: ec.cache_weight, or ec.cjk_cache_weight
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
 * The window is the last nc_m positions (ENGINE_NC_SIZE), in a ring keyed
 * by position: only positions below cur's count are read, and those were
 * fed from the same tokens, so a rewind needs no bookkeeping (but see
 * NC_SLACK). A node keeps its cache distribution (its ENGINE_NC_TOP most
 * likely tokens) while cur is unchanged. Cost and the settings' choice:
 * docs/RESULTS.md, "The continuous cache"; laya_bench nc_cache. */
#include "engine/session.h"

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

static qmat nc_ring(const laya_session *s) {
    const int H = s->cfg.H;
    qmat w = {.type = QT_Q8, .rows = nc_cap(s->nc_m), .cols = H, .group = nc_group(H), .panel = s->nc_panel};
    return w;
}

laya_status engine_nc_init(laya_session *s, int m) {
    free(s->nc_panel);
    free(s->nc_rowq);
    free(s->nc_rowsb);
    free(s->nc_pos);
    free(s->nc_acc);
    free(s->nc_sim);
    free(s->nc_x);
    free(s->nc_touch);
    s->nc_panel = s->nc_rowq = NULL;
    s->nc_rowsb = s->nc_acc = s->nc_sim = s->nc_x = NULL;
    s->nc_pos = NULL;
    s->nc_touch = NULL;
    s->nc_m = 0;
    const int H = s->cfg.H, G = nc_group(H);
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
    s->nc_panel = mem;
    s->nc_rowq = malloc((size_t)H);
    s->nc_rowsb = malloc(2 * (size_t)(H / G) * sizeof(float));
    s->nc_pos = malloc((size_t)cap * sizeof(int64_t));
    s->nc_acc = calloc((size_t)s->cfg.V, sizeof(float));
    s->nc_sim = malloc((size_t)NC_BATCH * (size_t)(cap > H ? cap : H) * sizeof(float));  /* also the
                                                                               record's unit vector */
    s->nc_x = malloc((size_t)NC_BATCH * (size_t)H * sizeof(float));
    s->nc_touch = malloc((size_t)m * sizeof(int32_t));
    if (!s->nc_rowq || !s->nc_rowsb || !s->nc_pos || !s->nc_acc || !s->nc_sim || !s->nc_x || !s->nc_touch) {
        engine_nc_init(s, 0);
        return LAYA_ERR_NOMEM;
    }
    for (int i = 0; i < cap; i++) s->nc_pos[i] = -1;
    s->nc_m = m;
    return LAYA_OK;
}

/* 1 if a byte of stable token t lies in a secret: after a prompt for one
 * on its line (util/privacy.h; the prompt's own last token counts too,
 * erring as that rule errs). A token that spans a line break is judged on
 * each line it touches. */
static int nc_token_secret(const laya_session *s, int64_t t) {
    const char *ctx = (const char *)s->cx.ctx;
    const size_t a = s->cx.origin + (t > 0 ? s->cx.tok_end[t - 1] : 0), b = s->cx.origin + s->cx.tok_end[t];
    for (size_t i = a; i < b; i++)
        if ((ctx[i] == '\n' || ctx[i] == '\r') && i > a && privacy_secret_typed(ctx, i)) return 1;
    return privacy_secret_typed(ctx, b);
}

void engine_nc_record(laya_session *s) {
    if (!s->nc_m) return;
    const int H = s->cfg.H, G = nc_group(H), NG = H / G;
    int64_t p = s->cx.cur.st.n;
    const int cap = nc_cap(s->nc_m);
    int slot = (int)(p % cap);
    /* The token just consumed is the target of position p - 1: nothing
     * typed in a private field or after a password prompt may be proposed
     * again, so such a position leaves the window (the rule the memory's
     * index keeps with privacy_redact, learn_index.c). */
    if (p >= 2 && (s->private_field || nc_token_secret(s, p - 1)) && s->nc_pos[(p - 1) % cap] == p - 1)
        s->nc_pos[(p - 1) % cap] = -1;
    float *u = s->nc_sim;
    const float inv = (float)nc_inv_norm(s->cx.cur.y, H);
    for (int h = 0; h < H; h++) u[h] = s->cx.cur.y[h] * inv;
    /* A unit vector quantizes (its entries are finite and at most 1); the
     * row then goes into its panel (kern_panel.c holds the layout). */
    if (quant_quantize(u, 1, H, 8, G, s->nc_rowq, s->nc_rowsb, s->nc_rowsb + NG, NULL, 0) != LAYA_OK) {
        s->nc_pos[slot] = -1;
        return;
    }
    qmat w = nc_ring(s);
    kern_panel_write_row(&w, slot, s->nc_rowq, s->nc_rowsb, s->nc_rowsb + NG, s->nc_panel);
    s->nc_pos[slot] = p;
}

int engine_nc_on(const laya_session *s) {
    return s->nc_m > 0 && s->nc_w > 0 && s->learn_on && !s->private_field;
}

/* A cache of a few positions puts all its mass on their few tokens, however
 * little their contexts resemble the node's: after "谢谢你的帮" typed key
 * by key the list was "助你的" / "助。" / "助你的你的". Its weight grows
 * with the positions in the window, n / (n + ENGINE_NC_RAMP): a quarter at
 * 11 tokens, half at 32, 94% at 512. Measured (docs/RESULTS.md, "The
 * continuous cache"): short messages +1.0 points of KSR@3 in English, +0.16
 * of CSR@3 in Chinese; long texts within 0.12 points either way. */
double engine_nc_trust(const laya_session *s) {
    int64_t n = s->cx.cur.st.n - 1;   /* positions read but the first (BOS) */
    if (n > s->nc_m) n = s->nc_m;
    return n > 0 ? (double)n / ((double)n + ENGINE_NC_RAMP) : 0;
}

typedef struct {
    int32_t id;
    float mass;
} nc_entry;

static int mass_beats(const void *x, const void *y) { return ((const nc_entry *)x)->mass > ((const nc_entry *)y)->mass; }

/* nd's cache distribution from its similarities sim (cap, raw dot
 * products with the ring's unit vectors) and its norm's scale, over the
 * window [lo, n): the len slots from slot first (wrapping at the ring's
 * end), each counted if it holds its position (written by engine_nc_record
 * since the last rewind past it). The window is walked as its (at most
 * two) runs of consecutive slots, so the loops index plainly. */
static void nc_dist(laya_session *s, node *nd, float *sim, float scale, int64_t lo, int64_t n) {
    const int cap = nc_cap(s->nc_m);
    const int first = (int)(lo % cap), len = (int)(n - lo);
    const int run0 = len < cap - first ? len : cap - first;   /* slots first .. first + run0 - 1 */
    const int a[2] = {first, 0}, b[2] = {first + run0, len - run0};
    const int64_t *pos = s->nc_pos;
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
            int32_t t = s->cx.tok[pos[i]];
            if (s->nc_acc[t] == 0) s->nc_touch[nt++] = t;
            s->nc_acc[t] += e;
        }
    /* The ENGINE_NC_TOP tokens of most mass. */
    nc_entry best[ENGINE_NC_TOP];
    int nb = 0;
    for (int i = 0; i < nt; i++) {
        nc_entry e = {.id = s->nc_touch[i], .mass = s->nc_acc[s->nc_touch[i]]};
        topk_insert(best, sizeof *best, &nb, ENGINE_NC_TOP, &e, mass_beats);
    }
    for (int i = 0; i < nb; i++) {
        nd->nc_id[i] = best[i].id;
        nd->nc_p[i] = (float)(best[i].mass / z);
    }
    nd->nc_null = (float)(enull / z);
    for (int i = 0; i < nt; i++) s->nc_acc[s->nc_touch[i]] = 0;
    nd->nc_n = nb;
}

/* Scores todo[0..m) together: every slot against their vectors in one
 * pass over the ring. */
static void nc_score(laya_session *s, node *const *todo, int m, int64_t lo, int64_t n) {
    const int H = s->cfg.H, cap = nc_cap(s->nc_m);
    for (int j = 0; j < m; j++) memcpy(s->nc_x + (size_t)j * H, todo[j]->c.y, (size_t)H * sizeof(float));
    qmat w = nc_ring(s);
    kern_get()->matmat(&w, s->nc_x, m, s->nc_sim);
    for (int j = 0; j < m; j++) {
        const float scale = (float)((double)ENGINE_NC_THETA * nc_inv_norm(todo[j]->c.y, H));
        nc_dist(s, todo[j], s->nc_sim + (size_t)j * cap, scale, lo, n);
    }
}

void engine_nc_ensure_batch(laya_session *s, node *const *nds, int n_nodes) {
    if (!engine_nc_on(s)) return;
    const int64_t n = s->cx.cur.st.n, lo = n - s->nc_m > 1 ? n - s->nc_m : 1;
    node *todo[NC_BATCH];
    int m = 0;
    for (int i = 0; i < n_nodes; i++) {
        node *nd = nds[i];
        if (nd->nc_ver == s->cx.cur_ver + 1) continue;  /* fresh, or a repeat */
        nd->nc_ver = s->cx.cur_ver + 1;
        nd->nc_n = 0;
        if (lo > n - 1) continue;  /* nothing in the window yet */
        todo[m++] = nd;
        if (m == NC_BATCH) {
            nc_score(s, todo, m, lo, n);
            m = 0;
        }
    }
    if (m) nc_score(s, todo, m, lo, n);
}

/* The model's share of nd's mixture: 1 - nc_w (1 - the null's share). */
static double nc_keep(const laya_session *s, const node *nd) {
    return 1 - (double)s->nc_w * (1 - (double)nd->nc_null);
}

void engine_nc_mark(laya_session *s, const node *nd, int on) {
    s->nc_mixing = on && engine_nc_on(s) && nd->nc_n;  /* an empty cache mixes nothing in */
    if (s->nc_mixing) {
        s->nc_keep = nc_keep(s, nd);
        s->nc_l1m = log(s->nc_keep);
    }
    for (int i = 0; i < nd->nc_n; i++) s->nc_acc[nd->nc_id[i]] = on ? nd->nc_p[i] : 0;
}

double engine_nc_mix(const laya_session *s, int32_t id, double lpm) {
    if (!s->nc_mixing) return lpm;
    const double pc = s->nc_acc[id];
    if (pc > 0) return log(s->nc_keep * exp(lpm) + (double)s->nc_w * pc);
    return s->nc_l1m + lpm;
}

double engine_nc_pend(const laya_session *s, const node *nd) {
    if (!engine_nc_on(s) || !nd->nc_n) return nd->pend;
    double pc = 0;
    for (int i = 0; i < nd->nc_n; i++) pc += (double)nd->nc_p[i] * s->wend[nd->nc_id[i]];
    return nc_keep(s, nd) * nd->pend + (double)s->nc_w * pc;
}
