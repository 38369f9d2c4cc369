/* bench_tok.c - tokenizer throughput, single-threaded: pre-tokenizer alone,
 * encode, decode and the per-keystroke tail query, in MB/s of text.
 *
 * Text: data/corpus/{en,zh}/valid.txt when present, else a generated
 * English+Chinese mix (said in the table). Tokenizer: models/tokenizer.tok
 * when present, else one trained here on the first text (4096 tokens). The
 * floor to compare with is memcpy of the same bytes. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tok/tok.h"

static uint8_t *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)len + 1);
    *n = b ? fread(b, 1, (size_t)len, f) : 0;
    fclose(f);
    return b;
}

/* A deterministic 4 MB stand-in: words and 2-character CJK words drawn with
 * a skewed distribution, in sentences and lines. */
static uint8_t *generate(size_t *n) {
    static const char *en[] = {"the", "of", "and", "to", "a", "in", "is", "that", "for", "it", "with", "as",
                               "was", "on", "be", "by", "this", "are", "from", "at", "meeting", "report",
                               "regards", "tomorrow", "please", "schedule", "don't", "we'll", "2024",
                               "system", "package", "configuration", "network", "people", "time"};
    static const char *zh[] = {"我们", "明天", "下午", "开会", "讨论", "预算", "数据", "问题", "可以", "邮件",
                               "今天", "天气", "公园", "一起", "超市", "项目", "重要", "完成", "大家", "同意"};
    size_t cap = 4 << 20, k = 0;
    uint8_t *b = malloc(cap + 64);
    uint64_t x = 88172645463325252ull;
    while (k < cap) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        uint32_t r = (uint32_t)(x >> 20);
        const char *w;
        if (r % 3 == 0) w = zh[(r >> 4) % 20 * ((r >> 9) % 2) + (r >> 12) % 3];
        else w = en[(r >> 4) % 35 * ((r >> 10) % 2) + (r >> 12) % 5];
        size_t l = strlen(w);
        memcpy(b + k, w, l);
        k += l;
        b[k++] = r % 17 == 0 ? '\n' : r % 11 == 0 ? (r % 3 ? '.' : 0xEF) : ' ';
        if (b[k - 1] == 0xEF) { b[k++] = 0xBC; b[k++] = 0x8C; } /* ， */
    }
    *n = k;
    return b;
}

static void run_text(const tok *t, const char *name, const uint8_t *s, size_t n) {
    int32_t *ids = malloc(sizeof *ids * (n + 1));
    uint8_t *back = malloc(n + 64);
    double t0 = bench_now();
    size_t chunks = 0;
    for (size_t a = 0; a < n; chunks++) a = tok_chunk_end(s, n, a);
    double t_chunk = bench_now() - t0;
    size_t k = tok_encode(t, s, n, ids, n + 1); /* warm-up: first touch of ids */
    t0 = bench_now();
    for (int rep = 0; rep < 3; rep++) k = tok_encode(t, s, n, ids, n + 1);
    double t_enc = (bench_now() - t0) / 3;
    /* Keystroke path: many short calls, no cache. */
    t0 = bench_now();
    size_t done = 0;
    for (size_t a = 0; a + 64 <= n && done < (1u << 20); a += 64, done += 64) k += 0 * tok_encode(t, s + a, 64, ids, 65);
    double t_short = bench_now() - t0;
    k = tok_encode(t, s, n, ids, n + 1);
    t0 = bench_now();
    size_t m = 0;
    for (int rep = 0; rep < 5; rep++) m = tok_decode(t, ids, k, back, n + 64);
    double t_dec = (bench_now() - t0) / 5;
    t0 = bench_now();
    memcpy(back, s, n);
    double t_cpy = bench_now() - t0;
    int ok = m == n && !memcmp(back, s, n);
    size_t tail = 0;
    t0 = bench_now();
    for (int rep = 0; rep < 1000; rep++) tail += tok_tail_start(t, s, n < 4096 ? n : 4096);
    double t_tail = (bench_now() - t0) / 1000;
    printf("  %-28s %9zu bytes %8zu tokens %6.3f bytes/token %s\n", name, n, k, (double)n / (double)k,
           ok ? "" : "ROUND TRIP FAILED");
    printf("    pre-tokenizer %8.1f MB/s   (%zu chunks)\n", n / 1e6 / t_chunk, chunks);
    printf("    encode        %8.1f MB/s   (one call)\n", n / 1e6 / t_enc);
    printf("    encode 64 B   %8.1f MB/s   (keystroke-sized calls)\n", done / 1e6 / t_short);
    printf("    decode        %8.1f MB/s\n", n / 1e6 / t_dec);
    printf("    memcpy floor  %8.1f MB/s\n", n / 1e6 / (t_cpy + 1e-9));
    printf("    tail_start    %8.2f us     (4 KB context)\n", t_tail * 1e6);
    free(ids);
    free(back);
}

BENCH(tok_throughput) {
    const char *texts[2] = {"data/corpus/en/valid.txt", "data/corpus/zh/valid.txt"};
    uint8_t *buf[2] = {NULL, NULL};
    size_t len[2] = {0, 0};
    int real = 0;
    for (int i = 0; i < 2; i++)
        if ((buf[i] = read_file(texts[i], &len[i]))) real++;
    if (!real) {
        buf[0] = generate(&len[0]);
        texts[0] = "generated en+zh mix";
    }
    tok *t = NULL;
    char err[256] = "";
    const char *tp = "models/tokenizer.tok";
    if (tok_load_file(tp, &t, err, sizeof err) != LAYA_OK) {
        char path[] = "/tmp/laya-bench-tok-XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0) return;
        if (write(fd, buf[0], len[0]) != (ssize_t)len[0]) { close(fd); return; }
        close(fd);
        const char *paths[1] = {path};
        tp = "trained here (4096)";
        if (tok_train(paths, 1, 4096, NULL, NULL, &t, err, sizeof err) != LAYA_OK) {
            printf("  cannot train a tokenizer: %s\n", err);
            unlink(path);
            return;
        }
        unlink(path);
    }
    printf("  tokenizer: %s, vocab %d\n", tp, (int)tok_vocab_size(t));
    /* Load (parse, validate, build every table): part of the cold start. */
    uint8_t *blob = NULL;
    size_t blob_n = 0;
    if (tok_save(t, &blob, &blob_n) == LAYA_OK) {
        double best = 1e9;
        for (int rep = 0; rep < 30; rep++) {
            tok *u = NULL;
            double t0 = bench_now();
            laya_status st = tok_load(blob, blob_n, &u, err, sizeof err);
            double dt = bench_now() - t0;
            tok_free(u);
            if (st != LAYA_OK) break;
            if (dt < best) best = dt;
        }
        printf("    load          %8.3f ms     (tok_load of the %zu-byte blob, best of 30)\n", best * 1e3, blob_n);
        free(blob);
    }
    for (int i = 0; i < 2; i++)
        if (buf[i]) run_text(t, texts[i], buf[i], len[i]);
    for (int i = 0; i < 2; i++) free(buf[i]);
    tok_free(t);
}
