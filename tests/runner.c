/* runner.c - runs every registered TEST in its own child process.
 * Usage: laya_tests [substring]   (only tests whose name contains it)
 * LAYA_TEST_NOFORK=1 runs in-process (for gdb). Exit status 0 iff none failed. */
#include "test.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { MAX_TESTS = 2048 };
static struct { const char *name, *file; test_fn fn; } tests[MAX_TESTS];
static int n_tests;
static int failed_here;   /* in the child: did the current test fail */
static int skipped_here;

void test_register(const char *name, const char *file, test_fn fn) {
    if (n_tests < MAX_TESTS) {
        tests[n_tests].name = name;
        tests[n_tests].file = file;
        tests[n_tests].fn = fn;
        n_tests++;
    }
}

void test_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "    %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    failed_here = 1;
}

void test_skip(const char *why) {
    fprintf(stderr, "    skipped: %s\n", why);
    skipped_here = 1;
}

const char *test_fixture(const char *name) {
    static char buf[4096];
    const char *dir = getenv("LAYA_FIXTURES");
    snprintf(buf, sizeof buf, "%s/%s", dir ? dir : "tests/fixtures", name);
    return buf;
}

const char *test_tmpdir(void) {
    static char buf[256];
    snprintf(buf, sizeof buf, "/tmp/laya-test-%d-XXXXXX", (int)getpid());
    if (!mkdtemp(buf)) { perror("mkdtemp"); exit(2); }
    return buf;
}

int test_at_once(int n, int (*fn)(const void *arg, char *err, size_t errlen), const void *arg, char *msg,
                 size_t cap) {
    enum { MAX_KIDS = 16 };
    int go[2], out[2], failed = 0;
    pid_t kid[MAX_KIDS];
    if (n > MAX_KIDS) n = MAX_KIDS;
    msg[0] = 0;
    if (pipe(go) != 0 || pipe(out) != 0) {
        snprintf(msg, cap, "pipe failed");
        return n;
    }
    for (int k = 0; k < n; k++) {
        kid[k] = fork();
        if (kid[k] == 0) {
            char b, err[512] = "";
            close(go[1]), close(out[0]);
            (void)!read(go[0], &b, 1); /* EOF: all start together */
            if (fn(arg, err, sizeof err) != 0) {
                (void)!write(out[1], err, strlen(err) + 1);
                _exit(1);
            }
            _exit(0);
        }
    }
    close(go[0]), close(out[1]), close(go[1]);
    ssize_t got = read(out[0], msg, cap - 1);
    msg[got > 0 ? got : 0] = 0;
    close(out[0]);
    for (int k = 0; k < n; k++) {
        int wst = 0;
        if (kid[k] < 0 || waitpid(kid[k], &wst, 0) < 0 || !WIFEXITED(wst) || WEXITSTATUS(wst) != 0) failed++;
    }
    return failed;
}

static int cmp_tests(const void *a, const void *b) {
    const char *fa = ((const __typeof__(tests[0]) *)a)->file, *fb = ((const __typeof__(tests[0]) *)b)->file;
    int c = strcmp(fa, fb);
    return c ? c : strcmp(((const __typeof__(tests[0]) *)a)->name, ((const __typeof__(tests[0]) *)b)->name);
}

int main(int argc, char **argv) {
    const char *filter = argc > 1 ? argv[1] : NULL;
    int nofork = getenv("LAYA_TEST_NOFORK") != NULL;
    int passed = 0, failed = 0, skipped = 0;
    qsort(tests, (size_t)n_tests, sizeof tests[0], cmp_tests);
    for (int i = 0; i < n_tests; i++) {
        if (filter && !strstr(tests[i].name, filter)) continue;
        int ok, skip = 0;
        fflush(stdout);
        if (nofork) {
            failed_here = skipped_here = 0;
            tests[i].fn();
            ok = !failed_here;
            skip = skipped_here;
        } else {
            pid_t pid = fork();
            if (pid == 0) {
                failed_here = skipped_here = 0;
                tests[i].fn();
                fflush(stdout);
                fflush(stderr);
                _exit(failed_here ? 1 : skipped_here ? 3 : 0);
            }
            int st = 0;
            waitpid(pid, &st, 0);
            if (WIFSIGNALED(st)) fprintf(stderr, "    crashed with signal %d\n", WTERMSIG(st));
            ok = WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 3);
            skip = WIFEXITED(st) && WEXITSTATUS(st) == 3;
        }
        printf("%s %s\n", ok ? (skip ? "skip" : "ok  ") : "FAIL", tests[i].name);
        if (ok) passed++; else failed++;
        skipped += skip;
    }
    if (skipped) printf("(%d skipped)\n", skipped);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
