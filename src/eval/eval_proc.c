/* eval_proc.c - an engine under test as a child process speaking JSON lines
 * (eval.h). Everything the child sends is hostile: lines are bounded, must
 * parse as a JSON object, and silence is bounded by a timeout. */
#include "eval/eval.h"

#include <ftw.h>
#include <limits.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/err.h"

enum { MAX_REPLY = 1 << 20, SHOW = 160 };

struct eval_proc {
    pid_t pid;
    int to_fd, from_fd;     /* engine's stdin, engine's stdout */
    char *buf;              /* bytes read but not yet returned as lines */
    size_t len, cap;
    char *last_sent;        /* the last request, for error messages (owned) */
    int timeout_ms;         /* per reply */
    char desc[256];         /* how the engine was started, for messages */
    char home[PATH_MAX];    /* its throw-away HOME and XDG_DATA_HOME ("" if none) */
    json_t *reply;          /* the last suggest reply: eval_reply points into it */
};

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* The first SHOW bytes of s for a message, with "..." when cut. */
static const char *shown(const char *s, char *out, size_t cap) {
    size_t n = strlen(s);
    if (n < cap && n <= SHOW) {
        memcpy(out, s, n + 1);
        return out;
    }
    size_t m = SHOW < cap - 4 ? SHOW : cap - 4;
    /* do not cut inside a UTF-8 character */
    while (m > 0 && ((unsigned char)s[m] & 0xC0) == 0x80) m--;
    memcpy(out, s, m);
    memcpy(out + m, "...", 4);
    return out;
}

/* Describes how the child ended, or that it is still running. */
static void child_state(eval_proc *e, char *out, size_t cap) {
    int st;
    pid_t r = -1;
    for (int i = 0; i < 50 && (r = waitpid(e->pid, &st, WNOHANG)) == 0; i++) usleep(2000);
    if (r == e->pid) {
        e->pid = -1;
        if (WIFEXITED(st)) snprintf(out, cap, "exited with status %d", WEXITSTATUS(st));
        else if (WIFSIGNALED(st)) snprintf(out, cap, "was killed by signal %d (%s)", WTERMSIG(st),
                                           strsignal(WTERMSIG(st)));
        else snprintf(out, cap, "stopped");
    } else {
        snprintf(out, cap, "closed its output");
    }
}

/* Makes the engine's throw-away home: $TMPDIR/laya-eval-XXXXXX. */
static int make_home(eval_proc *e, char *err, size_t errlen) {
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    snprintf(e->home, sizeof e->home, "%s/laya-eval-XXXXXX", tmp);
    if (mkdtemp(e->home)) return 0;
    err_set(err, errlen, LAYA_ERR_IO, "cannot make a throw-away directory %s: %s (set TMPDIR)",
            e->home, strerror(errno));
    e->home[0] = 0;
    return -1;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    remove(path);   /* best effort: a leftover temporary file is no failure */
    return 0;
}

laya_status eval_proc_start(char *const argv[], const char *desc, int timeout_ms, eval_proc **out,
                            char *err, size_t errlen) {
    eval_proc *e = calloc(1, sizeof *e);
    if (!e) return err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    e->pid = -1;
    e->to_fd = e->from_fd = -1;
    e->timeout_ms = timeout_ms;
    snprintf(e->desc, sizeof e->desc, "%s", desc);
    if (make_home(e, err, errlen)) {
        free(e);
        return LAYA_ERR_IO;
    }
    int in[2], out_p[2];
    if (pipe2(in, O_CLOEXEC)) {
        eval_proc_stop(e);
        return err_set(err, errlen, LAYA_ERR_IO, "cannot create pipes: %s", strerror(errno));
    }
    if (pipe2(out_p, O_CLOEXEC)) {
        close(in[0]), close(in[1]);
        eval_proc_stop(e);
        return err_set(err, errlen, LAYA_ERR_IO, "cannot create pipes: %s", strerror(errno));
    }
    /* A dying engine must give an error message, not kill us with SIGPIPE. */
    signal(SIGPIPE, SIG_IGN);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(in[0]), close(in[1]), close(out_p[0]), close(out_p[1]);
        eval_proc_stop(e);
        return err_set(err, errlen, LAYA_ERR_IO, "cannot fork: %s", strerror(errno));
    }
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out_p[1], 1);
        signal(SIGPIPE, SIG_DFL);
        setenv("HOME", e->home, 1);
        setenv("XDG_DATA_HOME", e->home, 1);
        unsetenv("LAYA_MEMORY");
        execvp(argv[0], argv);
        fprintf(stderr, "laya eval: cannot run engine '%s': %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(in[0]);
    close(out_p[1]);
    e->pid = pid;
    e->to_fd = in[1];
    e->from_fd = out_p[0];
    *out = e;
    return LAYA_OK;
}

static int write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads until a full line is buffered; returns its length (excluding the
 * newline), -1 on EOF/error, -2 on timeout, -3 when too long. */
static long read_line(eval_proc *e, double deadline_us) {
    size_t scanned = 0;
    for (;;) {
        char *nl = e->len > scanned ? memchr(e->buf + scanned, '\n', e->len - scanned) : NULL;
        if (nl) return (long)(nl - e->buf);
        scanned = e->len;
        if (e->len >= MAX_REPLY) return -3;
        if (e->cap - e->len < 65536) {
            size_t cap = e->cap ? e->cap * 2 : 65536 * 2;
            char *b = realloc(e->buf, cap);
            if (!b) return -1;
            e->buf = b;
            e->cap = cap;
        }
        double left = deadline_us - now_us();
        if (left <= 0) return -2;
        struct pollfd pfd = {.fd = e->from_fd, .events = POLLIN};
        int pr = poll(&pfd, 1, (int)(left / 1000) + 1);
        if (pr < 0 && errno == EINTR) continue;
        if (pr == 0) return -2;
        ssize_t r = read(e->from_fd, e->buf + e->len, e->cap - e->len);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        e->len += (size_t)r;
    }
}

/* Sends req (consumed; NULL means out of memory) as one line and waits for
 * one reply line, a JSON object, into *reply (owned by the caller). An
 * {"error":...} reply is a reply, not a failure. */
static laya_status request(eval_proc *e, json_t *req, json_t **reply, double *rtt_us, char *err,
                           size_t errlen) {
    char a[SHOW + 8], b[SHOW + 8], how[128];
    *reply = NULL;
    free(e->last_sent);
    e->last_sent = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!e->last_sent) return err_set(err, errlen, LAYA_ERR_NOMEM, "cannot encode a request: out of memory");
    if (e->to_fd < 0 || e->pid < 0)
        return err_set(err, errlen, LAYA_ERR_IO, "engine %s is not running", e->desc);
    size_t n = strlen(e->last_sent);
    double t0 = now_us();
    e->last_sent[n] = '\n';
    int wr = write_all(e->to_fd, e->last_sent, n + 1);
    e->last_sent[n] = 0;
    if (wr) {
        child_state(e, how, sizeof how);
        return err_set(err, errlen, LAYA_ERR_IO, "engine %s %s; last request sent: %s", e->desc,
                       how, shown(e->last_sent, a, sizeof a));
    }
    long ln = read_line(e, t0 + (double)e->timeout_ms * 1000);
    double t1 = now_us();
    if (ln < 0) {
        if (ln == -2)
            err_set(err, errlen, LAYA_ERR_IO, "engine %s did not answer within %d ms; last request sent: %s",
                     e->desc, e->timeout_ms, shown(e->last_sent, a, sizeof a));
        else if (ln == -3)
            err_set(err, errlen, LAYA_ERR_FORMAT, "engine %s sent a reply line over %d bytes to: %s", e->desc,
                     MAX_REPLY, shown(e->last_sent, a, sizeof a));
        else {
            child_state(e, how, sizeof how);
            err_set(err, errlen, LAYA_ERR_IO, "engine %s %s; last request sent: %s", e->desc, how,
                    shown(e->last_sent, a, sizeof a));
        }
        return ln == -3 ? LAYA_ERR_FORMAT : LAYA_ERR_IO;
    }
    e->buf[ln] = 0;
    json_error_t je;
    json_t *j = json_loadb(e->buf, (size_t)ln, 0, &je);
    if (!j || !json_is_object(j)) {
        err_set(err, errlen, LAYA_ERR_FORMAT, "engine %s answered garbage (%s): '%s'; to request: %s",
                e->desc, j ? "not a JSON object" : je.text, shown(e->buf, b, sizeof b),
                shown(e->last_sent, a, sizeof a));
        json_decref(j);
        return LAYA_ERR_FORMAT;
    }
    size_t rest = e->len - (size_t)ln - 1;
    memmove(e->buf, e->buf + ln + 1, rest);
    e->len = rest;
    *reply = j;
    if (rtt_us) *rtt_us = t1 - t0;
    return LAYA_OK;
}

static const char *reply_error(json_t *reply) {
    json_t *e = json_object_get(reply, "error");
    return e ? (json_is_string(e) ? json_string_value(e) : "(non-string error)") : NULL;
}

/* A request whose reply must not be an error. */
static laya_status ask(eval_proc *e, json_t *req, json_t **reply, char *err, size_t errlen) {
    laya_status st = request(e, req, reply, NULL, err, errlen);
    if (st != LAYA_OK) return st;
    const char *msg = reply_error(*reply);
    if (!msg) return LAYA_OK;
    err_set(err, errlen, LAYA_ERR_FORMAT, "engine %s answered an error: \"%s\"; to request: %.160s",
            e->desc, msg, e->last_sent);
    json_decref(*reply);
    *reply = NULL;
    return LAYA_ERR_FORMAT;
}

/* An optional op: an error reply is LAYA_ERR_UNSUPPORTED, its message in err. */
static laya_status ask_optional(eval_proc *e, json_t *req, json_t **reply, char *err, size_t errlen) {
    laya_status st = request(e, req, reply, NULL, err, errlen);
    if (st != LAYA_OK) return st;
    const char *msg = reply_error(*reply);
    if (!msg) return LAYA_OK;
    err_set(err, errlen, LAYA_ERR_UNSUPPORTED, "%s", msg);
    json_decref(*reply);
    *reply = NULL;
    return LAYA_ERR_UNSUPPORTED;
}

static laya_status p_suggest(void *ctx, const char *sid, const char *context, size_t len, int k,
                             double t_ms, int decide, eval_reply *r, char *err, size_t errlen) {
    eval_proc *e = ctx;
    json_t *req = json_pack("{s:s,s:s,s:s%,s:i}", "op", "suggest", "session", sid, "context",
                            context, len, "k", k);
    if (req && t_ms >= 0 &&
        (json_object_set_new(req, "t_ms", json_real(t_ms)) || json_object_set_new(req, "decide", json_boolean(decide))))
        json_decref(req), req = NULL;
    json_decref(e->reply);
    e->reply = NULL;
    memset(r, 0, sizeof *r);
    laya_status st = request(e, req, &e->reply, &r->rtt_us, err, errlen);
    if (st != LAYA_OK) return st;
    const char *msg = reply_error(e->reply);
    if (msg)
        return err_set(err, errlen, LAYA_ERR_FORMAT, "engine %s answered an error: \"%s\"; to request: %.160s",
                       e->desc, msg, e->last_sent);
    json_t *sug = json_object_get(e->reply, "suggestions"), *s;
    if (!json_is_array(sug))
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "engine %s answered without a \"suggestions\" array to request: %.160s",
                       e->desc, e->last_sent);
    size_t i;
    json_array_foreach(sug, i, s) {
        if (!json_is_string(s))
            return err_set(err, errlen, LAYA_ERR_FORMAT,
                           "engine %s answered a non-string suggestion to request: %.160s", e->desc,
                           e->last_sent);
        if (r->n < EVAL_MAX_K) {
            r->s[r->n] = json_string_value(s);
            r->len[r->n++] = json_string_length(s);
        }
    }
    json_t *us = json_object_get(e->reply, "us");
    r->us = json_is_number(us) ? json_number_value(us) : -1;
    const char *held = json_string_value(json_object_get(e->reply, "held"));
    r->held = !held ? EVAL_HELD_NONE : !strcmp(held, "low") ? EVAL_HELD_LOW
            : !strcmp(held, "burst") ? EVAL_HELD_BURST : !strcmp(held, "backspace") ? EVAL_HELD_BACKSPACE
            : EVAL_HELD_NONE;
    return LAYA_OK;
}

static laya_status p_reset(void *ctx, const char *sid, char *err, size_t errlen) {
    json_t *r;
    laya_status st = ask(ctx, json_pack("{s:s,s:s}", "op", "reset", "session", sid), &r, err, errlen);
    json_decref(r);
    return st;
}

static laya_status p_commit(void *ctx, const char *sid, const char *text, size_t len, char *err,
                            size_t errlen) {
    json_t *r;
    laya_status st = ask_optional(ctx, json_pack("{s:s,s:s,s:s%}", "op", "commit", "session", sid,
                                                 "text", text, len), &r, err, errlen);
    json_decref(r);
    return st;
}

static laya_status p_feedback(void *ctx, const char *sid, int accepted, double t_ms, char *err,
                              size_t errlen) {
    json_t *r, *q = json_pack("{s:s,s:s,s:i}", "op", "feedback", "session", sid, "accepted", accepted);
    /* the perfect typist's feedback has no time */
    if (q && t_ms >= 0) json_object_set_new(q, "t_ms", json_real(t_ms));
    laya_status st = ask_optional(ctx, q, &r, err, errlen);
    json_decref(r);
    return st;
}

static laya_status p_score(void *ctx, const char *sid, const char *text, size_t len, double *bits,
                           double *bytes, char *err, size_t errlen) {
    eval_proc *e = ctx;
    json_t *r;
    laya_status st = ask_optional(e, json_pack("{s:s,s:s,s:s%}", "op", "score", "session", sid,
                                               "text", text, len), &r, err, errlen);
    if (st != LAYA_OK) return st;
    json_t *b = json_object_get(r, "bits"), *n = json_object_get(r, "bytes");
    if (!json_is_number(b) || !json_is_number(n) || json_number_value(n) <= 0 || json_number_value(b) < 0)
        st = err_set(err, errlen, LAYA_ERR_FORMAT,
                     "engine %s answered \"score\" without numbers \"bits\" >= 0 and \"bytes\" > 0",
                     e->desc);
    else
        *bits = json_number_value(b), *bytes = json_number_value(n);
    json_decref(r);
    return st;
}

eval_client eval_proc_client(eval_proc *p) {
    return (eval_client){.ctx = p, .suggest = p_suggest, .reset = p_reset, .commit = p_commit,
                         .feedback = p_feedback, .score = p_score};
}

void eval_proc_stop(eval_proc *e) {
    if (!e) return;
    if (e->to_fd >= 0) close(e->to_fd);
    if (e->from_fd >= 0) close(e->from_fd);
    e->to_fd = e->from_fd = -1;
    if (e->pid > 0) {
        int st;
        pid_t r = 0;
        for (int i = 0; i < 100 && (r = waitpid(e->pid, &st, WNOHANG)) == 0; i++) usleep(10000);
        if (r == 0) {
            kill(e->pid, SIGTERM);
            waitpid(e->pid, &st, 0);
        }
        e->pid = -1;
    }
    free(e->buf);
    free(e->last_sent);
    json_decref(e->reply);
    if (e->home[0]) nftw(e->home, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(e);
}
