/* srv.c - the daemon's Unix-socket transport (contract in srv.h).
 *
 * Level-triggered epoll over the listening socket, a signalfd and the
 * clients. Per wake-up a client gets one read of at most READ_CHUNK bytes,
 * so a client that pipelines thousands of requests delays the others by
 * one chunk's worth of requests, not by all of them. Replies go into the
 * client's output buffer and are written at once; what the socket does not
 * take waits for EPOLLOUT, and while more than max_pending bytes wait the
 * client is not read (its requests stay in the kernel's socket buffer).
 *
 * Descriptors: srv_open raises the soft RLIMIT_NOFILE towards the hard one
 * (max_clients + FD_RESERVE), and keeps one spare descriptor. When accept
 * fails for want of descriptors (EMFILE, ENFILE) the spare is closed, the
 * waiting connection accepted, told why in an error line and closed, and
 * the spare taken back: the listener drains instead of staying readable,
 * which made the level-triggered loop spin at a full core. If even that
 * fails, the listener is left out of the epoll set until a client leaves
 * or a second has passed.
 *
 * A client whose peer has closed (EPOLLHUP: both directions shut, so no
 * reply can reach anyone) is closed without computing what it sent; a
 * half-closed one (shutdown(SHUT_WR), only EPOLLRDHUP) still gets its
 * replies. Buffers that held a client's bytes (its requests, its replies:
 * typed text) are wiped before they are freed or moved. */
#include "server/srv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* FD_RESERVE: descriptors besides the clients' (stdio, lock, listener,
 * signalfd, epoll, the spare, a model being opened) with room to spare. */
enum { READ_CHUNK = 16 * 1024, MAX_EVENTS = 64, FD_RESERVE = 32, PAUSE_MS = 1000 };

typedef struct client {
    int fd;
    uint64_t id;           /* the proto owner of its sessions */
    proto_lines in;
    char *out;             /* (out_cap) replies not yet written: [out_off, out_len) */
    size_t out_len, out_off, out_cap;
    int eof;               /* the peer closed its write side */
    int oom;               /* a reply could not be buffered: close once flushed */
    uint32_t events;       /* current epoll interest */
    struct client *prev, *next;
} client;

struct srv {
    srv_cfg cfg;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    char lock_path[sizeof(((struct sockaddr_un *)0)->sun_path) + 8];
    int lock_fd, listen_fd, sig_fd, ep;
    int spare_fd;          /* /dev/null, given up to accept-and-refuse when out of descriptors */
    int paused;            /* the listener is out of the epoll set (no descriptor to accept with) */
    sigset_t old_mask;
    int masked;            /* SIGTERM/SIGINT blocked by srv_open: restore old_mask */
    client *clients;
    int n_clients;
    uint64_t next_id;
};

/* epoll tags for the two non-client descriptors */
static char tag_listen, tag_signal;

static laya_status fail(char *err, size_t errlen, laya_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static laya_status fail(char *err, size_t errlen, laya_status st, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return st;
}

srv_cfg srv_cfg_default(void) {
    return (srv_cfg){.max_line = 1 << 20, .max_clients = 1024, .max_pending = 1 << 20};
}

laya_status srv_default_path(char *buf, size_t n, char *err, size_t errlen) {
    const char *rt = getenv("XDG_RUNTIME_DIR");
    if (!rt || !*rt)
        return fail(err, errlen, LAYA_ERR_ARG,
                    "XDG_RUNTIME_DIR is not set, so there is no default socket path: "
                    "pass --socket PATH (a systemd user session sets XDG_RUNTIME_DIR)");
    if ((size_t)snprintf(buf, n, "%s/laya/laya.sock", rt) >= n)
        return fail(err, errlen, LAYA_ERR_LIMIT, "XDG_RUNTIME_DIR is too long for a socket path: pass --socket PATH");
    return LAYA_OK;
}

/* The socket's directory, made 0700 if missing; an existing one must be a
 * directory of ours, and loses any group/other access. */
static laya_status make_private_dir(const char *path, char *err, size_t errlen) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return LAYA_OK;
    *slash = 0;
    if (mkdir(dir, 0700) == 0) return LAYA_OK;
    if (errno != EEXIST) return fail(err, errlen, LAYA_ERR_IO, "cannot create %s: %s", dir, strerror(errno));
    struct stat st;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return fail(err, errlen, LAYA_ERR_IO, "%s exists and is not a directory", dir);
    if (st.st_uid != geteuid())
        return fail(err, errlen, LAYA_ERR_IO, "%s belongs to another user: refusing to serve from it", dir);
    if ((st.st_mode & 077) && chmod(dir, 0700) != 0)
        return fail(err, errlen, LAYA_ERR_IO, "cannot make %s private (0700): %s", dir, strerror(errno));
    return LAYA_OK;
}

/* Takes PATH.lock; a held lock means a live daemon on this path. The
 * socket may be in a shared sticky directory (/tmp), where another user can
 * plant PATH.lock as a symlink or a hard link to a file of the daemon's
 * user: the lock is never followed (O_NOFOLLOW) and never written unless it
 * is a regular file of ours with one link. */
static laya_status take_lock(srv *s, char *err, size_t errlen) {
    s->lock_fd = open(s->lock_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0600);
    if (s->lock_fd < 0) {
        int e = errno;
        return fail(err, errlen, LAYA_ERR_IO, "cannot open %s: %s%s", s->lock_path, strerror(e),
                    e == ELOOP ? " (it is a symbolic link: not following it; remove it, or pass another "
                                 "--socket PATH in a directory of your own)"
                               : "");
    }
    struct stat sb;
    if (fstat(s->lock_fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid() || sb.st_nlink != 1) {
        close(s->lock_fd);
        s->lock_fd = -1;
        return fail(err, errlen, LAYA_ERR_IO, "%s is not a lock file of ours (a regular file we own, with one "
                    "link): not touching it; remove it, or pass another --socket PATH in a directory of your own",
                    s->lock_path);
    }
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char pid[32] = "";
        ssize_t n = pread(s->lock_fd, pid, sizeof pid - 1, 0);
        pid[n > 0 ? n : 0] = 0;
        pid[strcspn(pid, "\n")] = 0;
        close(s->lock_fd);
        s->lock_fd = -1;
        if (e == EWOULDBLOCK)
            return fail(err, errlen, LAYA_ERR_IO,
                        "another laya daemon%s%s%s is already serving %s: stop it first "
                        "(systemctl --user stop laya) or pass another --socket PATH",
                        *pid ? " (pid " : "", pid, *pid ? ")" : "", s->path);
        return fail(err, errlen, LAYA_ERR_IO, "cannot lock %s: %s", s->lock_path, strerror(e));
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(s->lock_fd, 0) != 0 || pwrite(s->lock_fd, pid, (size_t)n, 0) != n) {
        /* The pid is only for the message above; the lock itself is held. */
    }
    return LAYA_OK;
}

laya_status srv_open(const char *path, int make_dir, const srv_cfg *cfg, srv **out, char *err, size_t errlen) {
    if (!path || !cfg || !out || cfg->max_line < 2 || cfg->max_clients < 1)
        return fail(err, errlen, LAYA_ERR_ARG, "srv_open: bad arguments");
    srv *s = calloc(1, sizeof *s);
    if (!s) return fail(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    *s = (srv){.cfg = *cfg, .lock_fd = -1, .listen_fd = -1, .sig_fd = -1, .ep = -1, .spare_fd = -1, .next_id = 1};
    laya_status st = LAYA_OK;
    if (strlen(path) >= sizeof s->path) {
        st = fail(err, errlen, LAYA_ERR_LIMIT, "socket path is %zu bytes; a Unix socket path holds at most %zu",
                  strlen(path), sizeof s->path - 1);
        goto out;
    }
    snprintf(s->path, sizeof s->path, "%s", path);
    snprintf(s->lock_path, sizeof s->lock_path, "%s.lock", path);
    if (make_dir && (st = make_private_dir(path, err, errlen)) != LAYA_OK) goto out;
    if ((st = take_lock(s, err, errlen)) != LAYA_OK) goto out;

    /* We hold the lock, so whatever socket is there was left by a daemon
     * that died: reclaim it. Anything else at that path is not ours. */
    struct stat sb;
    if (lstat(path, &sb) == 0) {
        if (!S_ISSOCK(sb.st_mode)) {
            st = fail(err, errlen, LAYA_ERR_IO, "%s exists and is not a socket: not touching it", path);
            goto out;
        }
        if (unlink(path) != 0) {
            st = fail(err, errlen, LAYA_ERR_IO, "cannot remove the stale socket %s: %s", path, strerror(errno));
            goto out;
        }
    }
    s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->listen_fd < 0) {
        st = fail(err, errlen, LAYA_ERR_IO, "socket: %s", strerror(errno));
        goto out;
    }
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    memcpy(addr.sun_path, path, strlen(path) + 1);
    mode_t old_umask = umask(0177);   /* the socket is born 0600: no window where others may connect */
    int rc = bind(s->listen_fd, (struct sockaddr *)&addr, sizeof addr);
    int e = errno;
    umask(old_umask);
    if (rc != 0) {
        st = fail(err, errlen, LAYA_ERR_IO, "cannot bind %s: %s", path, strerror(e));
        goto out;
    }
    if (chmod(path, 0600) != 0 || listen(s->listen_fd, SOMAXCONN) != 0) {
        st = fail(err, errlen, LAYA_ERR_IO, "cannot listen on %s: %s", path, strerror(errno));
        goto out;
    }
    /* systemd gives user services a soft limit of 1024 descriptors and a
     * hard one far above: ask for what max_clients needs. */
    struct rlimit rl;
    rlim_t want = (rlim_t)cfg->max_clients + FD_RESERVE;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            /* Not fatal: clients beyond the limit are refused with an error line (on_accept). */
        }
    }
    s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    s->masked = sigprocmask(SIG_BLOCK, &mask, &s->old_mask) == 0;
    s->sig_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    s->ep = epoll_create1(EPOLL_CLOEXEC);
    if (s->sig_fd < 0 || s->ep < 0) {
        st = fail(err, errlen, LAYA_ERR_IO, "signalfd/epoll: %s", strerror(errno));
        goto out;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &tag_listen};
    struct epoll_event evs = {.events = EPOLLIN, .data.ptr = &tag_signal};
    if (epoll_ctl(s->ep, EPOLL_CTL_ADD, s->listen_fd, &ev) != 0 ||
        epoll_ctl(s->ep, EPOLL_CTL_ADD, s->sig_fd, &evs) != 0) {
        st = fail(err, errlen, LAYA_ERR_IO, "epoll_ctl: %s", strerror(errno));
        goto out;
    }
out:
    if (st != LAYA_OK) {
        srv_close(s);
        return st;
    }
    *out = s;
    return LAYA_OK;
}

/* Puts the listener back in the epoll set (a descriptor may be free again)
 * and takes the spare back if it was lost. */
static void resume_listener(srv *s) {
    if (s->spare_fd < 0) s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &tag_listen};
    if (epoll_ctl(s->ep, EPOLL_CTL_MOD, s->listen_fd, &ev) == 0) s->paused = 0;
}

static void client_close(srv *s, client *c, proto *p) {
    epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    if (p) proto_drop_owner(p, c->id);
    if (c->in.buf) sodium_memzero(c->in.buf, c->in.cap);
    proto_lines_free(&c->in);
    if (c->out) sodium_memzero(c->out, c->out_cap);
    free(c->out);
    if (c->prev) c->prev->next = c->next;
    else s->clients = c->next;
    if (c->next) c->next->prev = c->prev;
    s->n_clients--;
    free(c);
    if (s->paused) resume_listener(s);
}

void srv_close(srv *s) {
    if (!s) return;
    while (s->clients) client_close(s, s->clients, NULL);
    if (s->listen_fd >= 0) {
        close(s->listen_fd);
        unlink(s->path);
    }
    if (s->sig_fd >= 0) close(s->sig_fd);
    if (s->spare_fd >= 0) close(s->spare_fd);
    if (s->masked) sigprocmask(SIG_SETMASK, &s->old_mask, NULL);
    if (s->ep >= 0) close(s->ep);
    if (s->lock_fd >= 0) {
        unlink(s->lock_path);   /* while still held, so no other daemon holds this file */
        close(s->lock_fd);
    }
    free(s);
}

static void out_append(client *c, const char *data, size_t n) {
    if (c->oom) return;
    if (c->out_off && c->out_off == c->out_len) c->out_off = c->out_len = 0;
    if (c->out_len + n > c->out_cap) {
        size_t cap = c->out_cap ? c->out_cap : 4096;
        while (cap < c->out_len + n) cap *= 2;
        /* Not realloc: the old block, which holds replies (typed text), is
         * wiped before it goes back to the allocator. */
        char *b = malloc(cap);
        if (!b) {
            /* A lost reply would desynchronize the client: end it instead. */
            c->oom = 1;
            return;
        }
        if (c->out) {
            memcpy(b, c->out, c->out_len);
            sodium_memzero(c->out, c->out_cap);
            free(c->out);
        }
        c->out = b;
        c->out_cap = cap;
    }
    memcpy(c->out + c->out_len, data, n);
    c->out_len += n;
}

typedef struct {
    srv *s;
    client *c;
    proto *p;
} line_ctx;

/* Replies come from proto_feed, which answers all complete lines of a read
 * together so that stale suggests are coalesced (proto.h). */
static void on_reply(void *ctx, const char *r) {
    line_ctx *lc = ctx;
    if (!r) {
        static const char oom[] = "{\"error\":\"out of memory\"}";
        out_append(lc->c, oom, sizeof oom - 1);
    } else {
        out_append(lc->c, r, strlen(r));
    }
    out_append(lc->c, "\n", 1);
}

/* Writes what the socket takes. 0 on success (maybe partial), -1 when the
 * peer is gone. */
static int flush(client *c) {
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            c->out_off += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return 0;
        } else {
            return -1;
        }
    }
    c->out_off = c->out_len = 0;
    return 0;
}

/* Sets the client's epoll interest from its state, or closes it when there
 * is nothing left to do for it. */
static void update(srv *s, client *c, proto *p) {
    size_t pending = c->out_len - c->out_off;
    if ((c->eof || c->oom) && !pending) {
        client_close(s, c, p);
        return;
    }
    uint32_t want = pending ? EPOLLOUT : 0;
    if (!c->eof && !c->oom && pending <= s->cfg.max_pending) want |= EPOLLIN;
    if (want != c->events) {
        struct epoll_event ev = {.events = want, .data.ptr = c};
        epoll_ctl(s->ep, EPOLL_CTL_MOD, c->fd, &ev);
        c->events = want;
    }
}

/* Sends a connection one error line (best effort) and closes it. */
static void refuse(int fd, const char *msg) {
    char *r = proto_error("%s", msg);
    if (r) {
        size_t n = strlen(r);
        if (send(fd, r, n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 || send(fd, "\n", 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
            /* best effort: the connection is closed either way */
        }
    }
    free(r);
    close(fd);
}

static void on_accept(srv *s) {
    char msg[200];
    for (;;) {
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            int e = errno;
            if (e == EINTR || e == ECONNABORTED || e == EPROTO) continue;
            if (e == EAGAIN || e == EWOULDBLOCK) return;
            if ((e == EMFILE || e == ENFILE) && s->spare_fd >= 0) {
                close(s->spare_fd);
                s->spare_fd = -1;
                int c = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
                if (c >= 0) {
                    snprintf(msg, sizeof msg, "too many clients: the daemon serves %d and has no file descriptor "
                             "for more (its limit: ulimit -n, LimitNOFILE=): try again later", s->n_clients);
                    refuse(c, msg);
                }
                s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (c >= 0 && s->spare_fd >= 0) continue;
            }
            /* Nothing to accept with (or ENOBUFS, ENOMEM): stop watching the
             * listener until a client leaves or PAUSE_MS pass (srv_run). */
            struct epoll_event ev = {.events = 0, .data.ptr = &tag_listen};
            if (epoll_ctl(s->ep, EPOLL_CTL_MOD, s->listen_fd, &ev) == 0) s->paused = 1;
            return;
        }
        if (s->n_clients >= s->cfg.max_clients) {
            snprintf(msg, sizeof msg, "too many clients: the daemon already serves %d: try again later",
                     s->cfg.max_clients);
            refuse(fd, msg);
            continue;
        }
        client *c = calloc(1, sizeof *c);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        if (!c || epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
            free(c);
            close(fd);
            continue;
        }
        c->fd = fd;
        c->id = s->next_id++;
        c->events = EPOLLIN;
        proto_lines_init(&c->in, s->cfg.max_line);
        c->next = s->clients;
        if (s->clients) s->clients->prev = c;
        s->clients = c;
        s->n_clients++;
    }
}

/* 1 if the peer has closed both directions (no reply can reach it). The
 * epoll event may be old: other clients' requests ran since. */
static int peer_gone(int fd) {
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    return poll(&pf, 1, 0) == 1 && (pf.revents & (POLLHUP | POLLERR | POLLNVAL));
}

static void on_client(srv *s, client *c, uint32_t events, proto *p) {
    if ((events & (EPOLLERR | EPOLLHUP)) || peer_gone(c->fd)) {
        client_close(s, c, p);
        return;
    }
    if (events & EPOLLIN) {
        char buf[READ_CHUNK];
        ssize_t n = read(c->fd, buf, sizeof buf);
        line_ctx lc = {s, c, p};
        if (n > 0) {
            if (proto_feed(p, c->id, &c->in, buf, (size_t)n, 0, on_reply, &lc) != LAYA_OK) {
                /* The line was dropped and answered like an overlong one. */
            }
            sodium_memzero(buf, (size_t)n);
        } else if (n == 0) {
            c->eof = 1;
            proto_feed(p, c->id, &c->in, NULL, 0, 1, on_reply, &lc);
        } else if (errno != EAGAIN && errno != EINTR) {
            client_close(s, c, p);
            return;
        }
    }
    if (flush(c) != 0) {
        client_close(s, c, p);
        return;
    }
    update(s, c, p);
}

laya_status srv_run(srv *s, proto *p, char *err, size_t errlen) {
    struct epoll_event evs[MAX_EVENTS];
    for (;;) {
        int n = epoll_wait(s->ep, evs, MAX_EVENTS, s->paused ? PAUSE_MS : -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail(err, errlen, LAYA_ERR_IO, "epoll_wait: %s", strerror(errno));
        }
        if (n == 0 && s->paused) resume_listener(s);
        /* Each descriptor appears at most once per batch, so closing a
         * client never leaves a dangling pointer in the rest of evs. */
        for (int i = 0; i < n; i++) {
            void *tag = evs[i].data.ptr;
            if (tag == &tag_signal) {
                struct signalfd_siginfo si;
                if (read(s->sig_fd, &si, sizeof si) == (ssize_t)sizeof si) return LAYA_OK;
            } else if (tag == &tag_listen) {
                on_accept(s);
            } else {
                on_client(s, tag, evs[i].events, p);
            }
        }
    }
}

/* ---- work before serving, interruptible ---- */

typedef struct {
    void (*fn)(void *);
    void *arg;
    int efd;             /* eventfd: written when fn has returned */
    pthread_mutex_t mu;  /* guards done and abandoned */
    int done, abandoned;
} task;

static void task_free(task *t) {
    close(t->efd);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static void *task_main(void *v) {
    task *t = v;
    t->fn(t->arg);
    pthread_mutex_lock(&t->mu);
    int gone = t->abandoned;
    if (!gone) {
        uint64_t one = 1;
        t->done = 1;
        if (write(t->efd, &one, sizeof one) != (ssize_t)sizeof one) {
            /* cannot fail: the counter is far from overflowing */
        }
    }
    pthread_mutex_unlock(&t->mu);
    if (gone) task_free(t);
    return NULL;
}

int srv_run_task(srv *s, void (*fn)(void *), void *arg) {
    task *t = calloc(1, sizeof *t);
    if (!t) {
        fn(arg);
        return 1;
    }
    t->fn = fn;
    t->arg = arg;
    t->efd = eventfd(0, EFD_CLOEXEC);
    pthread_t th;
    if (t->efd < 0 || pthread_mutex_init(&t->mu, NULL) != 0) {
        if (t->efd >= 0) close(t->efd);
        free(t);
        fn(arg);
        return 1;
    }
    /* The thread inherits this thread's mask, with SIGTERM/SIGINT blocked
     * (srv_open): they stay readable on the signalfd. */
    if (pthread_create(&th, NULL, task_main, t) != 0) {
        task_free(t);
        fn(arg);
        return 1;
    }
    struct pollfd pf[2] = {{.fd = t->efd, .events = POLLIN}, {.fd = s->sig_fd, .events = POLLIN}};
    for (;;) {
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;   /* cannot watch: wait for fn like a plain call */
        }
        if (pf[1].revents & POLLIN) {
            struct signalfd_siginfo si;
            if (read(s->sig_fd, &si, sizeof si) != (ssize_t)sizeof si) continue;
            pthread_mutex_lock(&t->mu);
            int done = t->done;
            if (!done) t->abandoned = 1;
            pthread_mutex_unlock(&t->mu);
            if (done) {
                pthread_join(th, NULL);
                task_free(t);
            } else {
                pthread_detach(th);   /* it frees t when fn returns, if the process still runs */
            }
            return 0;
        }
        if (pf[0].revents & POLLIN) break;
    }
    pthread_join(th, NULL);
    task_free(t);
    return 1;
}
