/* migrate.c — `seen-ingest migrate`: copies legacy per-user ZSETs (member =
 * item, score = time in ms) or SETs into SEEN keys, keeping each item's time.
 *
 * Keys are found with SCAN; a page of keys is read (ZSCAN/SSCAN), written
 * through the same batch writer as the ingester, and only then is the SCAN
 * cursor saved to the --state file.  A rerun resumes at the saved cursor and
 * at worst rewrites one page, which the idempotent adds make harmless.  SCAN
 * returns every key that exists for the whole scan at least once, so keys
 * that stay put are all migrated. */
#include "ingest.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MEMBER_PAGE "1000" /* ZSCAN/SSCAN COUNT */

struct progress {
    char cursor[32];
    uint64_t keys_scanned, keys_migrated, keys_skipped, items, malformed;
    bool done;
};

struct migration {
    const struct config *cfg;
    struct tmpl legacy, key;
    struct redis_target from, to;
    struct writer writer;
    struct batch batch;
    struct progress progress;
    int64_t set_ts; /* the time given to SET members */
    struct buf new_key;
    int64_t started_ms, last_report_ms;
    uint64_t items_at_start;
};

/* -------------------------------------------------------- key patterns */
/* The SCAN MATCH glob of a legacy pattern: literals escaped, fields '*'. */
static void pattern_glob(const struct tmpl *t, struct buf *glob)
{
    for (size_t i = 0; i < t->n; i++) {
        if (t->parts[i].is_field) {
            buf_append(glob, "*", 1);
            continue;
        }
        for (size_t k = 0; k < t->parts[i].len; k++) {
            char c = t->parts[i].text[k];
            if (strchr("*?[]\\", c))
                buf_append(glob, "\\", 1);
            buf_append(glob, &c, 1);
        }
    }
}

/* Matches a key name against the pattern; each field takes the text up to
 * the first occurrence of the literal after it (the rest, for the last). */
struct captures {
    const struct tmpl *t;
    const char *val[32];
    size_t len[32];
};

static bool pattern_match(struct captures *c, const char *key, size_t n)
{
    const struct tmpl *t = c->t;
    size_t pos = 0;
    for (size_t i = 0; i < t->n && i < 32; i++) {
        const struct tmpl_part *p = &t->parts[i];
        if (!p->is_field) {
            if (n - pos < p->len || memcmp(key + pos, p->text, p->len) != 0)
                return false;
            pos += p->len;
            continue;
        }
        size_t end = n;
        if (i + 1 < t->n) { /* the next part is a literal (tmpl_compile insists) */
            const struct tmpl_part *next = &t->parts[i + 1];
            end = pos + 1;
            while (end + next->len <= n && memcmp(key + end, next->text, next->len) != 0)
                end++;
            if (end + next->len > n)
                return false;
        }
        if (end <= pos)
            return false; /* fields are never empty */
        c->val[i] = key + pos;
        c->len[i] = end - pos;
        pos = end;
    }
    return pos == n;
}

static bool capture_lookup(void *ctx, const char *name, const char **val, size_t *len, char *err,
                           size_t errlen)
{
    struct captures *c = ctx;
    for (size_t i = 0; i < c->t->n; i++)
        if (c->t->parts[i].is_field && !strcmp(c->t->parts[i].text, name)) {
            *val = c->val[i];
            *len = c->len[i];
            return true;
        }
    snprintf(err, errlen, "field '%s' is not in --legacy-pattern", name);
    return false;
}

/* ---------------------------------------------------------- state file */
static bool save_state(const struct migration *m)
{
    const char *path = m->cfg->state_file;
    if (!path)
        return true;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        log_msg(LOG_ERROR, "--state %s: %s", tmp, strerror(errno));
        return false;
    }
    const struct progress *p = &m->progress;
    fprintf(f,
            "# seen-ingest migrate state: delete this file to start over\n"
            "from %s\npattern %s\ncursor %s\nkeys_scanned %" PRIu64 "\nkeys_migrated %" PRIu64
            "\nkeys_skipped %" PRIu64 "\nitems %" PRIu64 "\nmalformed %" PRIu64 "\ndone %d\n",
            m->cfg->from ? m->cfg->from : m->cfg->redis, m->cfg->legacy_pattern, p->cursor,
            p->keys_scanned, p->keys_migrated, p->keys_skipped, p->items, p->malformed, p->done);
    /* On disk before it replaces the old state: a crash leaves one or the other. */
    bool ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        log_msg(LOG_ERROR, "--state %s: %s", path, strerror(errno));
        return false;
    }
    return true;
}

/* Loads a previous run's state; false (with a message) if it belongs to
 * another migration or cannot be read. */
static bool load_state(struct migration *m)
{
    strcpy(m->progress.cursor, "0");
    const char *path = m->cfg->state_file;
    if (!path)
        return true;
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT)
            return true;
        log_msg(LOG_ERROR, "--state %s: %s", path, strerror(errno));
        return false;
    }
    char line[4200], name[32], value[4096];
    const char *from = m->cfg->from ? m->cfg->from : m->cfg->redis;
    bool ok = true;
    struct progress *p = &m->progress;
    while (ok && fgets(line, sizeof line, f)) {
        if (line[0] == '#' || sscanf(line, "%31s %4095[^\n]", name, value) != 2)
            continue;
        uint64_t v = 0;
        bool number = decimal_u64(value, strlen(value), &v);
        if (!strcmp(name, "from") && strcmp(value, from)) {
            log_msg(LOG_ERROR, "--state %s is for --from %s, not %s", path, value, from);
            ok = false;
        } else if (!strcmp(name, "pattern") && strcmp(value, m->cfg->legacy_pattern)) {
            log_msg(LOG_ERROR, "--state %s is for --legacy-pattern %s", path, value);
            ok = false;
        } else if (!strcmp(name, "cursor") && number) {
            snprintf(p->cursor, sizeof p->cursor, "%" PRIu64, v);
        } else if (!strcmp(name, "keys_scanned")) {
            p->keys_scanned = v;
        } else if (!strcmp(name, "keys_migrated")) {
            p->keys_migrated = v;
        } else if (!strcmp(name, "keys_skipped")) {
            p->keys_skipped = v;
        } else if (!strcmp(name, "items")) {
            p->items = v;
        } else if (!strcmp(name, "malformed")) {
            p->malformed = v;
        } else if (!strcmp(name, "done")) {
            p->done = v == 1;
        }
    }
    fclose(f);
    if (ok)
        log_msg(LOG_INFO, "resuming from --state %s at cursor %s (%" PRIu64 " keys done)", path,
                p->cursor, p->keys_scanned);
    return ok;
}

/* ------------------------------------------------------------ progress */
static void report(struct migration *m, bool force)
{
    int64_t now = mono_ms();
    if (!force && (m->cfg->progress_interval_ms <= 0 ||
                   now - m->last_report_ms < m->cfg->progress_interval_ms))
        return;
    m->last_report_ms = now;
    const struct progress *p = &m->progress;
    double secs = (double)(now - m->started_ms) / 1000.0;
    double rate = secs > 0 ? (double)(p->items - m->items_at_start) / secs : 0;
    if (m->cfg->stats_format == STATS_JSON)
        fprintf(stderr,
                "{\"phase\":\"migrate\",\"done\":%s,\"cursor\":\"%s\",\"keys_scanned\":%" PRIu64
                ",\"keys_migrated\":%" PRIu64 ",\"keys_skipped\":%" PRIu64 ",\"items\":%" PRIu64
                ",\"malformed\":%" PRIu64 ",\"items_per_sec\":%.1f,\"write_errors\":%" PRIu64 "}\n",
                p->done ? "true" : "false", p->cursor, p->keys_scanned, p->keys_migrated,
                p->keys_skipped, p->items, p->malformed, rate, stats.write_errors);
    else
        log_msg(LOG_INFO,
                "migrate %s cursor=%s keys_scanned=%" PRIu64 " keys_migrated=%" PRIu64
                " keys_skipped=%" PRIu64 " items=%" PRIu64 " malformed=%" PRIu64
                " items/s=%.0f write_errors=%" PRIu64,
                p->done ? "done" : "progress", p->cursor, p->keys_scanned, p->keys_migrated,
                p->keys_skipped, p->items, p->malformed, rate, stats.write_errors);
}

/* -------------------------------------------------------- reading keys */
/* A command on the legacy server, retried while the connection fails. */
static redisReply *legacy_command(struct migration *m, int argc, const char **argv,
                                  const size_t *lens)
{
    for (int64_t backoff = 100; !stop_requested; backoff = backoff < 2000 ? 2 * backoff : 2000) {
        redisReply *r = redis_node_command(&m->from.nodes[0], m->from.timeout_ms, argc, argv, lens);
        if (r)
            return r;
        sleep_ms(backoff);
    }
    return NULL;
}

static bool flush_if_full(struct migration *m)
{
    const struct config *cfg = m->cfg;
    if ((int64_t)m->batch.n < cfg->batch_events && (int64_t)m->batch.arena.len < cfg->batch_bytes)
        return true;
    return writer_flush(&m->writer, &m->batch) && (batch_clear(&m->batch), true);
}

static bool score_time(double score, int64_t scale, int64_t *ts)
{
    if (!isfinite(score) || score < 0 || score * (double)scale > (double)SEEN_TIME_MAX)
        return false;
    *ts = (int64_t)llround(score * (double)scale);
    return true;
}

/* One legacy member, its bytes in the key's arena. */
struct member {
    size_t off, len;
    int64_t ts;
    size_t seq; /* scan order, so equal times keep it */
};

static int member_by_time(const void *a, const void *b)
{
    const struct member *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A key's members as scanned, kept until the scan ends. */
struct members {
    struct buf bytes;
    struct member *v;
    size_t n, cap;
};

static void members_push(struct members *ms, const char *item, size_t len, int64_t ts)
{
    if (ms->n == ms->cap) {
        ms->cap = ms->cap ? 2 * ms->cap : 1024;
        ms->v = xrealloc(ms->v, ms->cap * sizeof *ms->v);
    }
    ms->v[ms->n] = (struct member){ms->bytes.len, len, ts, ms->n};
    ms->n++;
    buf_append(&ms->bytes, item, len);
}

static void members_free(struct members *ms)
{
    buf_free(&ms->bytes);
    free(ms->v);
}

/*
 * Copies one legacy key's members into the batch (writing as it fills),
 * oldest first.  ZSCAN returns a large ZSET's members in no time order, and
 * a key with a CAPACITY keeps its newest items by the order its writes
 * bring them (each write's items are placed by time, but a count step
 * once full cannot be split): a 10,000-play history written page by page
 * as scanned lost 457 of its newest 1,000 under CAPACITY 1000.  So the
 * whole key is scanned first (SCAN's guarantee, every member present
 * throughout returned at least once, is kept), then written in time order.
 */
static bool migrate_key(struct migration *m, const char *key, size_t key_len, bool zset)
{
    char cursor[32] = "0";
    struct members ms = {0};
    bool ok = true;
    do {
        const char *argv[] = {zset ? "ZSCAN" : "SSCAN", key, cursor, "COUNT", MEMBER_PAGE};
        size_t lens[] = {5, key_len, strlen(cursor), 5, strlen(MEMBER_PAGE)};
        redisReply *r = legacy_command(m, 5, argv, lens);
        if (!r) {
            members_free(&ms);
            return false;
        }
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY) {
            log_msg(LOG_WARN, "%s %.*s: unexpected reply%s%s", argv[0], (int)key_len, key,
                    r->type == REDIS_REPLY_ERROR ? ": " : "",
                    r->type == REDIS_REPLY_ERROR ? r->str : "");
            freeReplyObject(r);
            m->progress.keys_skipped++;
            members_free(&ms);
            return true;
        }
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        const redisReply *members = r->element[1];
        size_t step = zset ? 2 : 1;
        for (size_t i = 0; i + step <= members->elements; i += step) {
            const redisReply *item = members->element[i];
            int64_t ts = m->set_ts;
            if ((zset && !score_time(strtod(members->element[i + 1]->str, NULL),
                                     m->cfg->score_scale, &ts)) ||
                item->len == 0 || item->len > SEEN_ITEM_MAX) {
                m->progress.malformed++;
                log_bad_input("legacy key %.*s: member '%.*s' skipped (bad %s)", (int)key_len, key,
                              (int)(item->len > 100 ? 100 : item->len), item->str,
                              zset ? "score or length" : "length");
                continue;
            }
            members_push(&ms, item->str, item->len, ts);
        }
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0 && !stop_requested);
    if (stop_requested) {
        members_free(&ms);
        return false;
    }
    qsort(ms.v, ms.n, sizeof *ms.v, member_by_time);
    /* A key that fits in a batch goes in one command.  Split across two
     * batches, its second part came as a write of its own at the same
     * times, and the set planned again from what it then held: a SET's
     * members all share --set-ts, a bulk load that the set plans for a
     * few times its size, so each part took a finer plan. */
    const struct config *cfg = m->cfg;
    const uint64_t key_bytes = (uint64_t)ms.n * m->new_key.len + ms.bytes.len;
    if (m->batch.n > 0 && ((int64_t)(m->batch.n + ms.n) > cfg->batch_events ||
                           (int64_t)(m->batch.arena.len + key_bytes) > cfg->batch_bytes))
        ok = writer_flush(&m->writer, &m->batch) && (batch_clear(&m->batch), true);
    for (size_t i = 0; i < ms.n && ok; i++) {
        const struct member *e = &ms.v[i];
        batch_add(&m->batch, m->new_key.data, m->new_key.len, e->ts, ms.bytes.data + e->off,
                  e->len);
        m->progress.items++;
        ok = flush_if_full(m);
    }
    members_free(&ms);
    if (ok)
        m->progress.keys_migrated++;
    return ok;
}

/* Which of the page's keys to migrate, and as what: TYPE, pipelined. */
static void key_types(struct migration *m, const redisReply *keys, char *types)
{
    redisContext *c = redis_node_connect(&m->from.nodes[0], m->from.timeout_ms);
    for (size_t i = 0; i < keys->elements; i++)
        types[i] = '?';
    if (!c)
        return;
    for (size_t i = 0; i < keys->elements; i++) {
        const char *argv[] = {"TYPE", keys->element[i]->str};
        size_t lens[] = {4, (size_t)keys->element[i]->len};
        redisAppendCommandArgv(c, 2, argv, lens);
    }
    for (size_t i = 0; i < keys->elements; i++) {
        redisReply *r;
        if (redisGetReply(c, (void **)&r) != REDIS_OK) {
            redis_node_close(&m->from.nodes[0]);
            return; /* the unknown ones are retried with the page */
        }
        if (r->type == REDIS_REPLY_STATUS)
            types[i] = !strcmp(r->str, "zset") ? 'z' : !strcmp(r->str, "set") ? 's' : '-';
        freeReplyObject(r);
    }
}

/* Migrates one SCAN page; false if stopped or failed before it was done. */
static bool migrate_page(struct migration *m, const redisReply *keys)
{
    char *types = xmalloc(keys->elements + 1);
    key_types(m, keys, types);
    bool ok = true;
    const char *want = m->cfg->legacy_type;
    for (size_t i = 0; i < keys->elements && ok; i++) {
        if (types[i] == '?') {
            ok = false; /* the connection broke: redo the page */
            break;
        }
        const redisReply *k = keys->element[i];
        struct captures cap = {.t = &m->legacy};
        char err[256];
        bool wanted =
            (types[i] == 'z' && strcmp(want, "set")) || (types[i] == 's' && strcmp(want, "zset"));
        if (!wanted || !pattern_match(&cap, k->str, (size_t)k->len) ||
            !tmpl_expand(&m->key, capture_lookup, &cap, &m->new_key, err, sizeof err)) {
            m->progress.keys_skipped++;
            continue;
        }
        ok = migrate_key(m, k->str, (size_t)k->len, types[i] == 'z');
        if (stop_requested)
            ok = false;
    }
    free(types);
    /* The page counts as done only once all of it is in Redis. */
    if (ok && !writer_flush(&m->writer, &m->batch))
        ok = false;
    batch_clear(&m->batch);
    if (ok)
        m->progress.keys_scanned += keys->elements;
    return ok;
}

static int migrate_loop(struct migration *m)
{
    struct buf glob = {0};
    pattern_glob(&m->legacy, &glob);
    char count[24];
    snprintf(count, sizeof count, "%" PRId64, m->cfg->scan_count);
    int status = EXIT_OK;
    while (!m->progress.done) {
        const char *argv[] = {"SCAN", m->progress.cursor, "MATCH", glob.data, "COUNT", count};
        redisReply *r = legacy_command(m, 6, argv, NULL);
        if (!r) {
            status = EXIT_UNFINISHED;
            break;
        }
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[1]->type != REDIS_REPLY_ARRAY) {
            log_msg(LOG_ERROR, "SCAN: %s", r->type == REDIS_REPLY_ERROR ? r->str : "bad reply");
            freeReplyObject(r);
            status = EXIT_RUNTIME;
            break;
        }
        if (!migrate_page(m, r->element[1])) {
            freeReplyObject(r);
            if (stop_requested) {
                status = EXIT_UNFINISHED;
                break;
            }
            continue; /* a broken connection: the same page again */
        }
        snprintf(m->progress.cursor, sizeof m->progress.cursor, "%s", r->element[0]->str);
        m->progress.done = strcmp(m->progress.cursor, "0") == 0;
        freeReplyObject(r);
        if (!save_state(m)) {
            status = EXIT_RUNTIME;
            break;
        }
        report(m, false);
    }
    buf_free(&glob);
    return status;
}

/* Everything a migration needs, checked before any key is touched. */
static bool migration_open(struct migration *m, const struct config *cfg)
{
    char err[512];
    if (!tmpl_compile(&m->legacy, cfg->legacy_pattern, err, sizeof err)) {
        log_msg(LOG_ERROR, "--legacy-pattern: %s", err);
        return false;
    }
    if (!tmpl_compile(&m->key, cfg->key_template, err, sizeof err)) {
        log_msg(LOG_ERROR, "--key-template: %s", err);
        return false;
    }
    for (size_t i = 0; i < m->key.n; i++)
        if (m->key.parts[i].is_field && !tmpl_uses(&m->legacy, m->key.parts[i].text)) {
            log_msg(LOG_ERROR, "--key-template: field %%%s is not captured by --legacy-pattern",
                    m->key.parts[i].text);
            return false;
        }
    uint64_t at = 0;
    m->set_ts = decimal_u64(cfg->set_ts, strlen(cfg->set_ts), &at) ? (int64_t)at : now_ms();
    /* Both addresses were checked by config_load. */
    struct redis_auth auth = config_auth(cfg);
    redis_target_init(&m->from, cfg->from ? cfg->from : cfg->redis, false,
                      (int)cfg->redis_timeout_ms, &auth);
    redis_target_init(&m->to, cfg->redis, cfg->cluster, (int)cfg->redis_timeout_ms, &auth);
    if (!writer_init(&m->writer, &m->to, cfg, err, sizeof err)) {
        log_msg(LOG_ERROR, "--policy: %s", err);
        return false;
    }
    return load_state(m);
}

int run_migrate(const struct config *cfg)
{
    struct migration m = {.cfg = cfg};
    int status = EXIT_USAGE;
    if (migration_open(&m, cfg)) {
        m.started_ms = m.last_report_ms = mono_ms();
        m.items_at_start = m.progress.items;
        status = m.progress.done ? EXIT_OK : migrate_loop(&m);
        if (status == EXIT_OK && m.progress.done)
            log_msg(LOG_INFO, "migration complete");
        report(&m, true);
    }
    writer_free(&m.writer);
    batch_free(&m.batch);
    buf_free(&m.new_key);
    tmpl_free(&m.legacy);
    tmpl_free(&m.key);
    redis_target_free(&m.from);
    redis_target_free(&m.to);
    return status;
}
