/* ibus_laya.h - the Laya IBus input-method engine (one GObject class).
 *
 * The engine links the Laya library directly: the model is memory-mapped
 * once in the engine process (which ibus-daemon starts once per desktop
 * session and which serves every input context), so a keystroke costs one
 * in-process session update and search, with no second process to start,
 * supervise or reach over a socket. */
#ifndef LAYA_IBUS_LAYA_H
#define LAYA_IBUS_LAYA_H

#include <ibus.h>
#include "laya.h"

#define IBUS_TYPE_LAYA_ENGINE (ibus_laya_engine_get_type())
GType ibus_laya_engine_get_type(void);

/* The model every engine instance uses (borrowed: it must outlive them).
 * NULL: engines pass every key through, suggest nothing and show `notice`
 * (copied; it says why there is no model and how to fix it) as auxiliary
 * text in the candidate window, so the user sees it where they type.
 * Call before the factory creates engines. */
void ibus_laya_set_model(const laya_model *m, const char *notice);

/* The user's memory every engine instance learns into and draws on
 * (borrowed: it must outlive them); NULL: no learning. Call before the
 * factory creates engines. */
void ibus_laya_set_memory(laya_memory *m);

/* The user's notes index (borrowed: it must outlive them); NULL: none.
 * With one, the title of the note most related to the sentence typed is
 * shown as auxiliary text. Call before the factory creates engines. */
void ibus_laya_set_notes(laya_notes *n);
/* The intent head (borrowed: it outlives every engine), NULL: none. It is
 * attached to every engine's session; the engine does not show it (its
 * label is no title for the list: issue 39). */
void ibus_laya_set_intent(const laya_intent *h);

#endif
