/* sphinx_prior.c - the English half of the next-word prior (src/prior/prior.h),
 * exported from Debian's pocketsphinx-en-us language model (en-us.lm.bin:
 * CMU Sphinx's general US English trigram model, 72,547 words, 2.05M
 * bigrams, 1.67M trigrams, lower-case words without punctuation; BSD-2),
 * read through libsphinxbase (libsphinxbase-dev). Issue 15: an n-gram
 * model's knowledge interpolated inside the search at run time.
 *
 *   sphinx_prior LM CASES OUT.tsv [MAX_FOLLOWERS [N1 [N2]]]
 *
 * Writes OUT.tsv, one line per (key, follower): key TAB follower TAB
 * P(follower | key), a key's followers most probable first. The keys
 * (lower case, what prior_query looks up after a typed space):
 *   "<s>"        a sentence's first word (its followers capitalized);
 *   "<s> w"      the word after a sentence's first word w;
 *   "w"          the word after w (the N1 most frequent words, default
 *                8,000);
 *   "v w"        the word after v w (for each of the N2 most frequent v,
 *                default 1,000, its most probable followers w).
 * Followers are words of letters and apostrophes of at least MIN_LEN
 * bytes (a shorter one saves almost nothing), among the C most frequent;
 * each keeps its written form from CASES (lines "lower TAB Form", e.g.
 * "i'm	I'm", "london	London": scripts/corpus/ngram/truecase.py over
 * the English corpus), lower case otherwise. P(follower | key) is the
 * model's, backoff included, over its whole vocabulary. The table is joined
 * with the Chinese half by scripts/corpus/ngram/prior_table.py.
 * Deterministic for a given model and CASES. Exit status 1 with a message
 * on stderr when a file cannot be read or written. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sphinxbase/err.h>
#include <sphinxbase/logmath.h>
#include <sphinxbase/ngram_model.h>

enum { C = 30000, MIN_LEN = 3, MAX_WORD = 30, MAX_FOL = 64 };

typedef struct {
    int32 wid;
    int32 score;
} ws;

static int by_score(const void *a, const void *b) {
    const ws *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return (x->wid > y->wid) - (x->wid < y->wid);
}

/* 1 iff w is a word of letters and apostrophes starting with a letter. */
static int plain_word(const char *w) {
    if (!isalpha((unsigned char)w[0]) || strlen(w) > MAX_WORD) return 0;
    for (const char *p = w; *p; p++)
        if (!islower((unsigned char)*p) && *p != '\'') return 0;
    return 1;
}

typedef struct {
    char **lower;   /* "lower\tForm" lines, sorted */
    size_t n;
} cases;

static int by_lower(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int read_cases(const char *path, cases *cs) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[256];
    size_t cap = 0;
    char **pairs = NULL;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        char *tab = strchr(line, '\t');
        if (!tab || strlen(tab + 1) != (size_t)(tab - line)) continue;
        if (cs->n == cap) {
            cap = cap ? 2 * cap : 4096;
            char **more = realloc(pairs, cap * sizeof *pairs);
            if (!more) free(pairs);
            pairs = more;
        }
        if (!pairs || !(pairs[cs->n++] = strdup(line))) {   /* "lower\tForm": sorts by lower */
            fprintf(stderr, "sphinx_prior: out of memory\n");
            exit(1);
        }
    }
    fclose(f);
    if (cs->n) qsort(pairs, cs->n, sizeof *pairs, by_lower);
    cs->lower = pairs;
    return 1;
}

/* The written form of lower-case w (capitalized when cap), in buf. */
static const char *form_of(const cases *cs, const char *w, int cap, char *buf) {
    size_t n = strlen(w), lo = 0, hi = cs->n;
    strcpy(buf, w);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const char *k = cs->lower[mid];
        int c = strncmp(k, w, n);
        if (c == 0 && k[n] != '\t') c = 1;
        if (c == 0) {
            strcpy(buf, k + n + 1);
            break;
        }
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    if (cap) buf[0] = (char)toupper((unsigned char)buf[0]);
    return buf;
}

typedef struct {
    ngram_model_t *m;
    logmath_t *lm;
    ws *cand;      /* the follower vocabulary (C most frequent plain words) */
    int ncand;
    const cases *cs;
    FILE *out;
    int max_fol;   /* followers written per key */
    long lines;
} ctx;

/* The max (<= MAX_FOL) most probable followers of history h (most recent
 * first) of at least min_len bytes, in top[]; returns how many. */
static int followers(const ctx *x, const int32 *h, int nh, int max, int min_len, ws *top) {
    int n = 0;
    for (int i = 0; i < x->ncand; i++) {
        if ((int)strlen(ngram_word(x->m, x->cand[i].wid)) < min_len) continue;
        int32 used, sc = ngram_ng_score(x->m, x->cand[i].wid, (int32 *)h, nh, &used);
        if (n == max && sc <= top[n - 1].score) continue;
        int j = n < max ? n++ : n - 1;
        while (j > 0 && (top[j - 1].score < sc || (top[j - 1].score == sc && top[j - 1].wid > x->cand[i].wid))) {
            top[j] = top[j - 1];
            j--;
        }
        top[j] = (ws){x->cand[i].wid, sc};
    }
    return n;
}

static void emit(ctx *x, const char *key, const int32 *h, int nh, int cap) {
    ws top[MAX_FOL];
    int n = followers(x, h, nh, x->max_fol, MIN_LEN, top);
    char buf[2 * MAX_WORD + 8];
    for (int i = 0; i < n; i++) {
        const char *w = ngram_word(x->m, top[i].wid);
        double p = logmath_exp(x->lm, top[i].score);
        if (!(p > 0 && p <= 1)) continue;
        fprintf(x->out, "%s\t%s\t%.6g\n", key, form_of(x->cs, w, cap, buf), p);
        x->lines++;
    }
}

int main(int argc, char **argv) {
    if (argc < 4 || argc > 7) {
        fprintf(stderr, "usage: sphinx_prior LM CASES OUT.tsv [MAX_FOLLOWERS [N1 [N2]]]\n");
        return 2;
    }
    int max_fol = argc > 4 ? atoi(argv[4]) : 8, N1 = argc > 5 ? atoi(argv[5]) : 8000,
        N2 = argc > 6 ? atoi(argv[6]) : 1000;
    if (max_fol < 1 || max_fol > MAX_FOL || N1 < 0 || N2 < 0 || N2 > N1) {
        fprintf(stderr, "sphinx_prior: MAX_FOLLOWERS must be 1..%d, and 0 <= N2 <= N1\n", MAX_FOL);
        return 2;
    }
    err_set_logfp(NULL);   /* its INFO lines; failures are reported below */
    cases cs = {0};
    if (!read_cases(argv[2], &cs)) {
        fprintf(stderr, "sphinx_prior: cannot read %s\n", argv[2]);
        return 1;
    }
    logmath_t *lm = logmath_init(1.0001, 0, 0);
    ngram_model_t *m = lm ? ngram_model_read(NULL, argv[1], NGRAM_AUTO, lm) : NULL;
    if (!m) {
        fprintf(stderr, "sphinx_prior: cannot read the language model %s\n", argv[1]);
        return 1;
    }
    int V = ngram_model_get_counts(m)[0];
    /* every plain word by unigram probability */
    ws *uni = malloc((size_t)V * sizeof *uni);
    if (!uni) return 1;
    int nu = 0;
    for (int32 w = 0; w < V; w++) {
        if (!plain_word(ngram_word(m, w))) continue;
        int32 used;
        uni[nu++] = (ws){w, ngram_ng_score(m, w, NULL, 0, &used)};
    }
    qsort(uni, (size_t)nu, sizeof *uni, by_score);
    ctx x = {.m = m, .lm = lm, .cand = uni, .ncand = nu < C ? nu : C, .cs = &cs, .max_fol = max_fol};
    x.out = fopen(argv[3], "w");
    if (!x.out) {
        fprintf(stderr, "sphinx_prior: cannot write %s\n", argv[3]);
        return 1;
    }
    int32 bos = ngram_wid(m, "<s>");
    char key[2 * MAX_WORD + 8];
    /* a sentence's first word, and the word after it */
    emit(&x, "<s>", &bos, 1, 1);
    ws first[MAX_FOL];
    int nfirst = followers(&x, &bos, 1, MAX_FOL, 0, first);
    for (int i = 0; i < nfirst; i++) {
        int32 h[2] = {first[i].wid, bos};
        snprintf(key, sizeof key, "<s> %s", ngram_word(m, first[i].wid));
        emit(&x, key, h, 2, 0);
    }
    /* the word after w, and after v w */
    for (int i = 0; i < nu && i < N1; i++) {
        int32 w = uni[i].wid;
        if (i % 500 == 0) fprintf(stderr, "\rsphinx_prior: %d of %d words", i, N1 < nu ? N1 : nu);
        emit(&x, ngram_word(m, w), &w, 1, 0);
        if (i >= N2) continue;
        ws nx[MAX_FOL];
        int nn = followers(&x, &w, 1, x.max_fol, 0, nx);   /* any length: keys, not suggestions */
        for (int j = 0; j < nn; j++) {
            int32 h[2] = {nx[j].wid, w};
            snprintf(key, sizeof key, "%s %s", ngram_word(m, w), ngram_word(m, nx[j].wid));
            emit(&x, key, h, 2, 0);
        }
    }
    if (fclose(x.out) != 0) {
        fprintf(stderr, "sphinx_prior: cannot write %s\n", argv[3]);
        return 1;
    }
    fprintf(stderr, "\rsphinx_prior: %ld lines to %s\n", x.lines, argv[3]);
    ngram_model_free(m);
    logmath_free(lm);
    return 0;
}
