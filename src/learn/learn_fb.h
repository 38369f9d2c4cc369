/* learn_fb.h - what the typist did with the suggestions shown (C8): per
 * context and suggestion, how often it was passed over and how often
 * taken, with decay, so a suggestion the typist keeps passing over in one
 * context loses rank there and one it takes gains a little. The in-memory
 * table the search consults; learn.c keeps it in step with the store's
 * feedback table (learn_store.h) and serialises access to it.
 *
 * The context (the key): the partial word and the LEARN_FB_UNITS complete
 * units before it on the same line (learn_index_context_start), as bytes:
 * "in the k" for "...in the k", "Best re" for "Best re" at a line start,
 * "明天" after "我们明天". A row is (key, shown text) -> ignored, accepted:
 * decayed counts, each as of the clock value of its last change.
 *
 * Clock and decay: the clock counts feedback events (one per verdict on a
 * shown list), so decay follows use, not wall time (as librime's weights
 * decay per commit): a count loses half its weight every LEARN_FB_HALF_LIFE
 * events. Deterministic: the same events give the same factors.
 *
 * An event (learn_fb_record): the list shown[0..n) at a key and the index
 * taken (-1: the list was passed over). Passed over: every shown text gets
 * one more "ignored". Taken: the taken text one more "accepted", and each
 * text shown above it that is not a prefix of it one more "ignored" (the
 * typist read past it: "skip-above"; a prefix of what was taken was right,
 * only shorter; what was shown below was perhaps never read).
 *
 * The factor a candidate's probability is multiplied by (learn_fb_factor),
 * with net = ignored - accepted (decayed):
 *     net > 0:  1 / (1 + LEARN_FB_ALPHA net)     (passed over: down)
 *     net < 0:  1 + LEARN_FB_BOOST a / (1 + a), a = -net   (taken: up, at most 1 + BOOST)
 *     no row:   1 exactly, so with no feedback the suggestions are the
 *               model's and the memory's, bit for bit.
 * Takes cancel passes one for one: a suggestion taken as often as passed
 * over is left where the model put it. The constants were chosen on the
 * learning texts (docs/DESIGN.md, "Learning", and docs/RESULTS.md): two
 * units of context against one or none (one unit penalised suggestions
 * that were right the next time the same two words came: -0.2 points of
 * first-pass KSR@3, none -0.55), half-life 2000 against 500 (what was
 * passed over is still remembered when a 3,000-character text comes
 * again) and 8000, ALPHA 1 against 0.5 and 2, BOOST 0.5 against 0: all
 * within 0.1 point of one another on a first pass.
 *
 * Rows are found by a 64-bit hash of (key, text); the table keeps no text
 * (a collision, about n^2 / 2^65 for n rows, would lend one row's counts to
 * another text). The texts live in the store and, until they are written
 * there, in the pending list. Bounded: at most cap rows; adding to a full
 * table drops the eighth with the oldest clocks (never a pending one). */
#ifndef LAYA_LEARN_FB_H
#define LAYA_LEARN_FB_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include "laya.h"

enum {
    LEARN_FB_UNITS = 2,              /* complete units of context in the key */
    LEARN_FB_KEY_MAX = 128,          /* bytes of a key (longer: its last bytes, at a character start) */
    LEARN_FB_TEXT_MAX = LAYA_MAX_SUGGESTION,
    LEARN_FB_DEFAULT_CAP = 32768,    /* rows, in memory and in the store */
    LEARN_FB_PENDING = 1024          /* rows changed since the store last took them: a line of
                                        ~340 keystrokes with three suggestions passed over each */
};

#define LEARN_FB_HALF_LIFE 2000.0    /* events */
#define LEARN_FB_ALPHA 1.0
#define LEARN_FB_BOOST 0.5

/* A count v as of clock c, seen at clock now >= c. */
static inline double learn_fb_decay(double v, int64_t c, int64_t now) {
    return now > c ? v * exp2(-(double)(now - c) / LEARN_FB_HALF_LIFE) : v;
}

typedef struct learn_fb learn_fb;

/* A row changed since the store last took it: its text, and what changed. */
typedef struct {
    uint8_t key[LEARN_FB_KEY_MAX];
    uint8_t text[LEARN_FB_TEXT_MAX];
    int klen, tlen;
    double d_ign, d_acc;   /* counts added since (not decayed) */
    int64_t t;             /* unix seconds of the last change */
} learn_fb_change;

/* An empty table of at most cap rows (>= 64). *out owned by the caller
 * (learn_fb_free). */
laya_status learn_fb_new(int cap, learn_fb **out);
void learn_fb_free(learn_fb *f);   /* NULL is ignored */

/* Forgets every row and every pending change; the clock goes to 0. */
void learn_fb_clear(learn_fb *f);

int learn_fb_rows(const learn_fb *f);
/* The clock now: the store's as of the last learn_fb_set_base plus the
 * events recorded since. */
int64_t learn_fb_now(const learn_fb *f);

/* The key of the context ctx[0..len) (the text before the cursor): points
 * into ctx; its length in *klen. */
const uint8_t *learn_fb_key(const uint8_t *ctx, size_t len, size_t *klen);
/* The hash of a key, for learn_fb_factor. */
uint64_t learn_fb_key_hash(const uint8_t *key, size_t klen);

/* Records one event at unix time t: texts[0..n) shown at key (n <= 16,
 * each 1..LEARN_FB_TEXT_MAX bytes; others are skipped), accepted the index
 * taken or -1. The pending list keeps the changes for the store; when it
 * is full the event is still counted here but not kept for the store.
 * LAYA_ERR_ARG for accepted out of range. */
laya_status learn_fb_record(learn_fb *f, const uint8_t *key, size_t klen, const uint8_t *const *texts,
                            const size_t *lens, int n, int accepted, int64_t t);

/* The factor (see the top) for candidate text[0..len) in the context of
 * key hash kh; penalty_only: 1 where the row would raise it (for the first
 * word of a longer candidate: a word passed over takes its phrases down,
 * a word taken does not lift them). */
double learn_fb_factor(const learn_fb *f, uint64_t kh, const uint8_t *text, size_t len, int penalty_only);

/* Loading from the store: sets the row (key, text) to the store's counts
 * as of clock c, plus its pending change if it has one. */
void learn_fb_put(learn_fb *f, const uint8_t *key, size_t klen, const uint8_t *text, size_t tlen, double ign,
                  double acc, int64_t c);
/* The store's clock is base: now = base + the events not yet written. */
void learn_fb_set_base(learn_fb *f, int64_t base);

/* The pending changes (*rows, *n) and the events they hold (*events), for
 * the store. */
void learn_fb_pending(const learn_fb *f, const learn_fb_change **rows, int *n, int *events);
/* Privacy (docs/DESIGN.md, "The keystroke pipeline"): only feedback whose
 * key occurs in committed text may reach the store. Moves the pending
 * changes whose key occurs in text[0..len) (byte for byte) to the front and
 * returns how many. When the store took the first n:
 * learn_fb_pending_taken(f, n) makes their rows no longer pending and
 * forgets the events counted so far (their clock went with them; the
 * changes stay readable in the list, for learn_fb_put), then
 * learn_fb_pending_drop(f, n) removes them from the list, keeping the rest
 * pending, in memory only. */
int learn_fb_pending_within(learn_fb *f, const uint8_t *text, size_t len);
void learn_fb_pending_taken(learn_fb *f, int n);
void learn_fb_pending_drop(learn_fb *f, int n);

#endif
