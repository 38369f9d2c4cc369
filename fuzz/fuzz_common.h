/* fuzz_common.h - what the libFuzzer targets (fuzz/fuzz_*.c, `make fuzz`)
 * share: a tiny model built in memory, as the unit tests build theirs, so
 * that every input runs the real kernels at a speed ASan can afford. */
#ifndef LAYA_FUZZ_COMMON_H
#define LAYA_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include "laya.h"
#include "tok/tok.h"

/* A tokenizer of V ids (merges of letter pairs, the unit tests' kind). */
tok *fz_tok(int32_t V);

/* A model of shape (V, H, D, L, W) with weights uniform in [-scale, scale]
 * from seed, for the public API; made once per process and kept. */
const laya_model *fz_model(int32_t V, int H, int D, int L, int W, float scale, uint32_t seed);

/* Aborts with a message: a broken oracle is a crash libFuzzer reports. */
_Noreturn void fz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
