/*
 * states.c — keys driven through the rate patterns a feed's users follow,
 * in process (`make bench-states`): how many runs each key holds, what it
 * costs per live item over 250 days, whether every write was taken, and
 * what its queries and writes cost in each state.
 *
 * Runs are what a key's queries and adds pay for (each candidate is looked
 * up in every run), and a key's plan — the divisor its fingerprints are
 * coded under — decides its bits: a key whose rate moves re-plans, and
 * runs of different plans cannot merge.  The steady user of the other
 * benchmarks is one row here; the others are what users do besides:
 * grow, slow down, come and go in waves, send a page late, binge after
 * months of a page now and then, come back after months away, be shown
 * items again while the key still holds them.
 *
 * Each pattern gives items a day as a function of the day; pages of 20
 * fresh 24-character ids (or, for a share the pattern gives, ids written
 * up to AGAIN_DAYS before) are written at their times, in order, through
 * seen_add_str (as the module writes at its clock), under the default
 * policy (90 days, error 0.001) in 4, 16 and 64 slices, and a steady and a
 * growing user under other policies (a week's or a day's window, a cap
 * and no window, no limit) in 4.  At the end of each day without writes
 * the key sheds what it has forgotten (seen_expire, as the module's sweep
 * does for idle keys); at the end of every day the program records its
 * runs (seen_runs) and its bytes (seen_bytes: the set as the library holds
 * it, its fixed structures included) over the items the policy keeps
 * (written in the last window's days, the newest `capacity`, or all),
 * from the 6th day on and where those are at least 1,000 (50 for the light
 * user, whose ~90 items sit beside ~600 bytes of tables a packed key in
 * Redis does not carry).  Reported: the most and the mean of each, and the
 * writes refused (none is expected).
 * A key holds an item until its slice is forgotten, up to a slice past
 * the window, so where the items of the last 90 days fall away (a user
 * going away) the bits per live item peak for that slice.
 *
 * Every QUERY_EVERY days (and on the last) the key also answers batches of
 * QUERY_BATCH candidates, a tenth of them live items and the rest never
 * written, side by side with the in-process hash set of its live items
 * (hset.h), the two alternating on the same batches: the median time of
 * each, and their ratio, say what a query costs in that state against an
 * exact structure of the same items.  A live candidate reported unseen is
 * a false negative, counted and failing the run.  The never-written
 * candidates reported seen are false positives, and so are the fresh ids
 * of a page that its add reports as seen before: their rates, over the
 * run and the worst query sample, fail the run where they are more than
 * the policy's bound explains.  At each query sample the key also goes
 * through its serialized form and the validating loader, and must come
 * back the same set.  Every page is timed, and
 * the same ids added to a hash set that keeps everything (an untrimmed
 * SET's work): the mean, the 99.9th percentile and the slowest page, which
 * is one that folds or rewrites runs and costs what they hold.
 *
 * `--short` (`make test-states`, part of `make test`) runs SHORT_DAYS in 4
 * and 64 slices, querying every SHORT_QUERY_EVERY days: a check that
 * every state takes its writes and keeps its items, not a measurement.
 */
#include "seen.h"

#include "bench_util.h"

#include "hset.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DAY INT64_C(86400000)
#define DAYS 250
/* The short form (`--short`, part of `make test`): fewer days, the
 * fewest and the most slices, queries less often. */
#define SHORT_DAYS 120
#define PAGE 20
/* Keys are measured (bits per live item, queries, reloads) from this many
 * live items, unless their pattern says otherwise. */
#define BIG_KEY 1000u
#define T0 INT64_C(1763700000000)
#define ID_LEN 24
#define ERROR 0.001 /* every policy's false-positive bound */

/* The query measurement: its cadence, batch size, how many distinct
 * batches rotate (so no branch predictor learns one) and repetitions. */
#define QUERY_EVERY 10
#define SHORT_QUERY_EVERY 30
#define QUERY_BATCH 2000
#define QUERY_BATCHES 4
#define QUERY_REPS 9

typedef struct pattern {
    const char *name;
    double (*rate)(double day); /* items a day */
    double away_from, away_to;  /* days without writes */
    bool late_second_page;      /* the second page a minute older than the first */
    uint64_t min_live;          /* measured (bits, queries, reloads) from this many live
                                   items; 0: from BIG_KEY */
    uint64_t load;              /* items written in one command at the start, all at one
                                   time (a migrated SET: its members have no times) */
    unsigned again_tenths;      /* of each page, items first written up to AGAIN_DAYS
                                   before, added again (a feed showing them again) */
    uint64_t again_pool;        /* if not 0, those items are drawn from the first
                                   again_pool ever written instead (a user's
                                   favourites, played again and again) */
} pattern;

/* How far back the items a page adds again were first written: inside the
 * window, so each is still held when it comes again. */
#define AGAIN_DAYS 60

static double steady(double d)
{
    (void)d;
    return 1000;
}
static double swings(double d)
{
    return ((int)(d / 50)) % 2 ? 100 : 1000;
}
static double grows(double d)
{
    return 100 + 20 * d;
}
static double grows_fast(double d)
{
    return 100 + 100 * d;
}
static double doubles(double d)
{
    return fmin(50 * exp2(d / 14), 20000);
}
static double heavy_then_light(double d)
{
    return d < 30 ? 3000 : 300;
}
static double weekends(double d)
{
    return ((int)d % 7) >= 5 ? 3000 : 700;
}
static double waves(double d)
{
    return 1000 * exp(1.5 * sin(d / 9));
}
static double decays(double d)
{
    return 3000 * exp2(-d / 20) + 20;
}
static double binge(double d)
{
    return d >= 100 && d < 101 ? 20000 : 1;
}
static double light(double d)
{
    (void)d;
    return 1;
}
static double hundred_a_day(double d)
{
    (void)d;
    return 100;
}
static double two_hundred_a_day(double d)
{
    (void)d;
    return 200;
}

static const pattern patterns[] = {
    {"steady, 1,000 a day", steady, 0, 0, false, 0, 0, 0, 0},
    {"1,000 a day, second page a minute late", steady, 0, 0, true, 0, 0, 0, 0},
    {"1,000 a day, away days 10-140", steady, 10, 140, false, 0, 0, 0, 0},
    {"1,000 and 100 a day, 50 days each", swings, 0, 0, false, 0, 0, 0, 0},
    {"100 + 20 more each day", grows, 0, 0, false, 0, 0, 0, 0},
    {"100 + 100 more each day", grows_fast, 0, 0, false, 0, 0, 0, 0},
    {"doubling every 2 weeks, to 20,000", doubles, 0, 0, false, 0, 0, 0, 0},
    {"3,000 a day for 30 days, then 300", heavy_then_light, 0, 0, false, 0, 0, 0, 0},
    {"700 a day, 3,000 at weekends", weekends, 0, 0, false, 0, 0, 0, 0},
    {"waves, 1,000 x e^(1.5 sin(day/9))", waves, 0, 0, false, 0, 0, 0, 0},
    {"3,000 halving every 20 days, + 20", decays, 0, 0, false, 0, 0, 0, 0},
    {"1 a day, 20,000 on day 100", binge, 0, 0, false, 0, 0, 0, 0},
    {"a light user: 1 a day, a page every 20 days", light, 0, 0, false, 50, 0, 0, 0},
    {"10,000 at one time (a migrated SET), then 100 a day", hundred_a_day, 0, 0, false, 0, 10000, 0,
     0},
    {"10,000 at one time, then 1,000 a day", steady, 0, 0, false, 0, 10000, 0, 0},
    {"1,000 a day, 3 in 10 of them shown again within 60 days", steady, 0, 0, false, 0, 0, 3, 0},
    {"200 a day, 7 in 10 of them again from 200 favourites", two_hundred_a_day, 0, 0, false, 0, 0,
     7, 200},
};

/* The other policies a key can be made with: a short window, a cap with
 * no window, no limit at all.  Items "live" are those the policy keeps:
 * the last window's, the newest `capacity`, or all. */
typedef struct policy_case {
    const char *name;
    int window_days; /* 0: none */
    uint64_t capacity;
} policy_case;

static const policy_case default_policy = {"90 days", 90, 0};

static const policy_case other_policies[] = {
    {"7 days", 7, 0},
    {"1 day", 1, 0},
    {"no window, capacity 10,000", 0, 10000},
    {"no window, capacity 100,000", 0, 100000},
    {"no window, no capacity", 0, 0},
};

/* The patterns each other policy is driven through (indexes into
 * patterns[]): a steady user and a growing one. */
static const size_t other_patterns[] = {0, 4};

typedef struct outcome {
    unsigned refused;
    unsigned runs_max;
    double runs_mean, bits_max, bits_mean;
    uint64_t written;
    double query_us_mean, query_us_max; /* the key's median per batch */
    double vs_hset_mean, vs_hset_max;   /* over the hash set's, same batches */
    unsigned query_samples;
    uint64_t false_negatives;
    uint64_t fresh, false_positives;   /* never-written candidates, and those seen */
    double fp_rate_most;               /* the worst query sample's rate */
    uint64_t add_fp;                   /* fresh ids an add reported as seen before */
    uint64_t fresh_written;            /* of the items written, those never written before */
    double bound_most;                 /* the set's own rate bound over ERROR, most */
    unsigned reloads, reload_failures; /* round trips through the loader */
    double page_us_mean;               /* per page of PAGE adds, over the run */
    double page_us_p999;               /* the 99.9th percentile of pages */
    double page_ms_most;               /* the slowest page: how long a write held the key */
    double page_vs_hset;               /* the run's page time over the hash set's */
} outcome;

/* More false positives among n fresh candidates than a rate of ERROR
 * explains: over six standard deviations above the expected count (and a
 * few more, for the small counts of short runs).  Chance alone passes
 * this with probability about 1 - 1e-9; a state whose rate is twice the
 * bound fails it once it has seen ~30,000 candidates. */
/* The set's own bound on its rate (its runs' n * c / 2^64, and 2^-64 for
 * each exact key, which the budget leaves out: at most ~2^-43 in all) past
 * the policy's error: the budget broken. */
static bool over_budget(double bound_most)
{
    return bound_most > 1.0 + 1e-9;
}

static bool too_many_false_positives(uint64_t fp, uint64_t n)
{
    const double expected = ERROR * (double)n;
    return (double)fp > expected + 6.0 * sqrt(expected) + 6.0;
}

static void id_of(char out[ID_LEN + 1], uint64_t seq)
{
    snprintf(out, ID_LEN + 1, "%024llu", (unsigned long long)seq);
}

static uint64_t rng_state = 0x5eed5eed5eedull;
static uint64_t rnd(void)
{
    return splitmix64(&rng_state);
}

/* The ids a key is written with: strings, which the set hashes, or
 * integer ids (IDS INT) as a catalogue hands them out — new items in
 * publication order, a fixed catalogue in no order, or random 64-bit ids. */
typedef enum id_kind { IDS_STR, IDS_SEQUENTIAL, IDS_CATALOGUE, IDS_RANDOM } id_kind;
static id_kind ids_kind = IDS_STR;

#define SEQUENTIAL_BASE UINT64_C(1000000)
/* A catalogue of 2^22 ids from 2,700,000 on, each written once at most,
 * visited in the order an odd multiplier gives (a permutation). */
#define CATALOGUE_BASE UINT64_C(2700000)
#define CATALOGUE_MASK ((UINT64_C(1) << 22) - 1)
#define CATALOGUE_STEP UINT64_C(2654435761)
/* Sequence numbers of never-written integer ids: past what the patterns
 * driven with integer ids write (under 700,000), inside the catalogue. */
#define INT_FRESH_FROM UINT64_C(3500000)
#define INT_FRESH_SPAN UINT64_C(600000)

/* The integer id written with sequence number seq. */
static uint64_t int_id(uint64_t seq)
{
    switch (ids_kind) {
    case IDS_SEQUENTIAL:
        return SEQUENTIAL_BASE + seq;
    case IDS_CATALOGUE:
        return CATALOGUE_BASE + ((seq * CATALOGUE_STEP) & CATALOGUE_MASK);
    default: {
        uint64_t x = seq;
        return splitmix64(&x); /* a bijection of seq */
    }
    }
}

/* An integer id never written. */
static uint64_t int_fresh(void)
{
    return int_id(INT_FRESH_FROM + rnd() % INT_FRESH_SPAN);
}

static uint64_t int_hash(uint64_t id)
{
    return XXH3_64bits(&id, sizeof id);
}

/* Read every candidate's bytes, as a server has just received them, so
 * each method starts with the batch in cache. */
static volatile unsigned touched;
static void touch(const seen_str *b, size_t n)
{
    unsigned sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += ((const unsigned char *)b[i].ptr)[0] + ((const unsigned char *)b[i].ptr)[16];
    touched += sum;
}

/*
 * Time batches on the key against the hash set of its live items, the
 * items written with sequence numbers [first, end) and, where items are
 * added again, those before `first` whose last add (last_day) was on
 * from_day or later; live candidates are drawn from [first, end) but for
 * [late, 2 * late) (a page sent late), and every one must be seen at
 * `now`.  Adds the sample to o.
 */
static void measure_queries(seen_set *s, int64_t now, uint64_t first, uint64_t late, uint64_t end,
                            const uint16_t *last_day, int from_day, outcome *o)
{
    static char ids[QUERY_BATCHES * QUERY_BATCH][ID_LEN + 1];
    static seen_str batch[QUERY_BATCHES * QUERY_BATCH];
    static uint64_t ints[QUERY_BATCHES * QUERY_BATCH];
    static bool live[QUERY_BATCHES * QUERY_BATCH];
    static uint8_t flags[QUERY_BATCH];
    const bool by_int = ids_kind != IDS_STR;
    char id[ID_LEN + 1];
    hset h;
    uint64_t again = 0;
    for (uint64_t q = 0; last_day && q < first; q++)
        again += last_day[q] >= from_day;
    hset_init(&h, (size_t)(end - first + again));
    for (uint64_t q = last_day ? 0 : first; q < end; q++) {
        if (q < first && last_day[q] < from_day)
            continue;
        id_of(id, q);
        hset_add(&h, by_int ? int_hash(int_id(q)) : XXH3_64bits(id, ID_LEN));
    }
    for (size_t i = 0; i < QUERY_BATCHES * QUERY_BATCH; i++) {
        live[i] = i % 10 == 0;
        uint64_t q = first + rnd() % (end - first);
        if (q >= late && q < 2 * late)
            live[i] = false;
        /* Never written: sequence numbers far past any pattern's. */
        id_of(ids[i], live[i] ? q : UINT64_C(100000000000000000) + rnd() % UINT64_C(1000000000000));
        batch[i] = (seen_str){ids[i], ID_LEN};
        if (by_int) /* string runs draw as they always have */
            ints[i] = live[i] ? int_id(q) : int_fresh();
    }
    double t_seen[QUERY_REPS], t_hset[QUERY_REPS];
    uint64_t fresh = 0, fp = 0;
    for (int k = 0; k < QUERY_REPS; k++) {
        const size_t at = (size_t)(k % QUERY_BATCHES) * QUERY_BATCH;
        const seen_str *b = batch + at;
        const uint64_t *bi = ints + at;
        memset(flags, 0, sizeof flags); /* seen_filter_* only set the seen */
        touch(b, QUERY_BATCH);
        double t0 = now_s();
        if ((by_int ? seen_filter_int(s, bi, QUERY_BATCH, now, flags)
                    : seen_filter_str(s, b, QUERY_BATCH, now, flags)) != SEEN_OK)
            exit(1);
        double t1 = now_s();
        touch(b, QUERY_BATCH);
        size_t hits = 0;
        double t2 = now_s();
        if (by_int) /* two loops: a test per candidate would slow the baseline */
            for (size_t i = 0; i < QUERY_BATCH; i++)
                hits += (size_t)hset_has(&h, int_hash(bi[i]));
        else
            for (size_t i = 0; i < QUERY_BATCH; i++)
                hits += (size_t)hset_has(&h, XXH3_64bits(b[i].ptr, b[i].len));
        double t3 = now_s();
        touched += (unsigned)hits;
        t_seen[k] = t1 - t0;
        t_hset[k] = t3 - t2;
        for (size_t i = 0; i < QUERY_BATCH; i++)
            o->false_negatives += live[at + i] && !flags[i];
        /* Each distinct batch once: its never-written candidates seen. */
        if (k < QUERY_BATCHES)
            for (size_t i = 0; i < QUERY_BATCH; i++) {
                fresh += !live[at + i];
                fp += !live[at + i] && flags[i];
            }
    }
    o->fresh += fresh;
    o->false_positives += fp;
    if (fresh && (double)fp / (double)fresh > o->fp_rate_most)
        o->fp_rate_most = (double)fp / (double)fresh;
    hset_free(&h);
    qsort(t_seen, QUERY_REPS, sizeof *t_seen, cmp_double);
    qsort(t_hset, QUERY_REPS, sizeof *t_hset, cmp_double);
    const double us = t_seen[QUERY_REPS / 2] * 1e6;
    const double ratio = t_seen[QUERY_REPS / 2] / t_hset[QUERY_REPS / 2];
    o->query_us_mean += us;
    o->vs_hset_mean += ratio;
    o->query_us_max = us > o->query_us_max ? us : o->query_us_max;
    o->vs_hset_max = ratio > o->vs_hset_max ? ratio : o->vs_hset_max;
    o->query_samples++;
}

/*
 * The key through its serialized form and the loader that trusts nothing
 * (as an RDB file or RESTORE brings it back): the writer must never
 * produce what the loader refuses, and what loads must be the same set,
 * serializing to the same bytes and counting the same items.
 */
static void check_reload(const seen_set *s, int64_t now, outcome *o)
{
    const size_t need = seen_serialized_size(s);
    uint8_t *a = malloc(need ? need : 1), *b = malloc(need ? need : 1);
    size_t got = 0, again = 0;
    seen_set *back = NULL;
    bool same = a && b && seen_serialize(s, a, need, &got) == SEEN_OK && got == need &&
                seen_deserialize(a, got, &back) == SEEN_OK && seen_serialized_size(back) == need &&
                seen_serialize(back, b, need, &again) == SEEN_OK && again == need &&
                memcmp(a, b, need) == 0 && seen_count(back, now) == seen_count(s, now);
    o->reloads++;
    o->reload_failures += !same;
    seen_free(back);
    free(a);
    free(b);
}

/* Items written per day so far: live items are the last 90 days' sum. */
static uint64_t per_day[DAYS + 1];

/* The run's length and query cadence: DAYS and QUERY_EVERY, or the short
 * form's. */
static int days = DAYS;
static int query_every = QUERY_EVERY;

static outcome drive(const pattern *pt, uint32_t slices, const policy_case *pc)
{
    outcome o = {0};
    seen_policy p;
    seen_policy_default(&p);
    p.slices = slices;
    p.window_ms = (uint64_t)pc->window_days * (uint64_t)DAY;
    p.capacity = pc->capacity;
    p.error = ERROR;
    p.ids = ids_kind == IDS_STR ? SEEN_IDS_STR : SEEN_IDS_INT;
    seen_set *s;
    if (seen_create(&p, &s) != SEEN_OK)
        exit(1);
    memset(per_day, 0, sizeof per_day);
    /* The writes' baseline: the same pages into a hash set (never
     * trimmed, as a SET is), sized for everything the pattern writes. */
    uint64_t total = 0;
    double c = 0;
    for (int day = 0; day < days; day++) {
        c += day >= pt->away_from && day < pt->away_to ? 0 : pt->rate(day) / PAGE;
        total += (uint64_t)c * PAGE;
        c -= (double)(uint64_t)c;
    }
    total += pt->load;
    hset h;
    hset_init(&h, (size_t)total);
    double t_pages = 0, t_hset = 0;
    uint64_t npages = 0;
    double *page_t = malloc((size_t)(total / PAGE + 1) * sizeof *page_t);
    if (page_t == NULL)
        exit(1);
    char ids[PAGE][ID_LEN + 1];
    seen_str page[PAGE];
    uint64_t page_int[PAGE], page_seq[PAGE];
    const bool by_int = ids_kind != IDS_STR;
    /* Ids are sequence numbers, each new item the next; first_seq[d] is
     * the first of day d.  Where items are added again, last_day holds
     * each one's latest add, and per_day counts items by their latest
     * add: what the window keeps. */
    uint64_t next_seq = 0;
    static uint64_t first_seq[DAYS + 1];
    uint16_t *last_day = NULL;
    if (pt->again_tenths && (last_day = calloc((size_t)total + 1, sizeof *last_day)) == NULL)
        exit(1);
    if (pt->load) {
        /* The load: one command, every item at T0, not counted as a page. */
        char(*lids)[ID_LEN + 1] = malloc(pt->load * sizeof *lids);
        seen_str *ls = malloc(pt->load * sizeof *ls);
        uint64_t *li = malloc(pt->load * sizeof *li);
        if (lids == NULL || ls == NULL || li == NULL)
            exit(1);
        for (uint64_t i = 0; i < pt->load; i++) {
            id_of(lids[i], i);
            ls[i] = (seen_str){lids[i], ID_LEN};
            li[i] = int_id(i);
            hset_add(&h, by_int ? int_hash(li[i]) : XXH3_64bits(lids[i], ID_LEN));
        }
        size_t added = pt->load;
        if ((by_int ? seen_add_int(s, li, pt->load, NULL, T0, &added)
                    : seen_add_str(s, ls, pt->load, NULL, T0, &added)) != SEEN_OK)
            o.refused++;
        o.add_fp += pt->load - added;
        o.written = pt->load;
        next_seq = pt->load;
        per_day[0] = pt->load;
        free(lids);
        free(ls);
        free(li);
    }
    seen_run_info runs[64];
    double carry = 0, runs_sum = 0, bits_sum = 0;
    unsigned samples = 0, bit_samples = 0;
    for (int day = 0; day < days; day++) {
        first_seq[day] = next_seq;
        bool away = day >= pt->away_from && day < pt->away_to;
        carry += away ? 0 : pt->rate(day) / PAGE;
        int pages = (int)carry;
        carry -= pages;
        for (int k = 0; k < pages; k++) {
            int64_t at = T0 + day * DAY + (int64_t)((k + 0.5) * (double)DAY / pages);
            if (pt->late_second_page && o.written == PAGE)
                at = T0 - 60000;
            /* Items added again: drawn from those first written in the
             * last AGAIN_DAYS days (or from the favourites), before this
             * page. */
            const uint64_t page_from = next_seq;
            uint64_t again_from = first_seq[day > AGAIN_DAYS ? day - AGAIN_DAYS : 0];
            uint64_t again_to = page_from;
            if (pt->again_pool) {
                again_from = 0;
                again_to = page_from < pt->again_pool ? page_from : pt->again_pool;
            }
            size_t fresh_in_page = 0;
            for (int i = 0; i < PAGE; i++) {
                uint64_t q;
                if (pt->again_tenths && again_to > again_from && rnd() % 10 < pt->again_tenths) {
                    q = again_from + rnd() % (again_to - again_from);
                } else {
                    q = next_seq++;
                    fresh_in_page++;
                }
                page_seq[i] = q;
                id_of(ids[i], q);
                page[i] = (seen_str){ids[i], ID_LEN};
                page_int[i] = int_id(q);
            }
            size_t added = PAGE;
            const double t0 = now_s();
            if ((by_int ? seen_add_int(s, page_int, PAGE, NULL, at, &added)
                        : seen_add_str(s, page, PAGE, NULL, at, &added)) != SEEN_OK)
                o.refused++;
            const double t1 = now_s();
            if (by_int)
                for (int i = 0; i < PAGE; i++)
                    hset_add(&h, int_hash(page_int[i]));
            else
                for (int i = 0; i < PAGE; i++)
                    hset_add(&h, XXH3_64bits(page[i].ptr, page[i].len));
            const double t2 = now_s();
            o.add_fp += fresh_in_page - added;
            const double bound = seen_fpr_estimate(s) / ERROR;
            if (bound > o.bound_most)
                o.bound_most = bound;
            page_t[npages++] = t1 - t0;
            t_pages += t1 - t0;
            t_hset += t2 - t1;
            o.written += PAGE;
            for (int i = 0; i < PAGE; i++) {
                if (last_day && page_seq[i] < page_from)
                    per_day[last_day[page_seq[i]]]--; /* its older add */
                if (last_day)
                    last_day[page_seq[i]] = (uint16_t)day;
                per_day[day]++;
            }
        }
        /* A day without writes: forgotten slices go, as the module's sweep
         * sheds them from idle keys (writes shed them themselves). */
        if (pages == 0 && seen_expire(s, T0 + (day + 1) * DAY) != SEEN_OK)
            exit(1);
        if (day < 5)
            continue;
        unsigned n = (unsigned)seen_runs(s, runs, 64);
        if (n > o.runs_max)
            o.runs_max = n;
        runs_sum += n;
        samples++;
        uint64_t live = 0;
        int span = pc->window_days ? pc->window_days : days;
        for (int d = day >= span - 1 ? day - (span - 1) : 0; d <= day; d++)
            live += per_day[d];
        if (pc->capacity && live > pc->capacity)
            live = pc->capacity;
        const uint64_t min_live = pt->min_live ? pt->min_live : BIG_KEY;
        if (live >= min_live) {
            double bits = (double)seen_bytes(s) * 8.0 / (double)live;
            if (bits > o.bits_max)
                o.bits_max = bits;
            bits_sum += bits;
            bit_samples++;
        }
        if (live >= min_live && ((day + 1) % query_every == 0 || day == days - 1)) {
            /* Every live item is inside the window at the end of its
             * day but a page sent late, older than the day it is counted
             * in: its items are not drawn as live candidates. */
            const uint64_t late = pt->late_second_page ? PAGE : 0;
            /* Live candidates: the items first written inside the window
             * (where items come again, live items also include older ones
             * added again since, which the hash set holds too). */
            const int from_day = day >= span - 1 ? day - (span - 1) : 0;
            const uint64_t first = last_day ? first_seq[from_day] : next_seq - live;
            measure_queries(s, T0 + (day + 1) * DAY - 1, first, late, next_seq, last_day, from_day,
                            &o);
            check_reload(s, T0 + (day + 1) * DAY - 1, &o);
        }
    }
    if (o.query_samples) {
        o.query_us_mean /= o.query_samples;
        o.vs_hset_mean /= o.query_samples;
    }
    o.runs_mean = samples ? runs_sum / samples : 0;
    o.bits_mean = bit_samples ? bits_sum / bit_samples : 0;
    if (npages) {
        qsort(page_t, (size_t)npages, sizeof *page_t, cmp_double);
        o.page_us_mean = t_pages * 1e6 / (double)npages;
        o.page_us_p999 = page_t[(size_t)((double)(npages - 1) * 0.999)] * 1e6;
        o.page_ms_most = page_t[npages - 1] * 1e3;
        o.page_vs_hset = t_hset > 0 ? t_pages / t_hset : 0;
    }
    free(page_t);
    o.fresh_written = next_seq;
    free(last_day);
    hset_free(&h);
    seen_free(s);
    return o;
}

/* The tables' columns after the leading ones (`lead`, `rule` their
 * header and alignment cells). */
static void print_header(FILE *out, const char *lead, const char *rule)
{
    fprintf(
        out,
        "| %s | items written | writes refused | runs, most | runs, mean | "
        "bits per live item, most | mean | query µs, mean | most | / hash set, mean | most | "
        "page µs, mean | 99.9%% | slowest, ms | / hash set | false positives ‰, queries | worst | "
        "adds | bound used, most |\n",
        lead);
    fprintf(out, "| %s |", rule);
    for (int i = 0; i < 18; i++)
        fprintf(out, " ---: |");
    fprintf(out, "\n");
}

static void print_row(FILE *out, const char *lead, const outcome *o)
{
    fprintf(
        out,
        "| %s | %llu | %u | %u | %.1f | %.1f | %.1f | %.0f | %.0f | %.2f | %.2f | %.1f | %.0f | "
        "%.2f | %.0f | %.2f | %.2f | %.2f | %.4f |\n",
        lead, (unsigned long long)o->written, o->refused, o->runs_max, o->runs_mean, o->bits_max,
        o->bits_mean, o->query_us_mean, o->query_us_max, o->vs_hset_mean, o->vs_hset_max,
        o->page_us_mean, o->page_us_p999, o->page_ms_most, o->page_vs_hset,
        o->fresh ? 1e3 * (double)o->false_positives / (double)o->fresh : 0, 1e3 * o->fp_rate_most,
        o->fresh_written ? 1e3 * (double)o->add_fp / (double)o->fresh_written : 0, o->bound_most);
    fflush(out);
}

/* What every key's walk found, summed: any of it fails the run. */
typedef struct totals {
    unsigned refused;
    uint64_t false_negatives;
    unsigned over_bound; /* keys over the false-positive bound */
    unsigned reloads, reload_failures;
} totals;

static void record(FILE *out, const char *lead, outcome o, totals *t)
{
    t->refused += o.refused;
    t->false_negatives += o.false_negatives;
    t->over_bound += too_many_false_positives(o.false_positives, o.fresh) ||
                     too_many_false_positives(o.add_fp, o.fresh_written) ||
                     over_budget(o.bound_most);
    t->reloads += o.reloads;
    t->reload_failures += o.reload_failures;
    print_row(out, lead, &o);
}

/* The integer ids keys are driven with (through other_patterns). */
static const struct {
    id_kind kind;
    const char *name;
} int_kinds[] = {
    {IDS_SEQUENTIAL, "new items in publication order"},
    {IDS_CATALOGUE, "a catalogue of 4 million, in no order"},
    {IDS_RANDOM, "random 64-bit"},
};

int main(int argc, char **argv)
{
    bool short_form = argc > 1 && strcmp(argv[1], "--short") == 0;
    const char *out_path = argc > 1 + short_form ? argv[1 + short_form] : NULL;
    FILE *out = out_path ? fopen(out_path, "w") : stdout;
    if (out == NULL) {
        perror(out_path);
        return 1;
    }
    static const uint32_t all_slice_counts[] = {4, 16, 64}, short_slice_counts[] = {4, 64};
    const uint32_t *slice_counts = short_form ? short_slice_counts : all_slice_counts;
    const size_t nslice_counts = short_form ? 2 : 3;
    if (short_form) {
        days = SHORT_DAYS;
        query_every = SHORT_QUERY_EVERY;
    }
    time_t started = time(NULL);
    fprintf(out, "# Key states: runs, bits per live item, queries and writes over %d days\n\n",
            days);
    fprintf(out,
            "Command: `%s` (in process; bench/states.c says what is measured). "
            "Policy: 90 days, error 0.001, in the slices given; pages of %d at their times. "
            "Queries: every %d days, batches of %d candidates (a tenth of them live items), "
            "the key's median µs and its ratio to an in-process hash set of the live items "
            "on the same batches (below 1: faster than the hash set). Pages: µs per page of "
            "adds, the mean, the 99.9th percentile and the slowest page (a page that folds or "
            "rewrites runs costs what the runs hold), and the ratio of the mean to the same "
            "pages added to a hash set that keeps everything (as an untrimmed SET does). "
            "False positives: per thousand never-written candidates of the queries (over the "
            "run, and the worst day's), and per thousand fresh ids written (an add that "
            "reports a fresh id as seen before). Bound used: the most, over every page, of the "
            "set's own bound on its rate (its runs' n·c / 2^64) over the error; above 1 fails.\n\n",
            short_form ? "make test-states" : "make bench-states", PAGE, query_every, QUERY_BATCH);
    print_header(out, "pattern (items a day) | slices", "--- | ---:");
    totals t = {0};
    char lead[160];
    for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; i++) {
        for (size_t j = 0; j < nslice_counts; j++) {
            snprintf(lead, sizeof lead, "%s | %u", patterns[i].name, slice_counts[j]);
            record(out, lead, drive(&patterns[i], slice_counts[j], &default_policy), &t);
        }
    }
    fprintf(out, "\nOther policies, in 4 slices (error 0.001); live items are those the policy "
                 "keeps:\n\n");
    print_header(out, "policy | pattern (items a day)", "--- | ---");
    for (size_t i = 0; i < sizeof other_policies / sizeof other_policies[0]; i++) {
        for (size_t j = 0; j < sizeof other_patterns / sizeof other_patterns[0]; j++) {
            const pattern *pt = &patterns[other_patterns[j]];
            snprintf(lead, sizeof lead, "%s | %s", other_policies[i].name, pt->name);
            record(out, lead, drive(pt, 4, &other_policies[i]), &t);
        }
    }
    fprintf(out, "\nInteger ids (`IDS INT`), 90 days in 4 slices (error 0.001): a key keeps "
                 "dense ids as they are, exactly, while that is smaller than fingerprints, "
                 "and random ones as fingerprints:\n\n");
    print_header(out, "ids | pattern (items a day)", "--- | ---");
    for (size_t i = 0; i < sizeof int_kinds / sizeof int_kinds[0]; i++) {
        for (size_t j = 0; j < sizeof other_patterns / sizeof other_patterns[0]; j++) {
            const pattern *pt = &patterns[other_patterns[j]];
            ids_kind = int_kinds[i].kind;
            snprintf(lead, sizeof lead, "%s | %s", int_kinds[i].name, pt->name);
            record(out, lead, drive(pt, 4, &default_policy), &t);
        }
    }
    ids_kind = IDS_STR;
    fprintf(out,
            "\n%u writes refused, %llu false negatives, %u keys over the false-positive "
            "bound and %u of %u reloads refused or changed in all; %ld s.\n",
            t.refused, (unsigned long long)t.false_negatives, t.over_bound, t.reload_failures,
            t.reloads, (long)(time(NULL) - started));
    if (out != stdout)
        fclose(out);
    return t.refused || t.false_negatives || t.over_bound || t.reload_failures ? 2 : 0;
}
