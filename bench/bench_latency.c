/*
 * bench_latency.c — how long one command holds the server, for the largest
 * commands each kind of SEEN write and query accepts, next to the same work
 * done with SETs where Redis has it.  Redis runs one command at a time, so
 * this time is what every other client of the shard waits.  Times are from
 * INFO commandstats (inside the command, not the network), one call each,
 * measured on a private redis-server with the module.
 *
 *   bench_latency [--out DIR] [--quick]
 *
 * Writes DIR/latency.md (default bench/results) and prints it.
 */
#include "driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *items_bulk(long n, const char *prefix, long start, size_t *len)
{
    size_t cap = (size_t)n * 24 + 16, at = 0;
    char *buf = malloc(cap);
    for (long i = 0; i < n; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%ld\n", prefix, start + i);
    *len = at;
    return buf;
}

/* "sadd" (or "srem") key item... for n items from <prefix><start> on, in
 * one command (what a SET user sends); the server's time for it.  The name
 * is given as INFO commandstats spells it (commands are case-insensitive). */
static double set_usec(redisContext *c, const char *cmd, const char *key, long n,
                       const char *prefix, long start)
{
    const char **argv = malloc(sizeof *argv * (size_t)(n + 2));
    size_t *lens = malloc(sizeof *lens * (size_t)(n + 2));
    char *store = malloc((size_t)n * 24);
    argv[0] = cmd, lens[0] = strlen(cmd);
    argv[1] = key, lens[1] = strlen(key);
    for (long i = 0; i < n; i++) {
        char *p = store + (size_t)i * 24;
        lens[i + 2] = (size_t)snprintf(p, 24, "%s%ld", prefix, start + i);
        argv[i + 2] = p;
    }
    freeReplyObject(drv_cmd(c, "CONFIG RESETSTAT"));
    freeReplyObject(drv_cmd_argv(c, (int)n + 2, argv, lens));
    long long calls;
    double us = drv_command_usec(c, cmd, &calls);
    free(argv);
    free(lens);
    free(store);
    return us;
}

static double seen_insert_usec(redisContext *c, const char *key, long n, const char *prefix)
{
    size_t len;
    char *bulk = items_bulk(n, prefix, 0, &len);
    const char *argv[4] = {"SEEN.INSERT", key, "BULK", bulk};
    size_t lens[4] = {11, strlen(key), 4, len};
    freeReplyObject(drv_cmd(c, "CONFIG RESETSTAT"));
    freeReplyObject(drv_cmd_argv(c, 4, argv, lens));
    long long calls;
    double us = drv_command_usec(c, "seen.insert", &calls);
    free(bulk);
    return us;
}

/* The server's clock, in ms (what SEEN writes are timed by). */
static long long server_ms(redisContext *c)
{
    redisReply *t = drv_cmd(c, "TIME");
    if (t->type != REDIS_REPLY_ARRAY || t->elements != 2)
        drv_die("TIME: unexpected reply\n");
    long long ms = atoll(t->element[0]->str) * 1000 + atoll(t->element[1]->str) / 1000;
    freeReplyObject(t);
    return ms;
}

typedef struct row {
    char what[160];
    double seen_us, set_us; /* set_us < 0: no SET equivalent */
    double target_us;       /* < 0: none */
} row;

int main(int argc, char **argv)
{
    const char *out = "bench/results";
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else
            drv_die("usage: bench_latency [--out DIR] [--quick]\n");
    }
    /* The server runs in a directory of its own: give it an absolute path. */
    char *module = realpath(getenv("SEEN_MODULE") ? getenv("SEEN_MODULE") : "build/seen.so", NULL);
    if (module == NULL)
        drv_die("build/seen.so not found: run make first\n");
    const char *server = getenv("REDIS_SERVER") ? getenv("REDIS_SERVER") : "redis-server";
    const char *modules[1] = {module};
    drv_server srv;
    drv_server_start(&srv, server, modules, 1, 900);
    redisContext *c = drv_connect(&srv);
    freeReplyObject(drv_cmd(c, "CONFIG SET seen.max-batch 1048576"));
    long big = quick ? 20000 : 200000, huge = quick ? 100000 : 1000000;
    row rows[32];
    int nrows = 0;

    /* A batch far larger than a cap, under each family of capped policy. */
    static const char *caps[][4] = {{"1", "1", "0", ""},        {"10", "64", "0", ""},
                                    {"100", "4", "0", ""},      {"1000", "16", "30d", ""},
                                    {"1000000", "64", "0", ""}, {"1000", "64", "90d", ""}};
    double sadd_big = set_usec(c, "sadd", "set:big", big, "i", 0);
    for (size_t k = 0; k < sizeof caps / sizeof caps[0]; k++) {
        char key[64];
        snprintf(key, sizeof key, "cap:%zu", k);
        freeReplyObject(drv_cmd(c, "SEEN.RESERVE %s CAPACITY %s SLICES %s WINDOW %s", key,
                                caps[k][0], caps[k][1], caps[k][2]));
        row *r = &rows[nrows++];
        snprintf(r->what, sizeof r->what,
                 "`SEEN.INSERT BULK` of %ld items, `CAPACITY %s SLICES %s WINDOW %s`", big,
                 caps[k][0], caps[k][1], caps[k][2]);
        r->seen_us = seen_insert_usec(c, key, big, "i");
        r->set_us = sadd_big;
        r->target_us = 500000;
    }

    /* One item out of a large key. */
    double seen_fill = seen_insert_usec(c, "big", huge, "v");
    double set_fill = set_usec(c, "sadd", "set:huge", huge, "v", 0);
    row *r = &rows[nrows++];
    snprintf(r->what, sizeof r->what, "`SEEN.INSERT BULK` of %ld items into a new key", huge);
    r->seen_us = seen_fill, r->set_us = set_fill, r->target_us = 1000000;
    double del_max = 0, srem_max = 0;
    for (int i = 0; i < 5; i++) {
        freeReplyObject(drv_cmd(c, "CONFIG RESETSTAT"));
        freeReplyObject(drv_cmd(c, "SEEN.DEL big v%d", i * 7919));
        long long calls;
        double us = drv_command_usec(c, "seen.del", &calls);
        del_max = us > del_max ? us : del_max;
        freeReplyObject(drv_cmd(c, "CONFIG RESETSTAT"));
        freeReplyObject(drv_cmd(c, "SREM set:huge v%d", i * 7919));
        us = drv_command_usec(c, "srem", &calls);
        srem_max = us > srem_max ? us : srem_max;
    }
    r = &rows[nrows++];
    snprintf(r->what, sizeof r->what, "`SEEN.DEL` of one item from a %ld-item key (slowest of 5)",
             huge);
    r->seen_us = del_max, r->set_us = srem_max, r->target_us = 5000;

    /* The same from a key whose history spans 80 days in 4 slices (its main
     * run tags every value with its slice), many deletes: the slowest. */
    freeReplyObject(drv_cmd(c, "SEEN.RESERVE aged WINDOW 90d SLICES 4"));
    long long now_ms = server_ms(c);
    for (long part = 0; part < 10; part++) {
        size_t len;
        char *bulk = items_bulk(huge / 10, "a", part * (huge / 10), &len);
        char at[32];
        snprintf(at, sizeof at, "%lld", now_ms - (80 - part * 8) * 86400000LL);
        const char *av[6] = {"SEEN.INSERT", "aged", "AT", at, "BULK", bulk};
        size_t lv[6] = {11, 4, 2, strlen(at), 4, len};
        freeReplyObject(drv_cmd_argv(c, 6, av, lv));
        free(bulk);
    }
    freeReplyObject(drv_cmd(c, "SEEN.COMPACT aged"));
    int ndel = quick ? 30 : 300;
    del_max = 0;
    for (int i = 0; i < ndel; i++) {
        freeReplyObject(drv_cmd(c, "CONFIG RESETSTAT"));
        freeReplyObject(drv_cmd(c, "SEEN.DEL aged a%ld", (i * 7919L) % huge));
        long long calls;
        double us = drv_command_usec(c, "seen.del", &calls);
        del_max = us > del_max ? us : del_max;
    }
    r = &rows[nrows++];
    snprintf(r->what, sizeof r->what,
             "`SEEN.DEL` of one item from a %ld-item key holding 80 days in 4 slices (slowest of "
             "%d)",
             huge, ndel);
    r->seen_us = del_max, r->set_us = srem_max, r->target_us = 5000;

    /* A thousand items of one slice out of that key in one call: each
     * slice that loses values must keep one, which is checked in one pass
     * over the tags (per deleted value, it took up to 60 ms on 100,000
     * items). */
    double batch_max = 0, srem_batch_max = 0;
    for (int i = 0; i < 5; i++) {
        size_t len;
        long from = (long)i * (huge / 10) + 1;
        char *bulk = items_bulk(1000, "a", from, &len);
        const char *av[4] = {"SEEN.REMOVE", "aged", "BULK", bulk};
        size_t lv[4] = {11, 4, 4, len};
        freeReplyObject(drv_cmd(c, "CONFIG RESETSTAT"));
        freeReplyObject(drv_cmd_argv(c, 4, av, lv));
        free(bulk);
        long long calls;
        double us = drv_command_usec(c, "seen.remove", &calls);
        batch_max = us > batch_max ? us : batch_max;
        us = set_usec(c, "srem", "set:huge", 1000, "v", from);
        srem_batch_max = us > srem_batch_max ? us : srem_batch_max;
    }
    r = &rows[nrows++];
    snprintf(r->what, sizeof r->what,
             "`SEEN.REMOVE` of 1,000 items of one slice from the same key (slowest of 5)");
    r->seen_us = batch_max, r->set_us = srem_batch_max, r->target_us = 5000;

    /* The largest MFILTER a request may make: the key limit x 10,000. */
    size_t clen;
    char *cands = items_bulk(10000, "v", huge - 5000, &clen);
    {
        const char *av[80];
        size_t lv[80];
        int n = 0;
        char nk[8];
        snprintf(nk, sizeof nk, "%d", 64);
        av[n] = "SEEN.MFILTER", lv[n++] = 12;
        av[n] = nk, lv[n++] = strlen(nk);
        for (int k = 0; k < 64; k++)
            av[n] = "big", lv[n++] = 3;
        av[n] = "REPLY", lv[n++] = 5;
        av[n] = "FLAGS", lv[n++] = 5;
        av[n] = "BULK", lv[n++] = 4;
        av[n] = cands, lv[n++] = clen;
        freeReplyObject(drv_cmd(c, "CONFIG RESETSTAT"));
        freeReplyObject(drv_cmd_argv(c, n, av, lv));
        long long calls;
        r = &rows[nrows++];
        snprintf(r->what, sizeof r->what,
                 "`SEEN.MFILTER` 64 keys (one %ld-item key repeated) x 10,000 candidates", huge);
        r->seen_us = drv_command_usec(c, "seen.mfilter", &calls);
        r->set_us = -1, r->target_us = -1;
    }
    free(cands);

    /* Point lookups in an EXACT INT key of clustered ids. */
    freeReplyObject(drv_cmd(c, "SEEN.RESERVE clustered EXACT IDS INT WINDOW 0"));
    {
        /* ...and one far outlier in the same run, so value-range buckets
         * put nearly every id in one bucket. */
        size_t len;
        char *bulk = items_bulk(huge, "", 5000000, &len);
        bulk = realloc(bulk, len + 32);
        len += (size_t)snprintf(bulk + len, 32, "1152921504606846976\n");
        const char *av[4] = {"SEEN.INSERT", "clustered", "BULK", bulk};
        size_t lv[4] = {11, 9, 4, len};
        freeReplyObject(drv_cmd_argv(c, 4, av, lv));
        free(bulk);
        freeReplyObject(drv_cmd(c, "CONFIG RESETSTAT"));
        freeReplyObject(drv_cmd(c, "SEEN.FILTER clustered 5000001 5400000 5900000 7"));
        long long calls;
        r = &rows[nrows++];
        snprintf(r->what, sizeof r->what,
                 "`SEEN.FILTER` of 4 items on an `EXACT IDS INT` key of %ld clustered ids and one "
                 "outlier",
                 huge);
        r->seen_us = drv_command_usec(c, "seen.filter", &calls);
        r->set_us = -1, r->target_us = 1000;
        /* Its smallest ids deleted one at a time (the run's first value). */
        del_max = 0;
        for (int i = 0; i < 5; i++) {
            freeReplyObject(drv_cmd(c, "CONFIG RESETSTAT"));
            freeReplyObject(drv_cmd(c, "SEEN.DEL clustered %d", 5000000 + i));
            double us = drv_command_usec(c, "seen.del", &calls);
            del_max = us > del_max ? us : del_max;
        }
        r = &rows[nrows++];
        snprintf(r->what, sizeof r->what,
                 "`SEEN.DEL` of the smallest id of the same key (slowest of 5)");
        r->seen_us = del_max, r->set_us = -1, r->target_us = 5000;
    }
    redisFree(c);
    drv_server_stop();

    char path[512];
    snprintf(path, sizeof path, "%s/latency.md", out);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        drv_die("cannot write %s\n", path);
    FILE *outs[2] = {f, stdout};
    for (int o = 0; o < 2; o++) {
        FILE *w = outs[o];
        fprintf(w, "# How long one command holds the server\n\n");
        fprintf(w,
                "`bench_latency%s`: time inside the command (INFO commandstats), one call; "
                "items are 7-10 byte strings.\n\n",
                quick ? " --quick" : "");
        fprintf(w, "| command | seen ms | SET equivalent ms | seen / SET | target ms | met |\n");
        fprintf(w, "| --- | ---: | ---: | ---: | ---: | --- |\n");
        for (int i = 0; i < nrows; i++) {
            const row *x = &rows[i];
            fprintf(w, "| %s | %.2f | ", x->what, x->seen_us / 1000);
            if (x->set_us >= 0)
                fprintf(w, "%.2f | %.2f | ", x->set_us / 1000, x->seen_us / x->set_us);
            else
                fprintf(w, "— | — | ");
            if (x->target_us >= 0)
                fprintf(w, "%.0f | %s |\n", x->target_us / 1000,
                        x->seen_us <= x->target_us ? "yes" : "**no**");
            else
                fprintf(w, "— | — |\n");
        }
    }
    fclose(f);
    free(module);
    return 0;
}
