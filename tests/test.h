/* test.h - the unit-test harness: TEST(name) { CHECK(...); } in any
 * tests/test_*.c registers itself; tests/runner.c runs each in a child
 * process (a crash fails that test only) and ends with "N passed, N failed".
 * SKIP("why") marks a test skipped (e.g. no GPU) - counted as passed and
 * listed as skipped. */
#ifndef LAYA_TEST_H
#define LAYA_TEST_H

#include <math.h>
#include <stdio.h>

typedef void (*test_fn)(void);
void test_register(const char *name, const char *file, test_fn fn);
void test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void test_skip(const char *why);
/* Path of a file under tests/fixtures (static buffer). */
const char *test_fixture(const char *name);
/* A fresh temporary directory for this test (static buffer). */
const char *test_tmpdir(void);
/* Starts n (at most 16) child processes that call fn(arg, err, errlen) at
 * the same moment (each waits on one pipe closed when all are forked); fn
 * returns 0 on success, else fills err. Returns how many failed; msg (cap
 * bytes) gets the first failure's err. For races between processes. */
int test_at_once(int n, int (*fn)(const void *arg, char *err, size_t errlen), const void *arg, char *msg,
                 size_t cap);

#define TEST(fn)                                                        \
    static void fn(void);                                               \
    __attribute__((constructor)) static void fn##_register(void) {      \
        test_register(#fn, __FILE__, fn);                               \
    }                                                                   \
    static void fn(void)

#define CHECK(cond)                                                     \
    do {                                                                \
        if (!(cond)) { test_fail(__FILE__, __LINE__, "%s", #cond); return; } \
    } while (0)

#define CHECKF(cond, ...)                                               \
    do {                                                                \
        if (!(cond)) { test_fail(__FILE__, __LINE__, __VA_ARGS__); return; } \
    } while (0)

/* |got - want| <= atol + rtol*|want| */
#define CHECK_NEAR(got, want, atol, rtol)                               \
    do {                                                                \
        double g_ = (got), w_ = (want);                                 \
        if (!(fabs(g_ - w_) <= (atol) + (rtol) * fabs(w_))) {           \
            test_fail(__FILE__, __LINE__, "%s = %.9g, want %.9g", #got, g_, w_); \
            return;                                                     \
        }                                                               \
    } while (0)

#define SKIP(why) do { test_skip(why); return; } while (0)

#endif
