/* utf8.c - UTF-8 validation and character stepping (see utf8.h). */
#include "util/utf8.h"

/* Sequence length announced by a lead byte, 0 for a byte that cannot lead. */
static int lead_len(uint8_t b) {
    if (b < 0x80) return 1;
    if (b >= 0xC2 && b <= 0xDF) return 2;
    if (b >= 0xE0 && b <= 0xEF) return 3;
    if (b >= 0xF0 && b <= 0xF4) return 4;
    return 0;
}

/* The allowed range of the second byte after lead b: the first continuation
 * byte is where overlongs, surrogates and > U+10FFFF are excluded. */
static int second_ok(uint8_t lead, uint8_t b) {
    switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;
    case 0xED: return b >= 0x80 && b <= 0x9F;
    case 0xF0: return b >= 0x90 && b <= 0xBF;
    case 0xF4: return b >= 0x80 && b <= 0x8F;
    default: return (b & 0xC0) == 0x80;
    }
}

/* Validates one character at s[i..n): returns its length, 0 if invalid, or
 * -(missing bytes) if it is a valid but truncated start. */
static int char_at(const uint8_t *s, size_t n, size_t i) {
    int len = lead_len(s[i]);
    if (len == 0) return 0;
    for (int j = 1; j < len; j++) {
        if (i + (size_t)j >= n) return -(len - j);
        uint8_t b = s[i + (size_t)j];
        if (j == 1 ? !second_ok(s[i], b) : (b & 0xC0) != 0x80) return 0;
    }
    return len;
}

int utf8_check(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        if (s[i] < 0x80) { i++; continue; }
        int c = char_at(s, n, i);
        if (c == 0) return -1;
        if (c < 0) return -c;
        i += (size_t)c;
    }
    return 0;
}

int utf8_valid(const uint8_t *s, size_t n) { return utf8_check(s, n) == 0; }

size_t utf8_incomplete_tail(const uint8_t *s, size_t n) {
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        size_t i = n - k;
        if ((s[i] & 0xC0) == 0x80) continue;
        return char_at(s, n, i) < 0 ? k : 0;
    }
    return 0;
}

size_t utf8_prev(const uint8_t *s, size_t n) {
    if (n == 0) return 0;
    for (size_t k = 1; k <= 4 && k <= n; k++) {
        size_t i = n - k;
        if ((s[i] & 0xC0) == 0x80) continue;
        return char_at(s, n, i) == (int)k ? i : n - 1;
    }
    return n - 1;
}

size_t utf8_next(const uint8_t *s, size_t n, size_t i) {
    int c = char_at(s, n, i);
    return c > 0 ? i + (size_t)c : i + 1;
}

size_t utf8_count(const uint8_t *s, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i = utf8_next(s, n, i)) c++;
    return c;
}

int32_t utf8_cp_at(const uint8_t *s, size_t n, size_t i) {
    int len = char_at(s, n, i);
    if (len <= 0) return UTF8_NONE;
    static const uint8_t lead_mask[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
    uint32_t c = s[i] & lead_mask[len];
    for (int j = 1; j < len; j++) c = c << 6 | (s[i + (size_t)j] & 0x3Fu);
    return (int32_t)c;
}

int utf8_cjk_at(const uint8_t *s, size_t n, size_t i) {
    int32_t c = utf8_cp_at(s, n, i);
    if (c < 0) return 0;
    if (c >= 0x10000) return 1; /* 4 bytes: supplementary ideographs, emoji */
    return utf8_han_cp((uint32_t)c);
}
