/* bench_kern.c - GB/s of weights streamed by matvec, per kernel table and
 * weight type, beside the floor: this machine's own read bandwidth over a
 * buffer of the same size, measured in the same run (a sum of 16-byte
 * vectors into 8 independent accumulators: two loads per cycle already
 * exceed what L2/L3/DRAM deliver to one core, so wider loads would not
 * raise the floor). Every matrix is hot (repeated), so small sizes measure the
 * cache the weights fit in; that is the keystroke path's situation too.
 *
 * Shape letters: R rows, C columns. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern/kern.h"

static volatile uint64_t sink_u;
static volatile float sink_f;

typedef uint64_t v2u __attribute__((vector_size(16)));

/* GB/s of reading n_vec 16-byte vectors, best of a few timed batches. */
static double read_bw(const void *buf, size_t n_vec) {
    const v2u *p = buf;
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        int iters = 0;
        double t0 = bench_now(), t;
        do {
            v2u a0 = {0}, a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
            for (size_t i = 0; i + 8 <= n_vec; i += 8) {
                a0 += p[i];
                a1 += p[i + 1];
                a2 += p[i + 2];
                a3 += p[i + 3];
                a4 += p[i + 4];
                a5 += p[i + 5];
                a6 += p[i + 6];
                a7 += p[i + 7];
            }
            v2u s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
            sink_u = s[0] + s[1];
            iters++;
            t = bench_now() - t0;
        } while (t < 0.05);
        double gbs = (double)n_vec * 16 * iters / t / 1e9;
        if (gbs > best) best = gbs;
    }
    return best;
}

static double matvec_bw(const kern_table *k, const qmat *w, const float *x, float *y, size_t bytes) {
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        int iters = 0;
        double t0 = bench_now(), t;
        do {
            k->matvec(w, x, y);
            iters++;
            t = bench_now() - t0;
        } while (t < 0.05);
        sink_f = y[0];
        double gbs = (double)bytes * iters / t / 1e9;
        if (gbs > best) best = gbs;
    }
    return best;
}

BENCH(kern_matvec) {
    static const int shapes[][2] = {{768, 768}, {2304, 768}, {8192, 768}};
    static const char *isas[] = {"ref", "avx2", "avx512"};
    printf("%-10s %-4s %-8s %10s %10s %8s\n", "R x C", "type", "isa", "GB/s", "floor", "of floor");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int R = shapes[s][0], C = shapes[s][1];
        size_t n = (size_t)R * C;
        float *wf = malloc(n * sizeof *wf), *x = malloc((size_t)C * sizeof *x), *y = malloc((size_t)R * sizeof *y);
        uint16_t *wh = malloc(n * sizeof *wh);
        for (size_t i = 0; i < n; i++) {
            wf[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
            wh[i] = kern_f32_to_f16(wf[i]);
        }
        for (int c = 0; c < C; c++) x[c] = (float)(c % 17) / 17.0f;
        for (int ty = QT_F32; ty <= QT_F16; ty++) {
            qmat w = {.type = (qtype)ty, .rows = R, .cols = C, .data = ty == QT_F32 ? (void *)wf : (void *)wh};
            size_t bytes = n * (ty == QT_F32 ? 4 : 2);
            double floor_gbs = read_bw(w.data, bytes / 16);
            char dims[32];
            snprintf(dims, sizeof dims, "%dx%d", R, C);
            for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
                const kern_table *k = kern_by_name(isas[i]);
                if (!k) continue;
                double g = matvec_bw(k, &w, x, y, bytes);
                printf("%-10s %-4s %-8s %10.1f %10.1f %7.0f%%\n", dims, ty == QT_F32 ? "f32" : "f16",
                       isas[i], g, floor_gbs, 100 * g / floor_gbs);
            }
        }
        free(wf);
        free(wh);
        free(x);
        free(y);
    }
}
