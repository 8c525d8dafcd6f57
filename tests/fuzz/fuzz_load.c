/*
 * fuzz_load.c — libFuzzer target for the serialized-set loader.
 *
 * Any byte string must be rejected with an error or loaded into a set that
 * passes every internal check, serializes back to the same bytes, survives
 * queries and writes (an import, a large batch, time passing) and still
 * serializes into bytes the loader takes.  Fuzz builds define
 * FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, where inputs get their checksum
 * fixed up first so the fuzzer reaches the deep checks; the replay driver
 * (replay.c) runs each corpus file both as-is and with its checksum fixed.
 */
#include "internal.h"
#include "testutil.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The replay driver fixes checksums through this hook (see replay.c). */
void fuzz_fix_checksum(uint8_t *buf, size_t len);
void fuzz_fix_checksum(uint8_t *buf, size_t len)
{
    fix_checksum(buf, len);
}

static void exercise(seen_set *s)
{
    if (seen__set_check(s) != SEEN_OK)
        abort();
    size_t len = seen_serialized_size(s);
    uint8_t *again = malloc(len ? len : 1);
    size_t w = 0;
    if (seen_serialize(s, again, len, &w) != SEEN_OK || w != len)
        abort();
    seen_set *t = NULL;
    if (seen_deserialize(again, len, &t) != SEEN_OK)
        abort(); /* what we write we must read */
    seen_free(t);
    /* The trusted reader (the module's packed keys) gives the same set. */
    if (seen_deserialize_trusted(again, len, &t) != SEEN_OK)
        abort();
    uint8_t *third = malloc(len ? len : 1);
    if (seen_serialized_size(t) != len || seen_serialize(t, third, len, &w) != SEEN_OK ||
        memcmp(third, again, len) != 0 || seen__set_check(t) != SEEN_OK)
        abort();
    seen_free(t);
    free(third);
    free(again);

    const seen_policy *p = seen_get_policy(s);
    int64_t now = 1763700000000;
    uint8_t seen[8] = {0};
    if (p->ids == SEEN_IDS_INT) {
        uint64_t ids[8] = {0, 1, 2, 3, 2700000, UINT64_MAX, 12345, 99};
        (void)seen_filter_int(s, ids, 8, now, seen);
        (void)seen_add_int(s, ids, 8, NULL, now, NULL);
        (void)seen_remove_int(s, ids, 2, now, NULL);
    } else {
        seen_str items[3] = {{"a", 1}, {"video:123", 9}, {"zzzzzzzzzzzzzzzzzzzzzzzz", 24}};
        (void)seen_filter_str(s, items, 3, now, seen);
        (void)seen_add_str(s, items, 3, NULL, now, NULL);
        (void)seen_remove_str(s, items, 1, now, NULL);
    }
    /* An import of past items, a batch far larger than a cap, and time
     * moving on: whatever the loader accepted must take them and still
     * load back. */
    enum { K = 600 };
    static uint64_t many[K];
    static int64_t at[K];
    static str_item strs[K];
    static seen_str items_many[K];
    for (size_t i = 0; i < K; i++) {
        many[i] = i * 0x9e3779b97f4a7c15u;
        at[i] = now - (int64_t)(i * 3 * 86400000ull);
        make_str(&strs[i], many[i]);
        items_many[i] = strs[i].s;
    }
    if (p->ids == SEEN_IDS_INT) {
        (void)seen_add_int(s, many, K, at, now, NULL);
        (void)seen_add_int(s, many, K, NULL, now + 1, NULL);
    } else {
        (void)seen_add_str(s, items_many, K, at, now, NULL);
        (void)seen_add_str(s, items_many, K, NULL, now + 1, NULL);
    }
    (void)seen_expire(s, now + 1000);
    (void)seen_expire(s, now + 400 * 86400000ll);
    if (seen__set_check(s) != SEEN_OK)
        abort();
    len = seen_serialized_size(s);
    again = malloc(len ? len : 1);
    if (seen_serialize(s, again, len, &w) != SEEN_OK || seen_deserialize(again, len, &t) != SEEN_OK)
        abort(); /* accepted bytes, then writes: must still load */
    seen_free(t);
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    alloc_install_classes(); /* as under Redis: large runs take their two-block layout */
    const uint8_t *input = data;
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    uint8_t *fixed = malloc(size ? size : 1);
    memcpy(fixed, data, size);
    fuzz_fix_checksum(fixed, size);
    input = fixed;
#endif
    seen_set *s = NULL;
    seen_err err = seen_deserialize(input, size, &s);
    if (err == SEEN_OK) {
        exercise(s);
        seen_free(s);
    } else if (s != NULL) {
        abort(); /* a failed load hands out nothing */
    }
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    free(fixed);
#endif
    return 0;
}
