/* hash.h - FNV-1a 64, the byte hash of Laya's hash tables and change
 * checks, defined once; tok.c's word-at-a-time hash of chunks takes its
 * constants. Not a cryptographic hash: for tables, caches and change
 * checks, never where someone could gain by making two keys collide. */
#ifndef LAYA_HASH_H
#define LAYA_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_FNV64_BASIS 0xcbf29ce484222325ull   /* the offset basis: a fresh hash */
#define HASH_FNV64_PRIME 0x100000001b3ull

/* FNV-1a 64 of s[0..n), going on from h: HASH_FNV64_BASIS for the plain
 * FNV-1a of s, or the hash of the bytes before s. This function can't fail. */
static inline uint64_t hash_fnv1a64(uint64_t h, const uint8_t *s, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * HASH_FNV64_PRIME;
    return h;
}

#endif
