/*
 * run.c — a run: a sorted set of distinct 64-bit values, each with a tag,
 * stored as Golomb-coded gaps with a small bucket index.
 *
 * Values are item keys divided by the run's divisor c (c = 1 keeps exact
 * keys; a larger c keeps only a fingerprint, and a fresh key matches one of
 * n stored fingerprints with probability at most n*c/2^64).  Sorted uniform
 * values have nearly geometric gaps, for which a Golomb code is within
 * ~0.03 bit of the entropy: a run costs about log2(range/n) + 1.46 bits per
 * value, plus log2(k) for tags when it holds k segments.
 *
 * Layout of `mem` (one allocation):
 *
 *   [segment ids: nsegs x uint32]     tag t means segment ids[t]
 *   [index: (nbuckets-1) entries]     w_bits + w_items (+ w_vals) bits each,
 *                                     byte-padded
 *   [tags: ceil(n / g) x uint64 LE]   base-nsegs digits, g per word
 *   [codes: code_bits, byte-padded]
 *   [16 zero bytes]                   the bit reader loads up to 15 bytes
 *                                     past its position
 *
 * Buckets.  Value v is in bucket (v - base) / bucket_w, where nbuckets is
 * n / SEEN_BUCKET_ITEMS (half that many items per bucket for runs of at
 * least SEEN_LARGE_RUN, a quarter for "fine" runs, the writer's choice)
 * and bucket_w = ceil((span+1) / nbuckets): uniform
 * values fill the buckets evenly.  Every bucket restarts its
 * gaps: its first value is coded as v - bucket_base, the next ones as
 * v - previous - 1, so a lookup jumps to its bucket and decodes half a
 * bucket on average.  Division by bucket_w uses a precomputed reciprocal.
 *
 * Buckets cut by rank.  Values that cluster (integer ids of an exact set:
 * a dense range and one far outlier) would put nearly all of a run in one
 * bucket, and a lookup would decode all of it.  When cutting by value would
 * leave a bucket more than SEEN_RANKED_SKEW times its share, the run is cut
 * by rank instead (bucket_w = 0): bucket j starts at item j * n / nbuckets,
 * and its index entry also holds its lowest value (w_vals bits), which
 * is the base its first gap is coded from.  A lookup finds its bucket by a
 * binary search of those values.  A delete keeps them, so a bucket that
 * loses its first value codes the next from the same base.
 *
 * Index.  Bucket j starts at bit off(j) of the codes and at item first(j).
 * Both are close to straight lines (j * code_bits / nbuckets and
 * j * n / nbuckets, computed in 32.32 fixed point), so entry j-1 for
 * j = 1..nbuckets-1 stores only the deviations, minus their minimum, in
 * w_bits and w_items bits.  With 256-value buckets this is ~22 bits per
 * bucket, under 0.1 bit per value.
 *
 * Tags.  With k = nsegs > 1, tags are base-k digits, g = floor(log_k 2^64)
 * per 64-bit word (k = 3: 40 per word, 1.6 bits each), so a run holding
 * three slices pays log2(3) bits per value, not 2.  Item i's tag is digit
 * i % g of word i / g.
 *
 * Codes.  Each gap is Golomb-coded: q = gap / m zeros, a one, then the
 * remainder r in truncated binary with b = ceil(log2 m): r < short_n =
 * 2^b - m takes b-1 bits, larger r is written as r + short_n in b bits, top
 * b-1 bits first, then its lowest bit.  Bits are packed LSB-first.  Example,
 * m = 5 (b = 3, short_n = 3): gap 12 = 2*5 + 2 is the bits 0,0,1 then 0,1.
 *
 * Invariants: n >= 1; values strictly increase; tags < nsegs; the values
 * lie in base ... base + span, bucket_w is canonical for (nbuckets, span)
 * or 0 (cut by rank).  The encoder makes the first value base and the last
 * base + span, and nbuckets and the Golomb parameter canonical for (n,
 * span); a delete in place keeps all four as they were (nbuckets until the
 * run has lost half its values), so a 1M-value run loses a value for the
 * price of copying its bits.  Every choice is a function of the writes a set
 * received, so a replica that applies the same writes holds the same bytes.
 */
#include "run_layout.h"

/* ------------------------------------------------------------- divider */

void seen__divider_init(seen__divider *v, uint64_t d)
{
    memset(v, 0, sizeof *v);
    v->d = d;
    if (d <= 1) {
        v->kind = 0;
    } else if ((d & (d - 1)) == 0) {
        v->kind = 1;
        v->shift = (unsigned)__builtin_ctzll(d);
    } else {
        unsigned l = seen__bitlen(d); /* ceil(log2 d): d is no power of 2 */
        uint64_t two_l_minus_d = (l == 64 ? 0 : (UINT64_C(1) << l)) - d;
        v->magic = (uint64_t)((((unsigned __int128)two_l_minus_d) << 64) / d) + 1;
        v->shift = l - 1;
        v->kind = 2;
    }
}

void seen__golomb_init(seen__golomb *g, uint64_t m)
{
    g->m = m;
    if (m <= 1) {
        g->b = 0;
        g->short_n = 0;
        g->lowmask = 0;
        return;
    }
    g->b = seen__bitlen(m - 1); /* ceil(log2 m) */
    g->short_n = ((g->b >= 64) ? 0 : (UINT64_C(1) << g->b)) - m;
    g->lowmask = (UINT64_C(1) << (g->b - 1)) - 1;
}

/* q^e in 0.64 fixed point (q < 2^64 stands for q / 2^64), truncated at
 * each step: integers only, so every platform computes the same value. */
static uint64_t fixed_pow(uint64_t q, uint64_t e)
{
    uint64_t result = UINT64_MAX; /* ~1.0 */
    while (e > 0 && result != 0) {
        if (e & 1)
            result = seen__mulhi(result, q);
        q = seen__mulhi(q, q);
        e >>= 1;
    }
    return result;
}

uint64_t seen__golomb_choose(uint64_t n, uint64_t span)
{
    /* n values over span+1 slots: gaps are ~geometric with success
     * probability p = n / (span + 1).  The optimal m is the smallest with
     * (1-p)^m + (1-p)^(m+1) <= 1.  The encoder's choice must not depend on
     * a C library's log(), so this is a binary search on m with 1 - p in
     * 0.64 fixed point; m lies within [ln2/p - 1, ln2/p + 1]. */
    unsigned __int128 range = (unsigned __int128)span + 1;
    if (n == 0 || (unsigned __int128)n * 100 >= range * 38)
        return 1;
    uint64_t q = (uint64_t)((((unsigned __int128)(range - n)) << 64) / range);
    /* ln2 / p = range * ln2 / n, with ln2 ~ 6243314768165359 / 2^53. */
    unsigned __int128 guess = (range * UINT64_C(6243314768165359)) / n >> 53;
    if (guess >= SEEN_MAX_GOLOMB_M)
        return SEEN_MAX_GOLOMB_M;
    uint64_t lo = guess > 2 ? (uint64_t)guess - 2 : 1;
    uint64_t hi = guess + 2 < SEEN_MAX_GOLOMB_M ? (uint64_t)guess + 2 : SEEN_MAX_GOLOMB_M;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        uint64_t qm = fixed_pow(q, mid);
        unsigned __int128 sum = (unsigned __int128)qm + seen__mulhi(qm, q);
        if (sum <= ((unsigned __int128)1 << 64))
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/*
 * The encoder's writer: pending bits live in a register and whole bytes
 * are stored with one unaligned 8-byte store per code (no load-modify-
 * store through memory).  Invariant: bits written = byte * 8 + nacc, with
 * nacc < 8 between puts; the buffer keeps 8 spare bytes past `byte`.
 */
typedef struct acc_writer {
    uint8_t *buf;
    size_t cap;  /* bytes allocated */
    size_t byte; /* bytes completed */
    uint64_t acc;
    unsigned nacc;
    bool failed;
} acc_writer;

static inline uint64_t aw_bits(const acc_writer *w)
{
    return (uint64_t)w->byte * 8 + w->nacc;
}

static bool aw_reserve(acc_writer *w, uint64_t more_bits)
{
    size_t need = w->byte + (size_t)((more_bits + 7) / 8) + 16;
    if (need <= w->cap)
        return true;
    size_t cap = w->cap ? w->cap : 64;
    while (cap < need)
        cap = cap + cap / 2 + 64;
    uint8_t *p = seen__realloc(w->buf, cap);
    if (p == NULL) {
        w->failed = true;
        return false;
    }
    w->buf = p;
    w->cap = cap;
    return true;
}

/* Append the low n bits of v (n <= 56, v < 2^n). */
static inline void aw_put(acc_writer *w, uint64_t v, unsigned n)
{
    w->acc |= v << w->nacc;
    w->nacc += n;
    seen__store64le(w->buf + w->byte, w->acc);
    unsigned whole = w->nacc & ~7u;
    w->byte += whole >> 3;
    w->acc = whole >= 64 ? 0 : w->acc >> whole;
    w->nacc &= 7;
}

/* Append nbits bits of src starting at bit `from` (src readable 16 bytes
 * past them, as codes are).  Once the writer is at a byte boundary, whole
 * words are shifted into place, or copied when the two line up: copying a
 * large run's untouched buckets costs a memcpy, not a step per 56 bits. */
static bool aw_copy(acc_writer *w, const uint8_t *src, uint64_t from, uint64_t nbits)
{
    if (!aw_reserve(w, nbits + 64))
        return false;
    if (nbits >= 128 && w->nacc != 0) {
        unsigned lead = 8 - w->nacc;
        aw_put(w, seen__read_bits(src, from, lead), lead);
        from += lead;
        nbits -= lead;
    }
    if (nbits >= 128) {
        uint64_t words = (nbits - 64) / 64;
        const uint8_t *s = src + (from >> 3);
        unsigned sh = (unsigned)(from & 7);
        uint8_t *d = w->buf + w->byte;
        if (sh == 0) {
            memcpy(d, s, (size_t)words * 8);
        } else {
            for (uint64_t i = 0; i < words; i++, s += 8, d += 8)
                seen__store64le(d, (seen__load64le(s) >> sh) | ((uint64_t)s[8] << (64 - sh)));
        }
        w->byte += (size_t)words * 8;
        from += words * 64;
        nbits -= words * 64;
    }
    for (; nbits > 0;) {
        unsigned take = nbits < 56 ? (unsigned)nbits : 56;
        aw_put(w, seen__read_bits(src, from, take), take);
        from += take;
        nbits -= take;
    }
    return true;
}

static inline void golomb_put(acc_writer *w, const seen__golomb *g, const seen__divider *mdiv,
                              uint64_t gap)
{
    uint64_t q = g->m > 1 ? seen__div(mdiv, gap) : gap;
    uint64_t r = gap - q * g->m;
    uint64_t code = 0;
    unsigned len = 0;
    if (g->b != 0) {
        /* Short or long remainder, about half and half: select without a
         * branch, as the decoder does. */
        uint64_t is_long = r >= g->short_n;
        uint64_t v = r + g->short_n;
        uint64_t long_code = (v >> 1) | ((v & 1) << (g->b - 1));
        uint64_t mask = 0 - is_long;
        code = (long_code & mask) | (r & ~mask);
        len = g->b - 1 + (unsigned)is_long;
    }
    if (q + 1 + len <= 56) {
        aw_put(w, (UINT64_C(1) << q) | (code << (q + 1)), (unsigned)q + 1 + len);
        return;
    }
    for (; q > 48; q -= 48)
        aw_put(w, 0, 48);
    aw_put(w, UINT64_C(1) << q, (unsigned)q + 1);
    if (len > 48) {
        aw_put(w, code & ((UINT64_C(1) << 32) - 1), 32);
        aw_put(w, code >> 32, len - 32);
    } else {
        aw_put(w, code, len);
    }
}

size_t seen__run_index_bytes(const seen__run *r)
{
    uint64_t bits = (uint64_t)(r->nbuckets ? r->nbuckets - 1 : 0) * index_entry_bits(r);
    return (size_t)((bits + 7) / 8);
}

size_t seen__run_tag_bytes(const seen__run *r)
{
    return (size_t)tag_words(r) * 8;
}

size_t seen__run_mem_size(const seen__run *r)
{
    return codes_offset(r) + (size_t)((r->code_bits + 7) / 8) + SEEN_RUN_PAD;
}

const uint32_t *seen__run_segs(const seen__run *r)
{
    return (const uint32_t *)(const void *)r->mem;
}

void seen__run_release(seen__run *r)
{
    seen__free(r->mem);
    seen__free(r->tail);
    memset(r, 0, sizeof *r);
}

size_t seen__run_front_bytes(const seen__run *r)
{
    if (r->tail == NULL)
        return seen__run_mem_size(r);
    return codes_offset(r) + (size_t)((r->tail_bit + 7) / 8) + SEEN_RUN_PAD;
}

size_t seen__run_tail_bytes(const seen__run *r)
{
    if (r->tail == NULL)
        return 0;
    return code_bytes(r) - (size_t)(r->tail_bit / 8) + SEEN_RUN_PAD;
}

size_t seen__run_alloc_bytes(const seen__run *r)
{
    return seen__alloc_size(r->mem, seen__run_front_bytes(r)) +
           seen__alloc_size(r->tail, seen__run_tail_bytes(r));
}

void seen__run_split(seen__run *r)
{
    /* Allocators round a block up to a size class: jemalloc's are a quarter
     * of a power of two apart, so a 12.5 KB run sits in a 14 KB block.  Cut
     * at a bucket boundary, the front can nearly fill a class and the rest
     * goes to a small block of its own.  Buckets never straddle the cut, so
     * readers only pick which block a bucket starts in.  Only for hosts
     * whose allocator reports usable sizes (Redis): with an allocator that
     * rounds little, the second block would cost more than it saves. */
    if (r->tail != NULL || r->nbuckets < 2 || !seen__alloc_rounds())
        return;
    const size_t whole = seen__run_mem_size(r), off = codes_offset(r), bytes = code_bytes(r);
    size_t best = seen__alloc_class(whole);
    uint64_t best_bit = 0;
    uint64_t sl_bits = slope(r->code_bits, r->nbuckets), sl_items = slope(r->n, r->nbuckets);
    for (uint32_t j = 1; j < r->nbuckets; j++) {
        uint64_t bit, item;
        bucket_start(r, sl_bits, sl_items, j, &bit, &item);
        if (bit == 0 || bit >= r->code_bits)
            continue;
        size_t front = off + (size_t)((bit + 7) / 8) + SEEN_RUN_PAD;
        size_t tail = bytes - (size_t)(bit / 8) + SEEN_RUN_PAD;
        /* A second block must pay for its extra pointer chase. */
        size_t cost = seen__alloc_class(front) + seen__alloc_class(tail) + SEEN_SPLIT_MIN_GAIN;
        if (cost < best) {
            best = cost;
            best_bit = bit;
        }
    }
    if (best_bit == 0)
        return;
    uint8_t *codes = r->mem + off;
    size_t from = (size_t)(best_bit / 8), tail_bytes = bytes - from + SEEN_RUN_PAD;
    uint8_t *tail = seen__malloc(tail_bytes);
    if (tail == NULL)
        return;
    memcpy(tail, codes + from, bytes - from);
    memset(tail + (bytes - from), 0, SEEN_RUN_PAD);
    /* The front ends like a whole run: zero bits after its last code. */
    size_t front_codes = (size_t)((best_bit + 7) / 8);
    if (best_bit & 7)
        codes[from] &= (uint8_t)((1u << (best_bit & 7)) - 1);
    memset(codes + front_codes, 0, SEEN_RUN_PAD);
    uint8_t *m = seen__realloc(r->mem, off + front_codes + SEEN_RUN_PAD);
    if (m != NULL)
        r->mem = m; /* a failed shrink leaves the larger block, still valid */
    r->tail = tail;
    r->tail_bit = best_bit;
}

seen_err seen__run_clone(seen__run *dst, const seen__run *src)
{
    size_t fb = seen__run_front_bytes(src), tb = seen__run_tail_bytes(src);
    uint8_t *m = seen__malloc(fb);
    uint8_t *t = src->tail ? seen__malloc(tb) : NULL;
    if (m == NULL || (src->tail && t == NULL)) {
        seen__free(m);
        seen__free(t);
        return SEEN_ERR_NOMEM;
    }
    memcpy(m, src->mem, fb);
    if (t)
        memcpy(t, src->tail, tb);
    *dst = *src;
    dst->mem = m;
    dst->tail = t;
    return SEEN_OK;
}

/*
 * Lay out a run whose header fields (but the index's) are set: fit the
 * index to the bucket starts offs[0..nbuckets] / firsts[0..nbuckets],
 * allocate mem, write segment ids, index, tags and codes, and split it.
 * Tags come from `tags` (one per value), or, when `old_tags` is given, are
 * those of that array's values whose `skip` flag is clear (see
 * seen__run_without).
 */
typedef struct tag_source {
    const uint16_t *tags; /* n_old entries */
    const uint8_t *skip;  /* n_old flags: 1 = not in the new run */
    size_t n_old;
    const uint64_t *packed; /* or the new run's tag words, ready */
} tag_source;

static seen_err run_assemble(seen__run *r, const uint64_t *offs, const uint64_t *firsts,
                             const uint64_t *lows, const uint32_t *seg_ids, const uint16_t *tags,
                             const tag_source *old_tags, const uint8_t *codes)
{
    /* lows[j]: a ranked run's lowest value of bucket j (NULL otherwise). */
    /* Index: deviations of bucket starts from their straight lines. */
    uint64_t sl_bits = slope(r->code_bits, r->nbuckets), sl_items = slope(r->n, r->nbuckets);
    int64_t bmin = 0, bmax = 0, imin = 0, imax = 0;
    for (uint32_t j = 1; j < r->nbuckets; j++) {
        int64_t db = (int64_t)offs[j] - (int64_t)on_line(sl_bits, j);
        int64_t di = (int64_t)firsts[j] - (int64_t)on_line(sl_items, j);
        if (j == 1 || db < bmin)
            bmin = db;
        if (j == 1 || db > bmax)
            bmax = db;
        if (j == 1 || di < imin)
            imin = di;
        if (j == 1 || di > imax)
            imax = di;
    }
    r->idx_min_bits = bmin;
    r->idx_min_items = imin;
    r->w_bits = (uint8_t)seen__bitlen((uint64_t)(bmax - bmin));
    r->w_items = (uint8_t)seen__bitlen((uint64_t)(imax - imin));
    /* Lows rise, so the last is the widest. */
    r->w_vals = lows ? (uint8_t)seen__bitlen(lows[r->nbuckets - 1] - r->base) : 0;

    r->mem = seen__calloc(1, seen__run_mem_size(r));
    if (r->mem == NULL)
        return SEEN_ERR_NOMEM;
    memcpy(r->mem, seg_ids, (size_t)r->nsegs * sizeof(uint32_t));
    uint8_t *idx = r->mem + (size_t)r->nsegs * sizeof(uint32_t);
    if (index_entry_bits(r) > 0) {
        seen__bitw iw = {.buf = idx, .bits = 0};
        unsigned w_vals = ranked_w_vals(r);
        for (uint32_t j = 1; j < r->nbuckets; j++) {
            int64_t db = (int64_t)offs[j] - (int64_t)on_line(sl_bits, j);
            int64_t di = (int64_t)firsts[j] - (int64_t)on_line(sl_items, j);
            seen__bitw_put(&iw, (uint64_t)(db - bmin), r->w_bits);
            seen__bitw_put(&iw, (uint64_t)(di - imin), r->w_items);
            if (w_vals)
                seen__bitw_put(&iw, lows[j] - r->base, w_vals);
        }
    }
    if (r->nsegs > 1 && old_tags && old_tags->packed) {
        uint8_t *tw = idx + seen__run_index_bytes(r);
        uint64_t nw = tag_words(r);
        for (uint64_t wi = 0; wi < nw; wi++)
            seen__store64le(tw + wi * 8, old_tags->packed[wi]);
    } else if (r->nsegs > 1) {
        uint8_t *tw = idx + seen__run_index_bytes(r);
        uint32_t per = tags_per_word(r->nsegs, NULL);
        /* Digits of a word, least significant first: collected, then
         * folded from the top. */
        uint16_t digits[64];
        uint32_t nd = 0;
        uint64_t word_i = 0;
        size_t total = old_tags ? old_tags->n_old : r->n;
        for (size_t i = 0; i < total; i++) {
            if (old_tags && old_tags->skip[i])
                continue;
            digits[nd++] = old_tags ? old_tags->tags[i] : tags[i];
            if (nd == per) {
                uint64_t word = 0;
                for (uint32_t d = nd; d > 0; d--)
                    word = word * r->nsegs + digits[d - 1];
                seen__store64le(tw + word_i++ * 8, word);
                nd = 0;
            }
        }
        if (nd > 0) {
            uint64_t word = 0;
            for (uint32_t d = nd; d > 0; d--)
                word = word * r->nsegs + digits[d - 1];
            seen__store64le(tw + word_i * 8, word);
        }
    }
    memcpy(r->mem + codes_offset(r), codes, (size_t)((r->code_bits + 7) / 8));
    seen__run_split(r);
    return SEEN_OK;
}

/* Whether cutting sorted vals by value would leave a bucket holding more
 * than SEEN_RANKED_SKEW times a bucket's share of them: then the run is cut
 * by rank.  Fingerprints and hashed keys never come near it; clustered
 * integer ids with a far outlier put nearly all in one bucket. */
static bool value_cut_skewed(const uint64_t *vals, size_t n, const seen__run *r,
                             const seen__divider *bdiv)
{
    uint64_t limit = (uint64_t)SEEN_RANKED_SKEW * ((n + r->nbuckets - 1) / r->nbuckets);
    uint64_t in_bucket = 0;
    uint64_t cur = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t j = seen__div(bdiv, vals[i] - r->base);
        in_bucket = j == cur ? in_bucket + 1 : 1;
        cur = j;
        if (in_bucket > limit)
            return true;
    }
    return false;
}

/* Where a run cut by rank starts its buckets, and its Golomb parameter.
 * A bucket starts every 1/nbuckets of the values, and also at any gap so
 * large that coding it would cost more than a bucket does: 2^8 times the
 * median gap and more, the largest of them while the run may have that many
 * buckets (nbuckets_allowed).  Such gaps are where clustered ids jump (to
 * the next cluster, to an outlier); a bucket's first value costs nothing to
 * reach, as its low is in the index.  The gaps left inside buckets choose a
 * Rice parameter m = 2^k, the k that codes them in the fewest bits, instead
 * of the parameter for values spread over the span that an outlier would
 * make ~40 bits wide.  cuts (nbuckets + 1 entries) is allocated here. */
static seen_err rank_cut(const uint64_t *vals, size_t n, seen__run *r, uint64_t **cuts_out)
{
    uint32_t nb0 = r->nbuckets;
    uint64_t count[65] = {0};
    for (size_t i = 1; i < n; i++)
        count[seen__bitlen(vals[i] - vals[i - 1] - 1)]++;
    uint64_t seen_gaps = 0;
    unsigned median = 0;
    while (median < 64 && (seen_gaps += count[median]) <= (n - 1) / 2)
        median++;
    uint64_t budget = canonical_nbuckets(2 * (uint64_t)n, true) - nb0;
    unsigned wide = median + 8; /* gaps of more bits than this start a bucket */
    uint64_t above = 0;
    for (unsigned b = wide + 1; b <= 64; b++)
        above += count[b];
    while (above > budget && wide < 64)
        above -= count[++wide];
    uint64_t *cuts = seen__malloc(((size_t)nb0 + (size_t)above + 1) * sizeof *cuts);
    if (cuts == NULL)
        return SEEN_ERR_NOMEM;
    uint64_t sl = slope(n, nb0);
    uint32_t nb = 0, j = 1;
    cuts[nb++] = 0;
    uint64_t in_count[65] = {0};
    unsigned __int128 in_sum[65] = {0};
    for (size_t i = 1; i < n; i++) {
        uint64_t gap = vals[i] - vals[i - 1] - 1;
        bool on_line_cut = j < nb0 && i == on_line(sl, j);
        j += on_line_cut;
        if (on_line_cut || seen__bitlen(gap) > wide) {
            cuts[nb++] = i;
        } else {
            in_count[seen__bitlen(gap)]++;
            in_sum[seen__bitlen(gap)] += gap;
        }
    }
    cuts[nb] = n;
    /* Bits of the gaps inside buckets with m = 2^k: sum of (gap >> k) +
     * 1 + k each, estimated per bit length (exact to a bit per gap). */
    uint64_t inside = 0;
    for (unsigned b = 0; b <= 64; b++)
        inside += in_count[b];
    unsigned best_k = 0;
    unsigned __int128 best = 0;
    for (unsigned k = 0; k < 62; k++) {
        unsigned __int128 bits = (unsigned __int128)inside * (1 + k);
        for (unsigned b = k + 1; b <= 64; b++)
            bits += in_sum[b] >> k;
        if (k == 0 || bits < best) {
            best = bits;
            best_k = k;
        }
    }
    r->nbuckets = nb;
    r->golomb_m = UINT64_C(1) << best_k;
    *cuts_out = cuts;
    return SEEN_OK;
}

seen_err seen__run_encode(seen__run *out, uint64_t c, const uint64_t *vals, const uint16_t *tags,
                          size_t n, const uint32_t *seg_ids, uint32_t nsegs, bool fine)
{
    if (n == 0 || n > UINT32_MAX || nsegs == 0 || nsegs > SEEN_MAX_SEGMENTS)
        return SEEN_ERR_ARG;
    seen__run r;
    memset(&r, 0, sizeof r);
    r.c = c;
    r.n = (uint32_t)n;
    r.base = vals[0];
    r.span = vals[n - 1] - vals[0];
    r.golomb_m = seen__golomb_choose(n, r.span);
    r.nbuckets = canonical_nbuckets(n, fine);
    r.bucket_w = canonical_bucket_w(r.nbuckets, r.span);
    r.nsegs = nsegs;

    seen__divider bdiv;
    seen__divider_init(&bdiv, r.bucket_w);
    const bool ranked = r.nbuckets > 1 && value_cut_skewed(vals, n, &r, &bdiv);
    uint64_t *cuts = NULL;
    if (ranked) {
        r.bucket_w = 0;
        if (rank_cut(vals, n, &r, &cuts) != SEEN_OK)
            return SEEN_ERR_NOMEM;
    }
    seen__golomb g;
    seen__golomb_init(&g, r.golomb_m);
    seen__divider mdiv;
    seen__divider_init(&mdiv, r.golomb_m);
    uint64_t *offs = seen__malloc(((size_t)r.nbuckets + 1) * (ranked ? 3 : 2) * sizeof *offs);
    acc_writer w = {0};
    /* A code takes about b + 1.5 bits; reserve generously, grow rarely. */
    uint64_t est = (uint64_t)n * (g.b + 3) + 128;
    if (offs == NULL || !aw_reserve(&w, est)) {
        seen__free(cuts);
        seen__free(offs);
        seen__free(w.buf);
        return SEEN_ERR_NOMEM;
    }
    uint64_t *firsts = offs + r.nbuckets + 1;
    uint64_t *lows = ranked ? firsts + r.nbuckets + 1 : NULL;

    uint32_t cur_bucket = 0;
    uint64_t prev = 0, lo = r.base;
    bool first = true;
    offs[0] = 0;
    firsts[0] = 0;
    if (ranked)
        lows[0] = r.base;
    uint64_t next_first = ranked ? cuts[1] : 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = vals[i];
        if (ranked) {
            if (cur_bucket + 1 < r.nbuckets && i == next_first) {
                cur_bucket++;
                offs[cur_bucket] = aw_bits(&w);
                firsts[cur_bucket] = i;
                lows[cur_bucket] = lo = v;
                next_first = cuts[cur_bucket + 1];
                first = true;
            }
        } else {
            uint32_t j = r.nbuckets > 1 ? (uint32_t)seen__div(&bdiv, v - r.base) : 0;
            while (cur_bucket < j) {
                cur_bucket++;
                offs[cur_bucket] = aw_bits(&w);
                firsts[cur_bucket] = i;
                first = true;
            }
            lo = r.base + (uint64_t)j * r.bucket_w;
        }
        uint64_t gap = first ? v - lo : v - prev - 1;
        uint64_t q = g.m > 1 ? seen__div(&mdiv, gap) : gap;
        if (w.byte + (q + 130) / 8 + 16 > w.cap && !aw_reserve(&w, q + 130)) {
            seen__free(cuts);
            seen__free(offs);
            seen__free(w.buf);
            return SEEN_ERR_NOMEM;
        }
        golomb_put(&w, &g, &mdiv, gap);
        prev = v;
        first = false;
    }
    seen__free(cuts);
    while (cur_bucket < r.nbuckets) {
        cur_bucket++;
        offs[cur_bucket] = aw_bits(&w);
        firsts[cur_bucket] = n;
    }
    r.code_bits = aw_bits(&w);
    seen_err err = run_assemble(&r, offs, firsts, lows, seg_ids, tags, NULL, w.buf);
    seen__free(offs);
    seen__free(w.buf);
    if (err != SEEN_OK)
        return err;
    *out = r;
    return SEEN_OK;
}

/* Where an edited run's buckets start: the old run's (offs, firsts), the
 * new one's (noffs, nfirsts), nbuckets + 1 each, and a run cut by rank's
 * lows, which edits keep.  One allocation. */
typedef struct edit_frame {
    uint64_t *offs, *firsts, *noffs, *nfirsts, *lows;
} edit_frame;

static bool edit_frame_init(edit_frame *f, const seen__run *r)
{
    size_t nb = (size_t)r->nbuckets + 1;
    f->offs = seen__malloc(nb * (run_ranked(r) ? 5 : 4) * sizeof *f->offs);
    if (f->offs == NULL)
        return false;
    f->firsts = f->offs + nb;
    f->noffs = f->firsts + nb;
    f->nfirsts = f->noffs + nb;
    f->lows = run_ranked(r) ? f->nfirsts + nb : NULL;
    uint64_t sl_bits = slope(r->code_bits, r->nbuckets), sl_items = slope(r->n, r->nbuckets);
    for (uint32_t j = 0; j <= r->nbuckets; j++) {
        bucket_start(r, sl_bits, sl_items, j, &f->offs[j], &f->firsts[j]);
        if (f->lows && j < r->nbuckets)
            f->lows[j] = bucket_lo(r, j);
    }
    return true;
}

/* Copy bucket j, and the buckets after it in the same block that no value
 * of vals[vi..k) falls in, as they are, their first items moved by
 * `shift`.  Returns the last bucket copied, or UINT32_MAX out of memory. */
static uint32_t copy_untouched(acc_writer *w, const seen__run *r, const edit_frame *f, uint32_t j,
                               const uint64_t *vals, size_t vi, size_t k, int64_t shift)
{
    uint32_t e = j + 1;
    while (e < r->nbuckets && (vi == k || vals[vi] > bucket_hi(r, e)) &&
           (r->tail == NULL || (f->offs[e] >= r->tail_bit) == (f->offs[j] >= r->tail_bit))) {
        f->nfirsts[e] = (uint64_t)((int64_t)f->firsts[e] + shift);
        f->noffs[e] = f->noffs[j] + (f->offs[e] - f->offs[j]);
        e++;
    }
    uint64_t org;
    const uint8_t *codes = bucket_codes(r, f->offs[j], &org);
    if (!aw_copy(w, codes, f->offs[j] - org, f->offs[e] - f->offs[j]))
        return UINT32_MAX;
    return e - 1;
}

/*
 * Removing a few values from a large run.  Only the buckets holding them
 * are decoded and encoded again; every other bucket's codes are copied
 * bit for bit (a bucket's codes depend only on its own values, its base
 * and the Golomb parameter, which the run keeps), and the index and tags
 * are rebuilt from what is known.  A delete from a 1M-item run costs a
 * copy of its bits, not a decode and an encode of every value.
 */
/* Remove digit p from packed base-k tag words holding `digits` digits, g
 * a word: the digits after it move down one place, a word at a time (one
 * division by k and a multiplication per word), so a delete costs the
 * words after it, not a decode and encode of every tag. */
static void tags_drop_digit(uint64_t *words, uint64_t digits, uint64_t p, uint32_t k, uint32_t g,
                            const seen__divider *kdiv)
{
    uint64_t nwords = (digits + g - 1) / g, w = p / g;
    uint32_t q = (uint32_t)(p % g);
    uint64_t top = ipow(k, g - 1);
    for (; w < nwords; w++) {
        uint64_t cur = words[w], kept;
        if (q > 0) {
            uint64_t kq = ipow(k, q);
            uint64_t low = cur % kq;
            kept = low + (cur / kq / k) * kq;
            q = 0;
        } else {
            kept = seen__div(kdiv, cur);
        }
        uint64_t next = w + 1 < nwords ? words[w + 1] : 0;
        words[w] = kept + (next - seen__div(kdiv, next) * k) * top;
    }
}

/* Whether tag t names more than `limit` of the run's values (stops as soon
 * as it does: a segment a delete might empty usually has many more). */
static bool tag_count_exceeds(const seen__run *r, uint32_t t, uint64_t limit)
{
    seen__divider kd;
    seen__divider_init(&kd, r->nsegs);
    const uint8_t *tw = r->mem + (size_t)r->nsegs * sizeof(uint32_t) + seen__run_index_bytes(r);
    uint32_t per = tags_per_word(r->nsegs, NULL);
    uint64_t count = 0;
    for (uint64_t i = 0; i < r->n; i += per) {
        uint64_t word = seen__load64le(tw + (i / per) * 8);
        uint64_t end_i = i + per < r->n ? i + per : r->n;
        for (uint64_t d = i; d < end_i; d++) {
            uint64_t q = seen__div(&kd, word);
            if (word - q * r->nsegs == t && ++count > limit)
                return true;
            word = q;
        }
    }
    return false;
}

/* Deletes of up to this many values from one run move tag digits word by
 * word; more re-pack every tag. */
#define TAG_SHIFT_MAX 16u

seen_err seen__run_without(seen__run *out, const seen__run *r, const uint64_t *vals, size_t k,
                           uint64_t *removed_per_tag, size_t *removed, bool *applies)
{
    *removed = 0;
    *applies = false;
    seen__golomb g;
    seen__golomb_init(&g, r->golomb_m);
    seen__divider mdiv;
    seen__divider_init(&mdiv, r->golomb_m);
    edit_frame f = {0};
    /* The run positions of the values that go, in increasing order. */
    uint64_t *gone_at = seen__malloc((k ? k : 1) * sizeof *gone_at);
    uint8_t *drop = NULL; /* per value of the bucket being edited */
    uint8_t *skip = NULL;
    uint16_t *tags = NULL;
    uint64_t *words = NULL;
    uint64_t *bucket = NULL;
    acc_writer w = {0};
    seen_err err = SEEN_ERR_NOMEM;
    /* A ranked run keeps its buckets' lowest values: a bucket that loses
     * its first value codes the next one from the same low. */
    if (gone_at == NULL || !edit_frame_init(&f, r))
        goto done;
    uint64_t *offs = f.offs, *firsts = f.firsts, *noffs = f.noffs, *nfirsts = f.nfirsts,
             *lows = f.lows;
    size_t bucket_cap = 0;
    if (!aw_reserve(&w, r->code_bits + 64))
        goto done;
    size_t vi = 0, gone = 0;
    for (uint32_t j = 0; j < r->nbuckets; j++) {
        noffs[j] = aw_bits(&w);
        nfirsts[j] = firsts[j] - gone;
        /* The bucket's values lie in [lo, top]. */
        uint64_t lo = bucket_lo(r, j), top = bucket_hi(r, j);
        while (vi < k && vals[vi] < lo)
            vi++;
        uint64_t org;
        const uint8_t *codes = bucket_codes(r, offs[j], &org);
        size_t cnt = (size_t)(firsts[j + 1] - firsts[j]);
        if (vi == k || vals[vi] > top || cnt == 0) {
            /* Untouched: its bits as they are. */
            if ((j = copy_untouched(&w, r, &f, j, vals, vi, k, -(int64_t)gone)) == UINT32_MAX)
                goto done;
            continue;
        }
        if (cnt > bucket_cap) {
            seen__free(bucket);
            seen__free(drop);
            bucket_cap = cnt;
            bucket = seen__malloc(cnt * sizeof *bucket);
            drop = seen__malloc(cnt);
            if (bucket == NULL || drop == NULL)
                goto done;
        }
        memset(drop, 0, cnt);
        uint64_t pos = offs[j] - org, v = lo;
        for (size_t i = 0; i < cnt; i++) {
            v = (i == 0 ? lo : v + 1) + golomb_get(codes, &pos, &g);
            bucket[i] = v;
        }
        /* Values to drop, then the rest coded again from the bucket base. */
        size_t bi = 0;
        while (vi < k && vals[vi] <= top) {
            while (bi < cnt && bucket[bi] < vals[vi])
                bi++;
            if (bi < cnt && bucket[bi] == vals[vi] && !drop[bi]) {
                drop[bi] = 1;
                gone_at[gone++] = firsts[j] + bi;
            }
            vi++;
        }
        uint64_t prev = 0;
        bool first = true;
        for (size_t i = 0; i < cnt; i++) {
            if (drop[i])
                continue;
            uint64_t gap = first ? bucket[i] - lo : bucket[i] - prev - 1;
            uint64_t q = g.m > 1 ? seen__div(&mdiv, gap) : gap;
            if (w.byte + (q + 130) / 8 + 16 > w.cap && !aw_reserve(&w, q + 130))
                goto done;
            golomb_put(&w, &g, &mdiv, gap);
            prev = bucket[i];
            first = false;
        }
    }
    noffs[r->nbuckets] = aw_bits(&w);
    nfirsts[r->nbuckets] = r->n - gone;
    err = SEEN_OK;
    if (gone == 0) {
        *applies = true;
        goto done;
    }
    uint64_t n2 = r->n - gone;
    if (n2 == 0 || !nbuckets_allowed(n2, r->nbuckets))
        goto done; /* the run has lost half its values: rebuild */
    uint32_t per = r->nsegs > 1 ? tags_per_word(r->nsegs, NULL) : 0;
    if (r->nsegs > 1) {
        /* Each segment must keep a value here: count per tag what goes,
         * then look for one more of each such tag. */
        for (size_t i = 0; i < gone; i++)
            removed_per_tag[tag_at(r, per, gone_at[i])]++;
        for (size_t i = 0; i < gone; i++) {
            uint32_t t = (uint32_t)tag_at(r, per, gone_at[i]);
            if (removed_per_tag[t] > 0 && !tag_count_exceeds(r, t, removed_per_tag[t])) {
                memset(removed_per_tag, 0, r->nsegs * sizeof *removed_per_tag);
                goto done; /* a segment would be named without values: rebuild */
            }
        }
    } else {
        removed_per_tag[0] += gone;
    }
    seen__run nr = *r;
    nr.mem = NULL;
    nr.tail = NULL;
    nr.tail_bit = 0;
    nr.n = (uint32_t)n2;
    nr.code_bits = noffs[r->nbuckets];
    tag_source ts = {NULL, NULL, r->n, NULL};
    if (r->nsegs > 1 && gone <= TAG_SHIFT_MAX) {
        uint64_t nw = tag_words(r);
        const uint8_t *tw = r->mem + (size_t)r->nsegs * sizeof(uint32_t) + seen__run_index_bytes(r);
        words = seen__malloc(nw * sizeof *words);
        if (words == NULL)
            goto fail;
        for (uint64_t wi = 0; wi < nw; wi++)
            words[wi] = seen__load64le(tw + wi * 8);
        seen__divider kd;
        seen__divider_init(&kd, r->nsegs);
        for (size_t i = gone; i-- > 0;)
            tags_drop_digit(words, r->n - (gone - 1 - i), gone_at[i], r->nsegs, per, &kd);
        ts.packed = words;
    } else if (r->nsegs > 1) {
        tags = seen__malloc((size_t)r->n * sizeof *tags);
        skip = seen__calloc(r->n, 1);
        if (tags == NULL || skip == NULL)
            goto fail;
        seen__run_decode_tags(r, tags);
        for (size_t i = 0; i < gone; i++)
            skip[gone_at[i]] = 1;
        ts.tags = tags;
        ts.skip = skip;
    }
    err = run_assemble(&nr, noffs, nfirsts, lows, seen__run_segs(r), NULL,
                       r->nsegs > 1 ? &ts : NULL, w.buf);
    if (err != SEEN_OK)
        goto fail;
    *out = nr;
    *removed = gone;
    *applies = true;
    goto done;
fail:
    err = SEEN_ERR_NOMEM;
    memset(removed_per_tag, 0, r->nsegs * sizeof *removed_per_tag);
done:
    seen__free(f.offs);
    seen__free(gone_at);
    seen__free(drop);
    seen__free(skip);
    seen__free(tags);
    seen__free(words);
    seen__free(bucket);
    seen__free(w.buf);
    return err;
}

/*
 * Adding values to a run of one segment: the counterpart of
 * seen__run_without for the flush of the head into the run that takes it.
 * Only the buckets the new values fall in are decoded and coded again; the
 * rest is copied, and base, span, Golomb parameter and bucket count stay.
 * A 20-item page into a run of thousands then re-codes a few buckets, not
 * the run.
 */
/* Unary parts longer than this make seen__run_with give way to a rebuild. */
#define SEEN_WITH_MAX_QUOTIENT 1024u

seen_err seen__run_with(seen__run *out, const seen__run *r, const uint64_t *vals, size_t k,
                        size_t *held, bool *applies)
{
    *applies = false;
    *held = 0;
    /* Buckets grow as values come in: a large run (fine buckets, probed by
     * every add) is rebuilt once they average twice its canonical ones. */
    uint64_t n2 = (uint64_t)r->n + k;
    if (r->nsegs != 1 || k == 0 || vals[0] < r->base || vals[k - 1] - r->base > r->span ||
        n2 > UINT32_MAX || !nbuckets_allowed(n2, r->nbuckets) ||
        (n2 >= SEEN_LARGE_RUN && n2 > (uint64_t)r->nbuckets * (SEEN_BUCKET_ITEMS / 2)))
        return SEEN_OK;
    seen__golomb g;
    seen__golomb_init(&g, r->golomb_m);
    seen__divider mdiv;
    seen__divider_init(&mdiv, r->golomb_m);
    edit_frame f = {0};
    uint64_t *bucket = NULL;
    acc_writer w = {0};
    seen_err err = SEEN_ERR_NOMEM;
    if (!edit_frame_init(&f, r))
        goto done;
    uint64_t *offs = f.offs, *firsts = f.firsts, *noffs = f.noffs, *nfirsts = f.nfirsts,
             *lows = f.lows;
    /* New codes take about as many bits each as the old ones do. */
    uint64_t per = r->code_bits / r->n + 1;
    if (!aw_reserve(&w, r->code_bits + (uint64_t)k * (per + g.b + 2) + 64))
        goto done;
    size_t vi = 0, added = 0, cap = 0;
    for (uint32_t j = 0; j < r->nbuckets; j++) {
        noffs[j] = aw_bits(&w);
        nfirsts[j] = firsts[j] + added;
        uint64_t lo = bucket_lo(r, j), top = bucket_hi(r, j);
        uint64_t org;
        const uint8_t *codes = bucket_codes(r, offs[j], &org);
        if (vi == k || vals[vi] > top) {
            if ((j = copy_untouched(&w, r, &f, j, vals, vi, k, (int64_t)added)) == UINT32_MAX)
                goto done;
            continue;
        }
        size_t cnt = (size_t)(firsts[j + 1] - firsts[j]), vend = vi;
        while (vend < k && vals[vend] <= top)
            vend++;
        if (cnt + (vend - vi) > cap) {
            seen__free(bucket);
            cap = cnt + (vend - vi);
            bucket = seen__malloc(cap * sizeof *bucket);
            if (bucket == NULL)
                goto done;
        }
        /* The bucket's values and the new ones, merged; a value it holds
         * already is counted, not added. */
        uint64_t pos = offs[j] - org, v = lo;
        size_t m = 0;
        for (size_t i = 0; i < cnt; i++) {
            v = (i == 0 ? lo : v + 1) + golomb_get(codes, &pos, &g);
            while (vi < vend && vals[vi] < v)
                bucket[m++] = vals[vi++];
            if (vi < vend && vals[vi] == v) {
                (*held)++;
                vi++;
            }
            bucket[m++] = v;
        }
        while (vi < vend)
            bucket[m++] = vals[vi++];
        added += m - cnt;
        for (size_t i = 0; i < m; i++) {
            uint64_t gap = i == 0 ? bucket[i] - lo : bucket[i] - bucket[i - 1] - 1;
            uint64_t q = g.m > 1 ? seen__div(&mdiv, gap) : gap;
            if (q > SEEN_WITH_MAX_QUOTIENT) {
                /* A gap far wider than the parameter was chosen for (a
                 * value between two clusters of a run cut by rank): a
                 * rebuild cuts a bucket there instead. */
                err = SEEN_OK;
                goto done;
            }
            if (w.byte + (q + 130) / 8 + 16 > w.cap && !aw_reserve(&w, q + 130))
                goto done;
            golomb_put(&w, &g, &mdiv, gap);
        }
    }
    noffs[r->nbuckets] = aw_bits(&w);
    nfirsts[r->nbuckets] = r->n + added;
    seen__run nr = *r;
    nr.mem = NULL;
    nr.tail = NULL;
    nr.tail_bit = 0;
    nr.n = (uint32_t)(r->n + added);
    nr.code_bits = noffs[r->nbuckets];
    err = nr.code_bits > SEEN_MAX_CODE_BITS
              ? SEEN_OK
              : run_assemble(&nr, noffs, nfirsts, lows, seen__run_segs(r), NULL, NULL, w.buf);
    if (err != SEEN_OK || nr.mem == NULL)
        goto done;
    *out = nr;
    *applies = true;
done:
    seen__free(f.offs);
    seen__free(bucket);
    seen__free(w.buf);
    return err;
}
