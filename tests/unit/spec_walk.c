/*
 * spec_walk.c — docs/FORMAT.md read field by field, for the tests (see
 * spec_walk.h).  Written from the document, not from format.c, so that a
 * test built on it checks the loader against the specification.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"
#include "spec_walk.h"
#include "testutil.h"

/* ------------------------------------------------- FORMAT.md, field by field */

/* Fields past the first SPEC_MAX_FIELDS (a large head's entries) are
 * read and checked but not kept. */
static uint64_t record(walk *w, const char *name, int at, size_t start, encoding enc, uint64_t v)
{
    if (w->n < SPEC_MAX_FIELDS)
        w->f[w->n++] = (field){name, at, start, w->pos - start, enc, v};
    return v;
}

static uint64_t fixed(walk *w, const char *name, int at, size_t bytes)
{
    assert_true(w->pos + bytes <= w->len);
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; i++)
        v |= (uint64_t)w->b[w->pos + i] << (8 * i);
    size_t start = w->pos;
    w->pos += bytes;
    return record(w, name, at, start, FIXED, v);
}

static uint64_t varint(walk *w, const char *name, int at)
{
    size_t start = w->pos;
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        assert_true(w->pos < w->len && shift < 70);
        uint8_t byte = w->b[w->pos++];
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            break;
    }
    return record(w, name, at, start, UV, v);
}

static int64_t zigzag(walk *w, const char *name, int at)
{
    size_t start = w->pos;
    uint64_t u = varint(w, name, at);
    w->n--;
    int64_t v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    record(w, name, at, start, ZZ, (uint64_t)v);
    return v;
}

static uint64_t shifted(walk *w, const char *name, int at)
{
    size_t start = w->pos;
    assert_true(w->pos < w->len);
    unsigned tz = w->b[w->pos++];
    uint64_t v = varint(w, name, at);
    w->n--;
    return record(w, name, at, start, SH, tz < 64 ? v << tz : 0);
}

/* Version 1 writes every integer at a fixed width; later versions write a
 * varint where version 1 has `bytes` of 4 or 8. */
static uint64_t num(walk *w, const char *name, int at, size_t bytes)
{
    return w->version == 1 ? fixed(w, name, at, bytes) : varint(w, name, at);
}

/* A part of a run's payload (index, tags, codes): kept as a byte range. */
static void payload_part(walk *w, const char *name, int at, size_t bytes)
{
    assert_true(w->pos + bytes <= w->len);
    size_t start = w->pos;
    w->pos += bytes;
    record(w, name, at, start, FIXED, 0);
}

/* Tags a u64 word holds for an alphabet of k (FORMAT.md, "Tags"). */
static unsigned tags_per_word(uint64_t k, bool ef)
{
    if (ef && (k & (k - 1)) == 0) {
        unsigned b = 0;
        while ((UINT64_C(1) << b) < k)
            b++;
        return 64 / b;
    }
    unsigned g = 0;
    unsigned __int128 p = 1;
    while (p * k <= UINT64_MAX) {
        p *= k;
        g++;
    }
    return g;
}

/* Every field of b[0..len), which must be a set the loader accepts. */
void spec_walk(walk *w, const uint8_t *b, size_t len)
{
    memset(w, 0, sizeof *w);
    w->b = b;
    w->len = len;
    assert_true(len >= 14 && memcmp(b, "SEEN", 4) == 0);
    w->pos = 4;
    w->version = (unsigned)fixed(w, "version", -1, 2);
    const unsigned ver = w->version;
    uint64_t capacity = 0, nsegs, nruns, head_n;
    if (ver == 1) {
        fixed(w, "flags", -1, 2);
        fixed(w, "window_ms", -1, 8);
        fixed(w, "slices", -1, 4);
        fixed(w, "error", -1, 8);
        capacity = fixed(w, "capacity", -1, 8);
        fixed(w, "ids", -1, 1);
        fixed(w, "exact_limit", -1, 4);
        fixed(w, "origin", -1, 8);
        fixed(w, "clock", -1, 8);
        fixed(w, "newest", -1, 8);
        fixed(w, "plan_c", -1, 8);
        fixed(w, "hwm", -1, 8);
        fixed(w, "hwm_clock", -1, 8);
        fixed(w, "next_seg_id", -1, 4);
        fixed(w, "has_origin", -1, 1);
    } else {
        uint64_t flags = varint(w, "flags", -1);
        bool v4 = ver >= 4;
        if (!v4 || (flags & 8))
            varint(w, "window_ms", -1);
        if (!v4 || (flags & 16))
            varint(w, "slices", -1);
        if (!v4 || (flags & 32)) {
            if (flags & 4) {
                fixed(w, "error_raw", -1, 8);
            } else {
                varint(w, "error_m", -1);
                fixed(w, "error_e", -1, 1);
            }
        }
        if (!v4 || (flags & 64))
            capacity = varint(w, "capacity", -1);
        if (!v4 || (flags & 128))
            varint(w, "exact_limit", -1);
        varint(w, "origin", -1);
        zigzag(w, "clock-origin", -1);
        zigzag(w, v4 ? "clock-newest" : "newest-origin", -1);
        shifted(w, "plan_c", -1);
        varint(w, "hwm", -1);
        zigzag(w, v4 ? "clock-hwm_clock" : "hwm_clock-origin", -1);
        varint(w, "next_seg_id", -1);
    }
    nsegs = num(w, "nsegs", -1, 4);
    nruns = num(w, "nruns", -1, 4);
    head_n = num(w, "head_n", -1, 4);
    for (int i = 0; i < (int)nsegs; i++) {
        if (ver == 1) {
            fixed(w, "slice", i, 8);
            fixed(w, "shadow", i, 8);
            fixed(w, "id", i, 4);
            fixed(w, "seq", i, 8);
            fixed(w, "dropped", i, 1);
            continue;
        }
        zigzag(w, "slice", i);
        varint(w, "shadow", i);
        varint(w, "id", i); /* id << 1 | dropped */
        varint(w, "seq", i);
        if (ver >= 5 && capacity) {
            zigzag(w, "clock-t_hi", i);
            varint(w, "t_hi-t_lo", i);
        }
    }
    for (int h = 0; h < (int)head_n; h++) {
        fixed(w, "key", h, 8);
        num(w, "head_seg", h, 4);
    }
    for (int i = 0; i < (int)nruns; i++) {
        if (ver == 1)
            fixed(w, "c", i, 8);
        else
            shifted(w, "c", i);
        num(w, "base", i, 8);
        num(w, "span", i, 8);
        uint64_t m = num(w, "golomb_m", i, 8);
        num(w, "bucket_w", i, 8);
        uint64_t code_bits = num(w, "code_bits", i, 8);
        if (ver == 1) {
            fixed(w, "idx_min_bits", i, 8);
            fixed(w, "idx_min_items", i, 8);
        } else {
            zigzag(w, "idx_min_bits", i);
            zigzag(w, "idx_min_items", i);
        }
        uint64_t n = num(w, "n", i, 4);
        uint64_t nbuckets = num(w, "nbuckets", i, 4);
        uint64_t rsegs = num(w, "run_nsegs", i, 4);
        uint64_t w_bits = fixed(w, "w_bits", i, 1);
        uint64_t w_items = fixed(w, "w_items", i, 1);
        uint64_t w_vals = ver >= 3 ? fixed(w, "w_vals|loose", i, 1) & 0x7f : 0;
        for (uint64_t t = 0; t < rsegs; t++)
            num(w, t == 0 ? "run_seg0" : t == 1 ? "run_seg1" : "run_seg", i, 4);
        bool ef = ver >= 4 && m == 0;
        payload_part(w, "index", i,
                     (size_t)(((nbuckets - 1) * (w_bits + w_items + w_vals) + 7) / 8));
        if (rsegs > 1)
            payload_part(w, "tags", i,
                         (size_t)((n + tags_per_word(rsegs, ef) - 1) / tags_per_word(rsegs, ef)) *
                             8);
        payload_part(w, "codes", i, (size_t)((code_bits + 7) / 8));
    }
    assert_int_equal(w->pos + 8, len); /* then the checksum, and nothing else */
}

const field *spec_find(const walk *w, const char *name, int at)
{
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->f[i].name, name) == 0 && w->f[i].at == at)
            return &w->f[i];
    fail_msg("no field %s[%d] in a version %u set", name, at, w->version);
    return NULL;
}

size_t spec_put_varint(uint8_t *out, uint64_t v)
{
    size_t k = 0;
    do {
        out[k] = (uint8_t)(v & 0x7f) | (v > 0x7f ? 0x80 : 0);
        v >>= 7;
        k++;
    } while (v);
    return k;
}

/* The bytes with `f`'s bytes replaced by `with` (wlen of them), the
 * checksum made right; *out_len their length. */
uint8_t *spec_splice(const walk *w, const field *f, const uint8_t *with, size_t wlen,
                     size_t *out_len)
{
    *out_len = w->len - f->len + wlen;
    uint8_t *b = malloc(*out_len);
    memcpy(b, w->b, f->off);
    memcpy(b + f->off, with, wlen);
    memcpy(b + f->off + wlen, w->b + f->off + f->len, w->len - f->off - f->len);
    fix_checksum(b, *out_len);
    return b;
}

/* The bytes with field f holding v, in its encoding. */
uint8_t *spec_forged_field(const walk *w, const field *f, uint64_t v, size_t *out_len)
{
    uint8_t enc[16];
    size_t k = 0;
    switch (f->enc) {
    case FIXED:
        for (; k < f->len; k++)
            enc[k] = (uint8_t)(v >> (8 * k));
        break;
    case UV:
        k = spec_put_varint(enc, v);
        break;
    case ZZ:
        k = spec_put_varint(enc, (v << 1) ^ (uint64_t)((int64_t)v >> 63));
        break;
    case SH: {
        unsigned tz = v ? (unsigned)__builtin_ctzll(v) : 0;
        enc[0] = (uint8_t)tz;
        k = 1 + spec_put_varint(enc + 1, v >> tz);
        break;
    }
    }
    return spec_splice(w, f, enc, k, out_len);
}

/* The bytes with field `name` of entry `at` holding v. */
uint8_t *spec_forged(const walk *w, const char *name, int at, uint64_t v, size_t *out_len)
{
    return spec_forged_field(w, spec_find(w, name, at), v, out_len);
}

seen_err spec_load(const uint8_t *b, size_t len)
{
    seen_set *s = NULL;
    seen_err err = seen_deserialize(b, len, &s);
    if (err == SEEN_OK)
        assert_int_equal(seen__set_check(s), SEEN_OK);
    seen_free(s);
    return err;
}
