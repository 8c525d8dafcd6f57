/* stream.c — the Redis Streams source: a consumer of a consumer group
 * (XREADGROUP) whose entries are acknowledged (XACK) only after Redis
 * acknowledged the events they hold.
 *
 * After a restart the consumer first re-reads its own pending entries (read
 * but never acknowledged: the process died between the read and the XACK),
 * then new ones.  With --claim-idle, entries left pending by consumers that
 * went away are claimed (XAUTOCLAIM) and read the same way. */
#include "ingest.h"

#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACK_CHUNK 1000

struct stream_state {
    char *name;
    char cursor[48];     /* ">" for new entries, else the last pending one read */
    char claim_from[48]; /* XAUTOCLAIM's cursor */
    struct buf acks;     /* ids to acknowledge, each ending in '\0' */
    size_t n_acks;
};

struct stream_source {
    struct source base;
    struct redis_target target; /* the server holding the streams */
    struct stream_state *streams;
    size_t n_streams;
    struct dead_letters dead;
    int64_t last_claim_ms;
    bool groups_made;
};

static struct redis_node *stream_node(struct stream_source *s)
{
    return &s->target.nodes[0];
}

static redisReply *stream_command(struct stream_source *s, int argc, const char **argv,
                                  const size_t *lens)
{
    return redis_node_command(stream_node(s), s->target.timeout_ms, argc, argv, lens);
}

/* Creates the group on every stream (and the stream if missing). */
static bool make_groups(struct stream_source *s)
{
    const struct config *cfg = s->base.cfg;
    for (size_t i = 0; i < s->n_streams; i++) {
        const char *argv[] = {"XGROUP",   "CREATE",          s->streams[i].name,
                              cfg->group, cfg->stream_start, "MKSTREAM"};
        redisReply *r = stream_command(s, 6, argv, NULL);
        if (!r)
            return false;
        if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "BUSYGROUP", 9) != 0) {
            log_msg(LOG_WARN, "stream %s: XGROUP CREATE: %s", s->streams[i].name, r->str);
            freeReplyObject(r);
            return false;
        }
        freeReplyObject(r);
    }
    s->groups_made = true;
    return true;
}

/* Moves entries idle too long in other consumers' lists to ours, and
 * rewinds to read our pending list again so they are processed. */
static void claim_idle(struct stream_source *s)
{
    const struct config *cfg = s->base.cfg;
    char idle[24];
    snprintf(idle, sizeof idle, "%" PRId64, cfg->claim_idle_ms);
    for (size_t i = 0; i < s->n_streams; i++) {
        struct stream_state *st = &s->streams[i];
        const char *argv[] = {"XAUTOCLAIM",   st->name, cfg->group, cfg->consumer, idle,
                              st->claim_from, "COUNT",  "1000",     "JUSTID"};
        redisReply *r = stream_command(s, 9, argv, NULL);
        if (!r)
            return;
        if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
            r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_ARRAY) {
            snprintf(st->claim_from, sizeof st->claim_from, "%s", r->element[0]->str);
            if (r->element[1]->elements) {
                log_msg(LOG_INFO, "stream %s: claimed %zu idle entries", st->name,
                        r->element[1]->elements);
                strcpy(st->cursor, "0");
            }
        }
        freeReplyObject(r);
    }
}

static void add_ack(struct stream_state *st, const char *id)
{
    buf_append(&st->acks, id, strlen(id) + 1);
    st->n_acks++;
}

/* One entry: [id, [field, value, ...]] (the fields are nil if deleted). */
static void take_entry(struct stream_source *s, struct stream_state *st, const redisReply *e,
                       struct sink *sink)
{
    const struct config *cfg = s->base.cfg;
    if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 ||
        e->element[0]->type != REDIS_REPLY_STRING)
        return;
    const char *id = e->element[0]->str;
    const redisReply *fields = e->element[1];
    if (strcmp(st->cursor, ">") != 0)
        snprintf(st->cursor, sizeof st->cursor, "%s", id);
    add_ack(st, id);
    if (fields->type != REDIS_REPLY_ARRAY)
        return; /* deleted while pending: nothing to write */
    stats.messages++;
    char origin[300];
    snprintf(origin, sizeof origin, "%s@%s", st->name, id);
    size_t n = fields->elements / 2;
    const char **names = xmalloc((n + 1) * sizeof *names);
    const char **values = xmalloc((n + 1) * sizeof *values);
    size_t *name_lens = xmalloc((n + 1) * sizeof *name_lens);
    size_t *value_lens = xmalloc((n + 1) * sizeof *value_lens);
    for (size_t i = 0; i < n; i++) {
        names[i] = fields->element[2 * i]->str;
        name_lens[i] = (size_t)fields->element[2 * i]->len;
        values[i] = fields->element[2 * i + 1]->str;
        value_lens[i] = (size_t)fields->element[2 * i + 1]->len;
    }
    if (cfg->stream_field[0]) {
        size_t want = strlen(cfg->stream_field), i = 0;
        while (i < n && !(name_lens[i] == want && memcmp(names[i], cfg->stream_field, want) == 0))
            i++;
        if (i < n) {
            sink_message(sink, origin, values[i], value_lens[i]);
        } else {
            char why[128];
            snprintf(why, sizeof why, "entry has no field '%s'", cfg->stream_field);
            sink_reject(sink, origin, why, "", 0);
        }
    } else {
        char err[256];
        if (event_from_pairs(sink->spec, names, name_lens, values, value_lens, n, &sink->event, err,
                             sizeof err)) {
            stats.events++;
            batch_add(sink->batch, sink->event.key.data, sink->event.key.len, sink->event.ts,
                      sink->event.item, sink->event.item_len);
        } else {
            /* The raw form of a field entry, for the log and dead letters. */
            struct buf raw = {0};
            for (size_t i = 0; i < n; i++) {
                buf_append(&raw, names[i], name_lens[i]);
                buf_append(&raw, "=", 1);
                buf_append(&raw, values[i], value_lens[i]);
                buf_append(&raw, i + 1 < n ? " " : "", i + 1 < n);
            }
            sink_reject(sink, origin, err, raw.data ? raw.data : "", raw.len);
            buf_free(&raw);
        }
    }
    free(names);
    free(values);
    free(name_lens);
    free(value_lens);
}

static int stream_poll(struct source *src, struct sink *sink, int max, int timeout_ms)
{
    struct stream_source *s = (struct stream_source *)src;
    const struct config *cfg = src->cfg;
    if (!s->groups_made && !make_groups(s)) {
        sleep_ms(timeout_ms < 1000 ? timeout_ms : 1000);
        return 0;
    }
    if (cfg->claim_idle_ms > 0 && mono_ms() - s->last_claim_ms >= cfg->claim_idle_ms / 2) {
        s->last_claim_ms = mono_ms();
        claim_idle(s);
    }
    bool history = false; /* pending entries are read without blocking */
    for (size_t i = 0; i < s->n_streams; i++)
        history |= strcmp(s->streams[i].cursor, ">") != 0;
    /* BLOCK must end well before the connection's read timeout. */
    int block = timeout_ms < s->target.timeout_ms / 2 ? timeout_ms : s->target.timeout_ms / 2;
    char count[16], block_text[16];
    snprintf(count, sizeof count, "%d", max > 0 ? max : 1);
    snprintf(block_text, sizeof block_text, "%d", block);
    size_t argc = 0, cap = 10 + 2 * s->n_streams;
    const char **argv = xmalloc(cap * sizeof *argv);
    argv[argc++] = "XREADGROUP";
    argv[argc++] = "GROUP";
    argv[argc++] = cfg->group;
    argv[argc++] = cfg->consumer;
    argv[argc++] = "COUNT";
    argv[argc++] = count;
    if (!history && block > 0) {
        argv[argc++] = "BLOCK";
        argv[argc++] = block_text;
    }
    argv[argc++] = "STREAMS";
    for (size_t i = 0; i < s->n_streams; i++)
        argv[argc++] = s->streams[i].name;
    for (size_t i = 0; i < s->n_streams; i++)
        argv[argc++] = s->streams[i].cursor;
    redisReply *r = stream_command(s, (int)argc, argv, NULL);
    free(argv);
    if (!r) {
        sleep_ms(500);
        return 0;
    }
    int read = 0;
    if (r->type == REDIS_REPLY_ERROR) {
        log_msg(LOG_WARN, "XREADGROUP: %s", r->str);
        if (strncmp(r->str, "NOGROUP", 7) == 0)
            s->groups_made = false;
        else
            sleep_ms(500);
    } else if (r->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i < r->elements; i++) {
            const redisReply *sr = r->element[i];
            if (sr->type != REDIS_REPLY_ARRAY || sr->elements < 2 ||
                sr->element[1]->type != REDIS_REPLY_ARRAY)
                continue;
            struct stream_state *st = NULL;
            for (size_t k = 0; k < s->n_streams && !st; k++)
                if (strcmp(s->streams[k].name, sr->element[0]->str) == 0)
                    st = &s->streams[k];
            if (!st)
                continue;
            if (strcmp(st->cursor, ">") != 0 && sr->element[1]->elements == 0)
                strcpy(st->cursor, ">"); /* our pending list is read through */
            for (size_t e = 0; e < sr->element[1]->elements; e++)
                take_entry(s, st, sr->element[1]->element[e], sink);
            read += (int)sr->element[1]->elements;
        }
    }
    freeReplyObject(r);
    return read;
}

static void stream_dead_letter(struct source *src, const char *origin, const char *reason,
                               const char *raw, size_t raw_len)
{
    dead_letters_add(&((struct stream_source *)src)->dead, origin, reason, raw, raw_len);
}

/* XADDs the dead letters and XACKs what was read, retried until done. */
static bool stream_commit(struct source *src)
{
    struct stream_source *s = (struct stream_source *)src;
    const struct config *cfg = src->cfg;
    size_t n_cmds = s->dead.n;
    for (size_t i = 0; i < s->n_streams; i++)
        n_cmds += (s->streams[i].n_acks + ACK_CHUNK - 1) / ACK_CHUNK;
    if (n_cmds == 0)
        return true;
    struct rcmd *cmds = xmalloc(n_cmds * sizeof *cmds);
    size_t c = 0;
    for (size_t i = 0; i < s->dead.n; i++) {
        const struct dead_letter *d = &s->dead.items[i];
        const char **argv = xmalloc(9 * sizeof *argv);
        size_t *lens = xmalloc(9 * sizeof *lens);
        const char *parts[] = {"XADD",  cfg->dead_letter, "*",     "origin", d->origin,
                               "error", d->reason,        "event", d->raw};
        for (int a = 0; a < 9; a++) {
            argv[a] = parts[a];
            lens[a] = strlen(parts[a]);
        }
        lens[8] = d->raw_len;
        cmds[c++] = (struct rcmd){.argc = 9, .argv = argv, .argvlen = lens, .ask_node = -1};
    }
    size_t dead_cmds = c;
    for (size_t i = 0; i < s->n_streams; i++) {
        struct stream_state *st = &s->streams[i];
        const char *id = st->acks.data;
        for (size_t done = 0; done < st->n_acks;) {
            size_t chunk = st->n_acks - done < ACK_CHUNK ? st->n_acks - done : ACK_CHUNK;
            const char **argv = xmalloc((chunk + 3) * sizeof *argv);
            size_t *lens = xmalloc((chunk + 3) * sizeof *lens);
            argv[0] = "XACK";
            argv[1] = st->name;
            argv[2] = cfg->group;
            for (size_t a = 0; a < chunk; a++) {
                argv[3 + a] = id;
                id += strlen(id) + 1;
            }
            for (size_t a = 0; a < chunk + 3; a++)
                lens[a] = strlen(argv[a]);
            cmds[c++] = (struct rcmd){
                .argc = (int)chunk + 3, .argv = argv, .argvlen = lens, .ask_node = -1};
            done += chunk;
        }
    }
    /* Dead letters first: an acknowledged entry's dead letter must exist. */
    bool ok = redis_exec(&s->target, cmds, dead_cmds) &&
              redis_exec(&s->target, cmds + dead_cmds, c - dead_cmds);
    for (size_t i = 0; i < c; i++) {
        if (cmds[i].state == RCMD_FAILED)
            log_msg(LOG_WARN, "%s: %s", cmds[i].argv[0], cmds[i].error);
        free(cmds[i].argv);
        free(cmds[i].argvlen);
        free(cmds[i].error);
    }
    free(cmds);
    if (!ok)
        return false;
    stats.dead_letters += s->dead.n;
    dead_letters_clear(&s->dead);
    for (size_t i = 0; i < s->n_streams; i++) {
        s->streams[i].acks.len = 0;
        s->streams[i].n_acks = 0;
    }
    stats.commits++;
    return true;
}

static int64_t stream_lag(struct source *src)
{
    struct stream_source *s = (struct stream_source *)src;
    int64_t lag = -1;
    for (size_t i = 0; i < s->n_streams; i++) {
        const char *argv[] = {"XINFO", "GROUPS", s->streams[i].name};
        redisReply *r = stream_command(s, 3, argv, NULL);
        if (!r)
            return -1;
        for (size_t g = 0; r->type == REDIS_REPLY_ARRAY && g < r->elements; g++) {
            const redisReply *info = r->element[g];
            bool ours = false;
            long long group_lag = -1, group_pending = 0;
            for (size_t f = 0; info->type == REDIS_REPLY_ARRAY && f + 1 < info->elements; f += 2) {
                const char *name = info->element[f]->str;
                const redisReply *v = info->element[f + 1];
                if (strcmp(name, "name") == 0 && v->type == REDIS_REPLY_STRING)
                    ours = strcmp(v->str, src->cfg->group) == 0;
                if (strcmp(name, "lag") == 0 && v->type == REDIS_REPLY_INTEGER)
                    group_lag = v->integer;
                if (strcmp(name, "pending") == 0 && v->type == REDIS_REPLY_INTEGER)
                    group_pending = v->integer;
            }
            /* Not yet delivered, plus delivered but not acknowledged: what
             * a crash now would make the group read again. */
            if (ours && group_lag >= 0)
                lag = (lag < 0 ? 0 : lag) + group_lag + group_pending;
        }
        freeReplyObject(r);
    }
    return lag;
}

static void stream_close(struct source *src)
{
    struct stream_source *s = (struct stream_source *)src;
    for (size_t i = 0; i < s->n_streams; i++) {
        free(s->streams[i].name);
        buf_free(&s->streams[i].acks);
    }
    free(s->streams);
    dead_letters_clear(&s->dead);
    free(s->dead.items);
    redis_target_free(&s->target);
    free(s);
}

static const struct source_ops stream_ops = {stream_poll, stream_dead_letter, stream_commit,
                                             stream_lag, stream_close};

struct source *stream_source_open(const struct config *cfg, char *err, size_t errlen)
{
    struct stream_source *s = xmalloc(sizeof *s);
    *s = (struct stream_source){.base = {.ops = &stream_ops, .cfg = cfg}};
    const char *addr = cfg->stream_redis ? cfg->stream_redis : cfg->redis;
    struct redis_auth auth = config_auth(cfg);
    if (!redis_target_init(&s->target, addr, false, (int)cfg->redis_timeout_ms, &auth)) {
        snprintf(err, errlen, "--stream-redis: bad address '%s' (want host:port)", addr);
        free(s);
        return NULL;
    }
    char *list = xstrdup(cfg->streams);
    for (char *save = NULL, *name = strtok_r(list, ",", &save); name;
         name = strtok_r(NULL, ",", &save)) {
        s->streams = xrealloc(s->streams, (s->n_streams + 1) * sizeof *s->streams);
        struct stream_state *st = &s->streams[s->n_streams++];
        *st = (struct stream_state){.name = xstrdup(name)};
        strcpy(st->cursor, "0"); /* our own pending entries first */
        strcpy(st->claim_from, "0-0");
    }
    free(list);
    s->last_claim_ms = mono_ms() - cfg->claim_idle_ms; /* claim at the first poll */
    make_groups(s); /* retried from poll if the server is not up yet */
    log_msg(LOG_INFO, "stream: consuming %s on %s as %s of group %s", cfg->streams, addr,
            cfg->consumer, cfg->group);
    return &s->base;
}
