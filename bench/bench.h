/* bench.h - benchmark registration: BENCH(name) { ... } in any bench file;
 * `laya_bench [substring]` runs them in order and each prints its own short
 * table. Benchmarks report; they never assert timings. */
#ifndef LAYA_BENCH_H
#define LAYA_BENCH_H

typedef void (*bench_fn)(void);
void bench_register(const char *name, bench_fn fn);
/* Monotonic seconds. */
double bench_now(void);

#define BENCH(fn)                                                       \
    static void fn(void);                                               \
    __attribute__((constructor)) static void fn##_register(void) {      \
        bench_register(#fn, fn);                                        \
    }                                                                   \
    static void fn(void)

#endif
