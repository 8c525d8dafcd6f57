/*
 * sweep.c — reclaiming what idle keys have forgotten.
 *
 * A slice past the window is forgotten at once (queries ignore it), but
 * its entries stay in the key until the key's next write drops them.  A
 * user who stops coming keeps a key that answers for ever fewer items yet
 * holds all of them until its TTL deletes it whole.  The sweep walks the
 * keyspace a little at every tick, on masters whose clients are not
 * paused, and compacts each key that holds such entries as a write would
 * (seen_compact_key: replicated and written to the AOF as SEEN.COMPACT key
 * NOW ms, so replicas and replays build the same bytes).  A key's memory
 * follows what it still holds, not when its user last came.  It also
 * compacts an import that no write has touched for a second but that the
 * compaction timer (compact.c) does not know of: renamed, moved, RESTOREd.
 *
 * It also packs large keys that have gone idle (seen_key_pack_idle): a
 * user between sessions then holds only the set's bytes.  Packing changes
 * how a key is held, not what it holds, so replicas pack their own keys,
 * and the sweep does this part while clients are paused too.
 *
 * Each tick spends at most SWEEP_BUDGET_US of real time, about 1% of a
 * core; a key is found again within one pass over the keyspace (minutes
 * for millions of keys), and a slice lives for days.
 */
#include "module.h"

#include <time.h>

#define SWEEP_TICK_MS 100
#define SWEEP_BUDGET_US 1000
/* Keys one scan step may find to compact; a step returns a few keys, and a
 * key left out is found on the next pass. */
#define SWEEP_BATCH 64

static RedisModuleScanCursor *cursor;
static int sweep_db;

typedef struct sweep_step {
    int64_t now;
    bool reclaim; /* compact keys too (a master, clients not paused) */
    size_t ndue;
    RedisModuleString *due[SWEEP_BATCH];
} sweep_step;

static int64_t monotonic_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void visit(RedisModuleCtx *ctx, RedisModuleString *name, RedisModuleKey *key, void *data)
{
    sweep_step *step = data;
    atomic_fetch_add_explicit(&seen_counters.sweep_keys_visited, 1, memory_order_relaxed);
    RedisModuleKey *opened = key ? NULL : RedisModule_OpenKey(ctx, name, REDISMODULE_READ);
    RedisModuleKey *k = key ? key : opened;
    seen_key *sk = NULL;
    if (RedisModule_KeyType(k) == REDISMODULE_KEYTYPE_MODULE &&
        RedisModule_ModuleTypeGetType(k) == seen_type)
        sk = RedisModule_ModuleTypeGetValue(k);
    seen_set *set = NULL;
    if (sk && step->reclaim && step->ndue < SWEEP_BATCH && seen_key_idle_work_due(sk, step->now))
        set = seen_key_look(sk);
    /* An import under way waits for its own compaction (compact.c), which
     * drops forgotten entries too.  One that no write has touched for as
     * long as that waits is over: its key was renamed, moved or RESTOREd
     * (the compaction noted the old name, or none), or the list of keys
     * due was full, and the sweep compacts it instead. */
    bool due = false;
    if (set && seen_compactable(set, step->now))
        due = step->now - seen_last_write_at(set) >= SEEN_COMPACT_DELAY_MS;
    else if (set)
        due = seen_holds_forgotten(set, step->now) != 0;
    if (due) {
        size_t len;
        const char *ptr = RedisModule_StringPtrLen(name, &len);
        step->due[step->ndue++] = RedisModule_CreateString(NULL, ptr, len);
    } else if (sk && seen_key_pack_idle(sk, step->now)) {
        atomic_fetch_add_explicit(&seen_counters.sweep_keys_packed, 1, memory_order_relaxed);
    }
    if (opened)
        RedisModule_CloseKey(opened);
}

static void tick(RedisModuleCtx *ctx, void *data)
{
    (void)data;
    RedisModule_CreateTimer(ctx, SWEEP_TICK_MS, tick, NULL);
    int flags = RedisModule_GetContextFlags(ctx);
    /* Replicas apply their master's SEEN.COMPACT.  While clients are paused
     * (CLIENT PAUSE, FAILOVER, a manual cluster failover, a SHUTDOWN
     * waiting for its replicas) the data must stand still, and Redis stops
     * the server if anything is replicated: the sweep compacts nothing
     * then, and only packs idle keys, which replicates nothing. */
    if (flags & REDISMODULE_CTX_FLAGS_LOADING)
        return;
    bool reclaim = (flags & REDISMODULE_CTX_FLAGS_MASTER) && !RedisModule_AvoidReplicaTraffic();
    int64_t start = monotonic_us();
    int64_t now = RedisModule_Milliseconds();
    if (RedisModule_SelectDb(ctx, sweep_db) != REDISMODULE_OK) {
        sweep_db = 0; /* the databases were fewer than when the pass began */
        RedisModule_SelectDb(ctx, 0);
    }
    do {
        if (cursor == NULL)
            cursor = RedisModule_ScanCursorCreate();
        sweep_step step = {.now = now, .reclaim = reclaim, .ndue = 0};
        bool more = RedisModule_Scan(ctx, cursor, visit, &step) != 0;
        /* Packed keys looked at were unpacked: they rest again first. */
        seen_keys_settle(now, false);
        for (size_t i = 0; i < step.ndue; i++) {
            const char *err = NULL;
            int done = seen_compact_key(ctx, step.due[i], now, &err);
            if (done < 0)
                RedisModule_Log(ctx, "warning", "seen: reclaiming a key failed: %s", err);
            else if (done > 0)
                atomic_fetch_add_explicit(&seen_counters.sweep_keys_reclaimed, 1,
                                          memory_order_relaxed);
            RedisModule_FreeString(NULL, step.due[i]);
        }
        seen_keys_settle(now, false);
        if (!more) {
            /* This database is done: the next one, or back to the first. */
            RedisModule_ScanCursorDestroy(cursor);
            cursor = NULL;
            if (RedisModule_SelectDb(ctx, ++sweep_db) != REDISMODULE_OK) {
                sweep_db = 0;
                atomic_fetch_add_explicit(&seen_counters.sweep_passes, 1, memory_order_relaxed);
            }
            break;
        }
    } while (monotonic_us() - start < SWEEP_BUDGET_US);
}

void seen_sweep_start(RedisModuleCtx *ctx)
{
    RedisModule_CreateTimer(ctx, SWEEP_TICK_MS, tick, NULL);
}
