/* model_sign.c - Ed25519 signatures of model files (model_sign.h), and the
 * trust policy of the public loader with options (model_trust_opts; the
 * loader, laya_model_load_opts, is the engine's: engine/load.c). */
#include "model/model_sign.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/model.h"
#include "util/err.h"
#include "util/file.h"
#include "util/st.h"

#define PUB_MAGIC "laya-ed25519-public-v1"
#define SEC_MAGIC "laya-ed25519-secret-v1"
#define SIG_MAGIC "laya-model-signature-v1"    /* over the whole file */
#define SIG_MAGIC2 "laya-model-signature-v2"   /* over the header, which names the data's BLAKE2b */

/* The Laya project's signing keys (models/MODEL.md: how to sign a model
 * with one). The secret halves never enter the repository. A key is added
 * when a model is signed on a machine that does not hold an earlier secret;
 * the earlier public keys stay, so models and heads signed with them still
 * load. */
static const uint8_t project_keys[][MODEL_KEY_BYTES] = {
    {   /* 1bf30237750bb12f...: the models of 2026-12-03 */
        0x1b, 0xf3, 0x02, 0x37, 0x75, 0x0b, 0xb1, 0x2f,
        0xcf, 0x14, 0x70, 0xaf, 0xb6, 0x7d, 0x6b, 0xc9,
        0x49, 0x9e, 0xfd, 0xe2, 0x4f, 0x7a, 0x44, 0x66,
        0xf2, 0x1a, 0xd2, 0x94, 0xeb, 0x91, 0xa4, 0x78,
    },
    {   /* f97ae51634b9d383...: the models of 2026-12-04 and the intent head */
        0xf9, 0x7a, 0xe5, 0x16, 0x34, 0xb9, 0xd3, 0x83,
        0x51, 0x7d, 0x67, 0x19, 0xd8, 0x1f, 0xc6, 0x4f,
        0x6d, 0x4e, 0xd9, 0x32, 0xc8, 0x13, 0xc3, 0xff,
        0xc9, 0x85, 0xbc, 0x52, 0x7c, 0x86, 0x82, 0x65,
    },
    {   /* 374ec1ea52b070f2...: from 2026-12-05 (the key above was lost with its machine) */
        0x37, 0x4e, 0xc1, 0xea, 0x52, 0xb0, 0x70, 0xf2,
        0x76, 0xad, 0xbc, 0x9c, 0xde, 0xfe, 0xfa, 0x19,
        0x91, 0x9d, 0x4a, 0x86, 0x98, 0xe2, 0x35, 0x83,
        0x9c, 0x33, 0x8b, 0xdf, 0xad, 0x3b, 0x20, 0xd2,
    },
};

int model_project_keys(const uint8_t (**keys)[MODEL_KEY_BYTES]) {
    *keys = project_keys;
    return (int)(sizeof project_keys / sizeof project_keys[0]);
}

void model_key_id(const uint8_t pk[MODEL_KEY_BYTES], char id[17]) { sodium_bin2hex(id, 17, pk, 8); }

/* ---- small text files ---- */

/* Reads all of a small regular file (at most cap - 1 bytes) into buf,
 * NUL-terminated. mode (optional) gets its permission bits. */
static laya_status read_small(const char *path, const char *what, char *buf, size_t cap, mode_t *mode, char *err,
                              size_t errlen) {
    int fd;
    size_t size;
    laya_status st = file_open_regular(path, what, &fd, &size, err, errlen);
    if (st != LAYA_OK) return st;
    if (mode) {
        struct stat sb;
        *mode = fstat(fd, &sb) == 0 ? sb.st_mode & 07777 : 0;
    }
    if (size >= cap) {
        close(fd);
        return err_set(err, errlen, LAYA_ERR_FORMAT, "%s '%s' is %zu bytes: too long for a %s", what, path, size, what);
    }
    size_t n = 0;
    while (n < cap - 1) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            return err_set(err, errlen, LAYA_ERR_IO, "cannot read %s '%s': %s", what, path, strerror(e));
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    return LAYA_OK;
}

/* Parses "MAGIC <hex>...\n" exactly: fields of the given byte sizes. */
static int parse_line(const char *s, const char *magic, uint8_t *f1, size_t n1, uint8_t *f2, size_t n2) {
    size_t ml = strlen(magic);
    if (strncmp(s, magic, ml) || s[ml] != ' ') return 0;
    const char *p = s + ml + 1;
    uint8_t *fs[2] = {f1, f2};
    size_t ns[2] = {n1, n2};
    for (int i = 0; i < 2 && fs[i]; i++) {
        if (i && *p++ != ' ') return 0;
        size_t bin_len = 0;
        const char *end;
        if (sodium_hex2bin(fs[i], ns[i], p, 2 * ns[i], NULL, &bin_len, &end) != 0 || bin_len != ns[i] ||
            end != p + 2 * ns[i])
            return 0;
        p = end;
    }
    return p[0] == '\n' && p[1] == 0;
}

laya_status model_key_read(const char *path, uint8_t pk[MODEL_KEY_BYTES], char *err, size_t errlen) {
    char buf[256];
    laya_status st = read_small(path, "public key", buf, sizeof buf, NULL, err, errlen);
    if (st != LAYA_OK) return st;
    if (!strncmp(buf, SEC_MAGIC, strlen(SEC_MAGIC))) {
        sodium_memzero(buf, sizeof buf);
        return err_set(err, errlen, LAYA_ERR_ARG, "'%s' is a secret key: pass the public one (PREFIX.pub)", path);
    }
    if (!parse_line(buf, PUB_MAGIC, pk, MODEL_KEY_BYTES, NULL, 0))
        return err_set(err, errlen, LAYA_ERR_FORMAT, "'%s' is not a Laya public key (one line: \"" PUB_MAGIC
                       " <64 hex digits>\", from laya keygen)", path);
    return LAYA_OK;
}

laya_status model_secret_read(const char *path, uint8_t sk[MODEL_SECRET_BYTES], char *err, size_t errlen) {
    char buf[256];
    mode_t mode = 0;
    laya_status st = read_small(path, "secret key", buf, sizeof buf, &mode, err, errlen);
    if (st != LAYA_OK) return st;
    int ok = parse_line(buf, SEC_MAGIC, sk, MODEL_SECRET_BYTES, NULL, 0);
    sodium_memzero(buf, sizeof buf);
    if (!ok)
        return err_set(err, errlen, LAYA_ERR_FORMAT, "'%s' is not a Laya secret key (one line: \"" SEC_MAGIC
                       " <128 hex digits>\", from laya keygen)", path);
    if (mode & 077) {
        sodium_memzero(sk, MODEL_SECRET_BYTES);
        return err_set(err, errlen, LAYA_ERR_ARG, "secret key '%s' may be read by others (mode %04o): "
                       "chmod 600 '%s', and consider the key exposed", path, (unsigned)mode, path);
    }
    /* the second half is the public key of the first: a check on the file */
    uint8_t pk[MODEL_KEY_BYTES];
    crypto_sign_ed25519_sk_to_pk(pk, sk);
    uint8_t seed[crypto_sign_SEEDBYTES], pk2[MODEL_KEY_BYTES], sk2[MODEL_SECRET_BYTES];
    crypto_sign_ed25519_sk_to_seed(seed, sk);
    crypto_sign_seed_keypair(pk2, sk2, seed);
    ok = sodium_memcmp(pk, pk2, MODEL_KEY_BYTES) == 0;
    sodium_memzero(seed, sizeof seed);
    sodium_memzero(sk2, sizeof sk2);
    if (!ok) {
        sodium_memzero(sk, MODEL_SECRET_BYTES);
        return err_set(err, errlen, LAYA_ERR_FORMAT, "secret key '%s' is damaged (its two halves disagree)", path);
    }
    return LAYA_OK;
}

/* Writes line to path, which must not exist (O_EXCL, no symlink followed). */
static laya_status write_new(const char *path, const char *line, mode_t mode, char *err, size_t errlen) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) {
        int e = errno;
        return err_set(err, errlen, LAYA_ERR_IO, "cannot create '%s': %s%s", path, strerror(e),
                       e == EEXIST ? " (not overwriting it: remove it or choose another --out)" : "");
    }
    size_t n = strlen(line);
    int ok = fchmod(fd, mode) == 0 && write(fd, line, n) == (ssize_t)n && fsync(fd) == 0;
    int e = errno;
    ok &= close(fd) == 0;
    if (!ok) {
        unlink(path);
        return err_set(err, errlen, LAYA_ERR_IO, "cannot write '%s': %s", path, strerror(e));
    }
    return LAYA_OK;
}

laya_status model_keygen(const char *prefix, uint8_t pk_out[MODEL_KEY_BYTES], char *err, size_t errlen) {
    if (!prefix || !*prefix) return err_set(err, errlen, LAYA_ERR_ARG, "no key file prefix given");
    if (sodium_init() < 0) return err_set(err, errlen, LAYA_ERR_INTERNAL, "libsodium failed to initialize");
    char kpath[4096], ppath[4096];
    if ((size_t)snprintf(kpath, sizeof kpath, "%s.key", prefix) >= sizeof kpath ||
        (size_t)snprintf(ppath, sizeof ppath, "%s.pub", prefix) >= sizeof ppath)
        return err_set(err, errlen, LAYA_ERR_ARG, "key file prefix too long");
    struct stat sb;
    if (lstat(kpath, &sb) == 0 || lstat(ppath, &sb) == 0)
        return err_set(err, errlen, LAYA_ERR_IO, "'%s' already exists: not overwriting a key (remove it or "
                       "choose another --out)", lstat(kpath, &sb) == 0 ? kpath : ppath);
    uint8_t pk[MODEL_KEY_BYTES], sk[MODEL_SECRET_BYTES];
    crypto_sign_keypair(pk, sk);
    char line[sizeof SEC_MAGIC + 2 * MODEL_SECRET_BYTES + 4];
    char hex[2 * MODEL_SECRET_BYTES + 1];
    sodium_bin2hex(hex, sizeof hex, sk, sizeof sk);
    snprintf(line, sizeof line, SEC_MAGIC " %s\n", hex);
    laya_status st = write_new(kpath, line, 0600, err, errlen);
    sodium_memzero(sk, sizeof sk);
    sodium_memzero(hex, sizeof hex);
    sodium_memzero(line, sizeof line);
    if (st != LAYA_OK) return st;
    sodium_bin2hex(hex, sizeof hex, pk, sizeof pk);
    snprintf(line, sizeof line, PUB_MAGIC " %s\n", hex);
    if ((st = write_new(ppath, line, 0644, err, errlen)) != LAYA_OK) {
        unlink(kpath);
        return st;
    }
    if (pk_out) memcpy(pk_out, pk, sizeof pk);
    return LAYA_OK;
}

/* ---- signing and checking ---- */

/* The length of file's safetensors header with its 8-byte length prefix
 * (the bytes a v2 signature covers), or 0 if it does not fit the file. */
static size_t header_bytes(const uint8_t *file, size_t len) {
    if (len < 8) return 0;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | file[i];
    return n < 2 || n > ST_MAX_HEADER || n > len - 8 ? 0 : (size_t)(8 + n);
}

/* 1 if the header file[0..hb) names, as __metadata__ data_tree_blake2b
 * (or, in a file written before it, data_blake2b), the checksum of the
 * rest of the file (the data section; st_data_verify). Reads the header
 * only once it is authenticated (or, signing, our own file). */
static int data_matches_header(const uint8_t *file, size_t len, size_t hb) {
    json_t *h = json_loadb((const char *)file + 8, hb - 8, JSON_REJECT_DUPLICATES, NULL);
    const char *key;
    char got[65];
    int ok = st_data_verify(json_object_get(h, "__metadata__"), file + hb, len - hb, &key, got);
    json_decref(h);
    return ok;
}

laya_status model_sign_file(const char *model_path, const uint8_t sk[MODEL_SECRET_BYTES], const char *sig_path,
                            char *err, size_t errlen) {
    if (!model_path || !sk) return err_set(err, errlen, LAYA_ERR_ARG, "model_sign_file: NULL argument");
    if (sodium_init() < 0) return err_set(err, errlen, LAYA_ERR_INTERNAL, "libsodium failed to initialize");
    char spath[4096], tmp[4200];
    if (!sig_path) {
        if ((size_t)snprintf(spath, sizeof spath, "%s.sig", model_path) >= sizeof spath)
            return err_set(err, errlen, LAYA_ERR_ARG, "model path too long");
        sig_path = spath;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp", sig_path);
    const uint8_t *p;
    size_t n;
    laya_status st = file_map_regular(model_path, "model", &p, &n, err, errlen);
    if (st != LAYA_OK) return st;
    uint8_t sig[MODEL_SIG_BYTES], pk[MODEL_KEY_BYTES];
    /* v2 (the header) when the header names the data's checksum, else v1 */
    size_t hb = header_bytes(p, n);
    const int v2 = hb && data_matches_header(p, n, hb);
    crypto_sign_detached(sig, NULL, p, v2 ? hb : n, sk);
    if (n) munmap((void *)(uintptr_t)p, n);
    crypto_sign_ed25519_sk_to_pk(pk, sk);
    char kh[2 * MODEL_KEY_BYTES + 1], sh[2 * MODEL_SIG_BYTES + 1], line[sizeof SIG_MAGIC + sizeof kh + sizeof sh + 4];
    sodium_bin2hex(kh, sizeof kh, pk, sizeof pk);
    sodium_bin2hex(sh, sizeof sh, sig, sizeof sig);
    snprintf(line, sizeof line, "%s %s %s\n", v2 ? SIG_MAGIC2 : SIG_MAGIC, kh, sh);
    /* a .tmp left by a crash is ours to replace, never a link to follow */
    struct stat sb;
    if (lstat(tmp, &sb) == 0 && S_ISREG(sb.st_mode)) unlink(tmp);
    if ((st = write_new(tmp, line, 0644, err, errlen)) != LAYA_OK) return st;
    if (rename(tmp, sig_path) != 0) {
        int e = errno;
        unlink(tmp);
        return err_set(err, errlen, LAYA_ERR_IO, "cannot write '%s': %s", sig_path, strerror(e));
    }
    return LAYA_OK;
}

static int trusted(const model_trust *t, const uint8_t pk[MODEL_KEY_BYTES]) {
    const uint8_t (*pkeys)[MODEL_KEY_BYTES];
    int np = model_project_keys(&pkeys);
    for (int i = 0; !t->no_project_key && i < np; i++)
        if (!memcmp(pkeys[i], pk, MODEL_KEY_BYTES)) return 1;
    for (int i = 0; i < t->n_keys; i++)
        if (!memcmp(t->keys[i], pk, MODEL_KEY_BYTES)) return 1;
    return 0;
}

#define HINT_TRUST "If you trained it yourself, set LAYA_ALLOW_UNSIGNED=1 (or pass --allow-unsigned), or sign it " \
                   "(laya keygen; laya sign MODEL --key KEY.key) and trust your key (LAYA_TRUSTED_KEYS=KEY.pub)"

/* model_sig_check; *data_checked = 1 when a v2 signature matched, whose
 * check hashed the data section against the header's data_blake2b. */
static laya_status sig_check(const char *path, const uint8_t *file, size_t len, const model_trust *t,
                             model_sig_verdict *verdict, uint8_t signer[MODEL_KEY_BYTES], int *data_checked,
                             char *err, size_t errlen) {
    *data_checked = 0;
    model_sig_verdict v_store;
    if (!verdict) verdict = &v_store;
    *verdict = MODEL_SIG_BAD;
    if (sodium_init() < 0) return err_set(err, errlen, LAYA_ERR_INTERNAL, "libsodium failed to initialize");
    char spath[4096], buf[512];
    if ((size_t)snprintf(spath, sizeof spath, "%s.sig", path) >= sizeof spath)
        return err_set(err, errlen, LAYA_ERR_ARG, "model path too long");
    struct stat sb;
    if (stat(spath, &sb) != 0 && errno == ENOENT) {
        *verdict = MODEL_SIG_UNSIGNED;
        if (t->allow_unsigned) return LAYA_OK;
        return err_set(err, errlen, LAYA_ERR_SIGNATURE, "%s is not signed (there is no %s): refusing a model of "
                       "unknown origin. " HINT_TRUST, path, spath);
    }
    laya_status st = read_small(spath, "signature", buf, sizeof buf, NULL, err, errlen);
    if (st != LAYA_OK) return st;
    uint8_t pk[MODEL_KEY_BYTES], sig[MODEL_SIG_BYTES];
    const int v2 = parse_line(buf, SIG_MAGIC2, pk, sizeof pk, sig, sizeof sig);
    if (!v2 && !parse_line(buf, SIG_MAGIC, pk, sizeof pk, sig, sizeof sig))
        return err_set(err, errlen, LAYA_ERR_SIGNATURE, "%s is not a Laya signature (one line: \"" SIG_MAGIC2
                       " <key> <signature>\"): refusing the model; sign it again (laya sign)", spath);
    if (signer) memcpy(signer, pk, sizeof pk);
    char id[17];
    model_key_id(pk, id);
    /* Against the key the .sig names: a failure means the bytes changed
     * (or the .sig is another file's), whoever the signer claims to be.
     * v1 covers every byte; v2 the header (its length included), which
     * names the data section's BLAKE2b-256: checked once the header is
     * authentic, so every byte is covered too. */
    size_t hb = v2 ? header_bytes(file, len) : len;
    if ((v2 && !hb) || crypto_sign_verify_detached(sig, file, hb, pk) != 0 ||
        (v2 && !data_matches_header(file, len, hb)))
        return err_set(err, errlen, LAYA_ERR_SIGNATURE, "bad signature: %s does not match %s (key %s): the model "
                       "was modified after it was signed, or the .sig belongs to another file. Get the model again, "
                       "or re-sign it if you changed it yourself (laya sign)", spath, path, id);
    *data_checked = v2;
    if (trusted(t, pk)) {
        *verdict = MODEL_SIG_TRUSTED;
        return LAYA_OK;
    }
    *verdict = MODEL_SIG_UNTRUSTED;
    if (t->allow_unsigned) return LAYA_OK;
    return err_set(err, errlen, LAYA_ERR_SIGNATURE, "%s is signed by another key (%s), not one this program "
                   "trusts: if that key is yours, trust its public key file (LAYA_TRUSTED_KEYS=KEY.pub; laya "
                   "verify MODEL --pubkey KEY.pub checks it), or set LAYA_ALLOW_UNSIGNED=1", path, id);
}

laya_status model_sig_check(const char *path, const uint8_t *file, size_t len, const model_trust *t,
                            model_sig_verdict *verdict, uint8_t signer[MODEL_KEY_BYTES], char *err,
                            size_t errlen) {
    int data_checked;
    return sig_check(path, file, len, t, verdict, signer, &data_checked, err, errlen);
}

laya_status model_map_signed(const char *path, const char *what, size_t min, size_t max, const model_trust *t,
                             void **map, size_t *len, int *verified, char *err, size_t errlen) {
    *map = NULL;
    if (verified) *verified = 0;
    int fd;
    laya_status st = file_open_regular(path, what, &fd, len, err, errlen);
    if (st != LAYA_OK) return st;
    if (*len < min || *len > max) {
        close(fd);
        return err_set(err, errlen, LAYA_ERR_FORMAT, "%s: file is %zu bytes, too %s to be a valid %s", path, *len,
                       *len < min ? "short" : "large", what);
    }
    if (sodium_init() < 0) {
        close(fd);
        return err_set(err, errlen, LAYA_ERR_INTERNAL, "libsodium failed to initialize");
    }
    void *m = mmap(NULL, *len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return err_set(err, errlen, LAYA_ERR_IO, "cannot map %s: %s", path, strerror(errno));
#ifndef LAYA_FUZZ
    /* Before any parsing: with a signature required, the parser sees only
     * authenticated bytes. */
    int data_checked = 0;
    if (!t->no_signature_check &&
        (st = sig_check(path, m, *len, t, NULL, NULL, &data_checked, err, errlen)) != LAYA_OK) {
        munmap(m, *len);
        return st;
    }
    if (verified) *verified = data_checked;
#endif
    *map = m;
    return LAYA_OK;
}

laya_status model_sig_check_file(const char *path, const model_trust *t, model_sig_verdict *verdict,
                                 uint8_t signer[MODEL_KEY_BYTES], char *err, size_t errlen) {
    const uint8_t *p;
    size_t n;
    laya_status st = file_map_regular(path, "model", &p, &n, err, errlen);
    if (st != LAYA_OK) return st;
    st = model_sig_check(path, p, n, t, verdict, signer, err, errlen);
    if (n) munmap((void *)(uintptr_t)p, n);
    return st;
}

laya_status model_trust_env(model_trust *t, uint8_t (*store)[MODEL_KEY_BYTES], char *err, size_t errlen) {
    const char *a = getenv("LAYA_ALLOW_UNSIGNED");
    if (a && !strcmp(a, "1")) t->allow_unsigned = 1;
    const char *list = getenv("LAYA_TRUSTED_KEYS");
    if (!list || !*list) return LAYA_OK;
    int n = t->n_keys;
    if (n && t->keys != store) memmove(store, t->keys, (size_t)n * MODEL_KEY_BYTES);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ':');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l) {
            char path[4096];
            if (l >= sizeof path) return err_set(err, errlen, LAYA_ERR_ARG, "LAYA_TRUSTED_KEYS: a path is too long");
            if (n == MODEL_MAX_TRUSTED)
                return err_set(err, errlen, LAYA_ERR_LIMIT, "LAYA_TRUSTED_KEYS names more than %d keys",
                               MODEL_MAX_TRUSTED);
            memcpy(path, p, l);
            path[l] = 0;
            char e2[400];
            laya_status st = model_key_read(path, store[n], e2, sizeof e2);
            if (st != LAYA_OK) return err_set(err, errlen, st, "LAYA_TRUSTED_KEYS: %s", e2);
            n++;
        }
        p += l + (e ? 1 : 0);
    }
    t->keys = (const uint8_t (*)[MODEL_KEY_BYTES])store;
    t->n_keys = n;
    return LAYA_OK;
}

/* ---- the trust of the public loader with options (include/laya.h) ---- */

laya_status model_trust_opts(const laya_load_opts *opts, model_trust *t, uint8_t (*keys)[MODEL_KEY_BYTES],
                             char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    if (opts) {
        if (opts->flags & ~(unsigned)LAYA_LOAD_ALLOW_UNSIGNED || opts->n_pubkeys < 0 ||
            (opts->n_pubkeys && !opts->pubkeys))
            return err_set(err, errlen, LAYA_ERR_ARG, "bad load options");
        if (opts->n_pubkeys > MODEL_MAX_TRUSTED / 2)
            return err_set(err, errlen, LAYA_ERR_LIMIT, "at most %d trusted public keys", MODEL_MAX_TRUSTED / 2);
        t->allow_unsigned = (opts->flags & LAYA_LOAD_ALLOW_UNSIGNED) != 0;
        for (int i = 0; i < opts->n_pubkeys; i++) {
            laya_status st = model_key_read(opts->pubkeys[i], keys[i], err, errlen);
            if (st != LAYA_OK) return st;
        }
        t->keys = (const uint8_t (*)[MODEL_KEY_BYTES])keys;
        t->n_keys = opts->n_pubkeys;
    }
    return model_trust_env(t, keys, err, errlen);
}
