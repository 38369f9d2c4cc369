/* st.h - a small safetensors reader and writer (the standard container:
 * 8-byte little-endian header length N, N bytes of JSON header, then the
 * data section). Knows nothing about Laya: model_file.c, prior.c and
 * intent_head.c put meaning on top.
 *
 * The reader validates the container as hostile input, as the reference
 * implementation does and more: header at most ST_MAX_HEADER bytes and
 * inside the file, JSON without duplicate keys, every entry's dtype known,
 * shape non-negative, byte size = prod(shape) * dtype size, data_offsets
 * inside the data section, each tensor aligned to its element size in the
 * file, and the tensors tiling the data section exactly (no overlap, no
 * gap, no trailing bytes), __metadata__ values all strings.
 *
 * The writer emits tensors contiguously in the given order (standard
 * readers refuse holes), pads the header with spaces so the data section
 * starts 64-byte aligned, and optionally records the BLAKE2b-256 of the data
 * section in __metadata__. Same input, same bytes.
 *
 * Why BLAKE2b for the data checksum: the loader hashes every byte of the
 * model (it is also what faults every page in), and on this machine
 * libsodium's BLAKE2b runs at about 440-500 MB/s against SHA-256's 280-320
 * MB/s (20 MB buffer; a plain read pass: 16-23 GB/s): 1.6x less cold-start
 * time, with the same 256-bit collision resistance a signature needs. */
#ifndef LAYA_ST_H
#define LAYA_ST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include "laya.h"

enum { ST_MAX_DIMS = 8, ST_MAX_HEADER = 16 << 20, ST_ALIGN = 64 };

typedef enum {
    ST_BOOL, ST_U8, ST_I8, ST_U16, ST_I16, ST_F16, ST_BF16,
    ST_U32, ST_I32, ST_F32, ST_U64, ST_I64, ST_F64, ST_N_DTYPES
} st_dtype;

const char *st_dtype_name(st_dtype d);   /* "F32", ... */
size_t st_dtype_size(st_dtype d);        /* bytes per element */

typedef struct {
    char *name;               /* owned by the st_file */
    st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    uint64_t begin, end;      /* byte range in the data section */
} st_tensor;

typedef struct {
    st_tensor *t;             /* (n) in header order; owned */
    int n;
    json_t *meta;             /* __metadata__ (string values), owned; NULL if absent */
    const uint8_t *data;      /* the data section, inside the caller's bytes */
    uint64_t data_start;      /* its offset in the file: 8 + N */
    uint64_t data_len;
} st_file;

/* Parses and validates file[0..len) (not copied: f->data points into it). */
laya_status st_parse(const uint8_t *file, size_t len, st_file *f, char *err, size_t errlen);
void st_free(st_file *f);
const st_tensor *st_find(const st_file *f, const char *name);
/* The string value of a __metadata__ key, or NULL. */
const char *st_meta(const st_file *f, const char *key);

/* One tensor to write. src is copied byte for byte, or, if fill is given,
 * fill(src, first, count, dst) writes elements [first, first+count) of the
 * stored tensor into dst (count * dtype size bytes), e.g. converting f32
 * to f16 on the fly. */
typedef struct {
    const char *name;
    st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    const void *src;
    void (*fill)(const void *src, size_t first, size_t count, void *dst);
} st_out;

/* Writes the tensors to path atomically (a temporary file renamed over it).
 * meta: an object of string values or NULL (not modified). sum_key: if not
 * NULL, __metadata__[sum_key] = hex BLAKE2b-256 of the data section (the
 * file's identity), and __metadata__[ST_TREE_KEY] = its tree checksum (what
 * a load verifies, st_tree_blake2b_hex). */
laya_status st_write(const char *path, const st_out *t, int n, const json_t *meta,
                     const char *sum_key, char *err, size_t errlen);

/* hex (65 bytes with the NUL) = the BLAKE2b-256 that st_write would record
 * for these tensors' data section (sum_key), without writing a file. */
void st_data_blake2b(const st_out *t, int n, char hex[65]);

/* hex (65 bytes with the NUL) = lowercase hex sha256 of p[0..n). */
void st_sha256_hex(const uint8_t *p, size_t n, char hex[65]);
/* hex (65 bytes with the NUL) = lowercase hex BLAKE2b-256 (unkeyed) of p[0..n). */
void st_blake2b_hex(const uint8_t *p, size_t n, char hex[65]);

/* The data section's tree checksum: BLAKE2b-256 of every ST_TREE_CHUNK bytes
 * (salt: the chunk's index; personal "laya-tree-leaf"), then BLAKE2b-256 of
 * those digests in order (salt: the data's length; personal
 * "laya-tree-root"). The same bytes as one BLAKE2b, in a few threads at once
 * (one per core, at most 8): it halves a model's load on two cores (the hash
 * was 40% of a cold start). hex: 65 bytes with the NUL. */
#define ST_TREE_KEY "data_tree_blake2b"
#define ST_TREE_CHUNK (1u << 20)
void st_tree_blake2b_hex(const uint8_t *p, size_t n, char hex[65]);
/* 1 if data[0..n) matches the checksum meta (a __metadata__ object) names:
 * ST_TREE_KEY where it has one, else data_blake2b. *key: the key checked;
 * got: what the data hashes to ("" when meta has no usable checksum). */
int st_data_verify(const json_t *meta, const uint8_t *data, size_t n, const char **key, char got[65]);

#endif
