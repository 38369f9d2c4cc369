/* test_intent.c - the intent head (C10): its gradient against finite
 * differences, the trainer on a toy problem, the companion file's loader
 * against bad files, the session API's threshold, and the protocol's
 * "intent" field. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "intent/intent.h"
#include "server/proto.h"
#include "test.h"
#include "test_engine_util.h"
#include "util/st.h"

/* Finite differences in float parameters: the loss sums in double, the
 * head computes in float, so steps of 1e-2 give about 1e-3 relative. */
#define GRAD_ATOL 2e-4
#define GRAD_RTOL 2e-2

/* A toy problem: N points of H floats, class c centred at a one-hot
 * direction of the first C features, plus noise. */
static void toy(int N, int H, float *X, int *label, uint32_t seed) {
    for (int n = 0; n < N; n++) {
        int c = n % INTENT_C;
        label[n] = c;
        for (int i = 0; i < H; i++) X[(size_t)n * H + i] = ((float)(te_rand(&seed) % 2001) / 1000.f - 1.f) * 0.5f;
        X[(size_t)n * H + c] += 2.f;
    }
}

static void random_head(intent_head *h, uint32_t seed) {
    for (size_t k = 0; k < intent_n_params(h->H); k++) h->mem[k] = ((float)(te_rand(&seed) % 2001) / 1000.f - 1.f) * 0.3f;
}

TEST(intent_gradient_matches_finite_differences) {
    enum { H = 7, N = 5 };
    intent_head *h;
    CHECK(intent_new(H, &h) == LAYA_OK);
    random_head(h, 3);
    float X[N * H];
    int label[N];
    toy(N, H, X, label, 5);
    float wc[INTENT_C];
    for (int c = 0; c < INTENT_C; c++) wc[c] = 0.5f + 0.1f * (float)c;
    size_t P = intent_n_params(H);
    double *g = calloc(P, sizeof *g);
    CHECK(g);
    intent_loss(h, X, label, N, wc, g);
    int checked = 0;
    for (size_t k = 0; k < P; k += 7) {
        float keep = h->mem[k];
        const float eps = 1e-2f;
        h->mem[k] = keep + eps;
        double lp = intent_loss(h, X, label, N, wc, NULL);
        h->mem[k] = keep - eps;
        double lm = intent_loss(h, X, label, N, wc, NULL);
        h->mem[k] = keep;
        double fd = (lp - lm) / (2.0 * (double)eps);
        /* a relu at its kink makes the difference meaningless: skip */
        if (fabs(fd - g[k]) > GRAD_ATOL + GRAD_RTOL * fabs(fd)) {
            float hid[INTENT_F], p[INTENT_C];
            int kink = 0;
            for (int n = 0; n < N; n++) {
                intent_forward(h, X + n * H, hid, p);
                for (int f = 0; f < INTENT_F; f++) kink |= hid[f] > 0 && hid[f] < 0.05f;
            }
            CHECKF(kink, "param %zu: analytic %.6g, finite difference %.6g", k, g[k], fd);
            continue;
        }
        checked++;
    }
    CHECK(checked > (int)(P / 7) / 2);
    free(g);
    intent_free(h);
}

/* The fast forward pass (the kernel table's matvec) against its plain
 * reference, over awkward sizes; and the check fails a perturbed head. */
#define FWD_ATOL 1e-5
#define FWD_RTOL 1e-4
TEST(intent_forward_matches_its_reference) {
    static const int sizes[] = {1, 2, 3, 7, 15, 16, 17, 31, 33, 64, 384, 1023};
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        int H = sizes[z];
        intent_head *h;
        CHECK(intent_new(H, &h) == LAYA_OK);
        random_head(h, (uint32_t)(40 + H));
        float *y = malloc((size_t)H * sizeof *y);
        CHECK(y);
        uint32_t s = (uint32_t)H;
        for (int i = 0; i < H; i++) y[i] = (float)(te_rand(&s) % 2001) / 1000.f - 1.f;
        float hid[INTENT_F], hr[INTENT_F], p[INTENT_C], pr[INTENT_C];
        intent_forward(h, y, hid, p);
        intent_forward_ref(h, y, hr, pr);
        for (int f = 0; f < INTENT_F; f++) CHECK_NEAR(hid[f], hr[f], FWD_ATOL * H, FWD_RTOL);
        for (int c = 0; c < INTENT_C; c++) CHECK_NEAR(p[c], pr[c], FWD_ATOL * H, FWD_RTOL);
        /* the same check fails a head whose first unit differs */
        h->b1[0] += 0.5f;
        intent_forward(h, y, hid, p);
        int differs = 0;
        for (int f = 0; f < INTENT_F; f++) differs |= !(fabs(hid[f] - hr[f]) <= FWD_ATOL * H + FWD_RTOL * fabs(hr[f]));
        CHECK(differs || hr[0] == 0);   /* a unit cut by the relu hides the change */
        free(y);
        intent_free(h);
    }
}

/* The checker catches a broken gradient: scaling one entry fails it. */
TEST(intent_gradient_check_catches_a_wrong_gradient) {
    enum { H = 5, N = 4 };
    intent_head *h;
    CHECK(intent_new(H, &h) == LAYA_OK);
    random_head(h, 9);
    float X[N * H];
    int label[N];
    toy(N, H, X, label, 11);
    float wc[INTENT_C];
    for (int c = 0; c < INTENT_C; c++) wc[c] = 1;
    size_t P = intent_n_params(H);
    double *g = calloc(P, sizeof *g);
    CHECK(g);
    intent_loss(h, X, label, N, wc, g);
    /* the last output bias: no relu kink between it and the loss */
    size_t k = P - 1;
    double wrong = g[k] * 1.5 + 0.01;
    float keep = h->mem[k];
    h->mem[k] = keep + 1e-2f;
    double lp = intent_loss(h, X, label, N, wc, NULL);
    h->mem[k] = keep - 1e-2f;
    double lm = intent_loss(h, X, label, N, wc, NULL);
    h->mem[k] = keep;
    double fd = (lp - lm) / 2e-2;
    CHECK(fabs(fd - g[k]) <= GRAD_ATOL + GRAD_RTOL * fabs(fd));
    CHECK(fabs(fd - wrong) > GRAD_ATOL + GRAD_RTOL * fabs(fd));
    free(g);
    intent_free(h);
}

TEST(intent_trainer_lowers_the_loss_and_separates_a_toy_problem) {
    enum { H = 16, N = 400 };
    float *X = malloc(sizeof(float) * N * H);
    int label[N];
    CHECK(X);
    toy(N, H, X, label, 7);
    intent_head *h;
    CHECK(intent_new(H, &h) == LAYA_OK);
    intent_train_cfg cfg = intent_train_defaults();
    cfg.epochs = 1;
    float wc[INTENT_C];
    intent_class_weights(label, N, wc);
    double l1, l20;
    CHECK(intent_train(h, X, label, N, &cfg, NULL, NULL, &l1, NULL, 0) == LAYA_OK);
    cfg.epochs = 60;
    CHECK(intent_train(h, X, label, N, &cfg, NULL, NULL, &l20, NULL, 0) == LAYA_OK);
    CHECKF(l20 < 0.1 * l1 && l20 < 0.05, "loss after 1 epoch %.4f, after 60 %.4f", l1, l20);
    /* the folded standardisation gives the head's own forward pass on
     * raw inputs: every toy point is classified right */
    int ok = 0;
    float hid[INTENT_F], p[INTENT_C];
    for (int n = 0; n < N; n++) {
        intent_forward(h, X + (size_t)n * H, hid, p);
        int b = 0;
        for (int c = 1; c < INTENT_C; c++)
            if (p[c] > p[b]) b = c;
        ok += b == label[n];
    }
    CHECKF(ok == N, "%d of %d right", ok, N);
    /* a wrong label is refused */
    label[3] = INTENT_C;
    CHECK(intent_train(h, X, label, N, &cfg, NULL, NULL, NULL, NULL, 0) == LAYA_ERR_ARG);
    free(X);
    intent_free(h);
}

static const char *const SUM = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc(*n + 1);
    if (b && fread(b, 1, *n, f) != *n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    return b;
}

static void spit(const char *path, const char *b, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(b, 1, n, f);
        fclose(f);
    }
}

TEST(intent_loader_round_trips_and_refuses_bad_files) {
    enum { H = 12 };
    intent_head *h, *g;
    CHECK(intent_new(H, &h) == LAYA_OK);
    random_head(h, 21);
    h->threshold = 0.7f;
    char path[512], bad[512], err[512];
    snprintf(path, sizeof path, "%s/h.intent.safetensors", test_tmpdir());
    snprintf(bad, sizeof bad, "%s/bad.intent.safetensors", test_tmpdir());
    CHECK(intent_save(h, path, SUM, err, sizeof err) == LAYA_OK);
    model_trust t = {.allow_unsigned = 1};
    CHECKF(intent_load(path, &t, H, SUM, &g, err, sizeof err) == LAYA_OK, "%s", err);
    CHECK(g->H == H && fabsf(g->threshold - 0.7f) < 1e-6f);
    CHECK(!memcmp(g->mem, h->mem, intent_n_params(H) * sizeof(float)));
    intent_free(g);
    /* unsigned without allow_unsigned: refused before parsing */
    model_trust strict = {0};
    CHECK(intent_load(path, &strict, H, SUM, &g, err, sizeof err) == LAYA_ERR_SIGNATURE && !g);
    /* another model's size or checksum */
    CHECK(intent_load(path, &t, H + 1, SUM, &g, err, sizeof err) == LAYA_ERR_FORMAT && strstr(err, "floats"));
    CHECK(intent_load(path, &t, H, "f123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", &g, err,
                      sizeof err) == LAYA_ERR_FORMAT && strstr(err, "another base model"));
    size_t n;
    char *b = slurp(path, &n);
    CHECK(b);
    /* truncated anywhere: refused */
    for (size_t cut = 0; cut < n; cut += n / 9 + 1) {
        spit(bad, b, cut);
        CHECKF(intent_load(bad, &t, H, SUM, &g, err, sizeof err) != LAYA_OK && !g, "cut at %zu loaded", cut);
    }
    /* one weight flipped: the checksum */
    b[n - 5] ^= 0x40;
    spit(bad, b, n);
    CHECK(intent_load(bad, &t, H, SUM, &g, err, sizeof err) == LAYA_ERR_SIGNATURE && strstr(err, "checksum"));
    b[n - 5] ^= 0x40;
    free(b);
    /* a huge weight: refused (fuzz_intent found such heads overflowing to
     * NaN probabilities); and a forward pass that overflows reports other */
    h->w2[3] = 1e30f;
    CHECK(intent_save(h, bad, SUM, err, sizeof err) == LAYA_OK);
    CHECK(intent_load(bad, &t, H, SUM, &g, err, sizeof err) == LAYA_ERR_FORMAT && strstr(err, "beyond 1e4"));
    {
        float y[H], hid[INTENT_F], p[INTENT_C];
        /* 12 x 3e38 overflows a float sum, and the reference's double sum
         * overflows when cast to float */
        for (int i = 0; i < H; i++) y[i] = 3e38f;
        for (int i = 0; i < H; i++) h->w1[i] = 1.f;
        for (int c = 0; c < INTENT_C; c++) h->w2[(size_t)c * INTENT_F] = 0.25f;
        intent_forward(h, y, hid, p);
        CHECK(p[INTENT_OTHER] == 1 && p[0] == 0);
        intent_forward_ref(h, y, hid, p);
        CHECK(p[INTENT_OTHER] == 1 && p[0] == 0);
    }
    /* a wrong shape: a model-sized safetensors written with other tensors */
    float w[4 * 3] = {0};
    st_out o[1] = {{"intent.w1", ST_F32, 2, {4, 3}, w, NULL}};
    json_t *meta = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "format", "laya-intent", "format_version", "1", "classes",
                             "schedule_meeting,send_email,search_web,file_operation,app_switch,system_control,"
                             "text_edit,other",
                             "hidden", "3", "base_blake2b", SUM, "threshold", "0.5");
    CHECK(st_write(bad, o, 1, meta, "data_blake2b", err, sizeof err) == LAYA_OK);
    json_decref(meta);
    CHECK(intent_load(bad, &t, 3, SUM, &g, err, sizeof err) == LAYA_ERR_FORMAT && strstr(err, "4 tensors"));
    /* a model file is not a head */
    CHECK(intent_load(test_fixture("../../models/default.safetensors"), &t, 0, NULL, &g, err, sizeof err) ==
              LAYA_ERR_FORMAT &&
          strstr(err, "not an intent head"));
    intent_free(h);
}

/* A session over a tiny model with a head whose output bias alone decides:
 * reported above the threshold, nothing below it, nothing for "other",
 * nothing in a private field. */
TEST(intent_session_reports_only_above_threshold) {
    float *params;
    laya_model *m = te_model(300, 16, 8, 1, 8, 0.1f, 1, &params);
    CHECK(m);
    laya_session *s;
    CHECK(laya_session_new(m, &s) == LAYA_OK);
    intent_head *h;
    CHECK(intent_new(16, &h) == LAYA_OK);
    const char *name;
    float p;
    CHECK(laya_session_intent(s, &name, &p) == LAYA_OK && !name && p == 0);   /* no head */
    intent_head *wrong;
    CHECK(intent_new(17, &wrong) == LAYA_OK);
    CHECK(laya_session_set_intent(s, wrong) == LAYA_ERR_ARG);
    intent_free(wrong);
    CHECK(laya_session_set_intent(s, h) == LAYA_OK);
    CHECK(laya_session_set_context(s, "hello there ", 12) == LAYA_OK);
    h->b2[1] = 3.f;   /* send_email: p = e^3 / (e^3 + 7) = 0.7416 */
    h->threshold = 0.7f;
    CHECK(laya_session_intent(s, &name, &p) == LAYA_OK && name && !strcmp(name, "send_email"));
    CHECK_NEAR(p, exp(3.0) / (exp(3.0) + 7), 1e-5, 0);
    laya_session_set_intent(s, h);   /* the head changed: forget the cached answer */
    h->threshold = 0.75f;
    CHECK(laya_session_intent(s, &name, &p) == LAYA_OK && !name && p == 0);
    h->b2[1] = 0;
    h->b2[INTENT_OTHER] = 5.f;
    h->threshold = 0.1f;
    laya_session_set_intent(s, h);
    CHECK(laya_session_intent(s, &name, &p) == LAYA_OK && !name);   /* other is never reported */
    h->b2[INTENT_OTHER] = 0;
    h->b2[2] = 5.f;
    laya_session_set_intent(s, h);
    CHECK(laya_session_intent(s, &name, &p) == LAYA_OK && name && !strcmp(name, "search_web"));
    laya_session_set_private(s, 1);
    CHECK(laya_session_intent(s, &name, &p) == LAYA_OK && !name);
    laya_session_free(s);
    intent_free(h);
    laya_model_free(m);
    free(params);
}

TEST(intent_protocol_reply_carries_the_intent) {
    float *params;
    laya_model *m = te_model(300, 16, 8, 1, 8, 0.1f, 1, &params);
    CHECK(m);
    laya_search_opts o = laya_search_defaults();
    proto *pr;
    CHECK(proto_new(m, &o, 4, &pr) == LAYA_OK);
    const char *req = "{\"op\":\"suggest\",\"session\":\"a\",\"context\":\"please write to Anna \"}";
    char *r = proto_handle(pr, 1, req, strlen(req));
    CHECK(r && !strstr(r, "\"intent\""));   /* no head attached */
    free(r);
    intent_head *h;
    CHECK(intent_new(16, &h) == LAYA_OK);
    h->b2[1] = 6.f;
    h->threshold = 0.5f;
    proto_set_intent(pr, h);
    req = "{\"op\":\"suggest\",\"session\":\"b\",\"context\":\"please write to Anna \"}";
    r = proto_handle(pr, 1, req, strlen(req));
    CHECKF(r && strstr(r, "\"intent\":{\"name\":\"send_email\",\"p\":0.98}") , "reply %s", r ? r : "(null)");
    free(r);
    req = "{\"op\":\"suggest\",\"session\":\"c\",\"context\":\"my password \",\"private\":true}";
    r = proto_handle(pr, 1, req, strlen(req));
    CHECK(r && !strstr(r, "\"intent\""));
    free(r);
    h->threshold = 0.99f;   /* sessions opened from now on see it (the head is borrowed) */
    req = "{\"op\":\"suggest\",\"session\":\"d\",\"context\":\"please write to Anna \"}";
    r = proto_handle(pr, 1, req, strlen(req));
    CHECK(r && !strstr(r, "\"intent\""));
    free(r);
    proto_free(pr);
    intent_free(h);
    laya_model_free(m);
    free(params);
}
