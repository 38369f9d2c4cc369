/* test_topk.c - util/topk against its specification: the k best entries
 * of the whole input, best first, equal keys in arrival order. Keys are
 * drawn from a few values so ties are common. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "test.h"
#include "util/topk.h"

typedef struct {
    float key;
    int32_t at; /* arrival index: the tie order the list must keep */
} entry;

static int entry_beats(const void *x, const void *y) { return ((const entry *)x)->key > ((const entry *)y)->key; }

/* The specification: selection of the best remaining entry, the earliest
 * among equals, k times. */
static int top_ref(const entry *in, int n, int k, entry *out) {
    unsigned char used[256] = {0};
    int m = 0;
    for (; m < k && m < n; m++) {
        int b = -1;
        for (int i = 0; i < n; i++)
            if (!used[i] && (b < 0 || in[i].key > in[b].key)) b = i;
        used[b] = 1;
        out[m] = in[b];
    }
    return m;
}

static uint32_t next(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

TEST(topk_insert_keeps_the_k_best_in_arrival_order) {
    uint32_t seed = 7;
    static const int ks[] = {1, 2, 3, 5, 8, 24, 64};
    for (int round = 0; round < 200; round++) {
        int n = (int)(next(&seed) % 100), k = ks[round % 7];
        entry in[100], want[100], got[100];
        for (int i = 0; i < n; i++) in[i] = (entry){(float)(next(&seed) % 9) - 4.0f, i};
        int nw = top_ref(in, n, k, want), ng = 0;
        for (int i = 0; i < n; i++) {
            int before = ng, j = topk_insert(got, sizeof *got, &ng, k, &in[i], entry_beats);
            CHECK(ng == (before < k ? before + 1 : k) || (j < 0 && ng == before));
            CHECK(j < 0 || (got[j].at == i && j < ng));
        }
        CHECKF(ng == nw, "round %d: %d entries, want %d", round, ng, nw);
        for (int i = 0; i < nw; i++)
            CHECKF(got[i].at == want[i].at, "round %d slot %d: entry %d, want %d", round, i, got[i].at,
                   want[i].at);
    }
}

TEST(topk_insert_edges) {
    entry l[2] = {{0}}, x = {1.0f, 0};
    int n = 0;
    CHECK(topk_insert(l, sizeof *l, &n, 0, &x, entry_beats) == -1 && n == 0);
    /* A NaN beats nothing: last while there is room, never into a full list. */
    entry nan_e = {NAN, 1}, y = {2.0f, 2};
    CHECK(topk_insert(l, sizeof *l, &n, 2, &nan_e, entry_beats) == 0 && n == 1);
    CHECK(topk_insert(l, sizeof *l, &n, 2, &x, entry_beats) == 1 && n == 2);
    CHECK(topk_insert(l, sizeof *l, &n, 2, &nan_e, entry_beats) == -1 && n == 2);
    /* An equal key does not displace the last of a full list. */
    entry x2 = {1.0f, 3};
    CHECK(topk_insert(l, sizeof *l, &n, 2, &x2, entry_beats) == -1);
    /* Nor does anything beat a NaN: it keeps its slot, and y displaces x. */
    CHECK(topk_insert(l, sizeof *l, &n, 2, &y, entry_beats) == 1 && l[0].at == 1 && l[1].at == 2);
}

TEST(topk_sort_is_stable_best_first) {
    uint32_t seed = 11;
    for (int round = 0; round < 100; round++) {
        int n = (int)(next(&seed) % 80);
        entry in[80], want[80], tmp;
        for (int i = 0; i < n; i++) in[i] = (entry){(float)(next(&seed) % 6), i};
        top_ref(in, n, n, want);
        topk_sort(in, sizeof *in, n, entry_beats, &tmp);
        for (int i = 0; i < n; i++) CHECKF(in[i].at == want[i].at, "round %d slot %d", round, i);
    }
}
