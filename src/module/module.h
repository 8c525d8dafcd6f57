/*
 * module.h — what the files of the Redis module share: the value stored
 * under a key, the module configuration, the INFO counters, and the
 * parsing helpers every command uses.  Nothing here is visible outside
 * seen.so (only RedisModule_OnLoad is exported).
 */
#ifndef SEEN_MODULE_H
#define SEEN_MODULE_H

#include "../common/decimal.h"
#include "rm_api.h"
#include "seen.h"

#include <stdatomic.h>
#include <stdbool.h>

/* ------------------------------------------------------------ the value */

/* Flags of a key, stored with it (RDB, AOF, replication). */
#define SEEN_KEY_EXPIRY 1u /* the module sets the key's TTL after each write */
#define SEEN_KEY_FLAGS_ALL SEEN_KEY_EXPIRY

/*
 * A key's set rests in one of two forms.  A small set rests packed: its
 * serialized bytes alone (a few dozen bytes of fixed part instead of the
 * ~600 of the set's tables and a few hundred more per run), unpacked
 * while a command uses it and packed again when the command ends
 * (seen_keys_settle).  A larger set stays unpacked while it is in use, and
 * the sweep packs it once it has been idle for seen.pack-idle-seconds
 * (seen_key_pack_idle); the next command to reach it unpacks it again.
 * Use seen_key_set() to reach the set in either form.
 *
 * Every key pays for this record, so it is kept to 32 bytes, one of the
 * allocator's classes: one pointer serves both forms (while a command
 * reads a packed key, its bytes wait in the list of keys that command
 * touched, type.c), and the small fields share a word.
 */
typedef struct seen_key {
    void *body; /* the seen_set, or its serialized bytes while packed */
    /* Added to the time everything is forgotten, so keys written at the same
     * moment expire at different times.  Drawn once, when the key is made,
     * and kept with it so replicas and reloads compute the same TTL. */
    int64_t jitter_ms;
    /* This key's share of the INFO totals, as of its last write.  Items fit
     * 39 bits: a set holds at most 64 runs of fewer than 2^32 values and a
     * head of 2^22 entries (the core's limits), under 2^39; bytes fit 40
     * (a terabyte). */
    uint64_t counted_bytes : 40;
    /* While packed: the hour (since the epoch) from which the sweep has
     * something to do with the set (seen_idle_work_at); before it, the
     * sweep passes the key without unpacking it.  0: look every time. */
    uint64_t work_hour : 24;
    uint64_t counted_items : 39;
    uint64_t packed_len : 21; /* 0: body is the set; else its bytes' length,
                                 at most SEEN_PACK_MAX_BYTES_LIMIT */
    uint64_t flags : 1;       /* SEEN_KEY_* (validated before they get here) */
    uint64_t listed : 1;      /* touched by the current command */
    uint64_t split : 1;       /* packed bytes in a chain of blocks (type.c) */
    uint64_t used : 1;        /* reached by a command since the sweep last
                                 looked at it */
} seen_key;

extern RedisModuleType *seen_type;

/* Wrap a set (taking it over); NULL only if out of memory. */
seen_key *seen_key_new(seen_set *set, uint32_t flags, int64_t jitter_ms);
void seen_key_free(seen_key *key);
/* The key's set, unpacked if it rests packed (then packed again when the
 * command ends). */
seen_set *seen_key_set(seen_key *key);
/* The same for the sweep, which looking at a key does not count as using
 * it. */
seen_set *seen_key_look(seen_key *key);
/* A write changed the set: its packed bytes are stale, and it is packed
 * again (if small) and recounted when the command ends. */
void seen_key_changed(seen_key *key);
/* At the end of every command and timer: sets unpacked or changed by it
 * rest again, packed if small; `now` recounts the INFO totals.  `in_use`
 * (a command's keys): a large set the command unpacked only to read stays
 * unpacked for the commands that follow, until it is idle again. */
void seen_keys_settle(int64_t now, bool in_use);
/* The sweep found the key at `now`: pack it if it is unpacked, small
 * enough (seen.pack-idle-max-bytes), unwritten for seen.pack-idle-seconds
 * and not reached by a command since the sweep last found it.  Clears the
 * key's mark of use.  True if it packed the key. */
bool seen_key_pack_idle(seen_key *key, int64_t now);
/* May the sweep have something to do with the key at `now` (an unpacked
 * key: always)?  A packed one it need not unpack before its work hour. */
bool seen_key_idle_work_due(const seen_key *key, int64_t now);
/* Recount the key's share of the INFO totals after a write at `now`. */
void seen_key_account(seen_key *key, int64_t now);
/* Memory the key holds as it rests (what MEMORY USAGE counts for it). */
size_t seen_key_bytes(const seen_key *key);
/* The key's set if it is unpacked, else NULL (no unpacking). */
static inline seen_set *seen_key_unpacked(const seen_key *key)
{
    return key->packed_len ? NULL : (seen_set *)key->body;
}
/* Register the data type; REDISMODULE_ERR on failure. */
int seen_type_register(RedisModuleCtx *ctx);

/* The one place the module turns untrusted bytes into a set. */
seen_err seen_key_deserialize(const uint8_t *buf, size_t len, seen_set **out);

/* The fields of a key's envelope are checked the same way wherever they
 * come from (RDB, SEEN.LOAD). */
bool seen_key_meta_valid(uint32_t flags, int64_t jitter_ms, const seen_policy *policy);

/* ------------------------------------------------------------ configs */

typedef struct seen_config {
    seen_policy policy;           /* for keys that SEEN.ADD creates */
    bool key_expiry;              /* module-managed TTL for new keys */
    uint64_t expiry_jitter_ms;    /* jitter of new keys drawn from [0, this] */
    uint64_t max_batch;           /* items in one command */
    uint64_t aof_chunk;           /* bytes per SEEN.LOAD in an AOF rewrite */
    uint64_t mfilter_max_keys;    /* distinct keys one SEEN.MFILTER may name */
    uint64_t load_max_memory;     /* bytes all unfinished SEEN.LOAD uploads may hold */
    uint64_t load_idle_seconds;   /* an upload idle this long is dropped */
    uint64_t pack_max_bytes;      /* sets serializing to at most this rest packed */
    uint64_t pack_idle_max_bytes; /* and up to this, once idle */
    uint64_t pack_idle_seconds;   /* idle: no write for this long */
} seen_config;

/* SEEN.MFILTER's cost is keys x candidates: a user's few keys (delivered,
 * played, a session) fit the default; the limit bounds what one request
 * may ask of the server whatever the configuration. */
#define SEEN_MFILTER_MAX_KEYS_DEFAULT 64
#define SEEN_MFILTER_MAX_KEYS_LIMIT 10000

/* A set rests packed while its serialized form is at most this large:
 * small keys are most keys, and their tables (~600 bytes) would outweigh
 * their items.  Unpacking costs a command under a microsecond per
 * kilobyte (3 us for a steady 4,000-item set), against ~2 bits per item
 * saved at 2,000-4,000 items. */
#define SEEN_PACK_MAX_BYTES_DEFAULT 8192
#define SEEN_PACK_MAX_BYTES_LIMIT (1LL << 20)
/* Larger sets rest packed once idle: a user between sessions holds only
 * the bytes, and the tables come back at the next command (unpacking a
 * 100,000-item set costs ~25 us, a tenth of one query on it).  Idle means
 * no write for this long and no command since the sweep last looked. */
#define SEEN_PACK_IDLE_SECONDS_DEFAULT 10

extern seen_config seen_cfg;

int seen_config_register(RedisModuleCtx *ctx);

/* ------------------------------------------------------------ counters */

/* Key, item and byte totals change in free(), which Redis may run on a
 * lazy-free thread, hence atomics; the rest move on the main thread only,
 * but are atomics too so that INFO never reads a torn value. */
typedef struct seen_stats {
    atomic_ullong keys;
    atomic_ullong items;
    atomic_ullong bytes;
    atomic_ullong add_calls;
    atomic_ullong items_added;
    atomic_ullong filter_calls;
    atomic_ullong candidates_checked;
    atomic_ullong candidates_seen;
    atomic_ullong remove_calls;
    atomic_ullong items_removed;
    atomic_ullong sweep_keys_visited;   /* keys the sweep looked at */
    atomic_ullong sweep_keys_reclaimed; /* and compacted (forgotten entries dropped) */
    atomic_ullong sweep_passes;         /* whole keyspaces walked */
    atomic_ullong sweep_keys_packed;    /* idle large keys it packed */
} seen_stats;

extern seen_stats seen_counters;

int seen_commands_register(RedisModuleCtx *ctx);

/* ------------------------------------------------------------ uploads */

/* A serialized set arriving in chunks (upload.c). */
typedef struct seen_upload seen_upload;
/* Add chunk at `offset` of `total` bytes for key `name` from this client;
 * NULL or a reply-ready error.  *done gets the whole upload when this was
 * its last chunk (free it with seen_upload_free). */
const char *seen_upload_chunk(RedisModuleCtx *ctx, RedisModuleString *name, uint64_t offset,
                              uint64_t total, RedisModuleString *chunk, seen_upload **done);
const uint8_t *seen_upload_bytes(const seen_upload *u, size_t *len);
void seen_upload_free(seen_upload *u);
/* Bytes all unfinished uploads hold (INFO). */
size_t seen_upload_held(void);

/* ------------------------------------------------------------ compaction */

/* How long after an import's last write the server compacts its key. */
#define SEEN_COMPACT_DELAY_MS 1000

/* After a write at `now` on a master: if the set holds an import's items
 * exactly, compact it once no write has touched it for the delay. */
void seen_compact_schedule(RedisModuleCtx *ctx, RedisModuleString *name, seen_key *k, int64_t now);
/* A key loaded from an RDB file still holding an import: compact it once
 * loading ends (seen_compact_register subscribes to that event). */
void seen_compact_note_loaded(RedisModuleIO *io, const seen_key *k);
int seen_compact_register(RedisModuleCtx *ctx);
/* Compact the key `name` of the selected database at `now` if it holds an
 * import's items exactly or entries forgotten by `now`, and replicate that
 * as SEEN.COMPACT ... NOW now.
 * Returns 1 if it did, 0 if there was nothing to do, -1 on error (*err). */
int seen_compact_key(RedisModuleCtx *ctx, RedisModuleString *name, int64_t now, const char **err);

/* Start the sweep that compacts idle keys holding forgotten entries
 * (sweep.c). */
void seen_sweep_start(RedisModuleCtx *ctx);

/* ------------------------------------------------------------ parsing */

/* Does the argument equal `word`, ignoring case? */
bool arg_is(RedisModuleString *arg, const char *word);

/* "90d", "36h", "10m", "30s", "500ms" or plain milliseconds. */
bool parse_duration(const char *s, size_t len, uint64_t *ms);
/* A decimal integer 0..UINT64_MAX: digits only. */
bool arg_u64(RedisModuleString *arg, uint64_t *out);
/* A time in ms since the epoch, 0..SEEN_MAX_TIME_MS. */
bool arg_time(RedisModuleString *arg, int64_t *out);
/* An error rate: "exact", or a number (range checked by the core). */
bool parse_error_rate(const char *s, size_t len, double *out);

/* The candidates or items of one command. */
typedef struct item_batch {
    seen_str *strs;
    size_t n;
    uint64_t *ints; /* filled by item_batch_ints() */
    /* The items are the lines of one buffer, in order: item i + 1 starts
     * one "\n" after item i ends (item_batch_from_bulk). */
    bool lines;
} item_batch;

/* From arguments, or from one argument of "\n"-separated items (one final
 * "\n" is allowed).  Checks the batch limit and item lengths; on error
 * returns false and sets *err to a reply-ready message. */
bool item_batch_from_args(item_batch *b, RedisModuleString **argv, int n, const char **err);
bool item_batch_from_bulk(item_batch *b, RedisModuleString *bulk, const char **err);
/* TIMED items: argv holds pairs "ms item" (bulk NULL), or bulk holds lines
 * "ms item".  *at receives the times (RedisModule_Alloc'd, b->n entries). */
bool item_batch_timed(item_batch *b, RedisModuleString **argv, int argc, RedisModuleString *bulk,
                      int64_t **at, const char **err);
/* Parse every item as an unsigned 64-bit decimal integer. */
bool item_batch_ints(item_batch *b, const char **err);
void item_batch_free(item_batch *b);

/* Options that shape a new key (SEEN.RESERVE, SEEN.INSERT). */
typedef struct key_options {
    seen_policy policy;
    bool expiry;
    int64_t jitter_ms; /* -1: draw one when the key is made */
    uint32_t given;    /* options named so far: each may be named once */
} key_options;

/* Defaults from the module configuration. */
void key_options_default(key_options *o);
/*
 * If argv[*i] names a key option, parse it and its value, advance *i past
 * them and return 1; return 0 if it names none; -1 with *err set if it
 * does but its value is wrong.
 */
int key_option_parse(key_options *o, RedisModuleString **argv, int argc, int *i, const char **err);
/* Check the whole policy; NULL or the error message. */
const char *key_options_check(const key_options *o);

/* The reply-ready message of a core error ("ERR ..."). */
const char *seen_reply_error(seen_err err);

#endif /* SEEN_MODULE_H */
