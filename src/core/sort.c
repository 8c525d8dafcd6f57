/*
 * sort.c — sorting candidate keys.  A batch query sorts its candidates once
 * and walks each stored run in order; 10,000 keys must sort in tens of
 * microseconds.  Most keys are uniform hashes, but exact integer ids can be
 * clustered, so this is an MSD radix sort that re-derives its digit from
 * each sub-range's own minimum and maximum: clustered keys are split as
 * finely as uniform ones.
 *
 * Uniform keys need one pass: a digit of about log2(n) bits leaves groups
 * of a few keys, so when no group is larger than SMALL_GROUP the scatter is
 * followed by one insertion sort over the whole array (each key moves only
 * within its group), fused with the copy back.  Larger groups (clustered
 * keys) recurse, and groups of up to SMALL_GROUP finish by insertion sort.
 */
#include "internal.h"

#define SMALL_GROUP 24u
#define DIGIT_BITS_MAX 16u

/* Insert src[0..n) one by one into dst[0..n) in order: an insertion sort
 * that also copies.  src may be dst (each key is read before its slot is
 * written).  Cheap when src is sorted but for small groups. */
static void insertion_copy(seen__kv *dst, const seen__kv *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        seen__kv x = src[i];
        size_t j = i;
        while (j > 0 && dst[j - 1].key > x.key) {
            dst[j] = dst[j - 1];
            j--;
        }
        dst[j] = x;
    }
}

static void insertion_sort(seen__kv *a, size_t n)
{
    insertion_copy(a, a, n);
}

/* Sorts a[0..n) using tmp[0..n) as scratch; counts has 2^DIGIT_BITS_MAX+1
 * slots. */
static void msd_sort(seen__kv *a, seen__kv *tmp, size_t n, uint32_t *counts)
{
    if (n <= SMALL_GROUP) {
        insertion_sort(a, n);
        return;
    }
    uint64_t lo = a[0].key, hi = a[0].key;
    for (size_t i = 1; i < n; i++) {
        if (a[i].key < lo)
            lo = a[i].key;
        if (a[i].key > hi)
            hi = a[i].key;
    }
    if (lo == hi)
        return;
    unsigned digit_bits = seen__bitlen((uint64_t)n);
    if (digit_bits > DIGIT_BITS_MAX)
        digit_bits = DIGIT_BITS_MAX;
    unsigned range_bits = seen__bitlen(hi - lo);
    unsigned shift = range_bits > digit_bits ? range_bits - digit_bits : 0;
    size_t nbuckets = (size_t)((hi - lo) >> shift) + 1;

    memset(counts, 0, (nbuckets + 1) * sizeof *counts);
    for (size_t i = 0; i < n; i++)
        counts[((a[i].key - lo) >> shift) + 1]++;
    uint32_t largest = 0;
    for (size_t b = 1; b <= nbuckets; b++) {
        if (counts[b] > largest)
            largest = counts[b];
        counts[b] += counts[b - 1];
    }
    for (size_t i = 0; i < n; i++)
        tmp[counts[(a[i].key - lo) >> shift]++] = a[i];
    if (largest <= SMALL_GROUP) {
        insertion_copy(a, tmp, n);
        return;
    }
    memcpy(a, tmp, n * sizeof *a);

    /* After the scatter counts[b] is the end of bucket b; recurse into each
     * bucket.  Buckets are recomputed from the keys because the recursion
     * reuses `counts`. */
    size_t start = 0;
    while (start < n) {
        uint64_t b = (a[start].key - lo) >> shift;
        size_t end = start + 1;
        while (end < n && ((a[end].key - lo) >> shift) == b)
            end++;
        if (end - start > 1)
            msd_sort(a + start, tmp + start, end - start, counts);
        start = end;
    }
}

seen_err seen__sort_kv(seen__kv *a, size_t n)
{
    if (n <= SMALL_GROUP) {
        insertion_sort(a, n);
        return SEEN_OK;
    }
    seen__kv *tmp = seen__malloc(n * sizeof *tmp);
    /* As many counters as the widest digit needs: at 10,000 keys a table
     * for 2^16 would be four times larger (and, past glibc's mmap
     * threshold, mapped and faulted in afresh on every query). */
    unsigned top = seen__bitlen((uint64_t)n);
    if (top > DIGIT_BITS_MAX)
        top = DIGIT_BITS_MAX;
    uint32_t *counts = seen__malloc((((size_t)1 << top) + 2) * sizeof *counts);
    if (tmp == NULL || counts == NULL) {
        seen__free(tmp);
        seen__free(counts);
        return SEEN_ERR_NOMEM;
    }
    msd_sort(a, tmp, n, counts);
    seen__free(tmp);
    seen__free(counts);
    return SEEN_OK;
}
