/*
 * compact.c — compacting imports once they end.
 *
 * An import (SEEN.ADD/INSERT with AT times from well before the present,
 * or seen-ingest's migration) cannot know how many items will follow, so
 * the core keeps the imported items exact until a live write or an expiry
 * settles the set for what it holds (docs/DESIGN.md).  A migrated user may
 * not write again for hours, so the server does it: after a write on a
 * master that leaves a set holding an import, the key is noted here, and a
 * timer compacts it once no write has touched it for SEEN_COMPACT_DELAY_MS.
 * The compaction is replicated (and written to the AOF) as
 * SEEN.COMPACT key NOW <ms>, so replicas and replays build the same bytes.
 *
 * Nothing is compacted while clients are paused (CLIENT PAUSE, FAILOVER,
 * a manual cluster failover, a SHUTDOWN waiting for replicas): the data
 * must then stand still, and Redis stops the server if a timer replicates
 * a write.  The keys wait for the pause to end.
 *
 * A key that comes back from an RDB file or an AOF at start-up still
 * holding an import (the server stopped within the delay) is noted too, and
 * compacted the delay after loading ends: a restart does not leave it exact
 * until its user writes again.  (A key renamed, moved or RESTOREd within
 * the delay is found by the sweep instead, sweep.c.)
 *
 * Keys are noted in write order; consecutive writes of one key (the pages
 * of one import) share an entry.  A key noted twice is compacted once: the
 * second visit finds nothing to do.  The list is bounded: past its limit a
 * note is dropped, and the sweep finds that key instead.
 */
#include "module.h"

#include <string.h>

#define PENDING_MAX 65536u
/* While clients are paused, how often the timer looks whether they still
 * are. */
#define PAUSED_RETRY_MS 100

typedef struct pending_key {
    int db;
    RedisModuleString *name; /* owned: created without a context */
    int64_t due;             /* compact from this time on */
} pending_key;

static pending_key *pending;
static size_t npending, pending_cap;
static bool timer_armed;

static bool same_key(const pending_key *p, int db, const RedisModuleString *name)
{
    size_t a, b;
    const char *x = RedisModule_StringPtrLen(p->name, &a);
    const char *y = RedisModule_StringPtrLen(name, &b);
    return p->db == db && a == b && memcmp(x, y, a) == 0;
}

static void compact_due(RedisModuleCtx *ctx, void *data);

static void arm_timer(RedisModuleCtx *ctx, int64_t due)
{
    if (timer_armed)
        return;
    int64_t delay = due - RedisModule_Milliseconds();
    RedisModule_CreateTimer(ctx, delay > 1 ? delay : 1, compact_due, NULL);
    timer_armed = true;
}

/* Note key `name` of db for compaction at `due`; false if the list is full. */
static bool note(int db, const RedisModuleString *name, int64_t due)
{
    if (npending > 0 && same_key(&pending[npending - 1], db, name)) {
        pending[npending - 1].due = due;
        return true;
    }
    if (npending == pending_cap) {
        if (pending_cap == PENDING_MAX)
            return false;
        size_t cap = pending_cap ? pending_cap * 2 : 64;
        pending = RedisModule_Realloc(pending, cap * sizeof *pending);
        pending_cap = cap;
    }
    size_t len;
    const char *ptr = RedisModule_StringPtrLen(name, &len);
    pending[npending++] = (pending_key){db, RedisModule_CreateString(NULL, ptr, len), due};
    return true;
}

/* Keys noted while loading wait for it to end. */
#define AFTER_LOADING INT64_MAX

void seen_compact_schedule(RedisModuleCtx *ctx, RedisModuleString *name, seen_key *k, int64_t now)
{
    int flags = RedisModule_GetContextFlags(ctx);
    /* Replicas apply the master's SEEN.COMPACT instead. */
    if ((flags & REDISMODULE_CTX_FLAGS_REPLICATED) || !(flags & REDISMODULE_CTX_FLAGS_MASTER))
        return;
    if (!seen_compactable(seen_key_set(k), now))
        return;
    /* An AOF replayed at start-up may yet hold the key's SEEN.COMPACT; if
     * not, the key compacts once loading ends. */
    bool loading = (flags & REDISMODULE_CTX_FLAGS_LOADING) != 0;
    int64_t due = loading ? AFTER_LOADING : RedisModule_Milliseconds() + SEEN_COMPACT_DELAY_MS;
    if (note(RedisModule_GetSelectedDb(ctx), name, due) && !loading)
        arm_timer(ctx, due);
}

void seen_compact_note_loaded(RedisModuleIO *io, const seen_key *k)
{
    const RedisModuleString *name = RedisModule_GetKeyNameFromIO(io);
    seen_set *set = seen_key_unpacked(k);
    if (name == NULL || set == NULL || !seen_compactable(set, RedisModule_Milliseconds()))
        return;
    note(RedisModule_GetDbIdFromIO(io), name, AFTER_LOADING);
}

/* Loading ended: what it noted is due the delay from now (a replica's
 * timer drops the notes: its master compacts and replicates that). */
static void loading_event(RedisModuleCtx *ctx, RedisModuleEvent eid, uint64_t subevent, void *data)
{
    (void)eid;
    (void)data;
    if (subevent != REDISMODULE_SUBEVENT_LOADING_ENDED)
        return;
    int64_t due = RedisModule_Milliseconds() + SEEN_COMPACT_DELAY_MS;
    bool any = false;
    for (size_t i = 0; i < npending; i++)
        if (pending[i].due == AFTER_LOADING) {
            pending[i].due = due;
            any = true;
        }
    if (any)
        arm_timer(ctx, due);
}

int seen_compact_register(RedisModuleCtx *ctx)
{
    RedisModuleEvent loading = {REDISMODULE_EVENT_LOADING, 1};
    return RedisModule_SubscribeToServerEvent(ctx, loading, loading_event);
}

/* The timer: compact every key whose delay has passed, keep the others
 * (a key written again since is still due later) and re-arm. */
static void compact_due(RedisModuleCtx *ctx, void *data)
{
    (void)data;
    timer_armed = false;
    int64_t now = RedisModule_Milliseconds();
    int flags = RedisModule_GetContextFlags(ctx);
    bool master = (flags & REDISMODULE_CTX_FLAGS_MASTER) != 0;
    if (master && RedisModule_AvoidReplicaTraffic()) {
        /* Clients are paused (CLIENT PAUSE, FAILOVER, a manual cluster
         * failover, a SHUTDOWN waiting for its replicas): the data must
         * stand still, and Redis stops the server if anything is
         * replicated.  Every key stays due; look again shortly. */
        arm_timer(ctx, now + PAUSED_RETRY_MS);
        return;
    }
    size_t keep = 0;
    int64_t next_due = INT64_MAX;
    for (size_t i = 0; i < npending; i++) {
        pending_key *p = &pending[i];
        if (p->due > now) {
            if (p->due < next_due)
                next_due = p->due;
            pending[keep++] = *p;
            continue;
        }
        if (master && RedisModule_SelectDb(ctx, p->db) == REDISMODULE_OK) {
            const char *err = NULL;
            if (seen_compact_key(ctx, p->name, now, &err) < 0)
                RedisModule_Log(ctx, "warning", "seen: compacting an import failed: %s", err);
        }
        RedisModule_FreeString(NULL, p->name);
    }
    npending = keep;
    seen_keys_settle(now, false);
    if (next_due != AFTER_LOADING) /* notes of a load still running wait for its end */
        arm_timer(ctx, next_due);
}
