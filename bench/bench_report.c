/*
 * bench_report.c — the Redis benchmark's report (bench_redis.c measures):
 * the machine it ran on, and bench/results/latest.md with its tables,
 * ratios and the gnuplot data files, from the results bench_redis.h holds.
 */
#include "bench_redis.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* ================================================================ report */

static void read_first_line(const char *path, const char *prefix, char *out, size_t cap)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (prefix == NULL || strncmp(line, prefix, strlen(prefix)) == 0) {
            char *p = prefix ? strchr(line, ':') : line;
            p = p ? p + (prefix ? 1 : 0) : line;
            while (*p == ' ' || *p == '\t')
                p++;
            size_t n = strcspn(p, "\n");
            n = n < cap - 1 ? n : cap - 1;
            memcpy(out, p, n);
            out[n] = '\0';
            break;
        }
    }
    fclose(f);
}

void machine_info(machine *mi, redisContext *c)
{
    read_first_line("/proc/cpuinfo", "model name", mi->cpu, sizeof mi->cpu);
    mi->cores = sysconf(_SC_NPROCESSORS_ONLN);
    char mem[64];
    read_first_line("/proc/meminfo", "MemTotal", mem, sizeof mem);
    mi->mem_mb = atoll(mem) / 1024;
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(mi->kernel, sizeof mi->kernel, "%.20s %.100s", u.sysname, u.release);
    redisReply *r = drv_cmd(c, "INFO SERVER");
    const char *v = strstr(r->str, "redis_version:");
    snprintf(mi->redis, sizeof mi->redis, "%.*s", v ? (int)strcspn(v + 14, "\r\n") : 1,
             v ? v + 14 : "?");
    freeReplyObject(r);
    time_t now = time(NULL);
    strftime(mi->date, sizeof mi->date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    /* Which seen: the checkout's revision, marked when it has changes. */
    snprintf(mi->rev, sizeof mi->rev, "unknown revision");
    /* bench/results is what this run rewrites: it does not make the code dirty. */
    FILE *g = popen("r=$(git describe --always 2>/dev/null) && { [ -z \"$(git status --porcelain "
                    "-uno -- . ':(exclude)bench/results' 2>/dev/null)\" ] || r=\"$r-dirty\"; } && "
                    "echo \"$r\"",
                    "r");
    if (g != NULL) {
        char line[64];
        if (fgets(line, sizeof line, g) && line[0] != '\0') {
            line[strcspn(line, "\n")] = '\0';
            snprintf(mi->rev, sizeof mi->rev, "%s", line);
        }
        pclose(g);
    }
    /* RedisBloom reports its version as an integer: 20215 is 2.2.15. */
    mi->bloom_ver[0] = '\0';
    r = drv_cmd(c, "MODULE LIST");
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *name = map_get(r->element[i], "name"),
                         *ver = map_get(r->element[i], "ver");
        if (name && name->str && strcmp(name->str, "bf") == 0 && ver &&
            ver->type == REDIS_REPLY_INTEGER)
            snprintf(mi->bloom_ver, sizeof mi->bloom_ver, "%lld.%lld.%lld", ver->integer / 10000,
                     ver->integer / 100 % 100, ver->integer % 100);
    }
    freeReplyObject(r);
}

/* The 1, 5 and 15-minute load averages: how busy the shared machine was. */
void load_average(char *out, size_t cap)
{
    read_first_line("/proc/loadavg", NULL, out, cap);
    char *p = out;
    for (int spaces = 0; *p && spaces < 3; p++)
        spaces += *p == ' ';
    if (p > out && p[-1] == ' ')
        p[-1] = '\0';
}

/* "1,234,567" */
const char *commas(long long v, char *buf)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%lld", v < 0 ? -v : v), o = 0;
    if (v < 0)
        buf[o++] = '-';
    for (int i = 0; i < n; i++) {
        buf[o++] = tmp[i];
        if ((n - i - 1) % 3 == 0 && i < n - 1)
            buf[o++] = ',';
    }
    buf[o] = '\0';
    return buf;
}

static const char *human_rate(double v, char *buf)
{
    if (!(v > 0))
        snprintf(buf, 24, "–");
    else if (v >= 1e6)
        snprintf(buf, 24, "%.2fM", v / 1e6);
    else
        snprintf(buf, 24, "%.0fk", v / 1e3);
    return buf;
}

static double rate_median(const cell_result *cr)
{
    return median(cr->thr, C.rounds);
}

static void fmt_ms(double s, char *buf)
{
    if (!(s >= 0))
        snprintf(buf, 24, "–");
    else if (s < 0.01)
        snprintf(buf, 24, "%.2f", s * 1e3);
    else
        snprintf(buf, 24, "%.1f", s * 1e3);
}

int hist_index(long n)
{
    for (int i = 0; i < C.nhist; i++)
        if (C.hist[i] == n)
            return i;
    return C.nhist - 1;
}

int batch_index(int n)
{
    for (int i = 0; i < C.nbatch; i++)
        if (C.batch[i] == n)
            return i;
    return C.nbatch - 1;
}

/* A file of the output directory, opened for writing, or death. */
static FILE *open_out(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", C.out_dir, name);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        drv_die("cannot write %s: %s", path, strerror(errno));
    return f;
}

/* The index of history size n and batch size b among those measured, or
 * -1 if this run did not measure that pair (--quick). */
static int exact_cell(long n, int b, int *bi)
{
    int h = -1;
    *bi = -1;
    for (int i = 0; i < C.nhist; i++)
        if (C.hist[i] == n)
            h = i;
    for (int i = 0; i < C.nbatch; i++)
        if (C.batch[i] == b)
            *bi = i;
    return *bi < 0 ? -1 : h;
}

/* One row of the query and write targets: a ratio against its goal. */
static void ratio_target(FILE *f, const char *what, int ran, double got, double goal)
{
    if (!ran)
        fprintf(f, "| %s | not measured in this run | ≥ %.1f× | — |\n", what, goal);
    else
        fprintf(f, "| %s | %.2f× | ≥ %.1f× | %s |\n", what, got, goal,
                got >= goal ? "yes" : "**no**");
}

/* The batch query and write targets, per server CPU-second against what a
 * SET user runs, measured in the same rounds. */
static void write_speed_targets(FILE *f)
{
    char what[200];
    fprintf(f, "### Query and write speed\n\n");
    fprintf(f, "Queries: candidates per server CPU-second against SMISMEMBER in the same rounds. "
               "Adds: items per second against SADD, the server busy throughout.  Medians over "
               "the rounds.\n\n");
    fprintf(f, "| target | measured | goal | met |\n| --- | --- | --- | --- |\n");
    static const struct {
        long hist;
        int batch;
        double goal;
    } bulk[] = {{10000, 10000, 5}, {100000, 10000, 5}, {100000, 2000, 3}};
    for (size_t i = 0; i < sizeof bulk / sizeof *bulk; i++) {
        int b, h = exact_cell(bulk[i].hist, bulk[i].batch, &b);
        const cell_result *c = h >= 0 ? &RES[h][b][M_BULK_FLAGS] : NULL;
        snprintf(what, sizeof what,
                 "`SEEN.MFILTER … REPLY FLAGS BULK`, %d candidates on a %ld-item history",
                 bulk[i].batch, bulk[i].hist);
        ratio_target(f, what, c && c->ran, c ? median(c->cpu_ratio, C.rounds) : 0, bulk[i].goal);
    }
    /* Every form taking the items as arguments, at every size: the worst. */
    double worst = 0;
    int worst_m = -1, worst_h = 0, worst_b = 0;
    for (int h = 0; h < C.nhist; h++)
        for (int b = 0; b < C.nbatch; b++)
            for (int m = 0; m < NMETHODS; m++) {
                const method *me = &METHODS[m];
                if (me->kind != K_SEEN || me->missing ||
                    (me->input != IN_FILTER && me->input != IN_ITEMS) || !RES[h][b][m].ran)
                    continue;
                double r = median(RES[h][b][m].cpu_ratio, C.rounds);
                if (worst_m < 0 || r < worst) {
                    worst = r;
                    worst_m = m;
                    worst_h = h;
                    worst_b = b;
                }
            }
    if (worst_m >= 0)
        snprintf(what, sizeof what,
                 "every form taking items as arguments, at every size: the worst (%s, %d "
                 "candidates on %ld items)",
                 METHODS[worst_m].label, C.batch[worst_b], C.hist[worst_h]);
    else
        snprintf(what, sizeof what, "every form taking items as arguments, at every size");
    ratio_target(f, what, worst_m >= 0, worst, 1.2);
    /* The unseen items in one string, against the flags. */
    int b, h = exact_cell(10000, 10000, &b);
    const cell_result *lines = h >= 0 ? &RES[h][b][M_BULK_BULK] : NULL,
                      *flags = h >= 0 ? &RES[h][b][M_BULK_FLAGS] : NULL;
    ratio_target(f,
                 "`REPLY BULK` (the unseen items in one string) / `REPLY FLAGS`, 10000 "
                 "candidates on a 10000-item history",
                 lines && lines->ran && flags->ran,
                 lines ? median(lines->cpu_rate, C.rounds) / median(flags->cpu_rate, C.rounds) : 0,
                 1.0);
    ratio_target(f, "`SEEN.ADD` of 20-item pages / `SADD`, items per second", ADDS[A_SEEN].ran,
                 median(ADDS[A_SEEN].ratio, C.add_rounds), 1.0);
    /* The same per history size (in the command): the worst size. */
    int worst_add = -1;
    for (int hh = 0; hh < C.nhist; hh++)
        if (ADDS_PER_HIST[hh].ran &&
            (worst_add < 0 || median(ADDS_PER_HIST[hh].cmd[0].ratio, C.add_rounds) <
                                  median(ADDS_PER_HIST[worst_add].cmd[0].ratio, C.add_rounds)))
            worst_add = hh;
    snprintf(what, sizeof what,
             "the same per history size, in the command: the worst (%ld items; table under "
             "\"Adds\")",
             worst_add >= 0 ? C.hist[worst_add] : 0L);
    ratio_target(f, what, worst_add >= 0,
                 worst_add >= 0 ? median(ADDS_PER_HIST[worst_add].cmd[0].ratio, C.add_rounds) : 0,
                 1.0);
    fprintf(f, "\n");
    /* What the worst item-argument form could reach if looking up cost
     * nothing: Redis parses every argument and replies every string. */
    const cell_result *floor = worst_m >= 0 ? &RES[worst_h][worst_b][M_FLOOR] : NULL;
    const cell_result *smis = worst_m >= 0 ? &RES[worst_h][worst_b][M_SMISMEMBER] : NULL;
    if (floor && floor->ran && smis->ran) {
        double s_us = minimum(smis->srv_us, C.rounds), f_us = minimum(floor->srv_us, C.rounds);
        double w_us = minimum(RES[worst_h][worst_b][worst_m].srv_us, C.rounds);
        double room = s_us / 1.2 - f_us;
        fprintf(f,
                "With nothing looked up (`SEEN.FILTER` on a missing key: every one of the %d "
                "candidates replied, where the forms reply the ~90%% unseen), the same size "
                "reaches %.2f×: server CPU per request, the least over the rounds, %.0f µs "
                "against `SMISMEMBER`'s %.0f and the worst form's %.0f.  Redis's parsing of the "
                "arguments and its replies leave ",
                C.batch[worst_b], median(floor->cpu_ratio, C.rounds), f_us, s_us, w_us);
        if (room > 0)
            fprintf(f, "the lookups %.0f µs (%.1f ns a candidate) for 1.2×.", room,
                    room * 1e3 / C.batch[worst_b]);
        else
            fprintf(f, "nothing for the lookups at 1.2× (%.0f µs over).", -room);
        /* The floor's own lowest ratio over the sizes: where even that is
         * under 1.2x, no lookup makes a form replying items reach it. */
        double low = 0;
        int low_h = -1, low_b = 0;
        for (int hi = 0; hi < C.nhist; hi++)
            for (int bi = 0; bi < C.nbatch; bi++) {
                const cell_result *c = &RES[hi][bi][M_FLOOR];
                double r = c->ran ? median(c->cpu_ratio, C.rounds) : 0;
                if (c->ran && (low_h < 0 || r < low))
                    low = r, low_h = hi, low_b = bi;
            }
        if (low_h >= 0)
            fprintf(f,
                    "  Over every size the floor is at its lowest at %d candidates on %ld items: "
                    "%.2f×.",
                    C.batch[low_b], C.hist[low_h], low);
        fprintf(f, "\n\n");
    }
    /* What REPLY BULK pays over FLAGS, against what its bytes alone cost:
     * Redis copies a module's reply into its own buffers and writes it to
     * the socket, whoever made it. */
    if (TRANSPORT.ran && lines && lines->ran && flags->ran) {
        char b1[32], b2[32];
        double extra = minimum(lines->srv_us, C.rounds) - minimum(flags->srv_us, C.rounds);
        double bytes = minimum(TRANSPORT.bulk_us, C.rounds) - minimum(TRANSPORT.flags_us, C.rounds);
        fprintf(f,
                "`REPLY BULK` returns %s bytes where `REPLY FLAGS` returns %s.  Server CPU per "
                "request, the least over the rounds: `REPLY BULK` %.0f µs, `REPLY FLAGS` %.0f µs "
                "(+%.0f µs); in the same rounds a `GET` of a string as long as each reply costs "
                "%.1f and %.1f µs (+%.0f µs).  The bytes alone account for %.0f%% of what `REPLY "
                "BULK` costs over `REPLY FLAGS`.\n\n",
                commas(TRANSPORT.bulk_len, b1), commas(TRANSPORT.flags_len, b2),
                minimum(lines->srv_us, C.rounds), minimum(flags->srv_us, C.rounds), extra,
                minimum(TRANSPORT.bulk_us, C.rounds), minimum(TRANSPORT.flags_us, C.rounds), bytes,
                extra > 0 ? 100.0 * bytes / extra : 100.0);
    }
}

void write_report(const machine *mi, const hist_mem *hm, const pop_mem *pm, const long long *apps,
                  const fpr_row *fr, const cross *x, double elapsed)
{
    char b1[32], b2[32], b3[32];
    FILE *f = open_out("latest.md");

    int h10 = hist_index(10000), b10 = batch_index(10000);
    const hist_mem *m10 = &hm[h10];
    double set_pi = (double)m10->usage[K_SET] / (double)m10->n;
    double seen_pi = (double)m10->usage[K_SEEN] / (double)m10->n;
    double mem_ratio = set_pi / seen_pi;
    const cell_result *smis = &RES[h10][b10][M_SMISMEMBER];
    double thr_ratio = median(RES[h10][b10][M_BULK_FLAGS].ratio, C.rounds);
    double cpu_ratio = median(RES[h10][b10][M_BULK_FLAGS].cpu_ratio, C.rounds);
    int best_m = M_FILTER;
    for (int mi2 = 0; mi2 <= M_BULK_BULK; mi2++)
        if (median(RES[h10][b10][mi2].cpu_ratio, C.rounds) >
            median(RES[h10][b10][best_m].cpu_ratio, C.rounds))
            best_m = mi2;

    fprintf(f, "# seen against Redis SET, ZSET and Bloom filters\n\n");
    fprintf(f, "Generated by `bench/bench_redis` (`%s`) on %s; the run took %.0f s.\n\n", C.command,
            mi->date, elapsed);
    fprintf(f,
            "- Machine: %s, %ld cores, %lld MB RAM, %s; load average %s before the run, %s after "
            "(a shared machine: compare ratios, which are measured moments apart, not absolute "
            "rates).\n",
            mi->cpu, mi->cores, mi->mem_mb, mi->kernel, mi->load_before, mi->load_after);
    fprintf(
        f,
        "- Redis %s (one redis-server started by the benchmark: no persistence, io-threads 1) with "
        "`build/seen.so` (seen %s)%s%s%s%s%s.\n",
        mi->redis, mi->rev,
        C.bloom ? " and RedisBloom "
                : "; RedisBloom not loaded (set REDISBLOOM_MODULE): "
                  "the BF columns are skipped",
        C.bloom ? mi->bloom_ver : "", C.bloom ? " (`" : "", C.bloom ? C.bloom : "",
        C.bloom ? "`)" : "");
    fprintf(
        f,
        "- Items: 24-character hex ids.  seen keys: `WINDOW 90d SLICES 4 ERROR 0.001`.  Figures "
        "are "
        "medians of %d rounds; each round measures every method of a workload back to back.\n\n",
        C.rounds);

    fprintf(f, "## Targets\n\n");
    fprintf(f, "| target | measured | goal | met |\n| --- | --- | --- | --- |\n");
    fprintf(f,
            "| memory per item, %s-item history: SET / seen | %.1f× (%.1f vs %.2f bytes) | ≥ 40× | "
            "%s |\n",
            commas(m10->n, b1), mem_ratio, set_pi, seen_pi, mem_ratio >= 40 ? "yes" : "**no**");
    fprintf(f,
            "| candidates per second of server CPU, %d-candidate batches on a %s-item history: "
            "`SEEN.MFILTER … REPLY FLAGS BULK` / SMISMEMBER | %.2f× (%s vs %s) | ≥ 2× | %s |\n",
            C.batch[b10], commas(m10->n, b2), cpu_ratio,
            human_rate(median(RES[h10][b10][M_BULK_FLAGS].cpu_rate, C.rounds), b3),
            human_rate(median(smis->cpu_rate, C.rounds), b1), cpu_ratio >= 2 ? "yes" : "**no**");
    fprintf(f,
            "| the same in wall-clock candidates/s (%d pipelined connections; noisy on a shared "
            "machine) | "
            "%.2f× (%s vs %s) | ≥ 2× | %s |\n",
            C.conns, thr_ratio, human_rate(rate_median(&RES[h10][b10][M_BULK_FLAGS]), b3),
            human_rate(rate_median(smis), b1), thr_ratio >= 2 ? "yes" : "**no**");
    fprintf(f, "| best seen form per server CPU-second (%s) | %.2f× | ≥ 2× | %s |\n\n",
            METHODS[best_m].label, median(RES[h10][b10][best_m].cpu_ratio, C.rounds),
            median(RES[h10][b10][best_m].cpu_ratio, C.rounds) >= 2 ? "yes" : "**no**");
    write_speed_targets(f);
    if (mem_ratio < 40 || cpu_ratio < 2 || thr_ratio < 2)
        fprintf(f,
                "Why a target is missed: see [where seen's bytes go](#where-a-seen-keys-bytes-go) "
                "and [where the "
                "server's time goes](#where-the-servers-time-goes-%d-candidate-batches).\n\n",
                C.batch[b10]);

    /* ---- memory per item */
    fprintf(f, "## Memory per item (MEMORY USAGE key SAMPLES 0 / items)\n\n");
    fprintf(
        f,
        "Each history arrives in time order in %d batches spread over the 90-day window (one per "
        "item "
        "below %d items), oldest first.  **seen**: each batch written at its own time "
        "(`SEEN.INSERT key NOW t BULK …`, what a key receives in production); **seen (AT "
        "import)**: "
        "the same batches written now with `AT t` (a bulk import of an old history), then "
        "`SEEN.COMPACT key` (what the server does a second after an import's last write).  ZSET "
        "scores "
        "are "
        "the batch times.  BF: `BF.RESERVE key 0.001 n` (sized for the history: its best case) and "
        "`BF.RESERVE key 0.001 100` growing by scaling.  Floor: log2(1/0.001) = 9.97 bits = 1.25 "
        "bytes.  **seen, idle**: the live key once idle, when it rests as its serialized bytes "
        "(the sweep packs a key no command has reached for `seen.pack-idle-seconds`; measured "
        "with 0): what a user between sessions holds.\n\n",
        LOAD_BATCHES, LOAD_BATCHES);
    fprintf(f, "| items |");
    for (int k = 0; k < NKINDS; k++)
        if (kind_enabled(k))
            fprintf(f, " %s |", kind_label[k]);
    fprintf(f, " seen, idle | SET / seen | SET / seen, idle | ZSET / seen |%s\n| ---: |",
            C.bloom ? " BF (n) / seen |" : "");
    for (int k = 0; k < NKINDS; k++)
        if (kind_enabled(k))
            fprintf(f, " ---: |");
    fprintf(f, " ---: | ---: | ---: | ---: |%s\n", C.bloom ? " ---: |" : "");
    for (int h = 0; h < C.nhist; h++) {
        const hist_mem *m = &hm[h];
        fprintf(f, "| %s |", commas(m->n, b1));
        for (int k = 0; k < NKINDS; k++)
            if (kind_enabled(k))
                fprintf(f, " %.2f |", (double)m->usage[k] / (double)m->n);
        fprintf(f, " %.2f | %.1f× | %.1f× | %.1f× |", (double)m->seen_idle / (double)m->n,
                (double)m->usage[K_SET] / (double)m->usage[K_SEEN],
                (double)m->usage[K_SET] / (double)m->seen_idle,
                (double)m->usage[K_ZSET] / (double)m->usage[K_SEEN]);
        if (C.bloom)
            fprintf(f, " %.2f× |", (double)m->usage[K_BF] / (double)m->usage[K_SEEN]);
        fprintf(f, "\n");
    }

    fprintf(f, "\n### Where a seen key's bytes go\n\n");
    fprintf(f, "From `SEEN.INFO` (runs: `bytes` requested for the encoded runs, `held-bytes` as "
               "jemalloc sizes their blocks; the key's `bytes`: every allocation of the value as "
               "jemalloc sizes it) and MEMORY USAGE.  Rounding = what jemalloc's size classes "
               "(4 per doubling: up to +25%%) add to the runs; a run that would lose much to them "
               "is held in two blocks.\n\n");
    fprintf(f, "The middle part is fixed: in the in-process twin (plain malloc, requested sizes) "
               "the set's "
               "allocations other than its runs come to");
    for (int h = 0; h < C.nhist; h++)
        fprintf(f, "%s %lld", h ? "," : "", ref_fixed_bytes(REF[h]));
    fprintf(f, " bytes at these sizes; the Redis key column is MEMORY USAGE's own share (key name, "
               "entry).\n\n");
    fprintf(f, "| items | encoding | runs | encoded runs | + jemalloc rounding | + set header, "
               "slices, buffer | "
               "+ Redis key | = MEMORY USAGE | bytes/item | SET / seen | … if runs alone | … "
               "without rounding |\n");
    fprintf(
        f,
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (int h = 0; h < C.nhist; h++) {
        const seen_mem *s = &hm[h].seen;
        long long rounding = s->run_classes - s->run_bytes;
        long long rest = s->value - s->run_classes;
        double set_bytes = (double)hm[h].usage[K_SET];
        fprintf(f,
                "| %s | %s | %lld | %lld (%.1f bits/item) | %lld | %lld | %lld | %lld | %.2f | "
                "%.1f× | %.1f× | "
                "%.1f× |\n",
                commas(hm[h].n, b1), s->encoding, s->runs, s->run_bytes,
                8.0 * (double)s->run_bytes / (double)s->items, rounding, rest, s->usage - s->value,
                s->usage, (double)s->usage / (double)hm[h].n, set_bytes / (double)s->usage,
                set_bytes / (double)s->run_bytes, set_bytes / (double)(s->usage - rounding));
    }

    fprintf(f, "\nRun sizes, requested → held by jemalloc:");
    for (int h = 0; h < C.nhist; h++)
        fprintf(f, "%s %s items: %s", h ? ";" : "", commas(hm[h].n, b1), hm[h].seen.sizes);
    fprintf(f, ".\n");
    /* The AT import is compared with the live key; the explanation is given
     * only where the two differ by more than a tenth. */
    int at_worse = 0;
    for (int h = 0; h < C.nhist; h++) {
        const seen_mem *a = &hm[h].seen_at, *l = &hm[h].seen;
        at_worse |= a->usage * 10 > l->usage * 11;
    }
    fprintf(f, "\nThe AT-import keys (the same batches written now with `AT t`) against the live "
               "keys: ");
    for (int h = 0; h < C.nhist; h++) {
        const seen_mem *a = &hm[h].seen_at;
        fprintf(f, "%s%s items: %lld runs, %.1f bits/item encoded (live: %lld runs, %.1f)",
                h ? "; " : "", commas(hm[h].n, b1), a->runs,
                8.0 * (double)a->run_bytes / (double)(a->items ? a->items : 1), hm[h].seen.runs,
                8.0 * (double)hm[h].seen.run_bytes /
                    (double)(hm[h].seen.items ? hm[h].seen.items : 1));
    }
    if (at_worse)
        fprintf(f, ".  Where an import holds more: it is planned for what it holds when it "
                   "ends, while a live key is planned for its peak and keeps its recent slice "
                   "apart (`SEEN.INFO` runs show bits/item run by run).\n");
    else
        fprintf(f, ".  An import costs what live writes cost.\n");

    /* ---- population */
    fprintf(f, "\n## Memory per user: a population of %d users (seed 003's 60%% / 30%% / 10%%)\n\n",
            C.users);
    fprintf(
        f,
        "Sizes drawn uniformly in [0.5, 1.5] × the class's typical size; each user's history "
        "loaded as "
        "above (seen: live).  BF: scaling from 100 (a user's size is not known in advance).\n\n");
    fprintf(f, "| class | users | items/user |");
    for (int k = 0; k < NKINDS; k++)
        if (kind_enabled(k) && k != K_SEEN_AT && k != K_BF)
            fprintf(f, " %s bytes/user |", kind_label[k]);
    fprintf(f, " seen, idle bytes/user | SET / seen | SET / seen, idle | ZSET / seen |\n| --- "
               "| ---: | ---: |");
    for (int k = 0; k < NKINDS; k++)
        if (kind_enabled(k) && k != K_SEEN_AT && k != K_BF)
            fprintf(f, " ---: |");
    fprintf(f, " ---: | ---: | ---: | ---: |\n");
    long long tot_users = 0, tot_items = 0, tot[NKINDS] = {0}, tot_idle = 0;
    for (int cl = 0; cl <= NCLASSES; cl++) {
        int all = cl == NCLASSES;
        long long users = all ? tot_users : pm->users[cl], items = all ? tot_items : pm->items[cl];
        const long long *u = all ? tot : pm->usage[cl];
        long long idle = all ? tot_idle : pm->seen_idle[cl];
        if (!all) {
            tot_users += users, tot_items += items, tot_idle += idle;
            for (int k = 0; k < NKINDS; k++)
                tot[k] += u[k];
        }
        if (users == 0)
            continue;
        fprintf(f, "| %s | %lld | %s |", all ? "**all**" : class_label[cl], users,
                commas(items / users, b1));
        for (int k = 0; k < NKINDS; k++)
            if (kind_enabled(k) && k != K_SEEN_AT && k != K_BF)
                fprintf(f, " %s |", commas(u[k] / users, b2));
        fprintf(f, " %s | %.1f× | %.1f× | %.1f× |\n", commas(idle / users, b2),
                (double)u[K_SET] / (double)u[K_SEEN], (double)u[K_SET] / (double)idle,
                (double)u[K_ZSET] / (double)u[K_SEEN]);
    }

    /* ---- apps */
    fprintf(f, "\n## 300 integer app ids in [2,700,000, 3,100,000) (seed 004)\n\n");
    fprintf(f, "seen: `SEEN.RESERVE key WINDOW 10m IDS INT` (the default error, 0.001; ids this "
               "dense are kept exact, as they are, since that is smaller than their "
               "fingerprints: no false positives), 15 pages of 20 ids over ten minutes.\n\n");
    fprintf(f, "| | seen (IDS INT) | SET (intset) | ZSET |%s\n| --- | ---: | ---: | ---: |%s\n",
            C.bloom ? " BF (reserved at 300) |" : "", C.bloom ? " ---: |" : "");
    fprintf(f, "| MEMORY USAGE | %lld | %lld | %lld |", apps[K_SEEN], apps[K_SET], apps[K_ZSET]);
    if (C.bloom)
        fprintf(f, " %lld |", apps[K_BF]);
    fprintf(f, "\n| bytes/item | %.2f | %.2f | %.2f |", apps[K_SEEN] / 300.0, apps[K_SET] / 300.0,
            apps[K_ZSET] / 300.0);
    if (C.bloom)
        fprintf(f, " %.2f |", apps[K_BF] / 300.0);
    fprintf(f, "\n\n");

    /* ---- FPR */
    fprintf(f, "## False-positive rate (configured 0.001)\n\n");
    fprintf(f, "Fresh candidates, never added, checked against the keys above; 95%% interval from "
               "the binomial "
               "count.  SET and ZSET are exact.\n\n");
    fprintf(f,
            "| items | candidates | seen | seen's own bound (fpr-estimate) |%s\n| ---: | ---: | "
            "--- | ---: |%s\n",
            C.bloom ? " BF (n) | BF (scaling) |" : "", C.bloom ? " --- | --- |" : "");
    for (int h = 0; h < C.nhist; h++) {
        const fpr_row *r = &fr[h];
        long long v[3] = {r->seen_fp, r->bf_fp, r->bfs_fp};
        fprintf(f, "| %s | %s |", commas(r->n, b1), commas(r->tested, b2));
        for (int k = 0; k < (C.bloom ? 3 : 1); k++) {
            double p = (double)v[k] / (double)r->tested;
            double ci = 1.96 * sqrt((p * (1 - p) + 1.0 / (double)r->tested) / (double)r->tested);
            fprintf(f, " %.5f ± %.5f (%lld) |", p, ci, v[k]);
            if (k == 0)
                fprintf(f, " %.2g |", r->seen_estimate);
        }
        fprintf(f, "\n");
    }

    /* ---- queries */
    fprintf(f, "\n## Batch queries: candidates/s and latency\n\n");
    fprintf(
        f,
        "Each batch: 10%% of the candidates drawn from the key's history, 90%% fresh; %d distinct "
        "batches "
        "in turn.  **Candidates/s**: %d connections × %d pipelined requests from one client thread "
        "(replies tallied by hiredis's reader without reply objects), rate between the first and "
        "the last "
        "reply of a %.2f s measurement.  **Per CPU-s**: candidates per second of server CPU time "
        "(INFO CPU), "
        "what the server does with a core to itself; × = that against SMISMEMBER in the same round "
        "(wall-clock "
        "ratios are in the targets).  **Latency**: one "
        "connection, one request at a time, reply decoded by hiredis (ZRANGE: plus the client's "
        "filter "
        "against the history, a hash set).  Every reply is checked (all history candidates seen; "
        "exact methods "
        "exactly).  ZRANGE rows count the server's side only: the filtering is the client's.\n",
        VARIANTS, C.conns, C.depth, C.slot_s);
    for (int h = 0; h < C.nhist; h++) {
        fprintf(f, "\n### History of %s items\n\n| method |", commas(C.hist[h], b1));
        for (int b = 0; b < C.nbatch; b++)
            fprintf(f, " %s: cand/s | per CPU-s | × | p50 ms | p99 ms |", commas(C.batch[b], b2));
        fprintf(f, "\n| --- |");
        for (int b = 0; b < C.nbatch; b++)
            fprintf(f, " ---: | ---: | ---: | ---: | ---: |");
        fprintf(f, "\n");
        for (int mi2 = 0; mi2 < NMETHODS; mi2++) {
            if (!method_enabled(&METHODS[mi2]))
                continue;
            fprintf(f, "| %s |", METHODS[mi2].label);
            for (int b = 0; b < C.nbatch; b++) {
                cell_result *cr = &RES[h][b][mi2];
                qsort(cr->lat, (size_t)cr->nlat, sizeof *cr->lat, cmp_double);
                fmt_ms(percentile(cr->lat, cr->nlat, 50), b2);
                fmt_ms(percentile(cr->lat, cr->nlat, 99), b3);
                char b4[32];
                fprintf(f, " %s | %s | %.2f× | %s | %s |", human_rate(rate_median(cr), b1),
                        human_rate(median(cr->cpu_rate, C.rounds), b4),
                        median(cr->cpu_ratio, C.rounds), b2, b3);
            }
            fprintf(f, "\n");
        }
        const cell_result *z = &RES[h][C.nbatch - 1][M_ZRANGE];
        fprintf(
            f,
            "\nZRANGE's client-side filter alone (build a hash set of the %s returned items, probe "
            "%d "
            "candidates): %.2f ms per batch of this client's CPU, on top of the server's work.\n",
            commas(C.hist[h], b1), C.batch[C.nbatch - 1], z->client_filter_s * 1e3);
    }

    /* ---- adds */
    fprintf(f, "\n## Adds: items/s\n\n");
    fprintf(f,
            "Pages of %d fresh items, each to a random user of the population, %d connections × %d "
            "pipelined; "
            "× = against SADD in the same round.  seen adds at the server's clock.  Every round "
            "of every command starts from the population as loaded (RESTORE of each key's DUMP): "
            "a round gives each user a few dozen pages within a fraction of a second, and rounds "
            "that went on from the last one's keys measured ever larger users.  Medians of %d "
            "rounds: a round is short, and its paired ratio differs from the next round's by up "
            "to a fifth.\n\n",
            PAGE, C.conns, C.depth * 4, C.add_rounds);
    fprintf(f, "| command | items/s | × SADD | server CPU | server µs per command (min) | in the "
               "command µs (min) |\n"
               "| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (int k = 0; k < NADDS; k++)
        if (ADDS[k].ran)
            fprintf(f, "| %s | %s | %.2f× | %.0f%% | %.1f | %.1f |\n", ADDS[k].label,
                    human_rate(median(ADDS[k].thr, C.add_rounds), b1),
                    median(ADDS[k].ratio, C.add_rounds), 100 * median(ADDS[k].scpu, C.add_rounds),
                    minimum(ADDS[k].srv_us, C.add_rounds), minimum(ADDS[k].cmd_us, C.add_rounds));
    if (ADDS_BY_SIZE[0].ran)
        fprintf(f,
                "\nUsers drawn uniformly send 60%% of the pages to ~100-item keys.  A feed's "
                "writes come from its active users (by the population's rates, its heavy users "
                "write most of the items), and seen's cost per page grows with the key: drawn in "
                "proportion to each user's history, the same rounds give SEEN.ADD %s items/s "
                "against SADD's %s, %.2f× (medians of %d rounds; in the command %.1f against "
                "%.1f µs, the least over the rounds).\n",
                human_rate(median(ADDS_BY_SIZE[0].thr, C.add_rounds), b1),
                human_rate(median(ADDS_BY_SIZE[1].thr, C.add_rounds), b2),
                median(ADDS_BY_SIZE[0].ratio, C.add_rounds), C.add_rounds,
                minimum(ADDS_BY_SIZE[0].cmd_us, C.add_rounds),
                minimum(ADDS_BY_SIZE[1].cmd_us, C.add_rounds));
    if (ADDS_SESSIONS[0].ran)
        fprintf(f,
                "\nThese rounds give a ~100-item key a few dozen pages within a fraction of a "
                "second, a burst that makes it many times its size.  A feed's users write a "
                "session's pages between rests: in sessions (every user %d pages into its key "
                "as loaded, in a shuffled order; sweeps repeated, a key restored once it has "
                "grown by a twentieth, to the same length as a round) SEEN.ADD takes %s items/s "
                "against SADD's %s, %.2f× (medians of %d rounds; in the command %.1f against "
                "%.1f µs, the least over the rounds).\n",
                SESSION_PAGES, human_rate(median(ADDS_SESSIONS[0].thr, C.add_rounds), b1),
                human_rate(median(ADDS_SESSIONS[1].thr, C.add_rounds), b2),
                median(ADDS_SESSIONS[0].ratio, C.add_rounds), C.add_rounds,
                minimum(ADDS_SESSIONS[0].cmd_us, C.add_rounds),
                minimum(ADDS_SESSIONS[1].cmd_us, C.add_rounds));

    if (ADDS_PER_HIST[0].ran) {
        fprintf(f,
                "\nPer history size: pages of %d fresh items into copies of each history's key "
                "as loaded (RESTORE of its DUMP; a copy takes up to a twentieth of its size, so "
                "every page lands on a key of that size), the time in the command per page "
                "(INFO commandstats), SEEN.ADD and SADD alternating over %d rounds; × = SADD's "
                "time over SEEN.ADD's (above 1: SEEN.ADD takes more items per second).\n\n",
                PAGE, C.add_rounds);
        fprintf(f, "| history | copies × pages | SEEN.ADD µs (median) | (least) | SADD µs (median) "
                   "| (least) | × SADD |\n"
                   "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
        for (int h = 0; h < C.nhist; h++) {
            const hist_adds *ha = &ADDS_PER_HIST[h];
            if (!ha->ran)
                continue;
            fprintf(
                f, "| %s | %d × %d | %.1f | %.1f | %.1f | %.1f | %.2f× |\n", commas(C.hist[h], b1),
                ha->copies, ha->pages_per_key, median(ha->cmd[0].cmd_us, C.add_rounds),
                minimum(ha->cmd[0].cmd_us, C.add_rounds), median(ha->cmd[1].cmd_us, C.add_rounds),
                minimum(ha->cmd[1].cmd_us, C.add_rounds), median(ha->cmd[0].ratio, C.add_rounds));
        }
    }

    /* ---- where the time goes */
    fprintf(f, "\n## Where the server's time goes (%d-candidate batches)\n\n", C.batch[b10]);
    fprintf(f, "Per request, the minimum over the rounds (commandstats times are wall-clock, so "
               "another process "
               "taking the CPU inflates them; the least disturbed round is the cost).  "
               "**Server CPU**: INFO CPU over the measurement / replies. "
               "**In the command**: INFO commandstats usec_per_call (the command function, reply "
               "buffering "
               "included).  **Outside**: the rest — reading the request from the socket, parsing "
               "RESP, making one "
               "Redis object per argument, writing the reply.  **Core**: the core library alone "
               "(`seen_query_str` + `seen_query_run`), timed in this process on a twin of the key "
               "built by the "
               "same writes (serialized sizes: ");
    for (int h = 0; h < C.nhist; h++)
        fprintf(f, "%s%lld vs the key's %lld", h ? ", " : "", REF_SERIALIZED[h][0],
                REF_SERIALIZED[h][1]);
    fprintf(f, " bytes), with the same candidates; of which hashing and sorting the candidates "
               "(`seen_query_str`) "
               "in brackets.  **Module**: in the command minus the core (parsing items, BULK "
               "splitting, the "
               "reply).\n\n");
    fprintf(f, "| history | method | server CPU µs | in the command µs | outside µs | core µs | "
               "module µs | "
               "ns per candidate |\n| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    int preempted = 0, core_noise = 0;
    for (int h = 0; h < C.nhist; h++)
        for (int mi2 = 0; mi2 < NMETHODS; mi2++) {
            const cell_result *cr = &RES[h][b10][mi2];
            if (!cr->ran || mi2 == M_ZRANGE)
                continue;
            double srv_us = minimum(cr->srv_us, C.rounds), cmd_us = minimum(cr->cmd_us, C.rounds);
            fprintf(f, "| %s | %s | %.0f | %.0f |", commas(C.hist[h], b1), METHODS[mi2].label,
                    srv_us, cmd_us);
            if (srv_us >= cmd_us)
                fprintf(f, " %.0f |", srv_us - cmd_us);
            else
                fprintf(f, " ≈0 (preempted) |"), preempted = 1;
            if (METHODS[mi2].missing)
                fprintf(f, " | |");
            else if (METHODS[mi2].kind == K_SEEN && cmd_us >= CORE[h][b10].query_us)
                fprintf(f, " %.0f (%.0f) | %.0f |", CORE[h][b10].query_us, CORE[h][b10].hash_us,
                        cmd_us - CORE[h][b10].query_us);
            else if (METHODS[mi2].kind == K_SEEN)
                fprintf(f, " %.0f (%.0f) | ≈0 (noise) |", CORE[h][b10].query_us,
                        CORE[h][b10].hash_us),
                    core_noise = 1;
            else
                fprintf(f, " | |");
            fprintf(f, " %.0f |\n", srv_us * 1e3 / C.batch[b10]);
        }
    fprintf(f, "\nThe core alone per batch size (µs per batch, in this process), beside "
               "SMISMEMBER's whole server "
               "CPU per batch: the core walks the stored runs, so its cost grows with the history "
               "as well as with "
               "the batch.\n\n| history |");
    for (int b = 0; b < C.nbatch; b++)
        fprintf(f, " core, %s candidates | SMISMEMBER server CPU |", commas(C.batch[b], b1));
    fprintf(f, "\n| ---: |");
    for (int b = 0; b < C.nbatch; b++)
        fprintf(f, " ---: | ---: |");
    fprintf(f, "\n");
    for (int h = 0; h < C.nhist; h++) {
        fprintf(f, "| %s |", commas(C.hist[h], b1));
        for (int b = 0; b < C.nbatch; b++)
            fprintf(f, " %.0f (hash+sort %.0f) | %.0f |", CORE[h][b].query_us, CORE[h][b].hash_us,
                    C.batch[b] * 1e6 / median(RES[h][b][M_SMISMEMBER].cpu_rate, C.rounds));
        fprintf(f, "\n");
    }
    if (core_noise)
        fprintf(f, "\n≈0 (noise): the core timed in this process took longer than the whole "
                   "command in the server; the module's share is within the noise of this run.\n");
    if (preempted)
        fprintf(f,
                "\n≈0 (preempted): the command's wall-clock time exceeded the server's CPU time in "
                "every round — "
                "other processes took the CPU while it ran; its split is unknown in this run.\n");

    /* ---- client check */
    fprintf(f, "\n## Is the client the bottleneck?\n\n");
    double scpu_all[MAX_HIST * MAX_BATCH * NMETHODS], max_ccpu = 0;
    int nscpu = 0;
    for (int h = 0; h < C.nhist; h++)
        for (int b = 0; b < C.nbatch; b++)
            for (int mi2 = 0; mi2 < NMETHODS; mi2++)
                if (RES[h][b][mi2].ran && mi2 != M_ZRANGE) {
                    double cc = median(RES[h][b][mi2].ccpu, C.rounds);
                    scpu_all[nscpu++] = median(RES[h][b][mi2].scpu, C.rounds);
                    max_ccpu = cc > max_ccpu ? cc : max_ccpu;
                }
    fprintf(
        f,
        "- The load generator is one C thread (hiredis's reader with tallying object functions, "
        "requests "
        "pre-formatted): it used at most %.0f%% of a core during any query measurement.  The "
        "server's CPU "
        "time was a median %.0f%% of wall time (ZRANGE aside): on %ld cores shared with other "
        "users (load "
        "average above), the server's thread is runnable but not always running — which is why the "
        "per-CPU-second rates are the steady comparison.\n",
        100 * max_ccpu, 100 * median(scpu_all, nscpu), mi->cores);
    if (x->ran) {
        fprintf(f,
                "- Twice the connections and twice the pipeline depth (%s-item history, %d "
                "candidates, rounds alternating): ",
                commas(C.hist[x->hist], b1), C.batch[b10]);
        for (int k = 0; k < 2; k++)
            fprintf(f, "%s%s %s → %s cand/s (%+.0f%%)", k ? "; " : "",
                    METHODS[SAT_METHODS[k]].label, human_rate(x->base[k], b2),
                    human_rate(x->doubled[k], b3), 100 * (x->doubled[k] / x->base[k] - 1));
        fprintf(f,
                ".  Their ratio goes %.2f× → %.2f×: how hard the client pushes does not change "
                "the comparison.\n",
                x->base[1] / x->base[0], x->doubled[1] / x->doubled[0]);
        fprintf(f,
                "- redis-benchmark (a different client: %d connections, pipeline %d) on the "
                "same history:\n\n",
                C.conns, C.depth);
        fprintf(f, "| method | candidates | redis-benchmark cand/s | server CPU during it | this "
                   "program |\n"
                   "| --- | ---: | ---: | ---: | ---: |\n");
        for (int k = 0; k < x->nrows; k++) {
            const cross_row *row = &x->rows[k];
            fprintf(f, "| %s | %d | %s | %.0f%% | %s |\n", METHODS[row->method].label,
                    C.batch[row->batch], human_rate(row->theirs, b1), 100 * row->theirs_scpu,
                    human_rate(row->ours, b2));
        }
        fprintf(
            f,
            "\nredis-benchmark decodes every reply into hiredis objects (10,000 per SMISMEMBER "
            "reply), so "
            "where its server CPU is lower it is the client that limits it.  It cannot send a "
            "10,000-candidate BULK argument (250 KB; Linux caps one exec argument at 128 KiB).\n");
    }
    fprintf(
        f,
        "\nPlots: `memory.png` (bytes per item against history size), `throughput.png` "
        "(candidates/s per "
        "method, %d-candidate batches; ZRANGE left out, its rate being the server's side only).\n",
        C.batch[b10]);
    fclose(f);

    /* ---- data for gnuplot: tab-separated, a header line of titles */
    f = open_out("memory.dat");
    int nmem = 2;
    fprintf(f, "items\tfloor: log2(1/0.001) bits");
    for (int k = 0; k < NKINDS; k++)
        if (kind_enabled(k))
            fprintf(f, "\t%s", kind_label[k]), nmem++;
    fprintf(f, "\n");
    for (int h = 0; h < C.nhist; h++) {
        fprintf(f, "%ld\t%.4f", hm[h].n, log2(1 / ERROR_RATE) / 8);
        for (int k = 0; k < NKINDS; k++)
            if (kind_enabled(k))
                fprintf(f, "\t%.4f", (double)hm[h].usage[k] / (double)hm[h].n);
        fprintf(f, "\n");
    }
    fclose(f);

    f = open_out("throughput.dat");
    fprintf(f, "method");
    for (int h = 0; h < C.nhist; h++)
        fprintf(f, "\t%s items", commas(C.hist[h], b1));
    fprintf(f, "\n");
    for (int mi2 = 0; mi2 < NMETHODS; mi2++) {
        /* ZRANGE's rate is the server's side only: its work moved to the
         * client, so a bar beside the others would mislead. */
        if (!method_enabled(&METHODS[mi2]) || mi2 == M_ZRANGE || METHODS[mi2].missing)
            continue;
        fprintf(f, "%s", METHODS[mi2].label);
        for (int h = 0; h < C.nhist; h++)
            fprintf(f, "\t%.0f", median(RES[h][b10][mi2].cpu_rate, C.rounds));
        fprintf(f, "\n");
    }
    fclose(f);

    f = open_out("plotvars.gp");
    fprintf(f, "# written by bench_redis for plot.gp\nnmem = %d\nnthr = %d\nbatch = \"%s\"\n", nmem,
            C.nhist + 1, commas(C.batch[b10], b1));
    fclose(f);
}
