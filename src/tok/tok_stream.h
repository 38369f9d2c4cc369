/* tok_stream.h - packed token streams: the output of `laya tokenizer encode`
 * and the input of the trainer.
 *
 * Format "LAYATKS1" (little-endian):
 *   offset 0   8 bytes   magic "LAYATKS1"
 *          8   u32       vocabulary size V of the tokenizer that made it
 *         12   u32       0 (reserved)
 *         16   u64       n_tokens
 *         24   32 bytes  sha256 of the serialized tokenizer (tok_save bytes)
 *         56   n_tokens u16 ids, each < V; the stream starts with TOK_BOS.
 * The header is 56 bytes, so the ids are 2-byte aligned in a mapping. */
#ifndef LAYA_TOK_STREAM_H
#define LAYA_TOK_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include "laya.h"
#include "tok/tok.h"

enum { TOK_STREAM_HEADER = 56 };

typedef struct {
    const uint16_t *ids;      /* (n) pointer into the read-only mapping */
    uint64_t n;
    int32_t vocab_size;
    uint8_t tok_sha256[32];   /* identifies the tokenizer that wrote it */
    void *map;                /* private: the mapping */
    size_t map_len;
} tok_stream;

/* Maps path read-only and validates it as hostile input: magic, reserved
 * field, exact size for n_tokens, and every id < vocab_size (one pass). On
 * success s owns the mapping (tok_stream_close). */
laya_status tok_stream_open(const char *path, tok_stream *s, char *err, size_t errlen);
void tok_stream_close(tok_stream *s);

/* Fills the 56-byte header (for writers). */
void tok_stream_header(uint8_t hdr[TOK_STREAM_HEADER], int32_t vocab_size, uint64_t n_tokens,
                       const uint8_t tok_sha256[32]);

/* sha256 of t's serialized form: what a stream's header records. */
laya_status tok_sha256(const tok *t, uint8_t out[32]);

#endif
