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

/* A token's first 6 bytes as a big-endian number, zero-padded, above its
 * 16-bit id. The prefixes order tokens as cmp_bytes does wherever they
 * differ (a shorter token pads with 0, which no continuation of it is
 * below); tokens with equal prefixes (sharing their first 6 bytes, or a
 * prefix and its extension by 0 bytes) are put in order afterwards. */
enum { SORT_PREFIX = 6 };
_Static_assert((int)TOK_MAX_VOCAB <= 1 << 16, "an id must fit in a sort key's low 16 bits");
static uint64_t sort_key(const tok *t, int32_t id) {
    const uint8_t *b = t->pool + t->off[id];
    uint32_t len = t->off[id + 1] - t->off[id];
    uint64_t k = 0;
    for (uint32_t i = 0; i < SORT_PREFIX; i++) k = k << 8 | (i < len ? b[i] : 0);
    return k << 16 | (uint64_t)id;
}

static int id_before(const tok *t, int32_t a, int32_t b) {
    return cmp_bytes(t->pool + t->off[a], t->off[a + 1] - t->off[a], t->pool + t->off[b],
                     t->off[b + 1] - t->off[b]) < 0;
}

/* The index by an LSD radix sort of the keys' prefix bytes (a pass skipped
 * when every key has the same byte there), then insertion sort inside each
 * run of equal prefixes. A comparison sort of the 8k byte strings was
 * nearly half of a tokenizer load, ~1 ms of every cold start. */
laya_status tok_build_sorted(tok *t) {
    int32_t n = t->V - TOK_N_SPECIAL;
    t->sorted = malloc(sizeof *t->sorted * (size_t)n);
    uint64_t *key = malloc(sizeof *key * (size_t)n), *tmp = malloc(sizeof *tmp * (size_t)n);
    uint32_t count[SORT_PREFIX][256];
    if (!t->sorted || !key || !tmp) {
        free(key);
        free(tmp);
        return LAYA_ERR_NOMEM;
    }
    memset(count, 0, sizeof count);
    int32_t k = 0;
    for (int32_t id = 0; id < t->V; id++)
        if (id < 256 || id >= TOK_FIRST_MERGE) {
            key[k] = sort_key(t, id);
            for (int d = 0; d < SORT_PREFIX; d++) count[d][key[k] >> (16 + 8 * d) & 0xFF]++;
            k++;
        }
    t->n_sorted = k;
    for (int d = 0; d < SORT_PREFIX; d++) {
        uint32_t at = 0, pos[256];
        int one = 0;
        for (int c = 0; c < 256; c++) {
            if (count[d][c] == (uint32_t)k) one = 1;
            pos[c] = at;
            at += count[d][c];
        }
        if (one) continue;
        for (int32_t i = 0; i < k; i++) tmp[pos[key[i] >> (16 + 8 * d) & 0xFF]++] = key[i];
        uint64_t *sw = key;
        key = tmp;
        tmp = sw;
    }
    for (int32_t i = 0; i < k; i++) {
        int32_t id = (int32_t)(key[i] & 0xFFFF), j = i;
        uint64_t prefix = key[i] >> 16;
        for (; j > 0 && key[j - 1] >> 16 == prefix && id_before(t, id, t->sorted[j - 1]); j--)
            t->sorted[j] = t->sorted[j - 1];
        t->sorted[j] = id;
    }
    free(key);
    free(tmp);
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
