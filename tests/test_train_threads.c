/* test_train_threads.c - the trainer's results do not depend on the thread
 * count: a whole-model forward and backward big enough for every parallel
 * path (the GRU's time-loop region with row groups, partial unit chunks,
 * the sgemm tiles) gives bit-identical loss and gradients on 1, 2, 3 and 5
 * threads. */
#include "test.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "train/train.h"

TEST(train_results_independent_of_threads) {
    model_cfg cfg = {.V = 300, .H = 48, .D = 16, .L = 2, .W = 3};
    int B = 13, T = 9;
    size_t np = model_n_params(&cfg), ns = (size_t)cfg.L * B * cfg.H;
    float *p = malloc(np * 4), *g = malloc(np * 4), *g1 = malloc(np * 4);
    float *state = malloc(ns * 4), *st1 = malloc(ns * 4);
    int32_t *toks = malloc(sizeof(int32_t) * B * (T + 1));
    for (int i = 0; i < B * (T + 1); i++) toks[i] = (int32_t)((i * 2654435761u) % 300u);
    toks[5] = TOK_PAD;
    train_init_params(&cfg, p, 3);
    for (size_t i = 0; i < np; i++) p[i] *= 3.0f;
    train_model tm;
    char err[256];
    CHECK(train_model_init(&tm, &cfg, B, T, 0.1f, err, sizeof err) == LAYA_OK);
    int saved = omp_get_max_threads();
    static const int threads[] = {1, 2, 3, 5};
    double loss1 = 0;
    for (int k = 0; k < 4; k++) {
        omp_set_num_threads(threads[k]);
        for (size_t i = 0; i < ns; i++) state[i] = 0.01f * (float)(i % 37);
        memset(g, 0, np * 4);
        double loss = train_forward(&tm, p, toks, B, state, 1, 7, 1);
        train_backward(&tm, p, g);
        if (k == 0) {
            loss1 = loss;
            memcpy(g1, g, np * 4);
            memcpy(st1, state, ns * 4);
            continue;
        }
        CHECKF(loss == loss1, "%d threads: loss %.17g, 1 thread %.17g", threads[k], loss, loss1);
        CHECKF(memcmp(g, g1, np * 4) == 0, "%d threads: gradients differ from 1 thread", threads[k]);
        CHECKF(memcmp(state, st1, ns * 4) == 0, "%d threads: carried state differs", threads[k]);
    }
    omp_set_num_threads(saved);
    train_model_free(&tm);
    free(p);
    free(g);
    free(g1);
    free(state);
    free(st1);
    free(toks);
}
