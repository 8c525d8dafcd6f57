/*
 * fuzz_load.c — libFuzzer target for the serialized-set loader.
 *
 * Any byte string must be rejected with an error or loaded into a set that
 * passes every internal check, serializes back to the same bytes, and
 * survives queries and writes.  Fuzz builds define
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
    (void)seen_expire(s, now + 1000);
    if (seen__set_check(s) != SEEN_OK)
        abort();
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
