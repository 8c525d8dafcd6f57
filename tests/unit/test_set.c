/*
 * test_set.c — the core library against a naive reference model.
 *
 * Randomised scenarios (seeded, replayable with SEEN_TEST_SEED) drive adds
 * with current and late timestamps, filters, removals, time jumps, expiry
 * and serialization round trips over many policies, and check after every
 * operation: no false negatives inside the window, forgetting after
 * window * (1 + 1/slices), capacity, exactness of exact modes, the "added"
 * and "removed" counts, and the set's own invariants (seen__set_check).
 * Directed tests cover the measured figures: the false-positive rate on
 * 200,000 fresh candidates, bits per item, integer-id compactness.  The
 * allocation test fails the Nth allocation of every operation for every N
 * and checks the set is unchanged and nothing leaks.
 *
 * Past 1,000 lines on purpose: every test here drives the same loaders
 * (load_spread, the reference model's checks, snapshot/roundtrip) over
 * whole sets, and a split would move those helpers to a header of their
 * own for two files that each need all of them.
 */
#include "internal.h"
#include "spec_walk.h"
#include "testutil.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define T0 INT64_C(1763700000000)
#define DAY INT64_C(86400000)

/* ------------------------------------------------------------- helpers */

typedef struct probe_items {
    str_item *str;
    uint64_t *ints;
    seen_str *strs;
} probe_items;

static void items_alloc(probe_items *pi, size_t n)
{
    pi->str = malloc((n + 1) * sizeof *pi->str);
    pi->strs = malloc((n + 1) * sizeof *pi->strs);
    pi->ints = malloc((n + 1) * sizeof *pi->ints);
}

static void items_free(probe_items *pi)
{
    free(pi->str);
    free(pi->strs);
    free(pi->ints);
}

static void items_set(probe_items *pi, size_t i, uint64_t id)
{
    make_str(&pi->str[i], id);
    pi->strs[i] = pi->str[i].s;
    pi->ints[i] = id;
}

static seen_err add_ids(seen_set *s, const uint64_t *ids, size_t n, const int64_t *at, int64_t now,
                        size_t *added)
{
    probe_items pi;
    items_alloc(&pi, n);
    for (size_t i = 0; i < n; i++)
        items_set(&pi, i, ids[i]);
    seen_err e = seen_get_policy(s)->ids == SEEN_IDS_INT
                     ? seen_add_int(s, pi.ints, n, at, now, added)
                     : seen_add_str(s, pi.strs, n, at, now, added);
    items_free(&pi);
    return e;
}

static seen_err filter_ids(const seen_set *s, const uint64_t *ids, size_t n, int64_t now,
                           uint8_t *seen)
{
    probe_items pi;
    items_alloc(&pi, n);
    for (size_t i = 0; i < n; i++)
        items_set(&pi, i, ids[i]);
    memset(seen, 0, n);
    seen_err e = seen_get_policy(s)->ids == SEEN_IDS_INT
                     ? seen_filter_int(s, pi.ints, n, now, seen)
                     : seen_filter_str(s, pi.strs, n, now, seen);
    items_free(&pi);
    return e;
}

static seen_err remove_ids(seen_set *s, const uint64_t *ids, size_t n, int64_t now, size_t *removed)
{
    probe_items pi;
    items_alloc(&pi, n);
    for (size_t i = 0; i < n; i++)
        items_set(&pi, i, ids[i]);
    seen_err e = seen_get_policy(s)->ids == SEEN_IDS_INT
                     ? seen_remove_int(s, pi.ints, n, now, removed)
                     : seen_remove_str(s, pi.strs, n, now, removed);
    items_free(&pi);
    return e;
}

/* The serialized bytes of s: a complete picture of its state.  Each is
 * also read as FORMAT.md describes it (spec_walk.c), so every state the
 * tests reach is written as the document says, not only as the loader
 * reads. */
static uint8_t *snapshot(const seen_set *s, size_t *len)
{
    *len = seen_serialized_size(s);
    uint8_t *b = malloc(*len);
    size_t w;
    assert_int_equal(seen_serialize(s, b, *len, &w), SEEN_OK);
    assert_int_equal(w, *len);
    static walk spec;
    spec_walk(&spec, b, *len);
    return b;
}

static void assert_unchanged(const seen_set *s, const uint8_t *before, size_t len)
{
    size_t now_len;
    uint8_t *now = snapshot(s, &now_len);
    assert_int_equal(now_len, len);
    assert_memory_equal(now, before, len);
    free(now);
}

static seen_set *roundtrip(seen_set *s)
{
    size_t len;
    uint8_t *b = snapshot(s, &len);
    seen_set *t = NULL;
    assert_int_equal(seen_deserialize(b, len, &t), SEEN_OK);
    assert_int_equal(seen_bytes(t), seen_bytes(s));
    size_t len2;
    uint8_t *b2 = snapshot(t, &len2);
    assert_int_equal(len2, len);
    assert_memory_equal(b2, b, len);
    free(b);
    free(b2);
    seen_free(s);
    return t;
}

/* --------------------------------------------------------- scenarios */

typedef struct scenario {
    const char *name;
    seen_policy p;
    int ops;
    size_t max_batch;
    uint64_t id_space;
    int64_t step_ms; /* mean time advance */
    bool late;       /* per-item times reaching back past the window */
    bool removals;
    uint64_t seed;
} scenario;

typedef struct tally {
    uint64_t checks, must_see, must_not, fp; /* fp: MUST_NOT_SEE reported seen */
} tally;

static bool exact_policy(const seen_policy *p)
{
    return p->error == 0;
}

static void check_all(const scenario *sc, seen_set *s, model *m, rng *r, int64_t now, tally *ty)
{
    enum { K = 256 };
    uint64_t ids[K];
    uint8_t seen[K];
    for (size_t i = 0; i < K; i++)
        ids[i] = rng_below(r, sc->id_space + sc->id_space / 4); /* some never added */
    assert_int_equal(filter_ids(s, ids, K, now, seen), SEEN_OK);
    for (size_t i = 0; i < K; i++) {
        expect e = model_expect(m, ids[i], now);
        ty->checks++;
        if (e == MUST_SEE) {
            ty->must_see++;
            if (!seen[i]) {
                const model_item *it = model_find(m, ids[i]);
                fprintf(stderr, "model: id %llu t_sure %lld seq %llu newer %zu\n",
                        (unsigned long long)ids[i], (long long)it->t_sure,
                        (unsigned long long)it->seq, model_rank_newer(m, it, now));
                seen_segment_info si[64];
                size_t ns = seen_segments(s, now, si, 64);
                for (size_t k = 0; k < ns && k < 64; k++)
                    fprintf(stderr, "  segment seq %llu items %llu\n",
                            (unsigned long long)si[k].seq, (unsigned long long)si[k].items);
                fail_msg("%s: false negative: id %llu at now=%lld", sc->name,
                         (unsigned long long)ids[i], (long long)now);
            }
        } else if (e == MUST_NOT_SEE) {
            ty->must_not++;
            if (seen[i]) {
                if (exact_policy(&sc->p))
                    fail_msg("%s: exact set reports id %llu seen at now=%lld", sc->name,
                             (unsigned long long)ids[i], (long long)now);
                ty->fp++;
            }
        }
    }
}

/* Item i's time as a write takes it: a time past now counts as now. */
static int64_t item_at(const int64_t *at, size_t i, int64_t now)
{
    return at[i] < now ? at[i] : now;
}

static void run_scenario(const scenario *sc)
{
    rng r = {test_seed(sc->name, sc->seed)};
    seen_set *s;
    assert_int_equal(seen_create(&sc->p, &s), SEEN_OK);
    model m;
    model_init(&m, &sc->p);
    tally ty = {0};
    int64_t now = T0;
    int64_t w = (int64_t)sc->p.window_ms;
    uint64_t *ids = malloc(sc->max_batch * sizeof *ids);
    int64_t *at = malloc(sc->max_batch * sizeof *at);
    size_t *order = malloc(sc->max_batch * sizeof *order);
    uint8_t *seen = malloc(sc->max_batch);
    for (int op = 0; op < sc->ops; op++) {
        uint64_t dice = rng_below(&r, 100);
        if (dice < 50) {
            size_t n = 1 + rng_below(&r, rng_below(&r, 4) == 0 ? sc->max_batch : 8);
            bool with_times = sc->late && rng_below(&r, 3) == 0;
            for (size_t i = 0; i < n; i++) {
                ids[i] = rng_below(&r, sc->id_space);
                int64_t back = w ? (int64_t)rng_below(&r, (uint64_t)(w + w / 2))
                                 : (int64_t)rng_below(&r, 1000000);
                at[i] = with_times ? now - back : now;
                if (with_times && rng_below(&r, 10) == 0)
                    at[i] = now + 5000; /* future: counts as now */
            }
            /* What the model allows "added" to be. */
            size_t lo = 0, hi = 0;
            for (size_t i = 0; i < n; i++) {
                bool dup = false;
                for (size_t j = 0; j < i && !dup; j++)
                    dup = ids[j] == ids[i];
                if (dup)
                    continue;
                int64_t t = at[i] < now ? at[i] : now;
                for (size_t j = i + 1; j < n; j++)
                    if (ids[j] == ids[i] && at[j] > t)
                        t = at[j] < now ? at[j] : now;
                expect e = model_expect(&m, ids[i], now);
                bool kept_sure = w == 0 || t + w > now;
                bool kept_maybe = w == 0 || t + w + m.slice_ms > now;
                if (e == MUST_NOT_SEE && kept_sure)
                    lo++;
                if (e != MUST_SEE && kept_maybe)
                    hi++;
            }
            size_t added = 99999;
            assert_int_equal(add_ids(s, ids, n, with_times ? at : NULL, now, &added), SEEN_OK);
            if (exact_policy(&sc->p) && !(added >= lo && added <= hi))
                fail_msg("%s op %d: added %zu, model allows [%zu, %zu]", sc->name, op, added, lo,
                         hi);
            assert_true(added <= hi);
            /* A write's items arrive in time order (input order among
             * equal times): that is the order its count steps follow. */
            for (size_t i = 0; i < n; i++)
                order[i] = i;
            for (size_t i = 1; i < n; i++)
                for (size_t j = i;
                     j > 0 && item_at(at, order[j - 1], now) > item_at(at, order[j], now); j--) {
                    size_t x = order[j];
                    order[j] = order[j - 1];
                    order[j - 1] = x;
                }
            for (size_t k = 0; k < n; k++)
                model_add(&m, ids[order[k]], item_at(at, order[k], now), now);
        } else if (dice < 75) {
            check_all(sc, s, &m, &r, now, &ty);
        } else if (dice < 80 && sc->removals) {
            model_observe(&m, now);
            size_t n = 1 + rng_below(&r, 16);
            size_t lo = 0, hi = 0;
            for (size_t i = 0; i < n; i++) {
                ids[i] = rng_below(&r, sc->id_space);
                bool dup = false;
                for (size_t j = 0; j < i && !dup; j++)
                    dup = ids[j] == ids[i];
                if (dup)
                    continue;
                expect e = model_expect(&m, ids[i], now);
                lo += e == MUST_SEE;
                hi += e != MUST_NOT_SEE;
            }
            size_t removed = 99999;
            assert_int_equal(remove_ids(s, ids, n, now, &removed), SEEN_OK);
            if (exact_policy(&sc->p) && !(removed >= lo && removed <= hi))
                fail_msg("%s op %d: removed %zu, model allows [%zu, %zu]", sc->name, op, removed,
                         lo, hi);
            for (size_t i = 0; i < n; i++)
                model_remove(&m, ids[i]);
            assert_int_equal(filter_ids(s, ids, n, now, seen), SEEN_OK);
            for (size_t i = 0; i < n && exact_policy(&sc->p); i++)
                assert_int_equal(seen[i], 0);
        } else if (dice < 90) {
            /* Time passing forgets older items first, which lowers no
             * item's count of newer ones, unless late events mix times. */
            if (sc->late)
                model_observe(&m, now);
            now += (int64_t)rng_below(&r, (uint64_t)sc->step_ms * 2 + 1);
            if (sc->late)
                model_observe(&m, now);
        } else if (dice < 95) {
            s = roundtrip(s);
        } else {
            assert_int_equal(seen_expire(s, now), SEEN_OK);
        }
        seen_err ce = seen__set_check(s);
        if (ce != SEEN_OK)
            fail_msg("%s op %d: invariant broken: %s", sc->name, op, seen_strerror(ce));
    }
    /* Approximate sets: forgotten and never-added items may be reported
     * seen only as ordinary false positives. */
    if (!exact_policy(&sc->p)) {
        double rate = ty.must_not ? (double)ty.fp / (double)ty.must_not : 0;
        double allowed = sc->p.error * 3 + 5.0 / (double)(ty.must_not + 1);
        if (rate > allowed)
            fail_msg("%s: false-positive rate %.5f over %llu checks (allowed %.5f)", sc->name, rate,
                     (unsigned long long)ty.must_not, allowed);
    }
    assert_true(ty.must_see > 0);
    fprintf(stderr, "[stat] %s: %llu checks, %llu must-see, %llu must-not (fp %llu), %zu bytes\n",
            sc->name, (unsigned long long)ty.checks, (unsigned long long)ty.must_see,
            (unsigned long long)ty.must_not, (unsigned long long)ty.fp, seen_bytes(s));
    free(ids);
    free(at);
    free(order);
    free(seen);
    model_free(&m);
    seen_free(s);
}

static seen_policy policy(uint64_t window_ms, uint32_t slices, double error, uint64_t capacity,
                          seen_ids ids, uint32_t exact_limit)
{
    seen_policy p = {window_ms, slices, error, capacity, ids, exact_limit};
    return p;
}

static void test_exact_str_window(void **state)
{
    (void)state;
    scenario sc = {"exact-str-window",
                   policy(100000, 4, 0, 0, SEEN_IDS_STR, 128),
                   3000,
                   200,
                   3000,
                   2000,
                   false,
                   true,
                   11};
    run_scenario(&sc);
}

static void test_exact_int_late(void **state)
{
    (void)state;
    scenario sc = {"exact-int-late",
                   policy(100000, 5, 0, 0, SEEN_IDS_INT, 128),
                   3000,
                   300,
                   5000,
                   2000,
                   true,
                   true,
                   12};
    run_scenario(&sc);
}

static void test_approx_str_window(void **state)
{
    (void)state;
    scenario sc = {"approx-str-window",
                   policy(50000, 4, 0.01, 0, SEEN_IDS_STR, 16),
                   4000,
                   400,
                   20000,
                   600,
                   false,
                   false,
                   13};
    run_scenario(&sc);
}

static void test_approx_str_late(void **state)
{
    (void)state;
    scenario sc = {"approx-str-late",
                   policy(50000, 3, 0.01, 0, SEEN_IDS_STR, 16),
                   3000,
                   400,
                   20000,
                   600,
                   true,
                   false,
                   14};
    run_scenario(&sc);
}

static void test_approx_int(void **state)
{
    (void)state;
    scenario sc = {"approx-int",
                   policy(80000, 8, 0.001, 0, SEEN_IDS_INT, 32),
                   3000,
                   500,
                   30000,
                   800,
                   true,
                   false,
                   15};
    run_scenario(&sc);
}

static void test_capacity_exact(void **state)
{
    (void)state;
    scenario sc = {"capacity-exact",
                   policy(0, 4, 0, 100, SEEN_IDS_STR, 128),
                   3000,
                   20,
                   600,
                   10,
                   false,
                   true,
                   16};
    run_scenario(&sc);
}

static void test_capacity_window_approx(void **state)
{
    (void)state;
    scenario sc = {"capacity-window-approx",
                   policy(60000, 4, 0.01, 500, SEEN_IDS_STR, 16),
                   3000,
                   60,
                   4000,
                   300,
                   false,
                   false,
                   17};
    run_scenario(&sc);
}

/* Capped sets written with past times in any order (AT and per-item
 * times, as imports and late events bring them): within a write the count
 * steps follow the items' times, so the newest stay. */
static void test_capacity_late_exact(void **state)
{
    (void)state;
    scenario sc = {"capacity-late-exact",
                   policy(0, 4, 0, 100, SEEN_IDS_STR, 128),
                   1500,
                   300,
                   600,
                   10,
                   true,
                   true,
                   18};
    run_scenario(&sc);
}

static void test_capacity_window_late(void **state)
{
    (void)state;
    scenario sc = {"capacity-window-late",
                   policy(60000, 4, 0, 150, SEEN_IDS_INT, 128),
                   1500,
                   300,
                   800,
                   300,
                   true,
                   true,
                   19};
    run_scenario(&sc);
}

static void test_capacity_window_late_approx(void **state)
{
    (void)state;
    scenario sc = {"capacity-window-late-approx",
                   policy(60000, 8, 0.01, 200, SEEN_IDS_STR, 16),
                   1500,
                   300,
                   800,
                   300,
                   true,
                   false,
                   20};
    run_scenario(&sc);
}

/* Imports after live writes, and pages written newest first or shuffled,
 * into capped sets with and without a window, reloaded between writes:
 * the newest `cap` items by time stay, and the set holds no more than the
 * capacity rule allows. */
/* A re-add whose older copy a fingerprint collision hid puts its mark on
 * the newest segment with an entry left: here the segment of the item
 * just added, its only live entry, which then counts 0 items.  The set
 * must still know it holds something alive: taken by its counts it looked
 * forgotten, and the next write started it afresh, losing that item (a
 * program fuzz_ops found; ids chosen so that 33 collides with 51 at error
 * 0.1). */
static void test_collision_mark_keeps_the_set_alive(void **state)
{
    (void)state;
    seen_policy p = {1000, 64, 0.1, 100, SEEN_IDS_STR, 0};
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    static const struct {
        uint64_t id;
        int64_t now, back;
    } steps[] = {{42, 0, 418}, {51, 0, 0}, {51, 528, 481}, {33, 1008, 187}, {0, 1008, 0}};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        str_item it;
        make_str(&it, steps[i].id);
        int64_t now = T0 + steps[i].now, t = now - steps[i].back;
        assert_int_equal(seen_add_str(s, &it.s, 1, steps[i].back ? &t : NULL, now, NULL), SEEN_OK);
        assert_int_equal(seen__set_check(s), SEEN_OK);
        if (steps[i].id == 33) /* added at T0 + 821: kept to T0 + 1821 at least */
            assert_true(seen_forget_all_at(s) >= T0 + 1821);
    }
    for (int64_t at = T0 + 1008; at < T0 + 1821; at += 100)
        assert_true(set_sees(s, 33, at));
    seen_free(s);
}

static void test_capacity_across_writes(void **state)
{
    (void)state;
    const uint64_t cap = 100;
    const uint64_t windows[] = {0, 90 * DAY};
    const uint32_t slices[] = {4, 64};
    for (int w = 0; w < 2; w++)
        for (int sl = 0; sl < 2; sl++)
            for (int order = 0; order < 3; order++) {
                seen_policy p = policy(windows[w], slices[sl], 0, cap, SEEN_IDS_INT, 16);
                seen_set *s;
                assert_int_equal(seen_create(&p, &s), SEEN_OK);
                const int64_t now = T0 + 20 * DAY;
                enum { N = 1000, PAGE = 50 };
                uint64_t ids[N];
                int64_t at[N];
                int page_of[N / PAGE];
                for (int k = 0; k < N / PAGE; k++)
                    page_of[k] = order == 0 ? k : N / PAGE - 1 - k;
                if (order == 2) {
                    rng r = {test_seed("capacity-across", 5)};
                    for (int k = N / PAGE - 1; k > 0; k--) {
                        int j = (int)rng_below(&r, (uint64_t)k + 1), x = page_of[k];
                        page_of[k] = page_of[j];
                        page_of[j] = x;
                    }
                }
                /* Order 0: 100 live items first, then the history in time
                 * order (a backfill); 1: newest page first; 2: shuffled. */
                uint64_t live[100];
                for (uint64_t i = 0; i < 100; i++)
                    live[i] = 1000000 + i;
                if (order == 0)
                    assert_int_equal(seen_add_int(s, live, 100, NULL, now, NULL), SEEN_OK);
                for (int k = 0; k < N / PAGE; k++) {
                    for (int i = 0; i < PAGE; i++) {
                        int item = page_of[k] * PAGE + i;
                        ids[i] = (uint64_t)item;
                        at[i] = now - 10 * DAY + item * (10 * DAY / N);
                    }
                    assert_int_equal(seen_add_int(s, ids, PAGE, at, now, NULL), SEEN_OK);
                    s = roundtrip(s);
                    assert_int_equal(seen__set_check(s), SEEN_OK);
                }
                for (uint64_t i = 0; i < 100; i++) {
                    uint64_t id = order == 0 ? live[i] : N - 100 + i;
                    uint8_t f = 0;
                    assert_int_equal(seen_filter_int(s, &id, 1, now, &f), SEEN_OK);
                    if (!f)
                        fail_msg("window %llu slices %u order %d: newest item %llu forgotten",
                                 (unsigned long long)windows[w], slices[sl], order,
                                 (unsigned long long)id);
                }
                assert_true(seen_count(s, now) <= cap + (cap + slices[sl] - 1) / slices[sl]);
                seen_free(s);
            }
}

static void test_no_window_approx(void **state)
{
    (void)state;
    scenario sc = {"no-window-approx",
                   policy(0, 4, 0.001, 0, SEEN_IDS_STR, 32),
                   3000,
                   500,
                   40000,
                   100,
                   false,
                   false,
                   18};
    run_scenario(&sc);
}

static void test_one_slice_and_many(void **state)
{
    (void)state;
    scenario a = {
        "one-slice", policy(30000, 1, 0.01, 0, SEEN_IDS_INT, 16), 2000, 200, 8000, 400, true, false,
        19};
    run_scenario(&a);
    scenario b = {
        "64-slices", policy(64000, 64, 0, 0, SEEN_IDS_STR, 64), 2000, 200, 4000, 300, true, true,
        20};
    run_scenario(&b);
}

/* --------------------------------------------------------- directed */

static void test_window_edges(void **state)
{
    (void)state;
    int64_t w = 90 * DAY;
    seen_policy p = policy((uint64_t)w, 4, 0, 0, SEEN_IDS_INT, 128);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    uint64_t id = 42, other = 43;
    size_t added;
    assert_int_equal(seen_add_int(s, &id, 1, NULL, T0, &added), SEEN_OK);
    assert_int_equal(added, 1);
    uint8_t seen = 0;
    assert_int_equal(seen_filter_int(s, &id, 1, T0 + w - 1, &seen), SEEN_OK);
    assert_int_equal(seen, 1);
    seen = 0;
    int64_t l = (w + 3) / 4;
    assert_int_equal(seen_filter_int(s, &id, 1, T0 + w + l, &seen), SEEN_OK);
    assert_int_equal(seen, 0);
    /* An item already older than the window is ignored. */
    int64_t old = T0 + 10 * DAY - w - l;
    assert_int_equal(seen_add_int(s, &other, 1, &old, T0 + 10 * DAY, &added), SEEN_OK);
    assert_int_equal(added, 0);
    seen = 0;
    assert_int_equal(seen_filter_int(s, &other, 1, T0 + 10 * DAY, &seen), SEEN_OK);
    assert_int_equal(seen, 0);
    /* A late event lands in its own slice: seen until its own t + W. */
    int64_t late = T0 + 10 * DAY - 80 * DAY;
    assert_int_equal(seen_add_int(s, &other, 1, &late, T0 + 10 * DAY, &added), SEEN_OK);
    assert_int_equal(added, 1);
    seen = 0;
    assert_int_equal(seen_filter_int(s, &other, 1, late + w - 1, &seen), SEEN_OK);
    assert_int_equal(seen, 1);
    seen = 0;
    assert_int_equal(seen_filter_int(s, &other, 1, late + w + l, &seen), SEEN_OK);
    assert_int_equal(seen, 0);
    /* Expiry at a later time drops everything and frees the runs. */
    assert_int_equal(seen_expire(s, T0 + 2 * w), SEEN_OK);
    assert_int_equal(seen_count(s, T0 + 2 * w), 0);
    assert_int_equal(seen__set_check(s), SEEN_OK);
    seen_free(s);
}

/* What a set reports of itself at a time no write has reached: every
 * count between what it must still see and what it may still hold, and
 * every segment it lists not yet forgotten; nothing once all is. */
static void test_reports_follow_the_clock(void **state)
{
    (void)state;
    const int64_t w = 10 * DAY, l = w / 4;
    for (int approx = 0; approx < 2; approx++) {
        seen_policy p = policy((uint64_t)w, 4, approx ? 0.001 : 0, 0, SEEN_IDS_INT, 16);
        seen_set *s;
        assert_int_equal(seen_create(&p, &s), SEEN_OK);
        /* 30 a day for 12 days, in pages of 10: runs and a head, slices
         * forgotten and not yet purged by any write. */
        enum { DAYS = 12, PER_DAY = 30 };
        int64_t at[DAYS * PER_DAY];
        uint64_t ids[DAYS * PER_DAY];
        for (size_t i = 0; i < DAYS * PER_DAY; i++) {
            ids[i] = 1000 + i;
            at[i] = T0 + (int64_t)(i / PER_DAY) * DAY + (int64_t)(i % PER_DAY) * 60000;
        }
        for (size_t i = 0; i < DAYS * PER_DAY; i += 10)
            assert_int_equal(seen_add_int(s, ids + i, 10, NULL, at[i + 9], NULL), SEEN_OK);
        const int64_t last = at[DAYS * PER_DAY - 1];
        for (int64_t q = last; q <= last + w + 2 * l; q += DAY / 2) {
            uint64_t must = 0, may = 0;
            for (size_t i = 0; i < DAYS * PER_DAY; i++) {
                must += q < at[i] + w;
                may += q < at[i] + w + l;
            }
            /* Two fingerprints that collide count once (a few pairs in
             * 360 at this error). */
            const uint64_t lowest = approx ? must - must / 50 : must;
            const uint64_t count = seen_count(s, q);
            if (count < lowest || count > may)
                fail_msg("%s set, %lld ms after the last write: counts %llu, must see %llu and may "
                         "hold %llu",
                         approx ? "approximate" : "exact", (long long)(q - last),
                         (unsigned long long)count, (unsigned long long)must,
                         (unsigned long long)may);
            seen_segment_info info[64];
            const size_t nseg = seen_segments(s, q, info, 64);
            assert_true(nseg <= 64);
            uint64_t listed = 0;
            for (size_t k = 0; k < nseg; k++) {
                assert_true(info[k].forget_ms > q);
                listed += info[k].items;
            }
            assert_int_equal(listed, count);
            if (may == 0)
                assert_int_equal(nseg, 0);
        }
        assert_int_equal(seen_count(s, last + w + 2 * l), 0);
        seen_free(s);
    }
}

static void test_idempotent(void **state)
{
    (void)state;
    rng r = {test_seed("idempotent", 21)};
    seen_policy p;
    seen_policy_default(&p);
    p.exact_limit = 16;
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    enum { N = 3000 };
    uint64_t *ids = malloc(N * sizeof *ids);
    for (size_t i = 0; i < N; i++)
        ids[i] = rng_next(&r);
    size_t added;
    assert_int_equal(add_ids(s, ids, N, NULL, T0, &added), SEEN_OK);
    assert_true(added >= N - 10 && added <= N);
    uint64_t count = seen_count(s, T0);
    for (int round = 0; round < 3; round++) {
        assert_int_equal(add_ids(s, ids, N, NULL, T0 + round, &added), SEEN_OK);
        assert_int_equal(added, 0);
        assert_int_equal(seen_count(s, T0 + round), count);
    }
    for (size_t i = 0; i < N; i += 7) {
        assert_int_equal(add_ids(s, &ids[i], 1, NULL, T0 + 5, &added), SEEN_OK);
        assert_int_equal(added, 0);
    }
    assert_int_equal(seen__set_check(s), SEEN_OK);
    free(ids);
    seen_free(s);
}

/* Time-ordered load of n string items spread over the window. */
static seen_set *load_spread(size_t n, double error, uint64_t seed, size_t batch, int64_t *now_out)
{
    seen_policy p = policy(90 * DAY, 4, error, 0, SEEN_IDS_STR, 128);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    int64_t w = 90 * DAY, start = T0 - w;
    probe_items pi;
    items_alloc(&pi, batch);
    int64_t *at = malloc(batch * sizeof *at);
    rng r = {seed};
    for (size_t i = 0; i < n; i += batch) {
        size_t k = n - i < batch ? n - i : batch;
        for (size_t j = 0; j < k; j++) {
            items_set(&pi, j, rng_next(&r));
            at[j] = start + (int64_t)((double)w * (double)(i + j) / (double)n);
        }
        assert_int_equal(seen_add_str(s, pi.strs, k, at, at[k - 1], NULL), SEEN_OK);
    }
    *now_out = start + w;
    /* A load of past history is an import: it stays exact until an expiry
     * (or a live write) settles it for what it holds. */
    assert_true(s->nruns == 0 || s->runs[0].c == 1);
    assert_int_equal(seen_expire(s, *now_out), SEEN_OK);
    items_free(&pi);
    free(at);
    return s;
}

static void measure_fpr(double error, size_t n)
{
    int64_t now;
    seen_set *s = load_spread(n, error, 31, 1000, &now);
    enum { M = 200000 };
    probe_items pi;
    items_alloc(&pi, M);
    rng r = {32};
    for (size_t i = 0; i < M; i++)
        items_set(&pi, i, rng_next(&r) | (UINT64_C(1) << 63));
    uint8_t *seen = calloc(M, 1);
    assert_int_equal(seen_filter_str(s, pi.strs, M, now, seen), SEEN_OK);
    size_t fp = 0;
    for (size_t i = 0; i < M; i++)
        fp += seen[i];
    double rate = (double)fp / M;
    fprintf(stderr, "[stat] fpr: error %.4f, %zu items: %.6f on %d fresh (bound estimate %.6f)\n",
            error, n, rate, M, seen_fpr_estimate(s));
    assert_true(rate <= 1.2 * error);
    assert_true(seen_fpr_estimate(s) <= error);
    free(seen);
    items_free(&pi);
    seen_free(s);
}

static void test_false_positive_rate(void **state)
{
    (void)state;
    measure_fpr(0.001, 100000);
    measure_fpr(0.01, 100000);
    measure_fpr(0.001, 20000);
}

static void test_bits_per_item(void **state)
{
    (void)state;
    size_t sizes[] = {10000, 100000};
    /* Bytes requested, and bytes held under Redis (jemalloc's classes).
     * One window of history is planned for the window and a slice it will
     * hold as it goes on (+0.32 bit at 4 slices, here at the low point of
     * a live set's cycle, which then does not spike as it fills).  At
     * 10,000 items the run is coded Elias-Fano, ~0.25 bit more than Rice
     * codes, for pages and sparse batches that do not decode buckets. */
    const double limit[2][2] = {{14.7, 14.4}, {15.5, 15.2}};
    for (int classes = 0; classes < 2; classes++) {
        if (classes)
            alloc_install_classes();
        for (size_t k = 0; k < 2; k++) {
            int64_t now;
            seen_set *s = load_spread(sizes[k], 0.001, 41 + k, 100, &now);
            double bits = (double)seen_bytes(s) * 8.0 / (double)sizes[k];
            fprintf(stderr, "[stat] %zu items, error 0.001, 90d/4 slices: %.3f bits per item %s\n",
                    sizes[k], bits, classes ? "held (jemalloc classes)" : "requested");
            assert_true(bits <= limit[classes][k]);
            /* No false negatives across the load. */
            assert_int_equal(seen__set_check(s), SEEN_OK);
            /* The loaded history settled into one planned run. */
            assert_int_equal(s->nruns, 1);
            s = roundtrip(s);
            assert_int_equal(seen__set_check(s), SEEN_OK);
            seen_free(s);
        }
        seen_set_allocator(NULL);
    }
}

/* Imports a history of n items over `days` days ending at T0, in `batches`
 * batches at one `now` (T0), in time order (0), reverse (1) or random (2). */
static seen_set *import_history(size_t n, int64_t days, size_t batches, int order, rng *r)
{
    seen_policy p = policy(90 * DAY, 4, 0.001, 0, SEEN_IDS_STR, 128);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    int64_t *at = malloc(n * sizeof *at);
    size_t *perm = malloc(n * sizeof *perm);
    for (size_t i = 0; i < n; i++) {
        at[i] = T0 - days * DAY + (int64_t)((double)(days * DAY) * (double)i / (double)n);
        perm[i] = order == 1 ? n - 1 - i : i;
    }
    for (size_t i = n; order == 2 && i > 1; i--) {
        size_t j = rng_next(r) % i, t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
    size_t per = n / batches;
    probe_items pi;
    items_alloc(&pi, per);
    int64_t *bat = malloc(per * sizeof *bat);
    for (size_t b = 0; b < batches; b++) {
        for (size_t j = 0; j < per; j++) {
            items_set(&pi, j, perm[b * per + j] * 7919 + 1);
            bat[j] = at[perm[b * per + j]];
        }
        assert_int_equal(seen_add_str(s, pi.strs, per, bat, T0, NULL), SEEN_OK);
        assert_int_equal(seen__set_check(s), SEEN_OK);
        /* Every state of an import loads back. */
        s = roundtrip(s);
    }
    items_free(&pi);
    free(bat);
    free(perm);
    free(at);
    return s;
}

static void test_import_at_one_now(void **state)
{
    (void)state;
    /* Migrating a history through Redis: every batch arrives at the
     * server's present `now`, with item times spread over the past, in any
     * order and over any span.  The import is stored exactly while it runs
     * (its size is unknown); the expiry (or live write) after it settles
     * the set as compactly as a history written live. */
    rng r = {test_seed("import", 81)};
    struct {
        size_t n;
        int64_t days;
        int order;
        bool live_write;
    } cases[] = {{10000, 90, 0, false},  {100000, 90, 0, false}, {20000, 150, 0, false},
                 {20000, 150, 1, false}, {20000, 150, 2, true},  {20000, 270, 2, false},
                 {20000, 400, 1, true}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t n = cases[k].n;
        seen_set *s = import_history(n, cases[k].days, 20, cases[k].order, &r);
        for (uint32_t i = 0; i < s->nruns; i++)
            assert_int_equal(s->runs[i].c, 1);
        /* How long the import has been idle is the host's to judge; an
         * import waiting to settle is work for it now. */
        assert_int_equal(seen_last_write_at(s), T0);
        assert_int_equal(seen_last_write_at(NULL), 0);
        assert_true(seen_idle_work_at(s) == INT64_MIN);
        if (cases[k].live_write) {
            seen_str one = {"live", 4};
            assert_int_equal(seen_add_str(s, &one, 1, NULL, T0, NULL), SEEN_OK);
        } else {
            assert_int_equal(seen_expire(s, T0), SEEN_OK);
        }
        s = roundtrip(s);
        double bits = (double)seen_bytes(s) * 8.0 / (double)seen_count(s, T0);
        fprintf(stderr,
                "[stat] import of %zu items over %lld days (order %d) at one now: %u runs, "
                "%.2f bits per item\n",
                n, (long long)cases[k].days, cases[k].order, s->nruns, bits);
        assert_true(bits <= 15.0);
        assert_true(s->nruns <= 3);
        assert_int_equal(seen__set_check(s), SEEN_OK);
        /* Everything imported inside the window is still seen. */
        probe_items pi;
        items_alloc(&pi, n);
        for (size_t i = 0; i < n; i++)
            items_set(&pi, i, i * 7919 + 1);
        uint8_t *seen = calloc(n, 1);
        assert_int_equal(seen_filter_str(s, pi.strs, n, T0, seen), SEEN_OK);
        for (size_t i = 0; i < n; i++) {
            int64_t t = T0 - cases[k].days * DAY +
                        (int64_t)((double)(cases[k].days * DAY) * (double)i / (double)n);
            if (t > T0 - 90 * DAY)
                assert_true(seen[i]);
        }
        free(seen);
        items_free(&pi);
        seen_free(s);
    }
}

/* A light user turned heavy past its first slice: 30 items a day for 40
 * days, then 3,000 a day, pages of 20 at the clock.  The plan, sized for
 * the slow past, grows behind the burst; the burst's runs must leave the
 * budget the plan still expects (they took it a run at a time, each next
 * one finer: 20.4 bits per item here, and in Redis 29.6 with the last
 * 14,000 items exact). */
/* A light user: a page of 10 every 9 days (jittered), ~110 items held.
 * Each page used to move the plan by a fraction and start a run of its
 * own divisor (2-5 of them, 24 bits per held item on average); a set this
 * small re-plans by whole factors, so its runs fold and it stays in one or
 * two.  Serialized bits per held item from day 100 on. */
static void test_light_user_keeps_few_runs(void **state)
{
    (void)state;
    rng r = {test_seed("light-pages", 11)};
    seen_policy p;
    seen_policy_default(&p);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    enum { PAGE = 10 };
    char ids[PAGE][24];
    seen_str page[PAGE];
    double sum = 0;
    int samples = 0;
    uint32_t most_runs = 0;
    size_t k = 0;
    for (int64_t now = T0; now < T0 + 250 * DAY; k++) {
        for (size_t i = 0; i < PAGE; i++) {
            snprintf(ids[i], sizeof ids[i], "l%zu-%zu", k, i);
            page[i] = (seen_str){ids[i], strlen(ids[i])};
        }
        assert_int_equal(seen_add_str(s, page, PAGE, NULL, now, NULL), SEEN_OK);
        assert_int_equal(seen_expire(s, now), SEEN_OK);
        assert_int_equal(seen__set_check(s), SEEN_OK);
        if (now - T0 > 100 * DAY) {
            sum += (double)seen_serialized_size(s) * 8.0 / (double)seen_count(s, now);
            samples++;
            most_runs = s->nruns > most_runs ? s->nruns : most_runs;
        }
        now += (int64_t)(9.0 * (double)DAY * (0.5 + (double)rng_below(&r, 1000) / 1000.0));
    }
    s = roundtrip(s);
    fprintf(stderr,
            "[stat] light user, 10 every 9 days: %.1f bits per held item, %u runs at most\n",
            sum / samples, most_runs);
    assert_true(most_runs <= 2);
    assert_true(sum / samples < 23.0);
    seen_free(s);
}

/* Page k of a user's pages of 20: items "<tag><k>-<i>". */
enum { USER_PAGE = 20 };
typedef struct user_page {
    char ids[USER_PAGE][24];
    seen_str items[USER_PAGE];
} user_page;

static const seen_str *user_page_items(user_page *pg, char tag, size_t k)
{
    for (size_t i = 0; i < USER_PAGE; i++) {
        snprintf(pg->ids[i], sizeof pg->ids[i], "%c%zu-%zu", tag, k, i);
        pg->items[i] = (seen_str){pg->ids[i], strlen(pg->ids[i])};
    }
    return pg->items;
}

/* Every item of pages [from, to) is seen at `now`. */
static void assert_user_pages_seen(const seen_set *s, char tag, size_t from, size_t to, int64_t now)
{
    user_page pg;
    for (size_t k = from; k < to; k++) {
        uint8_t seen[USER_PAGE];
        assert_int_equal(seen_filter_str(s, user_page_items(&pg, tag, k), USER_PAGE, now, seen),
                         SEEN_OK);
        for (size_t i = 0; i < USER_PAGE; i++)
            assert_int_equal(seen[i], 1);
    }
}

static void test_light_user_turning_heavy(void **state)
{
    (void)state;
    seen_policy p;
    seen_policy_default(&p);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    enum { PAGES = 2000 };
    user_page pg;
    double day = 0;
    int64_t now = T0;
    for (size_t k = 0; k < PAGES; k++) {
        day += (double)USER_PAGE / (day < 40 ? 30.0 : 3000.0);
        now = T0 + (int64_t)(day * (double)DAY);
        assert_int_equal(seen_add_str(s, user_page_items(&pg, 'h', k), USER_PAGE, NULL, now, NULL),
                         SEEN_OK);
    }
    assert_int_equal(seen__set_check(s), SEEN_OK);
    s = roundtrip(s); /* the state loads back */
    uint64_t held = seen_count(s, now);
    double bits = (double)seen_bytes(s) * 8.0 / (double)held;
    fprintf(stderr, "[stat] light user turned heavy: %llu items, %.2f bits per item, %u runs\n",
            (unsigned long long)held, bits, s->nruns);
    assert_true(bits < 18.5);
    assert_true(seen_fpr_estimate(s) <= 0.001);
    /* Every item of the burst is still seen. */
    assert_user_pages_seen(s, 'h', PAGES - 700, PAGES, now);
    seen_free(s);
}

/* A user whose rate doubles every two weeks for months (50 a day at first,
 * ~15,000 by day 115), in pages at their times.  Planned for what it held,
 * each flush squeezed the new items into the budget left until they went
 * in as exact keys (here from day 90 on).
 * Planned for the peak the newest data's rate projects, no run is exact
 * and from day 30 on the set stays under 20 bits per held item. */
static void test_growing_user_keeps_fingerprints(void **state)
{
    (void)state;
    seen_policy p;
    seen_policy_default(&p);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    enum { DAYS = 115 };
    user_page pg;
    double owed = 0, worst = 0;
    size_t k = 0;
    int64_t now = T0;
    for (int d = 0; d < DAYS; d++) {
        owed += 50.0 * exp2((double)d / 14.0);
        int pages = (int)(owed / USER_PAGE);
        owed -= pages * USER_PAGE;
        for (int j = 0; j < pages; j++, k++) {
            now = T0 + (int64_t)d * DAY + (int64_t)j * (DAY / (pages + 1));
            assert_int_equal(
                seen_add_str(s, user_page_items(&pg, 'g', k), USER_PAGE, NULL, now, NULL), SEEN_OK);
        }
        for (uint32_t r = 0; r < s->nruns; r++)
            if (s->runs[r].c == 1)
                fail_msg("day %d: a run of %u exact keys", d, s->runs[r].n);
        const double bits = (double)seen_bytes(s) * 8.0 / (double)seen_count(s, now);
        if (d >= 30 && bits > worst)
            worst = bits;
    }
    assert_int_equal(seen__set_check(s), SEEN_OK);
    s = roundtrip(s); /* the state loads back */
    fprintf(stderr,
            "[stat] doubling every two weeks: %zu items written, worst %.1f bits per held item "
            "from day 30, %u runs at the end\n",
            k * USER_PAGE, worst, s->nruns);
    assert_true(worst < 20.0);
    assert_true(seen_fpr_estimate(s) <= 0.001);
    assert_user_pages_seen(s, 'g', k - 20, k, now); /* the newest pages */
    seen_free(s);
}

/* Pages of 20 fresh items, `per_day` a day from day `from` to `to`, at
 * their times, into s; `tag` keeps each caller's ids apart.  Returns the
 * mean, over the days from `judge_from`, of serialized bits per item held. */
static double write_days(seen_set *s, char tag, double per_day, int from, int to, int judge_from)
{
    enum { PAGE = 20 };
    char ids[PAGE][24];
    seen_str page[PAGE];
    double owed = 0, sum = 0;
    int samples = 0;
    size_t k = 0;
    for (int d = from; d <= to; d++) {
        owed += per_day;
        int pages = (int)(owed / PAGE);
        owed -= pages * PAGE;
        for (int j = 0; j < pages; j++, k++) {
            int64_t now = T0 + (int64_t)d * DAY + (int64_t)j * (DAY / (pages + 1));
            for (size_t i = 0; i < PAGE; i++) {
                snprintf(ids[i], sizeof ids[i], "%c%zu-%zu", tag, k, i);
                page[i] = (seen_str){ids[i], strlen(ids[i])};
            }
            assert_int_equal(seen_add_str(s, page, PAGE, NULL, now, NULL), SEEN_OK);
        }
        int64_t end = T0 + (int64_t)(d + 1) * DAY - 1;
        if (d >= judge_from) {
            sum += (double)seen_serialized_size(s) * 8.0 / (double)seen_count(s, end);
            samples++;
        }
    }
    return samples ? sum / samples : 0;
}

/* A bulk load: 10,000 items at one time into a new key (a migrated SET,
 * whose members have no times).  It showed no rate, so it is planned a
 * few times ahead, not as a window at 10,000 a day (18.8 bits an item).
 * A user who then writes nine times the load over the window holds its
 * first window's runs beside the load's share of the budget: 0.4 bit an
 * item more than a twin without the load until those runs are forgotten,
 * as when the load was planned 112 times ahead (14.84 against 14.45). */
static void test_bulk_load_plans_for_what_it_holds(void **state)
{
    (void)state;
    enum { BULK = 10000 };
    seen_policy p;
    seen_policy_default(&p);
    seen_set *s, *twin;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    assert_int_equal(seen_create(&p, &twin), SEEN_OK);
    static char ids[BULK][16];
    static seen_str items[BULK];
    for (size_t i = 0; i < BULK; i++) {
        snprintf(ids[i], sizeof ids[i], "m%zu", i);
        items[i] = (seen_str){ids[i], strlen(ids[i])};
    }
    assert_int_equal(seen_add_str(s, items, BULK, NULL, T0, NULL), SEEN_OK);
    s = roundtrip(s);
    double bulk_bits = (double)seen_serialized_size(s) * 8.0 / BULK;
    /* Every item of the load is seen to the end of the window. */
    uint8_t *seen = calloc(BULK, 1);
    assert_non_null(seen);
    assert_int_equal(seen_filter_str(s, items, BULK, T0 + 90 * DAY - 1, seen), SEEN_OK);
    for (size_t i = 0; i < BULK; i++)
        assert_int_equal(seen[i], 1);
    free(seen);
    double later = write_days(s, 'a', 1000, 1, 250, 120);
    double alone = write_days(twin, 'a', 1000, 1, 250, 120);
    assert_int_equal(seen__set_check(s), SEEN_OK);
    s = roundtrip(s);
    fprintf(stderr,
            "[stat] bulk of %d at one time: %.1f bits an item; then 1,000 a day: %.2f bits "
            "per held item from day 120, %.2f without the bulk\n",
            BULK, bulk_bits, later, alone);
    assert_true(bulk_bits < 15.5);
    assert_true(later < alone + 0.5);
    assert_true(seen_fpr_estimate(s) <= 0.001);
    seen_free(s);
    seen_free(twin);
}

/* Capped sets: re-adds empty old count steps, and a batch far larger than
 * the cap fills and drops a step every few items.  The segment table stays
 * small, every state loads back, and a large batch costs time linear in
 * its size (this test is bounded by the harness's time, not timed). */
/* A light user's history (100 items over the window), then a burst of
 * 20,000 fresh items in pages of 20 within seconds: the set outgrows its
 * plan a hundredfold.  Every write must be taken (the budget's accounting
 * of runs coarsened back toward the plan once counted an exact run's
 * coarsening at half its cost, and the flush then refused the write as
 * over the budget), and the set must stay loadable with no false
 * negatives. */
static void test_burst_after_small_history(void **state)
{
    (void)state;
    /* Whether a step lands where the bug showed depends on the ids: try
     * several histories and id ranges. */
    double worst = 0;
    for (uint64_t v = 0; v < 16; v++) {
        seen_policy p;
        seen_policy_default(&p);
        seen_set *s;
        assert_int_equal(seen_create(&p, &s), SEEN_OK);
        enum { BURST = 12000, PAGE = 20 };
        size_t hist = 30 + 10 * (size_t)v;
        uint64_t base = v << 32;
        uint64_t ids[200];
        int64_t at[200];
        for (size_t i = 0; i < hist; i++) {
            ids[i] = base + i;
            at[i] = T0 - 90 * DAY + (int64_t)i * (90 * DAY / (int64_t)hist);
        }
        assert_int_equal(add_ids(s, ids, hist, at, T0, NULL), SEEN_OK);
        assert_int_equal(seen_expire(s, T0), SEEN_OK);
        int64_t now = T0 + 1000;
        for (uint64_t k = 0; k < BURST; k += PAGE, now++) {
            uint64_t page[PAGE];
            for (size_t i = 0; i < PAGE; i++)
                page[i] = base + 1000 + k + i;
            seen_err err = add_ids(s, page, PAGE, NULL, now, NULL);
            if (err != SEEN_OK)
                fail_msg("history %zu, burst item %llu: %s", hist, (unsigned long long)k,
                         seen_strerror(err));
            if (k % 4000 == 0) {
                assert_int_equal(seen__set_check(s), SEEN_OK);
                s = roundtrip(s);
            }
        }
        uint64_t *all = malloc((hist + BURST) * sizeof *all);
        uint8_t *seen = malloc(hist + BURST);
        for (size_t i = 0; i < hist; i++)
            all[i] = base + i;
        for (size_t i = 0; i < BURST; i++)
            all[hist + i] = base + 1000 + i;
        assert_int_equal(filter_ids(s, all, hist + BURST, now, seen), SEEN_OK);
        for (size_t i = 0; i < hist + BURST; i++)
            if (!seen[i])
                fail_msg("false negative: id %llu", (unsigned long long)all[i]);
        double bits = (double)seen_bytes(s) * 8 / (double)(hist + BURST);
        if (bits > worst)
            worst = bits;
        free(all);
        free(seen);
        seen_free(s);
    }
    /* The history's runs hold most of the budget.  Each run the burst
     * makes is sized for the set to grow four times over, and runs squeezed
     * finer are not coarsened back while the burst lasts, so each doubling
     * spends about a quarter of the budget left: 27 bits per item at
     * worst.  Sized for the items the plan still expected, the runs took
     * the budget in a few flushes (52 bits, mostly exact keys); sized for
     * one doubling, with squeezed runs coarsened back, all of it by the
     * time the set had doubled (44). */
    fprintf(stderr, "[stat] bursts of 12,000 after 30-180 items: worst %.1f bits per item\n",
            worst);
    assert_true(worst <= 30);
}

static void test_capped_segments_bounded(void **state)
{
    (void)state;
    /* Two items added in turn into CAPACITY 64 SLICES 64. */
    seen_policy p = policy(0, 64, 0.001, 64, SEEN_IDS_STR, 128);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    for (int i = 0; i < 20000; i++) {
        seen_str it = {i % 2 ? "A" : "B", 1};
        assert_int_equal(seen_add_str(s, &it, 1, NULL, T0 + i, NULL), SEEN_OK);
        assert_true(s->nsegs <= SEEN_SEGMENTS_SOFT(64) + 1);
        if (i % 2500 == 0) {
            assert_int_equal(seen__set_check(s), SEEN_OK);
            s = roundtrip(s);
        }
    }
    assert_int_equal(seen_count(s, T0 + 20000), 2);
    assert_true(seen_bytes(s) < 2048);
    seen_free(s);

    /* An exact INT set: 127 old ids and one new one per add, past the
     * cap of 8192 (each add leaves one item in its own step). */
    p = policy(0, 64, 0, 8192, SEEN_IDS_INT, 128);
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    uint64_t ids[128];
    for (int i = 0; i < 128; i++)
        ids[i] = (uint64_t)i;
    assert_int_equal(seen_add_int(s, ids, 128, NULL, T0, NULL), SEEN_OK);
    for (int k = 0; k < 9000; k++) {
        for (int i = 0; i < 127; i++)
            ids[i] = (uint64_t)i + 1;
        ids[127] = 1000 + (uint64_t)k;
        assert_int_equal(seen_add_int(s, ids, 128, NULL, T0 + k, NULL), SEEN_OK);
        assert_true(s->nsegs <= SEEN_SEGMENTS_SOFT(64) + 2);
        if (k % 1500 == 0) {
            assert_int_equal(seen__set_check(s), SEEN_OK);
            s = roundtrip(s);
        }
    }
    /* The newest 8192 are kept: 1..127 and the last ids added. */
    uint8_t seen[2] = {0, 0};
    uint64_t probe[2] = {1, 1000 + 8999};
    assert_int_equal(seen_filter_int(s, probe, 2, T0 + 9000, seen), SEEN_OK);
    assert_true(seen[0] && seen[1]);
    seen_free(s);

    /* 200,000 items in one batch into small caps. */
    enum { N = 200000 };
    probe_items pi;
    items_alloc(&pi, N);
    for (size_t i = 0; i < N; i++)
        items_set(&pi, i, i * 2654435761u + 7);
    const uint64_t caps[][2] = {{10, 64}, {100, 4}, {1, 1}, {1000, 16}};
    for (size_t c = 0; c < 4; c++) {
        p = policy(c == 3 ? 30 * DAY : 0, (uint32_t)caps[c][1], 0.001, caps[c][0], SEEN_IDS_STR,
                   128);
        assert_int_equal(seen_create(&p, &s), SEEN_OK);
        assert_int_equal(seen_add_str(s, pi.strs, N, NULL, T0, NULL), SEEN_OK);
        uint64_t n = seen_count(s, T0);
        assert_true(n >= caps[c][0] &&
                    n <= caps[c][0] + (caps[c][0] + caps[c][1] - 1) / caps[c][1]);
        /* The last item of the batch is among those kept. */
        uint8_t last = 0;
        assert_int_equal(seen_filter_str(s, &pi.strs[N - 1], 1, T0, &last), SEEN_OK);
        assert_true(last);
        assert_int_equal(seen__set_check(s), SEEN_OK);
        s = roundtrip(s);
        seen_free(s);
    }
    items_free(&pi);
}

/* States the loader accepts at the edge of its limits must take further
 * writes and still load back: the set is edited in place, then goes
 * through the serialized form, so the loader's checks see it. */
static seen_set *load_patched(seen_set *s, void (*patch)(seen_set *))
{
    patch(s);
    size_t len;
    uint8_t *b = snapshot(s, &len);
    seen_set *t = NULL;
    assert_int_equal(seen_deserialize(b, len, &t), SEEN_OK);
    free(b);
    seen_free(s);
    return t;
}

static void patch_last_seq(seen_set *s)
{
    s->segs[s->nsegs - 1].seq = SEEN_MAX_SEQ;
}

static void patch_future_clock(seen_set *s)
{
    s->clock = SEEN_MAX_TIME_MS;
}

static void patch_all_shadow(seen_set *s)
{
    for (uint32_t i = 0; i < s->nsegs; i++)
        s->segs[i].shadow = s->segs[i].phys;
}

static void patch_near_id_limit(seen_set *s)
{
    s->next_seg_id = SEEN_SEG_ID_LIMIT - 3;
}

static uint8_t *read_fixture(const char *name, size_t *len)
{
    char path[256];
    snprintf(path, sizeof path, "tests/unit/data/%s", name);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        fail_msg("cannot open %s (run from the repository's root)", path);
    uint8_t *b = malloc(1 << 16);
    *len = fread(b, 1, 1 << 16, f);
    fclose(f);
    return b;
}

/* Sets written by format version 1 (fixed-width fields) load, answer as
 * they did, and are written back as version 4, which loads to the same
 * bytes; version 4 is smaller. */
static void test_loads_version_1(void **state)
{
    (void)state;
    const int64_t t0 = 1790000000000LL;
    const char *names[2] = {"v1_window.bin", "v1_capped.bin"};
    for (int k = 0; k < 2; k++) {
        size_t len;
        uint8_t *v1 = read_fixture(names[k], &len);
        assert_int_equal(v1[4], 1);
        seen_set *s = NULL;
        assert_int_equal(seen_deserialize(v1, len, &s), SEEN_OK);
        assert_int_equal(seen__set_check(s), SEEN_OK);
        if (k == 0) {
            /* 5,000 items "v<i>" over 100 days, 90-day window: at day 100
             * those of the last 80 days are seen. */
            int64_t now = t0 + 100 * DAY;
            for (int i = 1000; i < 5000; i++) {
                char buf[16];
                seen_str it = {buf, (size_t)snprintf(buf, sizeof buf, "v%d", i)};
                uint8_t f = 0;
                assert_int_equal(seen_filter_str(s, &it, 1, now, &f), SEEN_OK);
                assert_int_equal(f, 1);
            }
        } else {
            /* Exact ints 0..999, CAPACITY 600: the newest 600 are kept. */
            for (uint64_t i = 0; i < 1000; i++) {
                uint8_t f = 0;
                assert_int_equal(seen_filter_int(s, &i, 1, t0 + 1000, &f), SEEN_OK);
                if (i >= 400)
                    assert_int_equal(f, 1);
            }
        }
        size_t len4;
        uint8_t *v4 = snapshot(s, &len4);
        /* Written as version 4, or 5 for a capped set (segment ranges). */
        assert_int_equal(v4[4], seen_get_policy(s)->capacity ? 5 : 4);
        fprintf(stderr, "[stat] %s: %zu bytes in version 1, %zu in version 4\n", names[k], len,
                len4);
        assert_true(len4 < len);
        s = roundtrip(s);
        free(v4);
        free(v1);
        seen_free(s);
    }
}

static void test_loaded_edges_take_writes(void **state)
{
    (void)state;
    /* The newest count step at the largest sequence number. */
    seen_policy p = policy(0, 4, 0.01, 100, SEEN_IDS_INT, 16);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    uint64_t id;
    for (id = 0; id < 60; id++)
        assert_int_equal(seen_add_int(s, &id, 1, NULL, T0, NULL), SEEN_OK);
    s = load_patched(s, patch_last_seq);
    for (; id < 400; id++) {
        assert_int_equal(seen_add_int(s, &id, 1, NULL, T0 + (int64_t)id, NULL), SEEN_OK);
        assert_int_equal(seen__set_check(s), SEEN_OK);
        s = roundtrip(s);
    }
    seen_free(s);

    /* A clock from the future must not make writes at the present purge
     * or ignore what is alive now. */
    p = policy(90 * DAY, 4, 0.01, 0, SEEN_IDS_INT, 16);
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    for (id = 0; id < 500; id++)
        assert_int_equal(seen_add_int(s, &id, 1, NULL, T0, NULL), SEEN_OK);
    s = load_patched(s, patch_future_clock);
    for (; id < 1500; id++)
        assert_int_equal(seen_add_int(s, &id, 1, NULL, T0 + DAY, NULL), SEEN_OK);
    s = roundtrip(s);
    for (id = 0; id < 1500; id++) {
        uint8_t f = 0;
        assert_int_equal(seen_filter_int(s, &id, 1, T0 + DAY, &f), SEEN_OK);
        assert_int_equal(f, 1);
    }
    seen_free(s);

    /* Counts claiming every entry is a shadow: planning must still fit the
     * budget of what is stored when the next flush merges it. */
    p = policy(0, 1, 0.001, 0, SEEN_IDS_INT, 16);
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    for (id = 0; id < 3000; id += 100) {
        uint64_t batch[100];
        for (int i = 0; i < 100; i++)
            batch[i] = id + (uint64_t)i;
        assert_int_equal(seen_add_int(s, batch, 100, NULL, T0, NULL), SEEN_OK);
    }
    s = load_patched(s, patch_all_shadow);
    for (; id < 20000; id++) {
        assert_int_equal(seen_add_int(s, &id, 1, NULL, T0, NULL), SEEN_OK);
        if (id % 1000 == 0) {
            assert_int_equal(seen__set_check(s), SEEN_OK);
            s = roundtrip(s);
        }
    }
    assert_true(seen_fpr_estimate(s) <= 0.001);
    seen_free(s);
}

/* Seconds of CPU for one call of add (or remove, if `remove`) of items
 * [0, n) into a fresh set of policy p that first holds `held` items. */
static double time_write(const seen_policy *p, const probe_items *pi, size_t held, size_t n,
                         bool remove)
{
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        seen_set *s;
        assert_int_equal(seen_create(p, &s), SEEN_OK);
        if (held)
            assert_int_equal(seen_add_str(s, pi->strs + n, held, NULL, T0, NULL), SEEN_OK);
        clock_t t0 = clock();
        size_t k;
        if (remove)
            assert_int_equal(seen_remove_str(s, pi->strs + n, n, T0 + 1, &k), SEEN_OK);
        else
            assert_int_equal(seen_add_str(s, pi->strs, n, NULL, T0 + 1, &k), SEEN_OK);
        double t = (double)(clock() - t0) / CLOCKS_PER_SEC;
        best = t < best ? t : best;
        seen_free(s);
    }
    return best;
}

/* A page reserves head room for all its items; when some of them are held
 * already (not pushed), the block is trimmed to what a loaded set holds:
 * after each page the set's bytes equal its reloaded copy's (roundtrip). */
static void test_page_head_matches_loaded(void **state)
{
    (void)state;
    seen_policy p;
    seen_policy_default(&p);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    enum { HELD = 20000, PAGES = 60 };
    probe_items pi;
    items_alloc(&pi, HELD + PAGES * 20);
    for (size_t i = 0; i < HELD + PAGES * 20; i++)
        items_set(&pi, i, i * 0x9e3779b97f4a7c15u + 3);
    for (size_t i = 0; i < HELD; i += 20)
        assert_int_equal(seen_add_str(s, pi.strs + i, 20, NULL, T0 + (int64_t)i * 1000, NULL),
                         SEEN_OK);
    for (size_t k = 0; k < PAGES; k++) {
        /* Six items held already, fourteen new: the head (a few dozen
         * entries at this size) takes the page without a flush. */
        seen_str page[20];
        for (size_t j = 0; j < 20; j++)
            page[j] = j < 6 ? pi.strs[k * 7 + j] : pi.strs[HELD + k * 20 + j];
        size_t added;
        assert_int_equal(seen_add_str(s, page, 20, NULL, T0 + 20000000 + (int64_t)k * 1000, &added),
                         SEEN_OK);
        assert_true(added >= 12 && added <= 14); /* a fingerprint may collide */
        s = roundtrip(s);
    }
    items_free(&pi);
    seen_free(s);
}

/* The slice a run's newest segment belongs to, and whether the run holds
 * several slices. */
static int64_t run_newest_slice(const seen_set *s, const seen__run *r, bool *several)
{
    const uint32_t *ids = (const uint32_t *)(const void *)r->mem;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (uint32_t t = 0; t < r->nsegs; t++)
        for (uint32_t k = 0; k < s->nsegs; k++)
            if (s->segs[k].id == ids[t]) {
                lo = s->segs[k].slice < lo ? s->segs[k].slice : lo;
                hi = s->segs[k].slice > hi ? s->segs[k].slice : hi;
            }
    *several = lo < hi;
    return hi;
}

/* Three 90-day windows ending at `end`, each win[w][0..n) imported in
 * batches of 100 spread over its window and settled before the next (n a
 * multiple of 100). */
static void import_windows(seen_set *s, const seen_str *const win[3], size_t n, int64_t end)
{
    const int64_t window = 90 * DAY;
    int64_t at[100];
    for (int w = 0; w < 3; w++) {
        const int64_t w_end = end - (2 - w) * window;
        for (size_t i = 0; i < n; i += 100) {
            for (size_t j = 0; j < 100; j++)
                at[j] = w_end - window + (int64_t)((double)window * (double)(i + j) / (double)n);
            assert_int_equal(seen_add_str(s, win[w] + i, 100, at, at[99], NULL), SEEN_OK);
        }
        assert_int_equal(seen_expire(s, w_end), SEEN_OK);
    }
}

/* Imports settle into runs holding several slices each: here three
 * windows of history, each imported and settled in turn (the second half
 * of the items twice, as `make bench-core`'s steady set is built).  Live
 * adds that follow, within one slice, go to runs of their own: none of
 * the settled runs holding ended slices takes them (each merge into one
 * would write all its tags again), and every item stays seen. */
static void test_live_adds_after_import(void **state)
{
    (void)state;
    seen_policy p;
    seen_policy_default(&p);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    enum { N = 10000, ADDS = 1500 };
    const int64_t window = 90 * DAY, end = T0 + 3 * window;
    probe_items pi;
    items_alloc(&pi, 2 * N + ADDS);
    for (size_t i = 0; i < 2 * N + ADDS; i++)
        items_set(&pi, i, i * 0x9e3779b97f4a7c15u + 7);
    const seen_str *win[3] = {pi.strs + N, pi.strs, pi.strs + N};
    import_windows(s, win, N, end);
    /* The settled runs that hold an ended slice and others. */
    const int64_t step = window / N;
    /* Times here are past the origin: a slice is a plain quotient. */
    const int64_t slice = (end + step - s->origin) / (int64_t)s->slice_ms;
    uint32_t mixed = 0;
    for (uint32_t i = 0; i < s->nruns; i++) {
        bool several;
        run_newest_slice(s, &s->runs[i], &several);
        mixed += several;
    }
    assert_true(mixed > 0); /* the state this test is about */
    size_t added = 0;
    for (size_t i = 0; i < ADDS; i++) {
        int64_t t = end + step * (int64_t)(i + 1);
        if ((t - s->origin) / (int64_t)s->slice_ms != slice)
            break; /* a slice that ends folds runs: another path */
        assert_int_equal(seen_add_str(s, pi.strs + 2 * N + i, 1, NULL, t, NULL), SEEN_OK);
        added++;
        for (uint32_t r = 0; r < s->nruns; r++) {
            bool several;
            int64_t newest = run_newest_slice(s, &s->runs[r], &several);
            /* A run holding ended slices and the current one would be a
             * settled run that took the head. */
            assert_false(several && newest == slice && s->runs[r].n > SEEN_SINGLE_RUN_MAX);
        }
    }
    assert_true(added > 100);
    assert_int_equal(seen__set_check(s), SEEN_OK);
    s = roundtrip(s);
    uint8_t *seen = malloc(added);
    assert_int_equal(seen_filter_str(s, pi.strs + 2 * N, added, end + step * (int64_t)added, seen),
                     SEEN_OK);
    for (size_t i = 0; i < added; i++)
        assert_int_equal(seen[i], 1);
    free(seen);
    items_free(&pi);
    seen_free(s);
}

/* A key written live from its first day keeps runs planned while it was
 * small (its first days' and its young plan's).  Once it holds
 * SEEN_EF_LARGE_SET values those are recoded Elias-Fano (every add probes
 * every run), and every item stays seen, through a reload too. */
static void test_large_set_recodes_small_plans_runs(void **state)
{
    (void)state;
    seen_policy p;
    seen_policy_default(&p);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    enum {
        PAGE = 20,
        PER_DAY = 2 * SEEN_EF_LARGE_SET / 60,
        N = 2 * SEEN_EF_LARGE_SET / PAGE * PAGE
    };
    probe_items pi;
    items_alloc(&pi, N);
    for (size_t i = 0; i < N; i++)
        items_set(&pi, i, i * 0x9e3779b97f4a7c15u + 7);
    const int64_t step = DAY * PAGE / PER_DAY;
    bool golomb_while_small = false, recoded = false;
    int64_t now = T0;
    for (size_t i = 0; i < N; i += PAGE, now += step) {
        assert_int_equal(seen_add_str(s, pi.strs + i, PAGE, NULL, now, NULL), SEEN_OK);
        uint64_t stored = 0;
        for (uint32_t r = 0; r < s->nruns; r++)
            stored += s->runs[r].n;
        for (uint32_t r = 0; r < s->nruns; r++) {
            const seen__run *run = &s->runs[r];
            bool wanted =
                run->c > 1 && seen__ef_wanted(run->c, run->n, run->span, SEEN_RUN_IN_LARGE_SET);
            if (!wanted)
                continue;
            if (stored < SEEN_EF_LARGE_SET) {
                golomb_while_small |= !seen__run_is_ef(run);
            } else if (stored >= SEEN_EF_LARGE_SET + 2 * SEEN_HEAD_MAX) {
                /* The flush that saw the set this large recoded it. */
                assert_true(seen__run_is_ef(run));
                recoded |= run->n < SEEN_EF_MIN_RUN;
            }
        }
    }
    assert_true(golomb_while_small);
    assert_true(recoded);
    assert_int_equal(seen__set_check(s), SEEN_OK);
    for (int pass = 0; pass < 2; pass++) {
        uint8_t *seen = calloc(N, 1);
        assert_int_equal(seen_filter_str(s, pi.strs, N, now, seen), SEEN_OK);
        for (size_t i = 0; i < N; i++)
            assert_int_equal(seen[i], 1);
        free(seen);
        s = roundtrip(s);
    }
    items_free(&pi);
    seen_free(s);
}

/* The run taking the head is Golomb-coded below `least` values and
 * Elias-Fano from there, where its values' spread allows Elias-Fano;
 * notes which of the two it was. */
static void check_head_run_layout(const seen__run *run, size_t least, bool *golomb_seen,
                                  bool *ef_seen)
{
    if (run->n < least) {
        assert_false(seen__run_is_ef(run));
        *golomb_seen = true;
    } else if (seen__ef_low_bits(run->n, run->span) <= SEEN_EF_MAX_LOW_BITS) {
        assert_true(seen__run_is_ef(run));
        *ef_seen = true;
    }
}

/* The run that takes the head, in a set past its first window: Golomb
 * while small, Elias-Fano once it holds SEEN_EF_MIN_HEAD_RUN values
 * (SEEN_EF_MIN_LARGE_SET_RUN in a set this large; every add probes it),
 * flushed into and deleted from in place from then on.  The items it took
 * stay seen, through a reload too. */
static void test_head_run_turns_elias_fano(void **state)
{
    (void)state;
    seen_policy p;
    seen_policy_default(&p);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    /* A slice of N / 4 items leaves room for the run to pass the mark. */
    enum { N = 8 * SEEN_EF_MIN_HEAD_RUN, ADDS = SEEN_EF_MIN_HEAD_RUN + SEEN_EF_MIN_HEAD_RUN / 2 };
    const int64_t window = 90 * DAY, end = T0 + 3 * window;
    probe_items pi;
    items_alloc(&pi, N + ADDS);
    for (size_t i = 0; i < N + ADDS; i++)
        items_set(&pi, i, i * 0x9e3779b97f4a7c15u + 11);
    const seen_str *win[3] = {pi.strs, pi.strs, pi.strs};
    import_windows(s, win, N, end);
    /* Adds from the start of the next slice, at the set's rate. */
    const int64_t step = window / N;
    const int64_t t0 = s->origin + ((end - s->origin) / (int64_t)s->slice_ms + 1) * s->slice_ms;
    const int64_t slice = (t0 - s->origin) / (int64_t)s->slice_ms;
    bool golomb_seen = false, ef_seen = false;
    for (size_t i = 0; i < ADDS; i++) {
        assert_int_equal(seen_add_str(s, pi.strs + N + i, 1, NULL, t0 + step * (int64_t)i, NULL),
                         SEEN_OK);
        for (uint32_t r = 0; r < s->nruns; r++) {
            const seen__run *run = &s->runs[r];
            bool several;
            if (run->c <= 1 || run_newest_slice(s, run, &several) != slice || several)
                continue;
            /* The run of this slice alone: the one the head goes into. */
            check_head_run_layout(
                run, seen__set_run_shape(s) ? SEEN_EF_MIN_LARGE_SET_RUN : SEEN_EF_MIN_HEAD_RUN,
                &golomb_seen, &ef_seen);
        }
    }
    assert_true(golomb_seen);
    assert_true(ef_seen);
    assert_int_equal(seen__set_check(s), SEEN_OK);
    /* Deletes from it (every 50th item it took) keep it Elias-Fano. */
    const int64_t now = t0 + step * (int64_t)ADDS;
    enum { EVERY = 50 };
    seen_str gone[ADDS / EVERY + 1];
    size_t ngone = 0;
    for (size_t i = 0; i < ADDS; i += EVERY)
        gone[ngone++] = pi.strs[N + i];
    size_t removed = 0;
    assert_int_equal(seen_remove_str(s, gone, ngone, now, &removed), SEEN_OK);
    assert_int_equal(removed, ngone);
    bool still_ef = false;
    for (uint32_t r = 0; r < s->nruns; r++) {
        bool several;
        const seen__run *run = &s->runs[r];
        if (run->c > 1 && run_newest_slice(s, run, &several) == slice && !several)
            still_ef |= seen__run_is_ef(run) && run->n >= SEEN_EF_MIN_LARGE_SET_RUN;
    }
    assert_true(still_ef);
    assert_int_equal(seen__set_check(s), SEEN_OK);
    for (int pass = 0; pass < 2; pass++) {
        uint8_t *seen = calloc(ADDS, 1);
        assert_int_equal(seen_filter_str(s, pi.strs + N, ADDS, now, seen), SEEN_OK);
        size_t false_pos = 0;
        for (size_t i = 0; i < ADDS; i++) {
            if (i % EVERY)
                assert_int_equal(seen[i], 1);
            else
                false_pos += seen[i];
        }
        assert_true(false_pos <= 2); /* ngone fresh candidates at 0.001 */
        free(seen);
        s = roundtrip(s);
    }
    items_free(&pi);
    seen_free(s);
}

/* A key of ~3,000 items written live in pages of 20, which flush the head
 * every time: the run of the current slice is Elias-Fano once it holds
 * SEEN_EF_MIN_LARGE_SET_RUN values (a Golomb run's edit decodes most of
 * it on every page), Golomb below; the items stay seen, through a reload
 * too, and the key within 15 bits per item it holds. */
static void test_mid_set_head_run_elias_fano(void **state)
{
    (void)state;
    seen_policy p;
    seen_policy_default(&p);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    enum { N = 3000, PAGE = 20, WINDOWS = 3, TOTAL = WINDOWS * N };
    probe_items pi;
    items_alloc(&pi, TOTAL);
    for (size_t i = 0; i < TOTAL; i++)
        items_set(&pi, i, i * 0x9e3779b97f4a7c15u + 29);
    const int64_t window = 90 * DAY, step = window / (N / PAGE);
    bool golomb_seen = false, ef_seen = false;
    int64_t now = T0;
    for (size_t i = 0; i < TOTAL; i += PAGE, now += step) {
        assert_int_equal(seen_add_str(s, pi.strs + i, PAGE, NULL, now, NULL), SEEN_OK);
        if (i < N)
            continue;
        uint64_t stored = s->head_n;
        for (uint32_t r = 0; r < s->nruns; r++)
            stored += s->runs[r].n;
        const int64_t slice = (now - s->origin) / (int64_t)s->slice_ms;
        const seen__run *last = &s->runs[s->nruns - 1];
        bool several;
        if (stored < SEEN_FINE_RECENT_SET || stored >= SEEN_EF_LARGE_SET || last->c <= 1 ||
            run_newest_slice(s, last, &several) != slice || several)
            continue;
        /* The run of this slice alone: the one the head goes into. */
        check_head_run_layout(last, SEEN_EF_MIN_LARGE_SET_RUN, &golomb_seen, &ef_seen);
    }
    assert_true(golomb_seen);
    assert_true(ef_seen);
    assert_int_equal(seen__set_check(s), SEEN_OK);
    uint64_t held = s->head_n;
    for (uint32_t r = 0; r < s->nruns; r++)
        held += s->runs[r].n;
    const double bits = (double)seen_serialized_size(s) * 8.0 / (double)held;
    fprintf(stderr, "[stat] mid-size key written live: %.2f bits per held item\n", bits);
    assert_true(bits < 15.0);
    /* The last window's items, a slice or so of the first ones forgotten. */
    const size_t from = TOTAL - N + N / 2;
    for (int pass = 0; pass < 2; pass++) {
        uint8_t *seen = calloc(TOTAL - from, 1);
        assert_int_equal(seen_filter_str(s, pi.strs + from, TOTAL - from, now, seen), SEEN_OK);
        for (size_t i = 0; i < TOTAL - from; i++)
            assert_int_equal(seen[i], 1);
        free(seen);
        s = roundtrip(s);
    }
    items_free(&pi);
    seen_free(s);
}

/* Every write is near-linear in the items it brings plus the items the key
 * holds, under every policy family: four times both must cost well under
 * the 16 times a quadratic write would (ratios measured in one run, best of
 * three; the margin covers caches that large batches outgrow, which make
 * linear work cost up to ~1.25x per doubling here).  A shared machine's
 * speed can change by 2x between two measurements, so a family that misses
 * is measured again, up to five rounds: a quadratic write misses in every
 * one. */
static void test_writes_near_linear(void **state)
{
    (void)state;
    enum { N = 40000, ROUNDS = 5 };
    probe_items pi;
    items_alloc(&pi, 4 * N);
    for (size_t i = 0; i < 4 * N; i++)
        items_set(&pi, i, i * 0x9e3779b97f4a7c15u + 1);
    struct {
        const char *name;
        seen_policy p;
    } families[] = {
        {"window", policy(90 * DAY, 4, 0.001, 0, SEEN_IDS_STR, 128)},
        {"no window, no cap", policy(0, 1, 0.001, 0, SEEN_IDS_STR, 128)},
        {"exact", policy(90 * DAY, 4, 0, 0, SEEN_IDS_STR, 128)},
        {"cap 10, 64 slices", policy(0, 64, 0.001, 10, SEEN_IDS_STR, 128)},
        {"cap 100, 4 slices", policy(0, 4, 0.001, 100, SEEN_IDS_STR, 128)},
        {"cap 1000, 16 slices, window", policy(30 * DAY, 16, 0.001, 1000, SEEN_IDS_STR, 128)},
        {"cap 1e6, 64 slices", policy(0, 64, 0.001, 1000000, SEEN_IDS_STR, 128)},
    };
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
        const seen_policy *p = &families[f].p;
        bool adds_linear = false, removes_linear = false;
        for (int round = 0; round < ROUNDS && !(adds_linear && removes_linear); round++) {
            if (!adds_linear) {
                /* A batch of n into a set holding n, against 2n into 2n. */
                double a1 = time_write(p, &pi, N / 4, N / 4, false);
                double a2 = time_write(p, &pi, N, N, false);
                fprintf(stderr, "[stat] %s: add x4 -> %.2fx time\n", families[f].name,
                        a2 / (a1 > 1e-6 ? a1 : 1e-6));
                adds_linear = a2 < 8.0 * a1 + 0.005;
            }
            if (!removes_linear) {
                /* Removing one item from a set of n, against 2n.  (Sizes
                 * off multiples of a bucket's items: there a delete changes
                 * the run's bucket count and rebuilds it, a different
                 * path.) */
                double r1 = time_write(p, &pi, N / 2 + 5, 1, true);
                double r2 = time_write(p, &pi, 2 * N + 5, 1, true);
                fprintf(stderr, "[stat] %s: remove from x4 -> %.2fx time\n", families[f].name,
                        r2 / (r1 > 1e-6 ? r1 : 1e-6));
                /* A removal from 80,000 items takes a few milliseconds, and
                 * with the sanitizers, and another test on the other
                 * hyperthread sharing the caches (make -j2 test), it
                 * measured up to 13 times the one from 20,000: the slack
                 * is 5 ms, where a quadratic write at these sizes takes
                 * seconds. */
                removes_linear = r2 < 8.0 * r1 + 0.005;
            }
        }
        assert_true(adds_linear);
        assert_true(removes_linear);
    }
    items_free(&pi);
}

static void test_steady_state(void **state)
{
    (void)state;
    /* A user adding at a steady rate: after a plan change at the first
     * peak, runs of the old plan age out and the set settles into a main
     * run plus the current slice, planned for its peak (window + slice). */
    rng r = {test_seed("steady-state", 71)};
    enum { N = 20000 };
    seen_policy p = policy(90 * DAY, 4, 0.001, 0, SEEN_IDS_STR, 128);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    double step = (double)(90 * DAY) / N;
    int64_t now = T0;
    str_item it;
    for (size_t i = 0; i < 4 * (size_t)N; i++) {
        now = T0 + (int64_t)(step * (double)i);
        make_str(&it, rng_next(&r));
        assert_int_equal(seen_add_str(s, &it.s, 1, NULL, now, NULL), SEEN_OK);
    }
    assert_int_equal(seen__set_check(s), SEEN_OK);
    double bits = (double)seen_bytes(s) * 8.0 / (double)seen_count(s, now);
    fprintf(stderr, "[stat] steady state, %d items per window: %u runs, %.2f bits per item\n", N,
            s->nruns, bits);
    assert_true(s->nruns <= 2);
    /* At the peak the set holds 5 slices' worth: log2(5) for slices, plus
     * fingerprints, plus planning headroom: well under 15 bits. */
    assert_true(bits <= 15.0);
    assert_true(seen_fpr_estimate(s) <= 0.001);
    seen_free(s);
}

/* The string items of keys ids[from..to) are all seen at `now`. */
static void assert_keys_seen(const seen_set *s, const uint64_t *ids, size_t from, size_t to,
                             int64_t now)
{
    for (size_t i = from; i < to; i++) {
        str_item it;
        make_str(&it, ids[i]);
        uint8_t seen = 0;
        assert_int_equal(seen_filter_str(s, &it.s, 1, now, &seen), SEEN_OK);
        assert_int_equal(seen, 1);
    }
}

/* Bytes Redis keeps for a key beside its set (its entry and the module's
 * record), and the serialized size up to which the module keeps a set
 * packed between commands (seen.pack-max-bytes by default): a key's
 * MEMORY USAGE is those bytes plus its packed bytes (in blocks cut to the
 * allocator's classes, which round them up by little; counted exactly
 * here) or its unpacked set. */
#define REDIS_KEY_BYTES 64u
#define MODULE_PACK_MAX_BYTES 8192u

static size_t key_bytes_in_redis(const seen_set *s)
{
    size_t packed = seen_serialized_size(s);
    return REDIS_KEY_BYTES + (packed <= MODULE_PACK_MAX_BYTES ? packed : seen_bytes(s));
}

/* A new user writing pages of `page` (at most 20) at the server's clock,
 * `per_day` items a day, for `days`: the worst bits per held item after any page once it
 * holds 1,000 items, of the whole set as the library holds it, of its runs
 * alone (*worst_runs) and of the key in Redis (*worst_key); and no false
 * negatives at the end. */
static double young_worst_bits(double per_day, double days, size_t page, size_t *max_runs,
                               double *worst_runs, double *worst_key)
{
    rng r = {test_seed("young", 91)};
    seen_policy p = policy(90 * DAY, 4, 0.001, 0, SEEN_IDS_STR, 128);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    size_t n = (size_t)(per_day * days) / page * page;
    uint64_t *ids = malloc(n * sizeof *ids);
    str_item items[20];
    seen_str strs[20];
    int64_t step = (int64_t)((double)DAY * (double)page / per_day), now = T0;
    double worst = 0;
    *max_runs = 0;
    *worst_runs = 0;
    *worst_key = 0;
    for (size_t i = 0; i < n; i += page) {
        now = T0 + step * (int64_t)(i / page);
        for (size_t j = 0; j < page; j++) {
            ids[i + j] = rng_next(&r);
            make_str(&items[j], ids[i + j]);
            strs[j] = items[j].s;
        }
        assert_int_equal(seen_add_str(s, strs, page, NULL, now, NULL), SEEN_OK);
        uint64_t held = seen_count(s, now);
        if (held >= 1000) {
            double bits = (double)seen_bytes(s) * 8.0 / (double)held;
            worst = bits > worst ? bits : worst;
            bits = (double)key_bytes_in_redis(s) * 8.0 / (double)held;
            *worst_key = bits > *worst_key ? bits : *worst_key;
            seen_run_info ri[SEEN_MAX_RUNS];
            size_t nr = seen_runs(s, ri, SEEN_MAX_RUNS), in_runs = 0;
            for (size_t k = 0; k < nr; k++)
                in_runs += ri[k].held;
            bits = (double)in_runs * 8.0 / (double)held;
            *worst_runs = bits > *worst_runs ? bits : *worst_runs;
            *max_runs = s->nruns > *max_runs ? s->nruns : *max_runs;
        }
    }
    assert_int_equal(seen__set_check(s), SEEN_OK);
    assert_keys_seen(s, ids, 0, n, now);
    free(ids);
    seen_free(s);
    return worst;
}

/* A small exact set keeps its keys raw in the head (SEEN_HEAD_EXACT_MAX):
 * 16 items in pages of 4 serialize to 182 bytes, where flushed into an
 * exact run they took 207; they answer the same after a reload, and the
 * write past the exact limit leaves the exact phase as before. */
static void test_small_exact_set_keeps_head(void **state)
{
    (void)state;
    rng r = {test_seed("small-exact", 17)};
    seen_policy p = policy(90 * DAY, 4, 0.001, 0, SEEN_IDS_STR, 16);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    uint64_t ids[20];
    str_item items[4];
    seen_str strs[4];
    int64_t now = T0;
    for (size_t i = 0; i < 16; i += 4) {
        now = T0 + (int64_t)i * (DAY / 24);
        for (size_t j = 0; j < 4; j++) {
            ids[i + j] = rng_next(&r);
            make_str(&items[j], ids[i + j]);
            strs[j] = items[j].s;
        }
        assert_int_equal(seen_add_str(s, strs, 4, NULL, now, NULL), SEEN_OK);
        assert_int_equal(s->nruns, 0);
        assert_int_equal(s->head_n, i + 4);
        assert_int_equal(seen__set_check(s), SEEN_OK);
    }
    size_t bytes = seen_serialized_size(s);
    fprintf(stderr, "[stat] 16 items kept in the head: %zu bytes serialized\n", bytes);
    /* The set's fixed part (a 1-item set: 44 bytes) and 9 bytes a key. */
    assert_true(bytes <= 44 + 15 * 9 + 4);
    s = roundtrip(s);
    assert_keys_seen(s, ids, 0, 16, now);
    for (size_t i = 16; i < 20; i++) {
        ids[i] = rng_next(&r);
        make_str(&items[i - 16], ids[i]);
        strs[i - 16] = items[i - 16].s;
    }
    now += DAY / 24;
    assert_int_equal(seen_add_str(s, strs, 4, NULL, now, NULL), SEEN_OK);
    assert_int_equal(s->head_n, 0);
    assert_true(s->plan_c != 0);
    assert_true(seen_serialized_size(s) < bytes);
    assert_keys_seen(s, ids, 0, 20, now);
    seen_free(s);
}

static void test_young_sets_compact(void **state)
{
    (void)state;
    /* A young set is planned from its rate over at least a day: no phase
     * of 64-bit keys.  Bytes held under Redis's allocator classes; the
     * runs' limit is what planning delivers, the whole set's adds the
     * tables (set, runs, segments: ~600 bytes unpacked; the module keeps
     * sets this small packed, without them). */
    alloc_install_classes();
    const struct {
        double per_day, days;
        size_t page;
        double runs_limit, limit, key_limit;
    } cases[] = {
        {100, 30, 20, 18.0, 20.0, 20.0},  /* 1,000 items on day 10 */
        {1000, 30, 20, 19.5, 21.5, 20.0}, /* a heavy user: 1,000 items on day 1 */
        /* A first-day burst (1,000 an hour) is planned as if the day's
         * volume were the user's daily rate, and its plan halves as that
         * grows; the runs of successive halvings fold together at the
         * coarser divisor while they take a small share of the budget, and
         * the head's items go straight into such a run while it does.
         * Written at the plan instead, the items of 3,000-18,000 held
         * spent a bit more each until their run folded into the coarser
         * one: up to 20.6 bits per item as a key in Redis.  In pages of 5
         * or 1 as well (their sets' tables and head weigh more unpacked):
         * with its first plan made for what its first ~20 items project
         * (~2,300), not SEEN_YOUNG_MIN_TARGET, pages of 5 took 20.13 bits
         * as a key and 19.75 in runs. */
        {24000, 2, 20, 19.4, 21.5, 20.0},
        {24000, 2, 5, 19.4, 22.0, 20.0},
        {24000, 2, 1, 19.4, 22.0, 20.0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        size_t runs;
        double in_runs, as_key;
        double worst = young_worst_bits(cases[k].per_day, cases[k].days, cases[k].page, &runs,
                                        &in_runs, &as_key);
        fprintf(stderr,
                "[stat] young set, %.0f a day for %.0f days in pages of %zu, from 1,000 items: "
                "worst %.2f bits per item (%.2f in runs, %.2f as a key in Redis), at most %zu "
                "runs\n",
                cases[k].per_day, cases[k].days, cases[k].page, worst, in_runs, as_key, runs);
        assert_true(in_runs <= cases[k].runs_limit);
        assert_true(worst <= cases[k].limit);
        assert_true(as_key <= cases[k].key_limit);
        assert_true(runs <= 12);
    }
    seen_set_allocator(NULL);
}

static void test_many_runs_fold_rarely(void **state)
{
    (void)state;
    /* A key that speeds up once past its first slice (100 a day for 30
     * days, then 3,000) is replanned as it grows and keeps runs of older
     * plans, which cannot merge: five runs and more.  Then too a flush
     * must go into the small recent run, not be folded into the run before
     * it at once: that rewrote the largest run on every flush.  Work is
     * counted over the fast pages as the values of every run from the
     * first one a page changed on (a write rewrites at most those). */
    seen_policy p;
    seen_policy_default(&p);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    const size_t slow_pages = 150, pages = 1200;
    char ids[20][24];
    seen_str page[20];
    uint64_t before[SEEN_MAX_RUNS];
    uint32_t nbefore = 0;
    size_t many = 0;
    uint64_t work = 0;
    for (size_t k = 0; k < slow_pages + pages; k++) {
        double day =
            k < slow_pages ? (double)k * 20 / 100 : 30 + (double)(k - slow_pages) * 20 / 3000;
        int64_t at = T0 + (int64_t)(day * (double)DAY);
        for (int i = 0; i < 20; i++) {
            snprintf(ids[i], sizeof ids[i], "m%zu-%d", k, i);
            page[i] = (seen_str){ids[i], strlen(ids[i])};
        }
        assert_int_equal(seen_add_str(s, page, 20, NULL, at, NULL), SEEN_OK);
        if (k < slow_pages) {
            nbefore = s->nruns;
            for (uint32_t r = 0; r < s->nruns; r++)
                before[r] = s->runs[r].n;
            continue;
        }
        uint32_t first = 0;
        while (first < s->nruns && first < nbefore && s->runs[first].n == before[first])
            first++;
        for (uint32_t r = first; r < s->nruns; r++)
            work += s->runs[r].n;
        many += s->nruns >= 5;
        nbefore = s->nruns;
        for (uint32_t r = 0; r < s->nruns; r++)
            before[r] = s->runs[r].n;
    }
    const double per_item = (double)work / (double)(pages * 20);
    fprintf(stderr,
            "[stat] many runs: %zu of %zu pages with five runs or more; %.1f values "
            "rewritten per item added\n",
            many, pages, per_item);
    assert_true(many > pages / 4);
    /* ~160 as built; folding every flush into the run before it rewrote
     * runs of 8,000-10,000 values a page here: ~400. */
    assert_true(per_item < 300);
    assert_int_equal(seen__set_check(s), SEEN_OK);
    seen_free(s);
}

/* Allocations of at least `big_at` bytes, counted through the allocator
 * hook: only a merge of the whole set asks for blocks that large. */
static size_t big_at, big_allocs;

static void *counting_malloc(size_t n)
{
    big_allocs += n >= big_at;
    return malloc(n);
}

static void *counting_realloc(void *p, size_t n)
{
    big_allocs += n >= big_at;
    return realloc(p, n);
}

/* A live key of 10,000 items as each slice ends: the slice that dies
 * leaves main in the fold of the recent run into it, one merge of the set
 * (its values decoded, then merged: two blocks of 5 bytes a stored value
 * and more), not a purge of main followed by that fold (three such
 * blocks). */
static void test_slice_end_rewrites_main_once(void **state)
{
    (void)state;
    seen_policy p;
    seen_policy_default(&p);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    static const seen_allocator counting = {counting_malloc, counting_realloc, free, NULL};
    seen_set_allocator(&counting);
    enum { N = 10000, PAGE = 20, WINDOWS = 5 };
    const int64_t window = 90 * DAY, step = window / (N / PAGE);
    uint64_t id = 1;
    size_t most = 0, ends = 0;
    int64_t now = T0;
    for (size_t k = 0; k < WINDOWS * (N / PAGE); k++, now += step) {
        str_item it[PAGE];
        seen_str page[PAGE];
        for (int i = 0; i < PAGE; i++) {
            make_str(&it[i], id++ * 0x9e3779b97f4a7c15u);
            page[i] = it[i].s;
        }
        uint64_t stored = 0;
        for (uint32_t r = 0; r < s->nruns; r++)
            stored += s->runs[r].n;
        big_at = stored >= N / 2 ? (size_t)stored * 5 : SIZE_MAX;
        big_allocs = 0;
        assert_int_equal(seen_add_str(s, page, PAGE, NULL, now, NULL), SEEN_OK);
        if (k >= 2 * (N / PAGE)) {
            most = big_allocs > most ? big_allocs : most;
            ends += big_allocs > 0;
        }
    }
    seen_set_allocator(NULL);
    fprintf(stderr, "[stat] slice ends: %zu adds merged the set, at most %zu large blocks each\n",
            ends, most);
    assert_true(ends >= 8); /* four slices a window, three windows */
    assert_true(most <= 2);
    assert_int_equal(seen__set_check(s), SEEN_OK);
    seen_free(s);
}

/* Two keys of 50 days at 1,000 a day, planned alike: the second within a
 * run and 0.3 bit per item of the first. */
static void assert_planned_alike(const char *ref, uint32_t ref_runs, double ref_bits,
                                 const char *other, uint32_t runs, double bits)
{
    fprintf(stderr,
            "[stat] 50 days at 1,000 a day: %s %u runs at most, %.2f bits per item; "
            "%s %u runs, %.2f bits\n",
            ref, ref_runs, ref_bits, other, runs, bits);
    assert_true(runs <= ref_runs + 1);
    assert_true(bits <= ref_bits + 0.3);
}

/* A 1,000-a-day key written for 50 days in pages of 20; with `late`, its
 * second page carries times a minute older than its first.  Returns the
 * most runs it held and its bits per item on the last day. */
static double late_page_key(bool late, uint32_t *max_runs)
{
    seen_policy p;
    seen_policy_default(&p);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    char ids[20][24];
    seen_str page[20];
    *max_runs = 0;
    const size_t pages = 50 * 50;
    for (size_t k = 0; k < pages; k++) {
        int64_t at = k == 1 && late ? T0 - 60000 : T0 + (int64_t)k * (DAY / 50);
        for (int i = 0; i < 20; i++) {
            snprintf(ids[i], sizeof ids[i], "l%zu-%d", k, i);
            page[i] = (seen_str){ids[i], strlen(ids[i])};
        }
        assert_int_equal(seen_add_str(s, page, 20, NULL, at, NULL), SEEN_OK);
        if (s->nruns > *max_runs)
            *max_runs = s->nruns;
    }
    assert_int_equal(seen__set_check(s), SEEN_OK);
    double bits = (double)seen_bytes(s) * 8.0 / (double)(pages * 20);
    seen_free(s);
    return bits;
}

static void test_late_first_pages_plan_as_in_order(void **state)
{
    (void)state;
    /* Items older than a set's origin (its first write's oldest time) fall
     * in the slice before it.  Out-of-order pages put them there seconds
     * before the origin; measuring the set's age from that slice's start
     * made a new key look a slice old, planned for a fraction of its rate
     * and re-planned as it grew: 18 runs and 26 bits per item by day 49. */
    uint32_t runs_in_order, runs_late;
    double in_order = late_page_key(false, &runs_in_order);
    double late = late_page_key(true, &runs_late);
    assert_planned_alike("in order", runs_in_order, in_order, "second page a minute late",
                         runs_late, late);
}

/* Pages of 20 at 1,000 a day for `days` days from `from` into s; the most
 * runs s held on the way. */
static uint32_t pages_at_1000_a_day(seen_set *s, int64_t from, size_t days, const char *tag)
{
    char ids[20][48];
    seen_str page[20];
    uint32_t most = 0;
    for (size_t k = 0; k < days * 50; k++) {
        for (int i = 0; i < 20; i++) {
            snprintf(ids[i], sizeof ids[i], "%s%zu-%d", tag, k, i);
            page[i] = (seen_str){ids[i], strlen(ids[i])};
        }
        assert_int_equal(seen_add_str(s, page, 20, NULL, from + (int64_t)k * (DAY / 50), NULL),
                         SEEN_OK);
        if (s->nruns > most)
            most = s->nruns;
    }
    return most;
}

/*
 * A feed that shows items again: N items a window in pages of 20 at the
 * server's clock for three windows, a share of each page (in tenths)
 * being items written up to 60 days before, added again while their older
 * copies are still stored.  Each fold drops those copies at a slice's end;
 * until then the budget pays for both.  The plan must stay where the
 * copies take it: planned for the items alone, it moved twice a slice and
 * left runs that could not fold (here 10 runs and 19.7 bits per item; 12
 * runs at 100,000 items a window added again a window later), each of
 * which a query walks.  The most runs once the first window has passed,
 * and *bits the bits per held item at the end.
 */
static uint32_t readded_most_runs(unsigned tenths_again, double *bits)
{
    enum { N = 10000, PAGE = 20 };
    rng r = {test_seed("readded", 97 + tenths_again)};
    seen_policy p = policy(90 * DAY, 4, 0.001, 0, SEEN_IDS_STR, 128);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    const size_t pages = 3 * (size_t)N / PAGE, back = (size_t)N * 2 / 3;
    uint64_t *ids = malloc(3 * (size_t)N * sizeof *ids);
    assert_non_null(ids);
    size_t written = 0; /* ids[0..written): every item written, in order */
    uint32_t most = 0;
    int64_t now = T0;
    str_item items[PAGE];
    seen_str page[PAGE];
    for (size_t k = 0; k < pages; k++) {
        now = T0 + (int64_t)((double)(90 * DAY) * (double)k / (double)(pages / 3));
        for (size_t j = 0; j < PAGE; j++) {
            uint64_t id;
            if (written > PAGE && rng_next(&r) % 10 < tenths_again) {
                size_t span = written < back ? written : back;
                id = ids[written - 1 - rng_next(&r) % span];
            } else {
                id = ids[written++] = rng_next(&r);
            }
            make_str(&items[j], id);
            page[j] = items[j].s;
        }
        assert_int_equal(seen_add_str(s, page, PAGE, NULL, now, NULL), SEEN_OK);
        if (k >= pages / 3 && s->nruns > most)
            most = s->nruns;
    }
    assert_int_equal(seen__set_check(s), SEEN_OK);
    s = roundtrip(s); /* the state loads back */
    *bits = (double)seen_bytes(s) * 8.0 / (double)seen_count(s, now);
    assert_true(seen_fpr_estimate(s) <= 0.001);
    /* The items of the last 80 days are seen (each was written or added
     * again since). */
    assert_keys_seen(s, ids, written - written / 3 * 80 / 90, written, now);
    free(ids);
    seen_free(s);
    return most;
}

static void test_readded_items_keep_the_plan(void **state)
{
    (void)state;
    double fresh_bits, again_bits;
    uint32_t fresh = readded_most_runs(0, &fresh_bits);
    uint32_t again = readded_most_runs(3, &again_bits);
    fprintf(stderr,
            "[stat] items added again: fresh pages %u runs at most, %.2f bits per item; 30%% "
            "added again %u runs, %.2f bits\n",
            fresh, fresh_bits, again, again_bits);
    /* Held items grow for two windows as the share added again settles,
     * and the plan follows in steps that each leave a run until it ages
     * out: 5 here (fresh pages: 3). */
    assert_true(again <= fresh + 3);
    /* A slice's worth of older copies stays stored until its fold: up to a
     * quarter more entries than items (16.5 bits here). */
    assert_true(again_bits <= fresh_bits * 1.2);
}

/* Items shown again within the segment that holds them (a feed re-showing
 * a page within the slice; in a capped set, within its newest count step:
 * older steps' items move to it) are already as recent as the new
 * addition: the set stays byte for byte the same, whether they sit in the
 * head or in runs, exact or compact, and none counts as added. */
static void test_readd_within_slice_changes_nothing(void **state)
{
    (void)state;
    for (int kind = 0; kind < 3; kind++) {
        seen_policy p;
        seen_policy_default(&p);
        if (kind == 1)
            p.error = 0;
        if (kind == 2)
            p.capacity = 5000;
        seen_set *s;
        assert_int_equal(seen_create(&p, &s), SEEN_OK);
        enum { PAGES = 150, PAGE = 20 };
        uint64_t ids[PAGE];
        const int64_t now = T0 + DAY;
        for (int pg = 0; pg < PAGES; pg++) {
            for (size_t i = 0; i < PAGE; i++)
                ids[i] = (uint64_t)pg * PAGE + i;
            assert_int_equal(add_ids(s, ids, PAGE, NULL, T0 + pg * (DAY / PAGES), NULL), SEEN_OK);
        }
        /* And a page of 5 the head keeps. */
        for (size_t i = 0; i < 5; i++)
            ids[i] = (uint64_t)PAGES * PAGE + i;
        assert_int_equal(add_ids(s, ids, 5, NULL, T0 + DAY - 1, NULL), SEEN_OK);
        if (s->nruns == 0 || s->head_n == 0)
            fail_msg("kind %d: %u runs, %u in the head", kind, s->nruns, s->head_n);
        size_t len;
        uint8_t *before = snapshot(s, &len);
        /* The newest page (in the head), one from the middle (in a run)
         * and the first (the capped set: two in its newest step's runs),
         * each item of the first and last given several times in the
         * page. */
        const int pages[] = {PAGES, kind == 2 ? PAGES - 10 : PAGES / 2, kind == 2 ? PAGES - 20 : 0};
        for (size_t k = 0; k < 3; k++) {
            for (size_t i = 0; i < PAGE; i++)
                ids[i] = (uint64_t)pages[k] * PAGE + (i % (k == 0 ? 5 : k == 2 ? 7 : PAGE));
            size_t added = 99;
            assert_int_equal(add_ids(s, ids, PAGE, NULL, now, &added), SEEN_OK);
            assert_int_equal(added, 0);
            if (k == 0) {
                /* The first re-add moved the clock to `now`: compare from
                 * here on. */
                free(before);
                before = snapshot(s, &len);
            } else {
                assert_unchanged(s, before, len);
            }
        }
        free(before);
        seen_free(s);
    }
}

static void test_user_back_after_a_window_lives_as_new(void **state)
{
    (void)state;
    /* A set that has forgotten everything starts its next life as a new
     * set: slices anchored in its old life began up to a slice before its
     * new first item, and a set's age is measured from its oldest slice's
     * start, so it was planned for a fraction of its rate and re-planned as
     * it grew (14 runs, 22 bits per item 50 days back). */
    seen_policy p;
    seen_policy_default(&p);
    seen_set *fresh, *back;
    assert_int_equal(seen_create(&p, &fresh), SEEN_OK);
    assert_int_equal(seen_create(&p, &back), SEEN_OK);
    pages_at_1000_a_day(back, T0, 10, "old");
    const int64_t away = T0 + 140 * DAY; /* past the window and a slice */
    uint32_t most_fresh = pages_at_1000_a_day(fresh, away, 50, "new");
    uint32_t most_back = pages_at_1000_a_day(back, away, 50, "new");
    assert_planned_alike("new key", most_fresh, (double)seen_bytes(fresh) * 8.0 / 50000.0,
                         "back after 130 days away", most_back,
                         (double)seen_bytes(back) * 8.0 / 50000.0);
    assert_int_equal(seen__set_check(back), SEEN_OK);
    /* Every new item is counted but those whose fingerprint an earlier
     * one took (about one in a thousand at this error). */
    uint64_t count = seen_count(back, away + 50 * DAY);
    assert_true(count <= 50000 && count >= 49900);
    seen_str old = {"old0-0", 6}, new = {"new0-0", 6};
    uint8_t seen_old = 0, seen_new = 0; /* filters set the flags of seen items only */
    assert_int_equal(seen_filter_str(back, &old, 1, away + 50 * DAY, &seen_old), SEEN_OK);
    assert_int_equal(seen_filter_str(back, &new, 1, away + 50 * DAY, &seen_new), SEEN_OK);
    assert_int_equal(seen_old, 0);
    assert_int_equal(seen_new, 1);
    seen_free(fresh);
    seen_free(back);

    /* An integer set back after a window away is keyed as a new one is:
     * by its raw ids again, though its old life had mixed them. */
    seen_policy pi = policy(90 * DAY, 4, 0.001, 0, SEEN_IDS_INT, 16);
    seen_set *ints;
    assert_int_equal(seen_create(&pi, &ints), SEEN_OK);
    rng r = {test_seed("back-int", 17)};
    uint64_t ids[200];
    for (size_t k = 0; k < 20; k++) {
        for (size_t i = 0; i < 200; i++)
            ids[i] = rng_next(&r);
        assert_int_equal(seen_add_int(ints, ids, 200, NULL, T0 + (int64_t)k * DAY, NULL), SEEN_OK);
    }
    assert_int_equal(seen_keys_raw(ints), 0);
    for (size_t i = 0; i < 200; i++)
        ids[i] = 1000 + i;
    assert_int_equal(seen_add_int(ints, ids, 200, NULL, away, NULL), SEEN_OK);
    assert_int_equal(seen_keys_raw(ints), 1);
    uint8_t flags[200] = {0};
    assert_int_equal(seen_filter_int(ints, ids, 200, away, flags), SEEN_OK);
    for (size_t i = 0; i < 200; i++)
        assert_int_equal(flags[i], 1);
    assert_int_equal(seen__set_check(ints), SEEN_OK);
    seen_free(ints);

    /* The write that starts the new life fails whole or not at all. */
    alloc_install();
    alloc_reset(-1);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    pages_at_1000_a_day(s, T0, 2, "old");
    size_t len;
    uint8_t *before = snapshot(s, &len);
    long baseline = g_alloc.live;
    seen_str page[3] = {{"a", 1}, {"b", 1}, {"c", 1}};
    for (long n = 0;; n++) {
        alloc_reset(n);
        seen_err e = seen_add_str(s, page, 3, NULL, away, NULL);
        alloc_reset(-1);
        if (e == SEEN_OK)
            break;
        assert_int_equal(e, SEEN_ERR_NOMEM);
        assert_int_equal(g_alloc.live, baseline);
        assert_unchanged(s, before, len);
        assert_true(n < 1000);
    }
    free(before);
    assert_int_equal(seen_count(s, away), 3);
    assert_int_equal(seen__set_check(s), SEEN_OK);
    seen_free(s);
    assert_int_equal(g_alloc.live, 0);
    seen_set_allocator(NULL);
}

static void test_growing_user_stays_writable(void **state)
{
    (void)state;
    /* A user whose rate keeps growing (100 items a day, 100 more each day)
     * re-plans every few days, and runs of older plans cannot merge: in
     * 64 slices the set reached the format's 64 runs on day 110 and every
     * write after was refused.  Many runs now re-plan by whole factors and
     * merge the runs that share a divisor, sooner in many slices: 29 runs
     * at most with the thresholds of 4 slices, 22 with those of many. */
    seen_policy p = policy(90 * DAY, 64, 0.001, 0, SEEN_IDS_STR, 128);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    enum { PAGE = 100 };
    static char ids[PAGE][24];
    seen_str page[PAGE];
    uint64_t id = 0;
    uint32_t most = 0;
    double day = 0;
    while (day < 112) {
        for (int i = 0; i < PAGE; i++) {
            snprintf(ids[i], sizeof ids[i], "g%llu", (unsigned long long)++id);
            page[i] = (seen_str){ids[i], strlen(ids[i])};
        }
        assert_int_equal(seen_add_str(s, page, PAGE, NULL, T0 + (int64_t)(day * (double)DAY), NULL),
                         SEEN_OK);
        if (s->nruns > most)
            most = s->nruns;
        day += PAGE / (100 + 100 * day);
    }
    fprintf(stderr, "[stat] growing user, 64 slices: %llu items in 112 days, %u runs at most\n",
            (unsigned long long)id, most);
    assert_true(most <= SEEN_RUNS_CONSOLIDATE_MANY_SLICES + 12);
    assert_int_equal(seen__set_check(s), SEEN_OK);
    s = roundtrip(s); /* the state its merges left loads back */
    assert_int_equal(seen__set_check(s), SEEN_OK);
    /* The last page is seen. */
    uint8_t seen[PAGE] = {0};
    assert_int_equal(seen_filter_str(s, page, PAGE, T0 + 112 * DAY, seen), SEEN_OK);
    for (int i = 0; i < PAGE; i++)
        assert_int_equal(seen[i], 1);
    seen_free(s);
}

/* How many of the `count` items from item `first` on that
 * pages_at_1000_a_day(.., tag) names s reports seen at `now`. */
static size_t seen_among(const seen_set *s, const char *tag, size_t first, size_t count,
                         int64_t now)
{
    enum { Q = 10000 };
    static char ids[Q][32];
    static seen_str q[Q];
    static uint8_t flags[Q];
    size_t seen = 0;
    for (size_t done = 0; done < count; done += Q) {
        size_t n = count - done < Q ? count - done : Q;
        for (size_t i = 0; i < n; i++) {
            size_t item = first + done + i;
            snprintf(ids[i], sizeof ids[i], "%s%zu-%zu", tag, item / 20, item % 20);
            q[i] = (seen_str){ids[i], strlen(ids[i])};
        }
        memset(flags, 0, n);
        assert_int_equal(seen_filter_str(s, q, n, now, flags), SEEN_OK);
        for (size_t i = 0; i < n; i++)
            seen += flags[i];
    }
    return seen;
}

/* 100,000 of s's items from `first` on are all seen at `now`, and fresh
 * ones within the bound: 100 of 100,000 expected at most, and 150 is that
 * mean plus 5 sigma. */
static void assert_seen_and_bounded(const seen_set *s, const char *tag, size_t first, int64_t now)
{
    assert_int_equal(seen_among(s, tag, first, 100000, now), 100000);
    size_t fp = seen_among(s, "fresh", 0, 100000, now);
    fprintf(stderr, "[stat] %zu false positives of 100,000 fresh items\n", fp);
    assert_true(fp <= 150);
}

static void test_capped_set_plans_for_its_cap(void **state)
{
    (void)state;
    /* A cap and no window: the set fills to its cap, so it is planned for
     * it from its first pages.  Planned for what it held instead, each
     * doubling took a share of the budget for the items so far and the
     * next ones went finer, down to exact keys: 50 bits an item in 13 runs
     * at 25,000 items, until the cap turned over. */
    seen_policy p = policy(0, 4, 0.001, 100000, SEEN_IDS_STR, SEEN_DEFAULT_EXACT_LIMIT);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    uint32_t most = pages_at_1000_a_day(s, T0, 25, "a");
    double young = (double)seen_bytes(s) * 8.0 / 25000.0;
    uint32_t later = pages_at_1000_a_day(s, T0 + 25 * DAY, 125, "b");
    most = later > most ? later : most;
    const uint64_t held = seen_count(s, T0 + 150 * DAY);
    double full = (double)seen_bytes(s) * 8.0 / (double)held;
    fprintf(stderr,
            "[stat] capacity 100,000, no window: %.2f bits/item at 25,000 items, %.2f at "
            "%llu held after 150,000, %u runs at most\n",
            young, full, (unsigned long long)held, most);
    assert_true(young <= 17.0);
    assert_true(full <= 16.0);
    assert_true(most <= 6);
    assert_int_equal(seen__set_check(s), SEEN_OK);
    s = roundtrip(s);
    assert_seen_and_bounded(s, "b", 25000, T0 + 150 * DAY); /* the newest 100,000 */
    seen_free(s);
}

static void test_unbounded_set_grows_compact(void **state)
{
    (void)state;
    /* No window and no cap: a set that only grows.  Fingerprints cannot be
     * refined, so it plans far ahead of what it holds; planned one doubling
     * ahead, each doubling's runs took half the budget left and the next
     * went finer, down to 64-bit keys (42 bits an item at 100,000). */
    seen_policy p = policy(0, 4, 0.001, 0, SEEN_IDS_STR, SEEN_DEFAULT_EXACT_LIMIT);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    uint32_t most = pages_at_1000_a_day(s, T0, 100, "u");
    double bits = (double)seen_bytes(s) * 8.0 / 100000.0;
    fprintf(stderr, "[stat] no window, no cap: %.2f bits/item at 100,000 items, %u runs at most\n",
            bits, most);
    assert_true(bits <= 19.0);
    assert_true(most <= 20);
    assert_int_equal(seen__set_check(s), SEEN_OK);
    s = roundtrip(s);
    assert_seen_and_bounded(s, "u", 0, T0 + 100 * DAY);
    seen_free(s);
}

static void test_short_window_first_day(void **state)
{
    (void)state;
    /* Over its first day a young set's rate is measured over a day, so its
     * projection grows with every item and its plan halves at each
     * doubling, leaving a run each time.  A week's window projects only
     * 8.75 times ahead: those runs took half the budget and squeezed the
     * rest of the first window into fine runs (10 runs, 24 bits per live
     * item at 1,000 a day, now 5 and 21.7).  The young plan looks 32
     * times ahead. */
    seen_policy p = policy(7 * DAY, 4, 0.001, 0, SEEN_IDS_STR, SEEN_DEFAULT_EXACT_LIMIT);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    uint32_t most = 0;
    double worst = 0;
    for (int d = 0; d < 9; d++) {
        char tag[16];
        snprintf(tag, sizeof tag, "w%d-", d);
        uint32_t runs = pages_at_1000_a_day(s, T0 + d * DAY, 1, tag);
        most = runs > most ? runs : most;
        double live = d < 7 ? 1000.0 * (d + 1) : 7000.0;
        double bits = (double)seen_bytes(s) * 8.0 / live;
        worst = bits > worst ? bits : worst;
    }
    fprintf(stderr, "[stat] 7-day window, 1,000 a day: %u runs at most, %.2f bits per live item\n",
            most, worst);
    assert_true(most <= 7);
    assert_true(worst <= 23.0);
    assert_int_equal(seen__set_check(s), SEEN_OK);
    seen_free(s);
}

static void test_int_ids_compact(void **state)
{
    (void)state;
    rng r = {test_seed("int-ids", 51)};
    seen_policy p = policy(0, 1, 0, 0, SEEN_IDS_INT, 128);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    uint64_t ids[300];
    for (size_t i = 0; i < 300; i++)
        ids[i] = 2700000 + rng_below(&r, 400000);
    for (size_t i = 0; i < 300; i += 20)
        assert_int_equal(seen_add_int(s, &ids[i], 20, NULL, T0 + (int64_t)i, NULL), SEEN_OK);
    assert_int_equal(seen_expire(s, T0 + 1000), SEEN_OK);
    seen_run_info ri[8];
    size_t nr = seen_runs(s, ri, 8);
    uint64_t payload = 0;
    for (size_t i = 0; i < nr; i++)
        payload += ri[i].bytes;
    fprintf(stderr, "[stat] 300 ints in [2.7M, 3.1M): %llu bytes of payload, %zu total\n",
            (unsigned long long)payload, seen_bytes(s));
    assert_true(payload <= 500);
    /* Exact: nothing else in the range is seen. */
    uint64_t probe[4000];
    uint8_t seen[4000];
    for (size_t i = 0; i < 4000; i++)
        probe[i] = 2700000 + i * 100 + 1;
    memset(seen, 0, sizeof seen);
    assert_int_equal(seen_filter_int(s, probe, 4000, T0 + 1000, seen), SEEN_OK);
    for (size_t i = 0; i < 4000; i++) {
        bool added = false;
        for (size_t j = 0; j < 300; j++)
            added |= ids[j] == probe[i];
        assert_int_equal(seen[i], added);
    }
    seen_free(s);
}

static void test_errors_change_nothing(void **state)
{
    (void)state;
    seen_policy p;
    seen_policy_default(&p);
    seen_policy bad = p;
    bad.slices = 0;
    seen_set *s = NULL;
    assert_int_equal(seen_create(&bad, &s), SEEN_ERR_SLICES);
    bad = p;
    bad.error = 0.5;
    assert_int_equal(seen_create(&bad, &s), SEEN_ERR_ERROR_RATE);
    bad.error = NAN;
    assert_int_equal(seen_policy_check(&bad), SEEN_ERR_ERROR_RATE);
    bad = p;
    bad.window_ms = 3; /* shorter than 4 slices */
    assert_int_equal(seen_policy_check(&bad), SEEN_ERR_WINDOW);
    bad = p;
    bad.ids = (seen_ids)7;
    assert_int_equal(seen_policy_check(&bad), SEEN_ERR_IDS);
    bad = p;
    bad.capacity = SEEN_MAX_CAPACITY + 1;
    assert_int_equal(seen_policy_check(&bad), SEEN_ERR_CAPACITY);
    assert_true(s == NULL);

    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    uint64_t ids[50];
    for (size_t i = 0; i < 50; i++)
        ids[i] = i * 7919;
    assert_int_equal(add_ids(s, ids, 50, NULL, T0, NULL), SEEN_OK);
    size_t len;
    uint8_t *before = snapshot(s, &len);
    seen_str empty = {"", 0};
    char big[SEEN_MAX_ITEM_LEN + 1];
    memset(big, 'x', sizeof big);
    seen_str too_long = {big, sizeof big};
    seen_str ok = {"fine", 4};
    seen_str mixed[3] = {ok, too_long, ok};
    assert_int_equal(seen_add_str(s, &empty, 1, NULL, T0, NULL), SEEN_ERR_ITEM_LEN);
    assert_int_equal(seen_add_str(s, mixed, 3, NULL, T0, NULL), SEEN_ERR_ITEM_LEN);
    assert_int_equal(seen_add_str(s, &ok, SEEN_MAX_BATCH + 1, NULL, T0, NULL), SEEN_ERR_BATCH);
    uint64_t one = 1;
    assert_int_equal(seen_add_int(s, &one, 1, NULL, T0, NULL), SEEN_ERR_IDS);
    int64_t bad_time = -1;
    assert_int_equal(seen_add_str(s, &ok, 1, &bad_time, T0, NULL), SEEN_ERR_TIME);
    assert_int_equal(seen_add_str(s, &ok, 1, NULL, SEEN_MAX_TIME_MS + 1, NULL), SEEN_ERR_TIME);
    assert_int_equal(seen_remove_str(s, &too_long, 1, T0, NULL), SEEN_ERR_ITEM_LEN);
    assert_int_equal(seen_add_str(NULL, &ok, 1, NULL, T0, NULL), SEEN_ERR_ARG);
    uint8_t flag;
    assert_int_equal(seen_filter_str(s, &too_long, 1, T0, &flag), SEEN_ERR_ITEM_LEN);
    /* A prepared query checks each item as it hashes it: a bad one after
     * good ones still fails the whole batch (and leaks nothing). */
    seen_query *q = NULL;
    assert_int_equal(seen_query_str(mixed, 3, &q), SEEN_ERR_ITEM_LEN);
    seen_str no_ptr[2] = {ok, {NULL, 3}};
    assert_int_equal(seen_query_str(no_ptr, 2, &q), SEEN_ERR_ARG);
    assert_int_equal(seen_query_str(&ok, SEEN_MAX_BATCH + 1, &q), SEEN_ERR_BATCH);
    assert_null(q);
    assert_int_equal(seen_filter_int(s, &one, 1, T0, &flag), SEEN_ERR_IDS);
    assert_int_equal(seen_serialize(s, before, len - 1, NULL), SEEN_ERR_BUFFER);
    assert_unchanged(s, before, len);
    for (int e = 0; e <= SEEN_ERR__COUNT; e++)
        assert_non_null(seen_strerror((seen_err)e));
    free(before);
    seen_free(s);
}

static void test_removal_approximate(void **state)
{
    (void)state;
    /* Removing an item forgets its fingerprint: it is no longer seen, and
     * other items are affected only through fingerprint collisions. */
    rng r = {test_seed("removal-approx", 61)};
    seen_policy p = policy(90 * DAY, 4, 0.01, 0, SEEN_IDS_STR, 16);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    enum { N = 20000, R = 2000 };
    uint64_t *ids = malloc(N * sizeof *ids);
    for (size_t i = 0; i < N; i++)
        ids[i] = rng_next(&r);
    assert_int_equal(add_ids(s, ids, N, NULL, T0, NULL), SEEN_OK);
    size_t removed;
    assert_int_equal(remove_ids(s, ids, R, T0 + 1, &removed), SEEN_OK);
    assert_int_equal(removed, R);
    uint8_t *seen = malloc(N);
    assert_int_equal(filter_ids(s, ids, N, T0 + 1, seen), SEEN_OK);
    size_t still = 0, lost = 0;
    for (size_t i = 0; i < R; i++)
        still += seen[i];
    for (size_t i = R; i < N; i++)
        lost += !seen[i];
    fprintf(stderr, "[stat] removal: %zu of %d removed still seen, %zu of %d others lost\n", still,
            R, lost, N - R);
    assert_true(still <= R * 0.05);
    assert_true(lost <= (N - R) * 0.01);
    assert_int_equal(seen__set_check(s), SEEN_OK);
    free(ids);
    free(seen);
    seen_free(s);
}

/* Removes from large runs with several segments (tags) and, under
 * jemalloc's classes, split in two blocks: removed items go, the others
 * stay, every state loads back; exact sets lose nothing else. */
static void test_removal_in_large_runs(void **state)
{
    (void)state;
    rng r = {test_seed("removal-large", 62)};
    for (int classes = 0; classes < 2; classes++) {
        if (classes)
            alloc_install_classes();
        const double errors[2] = {0, 0.001};
        for (int e = 0; e < 2; e++) {
            seen_policy p = policy(90 * DAY, 4, errors[e], 0, SEEN_IDS_STR, 16);
            seen_set *s;
            assert_int_equal(seen_create(&p, &s), SEEN_OK);
            enum { N = 60000, B = 2000 };
            uint64_t *ids = malloc(N * sizeof *ids);
            int64_t *at = malloc(B * sizeof *at);
            for (size_t i = 0; i < N; i++)
                ids[i] = rng_next(&r);
            for (size_t b = 0; b < N; b += B) {
                for (size_t j = 0; j < B; j++)
                    at[j] = T0 - 80 * DAY + (int64_t)((b + j) * (80 * DAY / N));
                assert_int_equal(add_ids(s, ids + b, B, at, T0, NULL), SEEN_OK);
            }
            assert_int_equal(seen_expire(s, T0), SEEN_OK);
            /* Remove in small batches, from every part of the set. */
            uint8_t *gone = calloc(N, 1);
            size_t removed_total = 0;
            for (int round = 0; round < 60; round++) {
                uint64_t batch[5];
                for (int j = 0; j < 5; j++) {
                    size_t i = (size_t)rng_below(&r, N);
                    batch[j] = ids[i];
                    gone[i] = 1;
                }
                size_t removed;
                assert_int_equal(remove_ids(s, batch, 5, T0 + 1, &removed), SEEN_OK);
                removed_total += removed;
                assert_int_equal(seen__set_check(s), SEEN_OK);
                if (round % 20 == 0)
                    s = roundtrip(s);
            }
            uint8_t *seen = malloc(N);
            assert_int_equal(filter_ids(s, ids, N, T0 + 1, seen), SEEN_OK);
            size_t still = 0, lost = 0;
            for (size_t i = 0; i < N; i++) {
                still += gone[i] && seen[i];
                lost += !gone[i] && !seen[i];
            }
            fprintf(stderr,
                    "[stat] removal in large runs (error %g%s): %zu removed, %zu still seen, "
                    "%zu others lost\n",
                    errors[e], classes ? ", jemalloc classes" : "", removed_total, still, lost);
            assert_int_equal(still, 0);
            assert_true(errors[e] > 0 ? lost <= 3 : lost == 0);
            free(seen);
            free(gone);
            free(at);
            free(ids);
            seen_free(s);
        }
        seen_set_allocator(NULL);
    }
}

/* Clustered integer ids with a far outlier: cut by value, nearly every id
 * would share one bucket; the run is cut by rank instead, which version 3
 * holds and version 2 refuses, and keeps lookups, deletes and round trips
 * exact.  A set without such a run can still be written as version 2. */
static void test_clustered_int_ids(void **state)
{
    (void)state;
    seen_policy p = policy(0, 1, 0, 0, SEEN_IDS_INT, 16);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    enum { N = 200000 };
    uint64_t *ids = malloc((N + 1) * sizeof *ids);
    for (size_t i = 0; i < N; i++)
        ids[i] = 5000000 + 2 * i;
    ids[N] = UINT64_C(1) << 60;
    assert_int_equal(add_ids(s, ids, N + 1, NULL, T0, NULL), SEEN_OK);
    assert_int_equal(seen_expire(s, T0), SEEN_OK);
    bool any_ranked = false;
    for (uint32_t i = 0; i < s->nruns; i++) {
        const seen__run *r = &s->runs[i];
        any_ranked |= r->nbuckets > 1 && r->bucket_w == 0;
    }
    assert_true(any_ranked);
    assert_int_equal(seen__set_check(s), SEEN_OK);

    size_t len = seen_serialized_size(s), w;
    /* Gaps of 1 inside buckets, the outlier's jump between two: ~2 bits
     * per id plus the index, not the ~40 of a parameter for ids spread
     * over the outlier's range. */
    fprintf(stderr, "[stat] clustered ids: %.2f bits per id serialized\n",
            8.0 * (double)len / (N + 1));
    assert_true(len * 8 < (size_t)(N + 1) * 4);
    assert_int_equal(seen__serialize_as(s, 2, NULL, 0, &w), SEEN_ERR_ARG);
    len = seen__serialized_size_as(s, 3);
    uint8_t *b = malloc(len);
    assert_int_equal(seen__serialize_as(s, 3, b, len, &w), SEEN_OK);
    assert_int_equal(b[4] | b[5] << 8, 3);
    seen_set *loaded = NULL;
    assert_int_equal(seen_deserialize(b, w, &loaded), SEEN_OK);
    seen_free(loaded);
    b[4] = 2; /* the same bytes claiming version 2, checksum made good */
    uint64_t sum = XXH3_64bits(b, w - 8);
    for (int k = 0; k < 8; k++)
        b[w - 8 + k] = (uint8_t)(sum >> (8 * k));
    assert_int_equal(seen_deserialize(b, w, &loaded), SEEN_ERR_FORMAT_CORRUPT);
    free(b);

    s = roundtrip(s);
    uint64_t probe[6] = {5000000,         5000001, 5000000 + 2 * 77777,
                         5000000 + 2 * N, ids[N],  ids[N] + 1};
    uint8_t seen[6];
    assert_int_equal(filter_ids(s, probe, 6, T0 + 1, seen), SEEN_OK);
    const uint8_t want[6] = {1, 0, 1, 0, 1, 0};
    assert_memory_equal(seen, want, 6);

    /* Deletes from the middle edit the ranked run; the rest stays. */
    uint64_t gone[3] = {5000000 + 2 * 1000, 5000000 + 2 * 100000, 5000000 + 2 * 150001};
    size_t removed;
    assert_int_equal(remove_ids(s, gone, 3, T0 + 1, &removed), SEEN_OK);
    assert_int_equal(removed, 3);
    assert_int_equal(seen__set_check(s), SEEN_OK);
    s = roundtrip(s);
    uint8_t *all = malloc(N + 1);
    assert_int_equal(filter_ids(s, ids, N + 1, T0 + 1, all), SEEN_OK);
    size_t present = 0;
    for (size_t i = 0; i <= N; i++)
        present += all[i];
    assert_int_equal(present, N + 1 - 3);
    free(all);
    free(ids);
    seen_free(s);

    /* Spread-out ids: cut by value, version 2 holds them; after a delete
     * of the smallest, which leaves the run's base in place, only version
     * 3 and later do. */
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    rng r = {test_seed("clustered", 71)};
    uint64_t spread[3000];
    for (size_t i = 0; i < 3000; i++)
        spread[i] = rng_next(&r);
    assert_int_equal(add_ids(s, spread, 3000, NULL, T0, NULL), SEEN_OK);
    assert_int_equal(seen_expire(s, T0), SEEN_OK);
    len = seen__serialized_size_as(s, 2);
    b = malloc(len);
    assert_int_equal(seen__serialize_as(s, 2, b, len, &w), SEEN_OK);
    assert_int_equal(b[4] | b[5] << 8, 2);
    free(b);
    uint64_t least = spread[0];
    for (size_t i = 1; i < 3000; i++)
        least = spread[i] < least ? spread[i] : least;
    assert_int_equal(remove_ids(s, &least, 1, T0 + 1, &removed), SEEN_OK);
    assert_int_equal(removed, 1);
    assert_int_equal(seen__serialize_as(s, 2, NULL, 0, &w), SEEN_ERR_ARG);
    len = seen__serialized_size_as(s, 3);
    b = malloc(len);
    assert_int_equal(seen__serialize_as(s, 3, b, len, &w), SEEN_OK);
    assert_int_equal(b[4] | b[5] << 8, 3);
    seen_set *back = NULL;
    assert_int_equal(seen_deserialize(b, w, &back), SEEN_OK);
    seen_free(back);
    free(b);
    seen_free(s);
}

/* A copy of s loaded from its bytes (s stays). */
static seen_set *roundtrip_copy(const seen_set *s)
{
    size_t len;
    uint8_t *b = snapshot(s, &len);
    seen_set *t = NULL;
    assert_int_equal(seen_deserialize(b, len, &t), SEEN_OK);
    free(b);
    return t;
}

/* A replica: a copy loaded from the bytes (a full sync, a restart) that then
 * receives the same writes must hold the same bytes after every one of
 * them.  Deletes of smallest ids, in-place flushes, rank cuts and runs
 * rebuilt later are where a state not carried in the bytes would show. */
static void test_reloaded_copy_stays_identical(void **state)
{
    (void)state;
    rng r = {test_seed("twin", 73)};
    const double errors[2] = {0, 0.001};
    for (int e = 0; e < 2; e++) {
        seen_policy p = policy(90 * DAY, 4, errors[e], 0, SEEN_IDS_INT, 16);
        seen_set *a, *b = NULL;
        assert_int_equal(seen_create(&p, &a), SEEN_OK);
        uint64_t next = 5000000, smallest = next;
        int64_t t = T0;
        for (int step = 0; step < 240; step++) {
            if (step % 15 == 0) {
                seen_free(b);
                b = roundtrip_copy(a);
                /* Every run's state, marks included, comes back. */
                assert_int_equal(b->nruns, a->nruns);
                for (uint32_t i = 0; i < a->nruns; i++)
                    assert_true(b->runs[i].loose_ends == a->runs[i].loose_ends);
            }
            uint64_t ids[400];
            size_t n;
            int op = (int)rng_below(&r, 10);
            if (op < 6) { /* a page of ids, now and then a far outlier */
                n = 20;
                for (size_t i = 0; i < n; i++)
                    ids[i] = rng_below(&r, 50) == 0 ? rng_next(&r) : next++;
                t += 3600 * 1000;
                assert_int_equal(add_ids(a, ids, n, NULL, t, NULL), SEEN_OK);
                assert_int_equal(add_ids(b, ids, n, NULL, t, NULL), SEEN_OK);
            } else if (op < 8) { /* a burst, to make runs large */
                n = 400;
                for (size_t i = 0; i < n; i++)
                    ids[i] = next++;
                assert_int_equal(add_ids(a, ids, n, NULL, t, NULL), SEEN_OK);
                assert_int_equal(add_ids(b, ids, n, NULL, t, NULL), SEEN_OK);
            } else { /* deletes: the smallest id, and one in the middle */
                ids[0] = smallest++;
                ids[1] = smallest + rng_below(&r, next - smallest);
                size_t ra, rb;
                assert_int_equal(remove_ids(a, ids, 2, t, &ra), SEEN_OK);
                assert_int_equal(remove_ids(b, ids, 2, t, &rb), SEEN_OK);
                assert_int_equal(ra, rb);
            }
            size_t la, lb;
            uint8_t *ba = snapshot(a, &la), *bb = snapshot(b, &lb);
            assert_int_equal(la, lb);
            assert_memory_equal(ba, bb, la);
            free(ba);
            free(bb);
        }
        assert_int_equal(seen__set_check(a), SEEN_OK);
        seen_free(a);
        seen_free(b);
    }
}

static void test_segment_id_renumbering(void **state)
{
    (void)state;
    /* A capped set opens a segment every few items, so a hot key can run
     * its ids up to SEEN_SEG_ID_LIMIT; the next write renumbers them.
     * Craft such a set, load it and keep using it. */
    seen_policy p = policy(60000, 4, 0, 40, SEEN_IDS_INT, 128);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    model m;
    model_init(&m, &p);
    int64_t now = T0;
    for (uint64_t id = 0; id < 30; id++) {
        assert_int_equal(seen_add_int(s, &id, 1, NULL, now, NULL), SEEN_OK);
        model_add(&m, id, now, now);
    }
    s = load_patched(s, patch_near_id_limit);
    for (uint64_t id = 30; id < 300; id++) {
        now += 10;
        assert_int_equal(seen_add_int(s, &id, 1, NULL, now, NULL), SEEN_OK);
        model_add(&m, id, now, now);
        assert_int_equal(seen__set_check(s), SEEN_OK);
    }
    assert_true(s->next_seg_id < 1000);
    for (uint64_t id = 0; id < 300; id++) {
        uint8_t f = 0;
        assert_int_equal(seen_filter_int(s, &id, 1, now, &f), SEEN_OK);
        expect e = model_expect(&m, id, now);
        if (e == MUST_SEE)
            assert_int_equal(f, 1);
        if (e == MUST_NOT_SEE)
            assert_int_equal(f, 0);
    }
    model_free(&m);
    seen_free(s);
}

/* ------------------------------------------------- allocation failures */

typedef enum op_kind {
    OP_ADD_ONE,
    OP_ADD_BATCH,
    OP_FILTER,
    OP_REMOVE,
    OP_EXPIRE,
    OP_COPY,
    OP_LOAD,
    OP__N
} op_kind;

/* Run one operation; the set must be unchanged whenever it fails. */
static seen_err run_op(op_kind k, seen_set **s, uint64_t base, int64_t now)
{
    uint64_t ids[700];
    for (size_t i = 0; i < 700; i++)
        ids[i] = base + i;
    uint8_t seen[700];
    switch (k) {
    case OP_ADD_ONE:
        return add_ids(*s, ids, 1, NULL, now, NULL);
    case OP_ADD_BATCH:
        return add_ids(*s, ids, 700, NULL, now, NULL);
    case OP_FILTER:
        return filter_ids(*s, ids, 700, now, seen);
    case OP_REMOVE:
        return remove_ids(*s, ids + 3, 5, now, NULL);
    case OP_EXPIRE:
        return seen_expire(*s, now);
    case OP_COPY: {
        seen_set *c = NULL;
        seen_err e = seen_copy(*s, &c);
        seen_free(c);
        return e;
    }
    case OP_LOAD: {
        size_t len = seen_serialized_size(*s);
        uint8_t *b = malloc(len);
        size_t w;
        seen_serialize(*s, b, len, &w);
        seen_set *t = NULL;
        seen_err e = seen_deserialize(b, len, &t);
        seen_free(t);
        free(b);
        return e;
    }
    default:
        return SEEN_ERR_ARG;
    }
}

/* A set left alone after a slice is forgotten keeps its entries until a
 * write or an expiry: seen_holds_forgotten() says so, so that a host can
 * reclaim them, and seen_expire() does. */
static void test_forgotten_entries_reclaimed(void **state)
{
    (void)state;
    enum { N = 2000 };
    probe_items pi;
    items_alloc(&pi, 2 * N);
    for (size_t i = 0; i < 2 * N; i++)
        items_set(&pi, i, i + 1);
    seen_policy p = policy(90 * DAY, 4, 0.001, 0, SEEN_IDS_STR, 16);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    /* N items in the first ten days, N more from day 30 to 40. */
    for (size_t i = 0; i < 2 * N; i += 20) {
        int64_t t = i < N ? T0 + (int64_t)i * 10 * DAY / N
                          : T0 + 30 * DAY + (int64_t)(i - N) * 10 * DAY / N;
        assert_int_equal(seen_add_str(s, pi.strs + i, 20, NULL, t, NULL), SEEN_OK);
    }
    int64_t last = T0 + 40 * DAY;
    assert_int_equal(seen_holds_forgotten(s, last), 0);
    /* The first slice (22.5 days) is forgotten from day 112.5 on, and
     * seen_idle_work_at() says when, so that a host need not ask before. */
    int64_t gone = T0 + 90 * DAY + 45 * DAY / 2;
    assert_int_equal(seen_idle_work_at(s), gone);
    assert_int_equal(seen_holds_forgotten(s, gone - 1), 0);
    assert_int_equal(seen_holds_forgotten(s, gone), 1);
    assert_int_equal(seen_compactable(s, gone), 0); /* no import to settle */
    size_t before = seen_bytes(s);
    assert_int_equal(seen_expire(s, gone), SEEN_OK);
    assert_int_equal(seen_holds_forgotten(s, gone), 0);
    /* The next: the slice of days 22.5-45, from day 135. */
    assert_int_equal(seen_idle_work_at(s), T0 + 90 * DAY + 45 * DAY);
    assert_int_equal(seen__set_check(s), SEEN_OK);
    assert_true(seen_bytes(s) * 10 < before * 6);
    assert_int_equal(seen_count(s, gone), N);
    uint8_t *seen = calloc(2 * N, 1);
    assert_int_equal(seen_filter_str(s, pi.strs, 2 * N, gone, seen), SEEN_OK);
    size_t early = 0;
    for (size_t i = 0; i < 2 * N; i++) {
        if (i >= N)
            assert_true(seen[i]);
        else
            early += seen[i];
    }
    assert_true(early < 10);
    free(seen);
    seen_free(s);
    items_free(&pi);
}

/* A batch walks each run either by its candidates or by its values,
 * whichever are fewer (query.c); one candidate at a time is a point lookup.
 * Every way must give the same answers, for runs below and above the
 * switch, runs of several slices some of them forgotten, Elias-Fano runs,
 * and exact keys up to UINT64_MAX. */
static void test_batch_walks_agree(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        double error;
        seen_ids ids;
        uint64_t capacity;
        uint64_t id_base;
    } kinds[] = {
        {"approx str", 0.001, SEEN_IDS_STR, 0, 1},
        {"approx int", 0.01, SEEN_IDS_INT, 0, 1},
        {"exact int near 2^64", 0, SEEN_IDS_INT, 0, UINT64_MAX - 100000},
        {"capped str", 0.001, SEEN_IDS_STR, 3000, 1},
    };
    /* 12: a set in its exact phase, all in the head, whose oldest
     * entries die while it waits for its next write. */
    static const size_t sizes[] = {12, 40, 700, 5000, 30000};
    static const size_t batches[] = {2000, 150};
    rng r = {test_seed("batch_walks_agree", 1)};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
            const size_t n = sizes[si];
            seen_policy p =
                policy(30 * DAY, 4, kinds[k].error, kinds[k].capacity, kinds[k].ids, 16);
            seen_set *s;
            assert_int_equal(seen_create(&p, &s), SEEN_OK);
            /* Pages over 45 days: a window and a half, so the oldest
             * slices are forgotten and runs hold several slices. */
            uint64_t *ids = malloc(n * sizeof *ids);
            for (size_t i = 0; i < n; i++)
                ids[i] = kinds[k].id_base + i * 3 + (uint64_t)(i % 2);
            /* The largest key there is, held by the exact sets: the
             * highest value a run or the head can hold. */
            if (kinds[k].id_base > 1)
                ids[n - 1] = UINT64_MAX;
            const size_t page = n < 400 ? 4 : 50;
            int64_t now = T0;
            for (size_t i = 0; i < n; i += page) {
                now = T0 + (int64_t)((double)i / (double)n * 45.0 * (double)DAY);
                size_t m = n - i < page ? n - i : page;
                assert_int_equal(add_ids(s, ids + i, m, NULL, now, NULL), SEEN_OK);
            }
            /* Asked at the last write and 12 days on, when the oldest
             * slices the runs still hold have died without a write. */
            for (size_t b = 0; b < 2 * sizeof batches / sizeof *batches; b++) {
                const size_t q = batches[b / 2];
                const int64_t at = b % 2 ? now + 12 * DAY : now;
                uint64_t *cand = malloc(q * sizeof *cand);
                for (size_t i = 0; i < q; i++)
                    cand[i] = rng_below(&r, 2) ? ids[rng_below(&r, n)]
                                               : kinds[k].id_base + rng_below(&r, 3 * n + 50);
                cand[0] = ids[n - 1];
                uint8_t *together = malloc(q), *alone = malloc(q);
                assert_int_equal(filter_ids(s, cand, q, at, together), SEEN_OK);
                size_t hits = 0;
                for (size_t i = 0; i < q; i++) {
                    assert_int_equal(filter_ids(s, cand + i, 1, at, alone + i), SEEN_OK);
                    if (together[i] != alone[i])
                        fail_msg("%s, %zu items, batch of %zu at +%lld ms: candidate %zu (id "
                                 "%llu) %d in the batch, %d alone",
                                 kinds[k].name, n, q, (long long)(at - now), i,
                                 (unsigned long long)cand[i], together[i], alone[i]);
                    hits += together[i];
                }
                assert_true(hits > 0 && hits < q);
                assert_true(together[0]);
                free(cand);
                free(together);
                free(alone);
            }
            free(ids);
            seen_free(s);
        }
    }
}

/* One prepared query (its candidates hashed and sorted once) run against a
 * small set, a large one and the small one again answers as a fresh query
 * does on each. */
static void test_prepared_query_across_sizes(void **state)
{
    (void)state;
    for (int ints = 0; ints < 2; ints++) {
        const seen_ids kind = ints ? SEEN_IDS_INT : SEEN_IDS_STR;
        seen_policy p = policy(30 * DAY, 4, 0.001, 0, kind, 16);
        seen_set *small, *large;
        assert_int_equal(seen_create(&p, &small), SEEN_OK);
        assert_int_equal(seen_create(&p, &large), SEEN_OK);
        enum { SMALL = 60, LARGE = 20000, Q = 3000 };
        uint64_t *ids = malloc(LARGE * sizeof *ids);
        for (size_t i = 0; i < LARGE; i++)
            ids[i] = 1000 + 7 * i;
        int64_t now = T0;
        for (size_t i = 0; i < LARGE; i += 20, now += 60000) {
            assert_int_equal(add_ids(large, ids + i, 20, NULL, now, NULL), SEEN_OK);
            if (i < SMALL)
                assert_int_equal(add_ids(small, ids + LARGE - 20 - i, 20, NULL, now, NULL),
                                 SEEN_OK);
        }
        rng r = {test_seed("prepared_query_across_sizes", (uint64_t)ints)};
        probe_items pi;
        items_alloc(&pi, Q);
        for (size_t i = 0; i < Q; i++)
            items_set(&pi, i,
                      rng_below(&r, 3) ? ids[rng_below(&r, LARGE)] : rng_below(&r, 1u << 30));
        seen_query *q;
        assert_int_equal(ints ? seen_query_int(pi.ints, Q, &q) : seen_query_str(pi.strs, Q, &q),
                         SEEN_OK);
        const seen_set *order[] = {small, large, small};
        for (size_t k = 0; k < 3; k++) {
            uint8_t got[Q], want[Q];
            memset(got, 0, Q);
            memset(want, 0, Q);
            assert_int_equal(seen_query_run(order[k], q, now, got), SEEN_OK);
            assert_int_equal(ints ? seen_filter_int(order[k], pi.ints, Q, now, want)
                                  : seen_filter_str(order[k], pi.strs, Q, now, want),
                             SEEN_OK);
            assert_memory_equal(got, want, Q);
            size_t hits = 0;
            for (size_t i = 0; i < Q; i++)
                hits += got[i];
            assert_true(hits > 0 && hits < Q);
        }
        seen_query_free(q);
        items_free(&pi);
        free(ids);
        seen_free(small);
        seen_free(large);
    }
}

static void test_allocation_failures(void **state)
{
    (void)state;
    alloc_install();
    seen_policy pols[3];
    pols[0] = policy(60000, 4, 0.01, 0, SEEN_IDS_STR, 16);
    pols[1] = policy(0, 4, 0, 300, SEEN_IDS_INT, 128);
    pols[2] = policy(60000, 3, 0.001, 2000, SEEN_IDS_INT, 32);
    for (size_t pi = 0; pi < 3; pi++) {
        alloc_reset(-1);
        seen_set *s;
        assert_int_equal(seen_create(&pols[pi], &s), SEEN_OK);
        int64_t now = T0;
        for (int round = 0; round < 12; round++) {
            for (int k = 0; k < OP__N; k++) {
                now += 2500; /* slices end, items expire, runs get purged */
                size_t len;
                uint8_t *before = snapshot(s, &len);
                long baseline = g_alloc.live;
                long n = 0;
                for (;; n++) {
                    alloc_reset(n);
                    seen_err e = run_op((op_kind)k, &s, (uint64_t)round * 1000, now);
                    alloc_reset(-1);
                    if (e == SEEN_OK)
                        break;
                    assert_int_equal(e, SEEN_ERR_NOMEM);
                    assert_int_equal(g_alloc.live, baseline); /* nothing leaked */
                    assert_unchanged(s, before, len);
                    assert_int_equal(seen__set_check(s), SEEN_OK);
                    assert_true(n < 100000);
                }
                free(before);
                assert_int_equal(seen__set_check(s), SEEN_OK);
            }
        }
        seen_free(s);
        assert_int_equal(g_alloc.live, 0);
    }
    /* Creation itself. */
    alloc_reset(0);
    seen_set *s = NULL;
    assert_int_equal(seen_create(&pols[0], &s), SEEN_ERR_NOMEM);
    alloc_reset(-1);
    assert_int_equal(g_alloc.live, 0);
    seen_set_allocator(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_str_window),
        cmocka_unit_test(test_exact_int_late),
        cmocka_unit_test(test_approx_str_window),
        cmocka_unit_test(test_approx_str_late),
        cmocka_unit_test(test_approx_int),
        cmocka_unit_test(test_capacity_exact),
        cmocka_unit_test(test_capacity_window_approx),
        cmocka_unit_test(test_capacity_late_exact),
        cmocka_unit_test(test_capacity_window_late),
        cmocka_unit_test(test_capacity_window_late_approx),
        cmocka_unit_test(test_capacity_across_writes),
        cmocka_unit_test(test_collision_mark_keeps_the_set_alive),
        cmocka_unit_test(test_no_window_approx),
        cmocka_unit_test(test_one_slice_and_many),
        cmocka_unit_test(test_capped_segments_bounded),
        cmocka_unit_test(test_burst_after_small_history),
        cmocka_unit_test(test_light_user_keeps_few_runs),
        cmocka_unit_test(test_light_user_turning_heavy),
        cmocka_unit_test(test_growing_user_keeps_fingerprints),
        cmocka_unit_test(test_bulk_load_plans_for_what_it_holds),
        cmocka_unit_test(test_live_adds_after_import),
        cmocka_unit_test(test_head_run_turns_elias_fano),
        cmocka_unit_test(test_mid_set_head_run_elias_fano),
        cmocka_unit_test(test_large_set_recodes_small_plans_runs),
        cmocka_unit_test(test_page_head_matches_loaded),
        cmocka_unit_test(test_loaded_edges_take_writes),
        cmocka_unit_test(test_writes_near_linear),
        cmocka_unit_test(test_removal_in_large_runs),
        cmocka_unit_test(test_window_edges),
        cmocka_unit_test(test_reports_follow_the_clock),
        cmocka_unit_test(test_readd_within_slice_changes_nothing),
        cmocka_unit_test(test_idempotent),
        cmocka_unit_test(test_false_positive_rate),
        cmocka_unit_test(test_bits_per_item),
        cmocka_unit_test(test_import_at_one_now),
        cmocka_unit_test(test_steady_state),
        cmocka_unit_test(test_readded_items_keep_the_plan),
        cmocka_unit_test(test_small_exact_set_keeps_head),
        cmocka_unit_test(test_young_sets_compact),
        cmocka_unit_test(test_many_runs_fold_rarely),
        cmocka_unit_test(test_slice_end_rewrites_main_once),
        cmocka_unit_test(test_late_first_pages_plan_as_in_order),
        cmocka_unit_test(test_user_back_after_a_window_lives_as_new),
        cmocka_unit_test(test_growing_user_stays_writable),
        cmocka_unit_test(test_capped_set_plans_for_its_cap),
        cmocka_unit_test(test_unbounded_set_grows_compact),
        cmocka_unit_test(test_short_window_first_day),
        cmocka_unit_test(test_loads_version_1),
        cmocka_unit_test(test_int_ids_compact),
        cmocka_unit_test(test_errors_change_nothing),
        cmocka_unit_test(test_removal_approximate),
        cmocka_unit_test(test_segment_id_renumbering),
        cmocka_unit_test(test_clustered_int_ids),
        cmocka_unit_test(test_reloaded_copy_stays_identical),
        cmocka_unit_test(test_forgotten_entries_reclaimed),
        cmocka_unit_test(test_batch_walks_agree),
        cmocka_unit_test(test_prepared_query_across_sizes),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests_name("seen sets against the model", tests, NULL, NULL);
}
