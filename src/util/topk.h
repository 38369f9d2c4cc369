/* topk.h - the one insertion step behind every best-first list: the
 * kernels' top-k logits (kern_impl.h), and the search's expansion pool, its
 * k-th best score and its candidate ranking (suggest.c).
 *
 * A list a[0..*n) of entries of `size` bytes is kept best first, at most k
 * of them. beats(x, y) is 1 iff x ranks strictly above y; a new entry goes
 * after every entry it does not beat, so equal entries keep the order they
 * arrived in. The search's results (tie order included) depend on that, and
 * the vector top-k equals the reference because it inserts in the same
 * order. An entry that beats nothing (a NaN key with `>`) is taken only
 * while the list has room, at its end.
 *
 * Static inline so that a constant beats() is inlined into each caller:
 * the kernels call topk_insert once per logit that passes their threshold. */
#ifndef LAYA_TOPK_H
#define LAYA_TOPK_H

#include <stddef.h>
#include <string.h>

typedef int (*topk_beats)(const void *x, const void *y);

/* Inserts a copy of x (not inside a[0..k)). A full list takes x only if
 * it beats the last entry, which falls off. Returns x's slot, or -1 when x
 * was not taken (the list is then unchanged; always so for k <= 0). */
static inline int topk_insert(void *a, size_t size, int *n, int k, const void *x, topk_beats beats) {
    unsigned char *b = a;
    if (k <= 0 || (*n >= k && !beats(x, b + (size_t)(k - 1) * size))) return -1;
    int last = *n < k ? (*n)++ : k - 1;  /* the slot that receives the shifted tail */
    int j = last;
    while (j > 0 && beats(x, b + (size_t)(j - 1) * size)) j--;
    memmove(b + (size_t)(j + 1) * size, b + (size_t)j * size, (size_t)(last - j) * size);
    memcpy(b + (size_t)j * size, x, size);
    return j;
}

/* Sorts a[0..n) best first, stably: the insertion sort of topk_insert,
 * O(n^2) moves, for the short lists here (a few hundred entries at most).
 * tmp: room for one entry. */
static inline void topk_sort(void *a, size_t size, int n, topk_beats beats, void *tmp) {
    unsigned char *b = a;
    for (int i = 1; i < n; i++) {
        memcpy(tmp, b + (size_t)i * size, size);
        int m = i;
        topk_insert(a, size, &m, i + 1, tmp, beats);
    }
}

#endif
