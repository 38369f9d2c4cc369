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
learn_fb *learn_memory_fb(laya_memory *m) { return m->fb; }
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

static int put_fb_row(void *ctx, const uint8_t *key, size_t klen, const uint8_t *text, size_t tlen, double ign,
                      double acc, int64_t clock, int64_t t) {
    (void)t;
    learn_fb_put(ctx, key, klen, text, tlen, ign, acc, clock);
    return 0;
}

/* Reads, in one snapshot, the switch, the generation and the rows the
 * index lacks: all of them when the generation moved (or after a failure),
 * else those newer than last_id; and the feedback rows the table lacks:
 * the newest that fit when the generation moved (this process's pending
 * events are dropped then: they may hold what a forget removed), else
 * those written since the feedback clock last read. "All" starts at the newest commits that
 * fill the index's cap: the index keeps only that much of the newest text
 * and rebuilds from what it keeps, so older rows would be indexed only to
 * be dropped (at the 100k-row cap that was 1.6 s of a 1.6 s load). */
static laya_status pull(laya_memory *m, char *err, size_t errlen) {
    learn_store_state s;
    laya_status st = learn_store_begin_read(m->store, err, errlen);
    int full = 0;
    if (st == LAYA_OK && (st = learn_store_state_get(m->store, &s, err, errlen)) == LAYA_OK) {
        if (s.generation != m->generation) {
            full = 1;
            learn_index_clear(m->ix);
            learn_fb_clear(m->fb);
            m->fb_seen = INT64_MIN;
            m->version++;
            st = learn_store_tail(m->store, LEARN_INDEX_DEFAULT_CAP, &m->last_id, err, errlen);
        }
    }
    if (st == LAYA_OK && s.fb_clock != m->fb_seen) {
        /* newest first: a full table keeps the newest rows */
        st = learn_store_fb_rows(m->store, full ? INT64_MIN : m->fb_seen, full ? LEARN_FB_DEFAULT_CAP : -1,
                                 put_fb_row, m->fb, err, errlen);
        if (st == LAYA_OK) {
            m->fb_seen = s.fb_clock;
            learn_fb_set_base(m->fb, s.fb_clock);
            m->version++;
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
    if (st == LAYA_OK && ((st = learn_index_new(LEARN_INDEX_DEFAULT_CAP, &m->ix)) != LAYA_OK ||
                          (st = learn_fb_new(LEARN_FB_DEFAULT_CAP, &m->fb)) != LAYA_OK))
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
    /* Feedback no commit held stays off the disk (fb_flush_within). */
    learn_store_close(m->store);
    learn_index_free(m->ix);
    learn_fb_free(m->fb);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

const char *laya_memory_path(const laya_memory *m) { return m ? learn_store_path(m->store) : NULL; }

/* Writes the pending feedback (lock held): with text, only the changes
 * whose key occurs in text[0..len) (a commit's: feedback reaches the disk
 * only with the committed text that holds its context; the rest stays in
 * memory, for this process's suggestions, until a commit holds it or the
 * process ends); without, all of them (learn_memory_fb_flush). Written rows
 * take the store's counts; a refused or failed write drops the changes it
 * held. The clock read moves on only when nobody else wrote feedback since
 * it was last read (else the next sync reads their rows). */
static laya_status fb_flush_within(laya_memory *m, const uint8_t *text, size_t len, char *err, size_t errlen) {
    const learn_fb_change *rows;
    int n, events;
    learn_fb_pending(m->fb, &rows, &n, &events);
    if (text) n = learn_fb_pending_within(m->fb, text, len);
    if (!n && !events) return LAYA_OK;
    learn_store_fb_result *r = &m->fb_write;
    laya_status st = learn_store_fb_write(m->store, rows, n, events, m->generation, r, err, errlen);
    learn_fb_pending_taken(m->fb, n);
    if (st == LAYA_OK && r->refused == LEARN_STORE_FB_INCOGNITO) m->incognito = 1;
    if (st == LAYA_OK && r->refused == LEARN_STORE_FB_FORGOTTEN) m->stale = 1;
    if (st == LAYA_OK && r->written) {
        /* the rows written take the store's counts (rows[0..written) are
         * still the changes written: dropped from the list only below) */
        for (int i = 0; i < r->written; i++)
            learn_fb_put(m->fb, rows[i].key, (size_t)rows[i].klen, rows[i].text, (size_t)rows[i].tlen, r->ign[i],
                         r->acc[i], r->clock_after);
        if (r->clock_before == m->fb_seen) m->fb_seen = r->clock_after;
        learn_fb_set_base(m->fb, r->clock_after);
        m->version++;
    }
    learn_fb_pending_drop(m->fb, n);
    return st;
}

laya_status learn_memory_fb_flush(laya_memory *m, char *err, size_t errlen) {
    if (!m) return LAYA_ERR_ARG;
    learn_memory_lock(m);
    laya_status st = fb_flush_within(m, NULL, 0, err, errlen);
    learn_memory_unlock(m);
    return st;
}

laya_status learn_memory_feedback(laya_memory *m, const uint8_t *key, size_t klen, const uint8_t *const *texts,
                                  const size_t *lens, int n, int accepted, int *learned, char *err, size_t errlen) {
    if (learned) *learned = 0;
    if (!m || n < 0 || n > 16 || accepted < -1 || accepted >= n) return LAYA_ERR_ARG;
    learn_memory_lock(m);
    /* others' feedback and forgets first (the first call loads the table) */
    learn_memory_sync(m, NULL, 0);
    laya_status st = LAYA_OK;
    if (!m->incognito) {
        st = learn_fb_record(m->fb, key, klen, texts, lens, n, accepted, (int64_t)time(NULL));
        if (st == LAYA_OK && learned) *learned = n > 0;
        m->version++;
    }
    learn_memory_unlock(m);
    return st;
}

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
    /* a commit is a write anyway: the feedback gathered in its text goes with it */
    if (st == LAYA_OK && id) fb_flush_within(m, (const uint8_t *)text, len, NULL, 0);
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

/* After a forget: the index and the feedback table are emptied before
 * they are reloaded, so even a failed reload leaves nothing forgotten in
 * them. */
static laya_status reload(laya_memory *m, char *err, size_t errlen) {
    learn_index_clear(m->ix);
    learn_fb_clear(m->fb);
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
    /* this process's pending feedback (never on disk) goes with the reload */
    laya_status st = kind == FORGET_ALL     ? learn_store_forget_all(m->store, &n, err, errlen)
                     : kind == FORGET_SINCE ? learn_store_forget_since(m->store, t, &n, err, errlen)
                     : kind == FORGET_WORD  ? learn_store_forget_word(m->store, (const uint8_t *)word, len, &n,
                                                                      err, errlen)
                                            : learn_store_forget_text(m->store, (const uint8_t *)word, len, &n,
                                                                      err, errlen);
    const learn_fb_change *rows;
    int np, events;
    learn_fb_pending(m->fb, &rows, &np, &events);
    if (st == LAYA_OK && (n > 0 || learn_store_fb_forgotten(m->store) > 0 || np > 0) && m->loaded)
        st = reload(m, err, errlen);
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

typedef struct {
    laya_memory_feedback_visit fn;
    void *ctx;
    int64_t now;
} fb_list_ctx;

static int fb_list_row(void *vctx, const uint8_t *key, size_t klen, const uint8_t *text, size_t tlen, double ign,
                       double acc, int64_t clock, int64_t t) {
    fb_list_ctx *c = vctx;
    return c->fn(c->ctx, (const char *)key, klen, (const char *)text, tlen, learn_fb_decay(ign, clock, c->now),
                 learn_fb_decay(acc, clock, c->now), t);
}

laya_status laya_memory_list_feedback(laya_memory *m, laya_memory_feedback_visit fn, void *ctx, char *err,
                                      size_t errlen) {
    if (!m || !fn) return LAYA_ERR_ARG;
    fb_list_ctx c = {fn, ctx, 0};
    learn_memory_lock(m);
    laya_status st = learn_store_begin_read(m->store, err, errlen);
    if (st == LAYA_OK) st = learn_store_fb_clock(m->store, &c.now, err, errlen);
    if (st == LAYA_OK) st = learn_store_fb_rows(m->store, INT64_MIN, -1, fb_list_row, &c, err, errlen);
    learn_store_end_read(m->store);
    learn_memory_unlock(m);
    return st;
}
