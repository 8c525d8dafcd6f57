/*
 * sort.c — sorting candidate keys.  A batch query sorts its candidates once
 * and walks each stored run in order; 10,000 keys must sort in tens of
 * microseconds.  Most keys are uniform hashes, but exact integer ids can be
 * clustered, so this is an MSD radix sort that re-derives its digit from
 * each sub-range's own minimum and maximum: clustered keys are split as
 * finely as uniform ones.
 *
 * Up to 32 keys (a page of adds, a small set's head) are placed by rank:
 * each key's place is the count of keys that go before it.
 *
 * Uniform keys need one pass: a digit of about log2(n) bits leaves groups
 * of a few keys, so when no group is larger than SMALL_GROUP the scatter is
 * followed by one insertion sort over the whole array (each key moves only
 * within its group), fused with the copy back.  Larger groups (clustered
 * keys) recurse, and groups of up to SMALL_GROUP finish by insertion sort.
 *
 * Hashes (what a batch of strings becomes) are spread over all 64 bits and
 * sort faster by their top 16 bits, least significant byte first: two
 * scatters into 256 buckets, whose 256 write streams stay in cache where
 * one scatter into 2^14 buckets misses on nearly every key, then the
 * insertion pass.  If a key would move more than SMALL_GROUP places in it
 * (keys crafted to share their top bits), the MSD sort takes over, so no
 * input costs more than twice what it would there.
 */
#include "internal.h"

#define SMALL_GROUP 24u
#define DIGIT_BITS_MAX 16u
/* Past this many keys the two byte scatters of seen__sort_hashes leave the
 * cache and one scatter of the MSD sort is faster (100,000 keys: 785 against
 * 711 us). */
#define HASH_SORT_MAX (UINT32_C(1) << 16)

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

/* Up to this many keys (a page of adds, the head of a small set) sort by
 * rank: each key's place is the count of keys before it, n^2 compares
 * without a branch, where an insertion sort mispredicts once per key and
 * more (20 random keys: 163 -> 89 ns; pages of adds in process 4% faster). */
#define RANK_SORT_MAX 32u

/* Stable: of equal keys, the one first in a[] stays first. */
static void rank_sort(seen__kv *a, size_t n)
{
    seen__kv in[RANK_SORT_MAX];
    memcpy(in, a, n * sizeof *a);
    for (size_t i = 0; i < n; i++) {
        const uint64_t key = in[i].key;
        size_t place = 0;
        for (size_t j = 0; j < i; j++)
            place += in[j].key <= key;
        for (size_t j = i + 1; j < n; j++)
            place += in[j].key < key;
        a[place] = in[i];
    }
}

seen_err seen__sort_kv(seen__kv *a, size_t n)
{
    if (n <= RANK_SORT_MAX) {
        rank_sort(a, n);
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

/* Insert src[0..n) into dst[0..n) in order, as insertion_copy does, unless
 * a key would move more than SMALL_GROUP places: then stop, leave dst
 * holding all n keys in some order, and return false.  After the byte
 * passes most keys stay put and (at 10,000) one in thirteen moves one place, so
 * the largest key so far is carried in registers and each step writes the
 * smaller of it and the next key without a branch; only a key moving two
 * places or more (rare) takes the loop. */
static bool insertion_copy_bounded(seen__kv *dst, const seen__kv *src, size_t n)
{
    if (n == 0)
        return true;
    uint64_t max_key = src[0].key;
    uint32_t max_idx = src[0].idx;
    for (size_t i = 1; i < n; i++) {
        const uint64_t key = src[i].key;
        const uint32_t idx = src[i].idx;
        const bool below = key < max_key;
        const seen__kv out = {below ? key : max_key, below ? idx : max_idx};
        max_key = below ? max_key : key;
        max_idx = below ? max_idx : idx;
        dst[i - 1] = out;
        if (i < 2 || dst[i - 2].key <= out.key)
            continue;
        /* It moves further: dst[0..i-1) is in order, `out` goes into it. */
        size_t j = i - 1;
        while (j > 0 && dst[j - 1].key > out.key) {
            if (i - 1 - j == SMALL_GROUP) {
                /* dst[j..i-1] is shifted up with a hole at j: fill it, and
                 * bring the rest over unsorted. */
                dst[j] = out;
                dst[i] = (seen__kv){max_key, max_idx};
                if (dst != src)
                    memcpy(dst + i + 1, src + i + 1, (n - i - 1) * sizeof *dst);
                return false;
            }
            dst[j] = dst[j - 1];
            j--;
        }
        dst[j] = out;
    }
    dst[n - 1] = (seen__kv){max_key, max_idx};
    return true;
}

int seen__cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

seen_err seen__sort_hashes(seen__kv *a, size_t n)
{
    if (n <= SMALL_GROUP || n > HASH_SORT_MAX)
        return seen__sort_kv(a, n);
    seen__kv *tmp = seen__malloc(n * sizeof *tmp);
    if (tmp == NULL)
        return SEEN_ERR_NOMEM;
    uint32_t c[2][257];
    memset(c, 0, sizeof c);
    for (size_t i = 0; i < n; i++) {
        c[0][((a[i].key >> 48) & 255) + 1]++;
        c[1][(a[i].key >> 56) + 1]++;
    }
    for (unsigned b = 1; b <= 256; b++) {
        c[0][b] += c[0][b - 1];
        c[1][b] += c[1][b - 1];
    }
    for (size_t i = 0; i < n; i++)
        tmp[c[0][(a[i].key >> 48) & 255]++] = a[i];
    for (size_t i = 0; i < n; i++)
        a[c[1][tmp[i].key >> 56]++] = tmp[i];
    seen__free(tmp);
    if (insertion_copy_bounded(a, a, n))
        return SEEN_OK;
    return seen__sort_kv(a, n);
}
