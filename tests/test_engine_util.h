/* test_engine_util.h - tiny models for the engine tests: a tokenizer trained
 * by tok_train on a small bilingual text written to a temporary directory,
 * and a network of random (or hand-set) weights from model_from_params. */
#ifndef LAYA_TEST_ENGINE_UTIL_H
#define LAYA_TEST_ENGINE_UTIL_H

#include "engine/engine.h"
#include "model/model.h"

/* The training text (English and Chinese, no 'X' anywhere). */
extern const char *const te_text;

/* A tokenizer of vocab ids trained on te_text; NULL on failure. */
tok *te_tok(int32_t vocab);
/* A model of shape (vocab, H, D, L, W) with weights uniform in
 * [-scale, scale] from seed, wrapped for the public API. *params receives
 * the weights (caller frees after laya_model_free). */
laya_model *te_model(int32_t vocab, int H, int D, int L, int W, float scale, uint32_t seed,
                     float **params);
/* A deterministic generator for tests. */
uint32_t te_rand(uint32_t *state);

#endif
