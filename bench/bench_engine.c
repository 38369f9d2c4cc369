/* bench_engine.c - per-keystroke latency of the whole engine: for every
 * character of a text, set the context to the text up to it and ask for 3
 * suggestions (what `laya serve` does per request), one thread. Reports
 * p50/p99/max and the model steps per keystroke (reading the context: about
 * one word's tokens per word, none inside a word; plus the search's, at most
 * engine_cfg.max_steps). `laya bench` is the same measurement on a model file.
 *
 * Model: models/default.safetensors when present, else a random network of
 * the default shape (model_cfg_default) built in memory, with
 * models/tokenizer.tok (or a tokenizer trained here on the texts). Texts:
 * the first LAYA_BENCH_CHARS (default 400) characters of
 * data/corpus/{en,zh}/valid.txt when present, else built-in paragraphs. */
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "util/utf8.h"
#include "model/model.h"

static const char builtin_en[] =
    "Thank you for the quick reply. The meeting is on Monday at ten, so please bring the "
    "report and the slides. I would like to book a table for two people tonight; the weather "
    "is nice and we could walk to the park afterwards. Could you send me the file again? The "
    "first one was broken and I could not open it on my laptop. Best regards, Anna\n";
static const char builtin_zh[] =
    "我想订个外卖，然后我们明天去公园吧。今天天气很好，我们一起去散步。请把报告发给我，谢谢。"
    "会议在星期一上午十点开始，大家要准时参加。订个酒店，订个机票，然后去北京旅行。\n";

static char *load_text(const char *path, const char *fallback, size_t max_chars, size_t *len,
                       const char **src) {
    FILE *f = fopen(path, "rb");
    size_t cap = max_chars * 4 + 4, n = 0;
    char *b = malloc(cap);
    if (!b) return NULL;
    if (f) {
        n = fread(b, 1, cap, f);
        fclose(f);
        *src = path;
    }
    if (n == 0) {
        n = strlen(fallback) < cap ? strlen(fallback) : cap;
        memcpy(b, fallback, n);
        *src = "built-in";
    }
    /* Cut at max_chars whole characters. */
    size_t i = 0, c = 0;
    while (i < n && c < max_chars) {
        size_t j = utf8_next((const uint8_t *)b, n, i);
        if (j > n) break;
        i = j;
        c++;
    }
    *len = i;
    return b;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static laya_model *random_default(float **params, char *what, size_t wn) {
    tok *t = NULL;
    char err[256] = "";
    if (tok_load_file("models/tokenizer.tok", &t, err, sizeof err) != LAYA_OK) {
        char path[] = "/tmp/laya-bench-engine-XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0) return NULL;
        for (int r = 0; r < 20; r++) {
            if (write(fd, builtin_en, sizeof builtin_en - 1) < 0 ||
                write(fd, builtin_zh, sizeof builtin_zh - 1) < 0)
                break;
        }
        close(fd);
        const char *paths[] = {path};
        laya_status st = tok_train(paths, 1, 1024, NULL, NULL, &t, err, sizeof err);
        unlink(path);
        if (st != LAYA_OK) return NULL;
    }
    model_cfg c = model_cfg_default();
    if (tok_vocab_size(t) > c.V) c.V = tok_vocab_size(t);
    size_t n = model_n_params(&c);
    float *p = malloc(n * sizeof *p);
    if (!p) return NULL;
    uint32_t s = 1;
    float scale = 1.0f / sqrtf((float)c.H);
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = scale * ((float)(s >> 8) / 8388608.0f - 1.0f);
    }
    model_params mp;
    model_params_point(&c, p, &mp);
    for (int i = 0; i < c.H; i++) mp.norm[i] = 1.0f;
    model *m = NULL;
    laya_model *lm = NULL;
    if (model_from_params(&c, p, t, &m) != LAYA_OK || engine_model_wrap(m, 1, &lm) != LAYA_OK) return NULL;
    snprintf(what, wn, "random f32 V=%d H=%d D=%d L=%d W=%d, %.1fM params", c.V, c.H, c.D, c.L, c.W,
             (double)n / 1e6);
    *params = p;
    return lm;
}

static void run_text(laya_model *lm, const char *name, const char *text, size_t len, const char *src) {
    laya_session *s = NULL;
    if (laya_session_new(lm, &s) != LAYA_OK) return;
    size_t nk = utf8_count((const uint8_t *)text, len);
    double *ms = malloc(nk * sizeof *ms);
    uint64_t steps0 = engine_steps(s) + engine_search_steps(s);
    size_t k = 0, shown = 0;
    for (size_t i = 0; i < len;) {
        i = utf8_next((const uint8_t *)text, len, i);
        laya_suggestion out[3];
        int n = 0;
        double t0 = bench_now();
        laya_session_set_context(s, text, i);
        laya_suggest(s, 3, out, &n);
        ms[k++] = 1e3 * (bench_now() - t0);
        shown += n > 0;
    }
    double sum = 0;
    for (size_t i = 0; i < k; i++) sum += ms[i];
    qsort(ms, k, sizeof *ms, cmp_double);
    printf("%-8s %6zu %8.3f %8.3f %8.3f %8.3f %9.2f %6.0f%%  %s\n", name, k, ms[k / 2],
           ms[(size_t)(0.99 * (double)(k - 1))], ms[k - 1], sum / (double)k,
           (double)(engine_steps(s) + engine_search_steps(s) - steps0) / (double)k, 100.0 * (double)shown / (double)k, src);
    free(ms);
    laya_session_free(s);
}

BENCH(engine_keystroke) {
    char what[256] = "";
    float *params = NULL;
    laya_model *lm = NULL;
    char err[512] = "";
    if (access("models/default.safetensors", R_OK) == 0) {
        if (laya_model_load("models/default.safetensors", &lm, err, sizeof err) != LAYA_OK) {
            printf("cannot load models/default.safetensors: %s\n", err);
            return;
        }
        const model_cfg *c = &engine_model(lm)->cfg;
        snprintf(what, sizeof what, "models/default.safetensors V=%d H=%d D=%d L=%d W=%d", c->V, c->H,
                 c->D, c->L, c->W);
    } else {
        lm = random_default(&params, what, sizeof what);
        if (!lm) {
            printf("cannot build a random default model\n");
            return;
        }
    }
    const char *env = getenv("LAYA_BENCH_CHARS");
    size_t chars = env && atoi(env) > 0 ? (size_t)atoi(env) : 400;
    engine_cfg ec = engine_cfg_default();
    printf("model: %s; search: beam %d, max %d tokens, %d words; k=3, one thread\n", what, ec.beam,
           ec.max_tokens, ec.max_words);
    printf("%-8s %6s %8s %8s %8s %8s %9s %7s  %s\n", "text", "keys", "p50 ms", "p99 ms", "max ms",
           "mean ms", "steps/key", "shown", "source");
    const char *src;
    size_t len;
    char *en = load_text("data/corpus/en/valid.txt", builtin_en, chars, &len, &src);
    if (en) run_text(lm, "english", en, len, src);
    free(en);
    char *zh = load_text("data/corpus/zh/valid.txt", builtin_zh, chars, &len, &src);
    if (zh) run_text(lm, "chinese", zh, len, src);
    free(zh);
    laya_model_free(lm);
    free(params);
}
