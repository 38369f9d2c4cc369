/* eval_text.c - the texts an evaluation types (eval.h). */
#include "eval/eval.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"
#include "util/err.h"

enum { MAX_TEXT = 1 << 30 };

laya_status eval_text_from(const char *name, const char *raw, size_t n, size_t max_chars,
                           eval_text *t) {
    memset(t, 0, sizeof *t);
    if (n > MAX_TEXT) return LAYA_ERR_LIMIT;
    t->bytes = malloc(3 * n + 1);
    if (!t->bytes) return LAYA_ERR_NOMEM;
    t->name = name;
    const uint8_t *u = (const uint8_t *)raw;
    size_t out = 0;
    for (size_t i = 0; i < n && t->chars < max_chars; t->chars++) {
        size_t l = utf8_next(u, n, i) - i;
        if (u[i] && utf8_valid(u + i, l)) {
            memcpy(t->bytes + out, u + i, l);
            out += l;
            int32_t cp = utf8_cp_at(u, n, i);
            t->cjk += cp >= 0 && utf8_cjk_text_cp((uint32_t)cp);
            t->nonspace += !(l == 1 && strchr(" \n\t\r", u[i]));
        } else {
            memcpy(t->bytes + out, "\xEF\xBF\xBD", 3);
            out += 3;
            t->replaced++;
        }
        i += l;
    }
    t->bytes[out] = 0;
    t->len = out;
    return LAYA_OK;
}

laya_status eval_text_load(const char *path, size_t max_chars, eval_text *t, char *err,
                           size_t errlen) {
    memset(t, 0, sizeof *t);
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) return err_set(err, errlen, LAYA_ERR_IO, "cannot open text '%s': %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0, r;
    char *raw = malloc(cap);
    laya_status st = LAYA_OK;
    while (raw && (r = fread(raw + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n < cap) continue;
        if (cap > MAX_TEXT) {
            st = err_set(err, errlen, LAYA_ERR_LIMIT, "text '%s' is over 1 GiB; use --max-chars", path);
            break;
        }
        char *b = realloc(raw, cap *= 2);
        if (!b) free(raw);
        raw = b;
    }
    if (!raw) st = err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory reading '%s'", path);
    else if (st == LAYA_OK && ferror(f))
        st = err_set(err, errlen, LAYA_ERR_IO, "cannot read text '%s': %s", path, strerror(errno));
    if (f != stdin) fclose(f);
    if (st == LAYA_OK && (st = eval_text_from(path, raw, n, max_chars, t)) != LAYA_OK)
        err_set(err, errlen, st, "cannot keep text '%s' in memory", path);
    free(raw);
    return st;
}

void eval_text_free(eval_text *t) {
    free(t->bytes);
    memset(t, 0, sizeof *t);
}
