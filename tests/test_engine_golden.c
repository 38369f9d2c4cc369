/* test_engine_golden.c - the shipped model's suggestions, pinned: for the
 * contexts of tests/fixtures/golden/suggest*.jsonl (English and Chinese),
 * the top 3 of models/default.safetensors with the default search are the
 * recorded texts exactly and their probabilities to GOLDEN_PROB_RTOL, on
 * every kernel table this CPU has; and they keep engine_suggest_invariants.
 * The AVX2 and AVX-512 tables share suggest.jsonl; the ref table has its
 * own, suggest_ref.jsonl: its q8 products keep x in f32 where the vector
 * ones quantize it per group (kern_q_tmpl.h), which moves the shipped
 * model's probabilities by up to ~20% and reorders some suggestions.
 * A deliberate change of the model or the search regenerates both with
 * scripts/golden.sh (then review the diff). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "kern/kern.h"
#include "model/model.h"
#include "model/model_sign.h"
#include "test.h"

/* AVX2 and AVX-512 differ in summation order only, which moves a
 * probability by ~1e-6 relative. */
#define GOLDEN_PROB_RTOL 1e-4
enum { GOLDEN_K = 3 };

static void check_golden(const char *isa, const char *fixture) {
    if (!kern_by_name(isa)) SKIP("this CPU lacks the instruction set");
    if (getenv("LAYA_TEST_NOFORK")) SKIP("kern_get decides once per process");
    setenv("LAYA_KERN", isa, 1);
    char err[256];
    laya_model *lm = NULL;
    CHECKF(laya_model_load("models/default.safetensors", &lm, err, sizeof err) == LAYA_OK, "%s", err);
    FILE *f = fopen(test_fixture(fixture), "r");
    CHECKF(f, "cannot open %s", test_fixture(fixture));
    char line[4096];
    int contexts = 0, shown = 0;
    while (fgets(line, sizeof line, f)) {
        json_error_t je;
        json_t *o = json_loads(line, 0, &je), *sug = json_object_get(o, "suggestions");
        const char *ctx = json_string_value(json_object_get(o, "context"));
        CHECKF(ctx && json_is_array(sug), "fixture line %d: %s", contexts + 1, je.text);
        laya_session *s = NULL;
        laya_suggestion out[GOLDEN_K];
        int n = 0;
        CHECK(laya_session_new(lm, &s) == LAYA_OK);
        CHECK(laya_session_set_context(s, ctx, strlen(ctx)) == LAYA_OK);
        CHECK(laya_suggest(s, GOLDEN_K, out, &n) == LAYA_OK);
        CHECKF(engine_suggest_invariants(s, GOLDEN_K, out, n, err, sizeof err) == LAYA_OK, "'%s': %s", ctx, err);
        CHECKF((size_t)n == json_array_size(sug), "'%s' (%s): %d suggestions, recorded %zu", ctx, isa, n,
               json_array_size(sug));
        for (int i = 0; i < n; i++) {
            json_t *e = json_array_get(sug, (size_t)i);
            const char *want = json_string_value(json_object_get(e, "text"));
            double wp = json_real_value(json_object_get(e, "prob"));
            CHECKF(want && out[i].len == strlen(want) && !memcmp(out[i].text, want, out[i].len),
                   "'%s' (%s) #%d: '%s', recorded '%s'", ctx, isa, i, out[i].text, want ? want : "?");
            CHECKF(fabs(out[i].prob - wp) <= GOLDEN_PROB_RTOL * wp, "'%s' (%s) '%s': prob %.6g, recorded %.6g",
                   ctx, isa, want, (double)out[i].prob, wp);
        }
        shown += n > 0;
        contexts++;
        laya_session_free(s);
        json_decref(o);
    }
    fclose(f);
    laya_model_free(lm);
    CHECKF(contexts >= 8 && shown >= 7, "%d contexts, %d with suggestions", contexts, shown);
}

TEST(engine_golden_suggestions_ref) { check_golden("ref", "golden/suggest_ref.jsonl"); }
TEST(engine_golden_suggestions_avx2) { check_golden("avx2", "golden/suggest.jsonl"); }
TEST(engine_golden_suggestions_avx512) { check_golden("avx512", "golden/suggest.jsonl"); }

/* The shipped model in both layouts (models/MODEL.md: the file is in one,
 * model_save_relayout writes the other) is one model: over every golden
 * context the two give the same suggestions with the same probabilities
 * bit for bit, and the same logits after the context's tokens. */
TEST(engine_golden_layouts_agree) {
    char err[512] = "", other[600];
    model *a = NULL, *b = NULL;
    CHECKF(model_load("models/default.safetensors", &a, err, sizeof err) == LAYA_OK, "%s", err);
    const int panel = a->emb.data == NULL;
    snprintf(other, sizeof other, "%s/other.safetensors", test_tmpdir());
    CHECKF(model_save_relayout(other, a, panel ? MODEL_LAYOUT_ROWS : MODEL_LAYOUT_PANEL, NULL, err, sizeof err) ==
               LAYA_OK, "%s", err);
    static const model_trust unsigned_ok = {.allow_unsigned = 1};
    CHECKF(model_load_opts(other, &unsigned_ok, &b, err, sizeof err) == LAYA_OK, "%s", err);
    CHECK((b->emb.data == NULL) != panel);
    char ia[65], ib[65];
    CHECK(model_identity(a, ia) == LAYA_OK && model_identity(b, ib) == LAYA_OK && !strcmp(ia, ib));
    laya_model *la = NULL, *lb = NULL;
    CHECK(engine_model_wrap(a, 1, &la) == LAYA_OK && engine_model_wrap(b, 1, &lb) == LAYA_OK);
    FILE *f = fopen(test_fixture("golden/suggest.jsonl"), "r");
    CHECK(f);
    char line[4096];
    int contexts = 0, same = 1;
    const int V = a->cfg.V, H = a->cfg.H;
    float *mem = malloc((2 * model_state_floats(&a->cfg) + model_scratch_floats(&a->cfg) + 2 * (size_t)H +
                         2 * (size_t)V) * sizeof(float));
    while (same && fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, NULL);
        const char *ctx = json_string_value(json_object_get(o, "context"));
        laya_session *sa = NULL, *sb = NULL;
        laya_suggestion oa[GOLDEN_K], ob[GOLDEN_K];
        int na = 0, nb = 0;
        same = ctx && laya_session_new(la, &sa) == LAYA_OK && laya_session_new(lb, &sb) == LAYA_OK &&
               laya_session_set_context(sa, ctx, strlen(ctx)) == LAYA_OK &&
               laya_session_set_context(sb, ctx, strlen(ctx)) == LAYA_OK &&
               laya_suggest(sa, GOLDEN_K, oa, &na) == LAYA_OK && laya_suggest(sb, GOLDEN_K, ob, &nb) == LAYA_OK &&
               na == nb;
        for (int i = 0; same && i < na; i++)
            same = oa[i].len == ob[i].len && !memcmp(oa[i].text, ob[i].text, oa[i].len) &&
                   !memcmp(&oa[i].prob, &ob[i].prob, sizeof oa[i].prob);
        /* the raw step outputs and logits over the context's tokens */
        int32_t ids[256];
        size_t n = ctx ? tok_encode(a->tok, (const uint8_t *)ctx, strlen(ctx), ids, 256) : 0;
        model_state s1, s2;
        model_state_init(&a->cfg, &s1, mem);
        model_state_init(&a->cfg, &s2, mem + model_state_floats(&a->cfg));
        float *scratch = mem + 2 * model_state_floats(&a->cfg), *y1 = scratch + model_scratch_floats(&a->cfg);
        float *y2 = y1 + H, *l1 = y2 + H, *l2 = l1 + V;
        for (size_t i = 0; same && i < n && i < 256; i++) {
            model_step(a, &s1, ids[i], scratch, y1);
            model_step(b, &s2, ids[i], scratch, y2);
            model_logits(a, y1, l1);
            model_logits(b, y2, l2);
            same = !memcmp(y1, y2, (size_t)H * sizeof *y1) && !memcmp(l1, l2, (size_t)V * sizeof *l1);
        }
        if (!same) fprintf(stderr, "    context '%s' differs between the layouts\n", ctx ? ctx : "?");
        laya_session_free(sa);
        laya_session_free(sb);
        json_decref(o);
        contexts++;
    }
    fclose(f);
    free(mem);
    laya_model_free(la);
    laya_model_free(lb);
    CHECK(same && contexts >= 8);
}
