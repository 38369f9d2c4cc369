/* learn_index.c - the history of committed text and the queries over it
 * (learn_index.h). */
#include "learn/learn_index.h"

#include <stdlib.h>
#include <string.h>

struct learn_index {
    uint8_t *h;     /* (cap) the history, oldest first */
    size_t n, cap;
};

laya_status learn_index_new(size_t cap, learn_index **out) {
    if (!out || cap < 4096) return LAYA_ERR_ARG;
    learn_index *ix = calloc(1, sizeof *ix);
    if (!ix || !(ix->h = malloc(cap))) {
        free(ix);
        return LAYA_ERR_NOMEM;
    }
    ix->cap = cap;
    *out = ix;
    return LAYA_OK;
}

void learn_index_free(learn_index *ix) {
    if (!ix) return;
    free(ix->h);
    free(ix);
}

void learn_index_clear(learn_index *ix) { ix->n = 0; }

size_t learn_index_bytes(const learn_index *ix) { return ix->n; }

/* Appends b[0..n) to the history, dropping the oldest bytes (up to the
 * next line start, so no line is kept half) when the cap is reached. */
static void append(learn_index *ix, const uint8_t *b, size_t n) {
    if (n > ix->cap) {
        b += n - ix->cap;
        n = ix->cap;
    }
    if (ix->n + n > ix->cap) {
        size_t drop = ix->n + n - ix->cap;
        const uint8_t *nl = memchr(ix->h + drop, '\n', ix->n - drop);
        if (nl) drop = (size_t)(nl - ix->h) + 1;
        if (drop > ix->n) drop = ix->n;
        memmove(ix->h, ix->h + drop, ix->n - drop);
        ix->n -= drop;
    }
    memcpy(ix->h + ix->n, b, n);
    ix->n += n;
}

laya_status learn_index_add(learn_index *ix, const uint8_t *text, size_t len) {
    if (!ix || (!text && len)) return LAYA_ERR_ARG;
    if (!len) return LAYA_OK;
    if (ix->n && ix->h[ix->n - 1] != '\n') append(ix, (const uint8_t *)"\n", 1);
    append(ix, text, len);
    return LAYA_OK;
}
