/*
 * test_raw_keys.c — integer sets keyed by the raw ids.
 *
 * An IDS INT set with an error bound keeps its ids exactly while that is
 * the smaller form (plan.c, raw_keys_stay_exact) and mixes them into
 * fingerprints, once, when it is not.  These tests check what that makes
 * true: a catalogue's clustered ids stay exact and smaller than the
 * fingerprints the set would otherwise hold; wide ids leave at the exact
 * limit as before; past SEEN_RAW_KEYS_MAX entries even dense ids leave;
 * and against the naive model, through imports,
 * removals, expiry, serialization and the switch itself, no added id is
 * ever missed and a set still keyed by raw ids sees nothing it was not
 * given.
 */
#include "internal.h"
#include "spec_walk.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define T0 (1790000000000LL)
#define MINUTE (60000LL)
#define DAY (86400000LL)

static seen_policy int_policy(uint64_t window_ms)
{
    seen_policy p;
    seen_policy_default(&p);
    p.ids = SEEN_IDS_INT;
    p.window_ms = window_ms;
    return p;
}

/* A new IDS INT set of the default policy with this window. */
static seen_set *new_int_set(uint64_t window_ms)
{
    seen_policy p = int_policy(window_ms);
    seen_set *s = NULL;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    return s;
}

/* The set as a loader gives it back (and the same bytes again). */
static seen_set *reloaded(seen_set *s)
{
    size_t len = seen_serialized_size(s), w = 0;
    uint8_t *buf = malloc(len);
    assert_int_equal(seen_serialize(s, buf, len, &w), SEEN_OK);
    static walk spec; /* written as FORMAT.md describes it */
    spec_walk(&spec, buf, len);
    seen_set *t = NULL;
    assert_int_equal(seen_deserialize(buf, len, &t), SEEN_OK);
    assert_int_equal(seen__set_check(t), SEEN_OK);
    assert_int_equal(t->raw_keys, s->raw_keys);
    assert_int_equal(seen_serialized_size(t), len);
    free(buf);
    seen_free(s);
    return t;
}

/* Seed 004's case: 300 app ids of a 400,000-id catalogue in a 10-minute
 * session, pages of 20.  Kept exact, the set is smaller than the same
 * writes into a set that mixes its ids from the start (what every IDS INT
 * set did before raw keys), and it answers with no false positives. */
static void test_catalogue_ids_stay_exact(void **state)
{
    (void)state;
    rng r = {test_seed("raw-catalogue", 4)};
    seen_policy p = int_policy(10 * MINUTE);
    seen_set *raw, *mixed;
    assert_int_equal(seen_create(&p, &raw), SEEN_OK);
    assert_int_equal(seen_create(&p, &mixed), SEEN_OK);
    assert_true(raw->raw_keys);
    mixed->raw_keys = 0;
    uint64_t ids[300];
    for (size_t i = 0; i < 300; i++) {
    again:
        ids[i] = 2700000 + rng_below(&r, 400000);
        for (size_t j = 0; j < i; j++)
            if (ids[j] == ids[i])
                goto again;
    }
    for (int pg = 0; pg < 15; pg++) {
        int64_t t = T0 + 10 * MINUTE * (pg + 1) / 15;
        assert_int_equal(seen_add_int(raw, &ids[pg * 20], 20, NULL, t, NULL), SEEN_OK);
        assert_int_equal(seen_add_int(mixed, &ids[pg * 20], 20, NULL, t, NULL), SEEN_OK);
        assert_true(raw->raw_keys);
        assert_int_equal(seen__set_check(raw), SEEN_OK);
    }
    raw = reloaded(raw);
    size_t raw_bytes = seen_serialized_size(raw), mixed_bytes = seen_serialized_size(mixed);
    fprintf(stderr,
            "[stat] 300 ids in [2.7M, 3.1M), 10 minutes: raw keys %zu bytes serialized, "
            "mixed %zu\n",
            raw_bytes, mixed_bytes);
    /* 612 against 638 bytes: the mixed twin, a set this small, re-plans
     * by whole factors, so its pages' runs fold together, and is young,
     * so its first plan is for SEEN_YOUNG_MIN_TARGET items. */
    assert_true(raw_bytes < mixed_bytes);
    assert_true(seen_fpr_estimate(raw) == 0.0);
    /* Every id of the range answers exactly. */
    const int64_t now = T0 + 10 * MINUTE;
    enum { PROBES = 40000 };
    uint64_t *probe = malloc(PROBES * sizeof *probe);
    uint8_t *seen = calloc(PROBES, 1);
    for (size_t i = 0; i < PROBES; i++)
        probe[i] = 2700000 + i * 10;
    for (size_t i = 0; i < 300; i++)
        probe[(ids[i] - 2700000) % PROBES] = ids[i];
    assert_int_equal(seen_filter_int(raw, probe, PROBES, now, seen), SEEN_OK);
    for (size_t i = 0; i < PROBES; i++) {
        bool added = false;
        for (size_t j = 0; j < 300; j++)
            added |= ids[j] == probe[i];
        assert_int_equal(seen[i], added);
    }
    free(probe);
    free(seen);
    seen_free(raw);
    seen_free(mixed);
}

/* Random 64-bit ids cost ~55 bits each exactly: such a set mixes them at
 * its exact limit, as a hashed one does, and ends no larger than a set
 * that mixed them from the start. */
static void test_wide_ids_leave_raw_keys(void **state)
{
    (void)state;
    rng r = {test_seed("raw-wide", 5)};
    seen_policy p = int_policy(90 * DAY);
    seen_set *raw, *mixed;
    assert_int_equal(seen_create(&p, &raw), SEEN_OK);
    assert_int_equal(seen_create(&p, &mixed), SEEN_OK);
    mixed->raw_keys = 0;
    uint64_t ids[20];
    for (int pg = 0; pg < 500; pg++) {
        for (int i = 0; i < 20; i++)
            ids[i] = rng_next(&r);
        int64_t t = T0 + 90 * DAY * pg / 500;
        assert_int_equal(seen_add_int(raw, ids, 20, NULL, t, NULL), SEEN_OK);
        assert_int_equal(seen_add_int(mixed, ids, 20, NULL, t, NULL), SEEN_OK);
        if (pg >= 1)
            assert_false(raw->raw_keys);
        for (int i = 0; i < 20; i++)
            assert_true(set_sees(raw, ids[i], t));
    }
    size_t raw_bytes = seen_serialized_size(raw), mixed_bytes = seen_serialized_size(mixed);
    fprintf(stderr, "[stat] 10,000 random ids: %zu bytes serialized, mixed from the start %zu\n",
            raw_bytes, mixed_bytes);
    assert_true(raw_bytes * 100 <= mixed_bytes * 102);
    seen_free(raw);
    seen_free(mixed);
}

/* A session of catalogue ids, then a write of wide ones the set keeps
 * raw at first: the next write that adds nothing to the head (an expiry,
 * as the server's compaction runs) weighs the runs again and mixes them.
 * Writes that add to the head weigh it only now and then; this one must
 * still ask. */
static void test_expiry_leaves_raw_keys_when_due(void **state)
{
    (void)state;
    rng r = {test_seed("raw-expiry", 9)};
    seen_set *s = new_int_set(10 * MINUTE);
    uint64_t ids[40];
    for (int pg = 0; pg < 15; pg++) {
        for (int i = 0; i < 20; i++)
            ids[i] = 2700000 + rng_below(&r, 400000);
        assert_int_equal(seen_add_int(s, ids, 20, NULL, T0 + pg * 1000, NULL), SEEN_OK);
        assert_true(s->raw_keys);
    }
    for (int i = 0; i < 40; i++)
        ids[i] = rng_next(&r) >> 2;
    assert_int_equal(seen_add_int(s, ids, 40, NULL, T0 + 20000, NULL), SEEN_OK);
    assert_int_equal(seen_expire(s, T0 + 21000), SEEN_OK);
    assert_false(s->raw_keys);
    for (int i = 0; i < 40; i++)
        assert_true(set_sees(s, ids[i], T0 + 21000));
    seen_free(s);
}

/* Ids handed out in sequence (a catalogue growing at its end): every page
 * lies past what the runs hold, yet costs only the small gaps it opens.
 * 100,000 of them over 90 days stay exact at a third of the bytes of
 * fingerprints. */
static void test_sequential_ids_stay_exact(void **state)
{
    (void)state;
    rng r = {test_seed("raw-sequential", 7)};
    seen_policy p = int_policy(90 * DAY);
    seen_set *raw, *mixed;
    assert_int_equal(seen_create(&p, &raw), SEEN_OK);
    assert_int_equal(seen_create(&p, &mixed), SEEN_OK);
    mixed->raw_keys = 0;
    enum { N = 100000, PAGE = 500 };
    uint64_t *ids = malloc(N * sizeof *ids);
    for (size_t i = 0; i < N; i++)
        ids[i] = 5000000 + 3 * i + rng_below(&r, 3);
    for (size_t i = 0; i < N; i += PAGE) {
        int64_t t = T0 + 90 * DAY * (int64_t)i / N;
        assert_int_equal(seen_add_int(raw, &ids[i], PAGE, NULL, t, NULL), SEEN_OK);
        assert_int_equal(seen_add_int(mixed, &ids[i], PAGE, NULL, t, NULL), SEEN_OK);
        assert_true(raw->raw_keys);
    }
    const int64_t now = T0 + 90 * DAY - 1; /* every page within the window */
    size_t raw_bytes = seen_serialized_size(raw), mixed_bytes = seen_serialized_size(mixed);
    fprintf(stderr, "[stat] 100,000 sequential ids: raw keys %zu bytes serialized, mixed %zu\n",
            raw_bytes, mixed_bytes);
    assert_true(raw_bytes * 3 <= mixed_bytes);
    uint8_t *seen = calloc(N, 1);
    assert_int_equal(seen_filter_int(raw, ids, N, now, seen), SEEN_OK);
    for (size_t i = 0; i < N; i++)
        assert_int_equal(seen[i], 1);
    free(seen);
    free(ids);
    seen_free(raw);
    seen_free(mixed);
}

/* Past SEEN_RAW_KEYS_MAX entries a set mixes its ids whatever they cost,
 * so that one rewrite stays bounded: sequential ids, exact up to there,
 * then fingerprints, with every id still seen (before and after a reload)
 * and fresh ones within the error. */
static void test_raw_keys_leave_at_their_limit(void **state)
{
    (void)state;
    rng r = {test_seed("raw-limit", 8)};
    seen_set *s = new_int_set(90 * DAY);
    enum { PAGE = 8192 };
    const size_t n = SEEN_RAW_KEYS_MAX + 4 * PAGE;
    uint64_t *ids = malloc(n * sizeof *ids);
    for (size_t i = 0; i < n; i++)
        ids[i] = 9000000 + 2 * i + rng_below(&r, 2);
    size_t left_at = 0;
    for (size_t i = 0; i < n; i += PAGE) {
        int64_t t = T0 + 90 * DAY * (int64_t)i / (int64_t)n;
        assert_int_equal(seen_add_int(s, &ids[i], PAGE, NULL, t, NULL), SEEN_OK);
        if (i + PAGE <= SEEN_RAW_KEYS_MAX)
            assert_true(s->raw_keys);
        if (!s->raw_keys && left_at == 0)
            left_at = i + PAGE;
    }
    fprintf(stderr, "[stat] sequential ids: raw keys until %zu entries\n", left_at);
    assert_true(left_at > SEEN_RAW_KEYS_MAX && left_at <= SEEN_RAW_KEYS_MAX + PAGE);
    assert_int_equal(seen__set_check(s), SEEN_OK);
    assert_true(seen_fpr_estimate(s) <= seen_get_policy(s)->error);
    s = reloaded(s);
    const int64_t now = T0 + 90 * DAY - 1;
    uint8_t *seen = calloc(n, 1);
    for (size_t i = 0; i < n; i += SEEN_MAX_BATCH) {
        size_t k = n - i < SEEN_MAX_BATCH ? n - i : SEEN_MAX_BATCH;
        assert_int_equal(seen_filter_int(s, ids + i, k, now, seen + i), SEEN_OK);
    }
    for (size_t i = 0; i < n; i++)
        assert_int_equal(seen[i], 1);
    /* Fresh ids: within the range's holes and past it. */
    enum { FRESH = 200000 };
    uint64_t *fresh = malloc(FRESH * sizeof *fresh);
    for (size_t i = 0; i < FRESH; i++)
        fresh[i] = i % 2 ? 9000000 + 2 * (uint64_t)n + i : rng_next(&r);
    memset(seen, 0, n);
    assert_int_equal(seen_filter_int(s, fresh, FRESH, now, seen), SEEN_OK);
    size_t fp = 0;
    for (size_t i = 0; i < FRESH; i++)
        fp += seen[i];
    fprintf(stderr, "[stat] after mixing: %zu false positives of %d fresh ids\n", fp, FRESH);
    assert_true((double)fp <= 2.0 * seen_get_policy(s)->error * FRESH + 20.0);
    free(fresh);
    free(seen);
    free(ids);
    seen_free(s);
}

/* Ids of one of three shapes, so a set meets raw keys' every state: a
 * tight catalogue, a wider one (exact at first, mixed as it grows), and
 * now and then a far id. */
static uint64_t draw_id(rng *r, unsigned shape)
{
    switch (shape) {
    case 0:
        return 2700000 + rng_below(r, 4000);
    case 1:
        return 2700000 + rng_below(r, 2000000);
    default:
        return rng_below(r, 64) == 0 ? rng_next(r) : 2700000 + rng_below(r, 40000);
    }
}

/*
 * Against the model: pages live and late (imports spread over up to two
 * windows), removals, time jumps, expiry and reloads, over windowed,
 * capped and unwindowed policies.  After every step the set passes its
 * own checks; a sample of ids is checked: none the model must see is
 * missed, and while the set is keyed by raw ids, none it must not see is
 * seen.  Some sets must leave raw keys on the way, and some keep them.
 */
static void test_raw_keys_against_model(void **state)
{
    (void)state;
    rng r = {test_seed("raw-model", 6)};
    int left = 0, kept = 0;
    for (int trial = 0; trial < 36; trial++) {
        unsigned shape = (unsigned)trial % 3;
        seen_policy p = int_policy(trial % 4 == 3 ? 0 : (uint64_t)(1 + trial % 4) * 30 * DAY);
        if (trial % 6 == 5)
            p.capacity = 500;
        p.error = trial % 2 ? 0.001 : 0.01;
        seen_set *s;
        assert_int_equal(seen_create(&p, &s), SEEN_OK);
        model m;
        model_init(&m, &p);
        int64_t now = T0;
        uint64_t added[4096];
        size_t nadded = 0;
        bool removed_mixed = false; /* a remove after the ids were mixed */
        for (int step = 0; step < 120; step++) {
            unsigned op = (unsigned)rng_below(&r, 10);
            if (op < 5) {
                /* A page, live or (op 4) an import spread over the past. */
                enum { PAGE = 40 };
                uint64_t ids[PAGE];
                int64_t at[PAGE];
                size_t n = 1 + rng_below(&r, PAGE);
                int64_t back = p.window_ms ? 2 * (int64_t)p.window_ms : 60 * DAY;
                for (size_t i = 0; i < n; i++) {
                    ids[i] = draw_id(&r, shape);
                    at[i] = op == 4 ? now - (int64_t)rng_below(&r, (uint64_t)back) : now;
                }
                assert_int_equal(seen_add_int(s, ids, n, op == 4 ? at : NULL, now, NULL), SEEN_OK);
                for (size_t i = 0; i < n; i++) {
                    model_add(&m, ids[i], at[i], now);
                    if (nadded < 4096)
                        added[nadded++] = ids[i];
                }
            } else if (op == 5 && nadded) {
                model_observe(&m, now);
                uint64_t id = added[rng_below(&r, nadded)];
                removed_mixed |= !s->raw_keys;
                assert_int_equal(seen_remove_int(s, &id, 1, now, NULL), SEEN_OK);
                model_remove(&m, id);
                if (s->raw_keys)
                    assert_false(set_sees(s, id, now));
            } else if (op == 6) {
                model_observe(&m, now);
                now += (int64_t)rng_below(&r, 20 * DAY);
                model_observe(&m, now);
            } else if (op == 7) {
                assert_int_equal(seen_expire(s, now), SEEN_OK);
            } else if (op == 8) {
                s = reloaded(s);
            } else {
                now += MINUTE;
            }
            assert_int_equal(seen__set_check(s), SEEN_OK);
            for (int k = 0; k < 24 && nadded; k++) {
                uint64_t id = k % 2 ? added[rng_below(&r, nadded)] : draw_id(&r, shape);
                expect e = model_expect(&m, id, now);
                bool f = set_sees(s, id, now);
                /* An approximate remove may take a colliding fingerprint
                 * along; exact keys never do. */
                if (e == MUST_SEE && !removed_mixed)
                    assert_true(f);
                if (e == MUST_NOT_SEE && s->raw_keys)
                    assert_false(f);
            }
        }
        if (s->raw_keys)
            kept++;
        else
            left++;
        model_free(&m);
        seen_free(s);
    }
    fprintf(stderr, "[stat] raw keys against the model: %d sets kept them, %d left\n", kept, left);
    assert_true(kept > 0 && left > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_catalogue_ids_stay_exact),
        cmocka_unit_test(test_wide_ids_leave_raw_keys),
        cmocka_unit_test(test_expiry_leaves_raw_keys_when_due),
        cmocka_unit_test(test_sequential_ids_stay_exact),
        cmocka_unit_test(test_raw_keys_leave_at_their_limit),
        cmocka_unit_test(test_raw_keys_against_model),
    };
    return cmocka_run_group_tests_name("integer sets keyed by raw ids", tests, NULL, NULL);
}
