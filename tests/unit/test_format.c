/*
 * test_format.c — the serialized form's versions (docs/FORMAT.md): what
 * version 4 writes for small sets, that it loads back to the same bytes,
 * that every set written in versions 2 and 3 loads to the same set, that
 * sets earlier writers made still load, and that bytes breaking a version 4
 * rule are refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"
#include "spec_walk.h"
#include "testutil.h"

#define DAY (86400000LL)
#define T0 (1790000000000LL)

static uint8_t *written_as(const seen_set *s, unsigned version, size_t *len)
{
    *len = seen__serialized_size_as(s, version);
    uint8_t *b = malloc(*len);
    size_t w = 0;
    assert_int_equal(seen__serialize_as(s, version, b, *len, &w), SEEN_OK);
    assert_int_equal(w, *len);
    assert_int_equal(b[4] | b[5] << 8, version);
    static walk spec; /* written as FORMAT.md describes this version */
    spec_walk(&spec, b, *len);
    assert_int_equal(spec.version, version);
    return b;
}

/* The set, written in every version that holds it, loads back to a set
 * that writes the same version 4 bytes (and the version 4 bytes load
 * through the trusted reader to the same set too).  A capped set is
 * written in version 5 (its segments' time ranges), which loads back to
 * the same version 5 bytes; older versions drop the ranges. */
static void assert_raw_version_agrees(const seen_set *s);

static void assert_versions_agree(const seen_set *s)
{
    if (s->raw_keys) {
        assert_raw_version_agrees(s);
        return;
    }
    size_t len4, len5, len6;
    /* Version 6 holds raw integer keys and nothing else. */
    assert_int_equal(seen__serialize_as(s, 6, NULL, 0, &len6), SEEN_ERR_ARG);
    uint8_t *v4 = written_as(s, 4, &len4);
    uint8_t *v5 = written_as(s, 5, &len5);
    const bool capped = seen_get_policy(s)->capacity > 0;
    size_t ser = seen_serialized_size(s);
    assert_int_equal(ser, capped ? len5 : len4);
    if (!capped) {
        /* Without a capacity, version 5 is version 4 but for its number. */
        assert_int_equal(len5, len4);
        assert_memory_equal(v5 + 6, v4 + 6, len4 - 14);
    }
    for (unsigned version = 2; version <= 5; version++) {
        size_t len;
        if (seen__serialize_as(s, version, NULL, 0, &len) == SEEN_ERR_ARG)
            continue; /* a run only version 3 holds */
        uint8_t *b = written_as(s, version, &len);
        for (int trusted = 0; trusted < 2; trusted++) {
            seen_set *t = NULL;
            assert_int_equal(trusted ? seen_deserialize_trusted(b, len, &t)
                                     : seen_deserialize(b, len, &t),
                             SEEN_OK);
            assert_int_equal(seen__set_check(t), SEEN_OK);
            size_t again_len;
            uint8_t *again = written_as(t, 4, &again_len);
            assert_int_equal(again_len, len4);
            assert_memory_equal(again, v4, len4);
            free(again);
            if (version == 5) {
                again = written_as(t, 5, &again_len);
                assert_int_equal(again_len, len5);
                assert_memory_equal(again, v5, len5);
                free(again);
            }
            seen_free(t);
        }
        free(b);
    }
    free(v4);
    free(v5);
}

/* A set keyed by raw integer ids is written in version 6 alone, and loads
 * back to a set that writes the same bytes; a version 6 set without the
 * raw-keys flag, or a version 5 set with it, is refused. */
static void assert_raw_version_agrees(const seen_set *s)
{
    for (unsigned version = 2; version <= 5; version++) {
        size_t len;
        assert_int_equal(seen__serialize_as(s, version, NULL, 0, &len), SEEN_ERR_ARG);
    }
    size_t len6;
    uint8_t *v6 = written_as(s, 6, &len6);
    assert_int_equal(seen_serialized_size(s), len6);
    for (int trusted = 0; trusted < 2; trusted++) {
        seen_set *t = NULL;
        assert_int_equal(trusted ? seen_deserialize_trusted(v6, len6, &t)
                                 : seen_deserialize(v6, len6, &t),
                         SEEN_OK);
        assert_int_equal(seen__set_check(t), SEEN_OK);
        assert_true(t->raw_keys);
        size_t again_len;
        uint8_t *again = written_as(t, 6, &again_len);
        assert_int_equal(again_len, len6);
        assert_memory_equal(again, v6, len6);
        free(again);
        seen_free(t);
    }
    /* The flags follow the version (a varint: its second byte holds bit
     * 256, and a header with the flag has two flag bytes). */
    uint8_t *b = malloc(len6);
    memcpy(b, v6, len6);
    b[4] = 5;
    fix_checksum(b, len6);
    assert_int_equal(spec_load(b, len6), SEEN_ERR_FORMAT_CORRUPT);
    memcpy(b, v6, len6);
    assert_true(b[6] & 0x80);
    b[7] &= (uint8_t)~0x02;
    fix_checksum(b, len6);
    assert_int_equal(spec_load(b, len6), SEEN_ERR_FORMAT_CORRUPT);
    free(b);
    free(v6);
}

static seen_set *make(seen_policy p, size_t items, int64_t span)
{
    seen_set *s;
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    for (size_t i = 0; i < items; i++) {
        int64_t now = T0 + (int64_t)((double)span * (double)i / (double)(items ? items : 1));
        if (p.ids == SEEN_IDS_INT) {
            uint64_t id = 2700000 + 1333 * i;
            assert_int_equal(seen_add_int(s, &id, 1, NULL, now, NULL), SEEN_OK);
        } else {
            str_item it;
            make_str(&it, i);
            assert_int_equal(seen_add_str(s, &it.s, 1, NULL, now, NULL), SEEN_OK);
        }
    }
    return s;
}

static seen_policy usual(void)
{
    seen_policy p;
    seen_policy_default(&p);
    return p;
}

/* A small set under the usual policy is a few dozen bytes: its policy is
 * not written, and its times are near each other. */
static void test_small_sets_are_small(void **state)
{
    (void)state;
    seen_set *s = make(usual(), 0, 0);
    size_t empty = seen_serialized_size(s), empty_v2 = seen__serialized_size_as(s, 2);
    seen_free(s);
    s = make(usual(), 1, 0);
    size_t one = seen_serialized_size(s), one_v2 = seen__serialized_size_as(s, 2);
    seen_free(s);
    s = make(usual(), 100, 30 * DAY);
    size_t hundred = seen_serialized_size(s), hundred_v2 = seen__serialized_size_as(s, 2);
    seen_free(s);
    fprintf(stderr,
            "[stat] version 4 (2): empty %zu (%zu), 1 item %zu (%zu), 100 items %zu (%zu)\n", empty,
            empty_v2, one, one_v2, hundred, hundred_v2);
    /* 14 bytes of magic, version and checksum, 12 of header; the item
     * adds its 9-byte head entry and a 4-byte segment. */
    assert_true(empty <= 26);
    assert_true(one <= 44);
    assert_true(hundred + 12 <= hundred_v2);
}

/* Every policy field away from its usual value on its own, all of them
 * together, and the states sets pass through: each loads back the same in
 * every version that holds it. */
static void test_versions_agree(void **state)
{
    (void)state;
    seen_policy ps[] = {
        usual(),
        {30 * DAY, 4, 0.001, 0, SEEN_IDS_STR, 16},
        {90 * DAY, 7, 0.001, 0, SEEN_IDS_STR, 16},
        {90 * DAY, 4, 0.01, 0, SEEN_IDS_STR, 16},
        {90 * DAY, 4, 0.0123456789012345, 0, SEEN_IDS_STR, 16}, /* not a short decimal */
        {90 * DAY, 4, 0, 0, SEEN_IDS_STR, 16},                  /* exact */
        {90 * DAY, 4, 0.001, 500, SEEN_IDS_STR, 16},
        {90 * DAY, 4, 0.001, 0, SEEN_IDS_INT, 16},
        {90 * DAY, 4, 0.001, 0, SEEN_IDS_STR, 128},
        {90 * DAY, 4, 0.001, 0, SEEN_IDS_STR, 0},
        {0, 1, 0.0001, 40, SEEN_IDS_INT, 1000},
        {600000, 64, 0.3, 7, SEEN_IDS_STR, 3},
    };
    const size_t sizes[] = {0, 1, 17, 300, 2500};
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) {
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            seen_set *s = make(ps[i], sizes[k], 40 * DAY);
            assert_versions_agree(s);
            /* Time passing: expired slices, a clock far past newest. */
            assert_int_equal(seen_expire(s, T0 + 400 * DAY), SEEN_OK);
            assert_versions_agree(s);
            seen_free(s);
        }
    }
    /* A set that only ever had its clock moved: no origin, a clock. */
    seen_set *s = make(usual(), 0, 0);
    assert_int_equal(seen_expire(s, T0), SEEN_OK);
    assert_versions_agree(s);
    seen_free(s);
    /* Clustered ids and an outlier, then a delete: runs version 2 cannot
     * hold. */
    seen_policy p = {0, 1, 0, 0, SEEN_IDS_INT, 16};
    assert_int_equal(seen_create(&p, &s), SEEN_OK);
    uint64_t ids[3001];
    for (size_t i = 0; i < 3000; i++)
        ids[i] = 5000000 + 2 * i;
    ids[3000] = UINT64_C(1) << 60;
    assert_int_equal(seen_add_int(s, ids, 3001, NULL, T0, NULL), SEEN_OK);
    assert_int_equal(seen_expire(s, T0), SEEN_OK);
    assert_int_equal(seen_remove_int(s, ids + 10, 1, T0, NULL), SEEN_OK);
    size_t len;
    assert_int_equal(seen__serialize_as(s, 2, NULL, 0, &len), SEEN_ERR_ARG);
    assert_versions_agree(s);
    seen_free(s);
}

/* The header of a version 4 set with its flags replaced, and the fields
 * after them given as raw bytes: forged sets for the rules below. */
static size_t forge(uint8_t *out, uint64_t flags, const uint8_t *fields, size_t n)
{
    size_t len = 0;
    memcpy(out, "SEEN\x04\x00", 6);
    len = 6;
    do {
        out[len++] = (uint8_t)((flags & 0x7f) | (flags > 0x7f ? 0x80 : 0));
        flags >>= 7;
    } while (flags);
    memcpy(out + len, fields, n);
    len += n;
    len += 8;
    fix_checksum(out, len);
    return len;
}

/* origin 0, clock 0, newest 0, plan_c 0, hwm 0, hwm_clock 0, next_seg_id 0,
 * no segments, runs or head entries. */
static const uint8_t EMPTY_STATE[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

static seen_err load_forged(uint64_t flags, const uint8_t *policy, size_t np)
{
    uint8_t fields[64], b[96];
    if (np)
        memcpy(fields, policy, np);
    memcpy(fields + np, EMPTY_STATE, sizeof EMPTY_STATE);
    return spec_load(b, forge(b, flags, fields, np + sizeof EMPTY_STATE));
}

/* Bytes a version 4 writer cannot have made are refused: a policy field
 * written with its usual value (one form per set), a raw error without an
 * error, unknown flags, fields out of range. */
static void test_v4_rules(void **state)
{
    (void)state;
    /* The forge itself makes sets that load. */
    assert_int_equal(load_forged(0, NULL, 0), SEEN_OK);
    const uint8_t window_30d[] = {0x80, 0x90, 0xfb, 0xd3, 0x09}; /* 2,592,000,000 */
    assert_int_equal(load_forged(8, window_30d, sizeof window_30d), SEEN_OK);
    const uint8_t window_90d[] = {0x80, 0xb0, 0xf1, 0xfb, 0x1c}; /* 7,776,000,000 */
    assert_int_equal(load_forged(8, window_90d, sizeof window_90d), SEEN_ERR_FORMAT_CORRUPT);
    const uint8_t slices_4[] = {4}, slices_5[] = {5}, slices_65[] = {65};
    assert_int_equal(load_forged(16, slices_5, 1), SEEN_OK);
    assert_int_equal(load_forged(16, slices_4, 1), SEEN_ERR_FORMAT_CORRUPT);
    assert_int_equal(load_forged(16, slices_65, 1), SEEN_ERR_FORMAT_CORRUPT);
    const uint8_t error_1e3[] = {1, 3}, error_1e2[] = {1, 2}, error_5e1[] = {5, 1};
    assert_int_equal(load_forged(32, error_1e2, 2), SEEN_OK);
    assert_int_equal(load_forged(32, error_1e3, 2), SEEN_ERR_FORMAT_CORRUPT);
    assert_int_equal(load_forged(32, error_5e1, 2), SEEN_ERR_FORMAT_CORRUPT);
    double d = 0.001;
    uint8_t raw[8];
    memcpy(raw, &d, 8);
    assert_int_equal(load_forged(32 | 4, raw, 8), SEEN_ERR_FORMAT_CORRUPT);
    d = 0.002;
    memcpy(raw, &d, 8);
    assert_int_equal(load_forged(32 | 4, raw, 8), SEEN_OK);
    assert_int_equal(load_forged(4, NULL, 0), SEEN_ERR_FORMAT_CORRUPT); /* raw, no error */
    const uint8_t zero[] = {0}, cap_9[] = {9}, limit_16[] = {16}, limit_17[] = {17};
    assert_int_equal(load_forged(64, cap_9, 1), SEEN_OK);
    assert_int_equal(load_forged(64, zero, 1), SEEN_ERR_FORMAT_CORRUPT);
    assert_int_equal(load_forged(128, limit_17, 1), SEEN_OK);
    assert_int_equal(load_forged(128, limit_16, 1), SEEN_ERR_FORMAT_CORRUPT);
    assert_int_equal(load_forged(256, NULL, 0), SEEN_ERR_FORMAT_CORRUPT); /* unknown flag */
    /* Times: newest and hwm_clock are distances back from clock; a clock
     * before origin, or a distance past 2^50, is refused. */
    uint8_t b[96];
    const uint8_t newest_after_clock[] = {0x0a, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}; /* origin 10 */
    assert_int_equal(spec_load(b, forge(b, 1, newest_after_clock, sizeof newest_after_clock)),
                     SEEN_ERR_FORMAT_CORRUPT);
    const uint8_t newest_before_origin[] = {0x0a, 2, 4, 0, 0, 0, 0, 0, 0, 0, 0};
    assert_int_equal(spec_load(b, forge(b, 1, newest_before_origin, sizeof newest_before_origin)),
                     SEEN_ERR_FORMAT_CORRUPT);
    const uint8_t within[] = {0x0a, 4, 2, 0, 0, 0, 0, 0, 0, 0, 0}; /* clock 12, newest 11 */
    assert_int_equal(spec_load(b, forge(b, 1, within, sizeof within)), SEEN_OK);
    const uint8_t far[] = {0x0a, 0, 0x82, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                           0x04, 0, 0,    0,    0,    0,    0,    0,    0}; /* 2^50 + 1 back */
    assert_int_equal(spec_load(b, forge(b, 0, far, sizeof far)), SEEN_ERR_FORMAT_CORRUPT);
    /* Shorter than the least header, and every truncation of a real set. */
    assert_int_equal(spec_load((const uint8_t *)"SEEN\x04\x00", 6), SEEN_ERR_FORMAT_TRUNCATED);
    seen_set *s = make(usual(), 40, DAY);
    size_t len;
    uint8_t *v4 = written_as(s, 4, &len);
    seen_free(s);
    assert_int_equal(spec_load(v4, len), SEEN_OK);
    uint8_t *cut = malloc(len);
    for (size_t n = 0; n < len; n++) {
        memcpy(cut, v4, n);
        if (n > 8)
            fix_checksum(cut, n);
        assert_int_not_equal(spec_load(cut, n), SEEN_OK);
    }
    /* Every bit of the header flipped (checksum made good): refused, or a
     * set that passes every check. */
    for (size_t bit = 6 * 8; bit < 40 * 8 && bit < (len - 8) * 8; bit++) {
        memcpy(cut, v4, len);
        cut[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        fix_checksum(cut, len);
        (void)spec_load(cut, len);
    }
    /* A version past 6 is not a corrupt set but an unknown version. */
    memcpy(cut, v4, len);
    cut[4] = 7;
    fix_checksum(cut, len);
    assert_int_equal(spec_load(cut, len), SEEN_ERR_FORMAT_VERSION);
    free(cut);
    free(v4);
}

/* A run's values are keys divided by its c, so none exceeds (2^64 - 1) / c:
 * a run moved past that (the same codes from a larger base) is refused,
 * and one ending exactly there loads.  Queries multiply values back by c. */
static void test_values_within_keys(void **state)
{
    (void)state;
    seen_set *s = make(usual(), 2000, 30 * DAY);
    seen_set *t;
    assert_int_equal(seen_copy(s, &t), SEEN_OK);
    seen_free(s);
    assert_true(t->nruns >= 1);
    seen__run *r = &t->runs[0];
    assert_true(r->c > 1);
    const uint64_t limit = UINT64_MAX / r->c, base = r->base;
    for (int past = 0; past < 2; past++) {
        r->base = limit - r->span + (uint64_t)past;
        size_t len;
        uint8_t *b = written_as(t, 4, &len);
        assert_int_equal(spec_load(b, len), past ? SEEN_ERR_FORMAT_CORRUPT : SEEN_OK);
        free(b);
    }
    r->base = base;
    seen_free(t);
}

/* Sets an earlier writer wrote (the fuzz seeds of every version, kept as
 * they were made) load, pass the set's own checks, and write back to
 * bytes that load to the same answers: runs under 16,384 values with the
 * bucket count of that writer included. */
/* Pages of new items written into a set an earlier writer made, at its
 * clock and after: all are seen, before and after a round trip. */
static void write_pages_into(seen_set **sp)
{
    seen_set *s = *sp;
    int64_t now = seen_last_write_at(s);
    now = (now > 0 ? now : T0) + 1000;
    enum { PAGES = 5, PAGE = 20 };
    bool ints = seen_get_policy(s)->ids == SEEN_IDS_INT;
    uint64_t nums[PAGES * PAGE];
    char strs[PAGES * PAGE][24];
    seen_str items[PAGES * PAGE];
    for (size_t i = 0; i < PAGES * PAGE; i++) {
        nums[i] = UINT64_C(900000000000) + i;
        snprintf(strs[i], sizeof strs[i], "later-page-%zu", i);
        items[i] = (seen_str){strs[i], strlen(strs[i])};
    }
    for (size_t p = 0; p < PAGES; p++, now += 1000) {
        seen_err err = ints ? seen_add_int(s, nums + p * PAGE, PAGE, NULL, now, NULL)
                            : seen_add_str(s, items + p * PAGE, PAGE, NULL, now, NULL);
        assert_int_equal(err, SEEN_OK);
        assert_int_equal(seen__set_check(s), SEEN_OK);
    }
    for (int pass = 0; pass < 2; pass++) {
        uint8_t seen[PAGES * PAGE];
        seen_err err = ints ? seen_filter_int(s, nums, PAGES * PAGE, now, seen)
                            : seen_filter_str(s, items, PAGES * PAGE, now, seen);
        assert_int_equal(err, SEEN_OK);
        for (size_t i = 0; i < PAGES * PAGE; i++)
            assert_true(seen[i]);
        size_t len = seen_serialized_size(s), w = 0;
        uint8_t *b = malloc(len);
        assert_int_equal(seen_serialize(s, b, len, &w), SEEN_OK);
        seen_free(s);
        assert_int_equal(seen_deserialize(b, w, &s), SEEN_OK);
        free(b);
    }
    *sp = s;
}

static void test_earlier_writers_load(void **state)
{
    (void)state;
    int general = 0; /* runs coded with a Golomb parameter no power of two */
    static const char *const seeds[] = {
        "v1-compact-str",
        "v1-exact-str-coarse-buckets",
        "v1-many-slices",
        "v2-compact-str",
        "v2-compact-int",
        "v2-capacity-compact",
        "v2-many-slices",
        "v2-exact-str",
        "v3-exact-int-clustered-ranked",
        "compact-str-ef",
        "compact-int-ef",
    };
    for (size_t k = 0; k < sizeof seeds / sizeof *seeds; k++) {
        char path[256];
        snprintf(path, sizeof path, "tests/fuzz/corpus/load/%s", seeds[k]);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        static uint8_t buf[1 << 20];
        size_t len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        seen_set *s = NULL;
        assert_int_equal(seen_deserialize(buf, len, &s), SEEN_OK);
        assert_int_equal(seen__set_check(s), SEEN_OK);
        size_t len2 = seen_serialized_size(s), w = 0;
        uint8_t *b2 = malloc(len2);
        assert_int_equal(seen_serialize(s, b2, len2, &w), SEEN_OK);
        assert_int_equal(spec_load(b2, w), SEEN_OK);
        free(b2);
        for (uint32_t i = 0; i < s->nruns; i++) {
            uint64_t m = s->runs[i].golomb_m;
            general += m != 0 && (m & (m - 1)) != 0;
        }
        write_pages_into(&s);
        seen_free(s);
    }
    /* The writer now chooses powers of two; these sets still hold what
     * earlier writers chose, so every reader meets both. */
    fprintf(stderr, "[stat] earlier writers' sets: %d runs with a general Golomb parameter\n",
            general);
    assert_true(general > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_sets_are_small),
        cmocka_unit_test(test_versions_agree),
        cmocka_unit_test(test_v4_rules),
        cmocka_unit_test(test_earlier_writers_load),
        cmocka_unit_test(test_values_within_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
