/* kafka.c — the Kafka source: a librdkafka consumer group member whose
 * offsets are committed by hand, only after Redis acknowledged the events
 * read up to them (at-least-once).  Dead letters go to a Kafka topic through
 * a producer, and are delivered before the offsets that covered them are
 * committed. */
#include "ingest.h"

#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kafka_source {
    struct source base;
    rd_kafka_t *consumer;
    rd_kafka_t *producer; /* dead letters; NULL without --dead-letter */
    /* The next offset to commit per partition read since the last commit. */
    rd_kafka_topic_partition_list_t *positions;
    struct dead_letters dead;
    bool fatal;
};

/* Why a consumer stays bounded: prefetch is capped (these defaults, unless
 * the configuration sets them), and the run loop reads no more than a batch
 * before writing it. */
static const char *const consumer_defaults[][2] = {
    {"enable.auto.commit", "false"},   {"enable.auto.offset.store", "false"},
    {"auto.offset.reset", "earliest"}, {"queued.max.messages.kbytes", "16384"},
    {"queued.min.messages", "10000"},  {"enable.partition.eof", "false"},
};
/* What at-least-once needs: these may not be overridden. */
static const char *const consumer_fixed[] = {"enable.auto.commit", "enable.auto.offset.store"};

static bool conf_set(rd_kafka_conf_t *conf, const char *name, const char *value, char *err,
                     size_t errlen)
{
    char why[256];
    if (rd_kafka_conf_set(conf, name, value, why, sizeof why) != RD_KAFKA_CONF_OK) {
        snprintf(err, errlen, "kafka property %s=%s: %s", name, value, why);
        return false;
    }
    return true;
}

/* Applies the user's kafka.NAME=VALUE properties; `fixed` names are refused. */
static bool conf_user(rd_kafka_conf_t *conf, const struct config *cfg, bool consumer, char *err,
                      size_t errlen)
{
    for (int i = 0; i < cfg->n_kafka_props; i++) {
        char *prop = xstrdup(cfg->kafka_props[i]);
        char *eq = strchr(prop, '=');
        *eq = '\0';
        bool ok = true;
        for (size_t f = 0; consumer && f < sizeof consumer_fixed / sizeof *consumer_fixed; f++)
            if (strcmp(prop, consumer_fixed[f]) == 0) {
                snprintf(err, errlen, "kafka property %s is managed by seen-ingest", prop);
                ok = false;
            }
        /* Consumer-only properties on the producer would only warn; skip
         * the group ones that make no sense there. */
        if (ok &&
            (consumer ||
             (strncmp(prop, "group.", 6) != 0 && strncmp(prop, "session.", 8) != 0 &&
              strncmp(prop, "heartbeat.", 10) != 0 && strncmp(prop, "auto.offset", 11) != 0 &&
              strncmp(prop, "queued.", 7) != 0 && strncmp(prop, "partition.assignment", 20) != 0 &&
              strncmp(prop, "max.poll", 8) != 0)))
            ok = conf_set(conf, prop, eq + 1, err, errlen);
        free(prop);
        if (!ok)
            return false;
    }
    return true;
}

static void on_kafka_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    struct kafka_source *k = opaque;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char why[512];
        rd_kafka_fatal_error(rk, why, sizeof why);
        log_msg(LOG_ERROR, "kafka fatal error: %s", why);
        k->fatal = true;
        return;
    }
    log_msg(LOG_WARN, "kafka: %s: %s", rd_kafka_err2name(err), reason);
}

static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    struct kafka_source *k = opaque;
    bool cooperative = strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        log_msg(LOG_INFO, "kafka: %d partitions assigned", parts->cnt);
        if (cooperative)
            rd_kafka_error_destroy(rd_kafka_incremental_assign(rk, parts));
        else
            rd_kafka_assign(rk, parts);
        return;
    }
    /* Revoked (or lost): whatever was read from these partitions is written
     * and committed now, while this member may still commit for them. */
    log_msg(LOG_INFO, "kafka: %d partitions revoked", parts->cnt);
    if (k->base.before_revoke)
        k->base.before_revoke(k->base.revoke_ctx);
    rd_kafka_topic_partition_list_destroy(k->positions);
    k->positions = rd_kafka_topic_partition_list_new(16);
    if (cooperative)
        rd_kafka_error_destroy(rd_kafka_incremental_unassign(rk, parts));
    else
        rd_kafka_assign(rk, NULL);
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
{
    (void)rk;
    (void)opaque;
    struct dead_letter *d = msg->_private;
    if (msg->err)
        log_msg(LOG_WARN, "dead letter not delivered: %s", rd_kafka_err2str(msg->err));
    else if (d)
        d->delivered = true;
}

static void record_position(struct kafka_source *k, const rd_kafka_message_t *m)
{
    const char *topic = rd_kafka_topic_name(m->rkt);
    rd_kafka_topic_partition_t *p =
        rd_kafka_topic_partition_list_find(k->positions, topic, m->partition);
    if (!p)
        p = rd_kafka_topic_partition_list_add(k->positions, topic, m->partition);
    p->offset = m->offset + 1; /* the next one to read */
}

static int kafka_poll(struct source *s, struct sink *sink, int max, int timeout_ms)
{
    struct kafka_source *k = (struct kafka_source *)s;
    int read = 0;
    for (int i = 0; i < max && !k->fatal; i++) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(k->consumer, i == 0 ? timeout_ms : 0);
        if (!m)
            break;
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                log_msg(LOG_WARN, "kafka: %s", rd_kafka_message_errstr(m));
            rd_kafka_message_destroy(m);
            continue;
        }
        char origin[320];
        snprintf(origin, sizeof origin, "%s/%" PRId32 "@%" PRId64, rd_kafka_topic_name(m->rkt),
                 m->partition, m->offset);
        stats.messages++;
        sink_message(sink, origin, m->payload ? m->payload : "", m->len);
        record_position(k, m);
        rd_kafka_message_destroy(m);
        read++;
    }
    return k->fatal ? -1 : read;
}

static void kafka_dead_letter(struct source *s, const char *origin, const char *reason,
                              const char *raw, size_t raw_len)
{
    dead_letters_add(&((struct kafka_source *)s)->dead, origin, reason, raw, raw_len);
}

/* Produces the pending dead letters until every one is delivered. */
static bool deliver_dead_letters(struct kafka_source *k)
{
    for (int64_t backoff = 100;; backoff = backoff < 2000 ? 2 * backoff : 2000) {
        size_t left = 0;
        for (size_t i = 0; i < k->dead.n; i++) {
            struct dead_letter *d = &k->dead.items[i];
            if (d->delivered)
                continue;
            left++;
            rd_kafka_resp_err_t err = rd_kafka_producev(
                k->producer, RD_KAFKA_V_TOPIC(k->base.cfg->dead_letter),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_VALUE(d->raw, d->raw_len),
                RD_KAFKA_V_KEY(d->origin, strlen(d->origin)),
                RD_KAFKA_V_HEADER("seen-origin", d->origin, -1),
                RD_KAFKA_V_HEADER("seen-error", d->reason, -1), RD_KAFKA_V_OPAQUE(d),
                RD_KAFKA_V_END);
            if (err)
                log_msg(LOG_WARN, "dead letter: %s", rd_kafka_err2str(err));
        }
        if (left == 0) {
            stats.dead_letters += k->dead.n;
            dead_letters_clear(&k->dead);
            return true;
        }
        rd_kafka_flush(k->producer, 10000);
        bool all = true;
        for (size_t i = 0; i < k->dead.n && all; i++)
            all = k->dead.items[i].delivered;
        if (all)
            continue; /* counted and cleared at the top */
        if (giving_up())
            return false;
        sleep_ms(backoff);
    }
}

static bool is_retriable_commit_error(rd_kafka_resp_err_t err)
{
    return err == RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT ||
           err == RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE ||
           err == RD_KAFKA_RESP_ERR_NOT_COORDINATOR ||
           err == RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS ||
           err == RD_KAFKA_RESP_ERR__TRANSPORT || err == RD_KAFKA_RESP_ERR__TIMED_OUT;
}

static bool kafka_commit(struct source *s)
{
    struct kafka_source *k = (struct kafka_source *)s;
    if (k->producer && k->dead.n && !deliver_dead_letters(k))
        return false;
    if (k->positions->cnt == 0)
        return true;
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
    for (int attempt = 0; attempt < 5; attempt++) {
        err = rd_kafka_commit(k->consumer, k->positions, 0);
        if (!is_retriable_commit_error(err))
            break;
        sleep_ms(200 << attempt);
    }
    if (err && err != RD_KAFKA_RESP_ERR__NO_OFFSET) {
        /* The events are in Redis; they will be read and written once
         * more by whoever owns the partitions next. Nothing is lost. */
        log_msg(LOG_WARN, "kafka: offset commit failed: %s (events will be re-read)",
                rd_kafka_err2str(err));
        stats.commit_errors++;
    } else {
        stats.commits++;
    }
    rd_kafka_topic_partition_list_destroy(k->positions);
    k->positions = rd_kafka_topic_partition_list_new(16);
    return true;
}

static int64_t kafka_lag(struct source *s)
{
    struct kafka_source *k = (struct kafka_source *)s;
    rd_kafka_topic_partition_list_t *parts = NULL;
    if (rd_kafka_assignment(k->consumer, &parts) || !parts)
        return -1;
    int64_t lag = -1;
    /* From the committed offsets, so messages read but not yet committed
     * (what a crash now would deliver again) count; the consumer's
     * position where the group has committed nothing. */
    rd_kafka_topic_partition_list_t *pos_list = rd_kafka_topic_partition_list_copy(parts);
    rd_kafka_position(k->consumer, pos_list);
    if (rd_kafka_committed(k->consumer, parts, 1000) != RD_KAFKA_RESP_ERR_NO_ERROR)
        for (int i = 0; i < parts->cnt; i++)
            parts->elems[i].offset = RD_KAFKA_OFFSET_INVALID;
    for (int i = 0; i < parts->cnt; i++) {
        int64_t lo, hi;
        const rd_kafka_topic_partition_t *p = &parts->elems[i];
        /* Cached watermarks (from fetch responses): no broker round trip. */
        if (rd_kafka_get_watermark_offsets(k->consumer, p->topic, p->partition, &lo, &hi) || hi < 0)
            continue;
        int64_t pos = p->offset >= 0                   ? p->offset
                      : pos_list->elems[i].offset >= 0 ? pos_list->elems[i].offset
                                                       : lo;
        lag = (lag < 0 ? 0 : lag) + (hi > pos ? hi - pos : 0);
    }
    rd_kafka_topic_partition_list_destroy(pos_list);
    rd_kafka_topic_partition_list_destroy(parts);
    return lag;
}

static void kafka_close(struct source *s)
{
    struct kafka_source *k = (struct kafka_source *)s;
    /* Leaving the group makes the partitions available to others at once
     * instead of after the session timeout.  The batch is already written
     * and committed, so the revoke this triggers has nothing to do. */
    k->base.before_revoke = NULL;
    rd_kafka_consumer_close(k->consumer);
    rd_kafka_destroy(k->consumer);
    if (k->producer) {
        rd_kafka_flush(k->producer, 5000);
        rd_kafka_destroy(k->producer);
    }
    rd_kafka_topic_partition_list_destroy(k->positions);
    dead_letters_clear(&k->dead);
    free(k->dead.items);
    free(k);
}

static const struct source_ops kafka_ops = {kafka_poll, kafka_dead_letter, kafka_commit, kafka_lag,
                                            kafka_close};

static rd_kafka_t *make_producer(const struct config *cfg, struct kafka_source *k, char *err,
                                 size_t errlen)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (!conf_set(conf, "bootstrap.servers", cfg->brokers, err, errlen) ||
        !conf_set(conf, "acks", "all", err, errlen) || !conf_user(conf, cfg, false, err, errlen)) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_error_cb(conf, on_kafka_error);
    rd_kafka_conf_set_opaque(conf, k);
    char why[512];
    rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof why);
    if (!p) {
        snprintf(err, errlen, "kafka producer: %s", why);
        rd_kafka_conf_destroy(conf);
    }
    return p;
}

struct source *kafka_source_open(const struct config *cfg, char *err, size_t errlen)
{
    struct kafka_source *k = xmalloc(sizeof *k);
    *k = (struct kafka_source){.base = {.ops = &kafka_ops, .cfg = cfg}};
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    bool ok = conf_set(conf, "bootstrap.servers", cfg->brokers, err, errlen) &&
              conf_set(conf, "group.id", cfg->group, err, errlen);
    for (size_t i = 0; ok && i < sizeof consumer_defaults / sizeof *consumer_defaults; i++)
        ok = conf_set(conf, consumer_defaults[i][0], consumer_defaults[i][1], err, errlen);
    ok = ok && conf_user(conf, cfg, true, err, errlen);
    if (!ok) {
        rd_kafka_conf_destroy(conf);
        free(k);
        return NULL;
    }
    rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
    rd_kafka_conf_set_error_cb(conf, on_kafka_error);
    rd_kafka_conf_set_opaque(conf, k);
    char why[512];
    k->consumer = rd_kafka_new(RD_KAFKA_CONSUMER, conf, why, sizeof why);
    if (!k->consumer) {
        snprintf(err, errlen, "kafka consumer: %s", why);
        rd_kafka_conf_destroy(conf);
        free(k);
        return NULL;
    }
    rd_kafka_poll_set_consumer(k->consumer);
    k->positions = rd_kafka_topic_partition_list_new(16);

    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(4);
    char *list = xstrdup(cfg->topics);
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
        rd_kafka_topic_partition_list_add(topics, t, RD_KAFKA_PARTITION_UA);
    free(list);
    rd_kafka_resp_err_t e = rd_kafka_subscribe(k->consumer, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (e) {
        snprintf(err, errlen, "kafka subscribe to '%s': %s", cfg->topics, rd_kafka_err2str(e));
        kafka_close(&k->base);
        return NULL;
    }
    if (cfg->dead_letter && !(k->producer = make_producer(cfg, k, err, errlen))) {
        kafka_close(&k->base);
        return NULL;
    }
    log_msg(LOG_INFO, "kafka: consuming %s from %s as group %s", cfg->topics, cfg->brokers,
            cfg->group);
    return &k->base;
}
