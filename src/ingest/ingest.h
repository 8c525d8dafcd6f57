/* ingest.h — the pieces of seen-ingest shared between its files: options,
 * logging, events and key templates, the write batch, the Redis writer with
 * Cluster slot routing, the two event sources and the statistics.
 *
 * The program is single-threaded: a source hands over messages, they are
 * parsed into events and appended to one batch, the batch is written to Redis
 * as pipelined SEEN.ADD/SEEN.INSERT commands, and only after Redis has
 * acknowledged every command are the source's offsets committed (Kafka) or
 * its entries acknowledged (Redis Streams). */
#ifndef SEEN_INGEST_H
#define SEEN_INGEST_H

#include "../common/decimal.h"

#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_t;

/* ------------------------------------------------------------------ log */
enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };
extern enum log_level log_threshold;
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Malformed input can arrive at any rate: these are logged up to a budget
 * per stats interval, the rest only counted (log_reset_budget reports them). */
void log_bad_input(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_reset_budget(void);
int64_t now_ms(void);  /* wall clock, ms since the epoch */
int64_t mono_ms(void); /* monotonic clock, for intervals */
void sleep_ms(int64_t ms);

/* Dies on allocation failure: the ingester cannot do anything useful
 * without memory, and its memory use is bounded by configuration. */
void *xmalloc(size_t n);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

/* A growable byte buffer. */
struct buf {
    char *data;
    size_t len, cap;
};
void buf_reserve(struct buf *b, size_t extra);
void buf_append(struct buf *b, const void *data, size_t n);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_free(struct buf *b);
/* Appends s as a JSON string literal (quotes and escapes). */
void buf_json_string(struct buf *b, const char *s, size_t n);

/* Set by SIGTERM/SIGINT: finish the batch, commit, exit. */
extern volatile sig_atomic_t stop_requested;
/* How long retries go on after a stop request (--shutdown-timeout). */
extern int64_t shutdown_timeout_ms;
/* True once a stop was requested longer than shutdown_timeout_ms ago:
 * every retry loop then gives up, leaving its work uncommitted. */
bool giving_up(void);
/* Called while a retry loop waits, so statistics keep coming during an
 * outage; NULL for none. */
extern void (*while_waiting)(void);

/* Credentials every connection authenticates with (AUTH [user] password);
 * password NULL: no AUTH. */
struct redis_auth {
    const char *user, *password;
};

/* -------------------------------------------------------------- options */
enum source_kind { SOURCE_NONE, SOURCE_KAFKA, SOURCE_STREAM };
enum stats_format { STATS_TEXT, STATS_JSON };

#define MAX_KAFKA_PROPS 64

struct config {
    /* target */
    char *redis;  /* host:port of the single Redis, or a Cluster seed */
    bool cluster; /* route keys by slot */
    int64_t redis_timeout_ms;
    char *redis_user;          /* ACL user of every Redis connection, or NULL */
    char *redis_password_file; /* where the password comes from, or NULL */
    char *redis_password;      /* read from that file or the environment */
    char *policy;              /* SEEN.INSERT policy options for keys the writes make */
    /* events */
    char *key_template;
    char *item_field, *ts_field;
    int64_t ts_scale; /* 1 for ms, 1000 for s */
    bool missing_ts_now;
    int64_t ts_granularity_ms;
    /* batching */
    int64_t flush_interval_ms;
    int64_t batch_events;
    int64_t batch_bytes;
    int64_t bulk_threshold;
    /* source */
    enum source_kind source;
    char *group;
    char *dead_letter;
    char *brokers, *topics;
    char *kafka_props[MAX_KAFKA_PROPS]; /* "name=value" */
    int n_kafka_props;
    char *streams, *stream_redis, *consumer, *stream_field, *stream_start;
    int64_t claim_idle_ms;
    /* operation */
    int64_t stats_interval_ms;
    enum stats_format stats_format;
    char *stats_file;
    int64_t shutdown_timeout_ms;
    /* migration */
    char *from, *legacy_pattern, *legacy_type, *state_file, *set_ts;
    int64_t score_scale;
    int64_t scan_count;
    int64_t progress_interval_ms;
    bool check; /* --check: validate, print, exit */
};

/* Exit codes (docs/ingest.md). */
enum {
    EXIT_OK = 0,
    EXIT_RUNTIME = 1,    /* a fatal error while running */
    EXIT_USAGE = 2,      /* bad command line or configuration */
    EXIT_UNFINISHED = 3, /* stopped before everything read was committed */
};

enum command { CMD_RUN, CMD_MIGRATE };
/* Parses argv (and the --config file); exits with EXIT_USAGE on errors,
 * naming the offending option. */
void config_load(struct config *cfg, enum command *cmd, int argc, char **argv);
void config_free(struct config *cfg);
/* The credentials of every Redis connection (password NULL: no AUTH). */
struct redis_auth config_auth(const struct config *cfg);
/* Splits "host:port"; false on bad syntax. */
bool parse_host_port(const char *s, char *host, size_t hostlen, int *port);

/* -------------------------------------------------------- key templates */
/* A compiled key template: literal text and %name references.  The same
 * form, read backwards, matches legacy key names in the migration. */
struct tmpl_part {
    bool is_field;
    char *text; /* literal text, or the field name */
    size_t len;
};
struct tmpl {
    struct tmpl_part *parts;
    size_t n;
};
/* False with a message in err if the template is empty or malformed. */
bool tmpl_compile(struct tmpl *t, const char *text, char *err, size_t errlen);
void tmpl_free(struct tmpl *t);
bool tmpl_uses(const struct tmpl *t, const char *name);

/* Returns the value of a field, or false if missing/unusable (err says why). */
typedef bool (*field_lookup)(void *ctx, const char *name, const char **val, size_t *len, char *err,
                             size_t errlen);
bool tmpl_expand(const struct tmpl *t, field_lookup lookup, void *ctx, struct buf *out, char *err,
                 size_t errlen);

/* ---------------------------------------------------------------- events */
#define SEEN_ITEM_MAX 512         /* the module's limit on an item's length */
#define SEEN_TIME_MAX (1LL << 50) /* the module's limit on AT */
#define KEY_MAX 4096

struct event_spec {
    struct tmpl key;
    const char *item_field, *ts_field;
    int64_t ts_scale;
    bool missing_ts_now;
};
struct event {
    struct buf key;
    const char *item;
    size_t item_len;
    char item_num[24]; /* an integer item's decimal form */
    int64_t ts;
    struct json_t *json; /* the parsed object the item may point into */
};
/* Parses one JSON object into an event; false with a reason in err.  The
 * item stays valid until event_release. */
bool event_from_json(const struct event_spec *spec, const char *text, size_t len, struct event *ev,
                     char *err, size_t errlen);
/* The same from a stream entry's field/value pairs (all strings). */
bool event_from_pairs(const struct event_spec *spec, const char *const *names,
                      const size_t *name_lens, const char *const *values, const size_t *value_lens,
                      size_t n, struct event *ev, char *err, size_t errlen);
void event_release(struct event *ev);

/* ------------------------------------------------------------- cluster */
#define CLUSTER_SLOTS 16384
uint16_t crc16_xmodem(const void *data, size_t n);
/* The slot of a key, honouring {hash tags}. */
uint16_t key_slot(const char *key, size_t n);

/* ------------------------------------------------------------ redis I/O */
struct redisContext;
struct redisReply;

struct redis_node {
    char host[256];
    int port;
    struct redisContext *ctx;
    struct redis_auth auth;
};

/* One command of a pipeline.  argv entries are owned by the caller. */
enum rcmd_state { RCMD_PENDING, RCMD_DONE, RCMD_FAILED };
struct rcmd {
    int argc;
    const char **argv;
    size_t *argvlen;
    uint16_t slot;
    int ask_node; /* -1, or the node an ASK redirection named */
    unsigned redirects;
    enum rcmd_state state;
    long long integer; /* an integer reply */
    char *error;       /* a permanent error reply (owned) */
    bool errors_final; /* every error reply is final, not only the permanent ones */
    void *user;        /* the caller's own */
};

struct redis_target {
    bool cluster;
    char seed_host[256];
    int seed_port;
    int timeout_ms;
    struct redis_auth auth;
    struct redis_node *nodes;
    size_t n_nodes, cap_nodes;
    int slot_node[CLUSTER_SLOTS]; /* node index, or -1 */
    bool slots_known;
    int64_t backoff_ms;
};

/* auth may be NULL (no AUTH); its strings must outlive the target. */
bool redis_target_init(struct redis_target *t, const char *addr, bool cluster, int timeout_ms,
                       const struct redis_auth *auth);
void redis_target_free(struct redis_target *t);
/* Connects (or reconnects) one node; NULL on failure (logged). */
struct redisContext *redis_node_connect(struct redis_node *node, int timeout_ms);
/* A synchronous command on one node, for sources and the migration: the
 * reply, or NULL after a connection error (the node is then closed). */
struct redisReply *redis_node_command(struct redis_node *node, int timeout_ms, int argc,
                                      const char **argv, const size_t *argvlen);
void redis_node_close(struct redis_node *node);
/* Sends every pending command to the master of its slot (or the only
 * server), pipelined per node, following MOVED and ASK, retrying transient
 * failures with backoff until each command is done or failed permanently.
 * Gives up (returns false) only when giving_up() says so. */
bool redis_exec(struct redis_target *t, struct rcmd *cmds, size_t n);
/* True for an error reply that retrying cannot fix. */
bool redis_error_is_permanent(const char *msg);

/* ---------------------------------------------------------------- stats */
struct stats {
    uint64_t messages;     /* source messages/entries read */
    uint64_t events;       /* valid events */
    uint64_t malformed;    /* events skipped as malformed */
    uint64_t batches;      /* batches written */
    uint64_t commands;     /* SEEN commands acknowledged */
    uint64_t items_new;    /* items Redis reported as new */
    uint64_t write_errors; /* items a permanent Redis error refused */
    uint64_t retries;      /* pipeline rounds retried after transient failures */
    uint64_t moved, ask;   /* Cluster redirections followed */
    uint64_t commits;      /* offset commits / XACK rounds */
    uint64_t commit_errors;
    uint64_t dead_letters;
    int64_t lag; /* source lag, -1 when unknown */
};
extern struct stats stats;

struct stats_reporter {
    const struct config *cfg;
    int64_t last_ms;
    struct stats last;
    void *file; /* FILE *, NULL for stderr */
};
void stats_open(struct stats_reporter *r, const struct config *cfg);
/* Prints one line if the interval has passed (or `force`). */
void stats_maybe_report(struct stats_reporter *r, bool force, const char *phase);
void stats_close(struct stats_reporter *r);

/* ---------------------------------------------------------------- batch */
/* Events waiting to be written: copied into one arena so the source's
 * message can be released at once; grouped and sorted only at flush time. */
struct batch_entry {
    size_t key_off, item_off;
    uint32_t key_len, item_len;
    uint64_t key_hash;
    int64_t ts;
};
struct batch {
    struct buf arena;
    struct batch_entry *entries;
    size_t n, cap;
    int64_t first_ms; /* mono_ms when the first entry arrived, 0 if empty */
};
void batch_add(struct batch *b, const char *key, size_t key_len, int64_t ts, const char *item,
               size_t item_len);
void batch_clear(struct batch *b);
void batch_free(struct batch *b);

/* A write failure that no retry can fix, for the dead-letter sink. */
typedef void (*write_failure_cb)(void *ctx, const char *key, size_t key_len, int64_t ts,
                                 const char *item, size_t item_len, const char *error);

struct writer {
    struct redis_target *target;
    const struct config *cfg;
    char **policy_argv; /* the policy, split into words */
    int policy_argc;
    write_failure_cb on_failure;
    void *failure_ctx;
};
bool writer_init(struct writer *w, struct redis_target *t, const struct config *cfg, char *err,
                 size_t errlen);
void writer_free(struct writer *w);
/* Writes the batch (grouped per key and timestamp bucket) and returns true
 * when Redis acknowledged all of it (items refused permanently are reported
 * to on_failure and count as done).  False only when giving up at shutdown. */
bool writer_flush(struct writer *w, struct batch *b);

/* --------------------------------------------------------------- sources */
struct source;
/* Where a source puts what it reads. */
struct sink {
    struct batch *batch;
    const struct event_spec *spec;
    struct source *source; /* for dead letters */
    struct event event;    /* scratch, reused */
};
/* Parses one message of newline-separated JSON events into the batch;
 * `origin` names the message in log lines ("topic/3@1234").  Malformed lines
 * are rejected one by one (sink_reject). */
void sink_message(struct sink *s, const char *origin, const char *data, size_t len);
/* Records one malformed input: logged, counted, sent to the dead letters. */
void sink_reject(struct sink *s, const char *origin, const char *reason, const char *raw,
                 size_t raw_len);

struct source_ops {
    /* Reads up to max messages (waiting at most timeout_ms for the first),
     * appending their events to the sink.  Returns messages read, or -1 on
     * a fatal error. */
    int (*poll)(struct source *s, struct sink *sink, int max, int timeout_ms);
    /* Keeps a dead letter until the next commit writes it (only called when
     * --dead-letter is set). */
    void (*dead_letter)(struct source *s, const char *origin, const char *reason, const char *raw,
                        size_t raw_len);
    /* Makes everything read so far durable at the source: dead letters
     * written, offsets committed / entries acknowledged.  Called only after
     * the batch holding those events was written.  False only when giving
     * up at shutdown (giving_up()). */
    bool (*commit)(struct source *s);
    int64_t (*lag)(struct source *s); /* -1 when unknown */
    void (*close)(struct source *s);
};
struct source {
    const struct source_ops *ops;
    const struct config *cfg;
    /* Called by a source before partitions are taken away (Kafka
     * rebalance): the run loop writes the batch and commits. */
    void (*before_revoke)(void *ctx);
    void *revoke_ctx;
};
/* Dead letters waiting for the next commit, kept by both sources. */
struct dead_letter {
    char *origin, *reason, *raw;
    size_t raw_len;
    bool delivered;
};
struct dead_letters {
    struct dead_letter *items;
    size_t n, cap;
};
void dead_letters_add(struct dead_letters *d, const char *origin, const char *reason,
                      const char *raw, size_t raw_len);
void dead_letters_clear(struct dead_letters *d);
struct source *kafka_source_open(const struct config *cfg, char *err, size_t errlen);
struct source *stream_source_open(const struct config *cfg, char *err, size_t errlen);

/* ------------------------------------------------------------- commands */
int run_ingest(const struct config *cfg);
int run_migrate(const struct config *cfg);

#endif
