/*
 * fastclock.c — an LD_PRELOAD library that makes a whole process's wall
 * clock run fast, so a redis-server lives through months in a minute:
 *
 *   SEEN_FASTCLOCK_FACTOR=172800 LD_PRELOAD=build/bench/libfastclock.so redis-server ...
 *
 * Wall-clock time (clock_gettime with CLOCK_REALTIME or its coarse variant,
 * gettimeofday, time) is start + (real - start) * factor, start being the
 * real time when the library was loaded, plus SEEN_FASTCLOCK_OFFSET_MS.
 * Monotonic clocks are left alone: Redis paces its event loop and timers
 * with them, so the server works at its normal speed while its calendar
 * flies.  The real time is read with raw system calls, not by looking up
 * the C library's functions, because jemalloc reads the clock while the
 * process starts, before such lookups work.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int64_t start_ns;  /* real wall time at load */
static int64_t offset_ns; /* added to the scaled time */
static double factor = 1.0;

static int real_clock(clockid_t id, struct timespec *ts)
{
    return (int)syscall(SYS_clock_gettime, id, ts);
}

static int64_t real_ns(clockid_t id)
{
    struct timespec ts;
    real_clock(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

__attribute__((constructor)) static void fastclock_init(void)
{
    start_ns = real_ns(CLOCK_REALTIME);
    const char *f = getenv("SEEN_FASTCLOCK_FACTOR");
    const char *o = getenv("SEEN_FASTCLOCK_OFFSET_MS");
    if (f && atof(f) > 0)
        factor = atof(f);
    if (o)
        offset_ns = (int64_t)(atof(o) * 1e6);
}

static int64_t fast_ns(clockid_t id)
{
    if (start_ns == 0) /* called before the constructor (jemalloc) */
        fastclock_init();
    int64_t now = real_ns(id);
    return start_ns + (int64_t)((double)(now - start_ns) * factor) + offset_ns;
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
    if (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE)
        return real_clock(id, ts);
    int64_t ns = fast_ns(id);
    ts->tv_sec = (time_t)(ns / 1000000000);
    ts->tv_nsec = (long)(ns % 1000000000);
    return 0;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    (void)tz;
    int64_t ns = fast_ns(CLOCK_REALTIME);
    tv->tv_sec = (time_t)(ns / 1000000000);
    tv->tv_usec = (suseconds_t)(ns % 1000000000 / 1000);
    return 0;
}

time_t time(time_t *out)
{
    time_t t = (time_t)(fast_ns(CLOCK_REALTIME) / 1000000000);
    if (out)
        *out = t;
    return t;
}
