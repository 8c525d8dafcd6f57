/*
 * run_ef.c — runs coded Elias-Fano: the layout of large compact runs (and
 * of large exact runs of dense integer ids), in which a lookup reads a few
 * words wherever its value lies instead of decoding a Golomb bucket up to
 * it.  Past 1,000 lines on purpose: the shape, the lookups (and the ranks
 * and samples the edits count) at three instruction levels, and the edits
 * all work on the same private reading of the bits (uppers, lows,
 * samples), which a split would have to expose.
 *
 * The n values of a run, as offsets x_i = v_i - base (x_0 = 0, strictly
 * increasing, x_{n-1} = span), are cut at L low bits (ef.low: the L that
 * makes n*L + (span >> L) smallest, seen__ef_low_bits):
 *
 *   uppers  n + H bits, H = span >> L: value i sets bit (x_i >> L) + i,
 *           so the values whose high part is h follow the h-th zero; zero
 *           bits after them up to a multiple of 64 (whole words);
 *   lows    x_i & (2^L - 1) at bit i*L after the uppers.
 *
 * code_bits = roundup64(n + H) + n*L.  Elias-Fano needs about log2(span/n)
 * + 2 bits per value, 0.4-0.5 bit more than Golomb codes of the same
 * values, but no bucket index.  What it needs instead is a way to find
 * the h-th zero: samples, every 2^ef.shift-th zero's end position in the
 * uppers, ef.wsample bits each, about SEEN_EF_SAMPLE_VALUES values apart
 * (~0.07 bit per value).  They stand where a Golomb run keeps its index
 * (mem: segment ids, samples, tags, codes, padding) and are not stored in
 * the serialized form: they follow from the codes, so a loader rebuilds
 * them and never trusts them.  Tags are as in a Golomb run (run.c), but a
 * power-of-two alphabet fills its words (run_tags_per_word).
 *
 * Split (seen__run_split): as a Golomb run's codes may end in a second
 * block, so may the lows, cut at a value whose low starts on a byte; the
 * uppers always stay in the first block.
 *
 * A lookup of x: the sample before high part h = x >> L, popcounts over
 * whole words to skip the zeros left to the h-th, then the lows of the
 * (few) values of high part h.  Tags are as in a Golomb run (run.c).
 *
 * Edits copy the run's bits around the values that change: a flush adds
 * each new value's one bit and low bits where they go (seen__ef_with), a
 * delete takes them out (seen__ef_without); base, span and L stay, or the
 * run is rebuilt.
 */
#include "run_write.h"

#include <stdatomic.h>

/* ------------------------------------------------------------ shape */

/* Compact runs, and exact runs of dense ids (integer ids kept as they
 * are: a lookup then jumps to its value where a Golomb walk decodes up to
 * it).  Exact runs of hashed keys (~48 low bits) and of ids with far
 * outliers stay Golomb-coded, where a cut by rank codes the jumps. */
bool seen__ef_wanted(uint64_t c, size_t n, uint64_t span, unsigned shape)
{
    const unsigned mid_head = SEEN_RUN_TAKES_HEAD | SEEN_RUN_IN_MID_SET;
    const size_t least = c == 1                            ? SEEN_EF_MIN_EXACT_RUN
                         : (shape & SEEN_RUN_IN_LARGE_SET) ? SEEN_EF_MIN_LARGE_SET_RUN
                         : (shape & mid_head) == mid_head  ? SEEN_EF_MIN_LARGE_SET_RUN
                         : (shape & SEEN_RUN_TAKES_HEAD)   ? SEEN_EF_MIN_HEAD_RUN
                                                           : SEEN_EF_MIN_RUN;
    if (n < least || n > UINT32_MAX)
        return false;
    unsigned low = seen__ef_low_bits(n, span);
    return c > 1 ? low <= SEEN_EF_MAX_LOW_BITS : low <= SEEN_EF_EXACT_MAX_LOW_BITS;
}

unsigned seen__ef_low_bits(uint64_t n, uint64_t span)
{
    unsigned best = 0;
    unsigned __int128 best_cost = (unsigned __int128)span; /* L = 0 */
    for (unsigned l = 1; l < 64; l++) {
        unsigned __int128 cost = (unsigned __int128)n * l + (span >> l);
        if (cost < best_cost) {
            best_cost = cost;
            best = l;
        }
    }
    return best;
}

static inline uint64_t highs(const seen__run *r)
{
    return r->span >> r->ef.low;
}

static inline uint64_t nsamples(const seen__run *r)
{
    return highs(r) >> r->ef.shift;
}

size_t seen__ef_sample_bytes(const seen__run *r)
{
    return (size_t)((nsamples(r) * r->ef.wsample + 7) / 8);
}

seen_err seen__ef_shape(seen__run *r)
{
    if (r->n == 0 || r->nbuckets != 1 || r->idx_min_bits != 0 || r->idx_min_items != 0 ||
        r->w_bits != 0 || r->w_items != 0 || r->w_vals != 0 || r->loose_ends || r->tail != NULL ||
        r->ef.low > SEEN_EF_MAX_LOW_BITS || r->span > UINT64_MAX - r->base ||
        (uint64_t)r->n - 1 > r->span || r->ef.low != seen__ef_low_bits(r->n, r->span))
        return SEEN_ERR_FORMAT_CORRUPT;
    uint64_t h = highs(r);
    /* The canonical L keeps H below 2n + 2, so this cannot overflow. */
    if (r->code_bits != ef_ups_bits(r) + (uint64_t)r->n * r->ef.low ||
        r->code_bits > SEEN_MAX_CODE_BITS)
        return SEEN_ERR_FORMAT_CORRUPT;
    /* Samples 2^s zeros apart, with 2^s * n / H (values between them)
     * at most SEEN_EF_SAMPLE_VALUES. */
    unsigned s = 0;
    while (s < 62 &&
           ((unsigned __int128)r->n << (s + 1)) <= (unsigned __int128)SEEN_EF_SAMPLE_VALUES * h)
        s++;
    r->ef.shift = (uint8_t)s;
    r->ef.wsample = (uint8_t)seen__bitlen(r->n + h);
    return SEEN_OK;
}

/* ------------------------------------------------------------ words */

static inline const uint8_t *ef_codes(const seen__run *r)
{
    return r->mem + codes_offset(r);
}

static inline uint64_t up_word(const uint8_t *up, uint64_t k)
{
    return seen__load64le(up + 8 * k);
}

/* Where a run's lows are: from bit `ups` of `codes`, the part past bit
 * `cut` (byte-aligned; UINT64_MAX when whole) in `tail`. */
typedef struct lows {
    const uint8_t *codes, *tail;
    uint64_t ups, cut;
    unsigned l;
} lows;

static inline lows lows_of(const seen__run *r)
{
    return (lows){ef_codes(r), r->tail, ef_ups_bits(r), r->tail ? r->tail_bit : UINT64_MAX,
                  r->ef.low};
}

static inline uint64_t low_at(const lows *lw, uint64_t i)
{
    /* Selects, not a branch: sparse lookups land on either side. */
    uint64_t b = lw->ups + i * lw->l;
    bool t = b >= lw->cut;
    return seen__read_bits(t ? lw->tail : lw->codes, t ? b - lw->cut : b, lw->l);
}

static inline uint64_t sample_at(const seen__run *r, uint64_t j)
{
    const uint8_t *sm = r->mem + (size_t)r->nsegs * sizeof(uint32_t);
    return j == 0 ? 0 : seen__read_bits(sm, (j - 1) * r->ef.wsample, r->ef.wsample);
}

/*
 * Counting bits and finding the k-th set bit are the whole cost of
 * skipping zeros.  x86-64's baseline has neither POPCNT nor PDEP, so the
 * lookups are compiled three times and the one the CPU runs best is
 * picked per call (a library call per word would cost more than the
 * lookup): portable, with POPCNT, and with POPCNT and a one-instruction
 * select by PDEP where PDEP is fast (not on AMD before Zen 3, where it is
 * microcoded and slower than the portable select).
 */
static inline unsigned popcount64(uint64_t w)
{
    return (unsigned)__builtin_popcountll(w);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define EF_X86 1
#include <cpuid.h>
#include <immintrin.h>

/* PDEP puts bit k of its source at w's k-th set bit. */
__attribute__((target("bmi2"))) static inline unsigned select64_pdep(uint64_t w, unsigned k)
{
    return (unsigned)__builtin_ctzll(_pdep_u64(UINT64_C(1) << k, w));
}
#else
#define EF_X86 0
static inline unsigned select64_pdep(uint64_t w, unsigned k)
{
    return seen__select64(w, k);
}
#endif

/* The k-th set bit of w (k < its count); `pdep` is a constant wherever
 * the lookups are instantiated. */
static inline __attribute__((always_inline)) unsigned select64(uint64_t w, unsigned k, bool pdep)
{
    return pdep ? select64_pdep(w, k) : seen__select64(w, k);
}

bool seen__pdep_fast_on(const char vendor[12], unsigned signature)
{
    /* AMD's families before 0x19 (Zen 3), and Hygon's (Zen 1 built under
     * licence), run PDEP in microcode: tens to hundreds of cycles. */
    if (memcmp(vendor, "AuthenticAMD", 12) != 0 && memcmp(vendor, "HygonGenuine", 12) != 0)
        return true;
    unsigned family = (signature >> 8) & 0xfu;
    if (family == 0xfu)
        family += (signature >> 20) & 0xffu;
    return family >= 0x19u;
}

/*
 * The index of the value of high part h whose low part is `want`, or -1;
 * h's values are the ones from bit p of the uppers on (none past ubits).
 * Most high parts hold 0-3 values: their lows are compared at once, so
 * where the match stands costs no branch.
 */
static inline __attribute__((always_inline)) int64_t
match_high(const lows *lw, uint64_t ubits, uint64_t p, uint64_t h, uint64_t want)
{
    uint64_t ones = (uint64_t)__builtin_ctzll(~seen__peek(lw->codes, p) | (UINT64_C(1) << 63));
    if (ones > ubits - p)
        ones = ubits - p;
    const uint64_t i = p - h;
    if (__builtin_expect(ones <= 3, 1)) {
        /* The three lows from one load where they lie in one block and
         * fit the 57 bits a load brings (lows of up to 19 bits: a third of
         * the loads, 2,000 candidates on one run of 100,000 went 35 -> 27
         * us).  Reading up to two lows past the last value stays in the
         * padding. */
        const unsigned l = lw->l;
        const uint64_t b = lw->ups + i * l;
        uint64_t l0, l1, l2;
        if (__builtin_expect(3 * l <= 57 && (b + 3 * l <= lw->cut || b >= lw->cut), 1)) {
            const bool t = b >= lw->cut;
            const uint64_t w = seen__peek(t ? lw->tail : lw->codes, t ? b - lw->cut : b);
            const uint64_t mask = (UINT64_C(1) << l) - 1;
            l0 = w & mask;
            l1 = (w >> l) & mask;
            l2 = (w >> (2 * l)) & mask;
        } else {
            l0 = low_at(lw, i);
            l1 = low_at(lw, i + 1);
            l2 = low_at(lw, i + 2);
        }
        unsigned m0 = (ones > 0) & (l0 == want), m1 = (ones > 1) & (l1 == want),
                 m2 = (ones > 2) & (l2 == want);
        return (m0 | m1 | m2) ? (int64_t)(i + m1 + 2 * m2) : -1;
    }
    for (uint64_t t = 0; p + t < ubits; t++) {
        if (t >= ones && !((up_word(lw->codes, (p + t) >> 6) >> ((p + t) & 63)) & 1))
            break;
        uint64_t lo = low_at(lw, i + t);
        if (lo >= want)
            return lo == want ? (int64_t)(i + t) : -1;
    }
    return -1;
}

/* Where the values of high part h start in the uppers `up`: the sample
 * before it, then past the zeros left, whole words by popcount, then a
 * select. */
static inline __attribute__((always_inline)) uint64_t
high_start(const seen__run *r, const uint8_t *up, uint64_t h, bool pdep)
{
    const uint64_t j = h >> r->ef.shift;
    uint64_t p = sample_at(r, j);
    uint64_t zeros = h - (j << r->ef.shift);
    if (zeros) {
        uint64_t k = p >> 6;
        uint64_t w = ~up_word(up, k) & (~UINT64_C(0) << (p & 63));
        unsigned z = popcount64(w);
        while (z < zeros) {
            zeros -= z;
            w = ~up_word(up, ++k);
            z = popcount64(w);
        }
        p = k * 64 + select64(w, (unsigned)zeros - 1, pdep) + 1;
    }
    return p;
}

/* The position of item x's index in the run, or -1. */
static inline __attribute__((always_inline)) int64_t ef_find_in(const seen__run *r, const lows *lw,
                                                                uint64_t x, bool pdep)
{
    const unsigned l = r->ef.low;
    const uint64_t h = x >> l;
    const uint64_t p = high_start(r, lw->codes, h, pdep);
    return match_high(lw, r->n + highs(r), p, h, x & ((UINT64_C(1) << l) - 1));
}

/* Words of the uppers a sparse walk counts ahead of the one it is in, at
 * most (seen__ef_ahead). */
#define EF_AHEAD_MAX 4u
/* Candidates a sorted walk places before it compares their lows. */
#define EF_MATCH_CHUNK 32u

/*
 * Lanes of a walk (ef_match_body): a denser walk's steps are short and
 * depend on the one before, so two side by side keep the CPU busier
 * (10,000 candidates on a 100,000-item key written live, four runs of
 * 25,000-50,000 values: 250-254 -> 237-238 us); a sparse walk's are
 * longer and already overlap, and two measured the same or slower.
 */
#define EF_LANES_DENSE 2u
#define EF_LANES_SPARSE 1u
/* Where a sorted walk stands in the uppers: word k, that word, the zeros
 * in the words before it, and the zeros in it. */
typedef struct ef_cursor {
    uint64_t k, w, zb, zw;
} ef_cursor;

static inline ef_cursor ef_cursor_start(const uint8_t *up)
{
    const uint64_t w = up_word(up, 0);
    return (ef_cursor){0, w, 0, 64 - popcount64(w)};
}

/*
 * Moves cursor cu on to high part h (not below the last one it was moved
 * to) and returns where the values of h start in the uppers.  The walk
 * keeps the word it is in and the zeros before it, so a candidate a few
 * values on costs a popcount or two and a select; one further than a
 * sample's spacing jumps to its sample instead, so a sparse batch costs
 * what lookups would.
 */
static inline __attribute__((always_inline)) uint64_t
ef_cursor_to(const seen__run *r, const uint8_t *up, uint64_t uwords, ef_cursor *cu, uint64_t h,
             unsigned ahead, bool pdep)
{
    if (h == 0)
        return 0;
    const unsigned s = r->ef.shift;
    uint64_t k = cu->k, w = cu->w, zb = cu->zb, zw = cu->zw;
    /* In a sparse batch the next candidate lies a word or a few on, as
     * often as not: a branch on how far mispredicts.  The next `ahead`
     * words are counted whatever, and the walk moves to the one holding
     * the zero by selects; only a jump further takes the branch (and the
     * samples).  In a denser batch (ahead 0) the walk mostly stays in its
     * word, and the branch predicts. */
    bool moved = false;
    if (ahead == 1) {
        /* One word on: the padding after the uppers keeps the load inside
         * the run. */
        const uint64_t w1 = up_word(up, k + 1), z1 = 64 - popcount64(w1);
        if (__builtin_expect(zb + zw + z1 >= h, 1)) {
            const uint64_t on = zb + zw < h, mk = UINT64_C(0) - on;
            k += on;
            zb += zw & mk;
            w = (w1 & mk) | (w & ~mk);
            zw = (z1 & mk) | (zw & ~mk);
            moved = true;
        }
    } else if (ahead > 1 && k + ahead < uwords) {
        /* Words k..k+ahead and the zeros before each; the target is the
         * last word with fewer zeros before it than h.  Indexing these
         * (not a chain of selects) keeps the walk's path short. */
        uint64_t ws[EF_AHEAD_MAX + 1], bs[EF_AHEAD_MAX + 2];
        ws[0] = w;
        bs[0] = zb;
        bs[1] = zb + zw;
        unsigned j = 0;
        for (unsigned a = 1; a <= ahead; a++) {
            ws[a] = up_word(up, k + a);
            bs[a + 1] = bs[a] + 64 - popcount64(ws[a]);
            j += bs[a] < h;
        }
        if (__builtin_expect(bs[ahead + 1] >= h, 1)) {
            k += j;
            w = ws[j];
            zb = bs[j];
            zw = bs[j + 1] - bs[j];
            moved = true;
        }
    }
    if (!moved && zb + zw < h) {
        uint64_t j = h >> s;
        if (j > 0 && (j << s) > zb + zw) {
            /* The (j << s)-th zero is at sample(j) - 1. */
            uint64_t at = sample_at(r, j) - 1;
            k = at >> 6;
            w = up_word(up, k);
            uint64_t below = w & ((UINT64_C(1) << (at & 63)) - 1);
            zb = (j << s) - 1 - ((at & 63) - popcount64(below));
            zw = 64 - popcount64(w);
        }
        while (zb + zw < h) {
            zb += zw;
            w = up_word(up, ++k);
            zw = 64 - popcount64(w);
        }
    }
    cu->k = k;
    cu->w = w;
    cu->zb = zb;
    cu->zw = zw;
    return k * 64 + select64(~w, (unsigned)(h - zb - 1), pdep) + 1;
}

/* The tag of the value at offset x from the run's base, or -1; the values
 * of its high part h start at bit p of the uppers. */
static inline __attribute__((always_inline)) int32_t ef_tag_at(const seen__run *r, const lows *lw,
                                                               uint32_t per, uint64_t ubits,
                                                               uint64_t p, uint64_t h, uint64_t x)
{
    const int64_t at = match_high(lw, ubits, p, h, x & ((UINT64_C(1) << r->ef.low) - 1));
    return at < 0 ? -1 : per ? tag_at(r, per, (uint64_t)at) : 0;
}

/*
 * Sorted candidates: one pass over the uppers, or two side by side
 * (`lanes`): the first half of the candidates and the second each walk
 * with a cursor of their own, so the CPU runs two chains of dependent
 * steps at once where one left it waiting.  A sparse batch goes in chunks:
 * first where each candidate's high part starts in the uppers, with a
 * prefetch of the lows it will compare; then the comparisons, whose lows
 * (a random line of a run larger than L1) have had the chunk's time to
 * arrive.  In a denser one the lows come in order, the hardware prefetches
 * them, and a chunk only costs (10,000 candidates on 100,000 items: +2%;
 * 2,000 on one run of 100,000: 36-37 -> 30-31 us).
 */
static inline __attribute__((always_inline)) void ef_match_body(const seen__run *r,
                                                                const uint64_t *vals, size_t n,
                                                                int32_t *tags, bool pdep,
                                                                unsigned ahead, unsigned lanes)
{
    const bool sparse = ahead > 0;
    const lows lw = lows_of(r);
    const uint8_t *up = lw.codes;
    const uint32_t per = r->nsegs > 1 ? run_tags_per_word(r) : 0;
    const unsigned l = r->ef.low;
    const uint64_t ubits = r->n + highs(r);
    const uint64_t uwords = (ubits + 63) / 64;
    size_t c = 0, e = n;
    for (; c < n && vals[c] < r->base; c++)
        tags[c] = -1;
    for (; e > c && vals[e - 1] - r->base > r->span; e--)
        tags[e - 1] = -1;
    /* Lane a walks [c, mid), lane b [mid, e); b holds the one left over. */
    const size_t mid = lanes == 2 ? c + (e - c) / 2 : e;
    const size_t chunk = sparse ? EF_MATCH_CHUNK / lanes : 1;
    ef_cursor ca = ef_cursor_start(up), cb = ca;
    uint64_t pa[EF_MATCH_CHUNK], pb[EF_MATCH_CHUNK];
    size_t i = c;
    while (i < mid) {
        const size_t m = mid - i < chunk ? mid - i : chunk;
        const size_t d = mid - c; /* lane b's candidate is d after lane a's */
        for (size_t j = 0; j < m; j++) {
            pa[j] = ef_cursor_to(r, up, uwords, &ca, (vals[i + j] - r->base) >> l, ahead, pdep);
            if (lanes == 2)
                pb[j] =
                    ef_cursor_to(r, up, uwords, &cb, (vals[i + j + d] - r->base) >> l, ahead, pdep);
            /* The front block's address; a low in the tail block is not
             * prefetched (a prefetch never faults). */
            if (sparse) {
                const uint64_t ha = (vals[i + j] - r->base) >> l;
                __builtin_prefetch(lw.codes + ((lw.ups + (pa[j] - ha) * l) >> 3));
                if (lanes == 2) {
                    const uint64_t hb = (vals[i + j + d] - r->base) >> l;
                    __builtin_prefetch(lw.codes + ((lw.ups + (pb[j] - hb) * l) >> 3));
                }
            }
        }
        for (size_t j = 0; j < m; j++) {
            const uint64_t xa = vals[i + j] - r->base;
            tags[i + j] = ef_tag_at(r, &lw, per, ubits, pa[j], xa >> l, xa);
            if (lanes == 2) {
                const uint64_t xb = vals[i + j + d] - r->base;
                tags[i + j + d] = ef_tag_at(r, &lw, per, ubits, pb[j], xb >> l, xb);
            }
        }
        i += m;
    }
    if (lanes == 2 && e > mid && e - mid > mid - c) {
        /* Lane b's last candidate, which lane a has no partner for. */
        const uint64_t x = vals[e - 1] - r->base;
        const uint64_t p = ef_cursor_to(r, up, uwords, &cb, x >> l, ahead, pdep);
        tags[e - 1] = ef_tag_at(r, &lw, per, ubits, p, x >> l, x);
    }
}

/*
 * A dense batch (candidates at least 1/SEEN_EF_DENSE_RATIO of the run's
 * values): the values decoded in order, a chunk at a time, and merged with
 * the candidates without a branch on where each falls, as a Golomb bucket
 * is.  A value costs a bit scan and a low part; a lookup per candidate
 * costs a few mispredicted branches, more than the values between two
 * candidates once they are that close.
 */
/* Words of the uppers a dense batch decodes per half-chunk (up to 64
 * values each). */
#define EF_HALF_WORDS 4u

/* buf[j] = base + (buf[j] | low of value first + j), j < nb: the lows read
 * in sequence, from the front block up to the cut and the tail after it. */
static inline void add_lows(const lows *lw, uint64_t base, uint64_t first, size_t nb, uint64_t *buf)
{
    const unsigned l = lw->l;
    const uint64_t mask = (UINT64_C(1) << l) - 1;
    /* The first value whose low is in the tail (the cut is at a low). */
    const uint64_t cut_i = lw->cut == UINT64_MAX || l == 0 ? UINT64_MAX : (lw->cut - lw->ups) / l;
    size_t j = 0;
    while (j < nb) {
        const uint64_t i = first + j;
        const bool in_tail = i >= cut_i;
        const uint8_t *src = in_tail ? lw->tail : lw->codes;
        uint64_t pos = in_tail ? (i - cut_i) * l : lw->ups + i * l;
        const size_t end = !in_tail && cut_i - first < nb ? (size_t)(cut_i - first) : nb;
        for (; j < end; j++, pos += l)
            buf[j] = base + (buf[j] | ((seen__load64le(src + (pos >> 3)) >> (pos & 7)) & mask));
    }
}

static inline __attribute__((always_inline)) void
ef_dense_body(const seen__run *r, const uint64_t *vals, size_t n, int32_t *tags)
{
    const lows lw = lows_of(r);
    const uint8_t *up = lw.codes;
    const uint32_t per = r->nsegs > 1 ? run_tags_per_word(r) : 0;
    const unsigned l = r->ef.low;
    const uint64_t words = (r->n + highs(r) + 63) / 64;
    uint64_t buf[2 * 64 * EF_HALF_WORDS + 8];
    uint64_t k = 0, i = 0; /* the next word of the uppers, and the values before it */
    size_t c = 0;
    for (; c < n && vals[c] < r->base; c++)
        tags[c] = -1;
    while (c < n && k < words && vals[c] - r->base <= r->span) {
        /* Two halves of EF_HALF_WORDS words each, their high parts taken
         * in lockstep: bit extraction is a chain of dependent steps, and
         * two chains run side by side.  A popcount places the second. */
        const uint64_t kb = k + EF_HALF_WORDS < words ? k + EF_HALF_WORDS : words;
        const uint64_t ke = kb + EF_HALF_WORDS < words ? kb + EF_HALF_WORDS : words;
        uint64_t na = 0, nb = 0;
        for (uint64_t q = k; q < kb; q++)
            na += popcount64(up_word(up, q));
        for (uint64_t q = kb; q < ke; q++)
            nb += popcount64(up_word(up, q));
        const uint64_t first = i;
        uint64_t ka = k, wa = up_word(up, k), kk = kb, wb = kb < words ? up_word(up, kb) : 0;
        uint64_t *ba = buf, *bb = buf + na;
        uint64_t ia = i, ib = i + na;
        const uint64_t both = na < nb ? na : nb;
        for (uint64_t t = 0; t < both; t++) {
            while (wa == 0)
                wa = up_word(up, ++ka);
            while (wb == 0)
                wb = up_word(up, ++kk);
            *ba++ = (ka * 64 + (unsigned)__builtin_ctzll(wa) - ia++) << l;
            *bb++ = (kk * 64 + (unsigned)__builtin_ctzll(wb) - ib++) << l;
            wa &= wa - 1;
            wb &= wb - 1;
        }
        for (; ia < i + na; ia++) {
            while (wa == 0)
                wa = up_word(up, ++ka);
            *ba++ = (ka * 64 + (unsigned)__builtin_ctzll(wa) - ia) << l;
            wa &= wa - 1;
        }
        for (; ib < i + na + nb; ib++) {
            while (wb == 0)
                wb = up_word(up, ++kk);
            *bb++ = (kk * 64 + (unsigned)__builtin_ctzll(wb) - ib) << l;
            wb &= wb - 1;
        }
        k = ke;
        i += na + nb;
        const size_t got = (size_t)(na + nb);
        if (got == 0)
            continue;
        add_lows(&lw, r->base, first, got, buf);
        for (size_t t = 0; t < 8; t++)
            buf[got + t] = UINT64_MAX; /* no candidate is above these */
        const uint64_t last = buf[got - 1];
        size_t at = 0;
        for (; c < n && vals[c] <= last; c++) {
            const uint64_t v = vals[c];
            while (buf[at + 7] < v)
                at += 8;
            at += (size_t)(buf[at] < v) + (buf[at + 1] < v) + (buf[at + 2] < v) +
                  (buf[at + 3] < v) + (buf[at + 4] < v) + (buf[at + 5] < v) + (buf[at + 6] < v) +
                  (buf[at + 7] < v);
            tags[c] = buf[at] != v ? -1 : per ? tag_at(r, per, first + at) : 0;
        }
    }
    for (; c < n; c++)
        tags[c] = -1;
}

/*
 * How far a walk of n sorted candidates counts ahead (ef_match_body's
 * `ahead`): 0 where they are dense enough that the walk mostly stays in
 * its word; else by the words of uppers between two candidates, in
 * tenths.  Counting a word costs a load and a popcount on the walk's
 * path, a word too far to count a mispredicted branch: 2,000 candidates
 * on one run of 100,000 values (1.8 words apart) 15.6 -> 12.1 ns each at
 * four words; on 50,000 (0.9 apart) 10.4 -> 9.5 at two; on 25,000 (0.45
 * apart) four words cost 8.6 -> 9.9, so one.
 */
#define EF_AHEAD_TWO_TENTHS 6u
#define EF_AHEAD_MAX_TENTHS 12u
unsigned seen__ef_ahead(const seen__run *r, size_t n)
{
    if ((uint64_t)n * SEEN_EF_SPARSE_RATIO > r->n)
        return 0;
    const uint64_t tenths = (r->n + highs(r) + 63) / 64 * 10;
    if (tenths < (uint64_t)n * EF_AHEAD_TWO_TENTHS)
        return 1;
    if (tenths < (uint64_t)n * EF_AHEAD_MAX_TENTHS)
        return 2;
    return EF_AHEAD_MAX;
}

/* The entry points of one instruction level: `attrs` its target, `pdep`
 * whether it selects by PDEP. */
#define EF_LEVEL(name, attrs, pdep)                                                                \
    attrs static int64_t ef_find_##name(const seen__run *r, uint64_t v)                            \
    {                                                                                              \
        const lows lw = lows_of(r);                                                                \
        return ef_find_in(r, &lw, v - r->base, pdep);                                              \
    }                                                                                              \
    attrs static void ef_match_##name(const seen__run *r, const uint64_t *vals, size_t n,          \
                                      int32_t *tags)                                               \
    {                                                                                              \
        switch (seen__ef_ahead(r, n)) {                                                            \
        case 0:                                                                                    \
            ef_match_body(r, vals, n, tags, pdep, 0, EF_LANES_DENSE);                              \
            break;                                                                                 \
        case 1:                                                                                    \
            ef_match_body(r, vals, n, tags, pdep, 1, EF_LANES_SPARSE);                             \
            break;                                                                                 \
        case 2:                                                                                    \
            ef_match_body(r, vals, n, tags, pdep, 2, EF_LANES_SPARSE);                             \
            break;                                                                                 \
        default:                                                                                   \
            ef_match_body(r, vals, n, tags, pdep, EF_AHEAD_MAX, EF_LANES_SPARSE);                  \
        }                                                                                          \
    }                                                                                              \
    attrs static void ef_dense_##name(const seen__run *r, const uint64_t *vals, size_t n,          \
                                      int32_t *tags)                                               \
    {                                                                                              \
        ef_dense_body(r, vals, n, tags);                                                           \
    }

EF_LEVEL(plain, , false)

#if EF_X86
EF_LEVEL(popcnt, __attribute__((target("popcnt"))), false)
EF_LEVEL(pdep, __attribute__((target("popcnt,bmi2"))), true)

/* The vendor string is in EBX, EDX, ECX (cpuid leaf 0), little-endian. */
static void vendor_of(unsigned b, unsigned c, unsigned d, char vendor[12])
{
    const unsigned regs[3] = {b, d, c};
    for (unsigned i = 0; i < 12; i++)
        vendor[i] = (char)((regs[i / 4] >> (8 * (i % 4))) & 0xffu);
}

static bool pdep_is_fast(void)
{
    unsigned a, b, c, d;
    char vendor[12];
    if (!__get_cpuid(0, &a, &b, &c, &d))
        return false;
    vendor_of(b, c, d, vendor);
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return false;
    return seen__pdep_fast_on(vendor, a);
}

static seen__ef_isa cpu_isa(void)
{
    /* cpuid is slow and serializing: asked once, the answer kept. */
    static _Atomic int known = -1;
    int isa = atomic_load_explicit(&known, memory_order_relaxed);
    if (isa < 0) {
        __builtin_cpu_init();
        isa = !__builtin_cpu_supports("popcnt")                  ? SEEN_EF_ISA_PLAIN
              : __builtin_cpu_supports("bmi2") && pdep_is_fast() ? SEEN_EF_ISA_PDEP
                                                                 : SEEN_EF_ISA_POPCNT;
        atomic_store_explicit(&known, isa, memory_order_relaxed);
    }
    return (seen__ef_isa)isa;
}
#else
#define ef_find_popcnt ef_find_plain
#define ef_match_popcnt ef_match_plain
#define ef_find_pdep ef_find_plain
#define ef_match_pdep ef_match_plain
#define ef_dense_popcnt ef_dense_plain
#define ef_dense_pdep ef_dense_plain
static seen__ef_isa cpu_isa(void)
{
    return SEEN_EF_ISA_PLAIN;
}
#endif

/* At most this level, whatever the CPU has (tests walk every level). */
static _Atomic int isa_cap = SEEN_EF_ISA_PDEP;

static seen__ef_isa effective_isa(void)
{
    seen__ef_isa has = cpu_isa();
    int cap = atomic_load_explicit(&isa_cap, memory_order_relaxed);
    return (int)has < cap ? has : (seen__ef_isa)cap;
}

seen__ef_isa seen__ef_isa_limit(seen__ef_isa cap)
{
    atomic_store_explicit(&isa_cap, (int)cap, memory_order_relaxed);
    return effective_isa();
}

seen__ef_isa seen__ef_isa_now(void)
{
    return effective_isa();
}

int64_t seen__ef_find(const seen__run *r, uint64_t v)
{
    if (v < r->base || v - r->base > r->span)
        return -1;
    switch (effective_isa()) {
    case SEEN_EF_ISA_PDEP:
        return ef_find_pdep(r, v);
    case SEEN_EF_ISA_POPCNT:
        return ef_find_popcnt(r, v);
    default:
        return ef_find_plain(r, v);
    }
}

void seen__ef_match(const seen__run *r, const uint64_t *vals, size_t n, int32_t *tags)
{
    const seen__ef_isa isa = effective_isa();
    const uint64_t ratio = isa == SEEN_EF_ISA_PDEP ? SEEN_EF_DENSE_RATIO_PDEP : SEEN_EF_DENSE_RATIO;
    const bool dense = (uint64_t)n * ratio >= r->n;
    switch (isa) {
    case SEEN_EF_ISA_PDEP:
        (dense ? ef_dense_pdep : ef_match_pdep)(r, vals, n, tags);
        break;
    case SEEN_EF_ISA_POPCNT:
        (dense ? ef_dense_popcnt : ef_match_popcnt)(r, vals, n, tags);
        break;
    default:
        (dense ? ef_dense_plain : ef_match_plain)(r, vals, n, tags);
    }
}
/* ------------------------------------------------------------ building */

/* The samples of r's uppers, counting zeros a word at a time.  Every edit
 * of a run counts them again, and a loaded run once: compiled with POPCNT
 * where the CPU has it (without, each count is a library call). */
static inline __attribute__((always_inline)) void ef_index_body(seen__run *r)
{
    uint64_t ns = nsamples(r);
    if (ns == 0)
        return;
    const uint8_t *up = ef_codes(r);
    uint8_t *sm = r->mem + (size_t)r->nsegs * sizeof(uint32_t);
    memset(sm, 0, seen__ef_sample_bytes(r));
    seen__bitw sw = {.buf = sm, .bits = 0};
    const uint64_t every = UINT64_C(1) << r->ef.shift;
    const uint64_t words = (r->n + highs(r) + 63) / 64;
    uint64_t next = every, zeros = 0, j = 1;
    for (uint64_t k = 0; k < words && j <= ns; k++) {
        uint64_t w = ~up_word(up, k);
        if (k == words - 1 && ((r->n + highs(r)) & 63))
            w &= (UINT64_C(1) << ((r->n + highs(r)) & 63)) - 1;
        unsigned z = popcount64(w);
        while (j <= ns && zeros + z >= next) {
            uint64_t pos = k * 64 + seen__select64(w, (unsigned)(next - zeros - 1)) + 1;
            seen__bitw_put(&sw, pos, r->ef.wsample);
            j++;
            next += every;
        }
        zeros += z;
    }
}

static void ef_index_plain(seen__run *r)
{
    ef_index_body(r);
}

#if EF_X86
__attribute__((target("popcnt"))) static void ef_index_popcnt(seen__run *r)
{
    ef_index_body(r);
}
#else
#define ef_index_popcnt ef_index_plain
#endif

void seen__ef_index(seen__run *r)
{
    if (effective_isa() >= SEEN_EF_ISA_POPCNT)
        ef_index_popcnt(r);
    else
        ef_index_plain(r);
}

seen_err seen__ef_encode(seen__run *out, uint64_t c, const uint64_t *vals, const uint16_t *tags,
                         size_t n, const uint32_t *seg_ids, uint32_t nsegs)
{
    if (n == 0 || n > UINT32_MAX || nsegs == 0 || nsegs > SEEN_MAX_SEGMENTS)
        return SEEN_ERR_ARG;
    seen__run r;
    run_header_init(&r, c, vals, n, nsegs);
    r.golomb_m = 0; /* marks the layout */
    r.nbuckets = 1;
    r.ef.low = (uint8_t)seen__ef_low_bits(n, r.span);
    r.code_bits = ef_ups_bits(&r) + (uint64_t)n * r.ef.low;
    if (r.ef.low > SEEN_EF_MAX_LOW_BITS || seen__ef_shape(&r) != SEEN_OK)
        return SEEN_ERR_ARG;
    r.mem = seen__calloc(1, seen__run_mem_size(&r));
    if (r.mem == NULL)
        return SEEN_ERR_NOMEM;
    memcpy(r.mem, seg_ids, (size_t)nsegs * sizeof(uint32_t));
    seen__run_put_tags(&r, tags, NULL);
    uint8_t *codes = r.mem + codes_offset(&r);
    const unsigned l = r.ef.low;
    uint64_t word = 0, k = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t pos = ((vals[i] - r.base) >> l) + i;
        if (pos >> 6 != k) {
            seen__store64le(codes + 8 * k, word);
            k = pos >> 6;
            word = 0;
        }
        word |= UINT64_C(1) << (pos & 63);
    }
    seen__store64le(codes + 8 * k, word);
    if (l > 0) {
        /* Lows: whole words stored as they fill. */
        const uint64_t mask = (UINT64_C(1) << l) - 1;
        uint64_t acc = 0;
        unsigned nacc = 0;
        uint8_t *p = codes + ef_ups_bits(&r) / 8;
        for (size_t i = 0; i < n; i++) {
            uint64_t lo = (vals[i] - r.base) & mask;
            acc |= lo << nacc;
            if (nacc + l >= 64) {
                seen__store64le(p, acc);
                p += 8;
                acc = nacc ? lo >> (64 - nacc) : 0;
                nacc = nacc + l - 64;
            } else {
                nacc += l;
            }
        }
        if (nacc)
            seen__store64le(p, acc);
    }
    seen__ef_index(&r);
    seen__run_split(&r);
    *out = r;
    return SEEN_OK;
}

/* ------------------------------------------------------------ editing */

/* The rest of r's uppers from bit `from` on, then zeros up to the word
 * where nr's lows start. */
static bool finish_uppers(acc_writer *w, const seen__run *r, const lows *lw, uint64_t from,
                          const seen__run *nr)
{
    if (!seen__aw_copy(w, lw->codes, from, r->n + highs(r) - from))
        return false;
    for (uint64_t pad = ef_ups_bits(nr) - aw_bits(w); pad > 0;) {
        unsigned step = pad > 48 ? 48 : (unsigned)pad;
        aw_put(w, 0, step);
        pad -= step;
    }
    return true;
}

/* An edited run's memory: r's segment ids, the tags (from `tags` or
 * `old_tags`, as seen__run_put_tags takes them), the codes written to w,
 * and the samples counted from them. */
static seen_err ef_assemble(seen__run *nr, const seen__run *r, const uint16_t *tags,
                            const tag_source *old_tags, const acc_writer *w)
{
    nr->mem = seen__calloc(1, seen__run_mem_size(nr));
    if (nr->mem == NULL)
        return SEEN_ERR_NOMEM;
    memcpy(nr->mem, seen__run_segs(r), (size_t)r->nsegs * sizeof(uint32_t));
    seen__run_put_tags(nr, tags, old_tags);
    memcpy(nr->mem + codes_offset(nr), w->buf, (size_t)((nr->code_bits + 7) / 8));
    seen__ef_index(nr);
    seen__run_split(nr);
    return SEEN_OK;
}

/* ------------------------------------------------------------ removing */

/* Append the lows of values [i0, i1) of the run lw reads. */
static bool copy_lows(acc_writer *w, const lows *lw, uint64_t i0, uint64_t i1)
{
    uint64_t a = lw->ups + i0 * lw->l, b = lw->ups + i1 * lw->l;
    if (a < lw->cut) {
        uint64_t e = b < lw->cut ? b : lw->cut;
        if (!seen__aw_copy(w, lw->codes, a, e - a))
            return false;
        a = e;
    }
    return a >= b || seen__aw_copy(w, lw->tail, a - lw->cut, b - a);
}

/*
 * Removing a few values: each takes one bit out of the uppers (its own:
 * every later value's bit sits one place lower, as one value fewer comes
 * before it, and its high part is unchanged) and its L bits out of the
 * lows; the bits between are copied as they are, the samples are counted
 * again, and the tags lose their digits.  Linear in the run's bits, but a
 * copy of them, not a decode and an encode of every value: a delete from a
 * run of 1,000,000 values.  The run keeps base, span and L, so a value at
 * either end going, or a count that calls for another L or for no
 * Elias-Fano at all, rebuilds instead (*applies false).
 */
seen_err seen__ef_without(seen__run *out, const seen__run *r, const uint64_t *vals, size_t k,
                          unsigned shape, uint64_t *removed_per_tag, size_t *removed, bool *applies)
{
    *removed = 0;
    *applies = false;
    /* Where the values that go are, and their upper bits. */
    uint64_t *gone_at = seen__malloc((k ? k : 1) * 2 * sizeof *gone_at);
    if (gone_at == NULL)
        return SEEN_ERR_NOMEM;
    uint64_t *gone_bit = gone_at + (k ? k : 1);
    size_t gone = 0;
    for (size_t i = 0; i < k; i++) {
        int64_t at = seen__ef_find(r, vals[i]);
        if (at < 0 || (gone > 0 && gone_at[gone - 1] >= (uint64_t)at))
            continue;
        gone_at[gone] = (uint64_t)at;
        gone_bit[gone++] = ((vals[i] - r->base) >> r->ef.low) + (uint64_t)at;
    }
    seen_err err = SEEN_OK;
    void *own_a = NULL, *own_b = NULL;
    acc_writer w = {0};
    seen__run nr = *r;
    nr.mem = NULL;
    if (gone == 0) {
        *applies = true;
        goto done;
    }
    const uint64_t n2 = r->n - gone;
    /* A compact Elias-Fano run under SEEN_EF_MIN_RUN values took the head
     * or is a large set's: it stays so while a rebuild shaped `shape`
     * would code it so. */
    if (gone_at[0] == 0 || gone_at[gone - 1] + 1 == r->n ||
        !seen__ef_wanted(r->c, n2, r->span, shape) || seen__ef_low_bits(n2, r->span) != r->ef.low)
        goto done;
    tag_source ts;
    bool keeps;
    err = seen__tags_without(r, gone_at, gone, removed_per_tag, &ts, &keeps, &own_a, &own_b);
    if (err != SEEN_OK || !keeps)
        goto done;
    nr.tail = NULL;
    nr.tail_bit = 0;
    nr.n = (uint32_t)n2;
    nr.code_bits = ef_ups_bits(&nr) + n2 * r->ef.low;
    if ((err = seen__ef_shape(&nr)) != SEEN_OK || !seen__aw_reserve(&w, nr.code_bits + 64)) {
        err = err != SEEN_OK ? err : SEEN_ERR_NOMEM;
        goto fail;
    }
    const lows lw = lows_of(r);
    uint64_t from = 0;
    bool ok = true;
    for (size_t g = 0; g < gone && ok; g++) {
        ok = seen__aw_copy(&w, lw.codes, from, gone_bit[g] - from);
        from = gone_bit[g] + 1;
    }
    ok = ok && finish_uppers(&w, r, &lw, from, &nr);
    from = 0;
    for (size_t g = 0; g < gone && ok; g++) {
        ok = copy_lows(&w, &lw, from, gone_at[g]);
        from = gone_at[g] + 1;
    }
    ok = ok && copy_lows(&w, &lw, from, r->n);
    if (!ok || ef_assemble(&nr, r, NULL, r->nsegs > 1 ? &ts : NULL, &w) != SEEN_OK) {
        err = SEEN_ERR_NOMEM;
        goto fail;
    }
    *out = nr;
    *removed = gone;
    *applies = true;
    goto done;
fail:
    memset(removed_per_tag, 0, r->nsegs * sizeof *removed_per_tag);
done:
    seen__free(gone_at);
    seen__free(own_a);
    seen__free(own_b);
    seen__free(w.buf);
    return err;
}

/* ------------------------------------------------------------ adding */

/* How many of the run's values are below offset x (x <= span), and
 * whether x is one of them (*has): the start of x's high part (its sample,
 * then popcounts), then its lows. */
static inline __attribute__((always_inline)) uint64_t
ef_rank_body(const seen__run *r, const lows *lw, uint64_t x, bool *has, bool pdep)
{
    const uint8_t *up = lw->codes;
    const unsigned l = r->ef.low;
    const uint64_t h = x >> l, ubits = r->n + highs(r);
    const uint64_t p = high_start(r, up, h, pdep);
    /* The values of high part h follow from bit p while the bits are ones. */
    const uint64_t want = x & ((UINT64_C(1) << l) - 1);
    uint64_t i = p - h;
    *has = false;
    for (uint64_t b = p; b < ubits && ((up_word(up, b >> 6) >> (b & 63)) & 1); b++, i++) {
        const uint64_t lo = low_at(lw, i);
        if (lo >= want) {
            *has = lo == want;
            break;
        }
    }
    return i;
}

/* A flush ranks each new value, a popcount per word from its sample on:
 * at the lookups' instruction levels. */
static uint64_t ef_rank_plain(const seen__run *r, const lows *lw, uint64_t x, bool *has)
{
    return ef_rank_body(r, lw, x, has, false);
}

#if EF_X86
__attribute__((target("popcnt"))) static uint64_t ef_rank_popcnt(const seen__run *r, const lows *lw,
                                                                 uint64_t x, bool *has)
{
    return ef_rank_body(r, lw, x, has, false);
}

__attribute__((target("popcnt,bmi2"))) static uint64_t
ef_rank_pdep(const seen__run *r, const lows *lw, uint64_t x, bool *has)
{
    return ef_rank_body(r, lw, x, has, true);
}
#else
#define ef_rank_popcnt ef_rank_plain
#define ef_rank_pdep ef_rank_plain
#endif

static uint64_t ef_rank(const seen__run *r, const lows *lw, uint64_t x, bool *has)
{
    switch (effective_isa()) {
    case SEEN_EF_ISA_PDEP:
        return ef_rank_pdep(r, lw, x, has);
    case SEEN_EF_ISA_POPCNT:
        return ef_rank_popcnt(r, lw, x, has);
    default:
        return ef_rank_plain(r, lw, x, has);
    }
}

/*
 * Adding values, the counterpart of seen__ef_without for the flush of the
 * head into the run that takes it: each new value puts a one into the
 * uppers where its high part's values are (after the zero that ends the
 * high parts below it and the values of its own that are smaller) and its
 * L bits into the lows; the bits between are copied as they are.  Linear in
 * the run's bits, but a copy of them: a flush into a run of 20,000 values
 * cost a decode and an encode of all of them.  The run keeps base and L;
 * values past its span extend it, their ones after the old uppers (integer
 * ids handed out in sequence arrive there, and each flush rebuilt the
 * run).  A value below base, or a count or span that calls for another L,
 * rebuilds instead (*applies false), as does a value the run holds already
 * when it has several segments (it would move to the newer one).
 */
seen_err seen__ef_with(seen__run *out, const seen__run *r, const uint64_t *vals, size_t k,
                       unsigned shape, uint32_t tag, size_t *held, bool *applies)
{
    *held = 0;
    *applies = false;
    if (k == 0 || tag >= r->nsegs || vals[0] < r->base)
        return SEEN_OK;
    const lows lw = lows_of(r);
    /* Where each new value goes among the old ones; held ones drop out. */
    uint64_t *rank = seen__malloc(k * sizeof *rank);
    uint64_t *fresh = seen__malloc(k * sizeof *fresh);
    seen_err err = SEEN_ERR_NOMEM;
    acc_writer w = {0};
    uint16_t *tags = NULL;
    seen__run nr = *r;
    nr.mem = NULL;
    if (rank == NULL || fresh == NULL)
        goto done;
    /* Values past the span go after every old one (`inside` values do
     * not): the run grows its span, keeping base and L. */
    size_t m = 0, inside = 0;
    for (size_t i = 0; i < k; i++) {
        const uint64_t x = vals[i] - r->base;
        bool has = false;
        const uint64_t at = x > r->span ? r->n : ef_rank(r, &lw, x, &has);
        if (has) {
            (*held)++;
            continue;
        }
        inside += x <= r->span;
        rank[m] = at;
        fresh[m++] = x;
    }
    err = SEEN_OK;
    const uint64_t n2 = (uint64_t)r->n + m;
    const uint64_t span2 = m > inside ? fresh[m - 1] : r->span;
    if ((r->nsegs > 1 && *held > 0) || n2 > UINT32_MAX ||
        !seen__ef_wanted(r->c, n2, span2, shape) || seen__ef_low_bits(n2, span2) != r->ef.low)
        goto done;
    nr.tail = NULL;
    nr.tail_bit = 0;
    nr.n = (uint32_t)n2;
    nr.span = span2;
    nr.code_bits = ef_ups_bits(&nr) + n2 * r->ef.low;
    if (nr.code_bits > SEEN_MAX_CODE_BITS)
        goto done;
    if ((err = seen__ef_shape(&nr)) != SEEN_OK)
        goto done;
    err = SEEN_ERR_NOMEM;
    if (!seen__aw_reserve(&w, nr.code_bits + 64))
        goto done;
    const unsigned l = r->ef.low;
    /* Uppers: the old bits, a one inserted before old bit h + rank of
     * each new value. */
    uint64_t from = 0;
    bool ok = true;
    for (size_t i = 0; i < inside && ok; i++) {
        const uint64_t at = (fresh[i] >> l) + rank[i];
        ok = seen__aw_copy(&w, lw.codes, from, at - from);
        aw_put(&w, 1, 1);
        from = at;
    }
    if (m > inside) {
        /* The old uppers to their end (the last old value's one), then each
         * appended value's one at its high part plus its place. */
        ok = ok && seen__aw_copy(&w, lw.codes, from, r->n + highs(r) - from);
        for (size_t i = inside; i < m && ok; i++) {
            const uint64_t at = (fresh[i] >> l) + r->n + i;
            for (uint64_t zeros = at - aw_bits(&w); zeros > 0;) {
                const unsigned step = zeros > 48 ? 48 : (unsigned)zeros;
                aw_put(&w, 0, step);
                zeros -= step;
            }
            aw_put(&w, 1, 1);
        }
        from = r->n + highs(r);
    }
    ok = ok && finish_uppers(&w, r, &lw, from, &nr);
    /* Lows: the old ones, each new low before old value rank. */
    from = 0;
    for (size_t i = 0; i < m && ok; i++) {
        ok = copy_lows(&w, &lw, from, rank[i]);
        if (l > 0)
            aw_put(&w, fresh[i] & ((UINT64_C(1) << l) - 1), l);
        from = rank[i];
    }
    ok = ok && copy_lows(&w, &lw, from, r->n);
    if (!ok)
        goto done;
    if (r->nsegs > 1) {
        /* The old tags, the new values' inserted where they went. */
        tags = seen__malloc((size_t)(n2 + r->n) * sizeof *tags);
        if (tags == NULL)
            goto done;
        uint16_t *old = tags + n2;
        seen__run_decode_tags(r, old);
        size_t o = 0, a = 0;
        for (uint64_t q = 0; q < n2; q++)
            tags[q] = (a < m && rank[a] == o) ? (a++, (uint16_t)tag) : old[o++];
    }
    if (ef_assemble(&nr, r, tags, NULL, &w) != SEEN_OK)
        goto done;
    *out = nr;
    *applies = true;
    err = SEEN_OK;
done:
    if (!*applies)
        *held = 0;
    seen__free(rank);
    seen__free(fresh);
    seen__free(tags);
    seen__free(w.buf);
    return err;
}

/* ------------------------------------------------------------ reading */

/* The high parts first, then the lows added in one sequential pass: each
 * loop is short, and the second reads its bits in order where low_at
 * computes every value's place (a run of 10,000 values, decoded whole
 * alone: 13.6 -> 12.0 us). */
void seen__ef_decode(const seen__run *r, uint64_t *vals)
{
    const lows lw = lows_of(r);
    const uint8_t *up = lw.codes;
    const unsigned l = r->ef.low;
    const uint64_t words = (r->n + highs(r) + 63) / 64;
    uint64_t i = 0;
    for (uint64_t k = 0; k < words && i < r->n; k++) {
        uint64_t w = up_word(up, k);
        while (w != 0 && i < r->n) {
            vals[i] = (k * 64 + (unsigned)__builtin_ctzll(w) - i) << l;
            i++;
            w &= w - 1;
        }
    }
    add_lows(&lw, r->base, 0, (size_t)i, vals);
}

seen_err seen__ef_validate(const seen__run *r)
{
    if (r->nsegs == 0 || r->nsegs > SEEN_MAX_SEGMENTS || r->mem == NULL || !seen__run_is_ef(r))
        return SEEN_ERR_FORMAT_CORRUPT;
    if (!seen__run_tags_ok(r))
        return SEEN_ERR_FORMAT_CORRUPT;
    const lows lw = lows_of(r);
    const uint8_t *codes = lw.codes, *up = codes;
    const unsigned l = r->ef.low;
    /* Nothing but zeros after the uppers and after the lows: readers take
     * whole words, and a stray one past the last value would be read as
     * a value. */
    const uint64_t ubits = r->n + highs(r);
    if ((ubits & 63) && (up_word(up, ubits >> 6) >> (ubits & 63)) != 0)
        return SEEN_ERR_FORMAT_CORRUPT;
    if (r->code_bits & 7) {
        /* The last code byte, in the tail if the run is split. */
        uint64_t b = r->code_bits & ~(uint64_t)7;
        uint8_t last = b >= lw.cut ? lw.tail[(b - lw.cut) / 8] : codes[b / 8];
        if ((last >> (r->code_bits & 7)) != 0)
            return SEEN_ERR_FORMAT_CORRUPT;
    }
    /* Exactly n ones, making strictly increasing values from 0 to span. */
    const uint64_t words = (ubits + 63) / 64;
    uint64_t i = 0, prev = 0;
    for (uint64_t k = 0; k < words; k++) {
        uint64_t w = up_word(up, k);
        if (k == words - 1 && (ubits & 63))
            w &= (UINT64_C(1) << (ubits & 63)) - 1;
        while (w != 0) {
            if (i >= r->n)
                return SEEN_ERR_FORMAT_CORRUPT;
            uint64_t h = k * 64 + (unsigned)__builtin_ctzll(w) - i;
            if (h > highs(r))
                return SEEN_ERR_FORMAT_CORRUPT;
            uint64_t x = (h << l) | low_at(&lw, i);
            if (i == 0 ? x != 0 : x <= prev)
                return SEEN_ERR_FORMAT_CORRUPT;
            prev = x;
            i++;
            w &= w - 1;
        }
    }
    if (i != r->n || prev != r->span)
        return SEEN_ERR_FORMAT_CORRUPT;
    return SEEN_OK;
}
