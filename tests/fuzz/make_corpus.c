/*
 * make_corpus.c — writes the seed corpora of the fuzz targets:
 * tests/fuzz/corpus/load/ gets serialized sets covering every encoding
 * (head only, exact runs, compact runs with tags, capacity steps, dropped
 * and expired segments, INT and STR ids, Elias-Fano runs), each in the
 * version written and,
 * as v2-NAME or v3-NAME, in the oldest version that holds it (what the
 * writer wrote before version 4); tests/fuzz/corpus/ops/ gets
 * operation programs for each policy byte.  Run once when the format
 * changes (`make fuzz-corpus`); libFuzzer adds what it finds on top.
 */
#include "internal.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void write_file(const char *dir, const char *name, const uint8_t *b, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        perror(path);
        exit(1);
    }
    fwrite(b, 1, n, f);
    fclose(f);
}

static void save_set(const char *dir, const char *name, const seen_set *s)
{
    size_t len = seen_serialized_size(s), w;
    uint8_t *b = malloc(len);
    if (seen_serialize(s, b, len, &w) != SEEN_OK)
        exit(1);
    write_file(dir, name, b, w);
    free(b);
    for (unsigned version = 2; version <= 3; version++) {
        if (seen__serialize_as(s, version, NULL, 0, &w) == SEEN_ERR_ARG)
            continue; /* a run this version cannot hold */
        len = seen__serialized_size_as(s, version);
        b = malloc(len);
        if (seen__serialize_as(s, version, b, len, &w) != SEEN_OK)
            exit(1);
        char old[96];
        snprintf(old, sizeof old, "v%u-%s", version, name);
        write_file(dir, old, b, w);
        free(b);
        return;
    }
}

static void fill(seen_set *s, rng *r, size_t n, int64_t start, int64_t span, int late)
{
    const seen_policy *p = seen_get_policy(s);
    for (size_t i = 0; i < n; i += 50) {
        size_t k = n - i < 50 ? n - i : 50;
        uint64_t ids[50];
        int64_t at[50];
        seen_str strs[50];
        str_item items[50];
        int64_t now = start + (int64_t)((double)span * (double)(i + k) / (double)n);
        for (size_t j = 0; j < k; j++) {
            ids[j] = rng_below(r, n * 2);
            make_str(&items[j], ids[j]);
            strs[j] = items[j].s;
            at[j] =
                late && rng_below(r, 3) == 0 ? now - (int64_t)rng_below(r, (uint64_t)span) : now;
        }
        if (p->ids == SEEN_IDS_INT)
            seen_add_int(s, ids, k, at, now, NULL);
        else
            seen_add_str(s, strs, k, at, now, NULL);
    }
}

/* Programs for fuzz_batch.c (its header says how they read): the states
 * a key reaches off the steady path, one seed each. */
static void write_batch_programs(const char *root)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/batch", root);
    uint8_t prog[2048];
    size_t n;
    /* Imports of ~2,000-item pages over three windows into WINDOW 90d
     * SLICES 4 ERROR 0.001: in time order, reverse and random, then an
     * expiry (which settles them) and months passing. */
    const uint8_t orders[3] = {1 + (2 << 2), 2 + (2 << 2), 3 + (3 << 2)};
    const char *names[3] = {"import-time-order", "import-reverse", "import-random"};
    for (int o = 0; o < 3; o++) {
        n = 0;
        prog[n++] = 4, prog[n++] = 3, prog[n++] = 35;
        for (int k = 0; k < 10; k++)
            prog[n++] = 0x80, prog[n++] = 166, prog[n++] = 2, prog[n++] = 0, prog[n++] = orders[o];
        prog[n++] = 6, prog[n++] = 0;
        for (int k = 0; k < 4; k++)
            prog[n++] = 0x85, prog[n++] = 40, prog[n++] = 2, prog[n++] = 0x84, prog[n++] = 20;
        write_file(dir, names[o], prog, n);
    }
    /* Two items added in turn into CAPACITY 64 SLICES 64, no window. */
    n = 0;
    prog[n++] = 4 << 3, prog[n++] = 63, prog[n++] = 35;
    for (int k = 0; k < 390; k++)
        prog[n++] = 0, prog[n++] = 0, prog[n++] = 0, prog[n++] = 0, prog[n++] = 0;
    write_file(dir, "capacity-readd-storm", prog, n);
    /* An exact INT set, CAPACITY 1000 SLICES 64: 15 old ids and one new
     * per add, so steps empty and pile up until they are coalesced. */
    n = 0;
    prog[n++] = 5 << 3, prog[n++] = 63, prog[n++] = 40;
    for (int k = 0; k < 390; k++)
        prog[n++] = 0, prog[n++] = 15, prog[n++] = 4, prog[n++] = 0, prog[n++] = 0;
    write_file(dir, "capacity-exact-int-fold", prog, n);
    /* 2,989 items at once into CAPACITY 10 SLICES 64, then removes and
     * queries, with and without a window. */
    n = 0;
    prog[n++] = 3 << 3, prog[n++] = 63, prog[n++] = 34;
    prog[n++] = 0x80, prog[n++] = 249, prog[n++] = 2, prog[n++] = 0, prog[n++] = 0;
    prog[n++] = 0x83, prog[n++] = 20, prog[n++] = 1, prog[n++] = 0;
    prog[n++] = 0x84, prog[n++] = 80, prog[n++] = 2, prog[n++] = 0;
    write_file(dir, "capacity-huge-batch", prog, n);
    prog[0] = 3 + (3 << 3);
    write_file(dir, "capacity-huge-batch-window", prog, n);
    /* An exact INT set, no window: four clusters of ids with far outliers
     * (its run is cut by rank), then removes from each cluster and more
     * adds, so deletes and merges edit a rank-cut run. */
    n = 0;
    prog[n++] = 0, prog[n++] = 0, prog[n++] = 24;
    for (int k = 0; k < 4; k++)
        prog[n++] = 0x80, prog[n++] = 100, prog[n++] = 3, prog[n++] = (uint8_t)(k * 3),
        prog[n++] = 0;
    for (int k = 0; k < 4; k++)
        prog[n++] = 0x83, prog[n++] = 2, prog[n++] = 3, prog[n++] = (uint8_t)(k * 3);
    for (int k = 0; k < 3; k++)
        prog[n++] = 0x81, prog[n++] = 40, prog[n++] = 3, prog[n++] = (uint8_t)(k * 5),
        prog[n++] = 0;
    write_file(dir, "exact-int-clustered-outliers", prog, n);
    /* An INT set with an error bound, no exact limit: dense ids (kept
     * exact, keyed raw), queries, then wide ids (mixed into fingerprints
     * at once), then an import of dense ids into the mixed set. */
    n = 0;
    prog[n++] = 4, prog[n++] = 3, prog[n++] = 3 + 8;
    for (int k = 0; k < 3; k++)
        prog[n++] = 0x80, prog[n++] = 20, prog[n++] = 1, prog[n++] = 0, prog[n++] = 0;
    prog[n++] = 0x84, prog[n++] = 20, prog[n++] = 1, prog[n++] = 0;
    prog[n++] = 0x83, prog[n++] = 4, prog[n++] = 1, prog[n++] = 0;
    prog[n++] = 5, prog[n++] = 40;
    prog[n++] = 0x80, prog[n++] = 20, prog[n++] = 2, prog[n++] = 0, prog[n++] = 0;
    prog[n++] = 0x84, prog[n++] = 20, prog[n++] = 1, prog[n++] = 0;
    prog[n++] = 6, prog[n++] = 0;
    prog[n++] = 0x80, prog[n++] = 100, prog[n++] = 1, prog[n++] = 0, prog[n++] = 3;
    prog[n++] = 0x84, prog[n++] = 20, prog[n++] = 1, prog[n++] = 0;
    write_file(dir, "raw-int-keys-then-wide", prog, n);
    /* The same policy: 100 pages of 20 ids handed out in sequence, a few
     * hours apart, so each flush lands past the top of the run that takes
     * it (appended in place), then queries. */
    n = 0;
    prog[n++] = 4, prog[n++] = 3, prog[n++] = 3 + 8;
    for (int k = 0; k < 100; k++) {
        prog[n++] = 0, prog[n++] = 19, prog[n++] = 9, prog[n++] = 0, prog[n++] = 0;
        prog[n++] = 5, prog[n++] = 10;
    }
    prog[n++] = 0x84, prog[n++] = 20, prog[n++] = 4, prog[n++] = 0;
    write_file(dir, "int-ids-in-sequence", prog, n);
}

int main(int argc, char **argv)
{
    const char *root = argc > 1 ? argv[1] : "tests/fuzz/corpus";
    char load[512], ops[512];
    snprintf(load, sizeof load, "%s/load", root);
    snprintf(ops, sizeof ops, "%s/ops", root);
    rng r = {7};
    const int64_t day = 86400000, t0 = 1763700000000;
    struct {
        const char *name;
        seen_policy p;
        size_t n;
        int64_t span;
        int late;
    } sets[] = {
        {"empty", {90 * day, 4, 0.001, 0, SEEN_IDS_STR, 128}, 0, day, 0},
        {"head-only", {90 * day, 4, 0.001, 0, SEEN_IDS_STR, 128}, 5, day, 0},
        {"exact-str", {10 * day, 4, 0, 0, SEEN_IDS_STR, 128}, 900, 30 * day, 1},
        {"exact-int-capacity", {0, 4, 0, 100, SEEN_IDS_INT, 128}, 400, day, 0},
        {"compact-str", {90 * day, 4, 0.001, 0, SEEN_IDS_STR, 64}, 3000, 90 * day, 0},
        {"compact-late", {60 * day, 3, 0.01, 0, SEEN_IDS_STR, 16}, 2000, 80 * day, 1},
        {"compact-int", {600000, 8, 0.01, 0, SEEN_IDS_INT, 16}, 1500, 900000, 1},
        {"capacity-compact", {7 * day, 4, 0.01, 500, SEEN_IDS_STR, 16}, 2000, 10 * day, 0},
        {"no-window", {0, 1, 0.001, 0, SEEN_IDS_INT, 32}, 1200, day, 0},
        {"many-slices", {64 * day, 64, 0.01, 0, SEEN_IDS_STR, 16}, 2000, 70 * day, 1},
    };
    for (size_t i = 0; i < sizeof sets / sizeof *sets; i++) {
        seen_set *s;
        if (seen_create(&sets[i].p, &s) != SEEN_OK)
            return 1;
        /* These seeds hold integer fingerprints, as they were made before
         * sets kept dense ids raw (their ids are dense): the raw-keyed
         * seeds follow. */
        s->raw_keys = 0;
        fill(s, &r, sets[i].n, t0, sets[i].span, sets[i].late);
        /* Late items make the fill an import: settle it, as the module
         * does a second after an import ends, so the seeds hold compact
         * runs; "-import" keeps one set as an import left exact. */
        if (sets[i].late) {
            char name[64];
            snprintf(name, sizeof name, "%s-import", sets[i].name);
            save_set(load, name, s);
        }
        if (seen_expire(s, t0 + sets[i].span) != SEEN_OK)
            return 1;
        save_set(load, sets[i].name, s);
        seen_free(s);
    }
    {
        /* Clustered integer ids and one far outlier: a run cut by rank,
         * which only version 3 may hold. */
        seen_policy p = {0, 1, 0, 0, SEEN_IDS_INT, 128};
        rng rc = {11}; /* its own: the seeds after it stay as they were */
        seen_set *s;
        if (seen_create(&p, &s) != SEEN_OK)
            return 1;
        uint64_t ids[2001];
        for (size_t i = 0; i < 2000; i++)
            ids[i] = 2700000 + rng_below(&rc, 6000);
        ids[2000] = UINT64_C(1) << 60;
        if (seen_add_int(s, ids, 2001, NULL, t0, NULL) != SEEN_OK || seen_expire(s, t0) != SEEN_OK)
            return 1;
        save_set(load, "exact-int-clustered-ranked", s);
        seen_free(s);
    }
    {
        /* Large enough for Elias-Fano runs (format version 4): one window
         * of string ids, and integer ids without one. */
        rng re = {13};
        seen_policy ps = {90 * day, 2, 0.001, 0, SEEN_IDS_STR, 16};
        seen_policy pi = {0, 1, 0.01, 0, SEEN_IDS_INT, 16};
        seen_set *s;
        if (seen_create(&ps, &s) != SEEN_OK)
            return 1;
        fill(s, &re, 45000, t0, 80 * day, 0);
        if (seen_expire(s, t0 + 80 * day) != SEEN_OK)
            return 1;
        save_set(load, "compact-str-ef", s);
        seen_free(s);
        if (seen_create(&pi, &s) != SEEN_OK)
            return 1;
        s->raw_keys = 0;
        fill(s, &re, 60000, t0, day, 0);
        if (seen_expire(s, t0 + day) != SEEN_OK)
            return 1;
        save_set(load, "compact-int-ef", s);
        seen_free(s);
    }
    {
        /* Integer sets keyed by the raw ids (format version 6): a 10-minute
         * session of 300 ids of a 400,000-id catalogue, and an import of
         * dense ids over a window, settled exact. */
        rng rr = {17};
        seen_policy ps = {600000, 4, 0.001, 0, SEEN_IDS_INT, 16};
        seen_policy pi = {90 * day, 4, 0.001, 0, SEEN_IDS_INT, 16};
        seen_set *s;
        if (seen_create(&ps, &s) != SEEN_OK)
            return 1;
        for (int pg = 0; pg < 15; pg++) {
            uint64_t ids[20];
            for (int i = 0; i < 20; i++)
                ids[i] = 2700000 + rng_below(&rr, 400000);
            if (seen_add_int(s, ids, 20, NULL, t0 + 40000 * (pg + 1), NULL) != SEEN_OK)
                return 1;
        }
        save_set(load, "raw-int-session", s);
        seen_free(s);
        if (seen_create(&pi, &s) != SEEN_OK)
            return 1;
        fill(s, &rr, 3000, t0, 90 * day, 1);
        save_set(load, "raw-int-import", s);
        if (seen_expire(s, t0 + 90 * day) != SEEN_OK)
            return 1;
        save_set(load, "raw-int-settled", s);
        seen_free(s);
    }
    for (int i = 0; i < 48; i++) {
        uint8_t prog[600];
        prog[0] = (uint8_t)(i * 37);
        prog[1] = (uint8_t)(i * 11);
        for (size_t k = 2; k < sizeof prog; k++)
            prog[k] = (uint8_t)rng_next(&r);
        char name[32];
        snprintf(name, sizeof name, "prog-%02d", i);
        write_file(ops, name, prog, 120 + (size_t)i * 10);
    }
    write_batch_programs(root);
    return 0;
}
