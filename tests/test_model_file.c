/* test_model_file.c - model files: round trips (f32 exact, f16 within f16
 * rounding, deterministic bytes), then many broken files made by mutating a
 * valid one, each refused with LAYA_ERR_FORMAT (or LAYA_ERR_SIGNATURE for a
 * checksum) and a message naming what is wrong, never a crash. Header
 * mutations go through jansson and re-pad the header, so each case breaks
 * exactly one thing; data mutations recompute data_blake2b when the point is
 * a check behind the checksum.
 *
 * Shape letters: V vocab, H hidden, D attention width, L layers, W window. */
#include "test.h"

#include <jansson.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kern/kern.h"
#include "kern/quant.h"
#include "model/model.h"
#include "model/model_sign.h"
#include "tok/tok_impl.h"
#include "util/st.h"

static const model_cfg tiny = {.V = 300, .H = 16, .D = 8, .L = 2, .W = 3};

static uint64_t rng = 0x13198A2E03707344ull;
static float frand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) * 0x1p-52 - 1.0);
}

static float *random_params(const model_cfg *c) {
    size_t n = model_n_params(c);
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = 0.5f * frand();
    return p;
}

/* A real tokenizer of V ids (merges of letter pairs), serialized. */
static uint8_t *tok_blob(int32_t V, size_t *n) {
    int M = V - TOK_FIRST_MERGE;
    uint16_t (*merge)[2] = malloc(sizeof *merge * (size_t)M);
    for (int i = 0; i < M; i++) {
        merge[i][0] = (uint16_t)('a' + i % 26);
        merge[i][1] = (uint16_t)('a' + i / 26);
    }
    tok *t;
    uint8_t *blob = NULL;
    if (tok_build(V, (const uint16_t (*)[2])merge, &t, NULL, 0) == LAYA_OK) {
        tok_save(t, &blob, n);
        tok_free(t);
    }
    free(merge);
    return blob;
}

/* These tests are about the container and its checks: they load without
 * a signature (the signature tests are below, with a key of their own). */
static laya_status load_unsigned(const char *path, model **m, char *err, size_t n) {
    static const model_trust unsigned_ok = {.allow_unsigned = 1};
    return model_load_opts(path, &unsigned_ok, m, err, n);
}

typedef struct { uint8_t *p; size_t n; } bytes;

static bytes read_file(const char *path) {
    bytes b = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return b;
    fseek(f, 0, SEEK_END);
    b.n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    b.p = malloc(b.n + 1);
    if (fread(b.p, 1, b.n, f) != b.n) b.n = 0;
    fclose(f);
    return b;
}

static void write_file(const char *path, const uint8_t *p, size_t n) {
    FILE *f = fopen(path, "wb");
    fwrite(p, 1, n, f);
    fclose(f);
}

static char dir[256];
static float *params;

/* Writes a valid tiny model (dtype dt) and returns its bytes. */
static bytes valid_file(qtype dt, const char *name) {
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t tn;
    uint8_t *tb = tok_blob(tiny.V, &tn);
    if (!params) params = random_params(&tiny);
    char err[256] = "";
    laya_status st = model_save(path, &tiny, params, dt, tb, tn,
                                "{\"corpus\":\"unit test\",\"steps\":1200,\"lr\":0.5,\"ok\":true}",
                                err, sizeof err);
    free(tb);
    if (st != LAYA_OK) fprintf(stderr, "    model_save: %s\n", err);
    return read_file(path);
}

static uint64_t hdr_len(bytes b) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | b.p[i];
    return n;
}

static json_t *header(bytes b) {
    return json_loadb((const char *)b.p + 8, (size_t)hdr_len(b), 0, NULL);
}

/* A new file: header h (padded so the data starts 64-aligned, plus `shift`
 * extra spaces), then b's data section, optionally with data_blake2b redone. */
static bytes with_header(bytes b, json_t *h, int fix_sha, int shift) {
    const uint8_t *data = b.p + 8 + hdr_len(b);
    size_t dn = b.n - 8 - (size_t)hdr_len(b);
    if (fix_sha) {
        char hex[65];
        st_blake2b_hex(data, dn, hex);
        json_object_set_new(json_object_get(h, "__metadata__"), "data_blake2b", json_string(hex));
        st_tree_blake2b_hex(data, dn, hex);
        json_object_set_new(json_object_get(h, "__metadata__"), ST_TREE_KEY, json_string(hex));
    }
    char *s = json_dumps(h, JSON_COMPACT);
    size_t sl = strlen(s), hl = (8 + sl + 63) / 64 * 64 - 8 + (size_t)shift;
    bytes o = {malloc(8 + hl + dn), 8 + hl + dn};
    for (int i = 0; i < 8; i++) o.p[i] = (uint8_t)((uint64_t)hl >> (8 * i));
    memcpy(o.p + 8, s, sl);
    memset(o.p + 8 + sl, ' ', hl - sl);
    memcpy(o.p + 8 + hl, data, dn);
    free(s);
    return o;
}

static bytes copy_of(bytes b) {
    bytes o = {malloc(b.n), b.n};
    memcpy(o.p, b.p, b.n);
    return o;
}

/* Data offset of a tensor (bytes into the data section) from the header. */
static size_t tensor_begin(bytes b, const char *name) {
    json_t *h = header(b);
    size_t at = (size_t)json_integer_value(json_array_get(json_object_get(json_object_get(h, name), "data_offsets"), 0));
    json_decref(h);
    return at + 8 + (size_t)hdr_len(b);
}

/* Loads bytes b; returns 1 if refused with one of the expected statuses, a
 * message containing `want` (if given), and no model. */
static int refused(bytes b, const char *want, const char *what) {
    char path[512], err[512] = "";
    snprintf(path, sizeof path, "%s/broken.safetensors", dir);
    write_file(path, b.p, b.n);
    model *m = (model *)&err;
    laya_status st = load_unsigned(path, &m, err, sizeof err);
    int ok = (st == LAYA_ERR_FORMAT || st == LAYA_ERR_SIGNATURE || st == LAYA_ERR_UNSUPPORTED) &&
             m == NULL && strlen(err) > strlen(path) + 2 && (!want || strstr(err, want));
    if (!ok) fprintf(stderr, "    %s: status %d, message \"%s\" (want \"%s\")\n", what, st, err, want ? want : "");
    if (st == LAYA_OK) model_free(m);
    free(b.p);
    return ok;
}

TEST(model_file_round_trip_f32) {
    bytes b = valid_file(QT_F32, "m32.safetensors");
    CHECK(b.n > 0);
    CHECK((8 + hdr_len(b)) % 64 == 0);
    char path[512], err[256] = "";
    snprintf(path, sizeof path, "%s/m32.safetensors", dir);
    model *m;
    CHECKF(load_unsigned(path, &m, err, sizeof err) == LAYA_OK, "%s", err);
    CHECK(memcmp(&m->cfg, &tiny, sizeof tiny) == 0);
    CHECK(m->tok && tok_vocab_size(m->tok) == tiny.V);
    CHECK(m->emb.type == QT_F32 && m->layer[1].wo.type == QT_F32);
    /* every tensor bit-equal, through the model's own pointers */
    model_params p;
    model_params_point(&tiny, params, &p);
    float row[64];
    for (int r = 0; r < tiny.V; r++) {
        kern_row_f32(&m->emb, r, row);
        CHECK(memcmp(row, p.emb + (size_t)r * tiny.H, tiny.H * sizeof(float)) == 0);
    }
    for (int l = 0; l < tiny.L; l++) {
        const model_layer *ly = &m->layer[l];
        const model_layer_params *lp = &p.layer[l];
        CHECK(memcmp(ly->w_ih.data, lp->w_ih, 3 * 16 * 16 * sizeof(float)) == 0);
        CHECK(memcmp(ly->w_hh.data, lp->w_hh, 3 * 16 * 16 * sizeof(float)) == 0);
        CHECK(memcmp(ly->b_ih, lp->b_ih, 3 * 16 * sizeof(float)) == 0);
        CHECK(memcmp(ly->b_hh, lp->b_hh, 3 * 16 * sizeof(float)) == 0);
        CHECK(memcmp(ly->wq.data, lp->wq, 8 * 16 * sizeof(float)) == 0);
        CHECK(memcmp(ly->wk.data, lp->wk, 8 * 16 * sizeof(float)) == 0);
        CHECK(memcmp(ly->wv.data, lp->wv, 8 * 16 * sizeof(float)) == 0);
        CHECK(memcmp(ly->wo.data, lp->wo, 16 * 8 * sizeof(float)) == 0);
        CHECK(ly->wo.rows == 16 && ly->wo.cols == 8 && ly->w_ih.rows == 48);
    }
    CHECK(memcmp(m->norm, p.norm, 16 * sizeof(float)) == 0);
    /* metadata: ours and the provenance, numbers kept as their JSON text */
    CHECK(m->meta_json && strstr(m->meta_json, "\"format\":\"laya\""));
    CHECK(strstr(m->meta_json, "\"corpus\":\"unit test\"") && strstr(m->meta_json, "\"steps\":\"1200\""));
    CHECK(strstr(m->meta_json, "\"ok\":\"true\"") && strstr(m->meta_json, "\"data_blake2b\":\""));
    model_free(m);
    free(b.p);
}

TEST(model_file_round_trip_f16) {
    bytes b = valid_file(QT_F16, "m16.safetensors");
    CHECK(b.n > 0);
    char path[512], err[256] = "";
    snprintf(path, sizeof path, "%s/m16.safetensors", dir);
    model *m;
    CHECKF(load_unsigned(path, &m, err, sizeof err) == LAYA_OK, "%s", err);
    CHECK(m->emb.type == QT_F16 && m->layer[0].w_hh.type == QT_F16 && m->owned != NULL);
    /* every weight equals its f16 rounding */
    size_t n = model_n_params(&tiny);
    float *r16 = malloc(n * sizeof *r16);
    for (size_t i = 0; i < n; i++) r16[i] = kern_f16_to_f32(kern_f32_to_f16(params[i]));
    model_params p;
    model_params_point(&tiny, r16, &p);
    float row[64];
    for (int r = 0; r < tiny.V; r++) {
        kern_row_f32(&m->emb, r, row);
        CHECK(memcmp(row, p.emb + (size_t)r * tiny.H, tiny.H * sizeof(float)) == 0);
    }
    for (int l = 0; l < tiny.L; l++)
        for (int r = 0; r < 48; r++) {
            kern_row_f32(&m->layer[l].w_hh, r, row);
            CHECK(memcmp(row, p.layer[l].w_hh + r * 16, 16 * sizeof(float)) == 0);
            CHECK(m->layer[l].b_ih[r] == p.layer[l].b_ih[r]);
        }
    CHECK(memcmp(m->norm, p.norm, 16 * sizeof(float)) == 0);
    /* the f16 model steps like an f32 model over the rounded weights */
    model *m32;
    CHECK(model_from_params(&tiny, r16, NULL, &m32) == LAYA_OK);
    float *s1 = calloc(model_state_floats(&tiny), sizeof(float));
    float *s2 = calloc(model_state_floats(&tiny), sizeof(float));
    float *sc = malloc(model_scratch_floats(&tiny) * sizeof(float)), y1[64], y2[64];
    model_state a, c2;
    model_state_init(&tiny, &a, s1);
    model_state_init(&tiny, &c2, s2);
    for (int t = 0; t < 12; t++) {
        model_step(m, &a, (int32_t)(t * 41 % tiny.V), sc, y1);
        model_step(m32, &c2, (int32_t)(t * 41 % tiny.V), sc, y2);
        for (int i = 0; i < tiny.H; i++) CHECK_NEAR(y1[i], y2[i], 1e-5, 1e-5);
    }
    model_free(m32);
    model_free(m);
    free(r16);
    free(s1);
    free(s2);
    free(sc);
    free(b.p);
}

TEST(model_file_save_is_deterministic) {
    bytes a = valid_file(QT_F16, "a.safetensors"), b = valid_file(QT_F16, "b.safetensors");
    CHECK(a.n > 0 && a.n == b.n && memcmp(a.p, b.p, a.n) == 0);
    free(a.p);
    free(b.p);
}

TEST(model_file_save_refuses_bad_input) {
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/x.safetensors", dir);
    size_t tn;
    uint8_t *tb = tok_blob(tiny.V, &tn);
    float *p = random_params(&tiny);
    err[0] = 0;
    CHECK(model_save(path, &tiny, p, QT_F32, tb, tn, "{\"dtype\":\"x\"}", err, sizeof err) == LAYA_ERR_ARG);
    CHECK(strstr(err, "reserved"));
    CHECK(model_save(path, &tiny, p, QT_F32, tb, tn, "[1]", err, sizeof err) == LAYA_ERR_ARG);
    CHECK(model_save(path, &tiny, p, QT_F32, tb, tn, "{\"a\":{}}", err, sizeof err) == LAYA_ERR_ARG);
    CHECK(model_save(path, &tiny, p, QT_Q8, tb, tn, NULL, err, sizeof err) == LAYA_ERR_UNSUPPORTED);
    CHECK(model_save(path, &tiny, p, QT_F32, NULL, 0, NULL, err, sizeof err) == LAYA_ERR_ARG);
    model_params mp;
    model_params_point(&tiny, p, &mp);
    mp.layer[1].wv[3] = NAN;
    CHECK(model_save(path, &tiny, p, QT_F32, tb, tn, NULL, err, sizeof err) == LAYA_ERR_ARG);
    CHECK(strstr(err, "l1.wv"));
    mp.layer[1].wv[3] = 70000.0f;  /* fine in f32, infinite in f16 */
    CHECK(model_save(path, &tiny, p, QT_F16, tb, tn, NULL, err, sizeof err) == LAYA_ERR_ARG);
    CHECK(model_save(path, &tiny, p, QT_F32, tb, tn, NULL, err, sizeof err) == LAYA_OK);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    fclose(f);
    snprintf(path, sizeof path, "%s/no/such/dir/x.safetensors", dir);
    CHECK(model_save(path, &tiny, p, QT_F32, tb, tn, NULL, err, sizeof err) == LAYA_ERR_IO);
    free(tb);
    free(p);
}

TEST(model_file_refuses_truncated) {
    bytes b = valid_file(QT_F32, "t.safetensors");
    size_t hl = 8 + (size_t)hdr_len(b);
    const size_t cuts[] = {0, 1, 7, 8, 9, 100, hl - 1, hl, hl + 1, hl + 1000, b.n / 2, b.n - 100, b.n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        bytes c = copy_of(b);
        c.n = cuts[i];
        char what[64];
        snprintf(what, sizeof what, "truncated to %zu of %zu", cuts[i], b.n);
        CHECKF(refused(c, NULL, what), "%s", what);
    }
    free(b.p);
}

static void set_hdr_len(bytes b, uint64_t n) {
    for (int i = 0; i < 8; i++) b.p[i] = (uint8_t)(n >> (8 * i));
}

TEST(model_file_refuses_bad_header) {
    bytes b = valid_file(QT_F32, "h.safetensors");
    uint64_t hl = hdr_len(b);
    bytes c = copy_of(b);
    set_hdr_len(c, UINT64_C(1) << 40);
    CHECK(refused(c, "exceeds", "header length 2^40"));
    c = copy_of(b);
    set_hdr_len(c, 17u << 20);
    CHECK(refused(c, "exceeds", "header length 17 MiB"));
    c = copy_of(b);
    set_hdr_len(c, b.n);
    CHECK(refused(c, "does not fit", "header length = file size"));
    c = copy_of(b);
    set_hdr_len(c, 0);
    CHECK(refused(c, NULL, "header length 0"));
    c = copy_of(b);
    set_hdr_len(c, hl / 2);
    CHECK(refused(c, "JSON", "header cut in half"));
    c = copy_of(b);
    c.p[8] = 'x';
    CHECK(refused(c, "JSON", "garbage JSON"));
    c = copy_of(b);
    c.p[8 + hl / 3] = 0;
    CHECK(refused(c, "JSON", "NUL in the header"));
    c = copy_of(b);
    memset(c.p + 8, ' ', hl);
    memcpy(c.p + 8, "[1,2,3]", 7);
    CHECK(refused(c, "not a JSON object", "array header"));
    c = copy_of(b);  /* a duplicate key, spliced in at the front */
    memcpy(c.p + 8, "{\"norm\":1,\"norm\":2,", 19);
    CHECK(refused(c, "JSON", "duplicate key"));
    free(b.p);
}

/* Mutates the tensor entry `name` (or __metadata__) through fn and checks the
 * refusal mentions `want`. */
typedef void (*mutate_fn)(json_t *entry);
static int refused_entry(bytes b, const char *name, mutate_fn fn, int fix_sha, const char *want) {
    json_t *h = header(b);
    fn(json_object_get(h, name));
    bytes c = with_header(b, h, fix_sha, 0);
    json_decref(h);
    return refused(c, want, name);
}

static void dtype_i32(json_t *e) { json_object_set_new(e, "dtype", json_string("I32")); }
static void dtype_f16(json_t *e) { json_object_set_new(e, "dtype", json_string("F16")); }
static void dtype_bogus(json_t *e) { json_object_set_new(e, "dtype", json_string("Q3_K")); }
static void shape_swap(json_t *e) {  /* (D, H) -> (H, D): same size, wrong shape */
    json_t *s = json_object_get(e, "shape");
    json_t *a = json_incref(json_array_get(s, 0)), *b2 = json_incref(json_array_get(s, 1));
    json_array_set_new(s, 0, b2);
    json_array_set_new(s, 1, a);
}
static void shape_minus1(json_t *e) {
    json_t *s = json_object_get(e, "shape");
    json_array_set_new(s, 0, json_integer(json_integer_value(json_array_get(s, 0)) - 1));
}
static void shape_3d(json_t *e) { json_array_append_new(json_object_get(e, "shape"), json_integer(1)); }
static void shape_neg(json_t *e) { json_array_set_new(json_object_get(e, "shape"), 0, json_integer(-8)); }
static void shape_str(json_t *e) { json_array_set_new(json_object_get(e, "shape"), 0, json_string("8")); }
static void extra_member(json_t *e) { json_object_set_new(e, "scale", json_real(1.0)); }
static void offs_short(json_t *e) { json_array_remove(json_object_get(e, "data_offsets"), 1); }
static void offs_plus2(json_t *e) {  /* misaligned and overlapping the next one */
    json_t *o = json_object_get(e, "data_offsets");
    for (int i = 0; i < 2; i++)
        json_array_set_new(o, (size_t)i, json_integer(json_integer_value(json_array_get(o, (size_t)i)) + 2));
}
static void offs_beyond(json_t *e) {
    json_t *o = json_object_get(e, "data_offsets");
    json_array_set_new(o, 1, json_integer(json_integer_value(json_array_get(o, 1)) + (1 << 20)));
}
static void offs_reversed(json_t *e) {
    json_t *o = json_object_get(e, "data_offsets");
    json_t *a = json_incref(json_array_get(o, 0)), *b2 = json_incref(json_array_get(o, 1));
    json_array_set_new(o, 0, b2);
    json_array_set_new(o, 1, a);
}
static void meta_v_big(json_t *m) { json_object_set_new(m, "V", json_string("70000")); }
static void meta_v_301(json_t *m) { json_object_set_new(m, "V", json_string("301")); }
static void meta_h_text(json_t *m) { json_object_set_new(m, "H", json_string("16abc")); }
static void meta_h_plus(json_t *m) { json_object_set_new(m, "H", json_string("+16")); }
static void meta_w_big(json_t *m) { json_object_set_new(m, "W", json_string("17")); }
static void meta_l_zero(json_t *m) { json_object_set_new(m, "L", json_string("0")); }
static void meta_no_d(json_t *m) { json_object_del(m, "D"); }
static void meta_format(json_t *m) { json_object_set_new(m, "format", json_string("gguf")); }
static void meta_no_format(json_t *m) { json_object_del(m, "format"); }
static void meta_version(json_t *m) { json_object_set_new(m, "format_version", json_string("2")); }
static void meta_dtype(json_t *m) { json_object_set_new(m, "dtype", json_string("F16")); }
static void meta_number(json_t *m) { json_object_set_new(m, "steps", json_integer(1200)); }
static void meta_no_sum(json_t *m) { json_object_del(m, "data_blake2b"); }
static void meta_bad_sum(json_t *m) {
    json_object_set_new(m, ST_TREE_KEY, json_string("0000000000000000000000000000000000000000000000000000000000000000"));
}
/* a file written before the tree checksum: data_blake2b is the one checked */
static void meta_bad_old_sum(json_t *m) {
    json_object_del(m, ST_TREE_KEY);
    json_object_set_new(m, "data_blake2b", json_string("0000000000000000000000000000000000000000000000000000000000000000"));
}
static void meta_tok_sum(json_t *m) {
    json_object_set_new(m, "tokenizer_sha256", json_string("00"));
}

TEST(model_file_refuses_bad_tensor_entries) {
    bytes b = valid_file(QT_F32, "e.safetensors");
    CHECK(refused_entry(b, "l0.w_ih", dtype_i32, 1, "l0.w_ih: dtype I32"));
    CHECK(refused_entry(b, "l0.wq", dtype_f16, 1, "l0.wq: 512 bytes in data_offsets"));
    CHECK(refused_entry(b, "emb", dtype_bogus, 1, "unknown dtype"));
    CHECK(refused_entry(b, "l1.wk", shape_swap, 1, "l1.wk: shape"));
    CHECK(refused_entry(b, "norm", shape_3d, 1, "norm"));
    CHECK(refused_entry(b, "l0.wo", shape_neg, 1, "l0.wo: shape[0]"));
    CHECK(refused_entry(b, "l0.wo", shape_str, 1, "l0.wo: shape[0]"));
    CHECK(refused_entry(b, "l1.b_hh", extra_member, 1, "unexpected member"));
    CHECK(refused_entry(b, "l1.b_hh", offs_short, 1, "l1.b_hh: data_offsets"));
    CHECK(refused_entry(b, "l0.b_hh", offs_plus2, 1, "misaligned"));
    CHECK(refused_entry(b, "norm", offs_beyond, 1, "norm: data_offsets"));
    CHECK(refused_entry(b, "l0.wq", offs_reversed, 1, "l0.wq: data_offsets"));
    CHECK(refused_entry(b, "tokenizer", shape_minus1, 1, "tokenizer: 344 bytes in data_offsets"));
    free(b.p);
}

TEST(model_file_refuses_bad_metadata) {
    bytes b = valid_file(QT_F32, "md.safetensors");
    CHECK(refused_entry(b, "__metadata__", meta_v_big, 1, "V=70000"));
    CHECK(refused_entry(b, "__metadata__", meta_v_301, 1, "emb: shape"));
    CHECK(refused_entry(b, "__metadata__", meta_h_text, 1, "\"H\""));
    CHECK(refused_entry(b, "__metadata__", meta_h_plus, 1, "\"H\""));
    CHECK(refused_entry(b, "__metadata__", meta_w_big, 1, "W=17"));
    CHECK(refused_entry(b, "__metadata__", meta_l_zero, 1, "L=0"));
    CHECK(refused_entry(b, "__metadata__", meta_no_d, 1, "\"D\""));
    CHECK(refused_entry(b, "__metadata__", meta_format, 1, "format"));
    CHECK(refused_entry(b, "__metadata__", meta_no_format, 1, "not a Laya model"));
    CHECK(refused_entry(b, "__metadata__", meta_version, 1, "format_version"));
    CHECK(refused_entry(b, "__metadata__", meta_dtype, 1, "dtype F32, expected F16"));
    CHECK(refused_entry(b, "__metadata__", meta_number, 1, "not a string"));
    CHECK(refused_entry(b, "__metadata__", meta_no_sum, 0, "data_blake2b"));
    CHECK(refused_entry(b, "__metadata__", meta_bad_sum, 0, "checksum mismatch"));
    CHECK(refused_entry(b, "__metadata__", meta_bad_old_sum, 0, "checksum mismatch"));
    CHECK(refused_entry(b, "__metadata__", meta_tok_sum, 1, "tokenizer_sha256"));
    free(b.p);
}

TEST(model_file_refuses_wrong_tensor_set) {
    bytes b = valid_file(QT_F32, "s.safetensors");
    json_t *h = header(b);  /* renamed: norm missing, "norx" unknown */
    json_object_set(h, "norx", json_object_get(h, "norm"));
    json_object_del(h, "norm");
    CHECK(refused(with_header(b, h, 1, 0), "missing tensor norm", "renamed tensor"));
    json_decref(h);
    h = header(b);  /* an extra, empty tensor: tiles fine, but unknown */
    json_t *e = json_pack("{s:s, s:[i], s:[i,i]}", "dtype", "F32", "shape", 0, "data_offsets", 0, 0);
    json_object_set_new(h, "l7.extra", e);
    CHECK(refused(with_header(b, h, 1, 0), "unknown tensor \"l7.extra\"", "extra tensor"));
    json_decref(h);
    h = header(b);  /* wk over wq's bytes: overlap (and a gap) */
    json_object_set(json_object_get(h, "l0.wk"), "data_offsets",
                    json_object_get(json_object_get(h, "l0.wq"), "data_offsets"));
    CHECK(refused(with_header(b, h, 1, 0), "overlap", "overlapping offsets"));
    json_decref(h);
    h = header(b);  /* the tokenizer entry dropped: its bytes are left over */
    json_object_del(h, "tokenizer");
    CHECK(refused(with_header(b, h, 1, 0), "after the last tensor", "trailing bytes"));
    json_decref(h);
    h = header(b);  /* data section shifted by 2 bytes: every F32 misaligned */
    CHECK(refused(with_header(b, h, 1, 2), "misaligned", "shifted data"));
    json_decref(h);
    free(b.p);
}

static void put_f32(bytes b, size_t at, float v) { memcpy(b.p + at, &v, 4); }

TEST(model_file_refuses_bad_data) {
    bytes b = valid_file(QT_F32, "d.safetensors");
    json_t *h;
    bytes c = copy_of(b);  /* one flipped bit in a weight */
    c.p[tensor_begin(b, "l1.w_ih") + 77] ^= 0x10;
    CHECK(refused(c, "checksum mismatch", "flipped bit"));
    c = copy_of(b);  /* NaN in a weight, checksum redone: the value check */
    put_f32(c, tensor_begin(b, "l1.w_hh") + 4 * 5, NAN);
    h = header(c);
    CHECK(refused(with_header(c, h, 1, 0), "l1.w_hh: element 5", "NaN weight"));
    json_decref(h);
    free(c.p);
    c = copy_of(b);
    put_f32(c, tensor_begin(b, "norm") + 4 * 15, -INFINITY);
    h = header(c);
    CHECK(refused(with_header(c, h, 1, 0), "norm: element 15", "Inf weight"));
    json_decref(h);
    free(c.p);
    c = copy_of(b);  /* corrupt tokenizer, both checksums redone: tok_load's refusal */
    size_t tk = tensor_begin(b, "tokenizer");
    c.p[tk] = 'X';
    h = header(c);
    char hex[65];
    st_sha256_hex(c.p + tk, c.n - tk, hex);
    json_object_set_new(json_object_get(h, "__metadata__"), "tokenizer_sha256", json_string(hex));
    CHECK(refused(with_header(c, h, 1, 0), "tensor tokenizer:", "corrupt tokenizer"));
    json_decref(h);
    free(c.p);
    free(b.p);

    b = valid_file(QT_F16, "d16.safetensors");  /* f16: +Inf is 0x7C00 */
    c = copy_of(b);
    c.p[tensor_begin(b, "emb") + 2 * 33] = 0x00;
    c.p[tensor_begin(b, "emb") + 2 * 33 + 1] = 0x7C;
    h = header(c);
    CHECK(refused(with_header(c, h, 1, 0), "emb: element 33", "f16 Inf"));
    json_decref(h);
    free(c.p);
    free(b.p);
}

TEST(model_file_refuses_other_files) {
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    char err[256] = "";
    model *m;
    CHECK(model_load("/nonexistent/model.safetensors", &m, err, sizeof err) == LAYA_ERR_IO && m == NULL);
    CHECK(strstr(err, "cannot open"));
    CHECK(model_load(dir, &m, err, sizeof err) == LAYA_ERR_IO);
    bytes c = {malloc(3), 3};
    memcpy(c.p, "abc", 3);
    CHECK(refused(c, "too short", "3-byte file"));
}

/* Random corruption of the header and random truncation: whatever happens,
 * no crash, and any refusal explains itself. A byte flipped inside a
 * provenance string can leave a valid file, so OK is allowed here. */
TEST(model_file_fuzz_header) {
    bytes b = valid_file(QT_F16, "f.safetensors");
    size_t hl = 8 + (size_t)hdr_len(b);
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/fuzz.safetensors", dir);
    int refused_n = 0;
    for (int i = 0; i < 300; i++) {
        bytes c = copy_of(b);
        int flips = 1 + i % 4;
        for (int k = 0; k < flips; k++) {
            size_t at = (size_t)((frand() + 1.0f) * 0.5f * (float)hl) % hl;
            c.p[at] = (uint8_t)((frand() + 1.0f) * 128.0f);
        }
        if (i % 5 == 0) c.n = (size_t)((frand() + 1.0f) * 0.5f * (float)c.n);
        write_file(path, c.p, c.n);
        err[0] = 0;
        model *m;
        laya_status st = load_unsigned(path, &m, err, sizeof err);
        if (st == LAYA_OK) model_free(m);
        else {
            CHECKF(strlen(err) > 0 && m == NULL, "iteration %d: status %d with no message", i, st);
            refused_n++;
        }
        free(c.p);
    }
    CHECK(refused_n > 250);
    free(b.p);
}

/* ---- quantized model files (q8/q4, kern/quant.h) ---- */

/* H and D multiples of 32, so every group size up to 32 divides them. */
static const model_cfg qcfg = {.V = 300, .H = 64, .D = 32, .L = 2, .W = 3};
static float *qparams;

static bytes quant_file(qtype dt, int32_t G, const char *name, laya_status *status) {
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    char path[512], err[256] = "";
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t tn;
    uint8_t *tb = tok_blob(qcfg.V, &tn);
    if (!qparams) qparams = random_params(&qcfg);
    laya_status st = model_save_quant(path, &qcfg, qparams, dt, G, tb, tn, "{\"from\":\"test\"}", err, sizeof err);
    free(tb);
    if (status) *status = st;
    if (st != LAYA_OK) {
        if (!status) fprintf(stderr, "    model_save_quant: %s\n", err);
        return (bytes){0};
    }
    return read_file(path);
}

/* Relative L2 distance of the final hidden vector y of the step path
 * between m and the f32 model over the same token sequence. */
static double step_distance(const model *m, const model *ref) {
    const model_cfg *c = &m->cfg;
    float *s1 = malloc(model_state_floats(c) * sizeof *s1), *s2 = malloc(model_state_floats(c) * sizeof *s2);
    float *scratch = malloc(model_scratch_floats(c) * sizeof *scratch);
    float y1[64], y2[64];
    model_state a, b;
    model_state_init(c, &a, s1);
    model_state_init(c, &b, s2);
    double num = 0, den = 0;
    for (int t = 0; t < 24; t++) {
        int32_t id = t == 0 ? 256 : (int32_t)((unsigned)t * 2654435761u % (unsigned)c->V);
        model_step(m, &a, id, scratch, y1);
        model_step(ref, &b, id, scratch, y2);
        for (int i = 0; i < c->H; i++) {
            num += ((double)y1[i] - y2[i]) * ((double)y1[i] - y2[i]);
            den += (double)y2[i] * y2[i];
        }
    }
    free(s1);
    free(s2);
    free(scratch);
    return sqrt(num / den);
}

/* The distance of a q8 and a q4 model's step output to the f32 model's
 * (step_distance) on the kernel table LAYA_KERN names, measured in a child
 * process (the table is chosen once per process): the weights of qcfg
 * scaled by QDIST_SCALE, written and loaded as files. 0 and dist[0..1] on
 * success; -1 when something failed (a message on stderr). Frees
 * everything on every path. */
enum { QDIST_FAILED = -1 };
static const float QDIST_SCALE = 0.3f;

static int quant_distances(const char *table, double dist[2]) {
    int fds[2];
    if (pipe(fds) != 0) return QDIST_FAILED;
    fflush(stdout);   /* the child must not print the parent's buffered lines again */
    pid_t pid = fork();
    if (pid < 0) return QDIST_FAILED;
    if (pid == 0) {
        close(fds[0]);
        setenv("LAYA_KERN", table, 1);
        double d[2] = {-1, -1};
        size_t n = model_n_params(&qcfg), tn;
        float *w = malloc(n * sizeof *w);
        uint8_t *tb = tok_blob(qcfg.V, &tn);
        model *ref = NULL;
        if (w && tb && !strcmp(kern_get()->name, table)) {
            for (size_t i = 0; i < n; i++) w[i] = QDIST_SCALE * qparams[i];
            if (model_from_params(&qcfg, w, NULL, &ref) == LAYA_OK) {
                for (int k = 0; k < 2; k++) {
                    char path[512], err[256] = "";
                    snprintf(path, sizeof path, "%s/dist-q%d.safetensors", dir, k ? 4 : 8);
                    model *m = NULL;
                    if (model_save_quant(path, &qcfg, w, k ? QT_Q4 : QT_Q8, 32, tb, tn, NULL, err, sizeof err) ==
                            LAYA_OK &&
                        load_unsigned(path, &m, err, sizeof err) == LAYA_OK)
                        d[k] = step_distance(m, ref);
                    else
                        fprintf(stderr, "    %s: %s\n", table, err);
                    model_free(m);
                }
            }
        }
        model_free(ref);
        free(w);
        free(tb);
        ssize_t wr = write(fds[1], d, sizeof d);
        _exit(wr == (ssize_t)sizeof d ? 0 : 1);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], dist, 2 * sizeof *dist);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got != (ssize_t)(2 * sizeof *dist) || !WIFEXITED(status) || WEXITSTATUS(status) || dist[0] < 0 || dist[1] < 0)
        return QDIST_FAILED;
    return 0;
}

/* Bounds on the relative L2 distance of the step output to f32 over 24
 * steps, right on every kernel table. Per product, q8 weights err by up to
 * half a step of (max - min)/255 per group (relative rms about 0.002 for
 * uniform weights) and the vector tables' int8 x by up to max|x|/254 per
 * group (about as much again); q4 steps are 17x coarser. The weights are
 * scaled down (QDIST_SCALE) so the GRU stays out of saturation: there a
 * rounding difference can flip a gate and the distance of one step jumped
 * between 0.01 and 0.05 (0.0296 overall with the vector tables natively,
 * 0.0595 under valgrind, against a bound of 0.05). Measured with the
 * scaled weights: q8 0.0027 (ref), 0.0053 (avx2, avx512); q4 0.052 (all).
 * The bounds keep 4x for other compilers and emulated FMA. */
#define MAX_Q8_STEP_DISTANCE 0.02
#define MAX_Q4_STEP_DISTANCE 0.2

TEST(model_file_quant_round_trip) {
    bytes b0 = quant_file(QT_F32, 0, "qf32.safetensors", NULL);
    CHECK(b0.n > 0);
    free(b0.p);
    for (int k = 0; k < 2; k++) {
        qtype dt = k == 0 ? QT_Q8 : QT_Q4;
        int bits = k == 0 ? 8 : 4;
        bytes b = quant_file(dt, 32, k == 0 ? "q8.safetensors" : "q4.safetensors", NULL);
        free(b.p);
        CHECK(b.n > 0);
        char path[512], err[256] = "";
        snprintf(path, sizeof path, "%s/%s", dir, k == 0 ? "q8.safetensors" : "q4.safetensors");
        model *m;
        CHECKF(load_unsigned(path, &m, err, sizeof err) == LAYA_OK, "%s", err);
        int ok = m->emb.type == dt && m->emb.group == 32 && m->layer[1].wo.type == dt && m->layer[1].wo.cols == 32 &&
                 strstr(m->meta_json, bits == 8 ? "\"quant\":\"q8g32\"" : "\"quant\":\"q4g32\"") &&
                 strstr(m->meta_json, "\"quant_version\":\"1\"") && strstr(m->meta_json, "\"dtype\":\"U8\"");
        /* the stored codes, scales and biases are quant_quantize's, bit for bit */
        model_params p;
        model_params_point(&qcfg, qparams, &p);
        uint8_t q[64];
        float s[2], bi[2];
        size_t rb = quant_row_bytes(bits, 64);
        for (int r = 0; ok && r < qcfg.V; r += 13)
            ok = quant_quantize(p.emb + (size_t)r * 64, 1, 64, bits, 32, q, s, bi, NULL, 0) == LAYA_OK &&
                 memcmp(q, (const uint8_t *)m->emb.data + r * rb, rb) == 0 &&
                 memcmp(s, m->emb.scales + 2 * r, sizeof s) == 0 && memcmp(bi, m->emb.biases + 2 * r, sizeof bi) == 0;
        ok = ok && memcmp(m->norm, p.norm, 64 * sizeof(float)) == 0;
        model_free(m);
        CHECKF(ok, "q%d: the file's tensors are not what quant_quantize made", bits);
    }
    /* Close to f32 on every kernel table this CPU has; q8 much closer than q4. */
    static const char *const tables[] = {"ref", "avx2", "avx512"};
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
        if (!kern_by_name(tables[t])) continue;
        double dist[2];
        CHECKF(quant_distances(tables[t], dist) == 0, "%s: could not measure the distances", tables[t]);
        printf("    %s: relative L2 distance of the step output to f32 over 24 steps: q8 g32 %.3g, q4 g32 %.3g\n",
               tables[t], dist[0], dist[1]);
        CHECKF(dist[0] < MAX_Q8_STEP_DISTANCE, "%s: q8 distance %g", tables[t], dist[0]);
        CHECKF(dist[1] < MAX_Q4_STEP_DISTANCE, "%s: q4 distance %g", tables[t], dist[1]);
        CHECKF(dist[0] < dist[1] / 4, "%s: q8 %g not much closer than q4 %g", tables[t], dist[0], dist[1]);
    }
}

TEST(model_file_quant_save_refusals) {
    laya_status st;
    bytes b = quant_file(QT_Q8, 64, "g64.safetensors", &st);  /* 64 does not divide D = 32 */
    CHECK(st == LAYA_ERR_ARG && b.n == 0);
    b = quant_file(QT_Q4, 48, "g48.safetensors", &st);
    CHECK(st == LAYA_ERR_ARG && b.n == 0);
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/x.safetensors", dir);
    size_t tn;
    uint8_t *tb = tok_blob(tiny.V, &tn);
    float *p = random_params(&tiny);  /* H = 16: no group divides it */
    CHECK(model_save_quant(path, &tiny, p, QT_Q8, 32, tb, tn, NULL, err, sizeof err) == LAYA_ERR_ARG);
    CHECK(strstr(err, "must divide H=16"));
    free(tb);
    free(p);
    tb = tok_blob(qcfg.V, &tn);
    p = random_params(&qcfg);
    CHECK(model_save_quant(path, &qcfg, p, QT_Q8, 32, tb, tn, "{\"quant\":\"x\"}", err, sizeof err) ==
          LAYA_ERR_ARG);
    CHECK(strstr(err, "reserved key \"quant\""));
    p[77] = NAN;
    CHECK(model_save_quant(path, &qcfg, p, QT_Q4, 32, tb, tn, NULL, err, sizeof err) == LAYA_ERR_ARG);
    CHECK(strstr(err, "emb: element 77"));
    free(tb);
    free(p);
}

static void meta_quant_q5(json_t *m) { json_object_set_new(m, "quant", json_string("q5g32")); }
static void meta_quant_g48(json_t *m) { json_object_set_new(m, "quant", json_string("q8g48")); }
static void meta_quant_tail(json_t *m) { json_object_set_new(m, "quant", json_string("q8g32x")); }
static void meta_quant_g64(json_t *m) { json_object_set_new(m, "quant", json_string("q8g64")); }
static void meta_quant_q4(json_t *m) { json_object_set_new(m, "quant", json_string("q4g32")); }
static void meta_quant_none(json_t *m) { json_object_set_new(m, "quant", json_string("none")); }
static void meta_quant_del(json_t *m) { json_object_del(m, "quant"); }
static void meta_qversion(json_t *m) { json_object_set_new(m, "quant_version", json_string("2")); }
static void meta_dtype_f32(json_t *m) { json_object_set_new(m, "dtype", json_string("F32")); }
static void rename_scales(json_t *h) {
    json_object_set(h, "l1.wk.scalez", json_object_get(h, "l1.wk.scales"));
    json_object_del(h, "l1.wk.scales");
}
static void scales_f16(json_t *e) { json_object_set_new(e, "dtype", json_string("F16")); }

static int refused_root(bytes b, mutate_fn fn, const char *want) {
    json_t *h = header(b);
    fn(h);
    bytes c = with_header(b, h, 1, 0);
    json_decref(h);
    return refused(c, want, "root");
}

TEST(model_file_refuses_bad_quant) {
    bytes b = quant_file(QT_Q8, 32, "bq.safetensors", NULL);
    CHECK(b.n > 0);
    CHECK(refused_entry(b, "__metadata__", meta_quant_q5, 1, "q5g32"));
    CHECK(refused_entry(b, "__metadata__", meta_quant_g48, 1, "q8g48"));
    CHECK(refused_entry(b, "__metadata__", meta_quant_tail, 1, "q8g32x"));
    CHECK(refused_entry(b, "__metadata__", meta_quant_g64, 1, "emb.scales: shape"));
    CHECK(refused_entry(b, "__metadata__", meta_quant_q4, 1, "emb: shape"));
    CHECK(refused_entry(b, "__metadata__", meta_quant_none, 1, "q4 or q8"));
    CHECK(refused_entry(b, "__metadata__", meta_quant_del, 1, "lacks \"quant\""));
    CHECK(refused_entry(b, "__metadata__", meta_qversion, 1, "quant_version"));
    CHECK(refused_entry(b, "__metadata__", meta_dtype_f32, 1, "expected \"none\""));
    CHECK(refused_root(b, rename_scales, "l1.wk.scales"));
    CHECK(refused_entry(b, "l0.w_hh.biases", scales_f16, 1, "l0.w_hh.biases"));
    /* a NaN scale behind a valid checksum */
    bytes c = copy_of(b);
    size_t at = tensor_begin(c, "l1.w_ih.scales");
    const float nan = NAN;
    memcpy(c.p + at + 4 * 5, &nan, 4);
    json_t *h = header(c);
    bytes d = with_header(c, h, 1, 0);
    json_decref(h);
    free(c.p);
    CHECK(refused(d, "l1.w_ih.scales: element 5 is NaN", "nan scale"));
    /* and a flipped code is caught by the checksum */
    c = copy_of(b);
    c.p[tensor_begin(c, "l0.wv") + 3] ^= 1;
    CHECK(refused(c, "checksum mismatch", "flipped code"));
    free(b.p);
}

/* ---- the panel layout (model_file.c: layout "panel") ---- */

static const char *const tables[] = {"ref", "avx2", "avx512"};

/* 1 if every product of a and b (q8/q4 matrices with the same weights,
 * either layout) is the same bit for bit on table t: matvec, matmat (n = 3),
 * dot_rows (every row, the last partial panel's included) and kern_row_f32. */
static int same_products(const kern_table *t, const qmat *a, const qmat *b, char *why, size_t n) {
    enum { MAXR = 300, MAXC = 64 };
    static float x[3 * MAXC], ya[3 * MAXR], yb[3 * MAXR];
    int32_t ids[MAXR];
    for (int i = 0; i < 3 * a->cols; i++) x[i] = frand();
    for (int i = 0; i < a->rows; i++) ids[i] = a->rows - 1 - i;
    t->matvec(a, x, ya);
    t->matvec(b, x, yb);
    if (memcmp(ya, yb, (size_t)a->rows * sizeof *ya)) return snprintf(why, n, "%s matvec", t->name), 0;
    t->matmat(a, x, 3, ya);
    t->matmat(b, x, 3, yb);
    if (memcmp(ya, yb, 3 * (size_t)a->rows * sizeof *ya)) return snprintf(why, n, "%s matmat", t->name), 0;
    t->dot_rows(a, ids, a->rows, x, ya);
    t->dot_rows(b, ids, a->rows, x, yb);
    if (memcmp(ya, yb, (size_t)a->rows * sizeof *ya)) return snprintf(why, n, "%s dot_rows", t->name), 0;
    for (int32_t r = 0; r < a->rows; r++) {
        kern_row_f32(a, r, ya);
        kern_row_f32(b, r, yb);
        if (memcmp(ya, yb, (size_t)a->cols * sizeof *ya)) return snprintf(why, n, "kern_row_f32 row %d", r), 0;
    }
    return 1;
}

/* The panel layout holds the same model as the row-major one, exactly: a
 * q8 and a q4 file laid out again in panel form (V = 300: the last panel
 * is partial) load with every matrix used in place (no copy), give the
 * same products bit for bit on every table this CPU has and the same step
 * outputs and logits, record the row-major file's checksum as their
 * identity, and laid out back in rows give the original file byte for byte
 * (and quantizing straight into panels gives the panel file). */
TEST(model_file_panel_layout_is_the_same_model) {
    for (int k = 0; k < 2; k++) {
        const qtype dt = k == 0 ? QT_Q8 : QT_Q4;
        bytes b = quant_file(dt, 32, "pr.safetensors", NULL);
        CHECK(b.n > 0);
        char rpath[512], ppath[512], qpath[512], bpath[512], err[256] = "";
        snprintf(rpath, sizeof rpath, "%s/pr.safetensors", dir);
        snprintf(ppath, sizeof ppath, "%s/pp.safetensors", dir);
        snprintf(qpath, sizeof qpath, "%s/pq.safetensors", dir);
        snprintf(bpath, sizeof bpath, "%s/pb.safetensors", dir);
        model *mr = NULL, *mp = NULL;
        CHECKF(load_unsigned(rpath, &mr, err, sizeof err) == LAYA_OK, "%s", err);
        CHECKF(model_save_relayout(ppath, mr, MODEL_LAYOUT_PANEL, "{\"from\":\"test\"}", err, sizeof err) == LAYA_OK,
               "%s", err);
        CHECKF(load_unsigned(ppath, &mp, err, sizeof err) == LAYA_OK, "%s", err);
        CHECK(strstr(mp->meta_json, "\"layout\":\"panel\"") && strstr(mp->meta_json, "\"layout_version\":\"1\""));
        /* mapped as it is: no row-major form, no copy of the panels */
        CHECK(mp->panels == NULL && mp->emb.data == NULL && mp->layer[1].wo.data == NULL);
        CHECK((const uint8_t *)mp->emb.panel > (const uint8_t *)mp->map &&
              (const uint8_t *)mp->emb.panel < (const uint8_t *)mp->map + mp->map_len);
        CHECK((uintptr_t)mp->emb.panel % 64 == 0);
        char ir[65], ip[65];
        CHECK(model_identity(mr, ir) == LAYA_OK && model_identity(mp, ip) == LAYA_OK && !strcmp(ir, ip));
        CHECK(strstr(mr->meta_json, ir) && !strstr(mr->meta_json, "rows_blake2b"));
        char why[64] = "";
        for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
            const kern_table *kt = kern_by_name(tables[t]);
            if (!kt) continue;
            CHECKF(same_products(kt, &mr->emb, &mp->emb, why, sizeof why), "q%d emb: %s", k ? 4 : 8, why);
            CHECKF(same_products(kt, &mr->layer[1].wo, &mp->layer[1].wo, why, sizeof why), "q%d l1.wo: %s",
                   k ? 4 : 8, why);
        }
        /* the whole step and the logits, on this process's table */
        const model_cfg *c = &mr->cfg;
        float *mem = malloc((2 * model_state_floats(c) + model_scratch_floats(c) + 4 * (size_t)c->H +
                             4 * (size_t)c->V) * sizeof(float));
        model_state sa, sb;
        model_state_init(c, &sa, mem);
        model_state_init(c, &sb, mem + model_state_floats(c));
        float *scratch = mem + 2 * model_state_floats(c), *ya = scratch + model_scratch_floats(c);
        float *yb = ya + c->H, *la = yb + c->H, *lb = la + c->V;
        int same = 1;
        for (int i = 0; i < 20 && same; i++) {
            int32_t id = (int32_t)((unsigned)(i + 1) * 2654435761u % (unsigned)c->V);
            model_step(mr, &sa, id, scratch, ya);
            model_step(mp, &sb, id, scratch, yb);
            model_logits(mr, ya, la);
            model_logits(mp, yb, lb);
            same = !memcmp(ya, yb, (size_t)c->H * sizeof *ya) && !memcmp(la, lb, (size_t)c->V * sizeof *la);
        }
        free(mem);
        CHECKF(same, "q%d: the panel file's steps or logits differ from the row-major file's", k ? 4 : 8);
        /* back to rows: the original bytes; quantized straight to panels: the panel bytes */
        CHECKF(model_save_relayout(bpath, mp, MODEL_LAYOUT_ROWS, "{\"from\":\"test\"}", err, sizeof err) == LAYA_OK,
               "%s", err);
        bytes back = read_file(bpath), pan = read_file(ppath);
        CHECKF(back.n == b.n && !memcmp(back.p, b.p, b.n), "q%d: rows -> panel -> rows changed the file", k ? 4 : 8);
        CHECK(model_save_quant_layout(qpath, &qcfg, qparams, dt, 32, MODEL_LAYOUT_PANEL, NULL, 0, NULL, err,
                                      sizeof err) == LAYA_ERR_ARG);   /* no tokenizer */
        size_t tn;
        uint8_t *tb = tok_blob(qcfg.V, &tn);
        CHECKF(model_save_quant_layout(qpath, &qcfg, qparams, dt, 32, MODEL_LAYOUT_PANEL, tb, tn, "{\"from\":\"test\"}",
                                       err, sizeof err) == LAYA_OK, "%s", err);
        free(tb);
        bytes q = read_file(qpath);
        CHECK(q.n == pan.n && !memcmp(q.p, pan.p, q.n));
        free(q.p);
        free(back.p);
        free(pan.p);
        model_free(mp);
        model_free(mr);
        free(b.p);
    }
    /* f32/f16 models have no panel layout */
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/f.safetensors", dir);
    size_t tn;
    uint8_t *tb = tok_blob(qcfg.V, &tn);
    CHECK(model_save_quant_layout(path, &qcfg, qparams, QT_F32, 0, MODEL_LAYOUT_PANEL, tb, tn, NULL, err,
                                  sizeof err) == LAYA_ERR_ARG && strstr(err, "q8/q4"));
    free(tb);
}

static void meta_layout_tiles(json_t *m) { json_object_set_new(m, "layout", json_string("tiles")); }
static void meta_layout_v2(json_t *m) { json_object_set_new(m, "layout_version", json_string("2")); }
static void meta_layout_nover(json_t *m) { json_object_del(m, "layout_version"); }
static void meta_layout_del(json_t *m) { json_object_del(m, "layout"); }
static void meta_layout_panel(json_t *m) {
    json_object_set_new(m, "layout", json_string("panel"));
    json_object_set_new(m, "layout_version", json_string("1"));
    json_object_set_new(m, "rows_blake2b", json_string("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
}
static void meta_rows_id_short(json_t *m) { json_object_set_new(m, "rows_blake2b", json_string("0123")); }
static void meta_rows_id_upper(json_t *m) {
    json_object_set_new(m, "rows_blake2b", json_string("0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef"));
}
static void meta_rows_id_del(json_t *m) { json_object_del(m, "rows_blake2b"); }
static void panel_np_less(json_t *e) {   /* one panel fewer */
    json_t *s = json_object_get(e, "shape");
    json_array_set_new(s, 0, json_integer(json_integer_value(json_array_get(s, 0)) - 1));
}
static void panel_3d(json_t *e) {   /* (NP, C/4, 8, 4) -> (NP, C/4, 32): same bytes */
    json_array_remove(json_object_get(e, "shape"), 3);
    json_array_set_new(json_object_get(e, "shape"), 2, json_integer(32));
}
static void panel_swap_offsets(json_t *h) {   /* l0.wk's scales and biases trade places */
    json_t *s = json_object_get(json_object_get(h, "l0.wk.panel_scales"), "data_offsets");
    json_t *b = json_object_get(json_object_get(h, "l0.wk.panel_biases"), "data_offsets");
    json_t *t = json_deep_copy(s);
    json_object_set(json_object_get(h, "l0.wk.panel_scales"), "data_offsets", b);
    json_object_set_new(json_object_get(h, "l0.wk.panel_biases"), "data_offsets", t);
}
static void panel_rows_too(json_t *h) {   /* a row-major tensor beside the panels */
    json_object_set(h, "emb.scales", json_object_get(h, "emb.panel_scales"));
    json_object_del(h, "emb.panel_scales");
}

/* A panel-layout file is hostile input like any other: wrong metadata,
 * shapes, dtypes, order, alignment, values or length are each refused with
 * a message naming the problem (refused(): never a model, never a crash). */
TEST(model_file_refuses_bad_panel) {
    bytes r = quant_file(QT_Q8, 32, "bpr.safetensors", NULL);
    CHECK(r.n > 0);
    char rpath[512], ppath[512], err[256] = "";
    snprintf(rpath, sizeof rpath, "%s/bpr.safetensors", dir);
    snprintf(ppath, sizeof ppath, "%s/bpp.safetensors", dir);
    model *mr = NULL;
    CHECKF(load_unsigned(rpath, &mr, err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(model_save_relayout(ppath, mr, MODEL_LAYOUT_PANEL, NULL, err, sizeof err) == LAYA_OK, "%s", err);
    model_free(mr);
    bytes b = read_file(ppath);
    CHECK(b.n > 0);
    /* truncated anywhere: inside the last tensor, inside a panel, after the header */
    size_t cuts[] = {b.n - 1, tensor_begin(b, "l1.wq.panel") + 100, 8 + (size_t)hdr_len(b) + 10};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        bytes c = copy_of(b);
        c.n = cuts[i];
        CHECK(refused(c, NULL, "truncated"));
    }
    CHECK(refused_entry(b, "__metadata__", meta_layout_tiles, 1, "layout \"tiles\""));
    CHECK(refused_entry(b, "__metadata__", meta_layout_v2, 1, "layout_version"));
    CHECK(refused_entry(b, "__metadata__", meta_layout_nover, 1, "layout_version"));
    CHECK(refused_entry(b, "__metadata__", meta_rows_id_short, 1, "rows_blake2b"));
    CHECK(refused_entry(b, "__metadata__", meta_rows_id_upper, 1, "rows_blake2b"));
    CHECK(refused_entry(b, "__metadata__", meta_rows_id_del, 1, "rows_blake2b"));
    CHECK(refused_entry(b, "__metadata__", meta_layout_del, 1, "missing tensor emb"));
    CHECK(refused_entry(b, "emb.panel", panel_np_less, 1, NULL));
    CHECK(refused_entry(b, "l0.w_hh.panel", panel_3d, 1, "l0.w_hh.panel: shape"));
    CHECK(refused_entry(b, "l1.wv.panel_biases", scales_f16, 1, "l1.wv.panel_biases"));
    CHECK(refused_root(b, panel_swap_offsets, "must follow each other"));
    CHECK(refused_root(b, panel_rows_too, "emb.panel_scales"));
    /* the layout of a row-major file's metadata on its tensors, and on f32 */
    CHECK(refused_entry(r, "__metadata__", meta_layout_panel, 1, "missing tensor emb.panel"));
    bytes f = quant_file(QT_F32, 0, "bpf.safetensors", NULL);
    CHECK(refused_entry(f, "__metadata__", meta_layout_panel, 1, "q8/q4 models only"));
    free(f.p);
    /* panels moved off their 64-byte alignment (4 spaces more header) */
    json_t *h = header(b);
    bytes c = with_header(b, h, 1, 4);
    json_decref(h);
    CHECK(refused(c, "misaligned", "shifted panels"));
    /* a NaN bias of a padding lane behind a valid checksum; a flipped code */
    c = copy_of(b);
    const float nan = NAN;
    memcpy(c.p + tensor_begin(c, "emb.panel_biases") + 4 * (38 * 2 * 8 - 1), &nan, 4);
    h = header(c);
    bytes d = with_header(c, h, 1, 0);
    json_decref(h);
    free(c.p);
    CHECK(refused(d, "emb.panel_biases: element 607 is NaN", "nan bias"));
    c = copy_of(b);
    c.p[tensor_begin(c, "l0.wv.panel") + 3] ^= 1;
    CHECK(refused(c, "checksum mismatch", "flipped code"));
    /* and the file itself loads */
    model *m = NULL;
    CHECKF(load_unsigned(ppath, &m, err, sizeof err) == LAYA_OK, "%s", err);
    model_free(m);
    free(b.p);
    free(r.p);
}

/* ---- signatures (model_sign.h) ---- */

typedef struct {
    uint8_t pk[MODEL_KEY_BYTES], sk[MODEL_SECRET_BYTES];
} keypair;

/* Loads path trusting only key kp (the project key is left out, so these
 * tests mean the same whatever the project key is). */
static laya_status load_signed(const char *path, const keypair *kp, int allow_unsigned, char *err, size_t n) {
    model_trust t = {.keys = (const uint8_t (*)[MODEL_KEY_BYTES])kp->pk, .n_keys = 1, .no_project_key = 1,
                     .allow_unsigned = allow_unsigned};
    model *m = NULL;
    laya_status st = model_load_opts(path, &t, &m, err, n);
    model_free(m);
    return st;
}

/* A byte of every region of a signed file flipped (the header's length,
 * JSON, padding, every tensor, the last byte; the .sig's key and signature
 * digits, a truncated .sig): each is refused as a bad signature. */
TEST(model_sign_refuses_any_changed_byte) {
    CHECK(sodium_init() >= 0);
    keypair kp;
    crypto_sign_keypair(kp.pk, kp.sk);
    bytes b = valid_file(QT_F16, "s.safetensors");
    char path[512], sig[600], err[600] = "";
    snprintf(path, sizeof path, "%s/s.safetensors", dir);
    snprintf(sig, sizeof sig, "%s.sig", path);
    CHECKF(model_sign_file(path, kp.sk, NULL, err, sizeof err) == LAYA_OK, "%s", err);
    CHECKF(load_signed(path, &kp, 0, err, sizeof err) == LAYA_OK, "the signed file: %s", err);
    bytes s = read_file(sig);
    CHECK(s.n == strlen("laya-model-signature-v1 ") + 64 + 1 + 128 + 1);

    /* the offsets to flip: header bytes, then the first and last byte of every tensor */
    size_t at[64];
    int n_at = 0;
    size_t hl = 8 + (size_t)hdr_len(b);
    at[n_at++] = 0;                                     /* the header length */
    at[n_at++] = (size_t)((const uint8_t *)strstr((const char *)b.p + 8, "unit test") - b.p);  /* metadata */
    at[n_at++] = hl - 1;                                /* header padding */
    json_t *h = header(b);
    const char *name;
    json_t *v;
    int n_tensors = 0;
    json_object_foreach(h, name, v) {
        if (!strcmp(name, "__metadata__")) continue;
        json_t *off = json_object_get(v, "data_offsets");
        size_t a0 = (size_t)json_integer_value(json_array_get(off, 0)), a1 = (size_t)json_integer_value(json_array_get(off, 1));
        if (a1 > a0 && n_at + 2 <= 64) {
            at[n_at++] = hl + a0;
            at[n_at++] = hl + a1 - 1;
            n_tensors++;
        }
    }
    json_decref(h);
    CHECK(n_tensors == 2 + 8 * tiny.L + 1);   /* emb, norm, 8 per layer, the tokenizer */
    for (int i = 0; i < n_at; i++) {
        bytes c = copy_of(b);
        c.p[at[i]] ^= 0x01;
        write_file(path, c.p, c.n);
        free(c.p);
        laya_status st = load_signed(path, &kp, 0, err, sizeof err);
        CHECKF(st == LAYA_ERR_SIGNATURE && strstr(err, "bad signature"), "byte %zu flipped: status %d, \"%s\"",
               at[i], st, err);
        /* allowing unsigned models does not let a tampered signed one through */
        CHECK(load_signed(path, &kp, 1, err, sizeof err) == LAYA_ERR_SIGNATURE);
    }
    write_file(path, b.p, b.n);
    /* the .sig: a digit of the key, of the signature, a truncated line */
    size_t key_at = strlen("laya-model-signature-v1 ") + 5, sig_at = key_at + 64 + 20;
    size_t sat[2] = {key_at, sig_at};
    for (int i = 0; i < 2; i++) {
        bytes c = copy_of(s);
        c.p[sat[i]] = c.p[sat[i]] == '0' ? '1' : '0';
        write_file(sig, c.p, c.n);
        free(c.p);
        laya_status st = load_signed(path, &kp, 0, err, sizeof err);
        CHECKF(st == LAYA_ERR_SIGNATURE && strstr(err, "bad signature"), ".sig digit %zu changed: %d \"%s\"",
               sat[i], st, err);
    }
    write_file(sig, s.p, s.n - 10);
    CHECK(load_signed(path, &kp, 1, err, sizeof err) == LAYA_ERR_SIGNATURE && strstr(err, "not a Laya signature"));
    write_file(sig, s.p, s.n);
    CHECKF(load_signed(path, &kp, 0, err, sizeof err) == LAYA_OK, "restored: %s", err);
    free(s.p);
    free(b.p);
}

/* Writes path.sig by hand: magic, kp's key and Ed25519 over p[0..n). */
static void write_sig(const char *path, const char *magic, const keypair *kp, const uint8_t *p, size_t n) {
    uint8_t sig[MODEL_SIG_BYTES];
    crypto_sign_detached(sig, NULL, p, n, kp->sk);
    char kh[65], sh[129], line[300], spath[600];
    sodium_bin2hex(kh, sizeof kh, kp->pk, MODEL_KEY_BYTES);
    sodium_bin2hex(sh, sizeof sh, sig, sizeof sig);
    snprintf(line, sizeof line, "%s %s %s\n", magic, kh, sh);
    snprintf(spath, sizeof spath, "%s.sig", path);
    write_file(spath, (const uint8_t *)line, strlen(line));
}

/* laya sign writes v2 (the header, which names the data's BLAKE2b) for a
 * model, v1 (every byte) for a file without that; a v1 signature made
 * before v2 still loads and still guards every byte; a signature of one
 * kind is not taken for the other; a v2 signature does not cover a data
 * section whose BLAKE2b the header does not name. */
TEST(model_sign_v2_header_and_v1_whole_file) {
    CHECK(sodium_init() >= 0);
    keypair kp;
    crypto_sign_keypair(kp.pk, kp.sk);
    bytes b = valid_file(QT_F32, "v.safetensors");
    char path[512], sig[600], err[600] = "";
    snprintf(path, sizeof path, "%s/v.safetensors", dir);
    snprintf(sig, sizeof sig, "%s.sig", path);
    const size_t hb = 8 + (size_t)hdr_len(b);
    CHECKF(model_sign_file(path, kp.sk, NULL, err, sizeof err) == LAYA_OK, "%s", err);
    bytes s = read_file(sig);
    CHECK(s.n > 24 && !memcmp(s.p, "laya-model-signature-v2 ", 24));
    free(s.p);
    /* the signature is Ed25519 over the header bytes alone */
    write_sig(path, "laya-model-signature-v2", &kp, b.p, hb);
    bytes s2 = read_file(sig);
    CHECK(model_sign_file(path, kp.sk, NULL, err, sizeof err) == LAYA_OK);
    s = read_file(sig);
    CHECK(s.n == s2.n && !memcmp(s.p, s2.p, s.n));
    free(s.p);
    free(s2.p);
    CHECKF(load_signed(path, &kp, 0, err, sizeof err) == LAYA_OK, "v2: %s", err);
    /* v1 over every byte (the .sig files of before): loads, and a flipped data byte is refused */
    write_sig(path, "laya-model-signature-v1", &kp, b.p, b.n);
    CHECKF(load_signed(path, &kp, 0, err, sizeof err) == LAYA_OK, "v1: %s", err);
    bytes c = copy_of(b);
    c.p[b.n - 100] ^= 4;
    write_file(path, c.p, c.n);
    CHECK(load_signed(path, &kp, 1, err, sizeof err) == LAYA_ERR_SIGNATURE && strstr(err, "bad signature"));
    free(c.p);
    write_file(path, b.p, b.n);
    /* one kind's signature under the other's name */
    write_sig(path, "laya-model-signature-v1", &kp, b.p, hb);
    CHECK(load_signed(path, &kp, 1, err, sizeof err) == LAYA_ERR_SIGNATURE && strstr(err, "bad signature"));
    write_sig(path, "laya-model-signature-v2", &kp, b.p, b.n);
    CHECK(load_signed(path, &kp, 1, err, sizeof err) == LAYA_ERR_SIGNATURE && strstr(err, "bad signature"));
    /* a header without data_blake2b or the tree checksum: signed v2 by hand,
     * its data is not covered */
    json_t *h = header(b);
    json_object_del(json_object_get(h, "__metadata__"), "data_blake2b");
    json_object_del(json_object_get(h, "__metadata__"), ST_TREE_KEY);
    c = with_header(b, h, 0, 0);
    json_decref(h);
    write_file(path, c.p, c.n);
    write_sig(path, "laya-model-signature-v2", &kp, c.p, 8 + (size_t)hdr_len(c));
    CHECK(load_signed(path, &kp, 1, err, sizeof err) == LAYA_ERR_SIGNATURE && strstr(err, "bad signature"));
    /* and laya sign signs such a file (or any other) whole: v1 */
    CHECK(model_sign_file(path, kp.sk, NULL, err, sizeof err) == LAYA_OK);
    s = read_file(sig);
    CHECK(s.n > 24 && !memcmp(s.p, "laya-model-signature-v1 ", 24));
    free(s.p);
    model_sig_verdict v;
    model_trust t = {.keys = (const uint8_t (*)[MODEL_KEY_BYTES])kp.pk, .n_keys = 1, .no_project_key = 1};
    CHECK(model_sig_check_file(path, &t, &v, NULL, err, sizeof err) == LAYA_OK && v == MODEL_SIG_TRUSTED);
    free(c.p);
    free(b.p);
}

TEST(model_sign_says_unsigned_or_another_key) {
    CHECK(sodium_init() >= 0);
    keypair kp, other;
    crypto_sign_keypair(kp.pk, kp.sk);
    crypto_sign_keypair(other.pk, other.sk);
    bytes b = valid_file(QT_F32, "u.safetensors");
    free(b.p);
    char path[512], err[600] = "";
    snprintf(path, sizeof path, "%s/u.safetensors", dir);
    /* unsigned: refused, with the way out in the message; loads when allowed */
    CHECK(load_signed(path, &kp, 0, err, sizeof err) == LAYA_ERR_SIGNATURE);
    CHECKF(strstr(err, "is not signed") && strstr(err, "LAYA_ALLOW_UNSIGNED=1"), "%s", err);
    CHECK(load_signed(path, &kp, 1, err, sizeof err) == LAYA_OK);
    /* signed by a key not trusted: said so, naming the key; loads when allowed */
    CHECK(model_sign_file(path, other.sk, NULL, err, sizeof err) == LAYA_OK);
    char id[17];
    model_key_id(other.pk, id);
    CHECK(load_signed(path, &kp, 0, err, sizeof err) == LAYA_ERR_SIGNATURE);
    CHECKF(strstr(err, "signed by another key") && strstr(err, id), "%s", err);
    CHECK(load_signed(path, &kp, 1, err, sizeof err) == LAYA_OK);
    CHECK(load_signed(path, &other, 0, err, sizeof err) == LAYA_OK);
    model_sig_verdict v;
    uint8_t signer[MODEL_KEY_BYTES];
    model_trust t = {.no_project_key = 1};
    CHECK(model_sig_check_file(path, &t, &v, signer, err, sizeof err) == LAYA_ERR_SIGNATURE);
    CHECK(v == MODEL_SIG_UNTRUSTED && !memcmp(signer, other.pk, MODEL_KEY_BYTES));
    /* a .sig that is a FIFO does not hang the loader */
    char sig[600];
    snprintf(sig, sizeof sig, "%s.sig", path);
    CHECK(unlink(sig) == 0 && mkfifo(sig, 0600) == 0);
    CHECK(load_signed(path, &kp, 1, err, sizeof err) == LAYA_ERR_IO && strstr(err, "FIFO"));
    unlink(sig);
}

TEST(model_sign_key_files) {
    CHECK(sodium_init() >= 0);
    char prefix[300], kpath[320], ppath[320], err[600] = "";
    snprintf(prefix, sizeof prefix, "%s/k", test_tmpdir());
    snprintf(kpath, sizeof kpath, "%s.key", prefix);
    snprintf(ppath, sizeof ppath, "%s.pub", prefix);
    uint8_t pk[MODEL_KEY_BYTES], pk2[MODEL_KEY_BYTES], sk[MODEL_SECRET_BYTES];
    CHECKF(model_keygen(prefix, pk, err, sizeof err) == LAYA_OK, "%s", err);
    struct stat sb;
    CHECK(stat(kpath, &sb) == 0 && (sb.st_mode & 0777) == 0600);
    bytes before = read_file(kpath);
    CHECK(model_keygen(prefix, NULL, err, sizeof err) != LAYA_OK && strstr(err, "not overwriting"));
    bytes after = read_file(kpath);
    CHECK(before.n == after.n && !memcmp(before.p, after.p, before.n));   /* the key survived */
    free(before.p);
    free(after.p);
    CHECK(model_key_read(ppath, pk2, err, sizeof err) == LAYA_OK && !memcmp(pk, pk2, sizeof pk));
    CHECK(model_key_read(kpath, pk2, err, sizeof err) != LAYA_OK && strstr(err, "secret key"));
    CHECK(model_secret_read(ppath, sk, err, sizeof err) == LAYA_ERR_FORMAT);
    CHECKF(model_secret_read(kpath, sk, err, sizeof err) == LAYA_OK, "%s", err);
    crypto_sign_ed25519_sk_to_pk(pk2, sk);
    CHECK(!memcmp(pk, pk2, sizeof pk));
    CHECK(chmod(kpath, 0640) == 0);
    CHECK(model_secret_read(kpath, sk, err, sizeof err) == LAYA_ERR_ARG && strstr(err, "chmod 600"));
    for (size_t i = 0; i < sizeof sk; i++) CHECK(sk[i] == 0);   /* a refused key is not left in memory */
    CHECK(chmod(kpath, 0600) == 0);
    CHECK(model_secret_read(kpath, sk, err, sizeof err) == LAYA_OK);
    /* a model signed with it loads once LAYA_TRUSTED_KEYS names the public key */
    bytes b = valid_file(QT_F32, "e.safetensors");
    free(b.p);
    char path[512];
    snprintf(path, sizeof path, "%s/e.safetensors", dir);
    CHECK(model_sign_file(path, sk, NULL, err, sizeof err) == LAYA_OK);
    sodium_memzero(sk, sizeof sk);
    unsetenv("LAYA_ALLOW_UNSIGNED");
    unsetenv("LAYA_TRUSTED_KEYS");
    model *m = NULL;
    CHECKF(model_load(path, &m, err, sizeof err) == LAYA_ERR_SIGNATURE && strstr(err, "another key"), "%s", err);
    char list[700];
    snprintf(list, sizeof list, "/nonexistent.pub::%s", ppath);
    setenv("LAYA_TRUSTED_KEYS", list, 1);
    CHECK(model_load(path, &m, err, sizeof err) == LAYA_ERR_IO && strstr(err, "LAYA_TRUSTED_KEYS"));
    setenv("LAYA_TRUSTED_KEYS", list + strlen("/nonexistent.pub:"), 1);
    CHECKF(model_load(path, &m, err, sizeof err) == LAYA_OK, "%s", err);
    model_free(m);
    unsetenv("LAYA_TRUSTED_KEYS");
    setenv("LAYA_ALLOW_UNSIGNED", "yes", 1);   /* only "1" allows */
    char sig[600];
    snprintf(sig, sizeof sig, "%s.sig", path);
    unlink(sig);
    CHECK(model_load(path, &m, err, sizeof err) == LAYA_ERR_SIGNATURE && strstr(err, "not signed"));
    setenv("LAYA_ALLOW_UNSIGNED", "1", 1);
    CHECK(model_load(path, &m, err, sizeof err) == LAYA_OK);
    model_free(m);
    unsetenv("LAYA_ALLOW_UNSIGNED");
}

/* The shipped model's signature is the project key's (a stale .sig after a
 * retraining fails here: re-sign it, models/MODEL.md). */
TEST(model_sign_shipped_model_is_signed_by_the_project_key) {
    const char *path = "models/default.safetensors";
    if (access(path, R_OK) != 0) SKIP("no models/default.safetensors here");
    model_trust t = {0};
    model_sig_verdict v;
    char err[600] = "";
    CHECKF(model_sig_check_file(path, &t, &v, NULL, err, sizeof err) == LAYA_OK && v == MODEL_SIG_TRUSTED, "%s",
           err);
}

/* ---- the data section's tree checksum (st.h, ST_TREE_KEY) ---- */

/* The tree checksum computed the plain way, one leaf after another, from
 * its definition in st.h: the reference for the threaded st_tree_blake2b_hex
 * and for st_write's streamed one. */
static void tree_reference(const uint8_t *p, size_t n, char hex[65]) {
    unsigned char salt[16], pers[16], leaf[32], root[32];
    crypto_generichash_blake2b_state rs;
    memset(salt, 0, sizeof salt);
    for (int i = 0; i < 8; i++) salt[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memset(pers, 0, sizeof pers);
    memcpy(pers, "laya-tree-root", 14);
    crypto_generichash_blake2b_init_salt_personal(&rs, NULL, 0, 32, salt, pers);
    memset(pers, 0, sizeof pers);
    memcpy(pers, "laya-tree-leaf", 14);
    for (uint64_t i = 0; i * ST_TREE_CHUNK < n; i++) {
        size_t b = (size_t)i * ST_TREE_CHUNK, e = n - b < ST_TREE_CHUNK ? n : b + ST_TREE_CHUNK;
        memset(salt, 0, sizeof salt);
        for (int k = 0; k < 8; k++) salt[k] = (unsigned char)(i >> (8 * k));
        crypto_generichash_blake2b_salt_personal(leaf, 32, p + b, e - b, NULL, 0, salt, pers);
        crypto_generichash_blake2b_update(&rs, leaf, 32);
    }
    crypto_generichash_blake2b_final(&rs, root, 32);
    sodium_bin2hex(hex, 65, root, 32);
}

TEST(st_tree_checksum_matches_its_definition) {
    CHECK(sodium_init() >= 0);
    const size_t C = ST_TREE_CHUNK, big = 3 * (size_t)C + 12345;
    uint8_t *p = malloc(big);
    for (size_t i = 0; i < big; i++) p[i] = (uint8_t)(frand() * 127.0f);
    const size_t sizes[] = {0, 1, C - 1, C, C + 1, 2 * (size_t)C, big};
    char got[65], want[65], first[65];
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        st_tree_blake2b_hex(p, sizes[k], got);
        tree_reference(p, sizes[k], want);
        CHECKF(!strcmp(got, want), "%zu bytes: %s, the reference %s", sizes[k], got, want);
    }
    /* one changed byte in any leaf, two leaves swapped, one byte less: another checksum */
    st_tree_blake2b_hex(p, big, first);
    const size_t flips[] = {0, C - 1, C, 2 * (size_t)C + 7, big - 1};
    for (size_t k = 0; k < sizeof flips / sizeof *flips; k++) {
        p[flips[k]] ^= 1;
        st_tree_blake2b_hex(p, big, got);
        CHECKF(strcmp(got, first), "byte %zu flipped, same checksum", flips[k]);
        p[flips[k]] ^= 1;
    }
    uint8_t *q = malloc(big);
    memcpy(q, p + C, C);
    memcpy(q + C, p, C);
    memcpy(q + 2 * (size_t)C, p + 2 * (size_t)C, big - 2 * (size_t)C);
    st_tree_blake2b_hex(q, big, got);
    CHECK(strcmp(got, first));
    st_tree_blake2b_hex(p, big - 1, got);
    CHECK(strcmp(got, first));
    free(q);
    free(p);
}

/* st_write streams the data section in 64 KiB pieces; the tree checksum it
 * records is the one the data section, read back, hashes to. */
static void fill_bytes(const void *src, size_t first, size_t count, void *dst) {
    memcpy(dst, (const uint8_t *)src + first, count);
}

TEST(st_write_records_the_tree_checksum_of_its_data) {
    CHECK(sodium_init() >= 0);
    const size_t n1 = 2 * (size_t)ST_TREE_CHUNK + 777, n2 = 40001;
    uint8_t *a = malloc(n1), *b = malloc(n2);
    for (size_t i = 0; i < n1; i++) a[i] = (uint8_t)(frand() * 127.0f);
    for (size_t i = 0; i < n2; i++) b[i] = (uint8_t)(frand() * 127.0f);
    st_out o[2] = {{"a", ST_U8, 1, {(int64_t)n1}, a, fill_bytes}, {"b", ST_U8, 1, {(int64_t)n2}, b, NULL}};
    char path[512], err[300] = "";
    snprintf(path, sizeof path, "%s/tree.safetensors", dir);
    CHECKF(st_write(path, o, 2, NULL, "data_blake2b", err, sizeof err) == LAYA_OK, "%s", err);
    bytes f = read_file(path);
    st_file sf;
    CHECKF(st_parse(f.p, f.n, &sf, err, sizeof err) == LAYA_OK, "%s", err);
    char tree[65], whole[65];
    tree_reference(sf.data, (size_t)sf.data_len, tree);
    st_blake2b_hex(sf.data, (size_t)sf.data_len, whole);
    CHECK(sf.data_len >= n1 + n2);
    CHECK(st_meta(&sf, ST_TREE_KEY) && !strcmp(st_meta(&sf, ST_TREE_KEY), tree));
    CHECK(st_meta(&sf, "data_blake2b") && !strcmp(st_meta(&sf, "data_blake2b"), whole));
    const char *key;
    char got[65];
    CHECK(st_data_verify(sf.meta, sf.data, (size_t)sf.data_len, &key, got) && !strcmp(key, ST_TREE_KEY));
    st_free(&sf);
    free(f.p);
    free(a);
    free(b);
}
