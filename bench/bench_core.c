/*
 * bench_core.c — the core library's benchmark (`make bench-core`).
 *
 * For histories of 100, 1,000, 10,000 and 100,000 string items (24-hex
 * ids, error 0.001, a 90-day window in 4 slices, timestamps spread over
 * the window) it measures, in one run, side by side with a baseline:
 *   - bits per item, against the lower bound log2(1/error);
 *   - the false-positive rate on 100,000 fresh candidates;
 *   - ns per candidate for batch queries of 10,000 and 2,000 candidates
 *     (10% seen), each repetition on a different batch, on the history
 *     imported (one run), on the same history written live at its own
 *     times (the several runs a key written at the clock holds in its
 *     first window: what a Redis key receiving a feed's writes is), and
 *     on a key written live for three windows (its steady state: a main
 *     run and the recent one);
 *   - µs per single-item add, streaming at the current time into a set kept
 *     at its size by expiry (after a full window of warm-up), and per page
 *     of 20 items (what a feed writes per request) into a set warmed up
 *     alike (its baseline: 20 hash-set adds);
 *   - for integer ids from a dense catalogue, a set keyed by the raw ids
 *     against a twin holding fingerprints of the same ids: bits per id and
 *     batch queries, as ratios;
 * The baseline is what an in-process exact structure costs: an open-
 * addressing hash set of the items' 64-bit hashes at load factor <= 1/2
 * (a lower bound for what a Redis SET spends).  Every figure is a median
 * of repeated, time-bounded measurements; ratios are printed, and the
 * query and write targets with whether this run met them.
 */
#include "seen.h"

#include "bench_util.h"

#include "hset.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DAY INT64_C(86400000)
#define WINDOW (90 * DAY)
#define NOW0 INT64_C(1763700000000)

static uint64_t rng_state = 0x5eed5eed5eedull;
static uint64_t rnd(void)
{
    return splitmix64(&rng_state);
}

typedef struct id24 {
    char s[25];
} id24;

static void make_ids(id24 *ids, seen_str *strs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        snprintf(ids[i].s, sizeof ids[i].s, "%016llx%08llx", (unsigned long long)rnd(),
                 (unsigned long long)(rnd() & 0xffffffff));
        strs[i].ptr = ids[i].s;
        strs[i].len = 24;
    }
}

/* Read every candidate's bytes, as a server has just received them: each
 * method then starts with the batch in cache, not only the ones timed
 * after another has read it. */
static unsigned touch(const seen_str *b, size_t q)
{
    unsigned sum = 0;
    for (size_t i = 0; i < q; i++)
        for (size_t j = 0; j < b[i].len; j += 8)
            sum += (unsigned char)((const char *)b[i].ptr)[j];
    return sum;
}

static volatile unsigned touched;

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* ------------------------------------------------------------- the run */

/* Items per call in the page-add measurement: what a feed writes per
 * request. */
#define PAGE 20

typedef struct result {
    size_t n;
    double bits, fpr, us_add, base_bits, base_us_add;
    double ns_cand[2], base_ns_cand[2]; /* batches of 10,000 and 2,000 */
    double ns_live[2];                  /* the same on the history written live */
    double ns_steady[2]; /* on a key written live for three windows, the last one the history */
    double ns_prep[2];   /* of it, hashing and sorting the candidates (seen_query_str) */
    double us_page, base_us_page; /* a page of PAGE items in one call */
} result;

/* Load n items with timestamps spread over the window ending at `end`. */
static void load(seen_set *s, const seen_str *strs, size_t n, int64_t end)
{
    int64_t *at = malloc(100 * sizeof *at);
    for (size_t i = 0; i < n; i += 100) {
        size_t k = n - i < 100 ? n - i : 100;
        for (size_t j = 0; j < k; j++)
            at[j] = end - WINDOW + (int64_t)((double)WINDOW * (double)(i + j) / (double)n);
        if (seen_add_str(s, strs + i, k, at, at[k - 1], NULL) != SEEN_OK)
            abort();
    }
    free(at);
    /* Each batch spans more than ten minutes, so this is an import: it
     * stays exact until an expiry settles it (the Redis module does that a
     * second after an import's last write). */
    if (seen_expire(s, end) != SEEN_OK)
        abort();
}

/* The same history written live: each batch of 100 at its own time, as
 * the clock reaches it. */
static void load_live(seen_set *s, const seen_str *strs, size_t n, int64_t end)
{
    for (size_t i = 0; i < n; i += 100) {
        size_t k = n - i < 100 ? n - i : 100;
        int64_t t = end - WINDOW + (int64_t)((double)WINDOW * (double)(i + k - 1) / (double)n);
        if (seen_add_str(s, strs + i, k, NULL, t, NULL) != SEEN_OK)
            abort();
    }
}

/* A key in its steady state as a feed's server holds it: three windows
 * written live at the same rate, the last one being hist[0..n) (the
 * first one's copies long forgotten when they come again), then the
 * expiry the server's sweep runs.  Its young runs and its first plan's
 * have aged out: a main run and the recent one remain. */
static seen_set *steady_live(const seen_policy *p, const seen_str *hist, size_t n)
{
    seen_set *s;
    if (seen_create(p, &s) != SEEN_OK)
        abort();
    load_live(s, hist, n, NOW0 - 2 * WINDOW);
    load_live(s, hist + n, n, NOW0 - WINDOW);
    load_live(s, hist, n, NOW0);
    if (seen_expire(s, NOW0) != SEEN_OK)
        abort();
    return s;
}

/* A set in its steady state: three windows of history (hist[0..2n), the
 * two halves in turn), so it has planned for its peak (window plus a
 * slice) and its first plan's runs have aged out. */
static seen_set *steady_set(const seen_policy *p, const seen_str *hist, size_t n)
{
    seen_set *s;
    if (seen_create(p, &s) != SEEN_OK)
        abort();
    load(s, hist + n, n, NOW0 - 2 * WINDOW);
    load(s, hist, n, NOW0 - WINDOW);
    load(s, hist + n, n, NOW0);
    return s;
}

static result bench_size(size_t n)
{
    result r = {.n = n};
    seen_policy p;
    seen_policy_default(&p);
    /* History, then adds streamed after it, then fresh candidates. */
    size_t adds = n < 20000 ? n : 20000;
    size_t total = 2 * n + adds + 100000;
    id24 *ids = malloc(total * sizeof *ids);
    seen_str *strs = malloc(total * sizeof *strs);
    make_ids(ids, strs, total);
    seen_str *hist = strs, *fresh = strs + 2 * n + adds;

    /* Space: a set holding one window of history. */
    seen_set *s;
    if (seen_create(&p, &s) != SEEN_OK)
        abort();
    load(s, hist, n, NOW0);
    r.bits = (double)seen_bytes(s) * 8.0 / (double)n;
    hset h;
    hset_init(&h, n);
    for (size_t i = 0; i < n; i++)
        hset_add(&h, XXH3_64bits(hist[i].ptr, hist[i].len));
    r.base_bits = (double)((h.mask + 1) * sizeof(uint64_t)) * 8.0 / (double)n;

    /* False positives on fresh candidates. */
    uint8_t *seen = calloc(100000, 1);
    if (seen_filter_str(s, fresh, 100000, NOW0, seen) != SEEN_OK)
        abort();
    size_t fp = 0;
    for (size_t i = 0; i < 100000; i++)
        fp += seen[i];
    r.fpr = fp / 100000.0;

    /* Batches of 10,000 and 2,000 candidates, 10% of them seen.  Each
     * repetition takes the next of BATCHES different batches: a branch
     * predictor replaying one batch would learn its branches and report
     * what no live request sees. */
    enum { Q = 10000, QS = 2000, BATCHES = 8, REPS = 41 };
    seen_str *batch = malloc((size_t)BATCHES * Q * sizeof *batch);
    for (size_t i = 0; i < (size_t)BATCHES * Q; i++)
        batch[i] = i % 10 == 0 ? hist[rnd() % n] : fresh[rnd() % 100000];
    uint8_t *flags = malloc(Q);
    seen_set *live;
    if (seen_create(&p, &live) != SEEN_OK)
        abort();
    load_live(live, hist, n, NOW0);
    seen_set *steady = steady_live(&p, hist, n);
    const size_t sizes_q[2] = {Q, QS};
    for (int qi = 0; qi < 2; qi++) {
        const size_t q = sizes_q[qi];
        double t_seen[REPS], t_base[REPS], t_live[REPS], t_prep[REPS], t_steady[REPS];
        for (int k = 0; k < REPS; k++) {
            const seen_str *b = batch + (size_t)(k % BATCHES) * Q;
            memset(flags, 0, q);
            touched += touch(b, q);
            double t0 = now_s();
            if (seen_filter_str(s, b, q, NOW0, flags) != SEEN_OK)
                abort();
            double t1 = now_s();
            touched += touch(b, q);
            size_t hits = 0;
            double t2 = now_s();
            for (size_t i = 0; i < q; i++)
                hits += hset_has(&h, XXH3_64bits(b[i].ptr, b[i].len));
            double t3 = now_s();
            if (hits == 0 && n > 0)
                abort();
            touched += touch(b, q);
            double t4 = now_s();
            if (seen_filter_str(live, b, q, NOW0, flags) != SEEN_OK)
                abort();
            double t5 = now_s();
            touched += touch(b, q);
            double t8 = now_s();
            if (seen_filter_str(steady, b, q, NOW0, flags) != SEEN_OK)
                abort();
            double t9 = now_s();
            /* What every query pays before it reads a run: the
             * candidates hashed (the format's XXH3) and sorted. */
            touched += touch(b, q);
            seen_query *prepared;
            double t6 = now_s();
            if (seen_query_str(b, q, &prepared) != SEEN_OK)
                abort();
            seen_query_free(prepared);
            double t7 = now_s();
            t_seen[k] = (t1 - t0) * 1e9 / (double)q;
            t_base[k] = (t3 - t2) * 1e9 / (double)q;
            t_live[k] = (t5 - t4) * 1e9 / (double)q;
            t_steady[k] = (t9 - t8) * 1e9 / (double)q;
            t_prep[k] = (t7 - t6) * 1e9 / (double)q;
        }
        r.ns_cand[qi] = median(t_seen, REPS);
        r.base_ns_cand[qi] = median(t_base, REPS);
        r.ns_live[qi] = median(t_live, REPS);
        r.ns_steady[qi] = median(t_steady, REPS);
        r.ns_prep[qi] = median(t_prep, REPS);
    }
    seen_free(live);
    seen_free(steady);

    /* Single adds at the current time into a set in steady state: warm up
     * with three windows of history, so the set has planned for its peak
     * (window plus a slice) and its first plan's runs have aged out, then
     * stream `adds` items at the same rate, so expiry keeps the set at its
     * size. */
    seen_set *st = steady_set(&p, hist, n);
    double step = (double)WINDOW / (double)n;
    double t0 = now_s();
    for (size_t i = 0; i < adds; i++) {
        int64_t t = NOW0 + (int64_t)(step * (double)(i + 1));
        if (seen_add_str(st, &strs[2 * n + i], 1, NULL, t, NULL) != SEEN_OK)
            abort();
    }
    double t1 = now_s();
    r.us_add = (t1 - t0) * 1e6 / (double)adds;
    hset h2;
    hset_init(&h2, n + adds);
    for (size_t i = 0; i < n; i++)
        hset_add(&h2, XXH3_64bits(hist[n + i].ptr, 24));
    t0 = now_s();
    for (size_t i = 0; i < adds; i++)
        hset_add(&h2, XXH3_64bits(strs[2 * n + i].ptr, 24));
    t1 = now_s();
    r.base_us_add = (t1 - t0) * 1e6 / (double)adds;

    /* The same stream in pages of PAGE items, into a set warmed up alike. */
    seen_set *sp = steady_set(&p, hist, n);
    size_t pages = adds / PAGE;
    t0 = now_s();
    for (size_t i = 0; i < pages; i++) {
        int64_t t = NOW0 + (int64_t)(step * (double)((i + 1) * PAGE));
        if (seen_add_str(sp, &strs[2 * n + i * PAGE], PAGE, NULL, t, NULL) != SEEN_OK)
            abort();
    }
    t1 = now_s();
    r.us_page = pages ? (t1 - t0) * 1e6 / (double)pages : 0;
    r.base_us_page = r.base_us_add * PAGE;
    seen_free(sp);

    seen_free(st);
    seen_free(s);
    hset_free(&h);
    hset_free(&h2);
    free(seen);
    free(batch);
    free(flags);
    free(ids);
    free(strs);
    return r;
}

/* Integer ids from a dense catalogue: a set keyed by the ids themselves
 * (kept exact while that is smaller than fingerprints), against a twin fed
 * the same ids spread over 64 bits by an odd multiplier (a bijection),
 * which the set mixes into fingerprints as it does any wide ids: what
 * every IDS INT set held before it kept dense ids raw. */
#define SPREAD UINT64_C(0x9E3779B97F4A7C15)

typedef struct int_result {
    size_t n;
    double bits[2], us_q[2][2]; /* [raw, spread]; queries of 2,000 and 10,000 */
    double us_page[2];          /* the history's pages, written at their times */
    double us_add[2];           /* single adds of the next ids, at the same rate */
} int_result;

static int_result bench_int_ids(size_t n, uint64_t step, int64_t span)
{
    int_result out = {.n = n};
    uint64_t *ids = malloc(n * sizeof *ids);
    for (size_t i = 0; i < n; i++)
        ids[i] = 5000000 + i * step + rnd() % step;
    enum { Q = 10000, BATCHES = 8, REPS = 41 };
    uint64_t *cand = malloc((size_t)BATCHES * Q * sizeof *cand);
    for (size_t i = 0; i < (size_t)BATCHES * Q; i++)
        cand[i] = i % 10 == 0 ? ids[rnd() % n] : 5000000 + rnd() % (n * step);
    uint64_t *buf = malloc(Q * sizeof *buf);
    uint8_t *flags = malloc(Q);
    for (int v = 0; v < 2; v++) {
        seen_policy p;
        seen_policy_default(&p);
        p.ids = SEEN_IDS_INT;
        p.window_ms = (uint64_t)span;
        seen_set *s;
        if (seen_create(&p, &s) != SEEN_OK)
            abort();
        uint64_t page[PAGE];
        double t_pages = 0;
        for (size_t i = 0; i < n; i += PAGE) {
            size_t k = n - i < PAGE ? n - i : PAGE;
            for (size_t j = 0; j < k; j++)
                page[j] = v ? ids[i + j] * SPREAD : ids[i + j];
            int64_t t = NOW0 - span + (int64_t)((double)span * (double)(i + k) / (double)n) - 1;
            double t0 = now_s();
            if (seen_add_int(s, page, k, NULL, t, NULL) != SEEN_OK)
                abort();
            t_pages += now_s() - t0;
        }
        out.us_page[v] = t_pages * 1e6 / (double)((n + PAGE - 1) / PAGE);
        out.bits[v] = (double)seen_bytes(s) * 8.0 / (double)n;
        const size_t sizes_q[2] = {2000, Q};
        for (int qi = 0; qi < 2; qi++) {
            double t_q[REPS];
            for (int r = 0; r < REPS; r++) {
                const uint64_t *b = cand + (size_t)(r % BATCHES) * Q;
                for (size_t i = 0; i < sizes_q[qi]; i++)
                    buf[i] = v ? b[i] * SPREAD : b[i];
                memset(flags, 0, sizes_q[qi]);
                double t0 = now_s();
                if (seen_filter_int(s, buf, sizes_q[qi], NOW0 - 1, flags) != SEEN_OK)
                    abort();
                t_q[r] = (now_s() - t0) * 1e6;
            }
            out.us_q[v][qi] = median(t_q, REPS);
        }
        /* Single adds of the ids that come next, at the history's rate. */
        seen_set *st;
        if (seen_copy(s, &st) != SEEN_OK)
            abort();
        const size_t adds = n < 20000 ? n : 20000;
        double t0 = now_s();
        for (size_t i = 0; i < adds; i++) {
            uint64_t id = 5000000 + (n + i) * step + rnd() % step;
            id = v ? id * SPREAD : id;
            int64_t t = NOW0 + (int64_t)((double)span * (double)(i + 1) / (double)n);
            if (seen_add_int(st, &id, 1, NULL, t, NULL) != SEEN_OK)
                abort();
        }
        out.us_add[v] = (now_s() - t0) * 1e6 / (double)adds;
        seen_free(st);
        seen_free(s);
    }
    free(ids);
    free(cand);
    free(buf);
    free(flags);
    return out;
}

static void machine(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256], model[256] = "unknown";
    int cpus = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0 && cpus++ == 0) {
            char *c = strchr(line, ':');
            if (c) {
                snprintf(model, sizeof model, "%s", c + 2);
                model[strcspn(model, "\n")] = 0;
            }
        }
    }
    if (f)
        fclose(f);
    printf("machine: %s, %d logical CPUs; one core used\n", model, cpus);
}

int main(int argc, char **argv)
{
    size_t sizes[] = {100, 1000, 10000, 100000};
    size_t nsizes = 4;
    if (argc > 1) {
        sizes[0] = strtoull(argv[1], NULL, 10);
        nsizes = 1;
    }
#ifdef __GLIBC__
    /* glibc hands blocks of 128 KB and more back to the kernel when freed
     * (and trims the heap top), so a query's scratch would page-fault
     * afresh on every call, or not, depending on what was freed before it.
     * Keep freed memory, as jemalloc does in Redis: the figures then
     * measure the library, whatever order the sets are queried in. */
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    mallopt(M_TOP_PAD, 64 << 20);
#endif
    const double lb = log2(1 / 0.001);
    machine();
    printf("policy: 24-byte string ids, error 0.001 (lower bound %.2f bits/item), 90-day window, "
           "4 slices; timestamps spread over the window\n",
           lb);
    printf("baseline: in-process hash set of 64-bit item hashes, load <= 1/2 (exact)\n\n");
    printf("| items | bits/item | x bound | baseline bits | memory vs baseline | measured FPR | "
           "ns/candidate (10k batch) | baseline ns | us per 10k batch | us per 2k batch | "
           "baseline us/2k | live key: us per 10k | live key: us per 2k | steady key: us per 10k | "
           "steady key: us per 2k | us/add | "
           "baseline us/add | us per page of %d | baseline us/page | hash and sort: us per 10k | "
           "us per 2k |\n",
           PAGE);
    printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
           "---:|---:|---:|---:|\n");
    result res[4];
    for (size_t i = 0; i < nsizes; i++) {
        result r = res[i] = bench_size(sizes[i]);
        printf("| %zu | %.2f | %.2f | %.0f | %.1fx smaller | %.5f | %.1f | %.1f | %.0f | %.0f | "
               "%.0f | %.0f | %.0f | %.0f | %.0f | %.2f | %.3f | %.1f | %.2f | %.0f | %.0f |\n",
               r.n, r.bits, r.bits / lb, r.base_bits, r.base_bits / r.bits, r.fpr, r.ns_cand[0],
               r.base_ns_cand[0], r.ns_cand[0] * 10, r.ns_cand[1] * 2, r.base_ns_cand[1] * 2,
               r.ns_live[0] * 10, r.ns_live[1] * 2, r.ns_steady[0] * 10, r.ns_steady[1] * 2,
               r.us_add, r.base_us_add, r.us_page, r.base_us_page, r.ns_prep[0] * 10,
               r.ns_prep[1] * 2);
        fflush(stdout);
    }
    /* The targets the query and write paths are held to, where this run
     * measured them. */
    printf("\n| target | measured | met |\n|---|---:|:---:|\n");
    for (size_t i = 0; i < nsizes; i++) {
        const result *r = &res[i];
        /* prep: of the batch, hashing and sorting its candidates, which
         * no layout of the runs changes. */
        struct {
            size_t n;
            const char *what;
            double got, goal, prep;
        } t[] = {
            {100000, "10k batch on 100k items, us", r->ns_cand[0] * 10, 100, r->ns_prep[0] * 10},
            {10000, "10k batch on 10k items, us", r->ns_cand[0] * 10, 60, r->ns_prep[0] * 10},
            {100000, "2k batch on 100k items, us", r->ns_cand[1] * 2, 30, r->ns_prep[1] * 2},
            {100000, "10k batch on 100k items written live, us", r->ns_live[0] * 10, 100,
             r->ns_prep[0] * 10},
            {10000, "10k batch on 10k items written live, us", r->ns_live[0] * 10, 60,
             r->ns_prep[0] * 10},
            {100000, "2k batch on 100k items written live, us", r->ns_live[1] * 2, 30,
             r->ns_prep[1] * 2},
            {100000, "10k batch on 100k items in the steady state, us", r->ns_steady[0] * 10, 100,
             r->ns_prep[0] * 10},
            {10000, "10k batch on 10k items in the steady state, us", r->ns_steady[0] * 10, 60,
             r->ns_prep[0] * 10},
            {100000, "2k batch on 100k items in the steady state, us", r->ns_steady[1] * 2, 30,
             r->ns_prep[1] * 2},
            {r->n, "10k batch no slower than the hash set, ns/candidate", r->ns_cand[0],
             r->base_ns_cand[0], 0},
            {r->n, "2k batch no slower than the hash set, ns/candidate", r->ns_cand[1],
             r->base_ns_cand[1], 0},
            {r->n, "single add, us", r->us_add, r->n >= 100000 ? 0.5 : 1.0, 0},
        };
        /* Goals under 10 (single adds) with two decimals: 0.503 against
         * 0.5 must not read "0.5 | no". */
        for (size_t k = 0; k < sizeof t / sizeof *t; k++) {
            if (t[k].n != r->n)
                continue;
            const int d = t[k].goal < 10 ? 2 : 1;
            char prep[64] = "";
            if (t[k].prep > 0)
                snprintf(prep, sizeof prep, " (hashing and sorting the candidates: %.0f)",
                         t[k].prep);
            printf("| %zu items: %s <= %.*f | %.*f%s | %s |\n", r->n, t[k].what, d, t[k].goal, d,
                   t[k].got, prep, t[k].got <= t[k].goal ? "yes" : "no");
        }
    }
    if (nsizes > 1) {
        printf("\nInteger ids from a dense catalogue (`IDS INT`, error 0.001), pages of %d at "
               "their times, 10%% of candidates held, the rest from the ids' range.  raw: the set "
               "as written, keyed by the ids while exact is smaller; mixed: the same ids times an "
               "odd constant, which the set holds as fingerprints (every IDS INT set did so "
               "before).\n\n",
               PAGE);
        printf("| ids | bits/item raw | mixed | mixed / raw | 2k batch us raw | mixed | "
               "mixed / raw | 10k batch us raw | mixed | mixed / raw | us per page raw | mixed | "
               "us/add raw | mixed |\n"
               "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        const struct {
            const char *what;
            size_t n;
            uint64_t step;
            int64_t span;
        } cases[] = {{"300 of a 400,000-id range, 10 minutes", 300, 1333, 10 * 60000},
                     {"100,000 handed out in sequence, 90 days", 100000, 3, WINDOW}};
        int_result seq = {0};
        for (size_t c = 0; c < 2; c++) {
            int_result r = bench_int_ids(cases[c].n, cases[c].step, cases[c].span);
            printf(
                "| %s | %.1f | %.1f | %.2fx | %.0f | %.0f | %.2fx | %.0f | %.0f | %.2fx | %.1f | "
                "%.1f | %.2f | %.2f |\n",
                cases[c].what, r.bits[0], r.bits[1], r.bits[1] / r.bits[0], r.us_q[0][0],
                r.us_q[1][0], r.us_q[1][0] / r.us_q[0][0], r.us_q[0][1], r.us_q[1][1],
                r.us_q[1][1] / r.us_q[0][1], r.us_page[0], r.us_page[1], r.us_add[0], r.us_add[1]);
            fflush(stdout);
            seq = r;
        }
        /* The single-add target holds for integer ids as for strings. */
        printf("\n| target | measured | met |\n|---|---:|:---:|\n"
               "| 100,000 ids in sequence: single add, us <= 0.50 | %.2f | %s |\n",
               seq.us_add[0], seq.us_add[0] <= 0.5 ? "yes" : "no");
    }
    return 0;
}
