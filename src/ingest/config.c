/* config.c — the command line, the configuration file and --help of
 * seen-ingest.  One table describes every option: the command line spells
 * it --name VALUE, the file `name = VALUE`; the file is read first, so the
 * command line overrides it.  Every value is checked here, and an error
 * names the option (and the file line) before anything starts. */
#include "ingest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

enum opt_type { OPT_STR, OPT_INT, OPT_SIZE, OPT_DURATION, OPT_FLAG, OPT_KAFKA };

struct option_def {
    const char *name;
    enum opt_type type;
    size_t offset; /* in struct config, or NO_FIELD */
    int64_t min, max;
    const char *metavar, *help;
    unsigned section; /* which part of --help */
};

enum { SEC_COMMON = 1, SEC_RUN = 2, SEC_KAFKA = 4, SEC_STREAM = 8, SEC_MIGRATE = 16 };

#define OFF(field) offsetof(struct config, field)
#define NO_FIELD SIZE_MAX /* handled by name */
#define BIG (INT64_C(1) << 50)
static const struct option_def options[] = {
    {"config", OPT_STR, NO_FIELD, 0, 0, "FILE", "read options from FILE (name = value lines)",
     SEC_COMMON},
    {"redis", OPT_STR, OFF(redis), 0, 0, "HOST:PORT",
     "the Redis to write to, or any node of a Cluster (default 127.0.0.1:6379)", SEC_COMMON},
    {"cluster", OPT_FLAG, OFF(cluster), 0, 1, NULL,
     "the target is a Redis Cluster: route each key to the master of its slot", SEC_COMMON},
    {"redis-timeout", OPT_DURATION, OFF(redis_timeout_ms), 10, 3600000, "DUR",
     "connect and reply timeout of every Redis connection (default 5s)", SEC_COMMON},
    {"redis-user", OPT_STR, OFF(redis_user), 0, 0, "NAME",
     "ACL user every Redis connection authenticates as (needs a password)", SEC_COMMON},
    {"redis-password-file", OPT_STR, OFF(redis_password_file), 0, 0, "FILE",
     "authenticate every Redis connection with the password on FILE's first line; or set "
     "SEEN_INGEST_REDIS_PASSWORD (never on the command line, where ps shows it)",
     SEC_COMMON},
    {"key-template", OPT_STR, OFF(key_template), 0, 0, "TEMPLATE",
     "key of an event: %name stands for the event's (or legacy key's) field name (default "
     "seen:{%user})",
     SEC_COMMON},
    {"policy", OPT_STR, OFF(policy), 0, 0, "OPTIONS",
     "SEEN.INSERT policy for keys the writes create, e.g. \"WINDOW 14d CAPACITY 10000\"",
     SEC_COMMON},
    {"ts-granularity", OPT_DURATION, OFF(ts_granularity_ms), 0, BIG, "DUR",
     "0: every event written with its own time, one command per key (SEEN.INSERT TIMED); "
     "DUR: events of a key within one such bucket written with one AT (default 0)",
     SEC_COMMON},
    {"batch-events", OPT_INT, OFF(batch_events), 1, 1000000, "N",
     "write a batch at N events or messages (default 20000)", SEC_COMMON},
    {"batch-bytes", OPT_SIZE, OFF(batch_bytes), 1024, BIG, "SIZE",
     "... or at SIZE bytes of keys and items (default 16m)", SEC_COMMON},
    {"bulk-threshold", OPT_INT, OFF(bulk_threshold), 1, 1000000, "N",
     "send groups of N or more items as one BULK argument (default 16)", SEC_COMMON},
    {"stats-interval", OPT_DURATION, OFF(stats_interval_ms), 0, BIG, "DUR",
     "print statistics this often; 0 = only at exit (default 10s)", SEC_COMMON},
    {"stats-format", OPT_STR, OFF(stats_format), 0, 0, "text|json",
     "statistics as a text line or a JSON object (default text)", SEC_COMMON},
    {"stats-file", OPT_STR, OFF(stats_file), 0, 0, "FILE",
     "append statistics to FILE instead of standard error", SEC_COMMON},
    {"check", OPT_FLAG, OFF(check), 0, 1, NULL,
     "check the options and configuration file, print them, and exit", SEC_COMMON},
    {"verbose", OPT_FLAG, NO_FIELD, 0, 1, NULL, "log debugging detail", SEC_COMMON},
    {"quiet", OPT_FLAG, NO_FIELD, 0, 1, NULL, "log only warnings and errors", SEC_COMMON},

    {"source", OPT_STR, OFF(source), 0, 0, "kafka|stream", "where events come from (required)",
     SEC_RUN},
    {"item-field", OPT_STR, OFF(item_field), 0, 0, "NAME", "event field of the item (default item)",
     SEC_RUN},
    {"ts-field", OPT_STR, OFF(ts_field), 0, 0, "NAME", "event field of the event time (default ts)",
     SEC_RUN},
    {"ts-unit", OPT_STR, OFF(ts_scale), 0, 0, "ms|s", "unit of the event time (default ms)",
     SEC_RUN},
    {"missing-ts", OPT_STR, OFF(missing_ts_now), 0, 0, "reject|now",
     "an event without a time is malformed, or stamped now (default reject)", SEC_RUN},
    {"flush-interval", OPT_DURATION, OFF(flush_interval_ms), 1, 3600000, "DUR",
     "write a batch at most this long after its first event (default 200ms)", SEC_RUN},
    {"group", OPT_STR, OFF(group), 0, 0, "NAME",
     "consumer group, Kafka or stream (default seen-ingest)", SEC_RUN},
    {"dead-letter", OPT_STR, OFF(dead_letter), 0, 0, "NAME",
     "send malformed events and refused items to this topic (Kafka) or stream", SEC_RUN},
    {"shutdown-timeout", OPT_DURATION, OFF(shutdown_timeout_ms), 0, BIG, "DUR",
     "on SIGTERM, how long to keep trying to write and commit (default 30s)", SEC_RUN},
    {"brokers", OPT_STR, OFF(brokers), 0, 0, "LIST", "Kafka bootstrap servers", SEC_KAFKA},
    {"topic", OPT_STR, OFF(topics), 0, 0, "LIST", "Kafka topics, comma-separated", SEC_KAFKA},
    {"kafka", OPT_KAFKA, NO_FIELD, 0, 0, "NAME=VALUE",
     "a librdkafka property (repeatable; in the file: kafka.NAME = VALUE)", SEC_KAFKA},
    {"stream", OPT_STR, OFF(streams), 0, 0, "LIST", "stream keys, comma-separated", SEC_STREAM},
    {"stream-redis", OPT_STR, OFF(stream_redis), 0, 0, "HOST:PORT",
     "the Redis holding the streams (default --redis; required with --cluster)", SEC_STREAM},
    {"consumer", OPT_STR, OFF(consumer), 0, 0, "NAME",
     "consumer name in the group; keep it across restarts (default the host name)", SEC_STREAM},
    {"stream-field", OPT_STR, OFF(stream_field), 0, 0, "NAME",
     "entry field holding JSON events; \"\" = the entry's fields are the event (default event)",
     SEC_STREAM},
    {"stream-start", OPT_STR, OFF(stream_start), 0, 0, "ID",
     "where a new group starts: 0 = the whole stream, $ = new entries (default 0)", SEC_STREAM},
    {"claim-idle", OPT_DURATION, OFF(claim_idle_ms), 0, BIG, "DUR",
     "take over entries other consumers left pending this long; 0 = never (default 60s)",
     SEC_STREAM},

    {"from", OPT_STR, OFF(from), 0, 0, "HOST:PORT",
     "the Redis holding the legacy keys (default --redis)", SEC_MIGRATE},
    {"legacy-pattern", OPT_STR, OFF(legacy_pattern), 0, 0, "PATTERN",
     "legacy key names, %name capturing a field, e.g. played:%user (required)", SEC_MIGRATE},
    {"legacy-type", OPT_STR, OFF(legacy_type), 0, 0, "zset|set|any",
     "which legacy keys to migrate (default any)", SEC_MIGRATE},
    {"score-unit", OPT_STR, OFF(score_scale), 0, 0, "ms|s", "unit of ZSET scores (default ms)",
     SEC_MIGRATE},
    {"set-ts", OPT_STR, OFF(set_ts), 0, 0, "now|MS",
     "time given to SET members, which have none (default now)", SEC_MIGRATE},
    {"state", OPT_STR, OFF(state_file), 0, 0, "FILE",
     "progress file: a rerun resumes where it stopped", SEC_MIGRATE},
    {"scan-count", OPT_INT, OFF(scan_count), 1, 100000, "N", "SCAN COUNT hint (default 500)",
     SEC_MIGRATE},
    {"progress-interval", OPT_DURATION, OFF(progress_interval_ms), 0, BIG, "DUR",
     "print progress this often (default 5s)", SEC_MIGRATE},
};
#define N_OPTIONS (sizeof options / sizeof *options)

static void usage_error(const char *where, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
static void usage_error(const char *where, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "seen-ingest: %s: ", where);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(seen-ingest --help lists the options)\n");
    va_end(ap);
    exit(EXIT_USAGE);
}

/* Prints text from column `indent`, wrapped at 79 columns. */
static void print_wrapped(const char *text, int indent)
{
    int column = indent;
    for (const char *p = text; *p;) {
        int word = (int)strcspn(p, " ");
        if (column > indent && column + 1 + word > 79) {
            printf("\n%*s", indent, "");
            column = indent;
        } else if (column > indent) {
            putchar(' ');
            column++;
        }
        printf("%.*s", word, p);
        column += word;
        p += word;
        while (*p == ' ')
            p++;
    }
    putchar('\n');
}

static void print_help(void)
{
    printf("seen-ingest — write exposure events from Kafka or Redis Streams into SEEN keys\n\n"
           "usage: seen-ingest [run] --source kafka|stream [options]\n"
           "       seen-ingest migrate --legacy-pattern PATTERN [options]\n"
           "       seen-ingest --help | --version\n\n"
           "Durations: milliseconds, or a number with ms, s, m, h or d (30s).\n"
           "Sizes: bytes, or a number with k, m or g (16m).\n");
    static const struct {
        unsigned section;
        const char *title;
    } sections[] = {{SEC_COMMON, "Common options"},
                    {SEC_RUN, "run: ingest events"},
                    {SEC_KAFKA, "run --source kafka"},
                    {SEC_STREAM, "run --source stream"},
                    {SEC_MIGRATE, "migrate: copy legacy ZSET/SET keys"}};
    for (size_t s = 0; s < sizeof sections / sizeof *sections; s++) {
        printf("\n%s:\n", sections[s].title);
        for (size_t i = 0; i < N_OPTIONS; i++) {
            if (options[i].section != sections[s].section)
                continue;
            char left[64];
            snprintf(left, sizeof left, "--%s%s%s", options[i].name, options[i].metavar ? " " : "",
                     options[i].metavar ? options[i].metavar : "");
            printf("  %-28s ", left);
            print_wrapped(options[i].help, 31);
        }
    }
    printf("\nExit status: 0 done, 1 runtime failure, 2 usage or configuration error,\n"
           "3 stopped with events read but not committed (they are read again at restart).\n"
           "Full manual: docs/ingest.md.\n");
}

static bool parse_scaled(const char *text, const char *const *units, const int64_t *scales,
                         int64_t *out)
{
    char *end;
    errno = 0;
    if (text[0] < '0' || text[0] > '9')
        return false;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno)
        return false;
    int64_t scale = 1;
    if (*end) {
        size_t u = 0;
        while (units[u] && strcasecmp(end, units[u]) != 0)
            u++;
        if (!units[u])
            return false;
        scale = scales[u];
    }
    if (v > (unsigned long long)(BIG * 64) / (unsigned long long)scale)
        return false;
    *out = (int64_t)v * scale;
    return true;
}

static bool parse_bool(const char *v, bool *out)
{
    if (!strcasecmp(v, "yes") || !strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "on"))
        *out = true;
    else if (!strcasecmp(v, "no") || !strcasecmp(v, "false") || !strcmp(v, "0") ||
             !strcasecmp(v, "off"))
        *out = false;
    else
        return false;
    return true;
}

/* Options whose text picks one of a few meanings. */
static void set_choice(struct config *cfg, const char *name, const char *v, const char *where)
{
    if (!strcmp(name, "source")) {
        if (!strcmp(v, "kafka"))
            cfg->source = SOURCE_KAFKA;
        else if (!strcmp(v, "stream"))
            cfg->source = SOURCE_STREAM;
        else
            usage_error(where, "must be kafka or stream (got '%s')", v);
    } else if (!strcmp(name, "ts-unit") || !strcmp(name, "score-unit")) {
        int64_t *scale = !strcmp(name, "ts-unit") ? &cfg->ts_scale : &cfg->score_scale;
        if (!strcmp(v, "ms"))
            *scale = 1;
        else if (!strcmp(v, "s"))
            *scale = 1000;
        else
            usage_error(where, "must be ms or s (got '%s')", v);
    } else if (!strcmp(name, "missing-ts")) {
        if (strcmp(v, "reject") && strcmp(v, "now"))
            usage_error(where, "must be reject or now (got '%s')", v);
        cfg->missing_ts_now = !strcmp(v, "now");
    } else if (!strcmp(name, "stats-format")) {
        if (strcmp(v, "text") && strcmp(v, "json"))
            usage_error(where, "must be text or json (got '%s')", v);
        cfg->stats_format = !strcmp(v, "json") ? STATS_JSON : STATS_TEXT;
    }
}

static void set_option(struct config *cfg, const struct option_def *o, const char *value,
                       const char *where)
{
    static const char *const duration_units[] = {"ms", "s", "m", "h", "d", NULL};
    static const int64_t duration_scales[] = {1, 1000, 60000, 3600000, 86400000};
    static const char *const size_units[] = {"k", "m", "g", "kb", "mb", "gb", NULL};
    static const int64_t size_scales[] = {1 << 10, 1 << 20, 1 << 30, 1 << 10, 1 << 20, 1 << 30};
    char *base = (char *)cfg;
    int64_t v = 0;
    switch (o->type) {
    case OPT_FLAG: {
        bool b = true;
        if (value && !parse_bool(value, &b))
            usage_error(where, "must be yes or no (got '%s')", value);
        if (!strcmp(o->name, "verbose"))
            log_threshold = b ? LOG_DEBUG : LOG_INFO;
        else if (!strcmp(o->name, "quiet"))
            log_threshold = b ? LOG_WARN : LOG_INFO;
        else
            *(bool *)(base + o->offset) = b;
        return;
    }
    case OPT_KAFKA:
        if (!strchr(value, '=') || value[0] == '=')
            usage_error(where, "must be NAME=VALUE (got '%s')", value);
        if (cfg->n_kafka_props == MAX_KAFKA_PROPS)
            usage_error(where, "at most %d properties", MAX_KAFKA_PROPS);
        cfg->kafka_props[cfg->n_kafka_props++] = xstrdup(value);
        return;
    case OPT_STR:
        if (!strcmp(o->name, "source") || !strcmp(o->name, "ts-unit") ||
            !strcmp(o->name, "score-unit") || !strcmp(o->name, "missing-ts") ||
            !strcmp(o->name, "stats-format")) {
            set_choice(cfg, o->name, value, where);
            return;
        }
        free(*(char **)(base + o->offset));
        *(char **)(base + o->offset) = xstrdup(value);
        return;
    case OPT_INT:
        if (!parse_scaled(value, (const char *const[]){NULL}, NULL, &v) || v < o->min || v > o->max)
            usage_error(where, "must be an integer from %lld to %lld (got '%s')", (long long)o->min,
                        (long long)o->max, value);
        break;
    case OPT_SIZE:
        if (!parse_scaled(value, size_units, size_scales, &v) || v < o->min || v > o->max)
            usage_error(where, "must be a size of at least %lld bytes, e.g. 16m (got '%s')",
                        (long long)o->min, value);
        break;
    case OPT_DURATION:
        if (!parse_scaled(value, duration_units, duration_scales, &v) || v < o->min || v > o->max)
            usage_error(where,
                        "must be a duration from %lld to %lld ms, e.g. 500ms or 30s "
                        "(got '%s')",
                        (long long)o->min, (long long)o->max, value);
        break;
    }
    *(int64_t *)(base + o->offset) = v;
}

static bool is_string_option(const struct option_def *o);

/* --check: the settings in force, one `name = value` line each, in the
 * configuration file's own syntax. */
static void print_settings(const struct config *cfg, enum command cmd)
{
    printf("# seen-ingest %s: configuration OK\n", cmd == CMD_MIGRATE ? "migrate" : "run");
    const char *base = (const char *)cfg;
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const struct option_def *o = &options[i];
        if (o->offset == NO_FIELD || !strcmp(o->name, "check"))
            continue;
        if (is_string_option(o)) {
            const char *v = *(char *const *)(base + o->offset);
            if (v)
                printf("%s = \"%s\"\n", o->name, v);
        } else if (o->type == OPT_FLAG) {
            printf("%s = %s\n", o->name, *(const bool *)(base + o->offset) ? "yes" : "no");
        } else if (o->type != OPT_STR) {
            printf("%s = %lld\n", o->name, (long long)*(const int64_t *)(base + o->offset));
        }
    }
    static const char *const sources[] = {"none", "kafka", "stream"};
    printf("source = %s\nts-unit = %s\nscore-unit = %s\nmissing-ts = %s\nstats-format = %s\n",
           sources[cfg->source], cfg->ts_scale == 1 ? "ms" : "s",
           cfg->score_scale == 1 ? "ms" : "s", cfg->missing_ts_now ? "now" : "reject",
           cfg->stats_format == STATS_JSON ? "json" : "text");
    for (int i = 0; i < cfg->n_kafka_props; i++) {
        const char *eq = strchr(cfg->kafka_props[i], '=');
        printf("kafka.%.*s = \"%s\"\n", (int)(eq - cfg->kafka_props[i]), cfg->kafka_props[i],
               eq + 1);
    }
}

static const struct option_def *find_option(const char *name)
{
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (!strcmp(options[i].name, name))
            return &options[i];
    return NULL;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    char *end = s + strlen(s);
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' || end[-1] == '\n'))
        *--end = '\0';
    return s;
}

static void read_config_file(struct config *cfg, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        usage_error("--config", "cannot read %s: %s", path, strerror(errno));
    char line[4096];
    for (unsigned no = 1; fgets(line, sizeof line, f); no++) {
        char where[4800];
        char *s = trim(line);
        if (!*s || *s == '#')
            continue;
        char *sep = s + strcspn(s, " \t=");
        char *value = sep;
        if (*value) {
            *value++ = '\0';
            value = trim(value);
            if (*value == '=')
                value = trim(value + 1);
        }
        /* Quotes allow an empty value or surrounding blanks. */
        size_t vlen = strlen(value);
        if (vlen >= 2 && value[0] == '"' && value[vlen - 1] == '"') {
            value[vlen - 1] = '\0';
            value++;
        }
        snprintf(where, sizeof where, "%s:%u: %s", path, no, s);
        if (!strncmp(s, "kafka.", 6)) {
            char prop[4200];
            snprintf(prop, sizeof prop, "%s=%s", s + 6, value);
            set_option(cfg, find_option("kafka"), prop, where);
            continue;
        }
        const struct option_def *o = find_option(s);
        if (!o || !strcmp(s, "config"))
            usage_error(where, "unknown option");
        if (!*value && o->type != OPT_FLAG && o->type != OPT_STR)
            usage_error(where, "needs a value");
        set_option(cfg, o, o->type == OPT_FLAG && !*value ? NULL : value, where);
    }
    fclose(f);
}

/* String options hold their own copies, so config_free can free them all. */
static bool is_string_option(const struct option_def *o)
{
    return o->type == OPT_STR && o->offset != NO_FIELD && strcmp(o->name, "source") &&
           strcmp(o->name, "ts-unit") && strcmp(o->name, "score-unit") &&
           strcmp(o->name, "missing-ts") && strcmp(o->name, "stats-format");
}

void config_free(struct config *cfg)
{
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (is_string_option(&options[i]))
            free(*(char **)((char *)cfg + options[i].offset));
    for (int i = 0; i < cfg->n_kafka_props; i++)
        free(cfg->kafka_props[i]);
    free(cfg->redis_password);
}

struct redis_auth config_auth(const struct config *cfg)
{
    return (struct redis_auth){.user = cfg->redis_user, .password = cfg->redis_password};
}

/* The password: the first line of --redis-password-file, else the
 * environment; checked before anything starts. */
static void load_password(struct config *cfg)
{
    if (cfg->redis_password_file) {
        FILE *f = fopen(cfg->redis_password_file, "r");
        if (!f)
            usage_error("--redis-password-file", "cannot read '%s': %s", cfg->redis_password_file,
                        strerror(errno));
        char line[1024];
        bool got = fgets(line, sizeof line, f) != NULL;
        fclose(f);
        line[got ? strcspn(line, "\r\n") : 0] = '\0';
        if (!line[0])
            usage_error("--redis-password-file", "'%s' has no password on its first line",
                        cfg->redis_password_file);
        cfg->redis_password = xstrdup(line);
        return;
    }
    const char *env = getenv("SEEN_INGEST_REDIS_PASSWORD");
    if (env && env[0])
        cfg->redis_password = xstrdup(env);
    else if (cfg->redis_user)
        usage_error("--redis-user", "needs a password: --redis-password-file FILE or "
                                    "SEEN_INGEST_REDIS_PASSWORD");
}

static void set_defaults(struct config *cfg)
{
    char hostname[256];
    if (gethostname(hostname, sizeof hostname) != 0 || !hostname[0])
        strcpy(hostname, "seen-ingest");
    hostname[sizeof hostname - 1] = '\0';
    *cfg = (struct config){
        /* literals here, copied below */
        .redis = "127.0.0.1:6379",
        .redis_timeout_ms = 5000,
        .key_template = "seen:{%user}",
        .item_field = "item",
        .ts_field = "ts",
        .ts_scale = 1,
        .ts_granularity_ms = 0,
        .flush_interval_ms = 200,
        .batch_events = 20000,
        .batch_bytes = 16 << 20,
        .bulk_threshold = 16,
        .group = "seen-ingest",
        .consumer = hostname,
        .stream_field = "event",
        .stream_start = "0",
        .claim_idle_ms = 60000,
        .stats_interval_ms = 10000,
        .shutdown_timeout_ms = 30000,
        .legacy_type = "any",
        .set_ts = "now",
        .score_scale = 1,
        .scan_count = 500,
        .progress_interval_ms = 5000,
    };
    for (size_t i = 0; i < N_OPTIONS; i++) {
        char **field = (char **)((char *)cfg + options[i].offset);
        if (is_string_option(&options[i]) && *field)
            *field = xstrdup(*field);
    }
}

/* The key template and policy are checked here too, so --check and a
 * start report them before any connection is made. */
static void validate_syntax(struct config *cfg)
{
    char err[512];
    struct tmpl t;
    if (!tmpl_compile(&t, cfg->key_template, err, sizeof err))
        usage_error("--key-template", "%s", err);
    tmpl_free(&t);
    struct writer w;
    bool ok = writer_init(&w, NULL, cfg, err, sizeof err);
    writer_free(&w);
    if (!ok)
        usage_error("--policy", "%s", err);
}

static void validate(struct config *cfg, enum command cmd)
{
    char host[256];
    int port;
    if (!parse_host_port(cfg->redis, host, sizeof host, &port))
        usage_error("--redis", "want HOST:PORT (got '%s')", cfg->redis);
    validate_syntax(cfg);
    load_password(cfg);
    if (cmd == CMD_MIGRATE) {
        if (!cfg->legacy_pattern)
            usage_error("migrate", "--legacy-pattern is required");
        if (!cfg->from && cfg->cluster)
            usage_error("--from", "required with --cluster (the legacy keys' server)");
        if (cfg->from && !parse_host_port(cfg->from, host, sizeof host, &port))
            usage_error("--from", "want HOST:PORT (got '%s')", cfg->from);
        if (strcmp(cfg->legacy_type, "zset") && strcmp(cfg->legacy_type, "set") &&
            strcmp(cfg->legacy_type, "any"))
            usage_error("--legacy-type", "must be zset, set or any (got '%s')", cfg->legacy_type);
        uint64_t at;
        if (strcmp(cfg->set_ts, "now") &&
            !(decimal_u64(cfg->set_ts, strlen(cfg->set_ts), &at) && at <= SEEN_TIME_MAX))
            usage_error("--set-ts", "must be now or ms since the epoch (got '%s')", cfg->set_ts);
        return;
    }
    if (cfg->source == SOURCE_NONE)
        usage_error("run", "--source kafka or --source stream is required");
    if (cfg->source == SOURCE_KAFKA && (!cfg->brokers || !cfg->topics))
        usage_error("--source kafka", "needs --brokers and --topic");
    if (cfg->source == SOURCE_STREAM) {
        if (!cfg->streams)
            usage_error("--source stream", "needs --stream");
        if (cfg->cluster && !cfg->stream_redis)
            usage_error("--stream-redis", "required with --cluster (the streams' server)");
        if (cfg->stream_redis && !parse_host_port(cfg->stream_redis, host, sizeof host, &port))
            usage_error("--stream-redis", "want HOST:PORT (got '%s')", cfg->stream_redis);
        if (cfg->stream_start[0] == '\0')
            usage_error("--stream-start", "must be 0, $ or a stream id");
    }
    if (!cfg->item_field[0] || !cfg->ts_field[0])
        usage_error("--item-field/--ts-field", "must not be empty");
    if (cfg->stats_file && !cfg->stats_file[0])
        usage_error("--stats-file", "must not be empty");
}

void config_load(struct config *cfg, enum command *cmd, int argc, char **argv)
{
    set_defaults(cfg);
    *cmd = CMD_RUN;
    int first = 1;
    if (argc > 1 && !strcmp(argv[1], "migrate")) {
        *cmd = CMD_MIGRATE;
        first = 2;
    } else if (argc > 1 && !strcmp(argv[1], "run")) {
        first = 2;
    }
    /* The file first, wherever --config stands, so the command line wins. */
    for (int i = first; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            print_help();
            exit(EXIT_OK);
        }
        if (!strcmp(argv[i], "--version")) {
            printf("seen-ingest 0.1\n");
            exit(EXIT_OK);
        }
        if (!strcmp(argv[i], "--config")) {
            if (i + 1 == argc)
                usage_error("--config", "needs a file name");
            read_config_file(cfg, argv[++i]);
        } else if (!strncmp(argv[i], "--config=", 9)) {
            read_config_file(cfg, argv[i] + 9);
        }
    }
    for (int i = first; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) != 0)
            usage_error(arg, "unexpected argument (options start with --)");
        char name[128];
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        if (len >= sizeof name)
            usage_error(arg, "unknown option");
        memcpy(name, arg + 2, len);
        name[len] = '\0';
        const struct option_def *o = find_option(name);
        if (!o)
            usage_error(arg, "unknown option");
        const char *value = eq ? eq + 1 : NULL;
        if (!value && o->type != OPT_FLAG) {
            if (i + 1 == argc)
                usage_error(arg, "needs a value (%s)", o->metavar);
            value = argv[++i];
        }
        if (!strcmp(name, "config"))
            continue; /* already read */
        char where[160];
        snprintf(where, sizeof where, "--%s", name);
        set_option(cfg, o, value, where);
    }
    validate(cfg, *cmd);
    if (cfg->check) {
        print_settings(cfg, *cmd);
        exit(EXIT_OK);
    }
}
