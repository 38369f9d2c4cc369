/* cmd_sign.c - signed models (C5, model/model_sign.h):
 *
 *   laya keygen [--out PREFIX]                 PREFIX.key (0600) and PREFIX.pub; never overwrites
 *   laya sign MODEL --key PREFIX.key [--out SIG]   SIG (default MODEL.sig): Ed25519 over MODEL's header,
 *                                              which names its data's BLAKE2b (model_sign.h: v2)
 *   laya verify MODEL [--pubkey P.pub]...      exit 0 iff MODEL.sig is a good signature by a trusted
 *                                              key (the --pubkey keys if given, else the project key
 *                                              and $LAYA_TRUSTED_KEYS) and MODEL is a valid model
 */
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "intent/intent.h"
#include "model/model.h"
#include "model/model_sign.h"

int cmd_keygen(int argc, char **argv) {
    const char *prefix = "laya-signing";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: laya keygen [--out PREFIX]   (default PREFIX: laya-signing)\n"
                   "Makes an Ed25519 key pair for signing models: PREFIX.key, the secret (mode 0600:\n"
                   "keep it out of any repository) and PREFIX.pub, the public key to give to\n"
                   "whoever loads your models (LAYA_TRUSTED_KEYS=PREFIX.pub). Never overwrites a key.\n");
            return 0;
        } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            prefix = argv[++i];
        } else {
            cli_die("keygen: unexpected argument '%s' (laya keygen --help)", argv[i]);
        }
    }
    char err[512] = "", id[17];
    uint8_t pk[MODEL_KEY_BYTES];
    if (model_keygen(prefix, pk, err, sizeof err) != LAYA_OK) cli_die("keygen: %s", err);
    model_key_id(pk, id);
    printf("wrote %s.key (secret, mode 0600) and %s.pub (public); key %s\n", prefix, prefix, id);
    return 0;
}

int cmd_sign(int argc, char **argv) {
    const char *model_path = NULL, *key = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("usage: laya sign MODEL --key PREFIX.key [--out SIG]\n"
                   "Writes SIG (default MODEL.sig), an Ed25519 signature of MODEL's header, which\n"
                   "names the BLAKE2b-256 of the rest (so every byte is covered), after checking\n"
                   "that MODEL is a valid model. Replaces an older signature.\n");
            return 0;
        } else if (!strcmp(a, "--key") && i + 1 < argc) {
            key = argv[++i];
        } else if (!strcmp(a, "--out") && i + 1 < argc) {
            out = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            cli_die("sign: unknown option '%s' (laya sign --help)", a);
        } else if (!model_path) {
            model_path = a;
        } else {
            cli_die("sign: expected one MODEL, got a second: '%s'", a);
        }
    }
    if (!model_path || !key) cli_die("sign: usage: laya sign MODEL --key PREFIX.key [--out SIG]");
    /* Refuse to vouch for a file that is not a model the loader accepts. */
    char err[512] = "";
    model_trust t = {.no_signature_check = 1};
    model *m = NULL;
    laya_status st = model_load_opts(model_path, &t, &m, err, sizeof err);
    if (st != LAYA_OK) {
        /* An intent head (C10) is signed like a model; its structure is
         * checked alone (the base model it belongs to is checked on load). */
        intent_head *h = NULL;
        char e2[512] = "";
        if (intent_load(model_path, &t, 0, NULL, &h, e2, sizeof e2) != LAYA_OK)
            cli_die("sign: not signing '%s': %s (%s)", model_path, err, laya_status_str(st));
        intent_free(h);
        st = LAYA_OK;
    }
    model_free(m);
    uint8_t sk[MODEL_SECRET_BYTES], pk[MODEL_KEY_BYTES];
    if (model_secret_read(key, sk, err, sizeof err) != LAYA_OK) cli_die("sign: %s", err);
    st = model_sign_file(model_path, sk, out, err, sizeof err);
    crypto_sign_ed25519_sk_to_pk(pk, sk);
    sodium_memzero(sk, sizeof sk);
    if (st != LAYA_OK) cli_die("sign: %s", err);
    char id[17];
    model_key_id(pk, id);
    printf("signed %s with key %s: wrote %s%s\n", model_path, id, out ? out : model_path, out ? "" : ".sig");
    return 0;
}

int cmd_verify(int argc, char **argv) {
    const char *model_path = NULL;
    uint8_t keys[MODEL_MAX_TRUSTED][MODEL_KEY_BYTES];
    int nk = 0;
    char err[512] = "";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("usage: laya verify MODEL [--pubkey P.pub]...\n"
                   "Checks MODEL.sig against MODEL's bytes and a trusted key: the --pubkey keys\n"
                   "when given, else the Laya project key and $LAYA_TRUSTED_KEYS; then that MODEL\n"
                   "is a valid model. Exit status 0 only if both hold.\n");
            return 0;
        } else if (!strcmp(a, "--pubkey") && i + 1 < argc) {
            if (nk == MODEL_MAX_TRUSTED) cli_die("verify: at most %d --pubkey", MODEL_MAX_TRUSTED);
            if (model_key_read(argv[++i], keys[nk], err, sizeof err) != LAYA_OK) cli_die("verify: %s", err);
            nk++;
        } else if (a[0] == '-' && a[1]) {
            cli_die("verify: unknown option '%s' (laya verify --help)", a);
        } else if (!model_path) {
            model_path = a;
        } else {
            cli_die("verify: expected one MODEL, got a second: '%s'", a);
        }
    }
    if (!model_path) cli_die("verify: usage: laya verify MODEL [--pubkey P.pub]");
    model_trust t = {.keys = (const uint8_t (*)[MODEL_KEY_BYTES])keys, .n_keys = nk, .no_project_key = nk > 0};
    if (!nk) {
        t.keys = NULL;
        if (model_trust_env(&t, keys, err, sizeof err) != LAYA_OK) cli_die("verify: %s", err);
        t.allow_unsigned = 0;   /* verify says whether it is signed, whatever the environment allows */
    }
    uint8_t signer[MODEL_KEY_BYTES];
    model_sig_verdict v;
    if (model_sig_check_file(model_path, &t, &v, signer, err, sizeof err) != LAYA_OK) {
        fprintf(stderr, "laya: verify: %s\n", err);
        return 1;
    }
    char id[17];
    model_key_id(signer, id);
    /* Then the structure, the checksum included, of the bytes just vouched for. */
    model_trust structure = {.no_signature_check = 1};
    model *m = NULL;
    const char *what = "model";
    if (model_load_opts(model_path, &structure, &m, err, sizeof err) != LAYA_OK) {
        intent_head *h = NULL;   /* or an intent head (C10) */
        char e2[512] = "";
        if (intent_load(model_path, &structure, 0, NULL, &h, e2, sizeof e2) != LAYA_OK) {
            fprintf(stderr, "laya: verify: good signature by key %s, but not a valid model: %s\n", id, err);
            return 1;
        }
        intent_free(h);
        what = "intent head";
    }
    model_free(m);
    const uint8_t (*pkeys)[MODEL_KEY_BYTES];
    int np = model_project_keys(&pkeys), project = 0;
    for (int i = 0; i < np; i++) project |= !memcmp(pkeys[i], signer, MODEL_KEY_BYTES);
    printf("%s: good signature by key %s (%s), and a valid %s\n", model_path, id,
           project && !nk ? "the Laya project key" : nk ? "a --pubkey key" : "a key in LAYA_TRUSTED_KEYS", what);
    return 0;
}
