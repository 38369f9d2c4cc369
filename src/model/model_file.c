/* model_file.c - Laya model files (C5) and the inference model's lifetime.
 *
 * A model file is a standard safetensors container (st.h) holding:
 *   - the tensors of model_tensors() by name ("emb", "l0.w_ih", ..., "norm"),
 *     with their shapes; matrices all of the dtype named in __metadata__
 *     ("F32" or "F16"), vectors F32 or F16; or, when dtype is "U8" and
 *     quant is "q<bits>g<G>" (kern/quant.h, with quant_version), every
 *     matrix X (R, C) is the packed U8 X (R, C or C/2) followed by the F32
 *     tensors X.scales and X.biases (R, C/G); G must divide C;
 *     In the panel layout (__metadata__ layout "panel", layout_version
 *     "1", for q8/q4 only) X is instead its panel form (kern.h), three
 *     adjacent tensors: X.panel U8 (NP, C/4 or C/8, 8, 4) codes, then
 *     X.panel_scales and X.panel_biases F32 (NP, C/G, 8), NP = ceil(R/8),
 *     the codes 64-byte aligned in the file; all panel blocks come first,
 *     then the vectors, a prior's tensors and the tokenizer; rows_blake2b
 *     (hex) is the data_blake2b of the same model in the row-major layout
 *     without a prior (its identity across layouts and priors,
 *     model_identity), recorded in every panel file and every file with a
 *     prior. No layout key: row-major;
 *   - optionally a next-word prior (prior.h) as "prior.word_off", ...,
 *     "prior.words" before the tokenizer, __metadata__ "prior" its source;
 *   - "tokenizer": U8 (n), the tok_save() bytes;
 *   - __metadata__ (all strings): format "laya", format_version "1", arch
 *     "gru-lattn", V H D L W (decimal), dtype, quant ("none" or as above),
 *     tokenizer_sha256 (hex of the tokenizer bytes, an identity),
 *     data_blake2b (hex BLAKE2b-256 of the whole data section: the
 *     file's identity and, in files written before data_tree_blake2b, the
 *     checksum), data_tree_blake2b (the checksum a load verifies, hashed on
 *     every core: st.h), plus the writer's provenance.
 * Tensors are stored contiguously in layout order with the tokenizer last
 * (standard readers refuse gaps); the data section starts 64-byte aligned.
 *
 * Loading maps the file read-only and validates it as hostile input: the
 * container (st_parse), the metadata, the exact tensor set, dtypes and
 * shapes against the config, the checksum (which reads every byte: the
 * "touch every weight at load" of C5), and finite weights, scales and
 * biases. F32 tensors and F16/U8 matrices are used in place; F16 vectors are converted into one owned
 * allocation, and q8/q4 matrices of a row-major file also get their panel
 * form (kern.h), which the step's products read, in one more (about the
 * size of the weights; the mapped row-major form is then read only by
 * embedding lookups and the logits of listed tokens). A panel-layout file
 * needs neither: its panels are used in place, and those two readers take
 * a row back from them (kern_panel_row). Little-endian hosts only (as
 * x86-64).
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
#include "util/err.h"
#include "util/file.h"
#include "util/st.h"

#define MODEL_FORMAT "laya"
#define MODEL_ARCH "gru-lattn"
enum { MAX_TENSORS = 2 + 8 * MODEL_MAX_L };

/* Metadata keys the writer owns; meta_extra may not set them. */
static const char *const reserved_keys[] = {
    "format", "format_version", "arch", "V", "H", "D", "L", "W",
    "dtype", "quant", "quant_version", "tokenizer_sha256", "data_blake2b", ST_TREE_KEY,
    "layout", "layout_version", "rows_blake2b", "prior",
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

/* t has this dtype and the shape dims[0..nd); else an error. */
static laya_status want_dims(const st_tensor *t, const char *name, st_dtype dt, int nd, const int64_t *dims,
                             char *err, size_t errlen) {
    if (!t) return err_set(err, errlen, LAYA_ERR_FORMAT, "missing tensor %s", name);
    if (t->dtype != dt)
        return err_set(err, errlen, LAYA_ERR_FORMAT, "tensor %s: dtype %s, expected %s", name,
                       st_dtype_name(t->dtype), st_dtype_name(dt));
    int ok = t->ndim == nd;
    for (int i = 0; ok && i < nd; i++) ok = t->shape[i] == dims[i];
    if (!ok) {
        char want[96] = "";
        for (int i = 0; i < nd; i++) {
            size_t l = strlen(want);
            snprintf(want + l, sizeof want - l, "%s%lld", i ? ", " : "", (long long)dims[i]);
        }
        return err_set(err, errlen, LAYA_ERR_FORMAT, "tensor %s: shape does not match the config, expected [%s]",
                       name, want);
    }
    return LAYA_OK;
}

/* __metadata__ key (rows_blake2b, the model's identity in the row-major
 * layout without a prior) is 64 lowercase hex digits. */
static laya_status meta_hex64(const st_file *f, const char *key, char *err, size_t errlen) {
    const char *id = st_meta(f, key);
    int ok = id && strlen(id) == 64;
    for (int i = 0; ok && i < 64; i++) ok = (id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f');
    if (!ok)
        return err_set(err, errlen, LAYA_ERR_FORMAT, "__metadata__ %s (the model's identity in the "
                       "row-major layout) is missing or not 64 lowercase hex digits", key);
    return LAYA_OK;
}

/* How the quantized matrices are laid out (__metadata__ layout): "rows"
 * when absent (every file before layout_version 1), or "panel" with
 * layout_version MODEL_PANEL_VERSION and rows_blake2b, for q8/q4 only. */
static laya_status meta_layout(const st_file *f, int bits, model_layout *lay, char *err, size_t errlen) {
    const char *s = st_meta(f, "layout");
    *lay = MODEL_LAYOUT_ROWS;
    if (!s || !strcmp(s, "rows")) return st_meta(f, "rows_blake2b") ? meta_hex64(f, "rows_blake2b", err, errlen) : LAYA_OK;
    if (strcmp(s, "panel"))
        return err_set(err, errlen, LAYA_ERR_UNSUPPORTED, "__metadata__ layout \"%.16s\" is not \"rows\" or "
                       "\"panel\" (from a newer Laya?)", s);
    if (!bits)
        return err_set(err, errlen, LAYA_ERR_FORMAT, "__metadata__ layout \"panel\" is for q8/q4 models only "
                       "(dtype U8), this one's matrices are %s", st_meta(f, "dtype"));
    char want[8];
    snprintf(want, sizeof want, "%d", MODEL_PANEL_VERSION);
    laya_status st = meta_is(f, "layout_version", want, LAYA_ERR_UNSUPPORTED, err, errlen);
    if (st) return st;
    if ((st = meta_hex64(f, "rows_blake2b", err, errlen))) return st;
    *lay = MODEL_LAYOUT_PANEL;
    return LAYA_OK;
}

/* The panel form of quantized matrix w (want: its name and shape) as the
 * three adjacent tensors NAME.panel, NAME.panel_scales, NAME.panel_biases
 * (kern.h's block: codes, scales, biases), the codes 64-byte aligned in the
 * file; pc, ps, pb get them. */
static laya_status want_panel(const st_file *f, const model_tensor *w, int bits, int32_t G, const st_tensor **pc,
                              const st_tensor **ps, const st_tensor **pb, char *err, size_t errlen) {
    const int64_t R = w->shape[0], C = w->shape[1], NP = (R + KERN_PANEL_ROWS - 1) / KERN_PANEL_ROWS;
    const int64_t rb = (int64_t)quant_row_bytes(bits, C);
    char name[3][40];
    snprintf(name[0], sizeof name[0], "%.23s.panel", w->name);
    snprintf(name[1], sizeof name[1], "%.23s.panel_scales", w->name);
    snprintf(name[2], sizeof name[2], "%.23s.panel_biases", w->name);
    const int64_t cd[4] = {NP, rb / 4, KERN_PANEL_ROWS, 4}, sd[3] = {NP, C / G, KERN_PANEL_ROWS};
    laya_status st;
    if ((st = want_dims(*pc = st_find(f, name[0]), name[0], ST_U8, 4, cd, err, errlen)) ||
        (st = want_dims(*ps = st_find(f, name[1]), name[1], ST_F32, 3, sd, err, errlen)) ||
        (st = want_dims(*pb = st_find(f, name[2]), name[2], ST_F32, 3, sd, err, errlen)))
        return st;
    if ((*ps)->begin != (*pc)->end || (*pb)->begin != (*ps)->end)
        return err_set(err, errlen, LAYA_ERR_FORMAT, "tensors %s, %s and %s must follow each other in the data "
                       "section (one panel block)", name[0], name[1], name[2]);
    if ((f->data_start + (*pc)->begin) % ST_ALIGN)
        return err_set(err, errlen, LAYA_ERR_FORMAT, "tensor %s: misaligned: file offset %llu is not a multiple "
                       "of %d", name[0], (unsigned long long)(f->data_start + (*pc)->begin), ST_ALIGN);
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
 * values, tokenizer; fills m. verified: a v2 signature's check hashed the
 * data against data_blake2b already (model_map_signed). */
static laya_status load_checked(const st_file *f, int verified, model *m, char *err, size_t errlen) {
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
    model_layout lay;
    if ((st = meta_layout(f, bits, &lay, err, errlen))) return st;

    /* the exact tensor set, dtypes and shapes; a quantized matrix X is the
     * packed U8 X plus F32 X.scales and X.biases of shape (R, C/G), or in
     * the panel layout its panel block (want_panel) */
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
        n_expected += 2;
        if (lay == MODEL_LAYOUT_PANEL) {
            if ((st = want_panel(f, w, bits, G, &have[i], &hs[i], &hb[i], err, errlen))) return st;
            continue;
        }
        if ((st = want_shape(t, w->name, ST_U8, R, (int64_t)quant_row_bytes(bits, C), err, errlen))) return st;
        char name[40];
        snprintf(name, sizeof name, "%.23s.scales", w->name);
        if ((st = want_shape(hs[i] = st_find(f, name), name, ST_F32, R, C / G, err, errlen))) return st;
        snprintf(name, sizeof name, "%.23s.biases", w->name);
        if ((st = want_shape(hb[i] = st_find(f, name), name, ST_F32, R, C / G, err, errlen))) return st;
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
                               t->name, !bits ? " (scales or biases in an unquantized model?)"
                                        : lay == MODEL_LAYOUT_PANEL ? " (row-major tensors in a panel-layout model?)"
                                                                    : "");
        }
    }

    /* checksum: reads every byte once, which also faults in every page (C5's
     * "touch every weight"); a v2 signature's check has just done both,
     * against this very header (model_sign.h) */
    const char *sum = st_meta(f, "data_blake2b"), *tsum = st_meta(f, "tokenizer_sha256");
    if (!sum || !tsum)
        return err_set(err, errlen, LAYA_ERR_FORMAT, "__metadata__ lacks data_blake2b or tokenizer_sha256");
    char hex[65];
    const char *key = "data_blake2b";
    int sum_ok = verified || st_data_verify(f->meta, f->data, (size_t)f->data_len, &key, hex);
    (void)sum_ok;  /* unread in the fuzz build */
#ifndef LAYA_FUZZ   /* the fuzz build lets mutated data reach the checks behind the checksums */
    if (!sum_ok)
        return err_set(err, errlen, LAYA_ERR_SIGNATURE,
                       "checksum mismatch: the data section hashes to %.12s..., %s says %.12s...: "
                       "the file is corrupt or was modified", hex, key, st_meta(f, key) ? st_meta(f, key) : "?");
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
                return err_set(err, errlen, LAYA_ERR_FORMAT, "tensor %s: element %lld is NaN or infinite",
                               ts[k]->name, (long long)bad);
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
        if (want[i].is_matrix && lay == MODEL_LAYOUT_PANEL) {
            /* mapped as it is: no copy, no allocation */
            mats[i] = (qmat){.type = qt, .rows = (int32_t)want[i].shape[0], .cols = (int32_t)want[i].shape[1],
                             .group = G, .panel = p};
            if (kern_panel_bytes(&mats[i]) != (size_t)(hb[i]->end - have[i]->begin))
                return err_set(err, errlen, LAYA_ERR_FORMAT, "tensor %s: no panel form for this shape",
                               want[i].name);
        } else if (want[i].is_matrix) {
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
    /* the panel form of every q8/q4 matrix of a row-major file, in one
     * 64-byte aligned block */
    size_t pbytes = 0;
    for (int k = 0; k < nw; k++)
        if (want[k].is_matrix && lay == MODEL_LAYOUT_ROWS) pbytes += (kern_panel_bytes(&mats[k]) + 63) / 64 * 64;
    if (pbytes) {
        if (!(m->panels = aligned_alloc(64, pbytes)))
            return err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory laying out the weights (%zu bytes)", pbytes);
        uint8_t *at = m->panels;
        for (int k = 0; k < nw; k++) {
            size_t n = want[k].is_matrix && lay == MODEL_LAYOUT_ROWS ? kern_panel_bytes(&mats[k]) : 0;
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
    int verified = 0;
    laya_status st = model_map_signed(path, "model", 8, SIZE_MAX, trust, &map, &len, &verified, err, errlen);
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
        st = load_checked(&f, verified, m, e, sizeof e);
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
    return model_save_quant_layout(path, c, params, dtype, group, MODEL_LAYOUT_ROWS, tok_blob, tok_len, meta_extra,
                                   err, errlen);
}

/* The writer's own __metadata__, in this order (the bytes of a file
 * depend on it): format .. W, dtype, quant (and quant_version), the
 * tokenizer's sha256. */
static json_t *base_meta(const model_cfg *c, int bits, int32_t group, st_dtype sdt, const uint8_t *tok_blob,
                         size_t tok_len) {
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
    return meta;
}

/* Writes a q8/q4 model: mats[i] (model_tensors index i, matrices only) in
 * the stored row-major form, vecs[i] the f32 vectors. ROWS: per tensor in
 * layout order X, X.scales, X.biases (or the vector), the tokenizer last.
 * PANEL: every matrix's panel block first (X.panel, X.panel_scales,
 * X.panel_biases; each block a multiple of 64 bytes, so every one starts
 * 64-byte aligned), then the vectors, then the tokenizer; rows_blake2b is
 * the data_blake2b the ROWS file of the same model has. */
static laya_status write_quant(const char *path, const model_cfg *c, int bits, int32_t G, model_layout layout,
                               const qmat *mats, const float *const *vecs, const prior *pr, const char *prior_src,
                               const uint8_t *tok_blob, size_t tok_len, const char *meta_extra, char *err,
                               size_t errlen) {
    model_tensor mt[MAX_TENSORS];
    const int n = model_tensors(c, mt, MAX_TENSORS);
    st_out rows[3 * MAX_TENSORS + 1 + PRIOR_TENSORS], pan[3 * MAX_TENSORS + 1 + PRIOR_TENSORS];
    char names[MAX_TENSORS][3][40];
    int nr = 0, np = 0;
    size_t pbytes = 0;
    for (int i = 0; i < n; i++) {
        const int64_t R = mt[i].shape[0], C = mt[i].shape[1];
        if (!mt[i].is_matrix) {
            rows[nr++] = (st_out){.name = mt[i].name, .dtype = ST_F32, .ndim = 1, .shape = {R}, .src = vecs[i]};
            continue;
        }
        snprintf(names[i][0], sizeof names[i][0], "%.23s.scales", mt[i].name);
        snprintf(names[i][1], sizeof names[i][1], "%.23s.biases", mt[i].name);
        rows[nr++] = (st_out){.name = mt[i].name, .dtype = ST_U8, .ndim = 2,
                              .shape = {R, (int64_t)quant_row_bytes(bits, C)}, .src = mats[i].data};
        rows[nr++] = (st_out){.name = names[i][0], .dtype = ST_F32, .ndim = 2, .shape = {R, C / G},
                              .src = mats[i].scales};
        rows[nr++] = (st_out){.name = names[i][1], .dtype = ST_F32, .ndim = 2, .shape = {R, C / G},
                              .src = mats[i].biases};
        size_t pb = kern_panel_bytes(&mats[i]);
        if (layout == MODEL_LAYOUT_PANEL && (!pb || pb % ST_ALIGN))
            return err_set(err, errlen, LAYA_ERR_ARG, "tensor %s: no panel form for its shape (%lld x %lld)",
                           mt[i].name, (long long)R, (long long)C);
        pbytes += pb;
    }
    const st_out tk = {.name = "tokenizer", .dtype = ST_U8, .ndim = 1, .shape = {(int64_t)tok_len}, .src = tok_blob};
    rows[nr++] = tk;
    json_t *meta = base_meta(c, bits, G, ST_U8, tok_blob, tok_len);
    uint8_t *block = NULL;
    laya_status st = LAYA_OK;
    /* the identity: the row-major file without a prior; recorded whenever
     * this file's own data_blake2b is not it */
    const int has_prior = pr && pr->nw > 0;
    if (layout == MODEL_LAYOUT_PANEL || has_prior) {
        char id[65];
        st_data_blake2b(rows, nr, id);
        json_object_set_new(meta, "rows_blake2b", json_string(id));
    }
    /* the prior's tensors go before the tokenizer (prior_out: its names) */
    st_out pt[PRIOR_TENSORS];
    char pnames[PRIOR_TENSORS][32];
    if (has_prior) {
        prior_out(pr, MODEL_PRIOR_PREFIX, pt, pnames);
        nr--;
        for (int i = 0; i < PRIOR_TENSORS; i++) rows[nr++] = pt[i];
        rows[nr++] = tk;
        json_object_set_new(meta, "prior", json_string(prior_src ? prior_src : "unnamed"));
    }
    if (layout == MODEL_LAYOUT_PANEL) {
        char ver[8];
        snprintf(ver, sizeof ver, "%d", MODEL_PANEL_VERSION);
        json_object_set_new(meta, "layout", json_string("panel"));
        json_object_set_new(meta, "layout_version", json_string(ver));
        if (!(block = aligned_alloc(ST_ALIGN, pbytes ? pbytes : ST_ALIGN)))
            st = err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory laying out the weights");
        uint8_t *at = block;
        for (int i = 0; !st && i < n; i++) {
            if (!mt[i].is_matrix) continue;
            const int64_t R = mt[i].shape[0], C = mt[i].shape[1], NP = (R + KERN_PANEL_ROWS - 1) / KERN_PANEL_ROWS;
            const int64_t rb = (int64_t)quant_row_bytes(bits, C);
            qmat w = mats[i];
            w.panel = NULL;
            kern_panel_pack(&w, at);
            snprintf(names[i][0], sizeof names[i][0], "%.23s.panel", mt[i].name);
            snprintf(names[i][1], sizeof names[i][1], "%.23s.panel_scales", mt[i].name);
            snprintf(names[i][2], sizeof names[i][2], "%.23s.panel_biases", mt[i].name);
            const uint8_t *sc = at + NP * KERN_PANEL_ROWS * rb;
            const uint8_t *bi = sc + NP * (C / G) * KERN_PANEL_ROWS * (int64_t)sizeof(float);
            pan[np++] = (st_out){.name = names[i][0], .dtype = ST_U8, .ndim = 4,
                                 .shape = {NP, rb / 4, KERN_PANEL_ROWS, 4}, .src = at};
            pan[np++] = (st_out){.name = names[i][1], .dtype = ST_F32, .ndim = 3,
                                 .shape = {NP, C / G, KERN_PANEL_ROWS}, .src = sc};
            pan[np++] = (st_out){.name = names[i][2], .dtype = ST_F32, .ndim = 3,
                                 .shape = {NP, C / G, KERN_PANEL_ROWS}, .src = bi};
            at += kern_panel_bytes(&mats[i]);
        }
        for (int i = 0; i < nr; i++)
            if (rows[i].dtype == ST_F32 && rows[i].ndim == 1 && !prior_is_tensor(rows[i].name, MODEL_PRIOR_PREFIX))
                pan[np++] = rows[i];
        for (int i = 0; has_prior && i < PRIOR_TENSORS; i++) pan[np++] = pt[i];
        pan[np++] = tk;
    }
    if (!st && meta_extra) st = add_extra(meta, meta_extra, err, errlen);
    if (!st)
        st = layout == MODEL_LAYOUT_PANEL ? st_write(path, pan, np, meta, "data_blake2b", err, errlen)
                                          : st_write(path, rows, nr, meta, "data_blake2b", err, errlen);
    json_decref(meta);
    free(block);
    return st;
}

laya_status model_save_quant_layout(const char *path, const model_cfg *c, const float *params, qtype dtype,
                                    int32_t group, model_layout layout, const uint8_t *tok_blob, size_t tok_len,
                                    const char *meta_extra, char *err, size_t errlen) {
    if (!path || !c || !params)
        return err_set(err, errlen, LAYA_ERR_ARG, "model_save: path, config and params are required");
    laya_status st = model_cfg_check(c, err, errlen);
    if (st) return LAYA_ERR_ARG;
    const int bits = dtype == QT_Q8 ? 8 : dtype == QT_Q4 ? 4 : 0;
    if (layout != MODEL_LAYOUT_ROWS && (layout != MODEL_LAYOUT_PANEL || !bits))
        return err_set(err, errlen, LAYA_ERR_ARG, "the panel layout is for q8/q4 models only");
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
    st_out out[MAX_TENSORS + 1];
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
    qmat mats[MAX_TENSORS];
    const float *vecs[MAX_TENSORS];
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
        vecs[i] = p;
        if (!bits) {
            st_out *o = &out[no++];
            *o = (st_out){.name = mt[i].name, .dtype = sdt, .ndim = mt[i].ndim, .src = p,
                          .fill = sdt == ST_F16 ? fill_f16 : NULL};
            o->shape[0] = mt[i].shape[0];
            o->shape[1] = mt[i].shape[1];
        }
        if (!quant) continue;
        char e2[200];
        float *sc = fp, *bi = fp + (size_t)R * (size_t)(C / group);
        if ((st = quant_quantize(p, (int32_t)R, (int32_t)C, bits, group, qp, sc, bi, e2, sizeof e2))) {
            st = err_set(err, errlen, st, "tensor %s: %s", mt[i].name, e2);
            break;
        }
        mats[i] = (qmat){.type = dtype, .rows = (int32_t)R, .cols = (int32_t)C, .group = group, .data = qp,
                         .scales = sc, .biases = bi};
        qp += (size_t)R * quant_row_bytes(bits, C);
        fp = bi + (size_t)R * (size_t)(C / group);
    }
    if (!st && bits)
        st = write_quant(path, c, bits, group, layout, mats, vecs, NULL, NULL, tok_blob, tok_len, meta_extra, err,
                         errlen);
    if (!st && !bits) {
        out[no++] = (st_out){.name = "tokenizer", .dtype = ST_U8, .ndim = 1, .shape = {(int64_t)tok_len},
                             .src = tok_blob};
        json_t *meta = base_meta(c, 0, 0, sdt, tok_blob, tok_len);
        if (meta_extra) st = add_extra(meta, meta_extra, err, errlen);
        if (!st) st = st_write(path, out, no, meta, "data_blake2b", err, errlen);
        json_decref(meta);
    }
    free(qblock);
    return st;
}

laya_status model_save_relayout(const char *path, const model *m, model_layout layout, const char *meta_extra,
                                char *err, size_t errlen) {
    if (!path || !m || !m->tok) return err_set(err, errlen, LAYA_ERR_ARG, "model_save_relayout: NULL argument");
    const qtype qt = m->emb.type;
    if (qt != QT_Q8 && qt != QT_Q4)
        return err_set(err, errlen, LAYA_ERR_ARG, "only a q8/q4 model can be laid out again (this one is %s): "
                       "quantize it", qt == QT_F16 ? "f16" : "f32");
    if (layout != MODEL_LAYOUT_ROWS && layout != MODEL_LAYOUT_PANEL)
        return err_set(err, errlen, LAYA_ERR_ARG, "unknown layout %d", (int)layout);
    if (sodium_init() < 0) return err_set(err, errlen, LAYA_ERR_INTERNAL, "libsodium failed to initialize");
    const model_cfg *c = &m->cfg;
    const int bits = qt == QT_Q8 ? 8 : 4;
    const int32_t G = m->emb.group;
    qmat mats[MAX_TENSORS];
    const float *vecs[MAX_TENSORS] = {0};
    int i = 0;
    mats[i++] = m->emb;
    for (int l = 0; l < c->L; l++) {
        const model_layer *ly = &m->layer[l];
        mats[i++] = ly->w_ih;
        mats[i++] = ly->w_hh;
        vecs[i++] = ly->b_ih;
        vecs[i++] = ly->b_hh;
        mats[i++] = ly->wq;
        mats[i++] = ly->wk;
        mats[i++] = ly->wv;
        mats[i++] = ly->wo;
    }
    vecs[i++] = m->norm;
    const int n = i;
    /* matrices held only in panel form: their stored form read back */
    size_t need = 0;
    for (int k = 0; k < n; k++)
        if (!vecs[k] && !mats[k].data)
            need += (size_t)mats[k].rows * (quant_row_bytes(bits, mats[k].cols) +
                                            2 * sizeof(float) * (size_t)(mats[k].cols / G));
    uint8_t *buf = need ? malloc(need) : NULL, *tb = NULL;
    if (need && !buf) return err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory laying out the weights");
    float *fbuf = (float *)(void *)buf;
    for (int k = 0; k < n; k++) {
        qmat *w = &mats[k];
        if (vecs[k] || w->data) continue;
        const int32_t NG = w->cols / G;
        float *sc = fbuf, *bi = sc + (size_t)w->rows * NG;
        uint8_t *codes = (uint8_t *)(bi + (size_t)w->rows * NG);
        const size_t rb = quant_row_bytes(bits, w->cols);
        for (int32_t r = 0; r < w->rows; r++)
            kern_panel_row(w, r, codes + (size_t)r * rb, sc + (size_t)r * NG, bi + (size_t)r * NG);
        w->data = codes;
        w->scales = sc;
        w->biases = bi;
        fbuf = (float *)(void *)(codes + (size_t)w->rows * rb);
    }
    size_t tn = 0;
    laya_status st = tok_save(m->tok, &tb, &tn);
    if (st) st = err_set(err, errlen, st, "cannot serialize the tokenizer");
    /* the prior travels with the weights, under the same source */
    const char *src = NULL;
    json_t *mj = m->meta_json ? json_loads(m->meta_json, 0, NULL) : NULL;
    if (mj) src = json_string_value(json_object_get(mj, "prior"));
    if (!st)
        st = write_quant(path, c, bits, G, layout, mats, vecs, &m->prior, src, tb, tn, meta_extra, err, errlen);
    json_decref(mj);
    free(tb);
    free(buf);
    return st;
}

laya_status model_identity(const model *m, char hex[65]) {
    hex[0] = 0;
    if (!m || !m->meta_json) return LAYA_ERR_FORMAT;
    json_t *j = json_loads(m->meta_json, 0, NULL);
    const char *s = json_string_value(json_object_get(j, "rows_blake2b"));
    if (!s) s = json_string_value(json_object_get(j, "data_blake2b"));
    laya_status st = s && strlen(s) == 64 ? LAYA_OK : LAYA_ERR_FORMAT;
    if (!st) memcpy(hex, s, 65);
    json_decref(j);
    return st;
}

int model_meta_reserved(const char *key) {
    for (size_t i = 0; i < sizeof reserved_keys / sizeof reserved_keys[0]; i++)
        if (strcmp(key, reserved_keys[i]) == 0) return 1;
    return 0;
}
