/* bench_ingest.c — events per second into one Redis: seen-ingest's batched
 * SEEN writes against the per-event write the seed systems use (one ZADD per
 * event, each waiting for its reply), in the same run, on the same server.
 *
 * Every method starts from the same JSON lines and parses them with the
 * ingester's own parser, so the difference is the write path alone:
 *
 *   zadd-each      ZADD key ts item, one round trip per event (the seeds)
 *   zadd-pipeline  the same ZADDs pipelined 1000 at a time (a stronger
 *                  baseline, to show what batching adds beyond pipelining)
 *   seen-batched   the ingester's batch writer: events grouped per key and
 *                  time bucket, one SEEN.ADD/INSERT each, pipelined
 *
 * The benchmark starts its own redis-server (127.0.0.1, a free port) with
 * the module, runs the methods in turn for several rounds (FLUSHALL between
 * them) and prints the median rate of each and the ratios.
 *
 * usage: bench_ingest --module build/seen.so [--events N] [--users N]
 *                     [--rounds N] [--batch N] [--max-seconds S] */
#include "ingest.h"

#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

struct options {
    const char *module;
    long events, users, rounds, batch;
    double max_seconds;
};

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) ||
        getsockname(fd, (struct sockaddr *)&a, &len)) {
        perror("bench_ingest: free port");
        exit(1);
    }
    close(fd);
    return ntohs(a.sin_port);
}

static pid_t start_redis(const char *module, int port, redisContext **out)
{
    char port_text[16];
    snprintf(port_text, sizeof port_text, "%d", port);
    pid_t pid = fork();
    if (pid == 0) {
        execlp("redis-server", "redis-server", "--port", port_text, "--bind", "127.0.0.1", "--save",
               "", "--appendonly", "no", "--logfile", "/dev/null", "--loadmodule", module,
               (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) { /* up to 10 s */
        sleep_ms(50);
        redisContext *c = redisConnect("127.0.0.1", port);
        if (c && !c->err) {
            redisReply *r = redisCommand(c, "PING");
            if (r) {
                freeReplyObject(r);
                *out = c;
                return pid;
            }
        }
        if (c)
            redisFree(c);
    }
    fprintf(stderr, "bench_ingest: redis-server did not start on port %d\n", port);
    kill(pid, SIGKILL);
    exit(1);
}

/* Events as a real stream brings them: times advancing with the stream at
 * about 100,000 events a second, users and items at random. */
static char **make_events(const struct options *o)
{
    char **lines = xmalloc((size_t)o->events * sizeof *lines);
    int64_t start = now_ms() - 60000;
    uint64_t x = 88172645463325252ULL;
    for (long i = 0; i < o->events; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        char line[160];
        snprintf(line, sizeof line,
                 "{\"user\": \"u%lu\", \"item\": \"v%lu\", \"ts\": %lld, \"kind\": \"play\"}",
                 (unsigned long)(x % (uint64_t)o->users), (unsigned long)((x >> 20) % 10000000),
                 (long long)(start + i / 100));
        lines[i] = xstrdup(line);
    }
    return lines;
}

static void check(redisReply *r, const char *what)
{
    if (!r || r->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "bench_ingest: %s: %s\n", what, r ? r->str : "connection error");
        exit(1);
    }
    freeReplyObject(r);
}

struct method_run {
    long done;
    double seconds;
};

static void parse_or_die(const struct event_spec *spec, const char *line, struct event *ev)
{
    char err[256];
    if (!event_from_json(spec, line, strlen(line), ev, err, sizeof err)) {
        fprintf(stderr, "bench_ingest: %s\n", err);
        exit(1);
    }
}

/* ZADD per event; `depth` commands in flight (1 = wait for each reply). */
static struct method_run run_zadd(redisContext *c, const struct event_spec *spec, char **lines,
                                  const struct options *o, long depth)
{
    struct event ev = {0};
    int64_t t0 = mono_ms(), limit = (int64_t)(o->max_seconds * 1000);
    long i = 0, in_flight = 0;
    for (; i < o->events && mono_ms() - t0 < limit; i++) {
        parse_or_die(spec, lines[i], &ev);
        char score[24];
        snprintf(score, sizeof score, "%lld", (long long)ev.ts);
        const char *argv[] = {"ZADD", ev.key.data, score, ev.item};
        size_t lens[] = {4, ev.key.len, strlen(score), ev.item_len};
        redisAppendCommandArgv(c, 4, argv, lens);
        event_release(&ev);
        if (++in_flight == depth) {
            for (; in_flight; in_flight--) {
                redisReply *r;
                if (redisGetReply(c, (void **)&r) != REDIS_OK)
                    check(NULL, "ZADD");
                check(r, "ZADD");
            }
        }
    }
    for (; in_flight; in_flight--) {
        redisReply *r;
        if (redisGetReply(c, (void **)&r) != REDIS_OK)
            check(NULL, "ZADD");
        check(r, "ZADD");
    }
    buf_free(&ev.key);
    return (struct method_run){i, (double)(mono_ms() - t0) / 1000.0};
}

/* The ingester's writer, fed as the run loop feeds it. */
static struct method_run run_batched(struct writer *w, const struct event_spec *spec, char **lines,
                                     const struct options *o)
{
    struct batch b = {0};
    struct event ev = {0};
    int64_t t0 = mono_ms(), limit = (int64_t)(o->max_seconds * 1000);
    long i = 0;
    for (; i < o->events && mono_ms() - t0 < limit; i++) {
        parse_or_die(spec, lines[i], &ev);
        batch_add(&b, ev.key.data, ev.key.len, ev.ts, ev.item, ev.item_len);
        event_release(&ev);
        if ((long)b.n >= o->batch) {
            writer_flush(w, &b);
            batch_clear(&b);
        }
    }
    writer_flush(w, &b);
    batch_free(&b);
    buf_free(&ev.key);
    return (struct method_run){i, (double)(mono_ms() - t0) / 1000.0};
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, long n)
{
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    struct options o = {.module = NULL,
                        .events = 200000,
                        .users = 10000,
                        .rounds = 3,
                        .batch = 20000,
                        .max_seconds = 20};
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--module"))
            o.module = argv[i + 1];
        else if (!strcmp(argv[i], "--events"))
            o.events = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--users"))
            o.users = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds"))
            o.rounds = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch"))
            o.batch = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--max-seconds"))
            o.max_seconds = atof(argv[i + 1]);
    }
    if (!o.module || o.events < 1 || o.users < 1 || o.rounds < 1 || o.rounds > 15 || o.batch < 1 ||
        o.max_seconds <= 0) {
        fprintf(stderr, "usage: bench_ingest --module seen.so [--events N] [--users N] "
                        "[--rounds 1-15] [--batch N] [--max-seconds S]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    int port = free_port();
    redisContext *c;
    pid_t server = start_redis(o.module, port, &c);

    struct event_spec seed_spec = {.item_field = "item", .ts_field = "ts", .ts_scale = 1};
    struct event_spec seen_spec = seed_spec;
    char err[256];
    if (!tmpl_compile(&seed_spec.key, "expose:%user", err, sizeof err) ||
        !tmpl_compile(&seen_spec.key, "seen:{%user}:%kind", err, sizeof err))
        return 1;
    char **lines = make_events(&o);

    char addr[32];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    struct config cfg = {.ts_granularity_ms = 1000, .bulk_threshold = 16};
    struct redis_target target;
    redis_target_init(&target, addr, false, 30000, NULL);
    struct writer w;
    writer_init(&w, &target, &cfg, err, sizeof err);

    static const char *const names[] = {"zadd-each", "zadd-pipeline", "seen-batched"};
    double rates[3][15];
    printf("bench_ingest: %ld events, %ld users, batch %ld, %ld rounds, redis-server on %s\n",
           o.events, o.users, o.batch, o.rounds, addr);
    for (long round = 0; round < o.rounds; round++) {
        for (int m = 0; m < 3; m++) {
            check(redisCommand(c, "FLUSHALL"), "FLUSHALL");
            struct method_run r = m == 0   ? run_zadd(c, &seed_spec, lines, &o, 1)
                                  : m == 1 ? run_zadd(c, &seed_spec, lines, &o, 1000)
                                           : run_batched(&w, &seen_spec, lines, &o);
            rates[m][round] = (double)r.done / r.seconds;
            printf("round %ld %-14s %8ld events in %6.2f s  %10.0f events/s\n", round + 1, names[m],
                   r.done, r.seconds, rates[m][round]);
            fflush(stdout);
        }
    }
    double med[3];
    for (int m = 0; m < 3; m++)
        med[m] = median(rates[m], o.rounds);
    printf("\nmedian events/s: zadd-each %.0f, zadd-pipeline %.0f, seen-batched %.0f\n", med[0],
           med[1], med[2]);
    printf("seen-batched / zadd-each (the seeds' per-event write): %.1fx\n", med[2] / med[0]);
    printf("seen-batched / zadd-pipeline: %.1fx\n", med[2] / med[1]);

    writer_free(&w);
    redis_target_free(&target);
    redisFree(c);
    kill(server, SIGTERM);
    waitpid(server, NULL, 0);
    for (long i = 0; i < o.events; i++)
        free(lines[i]);
    free(lines);
    tmpl_free(&seed_spec.key);
    tmpl_free(&seen_spec.key);
    return 0;
}
