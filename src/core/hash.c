/*
 * hash.c — how integer items become 64-bit keys: in approximate mode they
 * go through a bijective mixer so that distinct ids never collide before
 * fingerprinting.  Strings are hashed with XXH3 under a fixed seed
 * (seen__hash_str, inline in internal.h, so the batch loops compile it in).
 */
#include "internal.h"

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
