/*
 * driver.h — what the Redis benchmark (bench_redis.c) needs from its
 * machinery: a private redis-server it starts and always stops, blocking
 * hiredis connections for loading and latency, and a pipelined load engine
 * over several connections whose replies are tallied without building reply
 * objects, so the client stays far cheaper than the server it measures.
 */
#ifndef BENCH_DRIVER_H
#define BENCH_DRIVER_H

#include <hiredis/hiredis.h>

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ time */

double drv_now(void);        /* monotonic seconds */
double drv_thread_cpu(void); /* CPU seconds of the calling thread */

/* Print to stderr and exit (the exit handler stops the server). */
void drv_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* ---------------------------------------------------------------- server */

typedef struct drv_server {
    int port;
    int pid;
    char dir[64];
} drv_server;

/*
 * Start redis-server on a free 127.0.0.1 port in a fresh temporary directory,
 * no persistence, with the given modules (NULL entries skipped), and wait
 * (at most 15 s) until it answers.  The server is killed at exit, on SIGINT,
 * SIGTERM and SIGALRM, and when this process dies (PR_SET_PDEATHSIG).
 * `deadline_s` > 0 arms an alarm: the whole run is aborted after that long.
 */
void drv_server_start(drv_server *srv, const char *redis_server, const char *const *modules,
                      int nmodules, unsigned deadline_s);
void drv_server_stop(void);

/* A blocking connection with a 60 s timeout; dies on failure. */
redisContext *drv_connect(const drv_server *srv);

/* Send a command (printf-style, hiredis format) and die on an error reply. */
redisReply *drv_cmd(redisContext *c, const char *fmt, ...);
redisReply *drv_cmd_argv(redisContext *c, int argc, const char **argv, const size_t *lens);

/* Server CPU seconds (user + sys, from INFO CPU). */
double drv_server_cpu(redisContext *c);

/* Microseconds spent inside `cmd` (lower case) since the last CONFIG
 * RESETSTAT, from INFO commandstats; *calls receives its call count. */
double drv_command_usec(redisContext *c, const char *cmd, long long *calls);

/* ------------------------------------------------------- pipelined load */

/* What a reply says, tallied by the engine's reader without reply objects. */
typedef struct drv_tally {
    int type;          /* REDIS_REPLY_* of the whole reply */
    long long len;     /* array elements, string bytes or the integer */
    long long strings; /* nested non-nil strings */
    long long ints;    /* nested integers */
    long long int_sum; /* their sum */
    long long ones;    /* '1' bytes of a top-level string */
    long long lines;   /* '\n' bytes of a top-level string */
    char err[200];     /* an error reply's text */
} drv_tally;

/* One request: bytes to send, and what the caller wants back with its reply. */
typedef struct drv_req {
    const char *buf;
    size_t len;
    long long units; /* candidates or items it carries */
    long long tag;   /* the caller's (e.g. which batch) */
} drv_req;

/*
 * Fill *req with the next request for connection `conn`.  `scratch` is a
 * buffer owned by the engine for this request slot, for generators that
 * format on the fly (set req->buf to it); it stays valid until the reply.
 */
typedef void (*drv_gen_fn)(void *ctx, int conn, drv_req *req, char **scratch, size_t *scratch_cap);

/* Check one reply; return 0 if it is wrong (the run then stops). */
typedef int (*drv_check_fn)(void *ctx, const drv_req *req, const drv_tally *t);

typedef struct drv_result {
    double units_per_s; /* between the first and the last counted reply */
    double wall_s;
    long long replies;
    double server_cpu_frac;   /* server CPU seconds / wall seconds */
    double client_cpu_frac;   /* this thread's CPU seconds / wall seconds */
    double server_us_per_req; /* server CPU per reply */
    double cmd_us_per_req;    /* of which inside the command (INFO commandstats) */
} drv_result;

typedef struct drv_load {
    int conns;            /* connections */
    int depth;            /* requests in flight per connection */
    double seconds;       /* issue for this long ... */
    int min_replies;      /* ... and until this many replies have come back ... */
    double max_s;         /* ... but never longer than this */
    const char *stat_cmd; /* command whose INFO commandstats to read (lower case), or NULL */
} drv_load;

/* Drive the server with `gen`'s requests; dies on a connection error. */
void drv_run(const drv_server *srv, redisContext *ctl, const drv_load *load, drv_gen_fn gen,
             drv_check_fn check, void *ctx, drv_result *out);

#endif
