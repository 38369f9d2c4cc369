/* bench_main.c - runs every registered BENCH whose name contains argv[1]. */
#include "bench.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

enum { MAX_BENCH = 256 };
static struct { const char *name; bench_fn fn; } benches[MAX_BENCH];
static int n_benches;

void bench_register(const char *name, bench_fn fn) {
    if (n_benches < MAX_BENCH) {
        benches[n_benches].name = name;
        benches[n_benches].fn = fn;
        n_benches++;
    }
}

double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    for (int i = 0; i < n_benches; i++) {
        if (argc > 1 && !strstr(benches[i].name, argv[1])) continue;
        printf("== %s\n", benches[i].name);
        fflush(stdout);
        benches[i].fn();
    }
    return 0;
}
