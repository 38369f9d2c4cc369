/* train_data.c - training batches from a packed token stream.
 *
 * The stream is cut into B contiguous shards, one per batch row, and each
 * shard is read window after window: row b of step w continues exactly
 * where row b of step w-1 stopped, which is what lets the trainer carry the
 * GRU state from one window to the next (truncated BPTT). Consecutive
 * windows overlap by one token: the last target of one is the first input
 * of the next. */
#include "train/train.h"

int64_t train_windows(const tok_stream *t, int B, int T) {
    if (B < 1 || T < 1) return 0;
    int64_t shard = (int64_t)(t->n / (uint64_t)B);
    return shard < T + 1 ? 0 : (shard - 1) / T;
}

uint64_t train_row_start(const tok_stream *t, int B, int T, int64_t w, int b) {
    int64_t shard = (int64_t)(t->n / (uint64_t)B), nw = train_windows(t, B, T);
    return (uint64_t)(b * shard + (nw ? (w % nw) * T : 0));
}

void train_batch(const tok_stream *t, int B, int T, int64_t w, int32_t *toks) {
    for (int b = 0; b < B; b++) {
        const uint16_t *src = t->ids + train_row_start(t, B, T, w, b);
        for (int i = 0; i <= T; i++) toks[(size_t)b * (T + 1) + i] = src[i];
    }
}
