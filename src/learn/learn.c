/* learn.c - laya_memory: the store and the index kept in step (learn.h),
 * and the public "Personal memory" functions of include/laya.h. */
#include "learn/learn.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/err.h"
#include "util/privacy.h"

_Static_assert((int)LAYA_MEMORY_MAX_TEXT == (int)LEARN_STORE_MAX_TEXT,
               "laya.h and learn_store.h disagree on the commit limit");

void learn_memory_lock(laya_memory *m) { pthread_mutex_lock(&m->mu); }
void learn_memory_unlock(laya_memory *m) { pthread_mutex_unlock(&m->mu); }
learn_index *learn_memory_index(laya_memory *m) { return m->ix; }
int learn_memory_incognito(const laya_memory *m) { return m->incognito; }
uint64_t learn_memory_version(const laya_memory *m) { return m->version; }

static int add_row(void *ctx, int64_t id, const uint8_t *text, size_t len, int64_t t) {
    laya_memory *m = ctx;
    laya_status st = learn_index_add(m->ix, text, len);
    if (st != LAYA_OK) {
        m->load_st = st;
        return 1;
    }
    m->last_id = id;
    return 0;
}

/* Reads, in one snapshot, the switch, the generation and the rows the
 * index lacks: all of them when the generation moved (or after a failure),
 * else those newer than last_id. "All" starts at the newest commits that
 * fill the index's cap: the index keeps only that much of the newest text
 * and rebuilds from what it keeps, so older rows would be indexed only to
 * be dropped (at the 100k-row cap that was 1.6 s of a 1.6 s load). */
static laya_status pull(laya_memory *m, char *err, size_t errlen) {
    learn_store_state s;
    laya_status st = learn_store_begin_read(m->store, err, errlen);
    if (st == LAYA_OK && (st = learn_store_state_get(m->store, &s, err, errlen)) == LAYA_OK) {
        if (s.generation != m->generation) {
            learn_index_clear(m->ix);
            m->version++;
            st = learn_store_tail(m->store, LEARN_INDEX_DEFAULT_CAP, &m->last_id, err, errlen);
        }
    }
    if (st == LAYA_OK) {
        m->generation = s.generation;
        m->incognito = s.incognito;
        m->load_st = LAYA_OK;
        int64_t before = m->last_id;
        st = learn_store_rows(m->store, m->last_id, add_row, m, err, errlen);
        if (st == LAYA_OK && m->load_st != LAYA_OK)
            st = err_set(err, errlen, m->load_st, "cannot load the memory into the index: %s",
                         laya_status_str(m->load_st));
        if (m->last_id != before) m->version++;
    }
    learn_store_end_read(m->store);
    if (st != LAYA_OK) m->generation = -1;
    m->stale = st != LAYA_OK;
    return st;
}

laya_status learn_memory_sync(laya_memory *m, char *err, size_t errlen) {
    if (!m->loaded) {
        m->loaded = 1;
        return pull(m, err, errlen);
    }
    int changed = m->stale;
    if (!changed) {
        laya_status st = learn_store_changed(m->store, &changed, err, errlen);
        if (st != LAYA_OK) return st;
    }
    return changed ? pull(m, err, errlen) : LAYA_OK;
}

laya_status laya_memory_default_path(char *buf, size_t n, char *err, size_t errlen) {
    if (!buf || !n) return LAYA_ERR_ARG;
    return learn_store_default_path(buf, n, err, errlen);
}

laya_status laya_memory_open(const char *path, laya_memory **out, char *err, size_t errlen) {
    if (!out) return LAYA_ERR_ARG;
    *out = NULL;
    laya_memory *m = calloc(1, sizeof *m);
    if (!m) return LAYA_ERR_NOMEM;
    pthread_mutex_init(&m->mu, NULL);
    m->generation = -1;
    laya_status st = learn_store_open(path, &m->store, err, errlen);
    if (st == LAYA_OK && (st = learn_index_new(LEARN_INDEX_DEFAULT_CAP, &m->ix)) != LAYA_OK)
        err_set(err, errlen, st, "cannot allocate the memory's index");
    if (st != LAYA_OK) {
        laya_memory_free(m);
        return st;
    }
    *out = m;
    return LAYA_OK;
}

void laya_memory_free(laya_memory *m) {
    if (!m) return;
    learn_store_close(m->store);
    learn_index_free(m->ix);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

const char *laya_memory_path(const laya_memory *m) { return m ? learn_store_path(m->store) : NULL; }

laya_status learn_memory_commit_at(laya_memory *m, const char *text, size_t len, int64_t t, int *learned,
                                   char *err, size_t errlen) {
    if (learned) *learned = 0;
    if (!m || (!text && len)) return LAYA_ERR_ARG;
    /* What follows a password prompt is cut before anything is kept
     * ("Password: hunter2" is stored as "Password:"). */
    char *copy = NULL;
    if (len) {
        copy = malloc(len);
        if (!copy) return err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory for a commit of %zu bytes", len);
        memcpy(copy, text, len);
        len = privacy_redact(copy, len, 0);
        text = copy;
    }
    learn_memory_lock(m);
    /* Others' commits first, so the index keeps the store's order; a failed
     * sync leaves the index stale, which the add below resolves. Before the
     * first sync there is no index to keep in step. */
    if (m->loaded) learn_memory_sync(m, NULL, 0);
    int64_t id = 0;
    laya_status st = learn_store_add(m->store, (const uint8_t *)text, len, t, &id, err, errlen);
    if (st == LAYA_OK && id == 0 && len) m->incognito = 1;
    if (st == LAYA_OK && id && m->loaded) {
        /* The id follows the index's newest: nobody else wrote in between,
         * so the index can take the text now; otherwise the next sync
         * reads everything after last_id, this commit included. */
        if (!m->stale && id == m->last_id + 1 && learn_index_add(m->ix, (const uint8_t *)text, len) == LAYA_OK) {
            m->last_id = id;
            m->version++;
        } else {
            m->stale = 1;
        }
    }
    learn_memory_unlock(m);
    free(copy);
    if (learned) *learned = id != 0;
    return st;
}

laya_status laya_memory_commit(laya_memory *m, const char *text, size_t len, int *learned, char *err,
                               size_t errlen) {
    return learn_memory_commit_at(m, text, len, (int64_t)time(NULL), learned, err, errlen);
}

laya_status laya_memory_set_incognito(laya_memory *m, int on, char *err, size_t errlen) {
    if (!m) return LAYA_ERR_ARG;
    learn_memory_lock(m);
    laya_status st = learn_store_set_incognito(m->store, on != 0, err, errlen);
    if (st == LAYA_OK) m->incognito = on != 0;
    learn_memory_unlock(m);
    return st;
}

laya_status laya_memory_get_incognito(laya_memory *m, int *on, char *err, size_t errlen) {
    if (!m || !on) return LAYA_ERR_ARG;
    learn_memory_lock(m);
    laya_status st = learn_store_get_incognito(m->store, on, err, errlen);
    if (st == LAYA_OK) m->incognito = *on;
    learn_memory_unlock(m);
    return st;
}

/* After a forget: the index is emptied before it is reloaded, so even a
 * failed reload leaves no forgotten text in it. */
static laya_status reload(laya_memory *m, char *err, size_t errlen) {
    learn_index_clear(m->ix);
    m->last_id = 0;
    m->generation = -1;
    m->version++;
    return pull(m, err, errlen);
}

enum forget_kind { FORGET_ALL, FORGET_SINCE, FORGET_WORD, FORGET_TEXT };

static laya_status forget(laya_memory *m, enum forget_kind kind, int64_t t, const char *word, size_t len,
                          int64_t *removed, char *err, size_t errlen) {
    if (removed) *removed = 0;
    if (!m) return LAYA_ERR_ARG;
    int64_t n = 0;
    learn_memory_lock(m);
    laya_status st = kind == FORGET_ALL     ? learn_store_forget_all(m->store, &n, err, errlen)
                     : kind == FORGET_SINCE ? learn_store_forget_since(m->store, t, &n, err, errlen)
                     : kind == FORGET_WORD  ? learn_store_forget_word(m->store, (const uint8_t *)word, len, &n,
                                                                      err, errlen)
                                            : learn_store_forget_text(m->store, (const uint8_t *)word, len, &n,
                                                                      err, errlen);
    if (st == LAYA_OK && n > 0 && m->loaded) st = reload(m, err, errlen);
    learn_memory_unlock(m);
    if (removed) *removed = n;
    return st;
}

laya_status laya_memory_forget_all(laya_memory *m, int64_t *removed, char *err, size_t errlen) {
    return forget(m, FORGET_ALL, 0, NULL, 0, removed, err, errlen);
}

laya_status laya_memory_forget_since(laya_memory *m, int64_t unix_time, int64_t *removed, char *err,
                                     size_t errlen) {
    return forget(m, FORGET_SINCE, unix_time, NULL, 0, removed, err, errlen);
}

laya_status laya_memory_forget_word(laya_memory *m, const char *word, size_t len, int64_t *removed, char *err,
                                    size_t errlen) {
    return forget(m, FORGET_WORD, 0, word, len, removed, err, errlen);
}

laya_status laya_memory_forget_text(laya_memory *m, const char *text, size_t len, int64_t *removed, char *err,
                                    size_t errlen) {
    return forget(m, FORGET_TEXT, 0, text, len, removed, err, errlen);
}

typedef struct {
    laya_memory_visit fn;
    void *ctx;
} list_ctx;

static int list_row(void *vctx, const uint8_t *text, size_t len, int64_t count, int64_t first, int64_t last) {
    list_ctx *c = vctx;
    return c->fn(c->ctx, (const char *)text, len, count, first, last);
}

laya_status laya_memory_list(laya_memory *m, laya_memory_visit fn, void *ctx, char *err, size_t errlen) {
    if (!m || !fn) return LAYA_ERR_ARG;
    list_ctx c = {fn, ctx};
    learn_memory_lock(m);
    laya_status st = learn_store_list(m->store, list_row, &c, err, errlen);
    learn_memory_unlock(m);
    return st;
}

laya_status laya_memory_prepare(laya_memory *m, char *err, size_t errlen) {
    if (!m) return LAYA_ERR_ARG;
    learn_memory_lock(m);
    laya_status st = learn_memory_sync(m, err, errlen);
    learn_memory_unlock(m);
    return st;
}
