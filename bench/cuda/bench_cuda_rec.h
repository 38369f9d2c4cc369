/* bench_cuda_rec.h - the persistent recurrences' timing harness
 * (bench_cuda_rec.cu), for the CUDA benchmarks only. */
#ifndef LAYA_BENCH_CUDA_REC_H
#define LAYA_BENCH_CUDA_REC_H

#ifdef __cplusplus
extern "C" {
#endif

/* Microseconds per time step of one persistent recurrence (bwd: 0 forward,
 * 1 backward) over a B x T x H problem of its own, the mean of reps
 * launches after one warm-up; ko leaves one stage out (1 the wait between
 * steps, 2 the state load, 4 the products, 8 the gates' global reads and
 * writes; H = 768 only) to show that stage's share. -1 when the shape or
 * variant is not built or a launch fails. */
double cuda_rec_time(int B, int T, int H, int bwd, int ko, int reps);

#ifdef __cplusplus
}
#endif

#endif
