/* tok_chunk.c - the pre-tokenizer (rules version TOK_PRETOK_VERSION = 1) and
 * the unfinished-tail query built on it.
 *
 * Text is read as UTF-8; a byte that does not start a complete, valid UTF-8
 * sequence (strict: no overlongs, surrogates or values above U+10FFFF) is a
 * chunk of its own. Each code point gets one class:
 *   letter  ASCII letters and every non-ASCII code point not listed below
 *           (Latin accents, Cyrillic, Greek, combining marks, ...)
 *   digit   0-9
 *   space   ' '          ws  tab, VT, FF, U+00A0
 *   nl      CR, LF       apos  ' and U+2019
 *   punct   other ASCII (controls and NUL included), Latin-1 symbols,
 *           U+2000-2BFF (quotes, dashes, arrows, math), U+2E00-2E7F,
 *           variation selectors, emoji U+1F000-1FAFF, tags
 *   cjk     Han (all planes), kana, Hangul, bopomofo
 *   cjkp    CJK punctuation U+3000-303F, fullwidth forms U+FF00-FFEF,
 *           U+FE10-FE1F, U+FE30-FE4F  (，。！？、 etc.)
 * A chunk is one of
 *   [' '] letter+          a word and its leading space
 *   [' '] apos letter+     "'s", "'ll", "’t"
 *   [' '] digit{1,3}       numbers in groups of 3 counted from their start
 *   [' '] (punct|apos)+
 *   (space|ws)+            but a run of 2+ ending in ' ' before a chunk that
 *                          takes a leading space leaves that ' ' to it
 *   nl+
 *   cjk{1,TOK_CJK_RUN}     CJK runs cut every TOK_CJK_RUN characters counted
 *                          from the run's start
 *   cjkp | invalid byte    alone
 * and no chunk is longer than TOK_CHUNK_MAX bytes (a run is cut before the
 * code point that would pass it, counted from the chunk's start).
 *
 * Why 4 for CJK: Chinese words are mostly 1-2 characters and 4-character
 * idioms are common, so a 4-character window holds most words whole, and a
 * run cut at fixed offsets from its start (which follows punctuation) keeps
 * every boundary independent of what is typed later. 3 splits more 2-char
 * words; 6 multiplies the number of distinct chunks (slower training, more
 * rarely-seen chunks) for little gain: merges rarely grow past 3 characters.
 *
 * Stability: every decision looks at the bytes of the chunk plus at most one
 * code point after it (two for "  x"), and a chunk is only ended early by the
 * buffer's end when it ends at the buffer's end. So for any boundary b, the
 * chunks before b are the same for s[0..b) and for s + anything. */
#include "tok/tok_impl.h"

/* C_PUNCT is 0 so that everything the ASCII table does not list is punct. */
enum { C_PUNCT, C_LETTER, C_DIGIT, C_SPACE, C_WS, C_NL, C_APOS, C_CJK, C_CJKP, C_BAD };

static const uint8_t ascii_class[128] = {
    ['\t'] = C_WS, ['\v'] = C_WS, ['\f'] = C_WS, ['\n'] = C_NL, ['\r'] = C_NL,
    [' '] = C_SPACE, ['\''] = C_APOS, ['0' ... '9'] = C_DIGIT,
    ['A' ... 'Z'] = C_LETTER, ['a' ... 'z'] = C_LETTER,
};

static inline int ascii_cls(uint8_t c) { return ascii_class[c]; }

static int cp_cls(uint32_t c) {
    if (c < 0x100) {
        if (c == 0xA0) return C_WS;
        if (c < 0xC0 || c == 0xD7 || c == 0xF7) return C_PUNCT;
        return C_LETTER;
    }
    if (c < 0x1100) return C_LETTER;
    if (c < 0x1200) return C_CJK;                    /* Hangul jamo */
    if (c < 0x2000) return C_LETTER;
    if (c < 0x2C00) return c == 0x2019 ? C_APOS : C_PUNCT;
    if (c < 0x2E00) return C_LETTER;
    if (c < 0x2E80) return C_PUNCT;
    if (c < 0x3000) return C_CJK;                    /* radicals, Kangxi */
    if (c < 0x3040) return C_CJKP;
    if (c < 0x3190) return C_CJK;                    /* kana, bopomofo, Hangul compat */
    if (c < 0x31F0) return C_LETTER;
    if (c < 0x3200) return C_CJK;
    if (c < 0x3400) return C_LETTER;
    if (c < 0xA000) return C_CJK;                    /* Han ext A + unified */
    if (c < 0xAC00) return C_LETTER;
    if (c < 0xD7B0) return C_CJK;                    /* Hangul syllables */
    if (c < 0xF900) return C_LETTER;
    if (c < 0xFB00) return C_CJK;                    /* compatibility ideographs */
    if (c < 0xFE00) return C_LETTER;
    if (c < 0xFE10) return C_PUNCT;                  /* variation selectors */
    if (c < 0xFE20) return C_CJKP;
    if (c < 0xFE30) return C_LETTER;
    if (c < 0xFE50) return C_CJKP;
    if (c < 0xFF00) return C_LETTER;
    if (c < 0xFFF0) return C_CJKP;
    if (c < 0x10000) return C_PUNCT;
    if (c < 0x1F000) return C_LETTER;
    if (c < 0x1FB00) return C_PUNCT;                 /* emoji, symbols */
    if (c < 0x20000) return C_LETTER;
    if (c < 0x40000) return C_CJK;                   /* Han ext B.. */
    if (c >= 0xE0000 && c < 0xE0080) return C_PUNCT; /* tags (flag sequences) */
    return C_LETTER;
}

/* Class of the code point at s[p] (p < n) and its length in bytes; an
 * invalid or incomplete sequence is C_BAD of length 1. */
static inline int cls_at(const uint8_t *s, size_t n, size_t p, size_t *len) {
    uint8_t b = s[p];
    if (b < 0x80) { *len = 1; return ascii_cls(b); }
    *len = 1;
    size_t need;
    uint32_t c, min;
    if (b >= 0xC2 && b <= 0xDF) { need = 2; c = b & 0x1F; min = 0x80; }
    else if (b >= 0xE0 && b <= 0xEF) { need = 3; c = b & 0x0F; min = 0x800; }
    else if (b >= 0xF0 && b <= 0xF4) { need = 4; c = b & 0x07; min = 0x10000; }
    else return C_BAD;
    if (n - p < need) return C_BAD;
    for (size_t i = 1; i < need; i++) {
        uint8_t x = s[p + i];
        if ((x & 0xC0) != 0x80) return C_BAD;
        c = c << 6 | (x & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return C_BAD;
    *len = need;
    return cp_cls(c);
}

/* Extends a run from p over code points whose class is in mask, keeping the
 * chunk (which started at start) within TOK_CHUNK_MAX bytes. *capped tells
 * whether the limit, not a class change or the end, stopped it. */
static inline size_t run(const uint8_t *s, size_t n, size_t start, size_t p, unsigned mask,
                         int *capped) {
    *capped = 0;
    while (p < n) {
        if (s[p] < 0x80) {
            if (!(mask >> ascii_cls(s[p]) & 1)) break;
            if (p + 1 - start > TOK_CHUNK_MAX) { *capped = 1; break; }
            p++;
            continue;
        }
        size_t len;
        int c = cls_at(s, n, p, &len);
        if (!(mask >> c & 1)) break;
        if (p + len - start > TOK_CHUNK_MAX) { *capped = 1; break; }
        p += len;
    }
    return p;
}

#define BIT(c) (1u << (c))
/* Classes that take a leading ' ' into their chunk. */
#define TAKES_SPACE (BIT(C_LETTER) | BIT(C_DIGIT) | BIT(C_PUNCT) | BIT(C_APOS))

size_t tok_chunk_end(const uint8_t *s, size_t n, size_t start) {
    size_t len, p = start;
    int capped;
    int c = cls_at(s, n, p, &len);
    if (c == C_SPACE && p + 1 < n) {
        size_t len2;
        int c2 = cls_at(s, n, p + 1, &len2);
        if (TAKES_SPACE >> c2 & 1) { p++; c = c2; len = len2; }
    }
    switch (c) {
    case C_LETTER:
        return run(s, n, start, p, BIT(C_LETTER), &capped);
    case C_APOS:
        if (p + len < n) {
            size_t len2;
            if (cls_at(s, n, p + len, &len2) == C_LETTER)
                return run(s, n, start, p + len, BIT(C_LETTER), &capped);
        }
        return run(s, n, start, p, BIT(C_PUNCT) | BIT(C_APOS), &capped);
    case C_DIGIT: {
        size_t e = p;
        while (e < n && e - p < 3 && (uint8_t)(s[e] - '0') < 10) e++;
        return e;
    }
    case C_PUNCT:
        return run(s, n, start, p, BIT(C_PUNCT) | BIT(C_APOS), &capped);
    case C_SPACE:
    case C_WS: {
        size_t e = run(s, n, start, p, BIT(C_SPACE) | BIT(C_WS), &capped);
        if (!capped && e < n && e - start >= 2 && s[e - 1] == ' ') {
            size_t len2;
            if (TAKES_SPACE >> cls_at(s, n, e, &len2) & 1) return e - 1;
        }
        return e;
    }
    case C_NL:
        return run(s, n, start, p, BIT(C_NL), &capped);
    case C_CJK: {
        size_t e = p;
        for (int k = 0; k < TOK_CJK_RUN && e < n; k++) {
            if (cls_at(s, n, e, &len) != C_CJK) break;
            e += len;
        }
        return e;
    }
    default: /* C_CJKP, C_BAD */
        return p + len;
    }
}

/* 1 if b may follow lead in a valid sequence (RFC 3629's ranges: no
 * overlong form, no surrogate, nothing above U+10FFFF). */
static int second_ok(uint8_t lead, uint8_t b) {
    switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;
    case 0xED: return b >= 0x80 && b <= 0x9F;
    case 0xF0: return b >= 0x90 && b <= 0xBF;
    case 0xF4: return b >= 0x80 && b <= 0x8F;
    default: return (b & 0xC0) == 0x80;
    }
}

/* Length of an incomplete UTF-8 sequence at the end of s (0 if none): the
 * bytes of a valid prefix of one code point, which a later keystroke may
 * complete. A lead followed by a byte outside its range (F4 B0, E0 80, ED
 * A0) can never be completed: those bytes are C_BAD chunks already, final
 * whatever follows, as the engine's utf8_incomplete_tail has it (treating
 * them as pending made a session edited into such a text keep a token that
 * a fresh session did not: fuzz/fuzz_session.c found it). */
static size_t incomplete_tail(const uint8_t *s, size_t n) {
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        uint8_t b = s[n - k];
        if ((b & 0xC0) == 0x80) continue;   /* continuation: look further back */
        size_t need = b >= 0xF0 && b <= 0xF4 ? 4 : b >= 0xE0 && b <= 0xEF ? 3
                    : b >= 0xC2 && b <= 0xDF ? 2 : 1;
        if (need <= k || (k >= 2 && !second_ok(b, s[n - k + 1]))) return 0;
        return k;
    }
    return 0;
}

size_t tok_tail_start(const tok *t, const uint8_t *s, size_t n) {
    size_t m = n - incomplete_tail(s, n);
    if (m == 0) return 0;
    /* Restart from a position known to begin a chunk so a keystroke costs
     * O(distance to it), not O(n): a LF after a non-newline byte, or a space
     * after an ASCII letter (no chunk holds a letter followed by a space). */
    size_t a = 0;
    for (size_t p = m - 1; p > 0; p--) {
        uint8_t b = s[p], prev = s[p - 1];
        if ((b == '\n' && prev != '\n' && prev != '\r') ||
            (b == ' ' && (uint8_t)((prev | 0x20) - 'a') < 26)) {
            a = p;
            break;
        }
    }
    for (;;) {
        size_t e = tok_chunk_end(s, m, a);
        if (e >= m) return a;
        a = e;
    }
}
