/* fuzz_pipeline.c - the keystroke pipeline (laya_session_event, engine/
 * pipeline.c) under hostile event scripts, against an oracle, not only "no
 * crash". The driver keeps its own copy of the text before the cursor and
 * applies every view as a front end would (KEY and ACCEPT: erase
 * view.erase bytes, insert view.insert; ERASE: one character; CONTEXT and
 * FOCUS: the text given). After each event:
 *  - the view is well formed: at most k suggestions, each non-empty, at
 *    most LAYA_MAX_SUGGESTION bytes and never broken UTF-8 where the text
 *    was valid; erase no longer than the text; gate 0..2;
 *  - in a secret field, and after a password prompt on the current line,
 *    nothing is shown, no note, no intent (the gate);
 *  - a CONTEXT or SHOW asking for suggestions only (no decision, no
 *    one-line cut, no memory: the tiny model has no prior, so no word is
 *    dropped) shows exactly what a fresh session given the driver's text
 *    suggests: the pipeline's context is the front end's.
 * Script: per event 4 bytes (kind % 8, flags, a count or index, a byte of
 * text), then for CONTEXT and FOCUS that many more bytes of text (a
 * replacement of the text's last bytes, so contexts jump back and forth).
 * Seeds: fuzz/corpus/pipeline (fuzz_seeds.c). */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "util/privacy.h"
#include "util/utf8.h"

enum { MAX_TEXT = 1024, MAX_EVENTS = 48 };

typedef struct {
    const uint8_t *d;
    size_t n, at;
} script;

static unsigned next(script *s) { return s->at < s->n ? s->d[s->at++] : 0; }

static void check_view(const laya_view *v, int k, const uint8_t *text, size_t len) {
    /* after a text that ends inside a character a suggestion may begin by
     * completing it: judged only after valid text */
    const int valid = utf8_check(text, len) == 0;
    if (v->n < 0 || v->n > k) fz_fail("%d suggestions for k %d", v->n, k);
    if (v->erase > len) fz_fail("erase %zu of a text of %zu bytes", v->erase, len);
    if (v->gate < 0 || v->gate > 2) fz_fail("gate %d", v->gate);
    for (int i = 0; i < v->n; i++) {
        const laya_suggestion *x = &v->list[i];
        if (!x->len || x->len > LAYA_MAX_SUGGESTION || !x->text) fz_fail("suggestion %d of %zu bytes", i, x->len);
        if (valid && utf8_check((const uint8_t *)x->text, x->len) < 0) fz_fail("suggestion %d is broken UTF-8", i);
    }
}

/* What a fresh session suggests for text[0..len). */
static void fresh_list(const laya_model *m, const laya_search_opts *o, const uint8_t *text, size_t len, int k,
                       laya_suggestion *out, int *n) {
    laya_session *f = NULL;
    if (laya_session_new(m, &f) != LAYA_OK || laya_session_set_search(f, o) != LAYA_OK) fz_fail("fresh session");
    if (laya_session_set_context(f, (const char *)text, len) != LAYA_OK) fz_fail("fresh context");
    *n = 0;
    if (privacy_secret_typed((const char *)text, len)) {
        laya_session_free(f);
        return;
    }
    static uint8_t keep[LAYA_MAX_K][LAYA_MAX_SUGGESTION];
    if (laya_suggest(f, k, out, n) != LAYA_OK) fz_fail("fresh suggest");
    for (int i = 0; i < *n; i++) {
        memcpy(keep[i], out[i].text, out[i].len);
        out[i].text = (const char *)keep[i];
    }
    laya_session_free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
    const laya_model *m = fz_model(300, 16, 8, 2, 3, 0.5f, 11);
    laya_search_opts o = laya_search_defaults();
    o.max_steps = 6;
    laya_session *s = NULL;
    if (laya_session_new(m, &s) != LAYA_OK || laya_session_set_search(s, &o) != LAYA_OK) fz_fail("session");
    static uint8_t text[MAX_TEXT + LAYA_MAX_SUGGESTION + 8];
    size_t len = 0;
    int shown = 0;
    script sc = {d, n, 0};
    for (int e = 0; e < MAX_EVENTS && sc.at < sc.n; e++) {
        unsigned kind = next(&sc) % 8, flags = next(&sc), count = next(&sc), byte = next(&sc);
        laya_input in = {.kind = (laya_input_kind)kind, .k = 1 + (int)(count % 3), .t_ms = 10.0 * e,
                         .field = flags & 0x1F, .want = (flags >> 5) & 0x7};
        uint8_t add[64];
        size_t na = 0;
        if (kind == LAYA_INPUT_CONTEXT || kind == LAYA_INPUT_FOCUS || kind == LAYA_INPUT_COMMIT) {
            na = count % sizeof add;
            for (size_t i = 0; i < na; i++) add[i] = (uint8_t)next(&sc);
        }
        uint8_t key[1] = {(uint8_t)byte};
        uint8_t ctx[MAX_TEXT + 64];
        size_t clen = 0;
        switch (kind) {
        case LAYA_INPUT_CONTEXT:
        case LAYA_INPUT_FOCUS: {
            /* the text's first bytes (a jump back) and the script's */
            size_t keep = len ? (size_t)byte % (len + 1) : 0;
            if (keep + na > MAX_TEXT) keep = MAX_TEXT - na;
            memcpy(ctx, text, keep);
            memcpy(ctx + keep, add, na);
            clen = keep + na;
            in.text = (const char *)ctx;
            in.len = clen;
            break;
        }
        case LAYA_INPUT_KEY:
            in.text = (const char *)key;
            in.len = 1;
            break;
        case LAYA_INPUT_COMMIT:
            in.text = (const char *)add;
            in.len = na;
            break;
        case LAYA_INPUT_ACCEPT:
            in.index = (int)(count % 4) - (count & 0x80 ? 1 : 0);
            in.word = byte & 1;
            break;
        default:
            break;
        }
        if (len + LAYA_MAX_SUGGESTION + 4 > MAX_TEXT && kind != LAYA_INPUT_CONTEXT && kind != LAYA_INPUT_FOCUS)
            continue;
        laya_view v;
        laya_status st = laya_session_event(s, &in, &v);
        if (kind == LAYA_INPUT_ACCEPT && (in.index < 0 || in.index >= shown)) {
            if (st != LAYA_ERR_ARG) fz_fail("accept %d of %d shown: status %d", in.index, shown, st);
            continue;
        }
        if (st != LAYA_OK) fz_fail("event %u: status %d", kind, st);
        /* the front end applies the view */
        if (kind == LAYA_INPUT_CONTEXT || kind == LAYA_INPUT_FOCUS) {
            memcpy(text, ctx, clen);
            len = clen;
        } else if (kind == LAYA_INPUT_KEY || kind == LAYA_INPUT_ACCEPT) {
            if (v.erase > len) fz_fail("erase %zu of %zu", v.erase, len);
            len -= v.erase;
            memcpy(text + len, v.insert, v.insert_len);
            len += v.insert_len;
        } else if (kind == LAYA_INPUT_ERASE && len) {
            len = utf8_prev(text, len);
        }
        check_view(&v, in.k, text, len);
        /* the list on screen stays through a SHOW that asks for no
         * suggestions and a context given with nothing wanted (the daemon's
         * notes and stale requests) when it is the same text or the client
         * judges its lists itself, outside the gate */
        const int keeps = (kind == LAYA_INPUT_SHOW && !(in.want & LAYA_WANT_SUGGEST) && v.gate != 2) ||
                          (kind == LAYA_INPUT_CONTEXT && !in.want &&
                           (!v.changed || (in.field & LAYA_FIELD_CLIENT_JUDGES)));
        if (!keeps) shown = v.n;
        const int secret = (in.field & LAYA_FIELD_SECRET) || privacy_secret_typed((const char *)text, len);
        if (secret && (v.n || v.n_notes || v.intent || v.gate != 2))
            fz_fail("the gate is open in a secret field: %d shown, gate %d", v.n, v.gate);
        const int plain = (kind == LAYA_INPUT_CONTEXT || kind == LAYA_INPUT_SHOW) &&
                          in.want == LAYA_WANT_SUGGEST && !(in.field & (LAYA_FIELD_ONE_LINE | LAYA_FIELD_SECRET));
        if (plain) {
            laya_suggestion ref[LAYA_MAX_K];
            int nr = 0;
            fresh_list(m, &o, text, len, in.k, ref, &nr);
            if (nr != v.n) fz_fail("event %d: %d shown, a fresh session %d", e, v.n, nr);
            for (int i = 0; i < nr; i++)
                if (ref[i].len != v.list[i].len || memcmp(ref[i].text, v.list[i].text, ref[i].len))
                    fz_fail("event %d: suggestion %d \"%.*s\" against a fresh session's \"%.*s\"", e, i,
                            (int)v.list[i].len, v.list[i].text, (int)ref[i].len, ref[i].text);
        }
    }
    laya_session_free(s);
    return 0;
}
