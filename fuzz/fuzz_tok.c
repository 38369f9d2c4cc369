/* fuzz_tok.c - the tokenizer file (LAYATOK1) on hostile bytes. Oracle: a
 * refusal explains itself; a tokenizer that loads saves back to the same
 * bytes (the format is canonical), encodes any bytes (the input itself, and
 * a bilingual text) into tokens that decode back to exactly those bytes,
 * and finds a tail start inside the text. Seeds: fuzz/corpus/tok. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

static const char text[] = "Best regards, and thank you. 我想订个外卖。\xf0\x9f\x98\x80 \xff\xfe abc  \n\tdef";

static void round_trip(const tok *t, const uint8_t *s, size_t n) {
    int32_t *ids = malloc((n + 1) * sizeof *ids);
    uint8_t *back = malloc(n + 1);
    if (!ids || !back) fz_fail("out of memory");
    size_t k = tok_encode(t, s, n, ids, n + 1);
    if (k > n) fz_fail("%zu tokens for %zu bytes", k, n);
    for (size_t i = 0; i < k; i++)
        if (ids[i] < 0 || ids[i] >= tok_vocab_size(t)) fz_fail("token %d outside the vocabulary", (int)ids[i]);
    size_t m = tok_decode(t, ids, k, back, n + 1);
    if (m != n || memcmp(back, s, n)) fz_fail("decode(encode(x)) != x (%zu bytes, %zu back)", n, m);
    if (tok_tail_start(t, s, n) > n) fz_fail("tail start beyond the text");
    free(ids);
    free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
    tok *t = NULL;
    char err[400] = "";
    laya_status st = tok_load(d, n, &t, err, sizeof err);
    if (st != LAYA_OK) {
        if (!err[0] || t) fz_fail("refused (status %d) without a message, or with a tokenizer", st);
        return 0;
    }
    uint8_t *blob = NULL;
    size_t bn = 0;
    if (tok_save(t, &blob, &bn) != LAYA_OK) fz_fail("cannot save a tokenizer that loaded");
    if (bn != n || memcmp(blob, d, n)) fz_fail("save(load(x)) != x (%zu bytes against %zu)", bn, n);
    free(blob);
    round_trip(t, (const uint8_t *)text, sizeof text - 1);
    round_trip(t, d, n);
    tok_free(t);
    return 0;
}
