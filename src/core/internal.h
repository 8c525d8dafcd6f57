/*
 * internal.h — declarations shared by the core library's source files, and
 * every tuning constant in one place.  Nothing here is part of the public
 * API (include/seen.h).
 */
#ifndef SEEN_INTERNAL_H
#define SEEN_INTERNAL_H

#include "seen.h"

#include <limits.h>
#include <stdbool.h>
#include <string.h>

/* XXH3 as static inline functions: strings are hashed in the batch loops. */
#define XXH_INLINE_ALL
#include <xxhash.h>

/* ------------------------------------------------------------ tuning */

/* Target items per bucket of a run's lookup index: a point lookup decodes
 * about half a bucket, and the index costs ~22 bits per bucket (0.17 bit
 * per value at this size). */
#define SEEN_BUCKET_ITEMS 128u
/* Runs under SEEN_LARGE_RUN values were written with buckets of this many
 * items before; the loader still takes that count as canonical. */
#define SEEN_LEGACY_BUCKET_ITEMS 256u
/* A batch cursor decodes buckets of up to this many items whole. */
#define SEEN_CURSOR_BUF 512u
#define SEEN_CURSOR_PAD 8u
/* A run with at most this many times as many values as a batch has
 * candidates is walked value by value, each value finding its candidates
 * (query.c); a larger one is walked candidate by candidate.  At 4 the
 * Elias-Fano runs of a 100,000-item set (25,000-50,000 values) against
 * 10,000 candidates cost 17% more than their lookups. */
#define SEEN_BY_VALUES_RATIO 2u
/* The same for a Golomb-coded run, whose candidate walk decodes the
 * buckets its candidates fall in (at five values a candidate, all of
 * them) and then finds each candidate among them: decoding the run in
 * one pass and walking its values is cheaper up to eight values a
 * candidate (2,000 candidates on 10,000 items: one run 37-38 -> 35 us,
 * the key written live 42 -> 36, in its steady state 49 -> 44; 16 measured
 * the same as 8). */
#define SEEN_BY_VALUES_RATIO_GOLOMB 8u
/* A batch walk decodes a bucket only as far as its candidates reach when
 * they are fewer than 1/SEEN_STEPWISE_RATIO of its items (at 100k items,
 * 2,000 candidates: 8% faster; denser walks decode whole buckets). */
#define SEEN_STEPWISE_RATIO 16u
/* A run whose values, cut into buckets by value, would put more than this
 * many times a bucket's share into one is cut by rank instead (run.c). */
#define SEEN_RANKED_SKEW 4u
/* Runs this large are not written with SEEN_LEGACY_BUCKET_ITEMS buckets,
 * and a flush into one in place stops once its buckets average twice the
 * canonical fine ones. */
#define SEEN_LARGE_RUN 16384u
/* Compact runs of at least this many values are coded Elias-Fano
 * (run_ef.c): a lookup then reads a few words wherever its value lies,
 * where a Golomb bucket (128 values) is decoded up to it.  Elias-Fano
 * costs ~0.25 bit per value more than Rice codes and their index, and
 * from this size on it pays for that on every page of adds and every
 * sparse batch: at 16,384 a key of 10,000 items took pages of 20 in 12.2
 * us and 2,000-candidate batches in 43, now 10.5 and 28 (14.37 -> 14.62
 * bits per item).  From 4,096 (the head's run from 2,048) pages into keys
 * of ~20,000 items were faster still (10.2 -> 7.0 us), but a key of
 * 10,000 written over its first window (runs of 2,500 and 5,000 values)
 * took 1.6% more memory.  The fuzz builds use a small value so that short
 * programs reach Elias-Fano runs. */
#ifndef SEEN_EF_MIN_RUN
#define SEEN_EF_MIN_RUN 8192u
#endif
/* The compact run that takes every flush of the head is coded Elias-Fano
 * from half of that: every add probes it, and a Golomb bucket of it is
 * decoded up to the item, where Elias-Fano reads a few words (single adds
 * at 100,000 items 0.50 -> 0.42 us).  It holds at most a slice, so the
 * ~0.3 bit per value Elias-Fano costs there is a fraction of that on the
 * set's items; a flush edits it in place as it does a Golomb run. */
#define SEEN_EF_MIN_HEAD_RUN (SEEN_EF_MIN_RUN / 2u)
/* Exact runs of dense integer ids from twice as many: their Rice codes
 * take ~5 bits an id, so the ~0.4 bit Elias-Fano adds weighs more there,
 * and an id set that large is queried by batches, not pages. */
#define SEEN_EF_MIN_EXACT_RUN (SEEN_EF_MIN_RUN * 2u)
/* In a set holding SEEN_EF_LARGE_SET values, every compact run (the one
 * taking the head too) is coded Elias-Fano from SEEN_EF_MIN_LARGE_SET_RUN
 * values, and a flush recodes the set's older Golomb runs so
 * (seen__flush): every add probes every run, and a probe of a Golomb run
 * decodes half a bucket whatever the run's size, where Elias-Fano reads a
 * few words.  Such runs are a part of a large set (the ones a key planned
 * while small keeps, its first days' plans', and a slice's run while it
 * starts), so the ~0.4 bit per value they cost more is a fraction of that
 * on the set. */
#define SEEN_EF_LARGE_SET (SEEN_EF_MIN_RUN * 2u)
#define SEEN_EF_MIN_LARGE_SET_RUN (SEEN_EF_MIN_RUN / 32u)
/* A batch with at least 1/SEEN_EF_DENSE_RATIO as many candidates as an
 * Elias-Fano run has values decodes the run in order; sparser ones look
 * their candidates up (run_ef.c).  Where PDEP selects in one instruction a
 * lookup walk costs less than decoding even at 1.5 values per candidate,
 * so there only a batch with as many candidates as values decodes. */
#define SEEN_EF_DENSE_RATIO 8u
#define SEEN_EF_DENSE_RATIO_PDEP 1u
/* A walk with at least SEEN_EF_SPARSE_RATIO values per candidate moves
 * its word on by a select, not a branch (run_ef.c). */
#define SEEN_EF_SPARSE_RATIO 6u
/* Values between two samples of an Elias-Fano run's upper bits. */
#define SEEN_EF_SAMPLE_VALUES 1024u

/* The recent-additions buffer holds items raw (9-12 bytes each) until it is
 * merged into the Golomb-coded runs.  Its limit grows with the set so that
 * merges amortize, while its memory stays near 0.1 bit per stored item. */
#define SEEN_HEAD_MIN 8u
#define SEEN_HEAD_MAX 256u
#define SEEN_HEAD_PER_ITEMS 1024u /* one buffered item per this many stored */
/* Sets this large buffer twice as much: their merges rewrite a recent run
 * of up to a slice's items, and 0.1 bit per item buys half the rewrites. */
#define SEEN_HEAD_LARGE_SET 65536u
/* A set in its exact phase holding at most this many entries (and at most
 * its exact limit) keeps them all in the head: raw, each key costs 9
 * serialized bytes, where an exact run (Golomb-coded 64-bit keys, ~62 bits
 * each) adds a header of ~35.  Serialized, 10 string items (pages of 10)
 * took 155 bytes as a run and 125 as a head, 16 took 213 and 183; 24 the
 * same within 9 bytes, and from ~30 the run is smaller (plan.c,
 * seen__need_flush). */
#define SEEN_HEAD_EXACT_MAX 24u
/* In sets this large the run that takes the head is encoded with fine
 * buckets: every add probes it and every flush decodes it up to each new
 * value, and it is a small part of the set (a slice), so its larger index
 * costs ~0.05 bit per stored item.  From 4,096 rather than 65,536: single
 * adds at 10,000 items 1.05 -> 0.94 us, 20-item pages into ~20,000-item
 * keys in Redis 19.2 -> 16.9 us; make bench-lifecycle unchanged within its
 * noise.  That run is also coded Elias-Fano from SEEN_EF_MIN_LARGE_SET_RUN
 * values here (SEEN_RUN_IN_MID_SET): below 8,192 items a page of 20 fills
 * the head and flushes, and an edit of a Golomb run decodes every bucket a
 * new value falls in, most of the run, where Elias-Fano shifts its words
 * (pages into keys written live: 10,000 items 23.1 -> 14.6 us, 5,000 27.2
 * -> 20.3; 0.02-0.05 bit per item more).  From 2,048 rather than 4,096:
 * 3,000 items 25.4 -> 18.4 us, 2,000 21.5 -> 19.4, for 0.7% more bytes on
 * keys of 3,000-4,000 items; make bench-states' bits per live item the
 * same in 57 of 64 rows, 0.1 more (the mean or the most) in six. */
#define SEEN_FINE_RECENT_SET 2048u

/* Fraction of the false-positive budget kept free when planning, so a set
 * that grows a little past its plan need not take much finer fingerprints. */
#define SEEN_BUDGET_RESERVE (1.0 / 64.0)

/* The plan divisor moves only when the planned size moves by more than
 * this fraction, so runs keep sharing a divisor and can merge. */
#define SEEN_PLAN_HYSTERESIS 0.10

/* A set younger than one slice measures its rate over at least this much
 * data time: a first session's burst is then planned as a heavy user
 * (fingerprints a few bits finer, which coarsen by whole factors as the
 * rate settles), and the finer runs of a user who keeps speeding up take a
 * small share of the budget (1/(window/this) per doubling). */
#define SEEN_YOUNG_MIN_SPAN_MS (24ll * 3600 * 1000)
/* Within that span a young set plans for at least this many times what it
 * holds (plan.c, plan_target): a window of a week at 5,000 items a day held
 * 14 runs and 24 bits an item in its first window, 8 and 21.8 so. */
#define SEEN_YOUNG_AHEAD 32u
/* ... and for at least this many items, so that the run its first plan
 * starts fills its young share (1/SEEN_YOUNG_SHARE of the budget) just as
 * it reaches SEEN_SINGLE_RUN_MAX items, past which the head starts runs of
 * its own.  Planned for what its first pages project (~20 items, 113 times
 * over a 90-day window), that run filled its share at ~140 items and each
 * later young run started at whatever the plan then was, a page boundary's
 * luck: a first-day burst's worst page took 19.7 bits an item in pages of
 * 20 but 20.1-21.4 in pages of 1-15, 30, 70 or 100 (docs/DESIGN.md,
 * "Planning the divisor"). */
#define SEEN_YOUNG_MIN_TARGET (SEEN_YOUNG_SHARE * SEEN_SINGLE_RUN_MAX)
/* A windowed set whose live items all share one time and number at least
 * SEEN_YOUNG_BULK_MIN (a bulk load: a migrated SET, whose members have no
 * times of their own, or a history loaded in one command) has shown no
 * rate at all; it plans for SEEN_YOUNG_BULK_AHEAD times what it holds, not
 * for a window at that many items a day.  Such a key held 18.8 bits an item
 * (112 times ahead); 15.0 so.  Four times ahead (14.0) left the load a
 * quarter of the budget, and a first day that went on growing fast after
 * it squeezed the rest (a thousand writes of 128, a second apart: 20.0
 * bits an item against 17.4; 17.6 so, the load's run taking an eighth;
 * docs/DESIGN.md, "Planning the divisor").
 * The minimum is well above a feed's page: a first page is planned as a
 * heavy user, as any young set's writes are. */
#define SEEN_YOUNG_BULK_MIN 128u
#define SEEN_YOUNG_BULK_AHEAD 8u
/* A young set may keep items coarser than its plan in a run while that run
 * takes at most 1/SEEN_YOUNG_SHARE of the budget and all its runs at most
 * 1/SEEN_YOUNG_SHARE_ALL (plan.c, young_share_ok): its runs fold so, and
 * the head's items go into such a run, not into one at the plan that a
 * fold would coarsen later.  Later items then pay at most 0.41 bit each
 * while the young ones live. */
#define SEEN_YOUNG_SHARE 16u
#define SEEN_YOUNG_SHARE_ALL 4u
/* A re-plan at least this many times coarser than the plan before it takes
 * a whole multiple of it (at most 1/8 finer than ideal: 0.2 bit). */
#define SEEN_REPLAN_MULTIPLE_MIN 8u

/* An import (a write of items older than SEEN_IMPORT_LAG_MS) keeps up to this many stored entries
 * exact, until a live write or an expiry settles the set for what it then holds. */
#define SEEN_IMPORT_EXACT_MAX (1u << 20)
/* Raw integer ids (plan.c, raw_keys_stay_exact): a set keyed by its ids
 * stays exact while ids cost at most this many bits more than
 * fingerprints (which cost log2(1 / error) + SEEN_FINGERPRINT_OVERHEAD_BITS
 * each; SEEN_RAW_KEYS_YOUNG_PREMIUM_BITS while it is young); ids cost log2(span / n) +
 * SEEN_RAW_KEYS_OVERHEAD_BITS each until its runs hold SEEN_RAW_KEYS_MEASURED values, then what
 * those measure. Past SEEN_RAW_KEYS_MAX entries it is mixed whatever the cost: leaving the raw keys
 * rewrites the whole set at once. */
#define SEEN_RAW_KEYS_PREMIUM_BITS 1.0
#define SEEN_RAW_KEYS_YOUNG_PREMIUM_BITS 4.0
#define SEEN_FINGERPRINT_OVERHEAD_BITS 2.0
#define SEEN_RAW_KEYS_OVERHEAD_BITS 2.5
#define SEEN_RAW_KEYS_MEASURED 64u
#define SEEN_RAW_KEYS_SAMPLE 256u
/* A set keyed by raw ids asks whether to leave its exact phase as its head
 * passes each multiple of this many entries (seen__need_flush). */
#define SEEN_RAW_KEYS_CHECK_EVERY 8u
#define SEEN_RAW_KEYS_MAX (1u << 20)
/* Items older than this before a write's `now` (or than one slice, if
 * shorter) make the write an import: a feed's own events lag by seconds. */
#define SEEN_IMPORT_LAG_MS (10ll * 60 * 1000)

/* The recent run is folded into main when its slice ends, or once it holds
 * as many items as main (which bounds rewrites when items arrive in random
 * time order). */
#define SEEN_DELTA_RATIO 1u
/* Past four runs (older plans' runs, which cannot merge, and main and the
 * recent run) the recent run is folded sooner, at 1/SEEN_MANY_RUNS_RATIO
 * of the run before it; past SEEN_MANY_RUNS_MAX runs, at once.  Folding it
 * at once whatever its size made every flush of a key with five runs or
 * more rewrite its largest run: the head went into a new run, folded. */
#define SEEN_MANY_RUNS_RATIO 8u
#define SEEN_MANY_RUNS_MAX 16u
/* Runs of older plans cannot merge, so a set whose rate keeps moving
 * (growing, in waves, with many slices) gathers a divisor per re-plan.  At
 * SEEN_RUNS_WHOLE_REPLAN runs it re-plans by whole factors only, as a
 * young set does, so its new runs share one lattice of divisors; at
 * SEEN_RUNS_CONSOLIDATE a flush merges every group of runs that share a
 * divisor, wherever they stand.  A set growing from 100 to 3,400 items a
 * day over 166 days in 64 slices had reached the format's 64 runs (and
 * every further write was refused). */
#define SEEN_RUNS_WHOLE_REPLAN 16u
#define SEEN_RUNS_CONSOLIDATE 24u
/* With SEEN_MANY_SLICES slices or more, each slice's sealed recent run
 * that cannot fold is a run of its own, so a moving rate gathers runs
 * faster: there the two thresholds are 8 and 12.  `make bench-states`, 16
 * and 64 slices, against 16 and 24 (runs, 2,000-candidate batch, page of
 * 20, bits per live item, means over 250 days): a user growing by 20 a day
 * each day 15.4 -> 9.2 runs, 223 -> 156 us, 32.6 -> 19.1 us, 17.3 -> 17.1
 * bits (16 slices); by 100 a day 16.5 -> 10.8, 346 -> 232, 54 -> 15 us;
 * waves, a decaying user, a binge all fewer runs and faster; bits within
 * -0.9..+0.4 (a doubling user in 16 slices +0.4).  The slowest page, a
 * merge of the runs sharing a divisor, can be longer: 13 -> 23 ms in the
 * doubling user's 2.9-million-item key in 64 slices.  In 4 slices the same
 * thresholds cost bits (that doubling user 17.3 -> 19.2), so they stay. */
#define SEEN_MANY_SLICES 16u
#define SEEN_RUNS_WHOLE_REPLAN_MANY_SLICES 8u
#define SEEN_RUNS_CONSOLIDATE_MANY_SLICES 12u
/* A set storing fewer entries than SEEN_SMALL_WHOLE_REPLAN re-plans by
 * whole factors only too, while it is not bursting and its target stays
 * within SEEN_SMALL_WHOLE_REPLAN_REACH times what its plan holds.  A light
 * user's pages come days apart and each moved the plan by a fraction, so
 * a key of ~100 items held a run per page or two (2-5), each run's header
 * and sparser codes costing more than the bit or so per item a plan up to
 * twice too fine costs: on one lattice its runs fold into one.  In process
 * (serialized bits per held item from day 100 on, mean and worst; pages of
 * 10 every 9 days) 24.2 / 28.9 -> 21.7 / 23.0 bits, 2.9 -> 1.2 runs; ~50
 * items 34.8 -> 27.1; from ~500 items held the same (up to 512 entries a
 * 1,000-item key took +0.2 bit).  A burst is planned for what it
 * projects, as a larger set's is: on whole factors a light user turned
 * heavy (1 a day, then 20,000 on day 100) gave its first burst pages most
 * of the budget and ended at 21.0 bits per live item against 19.9. */
#define SEEN_SMALL_WHOLE_REPLAN 256u
#define SEEN_SMALL_WHOLE_REPLAN_REACH 4.0

/* A set without window or capacity plans for SEEN_GROWTH_AHEAD times the
 * items it holds: each doubling's runs then take ~1/32 of the budget, so
 * it stays near 17.5 bits an item over 18 doublings (4,000,000 items from
 * pages of 20; 8x ahead ran short past 1,000,000), at 4 bits an item over
 * the plan's ideal.  A first plan made on SEEN_GROWTH_BULK_MIN items or
 * more (a bulk load) looks one doubling ahead (plan.c, plan_target). */
#define SEEN_GROWTH_AHEAD 16u
#define SEEN_GROWTH_BULK_MIN 1024u

/* A set past its youth whose newest slice holds more than
 * SEEN_BURST_RATIO times the live items of its older slices is bursting
 * (plan.c, is_bursting): a light history, then thousands of items.  Its
 * history's runs hold most of the budget, so each new run is sized for
 * the set to grow SEEN_BURST_HEDGE times over, not to double, and runs
 * squeezed finer are not coarsened back while it lasts: each doubling
 * then spends about a quarter of the budget left, where it spent all of
 * it (12,000 items after a history of 30-180: up to 44 bits each, now 27;
 * docs/DESIGN.md, "Known limits"). */
#define SEEN_BURST_RATIO 1u
#define SEEN_BURST_HEDGE 4u

/* A windowed set growing for weeks plans for the peak its newest data's
 * rate projects once that is SEEN_GROWTH_SIGNAL times what it would plan
 * for otherwise (plan.c, recent_rate_target), the plan moving by whole
 * factors as a young set's does; while bursting, only if its last two
 * ended slices grew by that factor too (slices_grow).  Planned for what it held, each
 * flush squeezed finer runs into the budget left until it stored exact
 * keys: doubling every two weeks, up to 45 bits a held item and 110,000
 * exact keys; 18-24 so, none exact.  The rate is measured over at least
 * SEEN_GROWTH_MIN_SPAN_MS of data (a week's swings read as their average)
 * and SEEN_GROWTH_MIN_ITEMS (a light user's page now and then is no
 * growth). */
#define SEEN_GROWTH_SIGNAL 1.5
#define SEEN_GROWTH_MIN_ITEMS 256u
#define SEEN_GROWTH_MIN_SPAN_MS (7ll * 24 * 3600 * 1000)

/* Sets up to this many stored items keep a single run: rewriting it whole
 * on each merge is cheap, and one run avoids the cost of a split. */
#define SEEN_SINGLE_RUN_MAX 1024u

/* ------------------------------------------------------------ limits */

/*
 * The limits of a set's state.  The loader (format.c) refuses anything
 * beyond them and the writer (state.c, plan.c) never goes beyond them: it merges,
 * renumbers or refuses the write instead.  One table for both, so a state
 * any sequence of operations can reach always loads back.
 */
/* Segment ids count up; past this a write renumbers them from 0. */
#define SEEN_SEG_ID_LIMIT (UINT32_C(1) << 31)
/* Segments in the table.  A capped set coalesces sparse neighbouring count
 * steps once it holds SEEN_SEGMENTS_SOFT of them, far below this. */
#define SEEN_MAX_SEGMENTS 4096u
/* Runs in a set. */
#define SEEN_MAX_RUNS 64u
/* Raw entries in the head. */
#define SEEN_MAX_HEAD (1u << 22)
/* A count step's sequence number within its slice; the writer renumbers a
 * slice's steps from 0 before one would pass it. */
#define SEEN_MAX_SEQ (UINT64_C(1) << 62)
/* A segment's shadow count and the planning high-water mark. */
#define SEEN_MAX_COUNT (UINT64_C(1) << 40)
/* Bits of Golomb codes in one run. */
#define SEEN_MAX_CODE_BITS (UINT64_C(1) << 58)
/* The Golomb parameter of a run. */
#define SEEN_MAX_GOLOMB_K 62u
#define SEEN_MAX_GOLOMB_M (UINT64_C(1) << SEEN_MAX_GOLOMB_K)
/* Low bits of an Elias-Fano run's values: a low part is read in one 64-bit
 * load.  A run whose best width is larger is Golomb-coded instead. */
#define SEEN_EF_MAX_LOW_BITS 56u
/* Exact runs (c = 1) are coded Elias-Fano only with at most this many low
 * bits: dense integer ids, not hashed keys or ids with far outliers. */
#define SEEN_EF_EXACT_MAX_LOW_BITS 32u

/* A capped set keeps at most about this many segments: past it, a flush
 * merges neighbouring count steps of a slice whose items together fit one
 * step (re-adds empty old steps; a batch far larger than the cap fills
 * and drops one step per ceil(cap/slices) items). */
#define SEEN_SEGMENTS_SOFT(slices) (4u * (slices) + 16u)

/* Default policy values. */
#define SEEN_DEFAULT_WINDOW_MS (90ull * 24 * 3600 * 1000)
#define SEEN_DEFAULT_SLICES 4u
#define SEEN_DEFAULT_ERROR 0.001
#define SEEN_DEFAULT_EXACT_LIMIT 16u

/* Every rejection of malformed serialized input goes through CORRUPT; build
 * with -DSEEN_TRACE_CORRUPT to learn which check fired. */
#ifdef SEEN_TRACE_CORRUPT
#include <stdio.h>
#define CORRUPT (fprintf(stderr, "corrupt: %s:%d\n", __FILE__, __LINE__), SEEN_ERR_FORMAT_CORRUPT)
#else
#define CORRUPT SEEN_ERR_FORMAT_CORRUPT
#endif

/* ------------------------------------------------------------ memory */

void *seen__malloc(size_t size);
void *seen__calloc(size_t count, size_t size);
void *seen__realloc(void *ptr, size_t size);
void seen__free(void *ptr);
/* Bytes the allocator really holds for ptr (requested size if unknown). */
size_t seen__alloc_size(void *ptr, size_t requested);
/* True if the host's allocator reports usable sizes: it rounds requests to
 * size classes worth planning blocks around. */
bool seen__alloc_rounds(void);
/* The block jemalloc (Redis's allocator) hands out for a request. */
size_t seen__alloc_class(size_t size);

/* ------------------------------------------------------------ hashing */

/* "seen_v01" in ASCII; recorded in docs/FORMAT.md.  Part of the format:
 * changing it changes every stored fingerprint. */
#define SEEN_HASH_SEED UINT64_C(0x7365656e5f763031)
/* A string's key.  Inline (XXH3 compiled into each batch loop): a call per
 * item was ~12% of hashing 10,000 24-byte items, in process. */
static inline uint64_t seen__hash_str(const void *ptr, size_t len)
{
    return XXH3_64bits_withSeed(ptr, len, SEEN_HASH_SEED);
}
/* Item i of a batch of n, hashed.  A batch's items lie wherever the caller
 * keeps them (in Redis, argument strings spread over the heap), so the
 * bytes of the item SEEN_HASH_AHEAD places on are requested first: the
 * cache misses of a loop over the batch overlap its hashing (10,000 items
 * of 24 bytes in a 2.7 MB array: 50 -> 33 us at 8 places ahead; 16 took
 * ~4 us off a 10k/10k query more, and 32 nothing further). */
#define SEEN_HASH_AHEAD 16
static inline uint64_t seen__hash_item(const seen_str *items, size_t i, size_t n)
{
    if (i + SEEN_HASH_AHEAD < n)
        __builtin_prefetch(items[i + SEEN_HASH_AHEAD].ptr);
    return seen__hash_str(items[i].ptr, items[i].len);
}
/* A bijection on 64-bit integers with good avalanche, so that integer ids
 * become uniformly spread fingerprint keys without collisions. */
uint64_t seen__mix64(uint64_t x);

/* ------------------------------------------------------------ sorting */

typedef struct seen__kv {
    uint64_t key;
    uint32_t idx;
} seen__kv;

/* Sort by key, stably (equal keys keep their order).  Needs a temporary
 * buffer of n entries; returns SEEN_ERR_NOMEM without touching `a` if it
 * cannot get one. */
seen_err seen__sort_kv(seen__kv *a, size_t n);
/* Sort by key (ties in any order), for keys spread over all 64 bits
 * (hashes, mixed ids): faster for them, and no slower than seen__sort_kv
 * within a factor of two for any other keys. */
seen_err seen__sort_hashes(seen__kv *a, size_t n);
/* qsort's comparison of two uint64_t, ascending. */
int seen__cmp_u64(const void *a, const void *b);

/* ------------------------------------------------------------ bit I/O */

static inline uint64_t seen__load64le(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline void seen__store64le(uint8_t *p, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(p, &v, sizeof v);
}

/* The bits at and after `pos` (LSB-first); at least 57 of them are valid.
 * The buffer must have 8 readable bytes from byte pos/8. */
static inline uint64_t seen__peek(const uint8_t *buf, uint64_t pos)
{
    return seen__load64le(buf + (pos >> 3)) >> (pos & 7);
}

static inline uint64_t seen__read_bits(const uint8_t *buf, uint64_t pos, unsigned n)
{
    if (n == 0)
        return 0;
    uint64_t lo = seen__peek(buf, pos);
    if (n <= 56)
        return lo & ((UINT64_C(1) << n) - 1);
    uint64_t v = (lo & ((UINT64_C(1) << 56) - 1)) | (seen__peek(buf, pos + 56) << 56);
    return n == 64 ? v : v & ((UINT64_C(1) << n) - 1);
}

/* Number of bits needed to write x (0 for 0). */
static inline unsigned seen__bitlen(uint64_t x)
{
    return x ? 64u - (unsigned)__builtin_clzll(x) : 0u;
}

static inline uint64_t seen__mulhi(uint64_t a, uint64_t b)
{
    return (uint64_t)(((unsigned __int128)a * b) >> 64);
}

/* A bit buffer written LSB-first into zero-filled memory the caller owns
 * (the run index: its size is known before it is written). */
typedef struct seen__bitw {
    uint8_t *buf;
    uint64_t bits; /* bits written */
} seen__bitw;

/* Append the low n bits of v (n <= 64), with 8 readable bytes to spare. */
static inline void seen__bitw_put(seen__bitw *w, uint64_t v, unsigned n)
{
    while (n > 0) {
        unsigned take = n > 56 ? 56 : n;
        uint64_t part = take == 64 ? v : (v & ((UINT64_C(1) << take) - 1));
        uint8_t *p = w->buf + (w->bits >> 3);
        seen__store64le(p, seen__load64le(p) | (part << (w->bits & 7)));
        w->bits += take;
        v = take >= 64 ? 0 : v >> take;
        n -= take;
    }
}

/* ------------------------------------------------------------ Golomb */

/* A Golomb code with parameter m: quotient in unary (q zeros, then a one),
 * remainder in truncated binary (b-1 or b bits, b = ceil(log2 m)). */
typedef struct seen__golomb {
    uint64_t m;
    uint64_t short_n; /* remainders below this take b-1 bits */
    uint64_t lowmask; /* b-1 low bits */
    unsigned b;
} seen__golomb;

void seen__golomb_init(seen__golomb *g, uint64_t m);
/* The power of two m that minimises the size of n sorted distinct values
 * spread over span + 1 slots, Rice-coded (run.c). */
uint64_t seen__golomb_choose(uint64_t n, uint64_t span);
/* May a run keep parameter m when it holds n values over span + 1 slots:
 * a power of two whose codes cost at most ~0.03 bit more than
 * seen__golomb_choose's? */
bool seen__golomb_keeps(uint64_t m, uint64_t n, uint64_t span);

/* ------------------------------------------------------------ division */

/* Division by a divisor fixed for many operations: multiply-high by a
 * precomputed reciprocal instead of a hardware divide (Granlund and
 * Montgomery's method for unsigned 64-bit division by an invariant). */
typedef struct seen__divider {
    uint64_t d;
    uint64_t magic;
    unsigned shift;
    uint8_t kind; /* 0: d == 1, 1: power of two, 2: general */
} seen__divider;

void seen__divider_init(seen__divider *v, uint64_t d);

static inline uint64_t seen__div(const seen__divider *v, uint64_t n)
{
    if (v->kind == 0)
        return n;
    if (v->kind == 1)
        return n >> v->shift;
    uint64_t t = seen__mulhi(v->magic, n);
    return (t + ((n - t) >> 1)) >> v->shift;
}

/* ------------------------------------------------------------ runs */

/*
 * A run: n distinct values in increasing order, each with a tag naming the
 * segment (time slice / count step) it belongs to.  Values are keys divided
 * by the run's divisor c (c = 1: exact keys).  The layout of `mem` is
 * described at the top of run.c.
 */
typedef struct seen__run {
    uint64_t c;        /* divisor: value = key / c */
    uint64_t base;     /* smallest value */
    uint64_t span;     /* largest value - base */
    uint64_t golomb_m; /* Golomb parameter of the gaps */
    union {
        uint64_t bucket_w; /* bucket of v = (v - base) / bucket_w; 0: cut by rank */
        /* Elias-Fano runs (golomb_m = 0, run_ef.c): low bits per value, and
         * the spacing (log2 of zeros) and width of the samples of the
         * upper bits, which stand where a Golomb run's index does. */
        struct {
            uint8_t low, shift, wsample;
        } ef;
    };
    uint64_t code_bits;    /* bits of Golomb codes */
    int64_t idx_min_bits;  /* smallest deviation of a bucket's bit offset */
    int64_t idx_min_items; /* smallest deviation of a bucket's first item */
    uint32_t n;            /* values */
    uint32_t nbuckets;
    uint32_t nsegs; /* tag alphabet: segment ids, oldest first */
    uint8_t w_bits; /* index field widths */
    uint8_t w_items;
    uint8_t w_vals; /* a bucket's lowest value, in runs cut by rank; else 0 */
    /* Its first value may be above base or its last below base + span (a
     * delete took one of them): it is written as version 3, with this mark,
     * so a reloaded copy (a replica) holds the same state.  Kept so writing
     * need not decode to know. */
    bool loose_ends;
    uint8_t *mem; /* segment ids, index, tags, codes, padding */
    /* A large run may keep the codes of its last buckets in a second block
     * (see seen__run_split); tail[0] holds code bit tail_bit & ~7, and the
     * buckets starting at or after tail_bit are read from it. */
    uint8_t *tail;
    uint64_t tail_bit;
} seen__run;

/* Zero bytes after a run's codes: 64-bit loads near the end stay inside. */
#define SEEN_RUN_PAD 16u
/* Bytes a run's split into two blocks must save (seen__run_split). */
#define SEEN_SPLIT_MIN_GAIN 64u

/* Bytes of a run held in one block (as encoded and as loaded). */
size_t seen__run_mem_size(const seen__run *r);
/* Bytes of r->mem and of r->tail as they are now. */
size_t seen__run_front_bytes(const seen__run *r);
size_t seen__run_tail_bytes(const seen__run *r);
/* What the allocator really holds for the run. */
size_t seen__run_alloc_bytes(const seen__run *r);
/* Move the codes of the last buckets to a second block when the two blocks
 * fit the allocator's size classes better than the one (only when the
 * allocator reports usable sizes; best effort: on allocation failure the
 * run stays whole). */
void seen__run_split(seen__run *r);
/* A deep copy of src, same layout. */
seen_err seen__run_clone(seen__run *dst, const seen__run *src);
const uint32_t *seen__run_segs(const seen__run *r);
size_t seen__run_index_bytes(const seen__run *r);
size_t seen__run_tag_bytes(const seen__run *r);

/* How seen__run_encode shapes a run, flags: SEEN_RUN_FINE, buckets of
 * SEEN_BUCKET_ITEMS / 2 (faster point lookups, a larger index); and
 * SEEN_RUN_TAKES_HEAD, the run every flush of the head goes into (coded
 * Elias-Fano from SEEN_EF_MIN_HEAD_RUN values, or from
 * SEEN_EF_MIN_LARGE_SET_RUN in a set of SEEN_FINE_RECENT_SET values:
 * SEEN_RUN_IN_MID_SET); SEEN_RUN_IN_LARGE_SET, a run of a set holding
 * SEEN_EF_LARGE_SET values (Elias-Fano from SEEN_EF_MIN_LARGE_SET_RUN).
 * A bool true is SEEN_RUN_FINE. */
#define SEEN_RUN_FINE 1u
#define SEEN_RUN_TAKES_HEAD 2u
#define SEEN_RUN_IN_LARGE_SET 4u
#define SEEN_RUN_IN_MID_SET 8u
/* Encode n >= 1 strictly increasing values with tags < nsegs, shaped by
 * `shape`. */
seen_err seen__run_encode(seen__run *out, uint64_t c, const uint64_t *vals, const uint16_t *tags,
                          size_t n, const uint32_t *seg_ids, uint32_t nsegs, unsigned shape);
/* The same with Golomb parameter m for a run cut by value (0: the
 * writer's choice, a power of two; tests give others, as earlier writers
 * chose, to check that every reader still decodes them). */
seen_err seen__run_encode_m(seen__run *out, uint64_t c, const uint64_t *vals, const uint16_t *tags,
                            size_t n, const uint32_t *seg_ids, uint32_t nsegs, unsigned shape,
                            uint64_t m);
/* The run r without those of the sorted, distinct values vals[0..k) it
 * holds, copying the codes of every bucket none of them is in.  *applies
 * is false when this cannot be done in place (the run would lose half its
 * values or all of them, or a segment would be left without values): then
 * rebuild the run instead, as also when a rebuild shaped by `shape`
 * (SEEN_RUN_* flags) would code it otherwise.  When it applies and
 * *removed > 0, *out is the new run and removed_per_tag[t] (r->nsegs
 * entries, zeroed by the caller) counts the values removed per tag. */
seen_err seen__run_without(seen__run *out, const seen__run *r, const uint64_t *vals, size_t k,
                           unsigned shape, uint64_t *removed_per_tag, size_t *removed,
                           bool *applies);
/* The run r with the sorted, distinct values vals[0..k) added in the
 * buckets they fall in, tagged `tag` (< r->nsegs); *held counts those it
 * held already.  *applies is false when this cannot be done so (values
 * outside the run's span, a bucket count the new size may not keep, or in
 * a run of several segments a value it holds, or a rebuild shaped by
 * `shape`, SEEN_RUN_* flags, would code it otherwise): then rebuild.  When
 * it applies, *out is the new run. */
seen_err seen__run_with(seen__run *out, const seen__run *r, const uint64_t *vals, size_t k,
                        unsigned shape, uint32_t tag, size_t *held, bool *applies);
/* Decode every value and tag of a valid run into arrays of r->n entries
 * (tags NULL: the values only). */
void seen__run_decode(const seen__run *r, uint64_t *vals, uint16_t *tags);
/* The tag of every value of a valid run into tags[0..n). */
void seen__run_decode_tags(const seen__run *r, uint16_t *tags);
/* per_tag[t] += how many of r's values have tag t (r->nsegs entries). */
void seen__run_count_tags(const seen__run *r, uint64_t *per_tag);
/* Check a run read from untrusted bytes: header fields, index, every code,
 * order, tags.  The header fields must already be in r and mem allocated
 * with seen__run_mem_size(r) bytes. */
seen_err seen__run_validate(const seen__run *r);
/* Whether a valid run's first value is its base and its last base + span
 * (a delete in place may leave them wider; format version 3). */
bool seen__run_ends_exact(const seen__run *r);
void seen__run_release(seen__run *r);

/* Runs coded Elias-Fano (run_ef.c), marked by golomb_m = 0. */
static inline bool seen__run_is_ef(const seen__run *r)
{
    return r->golomb_m == 0;
}
/* Whether seen__run_encode codes a run of n values over `span` with
 * divisor c, shaped by `shape` (SEEN_RUN_* flags), as Elias-Fano: a
 * compact run from SEEN_EF_MIN_RUN values (in a large set from
 * SEEN_EF_MIN_LARGE_SET_RUN, else one that takes every flush of the head
 * from SEEN_EF_MIN_HEAD_RUN), an exact one from SEEN_EF_MIN_EXACT_RUN,
 * when its low bits are few enough. */
bool seen__ef_wanted(uint64_t c, size_t n, uint64_t span, unsigned shape);
/* The low bits a run of n values over span takes: the fewest total bits. */
unsigned seen__ef_low_bits(uint64_t n, uint64_t span);
/* Check the header of an Elias-Fano run (n, span, ef_low, code_bits and
 * the fields it leaves 0) and set its sample fields from them;
 * SEEN_ERR_FORMAT_CORRUPT if they do not agree. */
seen_err seen__ef_shape(seen__run *r);
seen_err seen__ef_encode(seen__run *out, uint64_t c, const uint64_t *vals, const uint16_t *tags,
                         size_t n, const uint32_t *seg_ids, uint32_t nsegs);
/* Bytes of the samples, which stand where a Golomb run's index does. */
size_t seen__ef_sample_bytes(const seen__run *r);
/* Fill in the samples of a run whose codes are in place. */
void seen__ef_index(seen__run *r);
/* Check the codes of a run read from untrusted bytes (header checked by
 * seen__ef_shape, samples not yet built). */
seen_err seen__ef_validate(const seen__run *r);
void seen__ef_decode(const seen__run *r, uint64_t *vals);
/* The position in the run of value v, or -1. */
int64_t seen__ef_find(const seen__run *r, uint64_t v);
/* The instructions Elias-Fano lookups use, best last; the best the CPU
 * runs well is picked unless capped. */
typedef enum { SEEN_EF_ISA_PLAIN, SEEN_EF_ISA_POPCNT, SEEN_EF_ISA_PDEP } seen__ef_isa;
/* Cap the level (tests run every one the CPU has); returns the level now
 * in use. */
seen__ef_isa seen__ef_isa_limit(seen__ef_isa cap);
/* The level in use (other code counting bits picks by it too). */
seen__ef_isa seen__ef_isa_now(void);
/* Whether a CPU of this vendor (cpuid's 12 bytes) and signature (leaf 1,
 * EAX) runs PDEP in a few cycles: the condition for the PDEP level. */
bool seen__pdep_fast_on(const char vendor[12], unsigned signature);
/* seen__run_match for an Elias-Fano run. */
void seen__ef_match(const seen__run *r, const uint64_t *vals, size_t n, int32_t *tags);
/* Words of the uppers a sorted walk of n candidates over r counts ahead
 * of its own (0: it walks them one by one; at most 4).  For tests. */
unsigned seen__ef_ahead(const seen__run *r, size_t n);
/* Whether every tag word is a valid base-nsegs number with nothing past
 * the last value (run_tags.c). */
bool seen__run_tags_ok(const seen__run *r);

/* Looks up a nondecreasing sequence of values in one run. */
typedef struct seen__cursor {
    const seen__run *r;
    seen__golomb g;
    seen__divider bucket_div;
    seen__divider tag_div;
    const uint8_t *codes;
    uint64_t line_bits, line_items; /* 32.32 fixed-point slopes */
    uint64_t pos, end;              /* bit range of the current bucket */
    uint64_t cur;                   /* last decoded value */
    uint64_t item;                  /* index of `cur` in the run */
    uint32_t bucket;
    uint32_t tags_per_word;
    bool have_cur; /* cur holds a decoded value of this bucket */
    bool started;
    /* Batch walks decode buckets whole into buf (most buckets fit): a tight
     * decode loop, then candidates merge against the values.  When the walk
     * is dense (pairs), buckets j and j+1 are decoded together, two
     * independent chains the CPU overlaps; the second waits in buf2. */
    bool pairs;
    bool stepwise; /* decode only as far as the candidates reach (sparse walks) */
    uint32_t nbuf, ibuf;
    uint64_t buf_first;          /* run index of buf[0] */
    uint32_t next_bucket, nbuf2; /* buf2 holds bucket next_bucket, if nbuf2 != UINT32_MAX */
    uint64_t buf2_first;
    uint64_t buf[SEEN_CURSOR_BUF + SEEN_CURSOR_PAD]; /* room for seen__run_match's sentinels */
    uint64_t buf2[SEEN_CURSOR_BUF + SEEN_CURSOR_PAD];
} seen__cursor;

void seen__cursor_init(seen__cursor *cur, const seen__run *r);
/* Tell the cursor about n sorted candidates to come: dense batches decode
 * buckets in pairs. */
void seen__cursor_expect(seen__cursor *cur, size_t n);

/* Point lookups of vals[i] in runs[i] (i < k <= SEEN_LOOKUP_MANY_MAX),
 * decoded in lockstep; tags[i] gets the tag or -1. */
#define SEEN_LOOKUP_MANY_MAX 8
void seen__run_lookup_many(const seen__run *const *runs, const uint64_t *vals, size_t k, int *tags);
/* The tag of value v, or -1 if absent; v must not decrease between calls. */
int seen__cursor_find(seen__cursor *cur, uint64_t v);
/* The tag of each of n nondecreasing values in r, or -1 if absent. */
void seen__run_match(const seen__run *r, const uint64_t *vals, size_t n, int32_t *tags);

/* ------------------------------------------------------------ sets */

/*
 * A segment is a time slice (and, for sets with a capacity, one count step
 * of it).  Runs and the head refer to segments by id; the table is kept in
 * age order, oldest first, which is also the order of forgetting.
 */
typedef struct seen__segment {
    int64_t slice;   /* time slice index, counted from the set's origin */
    uint64_t phys;   /* entries stored with this tag, in runs and head */
    uint64_t shadow; /* of those, older copies of items added again later */
    uint64_t seq;    /* count step within the slice (64 bits: a capped set
                        without window steps forever) */
    uint32_t id;
    uint8_t dropped; /* forgotten by the capacity rule */
} seen__segment;

/* The oldest and newest item times a segment took: a capped set places
 * items among its count steps by them.  Kept beside the segment table (same
 * positions) by capped sets only, so no other set pays for them. */
typedef struct seen__span {
    int64_t lo, hi;
} seen__span;

/* Items whose newest addition is in segment g: what capacity counts. */
static inline uint64_t seen__seg_items(const seen__segment *g)
{
    return g->phys - g->shadow;
}

struct seen_set {
    seen_policy policy;
    uint64_t slice_ms; /* window / slices, rounded up; 0 without window */
    uint64_t budget;   /* floor(error * 2^64): bound on sum(n * c) */
    int64_t origin;    /* slice 0 starts here (the first item's time) */
    int64_t clock;     /* latest `now` of any write */
    int64_t newest;    /* latest item time added: with origin, the span of
                          history the set has seen (an import arrives at
                          one `now` with times spread over the past) */
    uint64_t plan_c;   /* divisor new compact runs are planned with; 0: exact */
    uint64_t hwm;      /* most entries live slices stored recently: the planning size */
    int64_t hwm_clock;
    uint32_t next_seg_id;
    uint8_t has_origin;
    /* An IDS INT set with an error bound whose keys are still the ids
     * themselves, stored exactly (runs with c = 1): clustered ids cost
     * fewer bits so than fingerprints.  Cleared, once, when the set leaves
     * its exact phase and its keys are mixed (plan.c). */
    uint8_t raw_keys;
    seen__segment *segs; /* age order; with a capacity, the block goes on
                            with each segment's seen__span (seen__set_spans) */
    uint32_t nsegs;
    uint32_t nruns;
    seen__run *runs;     /* oldest first: main, then recent */
    uint64_t *head_keys; /* raw keys of recent additions ... */
    uint32_t *head_segs; /* ... and their segment ids (same block) */
    uint32_t head_n, head_cap;
};

/* A capped set's segment spans: right after its segments, in their block
 * (so the set's own struct, in its allocation class, does not grow); NULL
 * for a set without a capacity. */
static inline seen__span *seen__set_spans(const seen_set *s)
{
    return s->policy.capacity && s->segs ? (seen__span *)(void *)(s->segs + s->nsegs) : NULL;
}

/* SEEN_RUN_IN_LARGE_SET if the set's runs hold SEEN_EF_LARGE_SET values,
 * SEEN_RUN_IN_MID_SET if SEEN_FINE_RECENT_SET: how a merge, and an edit in
 * place, shape its runs. */
static inline unsigned seen__set_run_shape(const seen_set *s)
{
    uint64_t stored = 0;
    for (uint32_t i = 0; i < s->nruns; i++)
        stored += s->runs[i].n;
    return (stored >= SEEN_EF_LARGE_SET ? SEEN_RUN_IN_LARGE_SET : 0u) |
           (stored >= SEEN_FINE_RECENT_SET ? SEEN_RUN_IN_MID_SET : 0u);
}

/* Bytes of a set's segment block: its segments, and their spans if capped. */
static inline size_t seen__segs_block_bytes(const seen_set *s, uint32_t nsegs)
{
    return (size_t)nsegs * (sizeof(seen__segment) + (s->policy.capacity ? sizeof(seen__span) : 0));
}

/* The key an item is stored under: strings hashed, ints mixed unless the
 * set is exact or still keyed by the raw ids (raw_keys). */
uint64_t seen__int_key(const seen_set *s, uint64_t item);

/* Policy-derived fields; false if the policy is invalid. */
bool seen__set_derive(seen_set *s);
/* Verify every internal invariant (entry counts, budget, runs, order):
 * for tests, after every operation. */
seen_err seen__set_check(const seen_set *s);

/* The head's block size for n entries (a fixed growth sequence). */
uint32_t seen__head_cap_for(uint32_t n);

/* seen_serialized_size() and seen_serialize() in a given format version,
 * from the oldest that holds the set (2, or 3 for a run only version 3
 * allows; SEEN_ERR_ARG below it) to the one written: for tests and
 * corpora of the versions the loader still reads. */
size_t seen__serialized_size_as(const seen_set *s, unsigned version);
seen_err seen__serialize_as(const seen_set *s, unsigned version, uint8_t *buf, size_t cap,
                            size_t *written);

/* Frees the parts of a set that seen_deserialize may have filled. */
void seen__set_destroy(seen_set *s);

#endif /* SEEN_INTERNAL_H */
