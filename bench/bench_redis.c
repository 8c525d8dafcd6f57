/*
 * bench_redis.c — `make bench`: seen against what users run today, on one
 * redis-server, in one run, as ratios.
 *
 * The same data goes into SEEN keys, Redis SETs, ZSETs (score = time, the
 * NetEase/vivo design) and, when REDISBLOOM_MODULE names a RedisBloom build,
 * BF keys at the same error rate.  The program starts its own redis-server
 * (driver.c), loads the workloads, measures, and writes a Markdown report
 * and gnuplot data files; the Makefile draws the plots.  The report's
 * writer is bench_report.c; the measuring stays one file past 1,000 lines
 * on purpose, since every measurement below runs on the one loaded server
 * state and shares its rounds, batches and CPU accounting.
 *
 *   - Memory: MEMORY USAGE per item for histories of 100 .. 100,000 items of
 *     24 bytes, per user for a 60/30/10 light/medium/heavy population (seed
 *     003), and for 300 integer app ids (seed 004); for seen, where its bytes
 *     go (payload, allocator rounding, fixed per-key parts).
 *   - Batch queries of 2,000 and 10,000 candidates, 10% already seen:
 *     candidates/s at saturation (several pipelined connections) and p50/p99
 *     latency (one connection, one request at a time, full hiredis decode),
 *     for every input and reply form of SEEN.FILTER/MFILTER, SMISMEMBER,
 *     ZMSCORE, ZRANGE-everything-then-filter-in-the-client and BF.MEXISTS.
 *     Beside REPLY BULK and REPLY FLAGS at 10,000 on 10,000, in the same
 *     rounds: GETs of strings as long as their replies, what the reply's
 *     bytes cost the server whoever made them.
 *   - Adds of 20 items (one feed page) to random users: items/s, with the
 *     users drawn uniformly, then SEEN.ADD and SADD again with users drawn
 *     in proportion to their history (as a feed's writes come), and in
 *     sessions (every user a page or two into its key as loaded, as users
 *     write between rests, where the rounds above make a burst); and per
 *     history size, pages into copies of each history's key as loaded,
 *     SEEN.ADD's time in the command beside SADD's.
 *   - The false-positive rate, on fresh candidates.
 *
 * Noise: the machine is shared, so each figure is the median of several
 * short rounds, and within a round the methods of one workload run back to
 * back, so a ratio compares measurements taken moments apart.  The client is
 * checked not to be the bottleneck: the server's CPU time (INFO CPU) over
 * each measurement is printed beside it — a single-threaded server near 100%
 * is saturated — and redis-benchmark re-measures two of the forms.
 *
 * One file past 1,000 lines on purpose: loading, queries, adds, the
 * false-positive run and the client checks share the workload generator
 * and the pipelining helpers at the top; the report is bench_report.c.
 */
#include "bench_redis.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ================================================================ options */

cfg C;

double g_start;

/* Progress goes to stderr, with the elapsed time. */
void progress(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[%5.1fs] ", drv_now() - g_start);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        drv_die("out of memory (%zu bytes)", n);
    return p;
}

/* ================================================================ data */

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint64_t rng_state = UINT64_C(0x5eed);
static uint64_t rnd(void)
{
    return mix64(rng_state += UINT64_C(0x9e3779b97f4a7c15));
}
static double rnd01(void)
{
    return (double)(rnd() >> 11) * 0x1p-53;
}

/* Id i of stream s: 24 hex digits (96 random bits), like vivo's video ids.
 * Streams never meet, so "fresh" candidates are never in any history. */
static void make_id(uint64_t stream, uint64_t i, char *out)
{
    static const char hex[] = "0123456789abcdef";
    uint64_t a = mix64(stream * UINT64_C(0x9e3779b97f4a7c15) + i * 2 + 1);
    uint64_t b = mix64(a ^ (stream + UINT64_C(0x632be59bd9b4e019)));
    for (int k = 0; k < 16; k++)
        out[k] = hex[(a >> (60 - 4 * k)) & 15];
    for (int k = 0; k < 8; k++)
        out[16 + k] = hex[(b >> (28 - 4 * k)) & 15];
}

static char *make_ids(uint64_t stream, long n)
{
    char *ids = xmalloc((size_t)n * ID_LEN);
    for (long i = 0; i < n; i++)
        make_id(stream, (uint64_t)i, ids + (size_t)i * ID_LEN);
    return ids;
}

#define STREAM_HIST 1u       /* + history index */
#define STREAM_USER 1000u    /* + user number */
#define STREAM_FRESH 500000u /* candidates never added */
#define STREAM_FPR 600000u
#define STREAM_ADD 700000u

/* ================================================================ loading */

const char *const kind_key[NKINDS] = {"seen", "seenat", "set", "zset", "bf", "bfs"};
const char *const kind_label[NKINDS] = {"seen", "seen (AT import)",   "SET",
                                        "ZSET", "BF (reserved at n)", "BF (scaling from 100)"};

int kind_enabled(int k)
{
    return (k != K_BF && k != K_BFS) || C.bloom != NULL;
}

/* Time of batch b of B: the history spreads over the window, oldest first,
 * the last batch at t_end. */
static int64_t batch_time(int64_t t_end, long b, long B)
{
    return t_end - WINDOW_MS + (int64_t)((double)WINDOW_MS * (double)(b + 1) / (double)B);
}

/* A pipelined writer on one blocking connection: append commands, read all
 * their replies every so often, die on an error reply. */
typedef struct piper {
    redisContext *c;
    int pending;
} piper;

static void pipe_flush(piper *p)
{
    for (; p->pending > 0; p->pending--) {
        void *r = NULL;
        if (redisGetReply(p->c, &r) != REDIS_OK)
            drv_die("load: %s", p->c->errstr);
        redisReply *rep = r;
        if (rep->type == REDIS_REPLY_ERROR)
            drv_die("load: error reply: %s", rep->str);
        freeReplyObject(rep);
    }
}

static void pipe_argv(piper *p, int argc, const char **argv, const size_t *lens)
{
    if (redisAppendCommandArgv(p->c, argc, argv, lens) != REDIS_OK)
        drv_die("load: %s", p->c->errstr);
    if (++p->pending >= 64)
        pipe_flush(p);
}

/* Argument vectors for the loader, sized for the largest batch. */
typedef struct argbuf {
    const char **argv;
    size_t *lens;
    char *joined;
    char (*nums)[24];
    long cap;
} argbuf;

static void argbuf_init(argbuf *a, long max_items)
{
    a->cap = 2 * max_items + 16;
    a->argv = xmalloc((size_t)a->cap * sizeof *a->argv);
    a->lens = xmalloc((size_t)a->cap * sizeof *a->lens);
    a->joined = xmalloc((size_t)max_items * (ID_LEN + 1) + 1);
    a->nums = xmalloc(8 * sizeof *a->nums);
}

static void argbuf_free(argbuf *a)
{
    free(a->argv);
    free(a->lens);
    free(a->joined);
    free(a->nums);
}

static int arg(argbuf *a, int i, const char *s, size_t len)
{
    a->argv[i] = s;
    a->lens[i] = len;
    return i + 1;
}

static int arg_s(argbuf *a, int i, const char *s)
{
    return arg(a, i, s, strlen(s));
}

static int arg_num(argbuf *a, int i, int slot, long long v)
{
    int len = snprintf(a->nums[slot], sizeof a->nums[slot], "%lld", v);
    return arg(a, i, a->nums[slot], (size_t)len);
}

/* items[0..n) joined by '\n': the BULK form. */
static size_t join_ids(char *out, const char *items, long n)
{
    size_t len = 0;
    for (long i = 0; i < n; i++) {
        memcpy(out + len, items + (size_t)i * ID_LEN, ID_LEN);
        len += ID_LEN;
        if (i + 1 < n)
            out[len++] = '\n';
    }
    return len;
}

/*
 * Load a history of n items into `key` of this kind, in time order: the
 * same LOAD_BATCHES batches (or one per item) for every kind.  A live seen
 * key gets each batch at its own time (NOW = AT = the batch's time), as a
 * user's key receives it in production; the AT-import variant writes every
 * batch now with AT = its time, as a bulk import of an old history does.
 */
static void load_key(piper *p, argbuf *a, int kind, const char *key, const char *items, long n,
                     int64_t t_end)
{
    long B = n < LOAD_BATCHES ? n : LOAD_BATCHES;
    int i = 0;
    switch (kind) {
    case K_SEEN:
        i = arg_s(a, 0, "SEEN.RESERVE"), i = arg_s(a, i, key), i = arg_s(a, i, "NOW");
        i = arg_num(a, i, 0, batch_time(t_end, 0, B));
        break;
    case K_SEEN_AT:
        i = arg_s(a, 0, "SEEN.RESERVE"), i = arg_s(a, i, key);
        break;
    case K_BF:
    case K_BFS:
        i = arg_s(a, 0, "BF.RESERVE"), i = arg_s(a, i, key), i = arg_s(a, i, "0.001");
        i = arg_num(a, i, 0, kind == K_BF ? n : 100);
        break;
    default:
        break;
    }
    if (kind == K_SEEN || kind == K_SEEN_AT) {
        static const char *policy[] = {"WINDOW", "90d", "SLICES", "4", "ERROR", "0.001"};
        for (size_t k = 0; k < sizeof policy / sizeof *policy; k++)
            i = arg_s(a, i, policy[k]);
    }
    if (i > 0)
        pipe_argv(p, i, a->argv, a->lens);

    for (long b = 0; b < B; b++) {
        long lo = n * b / B, hi = n * (b + 1) / B;
        const char *first = items + (size_t)lo * ID_LEN;
        int64_t ts = batch_time(t_end, b, B);
        i = 0;
        switch (kind) {
        case K_SEEN:
        case K_SEEN_AT:
            i = arg_s(a, 0, "SEEN.INSERT"), i = arg_s(a, i, key);
            i = arg_s(a, i, kind == K_SEEN ? "NOW" : "AT"), i = arg_num(a, i, 0, ts);
            i = arg_s(a, i, "BULK");
            i = arg(a, i, a->joined, join_ids(a->joined, first, hi - lo));
            break;
        case K_SET:
        case K_BF:
        case K_BFS:
            i = arg_s(a, 0, kind == K_SET ? "SADD" : "BF.MADD"), i = arg_s(a, i, key);
            for (long k = lo; k < hi; k++)
                i = arg(a, i, items + (size_t)k * ID_LEN, ID_LEN);
            break;
        case K_ZSET:
            i = arg_s(a, 0, "ZADD"), i = arg_s(a, i, key);
            /* the score: the batch's time, shared by its items */
            snprintf(a->nums[1], sizeof a->nums[1], "%lld", (long long)ts);
            for (long k = lo; k < hi; k++) {
                i = arg_s(a, i, a->nums[1]);
                i = arg(a, i, items + (size_t)k * ID_LEN, ID_LEN);
            }
            break;
        }
        pipe_argv(p, i, a->argv, a->lens);
    }
    /* An import is stored exactly until it ends; the server compacts it a
     * second after its last write, and SEEN.COMPACT ends it at once. */
    if (kind == K_SEEN_AT) {
        i = arg_s(a, 0, "SEEN.COMPACT"), i = arg_s(a, i, key);
        pipe_argv(p, i, a->argv, a->lens);
    }
}

static long long memory_usage(redisContext *c, const char *key)
{
    redisReply *r = drv_cmd(c, "MEMORY USAGE %s SAMPLES 0", key);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

/* ------------------------------------------------------- seen's breakdown */

const redisReply *map_get(const redisReply *m, const char *name)
{
    if (m == NULL || m->type != REDIS_REPLY_ARRAY)
        return NULL;
    for (size_t i = 0; i + 1 < m->elements; i += 2)
        if (m->element[i]->type == REDIS_REPLY_STRING && strcmp(m->element[i]->str, name) == 0)
            return m->element[i + 1];
    return NULL;
}

static double num_of(const redisReply *r)
{
    if (r == NULL)
        return 0;
    if (r->type == REDIS_REPLY_INTEGER)
        return (double)r->integer;
    if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
        return strtod(r->str, NULL);
    return 0;
}

/* Where a seen key's MEMORY USAGE goes. */

static void seen_breakdown(redisContext *c, const char *key, seen_mem *m)
{
    memset(m, 0, sizeof *m);
    m->usage = memory_usage(c, key);
    redisReply *r = drv_cmd(c, "SEEN.INFO %s", key);
    m->value = (long long)num_of(map_get(r, "bytes"));
    m->items = (long long)num_of(map_get(r, "items"));
    m->fpr_estimate = num_of(map_get(r, "fpr-estimate"));
    const redisReply *enc = map_get(r, "encoding");
    snprintf(m->encoding, sizeof m->encoding, "%s", enc && enc->str ? enc->str : "?");
    const redisReply *runs = map_get(r, "runs");
    for (size_t i = 0; runs && i < runs->elements; i++) {
        const redisReply *run = runs->element[i];
        const redisReply *e = map_get(run, "encoding");
        long long bytes = (long long)num_of(map_get(run, "bytes"));
        long long held = (long long)num_of(map_get(run, "held-bytes"));
        long long blocks = (long long)num_of(map_get(run, "blocks"));
        if (e && e->str && strcmp(e->str, "buffer") == 0) {
            m->head_bytes += bytes;
            continue;
        }
        m->runs++;
        m->run_bytes += bytes;
        m->run_classes += held;
        size_t used = strlen(m->sizes);
        if (used + 48 < sizeof m->sizes)
            snprintf(m->sizes + used, sizeof m->sizes - used, "%s%lld→%lld%s", used ? ", " : "",
                     bytes, held, blocks > 1 ? " (2 blocks)" : "");
    }
    freeReplyObject(r);
}

/* ================================================================ results */

const char *const class_label[NCLASSES] = {"light (~100)", "medium (~1,000)", "heavy (~20,000)"};
const long class_items[NCLASSES] = {100, 1000, 20000};

/* Query methods. */

const method METHODS[] = {
    {"SEEN.FILTER key c…", "SEEN.FILTER", K_SEEN, IN_FILTER, R_UNSEEN, 0, "seen.filter", 0},
    {"SEEN.MFILTER ITEMS, REPLY UNSEEN", "UNSEEN", K_SEEN, IN_ITEMS, R_UNSEEN, 0, "seen.mfilter",
     0},
    {"SEEN.MFILTER ITEMS, REPLY FLAGS", "FLAGS", K_SEEN, IN_ITEMS, R_FLAGS, 0, "seen.mfilter", 0},
    {"SEEN.MFILTER ITEMS, REPLY INDEXES", "INDEXES", K_SEEN, IN_ITEMS, R_INDEXES, 0, "seen.mfilter",
     0},
    {"SEEN.MFILTER BULK, REPLY UNSEEN", "UNSEEN", K_SEEN, IN_BULK, R_UNSEEN, 0, "seen.mfilter", 0},
    {"SEEN.MFILTER BULK, REPLY FLAGS", "FLAGS", K_SEEN, IN_BULK, R_FLAGS, 0, "seen.mfilter", 0},
    {"SEEN.MFILTER BULK, REPLY INDEXES", "INDEXES", K_SEEN, IN_BULK, R_INDEXES, 0, "seen.mfilter",
     0},
    {"SEEN.MFILTER BULK, REPLY BULK", "BULK", K_SEEN, IN_BULK, R_LINES, 0, "seen.mfilter", 0},
    {"SMISMEMBER (SET)", "SMISMEMBER", K_SET, IN_PLAIN, R_INTS, 1, "smismember", 0},
    {"ZMSCORE (ZSET)", "ZMSCORE", K_ZSET, IN_PLAIN, R_SCORES, 1, "zmscore", 0},
    {"ZRANGE 0 -1 (server side; filter in client)", "ZRANGE", K_ZSET, IN_ZRANGE, R_HISTORY, 1,
     "zrange", 0},
    {"BF.MEXISTS", "BF.MEXISTS", K_BF, IN_PLAIN, R_INTS, 0, "bf.mexists", 0},
    {"SEEN.FILTER on a missing key (nothing looked up)", "SEEN.FILTER", K_SEEN, IN_FILTER, R_UNSEEN,
     0, "seen.filter", 1},
};
_Static_assert(sizeof METHODS / sizeof *METHODS == NMETHODS, "NMETHODS counts METHODS");

cell_result RES[MAX_HIST][MAX_BATCH][NMETHODS];

/* The core alone, in this process, on a copy of the same set and the same
 * batches: what a SEEN.MFILTER costs before Redis and the module. */

core_result CORE[MAX_HIST][MAX_BATCH];
seen_set *REF[MAX_HIST];
long long REF_SERIALIZED[MAX_HIST][2]; /* in-process, and SEEN.INFO's */

/* The twin's bytes outside its runs, as requested from malloc: the set
 * header, slice table, run table and head buffer. */
long long ref_fixed_bytes(const seen_set *set)
{
    size_t n = seen_runs(set, NULL, 0);
    seen_run_info *runs = xmalloc(n * sizeof *runs);
    seen_runs(set, runs, n);
    long long fixed = (long long)seen_bytes(set);
    for (size_t i = 0; i < n; i++)
        if (runs[i].encoding != SEEN_ENC_BUFFER)
            fixed -= (long long)runs[i].bytes;
    free(runs);
    return fixed;
}

int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double median(const double *v, int n)
{
    if (n <= 0)
        return NAN;
    double *t = xmalloc((size_t)n * sizeof *t);
    memcpy(t, v, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    double m = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
    free(t);
    return m;
}

/* The least disturbed of repeated measurements of a cost. */
double minimum(const double *v, int n)
{
    double m = n > 0 ? v[0] : NAN;
    for (int i = 1; i < n; i++)
        m = v[i] < m ? v[i] : m;
    return m;
}

/* Nearest-rank percentile of a sorted array. */
double percentile(const double *sorted, int n, double p)
{
    if (n <= 0)
        return NAN;
    int k = (int)ceil(p / 100.0 * n) - 1;
    return sorted[k < 0 ? 0 : (k >= n ? n - 1 : k)];
}

/* ================================================================ queries */

/* One candidate batch: its ids, and how many came from the history. */
typedef struct batch {
    char *ids;
    int n;
    int from_history;
} batch;

static void make_batch(batch *bt, const char *hist, long hn, int n, uint64_t fresh_stream)
{
    bt->ids = xmalloc((size_t)n * ID_LEN);
    bt->n = n;
    bt->from_history = n / 10;
    /* 10% drawn from the history (with replacement), then shuffled in. */
    for (int i = 0; i < n; i++) {
        if (i < bt->from_history)
            memcpy(bt->ids + (size_t)i * ID_LEN, hist + (rnd() % (uint64_t)hn) * ID_LEN, ID_LEN);
        else
            make_id(fresh_stream, (uint64_t)i, bt->ids + (size_t)i * ID_LEN);
    }
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(rnd() % (uint64_t)(i + 1));
        char tmp[ID_LEN];
        memcpy(tmp, bt->ids + (size_t)i * ID_LEN, ID_LEN);
        memcpy(bt->ids + (size_t)i * ID_LEN, bt->ids + (size_t)j * ID_LEN, ID_LEN);
        memcpy(bt->ids + (size_t)j * ID_LEN, tmp, ID_LEN);
    }
}

/* The key method m asks on the history of hn items. */
static void query_key(char *key, size_t cap, const method *m, long hn)
{
    if (m->missing)
        snprintf(key, cap, "%s:missing", kind_key[m->kind]);
    else
        snprintf(key, cap, "%s:h%ld", kind_key[m->kind], hn);
}

/* The RESP bytes of method m over batch bt on `key`. */
static char *format_query(const method *m, const char *key, const batch *bt, size_t *len)
{
    int cap = bt->n + 16, i = 0;
    const char **argv = xmalloc((size_t)cap * sizeof *argv);
    size_t *lens = xmalloc((size_t)cap * sizeof *lens);
    char *joined = NULL;
#define ADD(s) (argv[i] = (s), lens[i] = strlen(s), i++)
    switch (m->input) {
    case IN_FILTER:
    case IN_PLAIN:
        ADD(m->command);
        ADD(key);
        break;
    case IN_ITEMS:
    case IN_BULK:
        ADD("SEEN.MFILTER");
        ADD("1");
        ADD(key);
        ADD("REPLY");
        ADD(m->command);
        ADD(m->input == IN_ITEMS ? "ITEMS" : "BULK");
        break;
    case IN_ZRANGE:
        ADD("ZRANGE");
        ADD(key);
        ADD("0");
        ADD("-1");
        break;
    }
#undef ADD
    if (m->input == IN_BULK) {
        joined = xmalloc((size_t)bt->n * (ID_LEN + 1));
        argv[i] = joined;
        lens[i] = join_ids(joined, bt->ids, bt->n);
        i++;
    } else if (m->input != IN_ZRANGE) {
        for (int k = 0; k < bt->n; k++, i++) {
            argv[i] = bt->ids + (size_t)k * ID_LEN;
            lens[i] = ID_LEN;
        }
    }
    char *out = NULL;
    int n = redisFormatCommandArgv(&out, i, argv, lens);
    if (n < 0)
        drv_die("out of memory formatting a command");
    *len = (size_t)n;
    free(argv);
    free(lens);
    free(joined);
    return out;
}

/* How many candidates a reply says are seen (-1: not that kind of reply). */
static long long seen_in_tally(const method *m, const drv_tally *t, int ncand)
{
    switch (m->reply) {
    case R_UNSEEN:
        return t->type == REDIS_REPLY_ARRAY ? ncand - t->len : -1;
    case R_FLAGS:
        return t->type == REDIS_REPLY_STRING && t->len == ncand ? t->ones : -1;
    case R_INDEXES:
        return t->type == REDIS_REPLY_ARRAY ? t->ints : -1;
    case R_LINES: /* a newline after each unseen item */
        return t->type == REDIS_REPLY_STRING ? ncand - t->lines : -1;
    case R_INTS:
        return t->type == REDIS_REPLY_ARRAY && t->len == ncand ? t->int_sum : -1;
    case R_SCORES:
        return t->type == REDIS_REPLY_ARRAY && t->len == ncand ? t->strings : -1;
    case R_HISTORY:
        return t->type == REDIS_REPLY_ARRAY ? t->len : -1;
    }
    return -1;
}

/* Answers must contain every seen candidate; approximate methods may add a
 * few false positives (0.1% of 9,000 fresh candidates is ~9). */
static int answer_ok(const method *m, long long seen, int ncand, int from_history, long hist_n)
{
    if (m->missing)
        return seen == 0;
    if (m->reply == R_HISTORY)
        return seen == hist_n;
    if (seen < from_history)
        return 0;
    if (m->exact)
        return seen == from_history;
    return seen <= from_history + 10 + ncand / 100;
}

typedef struct query_ctx {
    const method *m;
    char *cmd[VARIANTS];
    size_t len[VARIANTS];
    const batch *bt;
    long hist_n;
    int next;
} query_ctx;

static void query_gen(void *ctx, int conn, drv_req *req, char **scratch, size_t *cap)
{
    (void)conn, (void)scratch, (void)cap;
    query_ctx *q = ctx;
    int v = q->next++ % VARIANTS;
    req->buf = q->cmd[v];
    req->len = q->len[v];
    req->units = q->bt[v].n;
    req->tag = v;
}

static int query_check(void *ctx, const drv_req *req, const drv_tally *t)
{
    query_ctx *q = ctx;
    const batch *bt = &q->bt[req->tag];
    return answer_ok(q->m, seen_in_tally(q->m, t, bt->n), bt->n, bt->from_history, q->hist_n);
}

/* --------------------------------------------------- client-side filter */

/* ZRANGE's user filters the candidates against the whole history in the
 * client: an open-addressing set of the history's 64-bit hashes. */
static long long client_filter(const redisReply *history, const batch *bt)
{
    size_t cap = 16;
    while (cap < 2 * history->elements)
        cap <<= 1;
    uint64_t *slots = calloc(cap, sizeof *slots);
    if (slots == NULL)
        drv_die("out of memory");
    for (size_t i = 0; i < history->elements; i++) {
        const redisReply *e = history->element[i];
        uint64_t h = XXH3_64bits(e->str, e->len) | 1;
        size_t j = h & (cap - 1);
        while (slots[j] != 0 && slots[j] != h)
            j = (j + 1) & (cap - 1);
        slots[j] = h;
    }
    long long seen = 0;
    for (int i = 0; i < bt->n; i++) {
        uint64_t h = XXH3_64bits(bt->ids + (size_t)i * ID_LEN, ID_LEN) | 1;
        size_t j = h & (cap - 1);
        while (slots[j] != 0 && slots[j] != h)
            j = (j + 1) & (cap - 1);
        seen += slots[j] == h;
    }
    free(slots);
    return seen;
}

/* How many candidates a decoded (hiredis default) reply says are seen. */
static long long seen_in_reply(const method *m, const redisReply *r, const batch *bt)
{
    if (r->type == REDIS_REPLY_ERROR)
        drv_die("error reply to %s: %s", m->label, r->str);
    long long seen = 0;
    switch (m->reply) {
    case R_UNSEEN:
        return r->type == REDIS_REPLY_ARRAY ? bt->n - (long long)r->elements : -1;
    case R_FLAGS:
        if (r->type != REDIS_REPLY_STRING || r->len != (size_t)bt->n)
            return -1;
        for (size_t i = 0; i < r->len; i++)
            seen += r->str[i] == '1';
        return seen;
    case R_INDEXES:
        return r->type == REDIS_REPLY_ARRAY ? (long long)r->elements : -1;
    case R_LINES:
        if (r->type != REDIS_REPLY_STRING)
            return -1;
        for (size_t i = 0; i < r->len; i++)
            seen += r->str[i] == '\n';
        return bt->n - seen;
    case R_INTS:
        for (size_t i = 0; i < r->elements; i++)
            seen += r->element[i]->integer;
        return r->type == REDIS_REPLY_ARRAY ? seen : -1;
    case R_SCORES:
        for (size_t i = 0; i < r->elements; i++)
            seen += r->element[i]->type != REDIS_REPLY_NIL;
        return r->type == REDIS_REPLY_ARRAY ? seen : -1;
    case R_HISTORY:
        return r->type == REDIS_REPLY_ARRAY ? client_filter(r, bt) : -1;
    }
    return -1;
}

static void push_lat(cell_result *cr, double s)
{
    if (cr->nlat == cr->caplat) {
        cr->caplat = cr->caplat ? cr->caplat * 2 : 256;
        cr->lat = realloc(cr->lat, (size_t)cr->caplat * sizeof *cr->lat);
        if (cr->lat == NULL)
            drv_die("out of memory");
    }
    cr->lat[cr->nlat++] = s;
}

/*
 * Latency: one connection, one request at a time, the reply fully decoded
 * by hiredis as an application would (and for ZRANGE, the client's filter
 * run on it).  Checks every answer.
 */
static void measure_latency(redisContext *lat, query_ctx *q, cell_result *cr, double *filter_s,
                            int *nfilter)
{
    double end = drv_now() + C.lat_s;
    for (int s = 0; s < 1000 && (s < 3 || drv_now() < end); s++) {
        int v = q->next++ % VARIANTS;
        double t0 = drv_now();
        if (redisAppendFormattedCommand(lat, q->cmd[v], q->len[v]) != REDIS_OK)
            drv_die("latency: %s", lat->errstr);
        void *r = NULL;
        if (redisGetReply(lat, &r) != REDIS_OK)
            drv_die("latency: %s", lat->errstr);
        double t1 = drv_now();
        long long seen = seen_in_reply(q->m, r, &q->bt[v]);
        double t2 = drv_now();
        freeReplyObject(r);
        double t3 = drv_now();
        if (q->m->reply == R_HISTORY) {
            filter_s[(*nfilter)++ % 64] = t2 - t1;
            if (seen != q->bt[v].from_history)
                drv_die("%s: client filter found %lld seen, expected %d", q->m->label, seen,
                        q->bt[v].from_history);
        } else if (!answer_ok(q->m, seen, q->bt[v].n, q->bt[v].from_history, q->hist_n)) {
            drv_die("%s: %lld seen of %d candidates, %d from the history", q->m->label, seen,
                    q->bt[v].n, q->bt[v].from_history);
        }
        /* ZRANGE's latency includes the client's filtering; the others'
         * include decoding only (counting flags is what any caller does). */
        push_lat(cr, q->m->reply == R_HISTORY ? t3 - t0 : t1 - t0 + (t3 - t2));
    }
}

int method_enabled(const method *m)
{
    return kind_enabled(m->kind);
}

static drv_load query_load(const method *m)
{
    drv_load l = {C.conns, C.depth, C.slot_s, C.quick ? 3 : 8, C.quick ? 1.0 : 3.0, m->stat};
    return l;
}

static seen_str *as_strs(const char *ids, long n)
{
    seen_str *s = xmalloc((size_t)n * sizeof *s);
    for (long i = 0; i < n; i++)
        s[i] = (seen_str){ids + (size_t)i * ID_LEN, ID_LEN};
    return s;
}

/* Time the core on the in-process copy of history h, over the batches. */
static void time_core(int h, const batch *bts, int64_t now, core_result *out)
{
    double q[256], hs[256];
    int n = 0;
    double end = drv_now() + C.lat_s;
    uint8_t *seen = xmalloc((size_t)bts[0].n);
    for (; n < 256 && (n < 8 || drv_now() < end); n++) {
        const batch *bt = &bts[n % VARIANTS];
        seen_str *strs = as_strs(bt->ids, bt->n);
        seen_query *qy = NULL;
        memset(seen, 0, (size_t)bt->n);
        double t0 = drv_now();
        if (seen_query_str(strs, (size_t)bt->n, &qy) != SEEN_OK)
            drv_die("seen_query_str failed");
        double t1 = drv_now();
        if (seen_query_run(REF[h], qy, now, seen) != SEEN_OK)
            drv_die("seen_query_run failed");
        seen_query_free(qy);
        double t2 = drv_now();
        long long found = 0;
        for (int i = 0; i < bt->n; i++)
            found += seen[i];
        if (found < bt->from_history)
            drv_die("in-process copy: %lld seen, expected at least %d", found, bt->from_history);
        hs[n] = t1 - t0;
        q[n] = t2 - t0;
        free(strs);
    }
    free(seen);
    /* The least disturbed pass, as for the server's figures it is set against. */
    out->query_us = minimum(q, n) * 1e6;
    out->hash_us = minimum(hs, n) * 1e6;
}

/* ----------------------------------------------- a reply's bytes alone */

transport_result TRANSPORT;

typedef struct get_ctx {
    char *cmd;
    size_t len;
    long long want; /* bytes of the string */
} get_ctx;

static void get_gen(void *ctx, int conn, drv_req *req, char **scratch, size_t *cap)
{
    (void)conn, (void)scratch, (void)cap;
    get_ctx *g = ctx;
    req->buf = g->cmd;
    req->len = g->len;
    req->units = 1;
    req->tag = 0;
}

static int get_check(void *ctx, const drv_req *req, const drv_tally *t)
{
    (void)req;
    const get_ctx *g = ctx;
    return t->type == REDIS_REPLY_STRING && t->len == g->want;
}

/* The string key of `len` bytes the transport control reads. */
static void bytes_key(char *key, size_t cap, long long len)
{
    snprintf(key, cap, "bench:bytes:%lld", len);
}

static void set_bytes_key(redisContext *ctl, long long len)
{
    char key[64];
    bytes_key(key, sizeof key, len);
    char *value = xmalloc((size_t)len + 1);
    memset(value, 'x', (size_t)len);
    const char *argv[3] = {"SET", key, value};
    size_t lens[3] = {3, strlen(key), (size_t)len};
    freeReplyObject(drv_cmd_argv(ctl, 3, argv, lens));
    free(value);
}

/* Server CPU per GET of the `len`-byte string, with the load the query
 * forms are measured under. */
static double get_cost_us(const drv_server *srv, redisContext *ctl, long long len)
{
    char key[64];
    bytes_key(key, sizeof key, len);
    const char *gargv[2] = {"GET", key};
    size_t glens[2] = {3, strlen(key)};
    get_ctx g = {NULL, 0, len};
    int n = redisFormatCommandArgv(&g.cmd, 2, gargv, glens);
    if (n < 0)
        drv_die("out of memory formatting a command");
    g.len = (size_t)n;
    drv_load load = {C.conns, C.depth, C.slot_s, C.quick ? 3 : 8, C.quick ? 1.0 : 3.0, "get"};
    drv_result res;
    drv_run(srv, ctl, &load, get_gen, get_check, &g, &res);
    free(g.cmd);
    return res.server_us_per_req;
}

/* Round r of the transport control, in the rounds of the workload whose
 * REPLY BULK queries `bulk` holds: GETs of strings as long as its first
 * batch's REPLY BULK reply and as long as a REPLY FLAGS reply (one byte a
 * candidate). */
static void measure_transport(const drv_server *srv, redisContext *ctl, const query_ctx *bulk,
                              int r)
{
    if (!TRANSPORT.ran) {
        if (redisAppendFormattedCommand(ctl, bulk->cmd[0], bulk->len[0]) != REDIS_OK)
            drv_die("transport: %s", ctl->errstr);
        redisReply *rep = NULL;
        if (redisGetReply(ctl, (void **)&rep) != REDIS_OK || rep == NULL ||
            rep->type != REDIS_REPLY_STRING)
            drv_die("transport: no REPLY BULK string");
        TRANSPORT.bulk_len = (long long)rep->len;
        TRANSPORT.flags_len = bulk->bt[0].n;
        freeReplyObject(rep);
        set_bytes_key(ctl, TRANSPORT.bulk_len);
        set_bytes_key(ctl, TRANSPORT.flags_len);
        TRANSPORT.ran = 1;
    }
    TRANSPORT.bulk_us[r] = get_cost_us(srv, ctl, TRANSPORT.bulk_len);
    TRANSPORT.flags_us[r] = get_cost_us(srv, ctl, TRANSPORT.flags_len);
}

static void run_queries(const drv_server *srv, redisContext *ctl, redisContext *lat,
                        char **hist_ids, int64_t now)
{
    for (int h = 0; h < C.nhist; h++) {
        for (int b = 0; b < C.nbatch; b++) {
            long hn = C.hist[h];
            int bn = C.batch[b];
            batch bts[VARIANTS];
            for (int v = 0; v < VARIANTS; v++)
                make_batch(&bts[v], hist_ids[h], hn, bn,
                           STREAM_FRESH + (uint64_t)(h * 100 + b * 10 + v));
            query_ctx qs[NMETHODS];
            for (int mi = 0; mi < NMETHODS; mi++) {
                const method *m = &METHODS[mi];
                memset(&qs[mi], 0, sizeof qs[mi]);
                qs[mi].m = m;
                qs[mi].bt = bts;
                qs[mi].hist_n = hn;
                if (!method_enabled(m))
                    continue;
                char key[64];
                query_key(key, sizeof key, m, hn);
                for (int v = 0; v < VARIANTS; v++)
                    qs[mi].cmd[v] = format_query(m, key, &bts[v], &qs[mi].len[v]);
            }
            double filter_s[NMETHODS][64];
            int nfilter[NMETHODS] = {0};
            time_core(h, bts, now, &CORE[h][b]);
            for (int r = 0; r < C.rounds; r++) {
                double best = 0;
                for (int mi = 0; mi < NMETHODS; mi++) {
                    if (!method_enabled(&METHODS[mi]))
                        continue;
                    cell_result *cr = &RES[h][b][mi];
                    cr->ran = 1;
                    measure_latency(lat, &qs[mi], cr, filter_s[mi], &nfilter[mi]);
                    drv_load load = query_load(&METHODS[mi]);
                    drv_result res;
                    drv_run(srv, ctl, &load, query_gen, query_check, &qs[mi], &res);
                    cr->thr[r] = res.units_per_s;
                    cr->cpu_rate[r] =
                        res.server_us_per_req > 0 ? bn * 1e6 / res.server_us_per_req : 0;
                    cr->srv_us[r] = res.server_us_per_req;
                    cr->cmd_us[r] = res.cmd_us_per_req;
                    cr->scpu[r] = res.server_cpu_frac;
                    cr->ccpu[r] = res.client_cpu_frac;
                    if (mi <= M_BULK_BULK && res.units_per_s > best)
                        best = res.units_per_s;
                }
                if (hn == 10000 && bn == 10000 && method_enabled(&METHODS[M_BULK_BULK]))
                    measure_transport(srv, ctl, &qs[M_BULK_BULK], r);
                for (int mi = 0; mi < NMETHODS; mi++)
                    RES[h][b][mi].ratio[r] = RES[h][b][mi].thr[r] / RES[h][b][M_SMISMEMBER].thr[r],
                    RES[h][b][mi].cpu_ratio[r] =
                        RES[h][b][mi].cpu_rate[r] / RES[h][b][M_SMISMEMBER].cpu_rate[r];
                progress(
                    "queries: history %ld, batch %d, round %d/%d: SMISMEMBER %.2fM cand/s, "
                    "seen BULK FLAGS %.2fM (%.2fx; per server CPU-s %.2fx), best seen form %.2fM",
                    hn, bn, r + 1, C.rounds, RES[h][b][M_SMISMEMBER].thr[r] / 1e6,
                    RES[h][b][M_BULK_FLAGS].thr[r] / 1e6, RES[h][b][M_BULK_FLAGS].ratio[r],
                    RES[h][b][M_BULK_FLAGS].cpu_ratio[r], best / 1e6);
            }
            for (int mi = 0; mi < NMETHODS; mi++) {
                int nf = nfilter[mi] < 64 ? nfilter[mi] : 64;
                RES[h][b][mi].client_filter_s = median(filter_s[mi], nf);
                for (int v = 0; v < VARIANTS; v++)
                    free(qs[mi].cmd[v]);
            }
            for (int v = 0; v < VARIANTS; v++)
                free(bts[v].ids);
        }
    }
}

/* ================================================================ adds */

add_result ADDS[NADDS] = {
    {.label = "SEEN.ADD key i1 … i20", .stat = "seen.add"},
    {.label = "SADD key i1 … i20", .stat = "sadd"},
    {.label = "ZADD key t i1 … t i20", .stat = "zadd"},
    {.label = "BF.MADD key i1 … i20", .stat = "bf.madd"},
};
add_result ADDS_BY_SIZE[2] = {
    {.label = "SEEN.ADD key i1 … i20", .stat = "seen.add"},
    {.label = "SADD key i1 … i20", .stat = "sadd"},
};
add_result ADDS_SESSIONS[2] = {
    {.label = "SEEN.ADD key i1 … i20", .stat = "seen.add"},
    {.label = "SADD key i1 … i20", .stat = "sadd"},
};

/* Each population user's history size, as loaded: the weights of the add
 * rounds that draw users as a feed's traffic does. */
static long *pop_items;

typedef struct add_ctx {
    int which;
    int users;
    const double *cum; /* cumulative history sizes to draw users by; NULL: uniformly */
    const int *deck;   /* or users in this order (deck_n of them, then again) */
    int deck_n, deck_pos;
    uint64_t counter;
    int64_t ts;
    uint64_t checked;     /* fresh items whose page was answered */
    uint64_t seen_before; /* of them, those SEEN.ADD counted as held */
} add_ctx;

/* A population key of one kind of add. */
static void key_of(char *key, size_t cap, int which, int u)
{
    static const char *prefix[NADDS] = {"seen", "set", "zset", "bf"};
    snprintf(key, cap, "pop:%s:%d", prefix[which], u);
}

/* A page of 20 fresh items for a random user, formatted on the fly (the
 * server spends ~100x longer on it than the client). */
static void add_gen(void *ctx, int conn, drv_req *req, char **scratch, size_t *cap)
{
    (void)conn;
    add_ctx *a = ctx;
    static const char *names[NADDS] = {"SEEN.ADD", "SADD", "ZADD", "BF.MADD"};
    char key[48], ts[24], ids[PAGE][ID_LEN];
    const char *argv[2 + 2 * PAGE];
    size_t lens[2 + 2 * PAGE];
    int i = 0;
    int u = (int)(rnd() % (uint64_t)a->users);
    if (a->deck) {
        u = a->deck[a->deck_pos++ % a->deck_n];
    } else if (a->cum) {
        /* The first user whose cumulative size reaches the draw. */
        const double x = rnd01() * a->cum[a->users - 1];
        int lo = 0, hi = a->users - 1;
        while (lo < hi) {
            const int mid = (lo + hi) / 2;
            if (a->cum[mid] < x)
                lo = mid + 1;
            else
                hi = mid;
        }
        u = lo;
    }
    key_of(key, sizeof key, a->which, u);
    snprintf(ts, sizeof ts, "%lld", (long long)a->ts);
    argv[i] = names[a->which], lens[i++] = strlen(names[a->which]);
    argv[i] = key, lens[i++] = strlen(key);
    for (int k = 0; k < PAGE; k++) {
        make_id(STREAM_ADD + (uint64_t)a->which, a->counter++, ids[k]);
        if (a->which == A_ZADD)
            argv[i] = ts, lens[i++] = strlen(ts);
        argv[i] = ids[k], lens[i++] = ID_LEN;
    }
    char *out = NULL;
    int n = redisFormatCommandArgv(&out, i, argv, lens);
    if (n < 0)
        drv_die("out of memory");
    if (*cap < (size_t)n) {
        free(*scratch);
        *cap = (size_t)n * 2;
        *scratch = xmalloc(*cap);
    }
    memcpy(*scratch, out, (size_t)n);
    free(out);
    req->buf = *scratch;
    req->len = (size_t)n;
    req->units = PAGE;
    req->tag = 0;
}

static int add_check(void *ctx, const drv_req *req, const drv_tally *t)
{
    (void)req;
    add_ctx *a = ctx;
    if (a->which == A_BF)
        return t->type == REDIS_REPLY_ARRAY && t->len == PAGE;
    /* Fresh items: all new, but for seen's false positives, which are
     * judged over all the pages (a page with three of them is rare, not
     * wrong: about one in 10^6 at 0.001). */
    if (t->type != REDIS_REPLY_INTEGER)
        return 0;
    if (a->which != A_SEEN)
        return t->len == PAGE;
    if (t->len < 0 || t->len > PAGE)
        return 0;
    a->checked += PAGE;
    a->seen_before += (uint64_t)(PAGE - t->len);
    return 1;
}

/* More fresh items counted as held than a false-positive rate of
 * ERROR_RATE explains: six standard deviations over the expected count,
 * and a few more for short runs. */
static void check_add_false_positives(const add_ctx *a)
{
    const double expected = ERROR_RATE * (double)a->checked;
    if ((double)a->seen_before > expected + 6.0 * sqrt(expected) + 6.0)
        drv_die("SEEN.ADD counted %llu of %llu fresh items as already held (%.2f expected at "
                "error %g)",
                (unsigned long long)a->seen_before, (unsigned long long)a->checked, expected,
                ERROR_RATE);
}

/* The population's keys of one kind as loaded (DUMP), so that every round
 * of adds starts from them: a round gives each user ~30 pages, and without
 * this the light users of the seventh round held 40 times their history,
 * written within a second. */
typedef struct pop_dump {
    char **blob;
    size_t *len;
} pop_dump;

static void dump_population(redisContext *c, int which, pop_dump *d)
{
    d->blob = xmalloc((size_t)C.users * sizeof *d->blob);
    d->len = xmalloc((size_t)C.users * sizeof *d->len);
    for (int u = 0; u < C.users; u++) {
        char key[48];
        key_of(key, sizeof key, which, u);
        redisReply *r = drv_cmd(c, "DUMP %s", key);
        if (r->type != REDIS_REPLY_STRING)
            drv_die("DUMP %s: no such key", key);
        d->blob[u] = xmalloc(r->len);
        memcpy(d->blob[u], r->str, r->len);
        d->len[u] = r->len;
        freeReplyObject(r);
    }
}

/* Queue a RESTORE of `key` from a DUMP's bytes, replacing what it holds. */
static void pipe_restore(piper *p, const char *key, const char *blob, size_t len)
{
    const char *argv[5] = {"RESTORE", key, "0", blob, "REPLACE"};
    size_t lens[5] = {7, strlen(key), 1, len, 7};
    pipe_argv(p, 5, argv, lens);
}

/* Queue user u's key of one kind back to its loaded state. */
static void restore_user(piper *p, int which, const pop_dump *d, int u)
{
    char key[48];
    key_of(key, sizeof key, which, u);
    pipe_restore(p, key, d->blob[u], d->len[u]);
}

static void restore_population(redisContext *c, int which, const pop_dump *d)
{
    piper p = {c, 0};
    for (int u = 0; u < C.users; u++)
        restore_user(&p, which, d, u);
    pipe_flush(&p);
}

/* One round of one kind of add, from the population as loaded, into
 * round r of *out. */
static void add_round(const drv_server *srv, redisContext *ctl, add_ctx *a, const pop_dump *d,
                      add_result *out, int r)
{
    restore_population(ctl, a->which, d);
    drv_load load = {C.conns, C.depth * 4, C.slot_s, 20, 2.0, ADDS[a->which].stat};
    drv_result res;
    drv_run(srv, ctl, &load, add_gen, add_check, a, &res);
    out->ran = 1;
    out->srv_us[r] = res.server_us_per_req;
    out->cmd_us[r] = res.cmd_us_per_req;
    out->thr[r] = res.units_per_s;
    out->scpu[r] = res.server_cpu_frac;
    out->ccpu[r] = res.client_cpu_frac;
}

/*
 * A round of sessions: every user writes SESSION_PAGES pages into its key
 * as loaded, in a shuffled order, as a feed's users write a session's
 * pages between rests (a round of add_round gives a ~100-item key a few
 * dozen pages within a fraction of a second, a burst no user writes).
 * Sweeps of it repeat, each user's key restored once it has grown by more
 * than a twentieth, until they add up to a round's length.
 */
static void session_round(const drv_server *srv, redisContext *ctl, add_ctx *a, const pop_dump *d,
                          add_result *out, int r)
{
    restore_population(ctl, a->which, d);
    const int n = C.users * SESSION_PAGES;
    int *deck = xmalloc((size_t)n * sizeof *deck);
    long *grown = xmalloc((size_t)C.users * sizeof *grown);
    memset(grown, 0, (size_t)C.users * sizeof *grown);
    double wall = 0, srv_us = 0, cmd_us = 0, scpu = 0, ccpu = 0;
    long long replies = 0;
    for (int sweep = 0; sweep < 1000 && wall < C.slot_s; sweep++) {
        for (int i = 0; i < n; i++)
            deck[i] = i % C.users;
        for (int i = n - 1; i > 0; i--) {
            const int j = (int)(rnd() % (uint64_t)(i + 1)), x = deck[i];
            deck[i] = deck[j];
            deck[j] = x;
        }
        a->deck = deck, a->deck_n = n, a->deck_pos = 0;
        const int in_flight = C.conns * C.depth * 4;
        drv_load load = {C.conns, C.depth * 4,
                         0.0,     n > 2 * in_flight ? n - in_flight : n / 2,
                         2.0,     ADDS[a->which].stat};
        drv_result res;
        drv_run(srv, ctl, &load, add_gen, add_check, a, &res);
        wall += res.wall_s;
        replies += res.replies;
        srv_us += res.server_us_per_req * (double)res.replies;
        cmd_us += res.cmd_us_per_req * (double)res.replies;
        scpu += res.server_cpu_frac * res.wall_s;
        ccpu += res.client_cpu_frac * res.wall_s;
        /* Keys grown past a twentieth of their history go back to it. */
        piper p = {ctl, 0};
        for (int i = 0; i < a->deck_pos; i++)
            grown[deck[i % n]] += PAGE;
        for (int u = 0; u < C.users; u++) {
            if (grown[u] * 20 <= pop_items[u])
                continue;
            restore_user(&p, a->which, d, u);
            grown[u] = 0;
        }
        pipe_flush(&p);
    }
    a->deck = NULL;
    free(deck);
    free(grown);
    out->ran = 1;
    out->thr[r] = wall > 0 ? (double)replies * PAGE / wall : 0;
    out->srv_us[r] = replies ? srv_us / (double)replies : 0;
    out->cmd_us[r] = replies ? cmd_us / (double)replies : 0;
    out->scpu[r] = wall > 0 ? scpu / wall : 0;
    out->ccpu[r] = wall > 0 ? ccpu / wall : 0;
}

static void run_adds(const drv_server *srv, redisContext *ctl, int64_t ts)
{
    add_ctx ctx[NADDS];
    pop_dump dumps[NADDS];
    for (int k = 0; k < NADDS; k++) {
        ctx[k] = (add_ctx){k, C.users, NULL, NULL, 0, 0, 0, ts, 0, 0};
        if (k != A_BF || C.bloom)
            dump_population(ctl, k, &dumps[k]);
    }
    for (int r = 0; r < C.add_rounds; r++) {
        for (int k = 0; k < NADDS; k++) {
            if (k == A_BF && C.bloom == NULL)
                continue;
            add_round(srv, ctl, &ctx[k], &dumps[k], &ADDS[k], r);
        }
        for (int k = 0; k < NADDS; k++)
            ADDS[k].ratio[r] = ADDS[k].thr[r] / ADDS[A_SADD].thr[r];
        progress("adds: round %d/%d: SEEN.ADD %.0fk items/s, SADD %.0fk, ZADD %.0fk", r + 1,
                 C.add_rounds, ADDS[A_SEEN].thr[r] / 1e3, ADDS[A_SADD].thr[r] / 1e3,
                 ADDS[A_ZADD].thr[r] / 1e3);
    }
    /* The same rounds with users drawn in proportion to their history, as
     * a feed's writes come: by the seed's rates its heavy users write most
     * of the items, and seen's cost per page grows with the key. */
    double *cum = xmalloc((size_t)C.users * sizeof *cum);
    double total = 0;
    for (int u = 0; u < C.users; u++)
        cum[u] = (total += (double)pop_items[u]);
    const int by_size[2] = {A_SEEN, A_SADD};
    for (int r = 0; r < C.add_rounds; r++) {
        for (int j = 0; j < 2; j++) {
            ctx[by_size[j]].cum = cum;
            add_round(srv, ctl, &ctx[by_size[j]], &dumps[by_size[j]], &ADDS_BY_SIZE[j], r);
        }
        for (int j = 0; j < 2; j++)
            ADDS_BY_SIZE[j].ratio[r] = ADDS_BY_SIZE[j].thr[r] / ADDS_BY_SIZE[1].thr[r];
        progress("adds drawn by history size: round %d/%d: SEEN.ADD %.0fk items/s, SADD %.0fk",
                 r + 1, C.add_rounds, ADDS_BY_SIZE[0].thr[r] / 1e3, ADDS_BY_SIZE[1].thr[r] / 1e3);
    }
    free(cum);
    for (int j = 0; j < 2; j++)
        ctx[by_size[j]].cum = NULL;
    for (int r = 0; r < C.add_rounds; r++) {
        for (int j = 0; j < 2; j++)
            session_round(srv, ctl, &ctx[by_size[j]], &dumps[by_size[j]], &ADDS_SESSIONS[j], r);
        for (int j = 0; j < 2; j++)
            ADDS_SESSIONS[j].ratio[r] = ADDS_SESSIONS[j].thr[r] / ADDS_SESSIONS[1].thr[r];
        progress("adds in sessions: round %d/%d: SEEN.ADD %.0fk items/s, SADD %.0fk", r + 1,
                 C.add_rounds, ADDS_SESSIONS[0].thr[r] / 1e3, ADDS_SESSIONS[1].thr[r] / 1e3);
    }
    check_add_false_positives(&ctx[A_SEEN]);
    progress("adds: SEEN.ADD counted %llu of %llu fresh items as already held",
             (unsigned long long)ctx[A_SEEN].seen_before, (unsigned long long)ctx[A_SEEN].checked);
    for (int k = 0; k < NADDS; k++) {
        if (k == A_BF && C.bloom == NULL)
            continue;
        for (int u = 0; u < C.users; u++)
            free(dumps[k].blob[u]);
        free(dumps[k].blob);
        free(dumps[k].len);
    }
}

/*
 * SEEN.ADD and SADD per history size: pages of PAGE fresh items into
 * copies of each history's key as loaded (RESTORE of its DUMP), each copy
 * taking up to a twentieth of its size, so that every page lands on a key
 * of that size; the command's own time per page (INFO commandstats), the
 * two commands alternating round by round.  The population's draws above
 * mix three sizes; this is how a page's cost grows with the key.
 */
hist_adds ADDS_PER_HIST[MAX_HIST];
#define HIST_ADD_PAGES 200  /* pages per round and command */
#define HIST_ADD_COPIES 200 /* copies of a key, at most */
#define STREAM_HIST_ADD 800000u

static void run_adds_per_history(redisContext *ctl)
{
    static const char *const names[2] = {"SEEN.ADD", "SADD"};
    static const char *const stats[2] = {"seen.add", "sadd"};
    static const int kinds[2] = {K_SEEN, K_SET};
    uint64_t counter = 0;
    for (int h = 0; h < C.nhist; h++) {
        hist_adds *ha = &ADDS_PER_HIST[h];
        const long n = C.hist[h];
        ha->pages_per_key = n / (20 * PAGE) > 1 ? (int)(n / (20 * PAGE)) : 1;
        ha->copies = (HIST_ADD_PAGES + ha->pages_per_key - 1) / ha->pages_per_key;
        if (ha->copies > HIST_ADD_COPIES)
            ha->copies = HIST_ADD_COPIES;
        redisReply *dumps[2];
        for (int j = 0; j < 2; j++) {
            dumps[j] = drv_cmd(ctl, "DUMP %s:h%ld", kind_key[kinds[j]], n);
            if (dumps[j]->type != REDIS_REPLY_STRING)
                drv_die("DUMP %s:h%ld: no such key", kind_key[kinds[j]], n);
        }
        for (int r = 0; r < C.add_rounds; r++) {
            for (int j = 0; j < 2; j++) {
                piper p = {ctl, 0};
                char key[48], ids[PAGE][ID_LEN];
                for (int i = 0; i < ha->copies; i++) {
                    snprintf(key, sizeof key, "addh:%s:%ld:%d", kind_key[kinds[j]], n, i);
                    pipe_restore(&p, key, dumps[j]->str, dumps[j]->len);
                }
                pipe_flush(&p);
                long long calls0, calls1;
                const double us0 = drv_command_usec(ctl, stats[j], &calls0);
                for (int pg = 0; pg < ha->pages_per_key; pg++)
                    for (int i = 0; i < ha->copies; i++) {
                        snprintf(key, sizeof key, "addh:%s:%ld:%d", kind_key[kinds[j]], n, i);
                        const char *argv[2 + PAGE];
                        size_t lens[2 + PAGE];
                        argv[0] = names[j], lens[0] = strlen(names[j]);
                        argv[1] = key, lens[1] = strlen(key);
                        for (int k = 0; k < PAGE; k++) {
                            make_id(STREAM_HIST_ADD + (uint64_t)h, counter++, ids[k]);
                            argv[2 + k] = ids[k], lens[2 + k] = ID_LEN;
                        }
                        pipe_argv(&p, 2 + PAGE, argv, lens);
                    }
                pipe_flush(&p);
                const double us1 = drv_command_usec(ctl, stats[j], &calls1);
                if (calls1 <= calls0)
                    drv_die("adds per history: no %s calls counted", names[j]);
                ha->cmd[j].cmd_us[r] = (us1 - us0) / (double)(calls1 - calls0);
            }
            ha->cmd[0].ratio[r] = ha->cmd[1].cmd_us[r] / ha->cmd[0].cmd_us[r];
        }
        piper p = {ctl, 0};
        for (int j = 0; j < 2; j++) {
            for (int i = 0; i < ha->copies; i++) {
                char key[48];
                snprintf(key, sizeof key, "addh:%s:%ld:%d", kind_key[kinds[j]], n, i);
                const char *argv[2] = {"DEL", key};
                size_t lens[2] = {3, strlen(key)};
                pipe_argv(&p, 2, argv, lens);
            }
            freeReplyObject(dumps[j]);
        }
        pipe_flush(&p);
        ha->ran = 1;
        progress("adds into %ld-item keys: SEEN.ADD %.1f us, SADD %.1f us in the command (medians)",
                 n, median(ha->cmd[0].cmd_us, C.add_rounds),
                 median(ha->cmd[1].cmd_us, C.add_rounds));
    }
}

/* ================================================================ FPR */

/* Fresh candidates (never added) against the seen and BF keys of each size. */
static void run_fpr(redisContext *c, fpr_row *rows)
{
    const int chunk = 10000;
    char *ids = xmalloc((size_t)chunk * ID_LEN);
    char *joined = xmalloc((size_t)chunk * (ID_LEN + 1));
    const char **argv = xmalloc((size_t)(chunk + 4) * sizeof *argv);
    size_t *lens = xmalloc((size_t)(chunk + 4) * sizeof *lens);
    for (int h = 0; h < C.nhist; h++) {
        fpr_row *row = &rows[h];
        memset(row, 0, sizeof *row);
        row->n = C.hist[h];
        char keys[3][48];
        snprintf(keys[0], sizeof keys[0], "seen:h%ld", row->n);
        snprintf(keys[1], sizeof keys[1], "bf:h%ld", row->n);
        snprintf(keys[2], sizeof keys[2], "bfs:h%ld", row->n);
        long long *fp[3] = {&row->seen_fp, &row->bf_fp, &row->bfs_fp};
        for (long done = 0; done < C.fpr_candidates; done += chunk) {
            for (int i = 0; i < chunk; i++)
                make_id(STREAM_FPR + (uint64_t)h, (uint64_t)(done + i), ids + (size_t)i * ID_LEN);
            for (int k = 0; k < (C.bloom ? 3 : 1); k++) {
                int argc = 0;
                if (k == 0) {
                    const char *pre[] = {"SEEN.MFILTER", "1", keys[0], "REPLY", "FLAGS", "BULK"};
                    for (int i = 0; i < 6; i++)
                        argv[argc] = pre[i], lens[argc++] = strlen(pre[i]);
                    argv[argc] = joined, lens[argc++] = join_ids(joined, ids, chunk);
                } else {
                    argv[argc] = "BF.MEXISTS", lens[argc++] = 10;
                    argv[argc] = keys[k], lens[argc++] = strlen(keys[k]);
                    for (int i = 0; i < chunk; i++)
                        argv[argc] = ids + (size_t)i * ID_LEN, lens[argc++] = ID_LEN;
                }
                redisReply *r = drv_cmd_argv(c, argc, argv, lens);
                if (k == 0)
                    for (size_t i = 0; i < r->len; i++)
                        *fp[k] += r->str[i] == '1';
                else
                    for (size_t i = 0; i < r->elements; i++)
                        *fp[k] += r->element[i]->integer;
                freeReplyObject(r);
            }
            row->tested += chunk;
        }
        seen_mem sm;
        seen_breakdown(c, keys[0], &sm);
        row->seen_estimate = sm.fpr_estimate;
        progress("false positives: history %ld: seen %lld, BF %lld of %lld fresh candidates",
                 row->n, row->seen_fp, row->bf_fp, row->tested);
    }
    free(ids);
    free(joined);
    free(argv);
    free(lens);
}

/* ================================================================ cross-check */

/* redis-benchmark re-measures a method with the same batch, connections
 * and pipeline: requests/s from its CSV, or -1. */
static double redis_benchmark(const drv_server *srv, const method *m, const char *key,
                              const batch *bt, int requests)
{
    int cap = bt->n + 32, argc = 0;
    const char **argv = xmalloc((size_t)cap * sizeof *argv);
    char port[16], conns[16], depth[16], nreq[16];
    snprintf(port, sizeof port, "%d", srv->port);
    snprintf(conns, sizeof conns, "%d", C.conns);
    snprintf(depth, sizeof depth, "%d", C.depth);
    snprintf(nreq, sizeof nreq, "%d", requests);
    const char *pre[] = {"redis-benchmark",
                         "-h",
                         "127.0.0.1",
                         "-p",
                         port,
                         "-c",
                         conns,
                         "-P",
                         depth,
                         "-n",
                         nreq,
                         "--csv"};
    for (size_t i = 0; i < sizeof pre / sizeof *pre; i++)
        argv[argc++] = pre[i];
    char *joined = NULL;
    if (m->input == IN_BULK || m->input == IN_ITEMS) {
        const char *mf[] = {"SEEN.MFILTER", "1",        key,
                            "REPLY",        m->command, m->input == IN_BULK ? "BULK" : "ITEMS"};
        for (size_t i = 0; i < 6; i++)
            argv[argc++] = mf[i];
    }
    if (m->input == IN_BULK) {
        joined = xmalloc((size_t)bt->n * (ID_LEN + 1) + 1);
        joined[join_ids(joined, bt->ids, bt->n)] = '\0';
        argv[argc++] = joined;
    } else if (m->input != IN_ITEMS) {
        argv[argc++] = m->command;
        argv[argc++] = key;
    }
    /* Each id as its own NUL-terminated string. */
    char *strs = xmalloc((size_t)bt->n * (ID_LEN + 1));
    if (m->input != IN_BULK)
        for (int i = 0; i < bt->n; i++) {
            char *s = strs + (size_t)i * (ID_LEN + 1);
            memcpy(s, bt->ids + (size_t)i * ID_LEN, ID_LEN);
            s[ID_LEN] = '\0';
            argv[argc++] = s;
        }
    argv[argc] = NULL;

    int fds[2];
    double rps = -1;
    if (pipe(fds) != 0)
        goto out;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execvp("redis-benchmark", (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    size_t size = 0, bufcap = 1 << 20;
    char *buf = xmalloc(bufcap + 1);
    ssize_t got;
    while ((got = read(fds[0], buf + size, bufcap - size)) > 0) {
        size += (size_t)got;
        if (size == bufcap) {
            bufcap *= 2;
            buf = realloc(buf, bufcap + 1);
            if (buf == NULL)
                drv_die("out of memory");
        }
    }
    buf[size] = '\0';
    close(fds[0]);
    int status = 0;
    if (pid > 0)
        waitpid(pid, &status, 0);
    /* The data line follows the header; its second field is requests/s. */
    const char *hdr = strstr(buf, "\"max_latency_ms\"");
    const char *sep = hdr ? strstr(hdr + 16, "\",\"") : NULL;
    if (pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 && sep)
        rps = strtod(sep + 3, NULL);
    free(buf);
out:
    free(argv);
    free(joined);
    free(strs);
    return rps;
}

/* Client checks at the headline workload. */

const int SAT_METHODS[2] = {M_SMISMEMBER, M_BULK_FLAGS};

static void run_cross_check(const drv_server *srv, redisContext *ctl, char **hist_ids, cross *x)
{
    memset(x, 0, sizeof *x);
    int h = hist_index(10000), b10 = batch_index(10000), b2 = batch_index(2000);
    x->hist = h;
    /* redis-benchmark takes the command from its own argv, and Linux caps
     * one argument at 128 KiB: a 10,000-candidate BULK argument (250 KB)
     * cannot be passed, so BULK is checked with 2,000 candidates. */
    const int rows[3][2] = {{M_SMISMEMBER, b10}, {M_ITEMS_FLAGS, b10}, {M_BULK_FLAGS, b2}};
    for (int k = 0; k < 3; k++) {
        cross_row *row = &x->rows[x->nrows++];
        row->method = rows[k][0];
        row->batch = rows[k][1];
        const method *m = &METHODS[row->method];
        batch bt;
        make_batch(&bt, hist_ids[h], C.hist[h], C.batch[row->batch], STREAM_FRESH + 99);
        char key[48];
        query_key(key, sizeof key, m, C.hist[h]);
        row->ours = median(RES[h][row->batch][row->method].thr, C.rounds);
        /* About a second of requests at the rate measured. */
        int requests = (int)(row->ours / bt.n * (C.quick ? 0.2 : 1.0));
        requests = requests < 20 ? 20 : requests;
        double cpu0 = drv_server_cpu(ctl), t0 = drv_now();
        double rps = redis_benchmark(srv, m, key, &bt, requests);
        row->theirs_scpu = (drv_server_cpu(ctl) - cpu0) / (drv_now() - t0);
        row->theirs = rps > 0 ? rps * bt.n : NAN;
        free(bt.ids);
    }

    /* If the client or the pipeline limited the rate, more requests in
     * flight would raise it. */
    batch bts[VARIANTS];
    for (int v = 0; v < VARIANTS; v++)
        make_batch(&bts[v], hist_ids[h], C.hist[h], C.batch[b10], STREAM_FRESH + 200 + (uint64_t)v);
    for (int k = 0; k < 2; k++) {
        const method *m = &METHODS[SAT_METHODS[k]];
        query_ctx q = {.m = m, .bt = bts, .hist_n = C.hist[h]};
        char key[48];
        query_key(key, sizeof key, m, C.hist[h]);
        for (int v = 0; v < VARIANTS; v++)
            q.cmd[v] = format_query(m, key, &bts[v], &q.len[v]);
        double base[MAX_ROUNDS], doubled[MAX_ROUNDS];
        int n = C.rounds < 3 ? C.rounds : 3;
        for (int r = 0; r < n; r++) {
            drv_load load = query_load(m);
            drv_result res;
            drv_run(srv, ctl, &load, query_gen, query_check, &q, &res);
            base[r] = res.units_per_s;
            load.conns *= 2, load.depth *= 2;
            drv_run(srv, ctl, &load, query_gen, query_check, &q, &res);
            doubled[r] = res.units_per_s;
        }
        x->base[k] = median(base, n);
        x->doubled[k] = median(doubled, n);
        for (int v = 0; v < VARIANTS; v++)
            free(q.cmd[v]);
    }
    for (int v = 0; v < VARIANTS; v++)
        free(bts[v].ids);
    x->ran = 1;
    progress("client checks: redis-benchmark SMISMEMBER %.2fM cand/s (ours %.2fM); twice the "
             "requests in flight: "
             "SMISMEMBER %.2fM -> %.2fM, BULK FLAGS %.2fM -> %.2fM",
             x->rows[0].theirs / 1e6, x->rows[0].ours / 1e6, x->base[0] / 1e6, x->doubled[0] / 1e6,
             x->base[1] / 1e6, x->doubled[1] / 1e6);
}

/* ================================================================ main */

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_redis [--quick] [--out DIR] [--module PATH] [--redis-server PATH]\n"
            "                   [--rounds N] [--slot SECONDS] [--conns N] [--depth N] [--command "
            "TEXT]\n"
            "RedisBloom is loaded from $REDISBLOOM_MODULE when set (else the BF columns are "
            "skipped).\n");
    exit(2);
}

static void parse_args(int argc, char **argv)
{
    C = (cfg){0,
              "bench/results",
              "redis-server",
              "build/seen.so",
              NULL,
              "make bench",
              7,
              0.15,
              0.05,
              4,
              2,
              1000000,
              200,
              600,
              {100, 1000, 10000, 100000},
              4,
              {2000, 10000},
              2,
              MAX_ROUNDS};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0) {
            C.quick = 1;
            C.rounds = 2, C.add_rounds = 2, C.slot_s = 0.03, C.lat_s = 0.01,
            C.fpr_candidates = 20000, C.users = 20, C.limit_s = 120;
            C.hist[0] = 100, C.hist[1] = 1000, C.hist[2] = 10000, C.nhist = 3;
            continue;
        }
        if (v == NULL)
            usage();
        i++;
        if (strcmp(a, "--out") == 0)
            C.out_dir = v;
        else if (strcmp(a, "--module") == 0)
            C.module = v;
        else if (strcmp(a, "--redis-server") == 0)
            C.redis_server = v;
        else if (strcmp(a, "--rounds") == 0)
            C.rounds = atoi(v);
        else if (strcmp(a, "--slot") == 0)
            C.slot_s = atof(v);
        else if (strcmp(a, "--conns") == 0)
            C.conns = atoi(v);
        else if (strcmp(a, "--depth") == 0)
            C.depth = atoi(v);
        else if (strcmp(a, "--command") == 0)
            C.command = v;
        else
            usage();
    }
    if (C.rounds < 1 || C.rounds > MAX_ROUNDS || C.slot_s <= 0 || C.conns < 1 || C.conns > 64 ||
        C.depth < 1 || C.depth > 64)
        usage();
    const char *bloom = getenv("REDISBLOOM_MODULE");
    if (bloom && *bloom) {
        if (access(bloom, R_OK) != 0)
            drv_die("REDISBLOOM_MODULE=%s: %s", bloom, strerror(errno));
        C.bloom = bloom;
    }
}

/* The live seen key's twin, built in this process by the same writes. */
static seen_set *reference_set(const char *items, long n, int64_t t_end)
{
    seen_policy pol;
    seen_policy_default(&pol);
    pol.window_ms = (uint64_t)WINDOW_MS, pol.slices = 4, pol.error = ERROR_RATE;
    seen_set *set = NULL;
    if (seen_create(&pol, &set) != SEEN_OK)
        drv_die("seen_create failed");
    seen_str *strs = as_strs(items, n);
    long B = n < LOAD_BATCHES ? n : LOAD_BATCHES;
    for (long b = 0; b < B; b++) {
        long lo = n * b / B, hi = n * (b + 1) / B;
        if (seen_add_str(set, strs + lo, (size_t)(hi - lo), NULL, batch_time(t_end, b, B), NULL) !=
            SEEN_OK)
            drv_die("seen_add_str failed");
    }
    free(strs);
    return set;
}

/* The population: 60% light, 30% medium, 10% heavy, in that order. */
static int user_class(int u)
{
    return u < C.users * 6 / 10 ? U_LIGHT : (u < C.users * 9 / 10 ? U_MEDIUM : U_HEAVY);
}

static void load_all(redisContext *c, char **hist_ids, int64_t t_end, hist_mem *hm, pop_mem *pm,
                     long long *apps)
{
    piper p = {c, 0};
    argbuf a;
    argbuf_init(&a, 100000 / LOAD_BATCHES + 2);

    for (int h = 0; h < C.nhist; h++) {
        long n = C.hist[h];
        hist_ids[h] = make_ids(STREAM_HIST + (uint64_t)h, n);
        hm[h].n = n;
        for (int k = 0; k < NKINDS; k++) {
            if (!kind_enabled(k))
                continue;
            char key[48];
            snprintf(key, sizeof key, "%s:h%ld", kind_key[k], n);
            load_key(&p, &a, k, key, hist_ids[h], n, t_end);
            pipe_flush(&p);
            hm[h].usage[k] = memory_usage(c, key);
        }
        char key[48];
        snprintf(key, sizeof key, "seen:h%ld", n);
        seen_breakdown(c, key, &hm[h].seen);
        char key_at[48];
        snprintf(key_at, sizeof key_at, "seenat:h%ld", n);
        seen_breakdown(c, key_at, &hm[h].seen_at);
        REF[h] = reference_set(hist_ids[h], n, t_end);
        REF_SERIALIZED[h][0] = (long long)seen_serialized_size(REF[h]);
        redisReply *info = drv_cmd(c, "SEEN.INFO %s", key);
        REF_SERIALIZED[h][1] = (long long)num_of(map_get(info, "serialized-bytes"));
        freeReplyObject(info);
        progress("history %ld loaded: bytes/item seen %.2f, SET %.2f, ZSET %.2f", n,
                 (double)hm[h].usage[K_SEEN] / (double)n, (double)hm[h].usage[K_SET] / (double)n,
                 (double)hm[h].usage[K_ZSET] / (double)n);
    }

    /* The population: 60% light, 30% medium, 10% heavy. */
    memset(pm, 0, sizeof *pm);
    pop_items = xmalloc((size_t)C.users * sizeof *pop_items);
    for (int u = 0; u < C.users; u++) {
        int cl = user_class(u);
        long n = (long)((double)class_items[cl] * (0.5 + rnd01()));
        pop_items[u] = n;
        char *ids = make_ids(STREAM_USER + (uint64_t)u, n);
        pm->users[cl]++;
        pm->items[cl] += n;
        for (int k = 0; k < NKINDS; k++) {
            if (!kind_enabled(k) || k == K_SEEN_AT || k == K_BF)
                continue;
            /* Scaling BF keys are the population's BF keys (pop:bf:u). */
            char key[48];
            snprintf(key, sizeof key, "pop:%s:%d", k == K_BFS ? "bf" : kind_key[k], u);
            load_key(&p, &a, k, key, ids, n, t_end);
        }
        pipe_flush(&p);
        for (int k = 0; k < NKINDS; k++) {
            if (!kind_enabled(k) || k == K_SEEN_AT || k == K_BF)
                continue;
            char key[48];
            snprintf(key, sizeof key, "pop:%s:%d", k == K_BFS ? "bf" : kind_key[k], u);
            pm->usage[cl][k] += memory_usage(c, key);
        }
        free(ids);
        if ((u + 1) % (C.users / 4 > 0 ? C.users / 4 : 1) == 0)
            progress("population: %d/%d users loaded", u + 1, C.users);
    }

    /* 300 app ids for a 10-minute session: 15 pages of 20. */
    uint64_t app[300];
    for (int i = 0; i < 300; i++) {
    again:
        app[i] = 2700000 + rnd() % 400000;
        for (int j = 0; j < i; j++)
            if (app[j] == app[i])
                goto again;
    }
    const int64_t session = 10 * 60 * 1000;
    char nums[300][24];
    for (int i = 0; i < 300; i++)
        snprintf(nums[i], sizeof nums[i], "%llu", (unsigned long long)app[i]);
    freeReplyObject(drv_cmd(c, "SEEN.RESERVE apps:seen NOW %lld WINDOW 10m IDS INT",
                            (long long)(t_end - session + session / 15)));
    if (C.bloom)
        freeReplyObject(drv_cmd(c, "BF.RESERVE apps:bf 0.001 300"));
    for (int pg = 0; pg < 15; pg++) {
        long long ts = (long long)(t_end - session + session * (pg + 1) / 15);
        char tsb[24];
        snprintf(tsb, sizeof tsb, "%lld", ts);
        for (int k = 0; k < NKINDS; k++) {
            if (!kind_enabled(k) || k == K_SEEN_AT || k == K_BFS)
                continue;
            int i = 0;
            static const char *cmd[NKINDS] = {"SEEN.INSERT", "", "SADD", "ZADD", "BF.MADD", ""};
            char key[32];
            snprintf(key, sizeof key, "apps:%s", kind_key[k]);
            i = arg_s(&a, i, cmd[k]), i = arg_s(&a, i, key);
            if (k == K_SEEN)
                i = arg_s(&a, i, "NOW"), i = arg_s(&a, i, tsb), i = arg_s(&a, i, "ITEMS");
            for (int j = pg * 20; j < pg * 20 + 20; j++) {
                if (k == K_ZSET)
                    i = arg_s(&a, i, tsb);
                i = arg_s(&a, i, nums[j]);
            }
            pipe_argv(&p, i, a.argv, a.lens);
        }
    }
    pipe_flush(&p);
    for (int k = 0; k < NKINDS; k++) {
        char key[32];
        snprintf(key, sizeof key, "apps:%s", kind_key[k]);
        apps[k] = kind_enabled(k) && k != K_SEEN_AT && k != K_BFS ? memory_usage(c, key) : 0;
    }
    argbuf_free(&a);
}

/* A numeric field of INFO seen. */
static long long info_seen(redisContext *c, const char *field)
{
    redisReply *r = drv_cmd(c, "INFO seen");
    const char *at = r->type == REDIS_REPLY_STRING ? strstr(r->str, field) : NULL;
    long long v = at ? atoll(at + strlen(field) + 1) : -1;
    freeReplyObject(r);
    if (v < 0)
        drv_die("INFO seen has no %s", field);
    return v;
}

/* What the seen keys hold once idle: the sweep packs a large key that no
 * command has reached since its previous visit and no write for
 * seen.pack-idle-seconds; with 0, within two passes over the keyspace
 * (three are waited for).  The default comes back for the runs that
 * follow, whose first command on a key unpacks it. */
static void measure_idle(redisContext *c, hist_mem *hm, pop_mem *pm)
{
    freeReplyObject(drv_cmd(c, "CONFIG SET seen.pack-idle-seconds 0"));
    long long passes = info_seen(c, "seen_sweep_passes");
    double deadline = drv_now() + 60;
    while (info_seen(c, "seen_sweep_passes") < passes + 3) {
        if (drv_now() > deadline)
            drv_die("the sweep made no three passes in 60 s");
        usleep(50000);
    }
    for (int h = 0; h < C.nhist; h++) {
        char key[48];
        snprintf(key, sizeof key, "seen:h%ld", hm[h].n);
        hm[h].seen_idle = memory_usage(c, key);
    }
    memset(pm->seen_idle, 0, sizeof pm->seen_idle);
    for (int u = 0; u < C.users; u++) {
        char key[48];
        snprintf(key, sizeof key, "pop:seen:%d", u);
        pm->seen_idle[user_class(u)] += memory_usage(c, key);
    }
    freeReplyObject(drv_cmd(c, "CONFIG SET seen.pack-idle-seconds 10"));
    progress("idle keys packed: %lld", info_seen(c, "seen_sweep_keys_packed"));
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    g_start = drv_now();
    mkdir(C.out_dir, 0755);

    machine mi;
    load_average(mi.load_before, sizeof mi.load_before);

    drv_server srv;
    /* The server runs in its own directory: give it absolute paths. */
    static char module_path[4096], bloom_path[4096];
    if (realpath(C.module, module_path) == NULL)
        drv_die("%s: %s (run make first)", C.module, strerror(errno));
    if (C.bloom && realpath(C.bloom, bloom_path) == NULL)
        drv_die("REDISBLOOM_MODULE=%s: %s", C.bloom, strerror(errno));
    const char *modules[2] = {module_path, C.bloom ? bloom_path : NULL};
    drv_server_start(&srv, C.redis_server, modules, 2, C.limit_s);
    progress("redis-server on 127.0.0.1:%d (pid %d), modules: %s%s%s", srv.port, srv.pid, C.module,
             C.bloom ? ", " : "; no RedisBloom (REDISBLOOM_MODULE unset): BF skipped",
             C.bloom ? C.bloom : "");
    redisContext *ctl = drv_connect(&srv), *lat = drv_connect(&srv);
    machine_info(&mi, ctl);

    /* Histories end one second before the server's clock: NOW may not be
     * later than it. */
    redisReply *t = drv_cmd(ctl, "TIME");
    int64_t t_end = atoll(t->element[0]->str) * 1000 + atoll(t->element[1]->str) / 1000 - 1000;
    freeReplyObject(t);

    static hist_mem hm[MAX_HIST];
    static pop_mem pm;
    static fpr_row fr[MAX_HIST];
    long long apps[NKINDS];
    char *hist_ids[MAX_HIST];
    load_all(ctl, hist_ids, t_end, hm, &pm, apps);
    measure_idle(ctl, hm, &pm);
    run_fpr(ctl, fr);
    run_queries(&srv, ctl, lat, hist_ids, t_end + 60 * 1000);
    cross x;
    run_cross_check(&srv, ctl, hist_ids, &x);
    run_adds(&srv, ctl, t_end);
    run_adds_per_history(ctl);

    load_average(mi.load_after, sizeof mi.load_after);
    write_report(&mi, hm, &pm, apps, fr, &x, drv_now() - g_start);
    redisFree(ctl);
    redisFree(lat);
    drv_server_stop();
    for (int h = 0; h < C.nhist; h++)
        free(hist_ids[h]);
    progress("done: %s/latest.md", C.out_dir);
    return 0;
}
