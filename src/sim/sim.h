/* sim.h - the typing simulator (C7): turns a text and a seed into the
 * keystroke stream a person would produce typing it, with timing, typos and
 * corrections, so behaviour-aware code and `laya eval` can be driven by
 * something that looks like a human and is reproducible.
 *
 * Statistics (shared/DATA.md, Dhakal et al., CHI 2018): inter-key interval
 * mean 239 ms, sd 112; key hold 116 ms; rollover (next key down before the
 * previous is up) in 25% of keystrokes; typos per intended character:
 * substitution 1.65%, omission 0.80%, insertion 0.67%; 1.2% of characters
 * stay wrong (uncorrected); 1.17 keystrokes per character.
 *
 * Model. Intervals are a two-component lognormal mixture: a "rolled" share
 * (fast digraphs, the next key lands while the previous one is still held)
 * and a "paced" share, with component moments solved so the mixture has the
 * published mean and sd and the rolled share produces the published rollover
 * rate against holds drawn lognormal around 116 ms. A typo is noticed (with
 * probability 1 - uncorrected/total_errors) after a geometric number of
 * further correct characters; the typist then presses backspace back to the
 * error and retypes. The notice delay's mean is the one free parameter, set
 * so keystrokes per character come out near 1.17.
 *
 * Units: one keystroke produces one UTF-8 character (an IME commit for CJK
 * counts as one keystroke), or one backspace that deletes one character.
 * Invalid UTF-8 bytes are typed as one-byte "characters".
 * Deterministic: the same text, params and seed give the same stream on any
 * machine (integer RNG, no libm calls whose results vary by platform beyond
 * last-bit rounding of exp/log/cos). */
#ifndef LAYA_SIM_H
#define LAYA_SIM_H

#include <stddef.h>
#include <stdint.h>
#include "laya.h"

typedef enum { SIM_CHAR = 0, SIM_BACKSPACE = 1 } sim_kind;

enum {
    SIM_F_TYPO = 1,      /* this keystroke typed a wrong or extra character */
    SIM_F_ROLLOVER = 2,  /* the next keystroke goes down before this one is released */
    SIM_F_CORRECTION = 4 /* a backspace fixing a typo */
};

typedef struct {
    double time_ms;  /* key-down time since the first keystroke (first is 0) */
    float hold_ms;   /* key-down to key-up */
    uint8_t kind;    /* sim_kind */
    uint8_t len;     /* bytes[0..len) for SIM_CHAR (1..4); 0 for a backspace */
    uint8_t flags;   /* SIM_F_* */
    char bytes[4];
} sim_event;

typedef struct {
    double iki_mean_ms, iki_sd_ms;   /* inter-key interval over all keystrokes */
    double hold_mean_ms, hold_sd_ms; /* key hold; sd not published: 30 ms */
    double rollover;                 /* share of keystrokes rolled over */
    double p_sub, p_omit, p_insert;  /* typo probabilities per intended character */
    double p_uncorrected;            /* per character, <= p_sub + p_omit + p_insert */
    double notice_mean_chars;        /* mean correct characters typed after a typo before noticing */
} sim_params;

/* The published statistics above (uncorrected errors included). */
void sim_params_default(sim_params *p);

/* Published statistics, but every typo is corrected: replaying the stream
 * gives back exactly the text (what `laya eval` needs). */
void sim_params_corrected(sim_params *p);

/* Simulates typing text[0..len). On success *out (owned by the caller, free
 * with free()) holds *n_out events. Texts over SIM_MAX_TEXT bytes are refused
 * (LAYA_ERR_LIMIT); inconsistent params give LAYA_ERR_ARG with a reason. */
enum { SIM_MAX_TEXT = 64 << 20 };
laya_status sim_run(const sim_params *p, uint64_t seed, const char *text, size_t len,
                    sim_event **out, size_t *n_out, char *err, size_t errlen);

/* Applies events to an empty buffer (a backspace deletes the last UTF-8
 * character, nothing if empty). *out is NUL-terminated, owned by the caller
 * (free with free()); *out_len excludes the NUL. */
laya_status sim_replay(const sim_event *ev, size_t n, char **out, size_t *out_len);

#endif
