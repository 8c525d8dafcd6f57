/*
 * module.c — the entry point of seen.so: binds the module API, routes all
 * of the core library's memory through Redis's allocator (so MEMORY USAGE,
 * INFO memory and maxmemory see every byte), and registers the data type,
 * the commands, the configuration and the INFO section.
 */
#include "module.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

seen_config seen_cfg;

/* ------------------------------------------------------------ configs */

/*
 * String configs keep the text they were given (so CONFIG GET shows what
 * was set) beside its parsed value in seen_cfg.
 */
typedef enum string_config { CFG_WINDOW, CFG_ERROR, CFG_JITTER, CFG_STRINGS } string_config;

static RedisModuleString *string_values[CFG_STRINGS];

static RedisModuleString *config_get_string(const char *name, void *privdata)
{
    (void)name;
    return string_values[(string_config)(intptr_t)privdata];
}

static int config_set_string(const char *name, RedisModuleString *val, void *privdata,
                             RedisModuleString **err)
{
    (void)name;
    string_config which = (string_config)(intptr_t)privdata;
    size_t len;
    const char *s = RedisModule_StringPtrLen(val, &len);
    const char *problem = NULL;
    uint64_t ms;
    double rate;
    switch (which) {
    case CFG_WINDOW:
        if (!parse_duration(s, len, &ms) || ms > SEEN_MAX_WINDOW_MS)
            problem = "bad window: give milliseconds, or a number with ms, s, m, h or d";
        else
            seen_cfg.policy.window_ms = ms;
        break;
    case CFG_ERROR:
        if (!parse_error_rate(s, len, &rate) ||
            (rate != 0.0 && (rate < SEEN_MIN_ERROR || rate >= 0.5)))
            problem = "error rate must be in (0, 0.5), at least 1e-9, or exact";
        else
            seen_cfg.policy.error = rate;
        break;
    case CFG_JITTER:
        if (!parse_duration(s, len, &ms) || ms > SEEN_MAX_WINDOW_MS)
            problem = "bad jitter: give a duration of at most 100 years (e.g. 1h)";
        else
            seen_cfg.expiry_jitter_ms = ms;
        break;
    default:
        problem = "unknown setting";
    }
    if (problem) {
        *err = RedisModule_CreateString(NULL, problem, strlen(problem));
        return REDISMODULE_ERR;
    }
    if (string_values[which])
        RedisModule_FreeString(NULL, string_values[which]);
    string_values[which] = RedisModule_CreateString(NULL, s, len);
    return REDISMODULE_OK;
}

typedef enum numeric_config {
    CFG_SLICES,
    CFG_CAPACITY,
    CFG_EXACT_LIMIT,
    CFG_MAX_BATCH,
    CFG_AOF_CHUNK,
    CFG_MFILTER_MAX_KEYS,
    CFG_LOAD_MAX_MEMORY,
    CFG_LOAD_IDLE_SECONDS,
    CFG_PACK_MAX_BYTES,
    CFG_PACK_IDLE_MAX_BYTES,
    CFG_PACK_IDLE_SECONDS
} numeric_config;

static long long config_get_numeric(const char *name, void *privdata)
{
    (void)name;
    switch ((numeric_config)(intptr_t)privdata) {
    case CFG_SLICES:
        return seen_cfg.policy.slices;
    case CFG_CAPACITY:
        return (long long)seen_cfg.policy.capacity;
    case CFG_EXACT_LIMIT:
        return seen_cfg.policy.exact_limit;
    case CFG_MAX_BATCH:
        return (long long)seen_cfg.max_batch;
    case CFG_AOF_CHUNK:
        return (long long)seen_cfg.aof_chunk;
    case CFG_MFILTER_MAX_KEYS:
        return (long long)seen_cfg.mfilter_max_keys;
    case CFG_LOAD_MAX_MEMORY:
        return (long long)seen_cfg.load_max_memory;
    case CFG_LOAD_IDLE_SECONDS:
        return (long long)seen_cfg.load_idle_seconds;
    case CFG_PACK_MAX_BYTES:
        return (long long)seen_cfg.pack_max_bytes;
    case CFG_PACK_IDLE_MAX_BYTES:
        return (long long)seen_cfg.pack_idle_max_bytes;
    case CFG_PACK_IDLE_SECONDS:
        return (long long)seen_cfg.pack_idle_seconds;
    }
    return 0;
}

/* Ranges are enforced by Redis from the registration below. */
static int config_set_numeric(const char *name, long long val, void *privdata,
                              RedisModuleString **err)
{
    (void)name;
    (void)err;
    switch ((numeric_config)(intptr_t)privdata) {
    case CFG_SLICES:
        seen_cfg.policy.slices = (uint32_t)val;
        break;
    case CFG_CAPACITY:
        seen_cfg.policy.capacity = (uint64_t)val;
        break;
    case CFG_EXACT_LIMIT:
        seen_cfg.policy.exact_limit = (uint32_t)val;
        break;
    case CFG_MAX_BATCH:
        seen_cfg.max_batch = (uint64_t)val;
        break;
    case CFG_AOF_CHUNK:
        seen_cfg.aof_chunk = (uint64_t)val;
        break;
    case CFG_MFILTER_MAX_KEYS:
        seen_cfg.mfilter_max_keys = (uint64_t)val;
        break;
    case CFG_LOAD_MAX_MEMORY:
        seen_cfg.load_max_memory = (uint64_t)val;
        break;
    case CFG_LOAD_IDLE_SECONDS:
        seen_cfg.load_idle_seconds = (uint64_t)val;
        break;
    case CFG_PACK_MAX_BYTES:
        seen_cfg.pack_max_bytes = (uint64_t)val;
        break;
    case CFG_PACK_IDLE_MAX_BYTES:
        seen_cfg.pack_idle_max_bytes = (uint64_t)val;
        break;
    case CFG_PACK_IDLE_SECONDS:
        seen_cfg.pack_idle_seconds = (uint64_t)val;
        break;
    }
    return REDISMODULE_OK;
}

static int config_get_bool(const char *name, void *privdata)
{
    (void)name;
    (void)privdata;
    return seen_cfg.key_expiry;
}

static int config_set_bool(const char *name, int val, void *privdata, RedisModuleString **err)
{
    (void)name;
    (void)privdata;
    (void)err;
    seen_cfg.key_expiry = val != 0;
    return REDISMODULE_OK;
}

static int config_get_ids(const char *name, void *privdata)
{
    (void)name;
    (void)privdata;
    return (int)seen_cfg.policy.ids;
}

static int config_set_ids(const char *name, int val, void *privdata, RedisModuleString **err)
{
    (void)name;
    (void)privdata;
    (void)err;
    seen_cfg.policy.ids = val == SEEN_IDS_INT ? SEEN_IDS_INT : SEEN_IDS_STR;
    return REDISMODULE_OK;
}

/* Window and slices are set separately but must agree (a window of at
 * least one millisecond per slice): checked once all of a CONFIG SET is
 * applied, which Redis undoes whole if this fails. */
static int config_apply_policy(RedisModuleCtx *ctx, void *privdata, RedisModuleString **err)
{
    (void)ctx;
    (void)privdata;
    seen_err e = seen_policy_check(&seen_cfg.policy);
    if (e != SEEN_OK) {
        char msg[200];
        snprintf(msg, sizeof msg, "default policy: %s", seen_strerror(e));
        *err = RedisModule_CreateString(NULL, msg, strlen(msg));
        return REDISMODULE_ERR;
    }
    return REDISMODULE_OK;
}

int seen_config_register(RedisModuleCtx *ctx)
{
    seen_policy_default(&seen_cfg.policy);
    static const char *ids_names[] = {"str", "int"};
    static const int ids_values[] = {SEEN_IDS_STR, SEEN_IDS_INT};
    int failed = 0;
    failed |= RedisModule_RegisterStringConfig(
        ctx, "default-window", "90d", REDISMODULE_CONFIG_DEFAULT, config_get_string,
        config_set_string, config_apply_policy, (void *)(intptr_t)CFG_WINDOW);
    failed |= RedisModule_RegisterNumericConfig(ctx, "default-slices", seen_cfg.policy.slices,
                                                REDISMODULE_CONFIG_DEFAULT, 1, SEEN_MAX_SLICES,
                                                config_get_numeric, config_set_numeric,
                                                config_apply_policy, (void *)(intptr_t)CFG_SLICES);
    failed |= RedisModule_RegisterStringConfig(
        ctx, "default-error", "0.001", REDISMODULE_CONFIG_DEFAULT, config_get_string,
        config_set_string, config_apply_policy, (void *)(intptr_t)CFG_ERROR);
    failed |= RedisModule_RegisterNumericConfig(
        ctx, "default-capacity", 0, REDISMODULE_CONFIG_DEFAULT, 0, (long long)SEEN_MAX_CAPACITY,
        config_get_numeric, config_set_numeric, config_apply_policy,
        (void *)(intptr_t)CFG_CAPACITY);
    failed |= RedisModule_RegisterEnumConfig(ctx, "default-ids", SEEN_IDS_STR,
                                             REDISMODULE_CONFIG_DEFAULT, ids_names, ids_values, 2,
                                             config_get_ids, config_set_ids, NULL, NULL);
    failed |= RedisModule_RegisterNumericConfig(
        ctx, "exact-limit", seen_cfg.policy.exact_limit, REDISMODULE_CONFIG_DEFAULT, 0, 1LL << 31,
        config_get_numeric, config_set_numeric, NULL, (void *)(intptr_t)CFG_EXACT_LIMIT);
    failed |= RedisModule_RegisterNumericConfig(
        ctx, "max-batch", 1000000, REDISMODULE_CONFIG_DEFAULT, 1, SEEN_MAX_BATCH,
        config_get_numeric, config_set_numeric, NULL, (void *)(intptr_t)CFG_MAX_BATCH);
    failed |= RedisModule_RegisterBoolConfig(ctx, "key-expiry", 0, REDISMODULE_CONFIG_DEFAULT,
                                             config_get_bool, config_set_bool, NULL, NULL);
    failed |= RedisModule_RegisterStringConfig(
        ctx, "expiry-jitter", "1d", REDISMODULE_CONFIG_DEFAULT, config_get_string,
        config_set_string, NULL, (void *)(intptr_t)CFG_JITTER);
    failed |= RedisModule_RegisterNumericConfig(
        ctx, "aof-chunk", 64LL << 20, REDISMODULE_CONFIG_DEFAULT | REDISMODULE_CONFIG_MEMORY, 1024,
        1LL << 30, config_get_numeric, config_set_numeric, NULL, (void *)(intptr_t)CFG_AOF_CHUNK);
    failed |= RedisModule_RegisterNumericConfig(
        ctx, "mfilter-max-keys", SEEN_MFILTER_MAX_KEYS_DEFAULT, REDISMODULE_CONFIG_DEFAULT, 1,
        SEEN_MFILTER_MAX_KEYS_LIMIT, config_get_numeric, config_set_numeric, NULL,
        (void *)(intptr_t)CFG_MFILTER_MAX_KEYS);
    failed |= RedisModule_RegisterNumericConfig(
        ctx, "load-max-memory", 1LL << 30, REDISMODULE_CONFIG_DEFAULT | REDISMODULE_CONFIG_MEMORY,
        1LL << 20, 1LL << 40, config_get_numeric, config_set_numeric, NULL,
        (void *)(intptr_t)CFG_LOAD_MAX_MEMORY);
    failed |= RedisModule_RegisterNumericConfig(
        ctx, "load-idle-seconds", 60, REDISMODULE_CONFIG_DEFAULT, 1, 86400, config_get_numeric,
        config_set_numeric, NULL, (void *)(intptr_t)CFG_LOAD_IDLE_SECONDS);
    failed |= RedisModule_RegisterNumericConfig(
        ctx, "pack-max-bytes", SEEN_PACK_MAX_BYTES_DEFAULT,
        REDISMODULE_CONFIG_DEFAULT | REDISMODULE_CONFIG_MEMORY, 0, SEEN_PACK_MAX_BYTES_LIMIT,
        config_get_numeric, config_set_numeric, NULL, (void *)(intptr_t)CFG_PACK_MAX_BYTES);
    failed |= RedisModule_RegisterNumericConfig(
        ctx, "pack-idle-max-bytes", SEEN_PACK_MAX_BYTES_LIMIT,
        REDISMODULE_CONFIG_DEFAULT | REDISMODULE_CONFIG_MEMORY, 0, SEEN_PACK_MAX_BYTES_LIMIT,
        config_get_numeric, config_set_numeric, NULL, (void *)(intptr_t)CFG_PACK_IDLE_MAX_BYTES);
    failed |= RedisModule_RegisterNumericConfig(
        ctx, "pack-idle-seconds", SEEN_PACK_IDLE_SECONDS_DEFAULT, REDISMODULE_CONFIG_DEFAULT, 0,
        86400, config_get_numeric, config_set_numeric, NULL,
        (void *)(intptr_t)CFG_PACK_IDLE_SECONDS);
    if (failed)
        return REDISMODULE_ERR;
    return RedisModule_LoadConfigs(ctx);
}

/* ------------------------------------------------------------ INFO */

static void info_section(RedisModuleInfoCtx *ctx, int for_crash_report)
{
    (void)for_crash_report;
    if (RedisModule_InfoAddSection(ctx, NULL) != REDISMODULE_OK)
        return;
    static const struct {
        const char *field;
        atomic_ullong *counter;
    } fields[] = {
        {"keys", &seen_counters.keys},
        {"items", &seen_counters.items},
        {"bytes", &seen_counters.bytes},
        {"add_calls", &seen_counters.add_calls},
        {"items_added", &seen_counters.items_added},
        {"filter_calls", &seen_counters.filter_calls},
        {"candidates_checked", &seen_counters.candidates_checked},
        {"candidates_seen", &seen_counters.candidates_seen},
        {"remove_calls", &seen_counters.remove_calls},
        {"items_removed", &seen_counters.items_removed},
        {"sweep_keys_visited", &seen_counters.sweep_keys_visited},
        {"sweep_keys_reclaimed", &seen_counters.sweep_keys_reclaimed},
        {"sweep_passes", &seen_counters.sweep_passes},
        {"sweep_keys_packed", &seen_counters.sweep_keys_packed},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        RedisModule_InfoAddFieldULongLong(
            ctx, fields[i].field, atomic_load_explicit(fields[i].counter, memory_order_relaxed));
    RedisModule_InfoAddFieldULongLong(ctx, "load_upload_bytes", seen_upload_held());
}

/* ------------------------------------------------------------ entry */

/* Every allocation of the core through Redis, so that MEMORY USAGE, INFO
 * memory and maxmemory see it.  TryAlloc makes an allocation too large to
 * satisfy (a crafted size) an error the core reports, not a server abort.
 * The sanitizer build keeps the C library's allocator, which ASan watches,
 * with its usable sizes, so runs take the layout they take under Redis. */
#ifdef SEEN_MODULE_SYSTEM_ALLOC
static void *system_malloc(size_t n)
{
    return malloc(n);
}
static void *system_realloc(void *p, size_t n)
{
    return realloc(p, n);
}
static void system_free(void *p)
{
    free(p);
}
static size_t system_usable_size(void *p)
{
    return malloc_usable_size(p);
}
#endif

static void install_allocator(void)
{
    static seen_allocator allocator;
#ifndef SEEN_MODULE_SYSTEM_ALLOC
    allocator = (seen_allocator){RedisModule_TryAlloc, RedisModule_Realloc, RedisModule_Free,
                                 RedisModule_MallocSize};
#else
    allocator = (seen_allocator){system_malloc, system_realloc, system_free, system_usable_size};
#endif
    seen_set_allocator(&allocator);
}

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

__attribute__((visibility("default"))) int RedisModule_OnLoad(RedisModuleCtx *ctx,
                                                              RedisModuleString **argv, int argc)
{
    (void)argv;
    if (rm_api_init(ctx, "seen", 1) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    if (argc != 0) {
        RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_WARNING,
                        "seen takes no module arguments: set seen.* configs instead");
        return REDISMODULE_ERR;
    }
    install_allocator();
    RedisModule_SetModuleOptions(ctx, REDISMODULE_OPTIONS_HANDLE_IO_ERRORS);

    if (seen_type_register(ctx) != REDISMODULE_OK) {
        RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_WARNING, "seen: cannot register the data type");
        return REDISMODULE_ERR;
    }
    if (seen_commands_register(ctx) != REDISMODULE_OK) {
        RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_WARNING, "seen: cannot register commands");
        return REDISMODULE_ERR;
    }
    if (seen_config_register(ctx) != REDISMODULE_OK) {
        RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_WARNING, "seen: bad seen.* configuration");
        return REDISMODULE_ERR;
    }
    if (RedisModule_RegisterInfoFunc(ctx, info_section) != REDISMODULE_OK ||
        seen_compact_register(ctx) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    seen_sweep_start(ctx);
    return REDISMODULE_OK;
}
