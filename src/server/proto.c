/* proto.c - the JSON-lines suggestion protocol (see proto.h): request
 * parsing with Jansson (strict UTF-8, duplicate keys refused), sessions in
 * one LRU table keyed by (owner, id), and line framing with a hard bound. */
#include "server/proto.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    uint64_t owner;
    char id[PROTO_MAX_SID + 1];
    laya_session *s;
    uint64_t used;   /* request counter at last use: the LRU order */
} slot;

struct proto {
    const laya_model *m;
    engine_cfg cfg;
    slot *slots;     /* (max_slots) */
    int n_slots, max_slots;
    uint64_t clock;
};

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e6 * (double)ts.tv_sec + 1e-3 * (double)ts.tv_nsec;
}

laya_status proto_new(const laya_model *m, const engine_cfg *cfg, int max_sessions, proto **out) {
    if (!m || !cfg || !out || max_sessions < 1) return LAYA_ERR_ARG;
    proto *p = calloc(1, sizeof *p);
    if (p) p->slots = calloc((size_t)max_sessions, sizeof *p->slots);
    if (!p || !p->slots) {
        free(p);
        return LAYA_ERR_NOMEM;
    }
    p->m = m;
    p->cfg = *cfg;
    p->max_slots = max_sessions;
    *out = p;
    return LAYA_OK;
}

void proto_free(proto *p) {
    if (!p) return;
    for (int i = 0; i < p->n_slots; i++) laya_session_free(p->slots[i].s);
    free(p->slots);
    free(p);
}

int proto_sessions(const proto *p) { return p->n_slots; }

void proto_drop_owner(proto *p, uint64_t owner) {
    for (int i = 0; i < p->n_slots;) {
        if (p->slots[i].owner == owner) {
            laya_session_free(p->slots[i].s);
            p->slots[i] = p->slots[--p->n_slots];
        } else {
            i++;
        }
    }
}

static json_t *verror(const char *fmt, va_list ap) {
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    return json_pack("{s:s}", "error", msg);
}

static json_t *error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    json_t *j = verror(fmt, ap);
    va_end(ap);
    return j;
}

/* Consumes j. */
static char *dump(json_t *j) {
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return s;
}

char *proto_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    json_t *j = verror(fmt, ap);
    va_end(ap);
    return dump(j);
}

/* The session (owner, id), opened if new (closing the least recently used
 * one when all slots are taken). NULL with *err set on failure. */
static laya_session *session_get(proto *p, uint64_t owner, const char *id, json_t **err) {
    slot *lru = NULL;
    for (int i = 0; i < p->n_slots; i++) {
        slot *sl = &p->slots[i];
        if (sl->owner == owner && !strcmp(sl->id, id)) {
            sl->used = ++p->clock;
            return sl->s;
        }
        if (!lru || sl->used < lru->used) lru = sl;
    }
    slot *sl;
    if (p->n_slots < p->max_slots) {
        sl = &p->slots[p->n_slots++];
    } else {
        sl = lru;
        laya_session_free(sl->s);
        sl->s = NULL;
    }
    laya_status st = laya_session_new(p->m, &sl->s);
    if (st == LAYA_OK) st = engine_set_cfg(sl->s, &p->cfg);
    if (st != LAYA_OK) {
        laya_session_free(sl->s);
        *sl = p->slots[--p->n_slots];
        *err = error("cannot open session: %s", laya_status_str(st));
        return NULL;
    }
    sl->owner = owner;
    snprintf(sl->id, sizeof sl->id, "%s", id);
    sl->used = ++p->clock;
    return sl->s;
}

/* A string member: NULL (and *err set) if absent or not a string, unless
 * optional. */
static const char *get_str(json_t *req, const char *key, int optional, size_t *len, json_t **err) {
    json_t *v = json_object_get(req, key);
    if (!v && optional) return NULL;
    if (!json_is_string(v)) {
        *err = error("\"%s\" must be a string", key);
        return NULL;
    }
    if (len) *len = json_string_length(v);
    return json_string_value(v);
}

static json_t *op_suggest(proto *p, uint64_t owner, const char *sid, json_t *req) {
    json_t *err = NULL;
    size_t len;
    const char *ctx = get_str(req, "context", 0, &len, &err);
    if (!ctx) return err;
    int k = 3;
    json_t *jk = json_object_get(req, "k");
    if (jk) {
        if (!json_is_integer(jk) || json_integer_value(jk) < 0 || json_integer_value(jk) > ENGINE_MAX_K)
            return error("\"k\" must be an integer in 0..%d", ENGINE_MAX_K);
        k = (int)json_integer_value(jk);
    }
    laya_session *s = session_get(p, owner, sid, &err);
    if (!s) return err;
    laya_suggestion out[ENGINE_MAX_K];
    int n = 0;
    double t0 = now_us();
    laya_status st = laya_session_set_context(s, ctx, len);
    if (st == LAYA_OK) st = laya_suggest(s, k, out, &n);
    double us = now_us() - t0;
    if (st != LAYA_OK) return error("suggest failed: %s", laya_status_str(st));
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(arr, json_stringn(out[i].text, out[i].len));
    return json_pack("{s:o,s:I}", "suggestions", arr, "us", (json_int_t)(us + 0.5));
}

static json_t *handle(proto *p, uint64_t owner, json_t *req) {
    json_t *err = NULL;
    if (!json_is_object(req)) return error("a request must be a JSON object");
    const char *op = get_str(req, "op", 0, NULL, &err);
    if (!op) return err;
    const char *sid = get_str(req, "session", 1, NULL, &err);
    if (err) return err;
    if (!sid) sid = "default";
    if (strlen(sid) > PROTO_MAX_SID || !*sid) return error("\"session\" must be 1..%d bytes", PROTO_MAX_SID);
    if (!strcmp(op, "suggest")) return op_suggest(p, owner, sid, req);
    if (!strcmp(op, "commit")) return get_str(req, "text", 0, NULL, &err) ? json_pack("{s:b}", "ok", 1) : err;
    if (!strcmp(op, "reset")) {
        for (int i = 0; i < p->n_slots; i++)
            if (p->slots[i].owner == owner && !strcmp(p->slots[i].id, sid)) laya_session_reset(p->slots[i].s);
        return json_pack("{s:b}", "ok", 1);
    }
    if (!strcmp(op, "score")) {
        size_t len;
        const char *text = get_str(req, "text", 0, &len, &err);
        if (!text) return err;
        double bits = 0;
        laya_status st = engine_score(p->m, text, len, &bits);
        if (st != LAYA_OK) return error("score failed: %s", laya_status_str(st));
        return json_pack("{s:f,s:I}", "bits", bits, "bytes", (json_int_t)len);
    }
    return error("unknown op \"%.64s\" (expected suggest, commit, reset or score)", op);
}

char *proto_handle(proto *p, uint64_t owner, const char *line, size_t n) {
    json_error_t je;
    json_t *req = json_loadb(line, n, JSON_REJECT_DUPLICATES, &je);
    if (!req) return proto_error("malformed request (column %d): %s", je.column, je.text);
    char *s = dump(handle(p, owner, req));
    json_decref(req);
    return s;
}

/* ---- line framing ------------------------------------------------------ */

void proto_lines_init(proto_lines *r, size_t max) { *r = (proto_lines){.max = max}; }

void proto_lines_free(proto_lines *r) {
    free(r->buf);
    *r = (proto_lines){.max = r->max};
}

static void emit(proto_lines *r, proto_line_fn fn, void *ctx) {
    if (r->skipping) {
        fn(ctx, NULL, 0);
    } else {
        size_t a = 0, b = r->len;
        while (a < b && (r->buf[a] == ' ' || r->buf[a] == '\t' || r->buf[a] == '\r')) a++;
        while (b > a && r->buf[b - 1] == '\r') b--;
        if (a < b) fn(ctx, r->buf + a, b - a);
    }
    r->len = 0;
    r->skipping = 0;
}

laya_status proto_lines_feed(proto_lines *r, const char *data, size_t n, proto_line_fn fn, void *ctx) {
    laya_status st = LAYA_OK;
    while (n) {
        const char *nl = memchr(data, '\n', n);
        size_t take = nl ? (size_t)(nl - data) : n;
        if (!r->skipping && r->len + take > r->max) {
            r->skipping = 1;
            r->len = 0;
        }
        if (!r->skipping && take) {
            if (r->len + take > r->cap) {
                size_t cap = r->cap ? r->cap : 4096;
                while (cap < r->len + take) cap *= 2;
                if (cap > r->max) cap = r->max;
                char *b = realloc(r->buf, cap);
                if (!b) {
                    /* The line cannot be kept: treat it like an overlong one. */
                    r->skipping = 1;
                    r->len = 0;
                    st = LAYA_ERR_NOMEM;
                } else {
                    r->buf = b;
                    r->cap = cap;
                }
            }
            if (!r->skipping) {
                memcpy(r->buf + r->len, data, take);
                r->len += take;
            }
        }
        if (!nl) break;
        emit(r, fn, ctx);
        data += take + 1;
        n -= take + 1;
    }
    return st;
}

void proto_lines_finish(proto_lines *r, proto_line_fn fn, void *ctx) {
    if (r->len || r->skipping) emit(r, fn, ctx);
}
