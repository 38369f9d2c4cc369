/* intent_head.c - the intent head: its forward pass and its companion file
 * (the format is at the top of intent.h).
 *
 * Shape letters: H input (the base model's hidden size), F head hidden
 * (INTENT_F), C classes (INTENT_C). */
#include "intent/intent.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kern/kern.h"
#include "model/model.h"
#include "util/err.h"
#include "util/file.h"
#include "util/st.h"

const char *const intent_names[INTENT_C] = {
    "schedule_meeting", "send_email", "search_web", "file_operation",
    "app_switch", "system_control", "text_edit", "other",
};

_Static_assert(LAYA_INTENT_CLASSES == 8, "intent_names lists 8 classes");

int intent_class(const char *name) {
    for (int c = 0; c < INTENT_C; c++)
        if (!strcmp(name, intent_names[c])) return c;
    return -1;
}

const char *laya_intent_name(int c) { return c >= 0 && c < INTENT_C ? intent_names[c] : NULL; }

size_t intent_n_params(int H) { return (size_t)INTENT_F * H + INTENT_F + (size_t)INTENT_C * INTENT_F + INTENT_C; }

laya_status intent_new(int H, intent_head **out) {
    *out = NULL;
    if (H < 1 || H > 65536) return LAYA_ERR_ARG;
    intent_head *h = calloc(1, sizeof *h);
    float *mem = calloc(intent_n_params(H), sizeof *mem);
    if (!h || !mem) {
        free(h);
        free(mem);
        return LAYA_ERR_NOMEM;
    }
    h->H = H;
    h->threshold = 0.5f;
    h->mem = mem;
    h->w1 = mem;
    h->b1 = h->w1 + (size_t)INTENT_F * H;
    h->w2 = h->b1 + INTENT_F;
    h->b2 = h->w2 + (size_t)INTENT_C * INTENT_F;
    *out = h;
    return LAYA_OK;
}

void intent_free(intent_head *h) {
    if (!h) return;
    free(h->mem);
    free(h);
}

void laya_intent_free(laya_intent *h) { intent_free(h); }

/* softmax of the logits lg (C) into p, in double after the max. Logits
 * that overflowed (inf or NaN: an input far outside what a model produces)
 * give p = "other" with certainty, so such a state reports nothing. */
static void softmax(double *lg, float *p) {
    double mx = -HUGE_VAL, z = 0;
    for (int c = 0; c < INTENT_C; c++)
        if (!isfinite(lg[c])) {
            for (int k = 0; k < INTENT_C; k++) p[k] = k == INTENT_OTHER;
            return;
        }
    for (int c = 0; c < INTENT_C; c++)
        if (lg[c] > mx) mx = lg[c];
    for (int c = 0; c < INTENT_C; c++) z += (lg[c] = exp(lg[c] - mx));
    for (int c = 0; c < INTENT_C; c++) p[c] = (float)(lg[c] / z);
}

void intent_forward(const intent_head *h, const float *y, float *hid, float *p) {
    /* The (F, H) product through the kernel table (the model's f32 matvec);
     * the (C, F) one is 1k multiply-adds, plain. */
    const kern_table *k = kern_get();
    qmat w1 = {.type = QT_F32, .rows = INTENT_F, .cols = h->H, .data = h->w1};
    k->matvec(&w1, y, hid);
    for (int f = 0; f < INTENT_F; f++) {
        float a = hid[f] + h->b1[f];
        hid[f] = a > 0 ? a : 0;
    }
    double lg[INTENT_C];
    for (int c = 0; c < INTENT_C; c++) {
        const float *w = h->w2 + (size_t)c * INTENT_F;
        float a = h->b2[c];
        for (int f = 0; f < INTENT_F; f++) a += w[f] * hid[f];
        lg[c] = a;
    }
    softmax(lg, p);
}

void intent_forward_ref(const intent_head *h, const float *y, float *hid, float *p) {
    const int H = h->H;
    for (int f = 0; f < INTENT_F; f++) {
        const float *w = h->w1 + (size_t)f * H;
        double a = h->b1[f];
        for (int i = 0; i < H; i++) a += (double)w[i] * y[i];
        hid[f] = a > 0 ? (float)a : 0;
    }
    double lg[INTENT_C];
    for (int c = 0; c < INTENT_C; c++) {
        const float *w = h->w2 + (size_t)c * INTENT_F;
        double a = h->b2[c];
        for (int f = 0; f < INTENT_F; f++) a += (double)w[f] * hid[f];
        lg[c] = a;
    }
    softmax(lg, p);
}

static const char *class_list(char *buf, size_t n) {
    buf[0] = 0;
    for (int c = 0; c < INTENT_C; c++) {
        size_t l = strlen(buf);
        snprintf(buf + l, n - l, "%s%s", c ? "," : "", intent_names[c]);
    }
    return buf;
}

laya_status intent_save(const intent_head *h, const char *path, const char *base_blake2b, char *err,
                        size_t errlen) {
    if (!h || !path || !base_blake2b) return err_set(err, errlen, LAYA_ERR_ARG, "intent_save: NULL argument");
    const int H = h->H;
    st_out t[4] = {
        {"intent.w1", ST_F32, 2, {INTENT_F, H}, h->w1, NULL},
        {"intent.b1", ST_F32, 1, {INTENT_F}, h->b1, NULL},
        {"intent.w2", ST_F32, 2, {INTENT_C, INTENT_F}, h->w2, NULL},
        {"intent.b2", ST_F32, 1, {INTENT_C}, h->b2, NULL},
    };
    char cls[256], num[32], thr[32];
    snprintf(num, sizeof num, "%d", H);
    snprintf(thr, sizeof thr, "%.4f", h->threshold);
    json_t *meta = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "format", "laya-intent", "format_version", "1",
                             "classes", class_list(cls, sizeof cls), "hidden", num, "base_blake2b",
                             base_blake2b, "threshold", thr);
    if (!meta) return err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory writing %s", path);
    laya_status st = st_write(path, t, 4, meta, "data_blake2b", err, errlen);
    json_decref(meta);
    return st;
}

/* A decimal integer in 1..65536 with nothing else, or -1. */
static int parse_dim(const char *s) {
    if (!s || !*s || strlen(s) > 6) return -1;
    long v = 0;
    for (const char *q = s; *q; q++) {
        if (*q < '0' || *q > '9') return -1;
        v = v * 10 + (*q - '0');
    }
    return v >= 1 && v <= 65536 && !(s[0] == '0') ? (int)v : -1;
}

/* Everything after the signature and the container: names, dtypes,
 * shapes, metadata, checksum, finite weights; then copies into *out. */
static laya_status load_checked(const st_file *f, int H, const char *base, intent_head **out, char *e, size_t el) {
    const char *fmt = st_meta(f, "format"), *ver = st_meta(f, "format_version");
    if (!fmt || strcmp(fmt, "laya-intent"))
        return err_set(e, el, LAYA_ERR_FORMAT, "not an intent head (__metadata__ format is not \"laya-intent\"): "
                                               "make one with `laya intent train`");
    if (!ver || strcmp(ver, "1"))
        return err_set(e, el, LAYA_ERR_UNSUPPORTED, "intent head format_version \"%.16s\" is not 1: "
                                                    "from a newer Laya? train it again with this one",
                       ver ? ver : "(none)");
    char cls[256];
    const char *c = st_meta(f, "classes");
    if (!c || strcmp(c, class_list(cls, sizeof cls)))
        return err_set(e, el, LAYA_ERR_FORMAT, "the head's classes are not this Laya's (%s)", cls);
    int fh = parse_dim(st_meta(f, "hidden"));
    if (fh < 0) return err_set(e, el, LAYA_ERR_FORMAT, "__metadata__ hidden is not a dimension");
    if (H && fh != H)
        return err_set(e, el, LAYA_ERR_FORMAT, "the head reads states of %d floats, the model has %d: "
                                               "train a head for this model (laya intent train)", fh, H);
    const char *b = st_meta(f, "base_blake2b");
    if (!b || strlen(b) != 64) return err_set(e, el, LAYA_ERR_FORMAT, "__metadata__ lacks base_blake2b");
    if (base && strcmp(b, base))
        return err_set(e, el, LAYA_ERR_FORMAT, "the head was trained on another base model (%.12s..., this one "
                                               "is %.12s...): train a head for this model", b, base);
    const char *ts = st_meta(f, "threshold");
    char *end = NULL;
    double thr = ts ? strtod(ts, &end) : NAN;
    if (!ts || end == ts || *end || !(thr >= 0 && thr <= 1))
        return err_set(e, el, LAYA_ERR_FORMAT, "__metadata__ threshold is not a probability");
    static const char *const names[4] = {"intent.w1", "intent.b1", "intent.w2", "intent.b2"};
    const int64_t shapes[4][2] = {{INTENT_F, fh}, {INTENT_F, 0}, {INTENT_C, INTENT_F}, {INTENT_C, 0}};
    const st_tensor *t[4];
    if (f->n != 4) return err_set(e, el, LAYA_ERR_FORMAT, "an intent head has 4 tensors, this file %d", f->n);
    for (int i = 0; i < 4; i++) {
        t[i] = st_find(f, names[i]);
        if (!t[i]) return err_set(e, el, LAYA_ERR_FORMAT, "tensor %s is missing", names[i]);
        int nd = shapes[i][1] ? 2 : 1;
        if (t[i]->dtype != ST_F32 || t[i]->ndim != nd || t[i]->shape[0] != shapes[i][0] ||
            (nd == 2 && t[i]->shape[1] != shapes[i][1]))
            return err_set(e, el, LAYA_ERR_FORMAT, "tensor %s must be F32 of shape (%lld%s%.0lld)", names[i],
                           (long long)shapes[i][0], nd == 2 ? ", " : "", (long long)shapes[i][1]);
    }
    const char *sum = st_meta(f, "data_blake2b");
    if (!sum) return err_set(e, el, LAYA_ERR_FORMAT, "__metadata__ lacks data_blake2b");
    char hex[65];
    st_blake2b_hex(f->data, (size_t)f->data_len, hex);
#ifndef LAYA_FUZZ
    if (strcmp(hex, sum))
        return err_set(e, el, LAYA_ERR_SIGNATURE, "checksum mismatch: the data section hashes to %.12s..., "
                                                  "data_blake2b says %.12s...: the file is corrupt or was modified",
                       hex, sum);
#endif
    intent_head *h;
    if (intent_new(fh, &h) != LAYA_OK) return err_set(e, el, LAYA_ERR_NOMEM, "out of memory");
    float *dst[4] = {h->w1, h->b1, h->w2, h->b2};
    for (int i = 0; i < 4; i++) {
        size_t n = (size_t)(t[i]->end - t[i]->begin) / sizeof(float);
        memcpy(dst[i], f->data + t[i]->begin, n * sizeof(float));
        for (size_t k = 0; k < n; k++)
            if (!(fabsf(dst[i][k]) <= INTENT_MAX_WEIGHT)) {
                int finite = isfinite(dst[i][k]);
                intent_free(h);
                return err_set(e, el, LAYA_ERR_FORMAT, "tensor %s element %zu is %s: no trained head has that",
                               names[i], k, finite ? "beyond 1e4" : "not finite");
            }
    }
    h->threshold = (float)thr;
    memcpy(h->base_blake2b, b, 65);
    *out = h;
    return LAYA_OK;
}

laya_status intent_load(const char *path, const model_trust *trust, int H, const char *base_blake2b,
                        intent_head **out, char *err, size_t errlen) {
    *out = NULL;
    if (!path || !trust) return err_set(err, errlen, LAYA_ERR_ARG, "intent_load: NULL argument");
    void *map;
    size_t len;
    laya_status st = model_map_signed(path, "intent head", 8, (size_t)64 << 20, trust, &map, &len, NULL, err,
                                      errlen);
    if (st != LAYA_OK) return st;
    st_file f;
    char e[400] = "";
    st = st_parse(map, len, &f, e, sizeof e);
    if (st == LAYA_OK) {
        st = load_checked(&f, H, base_blake2b, out, e, sizeof e);
        st_free(&f);
    }
    munmap(map, len);
    if (st != LAYA_OK) return err_set(err, errlen, st, "%s: %s", path, e);
    return LAYA_OK;
}

float laya_intent_threshold(const laya_intent *h) { return h ? h->threshold : 0; }
