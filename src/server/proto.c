/* proto.c - the requests of the JSON-lines suggestion protocol (proto.h):
 * parsing with Jansson (strict UTF-8, duplicate keys refused), each op, and
 * the replies. Sessions live in proto_sessions.c, framing and coalescing in
 * proto_lines.c (proto_impl.h). */
#include "server/proto_impl.h"



#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct proto {
    proto_table t;
};

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e6 * (double)ts.tv_sec + 1e-3 * (double)ts.tv_nsec;
}

laya_status proto_new(const laya_model *m, const laya_search_opts *cfg, int max_sessions, proto **out) {
    if (!m || !cfg || !out || max_sessions < 1) return LAYA_ERR_ARG;
    proto *p = calloc(1, sizeof *p);
    if (!p || proto_table_init(&p->t, m, cfg, max_sessions) != LAYA_OK) {
        free(p);
        return LAYA_ERR_NOMEM;
    }
    *out = p;
    return LAYA_OK;
}

void proto_free(proto *p) {
    if (!p) return;
    proto_table_free(&p->t);
    free(p);
}

int proto_sessions(const proto *p) { return p->t.n; }

void proto_set_memory(proto *p, laya_memory *m) { p->t.memory = m; }

void proto_set_notes(proto *p, laya_notes *n) { p->t.notes = n; }

void proto_set_intent(proto *p, const laya_intent *h) { p->t.intent = h; }

void proto_drop_owner(proto *p, uint64_t owner) { proto_table_drop_owner(&p->t, owner); }

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

/* Reals with 15 significant digits: a double's decimal value exactly as far
 * as it is meaningful, so that 0.83 is written "0.83", not
 * "0.82999999999999996" (jansson's default 17 round-trips the bits). */
char *proto_dump(json_t *j) {
    char *s = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
    json_decref(j);
    return s;
}

char *proto_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    json_t *j = verror(fmt, ap);
    va_end(ap);
    return proto_dump(j);
}

/* The slot of session (owner, id), opened if new. NULL with *err set. */
static proto_slot *session_get(proto *p, uint64_t owner, const char *id, json_t **err) {
    laya_status st;
    proto_slot *sl = proto_table_get(&p->t, owner, id, &st);
    if (!sl) *err = error("cannot open session: %s", laya_status_str(st));
    return sl;
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

/* The optional "t_ms" of a request: *t_ms is it, or now on the server's
 * clock when absent (*given 0). Returns an error reply, or NULL when fine. */
static json_t *get_t_ms(json_t *req, double *t_ms, int *given) {
    json_t *jt = json_object_get(req, "t_ms");
    *given = jt != NULL;
    if (jt && !(json_is_number(jt) && json_number_value(jt) >= 0 && json_number_value(jt) < 1e15))
        return error("\"t_ms\" must be a number of milliseconds >= 0");
    *t_ms = jt ? json_number_value(jt) : now_us() / 1e3;
    return NULL;
}

/* "notes":[...] of a reply: title, path, snippet (and score). */
static json_t *notes_json(const laya_note *h, int n, int score) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) {
        json_t *o = json_pack("{s:s,s:s,s:s}", "title", h[i].title, "path", h[i].path, "snippet", h[i].snippet);
        if (o && score) json_object_set_new(o, "score", json_real(h[i].score));
        json_array_append_new(a, o);
    }
    return a;
}

/* One event of the keystroke pipeline (laya_session_event) on a slot's
 * session: every rule between a request and its reply (privacy, decision,
 * feedback, learning) is the library's; this file only translates. The
 * protocol's client reports its verdicts itself ("feedback"), so typing on
 * past a list judges nothing here (LAYA_FIELD_CLIENT_JUDGES): without
 * feedback requests the suggestions are what they would be without it. */
static laya_status slot_event(proto_slot *sl, laya_input_kind kind, const char *text, size_t len, int index,
                              int priv, unsigned want, int k, double t_ms, laya_view *v) {
    laya_input in = {.kind = kind, .text = text, .len = len, .index = index,
                     .field = LAYA_FIELD_CLIENT_JUDGES | (priv ? LAYA_FIELD_PRIVATE : 0), .want = want, .k = k,
                     .t_ms = t_ms};
    return laya_session_event(sl->s, &in, v);
}

/* A suggest request: {"op":"suggest","context":C[,"k":N][,"t_ms":T][,"decide":B][,"private":B]}.
 * stale: a newer suggest for the same session is already queued behind
 * this one (proto_feed): the context is only noted (the decider sees the
 * keystroke's timing; the engine reads nothing). */
static json_t *op_suggest(proto *p, uint64_t owner, const char *sid, json_t *req, int stale) {
    json_t *err = NULL;
    size_t len;
    const char *ctx = get_str(req, "context", 0, &len, &err);
    if (!ctx) return err;
    int k = 3;
    json_t *jk = json_object_get(req, "k");
    if (jk) {
        if (!json_is_integer(jk) || json_integer_value(jk) < 0 || json_integer_value(jk) > LAYA_MAX_K)
            return error("\"k\" must be an integer in 0..%d", LAYA_MAX_K);
        k = (int)json_integer_value(jk);
    }
    double t_ms;
    int timed;
    if ((err = get_t_ms(req, &t_ms, &timed))) return err;
    int decide = get_bool(req, "decide", 0, &err);
    if (decide < 0) return err;
    int priv = get_bool(req, "private", 0, &err);
    if (priv < 0) return err;
    proto_slot *sl = session_get(p, owner, sid, &err);
    if (!sl) return err;
    sl->priv = priv;   /* the field the session is in, until the next suggest or key says */
    laya_view v;
    if (stale) {
        if (slot_event(sl, LAYA_INPUT_CONTEXT, ctx, len, 0, priv, 0, 0, t_ms, &v) != LAYA_OK)
            return error("suggest failed: out of memory");
        return json_pack("{s:[],s:i,s:b}", "suggestions", "us", 0, "stale", 1);
    }
    const unsigned want = (k ? LAYA_WANT_SUGGEST : 0) | (decide ? LAYA_WANT_DECIDE : 0);
    double t0 = now_us();
    laya_status st = slot_event(sl, LAYA_INPUT_CONTEXT, ctx, len, 0, priv, want, k ? k : 3, t_ms, &v);
    double us = now_us() - t0;
    if (st != LAYA_OK) return error("suggest failed: %s", laya_status_str(st));
    json_t *arr = json_array();
    for (int i = 0; i < v.n; i++) json_array_append_new(arr, json_stringn(v.list[i].text, v.list[i].len));
    json_t *r = json_pack("{s:o,s:I}", "suggestions", arr, "us", (json_int_t)(us + 0.5));
    if (decide) {
        json_object_set_new(r, "shown", json_boolean(v.n > 0));
        if (!v.n) json_object_set_new(r, "held", json_string(v.held ? v.held : "none"));
    }
    /* After the suggestions and outside "us": the notes index is asked only
     * when the sentence's terms change (a word end), else it costs the term
     * extraction; the intent head is one small product when the stable
     * tokens changed. Both only where the library's gate is open (not in a
     * private request, not after a password prompt). */
    const unsigned more = (p->t.notes ? LAYA_WANT_NOTES : 0) | (p->t.intent ? LAYA_WANT_INTENT : 0);
    laya_view w;
    if (more && slot_event(sl, LAYA_INPUT_SHOW, NULL, 0, 0, priv, more, 0, t_ms, &w) == LAYA_OK) {
        if (w.n_notes > 0) json_object_set_new(r, "notes", notes_json(w.notes, w.n_notes > PROTO_NOTES_K ? PROTO_NOTES_K : w.n_notes, 0));
        if (w.intent)
            json_object_set_new(r, "intent",
                                json_pack("{s:s,s:f}", "name", w.intent, "p", floor(w.intent_p * 100 + 0.5) / 100));
    }
    return r;
}

/* {"op":"feedback","accepted":i[,"t_ms":T]}: the typist took shown
 * suggestion i (an ACCEPT: the session's context grows by it, as the
 * client's does), or passed over the list (-1: a DISMISS). The decider's
 * threshold moves, and with a memory the list is judged: passed-over
 * suggestions rank lower in that context next time. An index beyond the
 * list shown (or none shown) judges nothing; a store error is answered as
 * an error. */
static json_t *op_feedback(proto *p, uint64_t owner, const char *sid, json_t *req) {
    json_t *err = NULL, *ja = json_object_get(req, "accepted");
    if (!json_is_integer(ja) || json_integer_value(ja) < -1 || json_integer_value(ja) >= LAYA_MAX_K)
        return error("\"accepted\" must be the index of the suggestion taken (0..%d) or -1", LAYA_MAX_K - 1);
    double t_ms;
    int timed;
    if ((err = get_t_ms(req, &t_ms, &timed))) return err;
    proto_slot *sl = session_get(p, owner, sid, &err);
    if (!sl) return err;
    int idx = (int)json_integer_value(ja);
    laya_view v;
    laya_status st = slot_event(sl, idx >= 0 ? LAYA_INPUT_ACCEPT : LAYA_INPUT_DISMISS, NULL, 0, idx, sl->priv, 0, 0,
                                t_ms, &v);
    if (st != LAYA_OK && st != LAYA_ERR_ARG) return error("feedback not learned: %s", laya_status_str(st));
    return json_pack("{s:b}", "ok", 1);
}

/* {"op":"key","text":C[,"t_ms":T][,"private":B]}: the character C typed at
 * the end of the session's context (a KEY event): the reply says what the
 * client should do instead of inserting C, {"erase":N,"insert":S} (erase N
 * bytes before the cursor, then insert S), so that a client gets the
 * library's spacing after an accepted suggestion that ends in a blank (a
 * blank typed next is absorbed: "insert":""; . , ; : ! ? go before the
 * blank: "erase":1,"insert":". "). Optional: a client that inserts keys
 * itself and sends its context with suggest loses only that rule. */
static json_t *op_key(proto *p, uint64_t owner, const char *sid, json_t *req) {
    json_t *err = NULL;
    size_t len;
    const char *text = get_str(req, "text", 0, &len, &err);
    if (!text) return err;
    double t_ms;
    int timed;
    if ((err = get_t_ms(req, &t_ms, &timed))) return err;
    int priv = get_bool(req, "private", 0, &err);
    if (priv < 0) return err;
    proto_slot *sl = session_get(p, owner, sid, &err);
    if (!sl) return err;
    sl->priv = priv;
    laya_view v;
    laya_status st = slot_event(sl, LAYA_INPUT_KEY, text, len, 0, priv, 0, 0, t_ms, &v);
    if (st == LAYA_ERR_ARG) return error("\"text\" must be one character");
    if (st != LAYA_OK) return error("key failed: %s", laya_status_str(st));
    return json_pack("{s:I,s:s%}", "erase", (json_int_t)v.erase, "insert", v.insert ? v.insert : "", v.insert_len);
}

/* {"op":"prefetch"}: idle work for a client waiting for the next key
 * (laya_session_prefetch): one guess computed ahead, "more" when another
 * is left for a next prefetch; nothing when stale (a later request for the
 * session is already here) or the session has none. */
static json_t *op_prefetch(proto *p, uint64_t owner, const char *sid, int stale) {
    proto_slot *sl = proto_table_find(&p->t, owner, sid);
    int more = 0;
    double t0 = now_us();
    if (sl && !stale) {
        laya_status st = laya_session_prefetch(sl->s, &more);
        if (st != LAYA_OK) return error("prefetch failed: %s", laya_status_str(st));
    }
    double us = now_us() - t0;
    return json_pack("{s:b,s:b,s:I}", "ok", 1, "more", more, "us", (json_int_t)(us + 0.5));
}

/* {"op":"commit","text":T[,"private":true]}: T was really typed; it is
 * learned (a COMMIT through the session's pipeline: its gate decides)
 * unless learning is off, the request or its session is private, the
 * session's text ends in a password prompt, or the memory is incognito. */
static json_t *op_commit(proto *p, uint64_t owner, const char *sid, json_t *req) {
    json_t *err = NULL;
    size_t len;
    const char *text = get_str(req, "text", 0, &len, &err);
    if (!text) return err;
    int priv = get_bool(req, "private", 0, &err);
    if (priv < 0) return err;
    int learned = 0;
    /* a private commit is text not to learn, not a field the session is in
     * now: it does not reach the session (whose list stays to be judged) */
    if (p->t.memory && !priv) {
        proto_slot *sl = session_get(p, owner, sid, &err);
        if (!sl) return err;
        laya_view v;
        laya_status st = slot_event(sl, LAYA_INPUT_COMMIT, text, len, 0, sl->priv, 0, 0, -1, &v);
        if (st != LAYA_OK) return error("commit not learned: %s", v.error ? v.error : laya_status_str(st));
        learned = v.learned;
    }
    return json_pack("{s:b,s:b}", "ok", 1, "learned", learned);
}

/* {"op":"incognito"[,"on":true|false]}: sets and/or reports the switch,
 * kept in the store (every process that uses it obeys). */
static json_t *op_incognito(proto *p, json_t *req) {
    json_t *err = NULL;
    if (!p->t.memory) return error("no memory: this server learns nothing (--no-learn)");
    int on = get_bool(req, "on", -2, &err);
    if (on == -1) return err;
    char msg[256] = "";
    laya_status st = on >= 0 ? laya_memory_set_incognito(p->t.memory, on, msg, sizeof msg) : LAYA_OK;
    int now = 0;
    if (st == LAYA_OK) st = laya_memory_get_incognito(p->t.memory, &now, msg, sizeof msg);
    if (st != LAYA_OK) return error("incognito: %s", *msg ? msg : laya_status_str(st));
    return json_pack("{s:b,s:b}", "ok", 1, "incognito", now);
}

/* {"op":"forget", and one of "all":true, "since":UNIX_SECONDS, "word":W or
 * "text":T}: removes those commits (T: the commits that are exactly T, one
 * entry of "list") from the store and from every process's suggestions,
 * with the feedback entries that may hold a trace of them (include/laya.h). */
static json_t *op_forget(proto *p, json_t *req) {
    json_t *err = NULL;
    if (!p->t.memory) return error("no memory: this server learns nothing (--no-learn)");
    json_t *since = json_object_get(req, "since");
    size_t wl = 0, tl = 0;
    const char *word = get_str(req, "word", 1, &wl, &err);
    if (err) return err;
    const char *text = get_str(req, "text", 1, &tl, &err);
    if (err) return err;
    int all = get_bool(req, "all", 0, &err);
    if (all < 0) return err;
    if (all + (since != NULL) + (word != NULL) + (text != NULL) != 1)
        return error("forget takes one of \"all\":true, \"since\":<unix seconds>, \"word\":\"...\" or \"text\":\"...\"");
    if (since && !json_is_integer(since)) return error("\"since\" must be unix seconds (an integer)");
    char msg[256] = "";
    int64_t removed = 0;
    laya_status st = all     ? laya_memory_forget_all(p->t.memory, &removed, msg, sizeof msg)
                     : since ? laya_memory_forget_since(p->t.memory, json_integer_value(since), &removed, msg, sizeof msg)
                     : word  ? laya_memory_forget_word(p->t.memory, word, wl, &removed, msg, sizeof msg)
                             : laya_memory_forget_text(p->t.memory, text, tl, &removed, msg, sizeof msg);
    if (st != LAYA_OK) return error("forget: %s", *msg ? msg : laya_status_str(st));
    return json_pack("{s:b,s:I}", "ok", 1, "removed", (json_int_t)removed);
}

/* ---- list and export: what the memory holds ---- */

/* Entries offset .. offset + limit - 1 of a listing go to arr (limit < 0:
 * all); every entry is counted. */
typedef struct {
    json_t *arr;
    int64_t n, offset, limit;
    int failed;
} listing;

/* 1 if the entry counted next is on the page asked for. */
static int in_page(const listing *l) {
    return l->n >= l->offset && (l->limit < 0 || l->n < l->offset + l->limit);
}

/* Counts the next entry; o (made only for an entry in_page) goes to arr. */
static int listing_take(listing *l, json_t *o) {
    const int keep = in_page(l);
    l->n++;
    if (!keep) {
        json_decref(o);
        return 0;
    }
    if (!o || json_array_append_new(l->arr, o)) l->failed = 1;
    return l->failed;
}

/* Counts decay with use: three decimals, as `laya memory list` prints. */
static double three_places(double x) { return floor(x * 1000 + 0.5) / 1000; }

static int visit_commit(void *ctx, const char *text, size_t len, int64_t count, int64_t first, int64_t last) {
    listing *l = ctx;
    json_t *o = !in_page(l) ? NULL
                            : json_pack("{s:s%,s:I,s:I,s:I}", "text", text, len, "count", (json_int_t)count,
                                        "first", (json_int_t)first, "last", (json_int_t)last);
    return listing_take(l, o);
}

static int visit_feedback(void *ctx, const char *context, size_t clen, const char *text, size_t tlen,
                          double ignored, double accepted, int64_t last) {
    listing *l = ctx;
    json_t *o = !in_page(l) ? NULL
                            : json_pack("{s:s%,s:s%,s:f,s:f,s:I}", "context", context, clen, "text", text, tlen,
                                        "ignored", three_places(ignored), "accepted", three_places(accepted), "last",
                                        (json_int_t)last);
    return listing_take(l, o);
}

/* One listing of the memory (feedback 0: the committed texts, 1: the
 * feedback entries) into a new array; NULL with the error reply in *err. */
static json_t *list_memory(proto *p, int feedback, int64_t offset, int64_t limit, int64_t *total, json_t **err) {
    listing l = {.arr = json_array(), .offset = offset, .limit = limit};
    if (!l.arr) {
        *err = error("out of memory");
        return NULL;
    }
    char msg[256] = "";
    laya_status st = feedback ? laya_memory_list_feedback(p->t.memory, visit_feedback, &l, msg, sizeof msg)
                              : laya_memory_list(p->t.memory, visit_commit, &l, msg, sizeof msg);
    if (st != LAYA_OK || l.failed) {
        json_decref(l.arr);
        *err = error("list: %s", *msg ? msg : l.failed ? "out of memory" : laya_status_str(st));
        return NULL;
    }
    *total = l.n;
    return l.arr;
}

enum { LIST_DEFAULT = 100, LIST_MAX = 10000 };

/* A nonnegative integer member (default def, at most max); -1 with *err set
 * when it is something else. */
static int64_t get_count(json_t *req, const char *key, int64_t def, int64_t max, json_t **err) {
    json_t *v = json_object_get(req, key);
    if (!v) return def;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max) {
        *err = error("\"%s\" must be an integer in 0..%lld", key, (long long)max);
        return -1;
    }
    return json_integer_value(v);
}

/* {"op":"list"[,"feedback":true][,"offset":N][,"limit":N]}: what the memory
 * holds, as `laya memory list` shows it, most recent first: the distinct
 * committed texts ({"text","count","first","last"}), or with "feedback" the
 * feedback entries ({"context","text","ignored","accepted","last"}); the
 * entries from offset (default 0), at most limit of them (default 100, at
 * most 10000), and "total", how many there are. */
static json_t *op_list(proto *p, json_t *req) {
    json_t *err = NULL;
    if (!p->t.memory) return error("no memory: this server learns nothing (--no-learn)");
    int fb = get_bool(req, "feedback", 0, &err);
    if (fb < 0) return err;
    int64_t offset = get_count(req, "offset", 0, INT64_MAX, &err);
    if (offset < 0) return err;
    int64_t limit = get_count(req, "limit", LIST_DEFAULT, LIST_MAX, &err);
    if (limit < 0) return err;
    int64_t total = 0;
    json_t *arr = list_memory(p, fb, offset, limit, &total, &err);
    if (!arr) return err;
    return json_pack("{s:o,s:I}", "entries", arr, "total", (json_int_t)total);
}

/* {"op":"export"}: everything the memory holds, as `laya memory export`
 * writes it: {"commits":[...],"feedback":[...]}, each entry as "list" gives
 * it. */
static json_t *op_export(proto *p) {
    json_t *err = NULL;
    if (!p->t.memory) return error("no memory: this server learns nothing (--no-learn)");
    int64_t nc = 0, nf = 0;
    json_t *commits = list_memory(p, 0, 0, -1, &nc, &err);
    if (!commits) return err;
    json_t *fb = list_memory(p, 1, 0, -1, &nf, &err);
    if (!fb) {
        json_decref(commits);
        return err;
    }
    return json_pack("{s:o,s:o}", "commits", commits, "feedback", fb);
}

/* {"op":"notes","query":Q[,"k":N]}: the notes best matching Q's words
 * (N of them, default 5, at most LAYA_NOTES_MAX_K). */
static json_t *op_notes(proto *p, json_t *req) {
    json_t *err = NULL;
    if (!p->t.notes) return error("no notes index: start the server with --notes PATH (made by `laya notes index DIR`)");
    size_t len;
    const char *q = get_str(req, "query", 0, &len, &err);
    if (!q) return err;
    int k = 5;
    json_t *jk = json_object_get(req, "k");
    if (jk) {
        if (!json_is_integer(jk) || json_integer_value(jk) < 1 || json_integer_value(jk) > LAYA_NOTES_MAX_K)
            return error("\"k\" must be an integer in 1..%d", LAYA_NOTES_MAX_K);
        k = (int)json_integer_value(jk);
    }
    laya_note hits[LAYA_NOTES_MAX_K];
    int nh = 0;
    char msg[512] = "";
    laya_status st = laya_notes_search(p->t.notes, q, len, k, hits, &nh, msg, sizeof msg);
    if (st != LAYA_OK) return error("notes: %s", *msg ? msg : laya_status_str(st));
    return json_pack("{s:o}", "notes", notes_json(hits, nh, 1));
}

const char *proto_req_op(json_t *req, const char **sid) {
    if (!json_is_object(req)) return NULL;
    json_t *op = json_object_get(req, "op"), *js = json_object_get(req, "session");
    if (!json_is_string(op) || (js && !json_is_string(js))) return NULL;
    *sid = js ? json_string_value(js) : "default";
    return json_string_value(op);
}

json_t *proto_answer(proto *p, uint64_t owner, json_t *req, int stale) {
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
    if (!strcmp(op, "commit")) return op_commit(p, owner, sid, req);
    if (!strcmp(op, "prefetch")) return op_prefetch(p, owner, sid, stale);
    if (!strcmp(op, "key")) return op_key(p, owner, sid, req);
    if (!strcmp(op, "incognito")) return op_incognito(p, req);
    if (!strcmp(op, "forget")) return op_forget(p, req);
    if (!strcmp(op, "list")) return op_list(p, req);
    if (!strcmp(op, "export")) return op_export(p);
    if (!strcmp(op, "notes")) return op_notes(p, req);
    if (!strcmp(op, "reset")) {
        proto_slot *sl = proto_table_find(&p->t, owner, sid);
        laya_view v;
        if (sl) slot_event(sl, LAYA_INPUT_FOCUS, NULL, 0, 0, sl->priv, 0, 0, -1, &v);
        return json_pack("{s:b}", "ok", 1);
    }
    if (!strcmp(op, "score")) {
        size_t len;
        const char *text = get_str(req, "text", 0, &len, &err);
        if (!text) return err;
        double bits = 0;
        laya_status st = laya_score(p->t.m, text, len, &bits);
        if (st != LAYA_OK) return error("score failed: %s", laya_status_str(st));
        return json_pack("{s:f,s:I}", "bits", bits, "bytes", (json_int_t)len);
    }
    return error("unknown op \"%.64s\" (expected suggest, key, feedback, commit, prefetch, reset, score, incognito, forget, list, export or notes)", op);
}

json_t *proto_parse(const char *line, size_t n, json_t **err) {
    json_error_t je;
    json_t *req = json_loadb(line, n, JSON_REJECT_DUPLICATES, &je);
    if (!req) *err = error("malformed request (column %d): %s", je.column, je.text);
    return req;
}

char *proto_handle(proto *p, uint64_t owner, const char *line, size_t n) {
    json_t *err = NULL, *req = proto_parse(line, n, &err);
    if (!req) return proto_dump(err);
    char *s = proto_dump(proto_answer(p, owner, req, 0));
    json_decref(req);
    return s;
}
