/* srv.h - the Laya daemon's Unix-socket transport: one epoll loop, many
 * clients, each speaking the JSON-lines protocol of proto.h.
 *
 * Contract:
 *  - One thread does the I/O; cfg.workers threads answer the requests
 *    over one model in memory. A client has at most one read's worth of
 *    requests on a worker at a time, so its replies come in order and one
 *    client's long request (a huge score or context) delays only itself:
 *    until cfg.workers clients are busy at once, the others are answered
 *    as fast as the cores allow. Each connection is its own session
 *    namespace (proto.h): its sessions close when it disconnects; at most
 *    cfg.client_sessions per connection and cfg.max_sessions over all.
 *  - A request is a line. A line longer than cfg.max_line gets an error
 *    reply and is dropped; a client that stops reading its replies is not
 *    read from until it does (replies waiting per client are bounded); a
 *    client that vanishes, even mid-line, is closed and forgotten, and what
 *    it sent is not computed. Connections beyond max_clients, or beyond the
 *    descriptors the process may open, get an error line and are closed.
 *    Bytes a client sent or was sent are wiped from memory when freed.
 *  - The socket is 0600; the default one lives in $XDG_RUNTIME_DIR/laya/
 *    (made 0700). A lock file beside it (PATH.lock, flock) makes a second
 *    daemon on the same path refuse to start; a socket left by a daemon
 *    that died (no lock held) is reclaimed. PATH.lock is never followed as
 *    a symlink nor written unless it is a regular file of ours.
 *  - srv_open raises the soft limit on open files (RLIMIT_NOFILE) towards
 *    max_clients plus a reserve, within the hard limit.
 *  - srv_run returns on SIGTERM or SIGINT (read through a signalfd, so no
 *    handler runs in the middle of a request); srv_close removes the
 *    socket. Nothing here prints or exits: errors come back as a status and
 *    a sentence in err. */
#ifndef LAYA_SRV_H
#define LAYA_SRV_H

#include <stddef.h>
#include "laya.h"
#include "server/proto.h"

enum { SRV_MAX_WORKERS = 64 };

typedef struct {
    size_t max_line;     /* longest request line, bytes */
    int max_clients;     /* connections beyond this get an error and are closed */
    size_t max_pending;  /* reply bytes waiting for a client before it is no longer read */
    int workers;         /* threads answering requests, 1..SRV_MAX_WORKERS */
    int max_sessions;    /* sessions over all clients (see srv.c for the exact bound) */
    int client_sessions; /* sessions per client (its own least recently used is closed) */
    laya_memory *memory; /* what every connection learns into and draws on (borrowed); NULL: none */
    laya_notes *notes;   /* the notes index suggest replies link to (borrowed); NULL: none */
    const laya_intent *intent;   /* the intent head suggest replies report with (borrowed); NULL: none */
} srv_cfg;

srv_cfg srv_cfg_default(void);


/* The default socket path, $XDG_RUNTIME_DIR/laya/laya.sock, into buf.
 * LAYA_ERR_ARG with a hint in err when XDG_RUNTIME_DIR is unset. */
laya_status srv_default_path(char *buf, size_t n, char *err, size_t errlen);

typedef struct srv srv;

/* The intent head connections accepted from now on report with (borrowed;
 * before srv_run: the model is loaded after srv_open). */
void srv_set_intent(srv *s, const laya_intent *h);

/* Takes the lock, reclaims a stale socket, binds and listens on path, and
 * blocks SIGTERM/SIGINT for the calling thread. When make_dir is set the
 * socket's directory is created 0700 if missing (the default path). *out
 * owned by the caller: srv_close. */
laya_status srv_open(const char *path, int make_dir, const srv_cfg *cfg, srv **out, char *err, size_t errlen);

/* Runs fn(arg) on a second thread while this one watches for SIGTERM and
 * SIGINT, so that work between srv_open and srv_run (loading the model,
 * which may be slow: a network file system) can be interrupted. Returns 1
 * when fn has returned, 0 when a signal came first: fn is then left running
 * and the caller is expected to srv_close and exit without returning from
 * the frame arg lives in. Without a thread to spare, fn runs here (1). */
int srv_run_task(srv *s, void (*fn)(void *), void *arg);

/* Serves the protocol over model m (borrowed: it must outlive the
 * workers, see srv_close) with search parameters ecfg until SIGTERM or
 * SIGINT (LAYA_OK), or a failure of the loop itself. */
laya_status srv_run(srv *s, const laya_model *m, const laya_search_opts *ecfg, char *err, size_t errlen);

/* Stops the workers, closes every connection, removes the socket and the
 * lock file. Returns 1 when everything stopped; 0 when a request was still
 * running after a grace period (2 s): its worker and memory are left to it,
 * so the caller must not free the model and should exit. NULL: 1. */
int srv_close(srv *s);

#endif
