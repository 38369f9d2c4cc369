/* utf8.h - UTF-8 checks shared by the engine and the front ends.
 *
 * The engine accepts any bytes as context (the model is byte-level) but must
 * never hand out broken UTF-8, and the front ends must refuse non-UTF-8
 * arguments. "Valid" here is RFC 3629: no overlong forms, no surrogates
 * (U+D800..U+DFFF), nothing above U+10FFFF. */
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

/* 1 iff the character at i (i < n) is a CJK ideograph: U+3400..U+9FFF,
 * U+F900..U+FAFF, or any 4-byte character (supplementary ideographs, and
 * emoji alike: both are typed whole, not letter by letter). */
int utf8_cjk_at(const uint8_t *s, size_t n, size_t i);

#endif
