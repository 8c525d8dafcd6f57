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
 *   [index: (nbuckets-1) entries]     w_bits + w_items bits each, byte-padded
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
 * Invariants: n >= 1; values strictly increase; the first is base and the
 * last base + span; tags < nsegs; golomb_m, nbuckets and bucket_w are the
 * canonical choices for (n, span), so one set of values has exactly one
 * encoding (replica digests compare bytes).
 */
#include "internal.h"

#include <math.h>

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

/* -------------------------------------------------------------- Golomb */

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

static uint64_t golomb_get_slow(const uint8_t *buf, uint64_t *pos, const seen__golomb *g)
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

/* The case of reader_golomb where a code is longer than the bits held: a
 * long unary part, or the ~50-bit remainders of exact 64-bit keys (every
 * lookup in an exact set of thousands of items comes here). */
static __attribute__((noinline)) slow_result reader_golomb_slow(reader rd, const seen__golomb *g)
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

/* Decode one gap from untrusted data ending at bit `end`; false if the code
 * runs past the end or overflows. */
static bool golomb_get_checked(const uint8_t *buf, uint64_t *pos, uint64_t end,
                               const seen__golomb *g, uint64_t *gap)
{
    uint64_t q = 0;
    for (;;) {
        if (*pos >= end)
            return false;
        uint64_t w = seen__peek(buf, *pos);
        unsigned valid = 64 - (unsigned)(*pos & 7);
        if (w != 0) {
            unsigned z = (unsigned)__builtin_ctzll(w);
            if (*pos + z >= end)
                return false;
            q += z;
            *pos += z + 1;
            break;
        }
        q += valid;
        *pos += valid;
    }
    if (g->b == 0) {
        *gap = q;
        return true;
    }
    if (q > UINT64_MAX / g->m)
        return false;
    if (*pos + (g->b - 1) > end)
        return false;
    uint64_t y = seen__read_bits(buf, *pos, g->b - 1);
    uint64_t r;
    if (y < g->short_n) {
        *pos += g->b - 1;
        r = y;
    } else {
        if (*pos + g->b > end)
            return false;
        uint64_t bit = seen__read_bits(buf, *pos + g->b - 1, 1);
        *pos += g->b;
        r = ((y << 1) | bit) - g->short_n;
        if (r >= g->m)
            return false;
    }
    uint64_t base = q * g->m;
    if (r > UINT64_MAX - base)
        return false;
    *gap = base + r;
    return true;
}

/* ---------------------------------------------------------------- tags */

/* How many base-k digits fit in a 64-bit word, and k to that power. */
static uint32_t tags_per_word(uint32_t k, uint64_t *full)
{
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

static uint64_t ipow(uint64_t k, uint32_t e)
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

/* ---------------------------------------------------------------- runs */

static uint32_t canonical_nbuckets(uint64_t n, bool fine)
{
    /* Large runs are where lookups spend their time (a point lookup decodes
     * half a bucket), and their index is a small share of what they hold.
     * Fine buckets serve the run every single add probes and rewrites. */
    uint64_t per = fine                  ? SEEN_BUCKET_ITEMS / 4
                   : n >= SEEN_LARGE_RUN ? SEEN_BUCKET_ITEMS / 2
                                         : SEEN_BUCKET_ITEMS;
    uint64_t nb = n / per;
    return nb < 2 ? 1 : (uint32_t)nb;
}

static uint64_t canonical_bucket_w(uint32_t nbuckets, uint64_t span)
{
    if (nbuckets <= 1)
        return 0;
    return (uint64_t)(((unsigned __int128)span + nbuckets) / nbuckets);
}

static uint64_t tag_words(const seen__run *r)
{
    if (r->nsegs <= 1)
        return 0;
    uint32_t g = tags_per_word(r->nsegs, NULL);
    return ((uint64_t)r->n + g - 1) / g;
}

size_t seen__run_index_bytes(const seen__run *r)
{
    uint64_t bits = (uint64_t)(r->nbuckets ? r->nbuckets - 1 : 0) * (r->w_bits + r->w_items);
    return (size_t)((bits + 7) / 8);
}

size_t seen__run_tag_bytes(const seen__run *r)
{
    return (size_t)tag_words(r) * 8;
}

static size_t codes_offset(const seen__run *r)
{
    return (size_t)r->nsegs * sizeof(uint32_t) + seen__run_index_bytes(r) + seen__run_tag_bytes(r);
}

size_t seen__run_mem_size(const seen__run *r)
{
    return codes_offset(r) + (size_t)((r->code_bits + 7) / 8) + SEEN_RUN_PAD;
}

const uint32_t *seen__run_segs(const seen__run *r)
{
    return (const uint32_t *)(const void *)r->mem;
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
    unsigned wsum = r->w_bits + r->w_items;
    uint64_t at = (uint64_t)(j - 1) * wsum;
    uint64_t fb = seen__read_bits(idx, at, r->w_bits);
    uint64_t fi = seen__read_bits(idx, at + r->w_bits, r->w_items);
    *bit = (uint64_t)((int64_t)on_line(sl_bits, j) + r->idx_min_bits + (int64_t)fb);
    *item = (uint64_t)((int64_t)on_line(sl_items, j) + r->idx_min_items + (int64_t)fi);
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

void seen__run_release(seen__run *r)
{
    seen__free(r->mem);
    seen__free(r->tail);
    memset(r, 0, sizeof *r);
}

static size_t code_bytes(const seen__run *r)
{
    return (size_t)((r->code_bits + 7) / 8);
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
} tag_source;

static seen_err run_assemble(seen__run *r, const uint64_t *offs, const uint64_t *firsts,
                             const uint32_t *seg_ids, const uint16_t *tags,
                             const tag_source *old_tags, const uint8_t *codes)
{
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

    r->mem = seen__calloc(1, seen__run_mem_size(r));
    if (r->mem == NULL)
        return SEEN_ERR_NOMEM;
    memcpy(r->mem, seg_ids, (size_t)r->nsegs * sizeof(uint32_t));
    uint8_t *idx = r->mem + (size_t)r->nsegs * sizeof(uint32_t);
    if (r->w_bits + r->w_items > 0) {
        seen__bitw iw = {.buf = idx, .bits = 0};
        for (uint32_t j = 1; j < r->nbuckets; j++) {
            int64_t db = (int64_t)offs[j] - (int64_t)on_line(sl_bits, j);
            int64_t di = (int64_t)firsts[j] - (int64_t)on_line(sl_items, j);
            seen__bitw_put(&iw, (uint64_t)(db - bmin), r->w_bits);
            seen__bitw_put(&iw, (uint64_t)(di - imin), r->w_items);
        }
    }
    if (r->nsegs > 1) {
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

    seen__golomb g;
    seen__golomb_init(&g, r.golomb_m);
    seen__divider mdiv, bdiv;
    seen__divider_init(&mdiv, r.golomb_m);
    seen__divider_init(&bdiv, r.bucket_w);
    uint64_t *offs = seen__malloc(((size_t)r.nbuckets + 1) * 2 * sizeof *offs);
    acc_writer w = {0};
    /* A code takes about b + 1.5 bits; reserve generously, grow rarely. */
    uint64_t est = (uint64_t)n * (g.b + 3) + 128;
    if (offs == NULL || !aw_reserve(&w, est)) {
        seen__free(offs);
        seen__free(w.buf);
        return SEEN_ERR_NOMEM;
    }
    uint64_t *firsts = offs + r.nbuckets + 1;

    uint32_t cur_bucket = 0;
    uint64_t prev = 0;
    bool first = true;
    offs[0] = 0;
    firsts[0] = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = vals[i];
        uint32_t j = r.nbuckets > 1 ? (uint32_t)seen__div(&bdiv, v - r.base) : 0;
        while (cur_bucket < j) {
            cur_bucket++;
            offs[cur_bucket] = aw_bits(&w);
            firsts[cur_bucket] = i;
            first = true;
        }
        uint64_t gap = first ? v - (r.base + (uint64_t)j * r.bucket_w) : v - prev - 1;
        uint64_t q = g.m > 1 ? seen__div(&mdiv, gap) : gap;
        if (w.byte + (q + 130) / 8 + 16 > w.cap && !aw_reserve(&w, q + 130)) {
            seen__free(offs);
            seen__free(w.buf);
            return SEEN_ERR_NOMEM;
        }
        golomb_put(&w, &g, &mdiv, gap);
        prev = v;
        first = false;
    }
    while (cur_bucket < r.nbuckets) {
        cur_bucket++;
        offs[cur_bucket] = aw_bits(&w);
        firsts[cur_bucket] = n;
    }
    r.code_bits = aw_bits(&w);
    seen_err err = run_assemble(&r, offs, firsts, seg_ids, tags, NULL, w.buf);
    seen__free(offs);
    seen__free(w.buf);
    if (err != SEEN_OK)
        return err;
    *out = r;
    return SEEN_OK;
}

static void decode_tags(const seen__run *r, uint16_t *tags);

void seen__run_decode(const seen__run *r, uint64_t *vals, uint16_t *tags)
{
    seen__golomb g;
    seen__golomb_init(&g, r->golomb_m);
    uint64_t sl_bits = slope(r->code_bits, r->nbuckets), sl_items = slope(r->n, r->nbuckets);
    size_t k = 0;
    uint64_t pos, end, it;
    bucket_start(r, sl_bits, sl_items, 0, &pos, &it);
    for (uint32_t j = 0; j < r->nbuckets; j++) {
        bucket_start(r, sl_bits, sl_items, j + 1, &end, &it);
        if (pos == end)
            continue;
        reader rd;
        uint64_t org;
        const uint8_t *codes = bucket_codes(r, pos, &org);
        reader_init(&rd, codes, pos - org);
        unsigned used = 0;
        uint64_t left = end - pos;
        uint64_t v = r->base + (uint64_t)j * r->bucket_w + reader_golomb(&rd, &g, &used);
        left -= used;
        vals[k++] = v;
        while (left > 0) {
            v = v + 1 + reader_golomb(&rd, &g, &used);
            left -= used;
            vals[k++] = v;
        }
        pos = end;
    }
    decode_tags(r, tags);
}

/*
 * Removing a few values from a large run.  Only the buckets holding them
 * are decoded and encoded again; every other bucket's codes are copied
 * bit for bit (a bucket's codes depend only on its own values, its base
 * and the Golomb parameter, which the run keeps), and the index and tags
 * are rebuilt from what is known.  A delete from a 1M-item run costs a
 * copy of its bits, not a decode and an encode of every value.
 */
seen_err seen__run_without(seen__run *out, const seen__run *r, const uint64_t *vals, size_t k,
                           uint64_t *removed_per_tag, size_t *removed, bool *applies)
{
    *removed = 0;
    *applies = false;
    seen__golomb g;
    seen__golomb_init(&g, r->golomb_m);
    seen__divider mdiv;
    seen__divider_init(&mdiv, r->golomb_m);
    uint64_t sl_bits = slope(r->code_bits, r->nbuckets), sl_items = slope(r->n, r->nbuckets);
    uint64_t *offs = seen__malloc(((size_t)r->nbuckets + 1) * 4 * sizeof *offs);
    uint8_t *skip = seen__calloc(r->n, 1);
    uint16_t *tags = r->nsegs > 1 ? seen__malloc((size_t)r->n * sizeof *tags) : NULL;
    uint64_t *bucket = NULL;
    acc_writer w = {0};
    seen_err err = SEEN_ERR_NOMEM;
    if (offs == NULL || skip == NULL || (r->nsegs > 1 && tags == NULL))
        goto done;
    uint64_t *firsts = offs + r->nbuckets + 1, *noffs = firsts + r->nbuckets + 1,
             *nfirsts = noffs + r->nbuckets + 1;
    for (uint32_t j = 0; j <= r->nbuckets; j++)
        bucket_start(r, sl_bits, sl_items, j, &offs[j], &firsts[j]);
    size_t bucket_cap = 0;
    if (!aw_reserve(&w, r->code_bits + 64))
        goto done;
    size_t vi = 0, gone = 0;
    for (uint32_t j = 0; j < r->nbuckets; j++) {
        noffs[j] = aw_bits(&w);
        nfirsts[j] = firsts[j] - gone;
        /* The bucket's values lie in [lo, top]. */
        uint64_t lo = r->base + (uint64_t)j * r->bucket_w;
        uint64_t top = j + 1 < r->nbuckets ? lo + r->bucket_w - 1 : r->base + r->span;
        while (vi < k && vals[vi] < lo)
            vi++;
        uint64_t org;
        const uint8_t *codes = bucket_codes(r, offs[j], &org);
        size_t cnt = (size_t)(firsts[j + 1] - firsts[j]);
        if (vi == k || vals[vi] > top || cnt == 0) {
            /* Untouched: its bits as they are. */
            for (uint64_t b = offs[j]; b < offs[j + 1]; b += 56) {
                unsigned take = offs[j + 1] - b < 56 ? (unsigned)(offs[j + 1] - b) : 56;
                aw_put(&w, seen__read_bits(codes, b - org, take), take);
            }
            continue;
        }
        if (cnt > bucket_cap) {
            seen__free(bucket);
            bucket_cap = cnt;
            bucket = seen__malloc(cnt * sizeof *bucket);
            if (bucket == NULL)
                goto done;
        }
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
            if (bi < cnt && bucket[bi] == vals[vi]) {
                uint64_t item = firsts[j] + bi;
                if (item == 0 || item + 1 == r->n) {
                    err = SEEN_OK; /* the run's ends move: not this way */
                    goto done;
                }
                skip[item] = 1;
                gone++;
            }
            vi++;
        }
        uint64_t prev = 0;
        bool first = true;
        for (size_t i = 0; i < cnt; i++) {
            if (skip[firsts[j] + i])
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
    bool fine = r->nbuckets == canonical_nbuckets(n2, true);
    if (r->nbuckets != canonical_nbuckets(n2, false) && !fine)
        goto done; /* the bucket count must change: rebuild */
    if (tags) {
        decode_tags(r, tags);
        uint64_t *left = seen__calloc(r->nsegs, sizeof *left);
        if (left == NULL) {
            err = SEEN_ERR_NOMEM;
            goto done;
        }
        for (size_t i = 0; i < r->n; i++)
            left[tags[i]] += !skip[i];
        bool all_used = true;
        for (uint32_t t = 0; t < r->nsegs; t++)
            all_used &= left[t] > 0;
        seen__free(left);
        if (!all_used)
            goto done; /* a segment would be named without values: rebuild */
    }
    seen__run nr = *r;
    nr.mem = NULL;
    nr.tail = NULL;
    nr.tail_bit = 0;
    nr.n = (uint32_t)n2;
    nr.code_bits = noffs[r->nbuckets];
    tag_source ts = {tags, skip, r->n};
    err = run_assemble(&nr, noffs, nfirsts, seen__run_segs(r), NULL, tags ? &ts : NULL, w.buf);
    if (err != SEEN_OK)
        goto done;
    for (size_t i = 0; i < r->n; i++)
        if (skip[i])
            removed_per_tag[tags ? tags[i] : 0]++;
    *out = nr;
    *removed = gone;
    *applies = true;
done:
    seen__free(offs);
    seen__free(skip);
    seen__free(tags);
    seen__free(bucket);
    seen__free(w.buf);
    return err;
}

static void decode_tags(const seen__run *r, uint16_t *tags)
{
    if (r->nsegs <= 1) {
        memset(tags, 0, (size_t)r->n * sizeof *tags);
        return;
    }
    seen__divider kd;
    seen__divider_init(&kd, r->nsegs);
    const uint8_t *tw = r->mem + (size_t)r->nsegs * sizeof(uint32_t) + seen__run_index_bytes(r);
    uint32_t per = tags_per_word(r->nsegs, NULL);
    for (size_t i = 0; i < r->n; i += per) {
        uint64_t word = seen__load64le(tw + (i / per) * 8);
        size_t end_i = i + per < r->n ? i + per : r->n;
        for (size_t t = i; t < end_i; t++) {
            uint64_t q = seen__div(&kd, word);
            tags[t] = (uint16_t)(word - q * r->nsegs);
            word = q;
        }
    }
}

seen_err seen__run_validate(const seen__run *r)
{
    if (r->n == 0 || r->nsegs == 0 || r->nsegs > SEEN_MAX_SEGMENTS || r->mem == NULL)
        return CORRUPT;
    if (r->span > UINT64_MAX - r->base || (uint64_t)r->n - 1 > r->span)
        return CORRUPT;
    /* Any Golomb parameter decodes; the writer's choice is canonical, but
     * sets written with another (older) choice of it still load. */
    if (r->golomb_m == 0 || r->golomb_m > SEEN_MAX_GOLOMB_M ||
        (r->nbuckets != canonical_nbuckets(r->n, false) &&
         r->nbuckets != canonical_nbuckets(r->n, true)) ||
        r->bucket_w != canonical_bucket_w(r->nbuckets, r->span) || r->w_bits > 62 ||
        r->w_items > 40 ||
        (r->nbuckets == 1 && (r->w_bits | r->w_items | r->idx_min_bits | r->idx_min_items)))
        return CORRUPT;
    const int64_t lim = INT64_C(1) << 61;
    if (r->idx_min_bits < -lim || r->idx_min_bits > lim || r->idx_min_items < -lim ||
        r->idx_min_items > lim)
        return CORRUPT;
    /* Each value needs at least one bit of code. */
    if (r->code_bits < (uint64_t)r->n || r->code_bits > (UINT64_C(1) << 58))
        return CORRUPT;

    /* Tags: every word a valid base-k number, nothing past the last item. */
    if (r->nsegs > 1) {
        const uint8_t *tw = r->mem + (size_t)r->nsegs * sizeof(uint32_t) + seen__run_index_bytes(r);
        uint64_t full;
        uint32_t per = tags_per_word(r->nsegs, &full);
        uint64_t words = tag_words(r);
        for (uint64_t wi = 0; wi < words; wi++) {
            uint64_t word = seen__load64le(tw + wi * 8);
            uint64_t digits = (uint64_t)r->n - wi * per;
            uint64_t limit = digits >= per ? full : ipow(r->nsegs, (uint32_t)digits);
            if (word >= limit)
                return CORRUPT;
        }
    }

    /* Bucket starts: checked arithmetic, as the index is untrusted. */
    uint64_t sl_bits = slope(r->code_bits, r->nbuckets), sl_items = slope(r->n, r->nbuckets);
    const uint8_t *idx = r->mem + (size_t)r->nsegs * sizeof(uint32_t);
    unsigned wsum = r->w_bits + r->w_items;
    uint64_t prev_bit = 0, prev_item = 0;
    for (uint32_t j = 1; j <= r->nbuckets; j++) {
        uint64_t b, it;
        if (j == r->nbuckets) {
            b = r->code_bits;
            it = r->n;
        } else {
            uint64_t at = (uint64_t)(j - 1) * wsum;
            int64_t ob = (int64_t)on_line(sl_bits, j) + r->idx_min_bits +
                         (int64_t)seen__read_bits(idx, at, r->w_bits);
            int64_t oi = (int64_t)on_line(sl_items, j) + r->idx_min_items +
                         (int64_t)seen__read_bits(idx, at + r->w_bits, r->w_items);
            if (ob < 0 || oi < 0)
                return CORRUPT;
            b = (uint64_t)ob;
            it = (uint64_t)oi;
        }
        if (b < prev_bit || b > r->code_bits || it < prev_item || it > r->n)
            return CORRUPT;
        prev_bit = b;
        prev_item = it;
    }

    seen__golomb g;
    seen__golomb_init(&g, r->golomb_m);
    uint64_t count = 0, last = 0;
    bool any = false;
    for (uint32_t j = 0; j < r->nbuckets; j++) {
        uint64_t pos, end, it0, it1;
        bucket_start(r, sl_bits, sl_items, j, &pos, &it0);
        bucket_start(r, sl_bits, sl_items, j + 1, &end, &it1);
        uint64_t lo = r->base + (uint64_t)j * r->bucket_w; /* <= base+span: checked below */
        if (j > 0 && (r->bucket_w == 0 || (uint64_t)j > r->span / r->bucket_w) && pos != end)
            return CORRUPT;
        bool first = true;
        uint64_t v = 0, in_bucket = 0, org = 0;
        const uint8_t *codes = pos < end ? bucket_codes(r, pos, &org) : NULL;
        pos -= org;
        end -= org;
        while (pos < end) {
            uint64_t gap;
            if (!golomb_get_checked(codes, &pos, end, &g, &gap))
                return CORRUPT;
            if (first) {
                if (gap > UINT64_MAX - lo)
                    return CORRUPT;
                v = lo + gap;
            } else {
                if (v == UINT64_MAX || gap > UINT64_MAX - v - 1)
                    return CORRUPT;
                v = v + 1 + gap;
            }
            if (v - r->base > r->span)
                return CORRUPT;
            if (r->nbuckets > 1 && (v - r->base) / r->bucket_w != j)
                return CORRUPT;
            if ((any && v <= last) || (!any && v != r->base))
                return CORRUPT;
            last = v;
            any = true;
            first = false;
            in_bucket++;
            if (++count > r->n)
                return CORRUPT;
        }
        if (pos != end || in_bucket != it1 - it0)
            return CORRUPT;
    }
    if (count != r->n || last != r->base + r->span)
        return CORRUPT;
    return SEEN_OK;
}

/* ---------------------------------------------------------------- lookup */

/* The tag of the run's item number `item`; per = tags_per_word(nsegs). */
static int tag_at(const seen__run *r, uint32_t per, uint64_t item)
{
    if (r->nsegs <= 1)
        return 0;
    uint64_t wi = item / per;
    const uint8_t *tw = r->mem + (size_t)r->nsegs * sizeof(uint32_t) + seen__run_index_bytes(r);
    uint64_t word = seen__load64le(tw + wi * 8) / ipow(r->nsegs, (uint32_t)(item - wi * per));
    return (int)(word % r->nsegs);
}

void seen__cursor_init(seen__cursor *cur, const seen__run *r)
{
    memset(cur, 0, sizeof *cur);
    cur->r = r;
    seen__golomb_init(&cur->g, r->golomb_m);
    seen__divider_init(&cur->bucket_div, r->bucket_w);
    seen__divider_init(&cur->tag_div, r->nsegs);
    cur->codes = r->mem + codes_offset(r);
    cur->line_bits = slope(r->code_bits, r->nbuckets);
    cur->line_items = slope(r->n, r->nbuckets);
    cur->tags_per_word = r->nsegs > 1 ? tags_per_word(r->nsegs, NULL) : 0;
    cur->nbuf2 = UINT32_MAX;
}

void seen__cursor_expect(seen__cursor *cur, size_t n)
{
    /* More candidates than buckets: nearly every bucket will be visited. */
    cur->pairs = n >= cur->r->nbuckets;
}

/* Where bucket j's codes are and how many items it holds. */
static void bucket_range(const seen__cursor *cur, uint32_t j, uint64_t *pos, uint64_t *first,
                         uint64_t *count)
{
    uint64_t end, next;
    bucket_start(cur->r, cur->line_bits, cur->line_items, j, pos, first);
    bucket_start(cur->r, cur->line_bits, cur->line_items, j + 1, &end, &next);
    *count = next - *first;
}

/* Decode bucket j whole into cur->buf (and, walking densely, bucket j+1
 * into cur->buf2 in the same loop: two independent decode chains, ~8%
 * faster batch queries); false if bucket j has too many items (skewed
 * exact keys): then the incremental path is used. */
static bool cursor_fill(seen__cursor *cur, uint32_t j)
{
    const seen__run *r = cur->r;
    if (cur->nbuf2 != UINT32_MAX && cur->next_bucket == j) {
        /* Decoded with the previous bucket. */
        memcpy(cur->buf, cur->buf2, (size_t)cur->nbuf2 * sizeof *cur->buf);
        cur->nbuf = cur->nbuf2;
        cur->buf_first = cur->buf2_first;
        cur->ibuf = 0;
        cur->nbuf2 = UINT32_MAX;
        return true;
    }
    cur->nbuf2 = UINT32_MAX;
    uint64_t pa, fa, na, pb = 0, fb = 0, nb = 0;
    bucket_range(cur, j, &pa, &fa, &na);
    if (na > SEEN_CURSOR_BUF)
        return false;
    bool two = cur->pairs && j + 1 < r->nbuckets;
    if (two) {
        bucket_range(cur, j + 1, &pb, &fb, &nb);
        two = nb > 0 && nb <= SEEN_CURSOR_BUF;
    }
    cur->nbuf = (uint32_t)na;
    cur->ibuf = 0;
    cur->buf_first = fa;
    const seen__golomb g = cur->g;
    reader ra, rb;
    unsigned used;
    uint64_t xa = 0, xb, k = 0;
    uint64_t org;
    if (na) {
        const uint8_t *codes = bucket_codes(r, pa, &org);
        reader_init(&ra, codes, pa - org);
        xa = r->base + (uint64_t)j * r->bucket_w + reader_golomb(&ra, &g, &used);
        cur->buf[0] = xa;
        k = 1;
    }
    if (two) {
        const uint8_t *codes = bucket_codes(r, pb, &org);
        reader_init(&rb, codes, pb - org);
        xb = r->base + (uint64_t)(j + 1) * r->bucket_w + reader_golomb(&rb, &g, &used);
        cur->buf2[0] = xb;
        uint64_t i = 1;
        for (; i < nb && k < na; i++, k++) {
            xa = xa + 1 + reader_golomb(&ra, &g, &used);
            xb = xb + 1 + reader_golomb(&rb, &g, &used);
            cur->buf[k] = xa;
            cur->buf2[i] = xb;
        }
        for (; i < nb; i++) {
            xb = xb + 1 + reader_golomb(&rb, &g, &used);
            cur->buf2[i] = xb;
        }
        cur->nbuf2 = (uint32_t)nb;
        cur->buf2_first = fb;
        cur->next_bucket = j + 1;
    }
    for (; k < na; k++) {
        xa = xa + 1 + reader_golomb(&ra, &g, &used);
        cur->buf[k] = xa;
    }
    return true;
}

int seen__cursor_find(seen__cursor *cur, uint64_t v)
{
    const seen__run *r = cur->r;
    if (v < r->base || v - r->base > r->span)
        return -1;
    uint32_t j = r->nbuckets > 1 ? (uint32_t)seen__div(&cur->bucket_div, v - r->base) : 0;
    if (cur->started && j == cur->bucket && cur->nbuf != UINT32_MAX) {
        uint32_t k = cur->ibuf;
        while (k < cur->nbuf && cur->buf[k] < v)
            k++;
        cur->ibuf = k;
        if (k == cur->nbuf || cur->buf[k] != v)
            return -1;
        cur->item = cur->buf_first + k;
        return tag_at(r, cur->tags_per_word, cur->item);
    }
    if (!cur->started || j != cur->bucket) {
        if (!cur->stepwise && cursor_fill(cur, j)) {
            cur->started = true;
            cur->bucket = j;
            return seen__cursor_find(cur, v);
        }
        cur->nbuf = UINT32_MAX; /* this bucket goes incrementally */
        cur->started = true;
        cur->bucket = j;
        uint64_t first_item, dummy;
        bucket_start(r, cur->line_bits, cur->line_items, j, &cur->pos, &first_item);
        bucket_start(r, cur->line_bits, cur->line_items, j + 1, &cur->end, &dummy);
        cur->have_cur = false;
        if (cur->pos == cur->end)
            return -1;
        uint64_t org;
        cur->codes = bucket_codes(r, cur->pos, &org);
        cur->pos -= org; /* positions from here on are within cur->codes */
        cur->end -= org;
        cur->cur = r->base + (uint64_t)j * r->bucket_w + golomb_get(cur->codes, &cur->pos, &cur->g);
        cur->item = first_item;
        cur->have_cur = true;
    }
    if (!cur->have_cur)
        return -1;
    /* The hot loop keeps its state in locals (not through cur). */
    uint64_t x = cur->cur, pos = cur->pos, item = cur->item;
    if (x < v) {
        if (pos >= cur->end) {
            cur->have_cur = false;
            return -1;
        }
        const seen__golomb g = cur->g;
        reader rd;
        reader_init(&rd, cur->codes, pos);
        uint64_t left = cur->end - pos;
        unsigned used = 0;
        do {
            if (left == 0) {
                cur->pos = cur->end;
                cur->have_cur = false;
                return -1;
            }
            x = x + 1 + reader_golomb(&rd, &g, &used);
            left -= used;
            item++;
        } while (x < v);
        pos = cur->end - left;
    }
    cur->cur = x;
    cur->pos = pos;
    cur->item = item;
    return x == v ? tag_at(r, cur->tags_per_word, cur->item) : -1;
}

void seen__run_match(const seen__run *r, const uint64_t *vals, size_t n, int32_t *tags)
{
    /* A batch walk: for each bucket holding candidates, decode it whole
     * and find each candidate in it, scanning forward from the previous
     * one. */
    seen__cursor cur;
    seen__cursor_init(&cur, r);
    seen__cursor_expect(&cur, n);
    size_t i = 0;
    while (i < n && vals[i] < r->base)
        tags[i++] = -1;
    const bool tagged = r->nsegs > 1;
    while (i < n && vals[i] - r->base <= r->span) {
        uint32_t j = r->nbuckets > 1 ? (uint32_t)seen__div(&cur.bucket_div, vals[i] - r->base) : 0;
        /* The candidates of bucket j: offsets from base up to `last`. */
        uint64_t last = r->span;
        if (j + 1 < r->nbuckets) {
            unsigned __int128 end = (unsigned __int128)(j + 1) * r->bucket_w;
            if (end - 1 < last)
                last = (uint64_t)(end - 1);
        }
        size_t e = i + 1;
        while (e < n && vals[e] - r->base <= last)
            e++;
        uint64_t pos, first, count;
        bucket_range(&cur, j, &pos, &first, &count);
        /* A few candidates in a large bucket: decode only up to the last. */
        cur.stepwise = (e - i) * SEEN_STEPWISE_RATIO < count;
        if (cur.stepwise || !cursor_fill(&cur, j)) {
            /* Also a bucket too large to decode whole (skewed exact keys). */
            cur.started = false;
            for (size_t c = i; c < e; c++)
                tags[c] = seen__cursor_find(&cur, vals[c]);
            cur.started = false;
            i = e;
            continue;
        }
        /* Past the values, sentinels no candidate is below: the scan needs
         * no bounds check. */
        uint64_t *buf = cur.buf;
        const size_t nb = cur.nbuf;
        for (size_t t = 0; t < SEEN_CURSOR_PAD; t++)
            buf[nb + t] = UINT64_MAX;
        size_t c = i, k = 0;
        if (e - i >= nb) {
            /* More candidates than values: most steps skip none. */
            for (; c < e; c++) {
                const uint64_t v = vals[c];
                while (buf[k] < v)
                    k++;
                tags[c] = k < nb && buf[k] == v ? (int32_t)k : -1;
            }
        } else {
            for (; c < e; c++) {
                const uint64_t v = vals[c];
                /* Skip eight values at a time, then count the values below
                 * v among the next eight: no branch depends on where v
                 * falls among them. */
                while (buf[k + 7] < v)
                    k += 8;
                k += (size_t)(buf[k] < v) + (buf[k + 1] < v) + (buf[k + 2] < v) + (buf[k + 3] < v) +
                     (buf[k + 4] < v) + (buf[k + 5] < v) + (buf[k + 6] < v) + (buf[k + 7] < v);
                tags[c] = k < nb && buf[k] == v ? (int32_t)k : -1;
            }
        }
        for (; c < e; c++)
            tags[c] = -1;
        if (tagged) {
            for (c = i; c < e; c++)
                if (tags[c] >= 0)
                    tags[c] = tag_at(r, cur.tags_per_word, cur.buf_first + (uint64_t)tags[c]);
        } else {
            for (c = i; c < e; c++)
                tags[c] = tags[c] >= 0 ? 0 : -1;
        }
        i = e;
    }
    while (i < n)
        tags[i++] = -1;
}

/* ---------------------------------------------------------- point lookups */

/* Per-run state of seen__run_lookup_many. */
typedef struct probe {
    reader rd;
    seen__golomb g;
    uint64_t x, target, left, item;
    const seen__run *r;
    int result; /* tag, -1 absent, -2 still searching */
} probe;

static void probe_start(probe *p, const seen__run *r, uint64_t v)
{
    p->r = r;
    p->result = -1;
    if (v < r->base || v - r->base > r->span)
        return;
    /* One division: a reciprocal pays off only over many candidates. */
    uint32_t j = r->nbuckets > 1 ? (uint32_t)((v - r->base) / r->bucket_w) : 0;
    uint64_t sl_bits = slope(r->code_bits, r->nbuckets), sl_items = slope(r->n, r->nbuckets);
    uint64_t pos, end, dummy;
    bucket_start(r, sl_bits, sl_items, j, &pos, &p->item);
    bucket_start(r, sl_bits, sl_items, j + 1, &end, &dummy);
    if (pos == end)
        return;
    seen__golomb_init(&p->g, r->golomb_m);
    uint64_t org;
    const uint8_t *codes = bucket_codes(r, pos, &org);
    reader_init(&p->rd, codes, pos - org);
    unsigned used;
    p->x = r->base + (uint64_t)j * r->bucket_w + reader_golomb(&p->rd, &p->g, &used);
    p->left = end - pos - used;
    p->target = v;
    p->result = -2;
}

/* One decode step; false once the probe has its answer. */
static inline __attribute__((always_inline)) bool probe_step(probe *p)
{
    if (p->x >= p->target) {
        if (p->x != p->target)
            p->result = -1;
        else
            p->result =
                p->r->nsegs > 1 ? tag_at(p->r, tags_per_word(p->r->nsegs, NULL), p->item) : 0;
        return false;
    }
    if (p->left == 0) {
        p->result = -1;
        return false;
    }
    unsigned used;
    p->x = p->x + 1 + reader_golomb(&p->rd, &p->g, &used);
    p->left -= used;
    p->item++;
    return true;
}

void seen__run_lookup_many(const seen__run *const *runs, const uint64_t *vals, size_t k, int *tags)
{
    /* Decoding a bucket is a chain of dependent steps; decoding several
     * runs' buckets in lockstep lets the CPU overlap the chains. */
    probe p[SEEN_LOOKUP_MANY_MAX];
    if (k > SEEN_LOOKUP_MANY_MAX)
        k = SEEN_LOOKUP_MANY_MAX;
    for (size_t i = 0; i < k; i++)
        probe_start(&p[i], runs[i], vals[i]);
    if (k == 2) {
        bool a = p[0].result == -2, b = p[1].result == -2;
        while (a && b) {
            a = probe_step(&p[0]);
            b = probe_step(&p[1]);
        }
        while (a)
            a = probe_step(&p[0]);
        while (b)
            b = probe_step(&p[1]);
    } else {
        for (size_t i = 0; i < k; i++)
            while (p[i].result == -2 && probe_step(&p[i]))
                ;
    }
    for (size_t i = 0; i < k; i++)
        tags[i] = p[i].result;
}
