/* learn_fb.c - the feedback table (learn_fb.h): rows in one array, found
 * through an open-addressing index of twice the cap (linear probing, at
 * most half full), and the pending changes for the store. One allocation
 * per table. */
#include "learn/learn_fb.h"
#include "util/hash.h"

#include <stdlib.h>
#include <string.h>

#include "learn/learn_index.h"

typedef struct {
    uint64_t h;      /* hash of (key, text); never 0 */
    int64_t clock;   /* the clock of the counts' last change */
    float ign, acc;  /* as of clock */
    int32_t pend;    /* its pending change, -1: none */
} row;

struct learn_fb {
    int cap, n;
    row *rows;               /* (cap) */
    int32_t *slot;           /* (nslot) row index, -1: empty */
    uint32_t nslot;          /* a power of two >= 2 cap */
    int64_t base;            /* the store's clock as of the last set_base */
    int events;              /* events recorded since (pending for the store) */
    learn_fb_change *pend;   /* (LEARN_FB_PENDING) */
    int npend;
};


uint64_t learn_fb_key_hash(const uint8_t *key, size_t klen) {
    uint64_t h = hash_fnv1a64(HASH_FNV64_BASIS, key, klen);
    return h ^ (h >> 29);
}

/* The row hash: the key's, then the text's bytes, finished by a
 * multiply-xorshift so that nearby texts spread over the index. */
static uint64_t row_hash(uint64_t kh, const uint8_t *text, size_t len) {
    uint64_t h = hash_fnv1a64(kh * 0x9e3779b97f4a7c15ull, text, len);
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    return h | 1;
}

laya_status learn_fb_new(int cap, learn_fb **out) {
    if (!out || cap < 64) return LAYA_ERR_ARG;
    *out = NULL;
    uint32_t ns = 1;
    while (ns < 2u * (uint32_t)cap) ns <<= 1;
    learn_fb *f = calloc(1, sizeof *f);
    if (!f) return LAYA_ERR_NOMEM;
    size_t bytes = (size_t)cap * sizeof(row) + (size_t)ns * sizeof(int32_t) +
                   LEARN_FB_PENDING * sizeof(learn_fb_change);
    char *mem = malloc(bytes);
    if (!mem) {
        free(f);
        return LAYA_ERR_NOMEM;
    }
    f->rows = (row *)mem;
    f->pend = (learn_fb_change *)(mem + (size_t)cap * sizeof(row));
    f->slot = (int32_t *)((char *)f->pend + LEARN_FB_PENDING * sizeof(learn_fb_change));
    f->cap = cap;
    f->nslot = ns;
    learn_fb_clear(f);
    *out = f;
    return LAYA_OK;
}

void learn_fb_free(learn_fb *f) {
    if (!f) return;
    free(f->rows);
    free(f);
}

void learn_fb_clear(learn_fb *f) {
    f->n = 0;
    f->npend = 0;
    f->events = 0;
    f->base = 0;
    memset(f->slot, 0xff, (size_t)f->nslot * sizeof *f->slot);
}

int learn_fb_rows(const learn_fb *f) { return f->n; }
int64_t learn_fb_now(const learn_fb *f) { return f->base + f->events; }

const uint8_t *learn_fb_key(const uint8_t *ctx, size_t len, size_t *klen) {
    size_t a = learn_index_context_start(ctx, len, LEARN_FB_UNITS);
    if (len - a > LEARN_FB_KEY_MAX) {
        a = len - LEARN_FB_KEY_MAX;
        while (a < len && (ctx[a] & 0xC0) == 0x80) a++;
    }
    *klen = len - a;
    return ctx + a;
}

static int find(const learn_fb *f, uint64_t h) {
    uint32_t m = f->nslot - 1;
    for (uint32_t i = (uint32_t)h & m;; i = (i + 1) & m) {
        int32_t r = f->slot[i];
        if (r < 0) return -1;
        if (f->rows[r].h == h) return r;
    }
}

static void index_row(learn_fb *f, int r) {
    uint32_t m = f->nslot - 1;
    uint32_t i = (uint32_t)f->rows[r].h & m;
    while (f->slot[i] >= 0) i = (i + 1) & m;
    f->slot[i] = r;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Full: drops the rows with the oldest clocks, at least an eighth of the
 * cap (every row of the clock at the eighth goes: rows that one event or
 * one load touched share a clock), except rows with a pending change, and
 * rebuilds the index. Without memory for the sort every row without a
 * pending change goes. */
static void evict(learn_fb *f) {
    int64_t cut = INT64_MAX;
    int64_t *c = malloc((size_t)f->n * sizeof *c);
    if (c) {
        for (int i = 0; i < f->n; i++) c[i] = f->rows[i].clock;
        qsort(c, (size_t)f->n, sizeof *c, cmp_i64);
        cut = c[f->n / 8];
        free(c);
    }
    int w = 0;
    for (int i = 0; i < f->n; i++)
        if (f->rows[i].clock > cut || f->rows[i].pend >= 0) f->rows[w++] = f->rows[i];
    f->n = w;
    memset(f->slot, 0xff, (size_t)f->nslot * sizeof *f->slot);
    for (int i = 0; i < f->n; i++) index_row(f, i);
}

/* The row of h, added (empty, at the clock now) when missing; -1 when the
 * table is full of pending rows. */
static int find_or_add(learn_fb *f, uint64_t h) {
    int r = find(f, h);
    if (r >= 0) return r;
    if (f->n == f->cap) evict(f);
    if (f->n == f->cap) return -1;
    r = f->n++;
    f->rows[r] = (row){.h = h, .clock = learn_fb_now(f), .pend = -1};
    index_row(f, r);
    return r;
}

/* Adds one ignored (or accepted) to text at key. */
static void bump(learn_fb *f, const uint8_t *key, size_t klen, uint64_t kh, const uint8_t *text, size_t tlen,
                 int accepted, int64_t t) {
    if (!tlen || tlen > LEARN_FB_TEXT_MAX) return;
    int i = find_or_add(f, row_hash(kh, text, tlen));
    if (i < 0) return;
    row *r = &f->rows[i];
    int64_t now = learn_fb_now(f);
    r->ign = (float)learn_fb_decay(r->ign, r->clock, now);
    r->acc = (float)learn_fb_decay(r->acc, r->clock, now);
    r->clock = now;
    if (accepted) r->acc += 1;
    else r->ign += 1;
    if (r->pend < 0 && f->npend < LEARN_FB_PENDING) {
        learn_fb_change *p = &f->pend[f->npend];
        memcpy(p->key, key, klen);
        memcpy(p->text, text, tlen);
        p->klen = (int)klen;
        p->tlen = (int)tlen;
        p->d_ign = p->d_acc = 0;
        r->pend = f->npend++;
    }
    if (r->pend >= 0) {
        learn_fb_change *p = &f->pend[r->pend];
        if (accepted) p->d_acc += 1;
        else p->d_ign += 1;
        p->t = t;
    }
}

laya_status learn_fb_record(learn_fb *f, const uint8_t *key, size_t klen, const uint8_t *const *texts,
                            const size_t *lens, int n, int accepted, int64_t t) {
    if (!f || (!key && klen) || n < 0 || n > 16 || (n && (!texts || !lens)) || accepted < -1 || accepted >= n)
        return LAYA_ERR_ARG;
    if (!n) return LAYA_OK;
    if (klen > LEARN_FB_KEY_MAX) {
        key += klen - LEARN_FB_KEY_MAX;
        klen = LEARN_FB_KEY_MAX;
    }
    uint64_t kh = learn_fb_key_hash(key, klen);
    f->events++;
    if (accepted < 0) {
        for (int i = 0; i < n; i++) bump(f, key, klen, kh, texts[i], lens[i], 0, t);
        return LAYA_OK;
    }
    for (int i = 0; i < accepted; i++) {
        int prefix = lens[i] <= lens[accepted] && !memcmp(texts[i], texts[accepted], lens[i]);
        if (!prefix) bump(f, key, klen, kh, texts[i], lens[i], 0, t);
    }
    bump(f, key, klen, kh, texts[accepted], lens[accepted], 1, t);
    return LAYA_OK;
}

double learn_fb_factor(const learn_fb *f, uint64_t kh, const uint8_t *text, size_t len, int penalty_only) {
    if (!f->n || !len) return 1.0;
    int i = find(f, row_hash(kh, text, len));
    if (i < 0) return 1.0;
    const row *r = &f->rows[i];
    double net = learn_fb_decay((double)r->ign - (double)r->acc, r->clock, learn_fb_now(f));
    if (net > 0) return 1.0 / (1.0 + LEARN_FB_ALPHA * net);
    if (net < 0 && !penalty_only) return 1.0 + LEARN_FB_BOOST * -net / (1.0 - net);
    return 1.0;
}

void learn_fb_put(learn_fb *f, const uint8_t *key, size_t klen, const uint8_t *text, size_t tlen, double ign,
                  double acc, int64_t c) {
    if (!tlen || tlen > LEARN_FB_TEXT_MAX || klen > LEARN_FB_KEY_MAX) return;
    int i = find_or_add(f, row_hash(learn_fb_key_hash(key, klen), text, tlen));
    if (i < 0) return;
    row *r = &f->rows[i];
    r->ign = (float)ign;
    r->acc = (float)acc;
    r->clock = c;
    if (r->pend >= 0) {
        r->ign += (float)f->pend[r->pend].d_ign;
        r->acc += (float)f->pend[r->pend].d_acc;
    }
}

void learn_fb_set_base(learn_fb *f, int64_t base) { f->base = base; }

void learn_fb_pending(const learn_fb *f, const learn_fb_change **rows, int *n, int *events) {
    *rows = f->pend;
    *n = f->npend;
    *events = f->events;
}

/* The row of pending change i, or -1. */
static int pending_row(const learn_fb *f, int i) {
    const learn_fb_change *p = &f->pend[i];
    return find(f, row_hash(learn_fb_key_hash(p->key, (size_t)p->klen), p->text, (size_t)p->tlen));
}

/* Each pending change's row points at it again (after the list moved). */
static void repoint_rows(learn_fb *f) {
    for (int i = 0; i < f->npend; i++) {
        int r = pending_row(f, i);
        if (r >= 0) f->rows[r].pend = i;
    }
}

int learn_fb_pending_within(learn_fb *f, const uint8_t *text, size_t len) {
    int w = 0;
    for (int i = 0; i < f->npend; i++) {
        const learn_fb_change *c = &f->pend[i];
        /* an empty key (a list at a line's start) holds nothing typed */
        if (c->klen && !memmem(text, len, c->key, (size_t)c->klen)) continue;
        if (i != w) {
            learn_fb_change x = f->pend[w];
            f->pend[w] = f->pend[i];
            f->pend[i] = x;
        }
        w++;
    }
    repoint_rows(f);
    return w;
}

void learn_fb_pending_taken(learn_fb *f, int n) {
    if (n > f->npend) n = f->npend;
    for (int i = 0; i < n; i++) {
        int r = pending_row(f, i);
        if (r >= 0) f->rows[r].pend = -1;
    }
    f->base += f->events;
    f->events = 0;
}

void learn_fb_pending_drop(learn_fb *f, int n) {
    if (n > f->npend) n = f->npend;
    memmove(f->pend, f->pend + n, (size_t)(f->npend - n) * sizeof *f->pend);
    f->npend -= n;
    repoint_rows(f);
}
