/* cmd_serve.c - `laya serve`: the JSON-lines suggestion protocol of
 * docs/PROTOCOL.md (server/proto.h) on stdin/stdout (--stdio, one reply line
 * per request line) or as a daemon on a Unix socket (--socket [PATH],
 * server/srv.h: many clients at once, one model in memory, --workers
 * threads answering them).
 *
 *   {"op":"suggest","session":"s1","context":"...","k":3}
 *        -> {"suggestions":["...", ...],"us":<engine microseconds>}
 *   {"op":"commit","session":"s1","text":"..."}   -> {"ok":true}
 *   {"op":"reset","session":"s1"}                 -> {"ok":true}
 *   {"op":"score","session":"s1","text":"..."}    -> {"bits":B,"bytes":N}
 *        (the model's cost of text as a fresh document, for bits per byte)
 *
 * "session" is optional ("default"); sessions are per connection (stdio is
 * one). At most --max-sessions live at once (about 2 MB each with the
 * default model); the least recently used one is closed to make room.
 * Anything malformed (bad JSON, invalid UTF-8, a wrong type, an unknown op,
 * a line over the line limit) gets {"error":"..."} and the server reads on.
 * Blank lines are skipped. Nothing typed is ever logged. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "server/proto.h"
#include "server/srv.h"

enum { STDIO_MAX_LINE = 8 << 20, STDIO_SESSIONS = 16, SOCKET_SESSIONS = 64 };

static void usage(FILE *f) {
    fprintf(f,
            "usage: laya serve --stdio | --socket [PATH]  [--model PATH] [--allow-unsigned]\n"
            "                  [--max-sessions N]\n"
            "                  [--max-line BYTES] [--max-clients N] [--workers N]\n"
            "                  [--client-sessions N] [--memory PATH | --no-learn] [--notes PATH]\n"
            "                  [--intent PATH | --no-intent]\n"
            "                  " CLI_SEARCH_USAGE "\n"
            "Answers JSON lines with JSON lines (docs/PROTOCOL.md):\n"
            "  {\"op\":\"suggest\",\"session\":\"s1\",\"context\":\"text before the cursor\",\"k\":3}\n"
            "  {\"op\":\"commit\",\"session\":\"s1\",\"text\":\"...\"}   {\"op\":\"reset\",\"session\":\"s1\"}\n"
            "  {\"op\":\"score\",\"text\":\"...\"}  (bits the model needs for the text)\n"
            "--stdio            on stdin/stdout (lines up to %d bytes)\n"
            "--socket [PATH]    a daemon on a Unix socket (0600), default\n"
            "                   $XDG_RUNTIME_DIR/laya/laya.sock; lines up to 1 MiB; stops on\n"
            "                   SIGTERM/SIGINT and removes the socket\n"
            "--allow-unsigned   load a model without a trusted signature (one you trained)\n"
            "--workers N        threads answering socket requests (default: the cores, 4..16):\n"
            "                   one client's long request holds one of them, not the daemon\n"
            "--memory PATH      the personal memory commits go to (else $LAYA_MEMORY, else\n"
            "                   $XDG_DATA_HOME/laya/memory.db); shared with every Laya process\n"
            "--no-learn         learn nothing: commits are dropped, suggestions come from the\n"
            "                   model alone\n"
            "--intent PATH      the intent head (`laya intent train`) suggest replies report\n"
            "                   with (\"intent\":{...}); default MODEL.intent.safetensors beside\n"
            "                   the model when it exists; --no-intent: none\n"
            "--notes PATH       the notes index (`laya notes index DIR`) suggest replies link to\n"
            "                   (\"notes\":[...]) and the notes op searches; default\n"
            "                   $XDG_DATA_HOME/laya/notes.db when it exists\n"
            "Sessions are per connection; at most --max-sessions over all of them (default\n"
            "%d with --stdio, %d with --socket) and, with --socket, --client-sessions per\n"
            "connection (default 16); beyond that some are closed (they reopen empty).\n",
            STDIO_MAX_LINE, STDIO_SESSIONS, SOCKET_SESSIONS);
}

/* Writes one reply line (from proto_feed, which coalesces stale suggests
 * among the lines of one read); a closed stdout ends the server quietly. */
static void stdio_reply(void *ctx, const char *r) {
    static const char oom[] = "{\"error\":\"out of memory\"}";
    (void)ctx;
    if (fputs(r ? r : oom, stdout) == EOF || fputc('\n', stdout) == EOF || fflush(stdout) == EOF) exit(0);
}

static int serve_stdio(proto *p) {
    /* Lines are cut by proto_lines: an overlong line is skipped to its
     * newline and refused, never grown into unbounded memory. */
    proto_lines in;
    proto_lines_init(&in, STDIO_MAX_LINE);
    static char buf[64 * 1024];
    for (;;) {
        ssize_t n = read(0, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        proto_feed(p, 0, &in, buf, (size_t)n, 0, stdio_reply, NULL);
    }
    proto_feed(p, 0, &in, NULL, 0, 1, stdio_reply, NULL);
    proto_lines_free(&in);
    return 0;
}

typedef struct {
    const char *path;
    int allow_unsigned;
    laya_model *m;
    laya_status st;
    char err[1024];
} load_job;

static void load_model(void *v) {
    load_job *j = v;
    laya_load_opts o = {.flags = j->allow_unsigned ? LAYA_LOAD_ALLOW_UNSIGNED : 0};
    j->st = laya_model_load_opts(j->path, &o, &j->m, j->err, sizeof j->err);
}

/* The notes index: path (it must open), else the default one when it
 * exists (a damaged one is reported and left out), else none. */
static laya_notes *open_notes(const char *path) {
    char err[1024] = "", def[4096];
    laya_notes *n = NULL;
    if (path) {
        laya_status st = laya_notes_open(path, 0, &n, err, sizeof err);
        if (st != LAYA_OK) cli_die("serve: --notes: %s", *err ? err : laya_status_str(st));
        return n;
    }
    if (laya_notes_default_path(def, sizeof def, NULL, 0) != LAYA_OK || access(def, F_OK) != 0) return NULL;
    if (laya_notes_open(def, 0, &n, err, sizeof err) != LAYA_OK)
        fprintf(stderr, "laya: serve: notes left out: %s\n", err);
    return n;
}

int cmd_serve(int argc, char **argv) {
    const char *model_path = NULL, *sock_path = NULL, *memory_path = NULL, *notes_path = NULL, *intent_path = NULL;
    int no_intent = 0, stdio = 0, sock = 0, max_sessions = 0, no_learn = 0, allow_unsigned = 0;
    laya_search_opts cfg = laya_search_defaults();
    srv_cfg scfg = srv_cfg_default();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int used = cli_search_opt(argc, argv, i, &cfg);
        if (used) {
            i += used - 1;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--no-learn")) {
            no_learn = 1;
        } else if (!strcmp(a, "--memory")) {
            if (!v) cli_die("--memory expects a path");
            memory_path = v;
            i++;
        } else if (!strcmp(a, "--notes")) {
            if (!v) cli_die("--notes expects a path (an index made by `laya notes index DIR`)");
            notes_path = v;
            i++;
        } else if (!strcmp(a, "--intent")) {
            if (!v) cli_die("--intent expects a path (a head made by `laya intent train`)");
            intent_path = v;
            i++;
        } else if (!strcmp(a, "--no-intent")) {
            no_intent = 1;
        } else if (!strcmp(a, "--stdio")) {
            stdio = 1;
        } else if (!strcmp(a, "--allow-unsigned")) {
            allow_unsigned = 1;
        } else if (!strcmp(a, "--socket")) {
            sock = 1;
            if (v && v[0] != '-') {
                sock_path = v;
                i++;
            }
        } else if (!strcmp(a, "--model")) {
            if (!v) cli_die("--model expects a path");
            model_path = v;
            i++;
        } else if (!strcmp(a, "--max-sessions")) {
            max_sessions = (int)cli_int(a, v, 1, 100000);
            i++;
        } else if (!strcmp(a, "--max-line")) {
            scfg.max_line = (size_t)cli_int(a, v, 64, 64L << 20);
            i++;
        } else if (!strcmp(a, "--max-clients")) {
            scfg.max_clients = (int)cli_int(a, v, 1, 100000);
            i++;
        } else if (!strcmp(a, "--workers")) {
            scfg.workers = (int)cli_int(a, v, 1, SRV_MAX_WORKERS);
            i++;
        } else if (!strcmp(a, "--client-sessions")) {
            scfg.client_sessions = (int)cli_int(a, v, 1, 100000);
            i++;
        } else {
            usage(stderr);
            cli_die("serve: unknown option '%s'", a);
        }
    }
    if (stdio == sock) {
        usage(stderr);
        cli_die("serve: say either --stdio or --socket [PATH]");
    }
    if (!max_sessions) max_sessions = stdio ? STDIO_SESSIONS : SOCKET_SESSIONS;
    scfg.max_sessions = max_sessions;
    laya_memory *mem = no_learn ? NULL : cli_open_memory(memory_path);
    scfg.memory = mem;
    laya_notes *notes = open_notes(notes_path);
    scfg.notes = notes;

    char err[1024] = "", def[256];
    srv *s = NULL;
    if (sock) {
        /* Bind before loading the model: a second daemon is refused at
         * once, and clients that connect early wait in the backlog. */
        if (!sock_path) {
            if (srv_default_path(def, sizeof def, err, sizeof err) != LAYA_OK) cli_die("serve: %s", err);
            sock_path = def;
        }
        if (srv_open(sock_path, sock_path == def, &scfg, &s, err, sizeof err) != LAYA_OK)
            cli_die("serve: %s", err);
    }
    load_job job = {.path = cli_model_path(model_path), .allow_unsigned = allow_unsigned};
    if (s && !srv_run_task(s, load_model, &job)) {
        /* SIGTERM or SIGINT while loading: the load is abandoned. exit,
         * not return: the loading thread may still write into job. */
        srv_close(s);
        exit(0);
    }
    if (!s) load_model(&job);
    const char *mpath = job.path;
    laya_model *m = job.m;
    proto *p = NULL;
    laya_status st = job.st;
    snprintf(err, sizeof err, "%s", job.err);
    if (st != LAYA_OK) {
        srv_close(s);   /* the socket goes before the message, so no stale one is left */
        cli_die("cannot load model '%s': %s%s%s%s", mpath, laya_status_str(st), *err ? ": " : "", err,
                st == LAYA_ERR_SIGNATURE ? "" : "\n  hint: pass --model PATH or set LAYA_MODEL");
    }
    /* The intent head: --intent PATH, else MODEL.intent.safetensors beside
     * the model when it exists (a refused one is left out with a message). */
    laya_intent *intent = no_intent ? NULL : cli_load_intent(m, mpath, intent_path, allow_unsigned, 0);
    if (s) srv_set_intent(s, intent);
    if (mem && laya_memory_prepare(mem, err, sizeof err) != LAYA_OK)
        fprintf(stderr, "laya: serve: the memory could not be read (%s); going on with what was read\n", err);
    int rc = 0;
    if (stdio) {
        if (proto_new(m, &cfg, max_sessions, &p) != LAYA_OK) cli_die("out of memory");
        proto_set_memory(p, mem);
        proto_set_notes(p, notes);
        proto_set_intent(p, intent);
        rc = serve_stdio(p);
        proto_free(p);
    } else {
        fprintf(stderr, "laya: serving on %s (pid %ld, %d workers)\n", sock_path, (long)getpid(), scfg.workers);
        if (srv_run(s, m, &cfg, err, sizeof err) != LAYA_OK) {
            fprintf(stderr, "laya: serve: %s\n", err);
            rc = 1;
        }
        /* A request still running after the grace period keeps the model:
         * exit with it in place. */
        if (!srv_close(s)) exit(rc);
    }
    laya_intent_free(intent);
    laya_memory_free(mem);
    laya_notes_free(notes);
    laya_model_free(m);
    return rc;
}
