/* front.c - the lookups every program over the library shares (front.h). */
#include "engine/front.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef LAYA_PREFIX
#define LAYA_PREFIX "/usr/local"
#endif

const char *front_model_path(const char *explicit_path, char *buf, size_t n) {
    if (explicit_path) return explicit_path;
    const char *env = getenv("LAYA_MODEL");
    if (env && *env) return env;
    char exe[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (l > 0) {
        exe[l] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            snprintf(buf, n, "%s/../models/default.safetensors", exe);
            if (access(buf, R_OK) == 0) return buf;
            snprintf(buf, n, "%s/../share/laya/default.safetensors", exe);
            if (access(buf, R_OK) == 0) return buf;
        }
    }
    snprintf(buf, n, "%s/share/laya/default.safetensors", LAYA_PREFIX);
    return buf;
}

void front_intent_path(const char *model_path, char *buf, size_t n) {
    size_t l = strlen(model_path);
    const char *ext = ".safetensors";
    size_t el = strlen(ext);
    if (l > el && !strcmp(model_path + l - el, ext))
        snprintf(buf, n, "%.*s.intent.safetensors", (int)(l - el), model_path);
    else
        snprintf(buf, n, "%s.intent.safetensors", model_path);
}

const char *front_memory_path(const char *explicit_path) {
    if (explicit_path) return explicit_path;
    const char *env = getenv("LAYA_MEMORY");
    return env && *env ? env : NULL;
}

static int count_feedback(void *ctx, const char *k, size_t kl, const char *t, size_t tl, double ign, double acc,
                          int64_t last) {
    (void)k, (void)kl, (void)t, (void)tl, (void)ign, (void)acc, (void)last;
    ++*(int64_t *)ctx;
    return 0;
}

laya_status front_feedback_entries(laya_memory *m, int64_t *n, char *err, size_t errlen) {
    *n = 0;
    return laya_memory_list_feedback(m, count_feedback, n, err, errlen);
}
