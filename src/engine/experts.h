/* experts.h - private to src/engine: the experts that rescore the search's
 * candidate list (blend.c), each one function over engine_cands that
 * engine_suggest (suggest.c) calls in turn after the search:
 *   engine_blend_prior   the model file's next-word prior (no state);
 *   engine_blend_memory  the personal memory (engine_memory: the committed
 *                        history and the text typed in this session), with
 *                        the typist's feedback on earlier lists applied
 *                        inside it, to the model's candidates and the
 *                        memory's proposals before they are mixed (blend.c
 *                        says why it is not a step of its own).
 * engine_feedback keeps the list last shown until the typist's verdict on
 * it (laya_session_feedback), which the memory learns. */
#ifndef LAYA_ENGINE_EXPERTS_H
#define LAYA_ENGINE_EXPERTS_H

#include "engine/search.h"

struct learn_index;

enum { ENGINE_JUNK_CACHE = 64, ENGINE_FB_KEY = 128 /* LEARN_FB_KEY_MAX */ };

/* The personal memory: the index the search consults (borrowed; NULL:
 * none), how much it is trusted, whether it is consulted, and the text
 * being typed as a memory of its own. */
typedef struct {
    const struct learn_index *lix;  /* engine_set_learn (borrowed) */
    struct laya_memory *memory;     /* laya_session_set_memory (borrowed); the history comes from it */
    double learn_kappa;
    int learn_on;                   /* consult the memory and the text typed */
    /* The text being typed as a memory of its own (the context's last
     * ENGINE_WINDOW bytes, complete units only): names and phrases that
     * recur inside a document before anything is committed. */
    struct learn_index *cix;
    size_t cix_end;                 /* ctx[..cix_end) is in cix; SIZE_MAX: rebuild */
    uint64_t junk_hash[ENGINE_JUNK_CACHE];   /* words judged, by hash (0: none) */
    uint8_t junk_verdict[ENGINE_JUNK_CACHE];
} engine_memory;

/* The list last shown (laya_suggest, laya_session_shown) and the key of the
 * context it was made for (learn_fb_key), awaiting laya_session_feedback;
 * shown_n 0: none (or no memory to learn it). */
typedef struct {
    uint8_t shown_key[ENGINE_FB_KEY];
    size_t shown_klen;
    int shown_n;
    uint8_t shown_text[ENGINE_MAX_K][ENGINE_MAX_GEN];
    size_t shown_len[ENGINE_MAX_K];
} engine_feedback;

/* No memory attached, the default kappa, learning off. */
void engine_memory_init(engine_memory *mx);
void engine_memory_free(engine_memory *mx);
/* The text was edited from byte keep on: the typed text's index is
 * rebuilt at the next query where it holds bytes past keep. */
void engine_memory_edited(engine_memory *mx, size_t keep);
/* The typed text's index is rebuilt from the context at the next query;
 * clear: emptied now (what was typed in a private field is not kept). */
void engine_memory_forget_typed(engine_memory *mx, int clear);
/* 1 while the attached memory is incognito (brought up to other processes'
 * switches first), else 0: the text typed is then not learned from, by the
 * unit memory or by the continuous cache. */
int engine_memory_incognito(engine_memory *mx);

/* Adds what the model file's next-word prior p proposes for the text
 * ctx[0..len) to cl, with trust ec->prior_weight; a candidate it has
 * nothing for keeps its probability, and nothing changes without a prior
 * or at 0. */
void engine_blend_prior(engine_cands *cl, const prior *p, const engine_cfg *ec, const uint8_t *ctx,
                        size_t len);
/* Mixes what the personal memory mx proposes for cx's text into cl
 * (probabilities and scores set), k of which will be shown; the feedback
 * the attached memory holds is applied first. Nothing changes when
 * learning is off or the memory proposes nothing. lm: the model that
 * judges junk words. */
void engine_blend_memory(engine_cands *cl, engine_memory *mx, const laya_model *lm, const engine_cfg *ec,
                         const engine_context *cx, int k);

void engine_feedback_init(engine_feedback *fb);
void engine_feedback_free(engine_feedback *fb);
/* Nothing shown awaits a verdict. */
void engine_feedback_forget(engine_feedback *fb);
/* out[0..n) (texts checked by the caller) is what is shown now; with ctx,
 * the text ctx[0..len) it was made for gives the key. */
void engine_feedback_shown(engine_feedback *fb, const uint8_t *ctx, size_t len, const laya_suggestion *out,
                           int n);
/* Learns the verdict on the first n texts of the list shown (accepted: its
 * index, -1: passed over) into the memory mem (learn_memory_feedback). */
laya_status engine_feedback_learn(const engine_feedback *fb, int n, struct laya_memory *mem, int accepted);

#endif
