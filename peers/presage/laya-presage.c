/* laya-presage.c - Presage (Debian libpresage) behind the JSON-lines
 * suggestion protocol of shared/EVAL.md, so `laya eval --engine` measures it
 * with the same harness and the same simulated typist as Laya.
 *
 *   laya-presage [--static] [--raw] [--home DIR] [--config FILE]
 *
 * Default: Presage's shipped configuration (/etc/presage.xml): its English
 * n-gram model plus a user n-gram model that learns online as text is typed,
 * a recency predictor and abbreviation expansion. The user model lives in
 * $HOME/.presage/lm.db (SQLite); HOME is a fresh temporary directory for
 * every process (removed at exit) unless --home DIR is given, so runs never
 * share learning. --static: only the shipped n-gram model; nothing learns.
 *
 * Presage predicts words (completions of the partial word, or next words)
 * in lower case. A suggestion here is the text to insert at the cursor: the
 * rest of the partial word plus a space, cased like what was typed (capital
 * first letter if the partial word has one or a sentence starts, all capitals
 * if the partial word is; the pronoun "i" as "I"), as a front end would.
 * "us" is the time presage_predict() took, in microseconds.
 * One Presage instance serves every session: the harness uses one at a time.
 * {"op":"commit"} is acknowledged: with online learning Presage already
 * learns from the context stream, and the static setup must not learn.
 *
 * UTF-8 and Presage's learning. Presage 0.9.1 works on bytes with two
 * views of them that disagree: its tokenizers take every byte that is not
 * an ASCII blank or separator as part of a word, while its context change
 * detector (ContextChangeDetector) counts as word characters only ASCII
 * letters and digits and the bytes 0xC0-0xFF (ISO 8859-1 letters).
 * UTF-8 continuation bytes (0x80-0xBF) are neither. So a word that ends
 * in a multi-byte character ("colors”", "café") followed by a blank or a
 * separator is never seen to end: it is not learned as a unigram, yet the
 * next word's learning adds the bigram (and trigram) that starts with it,
 * taken from the past stream. The bigram's count then exceeds its prefix's,
 * and predicting after that word fails Presage's own sanity check,
 * `SmoothedNgramPredictor::predict: Assertion numerator <= denominator`,
 * which aborts the process (tests/cli/presage.sh shows it with --raw). The
 * adapter therefore feeds Presage its context with every continuation byte
 * b as b + 0x40 (0xC0-0xFF: a word character to both views, so a word
 * ending in one is learned like any other) and the other control bytes
 * (0x01-0x1F but blanks, 0x7F: the same disagreement) as spaces; the
 * words Presage returns are mapped back to UTF-8. The mapping is one to
 * one on characters, so tokens, counts and matching are those of the text
 * itself; Presage's shipped English database holds only ASCII words, so
 * the static model sees no difference. --raw feeds the UTF-8 unchanged
 * (Presage's own behaviour, abort included).
 *
 * Surviving an abort anyway. Presage runs in a worker process; this one
 * speaks the protocol. A request that kills the worker (an assertion or any
 * other crash) gets an empty suggestion list, and the next request starts a
 * new worker on the same HOME, so the learned database carries on (each
 * learning step is its own SQLite transaction). The new worker's first
 * prediction runs with learning off, so the text already learned is not
 * learned twice; what was typed between the last answered request and the
 * fatal one is not learned. At exit one line on stderr counts the suggest
 * requests, those whose context was re-encoded and those lost to a worker
 * that died: "laya-presage: N suggest requests, R re-encoded, A lost to a
 * Presage abort". */
#include <ctype.h>
#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <presage.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { TAIL = 4096, MAX_K = 16, MAX_WORD = 1 << 20 };

/* Presage's default token separators (ContextTracker, charsets.h). */
static const char SEPARATORS[] = "`~!@#$%^&*()_+=\\|]}[{'\";:/?.>,<-";

typedef struct {
    int is_static, raw;
    const char *config;
} opts;

/* A byte of a word as Presage sees what is fed to it: not an ASCII blank,
 * separator or control byte (controls are fed as spaces). */
static int is_word_byte(unsigned char c) {
    return c >= 0x80 || (c > 0x20 && c != 0x7F && !strchr(SEPARATORS, c));
}

/* The bytes fed for ctx[0..n): a tail of at most TAIL bytes that starts at
 * a word boundary (Presage's change detector looks at an 80-character
 * window, so the tail is the same to it and keeps each request O(1) in the
 * length of the text). Returns its start. */
static size_t tail_start(const char *ctx, size_t n) {
    size_t start = n > TAIL ? n - TAIL : 0;
    while (start > 0 && start < n && is_word_byte((unsigned char)ctx[start - 1])) start++;
    return start;
}

/* Writes src[0..n) as fed to Presage into dst (n bytes; see the top of the
 * file). Returns 1 if any byte differs. */
static int feed_encode(char *dst, const char *src, size_t n) {
    int changed = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)src[i];
        if (c >= 0x80 && c < 0xC0) c += 0x40, changed = 1;
        else if ((c < 0x20 && !strchr(" \t\n\v\f\r", c)) || c == 0x7F) c = ' ', changed = 1;
        dst[i] = (char)c;
    }
    return changed;
}

/* The UTF-8 of a word Presage returned (fed encoded): a lead byte 0xC2-0xF4
 * is followed by 1-3 shifted continuation bytes. Returns a malloc'd string,
 * or NULL when w is not such a word (it cannot come from the fed text). */
static char *feed_decode(const char *w) {
    size_t n = strlen(w);
    char *out = malloc(n + 1);
    if (!out) return NULL;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)w[i];
        size_t more = c < 0x80 ? 0 : c >= 0xC2 && c < 0xE0 ? 1 : c >= 0xE0 && c < 0xF0 ? 2 : c >= 0xF0 && c < 0xF5 ? 3 : 4;
        if (more == 4 || i + more >= n) return free(out), NULL;
        out[i] = (char)c;
        for (size_t j = 1; j <= more; j++) {
            unsigned char d = (unsigned char)w[i + j];
            if (d < 0xC0) return free(out), NULL;
            out[i + j] = (char)(d - 0x40);
        }
        i += more + 1;
    }
    out[n] = 0;
    return out;
}

/* ---- the worker: Presage in a process of its own ---------------------------
 * Frames on its pipes, native byte order (both ends are this program):
 *   start:   worker -> u32 status (0: ready, else presage_new's code)
 *   request: u32 k, u32 len, len bytes (the fed past stream)
 *   reply:   u32 status (0 or presage_predict's code), double us, u32 count,
 *            then count times u32 len, len bytes (Presage's words) */

static int read_full(int fd, void *p, size_t n) {
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p = (char *)p + r, n -= (size_t)r;
    }
    return 0;
}

static int write_full(int fd, const void *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p = (const char *)p + w, n -= (size_t)w;
    }
    return 0;
}

static int write_u32(int fd, uint32_t v) { return write_full(fd, &v, sizeof v); }

typedef struct {
    char *ctx;        /* the past stream Presage reads (NUL-terminated) */
} past;

static const char *past_cb(void *arg) { return ((past *)arg)->ctx; }
static const char *future_cb(void *arg) { (void)arg; return ""; }

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Serves requests on in/out until in closes. resumed: a worker started
 * after one died, whose first prediction must not learn (see the top). */
static int worker(int in, int out, const opts *o, int resumed) {
    past ps = {calloc(1, 1)};  /* Presage may read the stream while starting */
    presage_t p = NULL;
    if (!ps.ctx) return 1;
    presage_error_code_t rc = o->config ? presage_new_with_config(past_cb, &ps, future_cb, NULL, o->config, &p)
                                        : presage_new(past_cb, &ps, future_cb, NULL, &p);
    if (rc == PRESAGE_OK && o->is_static &&
        (presage_config_set(p, "Presage.PredictorRegistry.PREDICTORS", "DefaultSmoothedNgramPredictor") != PRESAGE_OK ||
         presage_config_set(p, "Presage.ContextTracker.ONLINE_LEARNING", "no") != PRESAGE_OK))
        rc = PRESAGE_ERROR;
    if (write_u32(out, (uint32_t)rc) || rc != PRESAGE_OK) return 1;
    /* after a restart: the first prediction with learning off, then the
     * configured value again */
    char *learning = NULL;
    int quiet = resumed && presage_config(p, "Presage.ContextTracker.ONLINE_LEARNING", &learning) == PRESAGE_OK;
    uint32_t k, len;
    while (!read_full(in, &k, sizeof k) && !read_full(in, &len, sizeof len)) {
        char *c = realloc(ps.ctx, (size_t)len + 1);
        if (!c || read_full(in, c, len)) return 1;
        ps.ctx = c;
        ps.ctx[len] = 0;
        char kbuf[16];
        snprintf(kbuf, sizeof kbuf, "%u", k);
        presage_config_set(p, "Presage.Selector.SUGGESTIONS", kbuf);
        if (quiet) presage_config_set(p, "Presage.ContextTracker.ONLINE_LEARNING", "no");
        char **pred = NULL;
        double t0 = now_us();
        rc = presage_predict(p, &pred);
        double us = now_us() - t0;
        if (quiet) presage_config_set(p, "Presage.ContextTracker.ONLINE_LEARNING", learning), quiet = 0;
        uint32_t count = 0;
        while (rc == PRESAGE_OK && pred && pred[count]) count++;
        if (write_u32(out, (uint32_t)rc) || write_full(out, &us, sizeof us) || write_u32(out, count)) return 1;
        for (uint32_t i = 0; i < count; i++) {
            uint32_t wl = (uint32_t)strlen(pred[i]);
            if (write_u32(out, wl) || write_full(out, pred[i], wl)) return 1;
        }
        presage_free_string_array(pred);
    }
    if (learning) presage_free_string(learning);
    presage_free(p);
    free(ps.ctx);
    return 0;
}

/* ---- the front: protocol, feeding, casing, restarts ----------------------- */

typedef struct {
    pid_t pid;       /* -1: none running */
    int to, from;    /* pipe ends to and from the worker */
    int started;     /* workers started so far */
    size_t suggests, recoded, lost;
} front;

static char tmp_home[4096];

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static void cleanup(void) {
    if (tmp_home[0]) nftw(tmp_home, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Reaps a worker that stopped answering (closing its pipes ends one that
 * is still running); says how it ended on stderr. */
static void worker_gone(front *f) {
    close(f->to), close(f->from);
    int st = 0;
    if (waitpid(f->pid, &st, 0) == f->pid) {
        if (WIFSIGNALED(st))
            fprintf(stderr, "laya-presage: Presage was killed by signal %d (%s); restarting it on its learned database\n",
                    WTERMSIG(st), strsignal(WTERMSIG(st)));
        else
            fprintf(stderr, "laya-presage: Presage's worker exited with status %d; restarting it\n",
                    WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    }
    f->pid = -1;
}

/* Starts a worker; 0 when it is ready, else -1 with a message. */
static int worker_start(front *f, const opts *o) {
    int a[2], b[2];
    if (pipe(a)) return perror("laya-presage: pipe"), -1;
    if (pipe(b)) return close(a[0]), close(a[1]), perror("laya-presage: pipe"), -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return close(a[0]), close(a[1]), close(b[0]), close(b[1]), perror("laya-presage: fork"), -1;
    if (pid == 0) {
        close(a[1]), close(b[0]);
        signal(SIGPIPE, SIG_DFL);
        _exit(worker(a[0], b[1], o, f->started > 0));
    }
    close(a[0]), close(b[1]);
    f->pid = pid, f->to = a[1], f->from = b[0];
    uint32_t status = 0;
    if (read_full(f->from, &status, sizeof status) || status) {
        if (status)
            fprintf(stderr, "laya-presage: presage_new failed (code %u); is libpresage-data installed?\n", status);
        worker_gone(f);
        return -1;
    }
    f->started++;
    return 0;
}

static void reply(json_t *j) {
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    puts(s ? s : "{\"error\":\"out of memory\"}");
    free(s);
    fflush(stdout);
}

static void reply_error(const char *msg) { reply(json_pack("{s:s}", "error", msg)); }

/* True when the next word starts a sentence: nothing before it, or a line
 * break, or . ! ? then blanks. */
static int sentence_start(const char *s, size_t n) {
    size_t i = n;
    int blank = 0;
    while (i > 0 && (s[i - 1] == ' ' || s[i - 1] == '\t')) i--, blank = 1;
    if (i == 0 || s[i - 1] == '\n') return 1;
    return blank && strchr(".!?", s[i - 1]);
}

/* Appends to out the text to insert for Presage's word (UTF-8) after the
 * partial word part[0..plen), unless it does not complete it or is there. */
static void add_suggestion(json_t *out, const char *word, const char *part, size_t plen, int cap_first,
                           int all_caps) {
    size_t wl = strlen(word);
    if (wl <= plen || strncasecmp(word, part, plen)) return;   /* nothing left to insert but a space */
    char *ins = malloc(wl - plen + 2);
    if (!ins) return;
    memcpy(ins, word + plen, wl - plen);
    ins[wl - plen] = ' ';
    ins[wl - plen + 1] = 0;
    for (size_t j = 0; j < wl - plen; j++)
        if (all_caps || (j == 0 && plen == 0 && (cap_first || (wl == 1 && word[0] == 'i'))))
            ins[j] = (char)toupper((unsigned char)ins[j]);
    int dup = 0;
    for (size_t j = 0; j < json_array_size(out) && !dup; j++)
        dup = !strcmp(json_string_value(json_array_get(out, j)), ins);
    json_t *s = dup ? NULL : json_string(ins);  /* NULL for invalid UTF-8 too */
    if (s) json_array_append_new(out, s);
    free(ins);
}

static void suggest(front *f, const opts *o, const char *ctx, size_t n, int k) {
    f->suggests++;
    size_t start = tail_start(ctx, n), len = n - start;
    char *fed = malloc(len + 1);
    if (!fed) { reply_error("out of memory"); return; }
    if (o->raw) memcpy(fed, ctx + start, len);
    else if (feed_encode(fed, ctx + start, len)) f->recoded++;

    size_t w = n;   /* the partial word is ctx[w..n) */
    while (w > 0 && is_word_byte((unsigned char)ctx[w - 1])) w--;
    const char *part = ctx + w;
    size_t plen = n - w;
    int cap_first = plen ? isupper((unsigned char)part[0]) : sentence_start(ctx, w);
    int all_caps = plen > 1;
    for (size_t i = 0; i < plen && all_caps; i++)
        if (islower((unsigned char)part[i])) all_caps = 0;

    if (f->pid < 0 && worker_start(f, o)) {
        free(fed);
        reply_error("cannot start Presage");
        exit(1);
    }
    uint32_t status = 0, count = 0;
    double us = 0, t0 = now_us();
    int dead = write_u32(f->to, (uint32_t)k) || write_u32(f->to, (uint32_t)len) || write_full(f->to, fed, len) ||
               read_full(f->from, &status, sizeof status) || read_full(f->from, &us, sizeof us) ||
               read_full(f->from, &count, sizeof count);
    free(fed);
    json_t *out = json_array();
    for (uint32_t i = 0; !dead && i < count; i++) {
        uint32_t wl;
        char *word = NULL;
        if ((dead = read_full(f->from, &wl, sizeof wl) || wl > MAX_WORD || !(word = malloc((size_t)wl + 1)) ||
                    read_full(f->from, word, wl))) {
            free(word);   /* a worker out of step is restarted like a dead one */
            break;
        }
        word[wl] = 0;
        char *u = o->raw ? word : feed_decode(word);
        if (u && json_array_size(out) < (size_t)k) add_suggestion(out, u, part, plen, cap_first, all_caps);
        if (u != word) free(u);
        free(word);
    }
    if (dead) {
        /* The worker died on this request: it costs an empty reply (and its
         * time so far) and a restart at the next request. */
        us = now_us() - t0;
        json_array_clear(out);
        f->lost++;
        worker_gone(f);
    } else if (status) {
        json_decref(out);
        char m[64];
        snprintf(m, sizeof m, "presage_predict failed with code %u", status);
        reply_error(m);
        return;
    }
    reply(json_pack("{s:o,s:f}", "suggestions", out, "us", us));
}

static void usage(FILE *f) {
    fprintf(f, "usage: laya-presage [--static] [--raw] [--home DIR] [--config FILE]\n"
               "JSON lines on stdin/stdout (shared/EVAL.md) over Presage.\n"
               "  --static       only Presage's shipped English model; nothing learns\n"
               "  --raw          feed Presage the UTF-8 unchanged (it may abort: see the source)\n"
               "  --home DIR     keep Presage's learned database in DIR/.presage (default: a\n"
               "                 temporary directory, removed at exit)\n"
               "  --config FILE  a Presage configuration instead of /etc/presage.xml\n");
}

int main(int argc, char **argv) {
    opts o = {0};
    const char *home = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--static")) o.is_static = 1;
        else if (!strcmp(argv[i], "--raw")) o.raw = 1;
        else if (!strcmp(argv[i], "--home") && i + 1 < argc) home = argv[++i];
        else if (!strcmp(argv[i], "--config") && i + 1 < argc) o.config = argv[++i];
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
    signal(SIGPIPE, SIG_IGN);   /* a dead worker is an error code, not our death */

    front f = {.pid = -1};
    if (worker_start(&f, &o)) return 1;
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
            json_int_t k = kk ? json_integer_value(kk) : 3;
            if (!json_is_string(c) || (kk && !json_is_integer(kk)) || k < 1 || k > MAX_K)
                reply_error("suggest needs \"context\" (string) and \"k\" in 1..16");
            else
                suggest(&f, &o, json_string_value(c), json_string_length(c), (int)k);
        } else if (!strcmp(op, "reset") || !strcmp(op, "commit")) {
            /* reset: the next suggest brings its own context */
            reply(json_pack("{s:b}", "ok", 1));
        } else {
            reply_error("unsupported op");
        }
        json_decref(req);
    }
    free(line);
    if (f.pid >= 0) {
        close(f.to);   /* the worker sees the end of its input and exits */
        close(f.from);
        waitpid(f.pid, NULL, 0);
    }
    fprintf(stderr, "laya-presage: %zu suggest requests, %zu re-encoded, %zu lost to a Presage abort%s\n",
            f.suggests, f.recoded, f.lost, o.raw ? " (--raw: UTF-8 fed unchanged)" : "");
    return 0;
}
