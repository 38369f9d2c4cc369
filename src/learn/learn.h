/* learn.h - personal memory (C8): the laya_memory handle of include/laya.h
 * behind its public functions, and what the engine uses of it.
 *
 * A laya_memory is a store (learn_store.h: the file) plus an index
 * (learn_index.h: what the search queries) kept in step with it: the index
 * holds the store's commits in commit order; a commit goes to the store,
 * then to the index; a forget deletes from the store, then empties the
 * index and reloads it, so forgotten text never stays in it. Other
 * processes' commits reach the index through learn_memory_sync (new rows
 * only, or everything again when their forget moved the generation).
 *
 * The index is loaded by the first learn_memory_sync, not at open: the
 * commands that only list, add or forget (`laya memory`, `laya incognito`)
 * never pay for it (at the 100k-row cap it is the larger part of opening;
 * bench/bench_learn.c). A program that suggests calls learn_memory_sync
 * once right after open, so the first keystroke costs no more than the
 * rest.
 *
 * Feedback (learn_fb.h) is kept the same way: the table in memory holds
 * the store's feedback rows (the newest LEARN_FB_DEFAULT_CAP), loaded by
 * the first sync; other processes' writes arrive by the feedback clock
 * (rows with a clock above the one last read), a forget anywhere reloads
 * it. This process's events change the table at once and reach the store
 * only with a commit whose text holds their context (the key: the partial
 * word and the two units before it), so that text typed and erased, never
 * committed, leaves no byte on disk (docs/DESIGN.md, "Privacy"); the rest
 * stays in this process's memory (at most LEARN_FB_PENDING rows) and is
 * gone with it. A batch written after a forget anywhere, or while
 * incognito is on, is dropped (checked inside its transaction).
 *
 * Locking: one mutex. The public laya_memory_* functions take it
 * themselves; the learn_memory_* functions below expect the caller to hold
 * it (learn_memory_lock/unlock) around a whole query, so the index cannot
 * change under the search. Never call a laya_memory_* function while
 * holding it (the mutex is not recursive). */
#ifndef LAYA_LEARN_H
#define LAYA_LEARN_H

#include <pthread.h>
#include <stdint.h>

#include "laya.h"
#include "learn/learn_fb.h"
#include "learn/learn_index.h"
#include "learn/learn_store.h"

struct laya_memory {
    pthread_mutex_t mu;
    learn_store *store;
    learn_index *ix;
    learn_fb *fb;        /* the feedback table */
    int64_t fb_seen;     /* the store's feedback clock the table reflects */
    learn_store_fb_result fb_write;   /* scratch of a feedback write (4 KB) */
    int64_t last_id;     /* the newest commit the index holds (0: none) */
    int64_t generation;  /* the store's generation the index reflects; -1: reload all */
    int incognito;       /* the store's switch as of the last sync or commit */
    int stale;           /* the index may lag the store: the next sync reads */
    int loaded;          /* a sync has run: the index is kept in step from now on */
    uint64_t version;    /* +1 whenever the index changes */
    laya_status load_st; /* scratch of a load: the first index failure */
};

void learn_memory_lock(laya_memory *m);
void learn_memory_unlock(laya_memory *m);

/* The index the search queries, as of the last learn_memory_sync (empty
 * before the first). Lock held; valid until unlock. */
learn_index *learn_memory_index(laya_memory *m);

/* Brings the index up to the store (the whole store on the first call;
 * then other processes' commits and forgets) and refreshes the incognito
 * flag. Lock held. Costs one PRAGMA
 * data_version (about a microsecond: tests/test_learn_store.c measures it)
 * when no other connection wrote since the last call. On error the index
 * keeps what it had (never text that a forget in this process removed) and
 * the next call tries again. err optional. */
laya_status learn_memory_sync(laya_memory *m, char *err, size_t errlen);

/* The incognito switch as of the last sync or commit. Lock held. */
int learn_memory_incognito(const laya_memory *m);

/* Counts changes of the index (adds, reloads): results computed from the
 * index are current while it has not moved. Lock held. */
uint64_t learn_memory_version(const laya_memory *m);

/* The feedback table the search consults. Lock held; valid until unlock. */
learn_fb *learn_memory_fb(laya_memory *m);

/* Records that texts[0..n) were shown after the context key[0..klen)
 * (learn_fb_key) and the typist took texts[accepted] (-1: none), unless
 * incognito is on (*learned, optional, 0 then). Takes the lock itself.
 * The events stay in memory (this process's suggestions use them at once)
 * until a commit whose text holds their context writes them (learn.c,
 * fb_flush_within): text typed and erased never reaches the disk through
 * its feedback. A failed write drops them (and returns its error):
 * feedback is a hint, never worth blocking the typist for. */
laya_status learn_memory_feedback(laya_memory *m, const uint8_t *key, size_t klen, const uint8_t *const *texts,
                                  const size_t *lens, int n, int accepted, int *learned, char *err, size_t errlen);

/* Writes every pending feedback event to the store now, committed or not
 * (tests only: the library itself writes feedback only with a commit).
 * Takes the lock itself. */
laya_status learn_memory_fb_flush(laya_memory *m, char *err, size_t errlen);

/* laya_memory_commit with an explicit unix time t (tests of forget_since). */
laya_status learn_memory_commit_at(laya_memory *m, const char *text, size_t len, int64_t t, int *learned,
                                   char *err, size_t errlen);

#endif
