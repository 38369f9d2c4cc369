/* pipeline.h - private to src/engine: the keystroke pipeline's own state
 * (laya_session_event, include/laya.h), kept apart from the search's.
 *
 * One keystroke, top to bottom (pipeline.c, laya_session_event):
 *     field -> gate -> the event (verdict on the list shown, the edit,
 *     spacing) -> context -> suggestions (search, experts, pick: suggest.c
 *     and blend.c) -> decision -> the list kept for the verdict -> intent,
 *     notes.
 * The session keeps the context and the search; this struct keeps what lies
 * between the front end and them: the decider, what the field is, whether
 * the last accept left a blank at the cursor, and the list on screen. */
#ifndef LAYA_ENGINE_PIPELINE_H
#define LAYA_ENGINE_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "laya.h"

typedef struct engine_pipe engine_pipe;

/* A pipe with no decider yet; NULL when out of memory. */
engine_pipe *engine_pipe_new(void);
void engine_pipe_free(engine_pipe *p);   /* NULL is ignored */

#endif
