/* fuzz_model.c - the model file loader (C5) on hostile bytes: the
 * safetensors container, the Laya metadata, shapes, dtypes, quantization,
 * the embedded tokenizer. Built with -DLAYA_FUZZ, the loader skips the
 * signature and checksum checks so that mutations reach the parser and the
 * checks behind them. Oracle: a refusal explains itself; a model that loads
 * runs steps and logits through every matrix without a sanitizer report.
 * Seeds: fuzz/corpus/model (f32, f16, q8, q4 tiny models, q8 and q4 in the
 * panel layout: fuzz_seeds.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "model/model.h"
#include "model/model_sign.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
    /* The loader takes a path and maps it: one memory file, rewritten per input. */
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        if ((fd = memfd_create("laya-fuzz-model", MFD_CLOEXEC)) < 0) fz_fail("memfd_create");
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || (n && pwrite(fd, d, n, 0) != (ssize_t)n)) fz_fail("cannot write the input");
    model_trust t = {.allow_unsigned = 1};
    model *m = NULL;
    char err[512] = "";
    laya_status st = model_load_opts(path, &t, &m, err, sizeof err);
    if (st != LAYA_OK) {
        if (!err[0] || m) fz_fail("refused (status %d) without a message, or with a model", st);
        return 0;
    }
    const model_cfg *c = &m->cfg;
    float *mem = malloc((model_state_floats(c) + model_scratch_floats(c) + (size_t)c->H + (size_t)c->V) * sizeof(float));
    if (!mem) fz_fail("out of memory");
    model_state s;
    model_state_init(c, &s, mem);
    float *scratch = mem + model_state_floats(c), *y = scratch + model_scratch_floats(c), *logits = y + c->H;
    for (int i = 0; i < 2 * c->W + 1; i++) {
        model_step(m, &s, (int32_t)((unsigned)i * 2654435761u % (unsigned)c->V), scratch, y);
        model_logits(m, y, logits);
    }
    free(mem);
    model_free(m);
    return 0;
}
