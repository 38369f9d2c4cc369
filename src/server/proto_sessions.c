/* proto_sessions.c - the protocol's session table (proto_impl.h): sessions
 * keyed by (owner, id), at most max over all owners, the least recently
 * used one closed to make room. A closed session reopens empty: the next
 * context is read afresh (slower, never wrong). */
#include "server/proto_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

laya_status proto_table_init(proto_table *t, const laya_model *m, const laya_search_opts *cfg, int max) {
    memset(t, 0, sizeof *t);
    if (!(t->slots = calloc((size_t)max, sizeof *t->slots))) return LAYA_ERR_NOMEM;
    t->m = m;
    t->cfg = *cfg;
    t->max = max;
    return LAYA_OK;
}

static void slot_close(proto_slot *sl) {
    laya_session_free(sl->s);
    sl->s = NULL;
}

void proto_table_free(proto_table *t) {
    for (int i = 0; i < t->n; i++) slot_close(&t->slots[i]);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

void proto_table_drop_owner(proto_table *t, uint64_t owner) {
    for (int i = 0; i < t->n;) {
        if (t->slots[i].owner == owner) {
            slot_close(&t->slots[i]);
            t->slots[i] = t->slots[--t->n];
        } else {
            i++;
        }
    }
}

proto_slot *proto_table_find(proto_table *t, uint64_t owner, const char *id) {
    for (int i = 0; i < t->n; i++)
        if (t->slots[i].owner == owner && !strcmp(t->slots[i].id, id)) return &t->slots[i];
    return NULL;
}

proto_slot *proto_table_get(proto_table *t, uint64_t owner, const char *id, laya_status *st) {
    proto_slot *lru = NULL;
    for (int i = 0; i < t->n; i++) {
        proto_slot *sl = &t->slots[i];
        if (sl->owner == owner && !strcmp(sl->id, id)) {
            sl->used = ++t->clock;
            return sl;
        }
        if (!lru || sl->used < lru->used) lru = sl;
    }
    proto_slot *sl;
    if (t->n < t->max) {
        sl = &t->slots[t->n++];
    } else {
        sl = lru;
        slot_close(sl);
    }
    *st = laya_session_new(t->m, &sl->s);
    if (*st == LAYA_OK) *st = laya_session_set_search(sl->s, &t->cfg);
    if (*st == LAYA_OK) *st = laya_session_set_memory(sl->s, t->memory);
    if (*st == LAYA_OK && t->notes) *st = laya_session_set_notes(sl->s, t->notes);
    if (*st == LAYA_OK && t->intent) *st = laya_session_set_intent(sl->s, t->intent);
    if (*st != LAYA_OK) {
        slot_close(sl);
        *sl = t->slots[--t->n];
        return NULL;
    }
    sl->owner = owner;
    sl->priv = 0;
    snprintf(sl->id, sizeof sl->id, "%s", id);
    sl->used = ++t->clock;
    return sl;
}
