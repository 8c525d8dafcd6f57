/*
 * test_run.c — white-box tests of the core's building blocks: division by
 * invariant divisors, Golomb-coded and Elias-Fano runs (encode, decode,
 * validate, point and batch lookups) across value distributions and tag
 * alphabets, and the
 * candidate sort.  Randomised with printed seeds.
 */
#include "run_layout.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_divider(void **state)
{
    (void)state;
    rng r = {test_seed("divider", 1)};
    uint64_t fixed[] = {1,
                        2,
                        3,
                        5,
                        7,
                        10,
                        1000,
                        4096,
                        12345678901ull,
                        (1ull << 63),
                        (1ull << 63) + 1,
                        UINT64_MAX,
                        UINT64_MAX - 1,
                        0x123456789abcdefull};
    for (size_t k = 0; k < sizeof fixed / sizeof *fixed + 2000; k++) {
        uint64_t d =
            k < sizeof fixed / sizeof *fixed ? fixed[k] : rng_next(&r) >> rng_below(&r, 64);
        if (d == 0)
            d = 1;
        seen__divider v;
        seen__divider_init(&v, d);
        uint64_t probes[] = {
            0, 1, d - 1, d, d + 1, UINT64_MAX, UINT64_MAX - 1, rng_next(&r), rng_next(&r) >> 20};
        for (size_t i = 0; i < sizeof probes / sizeof *probes; i++)
            assert_true(seen__div(&v, probes[i]) == probes[i] / d);
    }
}

/* Values of one of several shapes, sorted and distinct. */
static size_t make_values(rng *r, int shape, size_t n, uint64_t *v)
{
    for (size_t i = 0; i < n; i++) {
        switch (shape) {
        case 0:
            v[i] = rng_next(r);
            break; /* uniform 64-bit */
        case 1:
            v[i] = rng_below(r, n * 3 + 1);
            break; /* dense */
        case 2:
            v[i] = 2700000 + rng_below(r, 400000);
            break; /* app ids */
        case 3:
            v[i] = (rng_below(r, 4) << 60) + rng_below(r, 1000);
            break; /* clusters */
        case 5:
            v[i] = 5000000 + rng_below(r, n * 2 + 1);
            break; /* clustered ids (and a far outlier, below) */
        default:
            v[i] = rng_next(r) >> 27;
            break; /* fingerprints */
        }
    }
    if (n > 2) {
        v[0] = 0;
        if (shape == 0)
            v[1] = UINT64_MAX;
        if (shape == 5)
            v[1] = UINT64_C(1) << 60;
    }
    qsort(v, n, sizeof *v, cmp_u64);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || v[u - 1] != v[i])
            v[u++] = v[i];
    return u;
}

/* In-place adds that applied, over all runs checked (reported, and must
 * not be none). */
static int in_place_adds, widened_adds, ef_adds_in_place;
/* In-place adds past the top of a Golomb run of several buckets, and of
 * an Elias-Fano run. */
static int appended_adds, ef_appended_adds;

/* Encodes, decodes, looks up, clones and corrupts one run, Golomb-coded
 * or (ef) Elias-Fano; true if the run was stored in two blocks. */
/* Deletes check_run saw applied to Elias-Fano runs in place. */
static int ef_deletes_in_place;
/* Runs check_run coded with a general Golomb parameter. */
static int general_runs;

/* Which look-aheads (seen__ef_ahead) the batches of check_run walked:
 * bit k for k words. */
static unsigned ef_aheads_walked;

/* What an Elias-Fano run's blocks cost as laid out (a split charged
 * SEEN_SPLIT_MIN_GAIN for its second block). */
static size_t ef_layout_cost(const seen__run *run)
{
    if (run->tail == NULL)
        return seen__alloc_class(seen__run_mem_size(run));
    return seen__alloc_class(seen__run_front_bytes(run)) +
           seen__alloc_class(seen__run_tail_bytes(run)) + SEEN_SPLIT_MIN_GAIN;
}

/* The least of that over every layout: one block, or two cut before any
 * value whose low starts on a byte, each tried. */
static size_t ef_least_layout_cost(const seen__run *run)
{
    const size_t whole = seen__run_mem_size(run), off = codes_offset(run), bytes = code_bytes(run);
    size_t least = seen__alloc_class(whole);
    if (run->ef.low == 0)
        return least;
    for (uint64_t i = 1; i < run->n; i++) {
        uint64_t bit = ef_ups_bits(run) + i * run->ef.low;
        if (bit % 8 != 0)
            continue;
        size_t cost = seen__alloc_class(off + (size_t)(bit / 8) + SEEN_RUN_PAD) +
                      seen__alloc_class(bytes - (size_t)(bit / 8) + SEEN_RUN_PAD) +
                      SEEN_SPLIT_MIN_GAIN;
        least = cost < least ? cost : least;
    }
    return least;
}

static bool check_run(rng *r, int shape, size_t n, uint32_t nsegs, bool ef)
{
    uint64_t *v = malloc((n + 1) * sizeof *v);
    uint16_t *t = malloc((n + 1) * sizeof *t);
    uint64_t *dv = malloc((n + 1) * sizeof *dv);
    uint16_t *dt = malloc((n + 1) * sizeof *dt);
    uint32_t ids[64];
    for (uint32_t k = 0; k < nsegs; k++)
        ids[k] = 100 + k;
    n = make_values(r, shape, n, v);
    for (size_t i = 0; i < n; i++)
        t[i] = (uint16_t)rng_below(r, nsegs);
    seen__run run;
    /* Both bucket densities: the writer chooses, the loader accepts either
     * and nothing else. */
    bool fine = rng_below(r, 3) == 0;
    if (ef && seen__ef_low_bits(n, v[n - 1] - v[0]) > SEEN_EF_MAX_LOW_BITS) {
        /* Too sparse for Elias-Fano: the encoder refuses, the writer
         * codes such runs Golomb. */
        assert_false(seen__ef_wanted(2, n, v[n - 1] - v[0], fine));
        assert_int_equal(seen__ef_encode(&run, 2, v, t, n, ids, nsegs), SEEN_ERR_ARG);
        free(v);
        free(t);
        free(dv);
        free(dt);
        return false;
    }
    if (ef) {
        assert_int_equal(seen__ef_encode(&run, 2, v, t, n, ids, nsegs), SEEN_OK);
        assert_true(seen__run_is_ef(&run));
        /* The header must agree with n and span. */
        run.ef.low++;
        assert_int_equal(seen__ef_shape(&run), SEEN_ERR_FORMAT_CORRUPT);
        run.ef.low--;
        run.code_bits++;
        assert_int_equal(seen__ef_shape(&run), SEEN_ERR_FORMAT_CORRUPT);
        run.code_bits--;
    } else if (rng_below(r, 3) == 0 && n > 1) {
        /* A general Golomb parameter, as earlier writers chose (the writer
         * now takes powers of two): every reader below decodes it too. */
        uint64_t m = seen__golomb_choose(n, v[n - 1] - v[0]);
        m = m < 4 ? 3 : m > SEEN_MAX_GOLOMB_M / 2 ? m - 1 : m + m / 2 + 1;
        assert_int_equal(seen__run_encode_m(&run, 1, v, t, n, ids, nsegs, fine, m), SEEN_OK);
        if (!run_ranked(&run)) {
            assert_int_equal(run.golomb_m, m);
            general_runs++;
        }
    } else {
        assert_int_equal(seen__run_encode(&run, 1, v, t, n, ids, nsegs, fine), SEEN_OK);
        /* Exact values dense enough are coded Elias-Fano (seen__ef_wanted). */
        assert_int_equal(seen__run_is_ef(&run), seen__ef_wanted(1, n, v[n - 1] - v[0], fine));
        ef = seen__run_is_ef(&run);
        if (!run_ranked(&run) && !ef) {
            uint64_t m = run.golomb_m;
            assert_true(m > 0 && (m & (m - 1)) == 0);
        }
    }
    assert_int_equal(seen__run_validate(&run), SEEN_OK);
    uint32_t per = fine ? SEEN_BUCKET_ITEMS / 2 : SEEN_BUCKET_ITEMS;
    /* A run cut by rank may add buckets where its values jump. */
    if (ef)
        assert_int_equal(run.nbuckets, 1);
    else if (run_ranked(&run))
        assert_true(run.nbuckets >= n / per && nbuckets_allowed(n, run.nbuckets));
    else
        assert_int_equal(run.nbuckets, n / per < 2 ? 1 : n / per);
    if (run.nbuckets > 2 && !run_ranked(&run)) {
        uint32_t nb = run.nbuckets;
        run.nbuckets = nb + 1;
        assert_int_equal(seen__run_validate(&run), SEEN_ERR_FORMAT_CORRUPT);
        run.nbuckets = nb;
    }
    seen__run_decode(&run, dv, dt);
    assert_memory_equal(dv, v, n * sizeof *v);
    assert_memory_equal(dt, t, n * sizeof *t);
    /* Counting the tags (a trusted load's work) agrees with decoding them. */
    {
        uint64_t want[64] = {0}, got[64] = {0};
        for (size_t i = 0; i < n; i++)
            want[t[i]]++;
        seen__run_count_tags(&run, got);
        assert_memory_equal(got, want, sizeof want);
    }
    /* Buckets stay bounded whatever the values: cut by value where that
     * spreads them, by rank where it would not. */
    if (!ef) {
        uint64_t share = (n + run.nbuckets - 1) / run.nbuckets, most = 0;
        uint64_t sl_bits = slope(run.code_bits, run.nbuckets),
                 sl_items = slope(run.n, run.nbuckets);
        for (uint32_t j = 0; j < run.nbuckets; j++) {
            uint64_t b0, i0, b1, i1;
            bucket_start(&run, sl_bits, sl_items, j, &b0, &i0);
            bucket_start(&run, sl_bits, sl_items, j + 1, &b1, &i1);
            most = i1 - i0 > most ? i1 - i0 : most;
        }
        assert_true(most <= SEEN_RANKED_SKEW * share);
        if (shape == 5 && run.nbuckets > SEEN_RANKED_SKEW)
            assert_true(run_ranked(&run));
        if (shape == 4 || shape == 0)
            assert_false(run_ranked(&run));
    }

    /* Cursor: every present value with its tag, interleaved with absent
     * ones, in increasing order. */
    seen__cursor cur;
    seen__cursor_init(&cur, &run);
    if (shape % 2 == 0)
        seen__cursor_expect(&cur, n); /* dense walk: buckets decoded in pairs */
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && v[i] > v[i - 1] + 1)
            assert_int_equal(seen__cursor_find(&cur, v[i] - 1), -1);
        assert_int_equal(seen__cursor_find(&cur, v[i]), t[i]);
        assert_int_equal(seen__cursor_find(&cur, v[i]), t[i]); /* repeats */
    }
    /* Batch matching at several densities: sorted candidates, present ones
     * (some twice) among absent ones, against the run's tags. */
    {
        size_t cap = 3 * n + 8;
        uint64_t *cand = malloc(cap * sizeof *cand);
        int32_t *got = malloc(cap * sizeof *got);
        /* Strides apart, then (from 7 on) drawn at random over the
         * values' range, so gaps between candidates vary as in a query. */
        size_t strides[] = {1, 3, 12, 40, 100, 300, 1000, 7, 30, 90, 400};
        for (size_t si = 0; si < sizeof strides / sizeof *strides; si++) {
            size_t m = 0;
            if (v[0] > 0)
                cand[m++] = v[0] - 1;
            if (si >= 7) {
                for (size_t k = 0; k < n / strides[si]; k++) {
                    size_t i = rng_below(r, n);
                    uint64_t lo = i > 0 ? v[i - 1] : v[0], gap = v[i] - lo;
                    uint64_t x = lo + (gap == UINT64_MAX ? rng_next(r) : rng_below(r, gap + 1));
                    cand[m++] = rng_below(r, 3) == 0 ? v[i] : x;
                }
                qsort(cand, m, sizeof *cand, cmp_u64);
            }
            for (size_t i = rng_below(r, strides[si]); si < 7 && i < n; i += strides[si]) {
                cand[m++] = v[i];
                if (rng_below(r, 4) == 0)
                    cand[m++] = v[i]; /* a duplicate candidate */
                if (v[i] < UINT64_MAX && (i + 1 == n || v[i + 1] > v[i] + 1))
                    cand[m++] = v[i] + 1; /* absent */
            }
            if (ef)
                ef_aheads_walked |= 1u << seen__ef_ahead(&run, m);
            seen__run_match(&run, cand, m, got);
            size_t at = 0;
            for (size_t c = 0; c < m; c++) {
                while (at < n && v[at] < cand[c])
                    at++;
                int want = at < n && v[at] == cand[c] ? t[at] : -1;
                assert_int_equal(got[c], want);
            }
        }
        free(cand);
        free(got);
    }
    /* Point lookups, several runs at once. */
    for (int k = 0; k < 200; k++) {
        size_t i = rng_below(r, n);
        const seen__run *runs[2] = {&run, &run};
        uint64_t vals[2] = {v[i], v[i] + 1};
        int tags[2];
        seen__run_lookup_many(runs, vals, 2, tags);
        assert_int_equal(tags[0], t[i]);
        bool next_present = i + 1 < n && v[i + 1] == v[i] + 1;
        if (v[i] != UINT64_MAX)
            assert_int_equal(tags[1], next_present ? t[i + 1] : -1);
    }
    /* Deleting a few values in place keeps the layout (a ranked run its
     * bucket lows, any run its base and span, even when its first or last
     * value goes) and every other value. */
    if (n > 4) {
        uint64_t gone[5];
        size_t k = 0;
        bool ends = rng_below(r, 2) == 0;
        if (ends)
            gone[k++] = v[0];
        for (size_t tries = 0; tries < 3; tries++) {
            size_t i = 1 + rng_below(r, n - 2);
            if (k == 0 || gone[k - 1] < v[i])
                gone[k++] = v[i];
        }
        if (ends)
            gone[k++] = v[n - 1];
        uint64_t per_tag[64] = {0};
        size_t removed = 0;
        bool applies = false;
        seen__run edited;
        assert_int_equal(seen__run_without(&edited, &run, gone, k, SEEN_RUN_TAKES_HEAD, per_tag,
                                           &removed, &applies),
                         SEEN_OK);
        /* An Elias-Fano run keeps its ends exact: losing one, it is rebuilt. */
        assert_true(!ef || !ends || !applies);
        if (applies && removed > 0) {
            ef_deletes_in_place += ef;
            assert_int_equal(removed, k);
            assert_int_equal(seen__run_validate(&edited), SEEN_OK);
            assert_true(run_ranked(&edited) == run_ranked(&run));
            assert_true(edited.base == run.base && edited.span == run.span);
            assert_true(seen__run_ends_exact(&edited) == !ends);
            assert_true(edited.loose_ends == ends);
            seen__run_decode(&edited, dv, dt);
            size_t at = 0, gi = 0;
            for (size_t i = 0; i < n; i++) {
                if (gi < k && gone[gi] == v[i]) {
                    gi++;
                    continue;
                }
                assert_true(dv[at] == v[i]);
                assert_int_equal(dt[at], t[i]);
                at++;
            }
            assert_int_equal(at, n - k);
            for (size_t g = 0; g < k; g++) {
                const seen__run *one[1] = {&edited};
                int tag;
                seen__run_lookup_many(one, &gone[g], 1, &tag);
                assert_int_equal(tag, -1);
            }
            seen__run_release(&edited);
        }
    }
    /* Adding values in place: new ones within the span, tagged with one
     * of the run's segments; every value decodes, in order, with its tag.
     * A value the run holds already is counted in a run of one segment and
     * makes a run of several rebuild. */
    if (n > 4 && v[n - 1] - v[0] > 2 * n) {
        uint64_t add[14];
        size_t k = 0;
        uint32_t tag = (uint32_t)rng_below(r, nsegs);
        /* A run of one bucket also takes values past either end. */
        bool widens = run.nbuckets == 1 && !run_ranked(&run) && !ef;
        bool with_held = nsegs == 1 || rng_below(r, 2) == 0;
        /* Random values, one the run holds, and neighbours of held values:
         * the codes kept as they are end and resume right there. */
        for (int tries = 0; tries < (with_held ? 11 : 8) + (widens ? 2 : 0); tries++) {
            size_t at_held = 1 + (size_t)rng_below(r, n - 2);
            int kind = tries < 8 ? 0 : with_held ? tries - 7 : tries - 10 + 3;
            uint64_t x =
                kind == 1               ? v[at_held]
                : kind == 2             ? v[at_held] + 1
                : kind == 3             ? v[at_held] - 1
                : kind == 4 && v[0] > 0 ? v[0] - 1 - rng_below(r, v[0] < 100 ? v[0] : 100)
                : kind == 5 && v[n - 1] < UINT64_MAX
                    ? v[n - 1] + 1 +
                          rng_below(r, UINT64_MAX - v[n - 1] < 100 ? UINT64_MAX - v[n - 1] : 100)
                    : v[0] + 1 + rng_below(r, v[n - 1] - v[0] - 1);
            size_t at = 0;
            while (at < k && add[at] < x)
                at++;
            if (at < k && add[at] == x)
                continue;
            memmove(add + at + 1, add + at, (k - at) * sizeof *add);
            add[at] = x;
            k++;
        }
        /* Half the time, values past the top too, at about the run's
         * density (ids handed out in sequence arrive there): a run of
         * several buckets appends them. */
        const uint64_t spacing = (v[n - 1] - v[0]) / (n - 1);
        for (uint64_t x = v[n - 1]; rng_below(r, 2) == 0 && k < 14;) {
            uint64_t step = 1 + rng_below(r, 2 * spacing + 1);
            if (x > UINT64_MAX - step || (k > 0 && add[k - 1] > x))
                break;
            x += step;
            add[k++] = x;
        }
        size_t held = 0, want_held = 0;
        bool applies = false;
        seen__run grown;
        assert_int_equal(
            seen__run_with(&grown, &run, add, k, SEEN_RUN_TAKES_HEAD, tag, &held, &applies),
            SEEN_OK);
        /* An Elias-Fano run keeps its base and its low bits: a value
         * below base, or a count and span calling for other low bits,
         * rebuild it; values past the top extend it. */
        const uint64_t top_after = add[k - 1] > v[n - 1] ? add[k - 1] - run.base : run.span;
        if (ef && (add[0] < v[0] || seen__ef_low_bits(n + k, top_after) != run.ef.low ||
                   !seen__ef_wanted(run.c, n + k, top_after, SEEN_RUN_TAKES_HEAD)))
            assert_false(applies);
        bool holds_one = false;
        for (size_t a = 0, i = 0; a < k; a++) {
            while (i < n && v[i] < add[a])
                i++;
            holds_one |= i < n && v[i] == add[a];
        }
        assert_true(nsegs == 1 || !holds_one || !applies);
        if (applies) {
            in_place_adds++;
            ef_adds_in_place += ef;
            assert_int_equal(seen__run_is_ef(&grown), ef);
            assert_int_equal(seen__run_validate(&grown), SEEN_OK);
            uint64_t lo = add[0] < v[0] ? add[0] : run.base;
            uint64_t hi = add[k - 1] > v[n - 1] ? add[k - 1] : run.base + run.span;
            assert_true(grown.base == lo && grown.span == hi - lo);
            widened_adds += lo != run.base || hi != run.base + run.span;
            appended_adds += !ef && run.nbuckets > 1 && hi != run.base + run.span;
            ef_appended_adds += ef && hi != run.base + run.span;
            uint64_t *all = malloc((n + k) * sizeof *all);
            uint16_t *all_tags = malloc((n + k) * sizeof *all_tags);
            size_t m = 0, i = 0, a = 0;
            while (i < n || a < k) {
                if (a == k || (i < n && v[i] < add[a])) {
                    all_tags[m] = t[i];
                    all[m++] = v[i++];
                } else if (i == n || add[a] < v[i]) {
                    all_tags[m] = (uint16_t)tag;
                    all[m++] = add[a++];
                } else {
                    all_tags[m] = t[i];
                    all[m++] = v[i++];
                    a++;
                    want_held++;
                }
            }
            assert_int_equal(held, want_held);
            assert_int_equal(grown.n, m);
            uint64_t *gv = malloc(m * sizeof *gv);
            uint16_t *gt = malloc(m * sizeof *gt);
            seen__run_decode(&grown, gv, gt);
            assert_memory_equal(gv, all, m * sizeof *gv);
            assert_memory_equal(gt, all_tags, m * sizeof *gt);
            if (ef) {
                /* What a rebuild of the same values would write. */
                seen__run fresh;
                assert_int_equal(seen__ef_encode(&fresh, run.c, all, all_tags, m,
                                                 seen__run_segs(&run), run.nsegs),
                                 SEEN_OK);
                assert_true(fresh.code_bits == grown.code_bits && fresh.ef.low == grown.ef.low &&
                            fresh.base == grown.base && fresh.span == grown.span);
                seen__run_release(&fresh);
            }
            /* Lookups find every new value with its tag, and the values
             * around them (the samples were counted again). */
            for (size_t a = 0; a < k; a++) {
                const seen__run *one[1] = {&grown};
                int got_tag;
                seen__run_lookup_many(one, &add[a], 1, &got_tag);
                size_t at = 0;
                while (all[at] != add[a])
                    at++;
                assert_int_equal(got_tag, all_tags[at]);
            }
            free(gv);
            free(gt);
            free(all);
            free(all_tags);
            seen__run_release(&grown);
        }
    }
    /* A split run is split only where two blocks cost less than one. */
    bool split = run.tail != NULL;
    if (split) {
        size_t whole = seen__run_mem_size(&run);
        assert_true(seen__run_front_bytes(&run) + seen__run_tail_bytes(&run) <
                    whole + 2 * SEEN_RUN_PAD);
        assert_true(seen__alloc_class(seen__run_front_bytes(&run)) +
                        seen__alloc_class(seen__run_tail_bytes(&run)) + SEEN_SPLIT_MIN_GAIN <=
                    seen__alloc_class(whole));
    }
    if (ef && seen__alloc_rounds())
        assert_int_equal(ef_layout_cost(&run), ef_least_layout_cost(&run));
    /* A clone holds the same values in the same layout. */
    seen__run copy;
    assert_int_equal(seen__run_clone(&copy, &run), SEEN_OK);
    assert_true((copy.tail != NULL) == split);
    memset(dv, 0, n * sizeof *dv);
    seen__run_decode(&copy, dv, dt);
    assert_memory_equal(dv, v, n * sizeof *v);
    assert_memory_equal(dt, t, n * sizeof *t);
    seen__run_release(&copy);

    /* Corrupted copies (either block) must be rejected or decode safely. */
    size_t front = seen__run_front_bytes(&run), tail = seen__run_tail_bytes(&run);
    uint8_t *orig = run.mem, *orig_tail = run.tail;
    uint8_t *bad = malloc(front), *bad_tail = tail ? malloc(tail) : NULL;
    for (int k = 0; k < 40; k++) {
        memcpy(bad, orig, front);
        if (tail)
            memcpy(bad_tail, orig_tail, tail);
        bool in_tail = tail && rng_below(r, 2);
        size_t at = (size_t)rng_below(r, (in_tail ? tail : front) - SEEN_RUN_PAD);
        (in_tail ? bad_tail : bad)[at] ^= (uint8_t)(1u << rng_below(r, 8));
        run.mem = bad;
        run.tail = bad_tail;
        if (seen__run_validate(&run) == SEEN_OK)
            seen__run_decode(&run, dv, dt); /* accepted: must be well-formed */
    }
    run.mem = orig;
    run.tail = orig_tail;
    free(bad);
    free(bad_tail);
    seen__run_release(&run);
    free(v);
    free(t);
    free(dv);
    free(dt);
    return split;
}

/* A small set's run (one bucket) takes values below its first and above
 * its last in place, tagged, its base and span moving to them. */
static void test_run_widens(void **state)
{
    (void)state;
    rng r = {test_seed("widen", 7)};
    for (int round = 0; round < 50; round++) {
        enum { N = 100 };
        uint64_t v[N + 4];
        uint16_t t[N + 4];
        uint32_t ids[3] = {7, 8, 9};
        uint32_t nsegs = 1 + (uint32_t)rng_below(&r, 3);
        for (size_t i = 0; i < N; i++) {
            v[i] = 1000000 + i * 1400 + rng_below(&r, 1000); /* 400 apart at least */
            t[i] = (uint16_t)rng_below(&r, nsegs);
        }
        seen__run run;
        assert_int_equal(seen__run_encode(&run, 2, v, t, N, ids, nsegs, false), SEEN_OK);
        assert_int_equal(run.nbuckets, 1);
        uint64_t add[3] = {v[0] - 1 - rng_below(&r, 3000), v[N / 2] + 1,
                           v[N - 1] + 1 + rng_below(&r, 3000)};
        uint32_t tag = (uint32_t)rng_below(&r, nsegs);
        seen__run grown;
        size_t held = 0;
        bool applies = false;
        assert_int_equal(
            seen__run_with(&grown, &run, add, 3, SEEN_RUN_TAKES_HEAD, tag, &held, &applies),
            SEEN_OK);
        assert_true(applies);
        assert_int_equal(held, 0);
        assert_int_equal(seen__run_validate(&grown), SEEN_OK);
        uint64_t lo = add[0] < v[0] ? add[0] : v[0];
        assert_true(grown.base == lo && grown.span == add[2] - lo);
        /* Every value, old and new, with its tag. */
        uint64_t want[N + 3], got[N + 3];
        uint16_t want_t[N + 3], got_t[N + 3];
        size_t m = 0, i = 0, a = 0;
        while (i < N || a < 3) {
            bool old = a == 3 || (i < N && v[i] < add[a]);
            want_t[m] = old ? t[i] : (uint16_t)tag;
            want[m++] = old ? v[i++] : add[a++];
        }
        assert_int_equal(grown.n, N + 3);
        seen__run_decode(&grown, got, got_t);
        assert_memory_equal(got, want, sizeof want);
        assert_memory_equal(got_t, want_t, sizeof want_t);
        seen__run_release(&grown);
        seen__run_release(&run);
    }
}

/* Pages of values past a run's top, as ids handed out in sequence arrive:
 * a Golomb run of several buckets and an Elias-Fano run take them in
 * place (appending buckets to the first), a page with a far jump too or by
 * a rebuild; every state validates, decodes to the model and finds the new
 * values with their tags. */
static void test_run_appends(void **state)
{
    (void)state;
    rng r = {test_seed("appends", 11)};
    for (int ef = 0; ef < 2; ef++) {
        const size_t n0 = ef ? 20000 : 3000, pages = 120;
        const size_t cap = n0 + pages * 20;
        uint64_t *v = malloc(cap * sizeof *v), *got = malloc(cap * sizeof *got);
        uint16_t *t = malloc(cap * sizeof *t), *got_t = malloc(cap * sizeof *got_t);
        uint32_t ids[3] = {4, 5, 6};
        const uint32_t nsegs = 1 + (uint32_t)rng_below(&r, 3);
        size_t n = 0;
        for (uint64_t x = 1000000; n < n0; n++) {
            x += 1 + rng_below(&r, 3);
            v[n] = x;
            t[n] = (uint16_t)rng_below(&r, nsegs);
        }
        seen__run run;
        assert_int_equal(ef ? seen__ef_encode(&run, 1, v, t, n, ids, nsegs)
                            : seen__run_encode(&run, 1, v, t, n, ids, nsegs, 0),
                         SEEN_OK);
        assert_int_equal(seen__run_is_ef(&run), ef);
        const uint32_t buckets0 = run.nbuckets;
        int in_place = 0;
        for (size_t p = 0; p < pages; p++) {
            uint64_t add[20];
            const uint32_t tag = (uint32_t)rng_below(&r, nsegs);
            uint64_t x = v[n - 1];
            for (size_t i = 0; i < 20; i++) {
                /* Now and then one far ahead: a gap no Golomb code suits. */
                x += p % 37 == 36 && i == 10 ? UINT64_C(1000000000) : 1 + rng_below(&r, 3);
                add[i] = x;
            }
            size_t held = 0;
            bool applies = false;
            seen__run grown;
            assert_int_equal(
                seen__run_with(&grown, &run, add, 20, SEEN_RUN_TAKES_HEAD, tag, &held, &applies),
                SEEN_OK);
            for (size_t i = 0; i < 20; i++, n++) {
                v[n] = add[i];
                t[n] = (uint16_t)tag;
            }
            if (!applies) /* what a flush then does */
                assert_int_equal(ef ? seen__ef_encode(&grown, 1, v, t, n, ids, nsegs)
                                    : seen__run_encode(&grown, 1, v, t, n, ids, nsegs, 0),
                                 SEEN_OK);
            in_place += applies;
            assert_int_equal(held, 0);
            assert_int_equal(seen__run_validate(&grown), SEEN_OK);
            assert_true(seen__run_ends_exact(&grown));
            assert_int_equal(grown.n, n);
            seen__run_decode(&grown, got, got_t);
            assert_memory_equal(got, v, n * sizeof *v);
            assert_memory_equal(got_t, t, n * sizeof *t);
            for (size_t i = 0; i < 20; i++) {
                const seen__run *one[1] = {&grown};
                int got_tag;
                seen__run_lookup_many(one, &add[i], 1, &got_tag);
                assert_int_equal(got_tag, (int)tag);
                uint64_t absent = add[i] + 1;
                if (i + 1 < 20 && absent < add[i + 1]) {
                    seen__run_lookup_many(one, &absent, 1, &got_tag);
                    assert_int_equal(got_tag, -1);
                }
            }
            seen__run_release(&run);
            run = grown;
        }
        fprintf(stderr, "[stat] appends (%s): %d of %zu pages in place, buckets %u -> %u\n",
                ef ? "Elias-Fano" : "Golomb", in_place, pages, buckets0, run.nbuckets);
        /* Most pages go in place; a Golomb run opens buckets as it grows. */
        assert_true(in_place * 10 >= (int)pages * 8);
        assert_true(ef || run.nbuckets > buckets0 + 10);
        seen__run_release(&run);
        free(v);
        free(got);
        free(t);
        free(got_t);
    }
}

static void test_runs(void **state)
{
    (void)state;
    rng r = {test_seed("runs", 2)};
    /* The table of digits per tag word agrees with counting them. */
    for (uint32_t k = 2; k <= 4096; k++) {
        uint64_t full;
        uint32_t g = tags_per_word(k, &full);
        assert_int_equal(tags_per_word(k, NULL), g);
        assert_true(full > UINT64_MAX / k && ipow(k, g) == full);
    }
    alloc_install_classes(); /* large runs are split only where blocks round */
    size_t sizes[] = {1, 2, 3, 17, 255, 256, 257, 511, 512, 1000, 5000, 40000};
    uint32_t segs[] = {1, 2, 3, 4, 5, 64};
    for (int shape = 0; shape < 6; shape++)
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
            check_run(&r, shape, sizes[i], segs[(shape + i) % 6], 0);
    /* Every alphabet the tag counters treat apart: fields of b bits, digit
     * chains side by side, and the rest one digit at a time. */
    for (uint32_t k = 2; k <= 17; k++)
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
            check_run(&r, (int)(k + i) % 6, sizes[i], k, (k + i) % 2 == 1);
    /* Elias-Fano lookups and edits, and the counts of b-bit tags, are
     * compiled once per instruction level: each level this CPU runs
     * answers the same checks. */
    int levels = 0;
    for (int isa = SEEN_EF_ISA_PLAIN; isa <= SEEN_EF_ISA_PDEP; isa++) {
        if (seen__ef_isa_limit((seen__ef_isa)isa) != (seen__ef_isa)isa)
            continue;
        levels++;
        for (int shape = 0; shape < 6; shape++)
            for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
                check_run(&r, shape, sizes[i], segs[(shape + i) % 6], 1);
    }
    seen__ef_isa_limit(SEEN_EF_ISA_PDEP);
    /* Sparse walks counted one, two and four words ahead, and dense ones. */
    assert_int_equal(ef_aheads_walked, 1u | 2u | 4u | 16u);
    /* PDEP is taken where it is fast: not on AMD or Hygon before Zen 3. */
    assert_true(seen__pdep_fast_on("GenuineIntel", 0x000806ecu));
    assert_false(seen__pdep_fast_on("AuthenticAMD", 0x00660f01u)); /* family 0x15 */
    assert_false(seen__pdep_fast_on("AuthenticAMD", 0x00830f10u)); /* Zen 2 */
    assert_false(seen__pdep_fast_on("HygonGenuine", 0x00900f01u)); /* family 0x18 */
    assert_true(seen__pdep_fast_on("AuthenticAMD", 0x00a20f10u));  /* Zen 3 */
    assert_true(seen__pdep_fast_on("AuthenticAMD", 0x00a60f12u));  /* Zen 4 */
    assert_true(seen__pdep_fast_on("AuthenticAMD", 0x00b40f40u));  /* Zen 5 */
    fprintf(stderr, "[stat] runs: Elias-Fano lookups checked at %d instruction levels\n", levels);
    assert_true(levels >= 1);
    /* Large runs at many sizes put the cut between two blocks at many
     * places; most of them are worth splitting, in either layout. */
    for (int ef = 0; ef < 2; ef++) {
        int splits = 0, tried = 0;
        for (size_t n = 1500; n < 60000; n += 1500 + rng_below(&r, 1500), tried++)
            splits += check_run(&r, tried % 2 ? 4 : 1, n, 1 + (uint32_t)rng_below(&r, 4), ef);
        fprintf(stderr,
                "[stat] runs (%s): %d of %d large runs split, %d in-place adds (%d widening)\n",
                ef ? "Elias-Fano" : "Golomb", splits, tried, in_place_adds, widened_adds);
        assert_true(splits * 2 > tried);
    }
    assert_true(in_place_adds > 0);
    fprintf(stderr, "[stat] runs: %d Golomb runs with a general parameter\n", general_runs);
    assert_true(general_runs > 10);
    fprintf(stderr, "[stat] runs: %d adds to Elias-Fano runs in place\n", ef_adds_in_place);
    assert_true(ef_adds_in_place > 0);
    fprintf(stderr, "[stat] runs: %d in-place adds past the top (%d Elias-Fano)\n", appended_adds,
            ef_appended_adds);
    /* Golomb runs take appends from APPEND_MIN_RUN values, which few of
     * these reach: test_run_appends holds that case. */
    assert_true(ef_appended_adds > 0);
    fprintf(stderr, "[stat] runs: %d deletes from Elias-Fano runs in place\n", ef_deletes_in_place);
    assert_true(ef_deletes_in_place > 0);
    seen_set_allocator(NULL);
}

static void test_sort(void **state)
{
    (void)state;
    rng r = {test_seed("sort", 3)};
    size_t sizes[] = {0, 1, 2, 5, 20, 24, 25, 32, 33, 100, 1000, 10000, 100000};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t n = sizes[k];
        for (int shape = 0; shape < 12; shape++) {
            /* Shapes 6-11 again through seen__sort_hashes, with two more:
             * hashes sharing their top 16 bits (its insertion pass gives
             * up), and uniform hashes with a few equal ones. */
            const bool hashes = shape >= 6;
            const int kind = shape % 6;
            seen__kv *a = malloc((n + 1) * sizeof *a);
            uint64_t *ref = malloc((n + 1) * sizeof *ref);
            for (size_t i = 0; i < n; i++) {
                uint64_t x = kind == 0   ? rng_next(&r)
                             : kind == 1 ? rng_below(&r, 50)
                             : kind == 2 ? (rng_below(&r, 3) << 62) + rng_below(&r, 1000)
                             : kind == 3 ? 2700000 + rng_below(&r, 400000)
                             /* uniform groups of up to ~30 equal tops */
                             : kind == 4
                                 ? (rng_below(&r, n / 16 + 1) << 40) + rng_next(&r) % (1u << 20)
                             : hashes && i % 2 ? (UINT64_C(0xbeef) << 48) | (rng_next(&r) >> 16)
                                               : (i % 7 == 0 && i ? ref[i - 1] : rng_next(&r));
                a[i] = (seen__kv){x, (uint32_t)i};
                ref[i] = x;
            }
            uint64_t *orig = malloc((n + 1) * sizeof *orig);
            uint8_t *placed = calloc(n + 1, 1);
            if (n)
                memcpy(orig, ref, n * sizeof *orig);
            assert_int_equal(hashes ? seen__sort_hashes(a, n) : seen__sort_kv(a, n), SEEN_OK);
            qsort(ref, n, sizeof *ref, cmp_u64);
            for (size_t i = 0; i < n; i++) {
                assert_true(a[i].key == ref[i]);
                if (i > 0)
                    assert_true(a[i - 1].key <= a[i].key);
                /* Each key still carries the index it came with. */
                assert_true(a[i].idx < n && !placed[a[i].idx]);
                assert_true(orig[a[i].idx] == a[i].key);
                /* seen__sort_kv is stable: equal keys keep input order
                 * (a capped write's count steps rely on it). */
                if (!hashes && i > 0 && a[i - 1].key == a[i].key)
                    assert_true(a[i - 1].idx < a[i].idx);
                placed[a[i].idx] = 1;
            }
            free(orig);
            free(placed);
            free(a);
            free(ref);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_divider),    cmocka_unit_test(test_runs),
        cmocka_unit_test(test_run_widens), cmocka_unit_test(test_run_appends),
        cmocka_unit_test(test_sort),
    };
    return cmocka_run_group_tests_name("core building blocks", tests, NULL, NULL);
}
