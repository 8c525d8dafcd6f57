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
 *
 * Resting forms (module.h): a set whose serialized form is at most
 * seen.pack-max-bytes rests as those bytes, which RDB, AOF, DUMP and COPY
 * then use as they are; one up to seen.pack-idle-max-bytes does too once
 * it is idle (the sweep packs it, seen_key_pack_idle).
 */
#include "module.h"

#include <stdlib.h>
#include <string.h>

#include "../common/size_class.h"

#define SEEN_TYPE_NAME "seen--set"
#define SEEN_ENCODING_VERSION 1

RedisModuleType *seen_type;
seen_stats seen_counters;

/* ------------------------------------------------------------ values */

_Static_assert(sizeof(seen_key) == 32, "a key record fits the 32-byte allocation class");
_Static_assert(SEEN_PACK_MAX_BYTES_LIMIT < (1 << 21), "a packed length fits its 21 bits");
_Static_assert(SEEN_KEY_FLAGS_ALL == 1, "the key's flags fit their one bit");

/* ------------------------------------------------------------ packed bytes */

/*
 * Packed bytes rest in one block, or in a chain of up to CHAIN_MAX blocks
 * where one block would be rounded up by much: the allocator's classes are
 * a quarter apart, so at a few KB 2,100 bytes take 2,560, and a second
 * block for what passes 2,048 may itself round 330 bytes up to 384.  Every
 * block but the last is exactly of its class, starts with the address of
 * the next and holds the bytes that fit after it; the last holds the rest.
 * A block before the last is of a class below the bytes still to come, and
 * the last holds them all, so the blocks' sizes and the length tell where
 * the bytes divide: nothing else is kept.
 */

/* Blocks in a chain, at most. */
#define CHAIN_MAX 4
/* Each block a chain adds saves at least this much, or it is not added. */
#define BLOCK_MIN_SAVING 8

static uint8_t *next_block(const uint8_t *block)
{
    uint8_t *b;
    memcpy(&b, block, sizeof b);
    return b;
}

/* Whether `block` holds all of the `left` bytes still to come. */
static bool last_block(const uint8_t *block, size_t left)
{
    return RedisModule_MallocSize((void *)block) >= left;
}

/* Memory the packed bytes (len of them) hold. */
static size_t packed_size(const uint8_t *body, size_t len, bool split)
{
    size_t held = 0, left = len;
    const uint8_t *b = body;
    while (split && !last_block(b, left)) {
        size_t size = RedisModule_MallocSize((void *)b);
        held += size;
        left -= size - sizeof(uint8_t *);
        b = next_block(b);
    }
    return held + RedisModule_MallocSize((void *)b);
}

static void packed_free(uint8_t *body, size_t len, bool split)
{
    size_t left = len;
    uint8_t *b = body;
    while (split && !last_block(b, left)) {
        uint8_t *next = next_block(b);
        left -= RedisModule_MallocSize(b) - sizeof(uint8_t *);
        RedisModule_Free(b);
        b = next;
    }
    RedisModule_Free(b);
}

/* The least memory `left` bytes take in at most `blocks` blocks, charging
 * BLOCK_MIN_SAVING for each block past the first; sizes[] gets the classes
 * of the blocks before the last (*n of them). */
static size_t plan_chain(size_t left, unsigned blocks, size_t *sizes, unsigned *n)
{
    size_t whole = size_class_of(left), first = size_class_below(whole);
    *n = 0;
    if (blocks <= 1 || first <= sizeof(uint8_t *) || first >= left)
        return whole;
    size_t rest_sizes[CHAIN_MAX];
    unsigned rest_n;
    size_t rest = plan_chain(left - (first - sizeof(uint8_t *)), blocks - 1, rest_sizes, &rest_n);
    if (first + rest + BLOCK_MIN_SAVING >= whole)
        return whole;
    sizes[0] = first;
    memcpy(sizes + 1, rest_sizes, rest_n * sizeof *sizes);
    *n = rest_n + 1;
    return first + rest + BLOCK_MIN_SAVING;
}

/* The bytes of `one` (len of them, in one block, taken over) as they rest:
 * in a chain of blocks where that saves memory (*split), else as they
 * are. */
static uint8_t *packed_rest(uint8_t *one, size_t len, bool *split)
{
    *split = false;
    size_t sizes[CHAIN_MAX];
    unsigned n;
    plan_chain(len, CHAIN_MAX, sizes, &n);
    if (n == 0)
        return one;
    uint8_t *blocks[CHAIN_MAX];
    size_t left = len, held = 0;
    unsigned made = 0;
    bool fits = true;
    for (; made < n && fits; made++) {
        blocks[made] = RedisModule_Alloc(sizes[made]);
        /* Its size marks the cut: exactly its class, below what is left. */
        size_t size = RedisModule_MallocSize(blocks[made]);
        fits = size == sizes[made] && size < left;
        held += size;
        left -= sizes[made] - sizeof(uint8_t *);
    }
    if (fits) {
        blocks[made] = RedisModule_Alloc(left);
        held += RedisModule_MallocSize(blocks[made]);
        made++;
    }
    if (!fits || held + BLOCK_MIN_SAVING > RedisModule_MallocSize(one)) {
        while (made > 0)
            RedisModule_Free(blocks[--made]);
        return one;
    }
    const uint8_t *from = one;
    for (unsigned i = 0; i < n; i++) {
        size_t part = sizes[i] - sizeof(uint8_t *);
        memcpy(blocks[i], &blocks[i + 1], sizeof(uint8_t *));
        memcpy(blocks[i] + sizeof(uint8_t *), from, part);
        from += part;
    }
    memcpy(blocks[n], from, len - (size_t)(from - one));
    RedisModule_Free(one);
    *split = true;
    return blocks[0];
}

/* The packed bytes in one piece: the body itself, or (*owned: free it) a
 * copy joining its blocks. */
static const uint8_t *packed_join(const uint8_t *body, size_t len, bool split, bool *owned)
{
    *owned = split;
    if (!split)
        return body;
    uint8_t *joined = RedisModule_Alloc(len);
    size_t at = 0;
    const uint8_t *b = body;
    while (!last_block(b, len - at)) {
        size_t part = RedisModule_MallocSize((void *)b) - sizeof(uint8_t *);
        memcpy(joined + at, b + sizeof(uint8_t *), part);
        at += part;
        b = next_block(b);
    }
    memcpy(joined + at, b, len - at);
    return joined;
}

/* ------------------------------------------------------------ values */

seen_key *seen_key_new(seen_set *set, uint32_t flags, int64_t jitter_ms)
{
    seen_key *k = RedisModule_Alloc(sizeof *k);
    *k = (seen_key){.body = set, .flags = flags & SEEN_KEY_FLAGS_ALL, .jitter_ms = jitter_ms};
    atomic_fetch_add_explicit(&seen_counters.keys, 1, memory_order_relaxed);
    return k;
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

/*
 * The keys the current command (or timer) unpacked or changed.  A packed
 * key a command unpacks holds its set meanwhile, and its bytes wait here:
 * if nothing writes, they are its resting form again when the command
 * ends, without serializing anything.
 */
typedef struct touched_key {
    seen_key *k;
    uint8_t *packed; /* the bytes it rested as, NULL once a write changed it */
    uint32_t packed_len;
    bool packed_split;
} touched_key;

static touched_key *touched;
static size_t ntouched, touched_cap;

static touched_key *touch(seen_key *k)
{
    if (k->listed)
        return NULL;
    if (ntouched == touched_cap) {
        touched_cap = touched_cap ? 2 * touched_cap : 16;
        touched = RedisModule_Realloc(touched, touched_cap * sizeof *touched);
    }
    touched[ntouched] = (touched_key){k, NULL, 0, false};
    k->listed = 1;
    return &touched[ntouched++];
}

/* The entry of a listed key; the newest first, as the key a write
 * changes is the one it just unpacked. */
static touched_key *touched_entry(const seen_key *k)
{
    for (size_t i = ntouched; k->listed && i-- > 0;)
        if (touched[i].k == k)
            return &touched[i];
    return NULL;
}

seen_set *seen_key_set(seen_key *k)
{
    k->used = 1;
    return seen_key_look(k);
}

seen_set *seen_key_look(seen_key *k)
{
    if (k->packed_len) {
        seen_set *set;
        bool joined;
        const uint8_t *bytes = packed_join(k->body, k->packed_len, k->split, &joined);
        /* Bytes this module wrote and validated when they came in: they
         * load unless memory is corrupt, and then nothing can go on. */
        seen_err err = seen_deserialize_trusted(bytes, k->packed_len, &set);
        if (joined)
            RedisModule_Free((void *)bytes);
        if (err != SEEN_OK) {
            RedisModule_Log(NULL, "warning", "seen: a packed set in memory does not load");
            abort();
        }
        touched_key *t = touch(k); /* not listed yet: a listed key is unpacked */
        t->packed = k->body;
        t->packed_len = k->packed_len;
        t->packed_split = k->split;
        k->body = set;
        k->packed_len = 0;
        k->split = 0;
    }
    return k->body;
}

void seen_key_changed(seen_key *k)
{
    seen_key_set(k);
    touched_key *t = touched_entry(k);
    if (t == NULL) {
        touch(k);
    } else if (t->packed) {
        packed_free(t->packed, t->packed_len, t->packed_split);
        t->packed = NULL;
    }
}

#define MS_PER_HOUR (3600 * 1000)
#define WORK_HOUR_MAX ((UINT64_C(1) << 24) - 1)

/* The hour of seen_idle_work_at's answer, rounded down (the sweep may look
 * up to an hour early, never late). */
static uint64_t work_hour_of(int64_t at)
{
    if (at <= 0)
        return 0;
    uint64_t h = (uint64_t)at / MS_PER_HOUR;
    return h < WORK_HOUR_MAX ? h : WORK_HOUR_MAX;
}

bool seen_key_idle_work_due(const seen_key *k, int64_t now)
{
    return k->packed_len == 0 || now < 0 || (uint64_t)now / MS_PER_HOUR >= k->work_hour;
}

/* Rest as packed bytes if the set serializes to at most `max_bytes` and
 * they take less memory: the allocator rounds a block up to its size
 * class (up to a quarter more at a few KB), where a set's runs are cut to
 * fit them. */
static void pack(seen_key *k, uint64_t max_bytes)
{
    seen_set *set = seen_key_unpacked(k);
    if (set == NULL)
        return;
    size_t need = seen_serialized_size(set), len = 0;
    if (need > max_bytes)
        return;
    uint8_t *bytes = RedisModule_Alloc(need ? need : 1);
    if (seen_serialize(set, bytes, need, &len) != SEEN_OK) {
        RedisModule_Free(bytes);
        return;
    }
    bool split;
    bytes = packed_rest(bytes, len, &split);
    if (packed_size(bytes, len, split) >= seen_bytes(set)) {
        packed_free(bytes, len, split);
        return;
    }
    k->body = bytes;
    k->packed_len = len;
    k->split = split;
    k->work_hour = work_hour_of(seen_idle_work_at(set));
    seen_free(set);
}

/* What the key holds as it rests, `t` listing its bytes while a command
 * reads it unpacked. */
static size_t resting_bytes(const seen_key *k, const touched_key *t)
{
    size_t b = RedisModule_MallocSize((void *)k);
    if (t && t->packed)
        return b + packed_size(t->packed, t->packed_len, t->packed_split);
    return b +
           (k->packed_len ? packed_size(k->body, k->packed_len, k->split) : seen_bytes(k->body));
}

/* The key's share of the module's item count, from its set if unpacked. */
static void account_items(seen_key *k, int64_t now)
{
    seen_set *set = seen_key_unpacked(k);
    uint64_t items = set ? seen_count(set, now) : k->counted_items;
    /* Unsigned wrap-around makes add-then-subtract exact either way. */
    atomic_fetch_add_explicit(&seen_counters.items, items - k->counted_items, memory_order_relaxed);
    k->counted_items = items;
}

static void account(seen_key *k, int64_t now, const touched_key *t)
{
    account_items(k, now);
    uint64_t bytes = resting_bytes(k, t);
    atomic_fetch_add_explicit(&seen_counters.bytes, bytes - k->counted_bytes, memory_order_relaxed);
    k->counted_bytes = bytes;
}

void seen_keys_settle(int64_t now, bool in_use)
{
    for (size_t i = 0; i < ntouched; i++) {
        touched_key *t = &touched[i];
        seen_key *k = t->k;
        k->listed = 0;
        if (t->packed && in_use && t->packed_len > seen_cfg.pack_max_bytes) {
            /* A large set at rest, read by a command: the user is back,
             * and the commands that follow find it unpacked. */
            packed_free(t->packed, t->packed_len, t->packed_split);
            account(k, now, NULL);
            continue;
        }
        if (t->packed) { /* only read: the bytes still hold, and their work hour */
            seen_free(k->body);
            k->body = t->packed;
            k->packed_len = t->packed_len;
            k->split = t->packed_split;
            continue;
        }
        account_items(k, now); /* from the set, before it is packed */
        pack(k, seen_cfg.pack_max_bytes);
        account(k, now, NULL); /* bytes, as it rests */
    }
    ntouched = 0;
}

bool seen_key_pack_idle(seen_key *k, int64_t now)
{
    seen_set *set = seen_key_unpacked(k);
    if (set == NULL || k->listed)
        return false;
    if (k->used) {
        k->used = 0;
        return false;
    }
    if (now - seen_last_write_at(set) < (int64_t)seen_cfg.pack_idle_seconds * 1000)
        return false;
    pack(k, seen_cfg.pack_idle_max_bytes);
    if (seen_key_unpacked(k))
        return false;
    account(k, now, NULL);
    return true;
}

void seen_key_free(seen_key *k)
{
    atomic_fetch_sub_explicit(&seen_counters.keys, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&seen_counters.items, k->counted_items, memory_order_relaxed);
    atomic_fetch_sub_explicit(&seen_counters.bytes, k->counted_bytes, memory_order_relaxed);
    /* A key deleted by the command that unpacked it leaves the list. */
    touched_key *t = touched_entry(k);
    if (t) {
        if (t->packed)
            packed_free(t->packed, t->packed_len, t->packed_split);
        *t = touched[--ntouched];
    }
    if (k->packed_len)
        packed_free(k->body, k->packed_len, k->split);
    else
        seen_free(k->body);
    RedisModule_Free(k);
}

size_t seen_key_bytes(const seen_key *k)
{
    const touched_key *t = touched_entry(k);
    return resting_bytes(k, t);
}

void seen_key_account(seen_key *k, int64_t now)
{
    const touched_key *t = touched_entry(k);
    account(k, now, t);
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

/* The key's serialized set: its packed bytes (*owned false, unless they
 * rest in a chain of blocks), or made now (*owned true: free it). */
static const uint8_t *stored_bytes(const seen_key *k, size_t *len, bool *owned)
{
    const touched_key *t = touched_entry(k);
    if (k->packed_len)
        return packed_join(k->body, *len = k->packed_len, k->split, owned);
    if (t && t->packed)
        return packed_join(t->packed, *len = t->packed_len, t->packed_split, owned);
    *owned = true;
    return serialize(k->body, len);
}

static void release_bytes(const uint8_t *buf, bool owned)
{
    if (owned)
        RedisModule_Free((void *)buf);
}

/* ------------------------------------------------------------ callbacks */

static void type_rdb_save(RedisModuleIO *io, void *value)
{
    seen_key *k = value;
    size_t len;
    bool owned;
    const uint8_t *buf = stored_bytes(k, &len, &owned);
    RedisModule_SaveUnsigned(io, k->flags);
    RedisModule_SaveUnsigned(io, (uint64_t)k->jitter_ms);
    RedisModule_SaveStringBuffer(io, (const char *)buf, len);
    release_bytes(buf, owned);
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
    seen_compact_note_loaded(io, k);
    /* A set idle when saved rests packed at once, whatever its size (the
     * sweep would pack it soon, after holding its tables meanwhile). */
    int64_t idle_ms = RedisModule_Milliseconds() - seen_last_write_at(set);
    pack(k, idle_ms >= (int64_t)seen_cfg.pack_idle_seconds * 1000 &&
                    seen_cfg.pack_idle_max_bytes > seen_cfg.pack_max_bytes
                ? seen_cfg.pack_idle_max_bytes
                : seen_cfg.pack_max_bytes);
    seen_key_account(k, RedisModule_Milliseconds());
    return k;
}

static void type_aof_rewrite(RedisModuleIO *aof, RedisModuleString *key, void *value)
{
    seen_key *k = value;
    size_t len;
    bool owned;
    const uint8_t *buf = stored_bytes(k, &len, &owned);
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
    release_bytes(buf, owned);
}

static size_t type_mem_usage(const void *value)
{
    return seen_key_bytes(value);
}

/* Bytes of the serialized set, so that DEBUG DIGEST-VALUE on a master and
 * its replica agree exactly when their sets are identical. */
static void type_digest(RedisModuleDigest *md, void *value)
{
    seen_key *k = value;
    size_t len;
    bool owned;
    const uint8_t *buf = stored_bytes(k, &len, &owned);
    RedisModule_DigestAddLongLong(md, k->flags);
    RedisModule_DigestAddLongLong(md, k->jitter_ms);
    RedisModule_DigestAddStringBuffer(md, (const char *)buf, len);
    RedisModule_DigestEndSequence(md);
    release_bytes(buf, owned);
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
    seen_set *set = seen_key_unpacked(k);
    return set ? 4 + seen_runs(set, NULL, 0) : 2;
}

static void *type_copy(RedisModuleString *from, RedisModuleString *to, const void *value)
{
    (void)from;
    (void)to;
    const seen_key *k = value;
    seen_key *c;
    if (k->packed_len) {
        c = seen_key_new(NULL, k->flags, k->jitter_ms);
        bool joined, split;
        const uint8_t *bytes = packed_join(k->body, k->packed_len, k->split, &joined);
        uint8_t *one = RedisModule_Alloc(k->packed_len);
        memcpy(one, bytes, k->packed_len);
        if (joined)
            RedisModule_Free((void *)bytes);
        c->body = packed_rest(one, k->packed_len, &split);
        c->split = split;
        c->packed_len = k->packed_len;
        c->work_hour = k->work_hour;
        atomic_fetch_add_explicit(&seen_counters.items, k->counted_items, memory_order_relaxed);
        c->counted_items = k->counted_items;
    } else {
        seen_set *copy;
        if (seen_copy(k->body, &copy) != SEEN_OK)
            return NULL;
        c = seen_key_new(copy, k->flags, k->jitter_ms);
    }
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
