/*
 * run_layout.h — where things are in a run (run.c describes the layout):
 * sizes and offsets of its parts, canonical bucket counts and widths, bucket
 * starts from the index, tag packing, and decoding Golomb codes (one at a
 * position, or in sequence with a bit reader).  Shared
 * by the writers (run.c, run_edit.c) and the readers (run_read.c, run_tags.c); private
 * to the core.
 */
#ifndef SEEN_RUN_LAYOUT_H
#define SEEN_RUN_LAYOUT_H

#include "internal.h"

static inline uint64_t golomb_get_slow(const uint8_t *buf, uint64_t *pos, const seen__golomb *g)
{
    uint64_t q = 0;
    uint64_t w = seen__peek(buf, *pos);
    while (w == 0) {
        unsigned valid = 64 - (unsigned)(*pos & 7);
        q += valid;
        *pos += valid;
        w = seen__peek(buf, *pos);
    }
    unsigned z = (unsigned)__builtin_ctzll(w);
    q += z;
    *pos += z + 1;
    if (g->b == 0)
        return q;
    uint64_t y = seen__read_bits(buf, *pos, g->b - 1);
    if (y < g->short_n) {
        *pos += g->b - 1;
        return q * g->m + y;
    }
    uint64_t bit = seen__read_bits(buf, *pos + g->b - 1, 1);
    *pos += g->b;
    return q * g->m + ((y << 1) | bit) - g->short_n;
}

/* Decode one gap from trusted data: one 64-bit load in the common case. */
static inline uint64_t golomb_get(const uint8_t *buf, uint64_t *pos, const seen__golomb *g)
{
    uint64_t w = seen__peek(buf, *pos);
    unsigned valid = 64 - (unsigned)(*pos & 7);
    if (__builtin_expect(w != 0, 1)) {
        unsigned z = (unsigned)__builtin_ctzll(w);
        if (__builtin_expect(z + 1 + g->b <= valid, 1)) {
            if (g->b == 0) {
                *pos += z + 1;
                return z;
            }
            w >>= z + 1;
            uint64_t y = w & g->lowmask;
            unsigned is_long = y >= g->short_n;
            uint64_t r_long = ((y << 1) | ((w >> (g->b - 1)) & 1)) - g->short_n;
            uint64_t r = is_long ? r_long : y;
            *pos += z + g->b + is_long;
            return z * g->m + r;
        }
    }
    return golomb_get_slow(buf, pos, g);
}

/*
 * A bit reader holding 56-63 bits in a register.  Refills are branch-free:
 * OR in the next 8 bytes above the bits held, then advance by the whole
 * bytes that became valid (the invariant is ptr*8 == position + avail).
 * Decoding then works on the register; loads leave the critical path.
 */
typedef struct reader {
    const uint8_t *ptr;
    uint64_t buf;
    unsigned avail;
} reader;

static inline void reader_refill(reader *rd)
{
    rd->buf |= seen__load64le(rd->ptr) << rd->avail;
    rd->ptr += (63 - rd->avail) >> 3;
    rd->avail |= 56;
}

static inline void reader_init(reader *rd, const uint8_t *buf, uint64_t pos)
{
    rd->ptr = buf + (pos >> 3);
    rd->buf = 0;
    rd->avail = 0;
    reader_refill(rd);
    rd->buf >>= pos & 7;
    rd->avail -= (unsigned)(pos & 7);
}

/* What the slow path returns: the reader's new state travels by value, so
 * the caller's reader never has its address taken and stays in registers. */
typedef struct slow_result {
    reader rd;
    uint64_t gap;
    unsigned used;
} slow_result;

/* k <= 56 bits, refilling first. */
static inline uint64_t reader_take(reader *rd, unsigned k)
{
    if (rd->avail < k)
        reader_refill(rd);
    uint64_t v = rd->buf & ((UINT64_C(1) << k) - 1);
    rd->buf >>= k;
    rd->avail -= k;
    return v;
}

/* Is g a Rice code with a remainder (m = 2^k, k >= 1, what the writer
 * chooses)? */
static inline bool golomb_is_rice(const seen__golomb *g)
{
    return g->b > 0 && g->short_n == 0;
}

/*
 * A Rice code in two steps, for loops that decode many: rice_peek refills
 * and returns the code's length (z: its unary part); if that is more than
 * the bits held (a long unary part), the loop leaves for reader_golomb,
 * which reads it (the reader is as it was: a refill twice is harmless).
 * Otherwise rice_take consumes it.  No call stays in the loop, so two
 * chains decoded side by side overlap: ~0.9 ns a code each in process,
 * against 1.8 for one chain and 2.2-2.5 for a general m, whose step is
 * bound by its instruction count.
 */
static inline __attribute__((always_inline)) unsigned rice_peek(reader *rd, unsigned k, unsigned *z)
{
    reader_refill(rd);
    *z = (unsigned)__builtin_ctzll(rd->buf | (UINT64_C(1) << 63));
    return *z + 1 + k;
}

/* The gap of the code rice_peek measured: k remainder bits, the low one
 * last (a long truncated-binary remainder), so rotated into place. */
static inline __attribute__((always_inline)) uint64_t
rice_take(reader *rd, unsigned k, uint64_t mask, unsigned z, unsigned len)
{
    const uint64_t t = (rd->buf >> (z + 1)) & mask;
    rd->buf >>= len;
    rd->avail -= len;
    return ((uint64_t)z << k) + (((t << 1) & mask) | (t >> (k - 1)));
}

/* The case of reader_golomb where a code is longer than the bits held: a
 * long unary part, or the ~50-bit remainders of exact 64-bit keys (every
 * lookup in an exact set of thousands of items comes here). */
static __attribute__((noinline, unused)) slow_result reader_golomb_slow(reader rd,
                                                                        const seen__golomb *g)
{
    uint64_t q = 0;
    unsigned total = 0;
    for (;;) {
        reader_refill(&rd);
        uint64_t w = rd.buf & ((UINT64_C(1) << rd.avail) - 1);
        if (w == 0) {
            q += rd.avail;
            total += rd.avail;
            rd.buf >>= rd.avail;
            rd.avail = 0;
            continue;
        }
        unsigned z = (unsigned)__builtin_ctzll(w);
        q += z;
        total += z + 1;
        rd.buf >>= z + 1;
        rd.avail -= z + 1;
        break;
    }
    uint64_t rem = 0;
    if (g->b > 0) {
        unsigned k = g->b - 1;
        uint64_t y = k <= 56 ? reader_take(&rd, k) : reader_take(&rd, 32);
        if (k > 56)
            y |= reader_take(&rd, k - 32) << 32;
        total += k;
        if (y < g->short_n) {
            rem = y;
        } else {
            total += 1;
            rem = ((y << 1) | reader_take(&rd, 1)) - g->short_n;
        }
    }
    return (slow_result){rd, q * g->m + rem, total};
}

/* Gap from trusted data; *used gets the bits consumed. */
static inline __attribute__((always_inline)) uint64_t
reader_golomb(reader *rd, const seen__golomb *g, unsigned *used)
{
    reader_refill(rd);
    uint64_t b = rd->buf;
    unsigned z = (unsigned)__builtin_ctzll(b | (UINT64_C(1) << 63));
    if (__builtin_expect(z + 1 + g->b <= rd->avail, 1)) {
        if (g->b == 0) {
            rd->buf = b >> (z + 1);
            rd->avail -= z + 1;
            *used = z + 1;
            return z;
        }
        if (g->short_n == 0) {
            /* m = 2^b, as the writer chooses: no short remainders. */
            *used = z + 1 + g->b;
            return rice_take(rd, g->b, g->m - 1, z, *used);
        }
        /* Short or long remainder: about half and half, so select with a
         * mask, not a branch (a mispredicted branch costs more than both
         * paths). */
        uint64_t w = b >> (z + 1);
        uint64_t y = w & g->lowmask;
        uint64_t is_long = y >= g->short_n;
        uint64_t mask = 0 - is_long;
        uint64_t r_long = ((y << 1) | ((w >> (g->b - 1)) & 1)) - g->short_n;
        uint64_t r = (r_long & mask) | (y & ~mask);
        unsigned n = z + g->b + (unsigned)is_long;
        rd->buf = b >> n; /* n <= 56 < 64 */
        rd->avail -= n;
        *used = n;
        return (uint64_t)z * g->m + r;
    }
    slow_result sr = reader_golomb_slow(*rd, g);
    *rd = sr.rd;
    *used = sr.used;
    return sr.gap;
}

/* n values after x into out (each previous + 1 + gap). */
static inline __attribute__((always_inline)) void
golomb_decode_n(reader *rd, uint64_t x, uint64_t *out, size_t n, const seen__golomb *g)
{
    size_t i = 0;
    if (golomb_is_rice(g)) {
        const unsigned k = g->b;
        const uint64_t mask = g->m - 1;
        for (; i < n; i++) {
            unsigned z;
            const unsigned len = rice_peek(rd, k, &z);
            if (__builtin_expect(len > rd->avail, 0))
                break;
            x = x + 1 + rice_take(rd, k, mask, z, len);
            out[i] = x;
        }
    }
    unsigned used;
    for (; i < n; i++) {
        x = x + 1 + reader_golomb(rd, g, &used);
        out[i] = x;
    }
}

/* golomb_decode_n of two code strings in one loop, side by side. */
static inline __attribute__((always_inline)) void
golomb_decode_pair(reader *ra, uint64_t xa, uint64_t *oa, size_t na, reader *rb, uint64_t xb,
                   uint64_t *ob, size_t nb, const seen__golomb *g)
{
    const size_t both = na < nb ? na : nb;
    size_t i = 0;
    if (golomb_is_rice(g)) {
        const unsigned k = g->b;
        const uint64_t mask = g->m - 1;
        for (; i < both; i++) {
            unsigned za, zb;
            const unsigned la = rice_peek(ra, k, &za), lb = rice_peek(rb, k, &zb);
            if (__builtin_expect((la > ra->avail) | (lb > rb->avail), 0))
                break;
            xa = xa + 1 + rice_take(ra, k, mask, za, la);
            xb = xb + 1 + rice_take(rb, k, mask, zb, lb);
            oa[i] = xa;
            ob[i] = xb;
        }
    }
    unsigned used;
    for (; i < both; i++) {
        xa = xa + 1 + reader_golomb(ra, g, &used);
        xb = xb + 1 + reader_golomb(rb, g, &used);
        oa[i] = xa;
        ob[i] = xb;
    }
    golomb_decode_n(ra, xa, oa + i, na - i, g);
    golomb_decode_n(rb, xb, ob + i, nb - i, g);
}

/* The bit position the reader has reached in the buffer it was started on. */
static inline uint64_t reader_pos(const reader *rd, const uint8_t *buf)
{
    return (uint64_t)(rd->ptr - buf) * 8 - rd->avail;
}

/* How many base-k digits fit in a 64-bit word (k >= 2), and k to that
 * power.  Every lookup that finds a run's codes asks (their offset follows
 * the tags), so alphabets of up to 64 segments read a table. */
static inline uint32_t tags_per_word(uint32_t k, uint64_t *full)
{
    static const uint8_t small[65] = {
        0,  0,  63, 40, 31, 27, 24, 22, 21, 20, 19, 18, 17, 17, 16, 16, 15, 15, 15, 15, 14, 14,
        14, 14, 13, 13, 13, 13, 13, 13, 13, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 11, 11, 11,
        11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 10, 10, 10, 10, 10, 10, 10, 10};
    if (k <= 64 && full == NULL)
        return small[k];
    uint64_t p = 1;
    uint32_t g = 0;
    while (p <= UINT64_MAX / k) {
        p *= k;
        g++;
    }
    if (full)
        *full = p;
    return g;
}

static inline uint64_t ipow(uint64_t k, uint32_t e)
{
    uint64_t r = 1;
    while (e) {
        if (e & 1)
            r *= k;
        k *= k;
        e >>= 1;
    }
    return r;
}

static inline uint32_t nbuckets_of(uint64_t n, uint64_t per)
{
    uint64_t nb = n / per;
    return nb < 2 ? 1 : (uint32_t)nb;
}

/* The bucket count the writer gives a run of n values.  A point lookup
 * and every add's probe decode half a bucket; fine buckets serve the run
 * every flush rewrites. */
static inline uint32_t canonical_nbuckets(uint64_t n, bool fine)
{
    return nbuckets_of(n, fine ? SEEN_BUCKET_ITEMS / 2 : SEEN_BUCKET_ITEMS);
}

/* The count earlier writers gave a run under SEEN_LARGE_RUN values. */
static inline uint32_t legacy_nbuckets(uint64_t n)
{
    return nbuckets_of(n, n >= SEEN_LARGE_RUN ? SEEN_BUCKET_ITEMS : SEEN_LEGACY_BUCKET_ITEMS);
}

/* The bucket counts a run is written with, by this writer or an earlier
 * one. */
static inline bool nbuckets_canonical(uint64_t n, uint32_t nbuckets)
{
    return nbuckets == canonical_nbuckets(n, false) || nbuckets == canonical_nbuckets(n, true) ||
           nbuckets == legacy_nbuckets(n);
}

/* The bucket counts a run may have: a delete keeps the count a run was
 * written with (rewriting it whole would cost a decode and an encode of
 * every value) until the run has lost half its values.  Format version 3. */
static inline bool nbuckets_allowed(uint64_t n, uint32_t nbuckets)
{
    return nbuckets >= legacy_nbuckets(n) && nbuckets <= canonical_nbuckets(2 * n, true);
}

static inline uint64_t canonical_bucket_w(uint32_t nbuckets, uint64_t span)
{
    if (nbuckets <= 1)
        return 0;
    return (uint64_t)(((unsigned __int128)span + nbuckets) / nbuckets);
}

/* Tags per word of run r: base-k digits, as many as a word holds below
 * 2^64; an Elias-Fano run (format version 4) whose k is a power of two
 * fills the word, as its digits are then bit fields (k = 4: 32 two-bit
 * tags, where 4^31 < 2^64 leaves 31). */
static inline uint32_t run_tags_per_word(const seen__run *r)
{
    uint32_t k = r->nsegs;
    if (r->golomb_m == 0 && k >= 2 && (k & (k - 1)) == 0)
        return 64 / (uint32_t)__builtin_ctz(k);
    return tags_per_word(k, NULL);
}

static inline uint64_t tag_words(const seen__run *r)
{
    if (r->nsegs <= 1)
        return 0;
    uint32_t g = run_tags_per_word(r);
    return ((uint64_t)r->n + g - 1) / g;
}

static inline size_t codes_offset(const seen__run *r)
{
    return (size_t)r->nsegs * sizeof(uint32_t) + seen__run_index_bytes(r) + seen__run_tag_bytes(r);
}

static inline uint64_t slope(uint64_t total, uint32_t nbuckets)
{
    /* floor(total * 2^32 / nbuckets) with two 64-bit divisions (a 128-bit
     * one is a slow library call): the quotient per bucket is < 2^32. */
    uint64_t q = total / nbuckets, r = total % nbuckets;
    return (q << 32) + (r << 32) / nbuckets;
}

static inline uint64_t on_line(uint64_t slope32, uint32_t j)
{
    return (uint64_t)(((unsigned __int128)j * slope32) >> 32);
}

/* A ranked run's buckets are cut by rank, not by value (run.c): its index
 * also gives each bucket's lowest value, in this many bits. */
static inline bool run_ranked(const seen__run *r)
{
    return r->nbuckets > 1 && r->bucket_w == 0;
}

static inline unsigned ranked_w_vals(const seen__run *r)
{
    return r->w_vals;
}

static inline unsigned index_entry_bits(const seen__run *r)
{
    return r->w_bits + r->w_items + ranked_w_vals(r);
}

/* The lowest value bucket j may hold (j < nbuckets). */
static inline uint64_t bucket_lo(const seen__run *r, uint32_t j)
{
    if (j == 0)
        return r->base;
    if (!run_ranked(r))
        return r->base + (uint64_t)j * r->bucket_w;
    const uint8_t *idx = r->mem + (size_t)r->nsegs * sizeof(uint32_t);
    uint64_t at = (uint64_t)(j - 1) * index_entry_bits(r) + r->w_bits + r->w_items;
    return r->base + seen__read_bits(idx, at, ranked_w_vals(r));
}

/* The highest value bucket j may hold. */
static inline uint64_t bucket_hi(const seen__run *r, uint32_t j)
{
    if (j + 1 >= r->nbuckets)
        return r->base + r->span;
    return bucket_lo(r, j + 1) - 1;
}

/* The bucket of a ranked run that value v (base <= v <= base + span) falls
 * in: the last whose lowest value is <= v, by binary search. */
static inline uint32_t ranked_bucket_of(const seen__run *r, uint64_t v)
{
    uint32_t lo = 0, hi = r->nbuckets - 1;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo + 1) / 2;
        if (bucket_lo(r, mid) <= v)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Start bit and first item of bucket j (j may be nbuckets). */
static inline void bucket_start(const seen__run *r, uint64_t sl_bits, uint64_t sl_items, uint32_t j,
                                uint64_t *bit, uint64_t *item)
{
    if (j == 0) {
        *bit = 0;
        *item = 0;
        return;
    }
    if (j >= r->nbuckets) {
        *bit = r->code_bits;
        *item = r->n;
        return;
    }
    const uint8_t *idx = r->mem + (size_t)r->nsegs * sizeof(uint32_t);
    uint64_t at = (uint64_t)(j - 1) * index_entry_bits(r);
    uint64_t fb = seen__read_bits(idx, at, r->w_bits);
    uint64_t fi = seen__read_bits(idx, at + r->w_bits, r->w_items);
    *bit = (uint64_t)((int64_t)on_line(sl_bits, j) + r->idx_min_bits + (int64_t)fb);
    *item = (uint64_t)((int64_t)on_line(sl_items, j) + r->idx_min_items + (int64_t)fi);
}

/* The tag of the run's item number `item`; per = run_tags_per_word(r).
 * Digits of a power of two are bit fields: a shift, not a division. */
static inline int tag_at(const seen__run *r, uint32_t per, uint64_t item)
{
    if (r->nsegs <= 1)
        return 0;
    uint64_t wi = item / per;
    uint32_t d = (uint32_t)(item - wi * per);
    const uint8_t *tw = r->mem + (size_t)r->nsegs * sizeof(uint32_t) + seen__run_index_bytes(r);
    uint64_t word = seen__load64le(tw + wi * 8);
    if ((r->nsegs & (r->nsegs - 1)) == 0) {
        unsigned b = (unsigned)__builtin_ctz(r->nsegs);
        return (int)((word >> (b * d)) & (r->nsegs - 1));
    }
    return (int)(word / ipow(r->nsegs, d) % r->nsegs);
}

/* Where the codes of the bucket starting at bit pos are: in r->mem, or in
 * the tail, whose byte 0 holds code bit *org. */
static inline const uint8_t *bucket_codes(const seen__run *r, uint64_t pos, uint64_t *org)
{
    if (r->tail != NULL && pos >= r->tail_bit) {
        *org = r->tail_bit & ~(uint64_t)7;
        return r->tail;
    }
    *org = 0;
    return r->mem + codes_offset(r);
}

/* The position of the k-th (0-based) set bit of w, which has more than k:
 * the byte holding it from the bytes' running counts (one multiply), then
 * at most seven bits cleared within it. */
static inline unsigned seen__select64(uint64_t w, unsigned k)
{
    const uint64_t ones = UINT64_C(0x0101010101010101);
    uint64_t c = w - ((w >> 1) & UINT64_C(0x5555555555555555));
    c = (c & UINT64_C(0x3333333333333333)) + ((c >> 2) & UINT64_C(0x3333333333333333));
    c = (c + (c >> 4)) & UINT64_C(0x0f0f0f0f0f0f0f0f);
    uint64_t running = c * ones; /* byte i: set bits in bytes 0..i */
    uint64_t kk = (uint64_t)k * ones;
    uint64_t le = ((kk | UINT64_C(0x8080808080808080)) - running) & UINT64_C(0x8080808080808080);
    unsigned byte = (unsigned)((le >> 7) * ones >> 56); /* bytes wholly before the bit */
    unsigned before = (unsigned)((running << 8) >> (8 * byte)) & 0xffu;
    uint64_t b = (w >> (8 * byte)) & 0xffu;
    /* Within the byte, the same count over its bits spread one to a byte:
     * no loop, so no branch to mispredict. */
    uint64_t spread = ((b * ones) & UINT64_C(0x8040201008040201)) + UINT64_C(0x7f7f7f7f7f7f7f7f);
    uint64_t prefix = ((spread >> 7) & ones) * ones; /* byte i: set bits 0..i of b */
    uint64_t dd = (uint64_t)(k - before) * ones;
    uint64_t le2 = ((dd | UINT64_C(0x8080808080808080)) - prefix) & UINT64_C(0x8080808080808080);
    return 8 * byte + (unsigned)((le2 >> 7) * ones >> 56);
}

/* Bits of an Elias-Fano run's uppers with their padding: where its lows
 * start (run_ef.c). */
static inline uint64_t ef_ups_bits(const seen__run *r)
{
    return ((uint64_t)r->n + (r->span >> r->ef.low) + 63) & ~(uint64_t)63;
}

static inline size_t code_bytes(const seen__run *r)
{
    return (size_t)((r->code_bits + 7) / 8);
}

#endif /* SEEN_RUN_LAYOUT_H */
