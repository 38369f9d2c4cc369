/* proto_impl.h - private to src/server: the pieces of the protocol (proto.h)
 * and who may touch what.
 *  - proto.c           the requests: parsing, each op, the replies
 *  - proto_sessions.c  the session table: (owner, id) -> session, LRU-bounded
 *  - proto_lines.c     line framing and the batches that coalesce stale suggests
 * proto.c is the only user of the table; proto_lines.c only sees requests
 * through proto_parse / proto_req_op / proto_answer. */
#ifndef LAYA_PROTO_IMPL_H
#define LAYA_PROTO_IMPL_H

#include <jansson.h>
#include "server/proto.h"

/* One live session of one owner (its decider is the session's own: the
 * keystroke pipeline's, laya_session_event). */
typedef struct {
    uint64_t owner;
    char id[PROTO_MAX_SID + 1];
    laya_session *s;
    uint64_t used;     /* the table's clock at last use: the LRU order */
    int priv;          /* a private field: nothing learned, no memory consulted */
} proto_slot;

typedef struct {
    const laya_model *m;
    laya_search_opts cfg;   /* applied to every session opened */
    laya_memory *memory;    /* what sessions learn from and commits go to (borrowed; NULL: none) */
    laya_notes *notes;      /* the notes suggest replies link to and the notes op searches (borrowed; NULL: none) */
    const laya_intent *intent;  /* the intent head sessions report with (borrowed; NULL: none) */
    proto_slot *slots;      /* (max) */
    int n, max;
    uint64_t clock;
} proto_table;

/* A table of at most max sessions over m. LAYA_ERR_NOMEM leaves t empty. */
laya_status proto_table_init(proto_table *t, const laya_model *m, const laya_search_opts *cfg, int max);
void proto_table_free(proto_table *t);
/* The slot of (owner, id), opened if new (closing the least recently used
 * one when the table is full). NULL with *st set when a session cannot be
 * opened. */
proto_slot *proto_table_get(proto_table *t, uint64_t owner, const char *id, laya_status *st);
/* The slot of (owner, id) if it is open, else NULL; opens nothing. */
proto_slot *proto_table_find(proto_table *t, uint64_t owner, const char *id);
/* Closes every session of owner. */
void proto_table_drop_owner(proto_table *t, uint64_t owner);

/* proto.c, for the batches of proto_lines.c. */
json_t *proto_parse(const char *line, size_t n, json_t **err);
/* The op and session of a parsed request, or NULL when it has none that is
 * valid (it will be answered with an error). */
const char *proto_req_op(json_t *req, const char **sid);
/* The reply to a parsed request; stale: a newer suggest for the same
 * session is queued behind it (its engine work is skipped). */
json_t *proto_answer(proto *p, uint64_t owner, json_t *req, int stale);
/* Encodes and releases j; NULL when out of memory. */
char *proto_dump(json_t *j);

#endif
