/* bench_intent.c - the intent head's cost per keystroke (C10): one
 * intent_forward, the product a session pays when its stable state
 * changed, fast (kernel table) and reference, at the shipped model's
 * H = 384, beside one model step of the shipped model for scale. Reports
 * best-of-5 means; the machine is shared, so these are upper bounds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "engine/engine.h"
#include "intent/intent.h"
#include "kern/kern.h"

typedef void (*fwd_fn)(const intent_head *, const float *, float *, float *);

static double per_call_us(fwd_fn f, const intent_head *h, const float *y, int reps) {
    float hid[INTENT_F], p[INTENT_C];
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = bench_now();
        for (int i = 0; i < reps; i++) f(h, y, hid, p);
        double us = (bench_now() - t0) * 1e6 / reps;
        if (us < best) best = us;
    }
    return best;
}

BENCH(intent_per_keystroke) {
    enum { H = 384 };
    intent_head *h;
    if (intent_new(H, &h) != LAYA_OK) return;
    uint64_t s = 1;
    for (size_t k = 0; k < intent_n_params(H); k++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        h->mem[k] = (float)((s >> 40) % 2001) / 1000.f - 1.f;
    }
    float y[H];
    for (int i = 0; i < H; i++) y[i] = (float)(i % 7) / 7.f - 0.4f;
    double fast = per_call_us(intent_forward, h, y, 20000), ref = per_call_us(intent_forward_ref, h, y, 2000);
    printf("intent head (H=%d, F=%d, C=%d, %zu parameters, kernels %s)\n", H, INTENT_F, INTENT_C,
           intent_n_params(H), kern_get()->name);
    printf("  %-28s %8.2f us\n", "intent_forward", fast);
    printf("  %-28s %8.2f us\n", "intent_forward_ref (double)", ref);
    laya_model *m = NULL;
    if (laya_model_load("models/default.safetensors", &m, NULL, 0) == LAYA_OK) {
        laya_session *ss;
        if (laya_session_new(m, &ss) == LAYA_OK) {
            laya_session_set_context(ss, "warm up ", 8);
            laya_session_stats a, b;
            laya_session_get_stats(ss, &a);
            double t0 = bench_now();
            for (int i = 0; i < 100; i++) laya_session_type(ss, "ab ", 3);
            double dt = bench_now() - t0;
            laya_session_get_stats(ss, &b);
            if (b.steps > a.steps)
                printf("  %-28s %8.2f us (the head adds %.1f%%)\n", "one model step, for scale",
                       dt * 1e6 / (double)(b.steps - a.steps), 100 * fast / (dt * 1e6 / (double)(b.steps - a.steps)));
            laya_session_free(ss);
        }
        laya_model_free(m);
    }
    intent_free(h);
}
