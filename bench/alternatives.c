/*
 * alternatives.c — sizes of the encodings seen could have used, for one
 * history, next to what the library really holds (`make bench-alternatives`).
 *
 * The history: n string items, error 0.001, a 90-day window in 4 slices,
 * timestamps spread over the window and loaded in time order — the case the
 * 14-bits-per-item target is stated for.  Every alternative stores the same
 * fingerprints (key / c, with c the divisor the library plans for n items)
 * with the same slice information, so differences are the encodings' own:
 *
 *   golomb-per-slice   one Golomb-coded sorted run per slice (tags implicit)
 *   rice-per-slice     the same with Rice codes (m a power of two)
 *   ef-per-slice       Elias-Fano per slice
 *   golomb+fixed-tags  one run of all items, ceil(log2 slices) bits of tag
 *   golomb+basek-tags  one run of all items, base-k packed tags
 *   bloom-per-slice    one Bloom filter per slice, each at error/slices so
 *                      that the union keeps the bound (optimal k, analytic)
 *
 * Code sizes are computed exactly from the gaps (no index, no headers), so
 * they are the floor each encoding could reach; the library's figure is the
 * whole set with index, headers and buffers.  Lower bounds are printed too:
 * log2(1/error), and log2(1/error) + H(slices) (forgetting by slice needs
 * the slice of every item).
 */
#include "seen.h"

#include "bench_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DAY INT64_C(86400000)
#define WINDOW (90 * DAY)
#define SLICES 4
#define ERROR 0.001

#define XXH_INLINE_ALL
#include <xxhash.h>

static uint64_t rng_state = 12345;
static uint64_t rnd(void)
{
    return splitmix64(&rng_state);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Same rule as the library (docs/FORMAT.md). */
static uint64_t golomb_choose(uint64_t n, uint64_t span)
{
    double p = (double)n / ((double)span + 1.0);
    if (p >= 0.38)
        return 1;
    return (uint64_t)ceil(log(2.0 - p) / -log1p(-p));
}

static double golomb_bits(const uint64_t *v, size_t n, uint64_t m)
{
    unsigned b = m > 1 ? (unsigned)ceil(log2((double)m)) : 0;
    uint64_t short_n = m > 1 ? (UINT64_C(1) << b) - m : 0;
    double bits = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t gap = i == 0 ? v[0] - v[0] : v[i] - v[i - 1] - 1;
        uint64_t q = gap / m, r = gap % m;
        bits += (double)q + 1 + (m > 1 ? (r < short_n ? b - 1 : b) : 0);
    }
    return bits;
}

static double best_rice_bits(const uint64_t *v, size_t n)
{
    double best = 1e300;
    for (unsigned k = 0; k < 60; k++) {
        double bits = 0;
        for (size_t i = 1; i < n; i++)
            bits += (double)((v[i] - v[i - 1] - 1) >> k) + 1 + k;
        if (bits < best)
            best = bits;
    }
    return best + 64; /* first value */
}

static double ef_bits(const uint64_t *v, size_t n)
{
    if (n == 0)
        return 0;
    uint64_t u = v[n - 1] - v[0] + 1;
    unsigned l = u / n > 1 ? (unsigned)floor(log2((double)u / (double)n)) : 0;
    return (double)n * l + (double)n + (double)(u >> l) + 1;
}

/* Sort and drop repeated fingerprints (collisions store once). */
static size_t sort_unique(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_u64);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || v[u - 1] != v[i])
            v[u++] = v[i];
    return u;
}

static double entropy(const size_t *count, size_t k, size_t n)
{
    double h = 0;
    for (size_t i = 0; i < k; i++)
        if (count[i])
            h -= (double)count[i] / n * log2((double)count[i] / n);
    return h;
}

static void run(size_t n)
{
    /* Keys and times as the library would see them. */
    uint64_t *keys = malloc(n * sizeof *keys);
    int64_t *at = malloc(n * sizeof *at);
    char(*ids)[25] = malloc(n * 25);
    seen_str *strs = malloc(n * sizeof *strs);
    int64_t start = INT64_C(1763700000000) - WINDOW;
    for (size_t i = 0; i < n; i++) {
        snprintf(ids[i], 25, "%016llx%08llx", (unsigned long long)rnd(),
                 (unsigned long long)(rnd() & 0xffffffff));
        strs[i] = (seen_str){ids[i], 24};
        keys[i] = XXH3_64bits_withSeed(ids[i], 24, UINT64_C(0x7365656e5f763031));
        at[i] = start + (int64_t)((double)WINDOW * (double)i / (double)n);
    }

    /* The library itself. */
    seen_policy p;
    seen_policy_default(&p);
    seen_set *s;
    if (seen_create(&p, &s) != SEEN_OK)
        exit(1);
    for (size_t i = 0; i < n; i += 100) {
        size_t k = n - i < 100 ? n - i : 100;
        seen_add_str(s, strs + i, k, at + i, at[i + k - 1], NULL);
    }
    /* An import: compacted by the expiry that ends it. */
    seen_expire(s, at[n - 1]);
    double lib_bits = (double)seen_bytes(s) * 8.0 / (double)n;
    seen_free(s);

    /* The same fingerprints: divisor planned for n items (reserve 1/64). */
    uint64_t c = (uint64_t)(ldexp(ERROR, 64) * (1.0 - 1.0 / 64) / (double)n);
    int64_t slice_ms = (WINDOW + SLICES - 1) / SLICES;
    size_t nslices = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = (size_t)((at[i] - start) / slice_ms);
        if (k + 1 > nslices)
            nslices = k + 1;
    }
    uint64_t **per = calloc(nslices, sizeof *per);
    size_t *cnt = calloc(nslices, sizeof *cnt);
    for (size_t k = 0; k < nslices; k++)
        per[k] = malloc(n * sizeof **per);
    uint64_t *all = malloc(n * sizeof *all);
    for (size_t i = 0; i < n; i++) {
        size_t k = (size_t)((at[i] - start) / slice_ms);
        per[k][cnt[k]++] = keys[i] / c;
        all[i] = keys[i] / c;
    }
    uint64_t universe = UINT64_MAX / c;
    double golomb = 0, rice = 0, ef = 0;
    size_t *held = calloc(nslices, sizeof *held);
    for (size_t k = 0; k < nslices; k++) {
        held[k] = cnt[k];
        cnt[k] = sort_unique(per[k], cnt[k]);
        uint64_t m = golomb_choose(cnt[k], universe);
        golomb += golomb_bits(per[k], cnt[k], m) + 64;
        rice += best_rice_bits(per[k], cnt[k]);
        ef += ef_bits(per[k], cnt[k]);
    }
    size_t nall = sort_unique(all, n);
    double one = golomb_bits(all, nall, golomb_choose(nall, universe)) + 64;
    double h = entropy(held, nslices, n);
    double fixed_tags = ceil(log2((double)nslices));
    double basek_tags = log2((double)nslices) * 1.003; /* 64-bit words: see FORMAT.md */
    double bloom = 0;
    for (size_t k = 0; k < nslices; k++)
        bloom += (double)held[k] * log2(nslices / ERROR) / log(2);

    double lb = log2(1 / ERROR);
    printf("| %zu | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", n, lib_bits,
           golomb / n, rice / n, ef / n, one / n + fixed_tags, one / n + basek_tags, bloom / n, lb,
           lb + h);
    for (size_t k = 0; k < nslices; k++)
        free(per[k]);
    free(per);
    free(cnt);
    free(held);
    free(all);
    free(keys);
    free(at);
    free(ids);
    free(strs);
}

int main(void)
{
    printf("history: 24-byte string ids, error %.3f, %d-day window in %d slices, timestamps spread "
           "over the window, loaded in time order; bits per item\n\n",
           ERROR, (int)(WINDOW / DAY), SLICES);
    printf("| items | seen (whole set) | golomb-per-slice | rice-per-slice | ef-per-slice | "
           "golomb+fixed-tags | golomb+basek-tags | bloom-per-slice | bound log2(1/e) | bound + "
           "H(slices) |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    run(10000);
    run(100000);
    return 0;
}
