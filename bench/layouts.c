/*
 * layouts.c — the library's batch query beside a bare Elias-Fano run, in
 * one run (`make bench-layouts`): what the layout costs the library on top
 * of the lookups themselves.
 *
 * The library codes small runs as Golomb gaps cut into buckets of 64-256
 * values with an index (run.c), where a candidate decodes its bucket up to
 * itself, and runs of 16,384 values and more Elias-Fano (run_ef.c).
 * Elias-Fano keeps each value's low L bits verbatim in an array and its
 * high part in unary in a bit vector (one 1 per value, one 0 per step of
 * the high part), so a candidate's high part names the zero to look for,
 * and a sample of where every 2^s-th zero lies takes a lookup there in a
 * few words of popcount: no decoding, and no need for the candidates to be
 * sorted.  It costs about half a bit per value more than Golomb codes.
 *
 * For n string items (24-character ids, error 0.001, a history planned for
 * a window plus a slice, as the library plans one window loaded at once)
 * this program prints, side by side:
 *   - bits per value: the library's whole set (seen_bytes), Golomb codes of
 *     the same fingerprints alone (no index), and the bare Elias-Fano run
 *     with its samples (no slice tags);
 *   - µs per batch of 10,000 and of 2,000 candidates (10% seen), hashing
 *     included: the library's seen_filter_str, the bare run answering each
 *     candidate where it stands (unsorted), and the bare run walking
 *     candidates sorted first (the library's sort).
 * The bare run holds one run without tags, segments or head, so its times
 * are what the lookups themselves cost: a floor.  Medians of repeated,
 * time-bounded measurements, each repetition on another batch.
 */
#include "run_layout.h"
#include "seen.h"

#include "bench_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DAY INT64_C(86400000)
#define WINDOW (90 * DAY)
#define NOW0 INT64_C(1763700000000)
#define ERROR 0.001

static uint64_t rng_state = 0x1a7075;
static uint64_t rnd(void)
{
    return splitmix64(&rng_state);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* ------------------------------------------------------- Elias-Fano run */

typedef struct ef_run {
    uint64_t n, universe;
    unsigned low_bits;     /* L */
    unsigned sample_shift; /* a sample every 2^s high values */
    uint64_t *upper;       /* bit (v_i >> L) + i set for every value i */
    uint64_t *lower;       /* v_i's low L bits, packed */
    uint32_t *samples;     /* where high part j << s starts in upper */
    uint64_t upper_bits, nsamples;
} ef_run;

/* Fingerprint of a key in [0, universe): the key's fraction of 2^64. */
static inline uint64_t fp_of(uint64_t key, uint64_t universe)
{
    return (uint64_t)(((unsigned __int128)key * universe) >> 64);
}

static inline uint64_t low_at(const ef_run *e, uint64_t i)
{
    if (e->low_bits == 0)
        return 0;
    uint64_t bit = i * e->low_bits;
    uint64_t w = e->lower[bit >> 6] >> (bit & 63);
    if ((bit & 63) + e->low_bits > 64)
        w |= e->lower[(bit >> 6) + 1] << (64 - (bit & 63));
    return w & ((UINT64_C(1) << e->low_bits) - 1);
}

/* vals sorted and distinct, all < universe; about `per_sample` values
 * between samples. */
static void ef_build(ef_run *e, const uint64_t *vals, uint64_t n, uint64_t universe,
                     unsigned per_sample)
{
    memset(e, 0, sizeof *e);
    e->n = n;
    e->universe = universe;
    /* The L that makes the total smallest: n·L + n + universe >> L. */
    unsigned best = 0;
    double best_bits = INFINITY;
    for (unsigned l = 0; l < 60; l++) {
        double bits = (double)n * (l + 1) + ldexp((double)universe, -(int)l);
        if (bits < best_bits) {
            best_bits = bits;
            best = l;
        }
    }
    e->low_bits = best;
    uint64_t highs = (universe >> best) + 1;
    e->upper_bits = n + highs + 64;
    e->upper = calloc(e->upper_bits / 64 + 2, sizeof *e->upper);
    e->lower = calloc((n * best) / 64 + 2, sizeof *e->lower);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t p = (vals[i] >> best) + i;
        e->upper[p >> 6] |= UINT64_C(1) << (p & 63);
        if (best) {
            uint64_t bit = i * best, lo = vals[i] & ((UINT64_C(1) << best) - 1);
            e->lower[bit >> 6] |= lo << (bit & 63);
            if ((bit & 63) + best > 64)
                e->lower[(bit >> 6) + 1] |= lo >> (64 - (bit & 63));
        }
    }
    /* Zeros per value are universe / (n·2^L); a sample every 2^s zeros
     * spaces samples about per_sample values apart. */
    double zeros_per_value = (double)highs / (double)(n ? n : 1);
    unsigned s = 0;
    while (ldexp(1.0, (int)s + 1) <= per_sample * zeros_per_value)
        s++;
    e->sample_shift = s;
    e->nsamples = (highs >> s) + 1;
    e->samples = calloc(e->nsamples, sizeof *e->samples);
    uint64_t zeros = 0, j = 1;
    for (uint64_t p = 0; p < e->upper_bits && j < e->nsamples; p++) {
        if (!(e->upper[p >> 6] >> (p & 63) & 1)) {
            zeros++;
            if (zeros == j << s)
                e->samples[j++] = (uint32_t)(p + 1);
        }
    }
}

static void ef_free(ef_run *e)
{
    free(e->upper);
    free(e->lower);
    free(e->samples);
}

/* Bits the layout holds: upper, lower and the samples (each as wide as a
 * position in upper needs). */
static double ef_bits(const ef_run *e)
{
    double sample_bits = ceil(log2((double)e->upper_bits));
    return (double)(e->n + (e->universe >> e->low_bits) + 1) + (double)e->n * e->low_bits +
           (double)e->nsamples * sample_bits;
}

/* From position p in upper, where high part h0 starts, the position where
 * high part h >= h0 starts: past h - h0 more zeros. */
static inline uint64_t skip_zeros(const ef_run *e, uint64_t p, uint64_t zeros)
{
    if (zeros == 0)
        return p;
    uint64_t w = ~e->upper[p >> 6] >> (p & 63);
    unsigned held = 64 - (unsigned)(p & 63);
    for (;;) {
        uint64_t z =
            (uint64_t)__builtin_popcountll(held == 64 ? w : w & ((UINT64_C(1) << held) - 1));
        if (z >= zeros)
            break;
        zeros -= z;
        p += held;
        w = ~e->upper[p >> 6];
        held = 64;
    }
    return p + seen__select64(w, (unsigned)zeros - 1) + 1;
}

/* Is v stored?  Starting from position p where high part h (v's) starts. */
static inline bool scan_high(const ef_run *e, uint64_t p, uint64_t h, uint64_t v)
{
    uint64_t lo = v & ((UINT64_C(1) << e->low_bits) - 1);
    while (e->upper[p >> 6] >> (p & 63) & 1) {
        uint64_t x = low_at(e, p - h);
        if (x >= lo)
            return x == lo;
        p++;
    }
    return false;
}

static bool ef_has(const ef_run *e, uint64_t v)
{
    uint64_t h = v >> e->low_bits, j = h >> e->sample_shift;
    uint64_t p = skip_zeros(e, e->samples[j], h - (j << e->sample_shift));
    return scan_high(e, p, h, v);
}

/* Sorted candidates: each search starts where the previous one ended. */
static void ef_walk(const ef_run *e, const uint64_t *v, size_t n, uint8_t *out)
{
    uint64_t p = 0, h_at = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t h = v[i] >> e->low_bits, j = h >> e->sample_shift;
        if (h - h_at > (UINT64_C(1) << e->sample_shift) / 2 && (j << e->sample_shift) > h_at) {
            p = e->samples[j];
            h_at = j << e->sample_shift;
        }
        p = skip_zeros(e, p, h - h_at);
        h_at = h;
        out[i] = scan_high(e, p, h, v[i]);
    }
}

/* ---------------------------------------------------------- the harness */

/* Golomb code bits of the gaps of sorted vals (no index), m as the library
 * chooses it: the fewest bits over the candidates near ln2·mean gap. */
static double golomb_bits(const uint64_t *v, uint64_t n, uint64_t universe)
{
    double mean = (double)universe / (double)n;
    double best = INFINITY;
    for (double f = 0.5; f <= 1.0; f += 0.01) {
        uint64_t m = (uint64_t)(f * mean);
        if (m < 1)
            m = 1;
        unsigned b = 0;
        while ((UINT64_C(1) << b) < m)
            b++;
        uint64_t short_n = (UINT64_C(1) << b) - m;
        double bits = 0;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t g = i ? v[i] - v[i - 1] - 1 : v[0];
            uint64_t r = g % m;
            bits += (double)(g / m) + 1 + (b == 0 ? 0 : r < short_n ? b - 1 : b);
        }
        if (bits < best)
            best = bits;
    }
    return best;
}

typedef struct id24 {
    char s[25];
} id24;

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

enum { REPS = 31, VARIANTS = 8 };

static void run(size_t n, const size_t *batches, size_t nb)
{
    /* History, then fresh ids for the candidates. */
    size_t fresh_n = 100000, total = n + fresh_n;
    id24 *ids = malloc(total * sizeof *ids);
    seen_str *strs = malloc(total * sizeof *strs);
    for (size_t i = 0; i < total; i++) {
        snprintf(ids[i].s, sizeof ids[i].s, "%016llx%08llx", (unsigned long long)rnd(),
                 (unsigned long long)(rnd() & 0xffffffff));
        strs[i].ptr = ids[i].s;
        strs[i].len = 24;
    }

    /* The library: one window, loaded in time order, settled. */
    seen_policy p;
    seen_policy_default(&p);
    seen_set *s;
    if (seen_create(&p, &s) != SEEN_OK)
        abort();
    int64_t at[100];
    for (size_t i = 0; i < n; i += 100) {
        size_t k = n - i < 100 ? n - i : 100;
        for (size_t j = 0; j < k; j++)
            at[j] = NOW0 - WINDOW + (int64_t)((double)WINDOW * (double)(i + j) / (double)n);
        if (seen_add_str(s, strs + i, k, at, at[k - 1], NULL) != SEEN_OK)
            abort();
    }
    if (seen_expire(s, NOW0) != SEEN_OK)
        abort();

    /* The bare run: the same items' fingerprints in a universe planned as
     * the library plans this set (window + slice: 1.25·n expected). */
    uint64_t universe = (uint64_t)((double)n * 1.25 / (ERROR * (1.0 - 1.0 / 64)));
    uint64_t *vals = malloc(n * sizeof *vals);
    for (size_t i = 0; i < n; i++)
        vals[i] = fp_of(seen__hash_str(strs[i].ptr, 24), universe);
    qsort(vals, n, sizeof *vals, cmp_u64);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || vals[i] != vals[m - 1])
            vals[m++] = vals[i];
    ef_run e256, e64;
    ef_build(&e256, vals, m, universe, 256);
    ef_build(&e64, vals, m, universe, 64);

    printf("| %zu | %.2f | %.2f | %.2f | %.2f |", n, (double)seen_bytes(s) * 8.0 / (double)n,
           golomb_bits(vals, m, universe) / (double)m, ef_bits(&e256) / (double)m,
           ef_bits(&e64) / (double)m);

    for (size_t b = 0; b < nb; b++) {
        size_t q = batches[b];
        /* The candidates' bytes lie together, as in a BULK request; each
         * repetition takes the next of VARIANTS batches, so no branch
         * predictor learns one batch's branches. */
        seen_str *all = malloc(VARIANTS * q * sizeof *all);
        char *bulk = malloc(VARIANTS * q * 25);
        for (size_t i = 0; i < VARIANTS * q; i++) {
            seen_str from = i % 10 == 0 ? strs[rnd() % n] : strs[n + rnd() % fresh_n];
            memcpy(bulk + 25 * i, from.ptr, 24);
            bulk[25 * i + 24] = '\n';
            all[i] = (seen_str){bulk + 25 * i, 24};
        }
        seen_str *batch = all;
        uint8_t *a = calloc(q, 1), *c = calloc(q, 1), *d = calloc(q, 1);
        seen__kv *kv = malloc(q * sizeof *kv);
        uint64_t *sv = malloc(q * sizeof *sv);
        uint8_t *sorted_out = malloc(q);
        /* Each method's repetitions run together, so no method finds the
         * caches as another left them. */
        double t_lib[REPS], t_ef[REPS], t_efs[REPS];
        for (int r = 0; r < REPS; r++) {
            batch = all + (size_t)(r % VARIANTS) * q;
            memset(a, 0, q);
            double t0 = now_s();
            if (seen_filter_str(s, batch, q, NOW0, a) != SEEN_OK)
                abort();
            t_lib[r] = (now_s() - t0) * 1e6;
        }
        for (int r = 0; r < REPS; r++) {
            /* Hashing first and looking up after measured faster than
             * both in one loop (the lookups' mispredicted branches flush
             * the hashing in flight): 13.5 against 20 ns per candidate. */
            batch = all + (size_t)(r % VARIANTS) * q;
            double t0 = now_s();
            for (size_t i = 0; i < q; i++)
                sv[i] = fp_of(seen__hash_item(batch, i, q), universe);
            for (size_t i = 0; i < q; i++)
                c[i] = ef_has(&e256, sv[i]);
            t_ef[r] = (now_s() - t0) * 1e6;
        }
        for (int r = 0; r < REPS; r++) {
            batch = all + (size_t)(r % VARIANTS) * q;
            double t0 = now_s();
            for (size_t i = 0; i < q; i++)
                kv[i] = (seen__kv){fp_of(seen__hash_item(batch, i, q), universe), (uint32_t)i};
            if (seen__sort_kv(kv, q) != SEEN_OK)
                abort();
            for (size_t i = 0; i < q; i++)
                sv[i] = kv[i].key;
            ef_walk(&e256, sv, q, sorted_out);
            for (size_t i = 0; i < q; i++)
                d[kv[i].idx] = sorted_out[i];
            t_efs[r] = (now_s() - t0) * 1e6;
        }
        /* Both layouts must find every seen candidate. */
        for (size_t i = 0; i < q; i += 10)
            if (!a[i] || !c[i] || !d[i])
                abort();
        for (size_t i = 0; i < q; i++)
            if (c[i] != d[i])
                abort();
        double lib = median(t_lib, REPS), ef = median(t_ef, REPS), efs = median(t_efs, REPS);
        printf(" %.0f | %.0f (%.1fx) | %.0f (%.1fx) |", lib, ef, lib / ef, efs, lib / efs);
        free(all);
        free(bulk);
        free(a);
        free(c);
        free(d);
        free(kv);
        free(sv);
        free(sorted_out);
    }
    printf("\n");
    fflush(stdout);
    ef_free(&e256);
    ef_free(&e64);
    free(vals);
    seen_free(s);
    free(ids);
    free(strs);
}

int main(int argc, char **argv)
{
    size_t sizes[] = {1000, 10000, 100000};
    size_t nsizes = 3;
    if (argc > 1) {
        sizes[0] = strtoull(argv[1], NULL, 10);
        nsizes = 1;
    }
    const size_t batches[] = {10000, 2000};
    printf("Run layouts: the library against a bare Elias-Fano run\n");
    printf("(error %.3f, 24-character ids, one window loaded in time order; µs per batch, "
           "hashing included, median of %d)\n\n",
           ERROR, REPS);
    printf("| items | seen bits/item (whole set) | Golomb codes alone | EF, sample/256 | EF, "
           "sample/64 | seen µs, 10k | EF unsorted, 10k | EF sorted walk, 10k | seen µs, 2k | "
           "EF unsorted, 2k | EF sorted walk, 2k |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < nsizes; i++)
        run(sizes[i], batches, 2);
    return 0;
}
