/* fuzz_intent.c - the intent head's companion file loader (C10) on hostile
 * bytes: the safetensors container, the "laya-intent" metadata (format,
 * version, classes, hidden size, base checksum, threshold), the four
 * tensors' names, dtypes and shapes, finite weights. Built with
 * -DLAYA_FUZZ, the loader skips the signature and the checksum so that
 * mutations reach the checks behind them. Oracle: a refusal explains
 * itself; a head that loads runs its forward pass (fast and reference)
 * to probabilities in [0, 1] summing to 1 without a sanitizer report.
 * Seeds: fuzz/corpus/intent (heads of H = 16 and 3: fuzz_seeds.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "intent/intent.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        if ((fd = memfd_create("laya-fuzz-intent", MFD_CLOEXEC)) < 0) fz_fail("memfd_create");
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || (n && pwrite(fd, d, n, 0) != (ssize_t)n)) fz_fail("cannot write the input");
    model_trust t = {.allow_unsigned = 1};
    intent_head *h = NULL;
    char err[512] = "";
    laya_status st = intent_load(path, &t, 0, NULL, &h, err, sizeof err);
    if (st != LAYA_OK) {
        if (!err[0] || h) fz_fail("refused (status %d) without a message, or with a head", st);
        return 0;
    }
    float *y = calloc((size_t)h->H, sizeof *y);
    if (!y) fz_fail("out of memory");
    for (int i = 0; i < h->H; i++) y[i] = (float)(i % 5) - 2.f;
    float hid[INTENT_F], p[INTENT_C];
    for (int pass = 0; pass < 2; pass++) {
        (pass ? intent_forward_ref : intent_forward)(h, y, hid, p);
        double z = 0;
        for (int c = 0; c < INTENT_C; c++) {
            if (!(p[c] >= 0 && p[c] <= 1)) fz_fail("probability %d is %g", c, p[c]);
            z += p[c];
        }
        if (fabs(z - 1) > 1e-3) fz_fail("probabilities sum to %g", z);
    }
    free(y);
    intent_free(h);
    return 0;
}
