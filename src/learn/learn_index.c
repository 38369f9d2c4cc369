/* learn_index.c - the history of committed text and the queries over it
 * (learn_index.h).
 *
 * Layout: the history bytes h; the units cut from it (offset, length, a
 * 64-bit hash of their bytes); for each order n a chained hash table from
 * the hash of n consecutive units to the unit that followed them (head:
 * the latest; next: the one before); the distinct words sorted by their
 * bytes, with counts. A query verifies every chained entry against the
 * context's unit hashes, so a bucket collision never proposes anything; two
 * different units with the same 64-bit hash are the only false match.
 * Dropping old history rebuilds everything from what is kept (linear in the
 * history, a quarter of the cap at a time, so amortised O(1) per byte). */
#include "learn/learn_index.h"

#include "util/hash.h"
#include "util/privacy.h"
#include "util/topk.h"
#include "util/utf8.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { CHAINS = 2 * LEARN_ORDER };

typedef struct {
    uint32_t off, len;
    uint64_t h;
    uint8_t word;       /* a word unit (letters...), not a symbol or a break */
} unit;

typedef struct {
    uint32_t off, len;  /* in the word arena */
    int32_t count;
} word;

struct learn_index {
    uint8_t *h;                   /* (cap) the history, oldest first */
    size_t n, cap;
    unit *u;                      /* (ucap) */
    int32_t nu, ucap;
    /* Chains per order n (index n - 1): by the n units before a unit; and
     * (index LEARN_ORDER + n - 1) by those and the unit's first byte, which
     * a query with a partial word walks, so the matches it must skip (the
     * context followed by a word that does not start with the partial) are
     * only those that share the first byte. */
    int32_t *next[CHAINS];        /* (ucap) the previous unit with the same key, -1 */
    int32_t *head[CHAINS];        /* (nb) the latest unit per bucket, -1 */
    size_t nb;                    /* buckets, a power of two */
    word *w;                      /* (wcap) sorted by bytes */
    int32_t nw, wcap;
    uint8_t *wa;                  /* (wacap) word bytes */
    size_t wan, wacap;
};

/* ---- units ---------------------------------------------------------------- */

/* Not utf8_blank, on purpose: here a line feed is no blank but a unit of
 * its own (unit_at), which a context never reaches across, and every other
 * control byte is passed over as a blank is. */
static int blank(uint8_t b) { return b == ' ' || b == '\t' || b == '\r' || (b < 0x20 && b != '\n'); }

/* A byte that continues or starts a word: ASCII letters, digits, ' - _, and
 * any byte of a character below U+2000 (lead bytes C2..E1). */
static int word_byte(uint8_t b) {
    if (b < 0x80) return (b >= '0' && b <= '9') || (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') ||
                         b == '\'' || b == '-' || b == '_';
    return (b >= 0x80 && b <= 0xBF) || (b >= 0xC2 && b <= 0xE1);
}

static size_t char_len(const uint8_t *s, size_t n) {
    uint8_t b = s[0];
    size_t l = b < 0xC0 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    if (l > n) return 1;
    for (size_t i = 1; i < l; i++)
        if ((s[i] & 0xC0) != 0x80) return 1;
    return l;
}

/* The unit starting at s[0] (not a blank): its length, and whether it is a
 * word. */
static size_t unit_at(const uint8_t *s, size_t n, int *is_word) {
    *is_word = 0;
    if (s[0] == '\n') return 1;
    if (s[0] < 0x80 ? word_byte(s[0]) : (s[0] >= 0xC2 && s[0] <= 0xE1)) {
        size_t i = 0;
        while (i < n && word_byte(s[i])) i += s[i] < 0x80 ? 1 : char_len(s + i, n - i);
        *is_word = 1;
        return i > n ? n : i;
    }
    return s[0] < 0x80 ? 1 : char_len(s, n);
}

static uint64_t hash_bytes(const uint8_t *s, size_t n) {
    uint64_t h = hash_fnv1a64(HASH_FNV64_BASIS, s, n);
    return h ^ (h >> 29);
}

/* The key of the n unit hashes hs[0..n) (oldest first) at order n. */
static uint64_t key_of(const uint64_t *hs, int n) {
    uint64_t k = 0x9e3779b97f4a7c15ull * (uint64_t)n;
    for (int j = 0; j < n; j++) k = (k ^ hs[j]) * 0xff51afd7ed558ccdull;
    return k ^ (k >> 31);
}

/* The key of chain LEARN_ORDER + n - 1: the context's key k and the first
 * byte b of the unit that follows it. */
static uint64_t lead_key(uint64_t k, uint8_t b) {
    k ^= (uint64_t)(b + 1) * 0xc2b2ae3d27d4eb4full;
    return k ^ (k >> 29);
}

/* ---- words ---------------------------------------------------------------- */

static int word_cmp(const learn_index *ix, const word *a, const uint8_t *s, size_t n) {
    size_t m = a->len < n ? a->len : n;
    int c = memcmp(ix->wa + a->off, s, m);
    return c ? c : (a->len > n) - (a->len < n);
}

/* The first word >= s[0..n) in byte order. */
static int32_t word_lower(const learn_index *ix, const uint8_t *s, size_t n) {
    int32_t lo = 0, hi = ix->nw;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (word_cmp(ix, &ix->w[mid], s, n) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static int word_add(learn_index *ix, const uint8_t *s, size_t n) {
    int32_t i = word_lower(ix, s, n);
    if (i < ix->nw && !word_cmp(ix, &ix->w[i], s, n)) {
        ix->w[i].count++;
        return 0;
    }
    if (ix->nw == ix->wcap) {
        int32_t cap = ix->wcap ? 2 * ix->wcap : 1024;
        word *w = realloc(ix->w, (size_t)cap * sizeof *w);
        if (!w) return -1;
        ix->w = w, ix->wcap = cap;
    }
    if (ix->wan + n > ix->wacap) {
        size_t cap = ix->wacap ? 2 * ix->wacap : 16384;
        while (cap < ix->wan + n) cap *= 2;
        uint8_t *a = realloc(ix->wa, cap);
        if (!a) return -1;
        ix->wa = a, ix->wacap = cap;
    }
    memcpy(ix->wa + ix->wan, s, n);
    memmove(ix->w + i + 1, ix->w + i, (size_t)(ix->nw - i) * sizeof *ix->w);
    ix->w[i] = (word){.off = (uint32_t)ix->wan, .len = (uint32_t)n, .count = 1};
    ix->wan += n;
    ix->nw++;
    return 0;
}

int learn_index_word_count(const learn_index *ix, const uint8_t *s, size_t n) {
    int32_t i = word_lower(ix, s, n);
    return i < ix->nw && !word_cmp(ix, &ix->w[i], s, n) ? ix->w[i].count : 0;
}

/* ---- building ------------------------------------------------------------- */

static void chain(learn_index *ix, int32_t i) {
    for (int n = 1; n <= LEARN_ORDER; n++) {
        if (i < n) {
            ix->next[n - 1][i] = ix->next[LEARN_ORDER + n - 1][i] = -1;
            continue;
        }
        uint64_t hs[LEARN_ORDER];
        for (int j = 0; j < n; j++) hs[j] = ix->u[i - n + j].h;
        uint64_t k = key_of(hs, n);
        size_t b = k & (ix->nb - 1), bl = lead_key(k, ix->h[ix->u[i].off]) & (ix->nb - 1);
        ix->next[n - 1][i] = ix->head[n - 1][b];
        ix->head[n - 1][b] = i;
        ix->next[LEARN_ORDER + n - 1][i] = ix->head[LEARN_ORDER + n - 1][bl];
        ix->head[LEARN_ORDER + n - 1][bl] = i;
    }
}

static int grow_units(learn_index *ix) {
    int32_t cap = ix->ucap ? 2 * ix->ucap : 4096;
    unit *u = realloc(ix->u, (size_t)cap * sizeof *u);
    if (!u) return -1;
    ix->u = u;
    for (int n = 0; n < CHAINS; n++) {
        int32_t *nx = realloc(ix->next[n], (size_t)cap * sizeof *nx);
        if (!nx) return -1;
        ix->next[n] = nx;
    }
    ix->ucap = cap;
    return 0;
}

/* Sizes the buckets for at least 2 * want units and rechains every unit. */
static int rehash(learn_index *ix, size_t want) {
    size_t nb = 4096;
    while (nb < 2 * want) nb *= 2;
    for (int n = 0; n < CHAINS; n++) {
        int32_t *hd = realloc(ix->head[n], nb * sizeof *hd);
        if (!hd) return -1;
        ix->head[n] = hd;
        memset(hd, 0xFF, nb * sizeof *hd);
    }
    ix->nb = nb;
    for (int32_t i = 0; i < ix->nu; i++) chain(ix, i);
    return 0;
}

/* Cuts h[from..n) into units and indexes them. -1: out of memory (the
 * units indexed so far stay; the caller rebuilds). */
static int scan(learn_index *ix, size_t from) {
    for (size_t i = from; i < ix->n;) {
        if (blank(ix->h[i])) {
            i++;
            continue;
        }
        int is_word;
        size_t l = unit_at(ix->h + i, ix->n - i, &is_word);
        if (ix->nu == ix->ucap && grow_units(ix)) return -1;
        if ((size_t)ix->nu + 1 > ix->nb / 2 && rehash(ix, (size_t)ix->nu + 1)) return -1;
        ix->u[ix->nu] = (unit){.off = (uint32_t)i, .len = (uint32_t)l, .h = hash_bytes(ix->h + i, l),
                               .word = (uint8_t)is_word};
        chain(ix, ix->nu++);
        if (is_word && word_add(ix, ix->h + i, l)) return -1;
        i += l;
    }
    return 0;
}

static int rebuild(learn_index *ix) {
    ix->nu = 0;
    ix->nw = 0;
    ix->wan = 0;
    if (ix->nb)
        for (int n = 0; n < CHAINS; n++) memset(ix->head[n], 0xFF, ix->nb * sizeof(int32_t));
    return scan(ix, 0);
}

laya_status learn_index_new(size_t cap, learn_index **out) {
    if (!out || cap < 4096 || cap > UINT32_MAX) return LAYA_ERR_ARG;
    learn_index *ix = calloc(1, sizeof *ix);
    if (!ix || !(ix->h = malloc(cap)) || rehash(ix, 0)) {
        learn_index_free(ix);
        return LAYA_ERR_NOMEM;
    }
    ix->cap = cap;
    *out = ix;
    return LAYA_OK;
}

void learn_index_free(learn_index *ix) {
    if (!ix) return;
    free(ix->h);
    free(ix->u);
    for (int n = 0; n < CHAINS; n++) free(ix->next[n]), free(ix->head[n]);
    free(ix->w);
    free(ix->wa);
    free(ix);
}

void learn_index_clear(learn_index *ix) {
    ix->n = 0;
    rebuild(ix);
}

size_t learn_index_bytes(const learn_index *ix) { return ix->n; }

/* Where the partial word at the end of ctx[0..len) starts. */
static size_t partial_start(const uint8_t *ctx, size_t len) {
    size_t p = len;
    while (p > 0) {
        size_t q = p - 1;
        while (q > 0 && (ctx[q] & 0xC0) == 0x80 && p - q < 4) q--;
        if (!word_byte(ctx[q]) || (ctx[q] >= 0x80 && char_len(ctx + q, len - q) != p - q)) break;
        p = q;
    }
    return p;
}

/* Appends text (joined by a newline when sep and the history does not end
 * with one), dropping old history as needed. */
static laya_status append(learn_index *ix, const uint8_t *text, size_t len, int sep) {
    if (!ix || (!text && len)) return LAYA_ERR_ARG;
    if (!len) return LAYA_OK;
    if (len > ix->cap - 1) {
        text += len - (ix->cap - 1);
        len = ix->cap - 1;
    }
    size_t need = len + 1, dropped = 0;
    if (ix->n + need > ix->cap) {
        /* Drop at least a quarter of the cap, up to a line start (or,
         * without one, a blank). */
        size_t drop = ix->n + need - ix->cap;
        if (drop < ix->cap / 4) drop = ix->cap / 4;
        if (drop > ix->n) drop = ix->n;
        const uint8_t *nl = drop < ix->n ? memchr(ix->h + drop, '\n', ix->n - drop) : NULL;
        if (nl) drop = (size_t)(nl - ix->h) + 1;
        else
            while (drop < ix->n && !blank(ix->h[drop - 1])) drop++;
        memmove(ix->h, ix->h + drop, ix->n - drop);
        ix->n -= drop;
        dropped = 1;
    }
    size_t from = ix->n;
    if (sep && ix->n && ix->h[ix->n - 1] != '\n') ix->h[ix->n++] = '\n';
    memcpy(ix->h + ix->n, text, len);
    ix->n += len;
    /* a secret typed after a password prompt is never kept (util/privacy.h) */
    ix->n = privacy_redact((char *)ix->h, ix->n, from);
    if ((dropped ? rebuild(ix) : scan(ix, from)) == 0) return LAYA_OK;
    /* Out of memory: back to the history before this text. */
    ix->n = from;
    rebuild(ix);
    return LAYA_ERR_NOMEM;
}

laya_status learn_index_add(learn_index *ix, const uint8_t *text, size_t len) {
    return append(ix, text, len, 1);
}

laya_status learn_index_append(learn_index *ix, const uint8_t *text, size_t len) {
    return append(ix, text, len, 0);
}

size_t learn_index_complete(const uint8_t *ctx, size_t len) {
    size_t p = partial_start(ctx, len);
    /* a character still missing bytes is no unit yet */
    size_t q = p;
    while (q > 0 && (ctx[q - 1] & 0xC0) == 0x80 && p - q < 3) q--;
    if (q > 0 && ctx[q - 1] >= 0xC0 && char_len(ctx + q - 1, len - (q - 1)) != p - (q - 1)) p = q - 1;
    return p;
}

size_t learn_index_context_start(const uint8_t *ctx, size_t len, int units) {
    size_t p = learn_index_complete(ctx, len);
    for (int u = 0; u < units && p > 0; u++) {
        size_t q = p;
        while (q > 0 && blank(ctx[q - 1])) q--;
        if (q == 0 || ctx[q - 1] == '\n') break;
        /* one unit back: a word (characters that start words), else one
         * character */
        size_t c = utf8_prev(ctx, q);
        int in_word = ctx[c] < 0x80 ? word_byte(ctx[c]) : ctx[c] >= 0xC2 && ctx[c] <= 0xE1;
        while (in_word && c > 0) {
            size_t b = utf8_prev(ctx, c);
            if (!(ctx[b] < 0x80 ? word_byte(ctx[b]) : ctx[b] >= 0xC2 && ctx[b] <= 0xE1)) break;
            c = b;
        }
        p = c;
    }
    return p;
}

/* ---- queries -------------------------------------------------------------- */

/* Trust and reach per order (0: words only; 1..LEARN_ORDER: units of
 * context matched), measured on held-out text (docs/RESULTS.md, "Learning"):
 *  - TRUST[n]: the confidence is N / (N + kappa * TRUST[n]). One match of a
 *    one-word context is weak evidence in ordinary prose (what followed
 *    "the" once rarely follows it again): trusting it like a 4-unit match
 *    cost 3 points of first-pass KSR, while four units of context that
 *    match are nearly always followed by the same text again. A word that
 *    starts with the partial word (order 0) is trusted more than a
 *    one-word context: names and terms of the document are what it finds.
 *  - REACH[n]: a continuation beyond its first word keeps this factor per
 *    further unit, raised to 1/c when c matches agree on it: the rest of a
 *    line seen once after a short context is a guess, one typed five
 *    times after the same words is not. */
static const double TRUST[LEARN_ORDER + 1] = {8, 64, 16, 4, 1};
static const double REACH[LEARN_ORDER + 1] = {0.3, 0.3, 0.5, 0.7, 0.85};


/* The hashes of the last (up to LEARN_ORDER) units of ctx[0..end), oldest
 * first, in hs; returns how many. *tb: the blanks after the last unit.
 * Units are read from at most CONTEXT_BYTES back, starting after a blank or
 * line break (a unit never spans one, so the units from there on are those
 * a read from further back finds). A window of 64 bytes, doubled while it
 * holds fewer than LEARN_ORDER units, finds the same last units as one of
 * CONTEXT_BYTES at a fraction of the reading (this ran twice per
 * keystroke over 512 bytes). */
enum { CONTEXT_BYTES = 512 };

static int context_units_from(const uint8_t *ctx, size_t start, size_t end, uint64_t *hs, size_t *tb) {
    while (start > 0 && start < end && !blank(ctx[start - 1]) && ctx[start - 1] != '\n') start++;
    int m = 0;
    size_t last_end = start;
    for (size_t i = start; i < end;) {
        if (blank(ctx[i])) {
            i++;
            continue;
        }
        int is_word;
        size_t l = unit_at(ctx + i, end - i, &is_word);
        if (m == LEARN_ORDER) memmove(hs, hs + 1, (LEARN_ORDER - 1) * sizeof *hs), m--;
        hs[m++] = hash_bytes(ctx + i, l);
        i += l;
        last_end = i;
    }
    *tb = end - last_end;
    return m;
}

static int context_units(const uint8_t *ctx, size_t end, uint64_t *hs, size_t *tb) {
    for (size_t w = 64;; w *= 2) {
        const size_t back = w < CONTEXT_BYTES ? w : CONTEXT_BYTES;
        const int m = context_units_from(ctx, end > back ? end - back : 0, end, hs, tb);
        if (m == LEARN_ORDER || back == CONTEXT_BYTES || back >= end) return m;
    }
}

/* Continuation texts and their weights within one order. */
typedef struct {
    uint8_t text[LEARN_MAX_TEXT];
    int len, word_end;
    int units;      /* units beyond the first word (a rest of the line) */
    double c;       /* matches behind it in the order being counted */
    double p;       /* interpolated probability */
    int count;
} slot;

/* The slots, and an open-addressing table from a text's hash to its slot
 * (TALLY_BUCKETS, at most half full): a new match costs one hash of its
 * text and, on a hit, one compare of its bytes, whatever the number of
 * slots (a scan over the slots was the query's largest cost at the cap).
 * Only n and the table are initialised per query. */
enum { TALLY_SLOTS = 4 * LEARN_MAX_MATCH + LEARN_MAX_CAND, TALLY_BUCKETS = 512 };
_Static_assert(2 * TALLY_SLOTS <= TALLY_BUCKETS, "the tally's table stays at most half full");
typedef struct {
    slot s[TALLY_SLOTS];
    uint64_t h[TALLY_SLOTS];        /* hash of each slot's text */
    int16_t at[TALLY_BUCKETS];      /* slot index, -1: empty */
    int n;
} tally;

static void tally_init(tally *t) {
    t->n = 0;
    memset(t->at, 0xFF, sizeof t->at);
}

/* A hash of text[0..len) eight bytes at a time (the tally's key; equal
 * texts are then compared byte for byte, so a collision costs only time). */
static uint64_t text_hash(const uint8_t *text, int len) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)len;
    int i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, text + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    memcpy(&w, text + i, (size_t)(len - i));
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

/* The slot of text[0..len), made if new (*fresh = 1), or NULL when the
 * slots are full. */
static slot *tally_get(tally *t, const uint8_t *text, int len, int word_end, int *fresh) {
    uint64_t h = text_hash(text, len);
    *fresh = 0;
    size_t b = h & (TALLY_BUCKETS - 1);
    for (; t->at[b] >= 0; b = (b + 1) & (TALLY_BUCKETS - 1)) {
        slot *s = &t->s[t->at[b]];
        if (t->h[t->at[b]] == h && s->len == len && !memcmp(s->text, text, (size_t)len)) return s;
    }
    if (t->n == TALLY_SLOTS) return NULL;
    t->at[b] = (int16_t)t->n;
    t->h[t->n] = h;
    slot *s = &t->s[t->n++];
    memcpy(s->text, text, (size_t)len);
    s->len = len;
    s->word_end = word_end;
    s->units = 0;
    s->c = s->p = 0;
    s->count = 0;
    *fresh = 1;
    return s;
}

/* The history from c0 to the end of its line, at most LEARN_MAX_TEXT bytes
 * cut on a character boundary; *wl: where the first word (or symbol run)
 * ends in it, with one trailing blank. */
static int continuation(const learn_index *ix, size_t c0, int32_t ui, size_t word_stop, uint8_t *out,
                        int *wl) {
    size_t lim = ix->n - c0 < LEARN_MAX_TEXT ? ix->n - c0 : LEARN_MAX_TEXT;
    const uint8_t *nl = memchr(ix->h + c0, '\n', lim);
    size_t e = nl ? (size_t)(nl - ix->h) : c0 + lim;
    if (e - c0 == LEARN_MAX_TEXT)
        while (e > c0 && (ix->h[e] & 0xC0) == 0x80) e--;
    int len = (int)(e - c0);
    memcpy(out, ix->h + c0, (size_t)len);
    /* the first word: to the end of unit ui; a run of CJK units (no blank
     * between) counts up to 4 characters */
    size_t we = word_stop;
    if (!ix->u[ui].word && utf8_lead_ends_word(ix->h[ix->u[ui].off])) {
        int32_t j = ui;
        while (j + 1 < ix->nu && j - ui < 3 && ix->u[j + 1].off == ix->u[j].off + ix->u[j].len &&
               !ix->u[j + 1].word && utf8_lead_ends_word(ix->h[ix->u[j + 1].off]))
            j++;
        we = ix->u[j].off + ix->u[j].len;
    }
    if (we < e && ix->h[we] == ' ') we++;
    *wl = we > e ? len : (int)(we - c0);
    return len;
}

/* Units in text[from..len) (blanks between them belong to none). */
static int count_units(const uint8_t *text, int from, int len) {
    int units = 0;
    for (int k = from; k < len;) {
        int w_;
        while (k < len && blank(text[k])) k++;
        if (k >= len) break;
        k += (int)unit_at(text + k, (size_t)(len - k), &w_);
        units++;
    }
    return units;
}

/* Matches of the units hs[0..m) (oldest first) followed by a word that
 * starts with partial[0..pl), from order m down to 1, into t; each order
 * keeps N/(N+1) of *rest. blanks[0..tb): what the typist typed after the
 * last unit (pl == 0 only). With a partial word the chains keyed also by
 * the first byte are walked (the same matches, newest first, fewer
 * entries skipped); either walk stops after LEARN_MAX_WALK entries, so a
 * context seen thousands of times costs no more than one seen a few. */
static void lookup(const learn_index *ix, const uint64_t *hs, int m, const uint8_t *partial, size_t pl,
                   const uint8_t *blanks, size_t tb, double kappa, tally *t, double *rest,
                   learn_result *r) {
    for (int n = m; n >= 1; n--) {
        uint64_t k = key_of(hs + m - n, n);
        int c = pl ? LEARN_ORDER + n - 1 : n - 1;
        if (pl) k = lead_key(k, partial[0]);
        const int32_t *next = ix->next[c];
        int found = 0, walked = 0;
        for (int32_t i = ix->head[c][k & (ix->nb - 1)]; i >= 0 && found < LEARN_MAX_MATCH && walked < LEARN_MAX_WALK;
             i = next[i], walked++) {
            int same = 1;
            for (int j = 0; j < n && same; j++) same = ix->u[i - n + j].h == hs[m - n + j];
            const unit *u = &ix->u[i];
            if (!same || u->len < pl || (pl && memcmp(ix->h + u->off, partial, pl))) continue;
            /* a word typed in full is the other interpretation's (the caller's) */
            if (pl && (!u->word || u->len == pl)) continue;
            /* where the insertion starts: inside the word, or before the
             * blanks the typist has not typed yet */
            size_t prev_end = ix->u[i - 1].off + ix->u[i - 1].len, c0 = u->off + pl;
            if (!pl) {
                size_t hb = u->off - prev_end;
                c0 = tb <= hb && (!tb || !memcmp(ix->h + prev_end, blanks, tb)) ? prev_end + tb : u->off;
            }
            uint8_t text[LEARN_MAX_TEXT];
            int wl, l = continuation(ix, c0, i, u->off + u->len, text, &wl);
            if (!l) continue;
            found++;
            int fresh;
            slot *s = tally_get(t, text, wl, 1, &fresh);
            if (s) s->c++, s->count++;
            if (l > wl && (s = tally_get(t, text, l, 0, &fresh))) {
                if (fresh) s->units = count_units(text, wl, l);
                s->c++, s->count++;
            }
        }
        if (!found) continue;
        if (r->order < n) r->order = n;
        /* evidence, times how much of it agrees on one word: a context
         * followed by many different words ("of the") is no reason to
         * doubt the model */
        double top = 0;
        for (int i = 0; i < t->n; i++)
            if (t->s[i].word_end && t->s[i].c > top) top = t->s[i].c;
        double conf = found / (found + kappa * TRUST[n]) * (top / found);
        if (conf > r->conf) r->conf = conf;
        double lam = found / (found + 1.0);
        for (int i = 0; i < t->n; i++) {
            slot *sl = &t->s[i];
            /* the rest of a line reaches REACH[n] less likely per unit
             * beyond its first word, less so the more matches agree on it */
            if (sl->c > 0)
                sl->p += *rest * lam * sl->c / found * (sl->word_end ? 1 : pow(REACH[n], sl->units / sl->c));
            sl->c = 0;
        }
        *rest *= 1 - lam;
    }
}

/* A slot of the tally by its probability (the query's ranking). */
typedef struct {
    double p;
    int slot;
} ranked;

static int ranked_beats(const void *x, const void *y) { return ((const ranked *)x)->p > ((const ranked *)y)->p; }

void learn_index_query(const learn_index *ix, const uint8_t *ctx, size_t len, double kappa,
                       learn_result *r) {
    memset(r, 0, sizeof *r);
    r->order = -1;
    size_t ps = partial_start(ctx, len), pl = len - ps, tb;
    if (pl > LEARN_MAX_PARTIAL || !ix->nu) return;
    const uint8_t *partial = ctx + ps;
    uint64_t hs[LEARN_ORDER + 1];
    int m = context_units(ctx, ps, hs, &tb);
    tally t;
    tally_init(&t);
    double rest = 1;   /* probability mass not yet given out */
    if (pl && learn_index_word_count(ix, partial, pl)) {
        /* the partial word may be typed in full: what followed it */
        uint64_t hw[LEARN_ORDER];
        int mw = m < LEARN_ORDER ? m : LEARN_ORDER - 1;
        memcpy(hw, hs + m - mw, (size_t)mw * sizeof *hw);
        hw[mw++] = hash_bytes(partial, pl);
        lookup(ix, hw, mw, NULL, 0, NULL, 0, kappa, &t, &rest, r);
    }
    lookup(ix, hs, m, partial, pl, ctx + ps - tb, tb, kappa, &t, &rest, r);
    if (pl) {
        /* order 0: the words that start with the partial word */
        int32_t lo = word_lower(ix, partial, pl);
        double total = 0;
        int best = 0;
        for (int32_t i = lo; i < ix->nw && i < lo + 4 * LEARN_MAX_MATCH; i++) {
            const word *w = &ix->w[i];
            if (w->len < pl || memcmp(ix->wa + w->off, partial, pl)) break;
            if (w->len == pl || w->len - pl > LEARN_MAX_TEXT) continue;
            total += w->count;
            if (w->count > best) best = w->count;
        }
        for (int32_t i = lo; total > 0 && i < ix->nw && i < lo + 4 * LEARN_MAX_MATCH; i++) {
            const word *w = &ix->w[i];
            if (w->len < pl || memcmp(ix->wa + w->off, partial, pl)) break;
            if (w->len == pl || w->len - pl > LEARN_MAX_TEXT) continue;
            int fresh;
            slot *s = tally_get(&t, ix->wa + w->off + pl, (int)(w->len - pl), 1, &fresh);
            if (!s) break;
            s->p += rest * w->count / total;
            if (s->count < w->count) s->count = w->count;
        }
        if (total > 0) {
            if (r->order < 0) r->order = 0;
            double conf = best / (best + kappa * TRUST[0]) * (best / total);
            if (conf > r->conf) r->conf = conf;
        }
    }
    /* the best LEARN_MAX_CAND by probability, blanks-only texts dropped;
     * earlier (more recent) first on ties (topk.h keeps arrival order) */
    ranked best[LEARN_MAX_CAND];
    int no = 0;
    for (int i = 0; i < t.n; i++) {
        int j = 0;
        while (j < t.s[i].len && blank(t.s[i].text[j])) j++;
        if (!(t.s[i].p > 0 && j < t.s[i].len)) continue;
        ranked x = {.p = t.s[i].p, .slot = i};
        topk_insert(best, sizeof *best, &no, LEARN_MAX_CAND, &x, ranked_beats);
    }
    for (int i = 0; i < no; i++) {
        const slot *sl = &t.s[best[i].slot];
        learn_cand *c = &r->c[r->n++];
        memcpy(c->text, sl->text, (size_t)sl->len);
        c->len = sl->len;
        c->p = sl->p;
        c->count = sl->count;
        c->word_end = sl->word_end;
        c->in_doc = 0;
    }
}
