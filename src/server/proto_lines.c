/* proto_lines.c - line framing with a hard bound, and the batches of one
 * read in which stale suggests are coalesced (proto.h: proto_feed). */
#include "server/proto_impl.h"

#include <stdlib.h>
#include <string.h>

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
 * commit, reset or feedback must see the order the client sent). A
 * prefetch is stale when any later request for its session follows. */
static void batch_answer(proto *p, uint64_t owner, batch *b, size_t max, proto_reply_fn fn, void *ctx) {
    json_t **req = calloc((size_t)b->count + 1, sizeof *req), **err = calloc((size_t)b->count + 1, sizeof *err);
    if (!req || !err) {
        for (int i = 0; i < b->count; i++) fn(ctx, NULL);
        free(req), free(err);
        return;
    }
    for (int i = 0; i < b->count; i++)
        if (b->off[i] >= 0) req[i] = proto_parse(b->bytes + b->off[i], b->n[i], &err[i]);
    for (int i = 0; i < b->count; i++) {
        char *r;
        if (b->off[i] < 0) {
            r = proto_error("request line longer than %zu bytes: refused", max);
        } else if (!req[i]) {
            r = proto_dump(err[i]);
        } else {
            const char *sid, *sid2, *op = proto_req_op(req[i], &sid), *op2;
            int stale = 0;
            if (op && !strcmp(op, "prefetch")) {
                /* idle work: pointless once the client has sent more for that session */
                for (int j = i + 1; j < b->count && !stale; j++)
                    stale = req[j] && (op2 = proto_req_op(req[j], &sid2)) && !strcmp(sid, sid2);
            } else if (op && !strcmp(op, "suggest")) {
                json_t *jc = json_object_get(req[i], "coalesce");
                int co = json_is_boolean(jc) ? json_is_true(jc) : json_object_get(req[i], "t_ms") != NULL;
                for (int j = i + 1; co && j < b->count; j++) {
                    if (!req[j] || !(op2 = proto_req_op(req[j], &sid2)) || strcmp(sid, sid2)) continue;
                    stale = !strcmp(op2, "suggest");
                    break;
                }
            }
            r = proto_dump(proto_answer(p, owner, req[i], stale));
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

/* ---- line framing ---- */

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
