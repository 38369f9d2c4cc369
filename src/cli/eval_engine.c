/* eval_engine.c - a suggestion engine as a child process speaking JSON lines.
 * Everything the child sends is hostile: lines are bounded, must parse as a
 * JSON object, and silence is bounded by a timeout. */
#include "eval.h"

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

enum { MAX_REPLY = 1 << 20, SHOW = 160 };

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
static void child_state(eval_engine *e, char *out, size_t cap) {
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

int eval_engine_start(eval_engine *e, char *const argv[], const char *desc, int timeout_ms,
                      char *err, size_t errlen) {
    memset(e, 0, sizeof *e);
    e->pid = -1;
    e->to_fd = e->from_fd = -1;
    e->timeout_ms = timeout_ms;
    snprintf(e->desc, sizeof e->desc, "%s", desc);
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) {
        snprintf(err, errlen, "cannot create pipes: %s", strerror(errno));
        return -1;
    }
    /* A dying engine must give an error message, not kill us with SIGPIPE. */
    signal(SIGPIPE, SIG_IGN);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "cannot fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        signal(SIGPIPE, SIG_DFL);
        execvp(argv[0], argv);
        fprintf(stderr, "laya eval: cannot run engine '%s': %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    e->pid = pid;
    e->to_fd = in[1];
    e->from_fd = out[0];
    return 0;
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
static long read_line(eval_engine *e, double deadline_us) {
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

int eval_engine_request(eval_engine *e, json_t *req, json_t **reply, double *rtt_us,
                        char *err, size_t errlen) {
    char a[SHOW + 8], b[SHOW + 8], how[128];
    *reply = NULL;
    free(e->last_sent);
    e->last_sent = json_dumps(req, JSON_COMPACT);
    if (!e->last_sent) {
        snprintf(err, errlen, "cannot encode a request (out of memory?)");
        return -1;
    }
    if (e->to_fd < 0 || e->pid < 0) {
        snprintf(err, errlen, "engine %s is not running", e->desc);
        return -1;
    }
    size_t n = strlen(e->last_sent);
    double t0 = now_us();
    e->last_sent[n] = '\n';
    int wr = write_all(e->to_fd, e->last_sent, n + 1);
    e->last_sent[n] = 0;
    if (wr) {
        child_state(e, how, sizeof how);
        snprintf(err, errlen, "engine %s %s; last request sent: %s", e->desc, how,
                 shown(e->last_sent, a, sizeof a));
        return -1;
    }
    long ln = read_line(e, t0 + (double)e->timeout_ms * 1000);
    double t1 = now_us();
    if (ln < 0) {
        if (ln == -2)
            snprintf(err, errlen, "engine %s did not answer within %d ms; last request sent: %s",
                     e->desc, e->timeout_ms, shown(e->last_sent, a, sizeof a));
        else if (ln == -3)
            snprintf(err, errlen, "engine %s sent a reply line over %d bytes to: %s", e->desc,
                     MAX_REPLY, shown(e->last_sent, a, sizeof a));
        else {
            child_state(e, how, sizeof how);
            snprintf(err, errlen, "engine %s %s; last request sent: %s", e->desc, how,
                     shown(e->last_sent, a, sizeof a));
        }
        return -1;
    }
    e->buf[ln] = 0;
    json_error_t je;
    json_t *j = json_loadb(e->buf, (size_t)ln, 0, &je);
    if (!j || !json_is_object(j)) {
        snprintf(err, errlen, "engine %s answered garbage (%s): '%s'; to request: %s", e->desc,
                 j ? "not a JSON object" : je.text, shown(e->buf, b, sizeof b),
                 shown(e->last_sent, a, sizeof a));
        json_decref(j);
        return -1;
    }
    size_t rest = e->len - (size_t)ln - 1;
    memmove(e->buf, e->buf + ln + 1, rest);
    e->len = rest;
    *reply = j;
    *rtt_us = t1 - t0;
    return 0;
}

void eval_engine_stop(eval_engine *e) {
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
    e->buf = e->last_sent = NULL;
}
