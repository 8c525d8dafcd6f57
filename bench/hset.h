/*
 * hset.h — the in-process baseline the benchmarks compare batch queries
 * with: an open-addressing hash set of the items' 64-bit hashes (XXH3) at
 * load factor <= 1/2, exact, and a lower bound for what a Redis SET spends
 * in memory and per lookup.  Header-only, for bench_core.c and states.c.
 */
#ifndef SEEN_BENCH_HSET_H
#define SEEN_BENCH_HSET_H

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct hset {
    uint64_t *slots; /* 0 = empty; keys are hashes | 1 */
    size_t mask;
} hset;

static inline void hset_init(hset *h, size_t n)
{
    size_t cap = 16;
    while (cap < n * 2)
        cap *= 2;
    h->slots = calloc(cap, sizeof *h->slots);
    if (h->slots == NULL) {
        fprintf(stderr, "hset: out of memory for %zu slots\n", cap);
        exit(1);
    }
    h->mask = cap - 1;
}

static inline void hset_free(hset *h)
{
    free(h->slots);
    h->slots = NULL;
}

static inline int hset_add(hset *h, uint64_t k)
{
    k |= 1;
    size_t i = (size_t)(k >> 7) & h->mask;
    while (h->slots[i]) {
        if (h->slots[i] == k)
            return 0;
        i = (i + 1) & h->mask;
    }
    h->slots[i] = k;
    return 1;
}

static inline int hset_has(const hset *h, uint64_t k)
{
    k |= 1;
    size_t i = (size_t)(k >> 7) & h->mask;
    while (h->slots[i]) {
        if (h->slots[i] == k)
            return 1;
        i = (i + 1) & h->mask;
    }
    return 0;
}

#endif
