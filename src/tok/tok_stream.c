/* tok_stream.c - reader and header writer for packed token streams
 * (format in tok_stream.h). */
#include "tok/tok_stream.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tok/tok.h"
#include "util/err.h"
#include "util/file.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "tok_stream hands out the file's little-endian u16 ids directly");

static const char STREAM_MAGIC[8] = {'L', 'A', 'Y', 'A', 'T', 'K', 'S', '1'};

void tok_stream_header(uint8_t hdr[TOK_STREAM_HEADER], int32_t vocab_size, uint64_t n_tokens,
                       const uint8_t sha[32]) {
    memcpy(hdr, STREAM_MAGIC, 8);
    uint32_t v = (uint32_t)vocab_size;
    for (int i = 0; i < 4; i++) hdr[8 + i] = (uint8_t)(v >> (8 * i));
    memset(hdr + 12, 0, 4);
    for (int i = 0; i < 8; i++) hdr[16 + i] = (uint8_t)(n_tokens >> (8 * i));
    memcpy(hdr + 24, sha, 32);
}

laya_status tok_sha256(const tok *t, uint8_t out[32]) {
    uint8_t *blob;
    size_t n;
    laya_status st = tok_save(t, &blob, &n);
    if (st != LAYA_OK) return st;
    crypto_hash_sha256(out, blob, n);
    free(blob);
    return LAYA_OK;
}

void tok_stream_close(tok_stream *s) {
    if (s && s->map) munmap(s->map, s->map_len);
    if (s) memset(s, 0, sizeof *s);
}

laya_status tok_stream_open(const char *path, tok_stream *s, char *err, size_t errlen) {
    if (!s || !path) return err_set(err, errlen, LAYA_ERR_ARG, "tok_stream_open: NULL argument");
    memset(s, 0, sizeof *s);
    int fd;
    size_t n;
    laya_status ost = file_open_regular(path, "token stream", &fd, &n, err, errlen);
    if (ost != LAYA_OK) return ost;
    if (n < TOK_STREAM_HEADER) {
        close(fd);
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "token stream '%s' truncated: %zu bytes, the header alone is %d", path, n,
                       TOK_STREAM_HEADER);
    }
    uint8_t *p = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return err_set(err, errlen, LAYA_ERR_IO, "cannot map '%s': %s", path, strerror(errno));
    laya_status st = LAYA_OK;
    uint32_t V = (uint32_t)p[8] | (uint32_t)p[9] << 8 | (uint32_t)p[10] << 16 | (uint32_t)p[11] << 24;
    uint32_t reserved;
    memcpy(&reserved, p + 12, 4);
    uint64_t cnt = 0;
    for (int i = 7; i >= 0; i--) cnt = cnt << 8 | p[16 + i];
    if (memcmp(p, STREAM_MAGIC, 8)) {
        st = err_set(err, errlen, LAYA_ERR_FORMAT, "'%s' is not a Laya token stream (bad magic)", path);
    } else if (V < TOK_FIRST_MERGE || V > TOK_MAX_VOCAB || reserved) {
        st = err_set(err, errlen, LAYA_ERR_FORMAT, "token stream '%s': bad header (vocab %u, reserved %u)",
                     path, V, reserved);
    } else if (cnt > (n - TOK_STREAM_HEADER) / 2 || TOK_STREAM_HEADER + 2 * cnt != n) {
        st = err_set(err, errlen, LAYA_ERR_FORMAT,
                     "token stream '%s' is %zu bytes but its header promises %llu tokens (%s)", path,
                     n, (unsigned long long)cnt,
                     TOK_STREAM_HEADER + 2 * (cnt > n ? n : cnt) > n ? "truncated" : "wrong size");
    } else {
        const uint16_t *ids = (const uint16_t *)(p + TOK_STREAM_HEADER);
        for (uint64_t i = 0; i < cnt; i++)
            if (ids[i] >= V) {
                st = err_set(err, errlen, LAYA_ERR_FORMAT,
                             "token stream '%s': token %llu is id %u, not below the vocabulary size %u",
                             path, (unsigned long long)i, ids[i], V);
                break;
            }
    }
    if (st != LAYA_OK) {
        munmap(p, n);
        return st;
    }
    s->ids = (const uint16_t *)(p + TOK_STREAM_HEADER);
    s->n = cnt;
    s->vocab_size = (int32_t)V;
    memcpy(s->tok_sha256, p + 24, 32);
    s->map = p;
    s->map_len = n;
    return LAYA_OK;
}
