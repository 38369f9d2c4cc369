/* test_hash.c - util/hash.h is FNV-1a 64 exactly: the published test
 * vectors (the empty string, "a", "foobar"), and a hash carried on from
 * the bytes before giving the hash of the whole. The tables that use it
 * (learn_index.c, blend.c, decide.c) had their own copies before. */
#include <stdint.h>
#include <string.h>

#include "test.h"
#include "util/hash.h"

static uint64_t fnv(const char *s) { return hash_fnv1a64(HASH_FNV64_BASIS, (const uint8_t *)s, strlen(s)); }

TEST(hash_fnv1a64_test_vectors) {
    CHECK(fnv("") == 0xcbf29ce484222325ull);
    CHECK(fnv("a") == 0xaf63dc4c8601ec8cull);
    CHECK(fnv("foobar") == 0x85944171f73967e8ull);
    CHECK(hash_fnv1a64(fnv("foo"), (const uint8_t *)"bar", 3) == fnv("foobar"));
}
