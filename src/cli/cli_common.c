/* cli_common.c - fatal errors, options and model and memory loading for the
 * `laya` program (the lookups are the library's: engine/front.h). */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/front.h"

_Noreturn void cli_die(const char *fmt, ...) {
    va_list ap;
    fputs("laya: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

long cli_int(const char *opt, const char *v, long lo, long hi) {
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || end == v || *end || x < lo || x > hi)
        cli_die("%s expects a whole number in %ld..%ld, got '%s'", opt, lo, hi, v ? v : "(nothing)");
    return x;
}

double cli_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cli_put_escaped(FILE *f, const char *s, size_t n, int quote) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\' || (quote && c == quote)) fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c < 0x20 || c == 0x7F) fprintf(f, "\\x%02x", c);
        else fputc(c, f);
    }
}

const char *cli_model_path(const char *explicit_path) {
    static char buf[PATH_MAX + 64];
    return front_model_path(explicit_path, buf, sizeof buf);
}

laya_model *cli_load_model_opts(const char *explicit_path, int allow_unsigned) {
    const char *path = cli_model_path(explicit_path);
    char err[1024] = "";
    laya_model *m = NULL;
    laya_load_opts o = {.flags = allow_unsigned ? LAYA_LOAD_ALLOW_UNSIGNED : 0};
    laya_status st = laya_model_load_opts(path, &o, &m, err, sizeof err);
    if (st != LAYA_OK)
        cli_die("cannot load model '%s': %s%s%s%s", path, laya_status_str(st), *err ? ": " : "", err,
                st == LAYA_ERR_SIGNATURE ? "" : "\n  hint: pass --model PATH or set LAYA_MODEL");
    return m;
}

laya_model *cli_load_model(const char *explicit_path) { return cli_load_model_opts(explicit_path, 0); }

int cli_search_opt(int argc, char **argv, int i, laya_search_opts *o) {
    static const struct {
        const char *name;
        size_t field;   /* offsetof the int in laya_search_opts */
        long hi;
    } opts[] = {{"--beam", offsetof(laya_search_opts, beam), LAYA_MAX_BEAM},
                {"--max-tokens", offsetof(laya_search_opts, max_tokens), LAYA_MAX_TOKENS},
                {"--max-words", offsetof(laya_search_opts, max_words), LAYA_MAX_WORDS},
                {"--max-steps", offsetof(laya_search_opts, max_steps), LAYA_MAX_STEPS},
                {"--cjk-steps", offsetof(laya_search_opts, cjk_steps), LAYA_MAX_STEPS}};
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    for (size_t j = 0; j < sizeof opts / sizeof opts[0]; j++)
        if (!strcmp(a, opts[j].name)) {
            *(int *)(void *)((char *)o + opts[j].field) = (int)cli_int(a, v, 1, opts[j].hi);
            return 2;
        }
    static const struct {
        const char *name, *what;
        size_t field;   /* offsetof the float in laya_search_opts */
        double hi;
    } fopts[] = {{"--min-prob", "probability", offsetof(laya_search_opts, min_prob), 1},
                 {"--prior-weight", "weight", offsetof(laya_search_opts, prior_weight), 1},
                 {"--cache-weight", "weight", offsetof(laya_search_opts, cache_weight), 0.9},
                 {"--cjk-cache-weight", "weight", offsetof(laya_search_opts, cjk_cache_weight), 0.9}};
    for (size_t j = 0; j < sizeof fopts / sizeof fopts[0]; j++) {
        if (strcmp(a, fopts[j].name)) continue;
        char *end;
        double x = v ? strtod(v, &end) : -1;
        if (!v || end == v || *end || !(x >= 0 && x <= fopts[j].hi))
            cli_die("%s expects a %s in 0..%g, got '%s'", a, fopts[j].what, fopts[j].hi, v ? v : "(nothing)");
        *(float *)(void *)((char *)o + fopts[j].field) = (float)x;
        return 2;
    }
    return 0;
}

laya_memory *cli_open_memory(const char *explicit_path) {
    const char *path = front_memory_path(explicit_path);
    char err[1024] = "";
    laya_memory *m = NULL;
    laya_status st = laya_memory_open(path, &m, err, sizeof err);
    if (st != LAYA_OK) cli_die("cannot open the memory: %s", *err ? err : laya_status_str(st));
    return m;
}
