/* prior.c - the static next-word prior (prior.h): validation and query.
 *
 * Shape letters: NB bytes of words, NW words, NF followers. */
#include "prior/prior.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util/err.h"
#include "util/file.h"
#include "util/utf8.h"

/* in file order: the 4-byte arrays first, so each stays aligned */
enum { T_WORD_OFF, T_FOL_OFF, T_FOL, T_FOL_P, T_WORDS };
static const char *const NAMES[PRIOR_TENSORS] = {"word_off", "fol_off", "fol", "fol_p", "words"};
static const st_dtype DTYPES[PRIOR_TENSORS] = {ST_U32, ST_U32, ST_U32, ST_F32, ST_U8};

/* memcmp order of byte strings: a shorter prefix first. */
static int cmp_bytes(const uint8_t *a, size_t na, const uint8_t *b, size_t nb) {
    int c = memcmp(a, b, na < nb ? na : nb);
    return c ? c : (na > nb) - (na < nb);
}

laya_status prior_parse(const st_file *f, const char *prefix, prior *out, int *present, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    *present = 0;
    const st_tensor *t[PRIOR_TENSORS];
    int found = 0;
    for (int i = 0; i < PRIOR_TENSORS; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s%s", prefix, NAMES[i]);
        t[i] = st_find(f, name);
        found += t[i] != NULL;
    }
    if (found == 0) return LAYA_OK;
    *present = 1;
    for (int i = 0; i < PRIOR_TENSORS; i++) {
        if (!t[i])
            return err_set(err, errlen, LAYA_ERR_FORMAT, "the prior lacks tensor %s%s", prefix, NAMES[i]);
        if (t[i]->dtype != DTYPES[i] || t[i]->ndim != 1)
            return err_set(err, errlen, LAYA_ERR_FORMAT, "prior tensor %s%s: expected a %s vector", prefix,
                           NAMES[i], st_dtype_name(DTYPES[i]));
    }
    int64_t nb = t[T_WORDS]->shape[0], nw1 = t[T_WORD_OFF]->shape[0], nf = t[T_FOL]->shape[0];
    if (nw1 < 2 || t[T_FOL_OFF]->shape[0] != nw1 || t[T_FOL_P]->shape[0] != nf || nw1 - 1 > UINT32_MAX || nf > UINT32_MAX ||
        nb > UINT32_MAX)
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "prior: word_off and fol_off must have one entry per word and one more, fol_p one per follower");
    prior p = {.words = f->data + t[T_WORDS]->begin,
               .word_off = (const uint32_t *)(const void *)(f->data + t[T_WORD_OFF]->begin),
               .fol_off = (const uint32_t *)(const void *)(f->data + t[T_FOL_OFF]->begin),
               .fol = (const uint32_t *)(const void *)(f->data + t[T_FOL]->begin),
               .fol_p = (const float *)(const void *)(f->data + t[T_FOL_P]->begin),
               .nw = (uint32_t)(nw1 - 1),
               .nf = (uint32_t)nf};
    if (p.word_off[0] != 0 || p.word_off[p.nw] != (uint64_t)nb || p.fol_off[0] != 0 || p.fol_off[p.nw] != p.nf)
        return err_set(err, errlen, LAYA_ERR_FORMAT, "prior: offsets must start at 0 and end at their array's size");
    for (uint32_t i = 0; i < p.nw; i++) {
        uint32_t a = p.word_off[i], b = p.word_off[i + 1];
        if (b <= a || b - a > PRIOR_MAX_WORD || b > nb)
            return err_set(err, errlen, LAYA_ERR_FORMAT, "prior: word %u is empty, longer than %d bytes or outside words",
                           i, PRIOR_MAX_WORD);
        if (!utf8_valid(p.words + a, b - a))
            return err_set(err, errlen, LAYA_ERR_FORMAT, "prior: word %u is not valid UTF-8", i);
        if (i > 0 && cmp_bytes(p.words + p.word_off[i - 1], a - p.word_off[i - 1], p.words + a, b - a) >= 0)
            return err_set(err, errlen, LAYA_ERR_FORMAT, "prior: words must be sorted and distinct (word %u)", i);
        uint32_t fa = p.fol_off[i], fb = p.fol_off[i + 1];
        if (fb < fa || fb > p.nf)
            return err_set(err, errlen, LAYA_ERR_FORMAT, "prior: fol_off must not decrease (word %u)", i);
        for (uint32_t j = fa; j < fb; j++) {
            float q = p.fol_p[j];
            if (p.fol[j] >= p.nw || !(q > 0 && q <= 1) || (j > fa && q > p.fol_p[j - 1]))
                return err_set(err, errlen, LAYA_ERR_FORMAT,
                               "prior: follower %u of word %u: an id out of range or a probability outside (0, 1] or "
                               "out of order",
                               j - fa, i);
        }
    }
    *out = p;
    return LAYA_OK;
}

/* The id of the word w[0..n), or -1. */
static int64_t find_word(const prior *p, const uint8_t *w, size_t n) {
    uint32_t lo = 0, hi = p->nw;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const uint8_t *m = p->words + p->word_off[mid];
        int c = cmp_bytes(m, p->word_off[mid + 1] - p->word_off[mid], w, n);
        if (c == 0) return mid;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

int prior_is_word(const prior *p, const uint8_t *w, size_t n) { return p->nw && find_word(p, w, n) >= 0; }

int prior_splits_word(const prior *p, const uint8_t *t, size_t n, size_t at) {
    if (!p->nw || at == 0 || at >= n || !utf8_cjk_at(t, n, at) || !utf8_cjk_at(t, n, utf8_prev(t, at))) return 0;
    /* the character starts around the cut, inside its run of CJK */
    size_t before[PRIOR_MAX_CHARS], after[PRIOR_MAX_CHARS];
    int nb = 0, na = 0;
    for (size_t i = at; i > 0 && nb < PRIOR_MAX_CHARS - 1;) {
        i = utf8_prev(t, i);
        if (!utf8_cjk_at(t, n, i)) break;
        before[nb++] = i;
    }
    for (size_t i = at; i < n && na < PRIOR_MAX_CHARS - 1 && utf8_cjk_at(t, n, i);) {
        i = utf8_next(t, n, i);
        after[na++] = i;
    }
    for (int a = 0; a < nb; a++)
        for (int b = 0; b < na && a + 1 + b + 1 <= PRIOR_MAX_CHARS; b++)
            if (find_word(p, t + before[a], after[b] - before[a]) >= 0) return 1;
    return 0;
}

/* The followers of word id into out (at most max); 0 when it has none. */
static int followers_of(const prior *p, int64_t id, prior_cand *out, int max) {
    uint32_t a = p->fol_off[id], b = p->fol_off[id + 1];
    int k = 0;
    for (uint32_t j = a; j < b && k < max; j++, k++) {
        uint32_t w = p->fol[j];
        out[k].text = p->words + p->word_off[w];
        out[k].len = (int)(p->word_off[w + 1] - p->word_off[w]);
        out[k].p = p->fol_p[j];
    }
    return k;
}

static int latin_letter(uint8_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int latin_word_byte(uint8_t c) { return latin_letter(c) || c == '\''; }

/* The start of the word of letters and apostrophes (a letter first) that
 * ends at ctx[end), or end when there is none or it is longer than
 * PRIOR_LATIN_WORD bytes or glued to other word bytes (a digit, a
 * non-ASCII letter) before it. */
static size_t latin_word_start(const uint8_t *ctx, size_t end) {
    size_t a = end;
    while (a > 0 && latin_word_byte(ctx[a - 1]) && end - a <= PRIOR_LATIN_WORD) a--;
    while (a < end && !latin_letter(ctx[a])) a++;   /* leading apostrophes */
    if (a == end || end - a > PRIOR_LATIN_WORD) return end;
    if (a > 0 && !(ctx[a - 1] == ' ' || ctx[a - 1] == '\n' || ctx[a - 1] == '\t' || ctx[a - 1] == '"' ||
                   ctx[a - 1] == '(' || ctx[a - 1] == '\''))
        return end;
    return a;
}

/* 1 iff ctx[0..at) ends a sentence or a line: empty, a line break, or
 * . ! ? (maybe with a closing quote) before blanks. */
static int sentence_start(const uint8_t *ctx, size_t at) {
    while (at > 0 && (ctx[at - 1] == ' ' || ctx[at - 1] == '\t')) at--;
    if (at > 0 && (ctx[at - 1] == '"' || ctx[at - 1] == '\'' || ctx[at - 1] == ')')) at--;
    return at == 0 || ctx[at - 1] == '\n' || ctx[at - 1] == '.' || ctx[at - 1] == '!' || ctx[at - 1] == '?';
}

/* 1 iff Chinese comes last before ctx[at): within PRIOR_LOOKBACK bytes, a
 * character that marks a text as Chinese (utf8_cjk_text_cp: Han, CJK or
 * full-width punctuation) before any ASCII letter. A sentence after Chinese
 * is not taken for English; curly quotes and accented letters are not
 * Chinese. */
static int after_chinese(const uint8_t *ctx, size_t at) {
    size_t i = at;
    while (i > 0 && at - i < PRIOR_LOOKBACK) {
        if (ctx[i - 1] < 0x80) {
            if (latin_letter(ctx[i - 1])) return 0;
            i--;
            continue;
        }
        size_t prev = utf8_prev(ctx, i);
        int32_t c = utf8_cp_at(ctx, at, prev);
        if (c >= 0 && utf8_cjk_text_cp((uint32_t)c)) return 1;
        i = prev;
    }
    return 0;
}

/* Appends ctx[a..b) in lower case to key at *n. */
static void key_lower(char *key, size_t *n, const uint8_t *ctx, size_t a, size_t b) {
    for (size_t i = a; i < b; i++) key[(*n)++] = (char)(ctx[i] >= 'A' && ctx[i] <= 'Z' ? ctx[i] + 32 : ctx[i]);
}

/* The English keys (see prior.h): after a typed blank, "v w", "<s> w" or
 * "w" for the last words, or "<s>" at a sentence's start; the first found
 * with followers answers. */
static int latin_query(const prior *p, const uint8_t *ctx, size_t len, prior_cand *out, int max) {
    char key[2][2 * PRIOR_LATIN_WORD + 8];
    size_t kl[2] = {0, 0};
    int nk = 0;
    if (len > 0 && ctx[len - 1] != ' ' && ctx[len - 1] != '\n') return 0;
    if (len > 1 && ctx[len - 1] == ' ' && (ctx[len - 2] == ' ' || ctx[len - 2] == '\t')) return 0;
    size_t end = len > 0 && ctx[len - 1] == ' ' ? len - 1 : len;
    size_t b = latin_word_start(ctx, end);
    if (b == end) {
        if (!sentence_start(ctx, len) || after_chinese(ctx, len)) return 0;
        memcpy(key[0], "<s>", 3);
        kl[0] = 3;
        nk = 1;
    } else {
        size_t a = b;   /* the word before it, ctx[a..b-1), when a < b - 1 */
        if (b >= 2 && ctx[b - 1] == ' ') a = latin_word_start(ctx, b - 1);
        if (sentence_start(ctx, b)) {
            memcpy(key[0], "<s> ", 4);
            kl[0] = 4;
            key_lower(key[0], &kl[0], ctx, b, end);
            nk = 1;
        } else if (b >= 2 && ctx[b - 1] == ' ' && a < b - 1) {
            key_lower(key[0], &kl[0], ctx, a, b - 1);
            key[0][kl[0]++] = ' ';
            key_lower(key[0], &kl[0], ctx, b, end);
            nk = 1;
        }
        key_lower(key[nk], &kl[nk], ctx, b, end);
        nk++;
    }
    for (int i = 0; i < nk; i++) {
        int64_t id = find_word(p, (const uint8_t *)key[i], kl[i]);
        if (id < 0) continue;
        int k = followers_of(p, id, out, max);
        if (k) return k;
    }
    return 0;
}

int prior_query(const prior *p, const uint8_t *ctx, size_t len, prior_cand *out, int max) {
    if (!p || p->nw == 0 || max <= 0) return 0;
    if (max > PRIOR_MAX_CAND) max = PRIOR_MAX_CAND;
    if (len == 0 || ctx[len - 1] < 0x80) return latin_query(p, ctx, len, out, max);
    /* the starts of the last PRIOR_MAX_CHARS Han characters, nearest first */
    size_t start[PRIOR_MAX_CHARS];
    int nc = 0;
    size_t at = len;
    while (nc < PRIOR_MAX_CHARS && at > 0) {
        size_t prev = utf8_prev(ctx, at);
        int32_t c = utf8_cp_at(ctx, len, prev);
        if (c < 0 || !utf8_han_cp((uint32_t)c) || utf8_next(ctx, len, prev) != at) break;
        start[nc++] = prev;
        at = prev;
    }
    /* the longest word with followers */
    for (int i = nc - 1; i >= 0; i--) {
        size_t n = len - start[i];
        if (n > PRIOR_MAX_WORD) continue;
        int64_t id = find_word(p, ctx + start[i], n);
        if (id < 0) continue;
        int k = followers_of(p, id, out, max);
        if (k) return k;
    }
    return 0;
}

void prior_out(const prior *p, const char *prefix, st_out out[PRIOR_TENSORS], char names[PRIOR_TENSORS][32]) {
    const void *src[PRIOR_TENSORS] = {p->word_off, p->fol_off, p->fol, p->fol_p, p->words};
    const int64_t n[PRIOR_TENSORS] = {(int64_t)p->nw + 1, (int64_t)p->nw + 1, p->nf, p->nf, p->word_off[p->nw]};
    for (int i = 0; i < PRIOR_TENSORS; i++) {
        snprintf(names[i], 32, "%s%s", prefix, NAMES[i]);
        out[i] = (st_out){.name = names[i], .dtype = DTYPES[i], .ndim = 1, .shape = {n[i]}, .src = src[i]};
    }
}

int prior_is_tensor(const char *name, const char *prefix) {
    size_t n = strlen(prefix);
    if (strncmp(name, prefix, n)) return 0;
    for (int i = 0; i < PRIOR_TENSORS; i++)
        if (!strcmp(name + n, NAMES[i])) return 1;
    return 0;
}

/* Maps a whole file read-only and parses its container; *map, *len and f
 * are the caller's to release (munmap, st_free) on success. */
static laya_status map_st(const char *path, const char *what, const uint8_t **map, size_t *len, st_file *f,
                          char *err, size_t errlen) {
    laya_status st = file_map_regular(path, what, map, len, err, errlen);
    if (st) return st;
    if (!*map) return err_set(err, errlen, LAYA_ERR_IO, "%s: cannot map the %s (empty?)", path, what);
    char e[300] = "";
    if ((st = st_parse(*map, *len, f, e, sizeof e))) {
        munmap((void *)(uintptr_t)*map, *len);
        return err_set(err, errlen, st, "%s: %s", path, e);
    }
    return LAYA_OK;
}

laya_status prior_embed(const char *model_path, const char *prior_path, const char *out_path, char *err,
                        size_t errlen) {
    const uint8_t *mm, *pm;
    size_t ml, pl;
    st_file mf, pf;
    laya_status st = map_st(model_path, "model", &mm, &ml, &mf, err, errlen);
    if (st) return st;
    if ((st = map_st(prior_path, "prior", &pm, &pl, &pf, err, errlen))) {
        st_free(&mf);
        munmap((void *)(uintptr_t)mm, ml);
        return st;
    }
    prior p;
    int present;
    char e[300] = "";
    const char *src = st_meta(&pf, "source");
    st_out *out = calloc((size_t)mf.n + PRIOR_TENSORS, sizeof *out);
    json_t *meta = mf.meta ? json_deep_copy(mf.meta) : json_object();
    if (!out || !meta) st = err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    else if (!st_find(&mf, "tokenizer") || !st_meta(&mf, "format") || strcmp(st_meta(&mf, "format"), "laya"))
        st = err_set(err, errlen, LAYA_ERR_FORMAT, "%s: not a Laya model file", model_path);
    else if (!st_meta(&pf, "format") || strcmp(st_meta(&pf, "format"), "laya-prior"))
        st = err_set(err, errlen, LAYA_ERR_FORMAT, "%s: not a Laya prior (__metadata__ format \"laya-prior\")",
                     prior_path);
    else if ((st = prior_parse(&pf, "", &p, &present, e, sizeof e)) || !present)
        st = err_set(err, errlen, st ? st : LAYA_ERR_FORMAT, "%s: %s", prior_path, st ? e : "no prior tensors");
    if (!st) {
        /* the model's tensors (an old prior left out), the prior, the tokenizer last */
        int no = 0;
        char names[PRIOR_TENSORS][32];
        for (int i = 0; i < mf.n; i++) {
            const st_tensor *t = &mf.t[i];
            if (!strcmp(t->name, "tokenizer") || prior_is_tensor(t->name, "prior.")) continue;
            out[no] = (st_out){.name = t->name, .dtype = t->dtype, .ndim = t->ndim, .src = mf.data + t->begin};
            memcpy(out[no].shape, t->shape, sizeof t->shape);
            no++;
        }
        prior_out(&p, "prior.", out + no, names);
        no += PRIOR_TENSORS;
        const st_tensor *tk = st_find(&mf, "tokenizer");
        out[no] = (st_out){.name = "tokenizer", .dtype = tk->dtype, .ndim = 1, .shape = {tk->shape[0]},
                           .src = mf.data + tk->begin};
        no++;
        json_object_set_new(meta, "prior", json_string(src ? src : "unnamed"));
        /* the identity stays the weights' (a model without one is row-major
         * and has no prior: its own checksum is its identity) */
        const char *sum = st_meta(&mf, "data_blake2b");
        if (!st_meta(&mf, "rows_blake2b") && sum) json_object_set_new(meta, "rows_blake2b", json_string(sum));
        json_object_del(meta, "data_blake2b");
        st = st_write(out_path, out, no, meta, "data_blake2b", err, errlen);
    }
    json_decref(meta);
    free(out);
    st_free(&pf);
    munmap((void *)(uintptr_t)pm, pl);
    st_free(&mf);
    munmap((void *)(uintptr_t)mm, ml);
    return st;
}
