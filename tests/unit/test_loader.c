/*
 * test_loader.c — every rule the loader enforces, broken one at a time.
 *
 * The fuzzers show that no input crashes the loader; they cannot show that
 * it refuses what docs/FORMAT.md calls corrupt, since a check dropped from
 * format.c still loads every input without a crash.  Here FORMAT.md's own
 * reading of a valid set's bytes (spec_walk.h) finds one field, a forgery
 * re-encodes it with a value that breaks one rule, the checksum is made
 * right again, and the loader must refuse the bytes with the error the
 * rule calls for (corrupt, not truncated: most forgeries would also run
 * past the end if the loader went on).  Run payloads are edited bit by bit
 * the same way: bucket starts and counts, tag words, Elias-Fano uppers and
 * lows, a run's ends.  `make test-mutants` removes the loader's checks one
 * at a time (tests/mutants/mutants.txt), and this file is what must catch
 * each.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>

#include "internal.h"
#include "testutil.h"

#define DAY (86400000LL)
#define T0 (1790000000000LL)
#define CORRUPT SEEN_ERR_FORMAT_CORRUPT

#include "spec_walk.h"

/* Field `name` of entry `at` set to v: the loader answers `want`. */
static void check_forgery(const walk *w, const char *name, int at, uint64_t v, seen_err want)
{
    size_t len;
    uint8_t *b = spec_forged(w, name, at, v, &len);
    seen_err got = spec_load(b, len);
    free(b);
    if (got != want)
        fail_msg("version %u, %s[%d] = %llu (0x%llx): %s, expected %s", w->version, name, at,
                 (unsigned long long)v, (unsigned long long)v, seen_strerror(got),
                 seen_strerror(want));
}

/* One field of a forgery that changes several. */
typedef struct change {
    const char *name;
    int at;
    uint64_t v;
} change;

/* The loader's answer to the bytes with every change made, in turn (each
 * on the bytes the one before left, walked again). */
static seen_err load_changed(const walk *w, const change *c, size_t n)
{
    static walk step;
    uint8_t *b = NULL;
    size_t len = 0;
    const walk *from = w;
    for (size_t i = 0; i < n; i++) {
        uint8_t *next = spec_forged(from, c[i].name, c[i].at, c[i].v, &len);
        free(b);
        b = next;
        if (i + 1 < n) {
            spec_walk(&step, b, len);
            from = &step;
        }
    }
    seen_err err = spec_load(b, len);
    free(b);
    return err;
}

/* The bytes with [from, to) replaced by `with`, the checksum made right. */
static seen_err load_replaced(const walk *w, size_t from, size_t to, const uint8_t *with,
                              size_t wlen)
{
    field f = {"range", -1, from, to - from, FIXED, 0};
    size_t len;
    uint8_t *b = spec_splice(w, &f, with, wlen, &len);
    seen_err err = spec_load(b, len);
    free(b);
    return err;
}

/* The current value of a field, as spec_forged() takes it. */
static uint64_t value(const walk *w, const char *name, int at)
{
    return spec_find(w, name, at)->v;
}

/* ------------------------------------------------------------- the sets */

typedef struct sample {
    uint8_t *b;
    size_t len;
    walk w;
} sample;

static void take(sample *x, const seen_set *s, unsigned version)
{
    assert_int_equal(seen__serialize_as(s, version, NULL, 0, &x->len), SEEN_ERR_BUFFER);
    x->len = seen__serialized_size_as(s, version);
    x->b = malloc(x->len);
    size_t w = 0;
    assert_int_equal(seen__serialize_as(s, version, x->b, x->len, &w), SEEN_OK);
    assert_int_equal(spec_load(x->b, x->len), SEEN_OK);
    spec_walk(&x->w, x->b, x->len);
    /* Each field forged with its own value is the same bytes: the forgery
     * changes what it says it changes and nothing else. */
    for (size_t i = 0; i < x->w.n; i++) {
        const field *f = &x->w.f[i];
        if (strcmp(f->name, "index") == 0 || strcmp(f->name, "tags") == 0 ||
            strcmp(f->name, "codes") == 0)
            continue;
        size_t len;
        uint8_t *same = spec_forged_field(&x->w, f, f->v, &len);
        assert_int_equal(len, x->len);
        assert_memory_equal(same, x->b, len);
        free(same);
    }
}

static void drop(sample *x)
{
    free(x->b);
}

static seen_set *written_live(seen_policy p, size_t items, int64_t span, size_t readds)
{
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    str_item it[20];
    seen_str page[20];
    const size_t pages = (items + 19) / 20;
    for (size_t k = 0; k < pages; k++) {
        int64_t now = T0 + (int64_t)((double)span * (double)k / (double)pages);
        for (size_t j = 0; j < 20; j++) {
            /* The first `readds` items come back in every later page. */
            make_str(&it[j], k > 0 && j < readds ? j : k * 20 + j);
            page[j] = it[j].s;
        }
        assert_int_equal(seen_add_str(s, page, 20, NULL, now, NULL), SEEN_OK);
    }
    return s;
}

/* Such a set, in the version the writer chooses for it. */
static void written_sample(sample *x, seen_policy p, size_t items, int64_t span)
{
    seen_set *s = written_live(p, items, span, 0);
    take(x, s, p.capacity ? 5 : 4);
    seen_free(s);
}

/* A set with several segments, a head, Golomb runs of several segments
 * and re-added items (shadows), in version 4. */
static void live_sample(sample *x)
{
    seen_policy p;
    seen_policy_default(&p);
    seen_set *s = written_live(p, 3000, 80 * DAY, 2);
    /* Three more items stay in the head. */
    str_item it[3];
    seen_str page[3];
    for (size_t j = 0; j < 3; j++) {
        make_str(&it[j], 100000 + j);
        page[j] = it[j].s;
    }
    assert_int_equal(seen_add_str(s, page, 3, NULL, T0 + 80 * DAY, NULL), SEEN_OK);
    take(x, s, 4);
    seen_free(s);
}

/* -------------------------------------------------------------- the rules */

static int first_multi_run(const walk *w)
{
    for (int i = 0;; i++)
        if (value(w, "run_nsegs", i) > 1)
            return i;
}

static void test_walk_reads_every_version(void **state)
{
    (void)state;
    /* Every set of the fuzz corpus that loads (versions 1 to 6) walks to
     * its checksum. */
    DIR *dir = opendir("tests/fuzz/corpus/load");
    assert_non_null(dir);
    size_t walked = 0;
    unsigned versions = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[512];
        snprintf(path, sizeof path, "tests/fuzz/corpus/load/%s", e->d_name);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        static uint8_t buf[1 << 20];
        size_t len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        if (spec_load(buf, len) != SEEN_OK)
            continue;
        static walk w;
        spec_walk(&w, buf, len);
        versions |= 1u << w.version;
        walked++;
    }
    closedir(dir);
    assert_true(walked >= 40);
    assert_int_equal(versions, 0x7e);
}

static void test_header_rules(void **state)
{
    (void)state;
    static sample x;
    live_sample(&x);
    const walk *w = &x.w;
    const uint64_t origin = value(w, "origin", -1);
    const int64_t clock_less_origin = (int64_t)value(w, "clock-origin", -1);
    const uint64_t max_time = (uint64_t)SEEN_MAX_TIME_MS;
    /* Flags: no unknown bit; the raw error form only with the error. */
    check_forgery(w, "flags", -1, value(w, "flags", -1) | 512, CORRUPT);
    check_forgery(w, "flags", -1, value(w, "flags", -1) | 256, CORRUPT); /* raw keys, version 4 */
    check_forgery(w, "flags", -1, value(w, "flags", -1) | 4, CORRUPT);
    /* Times within 0 ... 2^50, origin <= newest <= clock. */
    check_forgery(w, "origin", -1, max_time + 1, CORRUPT);
    check_forgery(w, "clock-origin", -1, (uint64_t)(int64_t)-1, CORRUPT);
    check_forgery(w, "clock-origin", -1, max_time - origin + 1, CORRUPT);
    check_forgery(w, "clock-newest", -1, (uint64_t)(int64_t)-1, CORRUPT);
    check_forgery(w, "clock-newest", -1, (uint64_t)(clock_less_origin + 1), CORRUPT);
    check_forgery(w, "clock-hwm_clock", -1, (uint64_t)(clock_less_origin + (int64_t)origin + 1),
                  CORRUPT);
    check_forgery(w, "clock-hwm_clock", -1, (uint64_t)(int64_t) - (int64_t)max_time, CORRUPT);
    {
        /* The clock past 2^50, newest and hwm_clock where they were. */
        const int64_t clock = (int64_t)origin + clock_less_origin;
        const int64_t newest = clock - (int64_t)value(w, "clock-newest", -1);
        const int64_t hwm_clock = clock - (int64_t)value(w, "clock-hwm_clock", -1);
        const int64_t late = SEEN_MAX_TIME_MS + 1;
        const change c[] = {{"clock-origin", -1, (uint64_t)(late - (int64_t)origin)},
                            {"clock-newest", -1, (uint64_t)(late - newest)},
                            {"clock-hwm_clock", -1, (uint64_t)(late - hwm_clock)}};
        assert_int_equal(load_changed(w, c, 3), CORRUPT);
        const change ok[] = {{"clock-origin", -1, (uint64_t)(clock + 1 - (int64_t)origin)},
                             {"clock-newest", -1, (uint64_t)(clock + 1 - newest)},
                             {"clock-hwm_clock", -1, (uint64_t)(clock + 1 - hwm_clock)}};
        assert_int_equal(load_changed(w, ok, 3), SEEN_OK);
    }
    /* Counts within the limits: refused before anything is read. */
    check_forgery(w, "hwm", -1, SEEN_MAX_COUNT + 1, CORRUPT);
    check_forgery(w, "next_seg_id", -1, (uint64_t)SEEN_SEG_ID_LIMIT + 1, CORRUPT);
    check_forgery(w, "nsegs", -1, SEEN_MAX_SEGMENTS + 1, CORRUPT);
    check_forgery(w, "nruns", -1, SEEN_MAX_RUNS + 1, CORRUPT);
    check_forgery(w, "head_n", -1, SEEN_MAX_HEAD + 1, CORRUPT);
    /* The plan's divisor: at most the budget (0.001 * 2^64). */
    check_forgery(w, "plan_c", -1, UINT64_C(1) << 60, CORRUPT);
    /* A set that never held anything holds nothing. */
    check_forgery(w, "flags", -1, value(w, "flags", -1) & ~UINT64_C(1), CORRUPT);
    /* Trailing bytes, and a header shorter than the least. */
    uint8_t *longer = malloc(x.len + 1);
    memcpy(longer, x.b, x.len - 8);
    longer[x.len - 8] = 0;
    memcpy(longer + x.len - 7, x.b + x.len - 8, 8);
    fix_checksum(longer, x.len + 1);
    assert_int_equal(spec_load(longer, x.len + 1), CORRUPT);
    free(longer);
    drop(&x);

    /* An exact set (error 0) has no plan. */
    seen_policy p;
    seen_policy_default(&p);
    p.error = 0;
    written_sample(&x, p, 200, 10 * DAY);
    check_forgery(&x.w, "plan_c", -1, 1, CORRUPT);
    {
        /* The error's decimal form: m below 2^53 even where m / 10^e is a
         * valid error (9.0e-7; the runs hold exact keys, within any
         * budget). */
        assert_int_equal(value(&x.w, "error_m", -1), 0);
        const change ok[] = {{"error_m", -1, (UINT64_C(1) << 53) - 1}, {"error_e", -1, 22}};
        assert_int_equal(load_changed(&x.w, ok, 2), SEEN_OK);
        const change c[] = {{"error_m", -1, UINT64_C(1) << 53}, {"error_e", -1, 22}};
        assert_int_equal(load_changed(&x.w, c, 2), CORRUPT);
    }
    drop(&x);

    /* The error's decimal form: m below 2^53. */
    seen_policy_default(&p);
    p.error = 0.002;
    written_sample(&x, p, 3000, 10 * DAY);
    check_forgery(&x.w, "error_m", -1, UINT64_C(1) << 53, CORRUPT);
    /* A budget smaller than what the runs hold: 0.000002 (m 2, e 6) where
     * they were planned for 0.002. */
    check_forgery(&x.w, "error_e", -1, 6, CORRUPT);
    drop(&x);
}

static void test_segment_rules(void **state)
{
    (void)state;
    static sample x;
    live_sample(&x);
    const walk *w = &x.w;
    const uint64_t next_id = value(w, "next_seg_id", -1);
    const int last = (int)value(w, "nsegs", -1) - 1;
    assert_true(last >= 2);
    int shadowed = -1;
    for (int i = 0; i <= last && shadowed < 0; i++)
        if (value(w, "shadow", i) > 0)
            shadowed = i;
    assert_true(shadowed >= 0);
    /* Ids: below next_seg_id, each once; a dropped segment has no shadow. */
    check_forgery(w, "id", 1, next_id << 1, CORRUPT);
    check_forgery(w, "id", 1, value(w, "id", 0), CORRUPT);
    check_forgery(w, "id", shadowed, value(w, "id", shadowed) | 1, CORRUPT);
    /* Shadows: at most the entries the segment stores. */
    check_forgery(w, "shadow", 0, SEEN_MAX_COUNT + 1, CORRUPT);
    check_forgery(w, "shadow", 1, 1u << 20, CORRUPT);
    /* Slices within 2^50 / L + 1 of 0 either way, in order. */
    const int64_t slice_ms = (90 * DAY + 3) / 4;
    const int64_t max_slice = SEEN_MAX_TIME_MS / slice_ms + 1;
    check_forgery(w, "slice", 0, (uint64_t)(max_slice + 1), CORRUPT);
    check_forgery(w, "slice", 0, (uint64_t)(-max_slice - 1), CORRUPT);
    check_forgery(w, "slice", 0, (uint64_t)((int64_t)1 << 52), CORRUPT);
    check_forgery(w, "slice", 1, (uint64_t)(int64_t)-1, CORRUPT);
    /* Two segments of one slice: their steps rise. */
    assert_int_equal(value(w, "seq", last), value(w, "seq", last - 1));
    check_forgery(w, "slice", last, 0, CORRUPT);
    check_forgery(w, "seq", 0, SEEN_MAX_SEQ + 1, CORRUPT);
    drop(&x);

    /* A capped set's count steps: time ranges within 0 ... 2^50. */
    seen_policy p;
    seen_policy_default(&p);
    p.capacity = 500;
    written_sample(&x, p, 1500, 20 * DAY);
    w = &x.w;
    const int64_t clock = (int64_t)value(w, "origin", -1) + (int64_t)value(w, "clock-origin", -1);
    check_forgery(w, "clock-t_hi", 0, (uint64_t)(int64_t)(clock + 1), CORRUPT);
    check_forgery(w, "clock-t_hi", 0, (uint64_t)(clock - SEEN_MAX_TIME_MS - 1), CORRUPT);
    check_forgery(w, "t_hi-t_lo", 0, (uint64_t)clock + 1, CORRUPT);
    /* Two steps of one slice in order of their step numbers. */
    int same = -1;
    for (int i = 1; i < (int)value(w, "nsegs", -1) && same < 0; i++)
        if (value(w, "slice", i) == 0)
            same = i;
    assert_true(same > 0);
    check_forgery(w, "seq", same, value(w, "seq", same - 1), CORRUPT);
    drop(&x);
}

static void test_head_and_run_rules(void **state)
{
    (void)state;
    static sample x;
    live_sample(&x);
    const walk *w = &x.w;
    const uint64_t next_id = value(w, "next_seg_id", -1);
    assert_true(value(w, "head_n", -1) > 0);
    /* A head entry names a segment of the table, in 32 bits. */
    check_forgery(w, "head_seg", 0, next_id, CORRUPT);
    check_forgery(w, "head_seg", 0, (UINT64_C(1) << 32) + value(w, "head_seg", 0), CORRUPT);
    const int r = first_multi_run(w);
    /* Divisors: c >= 1, values within what a 64-bit key divided by c
     * gives, in one form (odd after the shift). */
    check_forgery(w, "c", r, 0, CORRUPT);
    check_forgery(w, "c", r, value(w, "c", r) << 20, CORRUPT);
    check_forgery(w, "span", r, UINT64_MAX - value(w, "base", r) + 1, CORRUPT);
    /* Counts and widths within their bounds. */
    check_forgery(w, "n", r, 0, CORRUPT);
    check_forgery(w, "run_nsegs", r, 0, CORRUPT);
    check_forgery(w, "run_nsegs", r, SEEN_MAX_SEGMENTS + 1, CORRUPT);
    check_forgery(w, "code_bits", r, SEEN_MAX_CODE_BITS + 1, CORRUPT);
    check_forgery(w, "nbuckets", r, 0, CORRUPT);
    check_forgery(w, "nbuckets", r, value(w, "n", r) + 1, CORRUPT);
    check_forgery(w, "w_bits", r, 63, CORRUPT);
    check_forgery(w, "w_items", r, 41, CORRUPT);
    check_forgery(w, "w_vals|loose", r, 65, CORRUPT);
    check_forgery(w, "w_vals|loose", r, 3, CORRUPT); /* w_vals in a run cut by value */
    /* The run's segment ids name segments, in the table's order. */
    check_forgery(w, "run_seg0", r, value(w, "run_seg1", r), CORRUPT);
    check_forgery(w, "run_seg1", r, value(w, "run_seg0", r), CORRUPT);
    check_forgery(w, "run_seg0", r, next_id + 5, CORRUPT);
    check_forgery(w, "run_seg1", r, next_id + 5, CORRUPT);
    /* An index that places the buckets' items wrongly: only decoding every
     * bucket tells. */
    check_forgery(w, "idx_min_items", 0, value(w, "idx_min_items", 0) + 1, CORRUPT);
    /* A run not marked loose ends at base + span. */
    /* A run not marked loose ends at base + span (one more keeps the
     * bucket width, so only the ends tell). */
    const uint64_t span = value(w, "span", 0), nb = value(w, "nbuckets", 0);
    assert_true(value(w, "golomb_m", 0) > 0 && value(w, "w_vals|loose", 0) == 0);
    assert_int_equal((span + 1 + nb - 1) / nb, (span + 2 + nb - 1) / nb);
    check_forgery(w, "span", 0, span + 1, CORRUPT);
    /* Codes that do not decode to what the header says: the second half
     * all zeros, one unary part running past the end.  (A single bit
     * flipped may decode to other values within the rules: the checksum
     * is what guards those.) */
    {
        const field *codes = spec_find(w, "codes", r);
        size_t len = x.len;
        uint8_t *b = malloc(len);
        memcpy(b, x.b, len);
        memset(b + codes->off + codes->len / 2, 0, codes->len - codes->len / 2);
        fix_checksum(b, len);
        assert_int_equal(spec_load(b, len), CORRUPT);
        /* Eight zero bytes in a middle bucket: its first and last buckets
         * decode as before, so only decoding every bucket tells. */
        memcpy(b, x.b, len);
        memset(b + codes->off + codes->len / 2, 0, 8);
        fix_checksum(b, len);
        assert_int_equal(spec_load(b, len), CORRUPT);
        free(b);
    }
    drop(&x);

    /* An exact set's runs hold keys: c = 1. */
    seen_policy p;
    seen_policy_default(&p);
    p.error = 0;
    written_sample(&x, p, 400, 10 * DAY);
    assert_true(value(&x.w, "nruns", -1) > 0);
    check_forgery(&x.w, "c", 0, 3, CORRUPT);
    drop(&x);
    /* The same with small integer ids, whose values a divisor of 2 keeps
     * within 64 bits (and an exact set has no budget to exceed). */
    p.ids = SEEN_IDS_INT;
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    for (uint64_t i = 0; i < 400; i++)
        assert_int_equal(seen_add_int(s, &i, 1, NULL, T0 + (int64_t)i, NULL), SEEN_OK);
    take(&x, s, 4);
    seen_free(s);
    assert_true(value(&x.w, "nruns", -1) > 0);
    check_forgery(&x.w, "c", 0, 1, SEEN_OK);
    check_forgery(&x.w, "c", 0, 2, CORRUPT);
    drop(&x);
}

/* A set of two segments: 100 items in one run, three more a slice later
 * in the head. */
static void test_small_set_rules(void **state)
{
    (void)state;
    seen_policy p;
    seen_policy_default(&p);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    str_item it[100];
    seen_str page[100];
    for (size_t j = 0; j < 100; j++) {
        make_str(&it[j], j);
        page[j] = it[j].s;
    }
    assert_int_equal(seen_add_str(s, page, 100, NULL, T0, NULL), SEEN_OK);
    assert_int_equal(seen_add_str(s, page + 97, 3, NULL, T0 + 30 * DAY, NULL), SEEN_OK);
    for (size_t j = 0; j < 3; j++)
        make_str(&it[j], 1000 + j);
    assert_int_equal(seen_add_str(s, page, 3, NULL, T0 + 30 * DAY, NULL), SEEN_OK);
    static sample x;
    take(&x, s, 4);
    seen_free(s);
    const walk *w = &x.w;
    assert_int_equal(value(w, "nsegs", -1), 2);
    assert_int_equal(value(w, "nruns", -1), 1);
    assert_int_equal(value(w, "run_nsegs", 0), 1);
    assert_int_equal(value(w, "nbuckets", 0), 1);
    const int head_n = (int)value(w, "head_n", -1);
    assert_true(head_n > 0);
    const uint64_t id0 = value(w, "id", 0) >> 1, id1 = value(w, "id", 1) >> 1;
    assert_int_equal(value(w, "run_seg0", 0), id0);
    /* Two segments of one id, the head's entries named by it: refused
     * for the id alone. */
    change c[8] = {{"id", 1, id0 << 1}};
    size_t n = 1;
    for (int h = 0; h < head_n && n < 8; h++)
        if (value(w, "head_seg", h) == id1)
            c[n++] = (change){"head_seg", h, id0};
    assert_true(n > 1 && n < 8);
    assert_int_equal(load_changed(w, c, n), CORRUPT);
    /* A run of no segment (its one id left out). */
    const field *nsegs = spec_find(w, "run_nsegs", 0), *id = spec_find(w, "run_seg0", 0);
    uint8_t with[8] = {0};
    size_t between = id->off - (nsegs->off + nsegs->len);
    assert_true(between < sizeof with);
    memcpy(with + 1, x.b + nsegs->off + nsegs->len, between);
    assert_int_equal(load_replaced(w, nsegs->off, id->off + id->len, with, 1 + between), CORRUPT);
    /* w_vals only in a run cut by rank, even where no index holds them. */
    check_forgery(w, "w_vals|loose", 0, 5, CORRUPT);
    drop(&x);
}

/* An IDS INT set keyed by its raw ids (version 6): integer ids, an error
 * bound, no plan. */
static void test_raw_keys_rules(void **state)
{
    (void)state;
    seen_policy p;
    seen_policy_default(&p);
    p.ids = SEEN_IDS_INT;
    p.error = 0.01;
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    for (uint64_t i = 0; i < 300; i++) {
        uint64_t id = 2700000 + 1333 * i;
        assert_int_equal(seen_add_int(s, &id, 1, NULL, T0 + (int64_t)i * 1000, NULL), SEEN_OK);
    }
    assert_true(s->raw_keys);
    static sample x;
    take(&x, s, 6);
    seen_free(s);
    const walk *w = &x.w;
    check_forgery(w, "flags", -1, value(w, "flags", -1) & ~UINT64_C(2), CORRUPT);
    check_forgery(w, "error_m", -1, 0, CORRUPT);
    check_forgery(w, "plan_c", -1, 1, CORRUPT);
    check_forgery(w, "flags", -1, value(w, "flags", -1) & ~UINT64_C(256), CORRUPT);
    drop(&x);
}

/* Elias-Fano runs: their low bits within 56; and in versions 2 and 3,
 * where no Golomb parameter is 0, runs cut by rank (version 3) and bucket
 * counts other than the canonical ones are refused in version 2. */
static void test_run_layout_rules(void **state)
{
    (void)state;
    static uint8_t buf[1 << 20];
    static walk w;
    size_t len;
    FILE *f = fopen("tests/fuzz/corpus/load/compact-str-ef", "rb");
    assert_non_null(f);
    len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    spec_walk(&w, buf, len);
    int ef = -1;
    for (int i = 0; i < (int)value(&w, "nruns", -1) && ef < 0; i++)
        if (value(&w, "golomb_m", i) == 0)
            ef = i;
    assert_true(ef >= 0);
    check_forgery(&w, "bucket_w", ef, SEEN_EF_MAX_LOW_BITS + 1, CORRUPT);
    check_forgery(&w, "bucket_w", ef, value(&w, "bucket_w", ef) + 1, CORRUPT);
    /* A byte's worth above: not taken modulo 256. */
    check_forgery(&w, "bucket_w", ef, value(&w, "bucket_w", ef) + 256, CORRUPT);

    seen_policy p;
    seen_policy_default(&p);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    enum { N = 3000 };
    seen_str *items = malloc(N * sizeof *items);
    str_item *text = malloc(N * sizeof *text);
    for (size_t i = 0; i < N; i++) {
        make_str(&text[i], i);
        items[i] = text[i].s;
    }
    assert_int_equal(seen_add_str(s, items, N, NULL, T0, NULL), SEEN_OK);
    free(items);
    free(text);
    static sample x;
    take(&x, s, 2);
    seen_free(s);
    assert_true(value(&x.w, "nruns", -1) > 0);
    assert_true(value(&x.w, "nbuckets", 0) > 1);
    check_forgery(&x.w, "golomb_m", 0, 0, CORRUPT);
    check_forgery(&x.w, "bucket_w", 0, 0, CORRUPT); /* cut by rank, only in version 3 */
    check_forgery(&x.w, "nbuckets", 0, value(&x.w, "nbuckets", 0) + 1, CORRUPT);
    drop(&x);
}

/* A varint of `v` in exactly ten bytes, the last `last`. */
static size_t ten_bytes(uint8_t *enc, uint64_t v, uint8_t last)
{
    for (unsigned i = 0; i < 9; i++)
        enc[i] = (uint8_t)((v >> (7 * i)) & 0x7f) | 0x80;
    enc[9] = last;
    return 10;
}

/* `f` (a varint) written one byte longer than its one form. */
static uint8_t *overlong(const walk *w, const field *f, size_t *len)
{
    uint8_t enc[16];
    size_t n = spec_put_varint(enc, f->v);
    enc[n - 1] |= 0x80;
    enc[n++] = 0;
    return spec_splice(w, f, enc, n, len);
}

/* A divisor as `tz` and its varint `v`. */
static seen_err load_shifted(const walk *w, const field *f, unsigned tz, uint64_t v)
{
    uint8_t enc[16];
    enc[0] = (uint8_t)tz;
    size_t n = 1 + spec_put_varint(enc + 1, v), len;
    uint8_t *b = spec_splice(w, f, enc, n, &len);
    seen_err err = spec_load(b, len);
    free(b);
    return err;
}

/* Integers in their one form: a varint's last byte is not 0 and it holds
 * 64 bits at most, a u32 field's varint fits 32 bits, a divisor's odd part
 * is odd. */
static void test_integer_forms(void **state)
{
    (void)state;
    static sample x;
    live_sample(&x);
    const walk *w = &x.w;
    const field *origin = spec_find(w, "origin", -1);
    size_t len;
    uint8_t *b = overlong(w, origin, &len);
    assert_int_equal(spec_load(b, len), CORRUPT);
    free(b);
    uint8_t enc[16];
    b = spec_splice(w, origin, enc, ten_bytes(enc, origin->v, 0), &len);
    assert_int_equal(spec_load(b, len), CORRUPT);
    free(b);
    b = spec_splice(w, origin, enc, ten_bytes(enc, origin->v, 2), &len);
    assert_int_equal(spec_load(b, len), CORRUPT);
    free(b);
    check_forgery(w, "nbuckets", 0, (UINT64_C(1) << 32) + value(w, "nbuckets", 0), CORRUPT);
    /* Divisors: tz <= 63, v << tz within 64 bits, v odd unless 0 (and
     * then tz 0).  Some run's divisor is even: the same value with its
     * odd part doubled must be refused. */
    const field *even = NULL;
    for (size_t i = 0; i < w->n && even == NULL; i++)
        if (w->f[i].enc == SH && w->f[i].v && !(w->f[i].v & 1))
            even = &w->f[i];
    assert_non_null(even);
    unsigned tz = (unsigned)__builtin_ctzll(even->v);
    assert_int_equal(load_shifted(w, even, tz, even->v >> tz), SEEN_OK);
    assert_int_equal(load_shifted(w, even, tz - 1, even->v >> (tz - 1)), CORRUPT);
    assert_int_equal(load_shifted(w, even, 64, 1), CORRUPT);
    assert_int_equal(load_shifted(w, even, 63, 3), CORRUPT);
    assert_int_equal(load_shifted(w, even, 1, 0), CORRUPT);
    drop(&x);

    /* Near the end of the bytes the reader goes carefully: the last field
     * of a set that holds only its head. */
    seen_policy p;
    seen_policy_default(&p);
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    for (uint64_t i = 0; i < 10; i++) {
        str_item it;
        make_str(&it, i);
        assert_int_equal(seen_add_str(s, &it.s, 1, NULL, T0, NULL), SEEN_OK);
    }
    take(&x, s, 4);
    seen_free(s);
    w = &x.w;
    assert_int_equal(value(w, "nruns", -1), 0);
    const field *last = spec_find(w, "head_seg", (int)value(w, "head_n", -1) - 1);
    assert_int_equal(last->off + last->len + 8, x.len);
    b = overlong(w, last, &len);
    assert_int_equal(spec_load(b, len), CORRUPT);
    free(b);
    b = spec_splice(w, last, enc, ten_bytes(enc, last->v, 0), &len);
    assert_int_equal(spec_load(b, len), CORRUPT);
    free(b);
    drop(&x);
}

/* ------------------------------------------------------- run payloads */

/* `width` bits at bit `at` of p, LSB-first (FORMAT.md's bit strings). */
static uint64_t bits_at(const uint8_t *p, uint64_t at, unsigned width)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < width; i++)
        v |= (uint64_t)((p[(at + i) / 8] >> ((at + i) % 8)) & 1) << i;
    return v;
}

static void put_bits_at(uint8_t *p, uint64_t at, unsigned width, uint64_t v)
{
    for (unsigned i = 0; i < width; i++) {
        uint8_t bit = (uint8_t)(1u << ((at + i) % 8));
        p[(at + i) / 8] = (uint8_t)((p[(at + i) / 8] & ~bit) | (((v >> i) & 1) ? bit : 0));
    }
}

/* A copy of the sample's bytes to edit. */
static uint8_t *copy_of(const uint8_t *b, size_t len)
{
    uint8_t *c = malloc(len);
    memcpy(c, b, len);
    return c;
}

/* The loader's answer to edited bytes once their checksum is right. */
static seen_err load_edited(uint8_t *b, size_t len)
{
    fix_checksum(b, len);
    seen_err err = spec_load(b, len);
    free(b);
    return err;
}

/* A Golomb run's index: entry j - 1 (bucket j's start) holds the bits
 * field, the items field and, cut by rank, its low. */
typedef struct index_entry {
    uint64_t at; /* bit of the index field's first byte */
    unsigned w_bits, w_items, w_vals;
} index_entry;

static index_entry entry_of(const walk *w, int run, uint32_t j)
{
    unsigned wb = (unsigned)value(w, "w_bits", run), wi = (unsigned)value(w, "w_items", run);
    unsigned wv = w->version >= 3 ? (unsigned)(value(w, "w_vals|loose", run) & 0x7f) : 0;
    uint64_t base = (uint64_t)spec_find(w, "index", run)->off * 8;
    return (index_entry){base + (uint64_t)(j - 1) * (wb + wi + wv), wb, wi, wv};
}

/* Golomb runs: bucket starts, counts and codes. */
static void test_golomb_payload_rules(void **state)
{
    (void)state;
    static sample x;
    live_sample(&x);
    const walk *w = &x.w;
    const int r = 0;
    assert_true(value(w, "golomb_m", r) > 0 && value(w, "nbuckets", r) > 2);
    index_entry e = entry_of(w, r, 1);
    /* Bucket 1 one item later or earlier: both buckets decode to other
     * counts than the index gives. */
    uint64_t items = bits_at(x.b, e.at + e.w_bits, e.w_items);
    uint64_t moved = items + 1 < (UINT64_C(1) << e.w_items) ? items + 1 : items - 1;
    uint8_t *b = copy_of(x.b, x.len);
    put_bits_at(b, e.at + e.w_bits, e.w_items, moved);
    assert_int_equal(load_edited(b, x.len), CORRUPT);
    /* Bucket 1 a bit later or earlier: bucket 0's codes end elsewhere. */
    uint64_t bits = bits_at(x.b, e.at, e.w_bits);
    b = copy_of(x.b, x.len);
    put_bits_at(b, e.at, e.w_bits, bits + 1 < (UINT64_C(1) << e.w_bits) ? bits + 1 : bits - 1);
    assert_int_equal(load_edited(b, x.len), CORRUPT);
    /* The first code not 0: the first value is not base. */
    const field *codes = spec_find(w, "codes", r);
    unsigned k = (unsigned)__builtin_ctzll(value(w, "golomb_m", r));
    assert_int_equal(bits_at(x.b, codes->off * 8, 1), 1); /* quotient 0 */
    assert_int_equal(bits_at(x.b, codes->off * 8 + 1, k), 0);
    b = copy_of(x.b, x.len);
    put_bits_at(b, codes->off * 8 + 1, k, 1);
    assert_int_equal(load_edited(b, x.len), CORRUPT);
    /* Tags: every word below 3^40 (three segments), the last below 3 to
     * the digits it holds. */
    assert_int_equal(value(w, "run_nsegs", r), 3);
    const field *tags = spec_find(w, "tags", r);
    const uint64_t n = value(w, "n", r), words = tags->len / 8, last_digits = n - (words - 1) * 40;
    assert_true(words > 1 && last_digits < 40);
    b = copy_of(x.b, x.len);
    memset(b + tags->off, 0xff, 8);
    assert_int_equal(load_edited(b, x.len), CORRUPT);
    uint64_t limit = 1;
    for (uint64_t i = 0; i < last_digits; i++)
        limit *= 3;
    b = copy_of(x.b, x.len);
    put_bits_at(b, (tags->off + tags->len - 8) * 8, 64, limit);
    assert_int_equal(load_edited(b, x.len), CORRUPT);
    b = copy_of(x.b, x.len);
    put_bits_at(b, (tags->off + tags->len - 8) * 8, 64, limit - 1);
    assert_int_equal(load_edited(b, x.len), SEEN_OK);
    drop(&x);

    /* A run cut by rank: the bucket lows rise strictly, within the span. */
    static uint8_t buf[1 << 16];
    static walk v3;
    FILE *f = fopen("tests/fuzz/corpus/load/v3-exact-int-clustered-ranked", "rb");
    assert_non_null(f);
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    spec_walk(&v3, buf, len);
    int ranked = -1;
    for (int i = 0; i < (int)value(&v3, "nruns", -1) && ranked < 0; i++)
        if (value(&v3, "bucket_w", i) == 0 && value(&v3, "nbuckets", i) > 2)
            ranked = i;
    assert_true(ranked >= 0);
    index_entry e1 = entry_of(&v3, ranked, 1), e2 = entry_of(&v3, ranked, 2);
    const uint64_t low_bit1 = e1.at + e1.w_bits + e1.w_items,
                   low_bit2 = e2.at + e2.w_bits + e2.w_items;
    b = copy_of(buf, len);
    put_bits_at(b, low_bit2, e2.w_vals, bits_at(buf, low_bit1, e1.w_vals));
    assert_int_equal(load_edited(b, len), CORRUPT);
    const uint64_t span = value(&v3, "span", ranked);
    const unsigned last = (unsigned)value(&v3, "nbuckets", ranked) - 1;
    index_entry el = entry_of(&v3, ranked, last);
    if (e1.w_vals < 64 && (UINT64_C(1) << e1.w_vals) - 1 > span) {
        b = copy_of(buf, len);
        put_bits_at(b, el.at + el.w_bits + el.w_items, el.w_vals, (UINT64_C(1) << el.w_vals) - 1);
        assert_int_equal(load_edited(b, len), CORRUPT);
    }
}

/* Elias-Fano runs: n ones in the uppers making values from 0 to span,
 * strictly increasing, and nothing after the uppers or the lows. */
static void elias_fano_rules(const char *name, unsigned *edge_cases)
{
    static uint8_t buf[1 << 20];
    static walk w;
    char path[256];
    snprintf(path, sizeof path, "tests/fuzz/corpus/load/%s", name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    spec_walk(&w, buf, len);
    int r = -1;
    for (int i = 0; i < (int)value(&w, "nruns", -1) && r < 0; i++)
        if (value(&w, "golomb_m", i) == 0)
            r = i;
    assert_true(r >= 0);
    const uint64_t n = value(&w, "n", r), l = value(&w, "bucket_w", r);
    const uint64_t ubits = n + (value(&w, "span", r) >> l);
    const uint64_t lows = (ubits + 63) / 64 * 64, code_bits = value(&w, "code_bits", r);
    const uint64_t at = spec_find(&w, "codes", r)->off * 8;
    assert_true(l > 0 && n > 3);
    /* The ones' positions, for the edits below. */
    uint64_t *one = malloc(n * sizeof *one), found = 0;
    for (uint64_t b = 0; b < ubits; b++)
        if (bits_at(buf, at + b, 1))
            one[found++] = b;
    assert_int_equal(found, n);
    uint8_t *b;
    if (ubits % 64) { /* a one after the uppers */
        *edge_cases |= 1;
        b = copy_of(buf, len);
        put_bits_at(b, at + ubits, 1, 1);
        assert_int_equal(load_edited(b, len), CORRUPT);
    }
    if (code_bits % 8) { /* a one after the lows */
        *edge_cases |= 2;
        b = copy_of(buf, len);
        put_bits_at(b, at + code_bits, 1, 1);
        assert_int_equal(load_edited(b, len), CORRUPT);
    }
    /* A one more: more values than n. */
    uint64_t gap = 1;
    while (gap < n && one[gap] == one[gap - 1] + 1)
        gap++;
    assert_true(gap < n);
    b = copy_of(buf, len);
    put_bits_at(b, at + one[gap] - 1, 1, 1);
    assert_int_equal(load_edited(b, len), CORRUPT);
    /* The first value 1, not 0. */
    b = copy_of(buf, len);
    put_bits_at(b, at + lows, (unsigned)l, 1);
    assert_int_equal(load_edited(b, len), CORRUPT);
    /* Two values in the wrong order: the second's low below the first's
     * under the same high. */
    uint64_t i = 1;
    while (i + 1 < n &&
           !(one[i + 1] == one[i] + 1 && bits_at(buf, at + lows + (i + 1) * l, (unsigned)l) > 0))
        i++;
    assert_true(i + 1 < n);
    b = copy_of(buf, len);
    put_bits_at(b, at + lows + i * l, (unsigned)l,
                bits_at(buf, at + lows + (i + 1) * l, (unsigned)l));
    assert_int_equal(load_edited(b, len), CORRUPT);
    /* The last value not span: its low one less (its high the same). */
    const uint64_t last_low = bits_at(buf, at + lows + (n - 1) * l, (unsigned)l);
    const uint64_t before =
        ((one[n - 2] - (n - 2)) << l) | bits_at(buf, at + lows + (n - 2) * l, (unsigned)l);
    const uint64_t lowered = (((one[n - 1] - (n - 1)) << l) | last_low) - 1;
    if (last_low > 0 && lowered > before) {
        *edge_cases |= 4;
        b = copy_of(buf, len);
        put_bits_at(b, at + lows + (n - 1) * l, (unsigned)l, last_low - 1);
        assert_int_equal(load_edited(b, len), CORRUPT);
    }
    /* One value fewer, ending at span: value n - 2 dropped, the last one
     * moved down a place so its high stays, and its low taken by value
     * n - 2's slot. */
    assert_true(one[n - 1] - 1 > one[n - 3]);
    b = copy_of(buf, len);
    put_bits_at(b, at + one[n - 2], 1, 0);
    put_bits_at(b, at + one[n - 1], 1, 0);
    put_bits_at(b, at + one[n - 1] - 1, 1, 1);
    put_bits_at(b, at + lows + (n - 2) * l, (unsigned)l, last_low);
    assert_int_equal(load_edited(b, len), CORRUPT);
    free(one);
}

static void test_elias_fano_payload_rules(void **state)
{
    (void)state;
    unsigned edge_cases = 0;
    elias_fano_rules("compact-str-ef", &edge_cases);
    elias_fano_rules("compact-int-ef", &edge_cases);
    assert_int_equal(edge_cases, 7); /* each conditional edit made once */
}

/* Fields only version 1 holds as numbers: ids, has_origin and dropped are
 * 0 or 1 there (later versions hold them as bits). */
static void test_version1_rules(void **state)
{
    (void)state;
    static uint8_t buf[1 << 20];
    static walk w;
    FILE *f = fopen("tests/fuzz/corpus/load/v1-capacity-compact", "rb");
    assert_non_null(f);
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    spec_walk(&w, buf, len);
    assert_int_equal(w.version, 1);
    check_forgery(&w, "ids", -1, 2, CORRUPT);
    check_forgery(&w, "has_origin", -1, 2, CORRUPT);
    check_forgery(&w, "dropped", 0, 2, CORRUPT);
    check_forgery(&w, "flags", -1, 1, CORRUPT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walk_reads_every_version),
        cmocka_unit_test(test_header_rules),
        cmocka_unit_test(test_segment_rules),
        cmocka_unit_test(test_head_and_run_rules),
        cmocka_unit_test(test_small_set_rules),
        cmocka_unit_test(test_raw_keys_rules),
        cmocka_unit_test(test_run_layout_rules),
        cmocka_unit_test(test_integer_forms),
        cmocka_unit_test(test_version1_rules),
        cmocka_unit_test(test_golomb_payload_rules),
        cmocka_unit_test(test_elias_fano_payload_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
