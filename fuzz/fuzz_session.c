/* fuzz_session.c - the session's context diff and rewind (engine.c: apply,
 * rewind_to, the checkpoints) against a fresh session fed the final text:
 * an oracle, not only "no crash". The input is an edit script over a text
 * of at most MAX_TEXT bytes (under the engine's window, so both sessions
 * read the text from its start): type bytes, delete from the end, cut,
 * insert or delete in the middle, and ask for suggestions (which leaves
 * search nodes that later edits reuse), then, for an odd count, let the
 * session compute ahead as a front end does between keys. After the script the edited
 * session and a fresh one given the final text must hold the same tokens,
 * the same tail start, a bit-identical model state and the same
 * suggestions. Script: per edit 4 bytes (kind % 6, count - 1 % 16, position
 * low and high byte, taken modulo the length + 1), then the bytes typed or
 * inserted. Seeds: fuzz/corpus/session (fuzz_seeds.c). */
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "fuzz_common.h"
#include "model/model.h"

enum { MAX_TEXT = 2048, MAX_OPS = 64 };

typedef struct {
    const uint8_t *d;
    size_t n, at;
} script;

static unsigned next(script *s) { return s->at < s->n ? s->d[s->at++] : 0; }

static void same_suggestions(laya_session *a, laya_session *b) {
    laya_suggestion sa[3], sb[3];
    int na = 0, nb = 0;
    if (laya_suggest(a, 3, sa, &na) != LAYA_OK || laya_suggest(b, 3, sb, &nb) != LAYA_OK) fz_fail("suggest failed");
    if (na != nb) fz_fail("%d suggestions after the edits, %d from a fresh session", na, nb);
    for (int i = 0; i < na; i++)
        if (sa[i].len != sb[i].len || memcmp(sa[i].text, sb[i].text, sa[i].len) || sa[i].prob != sb[i].prob)
            fz_fail("suggestion %d differs: \"%.*s\" %.9g against \"%.*s\" %.9g", i, (int)sa[i].len, sa[i].text,
                    (double)sa[i].prob, (int)sb[i].len, sb[i].text, (double)sb[i].prob);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
    const laya_model *m = fz_model(300, 16, 8, 2, 3, 0.5f, 11);
    laya_search_opts o = laya_search_defaults();
    o.max_steps = 6;
    laya_session *s = NULL, *f = NULL;
    if (laya_session_new(m, &s) != LAYA_OK || laya_session_set_search(s, &o) != LAYA_OK) fz_fail("session");
    static uint8_t text[MAX_TEXT], tmp[MAX_TEXT];
    size_t len = 0;
    script sc = {d, n, 0};
    for (int op = 0; op < MAX_OPS && sc.at < sc.n; op++) {
        unsigned kind = next(&sc) % 6, c = 1 + next(&sc) % 16, lo = next(&sc), hi = next(&sc);
        size_t p = (lo | hi << 8) % (len + 1);
        switch (kind) {
        case 0:   /* type c bytes at the end */
        case 3:   /* insert c bytes at p */
            if (kind == 0) p = len;
            if (len + c > MAX_TEXT) c = (unsigned)(MAX_TEXT - len);
            memmove(text + p + c, text + p, len - p);
            for (unsigned i = 0; i < c; i++) text[p + i] = (uint8_t)next(&sc);
            len += c;
            break;
        case 1:   /* delete c bytes from the end */
            len = c < len ? len - c : 0;
            break;
        case 2:   /* cut at p */
            len = p;
            break;
        case 4:   /* delete [p, p + c) */
            if (c > len - p) c = (unsigned)(len - p);
            memmove(text + p, text + p + c, len - p - c);
            len -= c;
            break;
        case 5: { /* suggestions now: search nodes that later edits may reuse; with c
                     odd, then the idle work a front end does before the next key
                     (laya_session_prefetch), which must change nothing of the above */
            laya_suggestion out[3];
            int k = 0, more = c & 1, calls = 0;
            if (laya_suggest(s, 3, out, &k) != LAYA_OK) fz_fail("suggest failed");
            while (more && calls++ < 4)
                if (laya_session_prefetch(s, &more) != LAYA_OK) fz_fail("prefetch failed");
            if (more) fz_fail("prefetch still has guesses after %d calls", calls);
            continue;
        }
        }
        if (laya_session_set_context(s, (const char *)text, len) != LAYA_OK) fz_fail("set_context failed");
    }
    memcpy(tmp, text, len);
    if (laya_session_new(m, &f) != LAYA_OK || laya_session_set_search(f, &o) != LAYA_OK ||
        laya_session_set_context(f, (const char *)tmp, len) != LAYA_OK)
        fz_fail("fresh session");
    size_t na, nb;
    const int32_t *ta = engine_tokens(s, &na), *tb = engine_tokens(f, &nb);
    if (na != nb || memcmp(ta, tb, na * sizeof *ta)) fz_fail("tokens differ: %zu after the edits, %zu fresh", na, nb);
    if (engine_tail_start(s) != engine_tail_start(f) || engine_origin(s) != engine_origin(f))
        fz_fail("tail start %zu / %zu, origin %zu / %zu", engine_tail_start(s), engine_tail_start(f),
                engine_origin(s), engine_origin(f));
    const float *ya, *yb;
    const model_state *xa = engine_state(s, &ya), *xb = engine_state(f, &yb);
    const model_cfg *c = &engine_model(m)->cfg;
    if (xa->n != xb->n || memcmp(xa->h, xb->h, (size_t)c->L * c->H * sizeof(float)) ||
        memcmp(ya, yb, (size_t)c->H * sizeof(float)))
        fz_fail("the model state after the edits is not the fresh one's (%lld / %lld tokens read)",
                (long long)xa->n, (long long)xb->n);
    same_suggestions(s, f);
    laya_session_free(s);
    laya_session_free(f);
    return 0;
}
