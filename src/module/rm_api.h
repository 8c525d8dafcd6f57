/*
 * rm_api.h — our own declarations of the part of the Redis module API that
 * seen.so uses, written from the documented API of Redis 7.0 (names,
 * signatures, constants and struct layouts are the ABI; nothing else is).
 *
 * Redis hands a module one entry point, a lookup function found at
 * ((void **)ctx)[0]; rm_api_init() asks it for every function named in
 * RM_API_FUNCTIONS ("RedisModule_" + name) and fails if the server lacks
 * one, so an older server refuses to load the module instead of crashing
 * later.  Each function pointer is a variable RedisModule_<name>, so the
 * code reads like the API reference.
 */
#ifndef SEEN_RM_API_H
#define SEEN_RM_API_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------ constants */

#define REDISMODULE_OK 0
#define REDISMODULE_ERR 1
#define REDISMODULE_APIVER_1 1

#define REDISMODULE_READ (1 << 0)
#define REDISMODULE_WRITE (1 << 1)

#define REDISMODULE_KEYTYPE_EMPTY 0
#define REDISMODULE_KEYTYPE_MODULE 6

#define REDISMODULE_NOTIFY_MODULE (1 << 13)

#define REDISMODULE_CTX_FLAGS_MASTER (1 << 2)
#define REDISMODULE_CTX_FLAGS_REPLICATED (1 << 12)
#define REDISMODULE_CTX_FLAGS_LOADING (1 << 13)

#define REDISMODULE_OPTIONS_HANDLE_IO_ERRORS (1 << 0)

#define REDISMODULE_CONFIG_DEFAULT 0
#define REDISMODULE_CONFIG_MEMORY (1ULL << 7)

#define REDISMODULE_ERRORMSG_WRONGTYPE                                                             \
    "WRONGTYPE Operation against a key holding the wrong kind of value"

#define REDISMODULE_LOGLEVEL_WARNING "warning"

/* Version 3 of the type methods: everything up to defrag. */
#define SEEN_RM_TYPE_METHOD_VERSION 3

/* Key-spec flags (what a command does with a key, for ACL and COMMAND). */
#define REDISMODULE_CMD_KEY_RO (1ULL << 0)
#define REDISMODULE_CMD_KEY_RW (1ULL << 1)
#define REDISMODULE_CMD_KEY_OW (1ULL << 2)
#define REDISMODULE_CMD_KEY_UPDATE (1ULL << 5)
#define REDISMODULE_CMD_KEY_INSERT (1ULL << 6)
#define REDISMODULE_CMD_KEY_DELETE (1ULL << 7)

/* ---------------------------------------------------------------- types */

typedef struct RedisModuleCtx RedisModuleCtx;
typedef struct RedisModuleKey RedisModuleKey;
typedef struct RedisModuleString RedisModuleString;
typedef struct RedisModuleIO RedisModuleIO;
typedef struct RedisModuleType RedisModuleType;
typedef struct RedisModuleDigest RedisModuleDigest;
typedef struct RedisModuleInfoCtx RedisModuleInfoCtx;
typedef struct RedisModuleCommand RedisModuleCommand;
typedef struct RedisModuleScanCursor RedisModuleScanCursor;

typedef int (*RedisModuleCmdFunc)(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
typedef uint64_t RedisModuleTimerID;
typedef void (*RedisModuleTimerProc)(RedisModuleCtx *ctx, void *data);
typedef void (*RedisModuleInfoFunc)(RedisModuleInfoCtx *ctx, int for_crash_report);
/* key: the key opened for reading, or NULL (then open it by name). */
typedef void (*RedisModuleScanCB)(RedisModuleCtx *ctx, RedisModuleString *keyname,
                                  RedisModuleKey *key, void *privdata);

/* A server event to subscribe to: its id and the version of its data. */
typedef struct RedisModuleEvent {
    uint64_t id;
    uint64_t dataver;
} RedisModuleEvent;
typedef void (*RedisModuleEventCallback)(RedisModuleCtx *ctx, RedisModuleEvent eid,
                                         uint64_t subevent, void *data);
#define REDISMODULE_EVENT_LOADING 3
#define REDISMODULE_SUBEVENT_LOADING_ENDED 3

typedef RedisModuleString *(*RedisModuleConfigGetStringFunc)(const char *name, void *privdata);
typedef long long (*RedisModuleConfigGetNumericFunc)(const char *name, void *privdata);
typedef int (*RedisModuleConfigGetBoolFunc)(const char *name, void *privdata);
typedef int (*RedisModuleConfigGetEnumFunc)(const char *name, void *privdata);
typedef int (*RedisModuleConfigSetStringFunc)(const char *name, RedisModuleString *val,
                                              void *privdata, RedisModuleString **err);
typedef int (*RedisModuleConfigSetNumericFunc)(const char *name, long long val, void *privdata,
                                               RedisModuleString **err);
typedef int (*RedisModuleConfigSetBoolFunc)(const char *name, int val, void *privdata,
                                            RedisModuleString **err);
typedef int (*RedisModuleConfigSetEnumFunc)(const char *name, int val, void *privdata,
                                            RedisModuleString **err);
typedef int (*RedisModuleConfigApplyFunc)(RedisModuleCtx *ctx, void *privdata,
                                          RedisModuleString **err);

/* The data type's callbacks, in the order Redis reads them. */
typedef struct RedisModuleTypeMethods {
    uint64_t version;
    void *(*rdb_load)(RedisModuleIO *rdb, int encver);
    void (*rdb_save)(RedisModuleIO *rdb, void *value);
    void (*aof_rewrite)(RedisModuleIO *aof, RedisModuleString *key, void *value);
    size_t (*mem_usage)(const void *value);
    void (*digest)(RedisModuleDigest *digest, void *value);
    void (*free)(void *value);
    /* version 2 */
    int (*aux_load)(RedisModuleIO *rdb, int encver, int when);
    void (*aux_save)(RedisModuleIO *rdb, int when);
    int aux_save_triggers;
    /* version 3 */
    size_t (*free_effort)(RedisModuleString *key, const void *value);
    void (*unlink)(RedisModuleString *key, const void *value);
    void *(*copy)(RedisModuleString *fromkey, RedisModuleString *tokey, const void *value);
    int (*defrag)(void *defrag_ctx, RedisModuleString *key, void **value);
} RedisModuleTypeMethods;

/* Command info (RedisModule_SetCommandInfo), version 1 of its layout. */
enum {
    REDISMODULE_KSPEC_BS_INVALID = 0, /* ends a key-spec array */
    REDISMODULE_KSPEC_BS_UNKNOWN,
    REDISMODULE_KSPEC_BS_INDEX,
    REDISMODULE_KSPEC_BS_KEYWORD
};
enum {
    REDISMODULE_KSPEC_FK_OMITTED = 0,
    REDISMODULE_KSPEC_FK_UNKNOWN,
    REDISMODULE_KSPEC_FK_RANGE,
    REDISMODULE_KSPEC_FK_KEYNUM
};

typedef struct RedisModuleCommandKeySpec {
    const char *notes;
    uint64_t flags; /* REDISMODULE_CMD_KEY_* */
    int begin_search_type;
    union {
        struct {
            int pos;
        } index;
        struct {
            const char *keyword;
            int startfrom;
        } keyword;
    } bs;
    int find_keys_type;
    union {
        struct {
            int lastkey;
            int keystep;
            int limit;
        } range;
        struct {
            int keynumidx;
            int firstkey;
            int keystep;
        } keynum;
    } fk;
} RedisModuleCommandKeySpec;

typedef struct RedisModuleCommandHistoryEntry {
    const char *since;
    const char *changes;
} RedisModuleCommandHistoryEntry;

/* Only its size is needed: seen does not describe arguments. */
typedef struct RedisModuleCommandArg {
    const char *name;
    int type;
    int key_spec_index;
    const char *token;
    const char *summary;
    const char *since;
    int flags;
    const char *deprecated_since;
    struct RedisModuleCommandArg *subargs;
} RedisModuleCommandArg;

typedef struct RedisModuleCommandInfoVersion {
    int version;
    size_t sizeof_historyentry;
    size_t sizeof_keyspec;
    size_t sizeof_arg;
} RedisModuleCommandInfoVersion;

typedef struct RedisModuleCommandInfo {
    const RedisModuleCommandInfoVersion *version;
    const char *summary;
    const char *complexity;
    const char *since;
    RedisModuleCommandHistoryEntry *history;
    const char *tips;
    int arity;
    RedisModuleCommandKeySpec *key_specs;
    RedisModuleCommandArg *args;
} RedisModuleCommandInfo;

/* ------------------------------------------------------------ functions */

/* X(return type, name, parameter list): one line per function we call. */
#define RM_API_FUNCTIONS(X)                                                                        \
    X(void *, Alloc, (size_t bytes))                                                               \
    X(void *, TryAlloc, (size_t bytes))                                                            \
    X(void *, Realloc, (void *ptr, size_t bytes))                                                  \
    X(void, Free, (void *ptr))                                                                     \
    X(size_t, MallocSize, (void *ptr))                                                             \
    X(int, IsModuleNameBusy, (const char *name))                                                   \
    X(void, SetModuleAttribs, (RedisModuleCtx * ctx, const char *name, int ver, int apiver))       \
    X(void, SetModuleOptions, (RedisModuleCtx * ctx, int options))                                 \
    X(int, CreateCommand,                                                                          \
      (RedisModuleCtx * ctx, const char *name, RedisModuleCmdFunc cmdfunc, const char *strflags,   \
       int firstkey, int lastkey, int keystep))                                                    \
    X(RedisModuleCommand *, GetCommand, (RedisModuleCtx * ctx, const char *name))                  \
    X(int, SetCommandInfo, (RedisModuleCommand * command, const RedisModuleCommandInfo *info))     \
    X(int, IsKeysPositionRequest, (RedisModuleCtx * ctx))                                          \
    X(void, KeyAtPosWithFlags, (RedisModuleCtx * ctx, int pos, int flags))                         \
    X(int, GetContextFlags, (RedisModuleCtx * ctx))                                                \
    X(int, GetSelectedDb, (RedisModuleCtx * ctx))                                                  \
    X(int, SelectDb, (RedisModuleCtx * ctx, int newid))                                            \
    X(unsigned long long, GetClientId, (RedisModuleCtx * ctx))                                     \
    X(RedisModuleTimerID, CreateTimer,                                                             \
      (RedisModuleCtx * ctx, long long period, RedisModuleTimerProc callback, void *data))         \
    X(long long, Milliseconds, (void))                                                             \
    X(int, AvoidReplicaTraffic, (void))                                                            \
    X(RedisModuleScanCursor *, ScanCursorCreate, (void))                                           \
    X(void, ScanCursorDestroy, (RedisModuleScanCursor * cursor))                                   \
    X(int, Scan,                                                                                   \
      (RedisModuleCtx * ctx, RedisModuleScanCursor * cursor, RedisModuleScanCB fn,                 \
       void *privdata))                                                                            \
    X(void, GetRandomBytes, (unsigned char *dst, size_t len))                                      \
    X(void, Log, (RedisModuleCtx * ctx, const char *level, const char *fmt, ...))                  \
    X(void, LogIOError, (RedisModuleIO * io, const char *level, const char *fmt, ...))             \
    X(int, WrongArity, (RedisModuleCtx * ctx))                                                     \
    X(int, ReplyWithLongLong, (RedisModuleCtx * ctx, long long ll))                                \
    X(int, ReplyWithDouble, (RedisModuleCtx * ctx, double d))                                      \
    X(int, ReplyWithError, (RedisModuleCtx * ctx, const char *err))                                \
    X(int, ReplyWithSimpleString, (RedisModuleCtx * ctx, const char *msg))                         \
    X(int, ReplyWithArray, (RedisModuleCtx * ctx, long len))                                       \
    X(int, ReplyWithMap, (RedisModuleCtx * ctx, long len))                                         \
    X(int, ReplyWithStringBuffer, (RedisModuleCtx * ctx, const char *buf, size_t len))             \
    X(int, ReplyWithCString, (RedisModuleCtx * ctx, const char *buf))                              \
    X(int, ReplyWithString, (RedisModuleCtx * ctx, RedisModuleString * str))                       \
    X(RedisModuleString *, CreateString, (RedisModuleCtx * ctx, const char *ptr, size_t len))      \
    X(RedisModuleString *, CreateStringFromLongLong, (RedisModuleCtx * ctx, long long ll))         \
    X(void, FreeString, (RedisModuleCtx * ctx, RedisModuleString * str))                           \
    X(const char *, StringPtrLen, (const RedisModuleString *str, size_t *len))                     \
    X(RedisModuleKey *, OpenKey, (RedisModuleCtx * ctx, RedisModuleString * name, int mode))       \
    X(void, CloseKey, (RedisModuleKey * key))                                                      \
    X(int, KeyType, (RedisModuleKey * key))                                                        \
    X(int, SetAbsExpire, (RedisModuleKey * key, long long expire))                                 \
    X(RedisModuleType *, CreateDataType,                                                           \
      (RedisModuleCtx * ctx, const char *name, int encver, RedisModuleTypeMethods *methods))       \
    X(int, ModuleTypeSetValue, (RedisModuleKey * key, RedisModuleType * mt, void *value))          \
    X(RedisModuleType *, ModuleTypeGetType, (RedisModuleKey * key))                                \
    X(void *, ModuleTypeGetValue, (RedisModuleKey * key))                                          \
    X(int, Replicate, (RedisModuleCtx * ctx, const char *cmdname, const char *fmt, ...))           \
    X(int, NotifyKeyspaceEvent,                                                                    \
      (RedisModuleCtx * ctx, int type, const char *event, RedisModuleString *key))                 \
    X(void, SaveUnsigned, (RedisModuleIO * io, uint64_t value))                                    \
    X(uint64_t, LoadUnsigned, (RedisModuleIO * io))                                                \
    X(void, SaveStringBuffer, (RedisModuleIO * io, const char *str, size_t len))                   \
    X(char *, LoadStringBuffer, (RedisModuleIO * io, size_t * lenptr))                             \
    X(int, IsIOError, (RedisModuleIO * io))                                                        \
    X(const RedisModuleString *, GetKeyNameFromIO, (RedisModuleIO * io))                           \
    X(int, GetDbIdFromIO, (RedisModuleIO * io))                                                    \
    X(int, SubscribeToServerEvent,                                                                 \
      (RedisModuleCtx * ctx, RedisModuleEvent event, RedisModuleEventCallback callback))           \
    X(void, EmitAOF, (RedisModuleIO * io, const char *cmdname, const char *fmt, ...))              \
    X(void, DigestAddStringBuffer, (RedisModuleDigest * md, const char *ele, size_t len))          \
    X(void, DigestAddLongLong, (RedisModuleDigest * md, long long ele))                            \
    X(void, DigestEndSequence, (RedisModuleDigest * md))                                           \
    X(int, RegisterInfoFunc, (RedisModuleCtx * ctx, RedisModuleInfoFunc cb))                       \
    X(int, InfoAddSection, (RedisModuleInfoCtx * ctx, const char *name))                           \
    X(int, InfoAddFieldULongLong,                                                                  \
      (RedisModuleInfoCtx * ctx, const char *field, unsigned long long value))                     \
    X(int, RegisterStringConfig,                                                                   \
      (RedisModuleCtx * ctx, const char *name, const char *default_val, unsigned int flags,        \
       RedisModuleConfigGetStringFunc getfn, RedisModuleConfigSetStringFunc setfn,                 \
       RedisModuleConfigApplyFunc applyfn, void *privdata))                                        \
    X(int, RegisterNumericConfig,                                                                  \
      (RedisModuleCtx * ctx, const char *name, long long default_val, unsigned int flags,          \
       long long min, long long max, RedisModuleConfigGetNumericFunc getfn,                        \
       RedisModuleConfigSetNumericFunc setfn, RedisModuleConfigApplyFunc applyfn, void *privdata)) \
    X(int, RegisterBoolConfig,                                                                     \
      (RedisModuleCtx * ctx, const char *name, int default_val, unsigned int flags,                \
       RedisModuleConfigGetBoolFunc getfn, RedisModuleConfigSetBoolFunc setfn,                     \
       RedisModuleConfigApplyFunc applyfn, void *privdata))                                        \
    X(int, RegisterEnumConfig,                                                                     \
      (RedisModuleCtx * ctx, const char *name, int default_val, unsigned int flags,                \
       const char **enum_values, const int *int_values, int num_enum_vals,                         \
       RedisModuleConfigGetEnumFunc getfn, RedisModuleConfigSetEnumFunc setfn,                     \
       RedisModuleConfigApplyFunc applyfn, void *privdata))                                        \
    X(int, LoadConfigs, (RedisModuleCtx * ctx))

/* Functions of newer servers: NULL where the running server lacks them. */
#define RM_API_OPTIONAL(X)                                                                         \
    X(int, SetCommandACLCategories, (RedisModuleCommand * command, const char *categories))

#define RM_API_DECLARE(ret, name, params) extern ret(*RedisModule_##name) params;
RM_API_FUNCTIONS(RM_API_DECLARE)
RM_API_OPTIONAL(RM_API_DECLARE)
#undef RM_API_DECLARE

/*
 * Look every function up and register the module under `name`.  Returns
 * REDISMODULE_ERR when the server lacks a function we need or the name is
 * taken.
 */
int rm_api_init(RedisModuleCtx *ctx, const char *name, int version);

#endif /* SEEN_RM_API_H */
