/* proto.c - the JSON-lines suggestion protocol (see proto.h): request
 * parsing with Jansson (strict UTF-8, duplicate keys refused), sessions in
 * one LRU table keyed by (owner, id), and line framing with a hard bound. */
#include "server/proto.h"

#include "engine/decide.h"

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
    laya_decider *d;   /* NULL until a request brings timing, a decision or feedback */
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
    for (int i = 0; i < p->n_slots; i++) {
        laya_session_free(p->slots[i].s);
        laya_decider_free(p->slots[i].d);
    }
    free(p->slots);
    free(p);
}

int proto_sessions(const proto *p) { return p->n_slots; }

void proto_drop_owner(proto *p, uint64_t owner) {
    for (int i = 0; i < p->n_slots;) {
        if (p->slots[i].owner == owner) {
            laya_session_free(p->slots[i].s);
            laya_decider_free(p->slots[i].d);
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

/* The slot of session (owner, id), opened if new (closing the least
 * recently used one when all slots are taken). NULL with *err set on
 * failure. */
static slot *session_get(proto *p, uint64_t owner, const char *id, json_t **err) {
    slot *lru = NULL;
    for (int i = 0; i < p->n_slots; i++) {
        slot *sl = &p->slots[i];
        if (sl->owner == owner && !strcmp(sl->id, id)) {
            sl->used = ++p->clock;
            return sl;
        }
        if (!lru || sl->used < lru->used) lru = sl;
    }
    slot *sl;
    if (p->n_slots < p->max_slots) {
        sl = &p->slots[p->n_slots++];
    } else {
        sl = lru;
        laya_session_free(sl->s);
        laya_decider_free(sl->d);
        sl->s = NULL;
    }
    sl->d = NULL;
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
    return sl;
}

/* The slot's decider, made on first use. NULL with *err set on failure. */
static laya_decider *decider_get(slot *sl, json_t **err) {
    if (!sl->d && laya_decider_new(&sl->d) != LAYA_OK) *err = error("cannot make a decider: out of memory");
    return sl->d;
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

/* An optional boolean member: def if absent, -1 (and *err set) if not a
 * boolean. */
static int get_bool(json_t *req, const char *key, int def, json_t **err) {
    json_t *v = json_object_get(req, key);
    if (!v) return def;
    if (!json_is_boolean(v)) {
        *err = error("\"%s\" must be true or false", key);
        return -1;
    }
    return json_is_true(v);
}

/* A suggest request. stale: a newer suggest for the same session is already
 * queued behind this one (proto_feed), so the engine's work is skipped and
 * only the decider sees the keystroke's timing. */
static json_t *op_suggest(proto *p, uint64_t owner, const char *sid, json_t *req, int stale) {
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
    json_t *jt = json_object_get(req, "t_ms");
    if (jt && !(json_is_number(jt) && json_number_value(jt) >= 0 && json_number_value(jt) < 1e15))
        return error("\"t_ms\" must be a number of milliseconds >= 0");
    int decide = get_bool(req, "decide", 0, &err);
    if (decide < 0) return err;
    slot *sl = session_get(p, owner, sid, &err);
    if (!sl) return err;
    double t_ms = jt ? json_number_value(jt) : now_us() / 1e3;
    laya_decider *d = NULL;
    if (jt || decide || sl->d) {
        if (!(d = decider_get(sl, &err))) return err;
        decide_track_context(d, ctx, len, t_ms);
    }
    if (stale) return json_pack("{s:[],s:i,s:b}", "suggestions", "us", 0, "stale", 1);
    laya_suggestion out[ENGINE_MAX_K];
    int n = 0;
    double t0 = now_us();
    laya_status st = laya_session_set_context(sl->s, ctx, len);
    if (st == LAYA_OK) st = laya_suggest(sl->s, k, out, &n);
    if (st == LAYA_OK && decide) st = laya_decide(d, t_ms, out, n, out, &n);
    double us = now_us() - t0;
    if (st != LAYA_OK) return error("suggest failed: %s", laya_status_str(st));
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(arr, json_stringn(out[i].text, out[i].len));
    json_t *r = json_pack("{s:o,s:I}", "suggestions", arr, "us", (json_int_t)(us + 0.5));
    if (decide) {
        json_object_set_new(r, "shown", json_boolean(n > 0));
        if (!n) json_object_set_new(r, "held", json_string(decide_reason_str(decide_last_reason(d))));
    }
    return r;
}

/* {"op":"feedback","accepted":i}: the typist took shown suggestion i, or
 * passed over the list (-1). */
static json_t *op_feedback(proto *p, uint64_t owner, const char *sid, json_t *req) {
    json_t *err = NULL, *ja = json_object_get(req, "accepted");
    if (!json_is_integer(ja) || json_integer_value(ja) < -1 || json_integer_value(ja) >= ENGINE_MAX_K)
        return error("\"accepted\" must be the index of the suggestion taken (0..%d) or -1", ENGINE_MAX_K - 1);
    json_t *jt = json_object_get(req, "t_ms");
    if (jt && !(json_is_number(jt) && json_number_value(jt) >= 0 && json_number_value(jt) < 1e15))
        return error("\"t_ms\" must be a number of milliseconds >= 0");
    slot *sl = session_get(p, owner, sid, &err);
    laya_decider *d = sl ? decider_get(sl, &err) : NULL;
    if (!d) return err;
    double t_ms = jt ? json_number_value(jt) : now_us() / 1e3;
    laya_decide_event(d, json_integer_value(ja) >= 0 ? LAYA_EVENT_ACCEPTED : LAYA_EVENT_IGNORED, t_ms);
    return json_pack("{s:b}", "ok", 1);
}

/* The op and session of a request, or NULL when it has none that is valid
 * (it will be answered with an error). */
static const char *req_op(json_t *req, const char **sid) {
    if (!json_is_object(req)) return NULL;
    json_t *op = json_object_get(req, "op"), *js = json_object_get(req, "session");
    if (!json_is_string(op) || (js && !json_is_string(js))) return NULL;
    *sid = js ? json_string_value(js) : "default";
    return json_string_value(op);
}

static json_t *handle(proto *p, uint64_t owner, json_t *req, int stale) {
    json_t *err = NULL;
    if (!json_is_object(req)) return error("a request must be a JSON object");
    const char *op = get_str(req, "op", 0, NULL, &err);
    if (!op) return err;
    const char *sid = get_str(req, "session", 1, NULL, &err);
    if (err) return err;
    if (!sid) sid = "default";
    if (strlen(sid) > PROTO_MAX_SID || !*sid) return error("\"session\" must be 1..%d bytes", PROTO_MAX_SID);
    if (!strcmp(op, "suggest")) return op_suggest(p, owner, sid, req, stale);
    if (!strcmp(op, "feedback")) return op_feedback(p, owner, sid, req);
    if (!strcmp(op, "commit")) return get_str(req, "text", 0, NULL, &err) ? json_pack("{s:b}", "ok", 1) : err;
    if (!strcmp(op, "reset")) {
        for (int i = 0; i < p->n_slots; i++)
            if (p->slots[i].owner == owner && !strcmp(p->slots[i].id, sid)) {
                laya_session_reset(p->slots[i].s);
                if (p->slots[i].d) decide_forget_context(p->slots[i].d);
            }
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
    return error("unknown op \"%.64s\" (expected suggest, feedback, commit, reset or score)", op);
}

static json_t *parse(const char *line, size_t n, json_t **err) {
    json_error_t je;
    json_t *req = json_loadb(line, n, JSON_REJECT_DUPLICATES, &je);
    if (!req) *err = error("malformed request (column %d): %s", je.column, je.text);
    return req;
}

char *proto_handle(proto *p, uint64_t owner, const char *line, size_t n) {
    json_t *err = NULL, *req = parse(line, n, &err);
    if (!req) return dump(err);
    char *s = dump(handle(p, owner, req, 0));
    json_decref(req);
    return s;
}

/* ---- batches: coalescing ------------------------------------------------ */

/* The complete lines of one proto_feed call, copied (the framer's buffer is
 * reused line to line). off[i] < 0 marks an overlong line. */
typedef struct {
    char *bytes;
    size_t len, cap;
    long *off;
    size_t *n;
    int count, max;
    int oom, lost;   /* out of memory: this line and all after it are lost */
} batch;

static void batch_add(void *ctx, const char *line, size_t n) {
    batch *b = ctx;
    if (b->oom) {
        b->lost++;
        return;
    }
    if (b->count == b->max) {
        int max = b->max ? 2 * b->max : 64;
        long *o = realloc(b->off, (size_t)max * sizeof *o);
        if (o) b->off = o;
        size_t *l = realloc(b->n, (size_t)max * sizeof *l);
        if (l) b->n = l;
        if (!o || !l) {
            b->oom = 1, b->lost++;
            return;
        }
        b->max = max;
    }
    if (line && b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        char *nb = realloc(b->bytes, cap);
        if (!nb) {
            b->oom = 1, b->lost++;
            return;
        }
        b->bytes = nb;
        b->cap = cap;
    }
    b->off[b->count] = line ? (long)b->len : -1;
    b->n[b->count++] = n;
    if (line) memcpy(b->bytes + b->len, line, n), b->len += n;
}

/* A suggest that opted into coalescing ("coalesce", by default on when it
 * carries "t_ms") is stale when a later suggest for the same session follows
 * it in the batch with no other request for that session in between (a
 * commit, reset or feedback must see the order the client sent). */
static void batch_answer(proto *p, uint64_t owner, batch *b, size_t max, proto_reply_fn fn, void *ctx) {
    json_t **req = calloc((size_t)b->count + 1, sizeof *req), **err = calloc((size_t)b->count + 1, sizeof *err);
    if (!req || !err) {
        for (int i = 0; i < b->count; i++) fn(ctx, NULL);
        free(req), free(err);
        return;
    }
    for (int i = 0; i < b->count; i++)
        if (b->off[i] >= 0) req[i] = parse(b->bytes + b->off[i], b->n[i], &err[i]);
    for (int i = 0; i < b->count; i++) {
        char *r;
        if (b->off[i] < 0) {
            r = proto_error("request line longer than %zu bytes: refused", max);
        } else if (!req[i]) {
            r = dump(err[i]);
        } else {
            const char *sid, *sid2, *op = req_op(req[i], &sid), *op2;
            int stale = 0;
            if (op && !strcmp(op, "suggest")) {
                json_t *jc = json_object_get(req[i], "coalesce");
                int co = json_is_boolean(jc) ? json_is_true(jc) : json_object_get(req[i], "t_ms") != NULL;
                for (int j = i + 1; co && j < b->count; j++) {
                    if (!req[j] || !(op2 = req_op(req[j], &sid2)) || strcmp(sid, sid2)) continue;
                    stale = !strcmp(op2, "suggest");
                    break;
                }
            }
            r = dump(handle(p, owner, req[i], stale));
        }
        fn(ctx, r);
        free(r);
        json_decref(req[i]);
    }
    free(req);
    free(err);
}

laya_status proto_feed(proto *p, uint64_t owner, proto_lines *r, const char *data, size_t n,
                       int finish, proto_reply_fn fn, void *ctx) {
    batch b = {0};
    laya_status st = data ? proto_lines_feed(r, data, n, batch_add, &b) : LAYA_OK;
    if (finish) proto_lines_finish(r, batch_add, &b);
    /* The lost lines are the last ones: each still gets a reply, in order. */
    batch_answer(p, owner, &b, r->max, fn, ctx);
    for (int i = 0; i < b.lost; i++) fn(ctx, NULL);
    if (b.oom) st = LAYA_ERR_NOMEM;
    free(b.bytes), free(b.off), free(b.n);
    return st;
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
