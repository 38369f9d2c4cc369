/* decide.c - the behaviour-aware decision (rules in decide.h, API in
 * include/laya.h). Library code: no printing, no globals, no clock of its
 * own (every time comes from the caller, so tests and the simulator replay
 * exactly). */
#include "engine/decide.h"

#include <stdlib.h>
#include <string.h>

#include "util/hash.h"
#include "util/utf8.h"

struct laya_decider {
    decide_params p;
    float thr;                       /* adaptive confidence threshold */
    double iki[DECIDE_IKI_RING];     /* last typing intervals, ms (pauses left out) */
    int n_iki, iki_pos;
    double last_key_t;               /* time of the last keystroke or jump */
    double last_iki;                 /* interval before it, ms; < 0: none or a pause */
    int have_key;
    int last_backspace;              /* the last keystroke deleted */
    int pending;                     /* a shown list awaits ACCEPTED/IGNORED */
    decide_reason reason;
    /* Context tracking: hashes only (decide_track_context). */
    int have_ctx;
    size_t ctx_len, back_len;        /* length, and length minus its last character */
    uint64_t h_full, h_back;
};

void decide_params_default(decide_params *p) {
    *p = (decide_params){
        .min_saving = 0.0f,
        .p_start = 0.0f, .p_min = 0.0f, .p_max = 0.02f,
        .up = 0.01f, .down = 0.2f,
        .burst_ratio = 0.3f, .burst_p = 0.15f,
        .backspace_p = 0.3f,
        .full_p = 0.3f,
        .pause_ms = 2000.0f,
        .warmup = 8,
    };
}

static int unit(float x) { return x >= 0 && x <= 1; }

laya_status decide_params_check(const decide_params *p) {
    if (!p || !(p->min_saving >= 0) || !unit(p->p_min) || !unit(p->p_max) || !unit(p->p_start) ||
        !(p->p_min <= p->p_start && p->p_start <= p->p_max) || !unit(p->up) || !unit(p->down) ||
        !(p->burst_ratio >= 0) || !unit(p->burst_p) || !unit(p->backspace_p) || !unit(p->full_p) ||
        !(p->pause_ms > 0) || p->warmup < 0)
        return LAYA_ERR_ARG;
    return LAYA_OK;
}

laya_status decide_new(const decide_params *p, laya_decider **out) {
    if (!out) return LAYA_ERR_ARG;
    *out = NULL;
    if (decide_params_check(p) != LAYA_OK) return LAYA_ERR_ARG;
    laya_decider *d = calloc(1, sizeof *d);
    if (!d) return LAYA_ERR_NOMEM;
    d->p = *p;
    d->thr = p->p_start;
    d->last_iki = -1;
    *out = d;
    return LAYA_OK;
}

laya_status laya_decider_new(laya_decider **out) {
    decide_params p;
    decide_params_default(&p);
    return decide_new(&p, out);
}

void laya_decider_free(laya_decider *d) { free(d); }

float decide_threshold(const laya_decider *d) { return d->thr; }
decide_reason decide_last_reason(const laya_decider *d) { return d->reason; }

const char *decide_reason_str(decide_reason r) {
    switch (r) {
    case DECIDE_SHOWN: return "shown";
    case DECIDE_NONE: return "none";
    case DECIDE_LOW: return "low";
    case DECIDE_BURST: return "burst";
    case DECIDE_BACKSPACE: return "backspace";
    }
    return "?";
}

/* Median of the ring (n <= 31: an insertion sort of a copy is cheapest). */
double decide_median_iki(const laya_decider *d) {
    double v[DECIDE_IKI_RING];
    int n = d->n_iki;
    if (!n) return 0;
    for (int i = 0; i < n; i++) {
        double x = d->iki[i];
        int j = i;
        while (j > 0 && v[j - 1] > x) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void judge(laya_decider *d, int accepted) {
    if (accepted) d->thr -= d->p.down * (d->thr - d->p.p_min);
    else d->thr += d->p.up * (d->p.p_max - d->thr);
    d->pending = 0;
}

/* Records an event; cjk: the keystroke typed a CJK character, i.e. an input
 * method committed it after keys of its own, so its interval is no typing
 * speed (kept out of the median) and no burst is judged on it. */
static laya_status event(laya_decider *d, laya_event kind, double t_ms, int cjk) {
    switch (kind) {
    case LAYA_EVENT_CHAR:
    case LAYA_EVENT_BACKSPACE: {
        if (d->pending) judge(d, 0);
        double iki = d->have_key && !cjk ? t_ms - d->last_key_t : -1;
        if (iki >= 0 && iki <= d->p.pause_ms) {
            d->iki[d->iki_pos] = iki;
            d->iki_pos = (d->iki_pos + 1) % DECIDE_IKI_RING;
            if (d->n_iki < DECIDE_IKI_RING) d->n_iki++;
            d->last_iki = iki;
        } else {
            d->last_iki = -1;
        }
        d->last_key_t = t_ms;
        d->have_key = 1;
        d->last_backspace = kind == LAYA_EVENT_BACKSPACE;
        return LAYA_OK;
    }
    case LAYA_EVENT_JUMP:
        /* Not a judgement on the shown list (it may have been taken by a
         * front end that did not say so), and no typing speed across it. */
        d->pending = 0;
        d->last_iki = -1;
        d->last_key_t = t_ms;
        d->have_key = 1;
        d->last_backspace = 0;
        return LAYA_OK;
    case LAYA_EVENT_ACCEPTED:
    case LAYA_EVENT_IGNORED:
        judge(d, kind == LAYA_EVENT_ACCEPTED);
        return LAYA_OK;
    }
    return LAYA_ERR_ARG;
}

laya_status laya_decide_event(laya_decider *d, laya_event kind, double t_ms) {
    if (!d) return LAYA_ERR_ARG;
    return event(d, kind, t_ms, 0);
}

/* ---- candidates ------------------------------------------------------ */

size_t decide_first_word_end(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n && utf8_blank(s[i])) i++;
    if (i < n && utf8_cjk_at(s, n, i)) {
        for (int c = 0; c < 2 && i < n && utf8_cjk_at(s, n, i); c++) i = utf8_next(s, n, i);
        return i;
    }
    while (i < n && !utf8_blank(s[i])) i = utf8_next(s, n, i);
    if (i < n) i++;
    return i;
}

/* Would a candidate of len bytes and probability p pass threshold need? */
static int worth(const decide_params *P, const uint8_t *s, size_t len, double p, double need) {
    double chars = (double)utf8_count(s, len);
    return len > 0 && p >= need && p * (chars - 1) >= P->min_saving;
}

static size_t default_word_end(void *ctx, const uint8_t *s, size_t n) { return decide_first_word_end(s, n); }

laya_status laya_decide(laya_decider *d, double t_ms, const laya_suggestion *in, int n,
                        laya_suggestion *out, int *n_out) {
    return decide_words(d, t_ms, in, n, out, n_out, default_word_end, NULL);
}

laya_status decide_words(laya_decider *d, double t_ms, const laya_suggestion *in, int n, laya_suggestion *out,
                         int *n_out, decide_word_end_fn word_end, void *ctx) {
    if (!d || (!in && n) || n < 0 || !out || !n_out || !word_end) return LAYA_ERR_ARG;
    *n_out = 0;
    const decide_params *P = &d->p;
    double med = decide_median_iki(d), need = d->thr;
    decide_reason floor = DECIDE_LOW;
    int burst = d->n_iki >= P->warmup && d->n_iki > 0 && d->last_iki >= 0 &&
                d->last_iki < P->burst_ratio * med && t_ms - d->last_key_t < P->burst_ratio * med;
    if (burst && P->burst_p > need) need = P->burst_p, floor = DECIDE_BURST;
    if (d->last_backspace && P->backspace_p > need) need = P->backspace_p, floor = DECIDE_BACKSPACE;

    /* Decide into a local list first: out may alias in. */
    laya_suggestion keep[16];
    int n_keep = 0, any_base = 0, cap = n < 16 ? n : 16;
    for (int i = 0; i < cap; i++) {
        const uint8_t *s = (const uint8_t *)in[i].text;
        size_t len = in[i].len, w = word_end(ctx, s, len);
        double p = in[i].prob;
        int full = w == len || p >= P->full_p;
        size_t use = 0;
        double pu = 0;
        if (full && worth(P, s, len, p, need)) {
            use = len, pu = p;
        } else if (w < len) {
            /* The first word is as likely as all candidates that start with it. */
            double pw = 0;
            for (int j = 0; j < cap; j++) {
                const uint8_t *t = (const uint8_t *)in[j].text;
                if (in[j].len >= w && !memcmp(t, s, w) && word_end(ctx, t, in[j].len) == w)
                    pw += in[j].prob;
            }
            if (pw > 1) pw = 1;
            if (worth(P, s, w, pw, need)) use = w, pu = pw;
            any_base |= worth(P, s, w, pw, d->thr);
        }
        any_base |= full && worth(P, s, len, p, d->thr);
        if (!use) continue;
        int dup = 0;
        for (int j = 0; j < n_keep && !dup; j++)
            dup = keep[j].len == use && !memcmp(keep[j].text, s, use);
        if (dup) continue;
        keep[n_keep++] = (laya_suggestion){.text = in[i].text, .len = use, .prob = (float)pu};
    }
    memcpy(out, keep, (size_t)n_keep * sizeof *out);
    *n_out = n_keep;
    if (n_keep) d->reason = DECIDE_SHOWN;
    else if (!n) d->reason = DECIDE_NONE;
    else d->reason = any_base ? floor : DECIDE_LOW;
    d->pending = n_keep > 0;
    return LAYA_OK;
}

/* ---- context tracking ------------------------------------------------ */

/* FNV-1a 64 of the last (at most) TRACK_WINDOW bytes before end. Contexts
 * are told apart by their length and this hash, so the work per request is
 * constant however long the document: an edit more than TRACK_WINDOW bytes
 * before the cursor that also leaves the length one character longer or
 * shorter would pass for a keystroke (its only effect: one typing interval
 * and one judgement of a shown list). */
enum { TRACK_WINDOW = 1024 };

static uint64_t tail_hash(const uint8_t *s, size_t end) {
    size_t from = end > TRACK_WINDOW ? end - TRACK_WINDOW : 0;
    return hash_fnv1a64(HASH_FNV64_BASIS, s + from, end - from);
}

int decide_track_context(laya_decider *d, const char *ctx, size_t len, double t_ms) {
    const uint8_t *s = (const uint8_t *)ctx;
    size_t back = utf8_prev(s, len);
    uint64_t h = tail_hash(s, len), h_back = tail_hash(s, back);
    laya_event kind = LAYA_EVENT_JUMP;
    int same = 0;
    if (d->have_ctx) {
        if (len == d->ctx_len && h == d->h_full) same = 1;
        else if (len > d->ctx_len && back == d->ctx_len && h_back == d->h_full) kind = LAYA_EVENT_CHAR;
        else if (len == d->back_len && h == d->h_back) kind = LAYA_EVENT_BACKSPACE;
    }
    d->have_ctx = 1;
    d->ctx_len = len;
    d->back_len = back;
    d->h_full = h;
    d->h_back = h_back;
    if (same) return -1;
    event(d, kind, t_ms, kind == LAYA_EVENT_CHAR && utf8_cjk_at(s, len, back));
    return (int)kind;
}

void decide_forget_context(laya_decider *d) {
    d->have_ctx = 0;
    d->pending = 0;
    d->last_backspace = 0;
    d->last_iki = -1;
}
