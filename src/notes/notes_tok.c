/* notes_tok.c - the FTS5 tokenizer "laya" and the terms of a sentence
 * (notes.h). Both cut text the same way: runs of word characters
 * (utf8_word_class: UTF8_WORD_CHAR) are words, runs of CJK characters
 * (UTF8_WORD_CJK) are cut into overlapping bigrams, anything else
 * (punctuation, blanks, emoji, bytes that are not UTF-8) separates. */
#include "notes/notes.h"

#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

enum {
    TOK_MAX = 128,    /* bytes of one word token; a longer word is cut (at a character) */
    MAX_SEEN = 128    /* terms notes_query collects before keeping the last NOTES_MAX_TERMS */
};

static int class_at(const uint8_t *s, size_t n, size_t i) { return utf8_word_class(utf8_cp_at(s, n, i)); }

/* The class of the character at s[i] (i < n) and where the next one starts
 * (*next, as utf8_next says): one decoding per character, none for ASCII.
 * The tokenizer's inner loop (every note indexed, every snippet made). */
static int class_next(const uint8_t *s, size_t n, size_t i, size_t *next) {
    if (s[i] < 0x80) {
        *next = i + 1;
        return utf8_word_class(s[i]);
    }
    int32_t c = utf8_cp_at(s, n, i);
    /* A valid character has its shortest form; anything else is one byte. */
    *next = i + (c < 0 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4);
    return utf8_word_class(c);
}

static char lower(uint8_t b) { return (char)(b >= 'A' && b <= 'Z' ? b + 32 : b); }

/* ---- the tokenizer ---------------------------------------------------------- */

/* FTS5 wants an instance; the tokenizer has no state. */
static int tok_dummy;

static int tok_create(void *ctx, const char **arg, int narg, Fts5Tokenizer **out) {
    (void)ctx, (void)arg, (void)narg;
    *out = (Fts5Tokenizer *)&tok_dummy;
    return SQLITE_OK;
}

static void tok_delete(Fts5Tokenizer *t) { (void)t; }

typedef int (*token_fn)(void *ctx, int flags, const char *tok, int n, int start, int end);

/* Emits the tokens of text[0..n): word runs (ASCII folded, cut at TOK_MAX
 * bytes) and CJK bigrams (a run of one: the character), with their byte
 * offsets in text. */
static int tok_tokenize(Fts5Tokenizer *t, void *ctx, int flags, const char *text, int ntext, token_fn emit) {
    (void)t, (void)flags;
    const uint8_t *s = (const uint8_t *)text;
    size_t n = ntext > 0 ? (size_t)ntext : 0, i = 0, j;
    char buf[TOK_MAX + 4];
    while (i < n) {
        int c = class_next(s, n, i, &j);
        if (c == UTF8_WORD_OTHER) {
            i = j;
            continue;
        }
        if (c == UTF8_WORD_CHAR) {
            size_t e = i, ne, len = 0;
            while (e < n && class_next(s, n, e, &ne) == UTF8_WORD_CHAR) {
                if (len + (ne - e) <= TOK_MAX)
                    for (size_t b = e; b < ne; b++) buf[len++] = lower(s[b]);
                e = ne;
            }
            int rc = emit(ctx, 0, buf, (int)len, (int)i, (int)e);
            if (rc != SQLITE_OK) return rc;
            i = e;
            continue;
        }
        /* A CJK run: each character with the next one, or alone. */
        size_t k = j, k2;
        if (k >= n || class_next(s, n, k, &k2) != UTF8_WORD_CJK) {
            int rc = emit(ctx, 0, text + i, (int)(j - i), (int)i, (int)j);
            if (rc != SQLITE_OK) return rc;
            i = j;
            continue;
        }
        do {
            int rc = emit(ctx, 0, text + i, (int)(k2 - i), (int)i, (int)k2);
            if (rc != SQLITE_OK) return rc;
            i = k;
            k = k2;
        } while (k < n && class_next(s, n, k, &k2) == UTF8_WORD_CJK);
        i = k;
    }
    return SQLITE_OK;
}

fts5_api *notes_fts5(sqlite3 *db) {
    fts5_api *api = NULL;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &q, NULL) == SQLITE_OK) {
        sqlite3_bind_pointer(q, 1, (void *)&api, "fts5_api_ptr", NULL);
        sqlite3_step(q);
    }
    sqlite3_finalize(q);
    return api;
}

int notes_tok_register(sqlite3 *db, int *no_fts5) {
    *no_fts5 = 0;
    fts5_api *api = notes_fts5(db);
    if (!api || api->iVersion < 2) {
        *no_fts5 = 1;
        return SQLITE_ERROR;
    }
    static fts5_tokenizer tk = {tok_create, tok_delete, tok_tokenize};
    return api->xCreateTokenizer(api, "laya", NULL, &tk, NULL);
}

/* ---- stemming query terms ------------------------------------------------------ */

struct notes_stemmer {
    fts5_tokenizer api;
    Fts5Tokenizer *t;
};

notes_stemmer *notes_stemmer_new(sqlite3 *db) {
    fts5_api *api = notes_fts5(db);
    void *ud = NULL;
    notes_stemmer *st = calloc(1, sizeof *st);
    const char *args[] = {"laya"};
    if (!api || !st || api->xFindTokenizer(api, "porter", &ud, &st->api) != SQLITE_OK ||
        st->api.xCreate(ud, args, 1, &st->t) != SQLITE_OK) {
        free(st);
        return NULL;
    }
    return st;
}

void notes_stemmer_free(notes_stemmer *st) {
    if (!st) return;
    st->api.xDelete(st->t);
    free(st);
}

typedef struct {
    char *out;
    size_t cap, len;
} stem_out;

static int take_first(void *ctx, int flags, const char *tok, int n, int start, int end) {
    (void)flags, (void)start, (void)end;
    stem_out *o = ctx;
    if (o->len || n <= 0 || (size_t)n >= o->cap) return SQLITE_OK;
    memcpy(o->out, tok, (size_t)n);
    o->out[n] = 0;
    o->len = (size_t)n;
    return SQLITE_OK;
}

size_t notes_stem(notes_stemmer *st, const char *term, size_t n, char *out, size_t cap) {
    stem_out o = {out, cap, 0};
    if (cap) out[0] = 0;
    st->api.xTokenize(st->t, &o, FTS5_TOKENIZE_QUERY, term, (int)n, take_first);
    return o.len;
}

typedef struct {
    notes_token_fn fn;
    void *ctx;
} each_ctx;

static int each_token(void *ctx, int flags, const char *tok, int n, int start, int end) {
    (void)flags;
    each_ctx *e = ctx;
    return e->fn(e->ctx, tok, n, start, end) ? SQLITE_DONE : SQLITE_OK;
}

void notes_stem_each(notes_stemmer *st, const char *text, size_t n, notes_token_fn fn, void *ctx) {
    each_ctx e = {fn, ctx};
    st->api.xTokenize(st->t, &e, FTS5_TOKENIZE_DOCUMENT, text, (int)n, each_token);
}

/* ---- terms ------------------------------------------------------------------ */

/* Small on purpose: what carries no topic in a sentence. Sorted (bsearch). */
static const char *const stop_en[] = {
    "about", "after", "all",   "also",  "and",   "any",   "are",   "because", "been",  "before", "but",
    "can",   "could", "did",   "does",  "for",   "from",  "had",   "has",     "have",  "her",    "here",
    "him",   "his",   "how",   "into",  "its",   "just",  "like",  "more",    "most",  "not",    "now",
    "one",   "only",  "our",   "out",   "over",  "really", "she",  "should",  "some",  "than",   "that",
    "the",   "their", "them",  "then",  "there", "these", "they",  "this",    "those", "very",   "was",
    "were",  "what",  "when",  "where", "which", "while", "who",   "why",     "will",  "with",   "would",
    "you",   "your",
};

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static int is_stop_en(const char *w) {
    return bsearch(&w, stop_en, sizeof stop_en / sizeof stop_en[0], sizeof stop_en[0], cmp_str) != NULL;
}

/* Function characters of Chinese: a CJK run is cut at them before its
 * bigrams are taken while typing (我们明天和张三开会 -> 明天, 张三开会). */
static int is_stop_cjk(const uint8_t *c, size_t len) {
    static const char stop[] = "的了是在和与也就都而及着把被吗呢吧啊呀我你他她它们这那个很还又或给让从向但却";
    _Static_assert((sizeof stop - 1) % 3 == 0, "each a 3-byte character: compared as bytes, not decoded");
    if (len != 3) return 0;
    for (size_t i = 0; i < sizeof stop - 1; i += 3)
        if (!memcmp(stop + i, c, 3)) return 1;
    return 0;
}

typedef struct {
    char t[MAX_SEEN][TOK_MAX + 8];   /* each `"term"` or `"term"*`, NUL-terminated */
    int n, next;                     /* kept terms; ring position once full */
} terms;

/* Adds s[0..len) as a quoted term (a prefix term when prefix). Beyond
 * MAX_SEEN the oldest is overwritten: the terms nearest the cursor win. */
static void add_term(terms *ts, const uint8_t *s, size_t len, int fold, int prefix) {
    if (!len || len > TOK_MAX) return;
    char *d = ts->t[ts->next];
    size_t o = 0;
    d[o++] = '"';
    for (size_t i = 0; i < len; i++) d[o++] = fold ? lower(s[i]) : (char)s[i];
    d[o++] = '"';
    if (prefix) d[o++] = '*';
    d[o] = 0;
    ts->next = (ts->next + 1) % MAX_SEEN;
    if (ts->n < MAX_SEEN) ts->n++;
}

/* The bigrams of the CJK characters s[a..b) (a lone one: itself, as a
 * prefix when search). */
static void add_cjk(terms *ts, const uint8_t *s, size_t n, size_t a, size_t b, int search) {
    if (a >= b) return;
    size_t second = utf8_next(s, n, a);
    if (second >= b) {
        if (search) add_term(ts, s + a, second - a, 0, 1);
        return;
    }
    for (size_t i = a, j = second; j < b; i = j, j = utf8_next(s, n, j))
        add_term(ts, s + i, utf8_next(s, n, j) - i, 0, 0);
}

/* Collects the terms of s[0..n) in text order. */
static void collect(terms *ts, const uint8_t *s, size_t n, int mode) {
    int search = mode == NOTES_TERMS_SEARCH;
    size_t i = 0;
    while (i < n) {
        int c = class_at(s, n, i);
        if (c == UTF8_WORD_OTHER) {
            i = utf8_next(s, n, i);
            continue;
        }
        size_t e = i, chars = 0;
        while (e < n && class_at(s, n, e) == c) e = utf8_next(s, n, e), chars++;
        if (c == UTF8_WORD_CHAR) {
            char low[TOK_MAX + 1];
            size_t len = e - i < TOK_MAX ? e - i : TOK_MAX;
            for (size_t b = 0; b < len; b++) low[b] = lower(s[i + b]);
            low[len] = 0;
            int name = s[i] >= 'A' && s[i] <= 'Z';
            if (search || (!is_stop_en(low) && (chars >= 3 || (name && chars >= 2)))) add_term(ts, s + i, e - i, 1, 0);
        } else if (search) {
            add_cjk(ts, s, n, i, e, 1);
        } else {
            size_t a = i;
            for (size_t p = i, q; p < e; p = q) {
                q = utf8_next(s, n, p);
                if (is_stop_cjk(s + p, q - p)) {
                    add_cjk(ts, s, n, a, p, 0);
                    a = q;
                }
            }
            add_cjk(ts, s, n, a, e, 0);
        }
        i = e;
    }
}

int notes_query(const char *text, size_t n, int mode, char *q, size_t qcap) {
    if (qcap) q[0] = 0;
    if (!text || !qcap) return 0;
    terms *ts = malloc(sizeof *ts);
    if (!ts) return 0;
    ts->n = ts->next = 0;
    collect(ts, (const uint8_t *)text, n, mode);
    /* The last NOTES_MAX_TERMS collected, sorted, without repeats. */
    const char *pick[MAX_SEEN];
    int np = 0, keep = ts->n < NOTES_MAX_TERMS ? ts->n : NOTES_MAX_TERMS;
    for (int k = 0; k < keep; k++) pick[np++] = ts->t[((ts->next - 1 - k) % MAX_SEEN + MAX_SEEN) % MAX_SEEN];
    qsort(pick, (size_t)np, sizeof pick[0], cmp_str);
    size_t o = 0;
    int nt = 0;
    for (int k = 0; k < np; k++) {
        if (k && !strcmp(pick[k], pick[k - 1])) continue;
        size_t l = strlen(pick[k]);
        if (o + l + (nt ? 4 : 0) + 1 > qcap) break;
        if (nt) memcpy(q + o, " OR ", 4), o += 4;
        memcpy(q + o, pick[k], l);
        o += l;
        nt++;
    }
    q[o] = 0;
    free(ts);
    return nt;
}

/* ---- the sentence ----------------------------------------------------------- */

static int ends_sentence(int32_t c) {
    return c == '.' || c == '!' || c == '?' || c == ';' || c == '\n' || c == 0x3002 /* 。 */ ||
           c == 0xFF01 /* ！ */ || c == 0xFF1F /* ？ */ || c == 0xFF1B /* ； */ || c == 0x2026 /* … */;
}

void notes_sentence(const char *ctx, size_t n, size_t *start, size_t *end) {
    const uint8_t *s = (const uint8_t *)ctx;
    size_t e = n;
    /* A word still being typed is not looked up. */
    while (e > 0) {
        size_t p = utf8_prev(s, e);
        if (class_at(s, n, p) != UTF8_WORD_CHAR) break;
        e = p;
    }
    size_t lo = n > NOTES_SENTENCE_MAX ? n - NOTES_SENTENCE_MAX : 0;
    while (lo < n && (s[lo] & 0xC0) == 0x80) lo++;
    /* A sentence just ended (its mark and blanks typed, nothing after)
     * is still the one being written about. */
    size_t b = e;
    while (e == n && b > lo) {
        size_t p = utf8_prev(s, b);
        int32_t c = utf8_cp_at(s, n, p);
        if (!ends_sentence(c) && c != ' ' && c != '\t' && c != 0x3000) break;
        b = p;
    }
    while (b > lo) {
        size_t p = utf8_prev(s, b);
        if (ends_sentence(utf8_cp_at(s, n, p))) break;
        b = p;
    }
    *start = b < lo ? lo : b;
    *end = e < *start ? *start : e;
}
