/* tok_train.c - the byte-level BPE trainer.
 *
 * 1. Count: every file is memory-mapped, split into one part per thread at
 *    positions that are always chunk starts (a LF after a non-newline byte),
 *    and cut into pre-tokenizer chunks; each thread counts distinct chunks in
 *    its own hash map, then the maps are summed. Single-byte chunks hold no
 *    pair and are not counted.
 * 2. Merge: BPE over the distinct chunks ("words"), each weighted by its
 *    count. Pair counts live in a hash map with, per pair, the list of words
 *    that may contain it (entries go stale; they are re-checked). A max-heap
 *    holds (count, pair) with lazy updates: counts of existing pairs only
 *    fall, so an entry whose count is still current is the true maximum.
 *    Merging (a, b) -> z rewrites only the words on its list, left to right
 *    without overlap, and adjusts the neighbouring pair counts occurrence by
 *    occurrence. Ties go to the lower pair (left, then right id), so the
 *    result does not depend on thread count or hash order.
 * Training stops early when the best pair occurs fewer than
 * TOK_TRAIN_MIN_COUNT times: merging what is seen once is learning noise. */
#include "tok/tok_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/err.h"
#include "util/file.h"

enum { TOK_TRAIN_MIN_COUNT = 2 };

/* ---- chunk counting ---------------------------------------------------- */

typedef struct {
    uint64_t hash;
    uint32_t off, len;   /* bytes in the map's arena; len 0 = empty slot */
    int64_t count;
} cc_ent;

typedef struct {
    cc_ent *tab;
    size_t mask, used;
    uint8_t *arena;
    size_t alen, acap;
    int oom;
} cc_map;

static int cc_init(cc_map *m, size_t cap) {
    memset(m, 0, sizeof *m);
    m->tab = calloc(cap, sizeof *m->tab);
    m->mask = cap - 1;
    m->acap = 1 << 20;
    m->arena = malloc(m->acap);
    return m->tab && m->arena;
}

static void cc_free(cc_map *m) {
    free(m->tab);
    free(m->arena);
}

static int cc_grow(cc_map *m) {
    size_t cap = (m->mask + 1) * 2;
    cc_ent *nt = calloc(cap, sizeof *nt);
    if (!nt) return 0;
    for (size_t i = 0; i <= m->mask; i++) {
        cc_ent *e = &m->tab[i];
        if (!e->len) continue;
        size_t h = e->hash & (cap - 1);
        while (nt[h].len) h = (h + 1) & (cap - 1);
        nt[h] = *e;
    }
    free(m->tab);
    m->tab = nt;
    m->mask = cap - 1;
    return 1;
}

static void cc_add(cc_map *m, const uint8_t *s, uint32_t len, uint64_t h, int64_t count) {
    if (m->oom) return;
    size_t i = h & m->mask;
    for (;; i = (i + 1) & m->mask) {
        cc_ent *e = &m->tab[i];
        if (!e->len) break;
        if (e->hash == h && e->len == len && !memcmp(m->arena + e->off, s, len)) {
            e->count += count;
            return;
        }
    }
    if (m->alen + len > m->acap) {
        size_t ncap = m->acap * 2;
        uint8_t *na = realloc(m->arena, ncap);
        if (!na || ncap > UINT32_MAX) { m->oom = 1; return; }
        m->arena = na;
        m->acap = ncap;
    }
    memcpy(m->arena + m->alen, s, len);
    m->tab[i] = (cc_ent){h, (uint32_t)m->alen, len, count};
    m->alen += len;
    if (++m->used * 2 > m->mask + 1 && !cc_grow(m)) m->oom = 1;
}

static void count_range(cc_map *m, const uint8_t *s, size_t a, size_t e) {
    while (a < e) {
        size_t c = tok_chunk_end(s, e, a);
        if (c - a >= 2) cc_add(m, s + a, (uint32_t)(c - a), tok_hash_bytes(s + a, c - a), 1);
        a = c;
    }
}

/* A position at or after p that is always a chunk start, or n. */
static size_t sync_after(const uint8_t *s, size_t n, size_t p) {
    for (; p < n; p++)
        if (p > 0 && s[p] == '\n' && s[p - 1] != '\n' && s[p - 1] != '\r') return p;
    return n;
}

/* ---- BPE --------------------------------------------------------------- */

typedef struct {
    uint32_t key;        /* left << 16 | right */
    int64_t count;
    uint32_t *where;     /* words that may contain the pair (stale allowed) */
    uint32_t n_where, cap_where;
} pair_info;

typedef struct {
    pair_info *p;
    uint32_t n, cap;
    uint32_t *tab;       /* key -> index into p, UINT32_MAX empty */
    uint32_t mask;
    int oom;
} pair_map;

static uint32_t pm_hash(uint32_t key) { return (key * 0x9E3779B1u) ^ (key >> 15); }

static int pm_grow(pair_map *pm) {
    uint32_t cap = (pm->mask + 1) * 2;
    uint32_t *nt = malloc(sizeof *nt * cap);
    if (!nt) return 0;
    memset(nt, 0xFF, sizeof *nt * cap);
    for (uint32_t i = 0; i < pm->n; i++) {
        uint32_t h = pm_hash(pm->p[i].key) & (cap - 1);
        while (nt[h] != UINT32_MAX) h = (h + 1) & (cap - 1);
        nt[h] = i;
    }
    free(pm->tab);
    pm->tab = nt;
    pm->mask = cap - 1;
    return 1;
}

static pair_info *pm_get(pair_map *pm, uint32_t key) {
    uint32_t h = pm_hash(key) & pm->mask;
    for (;; h = (h + 1) & pm->mask) {
        uint32_t i = pm->tab[h];
        if (i == UINT32_MAX) break;
        if (pm->p[i].key == key) return &pm->p[i];
    }
    if (pm->n == pm->cap) {
        uint32_t ncap = pm->cap ? pm->cap * 2 : 1024;
        pair_info *np = realloc(pm->p, sizeof *np * ncap);
        if (!np) { pm->oom = 1; return NULL; }
        pm->p = np;
        pm->cap = ncap;
    }
    pm->tab[h] = pm->n;
    pair_info *e = &pm->p[pm->n++];
    memset(e, 0, sizeof *e);
    e->key = key;
    if ((pm->n * 2 > pm->mask + 1) && !pm_grow(pm)) { pm->oom = 1; return NULL; }
    /* pm_grow does not move p, so e stays valid. */
    return e;
}

static void pi_note(pair_map *pm, pair_info *e, uint32_t w) {
    if (e->n_where && e->where[e->n_where - 1] == w) return;
    if (e->n_where == e->cap_where) {
        uint32_t ncap = e->cap_where ? e->cap_where * 2 : 4;
        uint32_t *nw = realloc(e->where, sizeof *nw * ncap);
        if (!nw) { pm->oom = 1; return; }
        e->where = nw;
        e->cap_where = ncap;
    }
    e->where[e->n_where++] = w;
}

typedef struct { int64_t count; uint32_t key; } heap_ent;

typedef struct {
    heap_ent *h;
    size_t n, cap;
} heap;

/* a before b: higher count, then lower pair. */
static int he_before(heap_ent a, heap_ent b) {
    return a.count > b.count || (a.count == b.count && a.key < b.key);
}

static int heap_push(heap *hp, heap_ent e) {
    if (hp->n == hp->cap) {
        size_t ncap = hp->cap ? hp->cap * 2 : 4096;
        heap_ent *nh = realloc(hp->h, sizeof *nh * ncap);
        if (!nh) return 0;
        hp->h = nh;
        hp->cap = ncap;
    }
    size_t i = hp->n++;
    while (i > 0 && he_before(e, hp->h[(i - 1) / 2])) {
        hp->h[i] = hp->h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    hp->h[i] = e;
    return 1;
}

static heap_ent heap_pop(heap *hp) {
    heap_ent top = hp->h[0], last = hp->h[--hp->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= hp->n) break;
        if (c + 1 < hp->n && he_before(hp->h[c + 1], hp->h[c])) c++;
        if (!he_before(hp->h[c], last)) break;
        hp->h[i] = hp->h[c];
        i = c;
    }
    if (hp->n) hp->h[i] = last;
    return top;
}

typedef struct {
    uint16_t *sym;       /* symbols of every word, back to back */
    uint64_t *off;       /* (n_words) */
    uint8_t *len;        /* (n_words) current symbol count */
    int64_t *freq;       /* (n_words) */
    uint32_t *stamp;     /* (n_words) last merge that visited the word */
    uint32_t n_words;
} words;

static void words_free(words *w) {
    free(w->sym);
    free(w->off);
    free(w->len);
    free(w->freq);
    free(w->stamp);
}

static int cmp_u32(const void *x, const void *y) {
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

static void pair_add(pair_map *pm, uint32_t l, uint32_t r, int64_t d, uint32_t w) {
    pair_info *e = pm_get(pm, l << 16 | r);
    if (!e) return;
    e->count += d;
    if (d > 0) pi_note(pm, e, w);
}

laya_status tok_train(const char *const *paths, int n_paths, int32_t vocab_size,
                      tok_progress_fn progress, void *ctx, tok **out,
                      char *err, size_t errlen) {
    if (!out) return err_set(err, errlen, LAYA_ERR_ARG, "tok_train: out is NULL");
    *out = NULL;
    if (n_paths < 1 || !paths)
        return err_set(err, errlen, LAYA_ERR_ARG, "tok_train: no training files given");
    if (vocab_size < TOK_FIRST_MERGE || vocab_size > TOK_MAX_VOCAB)
        return err_set(err, errlen, LAYA_ERR_ARG, "vocabulary size %d outside %d..%d",
                       (int)vocab_size, TOK_FIRST_MERGE, TOK_MAX_VOCAB);

    /* Sizes first, for progress and to fail before any work on a bad path. */
    size_t total = 0, done = 0;
    for (int i = 0; i < n_paths; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0)
            return err_set(err, errlen, LAYA_ERR_IO, "cannot open training file '%s': %s",
                           paths[i], strerror(errno));
        if (!S_ISREG(st.st_mode))
            return err_set(err, errlen, LAYA_ERR_IO, "training file '%s' is not a regular file", paths[i]);
        total += (size_t)st.st_size;
    }

    int nt = omp_get_max_threads();
    if (nt < 1) nt = 1;
    if (nt > 64) nt = 64;
    cc_map maps[64];
    int ok = 1;
    for (int i = 0; i < nt; i++) ok &= cc_init(&maps[i], (size_t)1 << 16);
    laya_status st = LAYA_OK;
    if (!ok) { st = LAYA_ERR_NOMEM; goto count_done; }
    for (int f = 0; f < n_paths; f++) {
        char what[256];
        snprintf(what, sizeof what, "counting chunks in %s", paths[f]);
        if (progress) progress(ctx, total ? 0.2 * (double)done / (double)total : 0, what);
        int fd;
        size_t n;
        if ((st = file_open_regular(paths[f], "training file", &fd, &n, err, errlen)) != LAYA_OK) goto count_done;
        if (n == 0) { close(fd); continue; }
        const uint8_t *s = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
        close(fd);
        if (s == MAP_FAILED) {
            st = err_set(err, errlen, LAYA_ERR_IO, "cannot map training file '%s': %s", paths[f],
                         strerror(errno));
            goto count_done;
        }
        madvise((void *)s, n, MADV_SEQUENTIAL);
        size_t cut[65];
        cut[0] = 0;
        for (int i = 1; i < nt; i++) {
            size_t c = sync_after(s, n, n / (size_t)nt * (size_t)i);
            cut[i] = c > cut[i - 1] ? c : cut[i - 1];
        }
        cut[nt] = n;
#pragma omp parallel for num_threads(nt) schedule(static, 1)
        for (int i = 0; i < nt; i++) count_range(&maps[i], s, cut[i], cut[i + 1]);
        munmap((void *)s, n);
        done += n;
    }
    for (int i = 1; i < nt; i++) {
        cc_map *m = &maps[i];
        for (size_t j = 0; j <= m->mask; j++) {
            cc_ent *e = &m->tab[j];
            if (e->len) cc_add(&maps[0], m->arena + e->off, e->len, e->hash, e->count);
        }
        cc_free(m);
        memset(m, 0, sizeof *m);
    }
    for (int i = 0; i < nt; i++)
        if (maps[i].oom) st = LAYA_ERR_NOMEM;
count_done:
    for (int i = 1; i < nt; i++) cc_free(&maps[i]);
    if (st != LAYA_OK) {
        cc_free(&maps[0]);
        if (st == LAYA_ERR_NOMEM) err_set(err, errlen, st, "out of memory counting training chunks");
        return st;
    }

    /* Words: the distinct chunks, symbols = their bytes. */
    cc_map *m = &maps[0];
    words w = {0};
    w.n_words = (uint32_t)m->used;
    w.sym = malloc(sizeof *w.sym * (m->alen ? m->alen : 1));
    w.off = malloc(sizeof *w.off * (m->used ? m->used : 1));
    w.len = malloc(m->used ? m->used : 1);
    w.freq = malloc(sizeof *w.freq * (m->used ? m->used : 1));
    w.stamp = calloc(m->used ? m->used : 1, sizeof *w.stamp);
    pair_map pm = {0};
    pm.mask = (1u << 16) - 1;
    pm.tab = malloc(sizeof *pm.tab * (pm.mask + 1));
    heap hp = {0};
    int32_t M = vocab_size - TOK_FIRST_MERGE, n_merges = 0;
    uint16_t (*merge)[2] = malloc(sizeof *merge * (size_t)(M ? M : 1));
    uint32_t *touched = NULL;
    size_t n_touched = 0, cap_touched = 0;
    if (!w.sym || !w.off || !w.len || !w.freq || !w.stamp || !pm.tab || !merge) {
        st = LAYA_ERR_NOMEM;
        goto bpe_done;
    }
    memset(pm.tab, 0xFF, sizeof *pm.tab * (pm.mask + 1));
    {
        uint64_t pos = 0;
        uint32_t k = 0;
        for (size_t j = 0; j <= m->mask; j++) {
            cc_ent *e = &m->tab[j];
            if (!e->len) continue;
            w.off[k] = pos;
            w.len[k] = (uint8_t)e->len;
            w.freq[k] = e->count;
            for (uint32_t i = 0; i < e->len; i++) w.sym[pos + i] = m->arena[e->off + i];
            for (uint32_t i = 0; i + 1 < e->len; i++)
                pair_add(&pm, m->arena[e->off + i], m->arena[e->off + i + 1], e->count, k);
            pos += e->len;
            k++;
        }
    }
    cc_free(m);
    memset(m, 0, sizeof *m);
    if (pm.oom) { st = LAYA_ERR_NOMEM; goto bpe_done; }
    for (uint32_t i = 0; i < pm.n; i++)
        if (!heap_push(&hp, (heap_ent){pm.p[i].count, pm.p[i].key})) { st = LAYA_ERR_NOMEM; goto bpe_done; }

    while (n_merges < M && hp.n) {
        heap_ent top = heap_pop(&hp);
        pair_info *pi = pm_get(&pm, top.key);
        if (!pi) { st = LAYA_ERR_NOMEM; goto bpe_done; }
        if (pi->count != top.count) {
            if (pi->count > 0 && !heap_push(&hp, (heap_ent){pi->count, top.key})) {
                st = LAYA_ERR_NOMEM;
                goto bpe_done;
            }
            continue;
        }
        if (top.count < TOK_TRAIN_MIN_COUNT) break;
        uint16_t a = (uint16_t)(top.key >> 16), b = (uint16_t)top.key;
        uint16_t z = (uint16_t)(TOK_FIRST_MERGE + n_merges);
        merge[n_merges][0] = a;
        merge[n_merges][1] = b;
        n_merges++;
        uint32_t stamp = (uint32_t)n_merges;
        /* Detach the word list: pair_add below may move pm.p. */
        uint32_t *list = pi->where, n_list = pi->n_where;
        pi->where = NULL;
        pi->n_where = pi->cap_where = 0;
        n_touched = 0;
        for (uint32_t li = 0; li < n_list; li++) {
            uint32_t wi = list[li];
            if (w.stamp[wi] == stamp) continue;
            w.stamp[wi] = stamp;
            uint16_t *sy = w.sym + w.off[wi];
            uint32_t len = w.len[wi], o = 0;
            int64_t f = w.freq[wi];
            for (uint32_t i = 0; i < len;) {
                if (i + 1 < len && sy[i] == a && sy[i + 1] == b) {
                    /* prev is the already rewritten symbol, next the unread one. */
                    if (o > 0) {
                        pair_add(&pm, sy[o - 1], a, -f, wi);
                        pair_add(&pm, sy[o - 1], z, f, wi);
                    }
                    pair_add(&pm, a, b, -f, wi);
                    if (i + 2 < len) {
                        pair_add(&pm, b, sy[i + 2], -f, wi);
                        pair_add(&pm, z, sy[i + 2], f, wi);
                    }
                    sy[o++] = z;
                    i += 2;
                } else sy[o++] = sy[i++];
            }
            w.len[wi] = (uint8_t)o;
            if (o < len) {
                if (n_touched + 2 * len > cap_touched) {
                    size_t ncap = (cap_touched + 2 * len) * 2;
                    uint32_t *nt2 = realloc(touched, sizeof *nt2 * ncap);
                    if (!nt2) { free(list); st = LAYA_ERR_NOMEM; goto bpe_done; }
                    touched = nt2;
                    cap_touched = ncap;
                }
                for (uint32_t i = 0; i < o; i++) {
                    if (sy[i] != z) continue;
                    if (i > 0) touched[n_touched++] = (uint32_t)sy[i - 1] << 16 | z;
                    if (i + 1 < o) touched[n_touched++] = (uint32_t)z << 16 | sy[i + 1];
                }
            }
        }
        free(list);
        if (pm.oom) { st = LAYA_ERR_NOMEM; goto bpe_done; }
        /* New pairs enter the heap once, with their final count for this merge. */
        qsort(touched, n_touched, sizeof *touched, cmp_u32);
        for (size_t i = 0; i < n_touched; i++) {
            if (i > 0 && touched[i] == touched[i - 1]) continue;
            pair_info *e = pm_get(&pm, touched[i]);
            if (!e) { st = LAYA_ERR_NOMEM; goto bpe_done; }
            if (e->count > 0 && !heap_push(&hp, (heap_ent){e->count, e->key})) {
                st = LAYA_ERR_NOMEM;
                goto bpe_done;
            }
        }
        if (progress && (n_merges % 64 == 0 || n_merges == M)) {
            char what[128];
            snprintf(what, sizeof what, "merge %d/%d (pair seen %lld times)", (int)n_merges, (int)M,
                     (long long)top.count);
            progress(ctx, 0.2 + 0.8 * (double)n_merges / (double)M, what);
        }
    }
    st = tok_build(TOK_FIRST_MERGE + n_merges, (const uint16_t (*)[2])merge, out, err, errlen);
bpe_done:
    if (st == LAYA_ERR_NOMEM) err_set(err, errlen, st, "out of memory while learning merges");
    for (uint32_t i = 0; i < pm.n; i++) free(pm.p[i].where);
    free(pm.p);
    free(pm.tab);
    free(hp.h);
    free(merge);
    free(touched);
    words_free(&w);
    return st;
}
