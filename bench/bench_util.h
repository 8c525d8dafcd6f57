/*
 * bench_util.h — what every in-process benchmark needs besides the
 * library: a seeded generator (splitmix64: each program keeps its own
 * state, so its inputs are the same from run to run), a monotonic clock in
 * seconds, and a qsort comparator for the medians of timings.
 */
#ifndef SEEN_BENCH_UTIL_H
#define SEEN_BENCH_UTIL_H

#include <stdint.h>
#include <time.h>

static inline uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static inline double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#endif
