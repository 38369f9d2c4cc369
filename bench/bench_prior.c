/* bench_prior.c - the next-word prior's cost per keystroke (issue 15): one
 * prior_query on every prefix of a Chinese text (each character typed),
 * with the shipped model's prior, beside the whole keystroke it is part
 * of. Reports best-of-5 means; the machine is shared, so these are upper
 * bounds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "engine/engine.h"
#include "model/model.h"
#include "prior/prior.h"
#include "util/utf8.h"

BENCH(prior_per_keystroke) {
    static const char text[] =
        "我想订个外卖，我们明天上午九点开会。谢谢你的帮助，中华人民共和国成立以后，今天天气很好，"
        "我们去公园散步吧。这家店的服务态度非常好，下次还会再来，物流也很快，包装完好无损。";
    laya_model *m = NULL;
    if (laya_model_load("models/default.safetensors", &m, NULL, 0) != LAYA_OK) {
        printf("prior: models/default.safetensors did not load\n");
        return;
    }
    const prior *p = &engine_model(m)->prior;
    if (p->nw == 0) {
        printf("prior: the shipped model has no prior\n");
        laya_model_free(m);
        return;
    }
    size_t n = strlen(text), ends[256];
    int ne = 0;
    for (size_t i = 0; i < n && ne < 256; i = utf8_next((const uint8_t *)text, n, i))
        ends[ne++] = utf8_next((const uint8_t *)text, n, i);
    prior_cand c[PRIOR_MAX_CAND];
    double best = 1e30;
    long found = 0;
    for (int r = 0; r < 5; r++) {
        found = 0;
        double t0 = bench_now();
        for (int rep = 0; rep < 200; rep++)
            for (int e = 0; e < ne; e++) found += prior_query(p, (const uint8_t *)text, ends[e], c, 8);
        double us = (bench_now() - t0) * 1e6 / (200.0 * ne);
        if (us < best) best = us;
    }
    printf("prior (%u words, %u followers): prior_query per keystroke %.3f us (%d prefixes, %.1f proposals each)\n",
           p->nw, p->nf, best, ne, (double)found / (200.0 * ne));
    laya_session *s;
    if (laya_session_new(m, &s) == LAYA_OK) {
        laya_suggestion out[3];
        int k;
        double t0 = bench_now();
        for (int e = 0; e < ne; e++) {
            size_t from = e ? ends[e - 1] : 0;
            laya_session_type(s, text + from, ends[e] - from);
            laya_suggest(s, 3, out, &k);
        }
        printf("  a whole keystroke (type one character, suggest k=3), for scale: %.1f us\n",
               (bench_now() - t0) * 1e6 / ne);
        laya_session_free(s);
    }
    laya_model_free(m);
}
