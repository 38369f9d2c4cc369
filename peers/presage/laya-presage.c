/* laya-presage.c - Presage (Debian libpresage) behind the JSON-lines
 * suggestion protocol of shared/EVAL.md, so `laya eval --engine` measures it
 * with the same harness and the same simulated typist as Laya.
 *
 *   laya-presage [--static] [--home DIR] [--config FILE]
 *
 * Default: Presage's shipped configuration (/etc/presage.xml): its English
 * n-gram model plus a user n-gram model that learns online as text is typed,
 * a recency predictor and abbreviation expansion. The user model lives under
 * $HOME/.presage; HOME is a fresh temporary directory for every process
 * (removed at exit) unless --home DIR is given, so runs never share learning.
 * --static: only the shipped n-gram model; nothing learns.
 *
 * Presage predicts words (completions of the partial word, or next words)
 * in lower case. A suggestion here is the text to insert at the cursor: the
 * rest of the partial word plus a space, cased like what was typed (capital
 * first letter if the partial word has one or a sentence starts, all capitals
 * if the partial word is; the pronoun "i" as "I"), as a front end would.
 * "us" is the time presage_predict() took, in microseconds.
 * One Presage instance serves every session: the harness uses one at a time.
 * {"op":"commit"} is acknowledged: with online learning Presage already
 * learns from the context stream, and the static setup must not learn. */
#include <ctype.h>
#include <errno.h>
#include <ftw.h>
#include <sys/stat.h>
#include <jansson.h>
#include <presage.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { TAIL = 4096, MAX_K = 16 };

/* Presage's default token separators and blanks (ContextTracker). */
static const char SEPARATORS[] = "`~!@#$%^&*()_+=\\|]}[{'\";:/?.>,<-";

typedef struct {
    char *ctx;        /* the context passed to Presage (a tail of the request's) */
    size_t cap;
} past;

static const char *past_cb(void *arg) { return ((past *)arg)->ctx; }
static const char *future_cb(void *arg) { (void)arg; return ""; }

static int is_word_byte(unsigned char c) {
    return c >= 0x80 || (!isspace(c) && !strchr(SEPARATORS, c));
}

static char tmp_home[4096];

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static void cleanup(void) {
    if (tmp_home[0]) nftw(tmp_home, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void reply(json_t *j) {
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (!s) {
        puts("{\"error\":\"out of memory\"}");
    } else {
        puts(s);
        free(s);
    }
    fflush(stdout);
}

static void reply_error(const char *msg) { reply(json_pack("{s:s}", "error", msg)); }

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* True when the next word starts a sentence: nothing before it, or a line
 * break, or . ! ? then blanks. */
static int sentence_start(const char *s, size_t n) {
    size_t i = n;
    int blank = 0;
    while (i > 0 && (s[i - 1] == ' ' || s[i - 1] == '\t')) i--, blank = 1;
    if (i == 0 || s[i - 1] == '\n') return 1;
    return blank && strchr(".!?", s[i - 1]);
}

static void suggest(presage_t p, past *ps, const char *ctx, size_t n, int k) {
    /* Presage's change detector looks at an 80-character window: a tail of
     * TAIL bytes starting at a word boundary is the same to it and keeps each
     * request O(1) in the length of the text. */
    size_t start = n > TAIL ? n - TAIL : 0;
    while (start > 0 && start < n && is_word_byte((unsigned char)ctx[start - 1])) start++;
    if (n - start + 1 > ps->cap) {
        ps->cap = n - start + 1;
        char *c = realloc(ps->ctx, ps->cap);
        if (!c) { reply_error("out of memory"); return; }
        ps->ctx = c;
    }
    memcpy(ps->ctx, ctx + start, n - start);
    ps->ctx[n - start] = 0;

    size_t w = n;   /* the partial word is ctx[w..n) */
    while (w > 0 && is_word_byte((unsigned char)ctx[w - 1])) w--;
    const char *part = ctx + w;
    size_t plen = n - w;
    int cap_first = plen ? isupper((unsigned char)part[0]) : sentence_start(ctx, w);
    int all_caps = plen > 1;
    for (size_t i = 0; i < plen && all_caps; i++)
        if (islower((unsigned char)part[i])) all_caps = 0;

    char kbuf[8];
    snprintf(kbuf, sizeof kbuf, "%d", k);
    presage_config_set(p, "Presage.Selector.SUGGESTIONS", kbuf);
    char **pred = NULL;
    double t0 = now_us();
    presage_error_code_t rc = presage_predict(p, &pred);
    double us = now_us() - t0;
    if (rc != PRESAGE_OK) {
        char m[64];
        snprintf(m, sizeof m, "presage_predict failed with code %d", (int)rc);
        reply_error(m);
        return;
    }
    json_t *out = json_array();
    for (size_t i = 0; pred && pred[i] && json_array_size(out) < (size_t)k; i++) {
        const char *word = pred[i];
        size_t wl = strlen(word);
        if (wl < plen || strncasecmp(word, part, plen)) continue;
        char *ins = malloc(wl - plen + 2);
        if (!ins) break;
        memcpy(ins, word + plen, wl - plen);
        ins[wl - plen] = ' ';
        ins[wl - plen + 1] = 0;
        for (size_t j = 0; j < wl - plen; j++)
            if (all_caps || (j == 0 && plen == 0 && (cap_first || (wl == 1 && word[0] == 'i'))))
                ins[j] = (char)toupper((unsigned char)ins[j]);
        int dup = wl == plen;   /* nothing left to insert but a space */
        for (size_t j = 0; j < json_array_size(out) && !dup; j++)
            dup = !strcmp(json_string_value(json_array_get(out, j)), ins);
        json_t *s = dup ? NULL : json_string(ins);  /* NULL for invalid UTF-8 too */
        if (s) json_array_append_new(out, s);
        free(ins);
    }
    presage_free_string_array(pred);
    reply(json_pack("{s:o,s:f}", "suggestions", out, "us", us));
}

static void usage(FILE *f) {
    fprintf(f, "usage: laya-presage [--static] [--home DIR] [--config FILE]\n"
               "JSON lines on stdin/stdout (shared/EVAL.md) over Presage.\n");
}

int main(int argc, char **argv) {
    int is_static = 0;
    const char *home = NULL, *config = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--static")) is_static = 1;
        else if (!strcmp(argv[i], "--home") && i + 1 < argc) home = argv[++i];
        else if (!strcmp(argv[i], "--config") && i + 1 < argc) config = argv[++i];
        else if (!strcmp(argv[i], "--help")) { usage(stdout); return 0; }
        else { usage(stderr); return 2; }
    }
    if (!home) {
        const char *t = getenv("TMPDIR");
        snprintf(tmp_home, sizeof tmp_home, "%s/laya-presage-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(tmp_home)) {
            fprintf(stderr, "laya-presage: cannot create a temporary HOME: %s\n", strerror(errno));
            return 1;
        }
        atexit(cleanup);
        home = tmp_home;
    }
    setenv("HOME", home, 1);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/.presage", home);
    mkdir(dir, 0700);

    past ps = {calloc(1, 1), 1};  /* Presage may read the stream while starting */
    presage_t p = NULL;
    if (!ps.ctx) return 1;
    presage_error_code_t rc = config ? presage_new_with_config(past_cb, &ps, future_cb, NULL, config, &p)
                                     : presage_new(past_cb, &ps, future_cb, NULL, &p);
    if (rc != PRESAGE_OK) {
        fprintf(stderr, "laya-presage: presage_new failed (code %d); is libpresage-data installed?\n",
                (int)rc);
        return 1;
    }
    if (is_static) {
        if (presage_config_set(p, "Presage.PredictorRegistry.PREDICTORS",
                               "DefaultSmoothedNgramPredictor") != PRESAGE_OK ||
            presage_config_set(p, "Presage.ContextTracker.ONLINE_LEARNING", "no") != PRESAGE_OK) {
            fprintf(stderr, "laya-presage: cannot select the static configuration\n");
            return 1;
        }
    }
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    while ((len = getline(&line, &lcap, stdin)) >= 0) {
        json_error_t je;
        json_t *req = json_loadb(line, (size_t)len, 0, &je);
        const char *op = json_string_value(json_object_get(req, "op"));
        if (!req || !op) {
            reply_error(req ? "request has no \"op\"" : "malformed JSON");
        } else if (!strcmp(op, "suggest")) {
            json_t *c = json_object_get(req, "context"), *kk = json_object_get(req, "k");
            int k = kk ? (int)json_integer_value(kk) : 3;
            if (!json_is_string(c) || (kk && !json_is_integer(kk)) || k < 1 || k > MAX_K)
                reply_error("suggest needs \"context\" (string) and \"k\" in 1..16");
            else
                suggest(p, &ps, json_string_value(c), json_string_length(c), k);
        } else if (!strcmp(op, "reset")) {
            ps.ctx[0] = 0;
            reply(json_pack("{s:b}", "ok", 1));
        } else if (!strcmp(op, "commit")) {
            reply(json_pack("{s:b}", "ok", 1));
        } else {
            reply_error("unsupported op");
        }
        json_decref(req);
    }
    free(line);
    free(ps.ctx);
    presage_free(p);
    return 0;
}
