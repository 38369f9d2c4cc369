/* tok_prefix.c - prefix queries for completion: which vocabulary entries
 * extend a partial text, and which are prefixes of it.
 *
 * The index is every non-special id sorted by its bytes (memcmp order, a
 * prefix before its extensions), so the tokens starting with p form one
 * contiguous range found by two binary searches: O(log V + out). Proper
 * prefixes of p are found by exact lookups of each length in the bytes->id
 * hash (at most max_len lookups). */
#include "tok/tok_impl.h"

#include <stdlib.h>
#include <string.h>

/* memcmp order with the shorter string first when one is a prefix. */
static int cmp_bytes(const uint8_t *a, size_t na, const uint8_t *b, size_t nb) {
    int c = memcmp(a, b, na < nb ? na : nb);
    if (c) return c;
    return na < nb ? -1 : na > nb;
}

static int cmp_ids(const void *x, const void *y, void *ctx) {
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    const tok *t = ctx;
    return cmp_bytes(t->pool + t->off[a], t->off[a + 1] - t->off[a],
                     t->pool + t->off[b], t->off[b + 1] - t->off[b]);
}

laya_status tok_build_sorted(tok *t) {
    int32_t n = t->V - TOK_N_SPECIAL;
    t->sorted = malloc(sizeof *t->sorted * (size_t)n);
    if (!t->sorted) return LAYA_ERR_NOMEM;
    int32_t k = 0;
    for (int32_t id = 0; id < t->V; id++)
        if (id < 256 || id >= TOK_FIRST_MERGE) t->sorted[k++] = id;
    t->n_sorted = k;
    /* Byte strings are distinct (checked by the loader), so the order is
     * total and the result does not depend on qsort's stability. */
    qsort_r(t->sorted, (size_t)k, sizeof *t->sorted, cmp_ids, t);
    return LAYA_OK;
}

size_t tok_extending(const tok *t, const uint8_t *p, size_t n, int32_t *out, size_t cap) {
    if (!n) return 0;
    /* First entry >= p. */
    int32_t lo = 0, hi = t->n_sorted;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2, id = t->sorted[mid];
        if (cmp_bytes(t->pool + t->off[id], t->off[id + 1] - t->off[id], p, n) < 0) lo = mid + 1;
        else hi = mid;
    }
    /* First entry after the range of strings starting with p. */
    int32_t first = lo;
    hi = t->n_sorted;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2, id = t->sorted[mid];
        size_t len = t->off[id + 1] - t->off[id];
        if (len >= n && !memcmp(t->pool + t->off[id], p, n)) lo = mid + 1;
        else hi = mid;
    }
    size_t count = (size_t)(lo - first);
    for (size_t i = 0; i < count && i < cap; i++) out[i] = t->sorted[first + (int32_t)i];
    return count;
}

size_t tok_prefixes(const tok *t, const uint8_t *p, size_t n, int32_t *out, size_t cap) {
    size_t count = 0;
    for (size_t len = 1; len < n && len <= t->max_len; len++) {
        int32_t id = tok_lookup_bytes(t, p, len);
        if (id < 0) continue;
        if (count < cap) out[count] = id;
        count++;
    }
    return count;
}
