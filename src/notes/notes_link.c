/* notes_link.c - a session's related notes (laya_session_notes): the
 * sentence's terms are extracted on every call (linear in the sentence,
 * NOTES_SENTENCE_MAX bytes at most), the index is queried only when they
 * differ from the last call's. */
#include "notes/notes.h"

#include <stdlib.h>
#include <string.h>

struct notes_link {
    laya_notes *n;                     /* borrowed */
    char key[NOTES_MAX_QUERY];         /* the query of the answer below ("" : none yet) */
    int have;                          /* key/hits hold an answer */
    laya_note hits[LAYA_NOTES_MAX_K];
    int n_hits, k;                     /* the answer and the k it was asked with */
    uint64_t queries;
};

struct notes_link *notes_link_new(laya_notes *n) {
    struct notes_link *l = calloc(1, sizeof *l);
    if (l) l->n = n;
    return l;
}

void notes_link_free(struct notes_link *l) { free(l); }

uint64_t notes_link_queries(const struct notes_link *l) { return l ? l->queries : 0; }

laya_status notes_link_related(struct notes_link *l, const char *ctx, size_t len, int k, const laya_note **out,
                               int *n_out) {
    *out = l->hits;
    *n_out = 0;
    size_t a, b;
    notes_sentence(ctx, len, &a, &b);
    char q[NOTES_MAX_QUERY];
    notes_query(ctx + a, b - a, NOTES_TERMS_TYPING, q, sizeof q);
    if (l->have && l->k >= k && !strcmp(q, l->key)) {
        *n_out = l->n_hits < k ? l->n_hits : k;
        return LAYA_OK;
    }
    l->have = 0;
    l->n_hits = 0;
    laya_status st = LAYA_OK;
    if (q[0]) {
        l->queries++;
        st = notes_search_query(l->n, q, k, l->hits, &l->n_hits, NULL, 0);
    }
    if (st != LAYA_OK) return st;
    memcpy(l->key, q, strlen(q) + 1);
    l->k = k;
    l->have = 1;
    *n_out = l->n_hits;
    return LAYA_OK;
}
