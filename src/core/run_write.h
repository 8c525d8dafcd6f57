/*
 * run_write.h — the bit writer runs are coded with, and the assembly of a
 * run from its parts: shared by the encoder (run.c) and the edits that
 * change a run in place (run_edit.c).  Private to the core.
 */
#ifndef SEEN_RUN_WRITE_H
#define SEEN_RUN_WRITE_H

#include "run_layout.h"

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
    uint64_t q, code = 0;
    unsigned len = 0;
    if (golomb_is_rice(g)) {
        /* m = 2^b, as the writer chooses: a long remainder, its top b - 1
         * bits then its lowest. */
        q = gap >> g->b;
        const uint64_t r = gap & (g->m - 1);
        code = (r >> 1) | ((r & 1) << (g->b - 1));
        len = g->b;
    } else if (g->b != 0) {
        q = seen__div(mdiv, gap);
        const uint64_t r = gap - q * g->m;
        /* Short or long remainder, about half and half: select without a
         * branch, as the decoder does. */
        uint64_t is_long = r >= g->short_n;
        uint64_t v = r + g->short_n;
        uint64_t long_code = (v >> 1) | ((v & 1) << (g->b - 1));
        uint64_t mask = 0 - is_long;
        code = (long_code & mask) | (r & ~mask);
        len = g->b - 1 + (unsigned)is_long;
    } else {
        q = gap; /* m = 1 */
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

/* The header fields every encoder sets alike, from n >= 1 strictly
 * increasing values; the layout's own fields are left zero. */
static inline void run_header_init(seen__run *r, uint64_t c, const uint64_t *vals, size_t n,
                                   uint32_t nsegs)
{
    memset(r, 0, sizeof *r);
    r->c = c;
    r->n = (uint32_t)n;
    r->base = vals[0];
    r->span = vals[n - 1] - vals[0];
    r->nsegs = nsegs;
}

/* Make room for more_bits more bits (and the spare bytes); false, and the
 * writer marked failed, if memory runs out. */
bool seen__aw_reserve(acc_writer *w, uint64_t more_bits);
/* Append nbits bits of src from bit `from` (src readable 16 bytes past
 * them); false if memory runs out. */
bool seen__aw_copy(acc_writer *w, const uint8_t *src, uint64_t from, uint64_t nbits);

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
seen_err seen__run_assemble(seen__run *r, const uint64_t *offs, const uint64_t *firsts,
                            const uint64_t *lows, const uint32_t *seg_ids, const uint16_t *tags,
                            const tag_source *old_tags, const uint8_t *codes);
/* Write the tag words of r (mem allocated, index in place) from `tags`
 * or `old_tags`, as seen__run_assemble does. */
void seen__run_put_tags(seen__run *r, const uint16_t *tags, const tag_source *old_tags);

/* The values at gone_at[0..gone) (increasing) leave run r: their tags are
 * charged to removed_per_tag[] and *ts becomes the new run's tags (taken
 * from *own_a / *own_b, the caller's to free).  *keeps false (the counts
 * cleared): a segment would be left without values, so rebuild instead. */
seen_err seen__tags_without(const seen__run *r, const uint64_t *gone_at, size_t gone,
                            uint64_t *removed_per_tag, tag_source *ts, bool *keeps, void **own_a,
                            void **own_b);
/* seen__run_with for an Elias-Fano run (run_ef.c). */
seen_err seen__ef_with(seen__run *out, const seen__run *r, const uint64_t *vals, size_t k,
                       unsigned shape, uint32_t tag, size_t *held, bool *applies);
/* seen__run_without for an Elias-Fano run (run_ef.c). */
seen_err seen__ef_without(seen__run *out, const seen__run *r, const uint64_t *vals, size_t k,
                          unsigned shape, uint64_t *removed_per_tag, size_t *removed,
                          bool *applies);

#endif /* SEEN_RUN_WRITE_H */
