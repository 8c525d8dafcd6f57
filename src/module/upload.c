/*
 * upload.c — serialized sets that SEEN.LOAD receives in chunks
 * (OFFSET/TOTAL), assembled until their last chunk arrives.
 *
 * An upload belongs to the client sending it and to its key, so clients
 * loading different keys at the same time (or a replication stream and an
 * AOF carrying interleaved uploads) never abort one another.  What uploads
 * hold is bounded: all of them together by seen.load-max-memory, and one
 * that receives nothing for seen.load-idle-seconds (its client gone, or
 * given up) is dropped, by the next SEEN.LOAD or by a timer; not while the
 * server replays its AOF, whose time between two chunks is no client's.
 * An upload a replica receives from its master waits longer (twice the
 * time, and a minute more): the master kept it, and the replica sees the
 * gaps between its chunks stretched by however the stream was delayed, so
 * by the master's limit alone it could drop what the master finished.
 */
#include "module.h"

#include <string.h>

struct seen_upload {
    unsigned long long client;
    int db;
    RedisModuleString *name; /* owned: created without a context */
    uint8_t *buf;
    size_t len, total;
    int64_t touched;
    bool from_master; /* arrived by replication */
};

/* How long an upload may go without a chunk. */
static int64_t idle_limit_ms(const seen_upload *u)
{
    int64_t idle = (int64_t)seen_cfg.load_idle_seconds * 1000;
    return u->from_master ? 2 * idle + 60 * 1000 : idle;
}

static seen_upload **uploads;
static size_t nuploads, uploads_cap;
static size_t held; /* bytes of every buffer */

size_t seen_upload_held(void)
{
    return held;
}

void seen_upload_free(seen_upload *u)
{
    if (u == NULL)
        return;
    held -= u->len;
    RedisModule_FreeString(NULL, u->name);
    RedisModule_Free(u->buf);
    RedisModule_Free(u);
}

static void take_out(size_t i)
{
    uploads[i] = uploads[--nuploads];
}

/* Drop uploads idle for longer than the configured time. */
static void sweep(int64_t now)
{
    for (size_t i = 0; i < nuploads;) {
        if (now - uploads[i]->touched >= idle_limit_ms(uploads[i])) {
            seen_upload_free(uploads[i]);
            take_out(i);
        } else {
            i++;
        }
    }
}

static void sweep_timer(RedisModuleCtx *ctx, void *data);

/* A timer is pending for next_sweep (0: none); a shorter idle time set
 * since gets a timer of its own, and a timer that fires early just sweeps
 * what has become idle by then. */
static int64_t next_sweep;

static void arm_sweep(RedisModuleCtx *ctx)
{
    if (nuploads == 0)
        return;
    int64_t due = INT64_MAX;
    for (size_t i = 0; i < nuploads; i++)
        if (uploads[i]->touched + idle_limit_ms(uploads[i]) < due)
            due = uploads[i]->touched + idle_limit_ms(uploads[i]);
    if (next_sweep != 0 && next_sweep <= due)
        return;
    int64_t delay = due - RedisModule_Milliseconds();
    RedisModule_CreateTimer(ctx, delay > 1 ? delay : 1, sweep_timer, NULL);
    next_sweep = due;
}

static void sweep_timer(RedisModuleCtx *ctx, void *data)
{
    (void)data;
    int64_t now = RedisModule_Milliseconds();
    if (now >= next_sweep)
        next_sweep = 0;
    sweep(now);
    arm_sweep(ctx);
}

static bool same_name(RedisModuleString *a, RedisModuleString *b)
{
    size_t la, lb;
    const char *pa = RedisModule_StringPtrLen(a, &la), *pb = RedisModule_StringPtrLen(b, &lb);
    return la == lb && memcmp(pa, pb, la) == 0;
}

const char *seen_upload_chunk(RedisModuleCtx *ctx, RedisModuleString *name, uint64_t offset,
                              uint64_t total, RedisModuleString *chunk, seen_upload **done)
{
    *done = NULL;
    int64_t now = RedisModule_Milliseconds();
    /* An AOF replayed at start-up carries each key's chunks one after
     * another, however long the replay takes between them (a stalled disk,
     * a busy machine): idleness is a client's, not a file's. */
    int flags = RedisModule_GetContextFlags(ctx);
    if (!(flags & REDISMODULE_CTX_FLAGS_LOADING))
        sweep(now);
    unsigned long long client = RedisModule_GetClientId(ctx);
    int db = RedisModule_GetSelectedDb(ctx);
    size_t at = nuploads;
    for (size_t i = 0; i < nuploads; i++)
        if (uploads[i]->client == client && uploads[i]->db == db &&
            same_name(uploads[i]->name, name))
            at = i;
    size_t len;
    const char *bytes = RedisModule_StringPtrLen(chunk, &len);
    if (offset == 0 && at < nuploads) { /* starting over */
        seen_upload_free(uploads[at]);
        take_out(at);
        at = nuploads;
    }
    if (offset != 0 &&
        (at == nuploads || uploads[at]->total != total || uploads[at]->len != offset))
        return "ERR chunk out of order: start again from OFFSET 0";
    if (len > total - offset)
        return "ERR chunk goes past TOTAL";
    if (held + len > seen_cfg.load_max_memory)
        return "ERR SEEN.LOAD uploads in progress would hold more than seen.load-max-memory";
    if (at == nuploads) {
        if (nuploads == uploads_cap) {
            size_t cap = uploads_cap ? uploads_cap * 2 : 8;
            uploads = RedisModule_Realloc(uploads, cap * sizeof *uploads);
            uploads_cap = cap;
        }
        seen_upload *u = RedisModule_Alloc(sizeof *u);
        memset(u, 0, sizeof *u);
        size_t klen;
        const char *k = RedisModule_StringPtrLen(name, &klen);
        u->client = client;
        u->db = db;
        u->name = RedisModule_CreateString(NULL, k, klen);
        u->total = total;
        u->from_master = (flags & REDISMODULE_CTX_FLAGS_REPLICATED) != 0;
        uploads[nuploads++] = u;
    }
    seen_upload *u = uploads[at];
    /* Grow with what arrives, never by what TOTAL claims. */
    u->buf = RedisModule_Realloc(u->buf, u->len + len ? u->len + len : 1);
    memcpy(u->buf + u->len, bytes, len);
    u->len += len;
    held += len;
    u->touched = now;
    if (u->len == u->total) {
        take_out(at);
        *done = u;
    }
    arm_sweep(ctx);
    return NULL;
}

const uint8_t *seen_upload_bytes(const seen_upload *u, size_t *len)
{
    *len = u->len;
    return u->buf;
}
