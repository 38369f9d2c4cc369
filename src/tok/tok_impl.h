/* tok_impl.h - the tokenizer's private layout, shared by tok.c (load, save,
 * encode, decode), tok_prefix.c (sorted index) and tok_train.c. Not part of
 * any contract outside src/tok.
 *
 * Shape letters: V vocabulary size, M = V - TOK_FIRST_MERGE merges. */
#ifndef LAYA_TOK_IMPL_H
#define LAYA_TOK_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include "tok/tok.h"

enum {
    TOK_FORMAT_VERSION = 1,
    TOK_PRETOK_VERSION = 1,   /* the "flags" field: which tok_chunk_end rules */
    TOK_HEADER_BYTES = 24,
    TOK_CHUNK_MAX = 64,       /* no pre-tokenizer chunk is longer (bytes) */
    TOK_CJK_RUN = 4,          /* CJK runs are cut every 4 characters (tok_chunk.c) */
    TOK_MAX_TOKEN = 255       /* loader limit on a token's byte length */
};

struct tok {
    int32_t V;
    uint16_t (*merge)[2];   /* (M, 2): id TOK_FIRST_MERGE+i = merge[i][0] . merge[i][1] */
    uint32_t *off;          /* (V+1) byte offsets into pool; specials are empty */
    uint8_t *pool;          /* the bytes of every token, back to back */
    /* pair -> merged id: open addressing of ids (0 = empty), verified
     * against merge[]; 2 bytes a slot keeps the table and merge[] in L1/L2. */
    uint16_t *pair_tab;
    uint32_t pair_mask;
    /* bytes -> id: open addressing of ids, -1 empty, compared by bytes. */
    int32_t *str_tab;
    uint32_t str_mask;
    /* Ids of every non-special token sorted by their bytes (memcmp order,
     * shorter first on a tie): the index of tok_extending. */
    int32_t *sorted;        /* (V - TOK_N_SPECIAL) */
    int32_t n_sorted;
    uint32_t max_len;       /* longest token in bytes */
    /* (V) TOK_WHOLE_YES when encoding the token's own bytes gives back that
     * one token, so a chunk equal to it can skip BPE (most frequent chunks
     * are such), TOK_WHOLE_NO when not, 0 until first asked: read it
     * through tok_is_whole only. */
    uint8_t *whole;
    /* (256, 256) merged id of two bytes, 0 when they do not merge: the first
     * BPE step of every chunk without hashing. */
    uint16_t *byte_pair;
    /* The CJK path (tok.c, encode_cjk): 1 when no merge that can apply to
     * text of 3-byte characters U+3000..U+9FFF joins part of a character
     * to anything across a character boundary; then such a chunk can be
     * encoded character by character, then BPE over the characters'
     * tokens, with the same result. cjk_char (TOK_CJK_CHARS) is the id of
     * each character that is one whole token (0 when not). */
    int cjk_ok;
    uint16_t *cjk_char;
};

enum { TOK_CJK_FIRST = 0x3000, TOK_CJK_CHARS = 0xA000 - 0x3000 };
enum { TOK_WHOLE_YES = 1, TOK_WHOLE_NO = 2 };

/* 1 when encoding token id's own bytes gives back that one token (bytes
 * 0..255 always; specials never). Computed on first call per id (tok.c). */
int tok_is_whole(const tok *t, int32_t id);

/* The reference BPE of one chunk (n <= TOK_CHUNK_MAX bytes): ids to out,
 * returns their count. */
size_t tok_encode_chunk_ref(const tok *t, const uint8_t *s, size_t n, int32_t *out);
/* The CJK path for a chunk of 3-byte characters U+3000..U+9FFF: the same
 * ids as tok_encode_chunk_ref, or 0 when the chunk is not such (or the
 * tokenizer's merges do not allow the path: cjk_ok = 0). */
size_t tok_encode_cjk(const tok *t, const uint8_t *s, size_t n, int32_t *out);

/* Builds a tokenizer from its merges (ids TOK_FIRST_MERGE.. in order),
 * validating them as hostile input. merge (M, 2) is copied. */
laya_status tok_build(int32_t V, const uint16_t (*merge)[2], tok **out, char *err, size_t errlen);

/* The merged id of (left, right), or -1 when that pair is not a merge. */
static inline uint32_t tok_pair_hash(uint32_t left, uint32_t right) {
    return ((left << 16 | right) * 0x9E3779B1u) >> 12;
}

static inline int32_t tok_pair_lookup(const tok *t, uint32_t left, uint32_t right) {
    for (uint32_t h = tok_pair_hash(left, right);; h++) {
        uint32_t id = t->pair_tab[h & t->pair_mask];
        if (!id) return -1;
        const uint16_t *m = t->merge[id - TOK_FIRST_MERGE];
        if (m[0] == left && m[1] == right) return (int32_t)id;
    }
}

/* Hash of a byte string (the bytes->id table). */
uint64_t tok_hash_bytes(const uint8_t *s, size_t n);
/* The id whose bytes are exactly s[0..n), or -1. */
int32_t tok_lookup_bytes(const tok *t, const uint8_t *s, size_t n);
/* Builds t->sorted (tok_prefix.c). */
laya_status tok_build_sorted(tok *t);

#endif
