/* model_file.c - Laya model files (C5) and the inference model's lifetime.
 *
 * A model file is a standard safetensors container (st.h) holding:
 *   - the tensors of model_tensors() by name ("emb", "l0.w_ih", ..., "norm"),
 *     with their shapes; matrices all of the dtype named in __metadata__
 *     ("F32" or "F16"), vectors F32 or F16; or, when dtype is "U8" and
 *     quant is "q<bits>g<G>" (kern/quant.h, with quant_version), every
 *     matrix X (R, C) is the packed U8 X (R, C or C/2) followed by the F32
 *     tensors X.scales and X.biases (R, C/G); G must divide C;
 *   - "tokenizer": U8 (n), the tok_save() bytes;
 *   - __metadata__ (all strings): format "laya", format_version "1", arch
 *     "gru-lattn", V H D L W (decimal), dtype, quant ("none" or as above),
 *     tokenizer_sha256 (hex of the tokenizer bytes, an identity),
 *     data_blake2b (hex BLAKE2b-256 of the whole data section: the
 *     checksum; st.h says why not SHA-256), plus the writer's provenance.
 * Tensors are stored contiguously in layout order with the tokenizer last
 * (standard readers refuse gaps); the data section starts 64-byte aligned.
 *
 * Loading maps the file read-only and validates it as hostile input: the
 * container (st_parse), the metadata, the exact tensor set, dtypes and
 * shapes against the config, the checksum (which reads every byte: the
 * "touch every weight at load" of C5), and finite weights, scales and
 * biases. F32 tensors and F16/U8 matrices are used in place; F16 vectors are converted into one owned
 * allocation, and q8/q4 matrices also get their panel form (kern.h), which
 * the step's products read, in one more (about the size of the weights;
 * the mapped row-major form is then read only by embedding lookups and the
 * logits of listed tokens). Little-endian hosts only (as x86-64).
 *
 * Shape letters: V vocab, H hidden, D attention width, L layers, W window,
 * G = 3H. */
#include "model/model.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kern/quant.h"
#include "model/model_sign.h"
#include "model/st.h"
#include "util/err.h"
#include "util/file.h"

#define MODEL_FORMAT "laya"
#define MODEL_ARCH "gru-lattn"
enum { MAX_TENSORS = 2 + 8 * MODEL_MAX_L };

/* Metadata keys the writer owns; meta_extra may not set them. */
static const char *const reserved_keys[] = {
    "format", "format_version", "arch", "V", "H", "D", "L", "W",
    "dtype", "quant", "quant_version", "tokenizer_sha256", "data_blake2b", "prior",
};

/* ---- the model struct ---- */

static void point_layers(model *m, const model_params *p) {
    const model_cfg *c = &m->cfg;
    const int G = 3 * c->H;
    m->emb = (qmat){.type = QT_F32, .rows = c->V, .cols = c->H, .data = p->emb};
    for (int l = 0; l < c->L; l++) {
        const model_layer_params *lp = &p->layer[l];
        model_layer *ly = &m->layer[l];
        ly->w_ih = (qmat){.type = QT_F32, .rows = G, .cols = c->H, .data = lp->w_ih};
        ly->w_hh = (qmat){.type = QT_F32, .rows = G, .cols = c->H, .data = lp->w_hh};
        ly->wq = (qmat){.type = QT_F32, .rows = c->D, .cols = c->H, .data = lp->wq};
        ly->wk = (qmat){.type = QT_F32, .rows = c->D, .cols = c->H, .data = lp->wk};
        ly->wv = (qmat){.type = QT_F32, .rows = c->D, .cols = c->H, .data = lp->wv};
        ly->wo = (qmat){.type = QT_F32, .rows = c->H, .cols = c->D, .data = lp->wo};
        ly->b_ih = lp->b_ih;
        ly->b_hh = lp->b_hh;
    }
    m->norm = p->norm;
}

/* On failure t stays the caller's. */
laya_status model_from_params(const model_cfg *c, const float *params, tok *t, model **out) {
    *out = NULL;
    if (!c || !params || model_cfg_check(c, NULL, 0) != LAYA_OK) return LAYA_ERR_ARG;
    if (t && tok_vocab_size(t) != c->V) return LAYA_ERR_ARG;
    model *m = calloc(1, sizeof *m);
    if (!m) return LAYA_ERR_NOMEM;
    m->cfg = *c;
    model_params p;
    /* the model only reads through these pointers */
    model_params_point(c, (float *)(uintptr_t)params, &p);
    point_layers(m, &p);
    m->tok = t;
    *out = m;
    return LAYA_OK;
}

void model_free(model *m) {
    if (!m) return;
    if (m->tok) tok_free(m->tok);
    free(m->meta_json);
    if (m->map) munmap(m->map, m->map_len);
    free(m->owned);
    free(m->panels);
    free(m);
}

/* ---- loading ---- */

/* A decimal metadata field in lo..hi. */
static laya_status meta_int(const st_file *f, const char *key, int32_t lo, int32_t hi, int32_t *out,
                            char *err, size_t errlen) {
    const char *s = st_meta(f, key);
    if (!s) return err_set(err, errlen, LAYA_ERR_FORMAT, "__metadata__ lacks \"%s\"", key);
    /* plain digits only: no sign, blanks, exponent or leading zeros */
    size_t n = strlen(s);
    int ok = n >= 1 && n <= 9 && !(n > 1 && s[0] == '0');
    for (size_t i = 0; ok && i < n; i++) ok = s[i] >= '0' && s[i] <= '9';
    long v = ok ? strtol(s, NULL, 10) : -1;
    if (!ok || v < lo || v > hi)
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "__metadata__ \"%s\" = \"%.32s\" is not a decimal integer in %d..%d",
                       key, s, lo, hi);
    *out = (int32_t)v;
    return LAYA_OK;
}

static laya_status meta_is(const st_file *f, const char *key, const char *want, laya_status if_not,
                           char *err, size_t errlen) {
    const char *s = st_meta(f, key);
    if (!s) return err_set(err, errlen, LAYA_ERR_FORMAT, "__metadata__ lacks \"%s\": not a Laya model", key);
    if (strcmp(s, want))
        return err_set(err, errlen, if_not, "__metadata__ \"%s\" is \"%.32s\", expected \"%s\"", key, s, want);
    return LAYA_OK;
}

/* Index of the first non-finite element of a tensor, or -1. */
static int64_t first_nonfinite(const uint8_t *p, st_dtype d, int64_t count) {
    if (d == ST_F32) {
        for (int64_t i = 0; i < count; i++) {
            uint32_t u;
            memcpy(&u, p + 4 * i, 4);
            if ((u & 0x7F800000u) == 0x7F800000u) return i;
        }
    } else {
        for (int64_t i = 0; i < count; i++) {
            uint16_t u;
            memcpy(&u, p + 2 * i, 2);
            if ((u & 0x7C00u) == 0x7C00u) return i;
        }
    }
    return -1;
}

static int64_t n_elems(const st_tensor *t) {
    int64_t c = 1;
    for (int i = 0; i < t->ndim; i++) c *= t->shape[i];
    return c;
}

/* The matrix dtype and quantization named by __metadata__ dtype and quant:
 * F32/F16 with quant "none", or U8 with quant "q<bits>g<G>" (quant.h) and
 * quant_version QUANT_FORMAT_VERSION. */
static laya_status meta_storage(const st_file *f, st_dtype *mdt, int *bits, int32_t *G, char *err,
                                size_t errlen) {
    const char *dts = st_meta(f, "dtype"), *qs = st_meta(f, "quant");
    if (!dts) return err_set(err, errlen, LAYA_ERR_FORMAT, "__metadata__ lacks \"dtype\"");
    if (!qs) return err_set(err, errlen, LAYA_ERR_FORMAT, "__metadata__ lacks \"quant\"");
    *bits = 0;
    *G = 0;
    if (strcmp(dts, "F32") == 0) *mdt = ST_F32;
    else if (strcmp(dts, "F16") == 0) *mdt = ST_F16;
    else if (strcmp(dts, "U8") == 0) *mdt = ST_U8;
    else return err_set(err, errlen, LAYA_ERR_UNSUPPORTED,
                        "__metadata__ dtype \"%.16s\" is not F32, F16 or U8 (quantized)", dts);
    if (*mdt != ST_U8) {
        if (strcmp(qs, "none"))
            return err_set(err, errlen, LAYA_ERR_FORMAT, "__metadata__ quant \"%.16s\" with dtype %s: "
                           "expected \"none\"", qs, dts);
        return LAYA_OK;
    }
    int b = 0, g = 0, used = 0;
    char tail;
    if (sscanf(qs, "q%dg%d%n%c", &b, &g, &used, &tail) != 2 || used != (int)strlen(qs) ||
        !quant_params_ok(b, g))
        return err_set(err, errlen, LAYA_ERR_UNSUPPORTED, "__metadata__ quant \"%.16s\": expected q4 or q8 "
                       "with a group of 32, 64 or 128, as \"q4g64\"", qs);
    char want[8];
    snprintf(want, sizeof want, "%d", QUANT_FORMAT_VERSION);
    laya_status st = meta_is(f, "quant_version", want, LAYA_ERR_UNSUPPORTED, err, errlen);
    if (st) return st;
    *bits = b;
    *G = g;
    return LAYA_OK;
}

/* t has this dtype and shape [r, c] (c = 0: a vector [r]); else an error. */
static laya_status want_shape(const st_tensor *t, const char *name, st_dtype dt, int64_t r, int64_t c,
                              char *err, size_t errlen) {
    if (!t) return err_set(err, errlen, LAYA_ERR_FORMAT, "missing tensor %s", name);
    if (t->dtype != dt)
        return err_set(err, errlen, LAYA_ERR_FORMAT, "tensor %s: dtype %s, expected %s", name,
                       st_dtype_name(t->dtype), st_dtype_name(dt));
    if (t->ndim != (c ? 2 : 1) || t->shape[0] != r || (c && t->shape[1] != c))
        return err_set(err, errlen, LAYA_ERR_FORMAT, "tensor %s: shape does not match the config, "
                       "expected [%lld%s%lld]", name, (long long)r, c ? ", " : "", c ? (long long)c : 0LL);
    return LAYA_OK;
}

/* Everything after the container checks: metadata, tensors, checksum,
 * values, tokenizer; fills m. */
static laya_status load_checked(const st_file *f, model *m, char *err, size_t errlen) {
    laya_status st;
    if ((st = meta_is(f, "format", MODEL_FORMAT, LAYA_ERR_FORMAT, err, errlen))) return st;
    if ((st = meta_is(f, "format_version", "1", LAYA_ERR_UNSUPPORTED, err, errlen))) return st;
    if ((st = meta_is(f, "arch", MODEL_ARCH, LAYA_ERR_UNSUPPORTED, err, errlen))) return st;
    model_cfg c;
    if ((st = meta_int(f, "V", 0, 1 << 30, &c.V, err, errlen)) ||
        (st = meta_int(f, "H", 0, 1 << 30, &c.H, err, errlen)) ||
        (st = meta_int(f, "D", 0, 1 << 30, &c.D, err, errlen)) ||
        (st = meta_int(f, "L", 0, 1 << 30, &c.L, err, errlen)) ||
        (st = meta_int(f, "W", 0, 1 << 30, &c.W, err, errlen)))
        return st;
    if ((st = model_cfg_check(&c, err, errlen))) return st;
    m->cfg = c;
    st_dtype mdt = ST_F32;
    int bits;
    int32_t G;
    if ((st = meta_storage(f, &mdt, &bits, &G, err, errlen))) return st;

    /* the exact tensor set, dtypes and shapes; a quantized matrix X is the
     * packed U8 X plus F32 X.scales and X.biases of shape (R, C/G) */
    model_tensor want[MAX_TENSORS];
    int nw = model_tensors(&c, want, MAX_TENSORS);
    const st_tensor *have[MAX_TENSORS], *hs[MAX_TENSORS] = {0}, *hb[MAX_TENSORS] = {0};
    size_t n_vec16 = 0;
    int n_expected = nw + 1;
    for (int i = 0; i < nw; i++) {
        const model_tensor *w = &want[i];
        const st_tensor *t = have[i] = st_find(f, w->name);
        if (!w->is_matrix) {
            if (t && t->dtype == ST_F16) n_vec16 += (size_t)w->shape[0];
            st = want_shape(t, w->name, t && t->dtype == ST_F16 ? ST_F16 : ST_F32, w->shape[0], 0, err, errlen);
            if (st) return st;
            continue;
        }
        int64_t R = w->shape[0], C = w->shape[1];
        if (!bits) {
            if ((st = want_shape(t, w->name, mdt, R, C, err, errlen))) return st;
            continue;
        }
        if (C % G)
            return err_set(err, errlen, LAYA_ERR_FORMAT, "tensor %s: %lld columns are not a multiple of the "
                           "quantization group %d", w->name, (long long)C, (int)G);
        if ((st = want_shape(t, w->name, ST_U8, R, (int64_t)quant_row_bytes(bits, C), err, errlen))) return st;
        char name[40];
        snprintf(name, sizeof name, "%.23s.scales", w->name);
        if ((st = want_shape(hs[i] = st_find(f, name), name, ST_F32, R, C / G, err, errlen))) return st;
        snprintf(name, sizeof name, "%.23s.biases", w->name);
        if ((st = want_shape(hb[i] = st_find(f, name), name, ST_F32, R, C / G, err, errlen))) return st;
        n_expected += 2;
    }
    const st_tensor *tk = st_find(f, "tokenizer");
    if (!tk) return err_set(err, errlen, LAYA_ERR_FORMAT, "missing tensor tokenizer");
    if (tk->dtype != ST_U8 || tk->ndim != 1 || tk->shape[0] < 1)
        return err_set(err, errlen, LAYA_ERR_FORMAT, "tensor tokenizer: expected a non-empty U8 vector");
    /* the optional next-word prior, "prior.*" (prior.h), read in place */
    int has_prior = 0;
    char perr[200] = "";
    if ((st = prior_parse(f, MODEL_PRIOR_PREFIX, &m->prior, &has_prior, perr, sizeof perr)))
        return err_set(err, errlen, st, "%s", perr);
    if (has_prior) n_expected += PRIOR_TENSORS;
    if (f->n != n_expected) {
        /* names are unique (st_parse), so a count mismatch means a stranger */
        for (int i = 0; i < f->n; i++) {
            const st_tensor *t = &f->t[i];
            int known = t == tk || (has_prior && prior_is_tensor(t->name, MODEL_PRIOR_PREFIX));
            for (int j = 0; j < nw && !known; j++) known = t == have[j] || t == hs[j] || t == hb[j];
            if (!known)
                return err_set(err, errlen, LAYA_ERR_FORMAT, "unknown tensor \"%.64s\" for this config%s",
                               t->name, bits ? "" : " (scales or biases in an unquantized model?)");
        }
    }

    /* checksum: reads every byte once, which also faults in every page */
    const char *sum = st_meta(f, "data_blake2b"), *tsum = st_meta(f, "tokenizer_sha256");
    if (!sum || !tsum)
        return err_set(err, errlen, LAYA_ERR_FORMAT, "__metadata__ lacks data_blake2b or tokenizer_sha256");
    char hex[65];
    st_blake2b_hex(f->data, (size_t)f->data_len, hex);
#ifndef LAYA_FUZZ   /* the fuzz build lets mutated data reach the checks behind the checksums */
    if (strcmp(hex, sum))
        return err_set(err, errlen, LAYA_ERR_SIGNATURE,
                       "checksum mismatch: the data section hashes to %.12s..., data_blake2b says %.12s...: "
                       "the file is corrupt or was modified", hex, sum);
    st_sha256_hex(f->data + tk->begin, (size_t)(tk->end - tk->begin), hex);
    if (strcmp(hex, tsum))
        return err_set(err, errlen, LAYA_ERR_SIGNATURE, "tokenizer_sha256 does not match the tokenizer bytes");
#endif

    for (int i = 0; i < nw; i++) {
        const st_tensor *ts[3] = {have[i], hs[i], hb[i]};
        for (int k = 0; k < 3; k++) {
            if (!ts[k] || ts[k]->dtype == ST_U8) continue;
            int64_t bad = first_nonfinite(f->data + ts[k]->begin, ts[k]->dtype, n_elems(ts[k]));
            if (bad >= 0)
                return err_set(err, errlen, LAYA_ERR_FORMAT, "tensor %s%s: element %lld is NaN or infinite",
                               want[i].name, k == 0 ? "" : k == 1 ? ".scales" : ".biases", (long long)bad);
        }
    }

    /* point the model into the mapping; F16 vectors into one owned block */
    float *conv = NULL;
    if (n_vec16 && !(conv = m->owned = malloc(n_vec16 * sizeof *conv)))
        return err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory converting f16 vectors");
    const void *ptr[MAX_TENSORS];
    qmat mats[MAX_TENSORS];
    const qtype qt = bits == 8 ? QT_Q8 : bits == 4 ? QT_Q4 : mdt == ST_F16 ? QT_F16 : QT_F32;
    for (int i = 0; i < nw; i++) {
        const uint8_t *p = f->data + have[i]->begin;
        ptr[i] = p;
        if (want[i].is_matrix) {
            mats[i] = (qmat){.type = qt, .rows = (int32_t)want[i].shape[0], .cols = (int32_t)want[i].shape[1],
                             .group = G, .data = p,
                             .scales = hs[i] ? (const float *)(const void *)(f->data + hs[i]->begin) : NULL,
                             .biases = hb[i] ? (const float *)(const void *)(f->data + hb[i]->begin) : NULL};
        } else if (have[i]->dtype == ST_F16) {
            for (int64_t e = 0; e < have[i]->shape[0]; e++) {
                uint16_t h;
                memcpy(&h, p + 2 * e, 2);
                conv[e] = kern_f16_to_f32(h);
            }
            ptr[i] = conv;
            conv += have[i]->shape[0];
        }
    }
    /* the panel form of every q8/q4 matrix, in one 64-byte aligned block */
    size_t pbytes = 0;
    for (int k = 0; k < nw; k++)
        if (want[k].is_matrix) pbytes += (kern_panel_bytes(&mats[k]) + 63) / 64 * 64;
    if (pbytes) {
        if (!(m->panels = aligned_alloc(64, pbytes)))
            return err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory laying out the weights (%zu bytes)", pbytes);
        uint8_t *at = m->panels;
        for (int k = 0; k < nw; k++) {
            size_t n = want[k].is_matrix ? kern_panel_bytes(&mats[k]) : 0;
            if (!n) continue;
            kern_panel_pack(&mats[k], at);
            mats[k].panel = at;
            at += (n + 63) / 64 * 64;
        }
    }
    int i = 0;
    m->emb = mats[i++];
    for (int l = 0; l < c.L; l++) {
        model_layer *ly = &m->layer[l];
        ly->w_ih = mats[i++];
        ly->w_hh = mats[i++];
        ly->b_ih = ptr[i++];
        ly->b_hh = ptr[i++];
        ly->wq = mats[i++];
        ly->wk = mats[i++];
        ly->wv = mats[i++];
        ly->wo = mats[i++];
    }
    m->norm = ptr[i++];

    char terr[200] = "";
    if ((st = tok_load(f->data + tk->begin, (size_t)(tk->end - tk->begin), &m->tok, terr, sizeof terr)))
        return err_set(err, errlen, st, "tensor tokenizer: %s", terr);
    if (tok_vocab_size(m->tok) != c.V)
        return err_set(err, errlen, LAYA_ERR_FORMAT, "the tokenizer has %d tokens but the model V=%d",
                       tok_vocab_size(m->tok), c.V);
    if (f->meta && !(m->meta_json = json_dumps(f->meta, JSON_COMPACT)))
        return err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory keeping the metadata");
    return LAYA_OK;
}

laya_status model_load(const char *path, model **out, char *err, size_t errlen) {
    *out = NULL;
    uint8_t keys[MODEL_MAX_TRUSTED][MODEL_KEY_BYTES];
    model_trust t = {0};
    laya_status st = model_trust_env(&t, keys, err, errlen);
    if (st != LAYA_OK) return st;
    return model_load_opts(path, &t, out, err, errlen);
}

laya_status model_load_opts(const char *path, const model_trust *trust, model **out, char *err, size_t errlen) {
    *out = NULL;
    if (!path || !trust) return err_set(err, errlen, LAYA_ERR_ARG, "no model path given");
    void *map;
    size_t len;
    laya_status st = model_map_signed(path, "model", 8, SIZE_MAX, trust, &map, &len, err, errlen);
    if (st != LAYA_OK) return st;
    model *m = calloc(1, sizeof *m);
    if (!m) {
        munmap(map, len);
        return err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory loading %s", path);
    }
    m->map = map;
    m->map_len = len;
    st_file f;
    char e[400] = "";
    st = st_parse(map, len, &f, e, sizeof e);
    if (st == LAYA_OK) {
        st = load_checked(&f, m, e, sizeof e);
        st_free(&f);
    }
    if (st != LAYA_OK) {
        model_free(m);
        return err_set(err, errlen, st, "%s: %s", path, e);
    }
    *out = m;
    return LAYA_OK;
}

/* ---- saving ---- */

static void fill_f16(const void *src, size_t first, size_t count, void *dst) {
    const float *s = (const float *)src + first;
    uint16_t *d = dst;
    for (size_t i = 0; i < count; i++) d[i] = kern_f32_to_f16(s[i]);
}

/* Adds meta_extra's members to meta as strings (numbers and booleans as
 * their JSON text); objects, arrays, null and reserved keys are refused. */
static laya_status add_extra(json_t *meta, const char *extra, char *err, size_t errlen) {
    json_error_t je;
    json_t *x = json_loads(extra, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(x)) {
        json_decref(x);
        return err_set(err, errlen, LAYA_ERR_ARG, "meta_extra is not a JSON object: %s",
                       x ? "another JSON value" : je.text);
    }
    laya_status st = LAYA_OK;
    const char *k;
    json_t *v;
    json_object_foreach(x, k, v) {
        if (model_meta_reserved(k))
            st = err_set(err, errlen, LAYA_ERR_ARG, "meta_extra may not set the reserved key \"%s\"", k);
        if (st) break;
        if (json_is_string(v)) {
            json_object_set(meta, k, v);
        } else if (json_is_number(v) || json_is_boolean(v)) {
            char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
            json_object_set_new(meta, k, json_string(s ? s : ""));
            free(s);
        } else {
            st = err_set(err, errlen, LAYA_ERR_ARG, "meta_extra \"%s\" must be a string, number or boolean", k);
            break;
        }
    }
    json_decref(x);
    return st;
}

laya_status model_save(const char *path, const model_cfg *c, const float *params,
                       qtype dtype, const uint8_t *tok_blob, size_t tok_len,
                       const char *meta_extra, char *err, size_t errlen) {
    if (dtype != QT_F32 && dtype != QT_F16)
        return err_set(err, errlen, LAYA_ERR_UNSUPPORTED,
                       "model_save writes F32 or F16; quantized files come from model_save_quant");
    return model_save_quant(path, c, params, dtype, 0, tok_blob, tok_len, meta_extra, err, errlen);
}

laya_status model_save_quant(const char *path, const model_cfg *c, const float *params,
                             qtype dtype, int32_t group, const uint8_t *tok_blob, size_t tok_len,
                             const char *meta_extra, char *err, size_t errlen) {
    if (!path || !c || !params)
        return err_set(err, errlen, LAYA_ERR_ARG, "model_save: path, config and params are required");
    laya_status st = model_cfg_check(c, err, errlen);
    if (st) return LAYA_ERR_ARG;
    const int bits = dtype == QT_Q8 ? 8 : dtype == QT_Q4 ? 4 : 0;
    if (bits && !quant_params_ok(bits, group))
        return err_set(err, errlen, LAYA_ERR_ARG, "quantization group %d: expected 32, 64 or 128", (int)group);
    if (bits && (c->H % group || c->D % group))
        return err_set(err, errlen, LAYA_ERR_ARG, "the group %d must divide H=%d and D=%d (the matrices' "
                       "column counts): choose a smaller group", (int)group, (int)c->H, (int)c->D);
    if (!tok_blob || tok_len == 0)
        return err_set(err, errlen, LAYA_ERR_ARG, "model_save: a serialized tokenizer is required");
    if (sodium_init() < 0) return err_set(err, errlen, LAYA_ERR_INTERNAL, "libsodium failed to initialize");

    model_tensor mt[MAX_TENSORS];
    int n = model_tensors(c, mt, MAX_TENSORS);
    st_out out[3 * MAX_TENSORS + 1];
    int no = 0;
    const st_dtype sdt = dtype == QT_F16 ? ST_F16 : ST_F32;
    /* quantized matrices go to one block: packed codes, then scales, biases */
    size_t qbytes = 0, qfloats = 0;
    for (int i = 0; bits && i < n; i++)
        if (mt[i].is_matrix) {
            qbytes += (size_t)mt[i].shape[0] * quant_row_bytes(bits, mt[i].shape[1]);
            qfloats += 2 * (size_t)mt[i].shape[0] * (size_t)(mt[i].shape[1] / group);
        }
    uint8_t *qblock = bits ? malloc(qbytes + qfloats * sizeof(float) + 1) : NULL;
    if (bits && !qblock) return err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory quantizing the model");
    uint8_t *qp = qblock;
    /* every packed row is a multiple of 16 bytes (G >= 32), so fp is aligned */
    float *fp = bits ? (float *)(void *)(qblock + qbytes) : NULL;
    char qnames[MAX_TENSORS][2][40];
    /* refuse weights the loader would refuse, naming the first bad one */
    for (int i = 0; i < n && !st; i++) {
        const float *p = params + mt[i].offset;
        int64_t R = mt[i].shape[0], C = mt[i].ndim == 2 ? mt[i].shape[1] : 1;
        size_t cnt = (size_t)R * (size_t)C;
        int quant = bits && mt[i].is_matrix;
        for (size_t e = 0; e < cnt && !st; e++)
            if (!isfinite(p[e]) || (sdt == ST_F16 && fabsf(p[e]) >= 65520.0f))
                st = err_set(err, errlen, LAYA_ERR_ARG, "tensor %s: element %zu = %g is not finite%s",
                             mt[i].name, e, (double)p[e], sdt == ST_F16 ? " in f16" : "");
        if (st) break;
        st_out *o = &out[no++];
        *o = (st_out){.name = mt[i].name, .dtype = sdt, .ndim = mt[i].ndim, .src = p,
                      .fill = sdt == ST_F16 ? fill_f16 : NULL};
        o->shape[0] = mt[i].shape[0];
        o->shape[1] = mt[i].shape[1];
        if (!quant) continue;
        char e2[200];
        float *sc = fp, *bi = fp + (size_t)R * (size_t)(C / group);
        if ((st = quant_quantize(p, (int32_t)R, (int32_t)C, bits, group, qp, sc, bi, e2, sizeof e2))) {
            st = err_set(err, errlen, st, "tensor %s: %s", mt[i].name, e2);
            break;
        }
        o->dtype = ST_U8;
        o->fill = NULL;
        o->src = qp;
        o->shape[1] = (int64_t)quant_row_bytes(bits, C);
        qp += (size_t)R * quant_row_bytes(bits, C);
        fp = bi + (size_t)R * (size_t)(C / group);
        snprintf(qnames[i][0], sizeof qnames[i][0], "%.23s.scales", mt[i].name);
        snprintf(qnames[i][1], sizeof qnames[i][1], "%.23s.biases", mt[i].name);
        out[no++] = (st_out){.name = qnames[i][0], .dtype = ST_F32, .ndim = 2, .shape = {R, C / group}, .src = sc};
        out[no++] = (st_out){.name = qnames[i][1], .dtype = ST_F32, .ndim = 2, .shape = {R, C / group}, .src = bi};
    }
    if (st) {
        free(qblock);
        return st;
    }
    out[no++] = (st_out){.name = "tokenizer", .dtype = ST_U8, .ndim = 1, .shape = {(int64_t)tok_len},
                         .src = tok_blob};

    json_t *meta = json_object();
    char num[16], hex[65];
    st_sha256_hex(tok_blob, tok_len, hex);
    json_object_set_new(meta, "format", json_string(MODEL_FORMAT));
    json_object_set_new(meta, "format_version", json_string("1"));
    json_object_set_new(meta, "arch", json_string(MODEL_ARCH));
    const int32_t dims[] = {c->V, c->H, c->D, c->L, c->W};
    static const char *const dim_names[] = {"V", "H", "D", "L", "W"};
    for (int i = 0; i < 5; i++) {
        snprintf(num, sizeof num, "%d", (int)dims[i]);
        json_object_set_new(meta, dim_names[i], json_string(num));
    }
    json_object_set_new(meta, "dtype", json_string(bits ? "U8" : st_dtype_name(sdt)));
    if (bits) {
        snprintf(num, sizeof num, "q%dg%d", bits, (int)group);
        json_object_set_new(meta, "quant", json_string(num));
        snprintf(num, sizeof num, "%d", QUANT_FORMAT_VERSION);
        json_object_set_new(meta, "quant_version", json_string(num));
    } else {
        json_object_set_new(meta, "quant", json_string("none"));
    }
    json_object_set_new(meta, "tokenizer_sha256", json_string(hex));
    if (meta_extra) st = add_extra(meta, meta_extra, err, errlen);
    if (!st) st = st_write(path, out, no, meta, "data_blake2b", err, errlen);
    json_decref(meta);
    free(qblock);
    return st;
}

int model_meta_reserved(const char *key) {
    for (size_t i = 0; i < sizeof reserved_keys / sizeof reserved_keys[0]; i++)
        if (strcmp(key, reserved_keys[i]) == 0) return 1;
    return 0;
}
