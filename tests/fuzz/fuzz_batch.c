/*
 * fuzz_batch.c — libFuzzer target for operation programs that reach the
 * states a key lives through, not only the steady one: batches of up to
 * thousands of items, narrow, wide and clustered ids, ids handed out in
 * sequence, times spread over
 * several windows in time order, reverse or at random (imports), time
 * jumps of months, capacities with re-adds, removes, prepared queries
 * against several sets, copies and expiry.  After every operation the set
 * must pass its own checks, serialize, load back into identical bytes and
 * answer as the naive model of tests/unit/testutil.c allows (no false
 * negatives; an exact set of integers, or one still keyed by the raw ids,
 * reports nothing it does not hold).
 * Every other step goes on with the loaded copy, so writes after a load
 * are exercised.  Any violation aborts.
 *
 * Input: three policy bytes, then operations of a few bytes each; a small
 * PRNG seeded from the input expands them into batches.
 */
#include "internal.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_BATCH = 3000, MAX_ITEMS = 60000, MAX_OPS = 400 };

/* The items of one batch, as integers and as strings. */
typedef struct batch {
    uint64_t ids[MAX_BATCH];
    int64_t at[MAX_BATCH];
    str_item items[MAX_BATCH];
    seen_str strs[MAX_BATCH];
    size_t n;
} batch;

static void fill_ids(batch *b, fuzz_input *in, rng *r, size_t n, uint64_t *fresh)
{
    uint8_t mode = fuzz_next(in);
    uint64_t base = (uint64_t)fuzz_next(in) << 12;
    b->n = n;
    for (size_t i = 0; i < n; i++) {
        switch (mode % 5) {
        case 0: /* a few ids: re-adds and duplicates within the batch */
            b->ids[i] = rng_below(r, 2 + (mode >> 3));
            break;
        case 1:
            b->ids[i] = rng_below(r, 4096);
            break;
        case 2: /* wide */
            b->ids[i] = rng_next(r);
            break;
        case 3: /* clustered integers, now and then a far outlier (runs of
                   an exact set are then cut by rank) */
            b->ids[i] = rng_below(r, 256) == 0 ? rng_next(r) : 2700000 + base + rng_below(r, 400);
            break;
        default:
            if (mode & 8) { /* new ids in sequence, a few apart: each batch past the last */
                *fresh += 1 + rng_below(r, 3);
                b->ids[i] = 1000000 + *fresh;
            } else { /* the same n - 1 ids each time, and one new */
                b->ids[i] = i + 1 < n ? i + 1 : 1000000 + (*fresh)++;
            }
            break;
        }
        make_str(&b->items[i], b->ids[i]);
        b->strs[i] = b->items[i].s;
    }
}

/* Times: none (now), or spread over 1-4 windows before now in time order,
 * reverse or at random. */
static bool fill_times(batch *b, fuzz_input *in, rng *r, int64_t now, int64_t span_unit)
{
    uint8_t mode = fuzz_next(in);
    if (mode % 4 == 0)
        return false;
    uint64_t span = (uint64_t)span_unit * (1 + (mode >> 2) % 4) + 1;
    for (size_t i = 0; i < b->n; i++) {
        uint64_t back = mode % 4 == 1   ? span * (b->n - 1 - i) / b->n
                        : mode % 4 == 2 ? span * i / b->n
                                        : rng_below(r, span);
        b->at[i] = now - (int64_t)back < 0 ? 0 : now - (int64_t)back;
    }
    return true;
}

static seen_set *round_trip(seen_set *s, bool keep_loaded)
{
    size_t len = seen_serialized_size(s), w = 0;
    uint8_t *buf = malloc(len);
    seen_set *t = NULL;
    if (seen_serialize(s, buf, len, &w) != SEEN_OK || w != len)
        abort();
    if (seen_deserialize(buf, len, &t) != SEEN_OK) {
        fprintf(stderr, "the loader refuses what the writer wrote\n");
        abort();
    }
    size_t len2 = seen_serialized_size(t);
    uint8_t *buf2 = malloc(len2);
    if (len2 != len || seen_serialize(t, buf2, len2, &w) != SEEN_OK || memcmp(buf, buf2, len))
        abort();
    free(buf);
    free(buf2);
    if (keep_loaded) {
        seen_free(s);
        return t;
    }
    seen_free(t);
    return s;
}

/* Items of the model must be seen where it says so; approximate removes
 * may take colliding fingerprints along, so items last added before the
 * last such remove are not held to it. */
static void check_model(const seen_set *s, model *m, int64_t now, uint64_t rm_seq, rng *r)
{
    for (size_t k = 0; k < 64 && m->n > 0; k++) {
        model_item *it = &m->items[m->used[rng_below(r, m->n)]];
        expect e = model_expect(m, it->id, now);
        if (e == MUST_SEE && it->seq >= rm_seq && !set_sees(s, it->id, now)) {
            fprintf(stderr, "false negative: id %llu\n", (unsigned long long)it->id);
            abort();
        }
        /* Integers in an exact set, or in one still keyed by the raw ids,
         * are held exactly. */
        if (e == MUST_NOT_SEE && s->policy.ids == SEEN_IDS_INT &&
            (s->policy.error == 0 || s->raw_keys) && set_sees(s, it->id, now)) {
            fprintf(stderr, "exact set sees id %llu\n", (unsigned long long)it->id);
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    alloc_install_classes(); /* as under Redis: large runs take two blocks */
    fuzz_input in = {data, size, 0};
    static const uint64_t windows[] = {0, 1000, 600000, 86400000, 90ull * 86400000, 0};
    static const double errors[] = {0, 0.1, 0.01, 0.001, 1e-6, 0.001};
    static const uint64_t caps[] = {0, 0, 1, 10, 64, 1000, 8192, 1000000};
    static const uint32_t limits[] = {0, 8, 128, 1024};
    uint8_t a = fuzz_next(&in), b = fuzz_next(&in), c = fuzz_next(&in);
    seen_policy p = {windows[a % 6],
                     (uint32_t)(b % 64) + 1,
                     errors[c % 6],
                     caps[(a >> 3) % 8],
                     (c >> 3) & 1 ? SEEN_IDS_INT : SEEN_IDS_STR,
                     limits[(c >> 4) % 4]};
    if (p.window_ms && p.window_ms < p.slices)
        p.slices = 1;
    seen_set *s = NULL, *other = NULL;
    if (seen_create(&p, &s) != SEEN_OK || seen_create(&p, &other) != SEEN_OK)
        abort();
    model m;
    model_init(&m, &p);
    rng r = {(uint64_t)a << 16 | (uint64_t)b << 8 | c};
    batch *bt = malloc(sizeof *bt);
    int64_t now = 1763700000000;
    int64_t unit = p.window_ms ? (int64_t)p.window_ms : 86400000;
    uint64_t rm_seq = 0, fresh = 0;
    size_t items = 0;
    /* The model's capacity ranks cost the square of what it holds once
     * times go out of order: past 300 items it stops, and the
     * program goes on checking the set itself and its round trips. */
    bool modelled = true;
    for (int op = 0; in.at < in.n && op < MAX_OPS && items < MAX_ITEMS; op++) {
        uint8_t code = fuzz_next(&in), nb = fuzz_next(&in);
        size_t n = (code & 0x80) ? 1 + (size_t)nb * 12 : 1 + (size_t)(nb % 16);
        if (n > MAX_BATCH)
            n = MAX_BATCH;
        switch (code % 8) {
        case 0:
        case 1:
        case 2: { /* add a batch */
            fill_ids(bt, &in, &r, n, &fresh);
            bool timed = fill_times(bt, &in, &r, now, unit);
            items += n;
            seen_err e = p.ids == SEEN_IDS_INT
                             ? seen_add_int(s, bt->ids, n, timed ? bt->at : NULL, now, NULL)
                             : seen_add_str(s, bt->strs, n, timed ? bt->at : NULL, now, NULL);
            if (e != SEEN_OK) {
                fprintf(stderr, "add refused: %s\n", seen_strerror(e));
                abort();
            }
            if (modelled) {
                model_observe(&m, now);
                for (size_t i = 0; i < n; i++)
                    model_add(&m, bt->ids[i], timed && bt->at[i] < now ? bt->at[i] : now, now);
            }
            break;
        }
        case 3: { /* remove a batch */
            fill_ids(bt, &in, &r, n, &fresh);
            if (modelled)
                model_observe(&m, now);
            seen_err e = p.ids == SEEN_IDS_INT ? seen_remove_int(s, bt->ids, n, now, NULL)
                                               : seen_remove_str(s, bt->strs, n, now, NULL);
            if (e != SEEN_OK)
                abort();
            for (size_t i = 0; i < n; i++) {
                model_remove(&m, bt->ids[i]);
                if ((p.error == 0 || s->raw_keys) && set_sees(s, bt->ids[i], now))
                    abort();
            }
            if (p.error > 0)
                rm_seq = m.seq + 1;
            break;
        }
        case 4: { /* one prepared query against both sets: OR of the two */
            fill_ids(bt, &in, &r, n, &fresh);
            seen_query *q = NULL;
            seen_err e = p.ids == SEEN_IDS_INT ? seen_query_int(bt->ids, n, &q)
                                               : seen_query_str(bt->strs, n, &q);
            uint8_t *both = calloc(n, 1), *one = calloc(n, 1);
            if (e != SEEN_OK || seen_query_run(s, q, now, both) != SEEN_OK ||
                seen_query_run(other, q, now, both) != SEEN_OK ||
                seen_query_run(s, q, now, one) != SEEN_OK)
                abort();
            for (size_t i = 0; i < n; i++)
                if ((one[i] && !both[i]) || one[i] != set_sees(s, bt->ids[i], now))
                    abort();
            free(both);
            free(one);
            seen_query_free(q);
            break;
        }
        case 5: { /* time passes: up to about four windows */
            if (modelled)
                model_observe(&m, now);
            now += (int64_t)(((uint64_t)nb * (uint64_t)unit) >> (code & 0x80 ? 6 : 12));
            if (modelled)
                model_observe(&m, now);
            break;
        }
        case 6:
            if (seen_expire(s, now) != SEEN_OK)
                abort();
            break;
        default: { /* the other set becomes a copy of this one */
            seen_free(other);
            if (seen_copy(s, &other) != SEEN_OK)
                abort();
            break;
        }
        }
        if (seen__set_check(s) != SEEN_OK)
            abort();
        s = round_trip(s, op & 1);
        if (modelled && p.capacity && m.n > 300)
            modelled = false;
        if (modelled)
            check_model(s, &m, now, rm_seq, &r);
    }
    if (getenv("SEEN_FUZZ_TRACE")) /* what a corpus entry reaches */
        fprintf(stderr, "%zu items added, %u segments, %u runs, %zu bytes, modelled %d\n", items,
                s->nsegs, s->nruns, seen_bytes(s), modelled);
    free(bt);
    model_free(&m);
    seen_free(s);
    seen_free(other);
    return 0;
}
