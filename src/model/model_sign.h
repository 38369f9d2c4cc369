/* model_sign.h - Ed25519 signatures of model files (C5), libsodium.
 *
 * A model file MODEL is signed by MODEL.sig, one text line:
 *     laya-model-signature-v2 <public key, 64 hex> <signature, 128 hex>\n
 * The signature is Ed25519 (PureEdDSA, crypto_sign_detached) over the
 * file's safetensors header: its 8-byte length and the JSON, whose
 * __metadata__ data_tree_blake2b is the tree checksum of the rest of the
 * file (the data section; st.h: BLAKE2b-256 of each MiB, hashed on every
 * core, then of those digests), or, in a file written before it,
 * data_blake2b its BLAKE2b-256. The checker verifies the header, then
 * hashes the data and compares: every byte is covered, through BLAKE2b's
 * collision resistance (128 bits, as Ed25519's security). Why not the whole file, as v1 did:
 * Ed25519 hashes its message with SHA-512, which runs at ~260 MB/s on the
 * AVX2 VM of 2026-12-04, against ~500 MB/s for libsodium's BLAKE2b, and the
 * loader hashed the data with BLAKE2b as well: v1 read a 7 MB model twice,
 * the slower pass first (~40% of the CPU time of `laya complete`). Any Ed25519
 * tool still checks a v2 signature (over the header bytes), and b2sum-like
 * tools the data. laya sign writes v2 for any file whose header names its
 * data's BLAKE2b (every model and intent head), v1 otherwise;
 *     laya-model-signature-v1 <key> <signature>\n
 * (over the whole file's bytes) is still checked as before, so files
 * signed before stay valid. The public key in the .sig only names the
 * signer for messages and to tell "signed by another key" from "modified
 * after signing"; trust comes from the trusted keys alone.
 *
 * Key files (laya keygen), one text line each:
 *     PREFIX.pub  laya-ed25519-public-v1 <64 hex>\n
 *     PREFIX.key  laya-ed25519-secret-v1 <128 hex>\n   (mode 0600; libsodium's
 *                 64-byte secret key: the seed, then the public key)
 *
 * The check runs on the mapped bytes before any parsing, so with a
 * signature required no unauthenticated byte reaches the parser. Built
 * with -DLAYA_FUZZ the loader skips it (and the checksum) so that mutated
 * files reach the parser; no other build can. */
#ifndef LAYA_MODEL_SIGN_H
#define LAYA_MODEL_SIGN_H

#include <stddef.h>
#include <stdint.h>
#include "laya.h"

enum { MODEL_KEY_BYTES = 32, MODEL_SECRET_BYTES = 64, MODEL_SIG_BYTES = 64, MODEL_MAX_TRUSTED = 16 };

/* What the loader trusts. */
typedef struct model_trust {
    int allow_unsigned;   /* load a model without a trusted signature (a .sig that does not
                             match its file is still refused) */
    int no_project_key;   /* trust keys[] only, not the compiled-in project keys */
    int no_signature_check;   /* structure only: laya sign checks a model before signing it */
    const uint8_t (*keys)[MODEL_KEY_BYTES];   /* (n_keys) more trusted public keys */
    int n_keys;
} model_trust;

/* The compiled-in project public keys; returns how many. */
int model_project_keys(const uint8_t (**keys)[MODEL_KEY_BYTES]);

/* The policy of laya_model_load: the project keys, plus the environment:
 * LAYA_ALLOW_UNSIGNED=1 sets allow_unsigned, LAYA_TRUSTED_KEYS (public key
 * files separated by ':') adds keys, read into store (MODEL_MAX_TRUSTED).
 * LAYA_ERR_IO/FORMAT with a sentence in err when a listed file is bad. */
laya_status model_trust_env(model_trust *t, uint8_t (*store)[MODEL_KEY_BYTES], char *err, size_t errlen);

/* The policy of laya_model_load_opts: opts (NULL: none) on top of
 * model_trust_env; keys (MODEL_MAX_TRUSTED) holds the keys t points to.
 * LAYA_ERR_ARG for bad options; errors of reading the key files. */
laya_status model_trust_opts(const laya_load_opts *opts, model_trust *t, uint8_t (*keys)[MODEL_KEY_BYTES],
                             char *err, size_t errlen);

/* How a file stands against a trust. */
typedef enum {
    MODEL_SIG_TRUSTED = 0,   /* a valid signature by a trusted key */
    MODEL_SIG_UNSIGNED,      /* no MODEL.sig */
    MODEL_SIG_UNTRUSTED,     /* a valid signature by a key not trusted */
    MODEL_SIG_BAD            /* MODEL.sig malformed, or not matching the file */
} model_sig_verdict;

/* Checks file[0..len) (the bytes of path) against path.sig. LAYA_OK when
 * trusted, or when allowed (allow_unsigned: UNSIGNED, UNTRUSTED);
 * otherwise LAYA_ERR_SIGNATURE (LAYA_ERR_IO when the .sig cannot be read)
 * with err saying which case and what to do. verdict and signer (the key
 * in the .sig, when there is one) are optional outputs. */
laya_status model_sig_check(const char *path, const uint8_t *file, size_t len, const model_trust *t,
                            model_sig_verdict *verdict, uint8_t signer[MODEL_KEY_BYTES], char *err,
                            size_t errlen);

/* Opens path (a regular file holding a `what`, such as "model", of min to
 * max bytes), maps it read-only and, unless t allows it or this is the
 * fuzz build (LAYA_FUZZ), checks its signature before anything parses it.
 * On success *map (munmap it, *len bytes) holds the authenticated bytes;
 * *verified (optional) is 1 when a v2 signature matched, whose check has
 * hashed the data section against the header's checksum (the loader
 * need not do it again), else 0 (v1, unsigned, no_signature_check: the
 * loader checks it itself, as before v2; st_data_verify). */
laya_status model_map_signed(const char *path, const char *what, size_t min, size_t max, const model_trust *t,
                             void **map, size_t *len, int *verified, char *err, size_t errlen);

/* model_sig_check on the bytes of the file at path. */
laya_status model_sig_check_file(const char *path, const model_trust *t, model_sig_verdict *verdict,
                                 uint8_t signer[MODEL_KEY_BYTES], char *err, size_t errlen);

/* Reads a public key file (a secret key file is refused). */
laya_status model_key_read(const char *path, uint8_t pk[MODEL_KEY_BYTES], char *err, size_t errlen);
/* Reads a secret key file; refuses one that group or others may read. The
 * caller wipes sk (sodium_memzero) when done. */
laya_status model_secret_read(const char *path, uint8_t sk[MODEL_SECRET_BYTES], char *err, size_t errlen);

/* A new key pair: PREFIX.key (0600) and PREFIX.pub. Refuses to overwrite
 * either (nothing is written then). pk (optional) gets the public key. */
laya_status model_keygen(const char *prefix, uint8_t pk[MODEL_KEY_BYTES], char *err, size_t errlen);

/* Writes sig_path (NULL: model_path.sig), atomically, signing model_path
 * with sk: v2 (its header) when the header's checksum (st_data_verify)
 * matches its data section, else v1 (every byte). It checks nothing else: laya sign loads
 * the model first. */
laya_status model_sign_file(const char *model_path, const uint8_t sk[MODEL_SECRET_BYTES], const char *sig_path,
                            char *err, size_t errlen);

/* 16 hex digits naming a key in messages: its first 8 bytes. */
void model_key_id(const uint8_t pk[MODEL_KEY_BYTES], char id[17]);

#endif
