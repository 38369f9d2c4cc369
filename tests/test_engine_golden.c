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
