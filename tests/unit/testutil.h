/*
 * testutil.h — helpers shared by the core unit tests: a seeded RNG (the
 * seed is printed so any failure can be replayed with SEEN_TEST_SEED), item
 * construction, an allocator that can fail the Nth allocation and counts
 * what is outstanding, and the naive reference model.
 */
#ifndef SEEN_TESTUTIL_H
#define SEEN_TESTUTIL_H

#include "seen.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- randomness ---- */
typedef struct rng {
    uint64_t s;
} rng;

uint64_t rng_next(rng *r);
uint64_t rng_below(rng *r, uint64_t n);
/* The seed for a test: SEEN_TEST_SEED if set, else `fallback`; printed. */
uint64_t test_seed(const char *test, uint64_t fallback);

/* Overwrite a serialized set's trailing checksum with the right one, so a
 * deliberately altered payload reaches the loader's deep checks. */
void fix_checksum(uint8_t *buf, size_t len);

/* ---- items ---- */
/* A string item for id: 24 hex characters, like a short-video id. */
typedef struct str_item {
    char buf[32];
    seen_str s;
} str_item;
void make_str(str_item *it, uint64_t id);

/* ---- allocator ---- */
/* After fail_after successful allocations, every allocation fails
 * (fail_after < 0: never).  live counts blocks outstanding. */
typedef struct alloc_stats {
    long fail_after;
    long calls;
    long live;
    long failures;
} alloc_stats;
extern alloc_stats g_alloc;
void alloc_install(void);
void alloc_reset(long fail_after);
/* An allocator that accounts blocks in jemalloc's size classes (the bytes
 * Redis reports); seen_set_allocator(NULL) undoes either. */
void alloc_install_classes(void);

/* ---- the reference model ---- */

/* What the model knows about an item at a query time. */
typedef enum expect { MUST_SEE, MUST_NOT_SEE, EITHER } expect;

typedef struct model_item {
    uint64_t id;
    int64_t t_sure;  /* newest add time that was surely stored (-1: none) */
    int64_t t_maybe; /* newest add time that may have been stored (-1) */
    uint64_t seq;    /* arrival of the addition that set t_maybe */
    uint64_t seq_hi; /* arrival of its latest addition (any time) */
    /* Most items ever more recent than it since its newest addition:
     * capacity evictions are permanent, even if newer items go later. */
    size_t peak_maybe, peak_surely;
    size_t uidx; /* position in model.used */
    bool used;
} model_item;

typedef struct model {
    seen_policy p;
    int64_t slice_ms;
    model_item *items;
    size_t cap, n;
    size_t *used; /* slots in use, so scans cost the items, not the table */
    uint64_t seq;
    /* Capacity counts for every item, computed together (an evicted item no
     * longer counts as newer for others) and cached until the model changes
     * or the query time does. */
    size_t *cnt_maybe, *cnt_surely;
    uint64_t version, cached_version;
    int64_t cached_q;
    int64_t latest;   /* newest add time so far */
    bool out_of_order; /* some add was older than an earlier one */
} model;

void model_init(model *m, const seen_policy *p);
void model_free(model *m);
/* Record an addition at time t (already clamped to now) made at `now`. */
void model_add(model *m, uint64_t id, int64_t t, int64_t now);
void model_remove(model *m, uint64_t id);
/* Record each item's current "newer" counts as peaks; call before anything
 * that can lower them (removals, time passing). */
void model_observe(model *m, int64_t q);
/* What a correct set must answer for id at time q. */
expect model_expect(const model *m, uint64_t id, int64_t q);
/* Items that may be (or surely are) more recent than `it` for the capacity
 * rule, which orders by time slice, then arrival. */
size_t model_rank_newer(const model *m, const model_item *it, int64_t q);
size_t model_surely_newer(const model *m, const model_item *it, int64_t q);
model_item *model_find(const model *m, uint64_t id);

/* ------------------------------------------------------------ fuzz input */

/* A fuzz input read byte by byte; past its end every byte reads 0. */
typedef struct fuzz_input {
    const uint8_t *p;
    size_t n, at;
} fuzz_input;

static inline uint8_t fuzz_next(fuzz_input *in)
{
    return in->at < in->n ? in->p[in->at++] : 0;
}

static inline bool fuzz_more(const fuzz_input *in)
{
    return in->at < in->n;
}

/* Whether the set sees item `id` (as an integer or as make_str's string,
 * by the set's kind) at `now`; aborts if the query fails. */
bool set_sees(const seen_set *s, uint64_t id, int64_t now);

#endif
