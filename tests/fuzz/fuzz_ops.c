/*
 * fuzz_ops.c — libFuzzer target that reads its input as a little program of
 * set operations (add now or late, filter, remove, time jumps, expiry,
 * serialization round trips) under a policy chosen by the first bytes, and
 * checks every answer against the naive model of tests/unit/testutil.c:
 * no false negatives inside the window, nothing forgotten-or-never-added
 * reported seen by an exact set, exact "added" counts, and the set's own
 * invariants after every step.  Any violation aborts.
 */
#include "internal.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static seen_err add_one(seen_set *s, uint64_t id, const int64_t *at, int64_t now, size_t *added)
{
    if (s->policy.ids == SEEN_IDS_INT)
        return seen_add_int(s, &id, 1, at, now, added);
    str_item it;
    make_str(&it, id);
    return seen_add_str(s, &it.s, 1, at, now, added);
}

static void check(const seen_set *s, const model *m, uint64_t id, int64_t now)
{
    expect e = model_expect(m, id, now);
    bool f = set_sees(s, id, now);
    if (e == MUST_SEE && !f) {
        fprintf(stderr, "false negative: id %llu\n", (unsigned long long)id);
        abort();
    }
    /* Exact: an exact set, or integers still keyed by the raw ids. */
    if (e == MUST_NOT_SEE && f && (s->policy.error == 0 || s->raw_keys)) {
        fprintf(stderr, "exact set sees id %llu\n", (unsigned long long)id);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    alloc_install_classes(); /* as under Redis: large runs take their two-block layout */
    fuzz_input c = {data, size, 0};
    static const uint64_t windows[] = {0, 1000, 100000, 90ull * 86400000};
    static const uint32_t slices[] = {1, 2, 3, 4, 8, 64};
    static const double errors[] = {0, 0.01, 0.001, 0.1};
    static const uint64_t caps[] = {0, 0, 10, 100};
    static const uint32_t limits[] = {0, 8, 128, 4};
    uint8_t a = fuzz_next(&c), b = fuzz_next(&c);
    seen_policy p = {windows[a & 3],
                     slices[(a >> 2) % 6],
                     errors[(a >> 5) & 3],
                     caps[b & 3],
                     (b >> 2) & 1 ? SEEN_IDS_INT : SEEN_IDS_STR,
                     limits[(b >> 3) & 3]};
    if (p.window_ms && p.window_ms < p.slices)
        p.slices = 1;
    seen_set *s = NULL;
    if (seen_create(&p, &s) != SEEN_OK)
        abort();
    model m;
    model_init(&m, &p);
    int64_t now = 1763700000000;
    int64_t w = (int64_t)p.window_ms;
    bool removed_any = false;
    for (int steps = 0; fuzz_more(&c) && steps < 2000; steps++) {
        uint8_t op = fuzz_next(&c);
        uint64_t id = fuzz_next(&c) % 64;
        switch (op % 8) {
        case 0:
        case 1:
        case 2: { /* add, maybe late */
            int64_t back =
                (op & 0x80) && w ? (int64_t)((uint64_t)fuzz_next(&c) * (uint64_t)w / 160) : 0;
            int64_t t = now - back;
            size_t added = 0;
            expect before = model_expect(&m, id, now);
            bool kept_sure = w == 0 || t + w > now;
            if (add_one(s, id, back ? &t : NULL, now, &added) != SEEN_OK)
                abort();
            if (p.error == 0 && !removed_any) {
                if (before == MUST_SEE && added != 0)
                    abort();
                if (before == MUST_NOT_SEE && kept_sure && added != 1)
                    abort();
            }
            model_add(&m, id, t, now);
            break;
        }
        case 3:
            check(s, &m, id, now);
            break;
        case 4: /* remove: exact sets only (approximate removal may take a
                   colliding neighbour along, by design) */
            if (p.error == 0) {
                model_observe(&m, now);
                size_t removed = 0;
                if (s->policy.ids == SEEN_IDS_INT) {
                    if (seen_remove_int(s, &id, 1, now, &removed) != SEEN_OK)
                        abort();
                } else {
                    str_item it;
                    make_str(&it, id);
                    if (seen_remove_str(s, &it.s, 1, now, &removed) != SEEN_OK)
                        abort();
                }
                model_remove(&m, id);
                removed_any = true;
                if (set_sees(s, id, now))
                    abort();
            }
            break;
        case 5:
            model_observe(&m, now);
            now += (int64_t)fuzz_next(&c) * (w ? w / 64 + 1 : 1000);
            model_observe(&m, now);
            break;
        case 6: {
            size_t len = seen_serialized_size(s);
            uint8_t *buf = malloc(len);
            size_t wr;
            seen_set *t = NULL;
            if (seen_serialize(s, buf, len, &wr) != SEEN_OK ||
                seen_deserialize(buf, len, &t) != SEEN_OK)
                abort();
            free(buf);
            seen_free(s);
            s = t;
            break;
        }
        default:
            if (seen_expire(s, now) != SEEN_OK)
                abort();
            break;
        }
        if (seen__set_check(s) != SEEN_OK)
            abort();
    }
    for (uint64_t id = 0; id < 64; id++)
        check(s, &m, id, now);
    model_free(&m);
    seen_free(s);
    return 0;
}
