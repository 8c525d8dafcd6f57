/*
 * type.c — the module data type "seen--set": one seen set per key, with
 * its key-level flags.  How it is persisted, copied, measured and freed.
 *
 * RDB form (encoding version 1), three module fields:
 *     unsigned  flags       SEEN_KEY_* bits, nothing else allowed
 *     unsigned  jitter_ms   0 .. SEEN_MAX_WINDOW_MS
 *     string    set         seen_serialize() bytes (docs: FORMAT in core)
 * The loader trusts none of it: every read is followed by an I/O error
 * check (REDISMODULE_OPTIONS_HANDLE_IO_ERRORS makes a short or malformed
 * payload an error instead of a crash), the set goes through
 * seen_deserialize(), which validates every field and decodes every run,
 * and any failure returns NULL so that RESTORE answers an error and a
 * corrupt RDB file is refused.
 *
 * AOF rewrite: the original items cannot be listed (only fingerprints are
 * kept), so the rewrite carries the serialized set in SEEN.LOAD commands,
 * split in chunks of seen.aof-chunk bytes when it is larger.
 */
#include "module.h"

#include <string.h>

#define SEEN_TYPE_NAME "seen--set"
#define SEEN_ENCODING_VERSION 1

RedisModuleType *seen_type;
seen_stats seen_counters;

/* ------------------------------------------------------------ values */

seen_key *seen_key_new(seen_set *set, uint32_t flags, int64_t jitter_ms)
{
    seen_key *k = RedisModule_Alloc(sizeof *k);
    *k = (seen_key){set, flags, jitter_ms, 0, 0};
    atomic_fetch_add_explicit(&seen_counters.keys, 1, memory_order_relaxed);
    return k;
}

void seen_key_free(seen_key *k)
{
    atomic_fetch_sub_explicit(&seen_counters.keys, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&seen_counters.items, k->counted_items, memory_order_relaxed);
    atomic_fetch_sub_explicit(&seen_counters.bytes, k->counted_bytes, memory_order_relaxed);
    seen_free(k->set);
    RedisModule_Free(k);
}

static size_t key_bytes(const seen_key *k)
{
    return seen_bytes(k->set) + RedisModule_MallocSize((void *)k);
}

void seen_key_account(seen_key *k, int64_t now)
{
    uint64_t items = seen_count(k->set, now), bytes = key_bytes(k);
    /* Unsigned wrap-around makes add-then-subtract exact either way. */
    atomic_fetch_add_explicit(&seen_counters.items, items - k->counted_items, memory_order_relaxed);
    atomic_fetch_add_explicit(&seen_counters.bytes, bytes - k->counted_bytes, memory_order_relaxed);
    k->counted_items = items;
    k->counted_bytes = bytes;
}

bool seen_key_meta_valid(uint32_t flags, int64_t jitter_ms, const seen_policy *policy)
{
    if (flags & ~SEEN_KEY_FLAGS_ALL)
        return false;
    if (jitter_ms < 0 || (uint64_t)jitter_ms > SEEN_MAX_WINDOW_MS)
        return false;
    return !(flags & SEEN_KEY_EXPIRY) || policy->window_ms > 0;
}

seen_err seen_key_deserialize(const uint8_t *buf, size_t len, seen_set **out)
{
    return seen_deserialize(buf, len, out);
}

/* The set's serialized bytes, in memory Redis accounts for. */
static uint8_t *serialize(const seen_set *set, size_t *len)
{
    size_t need = seen_serialized_size(set);
    uint8_t *buf = RedisModule_Alloc(need ? need : 1);
    if (seen_serialize(set, buf, need, len) != SEEN_OK)
        *len = 0; /* cannot happen: the size was just computed */
    return buf;
}

/* ------------------------------------------------------------ callbacks */

static void type_rdb_save(RedisModuleIO *io, void *value)
{
    seen_key *k = value;
    size_t len;
    uint8_t *buf = serialize(k->set, &len);
    RedisModule_SaveUnsigned(io, k->flags);
    RedisModule_SaveUnsigned(io, (uint64_t)k->jitter_ms);
    RedisModule_SaveStringBuffer(io, (const char *)buf, len);
    RedisModule_Free(buf);
}

static void *type_rdb_load(RedisModuleIO *io, int encver)
{
    if (encver != SEEN_ENCODING_VERSION) {
        RedisModule_LogIOError(io, REDISMODULE_LOGLEVEL_WARNING,
                               "seen: stored with encoding version %d, this module reads %d",
                               encver, SEEN_ENCODING_VERSION);
        return NULL;
    }
    uint64_t flags = RedisModule_LoadUnsigned(io);
    if (RedisModule_IsIOError(io))
        return NULL;
    uint64_t jitter = RedisModule_LoadUnsigned(io);
    if (RedisModule_IsIOError(io))
        return NULL;
    size_t len = 0;
    char *buf = RedisModule_LoadStringBuffer(io, &len);
    if (RedisModule_IsIOError(io) || buf == NULL) {
        if (buf)
            RedisModule_Free(buf);
        return NULL;
    }
    seen_set *set;
    seen_err err = seen_key_deserialize((const uint8_t *)buf, len, &set);
    RedisModule_Free(buf);
    if (err != SEEN_OK) {
        RedisModule_LogIOError(io, REDISMODULE_LOGLEVEL_WARNING, "seen: refusing a stored set: %s",
                               seen_strerror(err));
        return NULL;
    }
    if (flags > UINT32_MAX || jitter > INT64_MAX ||
        !seen_key_meta_valid((uint32_t)flags, (int64_t)jitter, seen_get_policy(set))) {
        RedisModule_LogIOError(io, REDISMODULE_LOGLEVEL_WARNING,
                               "seen: refusing a stored set: bad key flags or jitter");
        seen_free(set);
        return NULL;
    }
    seen_key *k = seen_key_new(set, (uint32_t)flags, (int64_t)jitter);
    seen_key_account(k, RedisModule_Milliseconds());
    return k;
}

static void type_aof_rewrite(RedisModuleIO *aof, RedisModuleString *key, void *value)
{
    seen_key *k = value;
    size_t len;
    uint8_t *buf = serialize(k->set, &len);
    const char *expiry = (k->flags & SEEN_KEY_EXPIRY) ? "ON" : "OFF";
    long long jitter = k->jitter_ms;
    size_t chunk = seen_cfg.aof_chunk;
    if (len <= chunk) {
        RedisModule_EmitAOF(aof, "SEEN.LOAD", "sccclb", key, "EXPIRY", expiry, "JITTER", jitter,
                            (const char *)buf, len);
    } else {
        for (size_t off = 0; off < len; off += chunk) {
            size_t part = len - off < chunk ? len - off : chunk;
            RedisModule_EmitAOF(aof, "SEEN.LOAD", "sccclclclb", key, "EXPIRY", expiry, "JITTER",
                                jitter, "OFFSET", (long long)off, "TOTAL", (long long)len,
                                (const char *)buf + off, part);
        }
    }
    RedisModule_Free(buf);
}

static size_t type_mem_usage(const void *value)
{
    return key_bytes(value);
}

/* Bytes of the serialized set, so that DEBUG DIGEST-VALUE on a master and
 * its replica agree exactly when their sets are identical. */
static void type_digest(RedisModuleDigest *md, void *value)
{
    seen_key *k = value;
    size_t len;
    uint8_t *buf = serialize(k->set, &len);
    RedisModule_DigestAddLongLong(md, k->flags);
    RedisModule_DigestAddLongLong(md, k->jitter_ms);
    RedisModule_DigestAddStringBuffer(md, (const char *)buf, len);
    RedisModule_DigestEndSequence(md);
    RedisModule_Free(buf);
}

static void type_free(void *value)
{
    seen_key_free(value);
}

/* A set is a handful of allocations (header, segment table, head, a few
 * runs) however many items it holds, so freeing is always cheap. */
static size_t type_free_effort(RedisModuleString *key, const void *value)
{
    (void)key;
    const seen_key *k = value;
    return 4 + seen_runs(k->set, NULL, 0);
}

static void *type_copy(RedisModuleString *from, RedisModuleString *to, const void *value)
{
    (void)from;
    (void)to;
    const seen_key *k = value;
    seen_set *copy;
    if (seen_copy(k->set, &copy) != SEEN_OK)
        return NULL;
    seen_key *c = seen_key_new(copy, k->flags, k->jitter_ms);
    seen_key_account(c, RedisModule_Milliseconds());
    return c;
}

int seen_type_register(RedisModuleCtx *ctx)
{
    RedisModuleTypeMethods methods = {
        .version = SEEN_RM_TYPE_METHOD_VERSION,
        .rdb_load = type_rdb_load,
        .rdb_save = type_rdb_save,
        .aof_rewrite = type_aof_rewrite,
        .mem_usage = type_mem_usage,
        .digest = type_digest,
        .free = type_free,
        .free_effort = type_free_effort,
        .copy = type_copy,
    };
    seen_type = RedisModule_CreateDataType(ctx, SEEN_TYPE_NAME, SEEN_ENCODING_VERSION, &methods);
    return seen_type ? REDISMODULE_OK : REDISMODULE_ERR;
}
