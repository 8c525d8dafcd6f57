/* util.c — logging, clocks, allocation and byte buffers for seen-ingest. */
#include "ingest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum log_level log_threshold = LOG_INFO;
volatile sig_atomic_t stop_requested;
int64_t shutdown_timeout_ms = 30000;
void (*while_waiting)(void);

bool giving_up(void)
{
    static int64_t stop_seen_ms;
    if (!stop_requested)
        return false;
    if (!stop_seen_ms)
        stop_seen_ms = mono_ms();
    return mono_ms() - stop_seen_ms >= shutdown_timeout_ms;
}

/* Malformed events logged per stats interval before the rest are only
 * counted: enough to diagnose, too few to flood the log. */
#define BAD_INPUT_LOG_BUDGET 20
static unsigned bad_input_logged, bad_input_suppressed;

static void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    /* One fprintf per line, so lines from a restarted process interleave whole. */
    char line[2048];
    int n = snprintf(line, sizeof line, "%s.%03ldZ seen-ingest %s: ", when, ts.tv_nsec / 1000000,
                     names[level]);
    if (n < 0)
        return;
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    fprintf(stderr, "%s\n", line);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    if (level > log_threshold)
        return;
    va_list ap;
    va_start(ap, fmt);
    log_vmsg(level, fmt, ap);
    va_end(ap);
}

void log_bad_input(const char *fmt, ...)
{
    if (bad_input_logged >= BAD_INPUT_LOG_BUDGET) {
        bad_input_suppressed++;
        return;
    }
    bad_input_logged++;
    va_list ap;
    va_start(ap, fmt);
    log_vmsg(LOG_WARN, fmt, ap);
    va_end(ap);
}

void log_reset_budget(void)
{
    if (bad_input_suppressed)
        log_msg(LOG_WARN, "%u more malformed events not logged", bad_input_suppressed);
    bad_input_logged = bad_input_suppressed = 0;
}

static int64_t clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t now_ms(void)
{
    return clock_ms(CLOCK_REALTIME);
}
int64_t mono_ms(void)
{
    return clock_ms(CLOCK_MONOTONIC);
}

void sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    /* A signal cuts the sleep short, which is what a shutdown wants. */
    nanosleep(&ts, NULL);
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        log_msg(LOG_ERROR, "out of memory (%zu bytes)", n);
        abort();
    }
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        log_msg(LOG_ERROR, "out of memory (%zu bytes)", n);
        abort();
    }
    return q;
}

char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

void buf_reserve(struct buf *b, size_t extra)
{
    if (b->cap - b->len >= extra)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < extra)
        cap *= 2;
    b->data = xrealloc(b->data, cap);
    b->cap = cap;
}

void buf_append(struct buf *b, const void *data, size_t n)
{
    buf_reserve(b, n + 1);
    if (n)
        memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0'; /* always a C string too, for log lines */
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    buf_reserve(b, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void buf_free(struct buf *b)
{
    free(b->data);
    *b = (struct buf){0};
}

void buf_json_string(struct buf *b, const char *s, size_t n)
{
    buf_append(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            buf_append(b, esc, 2);
        } else if (c < 0x20) {
            buf_printf(b, "\\u%04x", c);
        } else {
            buf_append(b, s + i, 1);
        }
    }
    buf_append(b, "\"", 1);
}
