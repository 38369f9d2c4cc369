/* cmd_serve.c - `laya serve --stdio`: the JSON-lines suggestion protocol of
 * shared/EVAL.md on stdin/stdout, one reply line per request line.
 *
 *   {"op":"suggest","session":"s1","context":"...","k":3}
 *        -> {"suggestions":["...", ...],"us":<engine microseconds>}
 *   {"op":"commit","session":"s1","text":"..."}   -> {"ok":true}
 *   {"op":"reset","session":"s1"}                 -> {"ok":true}
 *   {"op":"score","session":"s1","text":"..."}    -> {"bits":B,"bytes":N}
 *        (the model's cost of text as a fresh document, for bits per byte)
 *
 * "session" is optional ("default"); at most --max-sessions (16: about 2 MB
 * each with the default model) live at once,
 * the least recently used one is closed to make room. Anything malformed
 * (bad JSON, invalid UTF-8, a wrong type, an unknown op, a line over
 * MAX_LINE bytes) gets {"error":"..."} and the server reads on. Blank lines
 * are skipped. Commit is acknowledged; learning from it is the personal
 * model's job (C8) and nothing typed is ever logged. */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "engine/engine.h"

enum { MAX_LINE = 8 << 20, MAX_SID = 128, DEFAULT_SESSIONS = 16 };

typedef struct {
    char id[MAX_SID + 1];
    laya_session *s;
    uint64_t used;   /* request counter at last use: the LRU order */
} slot;

typedef struct {
    laya_model *m;
    engine_cfg cfg;
    slot *slots;
    int n_slots, max_slots;
    uint64_t clock;
} server;

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e6 * (double)ts.tv_sec + 1e-3 * (double)ts.tv_nsec;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: laya serve --stdio [--model PATH] [--max-sessions N]\n"
            "                  [--beam N] [--max-tokens N] [--max-words N]\n"
            "Answers JSON lines on stdin with JSON lines on stdout (shared/EVAL.md):\n"
            "  {\"op\":\"suggest\",\"session\":\"s1\",\"context\":\"text before the cursor\",\"k\":3}\n"
            "  {\"op\":\"commit\",\"session\":\"s1\",\"text\":\"...\"}   {\"op\":\"reset\",\"session\":\"s1\"}\n"
            "  {\"op\":\"score\",\"text\":\"...\"}  (bits the model needs for the text)\n"
            "Sessions: at most --max-sessions (default %d); the least recently used is closed.\n",
            DEFAULT_SESSIONS);
}

static int parse_int(const char *opt, const char *v, int lo, int hi) {
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || end == v || *end || x < lo || x > hi)
        cli_die("%s expects an integer in %d..%d, got '%s'", opt, lo, hi, v ? v : "(nothing)");
    return (int)x;
}

/* Writes one reply line; a closed stdout ends the server quietly. */
static void reply(json_t *j) {
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!s) s = strdup("{\"error\":\"internal error: cannot encode the reply\"}");
    if (!s || fputs(s, stdout) == EOF || fputc('\n', stdout) == EOF || fflush(stdout) == EOF) exit(0);
    free(s);
}

static void reply_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void reply_error(const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    reply(json_pack("{s:s}", "error", msg));
}

/* The session named id, opened if new (closing the least recently used one
 * when all slots are taken). NULL with an error reply sent on failure. */
static laya_session *session_get(server *sv, const char *id) {
    slot *lru = NULL;
    for (int i = 0; i < sv->n_slots; i++) {
        if (!strcmp(sv->slots[i].id, id)) {
            sv->slots[i].used = ++sv->clock;
            return sv->slots[i].s;
        }
        if (!lru || sv->slots[i].used < lru->used) lru = &sv->slots[i];
    }
    slot *sl;
    if (sv->n_slots < sv->max_slots) {
        sl = &sv->slots[sv->n_slots++];
    } else {
        sl = lru;
        laya_session_free(sl->s);
        sl->s = NULL;
    }
    laya_status st = laya_session_new(sv->m, &sl->s);
    if (st == LAYA_OK) st = engine_set_cfg(sl->s, &sv->cfg);
    if (st != LAYA_OK) {
        laya_session_free(sl->s);
        *sl = sv->slots[--sv->n_slots];
        reply_error("cannot open session: %s", laya_status_str(st));
        return NULL;
    }
    snprintf(sl->id, sizeof sl->id, "%s", id);
    sl->used = ++sv->clock;
    return sl->s;
}

/* A string member: NULL (and an error reply) if absent or not a string,
 * unless optional. */
static const char *get_str(json_t *req, const char *key, int optional, size_t *len) {
    json_t *v = json_object_get(req, key);
    if (!v && optional) return NULL;
    if (!json_is_string(v)) {
        reply_error("\"%s\" must be a string", key);
        return NULL;
    }
    if (len) *len = json_string_length(v);
    return json_string_value(v);
}

static void op_suggest(server *sv, json_t *req, laya_session *s) {
    size_t len;
    const char *ctx = get_str(req, "context", 0, &len);
    if (!ctx) return;
    int k = 3;
    json_t *jk = json_object_get(req, "k");
    if (jk) {
        if (!json_is_integer(jk) || json_integer_value(jk) < 0 || json_integer_value(jk) > ENGINE_MAX_K) {
            reply_error("\"k\" must be an integer in 0..%d", ENGINE_MAX_K);
            return;
        }
        k = (int)json_integer_value(jk);
    }
    laya_suggestion out[ENGINE_MAX_K];
    int n = 0;
    double t0 = now_us();
    laya_status st = laya_session_set_context(s, ctx, len);
    if (st == LAYA_OK) st = laya_suggest(s, k, out, &n);
    double us = now_us() - t0;
    if (st != LAYA_OK) {
        reply_error("suggest failed: %s", laya_status_str(st));
        return;
    }
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(arr, json_stringn(out[i].text, out[i].len));
    reply(json_pack("{s:o,s:I}", "suggestions", arr, "us", (json_int_t)(us + 0.5)));
}

static void handle(server *sv, const char *line, size_t n) {
    json_error_t je;
    json_t *req = json_loadb(line, n, JSON_REJECT_DUPLICATES, &je);
    if (!req) {
        reply_error("malformed request (column %d): %s", je.column, je.text);
        return;
    }
    if (!json_is_object(req)) {
        reply_error("a request must be a JSON object");
        json_decref(req);
        return;
    }
    const char *op = get_str(req, "op", 0, NULL);
    const char *sid = op ? get_str(req, "session", 1, NULL) : NULL;
    if (!op || (!sid && json_object_get(req, "session"))) {
        json_decref(req);
        return;
    }
    if (!sid) sid = "default";
    if (strlen(sid) > MAX_SID || !*sid) {
        reply_error("\"session\" must be 1..%d bytes", MAX_SID);
    } else if (!strcmp(op, "suggest")) {
        laya_session *s = session_get(sv, sid);
        if (s) op_suggest(sv, req, s);
    } else if (!strcmp(op, "commit")) {
        if (get_str(req, "text", 0, NULL)) reply(json_pack("{s:b}", "ok", 1));
    } else if (!strcmp(op, "reset")) {
        for (int i = 0; i < sv->n_slots; i++)
            if (!strcmp(sv->slots[i].id, sid)) laya_session_reset(sv->slots[i].s);
        reply(json_pack("{s:b}", "ok", 1));
    } else if (!strcmp(op, "score")) {
        size_t len;
        const char *text = get_str(req, "text", 0, &len);
        double bits = 0;
        laya_status st = text ? engine_score(sv->m, text, len, &bits) : LAYA_OK;
        if (text && st != LAYA_OK) reply_error("score failed: %s", laya_status_str(st));
        else if (text) reply(json_pack("{s:f,s:I}", "bits", bits, "bytes", (json_int_t)len));
    } else {
        reply_error("unknown op \"%.64s\" (expected suggest, commit, reset or score)", op);
    }
    json_decref(req);
}

int cmd_serve(int argc, char **argv) {
    const char *model_path = NULL;
    int stdio = 0, max_sessions = DEFAULT_SESSIONS;
    engine_cfg cfg = engine_cfg_default();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--stdio")) {
            stdio = 1;
        } else if (!strcmp(a, "--model")) {
            if (!v) cli_die("--model expects a path");
            model_path = v;
            i++;
        } else if (!strcmp(a, "--max-sessions")) {
            max_sessions = parse_int(a, v, 1, 100000);
            i++;
        } else if (!strcmp(a, "--beam")) {
            cfg.beam = parse_int(a, v, 1, ENGINE_MAX_BEAM);
            i++;
        } else if (!strcmp(a, "--max-tokens")) {
            cfg.max_tokens = parse_int(a, v, 1, 64);
            i++;
        } else if (!strcmp(a, "--max-words")) {
            cfg.max_words = parse_int(a, v, 1, 64);
            i++;
        } else {
            usage(stderr);
            cli_die("serve: unknown option '%s'", a);
        }
    }
    if (!stdio) {
        usage(stderr);
        cli_die("serve: only --stdio is available in this build (say --stdio)");
    }
    signal(SIGPIPE, SIG_IGN);
    server sv = {.cfg = cfg, .max_slots = max_sessions};
    sv.slots = calloc((size_t)max_sessions, sizeof *sv.slots);
    char *buf = malloc(MAX_LINE + 1);
    if (!sv.slots || !buf) cli_die("out of memory");
    sv.m = cli_load_model(model_path);

    /* Lines are read into one fixed buffer: an overlong line is skipped to
     * its newline and refused, never grown into unbounded memory. */
    size_t len = 0;
    int skipping = 0;
    for (;;) {
        int c = getchar_unlocked();
        if (c == EOF) break;
        if (c != '\n') {
            if (skipping) continue;
            if (len == MAX_LINE) {
                skipping = 1;
                continue;
            }
            buf[len++] = (char)c;
            continue;
        }
        if (skipping) {
            reply_error("request line longer than %d bytes: refused", MAX_LINE);
        } else {
            size_t a = 0;
            while (a < len && (buf[a] == ' ' || buf[a] == '\t' || buf[a] == '\r')) a++;
            if (a < len) handle(&sv, buf + a, len - a);
        }
        len = 0;
        skipping = 0;
    }
    if (len && !skipping) handle(&sv, buf, len);
    for (int i = 0; i < sv.n_slots; i++) laya_session_free(sv.slots[i].s);
    free(sv.slots);
    free(buf);
    laya_model_free(sv.m);
    return 0;
}
