/*
 * young_pages.c — a heavy key's first day in every page size, in process
 * (`make bench-young`): the worst bits per item of the key as the module
 * holds it, after every page once it holds 1,000 items.
 *
 * `make bench-lifecycle` writes a first-day burst through Redis in pages of
 * 20 and of 5; where a young key's runs start depends on the page at which
 * the one before stopped taking items, so this walks the same burst (1,000
 * fresh items an hour for 24 hours, at their times, default policy) in 17
 * page sizes from 1 to 1,000, and first days of 30,000 to 320,000 items in
 * pages of 20 to the day's end.  The key in Redis is estimated as the
 * module keeps it: its serialized bytes and 96 (Redis's entry and the
 * module's record) while they are at most seen.pack-max-bytes (8 KB), else
 * the set's blocks as jemalloc sizes them (an allocator hook rounding every
 * block up to its size class) and 64.  The young-key target is 20 bits per
 * item after every page.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/common/size_class.h"
#include "seen.h"

#define PACK_MAX_BYTES 8192u
#define PACKED_EXTRA_BYTES 96u
#define UNPACKED_EXTRA_BYTES 64u
#define HOUR_MS INT64_C(3600000)
#define T0 INT64_C(1700000000000)
#define TARGET_BITS 20.0
#define MAX_PAGE 1000

/* Every block carries its class ahead of it, so usable sizes are exact. */
static void *class_malloc(size_t n)
{
    size_t c = size_class_of(n);
    size_t *p = malloc(c + 2 * sizeof(size_t));
    if (p == NULL)
        return NULL;
    p[0] = c;
    return p + 2;
}

static void class_free(void *p)
{
    if (p)
        free((size_t *)p - 2);
}

static size_t class_usable(void *p)
{
    return ((size_t *)p)[-2];
}

static void *class_realloc(void *p, size_t n)
{
    if (p == NULL)
        return class_malloc(n);
    void *q = class_malloc(n);
    if (q == NULL)
        return NULL;
    size_t old = class_usable(p);
    memcpy(q, p, old < n ? old : n);
    class_free(p);
    return q;
}

static double key_bytes(const seen_set *s)
{
    size_t packed = seen_serialized_size(s);
    return packed <= PACK_MAX_BYTES ? (double)(packed + PACKED_EXTRA_BYTES)
                                    : (double)(seen_bytes(s) + UNPACKED_EXTRA_BYTES);
}

typedef struct {
    double worst, end;
    long worst_at, over, judged;
} walk;

/* `items` fresh items over `hours`, in pages of `page` at their times. */
static walk first_day(long items, double hours, long page)
{
    static char text[MAX_PAGE][32];
    static seen_str strs[MAX_PAGE];
    seen_policy p;
    seen_policy_default(&p);
    seen_set *s;
    if (seen_create(&p, &s) != SEEN_OK)
        abort();
    walk w = {0, 0, 0, 0, 0};
    long pages = (items + page - 1) / page, held = 0;
    int64_t t = T0;
    for (long k = 0; k < pages; k++) {
        long n = page < items - held ? page : items - held;
        for (long j = 0; j < n; j++) {
            int len = snprintf(text[j], sizeof text[j], "young-%016lx", (unsigned long)(held + j));
            strs[j].ptr = text[j];
            strs[j].len = (size_t)len;
        }
        t = T0 + (int64_t)(hours * (double)HOUR_MS * (double)(k + 1) / (double)pages);
        if (seen_add_str(s, strs, (size_t)n, NULL, t, NULL) != SEEN_OK)
            abort();
        held += n;
        if (held < 1000)
            continue;
        double bits = key_bytes(s) * 8.0 / (double)held;
        w.judged++;
        w.over += bits > TARGET_BITS;
        if (bits > w.worst) {
            w.worst = bits;
            w.worst_at = held;
        }
    }
    w.end = key_bytes(s) * 8.0 / (double)held;
    seen_free(s);
    return w;
}

int main(int argc, char **argv)
{
    FILE *out = argc > 1 ? fopen(argv[1], "w") : stdout;
    if (out == NULL) {
        perror(argv[1]);
        return 1;
    }
    seen_allocator a = {class_malloc, class_realloc, class_free, class_usable};
    seen_set_allocator(&a);

    static const long page_sizes[] = {1,  2,  3,   5,   8,   10,  15,  20,  30,
                                      50, 70, 100, 150, 200, 300, 500, 1000};
    const size_t nsizes = sizeof page_sizes / sizeof *page_sizes;
    fprintf(out,
            "# A heavy key's first day in every page size\n\n"
            "Command: `make bench-young` (in process, default policy: 90 days, 4 slices, "
            "error 0.001). The key as the module holds it: serialized + %u bytes up to "
            "%u serialized bytes, else its blocks in jemalloc's classes + %u. Bits per "
            "item after every page once the key holds 1,000 items.\n\n",
            PACKED_EXTRA_BYTES, PACK_MAX_BYTES, UNPACKED_EXTRA_BYTES);
    fprintf(out,
            "A first-day burst: 1,000 items an hour for 24 hours.\n\n"
            "| page | worst bits/item | at items | pages over %.0f | bits at 24,000 |\n"
            "|---:|---:|---:|---:|---:|\n",
            TARGET_BITS);
    size_t missed = 0;
    double most = 0;
    for (size_t i = 0; i < nsizes; i++) {
        walk w = first_day(24000, 24.0, page_sizes[i]);
        missed += w.worst > TARGET_BITS;
        most = w.worst > most ? w.worst : most;
        fprintf(out, "| %ld | %.2f | %ld | %ld of %ld | %.2f |\n", page_sizes[i], w.worst,
                w.worst_at, w.over, w.judged, w.end);
    }
    fprintf(out, "\nFirst days of many items (pages of 20 over 24 hours): bits per item at the "
                 "day's end, and the worst page.\n\n"
                 "| items | at the end | worst | at items |\n|---:|---:|---:|---:|\n");
    static const long volumes[] = {30000,  40000,  48000,  64000,  80000, 96000,
                                   128000, 160000, 200000, 240000, 320000};
    double end_sum = 0;
    const size_t nvol = sizeof volumes / sizeof *volumes;
    for (size_t i = 0; i < nvol; i++) {
        walk w = first_day(volumes[i], 24.0, 20);
        end_sum += w.end;
        fprintf(out, "| %ld | %.2f | %.2f | %ld |\n", volumes[i], w.end, w.worst, w.worst_at);
    }
    fprintf(out,
            "\nTarget — every page of the burst at most %.0f bits per item: %s (%zu of %zu "
            "page sizes over, the worst %.2f). First days' ends: %.2f bits on average.\n",
            TARGET_BITS, missed ? "**MISSED**" : "holds", missed, nsizes, most,
            end_sum / (double)nvol);
    if (out != stdout)
        fclose(out);
    return 0;
}
