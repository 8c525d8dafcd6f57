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
 * n / SEEN_BUCKET_ITEMS (half that many items per bucket for "fine" runs,
 * the writer's choice; runs under SEEN_LARGE_RUN values written with
 * buckets of SEEN_LEGACY_BUCKET_ITEMS still load)
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
#include "run_write.h"

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

/*
 * The writer's Golomb parameter is a power of two, m = 2^k (a Rice code):
 * every remainder then takes k bits, and a decode step is a shift and a
 * mask where a general m needs a select between short and long remainders
 * (1.8 against 2.5 ns a code in process; the step is bound by its
 * instruction count).  It costs ~0.03 bit a code over the best general m.
 *
 * For gaps ~geometric with p = n / (span + 1), k and k + 1 cost the same
 * when a = (1 - p)^(2^k) is (sqrt(5) - 1) / 2: the unary parts cost
 * a / (1 - a) and a^2 / (1 - a^2) bits, which differ by exactly one bit
 * (the remainder's) there.  So the best k is the smallest with a below
 * it, and a bucket of k codes lies in [0.382, 0.618) for k > 0.  Integers
 * only (1 - p in 0.64 fixed point, squared with truncation), so every
 * platform writes the same bytes.
 */
#define GOLDEN_064 UINT64_C(0x9E3779B97F4A7C15) /* (sqrt(5) - 1) / 2 in 0.64 */
/* A parameter is kept while its a is within these: at either end a code
 * costs ~0.02-0.03 bit more than with the best k. */
#define KEEP_A_HIGH UINT64_C(0xA000000000000000) /* 0.625 */
#define KEEP_A_LOW UINT64_C(0x6000000000000000)  /* 0.375 */

/* 1 - p in 0.64 fixed point, for n values over span + 1 slots (n >= 1). */
static uint64_t one_minus_p(uint64_t n, uint64_t span)
{
    unsigned __int128 range = (unsigned __int128)span + 1;
    if ((unsigned __int128)n >= range)
        return 0;
    return (uint64_t)((((unsigned __int128)(range - n)) << 64) / range);
}

uint64_t seen__golomb_choose(uint64_t n, uint64_t span)
{
    if (n == 0)
        return 1;
    uint64_t a = one_minus_p(n, span);
    unsigned k = 0;
    while (a >= GOLDEN_064 && k < SEEN_MAX_GOLOMB_K) {
        a = seen__mulhi(a, a);
        k++;
    }
    return UINT64_C(1) << k;
}

bool seen__golomb_keeps(uint64_t m, uint64_t n, uint64_t span)
{
    if (n == 0 || m == 0 || (m & (m - 1)) != 0)
        return false; /* a general m (an earlier writer's): recode */
    uint64_t a = one_minus_p(n, span);
    unsigned k = (unsigned)__builtin_ctzll(m);
    for (unsigned i = 0; i < k; i++)
        a = seen__mulhi(a, a);
    return a < KEEP_A_HIGH && (k == 0 || a >= KEEP_A_LOW);
}

bool seen__aw_reserve(acc_writer *w, uint64_t more_bits)
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

/* Append nbits bits of src starting at bit `from` (src readable 16 bytes
 * past them, as codes are).  Once the writer is at a byte boundary, whole
 * words are shifted into place, or copied when the two line up: copying a
 * large run's untouched buckets costs a memcpy, not a step per 56 bits. */
bool seen__aw_copy(acc_writer *w, const uint8_t *src, uint64_t from, uint64_t nbits)
{
    if (!seen__aw_reserve(w, nbits + 64))
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

size_t seen__run_index_bytes(const seen__run *r)
{
    if (seen__run_is_ef(r))
        return seen__ef_sample_bytes(r);
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
    if (r->tail != NULL || !seen__alloc_rounds())
        return;
    const bool ef = seen__run_is_ef(r);
    if (ef ? r->ef.low == 0 : r->nbuckets < 2)
        return;
    const size_t whole = seen__run_mem_size(r), off = codes_offset(r), bytes = code_bytes(r);
    size_t best = seen__alloc_class(whole);
    uint64_t best_bit = 0;
    /* A second block must pay for its extra pointer chase
     * (SEEN_SPLIT_MIN_GAIN). */
    if (ef) {
        /* The lows may be cut before any value whose low starts on a byte:
         * every `step`-th.  For each class the front could fill, the cut
         * that fills it most; a few dozen classes lie below the whole. */
        const uint64_t ups = ef_ups_bits(r), l = r->ef.low;
        const unsigned twos = (unsigned)__builtin_ctzll(l) < 3 ? (unsigned)__builtin_ctzll(l) : 3;
        const uint64_t step = 8u >> twos;
        const size_t fixed = off + (size_t)(ups / 8) + SEEN_RUN_PAD;
        for (size_t cls = seen__alloc_class(fixed + (size_t)(step * l / 8)); cls < best;
             cls = seen__alloc_class(cls + 1)) {
            uint64_t i = (uint64_t)(cls - fixed) * 8 / l / step * step;
            if (i >= r->n)
                break;
            uint64_t bit = ups + i * l;
            size_t front = fixed + (size_t)(i * l / 8);
            size_t tail = bytes - (size_t)(bit / 8) + SEEN_RUN_PAD;
            size_t cost = seen__alloc_class(front) + seen__alloc_class(tail) + SEEN_SPLIT_MIN_GAIN;
            if (i > 0 && cost < best) {
                best = cost;
                best_bit = bit;
            }
        }
    } else {
        /* A Golomb run is cut at a bucket start. */
        uint64_t sl_bits = slope(r->code_bits, r->nbuckets), sl_items = slope(r->n, r->nbuckets);
        for (uint32_t j = 1; j < r->nbuckets; j++) {
            uint64_t bit, item;
            bucket_start(r, sl_bits, sl_items, j, &bit, &item);
            if (bit == 0 || bit >= r->code_bits)
                continue;
            size_t front = off + (size_t)((bit + 7) / 8) + SEEN_RUN_PAD;
            size_t tail = bytes - (size_t)(bit / 8) + SEEN_RUN_PAD;
            size_t cost = seen__alloc_class(front) + seen__alloc_class(tail) + SEEN_SPLIT_MIN_GAIN;
            if (cost < best) {
                best = cost;
                best_bit = bit;
            }
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

void seen__run_put_tags(seen__run *r, const uint16_t *tags, const tag_source *old_tags)
{
    if (r->nsegs > 1 && old_tags && old_tags->packed) {
        uint8_t *tw = r->mem + (size_t)r->nsegs * sizeof(uint32_t) + seen__run_index_bytes(r);
        uint64_t nw = tag_words(r);
        for (uint64_t wi = 0; wi < nw; wi++)
            seen__store64le(tw + wi * 8, old_tags->packed[wi]);
    } else if (r->nsegs > 1) {
        uint8_t *tw = r->mem + (size_t)r->nsegs * sizeof(uint32_t) + seen__run_index_bytes(r);
        uint32_t per = run_tags_per_word(r);
        const uint64_t k = r->nsegs;
        /* Digits of two words, least significant first: collected, then
         * folded from the top, the two words side by side (each fold is
         * a chain of multiply-adds; two chains overlap). */
        uint16_t digits[128];
        uint32_t nd = 0;
        uint64_t word_i = 0;
        size_t total = old_tags ? old_tags->n_old : r->n;
        for (size_t i = 0; i < total; i++) {
            if (old_tags && old_tags->skip[i])
                continue;
            digits[nd++] = old_tags ? old_tags->tags[i] : tags[i];
            if (nd == 2 * per) {
                uint64_t wa = 0, wb = 0;
                for (uint32_t d = per; d > 0; d--) {
                    wa = wa * k + digits[d - 1];
                    wb = wb * k + digits[per + d - 1];
                }
                seen__store64le(tw + word_i++ * 8, wa);
                seen__store64le(tw + word_i++ * 8, wb);
                nd = 0;
            }
        }
        for (uint32_t from = 0; from < nd; from += per) {
            uint32_t to = nd - from < per ? nd : from + per;
            uint64_t word = 0;
            for (uint32_t d = to; d > from; d--)
                word = word * k + digits[d - 1];
            seen__store64le(tw + word_i++ * 8, word);
        }
    }
}

seen_err seen__run_assemble(seen__run *r, const uint64_t *offs, const uint64_t *firsts,
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
    seen__run_put_tags(r, tags, old_tags);
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
                          size_t n, const uint32_t *seg_ids, uint32_t nsegs, unsigned shape)
{
    return seen__run_encode_m(out, c, vals, tags, n, seg_ids, nsegs, shape, 0);
}

seen_err seen__run_encode_m(seen__run *out, uint64_t c, const uint64_t *vals, const uint16_t *tags,
                            size_t n, const uint32_t *seg_ids, uint32_t nsegs, unsigned shape,
                            uint64_t m)
{
    const bool fine = (shape & SEEN_RUN_FINE) != 0;
    if (n == 0 || n > UINT32_MAX || nsegs == 0 || nsegs > SEEN_MAX_SEGMENTS ||
        m > SEEN_MAX_GOLOMB_M)
        return SEEN_ERR_ARG;
    if (m == 0 && seen__ef_wanted(c, n, vals[n - 1] - vals[0], shape))
        return seen__ef_encode(out, c, vals, tags, n, seg_ids, nsegs);
    seen__run r;
    run_header_init(&r, c, vals, n, nsegs);
    r.golomb_m = m ? m : seen__golomb_choose(n, r.span);
    r.nbuckets = canonical_nbuckets(n, fine);
    r.bucket_w = canonical_bucket_w(r.nbuckets, r.span);

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
    if (offs == NULL || !seen__aw_reserve(&w, est)) {
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
        if (w.byte + (q + 130) / 8 + 16 > w.cap && !seen__aw_reserve(&w, q + 130)) {
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
    seen_err err = seen__run_assemble(&r, offs, firsts, lows, seg_ids, tags, NULL, w.buf);
    seen__free(offs);
    seen__free(w.buf);
    if (err != SEEN_OK)
        return err;
    *out = r;
    return SEEN_OK;
}
