/* cli_common.c - model and memory lookup and fatal errors for the `laya`
 * program. */
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

#ifndef LAYA_PREFIX
#define LAYA_PREFIX "/usr/local"
#endif

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
    if (explicit_path) return explicit_path;
    const char *env = getenv("LAYA_MODEL");
    if (env && *env) return env;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            snprintf(buf, sizeof buf, "%s/../models/default.safetensors", exe);
            if (access(buf, R_OK) == 0) return buf;
            snprintf(buf, sizeof buf, "%s/../share/laya/default.safetensors", exe);
            if (access(buf, R_OK) == 0) return buf;
        }
    }
    snprintf(buf, sizeof buf, "%s/share/laya/default.safetensors", LAYA_PREFIX);
    return buf;
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

const char *cli_memory_path(const char *explicit_path) {
    if (explicit_path) return explicit_path;
    const char *env = getenv("LAYA_MEMORY");
    return env && *env ? env : NULL;
}

laya_memory *cli_open_memory(const char *explicit_path) {
    const char *path = cli_memory_path(explicit_path);
    char err[1024] = "";
    laya_memory *m = NULL;
    laya_status st = laya_memory_open(path, &m, err, sizeof err);
    if (st != LAYA_OK) cli_die("cannot open the memory: %s", *err ? err : laya_status_str(st));
    return m;
}

static int count_feedback(void *ctx, const char *k, size_t kl, const char *t, size_t tl, double ign, double acc,
                          int64_t last) {
    (void)k, (void)kl, (void)t, (void)tl, (void)ign, (void)acc, (void)last;
    ++*(int64_t *)ctx;
    return 0;
}

laya_status cli_feedback_entries(laya_memory *m, int64_t *n, char *err, size_t errlen) {
    *n = 0;
    return laya_memory_list_feedback(m, count_feedback, n, err, errlen);
}

/* M.safetensors -> M.intent.safetensors (else M.intent.safetensors appended). */
void cli_intent_path(const char *model_path, char *buf, size_t n) {
    size_t l = strlen(model_path);
    const char *ext = ".safetensors";
    size_t el = strlen(ext);
    if (l > el && !strcmp(model_path + l - el, ext))
        snprintf(buf, n, "%.*s.intent.safetensors", (int)(l - el), model_path);
    else
        snprintf(buf, n, "%s.intent.safetensors", model_path);
}
