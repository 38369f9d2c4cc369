/* test_session_edits.c - a session edited into a text holds what a fresh
 * session given that text holds (the oracle of fuzz/fuzz_session.c, on the
 * cases it found). */
#include "test.h"

#include <stdlib.h>
#include <string.h>

#include "test_engine_util.h"

/* Edits ctx0 into ctx1 on one session and reads ctx1 into a fresh one:
 * the same stable tokens and tail start. */
static int same_as_fresh(const laya_model *m, const uint8_t *ctx0, size_t n0, const uint8_t *ctx1, size_t n1) {
    laya_session *s = NULL, *f = NULL;
    int ok = laya_session_new(m, &s) == LAYA_OK && laya_session_new(m, &f) == LAYA_OK &&
             laya_session_set_context(s, (const char *)ctx0, n0) == LAYA_OK &&
             laya_session_set_context(s, (const char *)ctx1, n1) == LAYA_OK &&
             laya_session_set_context(f, (const char *)ctx1, n1) == LAYA_OK;
    if (ok) {
        size_t na, nb;
        const int32_t *ta = engine_tokens(s, &na), *tb = engine_tokens(f, &nb);
        ok = na == nb && !memcmp(ta, tb, na * sizeof *ta) && engine_tail_start(s) == engine_tail_start(f);
        if (!ok) fprintf(stderr, "    %zu tokens after the edit, %zu fresh; tail start %zu / %zu\n", na, nb,
                         engine_tail_start(s), engine_tail_start(f));
    }
    laya_session_free(s);
    laya_session_free(f);
    return ok;
}

/* A text cut to end in a lead byte and a second byte that cannot follow it
 * (above U+10FFFF, overlong, a surrogate): those bytes are final, not a
 * character still being typed. fuzz_session found "83 F4 B0 B8 00" cut to
 * "83 F4 B0" keeping a token a fresh session did not have. */
TEST(session_edit_into_an_impossible_utf8_prefix_equals_a_fresh_read) {
    float *params = NULL;
    laya_model *m = te_model(300, 16, 8, 2, 3, 0.5f, 11, &params);
    CHECK(m);
    static const uint8_t bad[][2] = {{0xF4, 0xB0}, {0xF4, 0x90}, {0xE0, 0x80}, {0xED, 0xA0}, {0xF0, 0x80},
                                     {0xF4, 0x8F}, {0xE0, 0xA0}, {0xC3, 0xA9}};
    static const char *const before[] = {"\x83", "a", "Best ", "\xe6\x88\x91", ""};
    int failures = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        for (size_t j = 0; j < sizeof before / sizeof before[0]; j++) {
            uint8_t t[32];
            size_t lb = strlen(before[j]);
            memcpy(t, before[j], lb);
            memcpy(t + lb, bad[i], 2);
            t[lb + 2] = 0xB8;
            t[lb + 3] = 0x00;
            if (!same_as_fresh(m, t, lb + 4, t, lb + 2)) {
                fprintf(stderr, "    case %02x %02x after \"%s\"\n", bad[i][0], bad[i][1], before[j]);
                failures++;
            }
        }
    laya_model_free(m);
    free(params);
    CHECKF(failures == 0, "%d edited sessions differ from a fresh read", failures);
}
