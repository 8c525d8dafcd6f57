/*
 * format.c — the serialized form of a seen set (normative spec:
 * docs/FORMAT.md).  Little-endian throughout, a magic and a version first,
 * every variable-length part preceded by its count, an XXH3-64 checksum
 * last.  Version 4 (written) leaves out the policy fields that hold their
 * usual values and stores times relative to each other, so a small set's
 * fixed part is about 30 bytes: the module keeps small keys in memory as
 * these bytes.  Versions 1 (fixed-width fields), 2 (varints) and 3 (runs
 * only a delete or a cut by rank makes) still load.  The loader
 * trusts nothing: it verifies the checksum, then every field, then decodes
 * every run completely (run_read.c's validator) before the set is handed out.
 * Malformed input gets an error, never a crash and never a read outside the
 * buffer.
 *
 * It stays one file (~1,000 lines) though it writes and reads: each field's
 * writer and its loader's check sit side by side on the same limits, which
 * is how the writer is kept from producing what the loader refuses, and the
 * loader's length is the six versions it still reads.
 */
#include "run_layout.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <stdlib.h>

#define FORMAT_MAGIC "SEEN"
#define FORMAT_V1 1u
#define FORMAT_V2 2u
/* Version 3 is version 2 with runs cut by rank and bucket counts left by
 * deletes allowed (run_layout.h); a set holding neither is written as
 * version 2, which readers of version 2 load. */
#define FORMAT_V3 3u
/* Version 4 is version 3 with a header that leaves out the policy fields
 * holding the values below and writes newest and hwm_clock relative to
 * clock (a live set's are at or near it).  These values belong to the
 * format: they stay as they are whatever seen_policy_default() becomes.
 * Its runs may also be coded Elias-Fano (run_ef.c): golomb_m 0 marks one,
 * bucket_w carries its low bits, and its payload has no index (its samples
 * are rebuilt on load). */
#define FORMAT_V4 4u
/* Version 5 is version 4 and, in a set with a capacity, each segment's
 * item-time range (seen__span) after its step number: clock - hi (zigzag)
 * and hi - lo.  A set without a capacity is written as version 4. */
#define FORMAT_V5 5u
/* Version 6 is version 5 (version 4 without a capacity) for an IDS INT set
 * still keyed by its raw ids (raw_keys): header flag V6_RAW_KEYS, which
 * only version 6 has and always sets.  Its runs are exact (c = 1) and its
 * plan divisor 0.  Every other set is written as before. */
#define FORMAT_V6 6u
#define V4_USUAL_WINDOW_MS UINT64_C(7776000000) /* 90 days */
#define V4_USUAL_SLICES 4u
#define V4_USUAL_ERROR 0.001
#define V4_USUAL_CAPACITY 0u
#define V4_USUAL_EXACT_LIMIT 16u

/* Sizes of the fixed parts in version 1, and the least they take in
 * versions 2 to 4, in bytes (see docs/FORMAT.md). */
#define V1_HEADER_BYTES 106u
#define V1_SEGMENT_BYTES 29u
#define V1_HEAD_ENTRY_BYTES 12u
#define V1_RUN_HEADER_BYTES 78u
#define V2_HEADER_MIN_BYTES 24u
#define V4_HEADER_MIN_BYTES 18u
#define V2_SEGMENT_MIN_BYTES 4u
#define V2_HEAD_ENTRY_MIN_BYTES 9u
#define V2_RUN_HEADER_MIN_BYTES 16u
#define CHECKSUM_BYTES 8u

/* Version 2 header flags. */
#define V2_HAS_ORIGIN 1u
#define V2_IDS_INT 2u
#define V2_ERROR_RAW 4u /* error as f64, not as a decimal m / 10^e */
#define V2_FLAGS_KNOWN 7u
/* Version 4 adds one flag per policy field: set when the field is written
 * (its value is not the format's usual one, above). */
#define V4_GIVEN_WINDOW 8u
#define V4_GIVEN_SLICES 16u
#define V4_GIVEN_ERROR 32u
#define V4_GIVEN_CAPACITY 64u
#define V4_GIVEN_EXACT_LIMIT 128u
#define V4_FLAGS_KNOWN 255u
#define V6_RAW_KEYS 256u
#define V6_FLAGS_KNOWN 511u

/* Powers of ten exact in binary64 (10^22 is the last). */
static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
#define DECIMAL_MAX_E 22u
#define DECIMAL_MAX_M (UINT64_C(1) << 53)

/* ---------------------------------------------------------------- writer */

typedef struct wbuf {
    uint8_t *p;
    size_t len, cap;
} wbuf;

/*
 * The writer runs twice per serialization (a dry run counting bytes, then
 * the copy), and a key resting packed is serialized by every write that
 * reaches it, so the small fields are stored directly: a library memcpy
 * per varint was about half of packing the keys of make bench's
 * population.  Whatever does not fit is counted, not written (put's
 * contract); the dry run has cap 0.
 */
static inline bool room_for(const wbuf *w, size_t n)
{
    return w->len <= w->cap && w->cap - w->len >= n;
}

static void put(wbuf *w, const void *src, size_t n)
{
    if (n && room_for(w, n))
        memcpy(w->p + w->len, src, n);
    w->len += n;
}

static inline void put_u8(wbuf *w, uint8_t v)
{
    if (room_for(w, 1))
        w->p[w->len] = v;
    w->len += 1;
}

static inline void put_u16(wbuf *w, uint16_t v)
{
    if (room_for(w, 2)) {
        w->p[w->len] = (uint8_t)v;
        w->p[w->len + 1] = (uint8_t)(v >> 8);
    }
    w->len += 2;
}

static inline void put_u64(wbuf *w, uint64_t v)
{
    if (room_for(w, 8))
        seen__store64le(w->p + w->len, v);
    w->len += 8;
}

static void put_f64(wbuf *w, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    put_u64(w, v);
}

/* Unsigned LEB128: 7 bits a byte, low first, high bit = more follow. */
static inline void put_uv(wbuf *w, uint64_t v)
{
    const size_t n = v < 0x80 ? 1 : (seen__bitlen(v) + 6) / 7;
    if (room_for(w, n)) {
        uint8_t *q = w->p + w->len;
        for (size_t i = 0; i + 1 < n; i++, v >>= 7)
            q[i] = (uint8_t)(v | 0x80);
        q[n - 1] = (uint8_t)v;
    }
    w->len += n;
}

/* Signed as zigzag: 0, -1, 1, -2, ... map to 0, 1, 2, 3, ... */
static void put_zz(wbuf *w, int64_t v)
{
    put_uv(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/* A divisor as its trailing zero bits and what is left (plans keep 24
 * significant bits, so this takes about four bytes). */
static void put_shifted(wbuf *w, uint64_t v)
{
    unsigned tz = v ? (unsigned)__builtin_ctzll(v) : 0;
    put_u8(w, (uint8_t)tz);
    put_uv(w, v >> tz);
}

/* error = m / 10^e exactly (as binary64 division rounds), if some e does. */
static bool error_decimal(double error, uint64_t *m, uint8_t *e)
{
    for (unsigned k = 0; k <= DECIMAL_MAX_E; k++) {
        double scaled = error * pow10_exact[k];
        if (!(scaled < (double)DECIMAL_MAX_M))
            return false;
        uint64_t cand = (uint64_t)(scaled + 0.5);
        if ((double)cand / pow10_exact[k] == error) {
            *m = cand;
            *e = (uint8_t)k;
            return true;
        }
    }
    return false;
}

/* Bytes of a run's payload as stored: segment ids (as 4 bytes each),
 * index, tags and codes; an Elias-Fano run stores no index. */
static size_t run_payload_bytes(const seen__run *r)
{
    return (size_t)r->nsegs * 4 + (seen__run_is_ef(r) ? 0 : seen__run_index_bytes(r)) +
           seen__run_tag_bytes(r) + (size_t)((r->code_bits + 7) / 8);
}

static void write_payload(wbuf *w, const seen__run *r)
{
    /* index, tags and codes are byte strings already (LE bit order) */
    size_t rest = run_payload_bytes(r) - (size_t)r->nsegs * 4;
    /* An Elias-Fano run's samples are rebuilt on load, not stored. */
    const uint8_t *from =
        r->mem + (size_t)r->nsegs * 4 + (seen__run_is_ef(r) ? seen__ef_sample_bytes(r) : 0);
    if (r->tail == NULL) {
        put(w, from, rest);
    } else {
        /* Split in memory, one byte string here: the tail's first byte is
         * the front's last code byte, whole. */
        size_t tail_codes = (size_t)((r->code_bits + 7) / 8 - r->tail_bit / 8);
        put(w, from, rest - tail_codes);
        put(w, r->tail, tail_codes);
    }
}

/* The newest version written, the version a set is written in by
 * default (6 for a set keyed by raw ids, which only version 6 holds; else
 * 5 for a set with a capacity, whose segments' time ranges only version 5
 * keeps, else 4), and the oldest that can hold it (2; 3 for a run only
 * version 3 allows; 4 for an Elias-Fano run; 6 for raw keys).  A capped set
 * written in an older version loses its ranges, and places later items as
 * if each step's range were everything up to its newest item. */
#define FORMAT_WRITTEN FORMAT_V6

static unsigned default_version(const seen_set *s)
{
    if (s->raw_keys)
        return FORMAT_V6;
    return s->policy.capacity ? FORMAT_V5 : FORMAT_V4;
}

/* Version 6 holds raw keys and only them: the newest a set may be
 * written in. */
static unsigned newest_version(const seen_set *s)
{
    return s->raw_keys ? FORMAT_V6 : FORMAT_V5;
}

static unsigned oldest_version(const seen_set *s)
{
    if (s->raw_keys)
        return FORMAT_V6;
    unsigned v = FORMAT_V2;
    for (uint32_t i = 0; i < s->nruns; i++) {
        const seen__run *r = &s->runs[i];
        if (seen__run_is_ef(r))
            return FORMAT_V4;
        if (run_ranked(r) || !nbuckets_canonical(r->n, r->nbuckets) || r->loose_ends)
            v = FORMAT_V3;
    }
    return v;
}

/* The header of versions 2 to 4 up to next_seg_id.  Versions 2 and 3
 * write every policy field and times relative to origin; version 4 only
 * the policy fields that differ from the usual values, and newest and
 * hwm_clock relative to clock. */
static void write_header_varint(const seen_set *s, wbuf *w, bool v4)
{
    const seen_policy *p = &s->policy;
    uint64_t m = 0;
    uint8_t e = 0;
    bool decimal = error_decimal(p->error, &m, &e);
    uint64_t given = V4_FLAGS_KNOWN;
    if (v4) {
        given = p->window_ms != V4_USUAL_WINDOW_MS ? V4_GIVEN_WINDOW : 0;
        given |= p->slices != V4_USUAL_SLICES ? V4_GIVEN_SLICES : 0;
        given |= p->error != V4_USUAL_ERROR ? V4_GIVEN_ERROR : 0;
        given |= p->capacity != V4_USUAL_CAPACITY ? V4_GIVEN_CAPACITY : 0;
        given |= p->exact_limit != V4_USUAL_EXACT_LIMIT ? V4_GIVEN_EXACT_LIMIT : 0;
    }
    uint64_t flags = (s->has_origin ? V2_HAS_ORIGIN : 0) |
                     (p->ids == SEEN_IDS_INT ? V2_IDS_INT : 0) | (s->raw_keys ? V6_RAW_KEYS : 0) |
                     (!decimal && (given & V4_GIVEN_ERROR) ? V2_ERROR_RAW : 0);
    put_uv(w, flags | (v4 ? given : 0));
    if (given & V4_GIVEN_WINDOW)
        put_uv(w, p->window_ms);
    if (given & V4_GIVEN_SLICES)
        put_uv(w, p->slices);
    if (given & V4_GIVEN_ERROR) {
        if (decimal) {
            put_uv(w, m);
            put_u8(w, e);
        } else {
            put_f64(w, p->error);
        }
    }
    if (given & V4_GIVEN_CAPACITY)
        put_uv(w, p->capacity);
    if (given & V4_GIVEN_EXACT_LIMIT)
        put_uv(w, p->exact_limit);
    put_uv(w, (uint64_t)s->origin);
    put_zz(w, s->clock - s->origin);
    put_zz(w, v4 ? s->clock - s->newest : s->newest - s->origin);
    put_shifted(w, s->plan_c);
    put_uv(w, s->hwm);
    put_zz(w, v4 ? s->clock - s->hwm_clock : s->hwm_clock - s->origin);
}

static void write_all(const seen_set *s, wbuf *w, unsigned version)
{
    put(w, FORMAT_MAGIC, 4);
    put_u16(w, (uint16_t)version);
    write_header_varint(s, w, version >= FORMAT_V4);
    put_uv(w, s->next_seg_id);
    put_uv(w, s->nsegs);
    put_uv(w, s->nruns);
    put_uv(w, s->head_n);
    int64_t prev_slice = 0;
    for (uint32_t i = 0; i < s->nsegs; i++) {
        const seen__segment *g = &s->segs[i];
        put_zz(w, g->slice - prev_slice);
        prev_slice = g->slice;
        put_uv(w, g->shadow);
        put_uv(w, (uint64_t)g->id << 1 | g->dropped);
        put_uv(w, g->seq);
        if (version >= FORMAT_V5 && s->policy.capacity) {
            const seen__span *spans = seen__set_spans(s);
            seen__span sp = spans ? spans[i] : (seen__span){0, s->newest};
            put_zz(w, s->clock - sp.hi);
            put_uv(w, (uint64_t)(sp.hi - sp.lo));
        }
    }
    for (uint32_t h = 0; h < s->head_n; h++) {
        put_u64(w, s->head_keys[h]);
        put_uv(w, s->head_segs[h]);
    }
    for (uint32_t i = 0; i < s->nruns; i++) {
        const seen__run *r = &s->runs[i];
        put_shifted(w, r->c);
        put_uv(w, r->base);
        put_uv(w, r->span);
        put_uv(w, r->golomb_m);
        put_uv(w, seen__run_is_ef(r) ? r->ef.low : r->bucket_w);
        put_uv(w, r->code_bits);
        put_zz(w, r->idx_min_bits);
        put_zz(w, r->idx_min_items);
        put_uv(w, r->n);
        put_uv(w, r->nbuckets);
        put_uv(w, r->nsegs);
        put_u8(w, r->w_bits);
        put_u8(w, r->w_items);
        if (version >= FORMAT_V3) /* the loose-ends mark rides in the top bit */
            put_u8(w, (uint8_t)(r->w_vals | (r->loose_ends ? 0x80u : 0u)));
        const uint32_t *ids = seen__run_segs(r);
        for (uint32_t t = 0; t < r->nsegs; t++)
            put_uv(w, ids[t]);
        write_payload(w, r);
    }
}

size_t seen__serialized_size_as(const seen_set *s, unsigned version)
{
    if (s == NULL)
        return 0;
    /* A dry run: the writer counts bytes even when it has nowhere to put
     * them, so size and content cannot disagree. */
    wbuf w = {NULL, 0, 0};
    write_all(s, &w, version);
    return w.len + CHECKSUM_BYTES;
}

seen_err seen__serialize_as(const seen_set *s, unsigned version, uint8_t *buf, size_t cap,
                            size_t *written)
{
    if (s == NULL || (buf == NULL && cap > 0) || version < oldest_version(s) ||
        version > newest_version(s))
        return SEEN_ERR_ARG;
    /* One pass: the writer copies only what fits and counts the rest (the
     * caller has usually just asked seen_serialized_size, a pass of its
     * own). */
    wbuf w = {buf, 0, cap};
    write_all(s, &w, version);
    if (w.len > cap || cap - w.len < CHECKSUM_BYTES)
        return SEEN_ERR_BUFFER;
    uint64_t sum = XXH3_64bits(buf, w.len);
    put_u64(&w, sum);
    if (written)
        *written = w.len;
    return SEEN_OK;
}

size_t seen_serialized_size(const seen_set *s)
{
    return s ? seen__serialized_size_as(s, default_version(s)) : 0;
}

seen_err seen_serialize(const seen_set *s, uint8_t *buf, size_t cap, size_t *written)
{
    if (s == NULL)
        return SEEN_ERR_ARG;
    return seen__serialize_as(s, default_version(s), buf, cap, written);
}

/* ---------------------------------------------------------------- reader */

typedef struct rbuf {
    const uint8_t *p;
    size_t len, pos;
    bool short_read;
    bool bad;         /* a varint overlong or out of its field's range */
    unsigned version; /* FORMAT_V1 ... V4 */
} rbuf;

static inline const uint8_t *take(rbuf *r, size_t n)
{
    if (r->short_read || n > r->len - r->pos) {
        r->short_read = true;
        return NULL;
    }
    const uint8_t *q = r->p + r->pos;
    r->pos += n;
    return q;
}

static inline uint64_t get_le(rbuf *r, unsigned bytes)
{
    const uint8_t *q = take(r, bytes);
    uint64_t v = 0;
    if (q == NULL)
        return 0;
    for (unsigned i = 0; i < bytes; i++)
        v |= (uint64_t)q[i] << (8 * i);
    return v;
}

static uint8_t get_u8(rbuf *r)
{
    return (uint8_t)get_le(r, 1);
}
static uint16_t get_u16(rbuf *r)
{
    return (uint16_t)get_le(r, 2);
}
static uint32_t get_u32(rbuf *r)
{
    return (uint32_t)get_le(r, 4);
}
static uint64_t get_u64(rbuf *r)
{
    return get_le(r, 8);
}

static double get_f64(rbuf *r)
{
    uint64_t v = get_u64(r);
    double d;
    memcpy(&d, &v, sizeof d);
    return d;
}

/* A varint in its one (shortest) form. */
static uint64_t get_uv_long(rbuf *r)
{
    if (!r->short_read && r->len - r->pos >= 10) {
        /* Ten bytes at hand (all but a set's last few fields): no bounds
         * check per byte, and the same outcome and bytes consumed as the
         * careful loop below. */
        const uint8_t *q = r->p + r->pos;
        uint64_t v = 0;
        for (unsigned i = 0; i < 9; i++) {
            v |= (uint64_t)(q[i] & 0x7f) << (7 * i);
            if (!(q[i] & 0x80)) {
                r->pos += i + 1;
                if (q[i] == 0 && i > 0)
                    r->bad = true; /* overlong: a final zero byte */
                return v;
            }
        }
        r->pos += 10;
        if (q[9] > 1) {
            r->bad = true; /* past 64 bits, or no end within them */
            return 0;
        }
        if (q[9] == 0)
            r->bad = true; /* overlong */
        return v | (uint64_t)q[9] << 63;
    }
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        const uint8_t *q = take(r, 1);
        if (q == NULL)
            return 0;
        uint64_t part = *q & 0x7f;
        if (shift == 63 && part > 1) {
            r->bad = true; /* past 64 bits */
            return 0;
        }
        v |= part << shift;
        if (!(*q & 0x80)) {
            if (*q == 0 && shift > 0)
                r->bad = true; /* overlong: a final zero byte */
            return v;
        }
        if (shift == 63) {
            r->bad = true;
            return 0;
        }
    }
}

/* Most fields are below 128: one byte, read here without a call (a
 * packed key is loaded by every command that reaches it). */
static inline uint64_t get_uv(rbuf *r)
{
    if (__builtin_expect(!r->short_read && r->pos < r->len && r->p[r->pos] < 0x80, 1))
        return r->p[r->pos++];
    return get_uv_long(r);
}

static int64_t get_zz(rbuf *r)
{
    uint64_t v = get_uv(r);
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Fields whose width is fixed in version 1 and a varint in version 2. */
static uint64_t get_f64bits(rbuf *r)
{
    return r->version == FORMAT_V1 ? get_u64(r) : get_uv(r);
}

static uint32_t get_f32bits(rbuf *r)
{
    if (r->version == FORMAT_V1)
        return get_u32(r);
    uint64_t v = get_uv(r);
    if (v > UINT32_MAX)
        r->bad = true;
    return (uint32_t)v;
}

/* base + sign * d for a time stored as its distance d from another
 * (origin, or in version 4 clock); out of range (made invalid for the
 * checks that follow) when d is absurd.  Bases lie within +-2^51, so the
 * result cannot overflow. */
static int64_t time_from(rbuf *r, int64_t base, int sign)
{
    int64_t d = get_zz(r);
    if (d > SEEN_MAX_TIME_MS || d < -SEEN_MAX_TIME_MS)
        return -1;
    return base + sign * d;
}

static uint64_t get_shifted(rbuf *r)
{
    uint8_t tz = get_u8(r);
    uint64_t v = get_uv(r);
    if (tz > 63 || v > (UINT64_MAX >> tz) || (v == 0 && tz != 0) || (v && tz && !(v & 1))) {
        r->bad = true; /* one form only: v odd unless tz = 0 */
        return 0;
    }
    return v << tz;
}

static bool time_ok(int64_t t)
{
    return t >= 0 && t <= SEEN_MAX_TIME_MS;
}

/* Segment ids sorted, with their table positions, for lookups that stay
 * fast however many segments a crafted input claims. */
/* Sets of up to this many segments load without allocating their scratch
 * tables (a packed key is loaded by every command that writes it). */
#define LOAD_SMALL_SEGS 64u

typedef struct id_index {
    uint64_t *e; /* id << 32 | position: `small` or allocated */
    uint32_t n;
    uint64_t small[LOAD_SMALL_SEGS];
} id_index;

static int32_t find_seg(const id_index *ix, uint32_t id)
{
    uint32_t lo = 0, hi = ix->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if ((ix->e[mid] >> 32) < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ix->n && (ix->e[lo] >> 32) == id ? (int32_t)(uint32_t)ix->e[lo] : -1;
}

/* Per-segment count of stored entries (runs and head), to check the
 * logical counts against. */
static seen_err physical_counts(const seen_set *s, const id_index *ix, uint64_t *phys)
{
    memset(phys, 0, s->nsegs * sizeof *phys);
    for (uint32_t h = 0; h < s->head_n; h++)
        phys[find_seg(ix, s->head_segs[h])]++;
    for (uint32_t i = 0; i < s->nruns; i++) {
        const seen__run *r = &s->runs[i];
        uint64_t *vals = seen__malloc((size_t)r->n * sizeof *vals);
        uint16_t *tags = seen__malloc((size_t)r->n * sizeof *tags);
        int32_t *pos = seen__malloc((size_t)r->nsegs * sizeof *pos);
        if (vals == NULL || tags == NULL || pos == NULL) {
            seen__free(vals);
            seen__free(tags);
            seen__free(pos);
            return SEEN_ERR_NOMEM;
        }
        seen__run_decode(r, vals, tags);
        const uint32_t *ids = seen__run_segs(r);
        for (uint32_t t = 0; t < r->nsegs; t++)
            pos[t] = find_seg(ix, ids[t]);
        for (uint32_t k = 0; k < r->n; k++)
            phys[pos[tags[k]]]++;
        seen__free(vals);
        seen__free(tags);
        seen__free(pos);
    }
    return SEEN_OK;
}

/* Per-segment entry counts from the tags alone (trusted bytes). */
static seen_err tag_counts(const seen_set *s, const id_index *ix, uint64_t *phys)
{
    memset(phys, 0, s->nsegs * sizeof *phys);
    for (uint32_t h = 0; h < s->head_n; h++)
        phys[find_seg(ix, s->head_segs[h])]++;
    for (uint32_t i = 0; i < s->nruns; i++) {
        const seen__run *r = &s->runs[i];
        const uint32_t *ids = seen__run_segs(r);
        if (r->nsegs == 1) {
            phys[find_seg(ix, ids[0])] += r->n;
            continue;
        }
        /* Count per tag, then add each tag's count to its segment: one
         * lookup per tag, not per entry. */
        uint64_t per_tag_small[LOAD_SMALL_SEGS];
        uint64_t *per_tag =
            r->nsegs <= LOAD_SMALL_SEGS ? per_tag_small : seen__calloc(r->nsegs, sizeof *per_tag);
        if (per_tag == NULL)
            return SEEN_ERR_NOMEM;
        if (per_tag == per_tag_small) /* only the slots it counts in */
            memset(per_tag_small, 0, r->nsegs * sizeof *per_tag_small);
        seen__run_count_tags(r, per_tag);
        for (uint32_t t = 0; t < r->nsegs; t++)
            phys[find_seg(ix, ids[t])] += per_tag[t];
        if (per_tag != per_tag_small)
            seen__free(per_tag);
    }
    return SEEN_OK;
}

static double get_error(rbuf *r, bool raw)
{
    if (raw)
        return get_f64(r);
    uint64_t m = get_uv(r);
    uint8_t e = get_u8(r);
    if (m >= DECIMAL_MAX_M || e > DECIMAL_MAX_E) {
        r->bad = true;
        return 0;
    }
    return (double)m / pow10_exact[e];
}

/* The header of versions 2 to 4 up to next_seg_id; the fields are checked
 * against their limits by the caller. */
static seen_err read_header_varint(rbuf *rb, seen_set *s, uint8_t *ids)
{
    seen_policy *p = &s->policy;
    bool v4 = rb->version >= FORMAT_V4;
    uint64_t flags = get_uv(rb);
    uint64_t known = rb->version >= FORMAT_V6 ? V6_FLAGS_KNOWN
                     : v4                     ? V4_FLAGS_KNOWN
                                              : V2_FLAGS_KNOWN;
    if ((flags & ~known) || (rb->version >= FORMAT_V6) != ((flags & V6_RAW_KEYS) != 0))
        return CORRUPT;
    s->raw_keys = (flags & V6_RAW_KEYS) ? 1 : 0;
    /* Version 4: a field is written only when it differs from its usual
     * value (one form per set), and a raw error only when written. */
    uint64_t given = v4 ? flags : V4_FLAGS_KNOWN;
    if ((flags & V2_ERROR_RAW) && !(given & V4_GIVEN_ERROR))
        return CORRUPT;
    *ids = (flags & V2_IDS_INT) ? 1 : 0;
    s->has_origin = (flags & V2_HAS_ORIGIN) ? 1 : 0;
    p->window_ms = (given & V4_GIVEN_WINDOW) ? get_uv(rb) : V4_USUAL_WINDOW_MS;
    p->slices = (given & V4_GIVEN_SLICES) ? get_f32bits(rb) : V4_USUAL_SLICES;
    p->error = (given & V4_GIVEN_ERROR) ? get_error(rb, flags & V2_ERROR_RAW) : V4_USUAL_ERROR;
    p->capacity = (given & V4_GIVEN_CAPACITY) ? get_uv(rb) : V4_USUAL_CAPACITY;
    p->exact_limit = (given & V4_GIVEN_EXACT_LIMIT) ? get_f32bits(rb) : V4_USUAL_EXACT_LIMIT;
    if (v4 && (((flags & V4_GIVEN_WINDOW) && p->window_ms == V4_USUAL_WINDOW_MS) ||
               ((flags & V4_GIVEN_SLICES) && p->slices == V4_USUAL_SLICES) ||
               ((flags & V4_GIVEN_ERROR) && p->error == V4_USUAL_ERROR) ||
               ((flags & V4_GIVEN_CAPACITY) && p->capacity == V4_USUAL_CAPACITY) ||
               ((flags & V4_GIVEN_EXACT_LIMIT) && p->exact_limit == V4_USUAL_EXACT_LIMIT)))
        return CORRUPT;
    uint64_t origin = get_uv(rb);
    s->origin = origin > (uint64_t)SEEN_MAX_TIME_MS ? -1 : (int64_t)origin;
    s->clock = time_from(rb, s->origin, 1);
    s->newest = v4 ? time_from(rb, s->clock, -1) : time_from(rb, s->origin, 1);
    s->plan_c = get_shifted(rb);
    s->hwm = get_uv(rb);
    s->hwm_clock = v4 ? time_from(rb, s->clock, -1) : time_from(rb, s->origin, 1);
    s->next_seg_id = get_f32bits(rb);
    return SEEN_OK;
}

/* `trusted`: bytes this process's writer made (seen_deserialize_trusted):
 * the checksum and the codes are not checked again. */
static seen_err read_all(rbuf *rb, seen_set *s, id_index *ix, bool trusted)
{
    const uint8_t *magic = take(rb, 4);
    if (magic == NULL)
        return SEEN_ERR_FORMAT_TRUNCATED;
    if (memcmp(magic, FORMAT_MAGIC, 4) != 0)
        return SEEN_ERR_FORMAT_MAGIC;
    uint16_t version = get_u16(rb);
    if (rb->short_read)
        return SEEN_ERR_FORMAT_TRUNCATED;
    if (version < FORMAT_V1 || version > FORMAT_V6)
        return SEEN_ERR_FORMAT_VERSION;
    rb->version = version;
    /* Everything else is covered by the checksum: check it before trusting
     * any length. */
    size_t header_min = version == FORMAT_V1   ? V1_HEADER_BYTES
                        : version >= FORMAT_V4 ? V4_HEADER_MIN_BYTES
                                               : V2_HEADER_MIN_BYTES;
    if (rb->len < header_min + CHECKSUM_BYTES)
        return SEEN_ERR_FORMAT_TRUNCATED;
    {
        rbuf tail = {rb->p, rb->len, rb->len - CHECKSUM_BYTES, false, false, version};
        uint64_t stored = get_u64(&tail);
        if (!trusted && XXH3_64bits(rb->p, rb->len - CHECKSUM_BYTES) != stored)
            return SEEN_ERR_FORMAT_CHECKSUM;
        rb->len -= CHECKSUM_BYTES;
    }
    seen_policy *p = &s->policy;
    uint8_t ids;
    uint32_t nsegs, nruns, head_n;
    if (version == FORMAT_V1) {
        if (get_u16(rb) != 0) /* flags: none defined */
            return CORRUPT;
        p->window_ms = get_u64(rb);
        p->slices = get_u32(rb);
        p->error = get_f64(rb);
        p->capacity = get_u64(rb);
        ids = get_u8(rb);
        p->exact_limit = get_u32(rb);
        s->origin = (int64_t)get_u64(rb);
        s->clock = (int64_t)get_u64(rb);
        s->newest = (int64_t)get_u64(rb);
        s->plan_c = get_u64(rb);
        s->hwm = get_u64(rb);
        s->hwm_clock = (int64_t)get_u64(rb);
        s->next_seg_id = get_u32(rb);
        s->has_origin = get_u8(rb);
    } else {
        seen_err err = read_header_varint(rb, s, &ids);
        if (err != SEEN_OK)
            return err;
    }
    p->ids = ids == 0 ? SEEN_IDS_STR : SEEN_IDS_INT;
    nsegs = get_f32bits(rb);
    nruns = get_f32bits(rb);
    head_n = get_f32bits(rb);
    if (rb->short_read)
        return SEEN_ERR_FORMAT_TRUNCATED;
    if (rb->bad)
        return CORRUPT;
    if (ids > 1 || !seen__set_derive(s) || s->has_origin > 1 || !time_ok(s->origin) ||
        !time_ok(s->clock) || !time_ok(s->hwm_clock) || s->hwm > SEEN_MAX_COUNT ||
        s->next_seg_id > SEEN_SEG_ID_LIMIT || !time_ok(s->newest) ||
        (s->has_origin && (s->origin > s->clock || s->newest < s->origin || s->newest > s->clock)))
        return CORRUPT;
    if (nsegs > SEEN_MAX_SEGMENTS || nruns > SEEN_MAX_RUNS || head_n > SEEN_MAX_HEAD)
        return CORRUPT;
    if (!s->has_origin && (nsegs || nruns || head_n))
        return CORRUPT;
    if ((s->budget == 0 && s->plan_c != 0) || s->plan_c > s->budget)
        return CORRUPT;
    /* Raw keys: integer ids, an error bound, and no plan yet. */
    if (s->raw_keys && (ids != 1 || s->budget == 0 || s->plan_c != 0))
        return CORRUPT;
    /* Fixed-size parts must fit in what is left before allocating. */
    bool v1 = version == FORMAT_V1;
    if ((uint64_t)nsegs * (v1 ? V1_SEGMENT_BYTES : V2_SEGMENT_MIN_BYTES) +
            (uint64_t)head_n * (v1 ? V1_HEAD_ENTRY_BYTES : V2_HEAD_ENTRY_MIN_BYTES) +
            (uint64_t)nruns * (v1 ? V1_RUN_HEADER_BYTES : V2_RUN_HEADER_MIN_BYTES) >
        rb->len - rb->pos)
        return SEEN_ERR_FORMAT_TRUNCATED;

    if (nsegs) {
        s->segs = seen__malloc(seen__segs_block_bytes(s, nsegs));
        ix->e = nsegs <= LOAD_SMALL_SEGS ? ix->small : seen__malloc(nsegs * sizeof *ix->e);
        if (s->segs == NULL || ix->e == NULL)
            return SEEN_ERR_NOMEM;
    }
    /* A capped set's spans follow its segments in their block. */
    seen__span *spans = p->capacity && nsegs ? (seen__span *)(void *)(s->segs + nsegs) : NULL;
    int64_t prev_slice = 0;
    for (uint32_t i = 0; i < nsegs; i++) {
        seen__segment *g = &s->segs[i];
        if (v1) {
            g->slice = (int64_t)get_u64(rb);
            g->shadow = get_u64(rb);
            g->id = get_u32(rb);
            g->seq = get_u64(rb);
            g->dropped = get_u8(rb);
        } else {
            /* Deltas of at most 2^51 keep the sum exact; anything larger
             * fails the slice check below. */
            int64_t d = get_zz(rb);
            g->slice =
                d > (INT64_C(1) << 51) || d < -(INT64_C(1) << 51) ? INT64_MAX : prev_slice + d;
            prev_slice = g->slice == INT64_MAX ? 0 : g->slice;
            g->shadow = get_uv(rb);
            uint64_t id = get_uv(rb);
            g->dropped = (uint8_t)(id & 1);
            g->id = id >> 1 > UINT32_MAX ? UINT32_MAX : (uint32_t)(id >> 1);
            g->seq = get_uv(rb);
        }
        /* The item-time range: stored in version 5 (capped sets); else
         * unknown, taken as everything up to the set's newest item, which
         * places later items by count alone, as before ranges were kept. */
        seen__span span = {0, s->newest};
        if (version >= FORMAT_V5 && p->capacity) {
            span.hi = time_from(rb, s->clock, -1);
            uint64_t width = get_uv(rb);
            span.lo = width > (uint64_t)SEEN_MAX_TIME_MS ? -1 : span.hi - (int64_t)width;
        }
        if (spans)
            spans[i] = span;
        g->phys = 0; /* recounted from the runs and head below */
        s->nsegs = i + 1;
        if (rb->short_read)
            return SEEN_ERR_FORMAT_TRUNCATED;
        /* A slice is (t - origin) / slice_ms for times in [0, 2^50], so
         * anything further out is impossible (and would overflow). */
        int64_t max_slice = s->slice_ms ? SEEN_MAX_TIME_MS / (int64_t)s->slice_ms + 1 : 0;
        if (g->dropped > 1 || (g->dropped && g->shadow) || g->id >= s->next_seg_id ||
            g->shadow > SEEN_MAX_COUNT || g->slice < -max_slice || g->slice > max_slice ||
            g->seq > SEEN_MAX_SEQ || !time_ok(span.lo) || !time_ok(span.hi) || span.lo > span.hi)
            return CORRUPT;
        if (i > 0) {
            const seen__segment *q = &s->segs[i - 1];
            if (q->slice > g->slice || (q->slice == g->slice && q->seq >= g->seq))
                return CORRUPT;
        }
        ix->e[i] = (uint64_t)g->id << 32 | i;
    }
    if (nsegs) {
        /* Ids mostly come in order already: a few by insertion. */
        if (nsegs <= LOAD_SMALL_SEGS) {
            for (uint32_t i = 1; i < nsegs; i++) {
                uint64_t x = ix->e[i];
                uint32_t j = i;
                for (; j > 0 && ix->e[j - 1] > x; j--)
                    ix->e[j] = ix->e[j - 1];
                ix->e[j] = x;
            }
        } else {
            qsort(ix->e, nsegs, sizeof *ix->e, seen__cmp_u64);
        }
        ix->n = nsegs;
        for (uint32_t i = 1; i < nsegs; i++)
            if ((ix->e[i] >> 32) == (ix->e[i - 1] >> 32))
                return CORRUPT; /* duplicate id */
    }

    if (head_n) {
        uint32_t cap = seen__head_cap_for(head_n);
        s->head_keys = seen__malloc((size_t)cap * (sizeof(uint64_t) + sizeof(uint32_t)));
        if (s->head_keys == NULL)
            return SEEN_ERR_NOMEM;
        s->head_segs = (uint32_t *)(void *)(s->head_keys + cap);
        s->head_cap = cap;
    }
    for (uint32_t h = 0; h < head_n; h++) {
        s->head_keys[h] = get_u64(rb);
        s->head_segs[h] = get_f32bits(rb);
        s->head_n = h + 1;
        if (rb->short_read)
            return SEEN_ERR_FORMAT_TRUNCATED;
        if (rb->bad || find_seg(ix, s->head_segs[h]) < 0)
            return CORRUPT;
    }

    if (nruns) {
        s->runs = seen__calloc(nruns, sizeof *s->runs);
        if (s->runs == NULL)
            return SEEN_ERR_NOMEM;
    }
    unsigned __int128 mass = 0; /* of fingerprints: runs with c > 1 */
    for (uint32_t i = 0; i < nruns; i++) {
        /* Built in its zeroed slot (a 104-byte local cleared and copied
         * in cost a microcoded string instruction each, a tenth of a small
         * set's load); it counts once nruns does, and until then an error
         * frees its block here. */
        seen__run *r = &s->runs[i];
        r->c = v1 ? get_u64(rb) : get_shifted(rb);
        r->base = get_f64bits(rb);
        r->span = get_f64bits(rb);
        r->golomb_m = get_f64bits(rb);
        r->bucket_w = get_f64bits(rb);
        r->code_bits = get_f64bits(rb);
        r->idx_min_bits = v1 ? (int64_t)get_u64(rb) : get_zz(rb);
        r->idx_min_items = v1 ? (int64_t)get_u64(rb) : get_zz(rb);
        r->n = get_f32bits(rb);
        r->nbuckets = get_f32bits(rb);
        r->nsegs = get_f32bits(rb);
        r->w_bits = get_u8(rb);
        r->w_items = get_u8(rb);
        if (version >= FORMAT_V3) {
            uint8_t wv = get_u8(rb);
            r->w_vals = wv & 0x7fu;
            r->loose_ends = (wv & 0x80u) != 0;
        }
        if (rb->short_read)
            return SEEN_ERR_FORMAT_TRUNCATED;
        if (rb->bad)
            return CORRUPT;
        bool ef = version >= FORMAT_V4 && r->golomb_m == 0;
        if (r->golomb_m == 0 && !ef)
            return CORRUPT; /* no Golomb parameter is 0 */
        if (ef) {
            /* Elias-Fano: its low bits ride in bucket_w's place. */
            if (r->bucket_w > SEEN_EF_MAX_LOW_BITS)
                return CORRUPT;
            uint64_t low = r->bucket_w;
            r->bucket_w = 0;
            r->ef.low = (uint8_t)low;
            if (seen__ef_shape(r) != SEEN_OK)
                return CORRUPT;
        }
        /* Every value is some 64-bit key divided by c (queries compare
         * keys with value * c). */
        if (r->c == 0 || r->span > UINT64_MAX - r->base || r->base + r->span > UINT64_MAX / r->c ||
            ((s->budget == 0 || s->plan_c == 0) && r->c != 1) || r->n == 0 || r->nsegs == 0 ||
            r->nsegs > SEEN_MAX_SEGMENTS || r->code_bits > SEEN_MAX_CODE_BITS || r->nbuckets == 0 ||
            r->nbuckets > r->n || r->w_bits > 62 || r->w_items > 40 || r->w_vals > 64 ||
            (r->w_vals != 0) != run_ranked(r) ||
            (version < FORMAT_V3 && (run_ranked(r) || !nbuckets_canonical(r->n, r->nbuckets))))
            return CORRUPT;
        /* In version 2 the ids take at least a byte each, not four. */
        size_t payload = run_payload_bytes(r);
        size_t ids_bytes = (size_t)r->nsegs * (v1 ? 4 : 1);
        if (payload - (size_t)r->nsegs * 4 + ids_bytes > rb->len - rb->pos)
            return SEEN_ERR_FORMAT_TRUNCATED;
        r->mem = seen__calloc(1, seen__run_mem_size(r));
        if (r->mem == NULL)
            return SEEN_ERR_NOMEM;
        uint32_t *idsw = (uint32_t *)(void *)r->mem;
        for (uint32_t t = 0; t < r->nsegs; t++)
            idsw[t] = get_f32bits(rb);
        if (rb->bad) {
            seen__free(r->mem);
            r->mem = NULL;
            return CORRUPT;
        }
        const uint8_t *rest = take(rb, payload - (size_t)r->nsegs * 4);
        if (rest == NULL) {
            seen__free(r->mem);
            r->mem = NULL;
            return SEEN_ERR_FORMAT_TRUNCATED;
        }
        /* An Elias-Fano run's samples come before its tags, and later. */
        memcpy(r->mem + (size_t)r->nsegs * 4 + (ef ? seen__ef_sample_bytes(r) : 0), rest,
               payload - (size_t)r->nsegs * 4);
        s->nruns = i + 1;
        /* Each id names a segment, and names it once: the run's ids are
         * kept in age order, so strictly increasing table positions. */
        int32_t last_pos = -1;
        for (uint32_t t = 0; t < r->nsegs; t++) {
            int32_t at = find_seg(ix, idsw[t]);
            if (at <= last_pos)
                return CORRUPT;
            last_pos = at;
        }
        seen_err err = trusted ? SEEN_OK : seen__run_validate(&s->runs[i]);
        if (err != SEEN_OK)
            return err;
        if (!trusted && !s->runs[i].loose_ends && !seen__run_ends_exact(&s->runs[i]))
            return CORRUPT;
        if (ef)
            seen__ef_index(&s->runs[i]);
        seen__run_split(&s->runs[i]);
        mass += r->c > 1 ? (unsigned __int128)r->n * r->c : 0;
    }
    if (rb->pos != rb->len)
        return CORRUPT; /* trailing bytes */
    /* The false-positive bound the set promises must hold for what it
     * holds. */
    if (s->budget && mass > s->budget)
        return CORRUPT;

    /* Entry counts are recomputed from what is stored; shadows (older
     * copies of re-added items) cannot outnumber them. */
    if (s->nsegs) {
        uint64_t phys_small[LOAD_SMALL_SEGS];
        uint64_t *phys =
            s->nsegs <= LOAD_SMALL_SEGS ? phys_small : seen__malloc(s->nsegs * sizeof *phys);
        if (phys == NULL)
            return SEEN_ERR_NOMEM;
        seen_err err = trusted ? tag_counts(s, ix, phys) : physical_counts(s, ix, phys);
        for (uint32_t i = 0; err == SEEN_OK && i < s->nsegs; i++) {
            s->segs[i].phys = phys[i];
            if (s->segs[i].shadow > phys[i])
                err = CORRUPT;
        }
        if (phys != phys_small)
            seen__free(phys);
        if (err != SEEN_OK)
            return err;
    }
    return SEEN_OK;
}

static seen_err deserialize(const uint8_t *buf, size_t len, seen_set **out, bool trusted)
{
    if (out == NULL || (buf == NULL && len > 0))
        return SEEN_ERR_ARG;
    seen_set *s = seen__calloc(1, sizeof *s);
    if (s == NULL)
        return SEEN_ERR_NOMEM;
    rbuf rb = {buf, len, 0, false, false, FORMAT_V1};
    id_index ix;
    ix.e = NULL;
    ix.n = 0;
    seen_err err = read_all(&rb, s, &ix, trusted);
    if (ix.e != ix.small)
        seen__free(ix.e);
    if (err != SEEN_OK) {
        seen_free(s);
        return err;
    }
    *out = s;
    return SEEN_OK;
}

seen_err seen_deserialize(const uint8_t *buf, size_t len, seen_set **out)
{
    return deserialize(buf, len, out, false);
}

seen_err seen_deserialize_trusted(const uint8_t *buf, size_t len, seen_set **out)
{
    return deserialize(buf, len, out, true);
}
