/* decide.h - the behaviour-aware decision (C7): whether to show the
 * suggestions of a keystroke now, and how much of each.
 *
 * A decider is per session. It is told what the typist does (laya_decide_event
 * or decide_track_context, with timestamps) and, for each candidate list from
 * laya_suggest, keeps the candidates worth the typist's attention:
 *  - expected saving: a candidate of c characters with probability p saves
 *    p * (c - 1) keystrokes in expectation (accepting costs one key); below
 *    min_saving it is never shown.
 *  - confidence: p must reach a threshold that adapts to the typist: each
 *    ignored list moves it a step `up` of the way towards p_max, each
 *    acceptance a step `down` of the way towards p_min.
 *  - bursts: while the last inter-key interval is under burst_ratio times the
 *    running median (the typist is not looking), the threshold is at least
 *    burst_p. A CJK character typed (decide_track_context) is an input
 *    method's commit after keys of its own: its interval is neither typing
 *    speed nor a burst.
 *  - corrections: right after a backspace the threshold is at least
 *    backspace_p (the typist is fixing text, not reading suggestions).
 *  - length: a candidate longer than one word whose own p is under full_p is
 *    cut to its first word, whose probability is taken as the sum over the
 *    candidates that start with that word (a lower bound of the word's true
 *    probability, since the beam only saw some of its continuations), and is
 *    then judged like any other candidate.
 * Deterministic: the same events and candidates give the same decisions.
 * Memory is constant (a ring of the last DECIDE_IKI_RING intervals). */
#ifndef LAYA_DECIDE_H
#define LAYA_DECIDE_H

#include <stddef.h>
#include <stdint.h>
#include "laya.h"

enum { DECIDE_IKI_RING = 31 };

/* Defaults, tuned with `laya eval --sim` on data/corpus/en/valid.txt (our
 * own split, never the reserved texts) against the H=256 checkpoint, whose
 * probabilities are under-confident (p 0.1-0.2 is right 18% of the time,
 * p 0.3-0.4 52%): a global threshold, or a min_saving as high as 0.05,
 * cost several points of KSR there; first-word cuts raise both KSR and
 * precision; the burst and backspace floors buy precision with some KSR
 * (the simulated typist always looks, so it never gains from a hold).
 * Retune when the model changes. With the shipped H=384 model (2026-12-03)
 * the CJK rule and burst_ratio 0.5 -> 0.3 took Chinese CSR with the
 * decision from 0.116 to 0.123 (0.129 without it) and English KSR from
 * 0.513 to 0.523; then, once CJK candidates were ranked by the characters
 * they save (suggest.c), p_max 0.05 -> 0.02: the riskier two-character
 * lists drove the threshold up and held 103 lists as low (Chinese CSR with
 * the decision 0.104 at 0.05, 0.134 at 0.02, 0.151 without the decision;
 * English unchanged) (docs/RESULTS.md). */
typedef struct {
    float min_saving;   /* expected keystrokes saved, p*(chars-1), below which nothing shows: 0 */
    float p_start;      /* initial confidence threshold: 0 */
    float p_min, p_max; /* bounds of the adaptive threshold: 0, 0.02 */
    float up, down;     /* threshold steps per ignored / accepted list: 0.01, 0.2 */
    float burst_ratio;  /* burst: last interval < burst_ratio * median interval: 0.3 */
    float burst_p;      /* threshold floor during a burst: 0.15 */
    float backspace_p;  /* threshold floor right after a backspace: 0.3 */
    float full_p;       /* a multi-word candidate under this is cut to its first word: 0.3 */
    float pause_ms;     /* intervals longer than this are pauses, not typing speed: 2000 */
    int warmup;         /* intervals seen before bursts are judged: 8 */
} decide_params;

void decide_params_default(decide_params *p);
/* LAYA_ERR_ARG if a field is out of range (probabilities in [0,1], p_min <=
 * p_start <= p_max, steps in [0,1], ratios >= 0, warmup >= 0). */
laya_status decide_params_check(const decide_params *p);

/* A decider with explicit parameters (laya_decider_new uses the defaults). */
laya_status decide_new(const decide_params *p, laya_decider **out);

/* What laya_decide last held back and why (for replies and tests). */
typedef enum {
    DECIDE_SHOWN = 0,     /* something was shown */
    DECIDE_NONE,          /* there were no candidates */
    DECIDE_LOW,           /* every candidate was under the threshold or min_saving */
    DECIDE_BURST,         /* held back by the burst floor */
    DECIDE_BACKSPACE      /* held back by the backspace floor */
} decide_reason;

decide_reason decide_last_reason(const laya_decider *d);
const char *decide_reason_str(decide_reason r);
/* The adaptive threshold now, and the running median interval (0 until any). */
float decide_threshold(const laya_decider *d);
double decide_median_iki(const laya_decider *d);

/* Classifies a new context against the previous one seen by this decider
 * and records it as an event at t_ms: one more UTF-8 character is
 * LAYA_EVENT_CHAR, one fewer LAYA_EVENT_BACKSPACE, anything else
 * LAYA_EVENT_JUMP (an edit, a paste, an accepted suggestion, a cursor move).
 * Only lengths and hashes are kept (FNV-1a 64 of the last 1 KB before the
 * end and before the last character): constant time and memory whatever
 * the length, no copy of the text (decide.c says what the window cannot
 * tell apart). Returns
 * the kind recorded, or -1 when the context is unchanged (nothing recorded). */
int decide_track_context(laya_decider *d, const char *ctx, size_t len, double t_ms);

/* End of the first word of s[0..n), as the length rule above cuts a
 * candidate: leading blanks, then up to the next blank (punctuation stays
 * with its word), plus one blank after it. A word of CJK characters, which
 * has no blanks, is cut after two of them (the commonest word length). n
 * when s is one word. */
size_t decide_first_word_end(const uint8_t *s, size_t n);

/* laya_decide with another rule for the first word's end: word_end(ctx, s,
 * n) in place of decide_first_word_end (the keystroke pipeline passes one
 * that never cuts a Chinese word its prior knows: pipeline.c). */
typedef size_t (*decide_word_end_fn)(void *ctx, const uint8_t *s, size_t n);
laya_status decide_words(laya_decider *d, double t_ms, const laya_suggestion *in, int n, laya_suggestion *out,
                         int *n_out, decide_word_end_fn word_end, void *ctx);

/* Forgets the context (the next one counts as a jump) and any pending
 * shown list; the typist's learned threshold and speed are kept. */
void decide_forget_context(laya_decider *d);

#endif
