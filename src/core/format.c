/*
 * format.c — the serialized form of a seen set (normative spec:
 * docs/FORMAT.md).  Little-endian throughout, a magic and a version first,
 * every variable-length part preceded by its count, an XXH3-64 checksum
 * last.  The loader trusts nothing: it verifies the checksum, then every
 * field, then decodes every run completely (run.c's validator) before the
 * set is handed out.  Malformed input gets an error, never a crash and never
 * a read outside the buffer.
 */
#include "internal.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <stdlib.h>

#define FORMAT_MAGIC "SEEN"
#define FORMAT_VERSION 1u

/* Sizes of the fixed parts, in bytes (see docs/FORMAT.md). */
#define HEADER_BYTES 106u
#define SEGMENT_BYTES 29u
#define HEAD_ENTRY_BYTES 12u
#define RUN_HEADER_BYTES 78u
#define CHECKSUM_BYTES 8u

/* ---------------------------------------------------------------- writer */

typedef struct wbuf {
    uint8_t *p;
    size_t len, cap;
} wbuf;

static void put(wbuf *w, const void *src, size_t n)
{
    if (w->len + n <= w->cap)
        memcpy(w->p + w->len, src, n);
    w->len += n;
}

static void put_u8(wbuf *w, uint8_t v)
{
    put(w, &v, 1);
}

static void put_u16(wbuf *w, uint16_t v)
{
    uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    put(w, b, 2);
}

static void put_u32(wbuf *w, uint32_t v)
{
    uint8_t b[4];
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    put(w, b, 4);
}

static void put_u64(wbuf *w, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    put(w, b, 8);
}

static void put_f64(wbuf *w, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    put_u64(w, v);
}

static size_t run_payload_bytes(const seen__run *r)
{
    return (size_t)r->nsegs * 4 + seen__run_index_bytes(r) + seen__run_tag_bytes(r) +
           (size_t)((r->code_bits + 7) / 8);
}

static void write_all(const seen_set *s, wbuf *w);

size_t seen_serialized_size(const seen_set *s)
{
    if (s == NULL)
        return 0;
    /* A dry run: the writer counts bytes even when it has nowhere to put
     * them, so size and content cannot disagree. */
    wbuf w = {NULL, 0, 0};
    write_all(s, &w);
    return w.len + CHECKSUM_BYTES;
}

static void write_all(const seen_set *s, wbuf *w)
{
    const seen_policy *p = &s->policy;
    put(w, FORMAT_MAGIC, 4);
    put_u16(w, FORMAT_VERSION);
    put_u16(w, 0); /* flags, reserved */
    put_u64(w, p->window_ms);
    put_u32(w, p->slices);
    put_f64(w, p->error);
    put_u64(w, p->capacity);
    put_u8(w, (uint8_t)p->ids);
    put_u32(w, p->exact_limit);
    put_u64(w, (uint64_t)s->origin);
    put_u64(w, (uint64_t)s->clock);
    put_u64(w, (uint64_t)s->newest);
    put_u64(w, s->plan_c);
    put_u64(w, s->hwm);
    put_u64(w, (uint64_t)s->hwm_clock);
    put_u32(w, s->next_seg_id);
    put_u8(w, s->has_origin);
    put_u32(w, s->nsegs);
    put_u32(w, s->nruns);
    put_u32(w, s->head_n);
    for (uint32_t i = 0; i < s->nsegs; i++) {
        const seen__segment *g = &s->segs[i];
        put_u64(w, (uint64_t)g->slice);
        put_u64(w, g->shadow);
        put_u32(w, g->id);
        put_u64(w, g->seq);
        put_u8(w, g->dropped);
    }
    for (uint32_t h = 0; h < s->head_n; h++) {
        put_u64(w, s->head_keys[h]);
        put_u32(w, s->head_segs[h]);
    }
    for (uint32_t i = 0; i < s->nruns; i++) {
        const seen__run *r = &s->runs[i];
        put_u64(w, r->c);
        put_u64(w, r->base);
        put_u64(w, r->span);
        put_u64(w, r->golomb_m);
        put_u64(w, r->bucket_w);
        put_u64(w, r->code_bits);
        put_u64(w, (uint64_t)r->idx_min_bits);
        put_u64(w, (uint64_t)r->idx_min_items);
        put_u32(w, r->n);
        put_u32(w, r->nbuckets);
        put_u32(w, r->nsegs);
        put_u8(w, r->w_bits);
        put_u8(w, r->w_items);
        const uint32_t *ids = seen__run_segs(r);
        for (uint32_t t = 0; t < r->nsegs; t++)
            put_u32(w, ids[t]);
        /* index, tags and codes are byte strings already (LE bit order) */
        size_t rest = run_payload_bytes(r) - (size_t)r->nsegs * 4;
        if (r->tail == NULL) {
            put(w, r->mem + (size_t)r->nsegs * 4, rest);
        } else {
            /* Split in memory, one byte string here: the tail's first byte
             * is the front's last code byte, whole. */
            size_t tail_codes = (size_t)((r->code_bits + 7) / 8 - r->tail_bit / 8);
            put(w, r->mem + (size_t)r->nsegs * 4, rest - tail_codes);
            put(w, r->tail, tail_codes);
        }
    }
}

seen_err seen_serialize(const seen_set *s, uint8_t *buf, size_t cap, size_t *written)
{
    if (s == NULL || (buf == NULL && cap > 0))
        return SEEN_ERR_ARG;
    size_t need = seen_serialized_size(s);
    if (cap < need)
        return SEEN_ERR_BUFFER;
    wbuf w = {buf, 0, cap};
    write_all(s, &w);
    uint64_t sum = XXH3_64bits(buf, w.len);
    put_u64(&w, sum);
    if (written)
        *written = w.len;
    return SEEN_OK;
}

/* ---------------------------------------------------------------- reader */

typedef struct rbuf {
    const uint8_t *p;
    size_t len, pos;
    bool short_read;
} rbuf;

static const uint8_t *take(rbuf *r, size_t n)
{
    if (r->short_read || n > r->len - r->pos) {
        r->short_read = true;
        return NULL;
    }
    const uint8_t *q = r->p + r->pos;
    r->pos += n;
    return q;
}

static uint64_t get_le(rbuf *r, unsigned bytes)
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

static bool time_ok(int64_t t)
{
    return t >= 0 && t <= SEEN_MAX_TIME_MS;
}

/* Segment ids sorted, with their table positions, for lookups that stay
 * fast however many segments a crafted input claims. */
typedef struct id_index {
    uint64_t *e; /* id << 32 | position */
    uint32_t n;
} id_index;

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

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

static seen_err read_all(rbuf *rb, seen_set *s, id_index *ix)
{
    const uint8_t *magic = take(rb, 4);
    if (magic == NULL)
        return SEEN_ERR_FORMAT_TRUNCATED;
    if (memcmp(magic, FORMAT_MAGIC, 4) != 0)
        return SEEN_ERR_FORMAT_MAGIC;
    uint16_t version = get_u16(rb);
    if (rb->short_read)
        return SEEN_ERR_FORMAT_TRUNCATED;
    if (version != FORMAT_VERSION)
        return SEEN_ERR_FORMAT_VERSION;
    /* Everything else is covered by the checksum: check it before trusting
     * any length. */
    if (rb->len < HEADER_BYTES + CHECKSUM_BYTES)
        return SEEN_ERR_FORMAT_TRUNCATED;
    {
        rbuf tail = {rb->p, rb->len, rb->len - CHECKSUM_BYTES, false};
        uint64_t stored = get_u64(&tail);
        if (XXH3_64bits(rb->p, rb->len - CHECKSUM_BYTES) != stored)
            return SEEN_ERR_FORMAT_CHECKSUM;
        rb->len -= CHECKSUM_BYTES;
    }
    if (get_u16(rb) != 0) /* flags: none defined */
        return CORRUPT;

    seen_policy *p = &s->policy;
    p->window_ms = get_u64(rb);
    p->slices = get_u32(rb);
    p->error = get_f64(rb);
    p->capacity = get_u64(rb);
    uint8_t ids = get_u8(rb);
    p->ids = ids == 0 ? SEEN_IDS_STR : SEEN_IDS_INT;
    p->exact_limit = get_u32(rb);
    s->origin = (int64_t)get_u64(rb);
    s->clock = (int64_t)get_u64(rb);
    s->newest = (int64_t)get_u64(rb);
    s->plan_c = get_u64(rb);
    s->hwm = get_u64(rb);
    s->hwm_clock = (int64_t)get_u64(rb);
    s->next_seg_id = get_u32(rb);
    s->has_origin = get_u8(rb);
    uint32_t nsegs = get_u32(rb), nruns = get_u32(rb), head_n = get_u32(rb);
    if (rb->short_read)
        return SEEN_ERR_FORMAT_TRUNCATED;
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
    /* Fixed-size parts must fit in what is left before allocating. */
    if ((uint64_t)nsegs * SEGMENT_BYTES + (uint64_t)head_n * HEAD_ENTRY_BYTES +
            (uint64_t)nruns * RUN_HEADER_BYTES >
        rb->len - rb->pos)
        return SEEN_ERR_FORMAT_TRUNCATED;

    if (nsegs) {
        s->segs = seen__malloc(nsegs * sizeof *s->segs);
        ix->e = seen__malloc(nsegs * sizeof *ix->e);
        if (s->segs == NULL || ix->e == NULL)
            return SEEN_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < nsegs; i++) {
        seen__segment *g = &s->segs[i];
        g->slice = (int64_t)get_u64(rb);
        g->shadow = get_u64(rb);
        g->phys = 0; /* recounted from the runs and head below */
        g->id = get_u32(rb);
        g->seq = get_u64(rb);
        g->dropped = get_u8(rb);
        s->nsegs = i + 1;
        /* A slice is (t - origin) / slice_ms for times in [0, 2^50], so
         * anything further out is impossible (and would overflow). */
        int64_t max_slice = s->slice_ms ? SEEN_MAX_TIME_MS / (int64_t)s->slice_ms + 1 : 0;
        if (g->dropped > 1 || (g->dropped && g->shadow) || g->id >= s->next_seg_id ||
            g->shadow > SEEN_MAX_COUNT || g->slice < -max_slice || g->slice > max_slice ||
            g->seq > SEEN_MAX_SEQ)
            return CORRUPT;
        if (i > 0) {
            const seen__segment *q = &s->segs[i - 1];
            if (q->slice > g->slice || (q->slice == g->slice && q->seq >= g->seq))
                return CORRUPT;
        }
        ix->e[i] = (uint64_t)g->id << 32 | i;
    }
    if (nsegs) {
        qsort(ix->e, nsegs, sizeof *ix->e, cmp_u64);
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
        s->head_segs[h] = get_u32(rb);
        s->head_n = h + 1;
        if (find_seg(ix, s->head_segs[h]) < 0)
            return CORRUPT;
    }

    if (nruns) {
        s->runs = seen__calloc(nruns, sizeof *s->runs);
        if (s->runs == NULL)
            return SEEN_ERR_NOMEM;
    }
    unsigned __int128 mass = 0; /* of fingerprints: runs with c > 1 */
    for (uint32_t i = 0; i < nruns; i++) {
        seen__run r;
        memset(&r, 0, sizeof r);
        r.c = get_u64(rb);
        r.base = get_u64(rb);
        r.span = get_u64(rb);
        r.golomb_m = get_u64(rb);
        r.bucket_w = get_u64(rb);
        r.code_bits = get_u64(rb);
        r.idx_min_bits = (int64_t)get_u64(rb);
        r.idx_min_items = (int64_t)get_u64(rb);
        r.n = get_u32(rb);
        r.nbuckets = get_u32(rb);
        r.nsegs = get_u32(rb);
        r.w_bits = get_u8(rb);
        r.w_items = get_u8(rb);
        if (rb->short_read)
            return SEEN_ERR_FORMAT_TRUNCATED;
        if (r.c == 0 || ((s->budget == 0 || s->plan_c == 0) && r.c != 1) || r.n == 0 ||
            r.nsegs == 0 || r.nsegs > SEEN_MAX_SEGMENTS || r.code_bits > SEEN_MAX_CODE_BITS ||
            r.nbuckets == 0 || r.nbuckets > r.n || r.w_bits > 62 || r.w_items > 40)
            return CORRUPT;
        size_t payload = run_payload_bytes(&r);
        if (payload > rb->len - rb->pos)
            return SEEN_ERR_FORMAT_TRUNCATED;
        r.mem = seen__calloc(1, seen__run_mem_size(&r));
        if (r.mem == NULL)
            return SEEN_ERR_NOMEM;
        uint32_t *idsw = (uint32_t *)(void *)r.mem;
        for (uint32_t t = 0; t < r.nsegs; t++)
            idsw[t] = get_u32(rb);
        const uint8_t *rest = take(rb, payload - (size_t)r.nsegs * 4);
        if (rest == NULL) {
            seen__free(r.mem);
            return SEEN_ERR_FORMAT_TRUNCATED;
        }
        memcpy(r.mem + (size_t)r.nsegs * 4, rest, payload - (size_t)r.nsegs * 4);
        s->runs[i] = r;
        s->nruns = i + 1;
        /* Each id names a segment, and names it once: the run's ids are
         * kept in age order, so strictly increasing table positions. */
        int32_t last_pos = -1;
        for (uint32_t t = 0; t < r.nsegs; t++) {
            int32_t at = find_seg(ix, idsw[t]);
            if (at <= last_pos)
                return CORRUPT;
            last_pos = at;
        }
        seen_err err = seen__run_validate(&s->runs[i]);
        if (err != SEEN_OK)
            return err;
        seen__run_split(&s->runs[i]);
        mass += r.c > 1 ? (unsigned __int128)r.n * r.c : 0;
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
        uint64_t *phys = seen__malloc(s->nsegs * sizeof *phys);
        if (phys == NULL)
            return SEEN_ERR_NOMEM;
        seen_err err = physical_counts(s, ix, phys);
        for (uint32_t i = 0; err == SEEN_OK && i < s->nsegs; i++) {
            s->segs[i].phys = phys[i];
            if (s->segs[i].shadow > phys[i])
                err = CORRUPT;
        }
        seen__free(phys);
        if (err != SEEN_OK)
            return err;
    }
    return SEEN_OK;
}

seen_err seen_deserialize(const uint8_t *buf, size_t len, seen_set **out)
{
    if (out == NULL || (buf == NULL && len > 0))
        return SEEN_ERR_ARG;
    seen_set *s = seen__calloc(1, sizeof *s);
    if (s == NULL)
        return SEEN_ERR_NOMEM;
    rbuf rb = {buf, len, 0, false};
    id_index ix = {NULL, 0};
    seen_err err = read_all(&rb, s, &ix);
    seen__free(ix.e);
    if (err != SEEN_OK) {
        seen_free(s);
        return err;
    }
    *out = s;
    return SEEN_OK;
}
