/* tok.h - byte-level BPE tokenizer (C2).
 *
 * Ids: 0..255 are the 256 byte values, so every byte string (invalid UTF-8
 * included) is representable. 256..256+TOK_N_SPECIAL-1 are special tokens
 * with no bytes. Every later id is a merge of two earlier ids, in rank order
 * (lower id = learned earlier = applied first).
 *
 * Pre-tokenization splits text into chunks and merges never cross a chunk
 * boundary, so the encoding of a text is the concatenation of the encodings
 * of its chunks (tok_chunk_end). That makes the tokens of every chunk before
 * the last one final while the user types: the engine re-encodes only the
 * unfinished tail (tok_tail_start).
 *
 * Shape letters: V vocabulary size. */
#ifndef LAYA_TOK_H
#define LAYA_TOK_H

#include <stddef.h>
#include <stdint.h>
#include "laya.h"

enum {
    TOK_BOS = 256,      /* start of a text: every session and document starts with it */
    TOK_EOS = 257,      /* end of a document */
    TOK_PAD = 258,      /* padding in training batches, never predicted */
    TOK_RESERVED = 259, /* reserved for a later format */
    TOK_N_SPECIAL = 4,
    TOK_FIRST_MERGE = 260,
    TOK_MAX_VOCAB = 65536, /* ids fit in uint16_t in packed token streams */
    TOK_DEFAULT_VOCAB = 8192
};

typedef struct tok tok;

/* Parses a serialized tokenizer (the format written by tok_save, documented
 * in tok.c), validated as hostile input. blob is copied; *out is owned by the
 * caller (tok_free). */
laya_status tok_load(const uint8_t *blob, size_t n, tok **out, char *err, size_t errlen);
laya_status tok_load_file(const char *path, tok **out, char *err, size_t errlen);
/* Serializes t into a malloc'd buffer owned by the caller. */
laya_status tok_save(const tok *t, uint8_t **blob, size_t *n);
laya_status tok_save_file(const tok *t, const char *path, char *err, size_t errlen);
void tok_free(tok *t);

int32_t tok_vocab_size(const tok *t);
/* The bytes of token id (len 0 for specials). Pointer owned by t. */
const uint8_t *tok_bytes(const tok *t, int32_t id, size_t *len);

/* Pre-tokenizer: end offset (exclusive) of the chunk that starts at start
 * (start < n). Pure function of the bytes; documented in tok_chunk.c. */
size_t tok_chunk_end(const uint8_t *s, size_t n, size_t start);

/* Encodes s[0..n) into out (cap >= n always suffices). Returns the number of
 * tokens written; no BOS is added. */
size_t tok_encode(const tok *t, const uint8_t *s, size_t n, int32_t *out, size_t cap);
/* Decodes ids into out (specials produce nothing). Returns the bytes that the
 * full decoding needs; writes at most cap of them. */
size_t tok_decode(const tok *t, const int32_t *ids, size_t n, uint8_t *out, size_t cap);

/* Prefix support for completion.
 * tok_tail_start: the offset where the unfinished tail of s begins: the
 * bytes s[tail..n) may still change tokenization as more is typed, the bytes
 * before it are encoded for good (a chunk boundary). For a half-typed word
 * this is the start of the word (with its leading space); for a long run of
 * CJK text it is a boundary inside the run close to the end. */
size_t tok_tail_start(const tok *t, const uint8_t *s, size_t n);

/* Ids of every token whose bytes start with p[0..n) (n >= 1), that is the
 * tokens that could finish the partial text p in one step. Returns the count
 * (may exceed cap; only cap are written). Uses a sorted index: O(log V + out). */
size_t tok_extending(const tok *t, const uint8_t *p, size_t n, int32_t *out, size_t cap);
/* Ids of every token whose bytes are a proper, non-empty prefix of p[0..n):
 * tokens that consume part of p and leave the rest for later steps. */
size_t tok_prefixes(const tok *t, const uint8_t *p, size_t n, int32_t *out, size_t cap);

/* Training (tok_train.c). Learns merges from the files until vocab_size ids
 * exist. progress (optional) is called now and then with a fraction 0..1 and
 * a short status line. */
typedef void (*tok_progress_fn)(void *ctx, double frac, const char *what);
laya_status tok_train(const char *const *paths, int n_paths, int32_t vocab_size,
                      tok_progress_fn progress, void *ctx, tok **out,
                      char *err, size_t errlen);

#endif
