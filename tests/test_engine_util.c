/* test_engine_util.c - see test_engine_util.h. */
#include "test_engine_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

const char *const te_text =
    "Best regards, and thank you for the quick reply.\n"
    "The meeting is on Monday at ten. Please bring the report and the slides.\n"
    "I would like to book a table for two people tonight.\n"
    "We are going to the park this afternoon, the weather is nice.\n"
    "Thank you for your help with the project, it was great working with you.\n"
    "Could you send me the file again? The first one was broken.\n"
    "我想订个外卖。我们明天去公园吧。今天天气很好，我们去散步。\n"
    "请把报告发给我，谢谢。会议在星期一上午十点开始。\n"
    "订个酒店，订个机票，然后去北京旅行。\n"
    "The quick brown fox jumps over the lazy dog; the dog sleeps.\n"
    "Numbers like 12345 and 3.14 appear in reports, don't they?\n";

uint32_t te_rand(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

tok *te_tok(int32_t vocab) {
    char path[512];
    snprintf(path, sizeof path, "%s/text.txt", test_tmpdir());
    FILE *f = fopen(path, "w");
    if (!f) return NULL;
    for (int i = 0; i < 8; i++) fputs(te_text, f);
    fclose(f);
    const char *paths[] = {path};
    tok *t = NULL;
    char err[256] = "";
    if (tok_train(paths, 1, vocab, NULL, NULL, &t, err, sizeof err) != LAYA_OK) {
        fprintf(stderr, "    tok_train: %s\n", err);
        return NULL;
    }
    remove(path);
    return t;
}

laya_model *te_model(int32_t vocab, int H, int D, int L, int W, float scale, uint32_t seed,
                     float **params) {
    tok *t = te_tok(vocab);
    if (!t) return NULL;
    model_cfg c = {.V = vocab, .H = H, .D = D, .L = L, .W = W};
    size_t n = model_n_params(&c);
    float *p = malloc(n * sizeof *p);
    if (!p) return NULL;
    for (size_t i = 0; i < n; i++) p[i] = scale * ((float)(te_rand(&seed) % 20001) / 10000.0f - 1.0f);
    model_params mp;
    model_params_point(&c, p, &mp);
    for (int i = 0; i < H; i++) mp.norm[i] = 1.0f;
    model *m = NULL;
    laya_model *lm = NULL;
    if (model_from_params(&c, p, t, &m) != LAYA_OK || engine_model_wrap(m, 1, &lm) != LAYA_OK) {
        free(p);
        return NULL;
    }
    *params = p;
    return lm;
}
