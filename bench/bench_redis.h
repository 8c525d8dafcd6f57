/*
 * bench_redis.h — what the Redis benchmark's measuring (bench_redis.c) and
 * its report writer (bench_report.c) share: the run's options, the names of
 * the designs and query forms, and the results the one fills in and the
 * other prints.
 */
#ifndef SEEN_BENCH_REDIS_H
#define SEEN_BENCH_REDIS_H

#include "driver.h"
#include "seen.h"

#include <stdint.h>
#include <stdio.h>

#define DAY_MS INT64_C(86400000)
#define WINDOW_MS (90 * DAY_MS)
#define ERROR_RATE 0.001
#define ID_LEN 24        /* item ids: 24 hex characters */
#define LOAD_BATCHES 360 /* a history arrives in this many batches (4 a day) */
#define PAGE 20          /* items per add: one feed page */
#define SESSION_PAGES 2  /* pages per user in a round of sessions (adds) */
#define VARIANTS 4       /* distinct candidate batches per workload */
#define MAX_HIST 4
#define MAX_BATCH 2
#define MAX_ROUNDS 15

typedef struct cfg {
    int quick;
    const char *out_dir;
    const char *redis_server;
    const char *module;
    const char *bloom;
    const char *command;
    int rounds;
    double slot_s;    /* throughput measurement per method and round */
    double lat_s;     /* latency sampling per method and round */
    int conns, depth; /* load: connections and requests in flight on each */
    long fpr_candidates;
    int users;
    unsigned limit_s; /* the whole run is aborted after this */
    long hist[MAX_HIST];
    int nhist;
    int batch[MAX_BATCH];
    int nbatch;
    int add_rounds; /* rounds of adds: each is short, and paired ratios vary */
} cfg;

enum { K_SEEN, K_SEEN_AT, K_SET, K_ZSET, K_BF, K_BFS, NKINDS };

typedef struct seen_mem {
    long long usage; /* MEMORY USAGE */
    long long value; /* SEEN.INFO bytes: every allocation of the value */
    long long items;
    long long runs;        /* stored runs (exact or compact) */
    long long run_bytes;   /* their requested sizes: the encoded payload */
    long long run_classes; /* what the allocator holds for them (SEEN.INFO held-bytes) */
    long long head_bytes;  /* the raw buffer of recent additions */
    double fpr_estimate;
    char encoding[16];
    char sizes[200]; /* "requested→held" of each run */
} seen_mem;

typedef struct hist_mem {
    long n;
    long long usage[NKINDS];
    long long seen_idle;    /* the seen key's MEMORY USAGE once idle (packed) */
    seen_mem seen, seen_at; /* the live key, and the AT-import one */
} hist_mem;

enum { U_LIGHT, U_MEDIUM, U_HEAVY, NCLASSES };

typedef struct pop_mem {
    int users[NCLASSES];
    long long items[NCLASSES];
    long long usage[NCLASSES][NKINDS];
    long long seen_idle[NCLASSES];
} pop_mem;

typedef struct fpr_row {
    long n;
    long long tested;
    long long seen_fp, bf_fp, bfs_fp;
    double seen_estimate;
} fpr_row;

/* R_LINES: the unseen items in one string, each followed by a newline. */
typedef enum { R_UNSEEN, R_FLAGS, R_INDEXES, R_LINES, R_INTS, R_SCORES, R_HISTORY } reply_kind;

typedef enum { IN_FILTER, IN_ITEMS, IN_BULK, IN_PLAIN, IN_ZRANGE } input_form;

typedef struct method {
    const char *label;
    const char *command; /* without key and candidates */
    int kind;            /* key kind it reads */
    input_form input;
    reply_kind reply;
    int exact;        /* answers must match exactly */
    const char *stat; /* its name in INFO commandstats */
    int missing;      /* asks a key that does not exist: nothing is looked up, every
                         candidate is replied (what Redis's parsing and replies cost) */
} method;

#define NMETHODS 13
#define M_FILTER 0
#define M_ITEMS_FLAGS 2
#define M_BULK_FLAGS 5
#define M_BULK_BULK 7 /* the last seen form */
#define M_SMISMEMBER 8
#define M_ZRANGE 10
#define M_FLOOR 12 /* SEEN.FILTER on a missing key */

typedef struct cell_result {
    int ran;
    double thr[MAX_ROUNDS];   /* candidates/s per round */
    double ratio[MAX_ROUNDS]; /* against SMISMEMBER in the same round */
    /* Candidates per second of server CPU: what one core the server had to
     * itself would do.  Other processes on a shared machine slow the wall
     * clock, not the CPU time a request costs, so these ratios are steady. */
    double cpu_rate[MAX_ROUNDS], cpu_ratio[MAX_ROUNDS];
    double scpu[MAX_ROUNDS], ccpu[MAX_ROUNDS];
    double srv_us[MAX_ROUNDS], cmd_us[MAX_ROUNDS]; /* server CPU per request; inside the command */
    double *lat;                                   /* seconds, pooled over rounds */
    int nlat, caplat;
    double client_filter_s; /* ZRANGE: median time of the client's filtering */
} cell_result;

typedef struct core_result {
    double query_us; /* seen_query_str + seen_query_run: hash, sort, walk */
    double hash_us;  /* seen_query_str alone: hash and sort the candidates */
} core_result;

/* What a reply's bytes cost on their own: GET of strings as long as the
 * REPLY BULK and REPLY FLAGS replies of one workload, measured in the same
 * rounds as the two forms. */
typedef struct transport_result {
    int ran;
    long long bulk_len, flags_len;                    /* bytes of each reply */
    double bulk_us[MAX_ROUNDS], flags_us[MAX_ROUNDS]; /* server CPU per GET */
} transport_result;

typedef struct add_result {
    const char *label;
    int ran;
    double thr[MAX_ROUNDS], ratio[MAX_ROUNDS], scpu[MAX_ROUNDS], ccpu[MAX_ROUNDS];
    double srv_us[MAX_ROUNDS], cmd_us[MAX_ROUNDS];
    const char *stat;
} add_result;

enum { A_SEEN, A_SADD, A_ZADD, A_BF, NADDS };

typedef struct cross_row {
    int method, batch;
    double ours, theirs; /* candidates/s: this program, redis-benchmark */
    double theirs_scpu;  /* server CPU / wall during redis-benchmark */
} cross_row;

typedef struct cross {
    int ran, nrows, hist;
    cross_row rows[3];
    /* rates with conns x depth in flight, and with twice as many of each */
    double base[2], doubled[2];
} cross;

typedef struct machine {
    char cpu[160], load_before[64], load_after[64], kernel[128], redis[64], date[64], rev[64],
        bloom_ver[32];
    long cores;
    long long mem_mb;
} machine;

extern cfg C;
extern double g_start; /* drv_now() when the run started */
extern const char *const kind_key[NKINDS];
extern const char *const kind_label[NKINDS];
extern const char *const class_label[NCLASSES];
extern const long class_items[NCLASSES];
extern const method METHODS[NMETHODS];
extern cell_result RES[MAX_HIST][MAX_BATCH][NMETHODS];
extern core_result CORE[MAX_HIST][MAX_BATCH];
extern seen_set *REF[MAX_HIST];
extern long long REF_SERIALIZED[MAX_HIST][2]; /* in-process, and SEEN.INFO's */
extern add_result ADDS[NADDS];
/* SEEN.ADD and SADD with users drawn in proportion to their history. */
extern add_result ADDS_BY_SIZE[2];
extern add_result ADDS_SESSIONS[2];
/* SEEN.ADD and SADD per history size (cmd[0], cmd[1]): a page's time in
 * the command, round by round, into `copies` copies of the history's key
 * as loaded, each taking `pages_per_key` pages; cmd[0].ratio is SADD's
 * time over SEEN.ADD's. */
typedef struct hist_adds {
    int ran, copies, pages_per_key;
    add_result cmd[2];
} hist_adds;
extern hist_adds ADDS_PER_HIST[MAX_HIST];
extern transport_result TRANSPORT; /* the 10,000-candidate, 10,000-item workload */
extern const int SAT_METHODS[2];

/* Progress goes to stderr, with the elapsed time. */
void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int kind_enabled(int k);
int method_enabled(const method *m);
long long ref_fixed_bytes(const seen_set *set);
/* The value of field `name` of a RESP3 map or RESP2 flat array reply. */
const redisReply *map_get(const redisReply *m, const char *name);
int cmp_double(const void *a, const void *b); /* for qsort */
double median(const double *v, int n);
double minimum(const double *v, int n);
double percentile(const double *sorted, int n, double p);

/* bench_report.c */
void machine_info(machine *mi, redisContext *c);
void load_average(char *out, size_t cap);
const char *commas(long long v, char *buf);
int hist_index(long n);
int batch_index(int n);
void write_report(const machine *mi, const hist_mem *hm, const pop_mem *pm, const long long *apps,
                  const fpr_row *fr, const cross *x, double elapsed);

#endif
