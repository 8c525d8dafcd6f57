/* run.c — the ingest loop: read from the source into a batch, write the
 * batch when it is full or old enough, then commit the source.
 *
 * The order is the whole delivery guarantee: an offset (or stream entry)
 * is committed only after every event read before it was acknowledged by
 * Redis (or, if refused for good, sent to the dead letters).  A crash at
 * any point therefore leaves only events that are re-read on restart, and
 * re-writing them is harmless because SEEN adds are idempotent. */
#include "ingest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the sink */
void sink_reject(struct sink *s, const char *origin, const char *reason, const char *raw,
                 size_t raw_len)
{
    stats.malformed++;
    log_bad_input("malformed event at %s: %s: %.*s", origin, reason,
                  (int)(raw_len > 200 ? 200 : raw_len), raw);
    if (s->source->cfg->dead_letter)
        s->source->ops->dead_letter(s->source, origin, reason, raw, raw_len);
}

void sink_message(struct sink *s, const char *origin, const char *data, size_t len)
{
    char err[256];
    unsigned line_no = 0;
    for (const char *p = data, *end = data + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = nl ? nl : end;
        size_t n = (size_t)(line_end - p);
        line_no++;
        bool blank = true;
        for (size_t i = 0; i < n && blank; i++)
            blank = p[i] == ' ' || p[i] == '\t' || p[i] == '\r';
        if (!blank) {
            if (event_from_json(s->spec, p, n, &s->event, err, sizeof err)) {
                stats.events++;
                batch_add(s->batch, s->event.key.data, s->event.key.len, s->event.ts, s->event.item,
                          s->event.item_len);
            } else {
                char where[400];
                snprintf(where, sizeof where, "%s line %u", origin, line_no);
                sink_reject(s, line_no == 1 && !nl ? origin : where, err, p, n);
            }
            event_release(&s->event);
        }
        p = nl ? nl + 1 : end;
    }
    if (len == 0)
        sink_reject(s, origin, "empty message", "", 0);
}

void dead_letters_add(struct dead_letters *d, const char *origin, const char *reason,
                      const char *raw, size_t raw_len)
{
    if (d->n == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 16;
        d->items = xrealloc(d->items, d->cap * sizeof *d->items);
    }
    char *copy = xmalloc(raw_len + 1);
    memcpy(copy, raw, raw_len);
    copy[raw_len] = '\0';
    d->items[d->n++] = (struct dead_letter){
        .origin = xstrdup(origin), .reason = xstrdup(reason), .raw = copy, .raw_len = raw_len};
}

void dead_letters_clear(struct dead_letters *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->items[i].origin);
        free(d->items[i].reason);
        free(d->items[i].raw);
    }
    d->n = 0;
}

/* ------------------------------------------------------------- the loop */
struct runner {
    const struct config *cfg;
    struct redis_target target;
    struct writer writer;
    struct batch batch;
    struct event_spec spec;
    struct sink sink;
    struct source *source;
    int64_t pending_since; /* mono_ms of the first uncommitted read, 0 if none */
    uint64_t pending_messages;
    bool unfinished; /* gave up with uncommitted reads */
};

/* Writes the batch, then commits the source; nothing is committed unless
 * the write was complete. */
static bool flush_and_commit(struct runner *r)
{
    if (!writer_flush(&r->writer, &r->batch))
        return false;
    batch_clear(&r->batch);
    if (!r->source->ops->commit(r->source))
        return false;
    r->pending_since = 0;
    r->pending_messages = 0;
    return true;
}

static void before_revoke(void *ctx)
{
    struct runner *r = ctx;
    if (!flush_and_commit(r)) {
        /* Only at shutdown: drop the batch; the next owner re-reads it. */
        batch_clear(&r->batch);
        r->unfinished = true;
    }
}

/* A write refused for good: the item goes to the dead letters. */
static void on_write_failure(void *ctx, const char *key, size_t key_len, int64_t ts,
                             const char *item, size_t item_len, const char *error)
{
    struct runner *r = ctx;
    if (!r->cfg->dead_letter)
        return;
    struct buf raw = {0};
    buf_append(&raw, "{\"key\":", 7);
    buf_json_string(&raw, key, key_len);
    buf_append(&raw, ",\"item\":", 8);
    buf_json_string(&raw, item, item_len);
    buf_printf(&raw, ",\"ts\":%lld}", (long long)ts);
    r->source->ops->dead_letter(r->source, "redis", error, raw.data, raw.len);
    buf_free(&raw);
}

static bool batch_is_due(const struct runner *r)
{
    const struct config *cfg = r->cfg;
    if (!r->pending_since)
        return false;
    return (int64_t)r->batch.n >= cfg->batch_events ||
           (int64_t)r->batch.arena.len >= cfg->batch_bytes ||
           (int64_t)r->pending_messages >= cfg->batch_events ||
           mono_ms() - r->pending_since >= cfg->flush_interval_ms;
}

/* Checks the policy once at startup: SEEN.INSERT with NOCREATE on a key
 * that does not exist parses every option and then refuses the missing key,
 * so a bad value is reported now rather than at the first write. */
static bool check_policy(struct runner *r)
{
    int n_policy = r->writer.policy_argc;
    if (!n_policy)
        return true;
    char key[80];
    snprintf(key, sizeof key, "seen-ingest:policy-check:%lld:%d", (long long)now_ms(), rand());
    int argc = n_policy + 5;
    const char **argv = xmalloc((size_t)argc * sizeof *argv);
    size_t *lens = xmalloc((size_t)argc * sizeof *lens);
    argv[0] = "SEEN.INSERT";
    argv[1] = key;
    argv[2] = "NOCREATE";
    for (int i = 0; i < n_policy; i++)
        argv[3 + i] = r->writer.policy_argv[i];
    argv[argc - 2] = "ITEMS";
    argv[argc - 1] = "x";
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    struct rcmd cmd = {.argc = argc,
                       .argv = argv,
                       .argvlen = lens,
                       .slot = key_slot(key, strlen(key)),
                       .ask_node = -1,
                       .errors_final = true};
    /* Waits for Redis like any write; a stop request ends the wait. */
    bool ok = redis_exec(&r->target, &cmd, 1);
    if (ok && cmd.state == RCMD_FAILED && strncmp(cmd.error, "ERR no such key", 15) != 0) {
        log_msg(LOG_ERROR, "--policy '%s' refused by redis: %s", r->cfg->policy, cmd.error);
        ok = false;
    }
    free(cmd.error);
    free(argv);
    free(lens);
    return ok;
}

/* Everything the loop needs, checked before anything is read. */
static bool runner_open(struct runner *r, const struct config *cfg)
{
    char err[512];
    /* The address was checked by config_load. */
    struct redis_auth auth = config_auth(cfg);
    redis_target_init(&r->target, cfg->redis, cfg->cluster, (int)cfg->redis_timeout_ms, &auth);
    if (!writer_init(&r->writer, &r->target, cfg, err, sizeof err)) {
        log_msg(LOG_ERROR, "--policy: %s", err);
        return false;
    }
    r->writer.on_failure = on_write_failure;
    r->writer.failure_ctx = r;
    if (!tmpl_compile(&r->spec.key, cfg->key_template, err, sizeof err)) {
        log_msg(LOG_ERROR, "--key-template: %s", err);
        return false;
    }
    r->spec.item_field = cfg->item_field;
    r->spec.ts_field = cfg->ts_field;
    r->spec.ts_scale = cfg->ts_scale;
    r->spec.missing_ts_now = cfg->missing_ts_now;
    if (!check_policy(r))
        return false;
    r->source = cfg->source == SOURCE_KAFKA ? kafka_source_open(cfg, err, sizeof err)
                                            : stream_source_open(cfg, err, sizeof err);
    if (!r->source) {
        log_msg(LOG_ERROR, "%s", err);
        return false;
    }
    r->source->before_revoke = before_revoke;
    r->source->revoke_ctx = r;
    r->sink = (struct sink){.batch = &r->batch, .spec = &r->spec, .source = r->source};
    return true;
}

static void runner_close(struct runner *r)
{
    if (r->source)
        r->source->ops->close(r->source);
    batch_free(&r->batch);
    writer_free(&r->writer);
    tmpl_free(&r->spec.key);
    buf_free(&r->sink.event.key);
    redis_target_free(&r->target);
}

static struct stats_reporter reporter;

static void report_while_waiting(void)
{
    stats_maybe_report(&reporter, false, "retry");
}

int run_ingest(const struct config *cfg)
{
    struct runner r = {.cfg = cfg};
    if (!runner_open(&r, cfg)) {
        runner_close(&r);
        /* Stopped while waiting for Redis at startup is not a config error. */
        return stop_requested ? EXIT_OK : EXIT_USAGE;
    }
    int status = EXIT_OK;
    stats_open(&reporter, cfg);
    while_waiting = report_while_waiting;

    while (!stop_requested) {
        int64_t now = mono_ms();
        int timeout = 1000;
        if (r.pending_since) {
            int64_t left = r.pending_since + cfg->flush_interval_ms - now;
            timeout = left < 0 ? 0 : (int)(left < 1000 ? left : 1000);
        }
        int64_t room = cfg->batch_events - (int64_t)r.pending_messages;
        int got = r.source->ops->poll(r.source, &r.sink, room > 1000 ? 1000 : (int)room, timeout);
        if (got < 0) {
            status = EXIT_RUNTIME;
            break;
        }
        if (got > 0 && !r.pending_since)
            r.pending_since = mono_ms();
        r.pending_messages += (uint64_t)got;
        if (batch_is_due(&r))
            flush_and_commit(&r); /* never gives up while running */
        if (cfg->stats_interval_ms > 0 && mono_ms() - reporter.last_ms >= cfg->stats_interval_ms) {
            stats.lag = r.source->ops->lag(r.source);
            stats_maybe_report(&reporter, false, "run");
        }
    }

    /* Stopping: write and commit what was read, within the shutdown time. */
    if (r.pending_since && !flush_and_commit(&r)) {
        log_msg(LOG_WARN,
                "shutdown: could not write and commit within %lld ms; the "
                "uncommitted events will be read again at the next start",
                (long long)cfg->shutdown_timeout_ms);
        r.unfinished = true;
    }
    stats.lag = r.source->ops->lag(r.source);
    stats_maybe_report(&reporter, true, "exit");
    while_waiting = NULL;
    stats_close(&reporter);
    runner_close(&r);
    if (status == EXIT_OK && r.unfinished)
        status = EXIT_UNFINISHED;
    return status;
}
