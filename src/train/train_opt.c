/* train_opt.c - AdamW (decoupled weight decay, Loshchilov & Hutter), global
 * gradient-norm clipping and the learning-rate schedule. The moments m, v
 * use the flat parameter layout of model_params.c. */
#include "train/train.h"

#include <immintrin.h>
#include <math.h>

float train_lr_schedule(float lr, int64_t step, int64_t warmup, double frac) {
    if (step < warmup) return lr * (float)(step + 1) / (float)warmup;
    if (frac < 0) frac = 0;
    if (frac > 1) frac = 1;
    double cosv = 0.5 * (1.0 + cos(3.141592653589793 * frac));
    return (float)(lr * (TRAIN_LR_FLOOR + (1.0 - TRAIN_LR_FLOOR) * cosv));
}

double train_clip_grads(float *grads, size_t n, float clip) {
    /* Partial sums over a fixed cut into CHUNKS, added in order: the norm,
     * and so the clipped gradients, do not depend on the thread count. */
    enum { CHUNKS = 256 };
    double part[CHUNKS];
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (int c = 0; c < CHUNKS; c++) {
        size_t i0 = n * (size_t)c / CHUNKS, i1 = n * (size_t)(c + 1) / CHUNKS;
        double s = 0;
        for (size_t i = i0; i < i1; i++) s += (double)grads[i] * grads[i];
        part[c] = s;
    }
    double ss = 0;
    for (int c = 0; c < CHUNKS; c++) ss += part[c];
    double norm = sqrt(ss);
    if (clip > 0 && norm > clip) {
        float s = (float)(clip / norm);
#pragma omp parallel for schedule(static) if (n >= 65536)
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
        /* The vector loop does the scalar tail's IEEE operations in the same
         * order (no contraction), so each element gets the same result. */
#pragma omp parallel for schedule(static) if (cnt >= 16384)
        for (size_t j0 = off; j0 < off + cnt; j0 += 1024) {
            size_t j1 = j0 + 1024 < off + cnt ? j0 + 1024 : off + cnt, j = j0;
            __m256 vb1 = _mm256_set1_ps(b1), vb2 = _mm256_set1_ps(b2), va1 = _mm256_set1_ps(1.0f - b1);
            __m256 va2 = _mm256_set1_ps(1.0f - b2), vc1 = _mm256_set1_ps(bc1), vc2 = _mm256_set1_ps(bc2);
            __m256 vd = _mm256_set1_ps(decay), vlr = _mm256_set1_ps(lr), veps = _mm256_set1_ps(eps);
            for (; j + 8 <= j1; j += 8) {
                __m256 g = _mm256_loadu_ps(grads + j);
                __m256 mj = _mm256_add_ps(_mm256_mul_ps(vb1, _mm256_loadu_ps(m + j)), _mm256_mul_ps(va1, g));
                __m256 vj = _mm256_add_ps(_mm256_mul_ps(vb2, _mm256_loadu_ps(v + j)),
                                          _mm256_mul_ps(_mm256_mul_ps(va2, g), g));
                _mm256_storeu_ps(m + j, mj);
                _mm256_storeu_ps(v + j, vj);
                __m256 mh = _mm256_div_ps(mj, vc1), vh = _mm256_div_ps(vj, vc2);
                __m256 upd = _mm256_div_ps(_mm256_mul_ps(vlr, mh), _mm256_add_ps(_mm256_sqrt_ps(vh), veps));
                _mm256_storeu_ps(params + j, _mm256_sub_ps(_mm256_mul_ps(_mm256_loadu_ps(params + j), vd), upd));
            }
            for (; j < j1; j++) {
                float g = grads[j];
                m[j] = b1 * m[j] + (1.0f - b1) * g;
                v[j] = b2 * v[j] + (1.0f - b2) * g * g;
                float mh = m[j] / bc1, vh = v[j] / bc2;
                params[j] = params[j] * decay - lr * mh / (sqrtf(vh) + eps);
            }
        }
    }
}
