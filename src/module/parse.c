/*
 * parse.c — turning command arguments into numbers, durations, policies
 * and item batches.  Every parser is strict (no signs, spaces or trailing
 * bytes) so that an argument is either understood exactly or rejected with
 * an error that names what was wrong; nothing is silently truncated.
 */
#include "module.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

bool arg_is(RedisModuleString *arg, const char *word)
{
    size_t len;
    const char *s = RedisModule_StringPtrLen(arg, &len);
    return len == strlen(word) && strncasecmp(s, word, len) == 0;
}

bool arg_u64(RedisModuleString *arg, uint64_t *out)
{
    size_t len;
    const char *s = RedisModule_StringPtrLen(arg, &len);
    return decimal_u64(s, len, out);
}

bool arg_time(RedisModuleString *arg, int64_t *out)
{
    uint64_t v;
    if (!arg_u64(arg, &v) || v > (uint64_t)SEEN_MAX_TIME_MS)
        return false;
    *out = (int64_t)v;
    return true;
}

bool parse_duration(const char *s, size_t len, uint64_t *ms)
{
    static const struct {
        const char *suffix;
        uint64_t ms;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}};
    size_t digits = 0;
    while (digits < len && s[digits] >= '0' && s[digits] <= '9')
        digits++;
    uint64_t n;
    if (!decimal_u64(s, digits, &n))
        return false;
    size_t rest = len - digits;
    if (rest == 0) {
        *ms = n;
        return true;
    }
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
        if (rest == strlen(units[u].suffix) &&
            strncasecmp(s + digits, units[u].suffix, rest) == 0) {
            if (n > UINT64_MAX / units[u].ms)
                return false;
            *ms = n * units[u].ms;
            return true;
        }
    }
    return false;
}

bool parse_error_rate(const char *s, size_t len, double *out)
{
    if (len == 5 && strncasecmp(s, "exact", 5) == 0) {
        *out = 0.0;
        return true;
    }
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return false;
    /* Plain decimal only: digits, one point, an exponent.  strtod alone
     * would also take leading spaces, hex floats and "inf". */
    bool digits = false, point = false, exponent = false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c >= '0' && c <= '9') {
            digits = true;
        } else if (c == '.' && !point && !exponent) {
            point = true;
        } else if ((c == 'e' || c == 'E') && digits && !exponent && i + 1 < len) {
            exponent = true;
            if (s[i + 1] == '+' || s[i + 1] == '-')
                i++;
            if (i + 1 >= len)
                return false;
        } else {
            return false;
        }
    }
    if (!digits)
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    double d = strtod(buf, &end);
    /* 0 would mean exact: that must be asked for by name, not by a typo. */
    if (end != buf + len || !isfinite(d) || d <= 0.0)
        return false;
    *out = d;
    return true;
}

/* ------------------------------------------------------------ items */

static char batch_error[96];

static bool batch_size_ok(size_t n, const char **err)
{
    if (n > seen_cfg.max_batch) {
        snprintf(batch_error, sizeof batch_error,
                 "ERR batch of %zu items is larger than seen.max-batch (%llu)", n,
                 (unsigned long long)seen_cfg.max_batch);
        *err = batch_error;
        return false;
    }
    return true;
}

static bool batch_lengths_ok(const item_batch *b, const char **err)
{
    for (size_t i = 0; i < b->n; i++) {
        if (b->strs[i].len == 0 || b->strs[i].len > SEEN_MAX_ITEM_LEN) {
            *err = seen_reply_error(SEEN_ERR_ITEM_LEN);
            return false;
        }
    }
    return true;
}

bool item_batch_from_args(item_batch *b, RedisModuleString **argv, int n, const char **err)
{
    memset(b, 0, sizeof *b);
    if (!batch_size_ok((size_t)n, err))
        return false;
    b->strs = RedisModule_Alloc((size_t)(n ? n : 1) * sizeof *b->strs);
    for (int i = 0; i < n; i++)
        b->strs[i].ptr = RedisModule_StringPtrLen(argv[i], &b->strs[i].len);
    b->n = (size_t)n;
    return batch_lengths_ok(b, err);
}

/* A batch's items as they are found: the array grows by doubling. */
typedef struct line_sink {
    item_batch *b;
    size_t cap;
} line_sink;

/* Add item [start, stop); false once the batch is past the largest one
 * taken (the caller then only counts). */
static inline bool sink_push(line_sink *k, const char *start, const char *stop)
{
    item_batch *b = k->b;
    if (b->n == k->cap) {
        if (b->n > seen_cfg.max_batch)
            return false;
        k->cap *= 2;
        b->strs = RedisModule_Realloc(b->strs, k->cap * sizeof *b->strs);
    }
    b->strs[b->n++] = (seen_str){start, (size_t)(stop - start)};
    return true;
}

/* The lines of a BULK argument, their lengths not yet checked.  One pass
 * over the bytes, sixteen at a time where SSE2 compares them: a memchr call
 * per 24-byte line cost 30 us of a 10,000-line batch, the calls more than
 * the scanning. */
static bool bulk_lines(item_batch *b, RedisModuleString *bulk, const char **err)
{
    memset(b, 0, sizeof *b);
    size_t len;
    const char *s = RedisModule_StringPtrLen(bulk, &len);
    if (len > 0 && s[len - 1] == '\n')
        len--; /* one final newline, as most writers of lines leave */
    if (len == 0)
        return batch_size_ok(0, err);
    /* Sized from the first line, so that a batch of like lines is not
     * copied as its array doubles. */
    const char *nl = memchr(s, '\n', len);
    size_t guess = nl ? len / (size_t)(nl - s + 1) + 16 : 1;
    if (guess > 65536)
        guess = 65536; /* past this, doubling costs little more */
    line_sink k = {b, guess <= seen_cfg.max_batch ? guess : seen_cfg.max_batch + 1};
    b->strs = RedisModule_Alloc(k.cap * sizeof *b->strs);
    const char *start = s;
    size_t i = 0;
    bool room = true;
#if defined(__SSE2__)
    const __m128i newline = _mm_set1_epi8('\n');
    for (; room && i + 16 <= len; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, newline));
        while (m && room) {
            const char *at = s + i + (unsigned)__builtin_ctz(m);
            m &= m - 1;
            if ((room = sink_push(&k, start, at)))
                start = at + 1;
        }
    }
#endif
    for (; room && i < len; i++) {
        if (s[i] == '\n') {
            if ((room = sink_push(&k, start, s + i)))
                start = s + i + 1;
        }
    }
    if (room)
        room = sink_push(&k, start, s + len);
    if (!room) {
        /* Count the rest only to say how large the batch was: the lines
         * from `start` on, the one there included. */
        size_t n = b->n + 1;
        for (const char *p = start; (p = memchr(p, '\n', (size_t)(s + len - p))) != NULL; p++)
            n++;
        item_batch_free(b);
        return batch_size_ok(n, err);
    }
    if (!batch_size_ok(b->n, err)) {
        item_batch_free(b);
        return false;
    }
    return true;
}

bool item_batch_from_bulk(item_batch *b, RedisModuleString *bulk, const char **err)
{
    if (!bulk_lines(b, bulk, err) || !batch_lengths_ok(b, err))
        return false;
    b->lines = true;
    return true;
}

static bool time_of(const char *s, size_t len, int64_t *out)
{
    uint64_t v;
    if (!decimal_u64(s, len, &v) || v > (uint64_t)SEEN_MAX_TIME_MS)
        return false;
    *out = (int64_t)v;
    return true;
}

/* Items with their times: argument pairs (ITEMS ms item ...) or lines
 * "ms item" (BULK: split at the first space, so an item may hold spaces). */
bool item_batch_timed(item_batch *b, RedisModuleString **argv, int argc, RedisModuleString *bulk,
                      int64_t **at, const char **err)
{
    memset(b, 0, sizeof *b);
    *at = NULL;
    if (bulk == NULL && argc % 2 != 0) {
        *err = "ERR TIMED ITEMS takes pairs: ms item [ms item ...]";
        return false;
    }
    size_t n = bulk ? 0 : (size_t)argc / 2;
    if (bulk ? !bulk_lines(b, bulk, err) : !batch_size_ok(n, err))
        return false;
    if (bulk)
        n = b->n;
    else
        b->strs = RedisModule_Alloc((n ? n : 1) * sizeof *b->strs);
    int64_t *times = RedisModule_Alloc((n ? n : 1) * sizeof *times);
    for (size_t i = 0; i < n; i++) {
        const char *t, *item;
        size_t tlen, ilen;
        if (bulk) {
            const char *line = b->strs[i].ptr, *sp = memchr(line, ' ', b->strs[i].len);
            if (sp == NULL) {
                *err = "ERR TIMED BULK lines are 'ms item'";
                goto fail;
            }
            t = line;
            tlen = (size_t)(sp - line);
            item = sp + 1;
            ilen = b->strs[i].len - tlen - 1;
        } else {
            t = RedisModule_StringPtrLen(argv[2 * i], &tlen);
            item = RedisModule_StringPtrLen(argv[2 * i + 1], &ilen);
        }
        if (!time_of(t, tlen, &times[i])) {
            *err = "ERR bad TIMED time: give ms since the epoch";
            goto fail;
        }
        b->strs[i] = (seen_str){item, ilen};
    }
    b->n = n;
    if (!batch_lengths_ok(b, err))
        goto fail;
    *at = times;
    return true;
fail:
    RedisModule_Free(times);
    item_batch_free(b);
    return false;
}

bool item_batch_ints(item_batch *b, const char **err)
{
    if (b->ints)
        return true;
    b->ints = RedisModule_Alloc((b->n ? b->n : 1) * sizeof *b->ints);
    for (size_t i = 0; i < b->n; i++) {
        if (!decimal_u64(b->strs[i].ptr, b->strs[i].len, &b->ints[i])) {
            *err = "ERR items of an IDS INT set must be decimal integers from 0 to "
                   "18446744073709551615";
            return false;
        }
    }
    return true;
}

void item_batch_free(item_batch *b)
{
    if (b->strs)
        RedisModule_Free(b->strs);
    if (b->ints)
        RedisModule_Free(b->ints);
    memset(b, 0, sizeof *b);
}

/* ------------------------------------------------------------ options */

void key_options_default(key_options *o)
{
    o->policy = seen_cfg.policy;
    o->expiry = seen_cfg.key_expiry && seen_cfg.policy.window_ms > 0;
    o->jitter_ms = -1;
    o->given = 0;
}

/* The options of a key, each of which may be named once; ERROR and EXACT
 * are one option. */
static const char *const option_names[] = {"WINDOW", "SLICES", "ERROR",      "CAPACITY",
                                           "IDS",    "EXPIRY", "EXACTLIMIT", "JITTER"};
enum { OPT_ERROR = 2 };

static int option_index(RedisModuleString *name)
{
    if (arg_is(name, "EXACT"))
        return OPT_ERROR;
    for (int k = 0; k < (int)(sizeof option_names / sizeof option_names[0]); k++)
        if (arg_is(name, option_names[k]))
            return k;
    return -1;
}

int key_option_parse(key_options *o, RedisModuleString **argv, int argc, int *i, const char **err)
{
    RedisModuleString *name = argv[*i];
    bool has_value = *i + 1 < argc;
    size_t len = 0;
    const char *v = has_value ? RedisModule_StringPtrLen(argv[*i + 1], &len) : NULL;
    int opt = option_index(name);
    if (opt >= 0 && (o->given & (1u << opt))) {
        static char msg[96];
        snprintf(msg, sizeof msg, "ERR %s given twice%s", option_names[opt],
                 opt == OPT_ERROR ? " (ERROR and EXACT are the same option)" : "");
        *err = msg;
        return -1;
    }
    if (opt >= 0)
        o->given |= 1u << opt;

    if (arg_is(name, "EXACT")) {
        o->policy.error = 0.0;
        *i += 1;
        return 1;
    }
    if (arg_is(name, "WINDOW")) {
        if (!has_value || !parse_duration(v, len, &o->policy.window_ms)) {
            *err = "ERR bad window: give milliseconds, or a number with ms, s, m, h or d "
                   "(e.g. 90d)";
            return -1;
        }
    } else if (arg_is(name, "SLICES")) {
        uint64_t n;
        if (!has_value || !decimal_u64(v, len, &n) || n < 1 || n > SEEN_MAX_SLICES) {
            *err = seen_reply_error(SEEN_ERR_SLICES);
            return -1;
        }
        o->policy.slices = (uint32_t)n;
    } else if (arg_is(name, "ERROR")) {
        if (!has_value || !parse_error_rate(v, len, &o->policy.error)) {
            *err = seen_reply_error(SEEN_ERR_ERROR_RATE);
            return -1;
        }
    } else if (arg_is(name, "CAPACITY")) {
        if (!has_value || !decimal_u64(v, len, &o->policy.capacity) ||
            o->policy.capacity > SEEN_MAX_CAPACITY) {
            *err = seen_reply_error(SEEN_ERR_CAPACITY);
            return -1;
        }
    } else if (arg_is(name, "IDS")) {
        if (has_value && arg_is(argv[*i + 1], "STR")) {
            o->policy.ids = SEEN_IDS_STR;
        } else if (has_value && arg_is(argv[*i + 1], "INT")) {
            o->policy.ids = SEEN_IDS_INT;
        } else {
            *err = "ERR IDS must be STR or INT";
            return -1;
        }
    } else if (arg_is(name, "EXACTLIMIT")) {
        uint64_t n;
        if (!has_value || !decimal_u64(v, len, &n) || n > (UINT64_C(1) << 31)) {
            *err = "ERR EXACTLIMIT must be an integer from 0 to 2147483648";
            return -1;
        }
        o->policy.exact_limit = (uint32_t)n;
    } else if (arg_is(name, "EXPIRY")) {
        if (has_value && arg_is(argv[*i + 1], "ON")) {
            o->expiry = true;
        } else if (has_value && arg_is(argv[*i + 1], "OFF")) {
            o->expiry = false;
        } else {
            *err = "ERR EXPIRY must be ON or OFF";
            return -1;
        }
    } else if (arg_is(name, "JITTER")) {
        uint64_t ms;
        if (!has_value || !parse_duration(v, len, &ms) || ms > SEEN_MAX_WINDOW_MS) {
            *err = "ERR bad jitter: give a duration of at most 100 years (e.g. 1h)";
            return -1;
        }
        o->jitter_ms = (int64_t)ms;
    } else {
        return 0;
    }
    *i += 2;
    return 1;
}

const char *key_options_check(const key_options *o)
{
    seen_err err = seen_policy_check(&o->policy);
    if (err != SEEN_OK)
        return seen_reply_error(err);
    if (o->expiry && o->policy.window_ms == 0)
        return "ERR EXPIRY ON needs a WINDOW: a key without one is never forgotten";
    return NULL;
}

const char *seen_reply_error(seen_err err)
{
    static char messages[SEEN_ERR__COUNT + 1][160];
    unsigned k = (unsigned)err <= SEEN_ERR__COUNT ? (unsigned)err : SEEN_ERR__COUNT;
    if (messages[k][0] == '\0')
        snprintf(messages[k], sizeof messages[k], "ERR %s", seen_strerror(err));
    return messages[k];
}
