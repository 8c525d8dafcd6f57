/*
 * run_read.c — reading runs: whole-run decoding (the bit reader is in
 * run_layout.h), validation of untrusted runs, and the lookups (cursor walks for
 * sorted batches, lockstep probes for single items).  The layout they read
 * is described at the top of run.c.
 */
#include "run_layout.h"

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

void seen__run_decode(const seen__run *r, uint64_t *vals, uint16_t *tags)
{
    if (seen__run_is_ef(r)) {
        seen__ef_decode(r, vals);
        if (tags)
            seen__run_decode_tags(r, tags);
        return;
    }
    seen__golomb g;
    seen__golomb_init(&g, r->golomb_m);
    uint64_t sl_bits = slope(r->code_bits, r->nbuckets), sl_items = slope(r->n, r->nbuckets);
    /* Two buckets at a time, their decode chains side by side.  A bucket's
     * first value is coded from its low end: decoded as if after low - 1. */
    uint64_t pos0, first0;
    bucket_start(r, sl_bits, sl_items, 0, &pos0, &first0);
    for (uint32_t j = 0; j < r->nbuckets; j += 2) {
        uint64_t pos1, first1, org;
        bucket_start(r, sl_bits, sl_items, j + 1, &pos1, &first1);
        reader ra;
        const uint8_t *ca = bucket_codes(r, pos0, &org);
        reader_init(&ra, ca, pos0 - org);
        if (j + 1 == r->nbuckets) {
            golomb_decode_n(&ra, bucket_lo(r, j) - 1, vals + first0, first1 - first0, &g);
            break;
        }
        uint64_t pos2, first2;
        bucket_start(r, sl_bits, sl_items, j + 2, &pos2, &first2);
        reader rb;
        const uint8_t *cb = bucket_codes(r, pos1, &org);
        reader_init(&rb, cb, pos1 - org);
        golomb_decode_pair(&ra, bucket_lo(r, j) - 1, vals + first0, first1 - first0, &rb,
                           bucket_lo(r, j + 1) - 1, vals + first1, first2 - first1, &g);
        pos0 = pos2;
        first0 = first2;
    }
    if (tags)
        seen__run_decode_tags(r, tags);
}

seen_err seen__run_validate(const seen__run *r)
{
    if (seen__run_is_ef(r))
        return seen__ef_validate(r);
    if (r->n == 0 || r->nsegs == 0 || r->nsegs > SEEN_MAX_SEGMENTS || r->mem == NULL)
        return CORRUPT;
    if (r->span > UINT64_MAX - r->base || (uint64_t)r->n - 1 > r->span)
        return CORRUPT;
    /* Any Golomb parameter decodes; the writer's choice is canonical, but
     * sets written with another (older) choice of it still load. */
    if (r->golomb_m == 0 || r->golomb_m > SEEN_MAX_GOLOMB_M ||
        !nbuckets_allowed(r->n, r->nbuckets) ||
        (r->bucket_w != canonical_bucket_w(r->nbuckets, r->span) && !run_ranked(r)) ||
        r->w_bits > 62 || r->w_items > 40 || r->w_vals > 64 || (r->w_vals == 0) == run_ranked(r) ||
        (r->nbuckets == 1 && (r->w_bits | r->w_items | r->idx_min_bits | r->idx_min_items)))
        return CORRUPT;
    const int64_t lim = INT64_C(1) << 61;
    if (r->idx_min_bits < -lim || r->idx_min_bits > lim || r->idx_min_items < -lim ||
        r->idx_min_items > lim)
        return CORRUPT;
    /* Each value needs at least one bit of code. */
    if (r->code_bits < (uint64_t)r->n || r->code_bits > (UINT64_C(1) << 58))
        return CORRUPT;

    if (!seen__run_tags_ok(r))
        return CORRUPT;

    /* Bucket starts: checked arithmetic, as the index is untrusted. */
    uint64_t sl_bits = slope(r->code_bits, r->nbuckets), sl_items = slope(r->n, r->nbuckets);
    const uint8_t *idx = r->mem + (size_t)r->nsegs * sizeof(uint32_t);
    unsigned wsum = index_entry_bits(r);
    uint64_t prev_bit = 0, prev_item = 0, prev_lo = 0;
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
            /* A ranked run's bucket lows rise strictly within the span. */
            uint64_t lo = seen__read_bits(idx, at + r->w_bits + r->w_items, ranked_w_vals(r));
            if (run_ranked(r) && (lo <= prev_lo || lo > r->span))
                return CORRUPT;
            prev_lo = lo;
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
        /* Within the span: checked above (ranked) or below (by value). */
        uint64_t lo = run_ranked(r) ? bucket_lo(r, j) : r->base + (uint64_t)j * r->bucket_w;
        uint64_t hi = run_ranked(r) ? bucket_hi(r, j) : UINT64_MAX;
        if (!run_ranked(r) && j > 0 && (r->bucket_w == 0 || (uint64_t)j > r->span / r->bucket_w) &&
            pos != end)
            return CORRUPT;
        /* A run held in two blocks is cut at a bucket start: no bucket
         * may run from one block into the other. */
        if (r->tail != NULL && pos < r->tail_bit && end > r->tail_bit)
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
            if (run_ranked(r) ? v > hi : r->nbuckets > 1 && (v - r->base) / r->bucket_w != j)
                return CORRUPT;
            if (any && v <= last)
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
    if (count != r->n)
        return CORRUPT;
    return SEEN_OK;
}

bool seen__run_ends_exact(const seen__run *r)
{
    if (seen__run_is_ef(r))
        return true; /* its first value is base and its last base + span */
    uint64_t sl_bits = slope(r->code_bits, r->nbuckets), sl_items = slope(r->n, r->nbuckets);
    seen__golomb g;
    seen__golomb_init(&g, r->golomb_m);
    /* The first value: bucket 0's first code, if bucket 0 holds any. */
    uint64_t pos, end, it0, it1, org;
    bucket_start(r, sl_bits, sl_items, 1, &end, &it1);
    if (it1 == 0)
        return false;
    const uint8_t *codes = bucket_codes(r, 0, &org);
    pos = 0;
    if (golomb_get(codes, &pos, &g) != 0)
        return false;
    /* The last: decode the last bucket that holds any. */
    uint32_t j = r->nbuckets;
    do {
        j--;
        bucket_start(r, sl_bits, sl_items, j, &pos, &it0);
    } while (it0 == r->n && j > 0);
    codes = bucket_codes(r, pos, &org);
    pos -= org;
    uint64_t v = bucket_lo(r, j) + golomb_get(codes, &pos, &g);
    for (uint64_t i = it0 + 1; i < r->n; i++)
        v = v + 1 + golomb_get(codes, &pos, &g);
    return v == r->base + r->span;
}

void seen__cursor_init(seen__cursor *cur, const seen__run *r)
{
    /* The fields, not the two 4 KB buffers: a page of 20 adds starts a
     * cursor per run, and the buffers are written before they are read. */
    memset(cur, 0, offsetof(seen__cursor, buf));
    cur->r = r;
    if (seen__run_is_ef(r))
        return; /* seen__cursor_find looks each value up */
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

/* The bucket of v, base <= v <= base + span.  A ranked run searches its
 * lows, starting from the bucket the cursor is in: candidates come sorted,
 * so most fall in it or the next. */
static inline uint32_t cursor_bucket_of(const seen__cursor *cur, uint64_t v)
{
    const seen__run *r = cur->r;
    if (r->nbuckets <= 1)
        return 0;
    if (!run_ranked(r))
        return (uint32_t)seen__div(&cur->bucket_div, v - r->base);
    if (cur->started && v >= bucket_lo(r, cur->bucket) && v <= bucket_hi(r, cur->bucket))
        return cur->bucket;
    return ranked_bucket_of(r, v);
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
    uint64_t org;
    reader ra;
    const uint8_t *ca = bucket_codes(r, pa, &org);
    reader_init(&ra, ca, pa - org);
    if (two) {
        reader rb;
        const uint8_t *cb = bucket_codes(r, pb, &org);
        reader_init(&rb, cb, pb - org);
        golomb_decode_pair(&ra, bucket_lo(r, j) - 1, cur->buf, na, &rb, bucket_lo(r, j + 1) - 1,
                           cur->buf2, nb, &cur->g);
        cur->nbuf2 = (uint32_t)nb;
        cur->buf2_first = fb;
        cur->next_bucket = j + 1;
    } else {
        golomb_decode_n(&ra, bucket_lo(r, j) - 1, cur->buf, na, &cur->g);
    }
    return true;
}

/* Decode codes after value x while x < v and bits are left (*left of
 * them), counting them in *item; returns the last value decoded.  Inlined
 * into each caller, so its state stays in registers: kept in a struct in
 * memory, each step's reader would be stored and loaded back, a delay on
 * the chain every code depends on. */
static inline __attribute__((always_inline)) uint64_t decode_until(reader *rd,
                                                                   const seen__golomb *g,
                                                                   uint64_t x, uint64_t v,
                                                                   uint64_t *left, uint64_t *item)
{
    uint64_t l = *left, it = *item;
    if (golomb_is_rice(g)) {
        const unsigned k = g->b;
        const uint64_t mask = g->m - 1;
        while (x < v && l > 0) {
            unsigned z;
            const unsigned len = rice_peek(rd, k, &z);
            if (__builtin_expect(len > rd->avail, 0))
                break; /* a long unary part: reader_golomb reads it */
            x = x + 1 + rice_take(rd, k, mask, z, len);
            l -= len;
            it++;
        }
    }
    unsigned used;
    while (x < v && l > 0) {
        x = x + 1 + reader_golomb(rd, g, &used);
        l -= used;
        it++;
    }
    *left = l;
    *item = it;
    return x;
}

int seen__cursor_find(seen__cursor *cur, uint64_t v)
{
    const seen__run *r = cur->r;
    if (seen__run_is_ef(r)) {
        int64_t at = seen__ef_find(r, v);
        return at < 0 ? -1 : tag_at(r, run_tags_per_word(r), (uint64_t)at);
    }
    if (v < r->base || v - r->base > r->span)
        return -1;
    uint32_t j = cursor_bucket_of(cur, v);
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
        cur->cur = bucket_lo(r, j) + golomb_get(cur->codes, &cur->pos, &cur->g);
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
        x = decode_until(&rd, &g, x, v, &left, &item);
        if (x < v) {
            cur->pos = cur->end;
            cur->have_cur = false;
            return -1;
        }
        pos = cur->end - left;
    }
    cur->cur = x;
    cur->pos = pos;
    cur->item = item;
    return x == v ? tag_at(r, cur->tags_per_word, cur->item) : -1;
}

/*
 * Candidates vals[i..e) against the values of one bucket decoded into buf
 * (nb of them, the first being item `first` of the run; room for
 * SEEN_CURSOR_PAD sentinels after them): their tags, or -1.
 */
static void scan_decoded(const seen__run *r, uint32_t per, uint64_t *buf, size_t nb, uint64_t first,
                         const uint64_t *vals, size_t i, size_t e, int32_t *tags)
{
    /* Past the values, sentinels no candidate is below: the scan needs no
     * bounds check. */
    for (size_t t = 0; t < SEEN_CURSOR_PAD; t++)
        buf[nb + t] = UINT64_MAX;
    size_t k = 0;
    if (e - i >= nb) {
        /* More candidates than values: most steps skip none. */
        for (size_t c = i; c < e; c++) {
            const uint64_t v = vals[c];
            while (buf[k] < v)
                k++;
            tags[c] = k < nb && buf[k] == v ? (int32_t)k : -1;
        }
    } else {
        for (size_t c = i; c < e; c++) {
            const uint64_t v = vals[c];
            /* Skip eight values at a time, then count the values below v
             * among the next eight: no branch depends on where v falls
             * among them. */
            while (buf[k + 7] < v)
                k += 8;
            k += (size_t)(buf[k] < v) + (buf[k + 1] < v) + (buf[k + 2] < v) + (buf[k + 3] < v) +
                 (buf[k + 4] < v) + (buf[k + 5] < v) + (buf[k + 6] < v) + (buf[k + 7] < v);
            tags[c] = k < nb && buf[k] == v ? (int32_t)k : -1;
        }
    }
    if (per) {
        for (size_t c = i; c < e; c++)
            if (tags[c] >= 0)
                tags[c] = tag_at(r, per, first + (uint64_t)tags[c]);
    } else {
        for (size_t c = i; c < e; c++)
            tags[c] = tags[c] >= 0 ? 0 : -1;
    }
}

/* The tag of candidate v, or -1, where a stepwise chain (scan_pair) has
 * reached it: x is the first value decoded not below v (or the bucket's
 * last), item `item` of the run. */
static inline void place(const seen__run *r, uint32_t per, uint64_t x, uint64_t item, uint64_t v,
                         int32_t *tag)
{
    *tag = x != v ? -1 : per ? tag_at(r, per, item) : 0;
}

/* A stepwise chain's last candidates vals[c..e), on its own (a Rice code,
 * as scan_pair's): x is the last value decoded, `left` values remain, and
 * the bucket ends before item `end` of the run. */
static inline __attribute__((always_inline)) void
chain_finish(const seen__run *r, uint32_t per, const seen__golomb *g, reader *rd, uint64_t x,
             uint64_t left, uint64_t end, const uint64_t *vals, size_t c, size_t e, int32_t *tags)
{
    unsigned used;
    for (; c < e; c++) {
        while (x < vals[c] && left > 0) {
            unsigned z;
            const unsigned len = rice_peek(rd, g->b, &z);
            if (__builtin_expect(len <= rd->avail, 1))
                x = x + 1 + rice_take(rd, g->b, g->m - 1, z, len);
            else
                x = x + 1 + reader_golomb(rd, g, &used);
            left--;
        }
        place(r, per, x, end - left - 1, vals[c], &tags[c]);
    }
}

/*
 * Two buckets with few candidates each (a page of adds against a large
 * run), each decoded only as far as its candidates reach, side by side.
 * One such walk is a single chain of codes, bound by its latency (~1.8 ns
 * a code); two independent chains overlap.  The loop keeps each chain in
 * locals (a reader, the last value, the values left, the candidate it
 * walks to), so nothing on a chain goes through memory.  False, having
 * placed nothing, unless the run is Rice-coded (as the writer codes) and
 * both buckets hold values.
 */
static bool scan_pair(const seen__cursor *cur, uint32_t ja, size_t ia, size_t ea, uint32_t jb,
                      size_t ib, size_t eb, const uint64_t *vals, int32_t *tags)
{
    const seen__run *r = cur->r;
    const seen__golomb g = cur->g;
    if (!golomb_is_rice(&g))
        return false;
    const unsigned k = g.b;
    const uint64_t mask = g.m - 1;
    const uint32_t per = r->nsegs > 1 ? cur->tags_per_word : 0;
    uint64_t pa, fa, na, pb, fb, nb, org;
    bucket_range(cur, ja, &pa, &fa, &na);
    bucket_range(cur, jb, &pb, &fb, &nb);
    if (na == 0 || nb == 0)
        return false;
    reader ra, rb;
    const uint8_t *codes = bucket_codes(r, pa, &org);
    reader_init(&ra, codes, pa - org);
    codes = bucket_codes(r, pb, &org);
    reader_init(&rb, codes, pb - org);
    /* x: the last value decoded; left: values still to decode.  A chain
     * with none left places what remains. */
    unsigned used;
    uint64_t xa = bucket_lo(r, ja) + reader_golomb(&ra, &g, &used), la = na - 1;
    uint64_t xb = bucket_lo(r, jb) + reader_golomb(&rb, &g, &used), lb = nb - 1;
    size_t ca = ia, cb = ib;
    for (;;) {
        /* Place what the chains have reached. */
        while (ca < ea && (xa >= vals[ca] || la == 0)) {
            place(r, per, xa, fa + na - la - 1, vals[ca], &tags[ca]);
            ca++;
        }
        while (cb < eb && (xb >= vals[cb] || lb == 0)) {
            place(r, per, xb, fb + nb - lb - 1, vals[cb], &tags[cb]);
            cb++;
        }
        if (ca == ea || cb == eb)
            break;
        const uint64_t va = vals[ca], vb = vals[cb];
        do {
            unsigned za, zb;
            const unsigned lena = rice_peek(&ra, k, &za), lenb = rice_peek(&rb, k, &zb);
            if (__builtin_expect((lena > ra.avail) | (lenb > rb.avail), 0)) {
                /* A long code: a step each the general way. */
                xa = xa + 1 + reader_golomb(&ra, &g, &used);
                xb = xb + 1 + reader_golomb(&rb, &g, &used);
            } else {
                xa = xa + 1 + rice_take(&ra, k, mask, za, lena);
                xb = xb + 1 + rice_take(&rb, k, mask, zb, lenb);
            }
            la--;
            lb--;
        } while ((xa < va) & (xb < vb) & (la > 0) & (lb > 0));
    }
    /* One chain is done: the other alone. */
    chain_finish(r, per, &g, &ra, xa, la, fa + na, vals, ca, ea, tags);
    chain_finish(r, per, &g, &rb, xb, lb, fb + nb, vals, cb, eb, tags);
    return true;
}

/* A bucket's few candidates, its values decoded only as far as they
 * reach. */
static void scan_stepwise(seen__cursor *cur, const uint64_t *vals, size_t i, size_t e,
                          int32_t *tags)
{
    cur->stepwise = true;
    cur->started = false;
    for (size_t c = i; c < e; c++)
        tags[c] = seen__cursor_find(cur, vals[c]);
    cur->started = false;
}

void seen__run_match(const seen__run *r, const uint64_t *vals, size_t n, int32_t *tags)
{
    if (seen__run_is_ef(r)) {
        seen__ef_match(r, vals, n, tags);
        return;
    }
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
    /* A stepwise bucket waiting for a second to go side by side with. */
    bool held = false;
    uint32_t held_j = 0;
    size_t held_i = 0, held_e = 0;
    while (i < n && vals[i] - r->base <= r->span) {
        uint32_t j = cursor_bucket_of(&cur, vals[i]);
        /* The candidates of bucket j: offsets from base up to `last`. */
        uint64_t last = r->span;
        if (run_ranked(r)) {
            last = bucket_hi(r, j) - r->base;
        } else if (j + 1 < r->nbuckets) {
            unsigned __int128 end = (unsigned __int128)(j + 1) * r->bucket_w;
            if (end - 1 < last)
                last = (uint64_t)(end - 1);
        }
        size_t e = i + 1;
        while (e < n && vals[e] - r->base <= last)
            e++;
        uint64_t pos, first, count;
        bucket_range(&cur, j, &pos, &first, &count);
        /* A few candidates in a large bucket: it waits for a second such
         * bucket to be decoded with (scan_pair). */
        if ((e - i) * SEEN_STEPWISE_RATIO < count) {
            if (!held) {
                held = true;
                held_j = j;
                held_i = i;
                held_e = e;
            } else {
                held = false;
                if (!scan_pair(&cur, held_j, held_i, held_e, j, i, e, vals, tags)) {
                    /* Not Rice-coded, or a bucket is empty. */
                    scan_stepwise(&cur, vals, held_i, held_e, tags);
                    scan_stepwise(&cur, vals, i, e, tags);
                }
            }
            i = e;
            continue;
        }
        cur.stepwise = false;
        if (!cursor_fill(&cur, j)) {
            /* A bucket too large to decode whole (skewed exact keys). */
            cur.stepwise = true;
            scan_stepwise(&cur, vals, i, e, tags);
            i = e;
            continue;
        }
        scan_decoded(r, tagged ? cur.tags_per_word : 0, cur.buf, cur.nbuf, cur.buf_first, vals, i,
                     e, tags);
        i = e;
    }
    if (held)
        scan_stepwise(&cur, vals, held_i, held_e, tags);
    while (i < n)
        tags[i++] = -1;
}

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
    if (seen__run_is_ef(r)) {
        int64_t at = seen__ef_find(r, v);
        if (at >= 0)
            p->result = tag_at(r, run_tags_per_word(r), (uint64_t)at);
        return;
    }
    /* One division: a reciprocal pays off only over many candidates. */
    uint32_t j = r->nbuckets <= 1 ? 0
                 : run_ranked(r)  ? ranked_bucket_of(r, v)
                                  : (uint32_t)((v - r->base) / r->bucket_w);
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
    p->x = bucket_lo(r, j) + reader_golomb(&p->rd, &p->g, &used);
    p->left = end - pos - used;
    p->target = v;
    p->result = -2;
}

/* The answer of a probe whose value x has reached or passed its target,
 * or whose bucket has ended (x below it). */
static inline int probe_answer(const probe *p, uint64_t x, uint64_t item)
{
    if (x != p->target)
        return -1;
    return p->r->nsegs > 1 ? tag_at(p->r, tags_per_word(p->r->nsegs, NULL), item) : 0;
}

/* Decode a probe's bucket up to its target, its state in registers
 * (decode_until): stepping it through the probe struct made this loop 46%
 * of a single add's time at 10,000 items. */
static void probe_finish(probe *p)
{
    if (p->result != -2)
        return;
    reader rd = p->rd;
    const seen__golomb g = p->g;
    uint64_t left = p->left, item = p->item;
    const uint64_t x = decode_until(&rd, &g, p->x, p->target, &left, &item);
    p->result = probe_answer(p, x, item);
}

void seen__run_lookup_many(const seen__run *const *runs, const uint64_t *vals, size_t k, int *tags)
{
    /* Each run's bucket is decoded to the end in turn.  Decoding two in
     * lockstep (two chains for the CPU to overlap) measured no faster
     * once each loop keeps its state in registers. */
    probe p[SEEN_LOOKUP_MANY_MAX];
    if (k > SEEN_LOOKUP_MANY_MAX)
        k = SEEN_LOOKUP_MANY_MAX;
    for (size_t i = 0; i < k; i++)
        probe_start(&p[i], runs[i], vals[i]);
    for (size_t i = 0; i < k; i++)
        probe_finish(&p[i]);
    for (size_t i = 0; i < k; i++)
        tags[i] = p[i].result;
}
