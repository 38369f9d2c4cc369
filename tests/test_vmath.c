/* test_vmath.c - the trainer's vector exp, sigmoid and tanh against
 * double libm over [-100, 100] (every float step of 1.7e-4, plus special
 * values), within the ulp bounds kern/vmath.h states; and once, that the
 * check catches a function that is off by 8 ulp. */
#include "test.h"

#include <math.h>
#include <stdlib.h>

#include "train/train_ops.h"

static double want(int which, double x) {
    return which == 0 ? exp(x) : which == 1 ? 1.0 / (1.0 + exp(-x)) : tanh(x);
}

/* Worst error in ulp of the float result over the sweep; results whose
 * true value is below FLT_MIN or above FLT_MAX must be 0 or inf. */
static double worst_ulp(int which, int perturb) {
    size_t n = 0;
    float *x = malloc(sizeof(float) * 1200000), *y = malloc(sizeof(float) * 1200000);
    for (double v = -100; v <= 100; v += 1.7317e-4) x[n++] = (float)v;
    static const float special[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-6f, -1e-6f, 0.625f, -0.625f, 88.7f, -87.3f};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) x[n++] = special[i];
    train_vmath_apply(which, n, x, y);
    if (perturb) y[n / 3] = nextafterf(y[n / 3], INFINITY) + 7 * (nextafterf(y[n / 3], INFINITY) - y[n / 3]);
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double w = want(which, x[i]), e;
        if (fabs(w) < 1.1754944e-38) e = fabs(y[i]) < 1.1754944e-38 ? 0 : INFINITY;
        else if (fabs(w) > 3.4028235e38) e = isinf(y[i]) ? 0 : INFINITY;
        else {
            float wf = (float)w;
            double ulp = fabs((double)nextafterf(wf, INFINITY) - (double)wf);
            e = fabs((double)y[i] - w) / ulp;
        }
        if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
    }
    free(x);
    free(y);
    return worst;
}

TEST(train_vmath_matches_libm) {
    double e = worst_ulp(0, 0), s = worst_ulp(1, 0), t = worst_ulp(2, 0);
    CHECKF(e <= 2, "exp: %.2f ulp", e);
    CHECKF(s <= 4, "sigmoid: %.2f ulp", s);
    CHECKF(t <= 2, "tanh: %.2f ulp", t);
    CHECK(worst_ulp(2, 1) > 2);
}
