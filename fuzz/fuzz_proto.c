/* fuzz_proto.c - the JSON-lines protocol (proto_feed, proto_lines,
 * proto_handle) on hostile bytes, over a tiny model, cut into reads at
 * random places as a socket would deliver them. The first input byte picks
 * the cuts, the second the line limit (64 .. 4144 bytes, so overlong lines
 * happen); the rest is the stream. Oracle: exactly one reply per line that
 * is not blank (an overlong line is one), each a JSON object; every line
 * answered again through proto_handle is a JSON object too. A fresh proto
 * per input, so inputs do not see each other's sessions. Seeds:
 * fuzz/corpus/proto. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "server/proto.h"

typedef struct {
    size_t replies;
} count;

static void check_reply(const char *r) {
    if (!r) return;   /* out of memory: answered {"error":"out of memory"} by the transport */
    json_error_t je;
    json_t *j = json_loads(r, 0, &je);
    if (!json_is_object(j)) fz_fail("a reply is not a JSON object: %.200s", r);
    json_decref(j);
}

static void on_reply(void *ctx, const char *r) {
    ((count *)ctx)->replies++;
    check_reply(r);
}

/* Lines proto_lines passes on for s[0..n): blank ones (only ' ', '\t',
 * '\r' once trailing '\r's are gone) are skipped, overlong ones count once. */
static size_t expected_lines(const uint8_t *s, size_t n, size_t max) {
    size_t lines = 0, a = 0;
    while (a < n) {
        const uint8_t *nl = memchr(s + a, '\n', n - a);
        size_t e = nl ? (size_t)(nl - s) : n, len = e - a;
        if (len > max) {
            lines++;
        } else {
            size_t i = a, j = e;
            while (i < j && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) i++;
            while (j > i && s[j - 1] == '\r') j--;
            lines += i < j;
        }
        a = e + 1;
    }
    return lines;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
    if (n < 2) return 0;
    const laya_model *m = fz_model(300, 16, 8, 1, 3, 0.5f, 7);
    laya_search_opts o = laya_search_defaults();
    o.beam = 2;
    o.max_steps = 4;
    proto *p = NULL;
    if (proto_new(m, &o, 4, &p) != LAYA_OK) fz_fail("proto_new");
    uint32_t seed = d[0] * 2654435761u + 1;
    size_t max = 64 + (size_t)d[1] * 16;
    const uint8_t *s = d + 2;
    size_t len = n - 2;
    proto_lines in;
    proto_lines_init(&in, max);
    count c = {0};
    for (size_t at = 0; at < len;) {
        seed ^= seed << 13, seed ^= seed >> 17, seed ^= seed << 5;
        size_t k = 1 + seed % 300;
        if (k > len - at) k = len - at;
        proto_feed(p, 1, &in, (const char *)s + at, k, 0, on_reply, &c);
        at += k;
    }
    proto_feed(p, 1, &in, NULL, 0, 1, on_reply, &c);
    proto_lines_free(&in);
    size_t want = expected_lines(s, len, max);
    if (c.replies != want) fz_fail("%zu replies for %zu lines", c.replies, want);
    /* The same lines, one at a time, from another client. */
    for (size_t a = 0; a < len;) {
        const uint8_t *nl = memchr(s + a, '\n', len - a);
        size_t e = nl ? (size_t)(nl - s) : len;
        char *r = proto_handle(p, 2, (const char *)s + a, e - a);
        check_reply(r);
        free(r);
        a = e + 1;
    }
    proto_free(p);
    return 0;
}
