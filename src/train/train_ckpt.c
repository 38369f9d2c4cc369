/* train_ckpt.c - the resume checkpoint OUTDIR/last.ckpt.
 *
 * Format "LAYACKP1" (little-endian, this machine's floats):
 *   0   8 bytes  magic "LAYACKP1"
 *   8   u32      format version (1)
 *  12   i32 x 8  V, H, D, L, W, B, T, carry
 *  44   u64 x 3  step, tokens, seed
 *  68   f64 x 2  elapsed seconds, best validation loss
 *  84   u64 x 2  P = parameter count, S = carried state floats (L*B*H)
 * 100   P f32 parameters, P f32 Adam m, P f32 Adam v, S f32 GRU states
 *  end  32 bytes sha256 of every byte before it
 * It is written to a temporary file and renamed over the old one, so a crash
 * mid-write leaves the previous checkpoint intact. Dropout masks are a pure
 * function of (seed, step) and batches of step, so these fields resume a
 * run exactly. */
#include "train/train.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/err.h"

static const char CKPT_MAGIC[8] = {'L', 'A', 'Y', 'A', 'C', 'K', 'P', '1'};
enum { CKPT_VERSION = 1, CKPT_HEADER = 100 };

typedef struct {
    FILE *f;
    crypto_hash_sha256_state h;
    int ok;
} hfile;

static void hwrite(hfile *w, const void *p, size_t n) {
    if (!w->ok) return;
    crypto_hash_sha256_update(&w->h, p, n);
    if (fwrite(p, 1, n, w->f) != n) w->ok = 0;
}

static int hread(hfile *r, void *p, size_t n) {
    if (fread(p, 1, n, r->f) != n) return 0;
    crypto_hash_sha256_update(&r->h, p, n);
    return 1;
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

laya_status train_ckpt_save(const char *path, const model_cfg *c, int B, int T, int carry,
                            const train_ckpt_meta *meta, const float *params, const float *m,
                            const float *v, const float *state, char *err, size_t errlen) {
    if (sodium_init() < 0) return err_set(err, errlen, LAYA_ERR_INTERNAL, "libsodium failed to initialize");
    size_t P = model_n_params(c), S = (size_t)c->L * B * c->H;
    uint8_t hdr[CKPT_HEADER] = {0};
    memcpy(hdr, CKPT_MAGIC, 8);
    put32(hdr + 8, CKPT_VERSION);
    int32_t ints[8] = {c->V, c->H, c->D, c->L, c->W, B, T, carry};
    memcpy(hdr + 12, ints, sizeof ints);
    put64(hdr + 44, (uint64_t)meta->step);
    put64(hdr + 52, (uint64_t)meta->tokens);
    put64(hdr + 60, meta->seed);
    memcpy(hdr + 68, &meta->elapsed, 8);
    memcpy(hdr + 76, &meta->best_valid, 8);
    put64(hdr + 84, P);
    put64(hdr + 92, S);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    hfile w = {.f = fopen(tmp, "wb"), .ok = 1};
    if (!w.f) return err_set(err, errlen, LAYA_ERR_IO, "cannot write checkpoint '%s': %s", tmp, strerror(errno));
    crypto_hash_sha256_init(&w.h);
    hwrite(&w, hdr, sizeof hdr);
    hwrite(&w, params, P * sizeof(float));
    hwrite(&w, m, P * sizeof(float));
    hwrite(&w, v, P * sizeof(float));
    hwrite(&w, state, S * sizeof(float));
    uint8_t sum[32];
    crypto_hash_sha256_final(&w.h, sum);
    if (w.ok && fwrite(sum, 1, 32, w.f) != 32) w.ok = 0;
    if (fflush(w.f) != 0 || fsync(fileno(w.f)) != 0) w.ok = 0;
    if (fclose(w.f) != 0) w.ok = 0;
    if (!w.ok || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return err_set(err, errlen, LAYA_ERR_IO, "cannot write checkpoint '%s': %s (disk full?)", path, strerror(e));
    }
    return LAYA_OK;
}

laya_status train_ckpt_load(const char *path, const model_cfg *c, int B, int T, int carry,
                            train_ckpt_meta *meta, float *params, float *m, float *v, float *state,
                            char *err, size_t errlen) {
    if (sodium_init() < 0) return err_set(err, errlen, LAYA_ERR_INTERNAL, "libsodium failed to initialize");
    hfile r = {.f = fopen(path, "rb"), .ok = 1};
    if (!r.f)
        return err_set(err, errlen, LAYA_ERR_IO, "cannot open checkpoint '%s': %s (nothing to resume)", path,
                       strerror(errno));
    crypto_hash_sha256_init(&r.h);
    laya_status st = LAYA_OK;
    uint8_t hdr[CKPT_HEADER];
    size_t P = model_n_params(c), S = (size_t)c->L * B * c->H;
    if (!hread(&r, hdr, sizeof hdr) || memcmp(hdr, CKPT_MAGIC, 8) != 0) {
        st = err_set(err, errlen, LAYA_ERR_FORMAT, "'%s' is not a Laya training checkpoint (bad magic or too short)", path);
        goto done;
    }
    if (get32(hdr + 8) != CKPT_VERSION) {
        st = err_set(err, errlen, LAYA_ERR_UNSUPPORTED, "checkpoint '%s' has format version %u; this build reads %d",
                     path, get32(hdr + 8), CKPT_VERSION);
        goto done;
    }
    int32_t ints[8];
    memcpy(ints, hdr + 12, sizeof ints);
    int32_t want[8] = {c->V, c->H, c->D, c->L, c->W, B, T, carry};
    if (memcmp(ints, want, sizeof ints) != 0) {
        st = err_set(err, errlen, LAYA_ERR_ARG,
                     "checkpoint '%s' was made with V=%d H=%d D=%d L=%d W=%d batch=%d seq=%d carry=%d, "
                     "this run asks for V=%d H=%d D=%d L=%d W=%d batch=%d seq=%d carry=%d; "
                     "pass the same shape to resume", path, ints[0], ints[1], ints[2], ints[3], ints[4],
                     ints[5], ints[6], ints[7], want[0], want[1], want[2], want[3], want[4], want[5],
                     want[6], want[7]);
        goto done;
    }
    if (get64(hdr + 84) != P || get64(hdr + 92) != S) {
        st = err_set(err, errlen, LAYA_ERR_FORMAT, "checkpoint '%s': tensor sizes disagree with its shape", path);
        goto done;
    }
    meta->step = (int64_t)get64(hdr + 44);
    meta->tokens = (int64_t)get64(hdr + 52);
    meta->seed = get64(hdr + 60);
    memcpy(&meta->elapsed, hdr + 68, 8);
    memcpy(&meta->best_valid, hdr + 76, 8);
    uint8_t sum[32], want_sum[32], extra;
    if (!hread(&r, params, P * sizeof(float)) || !hread(&r, m, P * sizeof(float)) ||
        !hread(&r, v, P * sizeof(float)) || !hread(&r, state, S * sizeof(float)) ||
        fread(sum, 1, 32, r.f) != 32) {
        st = err_set(err, errlen, LAYA_ERR_FORMAT, "checkpoint '%s' is truncated", path);
        goto done;
    }
    if (fread(&extra, 1, 1, r.f) != 0) {
        st = err_set(err, errlen, LAYA_ERR_FORMAT, "checkpoint '%s' has trailing bytes", path);
        goto done;
    }
    crypto_hash_sha256_final(&r.h, want_sum);
    if (sodium_memcmp(sum, want_sum, 32) != 0)
        st = err_set(err, errlen, LAYA_ERR_SIGNATURE, "checkpoint '%s' is corrupt (sha256 mismatch)", path);
    else if (meta->step < 0 || meta->tokens < 0 || !(meta->elapsed >= 0))
        st = err_set(err, errlen, LAYA_ERR_FORMAT, "checkpoint '%s' has impossible counters", path);
done:
    fclose(r.f);
    return st;
}
