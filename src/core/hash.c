/*
 * hash.c — how items become 64-bit keys.  Strings are hashed with XXH3
 * under a fixed seed (part of the format: changing it changes every stored
 * fingerprint); integers in approximate mode go through a bijective mixer so
 * that distinct ids never collide before fingerprinting.
 */
#include "internal.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

/* "seen_v01" in ASCII; recorded in docs/FORMAT.md. */
#define SEEN_HASH_SEED UINT64_C(0x7365656e5f763031)

uint64_t seen__hash_str(const void *ptr, size_t len)
{
    return XXH3_64bits_withSeed(ptr, len, SEEN_HASH_SEED);
}

uint64_t seen__mix64(uint64_t x)
{
    /* Each step (xorshift, odd multiply) is invertible, so the whole map is
     * a permutation of 64-bit integers. */
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return x;
}
