/* srv.c - the daemon's Unix-socket transport (contract in srv.h).
 *
 * One thread does all the I/O: a level-triggered epoll over the listening
 * socket, a signalfd, an eventfd from the workers, and the clients. The
 * requests run on a pool of worker threads over the one read-only model
 * (include/laya.h allows that), so one client's long request (a score over
 * a megabyte, a huge context read afresh) holds one worker, not the
 * daemon. Each client has its own protocol state (a proto: its sessions,
 * its line framing) and at most one job at a time, so its replies stay in
 * order and no two threads ever touch the same session.
 *
 * A job is one read of at most READ_CHUNK bytes: a client that pipelines
 * thousands of requests holds a worker for one chunk's worth of them, then
 * queues again behind the others. Replies are made into the job's buffer,
 * moved to the client's when the job is back, and written at once; what the
 * socket does not take waits for EPOLLOUT, and while more than max_pending
 * bytes wait the client is not read (its requests stay in the kernel).
 *
 * Learning (commits, proto.h) is per connection, in its proto: one memory
 * shared by every connection needs proto to share an index between protos
 * behind a lock, which it cannot yet.
 *
 * Sessions: at most client_sessions per client (its proto's own LRU), and
 * at most max_sessions over all clients once their jobs are back: beyond
 * that, the idle client holding the most sessions (the least recently
 * active among equals) has them closed. They reopen empty (slower, never
 * wrong). Between two checks, running jobs may hold up to workers x
 * client_sessions more.
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
enum {
    READ_CHUNK = 16 * 1024,
    MAX_EVENTS = 64,
    FD_RESERVE = 32,     /* descriptors besides the clients': stdio, lock, listener, signalfd,
                            epoll, eventfd, the spare, a file being opened, with room */
    PAUSE_MS = 1000,     /* how long the listener rests when no descriptor is left */
    STOP_WAIT_MS = 2000  /* how long srv_close waits for jobs still running */
};

/* Bytes waiting to be written: [off, len) of p (cap). Grown by copying, so
 * the old block can be wiped first (realloc would leave typed text behind). */
typedef struct {
    char *p;
    size_t len, off, cap;
} obuf;

typedef struct client client;

/* One read of one client, answered on a worker. */
typedef struct job {
    client *c;
    char data[READ_CHUNK];
    size_t n;
    int finish;          /* end of input: an unterminated last line counts */
    obuf out;            /* the replies, made on the worker */
    int oom;             /* a reply could not be buffered */
    struct job *next;    /* in the pool's queue or done list */
} job;

struct client {
    int fd;
    uint64_t id;         /* the owner of its sessions in its proto */
    proto *p;            /* its sessions and coalescing (owned); used only by its job */
    proto_lines in;      /* its line framing; used only by its job */
    int n_sess;          /* sessions live in p when its last job came back */
    uint64_t last_used;  /* srv clock when its last job came back: LRU order */
    obuf out;            /* replies not yet written */
    job *job;            /* made on its first read, reused */
    int busy;            /* its job is queued or on a worker */
    int eof;             /* the peer closed its write side */
    int oom;             /* a reply could not be buffered: close once flushed */
    int gone;            /* the peer closed while its job ran: close when it is back */
    uint32_t events;     /* current epoll interest */
    client *prev, *next;
};

/* The workers and their queues, apart from srv: if a job is still running
 * when srv_close gives up waiting, the pool and that job's client are left
 * to the exiting process instead of being freed under the worker. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job *head, *tail;    /* waiting for a worker */
    job *done;           /* back from a worker, for the I/O thread */
    int done_fd;         /* eventfd: something is on done */
    int stop;
    int n_threads;
    pthread_t th[SRV_MAX_WORKERS];
} pool;

struct srv {
    srv_cfg cfg;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    char lock_path[sizeof(((struct sockaddr_un *)0)->sun_path) + 8];
    int lock_fd, listen_fd, sig_fd, ep;
    int spare_fd;        /* /dev/null, given up to accept-and-refuse when out of descriptors */
    int paused;          /* the listener is out of the epoll set (no descriptor to accept with) */
    sigset_t old_mask;
    int masked;          /* SIGTERM/SIGINT blocked by srv_open: restore old_mask */
    const laya_model *m; /* from srv_run */
    laya_search_opts ecfg;
    pool *pl;            /* started by srv_run */
    client *clients;
    int n_clients, n_sess;
    uint64_t next_id, clock;
};

/* epoll tags for the non-client descriptors */
static char tag_listen, tag_signal, tag_done;

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

void srv_set_intent(srv *s, const laya_intent *h) { s->cfg.intent = h; }

srv_cfg srv_cfg_default(void) {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    /* At least 4 workers even on fewer cores: the scheduler shares a core
     * between a long job and a keystroke's, instead of queueing one behind
     * the other. */
    int workers = ncpu < 4 ? 4 : ncpu > 16 ? 16 : (int)ncpu;
    return (srv_cfg){.max_line = 1 << 20, .max_clients = 1024, .max_pending = 1 << 20, .workers = workers,
                     .max_sessions = 64, .client_sessions = 16, .memory = NULL};
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
    if (!path || !cfg || !out || cfg->max_line < 2 || cfg->max_clients < 1 || cfg->workers < 1 ||
        cfg->workers > SRV_MAX_WORKERS || cfg->max_sessions < 1 || cfg->client_sessions < 1)
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

/* ---- reply buffers ---- */

/* 0, or -1 when memory ran out (b unchanged). */
static int obuf_add(obuf *b, const char *data, size_t n) {
    if (!n) return 0;
    if (b->off && b->off == b->len) b->off = b->len = 0;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        char *p = malloc(cap);
        if (!p) return -1;
        if (b->p) {
            memcpy(p, b->p, b->len);
            sodium_memzero(b->p, b->cap);
            free(b->p);
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
    return 0;
}

static void obuf_wipe(obuf *b) {
    if (b->p) sodium_memzero(b->p, b->len);
    b->len = b->off = 0;
}

static void obuf_free(obuf *b) {
    if (b->p) sodium_memzero(b->p, b->cap);
    free(b->p);
    *b = (obuf){0};
}

/* ---- the worker pool ---- */

/* Replies come from proto_feed, which answers all complete lines of a read
 * together so that stale suggests are coalesced (proto.h). On a worker. */
static void on_reply(void *ctx, const char *r) {
    static const char oom[] = "{\"error\":\"out of memory\"}";
    job *j = ctx;
    if (j->oom) return;
    const char *line = r ? r : oom;
    /* A lost reply would desynchronize the client: end it instead. */
    if (obuf_add(&j->out, line, strlen(line)) != 0 || obuf_add(&j->out, "\n", 1) != 0) j->oom = 1;
}

static void run_job(job *j) {
    client *c = j->c;
    if (proto_feed(c->p, c->id, &c->in, j->n ? j->data : NULL, j->n, j->finish, on_reply, j) != LAYA_OK) {
        /* The line was dropped and answered like an overlong one. */
    }
    sodium_memzero(j->data, j->n);
}

static void *worker_main(void *v) {
    pool *pl = v;
    pthread_mutex_lock(&pl->mu);
    for (;;) {
        while (!pl->stop && !pl->head) pthread_cond_wait(&pl->cv, &pl->mu);
        if (pl->stop) break;
        job *j = pl->head;
        pl->head = j->next;
        if (!pl->head) pl->tail = NULL;
        pthread_mutex_unlock(&pl->mu);
        run_job(j);
        pthread_mutex_lock(&pl->mu);
        j->next = pl->done;
        pl->done = j;
        uint64_t one = 1;
        if (write(pl->done_fd, &one, sizeof one) != (ssize_t)sizeof one) {
            /* cannot fail: the counter is far from overflowing */
        }
    }
    pthread_mutex_unlock(&pl->mu);
    return NULL;
}

static void pool_free(pool *pl) {
    pthread_cond_destroy(&pl->cv);
    pthread_mutex_destroy(&pl->mu);
    if (pl->done_fd >= 0) close(pl->done_fd);
    free(pl);
}

static laya_status pool_start(srv *s, char *err, size_t errlen) {
    pool *pl = calloc(1, sizeof *pl);
    if (!pl) return fail(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    pl->done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (pl->done_fd < 0 || pthread_mutex_init(&pl->mu, NULL) != 0 || pthread_cond_init(&pl->cv, NULL) != 0) {
        if (pl->done_fd >= 0) close(pl->done_fd);
        free(pl);
        return fail(err, errlen, LAYA_ERR_IO, "cannot set up the workers: %s", strerror(errno));
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &tag_done};
    if (epoll_ctl(s->ep, EPOLL_CTL_ADD, pl->done_fd, &ev) != 0) {
        pool_free(pl);
        return fail(err, errlen, LAYA_ERR_IO, "epoll_ctl: %s", strerror(errno));
    }
    /* Workers inherit this thread's mask (SIGTERM/SIGINT blocked): the
     * signals stay on the signalfd. */
    for (int i = 0; i < s->cfg.workers; i++) {
        if (pthread_create(&pl->th[i], NULL, worker_main, pl) != 0) break;
        pl->n_threads++;
    }
    s->pl = pl;
    if (!pl->n_threads) return fail(err, errlen, LAYA_ERR_IO, "cannot start a worker thread: %s", strerror(errno));
    return LAYA_OK;
}

/* Stops the workers, waiting at most STOP_WAIT_MS for running jobs. 1 if
 * every worker ended (the pool is freed), 0 if some job is still running
 * (the pool is left to it). */
static int pool_stop(pool *pl) {
    pthread_mutex_lock(&pl->mu);
    pl->stop = 1;
    pthread_cond_broadcast(&pl->cv);
    pthread_mutex_unlock(&pl->mu);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += STOP_WAIT_MS / 1000;
    until.tv_nsec += (long)(STOP_WAIT_MS % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    int all = 1;
    for (int i = 0; i < pl->n_threads; i++) {
        if (pthread_timedjoin_np(pl->th[i], NULL, &until) != 0) {
            pthread_detach(pl->th[i]);
            all = 0;
        }
    }
    if (all) pool_free(pl);
    return all;
}

/* ---- clients ---- */

/* Puts the listener back in the epoll set (a descriptor may be free again)
 * and takes the spare back if it was lost. */
static void resume_listener(srv *s) {
    if (s->spare_fd < 0) s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &tag_listen};
    if (epoll_ctl(s->ep, EPOLL_CTL_MOD, s->listen_fd, &ev) == 0) s->paused = 0;
}

/* Closes c and frees it; not while its job is out (busy). */
static void client_close(srv *s, client *c) {
    epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    s->n_sess -= c->n_sess;
    proto_free(c->p);
    if (c->in.buf) sodium_memzero(c->in.buf, c->in.cap);
    proto_lines_free(&c->in);
    obuf_free(&c->out);
    if (c->job) {
        obuf_free(&c->job->out);
        free(c->job);
    }
    if (c->prev) c->prev->next = c->next;
    else s->clients = c->next;
    if (c->next) c->next->prev = c->prev;
    s->n_clients--;
    free(c);
    if (s->paused) resume_listener(s);
}

int srv_close(srv *s) {
    if (!s) return 1;
    int stopped = 1;
    if (s->pl) stopped = pool_stop(s->pl);
    for (client *c = s->clients, *next; c; c = next) {
        next = c->next;
        if (!c->busy || stopped) {
            c->busy = 0;
            client_close(s, c);
        } else {
            close(c->fd);   /* its job may still be running: the memory stays with it */
        }
    }
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
    return stopped;
}

/* Writes what the socket takes. 0 on success (maybe partial), -1 when the
 * peer is gone. */
static int flush(client *c) {
    obuf *b = &c->out;
    while (b->off < b->len) {
        ssize_t n = send(c->fd, b->p + b->off, b->len - b->off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            b->off += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return 0;
        } else {
            return -1;
        }
    }
    obuf_wipe(b);
    return 0;
}

/* Sets the client's epoll interest from its state, or closes it when there
 * is nothing left to do for it. */
static void update(srv *s, client *c) {
    size_t pending = c->out.len - c->out.off;
    if (c->busy) {
        /* Not read while its job is out; its earlier replies still drain. */
        uint32_t want = pending ? EPOLLOUT : 0;
        if (want != c->events) {
            struct epoll_event ev = {.events = want, .data.ptr = c};
            epoll_ctl(s->ep, EPOLL_CTL_MOD, c->fd, &ev);
            c->events = want;
        }
        return;
    }
    if ((c->eof || c->oom) && !pending) {
        client_close(s, c);
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
        int per = s->cfg.client_sessions < s->cfg.max_sessions ? s->cfg.client_sessions : s->cfg.max_sessions;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        if (!c || proto_new(s->m, &s->ecfg, per, &c->p) != LAYA_OK) {
            if (c) free(c);
            refuse(fd, "the daemon is out of memory: try again later");
            continue;
        }
        proto_set_memory(c->p, s->cfg.memory);
        proto_set_notes(c->p, s->cfg.notes);
        proto_set_intent(c->p, s->cfg.intent);
        if (epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
            proto_free(c->p);
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
 * epoll event may be old: the loop did other work since. */
static int peer_gone(int fd) {
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    return poll(&pf, 1, 0) == 1 && (pf.revents & (POLLHUP | POLLERR | POLLNVAL));
}

/* Hands the client's read (or its end of input) to the workers. */
static void dispatch(srv *s, client *c, size_t n, int finish) {
    job *j = c->job;
    j->n = n;
    j->finish = finish;
    j->next = NULL;
    c->busy = 1;
    pool *pl = s->pl;
    pthread_mutex_lock(&pl->mu);
    if (pl->tail) pl->tail->next = j;
    else pl->head = j;
    pl->tail = j;
    pthread_cond_signal(&pl->cv);
    pthread_mutex_unlock(&pl->mu);
}

static void on_client(srv *s, client *c, uint32_t events) {
    if (c->busy) {
        if (events & (EPOLLERR | EPOLLHUP)) {
            /* Out of the epoll set (a hung-up descriptor would wake every
             * wait); closed when its job is back. */
            epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
            c->gone = 1;
            return;
        }
        if (flush(c) != 0) {
            epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
            c->gone = 1;
            return;
        }
        update(s, c);
        return;
    }
    if ((events & (EPOLLERR | EPOLLHUP)) || peer_gone(c->fd)) {
        client_close(s, c);
        return;
    }
    if (events & EPOLLIN) {
        if (!c->job && !(c->job = calloc(1, sizeof *c->job))) {
            client_close(s, c);   /* out of memory: nothing can be answered */
            return;
        }
        c->job->c = c;
        ssize_t n = read(c->fd, c->job->data, sizeof c->job->data);
        if (n > 0) {
            dispatch(s, c, (size_t)n, 0);
        } else if (n == 0) {
            c->eof = 1;
            dispatch(s, c, 0, 1);
        } else if (errno != EAGAIN && errno != EINTR) {
            client_close(s, c);
            return;
        }
    }
    if (flush(c) != 0) {
        if (c->busy) {
            epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
            c->gone = 1;
        } else {
            client_close(s, c);
        }
        return;
    }
    update(s, c);
}

/* Keeps the sessions over all clients within max_sessions: the idle client
 * holding the most (the least recently active among equals) loses them. */
static void cap_sessions(srv *s) {
    while (s->n_sess > s->cfg.max_sessions) {
        client *v = NULL;
        for (client *c = s->clients; c; c = c->next)
            if (!c->busy && c->n_sess > 0 &&
                (!v || c->n_sess > v->n_sess || (c->n_sess == v->n_sess && c->last_used < v->last_used)))
                v = c;
        if (!v) return;   /* all held by running jobs: checked again when they are back */
        proto_drop_owner(v->p, v->id);
        s->n_sess -= v->n_sess;
        v->n_sess = 0;
    }
}

/* Jobs back from the workers: their replies go out, their clients read on. */
static void on_done(srv *s) {
    pool *pl = s->pl;
    uint64_t cnt;
    if (read(pl->done_fd, &cnt, sizeof cnt) < 0) {
        /* EAGAIN: another wake-up already took them */
    }
    pthread_mutex_lock(&pl->mu);
    job *j = pl->done;
    pl->done = NULL;
    pthread_mutex_unlock(&pl->mu);
    while (j) {
        job *next = j->next;
        client *c = j->c;
        c->busy = 0;
        int n = proto_sessions(c->p);
        s->n_sess += n - c->n_sess;
        c->n_sess = n;
        c->last_used = ++s->clock;
        if (c->gone) {
            obuf_wipe(&j->out);
            client_close(s, c);
        } else {
            if (j->oom || obuf_add(&c->out, j->out.p + j->out.off, j->out.len - j->out.off) != 0) c->oom = 1;
            obuf_wipe(&j->out);
            j->oom = 0;
            if (flush(c) != 0) client_close(s, c);
            else update(s, c);
        }
        j = next;
    }
    cap_sessions(s);
}

laya_status srv_run(srv *s, const laya_model *m, const laya_search_opts *ecfg, char *err, size_t errlen) {
    if (!s || !m || !ecfg) return fail(err, errlen, LAYA_ERR_ARG, "srv_run: NULL argument");
    s->m = m;
    s->ecfg = *ecfg;
    /* Jansson seeds its hash function when it makes its first object; make
     * that happen here, before there are threads to race for it. */
    free(proto_error("%s", ""));
    laya_status st = pool_start(s, err, errlen);
    if (st != LAYA_OK) return st;
    struct epoll_event evs[MAX_EVENTS];
    for (;;) {
        int n = epoll_wait(s->ep, evs, MAX_EVENTS, s->paused ? PAUSE_MS : -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail(err, errlen, LAYA_ERR_IO, "epoll_wait: %s", strerror(errno));
        }
        if (n == 0 && s->paused) resume_listener(s);
        /* A client is closed only while its own event is handled (it
         * appears once per batch), or by on_done, which therefore runs
         * after the batch: no dangling pointer is left in evs. */
        int done = 0;
        for (int i = 0; i < n; i++) {
            void *tag = evs[i].data.ptr;
            if (tag == &tag_signal) {
                struct signalfd_siginfo si;
                if (read(s->sig_fd, &si, sizeof si) == (ssize_t)sizeof si) return LAYA_OK;
            } else if (tag == &tag_listen) {
                on_accept(s);
            } else if (tag == &tag_done) {
                done = 1;
            } else {
                on_client(s, tag, evs[i].events);
            }
        }
        if (done) on_done(s);
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
