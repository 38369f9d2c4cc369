/* front.h - what the programs over the library (the `laya` program, the
 * IBus engine, the settings window) look up the same way: where the model,
 * its intent head and the personal memory are, and how many feedback
 * entries a memory holds. The rule lives here once, so that no program
 * links another's files for it (docs/DESIGN.md, "Layers"). Nothing here
 * opens, prints or exits. */
#ifndef LAYA_FRONT_H
#define LAYA_FRONT_H

#include <stddef.h>
#include <stdint.h>
#include "laya.h"

/* The model path to use: explicit_path (if non-NULL), else $LAYA_MODEL (if
 * not empty), else models/default.safetensors in the executable's
 * folder's parent (a source tree's build/), else share/laya/default.safetensors
 * there (an installed tree), whichever is readable, else the installed
 * LAYA_PREFIX/share/laya/default.safetensors. Returns explicit_path, the
 * environment's string or buf (n bytes: the path, cut to fit). This
 * function can't fail. */
const char *front_model_path(const char *explicit_path, char *buf, size_t n);

/* The intent head's companion file beside a model: M.safetensors ->
 * M.intent.safetensors (else ".intent.safetensors" appended), into buf (n
 * bytes, cut to fit). */
void front_intent_path(const char *model_path, char *buf, size_t n);

/* The personal-memory store to use: explicit_path (if non-NULL), else
 * $LAYA_MEMORY (if not empty), else NULL (laya_memory_open's default,
 * $XDG_DATA_HOME/laya/memory.db). */
const char *front_memory_path(const char *explicit_path);

/* How many feedback entries m holds, in *n (what a forget removes with the
 * commits it names: `laya memory forget` and the settings window count them
 * before and after). The library's status; err as laya_memory_list_feedback
 * fills it. */
laya_status front_feedback_entries(laya_memory *m, int64_t *n, char *err, size_t errlen);

#endif
