/*
 * driver.c — the Redis benchmark's machinery (see driver.h): a private
 * redis-server that is stopped however the run ends, blocking connections,
 * and the pipelined load engine.
 *
 * The engine is one thread polling several non-blocking connections, each
 * keeping `depth` requests in flight.  Requests are written straight from
 * caller-owned, pre-formatted RESP bytes, and replies go through hiredis's
 * reader with object functions that only tally (type, element counts, sum
 * of integers, '1' bytes of a flags string) instead of allocating one reply
 * object per element: decoding a 9,000-element reply with hiredis's default
 * objects costs the client about as much as the server spends producing it,
 * and the point is to measure the server.
 */
#include "driver.h"

#include <hiredis/read.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ time */

double drv_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

double drv_thread_cpu(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void drv_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("bench_redis: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

/* ---------------------------------------------------------------- server */

/* The one server this process runs: the exit and signal handlers need it. */
static volatile pid_t g_pid = 0;
static char g_dir[64];
static char g_log[128]; /* its log, the one file it writes without persistence */

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

void drv_server_stop(void)
{
    pid_t pid = g_pid;
    g_pid = 0;
    if (pid > 0) {
        kill(pid, SIGTERM);
        /* No persistence, so shutdown is quick; do not wait on it for long. */
        int gone = 0;
        for (int i = 0; i < 100 && !gone; i++) {
            gone = waitpid(pid, NULL, WNOHANG) == pid;
            if (!gone)
                usleep(20000);
        }
        if (!gone) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
    }
    /* Also after a server that never came up. */
    if (g_dir[0] != '\0')
        remove_dir(g_dir);
    g_dir[0] = '\0';
}

/* Only async-signal-safe calls: kill the server, say why, leave. */
static void on_signal(int sig)
{
    if (g_pid > 0)
        kill(g_pid, SIGKILL);
    if (g_dir[0] != '\0') {
        unlink(g_log);
        rmdir(g_dir);
    }
    static const char alarm_msg[] = "bench_redis: time limit reached, server killed\n";
    static const char sig_msg[] = "bench_redis: interrupted, server killed\n";
    if (sig == SIGALRM) {
        ssize_t w = write(2, alarm_msg, sizeof alarm_msg - 1);
        (void)w;
    } else {
        ssize_t w = write(2, sig_msg, sizeof sig_msg - 1);
        (void)w;
    }
    _exit(sig == SIGALRM ? 124 : 130);
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        drv_die("socket: %s", strerror(errno));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        drv_die("cannot find a free port: %s", strerror(errno));
    close(fd);
    return ntohs(a.sin_port);
}

static void print_log_tail(const char *dir)
{
    char path[128];
    snprintf(path, sizeof path, "%s/redis.log", dir);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    char buf[4096];
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, size > (long)sizeof buf - 1 ? size - (long)sizeof buf + 1 : 0, SEEK_SET);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    fprintf(stderr, "--- %s (tail)\n%s\n---\n", path, buf);
}

static int try_start(drv_server *srv, const char *redis_server, const char *const *modules,
                     int nmodules)
{
    srv->port = free_port();
    char port[16];
    snprintf(port, sizeof port, "%d", srv->port);
    char logfile[128];
    snprintf(logfile, sizeof logfile, "%s/redis.log", srv->dir);
    const char *argv[64];
    int argc = 0;
    argv[argc++] = redis_server;
    const char *fixed[] = {"--port", port, "--bind", "127.0.0.1", "--dir", srv->dir, "--logfile",
                           logfile, "--save", "", "--appendonly", "no", "--daemonize", "no",
                           /* the benchmark measures the main thread; keep Redis's defaults */
                           "--io-threads", "1"};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        argv[argc++] = fixed[i];
    for (int i = 0; i < nmodules && argc < 60; i++) {
        if (modules[i] == NULL)
            continue;
        argv[argc++] = "--loadmodule";
        argv[argc++] = modules[i];
    }
    argv[argc] = NULL;

    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        drv_die("fork: %s", strerror(errno));
    if (pid == 0) {
        /* The server must not outlive the benchmark, however it ends. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1);
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            dup2(devnull, 0);
            dup2(devnull, 1);
        }
        execvp(redis_server, (char *const *)argv);
        fprintf(stderr, "bench_redis: cannot run %s: %s\n", redis_server, strerror(errno));
        _exit(127);
    }
    srv->pid = pid;
    g_pid = pid;

    double deadline = drv_now() + 15.0;
    while (drv_now() < deadline) {
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            g_pid = 0;
            return 0; /* exited: port taken, or a bad module */
        }
        struct timeval tv = {1, 0};
        redisContext *c = redisConnectWithTimeout("127.0.0.1", srv->port, tv);
        if (c != NULL && !c->err) {
            redisReply *r = redisCommand(c, "PING");
            int ok = r != NULL && r->type == REDIS_REPLY_STATUS;
            if (r)
                freeReplyObject(r);
            redisFree(c);
            if (ok)
                return 1;
        } else if (c) {
            redisFree(c);
        }
        usleep(20000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    g_pid = 0;
    return 0;
}

void drv_server_start(drv_server *srv, const char *redis_server, const char *const *modules,
                      int nmodules, unsigned deadline_s)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/seen-bench.XXXXXX");
    if (mkdtemp(g_dir) == NULL)
        drv_die("mkdtemp: %s", strerror(errno));
    snprintf(srv->dir, sizeof srv->dir, "%s", g_dir);
    snprintf(g_log, sizeof g_log, "%s/redis.log", g_dir);
    atexit(drv_server_stop);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGALRM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (deadline_s > 0)
        alarm(deadline_s);
    for (int attempt = 0; attempt < 3; attempt++)
        if (try_start(srv, redis_server, modules, nmodules))
            return;
    print_log_tail(srv->dir);
    drv_die("redis-server (%s) did not start", redis_server);
}

redisContext *drv_connect(const drv_server *srv)
{
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", srv->port, tv);
    if (c == NULL || c->err)
        drv_die("cannot connect to 127.0.0.1:%d: %s", srv->port, c ? c->errstr : "out of memory");
    struct timeval rw = {60, 0};
    redisSetTimeout(c, rw);
    return c;
}

static redisReply *checked(redisContext *c, redisReply *r, const char *what)
{
    if (r == NULL)
        drv_die("%.60s: connection error: %s", what, c->errstr);
    if (r->type == REDIS_REPLY_ERROR)
        drv_die("%.60s: error reply: %s", what, r->str);
    return r;
}

redisReply *drv_cmd(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    return checked(c, r, fmt);
}

redisReply *drv_cmd_argv(redisContext *c, int argc, const char **argv, const size_t *lens)
{
    return checked(c, redisCommandArgv(c, argc, argv, lens), argv[0]);
}

static double info_field(const char *info, const char *name)
{
    const char *p = strstr(info, name);
    return p ? strtod(p + strlen(name), NULL) : 0.0;
}

double drv_server_cpu(redisContext *c)
{
    redisReply *r = drv_cmd(c, "INFO CPU");
    double cpu = info_field(r->str, "used_cpu_sys:") + info_field(r->str, "used_cpu_user:");
    freeReplyObject(r);
    return cpu;
}

double drv_command_usec(redisContext *c, const char *cmd, long long *calls)
{
    redisReply *r = drv_cmd(c, "INFO commandstats");
    char name[96];
    snprintf(name, sizeof name, "cmdstat_%s:calls=", cmd);
    const char *p = strstr(r->str, name);
    double usec = 0;
    *calls = 0;
    if (p != NULL) {
        *calls = strtoll(p + strlen(name), NULL, 10);
        const char *u = strstr(p, ",usec=");
        usec = u ? strtod(u + 6, NULL) : 0;
    }
    freeReplyObject(r);
    return usec;
}

/* ------------------------------------------------------- tallying reader */

/* Every element "object" is this one byte: the reader only needs non-NULL. */
static char tally_obj;

static void *tally_string(const redisReadTask *task, char *str, size_t len)
{
    drv_tally *t = task->privdata;
    if (task->parent != NULL) {
        t->strings++;
        return &tally_obj;
    }
    t->type = task->type;
    t->len = (long long)len;
    if (task->type == REDIS_REPLY_ERROR) {
        size_t n = len < sizeof t->err - 1 ? len : sizeof t->err - 1;
        memcpy(t->err, str, n);
        t->err[n] = '\0';
        return &tally_obj;
    }
    long long ones = 0, lines = 0;
    for (size_t i = 0; i < len; i++) {
        ones += str[i] == '1';
        lines += str[i] == '\n';
    }
    t->ones = ones;
    t->lines = lines;
    return &tally_obj;
}

static void *tally_array(const redisReadTask *task, int elements)
{
    drv_tally *t = task->privdata;
    if (task->parent == NULL) {
        t->type = REDIS_REPLY_ARRAY;
        t->len = elements;
    }
    return &tally_obj;
}

static void *tally_integer(const redisReadTask *task, long long value)
{
    drv_tally *t = task->privdata;
    if (task->parent == NULL) {
        t->type = REDIS_REPLY_INTEGER;
        t->len = value;
    } else {
        t->ints++;
        t->int_sum += value;
    }
    return &tally_obj;
}

static void *tally_nil(const redisReadTask *task)
{
    drv_tally *t = task->privdata;
    if (task->parent == NULL)
        t->type = REDIS_REPLY_NIL;
    return &tally_obj;
}

static void tally_free(void *obj)
{
    (void)obj;
}

static redisReplyObjectFunctions tally_fns = {tally_string, tally_array, tally_integer, tally_nil,
                                              tally_free};

/* ---------------------------------------------------------------- engine */

typedef struct slot {
    drv_req req;
    char *scratch;
    size_t scratch_cap;
} slot;

typedef struct conn {
    int fd;
    redisReader *rd;
    drv_tally tally;
    slot *slots;    /* depth + 1: in flight, plus the one being written */
    int oldest;     /* slot of the oldest request in flight */
    int inflight;   /* fully written, waiting for their replies */
    int writing;    /* the slot after the in-flight ones is being written */
    size_t written; /* bytes of it written so far */
} conn;

static int raw_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        drv_die("socket: %s", strerror(errno));
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
        drv_die("connect to port %d: %s", port, strerror(errno));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

/* Write as much as the socket takes; start new requests while allowed. */
static void pump_writes(conn *k, int ki, int nslots, int depth, int issuing, drv_gen_fn gen,
                        void *ctx)
{
    for (;;) {
        slot *s = &k->slots[(k->oldest + k->inflight) % nslots];
        if (!k->writing) {
            if (!issuing || k->inflight >= depth)
                return;
            gen(ctx, ki, &s->req, &s->scratch, &s->scratch_cap);
            k->writing = 1;
            k->written = 0;
        }
        ssize_t w = write(k->fd, s->req.buf + k->written, s->req.len - k->written);
        if (w < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return;
            drv_die("write: %s", strerror(errno));
        }
        k->written += (size_t)w;
        if (k->written == s->req.len) {
            k->writing = 0;
            k->inflight++;
        }
    }
}

void drv_run(const drv_server *srv, redisContext *ctl, const drv_load *load, drv_gen_fn gen,
             drv_check_fn check, void *ctx, drv_result *out)
{
    int n = load->conns, depth = load->depth, nslots = load->depth + 1;
    conn *ks = calloc((size_t)n, sizeof *ks);
    struct pollfd *pf = calloc((size_t)n, sizeof *pf);
    size_t rbuf_cap = 1 << 18;
    char *rbuf = malloc(rbuf_cap);
    if (ks == NULL || pf == NULL || rbuf == NULL)
        drv_die("out of memory");
    for (int i = 0; i < n; i++) {
        ks[i].fd = raw_connect(srv->port);
        ks[i].rd = redisReaderCreateWithFunctions(&tally_fns);
        ks[i].slots = calloc((size_t)nslots, sizeof(slot));
        if (ks[i].rd == NULL || ks[i].slots == NULL)
            drv_die("out of memory");
        ks[i].rd->privdata = &ks[i].tally;
    }

    if (load->stat_cmd)
        freeReplyObject(drv_cmd(ctl, "CONFIG RESETSTAT"));
    double cpu0 = drv_server_cpu(ctl), ccpu0 = drv_thread_cpu();
    double t0 = drv_now(), deadline = t0 + load->seconds, max_end = t0 + load->max_s;
    double t_first = -1, t_last = 0;
    long long replies = 0, units = 0;
    double last_progress = t0;
    for (;;) {
        double now = drv_now();
        int issuing = (now < deadline || replies < load->min_replies) && now < max_end;
        int busy = 0;
        for (int i = 0; i < n; i++) {
            pf[i].fd = ks[i].fd;
            pf[i].events = 0;
            pf[i].revents = 0;
            if (ks[i].inflight > 0 || ks[i].writing)
                pf[i].events |= POLLIN, busy = 1;
            if (ks[i].writing || (issuing && ks[i].inflight < depth))
                pf[i].events |= POLLOUT;
        }
        if (!issuing && !busy)
            break;
        if (now - last_progress > 60.0)
            drv_die("no reply from the server for 60 s");
        if (poll(pf, (nfds_t)n, 100) < 0 && errno != EINTR)
            drv_die("poll: %s", strerror(errno));
        for (int i = 0; i < n; i++) {
            conn *k = &ks[i];
            if (pf[i].revents & POLLOUT)
                pump_writes(k, i, nslots, depth, issuing, gen, ctx);
            if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t got = read(k->fd, rbuf, rbuf_cap);
            if (got == 0)
                drv_die("the server closed a connection (see its log)");
            if (got < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                    continue;
                drv_die("read: %s", strerror(errno));
            }
            if (redisReaderFeed(k->rd, rbuf, (size_t)got) != REDIS_OK)
                drv_die("reader: %s", k->rd->errstr);
            for (;;) {
                void *reply = NULL;
                if (redisReaderGetReply(k->rd, &reply) != REDIS_OK)
                    drv_die("protocol error: %s", k->rd->errstr);
                if (reply == NULL)
                    break;
                if (k->inflight == 0)
                    drv_die("a reply to no request");
                slot *s = &k->slots[k->oldest];
                if (k->tally.type == REDIS_REPLY_ERROR)
                    drv_die("error reply: %s", k->tally.err);
                if (!check(ctx, &s->req, &k->tally))
                    drv_die("wrong answer (request tag %lld): reply type %d, length or value %lld",
                            s->req.tag, k->tally.type, k->tally.len);
                double t = drv_now();
                /* Rate between the first and the last reply: the time to
                 * the first one is latency, not throughput. */
                if (t_first < 0)
                    t_first = t;
                else
                    units += s->req.units;
                t_last = t;
                replies++;
                last_progress = t;
                memset(&k->tally, 0, sizeof k->tally);
                k->oldest = (k->oldest + 1) % nslots;
                k->inflight--;
            }
            /* Replies free slots: keep the pipeline full. */
            pump_writes(k, i, nslots, depth, issuing, gen, ctx);
        }
    }
    double t_end = drv_now();
    double ccpu = drv_thread_cpu() - ccpu0;
    double cpu = drv_server_cpu(ctl) - cpu0;

    out->replies = replies;
    out->wall_s = t_end - t0;
    out->units_per_s = (replies > 1 && t_last > t_first) ? (double)units / (t_last - t_first) : 0.0;
    out->server_cpu_frac = cpu / out->wall_s;
    out->client_cpu_frac = ccpu / out->wall_s;
    out->server_us_per_req = replies ? cpu * 1e6 / (double)replies : 0;
    out->cmd_us_per_req = 0;
    if (load->stat_cmd) {
        long long calls = 0;
        double usec = drv_command_usec(ctl, load->stat_cmd, &calls);
        out->cmd_us_per_req = calls ? usec / (double)calls : 0;
    }

    for (int i = 0; i < n; i++) {
        close(ks[i].fd);
        redisReaderFree(ks[i].rd);
        for (int j = 0; j < nslots; j++)
            free(ks[i].slots[j].scratch);
        free(ks[i].slots);
    }
    free(ks);
    free(pf);
    free(rbuf);
}
