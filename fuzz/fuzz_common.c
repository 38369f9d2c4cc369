/* fuzz_common.c - see fuzz_common.h. */
#include "fuzz_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine/engine.h"
#include "model/model.h"
#include "tok/tok_impl.h"

tok *fz_tok(int32_t V) {
    int M = V - TOK_FIRST_MERGE;
    uint16_t (*merge)[2] = malloc(sizeof *merge * (size_t)(M > 0 ? M : 1));
    if (!merge) return NULL;
    for (int i = 0; i < M; i++) {
        merge[i][0] = (uint16_t)('a' + i % 26);
        merge[i][1] = (uint16_t)('a' + i / 26);
    }
    tok *t = NULL;
    if (tok_build(V, (const uint16_t (*)[2])merge, &t, NULL, 0) != LAYA_OK) t = NULL;
    free(merge);
    return t;
}

const laya_model *fz_model(int32_t V, int H, int D, int L, int W, float scale, uint32_t seed) {
    static laya_model *lm;
    if (lm) return lm;
    model_cfg c = {.V = V, .H = H, .D = D, .L = L, .W = W};
    size_t n = model_n_params(&c);
    float *p = malloc(n * sizeof *p);   /* kept: the model points into it */
    tok *t = fz_tok(V);
    model *m = NULL;
    if (!p || !t) fz_fail("out of memory building the fuzz model");
    uint32_t s = seed ? seed : 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5;
        p[i] = scale * ((float)(s >> 8) * (2.0f / 16777216.0f) - 1.0f);
    }
    if (model_from_params(&c, p, t, &m) != LAYA_OK || engine_model_wrap(m, 1, &lm) != LAYA_OK)
        fz_fail("cannot build the fuzz model");
    return lm;
}

_Noreturn void fz_fail(const char *fmt, ...) {
    va_list ap;
    fputs("fuzz oracle: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}
