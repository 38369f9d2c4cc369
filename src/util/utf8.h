/* utf8.h - UTF-8 checks and script ranges shared by the tokenizer, the
 * engine, the simulator and the front ends.
 *
 * The engine accepts any bytes as context (the model is byte-level) but must
 * never hand out broken UTF-8, and the front ends must refuse non-UTF-8
 * arguments. "Valid" here is RFC 3629: no overlong forms, no surrogates
 * (U+D800..U+DFFF), nothing above U+10FFFF.
 *
 * Scripts. The code point ranges below are defined once, here. "CJK" means
 * different things to different callers, so each need has its own named
 * predicate rather than one test bent to serve all of them:
 *   utf8_cjk_at          a character typed whole (IME commit): the engine
 *   utf8_cjk_text_cp     a character that marks a text as Chinese: --lang auto
 *   utf8_cjk_path_lead   the tokenizer's direct-id table of U+3000..U+9FFF
 *   utf8_lead_ends_word  a character that can end a word: the search
 * The pre-tokenizer's full class table (tok_chunk.c) is part of the token
 * format (TOK_PRETOK_VERSION) and stays there. */
#ifndef LAYA_UTF8_H
#define LAYA_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Checks s[0..n). Returns -1 if some byte can never be part of valid UTF-8
 * (whatever follows), else the number of continuation bytes still missing
 * at the end (0 when s is complete, valid UTF-8). */
int utf8_check(const uint8_t *s, size_t n);

/* 1 iff s[0..n) is complete, valid UTF-8. */
int utf8_valid(const uint8_t *s, size_t n);

/* Length (0..3) of the trailing bytes of s[0..n) that form the valid start
 * of a character still waiting for continuation bytes. */
size_t utf8_incomplete_tail(const uint8_t *s, size_t n);

/* Offset where the character that ends at n begins: n minus 1..4 bytes for a
 * valid character, n-1 for a stray byte; 0 when n is 0. Stepping back with it
 * deletes one character per call, as a backspace key does. */
size_t utf8_prev(const uint8_t *s, size_t n);

/* Offset just after the character that starts at i (i < n); a stray byte
 * counts as one character. */
size_t utf8_next(const uint8_t *s, size_t n, size_t i);

/* Number of characters in s[0..n) (a stray byte counts as one). */
size_t utf8_count(const uint8_t *s, size_t n);

/* Code point of the valid character at i (i < n), UTF8_NONE for a stray or
 * truncated byte (which utf8_next steps over as one character). */
enum { UTF8_NONE = -1 };
int32_t utf8_cp_at(const uint8_t *s, size_t n, size_t i);

/* A blank between words: space, tab, line feed, carriage return. (The
 * personal memory's index cuts its units otherwise, on purpose: learn_index.c
 * says why.) */
static inline int utf8_blank(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* ---- script ranges (inclusive) ---- */
enum {
    UTF8_WORD_BREAK_FIRST = 0x2000, /* general punctuation and every block above */
    UTF8_CJK_PUNCT_FIRST = 0x3000,  /* CJK symbols and punctuation: 、。〈〉「」 */
    UTF8_CJK_PUNCT_LAST = 0x303F,
    UTF8_HAN_FIRST = 0x3400,        /* Han extension A, then the unified block */
    UTF8_HAN_LAST = 0x9FFF,
    UTF8_HAN_COMPAT_FIRST = 0xF900, /* compatibility ideographs */
    UTF8_HAN_COMPAT_LAST = 0xFAFF,
    UTF8_FULLWIDTH_FIRST = 0xFF00,  /* half- and full-width forms: ，！？ */
    UTF8_FULLWIDTH_LAST = 0xFFEF,
    UTF8_HAN_SUPP_FIRST = 0x20000,  /* planes 2 and 3: Han extensions B.. */
    UTF8_HAN_SUPP_LAST = 0x2FFFF,
    /* The tokenizer's CJK path: every 3-byte character with a lead byte
     * E3..E9 (kana, bopomofo, CJK punctuation, Han ext A and unified). */
    UTF8_CJK_PATH_FIRST = 0x3000,
    UTF8_CJK_PATH_END = 0xA000,     /* exclusive */
};

/* 1 iff c is a Han ideograph: UTF8_HAN_*, the BMP blocks and planes 2-3. */
static inline int utf8_han_cp(uint32_t c) {
    return (c >= UTF8_HAN_FIRST && c <= UTF8_HAN_LAST) ||
           (c >= UTF8_HAN_COMPAT_FIRST && c <= UTF8_HAN_COMPAT_LAST) ||
           (c >= UTF8_HAN_SUPP_FIRST && c <= UTF8_HAN_SUPP_LAST);
}

/* Typed whole. 1 iff the character at i (i < n) is a BMP Han ideograph
 * (U+3400..U+9FFF, U+F900..U+FAFF) or any 4-byte character (supplementary
 * ideographs and emoji alike). An IME commits such a character in one
 * keystroke, so the decider (decide.c) and the search's saved-keystroke
 * count (suggest.c) treat it as one key, never spelled letter by letter.
 * CJK punctuation is not counted: it has its own key. */
int utf8_cjk_at(const uint8_t *s, size_t n, size_t i);

/* Text is Chinese. 1 iff code point c is Han (utf8_han_cp), CJK punctuation
 * (U+3000..U+303F) or a full-width form (U+FF00..U+FFEF). For guessing a
 * text's language (`laya eval --lang auto`) the punctuation of Chinese text
 * counts, and emoji, which utf8_cjk_at counts as typed whole, do not. */
static inline int utf8_cjk_text_cp(uint32_t c) {
    return utf8_han_cp(c) || (c >= UTF8_CJK_PUNCT_FIRST && c <= UTF8_CJK_PUNCT_LAST) ||
           (c >= UTF8_FULLWIDTH_FIRST && c <= UTF8_FULLWIDTH_LAST);
}

/* Tokenizer CJK path. 1 iff b is a lead byte of a 3-byte character in
 * UTF8_CJK_PATH_FIRST..UTF8_CJK_PATH_END (E3..E9): the block of characters
 * the tokenizer (tok.c) encodes through a table of direct ids instead of
 * its hash. A range of lead bytes, not a script: it takes kana and CJK
 * punctuation and leaves compatibility and supplementary ideographs to the
 * general path. Says nothing about the continuation bytes. */
static inline int utf8_cjk_path_lead(uint8_t b) {
    return b >= 0xE0 + (UTF8_CJK_PATH_FIRST >> 12) && b <= 0xE0 + ((UTF8_CJK_PATH_END - 1) >> 12);
}

/* Can end a word. 1 iff a character led by byte b is U+2000 or above (lead
 * byte >= E2; also the bytes F5..FF, which lead nothing): general punctuation,
 * CJK symbols, kana, ideographs, Hangul, full-width forms, emoji. The search
 * (suggest.c) may end a suggestion before such a character as it does
 * before a space, since scripts there need no space between words; the
 * Latin, Greek and Cyrillic letters of U+0080..U+1FFF cannot. */
static inline int utf8_lead_ends_word(uint8_t b) {
    return b >= 0xE0 + (UTF8_WORD_BREAK_FIRST >> 12);
}

/* Whole words for forgetting (learn_store.c: `laya memory forget --word`).
 * UTF8_WORD_CHAR: a letter or digit of a script written with spaces, so a
 * word of them matches only between non-letters; UTF8_WORD_CJK: a
 * character of a script written without spaces (Han, kana, Hangul, Yi), so
 * a word of them matches anywhere; UTF8_WORD_OTHER: punctuation, symbols,
 * emoji, blanks, or not a character (c < 0). Finer than utf8_lead_ends_word,
 * which only needs where a suggestion may stop. */
enum { UTF8_WORD_OTHER, UTF8_WORD_CHAR, UTF8_WORD_CJK };

static inline int utf8_word_class(int32_t c) {
    if (c < 0) return UTF8_WORD_OTHER;
    if (c < 0x80)
        return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'
                   ? UTF8_WORD_CHAR
                   : UTF8_WORD_OTHER;
    if ((c >= 0x2E80 && c <= 0x2FDF) || (c >= 0x3040 && c <= 0x31FF) || (c >= 0x3400 && c <= 0x4DBF) ||
        (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xA960 && c <= 0xA97F) || (c >= 0xAC00 && c <= 0xD7FF) ||
        (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x20000 && c <= 0x3FFFF))
        return UTF8_WORD_CJK;
    /* Latin-1 punctuation and symbols, x and /, general punctuation through
     * miscellaneous symbols and arrows, CJK and fullwidth punctuation,
     * emoji and pictographs. */
    if (c <= 0xBF || c == 0xD7 || c == 0xF7 || (c >= 0x2000 && c <= 0x2BFF) || (c >= 0x3000 && c <= 0x303F) ||
        (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0xFF00 && c <= 0xFF0F) || (c >= 0xFF1A && c <= 0xFF20) ||
        (c >= 0xFF3B && c <= 0xFF40) || (c >= 0xFF5B && c <= 0xFF65) || (c >= 0x1F000 && c <= 0x1FAFF))
        return UTF8_WORD_OTHER;
    return UTF8_WORD_CHAR;
}

#endif
