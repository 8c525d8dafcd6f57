/*
 * states.c — keys driven through the rate patterns a feed's users follow,
 * in process (`make bench-states`): how many runs each key holds and what
 * it costs per live item over 250 days, and whether every write was taken.
 *
 * Runs are what a key's queries and adds pay for (each candidate is looked
 * up in every run), and a key's plan — the divisor its fingerprints are
 * coded under — decides its bits: a key whose rate moves re-plans, and
 * runs of different plans cannot merge.  The steady user of the other
 * benchmarks is one row here; the others are what users do besides:
 * grow, slow down, come and go in waves, send a page late, binge after
 * months of a page now and then, come back after months away.
 *
 * Each pattern gives items a day as a function of the day; pages of 20
 * fresh 24-character ids are written at their times, in order, through
 * seen_add_str (as the module writes at its clock), under the default
 * policy (90 days, error 0.001) in 4, 16 and 64 slices, and a steady and a
 * growing user under other policies (a week's or a day's window, a cap
 * and no window, no limit) in 4.  At the end of
 * each day without writes the key sheds what it has forgotten
 * (seen_expire, as the module's sweep does for idle keys); at the end of
 * every day the program records its runs
 * (seen_runs) and its bytes (seen_bytes: the set as the library holds
 * it, its fixed structures included) over the items the policy keeps
 * (written in the last window's days, the newest `capacity`, or all),
 * from the 6th day on and where those are at least 1,000.
 * Reported: the most and the mean of each, and the writes refused (none
 * is expected).  A key holds an item until its slice is forgotten, up to a
 * slice past the window, so where the items of the last 90 days fall away
 * (a user going away) the bits per live item peak for that slice.
 */
#include "seen.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DAY INT64_C(86400000)
#define DAYS 250
#define PAGE 20
#define T0 INT64_C(1763700000000)

typedef struct pattern {
    const char *name;
    double (*rate)(double day); /* items a day */
    double away_from, away_to;  /* days without writes */
    bool late_second_page;      /* the second page a minute older than the first */
} pattern;

static double steady(double d)
{
    (void)d;
    return 1000;
}
static double swings(double d)
{
    return ((int)(d / 50)) % 2 ? 100 : 1000;
}
static double grows(double d)
{
    return 100 + 20 * d;
}
static double grows_fast(double d)
{
    return 100 + 100 * d;
}
static double doubles(double d)
{
    return fmin(50 * exp2(d / 14), 20000);
}
static double heavy_then_light(double d)
{
    return d < 30 ? 3000 : 300;
}
static double weekends(double d)
{
    return ((int)d % 7) >= 5 ? 3000 : 700;
}
static double waves(double d)
{
    return 1000 * exp(1.5 * sin(d / 9));
}
static double decays(double d)
{
    return 3000 * exp2(-d / 20) + 20;
}
static double binge(double d)
{
    return d >= 100 && d < 101 ? 20000 : 1;
}

static const pattern patterns[] = {
    {"steady, 1,000 a day", steady, 0, 0, false},
    {"1,000 a day, second page a minute late", steady, 0, 0, true},
    {"1,000 a day, away days 10-140", steady, 10, 140, false},
    {"1,000 and 100 a day, 50 days each", swings, 0, 0, false},
    {"100 + 20 more each day", grows, 0, 0, false},
    {"100 + 100 more each day", grows_fast, 0, 0, false},
    {"doubling every 2 weeks, to 20,000", doubles, 0, 0, false},
    {"3,000 a day for 30 days, then 300", heavy_then_light, 0, 0, false},
    {"700 a day, 3,000 at weekends", weekends, 0, 0, false},
    {"waves, 1,000 x e^(1.5 sin(day/9))", waves, 0, 0, false},
    {"3,000 halving every 20 days, + 20", decays, 0, 0, false},
    {"1 a day, 20,000 on day 100", binge, 0, 0, false},
};

/* The other policies a key can be made with: a short window, a cap with
 * no window, no limit at all.  Items "live" are those the policy keeps:
 * the last window's, the newest `capacity`, or all. */
typedef struct policy_case {
    const char *name;
    int window_days; /* 0: none */
    uint64_t capacity;
} policy_case;

static const policy_case default_policy = {"90 days", 90, 0};

static const policy_case other_policies[] = {
    {"7 days", 7, 0},
    {"1 day", 1, 0},
    {"no window, capacity 10,000", 0, 10000},
    {"no window, capacity 100,000", 0, 100000},
    {"no window, no capacity", 0, 0},
};

/* The patterns each other policy is driven through (indexes into
 * patterns[]): a steady user and a growing one. */
static const size_t other_patterns[] = {0, 4};

typedef struct outcome {
    unsigned refused;
    unsigned runs_max;
    double runs_mean, bits_max, bits_mean;
    uint64_t written;
} outcome;

/* Items written per day so far: live items are the last 90 days' sum. */
static uint64_t per_day[DAYS + 1];

static outcome drive(const pattern *pt, uint32_t slices, const policy_case *pc)
{
    outcome o = {0};
    seen_policy p;
    seen_policy_default(&p);
    p.slices = slices;
    p.window_ms = (uint64_t)pc->window_days * (uint64_t)DAY;
    p.capacity = pc->capacity;
    seen_set *s;
    if (seen_create(&p, &s) != SEEN_OK)
        exit(1);
    memset(per_day, 0, sizeof per_day);
    char ids[PAGE][25];
    seen_str page[PAGE];
    seen_run_info runs[64];
    double carry = 0, runs_sum = 0, bits_sum = 0;
    unsigned samples = 0, bit_samples = 0;
    for (int day = 0; day < DAYS; day++) {
        bool away = day >= pt->away_from && day < pt->away_to;
        carry += away ? 0 : pt->rate(day) / PAGE;
        int pages = (int)carry;
        carry -= pages;
        for (int k = 0; k < pages; k++) {
            int64_t at = T0 + day * DAY + (int64_t)((k + 0.5) * (double)DAY / pages);
            if (pt->late_second_page && o.written == PAGE)
                at = T0 - 60000;
            for (int i = 0; i < PAGE; i++) {
                snprintf(ids[i], sizeof ids[i], "%024llu",
                         (unsigned long long)(o.written + (uint64_t)i));
                page[i] = (seen_str){ids[i], 24};
            }
            if (seen_add_str(s, page, PAGE, NULL, at, NULL) != SEEN_OK)
                o.refused++;
            o.written += PAGE;
            per_day[day] += PAGE;
        }
        /* A day without writes: forgotten slices go, as the module's sweep
         * sheds them from idle keys (writes shed them themselves). */
        if (pages == 0 && seen_expire(s, T0 + (day + 1) * DAY) != SEEN_OK)
            exit(1);
        if (day < 5)
            continue;
        unsigned n = (unsigned)seen_runs(s, runs, 64);
        if (n > o.runs_max)
            o.runs_max = n;
        runs_sum += n;
        samples++;
        uint64_t live = 0;
        int span = pc->window_days ? pc->window_days : DAYS;
        for (int d = day >= span - 1 ? day - (span - 1) : 0; d <= day; d++)
            live += per_day[d];
        if (pc->capacity && live > pc->capacity)
            live = pc->capacity;
        if (live >= 1000) {
            double bits = (double)seen_bytes(s) * 8.0 / (double)live;
            if (bits > o.bits_max)
                o.bits_max = bits;
            bits_sum += bits;
            bit_samples++;
        }
    }
    o.runs_mean = samples ? runs_sum / samples : 0;
    o.bits_mean = bit_samples ? bits_sum / bit_samples : 0;
    seen_free(s);
    return o;
}

int main(int argc, char **argv)
{
    const char *out_path = argc > 1 ? argv[1] : NULL;
    FILE *out = out_path ? fopen(out_path, "w") : stdout;
    if (out == NULL) {
        perror(out_path);
        return 1;
    }
    static const uint32_t slice_counts[] = {4, 16, 64};
    time_t started = time(NULL);
    fprintf(out, "# Key states: runs and bits per live item over %d days\n\n", DAYS);
    fprintf(out,
            "Command: `make bench-states` (in process; bench/states.c says what is measured). "
            "Policy: 90 days, error 0.001, in the slices given; pages of %d at their times.\n\n",
            PAGE);
    fprintf(out, "| pattern (items a day) | slices | items written | writes refused | runs, most | "
                 "runs, mean | bits per live item, most | mean |\n");
    fprintf(out, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    unsigned refused = 0;
    for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; i++) {
        for (size_t j = 0; j < sizeof slice_counts / sizeof slice_counts[0]; j++) {
            outcome o = drive(&patterns[i], slice_counts[j], &default_policy);
            refused += o.refused;
            fprintf(out, "| %s | %u | %llu | %u | %u | %.1f | %.1f | %.1f |\n", patterns[i].name,
                    slice_counts[j], (unsigned long long)o.written, o.refused, o.runs_max,
                    o.runs_mean, o.bits_max, o.bits_mean);
            fflush(out);
        }
    }
    fprintf(out, "\nOther policies, in 4 slices (error 0.001); live items are those the policy "
                 "keeps:\n\n");
    fprintf(out, "| policy | pattern (items a day) | items written | writes refused | runs, most | "
                 "runs, mean | bits per live item, most | mean |\n");
    fprintf(out, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (size_t i = 0; i < sizeof other_policies / sizeof other_policies[0]; i++) {
        for (size_t j = 0; j < sizeof other_patterns / sizeof other_patterns[0]; j++) {
            const pattern *pt = &patterns[other_patterns[j]];
            outcome o = drive(pt, 4, &other_policies[i]);
            refused += o.refused;
            fprintf(out, "| %s | %s | %llu | %u | %u | %.1f | %.1f | %.1f |\n",
                    other_policies[i].name, pt->name, (unsigned long long)o.written, o.refused,
                    o.runs_max, o.runs_mean, o.bits_max, o.bits_mean);
            fflush(out);
        }
    }
    fprintf(out, "\n%u writes refused in all; %ld s.\n", refused, (long)(time(NULL) - started));
    if (out != stdout)
        fclose(out);
    return refused ? 2 : 0;
}
