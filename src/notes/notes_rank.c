/* notes_rank.c - what a search computes itself rather than ask FTS5 for
 * (notes.h): the bm25 score of each matching note, and the snippets of
 * the few notes shown.
 *
 * Why: FTS5's bm25() looks each matching note's size up in the table
 * notes_docsize (a B-tree search per note: 1.5 us of the 2 us a note cost
 * on the development machine), and snippet() runs the query again for each
 * note shown. Here the sizes are read once into memory (notes_lens_load,
 * again whenever the file changed), the query's idf comes from the terms
 * table the search already read, and a snippet tokenizes one body.
 *
 * laya_bm25(notes) is FTS5's bm25(notes, NOTES_W_TITLE, NOTES_W_BODY)
 * computed the same way, in the same order of operations, so the scores
 * are the same numbers (tests/test_notes.c compares them):
 *
 *   score = -sum_i idf_i * f_i (k1 + 1) / (f_i + k1 (1 - b + b D / avgdl))
 *   idf_i = log((N - n_i + 0.5) / (n_i + 0.5)), at least 1e-6
 *
 * f_i: the weighted count of term i in the note (NOTES_W_TITLE for each in
 * the title, NOTES_W_BODY in the body); D: the note's tokens; avgdl: the
 * mean over the N notes; n_i: the notes holding term i; k1 = 1.2,
 * b = 0.75 (FTS5's constants). */
#include "notes/notes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A window's terms are a bit mask. */
_Static_assert(NOTES_MAX_TERMS <= 32, "notes_snippet keeps a query's terms in 32 bits");

#define BM25_K1 1.2
#define BM25_B 0.75
#define IDF_MIN 1e-6

/* ---- document lengths --------------------------------------------------------- */

/* One SQLite varint (big-endian groups of 7 bits, the high bit set on all
 * but the last; the ninth byte gives 8 bits) of p[*at..n): FTS5 stores a
 * note's column sizes as these. A cut one reads as what is there. */
static uint64_t get_varint(const uint8_t *p, int n, int *at) {
    uint64_t v = 0;
    for (int i = 0; i < 9 && *at < n; i++) {
        uint8_t b = p[(*at)++];
        if (i == 8) return (v << 8) | b;
        v = (v << 7) | (b & 0x7f);
        if (!(b & 0x80)) break;
    }
    return v;
}

static int grow(notes_lens *l) {
    size_t cap = l->cap ? 2 * l->cap : 1024;
    int64_t *id = realloc(l->id, cap * sizeof *id);
    if (!id) return SQLITE_NOMEM;
    l->id = id;
    uint32_t *nt = realloc(l->ntok, cap * sizeof *nt);
    if (!nt) return SQLITE_NOMEM;
    l->ntok = nt;
    l->cap = cap;
    return SQLITE_OK;
}

int notes_lens_load(sqlite3 *db, notes_rank *r) {
    notes_lens *l = &r->lens;
    l->n = 0;
    l->tokens = 0;
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT id, sz FROM notes_docsize ORDER BY id", -1, &q, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (l->n == l->cap && (rc = grow(l)) != SQLITE_OK) break;
        const uint8_t *sz = sqlite3_column_blob(q, 1);
        int bytes = sqlite3_column_bytes(q, 1), at = 0;
        uint64_t sum = 0;
        /* A damaged blob gives a wrong length, never a read past it. */
        while (sz && at < bytes) {
            uint64_t v = get_varint(sz, bytes, &at);
            sum += v < UINT32_MAX ? v : UINT32_MAX;
        }
        l->id[l->n] = sqlite3_column_int64(q, 0);
        l->ntok[l->n++] = sum < UINT32_MAX ? (uint32_t)sum : UINT32_MAX;
        l->tokens += (int64_t)(sum < UINT32_MAX ? sum : UINT32_MAX);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(q);
    if (rc == SQLITE_DONE) return SQLITE_OK;
    l->n = 0;
    l->tokens = 0;
    return rc == SQLITE_OK ? SQLITE_ERROR : rc;
}

void notes_lens_free(notes_lens *l) {
    free(l->id);
    free(l->ntok);
    memset(l, 0, sizeof *l);
}

/* The index of id in l, or -1. Without branches on the data: the rows of
 * a query arrive in no order the predictor could learn. */
static ptrdiff_t find(const notes_lens *l, int64_t id) {
    if (!l->n) return -1;
    const int64_t *base = l->id;
    for (size_t len = l->n; len > 1; len -= len / 2) base = base[len / 2 - 1] < id ? base + len / 2 : base;
    return *base == id ? base - l->id : -1;
}

/* ---- laya_bm25 ------------------------------------------------------------------- */

double notes_idf(int64_t n, int64_t df) {
    double idf = log(((double)n - (double)df + 0.5) / ((double)df + 0.5));
    return idf <= 0.0 ? IDF_MIN : idf;
}

static int count_cb(const Fts5ExtensionApi *api, Fts5Context *f, void *ctx) {
    (void)api, (void)f;
    ++*(int64_t *)ctx;
    return SQLITE_OK;
}

/* laya_bm25(notes): the score of the current row for the query in the
 * notes_rank (the function's user data), whose terms must be the query's
 * phrases in order. A prefix term's notes are counted on its first row. A
 * row the lengths do not know (the file changed since they were read)
 * takes its length and the mean from FTS5. */
static void bm25_fn(const Fts5ExtensionApi *api, Fts5Context *f, sqlite3_context *c, int nv, sqlite3_value **v) {
    (void)nv, (void)v;
    notes_rank *r = api->xUserData(f);
    int np = api->xPhraseCount(f), rc = SQLITE_OK;
    if (np != r->nt) {
        sqlite3_result_error(c, "laya_bm25: the query is not the one its terms were set up for", -1);
        return;
    }
    for (int i = 0; i < np && rc == SQLITE_OK; i++) {
        if (r->t[i].df >= 0) continue;
        int64_t hits = 0;
        rc = api->xQueryPhrase(f, i, &hits, count_cb);
        r->t[i].df = hits;
        r->t[i].idf = notes_idf((int64_t)r->lens.n, hits);
    }
    double freq[NOTES_MAX_TERMS] = {0};
    int inst = 0;
    if (rc == SQLITE_OK) rc = api->xInstCount(f, &inst);
    for (int i = 0; i < inst && rc == SQLITE_OK; i++) {
        int phrase, col, off;
        rc = api->xInst(f, i, &phrase, &col, &off);
        if (rc == SQLITE_OK && phrase >= 0 && phrase < np) freq[phrase] += col == 0 ? NOTES_W_TITLE : NOTES_W_BODY;
    }
    double d = 0, avgdl = 0;
    ptrdiff_t at = rc == SQLITE_OK ? find(&r->lens, api->xRowid(f)) : -1;
    if (at >= 0) {
        d = (double)r->lens.ntok[at];
        avgdl = (double)r->lens.tokens / (double)r->lens.n;
    } else if (rc == SQLITE_OK) {
        int tok = 0;
        sqlite3_int64 rows = 0, total = 0;
        if ((rc = api->xColumnSize(f, -1, &tok)) == SQLITE_OK && (rc = api->xRowCount(f, &rows)) == SQLITE_OK)
            rc = api->xColumnTotalSize(f, -1, &total);
        d = (double)tok;
        avgdl = (double)total / (double)rows;
    }
    if (rc != SQLITE_OK) {
        sqlite3_result_error_code(c, rc);
        return;
    }
    /* A term the note lacks adds exactly 0 (FTS5 adds it anyway): skipped,
     * most of a long query's divisions go and the sum is the same. */
    double score = 0, norm = BM25_K1 * (1 - BM25_B + BM25_B * d / avgdl);
    for (int i = 0; i < np; i++)
        if (freq[i] > 0) score += r->t[i].idf * ((freq[i] * (BM25_K1 + 1.0)) / (freq[i] + norm));
    sqlite3_result_double(c, -1.0 * score);
}

int notes_rank_register(sqlite3 *db, notes_rank *r) {
    fts5_api *api = notes_fts5(db);
    if (!api) return SQLITE_ERROR;
    return api->xCreateFunction(api, "laya_bm25", r, bm25_fn, NULL);
}

/* ---- snippets ---------------------------------------------------------------------- */

typedef struct {
    notes_rank *r;
    int n, more;   /* tokens kept; more: the body goes on past NOTES_SNIP_SCAN */
} snip_scan;

static int snip_token(void *ctx, const char *tok, int len, int start, int end) {
    snip_scan *s = ctx;
    if (s->n == NOTES_SNIP_SCAN) return s->more = 1;
    int term = -1;
    for (int i = 0; i < s->r->nt && term < 0; i++) {
        /* Most tokens match no term: the length and the last byte (which
         * varies most among CJK characters) rule them out before memcmp. */
        const notes_qterm *t = &s->r->t[i];
        int l = t->stem_len;
        if ((t->prefix ? len >= l : len == l) && l > 0 && tok[l - 1] == t->stem[l - 1] && !memcmp(tok, t->stem, (size_t)l))
            term = i;
    }
    s->r->tok[s->n++] = (notes_snip_tok){start, end, term};
    return 0;
}

/* Bytes appended to out[*o..cap-1), cut where it is full. */
static void put(char *out, size_t cap, size_t *o, const char *s, size_t n) {
    if (*o + 1 >= cap) return;
    if (n > cap - 1 - *o) n = cap - 1 - *o;
    memcpy(out + *o, s, n);
    *o += n;
}

void notes_snippet(notes_rank *r, notes_stemmer *st, const char *body, size_t n, char *out, size_t cap) {
    if (!cap) return;
    out[0] = 0;
    snip_scan s = {r, 0, 0};
    notes_stem_each(st, body, n, snip_token, &s);
    const notes_snip_tok *t = r->tok;
    int w = NOTES_SNIP_TOKENS, first = 0;
    if (s.n > w) {
        /* The window that holds the most distinct terms, then the most
         * matches, the earliest of equals; it starts at a match. */
        long best = -1;
        for (int i = 0; i < s.n; i++) {
            if (t[i].term < 0) continue;
            uint32_t seen = 0;
            long score = 0;
            for (int j = i; j < i + w && j < s.n; j++)
                if (t[j].term >= 0) {
                    score += seen & (1u << t[j].term) ? 1 : 1000;
                    seen |= 1u << t[j].term;
                }
            if (score > best) best = score, first = i;
        }
        /* Then centred on its matches, as far as the body allows. */
        int last = first;
        for (int j = first; j < first + w && j < s.n && best >= 0; j++)
            if (t[j].term >= 0) last = j;
        first -= (w - (last - first + 1)) / 2;
        if (first > s.n - w) first = s.n - w;
        if (first < 0) first = 0;
    }
    int end = first + w < s.n ? first + w : s.n, whole_tail = end == s.n && !s.more;
    size_t o = 0;
    if (first > 0) put(out, cap, &o, "...", 3);
    if (end > first) {
        /* From the body's first byte when the window starts there, to its
         * last when it ends there (as FTS5's snippet()); the matches in
         * brackets, overlapping ones (CJK bigrams) sharing them. */
        size_t at = first > 0 ? (size_t)t[first].start : 0;
        for (int j = first; j < end; j++) {
            if (t[j].term < 0) continue;
            size_t a = (size_t)t[j].start, b = (size_t)t[j].end;
            while (j + 1 < end && t[j + 1].term >= 0 && (size_t)t[j + 1].start < b) b = (size_t)t[++j].end;
            if (a < at) a = at;
            put(out, cap, &o, body + at, a - at);
            put(out, cap, &o, "[", 1);
            put(out, cap, &o, body + a, b - a);
            put(out, cap, &o, "]", 1);
            at = b;
        }
        put(out, cap, &o, body + at, (whole_tail ? n : (size_t)t[end - 1].end) - at);
    }
    if (!whole_tail) put(out, cap, &o, "...", 3);
    out[o] = 0;
}
