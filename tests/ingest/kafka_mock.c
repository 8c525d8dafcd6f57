/* kafka_mock.c — a librdkafka mock cluster in a process of its own, for the
 * ingester's tests.
 *
 * The mock cluster lives inside an rd_kafka_t, so it cannot live inside the
 * ingester: killing the ingester with SIGKILL would take the brokers, the
 * messages and the committed offsets with it.  This program keeps them
 * while ingesters come and go.  It prints its bootstrap servers, then
 * obeys one command per line on standard input, answering one line each:
 *
 *   produce FILE          each line of FILE becomes one message → "produced N"
 *   produce0 FILE         the same with messages separated by NUL bytes, so
 *                         a message can hold several lines
 *   committed GROUP TOPIC sums of the group's committed offsets, of the
 *                         partitions' end offsets and of their start
 *                         offsets → "committed C end E start S" (S > 0
 *                         when the mock's size-bounded log dropped messages)
 *   dump TOPIC            every message of TOPIC, one "msg VALUE" line each
 *                         (newlines as \n), then "end N"
 *   quit
 *
 * usage: kafka_mock --topic NAME [--partitions N] [--brokers N] [--topic ...] */
#include <librdkafka/rdkafka.h>

#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOPICS 8

static rd_kafka_t *producer;
static const char *bootstraps;

static void die(const char *what, const char *why)
{
    fprintf(stderr, "kafka_mock: %s: %s\n", what, why);
    exit(1);
}

static rd_kafka_t *new_client(rd_kafka_type_t type, const char *group)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char err[512];
    if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstraps, err, sizeof err) ||
        (group && rd_kafka_conf_set(conf, "group.id", group, err, sizeof err)) ||
        (type == RD_KAFKA_CONSUMER &&
         rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err)))
        die("config", err);
    rd_kafka_t *rk = rd_kafka_new(type, conf, err, sizeof err);
    if (!rk)
        die("client", err);
    return rk;
}

static void produce(const char *path, int separator)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("error cannot open %s\n", path);
        return;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long count = 0;
    while ((n = getdelim(&line, &cap, separator, f)) >= 0) {
        if (n > 0 && line[n - 1] == separator)
            n--;
        for (;;) {
            rd_kafka_resp_err_t err =
                rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(getenv("MOCK_TOPIC")),
                                  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                  RD_KAFKA_V_VALUE(line, (size_t)n), RD_KAFKA_V_END);
            if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                rd_kafka_poll(producer, 50); /* the local queue drains */
                continue;
            }
            if (err)
                die("produce", rd_kafka_err2str(err));
            break;
        }
        count++;
    }
    free(line);
    fclose(f);
    if (rd_kafka_flush(producer, 60000))
        die("flush", "messages not delivered in 60 s");
    printf("produced %ld\n", count);
}

/* The partitions of a topic, from the cluster's metadata. */
static rd_kafka_topic_partition_list_t *partitions_of(rd_kafka_t *rk, const char *topic)
{
    rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
    const rd_kafka_metadata_t *md;
    if (rd_kafka_metadata(rk, 0, t, &md, 10000))
        die("metadata", topic);
    rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(16);
    for (int i = 0; i < md->topic_cnt; i++)
        for (int p = 0; p < md->topics[i].partition_cnt; p++)
            rd_kafka_topic_partition_list_add(list, topic, md->topics[i].partitions[p].id);
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(t);
    return list;
}

static void committed(const char *group, const char *topic)
{
    rd_kafka_t *rk = new_client(RD_KAFKA_CONSUMER, group);
    rd_kafka_topic_partition_list_t *parts = partitions_of(rk, topic);
    rd_kafka_resp_err_t err = rd_kafka_committed(rk, parts, 10000);
    long long sum = 0, end = 0, start = 0;
    for (int i = 0; !err && i < parts->cnt; i++) {
        int64_t lo, hi;
        if (parts->elems[i].offset > 0)
            sum += parts->elems[i].offset;
        if (!rd_kafka_query_watermark_offsets(rk, topic, parts->elems[i].partition, &lo, &hi,
                                              10000)) {
            end += hi;
            start += lo;
        }
    }
    if (err)
        printf("error %s\n", rd_kafka_err2str(err));
    else
        printf("committed %lld end %lld start %lld\n", sum, end, start);
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_destroy(rk);
}

static void dump(const char *topic)
{
    rd_kafka_t *rk = new_client(RD_KAFKA_CONSUMER, "kafka-mock-dump");
    rd_kafka_topic_partition_list_t *parts = partitions_of(rk, topic);
    long long remaining = 0;
    for (int i = 0; i < parts->cnt; i++) {
        int64_t lo, hi;
        if (rd_kafka_query_watermark_offsets(rk, topic, parts->elems[i].partition, &lo, &hi,
                                             10000) == 0)
            remaining += hi - lo;
        parts->elems[i].offset = RD_KAFKA_OFFSET_BEGINNING;
    }
    rd_kafka_assign(rk, parts);
    long count = 0;
    for (int idle = 0; remaining > 0 && idle < 100;) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (!m) {
            idle++;
            continue;
        }
        if (!m->err) {
            printf("msg ");
            for (size_t i = 0; i < m->len; i++) {
                char c = ((const char *)m->payload)[i];
                if (c == '\n')
                    fputs("\\n", stdout);
                else
                    putchar(c);
            }
            putchar('\n');
            count++;
            remaining--;
        }
        rd_kafka_message_destroy(m);
    }
    printf("end %ld\n", count);
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
}

int main(int argc, char **argv)
{
    const char *topics[MAX_TOPICS];
    int n_topics = 0, partitions = 4, brokers = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--topic") && n_topics < MAX_TOPICS)
            topics[n_topics++] = argv[i + 1];
        else if (!strcmp(argv[i], "--partitions"))
            partitions = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--brokers"))
            brokers = atoi(argv[i + 1]);
        else
            die("usage", "kafka_mock --topic NAME [--partitions N] [--brokers N]");
    }
    if (n_topics == 0 || partitions < 1 || brokers < 1)
        die("usage", "kafka_mock --topic NAME [--partitions N] [--brokers N]");

    /* The producer's test.mock.num.brokers makes the cluster it then uses. */
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char err[512], count[16];
    snprintf(count, sizeof count, "%d", brokers);
    /* Keyless messages spread evenly: the default sticky partitioner puts
     * a burst into one partition, whose size-bounded mock log then drops
     * the oldest messages before a consumer has read them. */
    if (rd_kafka_conf_set(conf, "test.mock.num.brokers", count, err, sizeof err) ||
        rd_kafka_conf_set(conf, "linger.ms", "5", err, sizeof err) ||
        rd_kafka_conf_set(conf, "sticky.partitioning.linger.ms", "0", err, sizeof err))
        die("config", err);
    producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!producer)
        die("producer", err);
    rd_kafka_mock_cluster_t *mc = rd_kafka_handle_mock_cluster(producer);
    if (!mc)
        die("mock", "no mock cluster");
    for (int i = 0; i < n_topics; i++)
        if (rd_kafka_mock_topic_create(mc, topics[i], partitions, 1))
            die("topic", topics[i]);
    bootstraps = rd_kafka_mock_cluster_bootstraps(mc);
    setenv("MOCK_TOPIC", topics[0], 1);
    printf("bootstrap %s\n", bootstraps);
    fflush(stdout);

    char line[4096];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        char a[2048] = "", b[2048] = "";
        char cmd[32] = "";
        sscanf(line, "%31s %2047s %2047s", cmd, a, b);
        if (!strcmp(cmd, "produce"))
            produce(a, '\n');
        else if (!strcmp(cmd, "produce0"))
            produce(a, '\0');
        else if (!strcmp(cmd, "committed"))
            committed(a, b);
        else if (!strcmp(cmd, "dump"))
            dump(a);
        else if (!strcmp(cmd, "quit"))
            break;
        else
            printf("error unknown command '%s'\n", cmd);
        fflush(stdout);
    }
    rd_kafka_destroy(producer);
    return 0;
}
