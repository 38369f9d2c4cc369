/* bench_learn.c - the personal memory's costs at its cap (100,000 commits,
 * ~60 bytes each, in a temporary folder): the store alone (read every
 * row, add), open and the first sync that loads the index, a commit (one
 * write transaction, p50/p99), the change check that runs before every
 * suggestion (fast path and the data_version reference),
 * a sync that pulls another connection's commit, an add that evicts, and
 * forget --word over every row. The floor for the check is zero work: it
 * should cost less than a cache miss or two. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "learn/learn.h"
#include "learn/learn_store.h"

enum { ROWS = 100000, COMMITS = 2000, CHECKS = 200000 };

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int line(char *b, size_t n, uint32_t i) {
    static const char *w[] = {"meeting", "tomorrow", "report", "regards", "我们", "明天", "下午", "project",
                              "thanks", "please", "schedule", "邮件"};
    return snprintf(b, n, "%s %s at %u, %s %s and %s %s", w[i % 12], w[(i / 12) % 12], i % 97, w[(i / 7) % 12],
                    w[(i / 5) % 12], w[(i / 3) % 12], w[(i / 11) % 12]);
}

static int count_row(void *ctx, int64_t id, const uint8_t *text, size_t len, int64_t t) {
    *(size_t *)ctx += len;
    return 0;
}

BENCH(learn_memory) {
    char dir[] = "/tmp/laya-bench-learn-XXXXXX", path[256], t[128];
    if (!mkdtemp(dir)) return;
    snprintf(path, sizeof path, "%s/m.db", dir);
    learn_store *s = NULL;
    char err[512] = "";
    if (learn_store_open(path, &s, err, sizeof err) != LAYA_OK) {
        printf("cannot open: %s\n", err);
        return;
    }
    double t0 = bench_now();
    size_t bytes = 0;
    for (uint32_t i = 0; i < ROWS; i++) {
        int n = line(t, sizeof t, i);
        bytes += (size_t)n;
        learn_store_add(s, (const uint8_t *)t, (size_t)n, 1700000000 + i, NULL, NULL, 0);
    }
    double fill = bench_now() - t0;
    /* The store alone: every row read, no index. */
    t0 = bench_now();
    size_t seen = 0;
    learn_store_rows(s, 0, count_row, &seen, NULL, 0);
    double read_s = bench_now() - t0;
    double *slat = malloc(sizeof *slat * COMMITS);
    for (int i = 0; i < COMMITS; i++) {
        int n = line(t, sizeof t, (uint32_t)(4 * ROWS + i));
        double a = bench_now();
        learn_store_add(s, (const uint8_t *)t, (size_t)n, 1800000000, NULL, NULL, 0);
        slat[i] = bench_now() - a;
    }
    qsort(slat, COMMITS, sizeof *slat, cmp_d);
    learn_store_close(s);

    t0 = bench_now();
    laya_memory *m = NULL, *other = NULL;
    if (laya_memory_open(path, &m, err, sizeof err) != LAYA_OK) {
        printf("cannot open: %s\n", err);
        return;
    }
    double open_s = bench_now() - t0;
    learn_memory_lock(m);
    learn_memory_sync(m, NULL, 0);
    learn_memory_unlock(m);
    double load_s = bench_now() - t0 - open_s;
    laya_memory_open(path, &other, NULL, 0);

    double *lat = malloc(sizeof *lat * COMMITS);
    for (int i = 0; i < COMMITS; i++) {
        int n = line(t, sizeof t, (uint32_t)(ROWS + i));
        double a = bench_now();
        laya_memory_commit(m, t, (size_t)n, NULL, NULL, 0);
        lat[i] = bench_now() - a;
    }
    qsort(lat, COMMITS, sizeof *lat, cmp_d);

    learn_memory_lock(m);
    learn_memory_sync(m, NULL, 0);
    t0 = bench_now();
    for (int i = 0; i < CHECKS; i++) learn_memory_sync(m, NULL, 0);
    double fast = (bench_now() - t0) / CHECKS;
    int ch;
    t0 = bench_now();
    for (int i = 0; i < CHECKS / 100; i++) learn_store_changed_ref(m->store, &ch, NULL, 0);
    double ref = (bench_now() - t0) / (CHECKS / 100);
    /* What a keystroke pays for the memory: one query of the full index
     * (the history at its cap) for contexts that grow a character at a
     * time, as typing makes them. */
    enum { QUERIES = 20000 };
    static double qlat[QUERIES];
    char qc[256];
    int ql = line(qc, sizeof qc, 7u * ROWS / 3);
    learn_result qr;
    const learn_index *ix = learn_memory_index(m);
    for (int i = 0; i < QUERIES; i++) {
        int cut = 1 + i % ql;
        double a = bench_now();
        learn_index_query(ix, (const uint8_t *)qc, (size_t)cut, 1.0, &qr);
        qlat[i] = bench_now() - a;
        if (cut == ql) ql = line(qc, sizeof qc, (uint32_t)(7u * ROWS / 3 + (unsigned)i));
    }
    qsort(qlat, QUERIES, sizeof *qlat, cmp_d);
    learn_memory_unlock(m);

    double pull = 0;
    for (int i = 0; i < 100; i++) {
        int n = line(t, sizeof t, (uint32_t)(2 * ROWS + i));
        laya_memory_commit(other, t, (size_t)n, NULL, NULL, 0);
        learn_memory_lock(m);
        t0 = bench_now();
        learn_memory_sync(m, NULL, 0);
        pull += bench_now() - t0;
        learn_memory_unlock(m);
    }
    pull /= 100;

    /* The worst add: the one that evicts cap/20 rows. */
    learn_store_set_cap(m->store, ROWS);
    double evict = 0;
    for (int i = 0; i < ROWS / 20 + 2; i++) {
        int n = line(t, sizeof t, (uint32_t)(3 * ROWS + i));
        double a = bench_now();
        laya_memory_commit(m, t, (size_t)n, NULL, NULL, 0);
        double d = bench_now() - a;
        if (d > evict) evict = d;
    }
    int64_t removed = 0;
    t0 = bench_now();
    laya_memory_forget_word(m, "schedule", 8, &removed, NULL, 0);
    double forget = bench_now() - t0;

    printf("  %d commits, %.1f MB of text; fill %.1f s (one transaction each)\n", ROWS, (double)bytes / 1e6, fill);
    printf("  %-44s %10s\n", "operation", "time");
    printf("  %-44s %8.1f ms\n", "store: read every row (no index)", 1e3 * read_s);
    printf("  %-44s %8.1f us\n", "store: add, p50", 1e6 * slat[COMMITS / 2]);
    printf("  %-44s %8.1f us\n", "store: add, p99", 1e6 * slat[COMMITS * 99 / 100]);
    printf("  %-44s %8.1f ms\n", "laya_memory_open", 1e3 * open_s);
    printf("  %-44s %8.1f ms\n", "first sync: 100k commits into the index", 1e3 * load_s);
    printf("  %-44s %8.1f us\n", "commit, p50", 1e6 * lat[COMMITS / 2]);
    printf("  %-44s %8.1f us\n", "commit, p99", 1e6 * lat[COMMITS * 99 / 100]);
    printf("  %-44s %8.3f us\n", "sync, nothing changed (WAL-index header)", 1e6 * fast);
    printf("  %-44s %8.3f us\n", "change check by data_version (reference)", 1e6 * ref);
    printf("  %-44s %8.1f us\n", "sync pulling another process's commit", 1e6 * pull);
    printf("  %-44s %8.1f us\n", "query of the full index (a keystroke), p50", 1e6 * qlat[QUERIES / 2]);
    printf("  %-44s %8.1f us\n", "query of the full index (a keystroke), p99", 1e6 * qlat[QUERIES * 99 / 100]);
    printf("  %-44s %8.1f ms\n", "commit that evicts 5,000 rows (worst)", 1e3 * evict);
    printf("  %-44s %8.1f ms  (%lld removed)\n", "forget --word over every row", 1e3 * forget, (long long)removed);
    free(lat);
    free(slat);
    laya_memory_free(other);
    laya_memory_free(m);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("  (could not remove %s)\n", dir);
}
