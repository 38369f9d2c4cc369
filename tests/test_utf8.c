/* test_utf8.c - util/utf8: validation and stepping, and each script
 * predicate at the edges of its ranges (the code point on each side). */
#include <stdint.h>

#include "test.h"
#include "util/utf8.h"

TEST(utf8_check_and_step) {
    const uint8_t ok[] = "a\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80";
    CHECK(utf8_valid(ok, sizeof ok - 1));
    CHECK(utf8_count(ok, sizeof ok - 1) == 4);
    CHECK(utf8_check(ok, sizeof ok - 2) == 1);            /* emoji missing 1 byte */
    CHECK(utf8_incomplete_tail(ok, sizeof ok - 2) == 3);
    CHECK(utf8_incomplete_tail(ok, sizeof ok - 1) == 0);
    CHECK(utf8_prev(ok, sizeof ok - 1) == 6);
    CHECK(utf8_prev(ok, 6) == 3);
    CHECK(utf8_prev(ok, 3) == 1);
    CHECK(utf8_prev(ok, 1) == 0);
    CHECK(utf8_check((const uint8_t *)"\xc0\x80", 2) == -1);     /* overlong */
    CHECK(utf8_check((const uint8_t *)"\xed\xa0\x80", 3) == -1); /* surrogate */
    CHECK(utf8_check((const uint8_t *)"\xf4\x90\x80\x80", 4) == -1);
    CHECK(utf8_check((const uint8_t *)"\x80", 1) == -1);
    CHECK(utf8_check((const uint8_t *)"\xe4\xb8", 2) == 1);
    CHECK(utf8_prev((const uint8_t *)"ab\x80", 3) == 2);          /* stray byte: one char */
}

/* UTF-8 of code point c into b; returns its length. */
static size_t enc(uint32_t c, uint8_t b[4]) {
    if (c < 0x80) { b[0] = (uint8_t)c; return 1; }
    if (c < 0x800) { b[0] = (uint8_t)(0xC0 | c >> 6); b[1] = (uint8_t)(0x80 | (c & 0x3F)); return 2; }
    if (c < 0x10000) {
        b[0] = (uint8_t)(0xE0 | c >> 12);
        b[1] = (uint8_t)(0x80 | (c >> 6 & 0x3F));
        b[2] = (uint8_t)(0x80 | (c & 0x3F));
        return 3;
    }
    b[0] = (uint8_t)(0xF0 | c >> 18);
    b[1] = (uint8_t)(0x80 | (c >> 12 & 0x3F));
    b[2] = (uint8_t)(0x80 | (c >> 6 & 0x3F));
    b[3] = (uint8_t)(0x80 | (c & 0x3F));
    return 4;
}

TEST(utf8_cp_at_decodes_and_refuses) {
    uint8_t b[4];
    static const uint32_t cps[] = {0, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF};
    for (size_t k = 0; k < sizeof cps / sizeof *cps; k++) {
        size_t n = enc(cps[k], b);
        CHECKF(utf8_cp_at(b, n, 0) == (int32_t)cps[k], "U+%04X", (unsigned)cps[k]);
        CHECKF(n == 1 || utf8_cp_at(b, n - 1, 0) == UTF8_NONE, "truncated U+%04X", (unsigned)cps[k]);
    }
    CHECK(utf8_cp_at((const uint8_t *)"\xc0\x80", 2, 0) == UTF8_NONE);
    CHECK(utf8_cp_at((const uint8_t *)"\xed\xa0\x80", 3, 0) == UTF8_NONE);
    CHECK(utf8_cp_at((const uint8_t *)"\x80", 1, 0) == UTF8_NONE);
}

TEST(utf8_cjk_at_range_edges) {
    /* Typed whole: BMP Han blocks and every 4-byte character. */
    static const struct { uint32_t c; int want; } e[] = {
        {0x3000, 0}, {0x303F, 0}, {0x33FF, 0}, {0x3400, 1}, {0x4E2D, 1}, {0x9FFF, 1}, {0xA000, 0},
        {0xF8FF, 0}, {0xF900, 1}, {0xFAFF, 1}, {0xFB00, 0}, {0xFF0C, 0}, {0xFFFF, 0},
        {0x10000, 1}, {0x1F600, 1}, {0x20000, 1}, {0x10FFFF, 1}, {'a', 0}, {0xE9, 0},
    };
    uint8_t b[4];
    for (size_t k = 0; k < sizeof e / sizeof *e; k++) {
        size_t n = enc(e[k].c, b);
        CHECKF(utf8_cjk_at(b, n, 0) == e[k].want, "U+%04X", (unsigned)e[k].c);
    }
    CHECK(!utf8_cjk_at((const uint8_t *)"\xe4\xb8", 2, 0));  /* truncated */
    CHECK(!utf8_cjk_at((const uint8_t *)"\xf0\x9f", 2, 0));
}

TEST(utf8_cjk_text_cp_range_edges) {
    /* Marks a text as Chinese: Han, CJK punctuation, full-width forms; not emoji. */
    static const struct { uint32_t c; int want; } e[] = {
        {0x2FFF, 0}, {0x3000, 1}, {0x303F, 1}, {0x3040, 0}, {0x33FF, 0}, {0x3400, 1}, {0x9FFF, 1},
        {0xA000, 0}, {0xF8FF, 0}, {0xF900, 1}, {0xFAFF, 1}, {0xFB00, 0}, {0xFEFF, 0}, {0xFF00, 1},
        {0xFFEF, 1}, {0xFFF0, 0}, {0x1F600, 0}, {0x1FFFF, 0}, {0x20000, 1}, {0x2FFFF, 1},
        {0x30000, 0}, {'a', 0},
    };
    for (size_t k = 0; k < sizeof e / sizeof *e; k++)
        CHECKF(utf8_cjk_text_cp(e[k].c) == e[k].want, "U+%04X", (unsigned)e[k].c);
}

TEST(utf8_cjk_path_lead_matches_its_range) {
    /* Exactly the lead bytes of U+3000..U+9FFF; continuation bytes never. */
    for (uint32_t c = 0x800; c < 0x10000; c += 0x40) {
        uint8_t b[4];
        enc(c, b);
        int want = c >= UTF8_CJK_PATH_FIRST && c < UTF8_CJK_PATH_END;
        CHECKF(utf8_cjk_path_lead(b[0]) == want, "U+%04X", (unsigned)c);
        CHECKF(!utf8_cjk_path_lead(b[1]), "continuation of U+%04X", (unsigned)c);
    }
    CHECK(!utf8_cjk_path_lead(0xE2) && utf8_cjk_path_lead(0xE3));
    CHECK(utf8_cjk_path_lead(0xE9) && !utf8_cjk_path_lead(0xEA));
}

TEST(utf8_lead_ends_word_range_edges) {
    /* U+2000 and up can end a word; ASCII letters and U+0080..U+1FFF cannot. */
    static const struct { uint32_t c; int want; } e[] = {
        {'a', 0}, {0x7F, 0}, {0xE9, 0}, {0x3B1, 0}, {0x430, 0}, {0x1FFF, 0}, {0x2000, 1},
        {0x2019, 1}, {0x3002, 1}, {0x4E2D, 1}, {0xFF0C, 1}, {0x1F600, 1}, {0x10FFFF, 1},
    };
    uint8_t b[4];
    for (size_t k = 0; k < sizeof e / sizeof *e; k++) {
        enc(e[k].c, b);
        CHECKF(utf8_lead_ends_word(b[0]) == e[k].want, "U+%04X", (unsigned)e[k].c);
    }
    CHECK(!utf8_lead_ends_word(0xE1) && utf8_lead_ends_word(0xE2) && utf8_lead_ends_word(0xFF));
}
