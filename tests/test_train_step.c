/* test_train_step.c - the trainer's sequence forward against the inference
 * step path of src/model (model_from_params + model_step + model_logits):
 * a window that starts from the zero state is a fresh session, so every
 * position's logits must agree to 1e-5 relative. */
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "train/train.h"
#include "train/train_ops.h"

static void compare(model_cfg cfg, int T, uint64_t seed) {
    size_t np = model_n_params(&cfg);
    float *p = malloc(np * sizeof(float));
    train_init_params(&cfg, p, seed);
    /* Bigger than the init so attention and gates are far from linear. */
    for (size_t i = 0; i < np; i++) p[i] *= 3.0f;
    int32_t *toks = malloc(sizeof(int32_t) * (T + 1));
    toks[0] = TOK_BOS;
    for (int t = 1; t <= T; t++) toks[t] = (int32_t)((t * 7919u + seed * 31u) % (uint32_t)cfg.V);
    train_model tm;
    char err[256];
    CHECK(train_model_init(&tm, &cfg, 1, T, 0.3f, err, sizeof err) == LAYA_OK);
    train_forward(&tm, p, toks, 1, NULL, 0, 0, 0);
    float *lt = malloc(sizeof(float) * (size_t)T * cfg.V);
    train_sgemm_ref(0, 1, T, cfg.V, cfg.H, 1.0f, tm.y, cfg.H, p, cfg.H, 0.0f, lt, cfg.V);

    model *m = NULL;
    CHECK(model_from_params(&cfg, p, NULL, &m) == LAYA_OK);
    float *smem = malloc(sizeof(float) * model_state_floats(&cfg));
    float *scr = malloc(sizeof(float) * model_scratch_floats(&cfg));
    float *y = malloc(sizeof(float) * cfg.H), *ls = malloc(sizeof(float) * cfg.V);
    model_state s;
    model_state_init(&cfg, &s, smem);
    for (int t = 0; t < T; t++) {
        model_step(m, &s, toks[t], scr, y);
        model_logits(m, y, ls);
        float mx = 0;
        for (int v = 0; v < cfg.V; v++) mx = fmaxf(mx, fabsf(lt[(size_t)t * cfg.V + v]));
        for (int v = 0; v < cfg.V; v++)
            CHECKF(fabsf(ls[v] - lt[(size_t)t * cfg.V + v]) <= 1e-5f * fmaxf(mx, 1.0f),
                   "H=%d W=%d position %d token %d: step %.7g, sequence %.7g", cfg.H, cfg.W, t, v, ls[v],
                   lt[(size_t)t * cfg.V + v]);
    }
    model_free(m);
    train_model_free(&tm);
    free(p);
    free(toks);
    free(lt);
    free(smem);
    free(scr);
    free(y);
    free(ls);
}

TEST(train_sequence_equals_step_path) {
    compare((model_cfg){.V = 270, .H = 8, .D = 4, .L = 2, .W = 3}, 12, 1);
    compare((model_cfg){.V = 300, .H = 48, .D = 16, .L = 3, .W = 5}, 20, 2);
    compare((model_cfg){.V = 270, .H = 16, .D = 16, .L = 1, .W = 1}, 5, 3);
}
