/* settings.c - the settings file's reader (format and contract in settings.h). */
#include "util/settings.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/err.h"
#include "util/file.h"

static const char *const ACCEPT_NAMES[] = {"Tab", "Right", "End"};

void settings_defaults(settings_values *v) {
    v->enabled = 1;
    v->count = SETTINGS_DEFAULT_COUNT;
    v->accept = SETTINGS_ACCEPT_TAB;
}

const char *settings_accept_name(settings_accept a) {
    return (unsigned)a < sizeof ACCEPT_NAMES / sizeof *ACCEPT_NAMES ? ACCEPT_NAMES[a] : "Tab";
}

int settings_accept_parse(const char *name, settings_accept *out) {
    for (int i = 0; i < (int)(sizeof ACCEPT_NAMES / sizeof *ACCEPT_NAMES); i++)
        if (!strcmp(name, ACCEPT_NAMES[i])) {
            *out = (settings_accept)i;
            return 1;
        }
    return 0;
}

laya_status settings_default_path(char *buf, size_t n, char *err, size_t errlen) {
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    int w;
    /* The XDG base-directory spec says to ignore a relative value. */
    if (xdg && xdg[0] == '/') w = snprintf(buf, n, "%s/laya/settings.ini", xdg);
    else if (home && home[0] == '/') w = snprintf(buf, n, "%s/.config/laya/settings.ini", home);
    else
        return err_set(err, errlen, LAYA_ERR_ARG,
                       "no place for the settings file: neither $XDG_CONFIG_HOME nor $HOME is an absolute path");
    if (w < 0 || (size_t)w >= n) return err_set(err, errlen, LAYA_ERR_LIMIT, "the settings file's path is too long");
    return LAYA_OK;
}

/* s[0..*n) without leading and trailing spaces and tabs. */
static const char *trim(const char *s, size_t *n) {
    while (*n && (*s == ' ' || *s == '\t')) s++, (*n)--;
    while (*n && (s[*n - 1] == ' ' || s[*n - 1] == '\t' || s[*n - 1] == '\r')) (*n)--;
    return s;
}

static int is(const char *s, size_t n, const char *word) {
    return strlen(word) == n && !memcmp(s, word, n);
}

/* One key=value of the [suggestions] group; 0 if the value is refused. */
static int set_key(settings_values *v, const char *k, size_t kn, const char *val, size_t vn) {
    char buf[16];
    if (vn >= sizeof buf) return !(is(k, kn, "enabled") || is(k, kn, "count") || is(k, kn, "accept_key"));
    memcpy(buf, val, vn);
    buf[vn] = 0;
    if (is(k, kn, "enabled")) {
        /* GKeyFile's booleans. */
        if (!strcmp(buf, "true") || !strcmp(buf, "1")) v->enabled = 1;
        else if (!strcmp(buf, "false") || !strcmp(buf, "0")) v->enabled = 0;
        else return 0;
    } else if (is(k, kn, "count")) {
        char *end;
        errno = 0;
        long c = strtol(buf, &end, 10);
        if (errno || end == buf || *end || c < SETTINGS_MIN_COUNT || c > SETTINGS_MAX_COUNT) return 0;
        v->count = (int)c;
    } else if (is(k, kn, "accept_key")) {
        return settings_accept_parse(buf, &v->accept);
    }
    return 1;   /* a key we do not know: a newer window's, ignored */
}

laya_status settings_parse(const char *text, size_t len, settings_values *v, char *err, size_t errlen) {
    settings_defaults(v);
    laya_status st = LAYA_OK;
    int in_group = 0, line = 0;
    for (size_t at = 0; at < len;) {
        const char *eol = memchr(text + at, '\n', len - at);
        size_t n = eol ? (size_t)(eol - (text + at)) : len - at;
        const char *s = text + at;
        at += n + (eol != NULL);
        line++;
        s = trim(s, &n);
        if (!n || s[0] == '#') continue;
        if (s[0] == '[') {
            in_group = n >= 2 && s[n - 1] == ']' && is(s + 1, n - 2, "suggestions");
            continue;
        }
        const char *eq = memchr(s, '=', n);
        if (!in_group || !eq) continue;
        size_t kn = (size_t)(eq - s), vn = n - kn - 1;
        const char *k = trim(s, &kn), *val = trim(eq + 1, &vn);
        if (memchr(k, '[', kn)) continue;   /* a localized key */
        if (!set_key(v, k, kn, val, vn) && st == LAYA_OK) {
            int shown = vn > 32 ? 32 : (int)vn;
            st = err_set(err, errlen, LAYA_ERR_FORMAT, "line %d: %.*s=%.*s%s is refused (%s) and left as it was",
                         line, (int)(kn > 32 ? 32 : kn), k, shown, val, vn > 32 ? "..." : "",
                         is(k, kn, "count")     ? "count is a whole number in 1..9"
                         : is(k, kn, "enabled") ? "enabled is true or false"
                                                : "accept_key is Tab, Right or End");
        }
    }
    return st;
}

laya_status settings_load(const char *path, settings_values *v, char *err, size_t errlen) {
    settings_defaults(v);
    struct stat sb;
    if (stat(path, &sb) != 0 && errno == ENOENT) return LAYA_OK;
    int fd = -1;
    size_t size = 0;
    laya_status st = file_open_regular(path, "settings", &fd, &size, err, errlen);
    if (st != LAYA_OK) return st;
    if (size > SETTINGS_MAX_FILE) {
        close(fd);
        return err_set(err, errlen, LAYA_ERR_LIMIT, "%s is %zu bytes, more than a settings file holds (%d); "
                       "the defaults are used (delete it, or save from laya settings)", path, size, SETTINGS_MAX_FILE);
    }
    char *buf = malloc(size + 1);
    size_t got = 0;
    while (buf && got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (!buf) return err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory reading %s", path);
    char why[192] = "";
    st = settings_parse(buf, got, v, why, sizeof why);
    free(buf);
    if (st != LAYA_OK) err_set(err, errlen, st, "%s: %s", path, why);
    return st;
}

/* The file's identity now; 0 when it is not there. */
static int identity(const char *path, uint64_t *dev, uint64_t *ino, uint64_t *size, int64_t *mtime_ns) {
    struct stat sb;
    if (stat(path, &sb) != 0) return 0;
    *dev = (uint64_t)sb.st_dev, *ino = (uint64_t)sb.st_ino, *size = (uint64_t)sb.st_size;
    *mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
    return 1;
}

static laya_status watch_read(settings_watch *w) {
    w->err[0] = 0;
    w->exists = identity(w->path, &w->dev, &w->ino, &w->size, &w->mtime_ns);
    return settings_load(w->path, &w->v, w->err, sizeof w->err);
}

laya_status settings_watch_init(settings_watch *w, const char *path) {
    memset(w, 0, sizeof *w);
    settings_defaults(&w->v);
    laya_status st = LAYA_OK;
    if (path) {
        if (strlen(path) >= sizeof w->path)
            return err_set(w->err, sizeof w->err, LAYA_ERR_LIMIT, "the settings file's path is too long");
        strcpy(w->path, path);
    } else if ((st = settings_default_path(w->path, sizeof w->path, w->err, sizeof w->err)) != LAYA_OK) {
        w->path[0] = 0;
        return st;
    }
    return watch_read(w);
}

int settings_watch_refresh(settings_watch *w) {
    if (!w->path[0]) return 0;
    uint64_t dev = 0, ino = 0, size = 0;
    int64_t mtime = 0;
    int exists = identity(w->path, &dev, &ino, &size, &mtime);
    if (exists == w->exists &&
        (!exists || (dev == w->dev && ino == w->ino && size == w->size && mtime == w->mtime_ns)))
        return 0;
    watch_read(w);
    return 1;
}

static int executable(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode) && access(p, X_OK) == 0;
}

laya_status settings_program(const char *prefix, char *buf, size_t n, char *err, size_t errlen) {
    const char *env = getenv("LAYA_SETTINGS_PROGRAM");
    if (env && *env) {
        if (executable(env) && snprintf(buf, n, "%s", env) < (int)n) return LAYA_OK;
        return err_set(err, errlen, LAYA_ERR_IO, "$LAYA_SETTINGS_PROGRAM (%s) is not an executable file", env);
    }
    char exe[PATH_MAX] = "";
    ssize_t r = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = r > 0 ? (exe[r] = 0, strrchr(exe, '/')) : NULL;
    if (slash) *slash = 0;
    char tried[3][PATH_MAX + 32];
    int k = 0;
    if (slash) {
        snprintf(tried[k++], sizeof tried[0], "%s/laya-settings", exe);
        snprintf(tried[k++], sizeof tried[0], "%s/../libexec/laya-settings", exe);
    }
    snprintf(tried[k++], sizeof tried[0], "%s/libexec/laya-settings", prefix);
    for (int i = 0; i < k; i++)
        if (executable(tried[i])) {
            if (snprintf(buf, n, "%s", tried[i]) >= (int)n) break;
            return LAYA_OK;
        }
    return err_set(err, errlen, LAYA_ERR_IO,
                   "the settings window (laya-settings) is not installed: looked for %s%s%s%s%s "
                   "(hint: it needs GTK 3; make settings, then make install-settings)",
                   tried[0], k > 1 ? ", " : "", k > 1 ? tried[1] : "", k > 2 ? ", " : "", k > 2 ? tried[2] : "");
}
