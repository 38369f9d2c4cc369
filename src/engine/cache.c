/* cache.c - the token cache (C8): the session's own recent tokens as an
 * n-gram model of the document being typed, mixed into the model's
 * next-token distribution at every node of the suggestion search
 * (suggest.c), so a name or a term of the document becomes likely wherever
 * the beam reaches it, not only as a whole candidate of the memory
 * (blend.c).
 *
 * Contents: the last ENGINE_CACHE_TOKENS stable tokens of the session (the
 * model's own tokenization of the text, so the cache speaks the search's
 * tokens) in a ring, and for each order n = 1..ENGINE_CACHE_ORDER a chained
 * hash table from the n tokens before a position to that position (head:
 * the latest; next: the one before). Tokens typed after a password prompt
 * up to the end of their line (util/privacy.h) are held as a gap, which no
 * context matches and no lookup proposes. BOS is a gap too.
 *
 * Lookup (engine_cache_lookup): the beam's last tokens; at each order from
 * the highest down, the newest ENGINE_CACHE_MATCH earlier positions whose n
 * tokens before them are the same (each verified token by token, so a hash
 * collision proposes nothing) vote for the token that followed. Orders are
 * interpolated as in learn_index (Witten-Bell: order n keeps N/(N + T) of
 * the mass left, N its matches, T the distinct tokens they propose), and
 * the weight of the cache against the model is the largest over the orders
 * of N / (N + CACHE_TRUST[n] T): many matches that agree on one token
 * (the rest of a name after its first piece) give a weight near 1, a
 * short context followed by many different tokens (" the") next to 0.
 *
 * Sync: the stable tokens only grow between rewinds (engine.c: any change
 * below the last stable token rewinds the model), so a sync appends the new
 * ones, and a rewind, a reset or a new origin rebuilds from the tokens
 * kept (at most ENGINE_CACHE_TOKENS, once per edit). Work per lookup:
 * ENGINE_CACHE_ORDER chains of at most ENGINE_CACHE_MATCH verified entries;
 * no allocation after the first sync. */
#include "engine/session.h"

#include <stdlib.h>
#include <string.h>

#include "util/privacy.h"

enum {
    CACHE_W = ENGINE_CACHE_TOKENS,      /* ring size, a power of two */
    CACHE_NB = 2 * ENGINE_CACHE_TOKENS, /* buckets per order */
    CACHE_GAP = -1                      /* a token no context matches (secret, BOS) */
};
_Static_assert((ENGINE_CACHE_TOKENS & (ENGINE_CACHE_TOKENS - 1)) == 0, "the ring is a power of two");

struct engine_cache {
    int32_t tok[CACHE_W];                        /* token at position p in tok[p % W], or CACHE_GAP */
    int32_t next[ENGINE_CACHE_ORDER][CACHE_W];   /* the previous position with the same key, -1 */
    int32_t head[ENGINE_CACHE_ORDER][CACHE_NB];  /* the latest position per bucket, -1 */
    int32_t upto;                                /* s->tok[1..upto) are in (positions = token indices) */
    int32_t lo;                                  /* the oldest position still in the ring */
    uint64_t rewinds;                            /* s->rewinds at the last sync */
    size_t origin;                               /* s->origin at the last sync */
    int secret, colon;                           /* the line of the last token: in a secret, holds a colon */
};

/* The weight of order n's evidence: N / (N + CACHE_TRUST[n] T). Measured on
 * held-out text (docs/RESULTS.md, "Learning"): one token of context is weak
 * evidence unless it is rare, and three tokens that recur are seldom
 * followed by anything else. */
static const double CACHE_TRUST[ENGINE_CACHE_ORDER + 1] = {0, 64, 16, 4};

static uint32_t key_of(const int32_t *t, int n) {
    uint64_t k = 0x9e3779b97f4a7c15ull * (uint64_t)n;
    for (int j = 0; j < n; j++) k = (k ^ (uint32_t)t[j]) * 0xff51afd7ed558ccdull;
    return (uint32_t)((k ^ (k >> 32)) & (CACHE_NB - 1));
}

static int32_t at(const engine_cache *c, int32_t p) { return c->tok[p & (CACHE_W - 1)]; }

static void clear(engine_cache *c, int32_t from) {
    memset(c->head, 0xFF, sizeof c->head);
    c->upto = c->lo = from;
    c->secret = c->colon = 0;
}

/* 1 if token bytes b[0..n) hold a colon (ASCII or full-width). */
static int has_colon(const uint8_t *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (b[i] == ':' || (b[i] == 0xEF && i + 2 < n && b[i + 1] == 0xBC && b[i + 2] == 0x9A)) return 1;
    return 0;
}

/* Appends s->tok[p] at position p (== c->upto). Whether it is a secret:
 * once a line holds a prompt for one, the rest of it is (privacy.h), so the
 * full check runs only on lines with a colon until it answers yes. */
static void push(engine_cache *c, const laya_session *s, int32_t p) {
    size_t a = s->origin + s->tok_end[p - 1], e = s->origin + s->tok_end[p];
    const uint8_t *b = s->ctx + a;
    int nl = memchr(b, '\n', e - a) || memchr(b, '\r', e - a);
    c->colon |= has_colon(b, e - a);
    if (!c->secret && c->colon) c->secret = privacy_secret_typed((const char *)s->ctx, e);
    int32_t t = c->secret ? CACHE_GAP : s->tok[p];
    if (nl) c->secret = c->colon = 0;
    if (p - c->lo >= CACHE_W) c->lo = p - CACHE_W + 1;
    c->tok[p & (CACHE_W - 1)] = t;
    for (int n = 1; n <= ENGINE_CACHE_ORDER; n++) {
        c->next[n - 1][p & (CACHE_W - 1)] = -1;
        if (t == CACHE_GAP || p - n < c->lo) continue;
        int32_t ctx[ENGINE_CACHE_ORDER];
        int gap = 0;
        for (int j = 0; j < n; j++) gap |= (ctx[j] = at(c, p - n + j)) == CACHE_GAP;
        if (gap) continue;
        uint32_t k = key_of(ctx, n);
        c->next[n - 1][p & (CACHE_W - 1)] = c->head[n - 1][k];
        c->head[n - 1][k] = p;
    }
    c->upto = p + 1;
}

int engine_cache_sync(laya_session *s) {
    if (!s->tcache && !(s->tcache = malloc(sizeof *s->tcache))) return -1;
    engine_cache *c = s->tcache;
    int32_t n = (int32_t)s->n_tok;
    if (s->tcache_fresh || c->rewinds != s->rewinds || c->origin != s->origin || c->upto > n) {
        int32_t from = n - CACHE_W > 1 ? n - CACHE_W : 1;
        clear(c, from);
        /* the line state at the first token kept */
        c->secret = from > 1 && privacy_secret_typed((const char *)s->ctx, s->origin + s->tok_end[from - 1]);
        c->rewinds = s->rewinds;
        c->origin = s->origin;
        s->tcache_fresh = 0;
    }
    for (int32_t p = c->upto; p < n; p++) push(c, s, p);
    return 0;
}

int engine_cache_lookup(const laya_session *s, const int32_t *hist, engine_cache_result *r) {
    const engine_cache *c = s->tcache;
    r->n = 0;
    r->mu = 0;
    if (!c || c->upto <= c->lo) return 0;
    double rest = 1;
    for (int n = ENGINE_CACHE_ORDER; n >= 1; n--) {
        const int32_t *ctx = hist + ENGINE_CACHE_ORDER - n;
        int gap = 0;
        for (int j = 0; j < n; j++) gap |= ctx[j] < 0;
        if (gap) continue;
        int32_t found = 0, cnt[ENGINE_CACHE_NEXT], tk[ENGINE_CACHE_NEXT], nt = 0;
        for (int32_t p = c->head[n - 1][key_of(ctx, n)]; p >= c->lo + n && found < ENGINE_CACHE_MATCH;
             p = c->next[n - 1][p & (CACHE_W - 1)]) {
            int same = 1;
            for (int j = 0; j < n && same; j++) same = at(c, p - n + j) == ctx[j];
            if (!same) continue;
            found++;
            int32_t t = at(c, p);
            int i = 0;
            while (i < nt && tk[i] != t) i++;
            if (i == nt) {
                if (nt == ENGINE_CACHE_NEXT) continue;
                tk[nt] = t, cnt[nt++] = 0;
            }
            cnt[i]++;
        }
        if (!found) continue;
        double w = (double)found / (found + CACHE_TRUST[n] * nt);
        if (w > r->mu) r->mu = w;
        double lam = (double)found / (found + nt);
        for (int i = 0; i < nt; i++) {
            int j = 0;
            while (j < r->n && r->tok[j] != tk[i]) j++;
            if (j == r->n) {
                if (r->n == ENGINE_CACHE_NEXT) continue;
                r->tok[r->n] = tk[i], r->p[r->n++] = 0;
            }
            r->p[j] += rest * lam * cnt[i] / found;
        }
        rest *= 1 - lam;
    }
    /* what the orders left unassigned is spread over the proposed tokens
     * in proportion, so the cache's distribution sums to 1 */
    double tot = 0;
    for (int i = 0; i < r->n; i++) tot += r->p[i];
    for (int i = 0; i < r->n; i++) r->p[i] /= tot;
    if (r->n == 0) r->mu = 0;
    return r->n;
}

void engine_cache_free(laya_session *s) {
    free(s->tcache);
    s->tcache = NULL;
}
