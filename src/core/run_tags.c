/*
 * run_tags.c — reading a run's tags (the segment of each value, as base-k
 * digits packed in words): decoding them in order, counting them per
 * segment, and checking that untrusted words hold valid digits.  Counting
 * is what loading a set the process wrote itself mostly costs (a packed
 * key, at every command that reaches it), so it has paths by segment
 * count.  The layout is described at the top of run.c.
 */
#include "run_layout.h"

/* Calls `each(ctx, i, tag)` for the tags of a run of several segments, in
 * order: digits of base-nsegs words, least significant first. */
static inline __attribute__((always_inline)) void
for_each_tag(const seen__run *r, void (*each)(void *, size_t, uint32_t), void *ctx)
{
    seen__divider kd;
    seen__divider_init(&kd, r->nsegs);
    const uint8_t *tw = r->mem + (size_t)r->nsegs * sizeof(uint32_t) + seen__run_index_bytes(r);
    uint32_t per = run_tags_per_word(r);
    size_t i = 0;
    /* Each digit divides the word left by the one before: a chain of
     * multiplications per word.  Two whole words side by side are two
     * chains the CPU overlaps. */
    for (; i + 2 * (size_t)per <= r->n; i += 2 * (size_t)per) {
        uint64_t wa = seen__load64le(tw + (i / per) * 8);
        uint64_t wb = seen__load64le(tw + (i / per + 1) * 8);
        for (size_t t = i; t < i + per; t++) {
            uint64_t qa = seen__div(&kd, wa), qb = seen__div(&kd, wb);
            each(ctx, t, (uint32_t)(wa - qa * r->nsegs));
            each(ctx, t + per, (uint32_t)(wb - qb * r->nsegs));
            wa = qa;
            wb = qb;
        }
    }
    for (; i < r->n; i += per) {
        uint64_t word = seen__load64le(tw + (i / per) * 8);
        size_t end_i = i + per < r->n ? i + per : r->n;
        for (size_t t = i; t < end_i; t++) {
            uint64_t q = seen__div(&kd, word);
            each(ctx, t, (uint32_t)(word - q * r->nsegs));
            word = q;
        }
    }
}

static inline void store_tag(void *tags, size_t i, uint32_t tag)
{
    ((uint16_t *)tags)[i] = (uint16_t)tag;
}

static inline void count_tag(void *per_tag, size_t i, uint32_t tag)
{
    (void)i;
    ((uint64_t *)per_tag)[tag]++;
}

void seen__run_decode_tags(const seen__run *r, uint16_t *tags)
{
    if (r->nsegs <= 1)
        memset(tags, 0, (size_t)r->n * sizeof *tags);
    else
        for_each_tag(r, store_tag, tags);
}

/*
 * Counting a run's tags per segment is most of what loading a set the
 * process wrote itself costs (a packed key, at every command that reads
 * it), so it avoids decoding digit by digit where it can.  Digit by digit
 * is a chain of dependent divisions, five or six cycles a tag, and
 * counters incremented in memory chain through it too.
 */

/* Bits set in w, without the POPCNT instruction x86-64's baseline lacks
 * (the compiler would call a library routine). */
static inline uint64_t popcount_swar(uint64_t w)
{
    w -= (w >> 1) & UINT64_C(0x5555555555555555);
    w = (w & UINT64_C(0x3333333333333333)) + ((w >> 2) & UINT64_C(0x3333333333333333));
    w = (w + (w >> 4)) & UINT64_C(0x0f0f0f0f0f0f0f0f);
    return (w * UINT64_C(0x0101010101010101)) >> 56;
}

/* k = 2^b segments: a word's digits are b-bit fields, the first in the
 * low bits.  A field equals t where w ^ (t in every field) is zero: OR
 * each field's bits into its lowest and count the fields left clear.
 * `hw`: count them with POPCNT (the caller's target has it). */
static inline __attribute__((always_inline)) void count_tags_fields_body(const uint8_t *tw,
                                                                         uint64_t n, uint32_t per,
                                                                         unsigned b,
                                                                         uint64_t *per_tag, bool hw)
{
#define POP(x) (hw ? (uint64_t)__builtin_popcountll(x) : popcount_swar(x))
    uint32_t k = UINT32_C(1) << b;
    uint64_t lows_all = 0;
    for (uint32_t i = 0; i < per; i++)
        lows_all |= UINT64_C(1) << (i * b);
    if (b <= 2) {
        /* Two segments or four (a window of four slices): the fields' bit
         * planes counted directly, three popcounts a word. */
        for (uint64_t first = 0; first < n; first += per) {
            uint64_t w = seen__load64le(tw + first / per * 8);
            uint64_t digits = n - first < per ? n - first : per;
            uint64_t lows =
                digits == per ? lows_all : lows_all & ((UINT64_C(1) << (digits * b)) - 1);
            uint64_t lo = w & lows;
            if (b == 1) {
                uint64_t ones = POP(lo);
                per_tag[1] += ones;
                per_tag[0] += digits - ones;
                continue;
            }
            uint64_t hi = (w >> 1) & lows, both = POP(lo & hi);
            uint64_t c1 = POP(lo) - both, c2 = POP(hi) - both;
            per_tag[3] += both;
            per_tag[2] += c2;
            per_tag[1] += c1;
            per_tag[0] += digits - both - c1 - c2;
        }
        return;
    }
    for (uint64_t first = 0; first < n; first += per) {
        uint64_t w = seen__load64le(tw + first / per * 8);
        uint64_t digits = n - first < per ? n - first : per;
        uint64_t lows = digits == per ? lows_all : lows_all & ((UINT64_C(1) << (digits * b)) - 1);
        uint64_t others = 0;
        for (uint32_t t = 1; t < k; t++) {
            uint64_t y = w ^ (lows * t), any = y;
            for (unsigned j = 1; j < b; j++)
                any |= y >> j;
            uint64_t clear = any & lows;
            uint64_t equal = digits - POP(clear);
            per_tag[t] += equal;
            others += equal;
        }
        per_tag[0] += digits - others;
    }
#undef POP
}

static void count_tags_fields_plain(const uint8_t *tw, uint64_t n, uint32_t per, unsigned b,
                                    uint64_t *per_tag)
{
    count_tags_fields_body(tw, n, per, b, per_tag, false);
}

#if defined(__x86_64__) && defined(__GNUC__)
/* A packed key is unpacked at every command that reaches it, and these
 * counts were a fifth of unpacking 1,000 items with four slices. */
__attribute__((target("popcnt"))) static void
count_tags_fields_popcnt(const uint8_t *tw, uint64_t n, uint32_t per, unsigned b, uint64_t *per_tag)
{
    count_tags_fields_body(tw, n, per, b, per_tag, true);
}
#else
#define count_tags_fields_popcnt count_tags_fields_plain
#endif

static void count_tags_fields(const uint8_t *tw, uint64_t n, uint32_t per, unsigned b,
                              uint64_t *per_tag)
{
    if (seen__ef_isa_now() >= SEEN_EF_ISA_POPCNT)
        count_tags_fields_popcnt(tw, n, per, b, per_tag);
    else
        count_tags_fields_plain(tw, n, per, b, per_tag);
}

/* Any k up to 8: m digits at a time (k^m at most 256), each group's
 * counts read from a table built for the call, one count per byte of a
 * register; four words' chains side by side.  A word holds at most 40
 * digits of base 3 or more, so four words' counts fit a byte.  Building
 * the table takes k^m * m divisions and the walk n / m: m is the group
 * size that makes the two least (a 768-value run of three segments, which
 * a small key's load counts on every command that unpacks it: groups of
 * three digits, 27 entries, not one digit at a time). */
static void count_tags_digits(const uint8_t *tw, uint64_t n, uint32_t k, uint32_t per,
                              uint64_t *per_tag)
{
    uint32_t m = 1, km = k;
    uint64_t best = n;
    for (uint32_t mm = 2, kk = k * k; kk <= 256; mm++, kk *= k) {
        uint64_t cost = (uint64_t)kk * mm + n / mm;
        if (cost < best) {
            best = cost;
            m = mm;
            km = kk;
        }
    }
    uint64_t table[256];
    for (uint32_t v = 0; v < km; v++) {
        uint64_t counts = 0;
        for (uint32_t d = 0, x = v; d < m; d++, x /= k)
            counts += UINT64_C(1) << (x % k * 8);
        table[v] = counts;
    }
    seen__divider kd, kmd;
    seen__divider_init(&kd, k);
    seen__divider_init(&kmd, km);
    uint64_t full_words = n / per, wi = 0;
    for (; wi + 4 <= full_words; wi += 4) {
        uint64_t w0 = seen__load64le(tw + wi * 8), w1 = seen__load64le(tw + wi * 8 + 8),
                 w2 = seen__load64le(tw + wi * 8 + 16), w3 = seen__load64le(tw + wi * 8 + 24);
        uint64_t a = 0, b = 0;
        uint32_t d = 0;
        for (; d + m <= per; d += m) {
            uint64_t q0 = seen__div(&kmd, w0), q1 = seen__div(&kmd, w1), q2 = seen__div(&kmd, w2),
                     q3 = seen__div(&kmd, w3);
            a += table[w0 - q0 * km] + table[w1 - q1 * km];
            b += table[w2 - q2 * km] + table[w3 - q3 * km];
            w0 = q0;
            w1 = q1;
            w2 = q2;
            w3 = q3;
        }
        for (; d < per; d++) {
            uint64_t q0 = seen__div(&kd, w0), q1 = seen__div(&kd, w1), q2 = seen__div(&kd, w2),
                     q3 = seen__div(&kd, w3);
            a += (UINT64_C(1) << ((w0 - q0 * k) * 8)) + (UINT64_C(1) << ((w1 - q1 * k) * 8));
            b += (UINT64_C(1) << ((w2 - q2 * k) * 8)) + (UINT64_C(1) << ((w3 - q3 * k) * 8));
            w0 = q0;
            w1 = q1;
            w2 = q2;
            w3 = q3;
        }
        a += b;
        for (uint32_t t = 0; t < k; t++)
            per_tag[t] += (a >> (8 * t)) & 0xff;
    }
    for (uint64_t first = wi * per; first < n; first += per) {
        uint64_t w = seen__load64le(tw + first / per * 8);
        uint64_t digits = n - first < per ? n - first : per;
        for (uint64_t d = 0; d < digits; d++) {
            uint64_t q = seen__div(&kd, w);
            per_tag[w - q * k]++;
            w = q;
        }
    }
}

void seen__run_count_tags(const seen__run *r, uint64_t *per_tag)
{
    uint32_t k = r->nsegs;
    if (k <= 1) {
        per_tag[0] += r->n;
        return;
    }
    const uint8_t *tw = r->mem + (size_t)k * sizeof(uint32_t) + seen__run_index_bytes(r);
    uint32_t per = run_tags_per_word(r);
    if ((k & (k - 1)) == 0 && k <= 16)
        count_tags_fields(tw, r->n, per, (unsigned)__builtin_ctz(k), per_tag);
    else if (k <= 8)
        count_tags_digits(tw, r->n, k, per, per_tag);
    else
        for_each_tag(r, count_tag, per_tag);
}

bool seen__run_tags_ok(const seen__run *r)
{
    /* Every word a valid base-k number, nothing past the last item. */
    if (r->nsegs <= 1)
        return true;
    const uint8_t *tw = r->mem + (size_t)r->nsegs * sizeof(uint32_t) + seen__run_index_bytes(r);
    uint64_t full;
    uint32_t per = tags_per_word(r->nsegs, &full);
    /* A word that fills 64 bits (run_tags_per_word) holds any value. */
    bool filled = run_tags_per_word(r) != per;
    per = run_tags_per_word(r);
    uint64_t words = tag_words(r);
    for (uint64_t wi = 0; wi < words; wi++) {
        uint64_t word = seen__load64le(tw + wi * 8);
        uint64_t digits = (uint64_t)r->n - wi * per;
        if (digits >= per && filled)
            continue;
        uint64_t limit = digits >= per ? full : ipow(r->nsegs, (uint32_t)digits);
        if (word >= limit)
            return false;
    }
    return true;
}
