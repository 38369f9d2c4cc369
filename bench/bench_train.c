/* bench_train.c - trainer throughput: tokens per second of a full step
 * (forward, backward, clipping, AdamW) for the base training shape, and the
 * sgemm rate of its biggest product (the tied logits) against the same
 * product's FLOP count, so the step time can be read against the machine. */
#include "bench.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "train/train.h"
#include "train/train_ops.h"

/* Process CPU seconds: with one thread on a loaded machine, the time the
 * step would take alone (other processes' turns are not counted). */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void step_bench(int B, int H, int steps) {
    model_cfg cfg = {.V = 8192, .H = H, .D = 64, .L = 3, .W = 5};
    int T = 64, N = B * T;
    size_t np = model_n_params(&cfg);
    float *p = malloc(np * 4), *g = malloc(np * 4), *m = calloc(np, 4), *v = calloc(np, 4);
    float *state = calloc((size_t)cfg.L * B * cfg.H, 4);
    int32_t *toks = malloc(sizeof(int32_t) * B * (T + 1));
    for (int i = 0; i < B * (T + 1); i++) toks[i] = (int32_t)((i * 2654435761u) % 8192u);
    train_init_params(&cfg, p, 1);
    train_model tm;
    char err[256];
    if (train_model_init(&tm, &cfg, B, T, 0.1f, err, sizeof err) != LAYA_OK) {
        printf("init failed: %s\n", err);
        return;
    }
    train_adamw o = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f, .wd = 0.1f};
    /* Best of the steps, not the mean: on a shared machine the minimum is
     * the time the code takes, the rest is other load. */
    double tf = 1e30, tb = 1e30, to = 1e30, tcpu = 1e30;
    for (int s = 0; s <= steps; s++) {
        double c0 = cpu_now(), t0 = bench_now();
        memset(g, 0, np * 4);
        train_forward(&tm, p, toks, B, state, 1, 1, (uint64_t)s);
        double t1 = bench_now();
        train_backward(&tm, p, g);
        double t2 = bench_now();
        train_clip_grads(g, np, 1.0f);
        train_adamw_step(&cfg, &o, 1e-3f, s + 1, p, g, m, v);
        double t3 = bench_now(), c3 = cpu_now();
        if (s == 0) { /* warm-up: page faults, thread start */
            memset(tm.op_time, 0, sizeof tm.op_time);
            continue;
        }
        tf = t1 - t0 < tf ? t1 - t0 : tf;
        tb = t2 - t1 < tb ? t2 - t1 : tb;
        to = t3 - t2 < to ? t3 - t2 : to;
        tcpu = c3 - c0 < tcpu ? c3 - c0 : tcpu;
    }
    double step = tf + tb + to;
    printf("V=8192 H=%d D=64 L=3 W=5 B=%d T=%d, %zu params, %d threads\n", H, B, T, np, omp_get_max_threads());
    printf("  %-10s %10s   (best of %d steps)\n", "phase", "ms/step", steps);
    printf("  %-10s %10.1f\n  %-10s %10.1f\n  %-10s %10.1f\n", "forward", 1e3 * tf, "backward", 1e3 * tb,
           "optimizer", 1e3 * to);
    printf("  %-10s %10.1f   -> %.0f tokens/s\n", "step", 1e3 * step, N / step);
    printf("  %-10s %10.1f   -> %.0f tokens/s per CPU-second (= alone, with 1 thread)\n", "step CPU",
           1e3 * tcpu, N / tcpu);
    printf("  per op, ms/step (mean):");
    for (int i = 0; i < TRAIN_OP_COUNT; i++)
        printf("%s %s %.1f", i % 6 ? "," : "\n   ", train_op_names[i], 1e3 * tm.op_time[i] / steps);
    printf("\n");

    /* The logits product alone: (N,H) x (H,V). */
    float *lg = malloc((size_t)N * cfg.V * 4);
    train_sgemm(0, 1, N, cfg.V, cfg.H, 1.0f, tm.y, cfg.H, p, cfg.H, 0.0f, lg, cfg.V);
    double dt = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = bench_now();
        train_sgemm(0, 1, N, cfg.V, cfg.H, 1.0f, tm.y, cfg.H, p, cfg.H, 0.0f, lg, cfg.V);
        double t1 = bench_now();
        dt = t1 - t0 < dt ? t1 - t0 : dt;
    }
    printf("  sgemm %dx%dx%d: %.1f ms, %.1f GFLOP/s\n", N, cfg.V, cfg.H, 1e3 * dt, 2.0 * N * cfg.V * cfg.H / dt / 1e9);
    train_model_free(&tm);
    free(lg);
    free(p);
    free(g);
    free(m);
    free(v);
    free(state);
    free(toks);
}

/* The base shape at the reference batch and at the batch `laya train` uses
 * on a big machine. LAYA_BENCH_B and LAYA_BENCH_H pick one shape instead. */
BENCH(bench_train_step) {
    const char *eb = getenv("LAYA_BENCH_B"), *eh = getenv("LAYA_BENCH_H");
    int H = eh ? atoi(eh) : 256;
    if (eb) {
        int B = atoi(eb);
        step_bench(B, H, B >= 64 ? 3 : 6);
        return;
    }
    step_bench(16, H, 6);
    step_bench(64, H, 3);
}
