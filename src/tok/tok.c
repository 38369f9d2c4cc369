/* tok.c - the tokenizer file format, its validation, encode and decode.
 *
 * File format "LAYATOK1" (all integers little-endian):
 *   offset 0   8 bytes  magic "LAYATOK1"
 *          8   u32      format version (TOK_FORMAT_VERSION = 1)
 *         12   u32      vocabulary size V, 260..65536
 *         16   u32      number of special tokens (TOK_N_SPECIAL = 4)
 *         20   u32      flags = pre-tokenizer rules version (TOK_PRETOK_VERSION)
 *         24   (V - 260) merges of two u32 (left, right), in id order:
 *                       id 260 + i has the bytes of left followed by right.
 * Nothing follows. The loader checks every field: exact size, left and right
 * below the new id and not special, no token longer than TOK_MAX_TOKEN bytes,
 * and no two ids with the same bytes (a duplicate would make encoding
 * ambiguous); each failure names the offending entry.
 *
 * Encoding applies, within each pre-tokenizer chunk, the lowest-id merge
 * among adjacent pairs until none applies (leftmost first on a tie), which
 * reproduces what the trainer did to the same chunk. A chunk that is itself
 * a token which encodes to itself (most frequent chunks: t->whole) takes one
 * hash lookup instead. A chunk of CJK characters goes character by
 * character first (tok_encode_cjk, exact when the merges allow it, checked
 * at load). There is no cache: a tok is read-only after load and
 * safe to share between threads, and a per-call cache measured slower (its
 * misses cost more than BPE on the ~20% of chunks that need it). */
#include "tok/tok_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/file.h"
#include "util/hash.h"
#include "util/utf8.h"

static const char TOK_MAGIC[8] = {'L', 'A', 'Y', 'A', 'T', 'O', 'K', '1'};

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void wr32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

uint64_t tok_hash_bytes(const uint8_t *s, size_t n) {
    /* 64-bit FNV-1a over 8-byte words then a final mix: chunks are short, so
     * a word at a time is most of the speed. */
    uint64_t h = HASH_FNV64_BASIS ^ n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * HASH_FNV64_PRIME;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * HASH_FNV64_PRIME;
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ull;
    h ^= h >> 32;
    return h;
}

int32_t tok_lookup_bytes(const tok *t, const uint8_t *s, size_t n) {
    if (n == 0 || n > t->max_len) return -1;
    uint32_t h = (uint32_t)tok_hash_bytes(s, n);
    for (;;) {
        int32_t id = t->str_tab[h & t->str_mask];
        if (id < 0) return -1;
        uint32_t len = t->off[id + 1] - t->off[id];
        if (len == n && !memcmp(t->pool + t->off[id], s, n)) return id;
        h++;
    }
}

void tok_free(tok *t) {
    if (!t) return;
    free(t->merge);
    free(t->off);
    free(t->pool);
    free(t->pair_tab);
    free(t->str_tab);
    free(t->sorted);
    free(t->whole);
    free(t->byte_pair);
    free(t->cjk_char);
    free(t);
}

static size_t encode_chunk(const tok *t, const uint8_t *s, size_t n, int32_t *out);
static int cjk_merges_ok(const tok *t);

/* The CJK path's characters: 3-byte UTF-8 with a lead byte E3..E9, i.e.
 * U+3000..U+9FFF (utf8_cjk_path_lead tells a byte that starts one).
 * cjk_char_at gives the index of the character at b into cjk_char, or -1
 * when b does not hold a whole such character. */
_Static_assert((int)TOK_CJK_FIRST == (int)UTF8_CJK_PATH_FIRST &&
                   (int)TOK_CJK_FIRST + (int)TOK_CJK_CHARS == (int)UTF8_CJK_PATH_END,
               "cjk_char is indexed by the code points whose lead byte utf8_cjk_path_lead accepts");
static int32_t cjk_char_at(const uint8_t *b) {
    if (!utf8_cjk_path_lead(b[0]) || (b[1] & 0xC0) != 0x80 || (b[2] & 0xC0) != 0x80) return -1;
    uint32_t cp = (uint32_t)(b[0] & 0x0F) << 12 | (uint32_t)(b[1] & 0x3F) << 6 | (b[2] & 0x3F);
    return (int32_t)(cp - TOK_CJK_FIRST);
}

static uint32_t pow2_at_least(uint32_t n) {
    uint32_t p = 16;
    while (p < n) p <<= 1;
    return p;
}

/* Token lengths into t->off (V+1 offsets into the pool), validating each
 * merge: both parts earlier tokens with bytes, the result within
 * TOK_MAX_TOKEN. Lengths first so the pool is one allocation. */
static laya_status tok_build_lengths(tok *t, const uint16_t (*merge)[2], char *err, size_t errlen) {
    t->off[0] = 0;
    for (int32_t id = 0; id < t->V; id++) {
        uint32_t len;
        if (id < 256) len = 1;
        else if (id < TOK_FIRST_MERGE) len = 0;
        else {
            uint32_t l = merge[id - TOK_FIRST_MERGE][0], r = merge[id - TOK_FIRST_MERGE][1];
            for (int k = 0; k < 2; k++) {
                uint32_t x = k ? r : l;
                if (x >= (uint32_t)id)
                    return err_set(err, errlen, LAYA_ERR_FORMAT,
                                   "merge for id %d uses id %u, which is not below it "
                                   "(merges must only combine earlier tokens)", (int)id, x);
                if (x >= 256 && x < TOK_FIRST_MERGE)
                    return err_set(err, errlen, LAYA_ERR_FORMAT,
                                   "merge for id %d uses special token %u, which has no bytes",
                                   (int)id, x);
            }
            len = (t->off[l + 1] - t->off[l]) + (t->off[r + 1] - t->off[r]);
            if (len > TOK_MAX_TOKEN)
                return err_set(err, errlen, LAYA_ERR_FORMAT,
                               "token %d would be %u bytes long (limit %d): corrupt merge table",
                               (int)id, len, TOK_MAX_TOKEN);
        }
        t->off[id + 1] = t->off[id] + len;
        if (len > t->max_len) t->max_len = len;
    }
    return LAYA_OK;
}

/* The pool: every token's bytes, a merge's being its two parts'. */
static laya_status tok_build_pool(tok *t, const uint16_t (*merge)[2]) {
    t->pool = malloc(t->off[t->V] + 16); /* slack: decode copies 16 bytes at a time */
    if (!t->pool) return LAYA_ERR_NOMEM;
    for (int32_t id = 0; id < t->V; id++) {
        uint8_t *dst = t->pool + t->off[id];
        if (id < 256) *dst = (uint8_t)id;
        else if (id >= TOK_FIRST_MERGE) {
            uint32_t l = merge[id - TOK_FIRST_MERGE][0], r = merge[id - TOK_FIRST_MERGE][1];
            uint32_t ll = t->off[l + 1] - t->off[l];
            memcpy(dst, t->pool + t->off[l], ll);
            memcpy(dst + ll, t->pool + t->off[r], t->off[r + 1] - t->off[r]);
        }
    }
    return LAYA_OK;
}

/* The two hashes, load factor <= 1/2: pair -> merged id, bytes -> id
 * (refusing two tokens with the same bytes). */
static laya_status tok_build_hashes(tok *t, const uint16_t (*merge)[2], char *err, size_t errlen) {
    int32_t V = t->V, M = V - TOK_FIRST_MERGE;
    uint32_t cap = pow2_at_least(2 * (uint32_t)M + 2);
    t->pair_mask = cap - 1;
    t->pair_tab = calloc(cap, sizeof *t->pair_tab);
    if (!t->pair_tab) return LAYA_ERR_NOMEM;
    uint32_t scap = pow2_at_least(2 * (uint32_t)V);
    t->str_mask = scap - 1;
    t->str_tab = malloc(sizeof *t->str_tab * scap);
    if (!t->str_tab) return LAYA_ERR_NOMEM;
    memset(t->str_tab, 0xFF, sizeof *t->str_tab * scap);
    for (int32_t id = 0; id < V; id++) {
        if (id >= 256 && id < TOK_FIRST_MERGE) continue;
        const uint8_t *b = t->pool + t->off[id];
        uint32_t len = t->off[id + 1] - t->off[id];
        int32_t dup = tok_lookup_bytes(t, b, len);
        if (dup >= 0)
            return err_set(err, errlen, LAYA_ERR_FORMAT,
                           "duplicate entry: token %d has the same %u bytes as token %d",
                           (int)id, len, (int)dup);
        uint32_t h = (uint32_t)tok_hash_bytes(b, len);
        while (t->str_tab[h & t->str_mask] >= 0) h++;
        t->str_tab[h & t->str_mask] = id;
        if (id >= TOK_FIRST_MERGE) {
            uint32_t ph = tok_pair_hash(merge[id - TOK_FIRST_MERGE][0], merge[id - TOK_FIRST_MERGE][1]);
            while (t->pair_tab[ph & t->pair_mask]) ph++;
            t->pair_tab[ph & t->pair_mask] = (uint16_t)id;
        }
    }
    return LAYA_OK;
}

/* Whether encoding token id's own bytes gives back that one token. Found on
 * first need and kept in t->whole (0 not yet known, TOK_WHOLE_YES,
 * TOK_WHOLE_NO), not at load: re-encoding all 8k tokens was a third of a
 * load, and a session needs the answer for the few hundred chunks it meets.
 * Sessions on other threads may share t: every one computes the same value,
 * and the byte is read and written with relaxed atomics. */
int tok_is_whole(const tok *t, int32_t id) {
    if (id < TOK_FIRST_MERGE || id >= t->V) return id >= 0 && id < 256;
    uint8_t w = __atomic_load_n(&t->whole[id], __ATOMIC_RELAXED);
    if (!w) {
        int32_t tmp[TOK_CHUNK_MAX + 4];
        uint32_t len = t->off[id + 1] - t->off[id];
        w = len <= TOK_CHUNK_MAX && encode_chunk(t, t->pool + t->off[id], len, tmp) == 1 ? TOK_WHOLE_YES
                                                                                        : TOK_WHOLE_NO;
        __atomic_store_n(&t->whole[id], w, __ATOMIC_RELAXED);
    }
    return w == TOK_WHOLE_YES;
}

/* The encoder's shortcuts, all derived from the merges: the sorted index,
 * byte pair -> id, which tokens encode to themselves (whole), and the CJK
 * path's table and its validity (cjk_ok). */
static laya_status tok_build_shortcuts(tok *t, const uint16_t (*merge)[2]) {
    int32_t V = t->V, M = V - TOK_FIRST_MERGE;
    if (tok_build_sorted(t) != LAYA_OK) return LAYA_ERR_NOMEM;
    t->byte_pair = calloc(256 * 256, sizeof *t->byte_pair);
    if (!t->byte_pair) return LAYA_ERR_NOMEM;
    for (int32_t i = 0; i < M; i++)
        if (merge[i][0] < 256 && merge[i][1] < 256)
            t->byte_pair[merge[i][0] << 8 | merge[i][1]] = (uint16_t)(TOK_FIRST_MERGE + i);
    t->whole = calloc((size_t)V, 1); /* every entry "not yet known": tok_is_whole */
    if (!t->whole) return LAYA_ERR_NOMEM;
    t->cjk_char = calloc(TOK_CJK_CHARS, sizeof *t->cjk_char);
    if (!t->cjk_char) return LAYA_ERR_NOMEM;
    for (int32_t id = TOK_FIRST_MERGE; id < V; id++) {
        int32_t ci = t->off[id + 1] - t->off[id] == 3 ? cjk_char_at(t->pool + t->off[id]) : -1;
        if (ci >= 0 && tok_is_whole(t, id)) t->cjk_char[ci] = (uint16_t)id;
    }
    t->cjk_ok = cjk_merges_ok(t);
    return LAYA_OK;
}

laya_status tok_build(int32_t V, const uint16_t (*merge)[2], tok **out, char *err, size_t errlen) {
    *out = NULL;
    if (V < TOK_FIRST_MERGE || V > TOK_MAX_VOCAB)
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "vocabulary size %d outside %d..%d", (int)V, TOK_FIRST_MERGE, TOK_MAX_VOCAB);
    int32_t M = V - TOK_FIRST_MERGE;
    tok *t = calloc(1, sizeof *t);
    if (!t) return LAYA_ERR_NOMEM;
    t->V = V;
    t->merge = malloc(sizeof *t->merge * (size_t)(M ? M : 1));
    t->off = malloc(sizeof *t->off * ((size_t)V + 1));
    laya_status st = t->merge && t->off ? LAYA_OK : LAYA_ERR_NOMEM;
    if (st == LAYA_OK && M) memcpy(t->merge, merge, sizeof *t->merge * (size_t)M);
    if (st == LAYA_OK) st = tok_build_lengths(t, merge, err, errlen);
    if (st == LAYA_OK) st = tok_build_pool(t, merge);
    if (st == LAYA_OK) st = tok_build_hashes(t, merge, err, errlen);
    if (st == LAYA_OK) st = tok_build_shortcuts(t, merge);
    if (st != LAYA_OK) {
        tok_free(t);
        if (st == LAYA_ERR_NOMEM)
            err_set(err, errlen, st, "out of memory building a %d-token vocabulary", (int)V);
        return st;
    }
    *out = t;
    return LAYA_OK;
}

laya_status tok_load(const uint8_t *blob, size_t n, tok **out, char *err, size_t errlen) {
    if (!out) return err_set(err, errlen, LAYA_ERR_ARG, "tok_load: out is NULL");
    *out = NULL;
    if (!blob || n < TOK_HEADER_BYTES)
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "tokenizer truncated: %zu bytes, the header alone is %d", n, TOK_HEADER_BYTES);
    if (memcmp(blob, TOK_MAGIC, 8))
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "not a Laya tokenizer (bad magic; expected \"LAYATOK1\")");
    uint32_t version = rd32(blob + 8), V = rd32(blob + 12), n_special = rd32(blob + 16),
             flags = rd32(blob + 20);
    if (version != TOK_FORMAT_VERSION)
        return err_set(err, errlen, LAYA_ERR_UNSUPPORTED,
                       "tokenizer format version %u, this build reads version %d", version,
                       TOK_FORMAT_VERSION);
    if (n_special != TOK_N_SPECIAL)
        return err_set(err, errlen, LAYA_ERR_FORMAT, "tokenizer declares %u special tokens, expected %d",
                       n_special, TOK_N_SPECIAL);
    if (flags != TOK_PRETOK_VERSION)
        return err_set(err, errlen, LAYA_ERR_UNSUPPORTED,
                       "tokenizer uses pre-tokenizer rules %u, this build has rules %d", flags,
                       TOK_PRETOK_VERSION);
    if (V < TOK_FIRST_MERGE || V > TOK_MAX_VOCAB)
        return err_set(err, errlen, LAYA_ERR_FORMAT, "vocabulary size %u outside %d..%d", V,
                       TOK_FIRST_MERGE, TOK_MAX_VOCAB);
    size_t M = V - TOK_FIRST_MERGE, want = TOK_HEADER_BYTES + 8 * M;
    if (n != want)
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "tokenizer is %zu bytes but a vocabulary of %u needs exactly %zu (%s)", n, V,
                       want, n < want ? "truncated" : "trailing bytes");
    uint16_t (*merge)[2] = malloc(sizeof *merge * (M ? M : 1));
    if (!merge) return LAYA_ERR_NOMEM;
    for (size_t i = 0; i < M; i++) {
        uint32_t l = rd32(blob + TOK_HEADER_BYTES + 8 * i), r = rd32(blob + TOK_HEADER_BYTES + 8 * i + 4);
        uint32_t id = (uint32_t)(TOK_FIRST_MERGE + i);
        if (l >= id || r >= id) {
            free(merge);
            return err_set(err, errlen, LAYA_ERR_FORMAT,
                           "merge for id %u is (%u, %u): ids must be below %u", id, l, r, id);
        }
        merge[i][0] = (uint16_t)l;
        merge[i][1] = (uint16_t)r;
    }
    laya_status st = tok_build((int32_t)V, (const uint16_t (*)[2])merge, out, err, errlen);
    free(merge);
    return st;
}

laya_status tok_load_file(const char *path, tok **out, char *err, size_t errlen) {
    if (!out || !path) return err_set(err, errlen, LAYA_ERR_ARG, "tok_load_file: NULL argument");
    *out = NULL;
    FILE *f;
    laya_status ost = file_fopen_regular(path, "tokenizer", &f, NULL, err, errlen);
    if (ost != LAYA_OK) return ost;
    /* A real tokenizer is at most 24 + 8 * 65276 bytes; read one more to notice trailing data. */
    size_t cap = TOK_HEADER_BYTES + 8 * (size_t)(TOK_MAX_VOCAB - TOK_FIRST_MERGE) + 1;
    uint8_t *buf = malloc(cap);
    if (!buf) { fclose(f); return LAYA_ERR_NOMEM; }
    size_t n = fread(buf, 1, cap, f);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return err_set(err, errlen, LAYA_ERR_IO, "cannot read tokenizer '%s'", path);
    }
    char sub[400] = "";
    laya_status st = tok_load(buf, n, out, sub, sizeof sub);
    free(buf);
    if (st != LAYA_OK) return err_set(err, errlen, st, "%s: %s", path, sub);
    return LAYA_OK;
}

laya_status tok_save(const tok *t, uint8_t **blob, size_t *n) {
    if (!t || !blob || !n) return LAYA_ERR_ARG;
    size_t M = (size_t)(t->V - TOK_FIRST_MERGE), len = TOK_HEADER_BYTES + 8 * M;
    uint8_t *b = malloc(len);
    if (!b) return LAYA_ERR_NOMEM;
    memcpy(b, TOK_MAGIC, 8);
    wr32(b + 8, TOK_FORMAT_VERSION);
    wr32(b + 12, (uint32_t)t->V);
    wr32(b + 16, TOK_N_SPECIAL);
    wr32(b + 20, TOK_PRETOK_VERSION);
    for (size_t i = 0; i < M; i++) {
        wr32(b + TOK_HEADER_BYTES + 8 * i, t->merge[i][0]);
        wr32(b + TOK_HEADER_BYTES + 8 * i + 4, t->merge[i][1]);
    }
    *blob = b;
    *n = len;
    return LAYA_OK;
}

laya_status tok_save_file(const tok *t, const char *path, char *err, size_t errlen) {
    uint8_t *b;
    size_t n;
    laya_status st = tok_save(t, &b, &n);
    if (st != LAYA_OK) return err_set(err, errlen, st, "cannot serialize the tokenizer");
    /* Write a sibling then rename, so a crash never leaves half a file. */
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        free(b);
        return err_set(err, errlen, LAYA_ERR_ARG, "path too long: '%s'", path);
    }
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        free(b);
        return err_set(err, errlen, LAYA_ERR_IO, "cannot create '%s': %s", tmp, strerror(errno));
    }
    int ok = fwrite(b, 1, n, f) == n;
    ok &= fclose(f) == 0;
    free(b);
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return err_set(err, errlen, LAYA_ERR_IO, "cannot write tokenizer '%s': %s", path, strerror(errno));
    }
    return LAYA_OK;
}

int32_t tok_vocab_size(const tok *t) { return t->V; }

const uint8_t *tok_bytes(const tok *t, int32_t id, size_t *len) {
    if (id < 0 || id >= t->V) { *len = 0; return t->pool; }
    *len = t->off[id + 1] - t->off[id];
    return t->pool + t->off[id];
}

/* BPE over m <= TOK_CHUNK_MAX symbols (one chunk): rank[i] is the id of
 * merging sym[i], sym[i+1] (NO_MERGE when none). Each step merges the
 * lowest id, leftmost on a tie; only the two neighbouring ranks change. The
 * minimum is taken over rank << POS_BITS | position, which is branch-free
 * and gives the leftmost of equal ranks. Returns the new m. */
enum { NO_MERGE = 0x1FFFF, POS_BITS = 6 };
_Static_assert((int)TOK_CHUNK_MAX <= 1 << POS_BITS, "a chunk's positions must fit in the key's low POS_BITS");
_Static_assert((int)TOK_MAX_VOCAB <= (int)NO_MERGE, "every merge id must rank below NO_MERGE");
_Static_assert((uint64_t)NO_MERGE << POS_BITS <= UINT32_MAX, "the key must fit in 32 bits");
static size_t bpe_run(const tok *t, int32_t *sym, uint32_t *rank, size_t m) {
    while (m > 1) {
        uint32_t key = UINT32_MAX;
        for (size_t i = 0; i + 1 < m; i++) {
            uint32_t k = rank[i] << POS_BITS | (uint32_t)i;
            key = k < key ? k : key;
        }
        if (key >> POS_BITS == NO_MERGE) break;
        size_t best = key & ((1u << POS_BITS) - 1);
        sym[best] = (int32_t)(key >> POS_BITS);
        for (size_t i = best + 1; i + 1 < m; i++) {
            sym[i] = sym[i + 1];
            rank[i] = rank[i + 1];
        }
        m--;
        if (best + 1 < m) {
            int32_t id = tok_pair_lookup(t, (uint32_t)sym[best], (uint32_t)sym[best + 1]);
            rank[best] = id < 0 ? NO_MERGE : (uint32_t)id;
        }
        if (best > 0) {
            int32_t id = tok_pair_lookup(t, (uint32_t)sym[best - 1], (uint32_t)sym[best]);
            rank[best - 1] = id < 0 ? NO_MERGE : (uint32_t)id;
        }
    }
    return m;
}

/* BPE on one chunk (n <= TOK_CHUNK_MAX) from its bytes: the reference. */
static size_t encode_chunk(const tok *t, const uint8_t *s, size_t n, int32_t *out) {
    if (n == 1) { out[0] = s[0]; return 1; }
    int32_t sym[TOK_CHUNK_MAX + 4];
    uint32_t rank[TOK_CHUNK_MAX + 4];
    for (size_t i = 0; i < n; i++) sym[i] = s[i];
    for (size_t i = 0; i + 1 < n; i++) {
        uint32_t id = t->byte_pair[s[i] << 8 | s[i + 1]];
        rank[i] = id ? id : NO_MERGE;
    }
    size_t m = bpe_run(t, sym, rank, n);
    memcpy(out, sym, sizeof *sym * m);
    return m;
}

size_t tok_encode_chunk_ref(const tok *t, const uint8_t *s, size_t n, int32_t *out) {
    return encode_chunk(t, s, n, out);
}

/* The CJK path. Why it gives the reference's ids: BPE applies merges in id
 * order, and a merge only exists once both its halves do (lower ids). If no
 * merge that can apply here joins part of a character across a character
 * boundary (cjk_merges_ok), a character's bytes merge among themselves
 * exactly as they would alone, and every merge between characters joins
 * tokens made of whole characters, each formed (at its own, lower id)
 * before that merge's turn. So: each character alone first (a table for
 * the 1-token ones, 3-symbol BPE for the rest), then BPE over the tokens. */
static size_t char3_bpe(const tok *t, const uint8_t *b, int32_t *out) {
    uint32_t r01 = t->byte_pair[b[0] << 8 | b[1]], r12 = t->byte_pair[b[1] << 8 | b[2]];
    if (!r01 && !r12) {
        out[0] = b[0], out[1] = b[1], out[2] = b[2];
        return 3;
    }
    int32_t l, r;
    if (r01 && (!r12 || r01 <= r12)) l = (int32_t)r01, r = b[2];
    else l = b[0], r = (int32_t)r12;
    int32_t id = tok_pair_lookup(t, (uint32_t)l, (uint32_t)r);
    if (id >= 0) {
        out[0] = id;
        return 1;
    }
    out[0] = l, out[1] = r;
    return 2;
}

size_t tok_encode_cjk(const tok *t, const uint8_t *s, size_t n, int32_t *out) {
    if (!t->cjk_ok || n % 3 || n > TOK_CHUNK_MAX) return 0;
    int32_t sym[TOK_CHUNK_MAX + 4];
    uint32_t rank[TOK_CHUNK_MAX + 4];
    size_t m = 0;
    for (size_t i = 0; i < n; i += 3) {
        int32_t ci = cjk_char_at(s + i);
        if (ci < 0) return 0;
        if (t->cjk_char[ci]) sym[m++] = t->cjk_char[ci];
        else m += char3_bpe(t, s + i, sym + m);
    }
    for (size_t i = 0; i + 1 < m; i++) {
        int32_t id = tok_pair_lookup(t, (uint32_t)sym[i], (uint32_t)sym[i + 1]);
        rank[i] = id < 0 ? NO_MERGE : (uint32_t)id;
    }
    m = bpe_run(t, sym, rank, m);
    memcpy(out, sym, sizeof *sym * m);
    return m;
}

/* 1 when every merge whose bytes can occur in text of 3-byte characters
 * U+3000..U+9FFF (leads E3..E9, continuations 80..BF) either stays inside
 * one character or joins two runs of whole characters. */
static int cjk_merges_ok(const tok *t) {
    for (int32_t id = TOK_FIRST_MERGE; id < t->V; id++) {
        const uint16_t *mg = t->merge[id - TOK_FIRST_MERGE];
        const uint8_t *b = t->pool + t->off[id];
        uint32_t n = t->off[id + 1] - t->off[id], nl = t->off[mg[0] + 1] - t->off[mg[0]];
        int relevant = 1, leads_inside = 0;
        for (uint32_t i = 0; i < n; i++) {
            int lead = utf8_cjk_path_lead(b[i]), cont = (b[i] & 0xC0) == 0x80;
            if (!lead && !cont) relevant = 0;
            if (lead && i > 0) leads_inside = 1;
        }
        if (!relevant) continue;
        if (n <= 3 && !leads_inside) continue; /* inside one character */
        /* Both halves whole characters: each starts with a lead and has a
         * length that is a multiple of 3, leads every 3 bytes. */
        int whole = nl % 3 == 0 && (n - nl) % 3 == 0;
        for (uint32_t i = 0; i < n && whole; i++) {
            if (utf8_cjk_path_lead(b[i]) != (i % 3 == 0)) whole = 0;
        }
        if (!whole) return 0;
    }
    return 1;
}

size_t tok_encode(const tok *t, const uint8_t *s, size_t n, int32_t *out, size_t cap) {
    int32_t tmp[TOK_CHUNK_MAX];
    size_t k = 0;
    for (size_t a = 0; a < n;) {
        size_t e = tok_chunk_end(s, n, a), len = e - a;
        const uint8_t *c = s + a;
        a = e;
        if (len == 1) {
            if (k < cap) out[k] = c[0];
            k++;
            continue;
        }
        if (len <= t->max_len) {
            int32_t id = tok_lookup_bytes(t, c, len);
            if (id >= 0 && tok_is_whole(t, id)) {
                if (k < cap) out[k] = id;
                k++;
                continue;
            }
        }
        size_t m = utf8_cjk_path_lead(c[0]) ? tok_encode_cjk(t, c, len, tmp) : 0;
        if (!m) m = encode_chunk(t, c, len, tmp);
        for (size_t i = 0; i < m; i++)
            if (k + i < cap) out[k + i] = tmp[i];
        k += m;
    }
    return k < cap ? k : cap;
}

size_t tok_decode(const tok *t, const int32_t *ids, size_t n, uint8_t *out, size_t cap) {
    size_t k = 0;
    const uint32_t *off = t->off;
    for (size_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if ((uint32_t)id >= (uint32_t)t->V) continue; /* not a token: produces nothing */
        uint32_t o = off[id], len = off[id + 1] - o;
        if (k + 16 <= cap && len <= 16) memcpy(out + k, t->pool + o, 16);
        else if (k < cap) memcpy(out + k, t->pool + o, len <= cap - k ? len : cap - k);
        k += len;
    }
    return k;
}
