/* bench_nc.c - the continuous cache's cost (issue 14, src/engine/nc.c):
 * with its window full (the shipped model after bench/texts/en.txt),
 * scoring one search node and a depth of ENGINE_GEN_BEAMS nodes in one
 * pass, and recording one position; a whole keystroke beside them for
 * scale. Best-of-5 means; the machine may be shared, so these are upper
 * bounds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench.h"
#include "engine/session.h"
#include "util/file.h"

/* Best-of-5 microseconds per call of scoring n nodes (made stale first). */
static double score_us(laya_session *s, int n) {
    engine_nc_dist *nds[ENGINE_GEN_BEAMS];
    const float *ys[ENGINE_GEN_BEAMS];
    for (int j = 0; j < n; j++) nds[j] = &s->sr.nodes[j].nc, ys[j] = s->sr.nodes[j].c.y;
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = bench_now();
        for (int rep = 0; rep < 200; rep++) {
            for (int j = 0; j < n; j++) nds[j]->ver = 0;
            engine_nc_ensure_batch(&s->nc, &s->cx, nds, ys, n);
        }
        double us = (bench_now() - t0) * 1e6 / 200.0;
        if (us < best) best = us;
    }
    return best;
}

BENCH(nc_cache) {
    laya_model *m = NULL;
    if (laya_model_load("models/default.safetensors", &m, NULL, 0) != LAYA_OK) {
        printf("nc: models/default.safetensors did not load\n");
        return;
    }
    size_t len = 0;
    const uint8_t *map = NULL;
    char err[256];
    if (file_map_regular("bench/texts/en.txt", "text", &map, &len, err, sizeof err) != LAYA_OK || !map) {
        printf("nc: %s\n", map ? err : "bench/texts/en.txt is empty");
        laya_model_free(m);
        return;
    }
    /* the text repeated to fill the window several times over */
    size_t rep_n = 0, cap = 16 * 1024;
    char *text = malloc(cap);
    if (!text) {
        munmap((void *)map, len);
        laya_model_free(m);
        return;
    }
    while (rep_n + len + 1 < cap) {
        memcpy(text + rep_n, map, len);
        rep_n += len;
        text[rep_n++] = '\n';
    }
    munmap((void *)map, len);
    len = rep_n;
    laya_session *s = NULL;
    if (laya_session_new(m, &s) != LAYA_OK || engine_set_learn(s, 1, NULL, 0) != LAYA_OK ||
        laya_session_set_context(s, text, len) != LAYA_OK) {
        printf("nc: the session did not start\n");
        free(text);
        laya_session_free(s);
        laya_model_free(m);
        return;
    }
    laya_suggestion out[3];
    int k = 0;
    laya_suggest(s, 3, out, &k);
    s->nc.w = s->ec.cache_weight;
    /* Nodes with distinct vectors: cur's output, scaled. */
    for (int j = 0; j < ENGINE_GEN_BEAMS; j++)
        for (int h = 0; h < s->cfg.H; h++)
            s->sr.nodes[j].c.y[h] = s->cx.cur.y[h] * (1.0f + 0.1f * (float)j) + 0.01f * (float)(h % 7);
    size_t ntok = 0;
    engine_tokens(s, &ntok);
    printf("window %d positions (text: %zu tokens), ring %d rows of H=%d (q8)\n", ENGINE_NC_SIZE, ntok,
           ENGINE_NC_SIZE + 64, s->cfg.H);
    static const int ns[] = {1, 2, 4, 6};
    for (int i = 0; i < 4; i++) {
        double us = score_us(s, ns[i]);
        printf("  score %d node%s in one pass: %.1f us (%.1f us a node)\n", ns[i], ns[i] > 1 ? "s" : "", us,
               us / ns[i]);
    }
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = bench_now();
        for (int rep = 0; rep < 1000; rep++) engine_nc_record(&s->nc, &s->cx, s->private_field);
        double us = (bench_now() - t0) * 1e6 / 1000.0;
        if (us < best) best = us;
    }
    printf("  record one position (quantize, write its panel row): %.2f us\n", best);
    /* A keystroke for scale: the text's last 2,000 bytes typed again, one
     * character at a time, each with a suggestion. */
    laya_session_reset(s);
    size_t from = len > 2000 ? len - 2000 : 0;
    laya_session_set_context(s, text, from);
    int keys = 0;
    double t0 = bench_now();
    for (size_t i = from; i < len; i++, keys++) {
        laya_session_type(s, text + i, 1);
        laya_suggest(s, 3, out, &k);
    }
    printf("  a whole keystroke (learning on, k=3), for scale: %.1f us over %d keys\n",
           (bench_now() - t0) * 1e6 / keys, keys);
    free(text);
    laya_session_free(s);
    laya_model_free(m);
}
