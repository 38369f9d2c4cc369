/* train_opt.c - AdamW (decoupled weight decay, Loshchilov & Hutter), global
 * gradient-norm clipping and the learning-rate schedule. The moments m, v
 * use the flat parameter layout of model_params.c. */
#include "train/train.h"

#include <math.h>

float train_lr_schedule(float lr, int64_t step, int64_t warmup, double frac) {
    if (step < warmup) return lr * (float)(step + 1) / (float)warmup;
    if (frac < 0) frac = 0;
    if (frac > 1) frac = 1;
    double cosv = 0.5 * (1.0 + cos(3.141592653589793 * frac));
    return (float)(lr * (TRAIN_LR_FLOOR + (1.0 - TRAIN_LR_FLOOR) * cosv));
}

double train_clip_grads(float *grads, size_t n, float clip) {
    double ss = 0;
    /* Static schedule and a fixed thread count give a fixed summation order
     * per run; the norm only gates clipping, so order effects are harmless. */
#pragma omp parallel for reduction(+ : ss) schedule(static)
    for (size_t i = 0; i < n; i++) ss += (double)grads[i] * grads[i];
    double norm = sqrt(ss);
    if (clip > 0 && norm > clip) {
        float s = (float)(clip / norm);
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) grads[i] *= s;
    }
    return norm;
}

void train_adamw_step(const model_cfg *c, const train_adamw *o, float lr, int64_t step,
                      float *params, const float *grads, float *m, float *v) {
    model_tensor ts[2 + 8 * MODEL_MAX_L];
    int nt = model_tensors(c, ts, (int)(sizeof ts / sizeof ts[0]));
    /* Bias corrections in double: beta2^step underflows gently, not to 1. */
    float bc1 = (float)(1.0 - pow(o->beta1, (double)step));
    float bc2 = (float)(1.0 - pow(o->beta2, (double)step));
    float b1 = o->beta1, b2 = o->beta2, eps = o->eps;
    for (int i = 0; i < nt; i++) {
        size_t off = ts[i].offset;
        size_t cnt = (size_t)ts[i].shape[0] * (size_t)(ts[i].ndim == 2 ? ts[i].shape[1] : 1);
        float decay = ts[i].ndim == 2 ? 1.0f - lr * o->wd : 1.0f;
#pragma omp parallel for schedule(static) if (cnt >= 16384)
        for (size_t j = off; j < off + cnt; j++) {
            float g = grads[j];
            m[j] = b1 * m[j] + (1.0f - b1) * g;
            v[j] = b2 * v[j] + (1.0f - b2) * g * g;
            float mh = m[j] / bc1, vh = v[j] / bc2;
            params[j] = params[j] * decay - lr * mh / (sqrtf(vh) + eps);
        }
    }
}
