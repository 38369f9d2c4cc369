/* learn_index.h - the in-memory index over the user's committed text that
 * the suggestion search consults (C8). It holds no file and no lock: the
 * store (learn_store.h) is where text persists, and whoever owns an index
 * (laya_memory, learn.c) serialises access to it.
 *
 * Contents: the history, i.e. every committed text in commit order, joined
 * by a newline where a commit did not end with one, capped at cap bytes (the
 * oldest text is dropped first). Queries (learn_index_query) propose how the
 * text before the cursor continues, from what followed the same words in
 * the history. */
#ifndef LAYA_LEARN_INDEX_H
#define LAYA_LEARN_INDEX_H

#include <stddef.h>
#include <stdint.h>
#include "laya.h"

enum { LEARN_INDEX_DEFAULT_CAP = 4 * 1024 * 1024 };

typedef struct learn_index learn_index;

/* A new, empty index keeping at most cap bytes of history (cap >= 4096).
 * *out owned by the caller (learn_index_free). */
laya_status learn_index_new(size_t cap, learn_index **out);
void learn_index_free(learn_index *ix);

/* Forgets everything (after a forget or a reload from the store). */
void learn_index_clear(learn_index *ix);

/* Adds one committed text. Text longer than the cap keeps its last cap
 * bytes. LAYA_ERR_NOMEM leaves the index as it was. */
laya_status learn_index_add(learn_index *ix, const uint8_t *text, size_t len);

/* Bytes of history held now. */
size_t learn_index_bytes(const learn_index *ix);

#endif
