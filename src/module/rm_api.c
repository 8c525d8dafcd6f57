/*
 * rm_api.c — binds our declarations of the Redis module API (rm_api.h) to
 * the running server, through the lookup function Redis leaves at the
 * start of the load context.
 */
#include "rm_api.h"

#include <stdio.h>

#define RM_API_DEFINE(ret, name, params) ret(*RedisModule_##name) params = NULL;
RM_API_FUNCTIONS(RM_API_DEFINE)
RM_API_OPTIONAL(RM_API_DEFINE)
#undef RM_API_DEFINE

typedef int (*get_api_fn)(const char *name, void *out);

int rm_api_init(RedisModuleCtx *ctx, const char *name, int version)
{
    get_api_fn get_api;
    void *first = ((void **)ctx)[0];
    /* A data pointer to a function pointer: POSIX guarantees it works. */
    *(void **)&get_api = first;
    int missing = 0;
#define RM_API_LOOKUP(ret, fn, params)                                                             \
    if (get_api("RedisModule_" #fn, (void *)&RedisModule_##fn) != REDISMODULE_OK)                  \
        missing++;
    RM_API_FUNCTIONS(RM_API_LOOKUP)
#undef RM_API_LOOKUP
    if (missing)
        return REDISMODULE_ERR;
#define RM_API_LOOKUP_OPTIONAL(ret, fn, params)                                                    \
    if (get_api("RedisModule_" #fn, (void *)&RedisModule_##fn) != REDISMODULE_OK)                  \
        RedisModule_##fn = NULL;
    RM_API_OPTIONAL(RM_API_LOOKUP_OPTIONAL)
#undef RM_API_LOOKUP_OPTIONAL
    if (RedisModule_IsModuleNameBusy(name))
        return REDISMODULE_ERR;
    RedisModule_SetModuleAttribs(ctx, name, version, REDISMODULE_APIVER_1);
    return REDISMODULE_OK;
}
