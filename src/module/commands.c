/*
 * commands.c — the SEEN.* commands.  One file past 1,000 lines on purpose:
 * every command shares the parsing, replication and key helpers below, and
 * splitting them would scatter the grammar the comment below documents
 * (chunked uploads, compaction scheduling and parsing already live apart).
 *
 * Grammar (docs/commands.md is the user's reference):
 *   SEEN.RESERVE key [policy options]
 *   SEEN.ADD     key [AT ms] item [item ...]
 *   SEEN.INSERT  key [AT ms | TIMED] [NOCREATE] [policy options] ITEMS item ... | BULK items
 *   SEEN.FILTER  key item [item ...]
 *   SEEN.MFILTER numkeys key ... [AT ms] [REPLY UNSEEN|FLAGS|INDEXES|BULK]
 *                ITEMS item ... | BULK items
 *   SEEN.DEL     key item [item ...]
 *   SEEN.REMOVE  key ITEMS item ... | BULK items
 *   SEEN.COUNT   key
 *   SEEN.INFO    key
 *   SEEN.LOAD    key [EXPIRY ON|OFF] [JITTER ms] [OFFSET n TOTAL n] blob
 * Options never mix with items: the forms that take options end them with
 * ITEMS or BULK, so an item may be called anything.  SEEN.ADD keeps the
 * short form; there `AT` right after the key is always the
 * option.
 *
 * Replication.  Every write depends on the clock: the core forgets slices
 * relative to the time of the write, and items without AT are stamped with
 * it.  So a write is never replicated verbatim: the master resolves the
 * time once (`now`) and replicates an explicit form carrying `NOW <ms>`
 * (SEEN.ADD becomes SEEN.INSERT, SEEN.DEL becomes SEEN.REMOVE), together
 * with the full policy and jitter of any key it created, so replicas and
 * AOF replays build byte-identical sets whatever their own clock and
 * configuration.  NOW is accepted from clients too (to replay an AOF
 * through redis-cli), but on a master it may not be in the future: moving
 * a set's clock forward would make it forget early.
 */
#include "module.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ replies */

static int reply_unknown(RedisModuleCtx *ctx, RedisModuleString *arg, const char *command)
{
    size_t len;
    const char *s = RedisModule_StringPtrLen(arg, &len);
    char word[33];
    size_t n = len < sizeof word - 1 ? len : sizeof word - 1;
    for (size_t i = 0; i < n; i++)
        word[i] = (s[i] >= 0x21 && s[i] <= 0x7e) ? s[i] : '?';
    word[n] = '\0';
    char msg[128];
    snprintf(msg, sizeof msg, "ERR unknown option '%s%s' for %s", word, len > n ? "..." : "",
             command);
    return RedisModule_ReplyWithError(ctx, msg);
}

/* ------------------------------------------------------------ keys */

/*
 * Open a key that must be missing or ours.  Replies WRONGTYPE and returns
 * false otherwise.  *value is NULL for a missing key, and so is *key when
 * a missing key is opened for reading (Redis gives no handle then).
 */
static bool open_seen_key(RedisModuleCtx *ctx, RedisModuleString *name, int mode,
                          RedisModuleKey **key, seen_key **value)
{
    *key = RedisModule_OpenKey(ctx, name, mode);
    int type = RedisModule_KeyType(*key);
    *value = NULL;
    if (type == REDISMODULE_KEYTYPE_EMPTY)
        return true;
    if (type != REDISMODULE_KEYTYPE_MODULE || RedisModule_ModuleTypeGetType(*key) != seen_type) {
        RedisModule_CloseKey(*key);
        *key = NULL;
        RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
        return false;
    }
    *value = RedisModule_ModuleTypeGetValue(*key);
    return true;
}

static int64_t draw_jitter(void)
{
    uint64_t r;
    RedisModule_GetRandomBytes((unsigned char *)&r, sizeof r);
    return seen_cfg.expiry_jitter_ms ? (int64_t)(r % (seen_cfg.expiry_jitter_ms + 1)) : 0;
}

/* The value of a new key made with `o`, jitter drawn if not given. */
static seen_key *new_value(key_options *o, seen_set *set)
{
    if (o->jitter_ms < 0)
        o->jitter_ms = o->expiry ? draw_jitter() : 0;
    return seen_key_new(set, o->expiry ? SEEN_KEY_EXPIRY : 0, o->jitter_ms);
}

/* When a key with module expiry goes: once all it holds is forgotten (or,
 * while it holds nothing, one window after this write), plus its jitter. */
static int64_t expire_at(seen_key *k, int64_t now)
{
    int64_t at = seen_forget_all_at(seen_key_set(k));
    if (at <= now)
        at = now + (int64_t)seen_get_policy(seen_key_set(k))->window_ms;
    return at + k->jitter_ms;
}

static void after_write(RedisModuleCtx *ctx, RedisModuleKey *key, RedisModuleString *name,
                        seen_key *k, int64_t now, const char *event)
{
    seen_key_changed(k); /* recounted for INFO as it settles, when the command ends */
    if (k->flags & SEEN_KEY_EXPIRY)
        RedisModule_SetAbsExpire(key, expire_at(k, now));
    RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_MODULE, event, name);
    seen_compact_schedule(ctx, name, k, now);
}

/* The time of a write: the NOW it was given (checked), or the clock. */
static const char *resolve_now(RedisModuleCtx *ctx, bool given, int64_t *now)
{
    int64_t clock = RedisModule_Milliseconds();
    if (!given) {
        *now = clock;
        return NULL;
    }
    int flags = RedisModule_GetContextFlags(ctx);
    if (!(flags & (REDISMODULE_CTX_FLAGS_REPLICATED | REDISMODULE_CTX_FLAGS_LOADING)) &&
        *now > clock)
        return "ERR NOW may not be later than the server's clock";
    return NULL;
}

/* ------------------------------------------------------------ replication */

/* The arguments of a command to replicate; `owned` ones are freed after.
 * A page of adds replicates ~25 arguments: they fit the inline arrays,
 * and the words every write repeats are made once (repl_word), so the
 * replicated form costs one allocation, its number. */
enum { REPL_INLINE = 32 };
typedef struct repl_args {
    RedisModuleString **v;
    bool *owned;
    size_t n, cap;
    RedisModuleString *inline_v[REPL_INLINE];
    bool inline_owned[REPL_INLINE];
} repl_args;

static void repl_push(repl_args *r, RedisModuleString *s, bool owned)
{
    if (r->n == r->cap) {
        size_t cap = r->cap * 2;
        RedisModuleString **v = RedisModule_Alloc(cap * sizeof *v);
        bool *o = RedisModule_Alloc(cap * sizeof *o);
        memcpy(v, r->v, r->n * sizeof *v);
        memcpy(o, r->owned, r->n * sizeof *o);
        if (r->v != r->inline_v) {
            RedisModule_Free(r->v);
            RedisModule_Free(r->owned);
        }
        r->v = v;
        r->owned = o;
        r->cap = cap;
    }
    r->v[r->n] = s;
    r->owned[r->n] = owned;
    r->n++;
}

/* Words of the replicated forms, made once and kept for the module's life
 * (only the main thread replicates). */
static const char *const repl_words[] = {"NOW", "ITEMS", "BULK", "TIMED", "AT"};
static RedisModuleString *repl_word_strings[sizeof repl_words / sizeof *repl_words];

static void repl_word(RedisModuleCtx *ctx, repl_args *r, const char *word)
{
    for (size_t i = 0; i < sizeof repl_words / sizeof *repl_words; i++) {
        if (strcmp(word, repl_words[i]) != 0)
            continue;
        if (repl_word_strings[i] == NULL)
            repl_word_strings[i] = RedisModule_CreateString(NULL, word, strlen(word));
        repl_push(r, repl_word_strings[i], false);
        return;
    }
    repl_push(r, RedisModule_CreateString(ctx, word, strlen(word)), true);
}

static void repl_number(RedisModuleCtx *ctx, repl_args *r, long long v)
{
    repl_push(r, RedisModule_CreateStringFromLongLong(ctx, v), true);
}

/* The full policy, expiry and jitter of a key it made. */
static void repl_policy(RedisModuleCtx *ctx, repl_args *r, seen_key *k)
{
    const seen_policy *p = seen_get_policy(seen_key_set(k));
    repl_word(ctx, r, "WINDOW");
    repl_number(ctx, r, (long long)p->window_ms);
    repl_word(ctx, r, "SLICES");
    repl_number(ctx, r, p->slices);
    if (p->error == 0.0) {
        repl_word(ctx, r, "EXACT");
    } else {
        char rate[32];
        snprintf(rate, sizeof rate, "%.17g", p->error); /* round-trips exactly */
        repl_word(ctx, r, "ERROR");
        repl_word(ctx, r, rate);
    }
    repl_word(ctx, r, "CAPACITY");
    repl_number(ctx, r, (long long)p->capacity);
    repl_word(ctx, r, "IDS");
    repl_word(ctx, r, p->ids == SEEN_IDS_INT ? "INT" : "STR");
    repl_word(ctx, r, "EXACTLIMIT");
    repl_number(ctx, r, p->exact_limit);
    repl_word(ctx, r, "EXPIRY");
    repl_word(ctx, r, (k->flags & SEEN_KEY_EXPIRY) ? "ON" : "OFF");
    repl_word(ctx, r, "JITTER");
    repl_number(ctx, r, k->jitter_ms);
}

static void repl_send(RedisModuleCtx *ctx, repl_args *r, const char *command)
{
    RedisModule_Replicate(ctx, command, "v", r->v, r->n);
    for (size_t i = 0; i < r->n; i++)
        if (r->owned[i])
            RedisModule_FreeString(ctx, r->v[i]);
    if (r->v != r->inline_v) {
        RedisModule_Free(r->v);
        RedisModule_Free(r->owned);
    }
}

/* Start the replicated form of a write: command key NOW <now>. */
static void repl_begin(RedisModuleCtx *ctx, repl_args *r, RedisModuleString *name, int64_t now)
{
    r->v = r->inline_v;
    r->owned = r->inline_owned;
    r->n = 0;
    r->cap = REPL_INLINE;
    repl_push(r, name, false);
    repl_word(ctx, r, "NOW");
    repl_number(ctx, r, now);
}

/* ------------------------------------------------------------ items */

/* Where a command's items are: arguments (ITEMS) or one argument (BULK). */
typedef struct item_source {
    RedisModuleString **argv;
    int argc;
    RedisModuleString *bulk;
    bool timed; /* each item comes with its time (SEEN.INSERT ... TIMED) */
} item_source;

static bool source_parse(const item_source *src, item_batch *b, const char **err)
{
    if (src->bulk)
        return item_batch_from_bulk(b, src->bulk, err);
    return item_batch_from_args(b, src->argv, src->argc, err);
}

/* The items of a write: as ITEMS with none, an empty BULK is an error, so
 * a write of nothing is never replicated, logged or made to touch a key's
 * TTL.  (A query of nothing answers nothing.) */
static bool source_parse_write(const item_source *src, item_batch *b, int64_t **at,
                               const char **err)
{
    *at = NULL;
    if (src->timed ? !item_batch_timed(b, src->argv, src->argc, src->bulk, at, err)
                   : !source_parse(src, b, err))
        return false;
    if (b->n == 0) {
        *err = "ERR BULK holds no items";
        return false;
    }
    return true;
}

static void repl_items(RedisModuleCtx *ctx, repl_args *r, const item_source *src)
{
    if (src->timed)
        repl_word(ctx, r, "TIMED");
    if (src->bulk) {
        repl_word(ctx, r, "BULK");
        repl_push(r, src->bulk, false);
        return;
    }
    repl_word(ctx, r, "ITEMS");
    for (int i = 0; i < src->argc; i++)
        repl_push(r, src->argv[i], false);
}

/*
 * argv[*i] is ITEMS or BULK: take what follows as the items.  Returns false
 * with *err set when the terminator is missing or has nothing after it.
 */
static bool source_take(RedisModuleString **argv, int argc, int i, item_source *src,
                        const char **err)
{
    memset(src, 0, sizeof *src);
    if (arg_is(argv[i], "ITEMS")) {
        if (i + 1 >= argc) {
            *err = "ERR ITEMS needs at least one item";
            return false;
        }
        src->argv = argv + i + 1;
        src->argc = argc - i - 1;
        return true;
    }
    if (i + 2 != argc) {
        *err = "ERR BULK takes exactly one argument: the items separated by newlines";
        return false;
    }
    src->bulk = argv[i + 1];
    return true;
}

static bool is_source_word(RedisModuleString *arg)
{
    return arg_is(arg, "ITEMS") || arg_is(arg, "BULK");
}

/*
 * The common start of a write: resolve its time, parse its items (and
 * their times, for TIMED: *at, which the caller frees), open its key.  On
 * any error it replies, frees what it made and returns false.
 */
static bool write_begin(RedisModuleCtx *ctx, RedisModuleString *name, bool has_now, int64_t *now,
                        const item_source *src, item_batch *b, int64_t **at, RedisModuleKey **key,
                        seen_key **k)
{
    const char *err;
    *at = NULL;
    if ((err = resolve_now(ctx, has_now, now))) {
        memset(b, 0, sizeof *b);
        RedisModule_ReplyWithError(ctx, err);
        return false;
    }
    if (!source_parse_write(src, b, at, &err)) {
        item_batch_free(b);
        RedisModule_ReplyWithError(ctx, err);
        return false;
    }
    if (!open_seen_key(ctx, name, REDISMODULE_WRITE, key, k)) {
        item_batch_free(b);
        if (*at)
            RedisModule_Free(*at);
        *at = NULL;
        return false;
    }
    return true;
}

/* ------------------------------------------------------------ RESERVE */

static int cmd_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 2)
        return RedisModule_WrongArity(ctx);
    key_options o;
    key_options_default(&o);
    bool has_now = false;
    int64_t now = 0;
    const char *err = NULL;
    for (int i = 2; i < argc;) {
        if (arg_is(argv[i], "NOW")) {
            if (i + 1 >= argc || !arg_time(argv[i + 1], &now))
                return RedisModule_ReplyWithError(ctx, "ERR bad NOW: ms since the epoch");
            has_now = true;
            i += 2;
            continue;
        }
        int r = key_option_parse(&o, argv, argc, &i, &err);
        if (r < 0)
            return RedisModule_ReplyWithError(ctx, err);
        if (r == 0)
            return reply_unknown(ctx, argv[i], "SEEN.RESERVE");
    }
    if ((err = key_options_check(&o)) || (err = resolve_now(ctx, has_now, &now)))
        return RedisModule_ReplyWithError(ctx, err);

    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_WRITE);
    if (RedisModule_KeyType(key) != REDISMODULE_KEYTYPE_EMPTY) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, "ERR key already exists");
    }
    seen_set *set;
    seen_err e = seen_create(&o.policy, &set);
    if (e != SEEN_OK) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, seen_reply_error(e));
    }
    seen_key *k = new_value(&o, set);
    RedisModule_ModuleTypeSetValue(key, seen_type, k);
    after_write(ctx, key, argv[1], k, now, "seen.reserve");
    RedisModule_CloseKey(key);

    repl_args r;
    repl_begin(ctx, &r, argv[1], now);
    repl_policy(ctx, &r, k);
    repl_send(ctx, &r, "SEEN.RESERVE");
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

/* ------------------------------------------------------------ ADD, INSERT */

typedef struct add_request {
    key_options create; /* policy of the key if this makes it */
    bool nocreate;
    bool timed;
    bool has_at;
    int64_t at;
    bool has_now;
    int64_t now;
    item_source items;
} add_request;

static int do_add(RedisModuleCtx *ctx, RedisModuleString *name, add_request *q)
{
    item_batch b;
    RedisModuleKey *key;
    seen_key *k;
    int64_t *at;
    if (!write_begin(ctx, name, q->has_now, &q->now, &q->items, &b, &at, &key, &k))
        return REDISMODULE_OK;
    const char *err = NULL;
    seen_set *fresh = NULL;
    seen_err e = SEEN_OK;
    size_t added = 0;
    if (k == NULL) {
        if (q->nocreate)
            err = "ERR no such key (NOCREATE)";
        else if (!(err = key_options_check(&q->create)))
            e = seen_create(&q->create.policy, &fresh);
    }
    seen_set *set = k ? seen_key_set(k) : fresh;
    bool ints = set && seen_get_policy(set)->ids == SEEN_IDS_INT;
    if (!err && e == SEEN_OK && ints)
        item_batch_ints(&b, &err);
    if (!err && e == SEEN_OK && q->has_at) { /* one time for every item */
        at = RedisModule_Alloc((b.n ? b.n : 1) * sizeof *at);
        for (size_t i = 0; i < b.n; i++)
            at[i] = q->at;
    }
    if (!err && e == SEEN_OK)
        e = ints ? seen_add_int(set, b.ints, b.n, at, q->now, &added)
                 : seen_add_str(set, b.strs, b.n, at, q->now, &added);
    if (at)
        RedisModule_Free(at);
    item_batch_free(&b);
    if (err || e != SEEN_OK) {
        seen_free(fresh);
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, err ? err : seen_reply_error(e));
    }
    /* Late events for a user with no key would otherwise leave empty keys
     * behind: a key is made only to hold something (SEEN.RESERVE makes
     * empty ones). */
    if (fresh && seen_count(fresh, q->now) == 0) {
        seen_free(fresh);
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithLongLong(ctx, 0);
    }
    if (fresh) {
        k = new_value(&q->create, fresh);
        RedisModule_ModuleTypeSetValue(key, seen_type, k);
    }
    after_write(ctx, key, name, k, q->now, "seen.add");
    RedisModule_CloseKey(key);

    repl_args r;
    repl_begin(ctx, &r, name, q->now);
    if (q->has_at) {
        repl_word(ctx, &r, "AT");
        repl_number(ctx, &r, q->at);
    }
    if (fresh)
        repl_policy(ctx, &r, k);
    repl_items(ctx, &r, &q->items);
    repl_send(ctx, &r, "SEEN.INSERT");

    atomic_fetch_add_explicit(&seen_counters.add_calls, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&seen_counters.items_added, added, memory_order_relaxed);
    return RedisModule_ReplyWithLongLong(ctx, (long long)added);
}

static int cmd_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 3)
        return RedisModule_WrongArity(ctx);
    add_request q = {0};
    key_options_default(&q.create);
    int first = 2;
    if (arg_is(argv[2], "AT")) {
        if (argc < 5)
            return RedisModule_WrongArity(ctx);
        if (!arg_time(argv[3], &q.at))
            return RedisModule_ReplyWithError(ctx, "ERR bad AT: give ms since the epoch");
        q.has_at = true;
        first = 4;
    }
    q.items = (item_source){argv + first, argc - first, NULL, false};
    return do_add(ctx, argv[1], &q);
}

static int cmd_insert(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 4)
        return RedisModule_WrongArity(ctx);
    add_request q = {0};
    key_options_default(&q.create);
    const char *err = NULL;
    int i = 2;
    while (i < argc && !is_source_word(argv[i])) {
        if (arg_is(argv[i], "AT") || arg_is(argv[i], "NOW")) {
            bool is_at = arg_is(argv[i], "AT");
            int64_t *t = is_at ? &q.at : &q.now;
            if (i + 1 >= argc || !arg_time(argv[i + 1], t))
                return RedisModule_ReplyWithError(ctx, is_at ? "ERR bad AT: give ms since the epoch"
                                                             : "ERR bad NOW: ms since the epoch");
            *(is_at ? &q.has_at : &q.has_now) = true;
            i += 2;
        } else if (arg_is(argv[i], "NOCREATE")) {
            q.nocreate = true;
            i++;
        } else if (arg_is(argv[i], "TIMED")) {
            q.timed = true;
            i++;
        } else {
            int r = key_option_parse(&q.create, argv, argc, &i, &err);
            if (r < 0)
                return RedisModule_ReplyWithError(ctx, err);
            if (r == 0)
                return reply_unknown(ctx, argv[i], "SEEN.INSERT");
        }
    }
    if (i >= argc)
        return RedisModule_ReplyWithError(ctx, "ERR ITEMS or BULK expected after the options");
    if (q.timed && q.has_at)
        return RedisModule_ReplyWithError(ctx, "ERR AT and TIMED exclude each other: TIMED gives "
                                               "each item its own time");
    if (!source_take(argv, argc, i, &q.items, &err))
        return RedisModule_ReplyWithError(ctx, err);
    q.items.timed = q.timed;
    return do_add(ctx, argv[1], &q);
}

/* ------------------------------------------------------------ FILTER */

typedef enum reply_form { REPLY_UNSEEN, REPLY_FLAGS, REPLY_INDEXES, REPLY_BULK } reply_form;

typedef struct filter_request {
    RedisModuleString **keys;
    int nkeys;
    bool has_at;
    int64_t at;
    reply_form form;
    item_source items;
} filter_request;

/* A query's flags are bytes of 0 or 1; these two passes take them eight at
 * a time (byte by byte, each store could alias the loop's own bounds, and
 * the two loops cost ~3% of a 10,000-candidate query). */
#define EACH_BYTE(x) (UINT64_C(0x0101010101010101) * (x))

static size_t count_seen(const uint8_t *seen, size_t n)
{
    size_t total = 0, i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, seen + i, 8);
        total += (size_t)((w * EACH_BYTE(1)) >> 56); /* the sum of its bytes, at most 8 */
    }
    for (; i < n; i++)
        total += seen[i];
    return total;
}

/* '0' or '1' per flag: adding '0' to every byte carries into none. */
static void flags_as_digits(char *out, const uint8_t *seen, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, seen + i, 8);
        w += EACH_BYTE('0');
        memcpy(out + i, &w, 8);
    }
    for (; i < n; i++)
        out[i] = (char)('0' + seen[i]);
}

static void reply_filtered(RedisModuleCtx *ctx, reply_form form, const item_batch *b,
                           const uint8_t *seen, size_t nseen)
{
    switch (form) {
    case REPLY_UNSEEN:
        RedisModule_ReplyWithArray(ctx, (long)(b->n - nseen));
        for (size_t i = 0; i < b->n; i++)
            if (!seen[i])
                RedisModule_ReplyWithStringBuffer(ctx, b->strs[i].ptr, b->strs[i].len);
        break;
    case REPLY_FLAGS: {
        char *flags = RedisModule_Alloc(b->n ? b->n : 1);
        flags_as_digits(flags, seen, b->n);
        RedisModule_ReplyWithStringBuffer(ctx, flags, b->n);
        RedisModule_Free(flags);
        break;
    }
    case REPLY_INDEXES:
        RedisModule_ReplyWithArray(ctx, (long)nseen);
        for (size_t i = 0; i < b->n; i++)
            if (seen[i])
                RedisModule_ReplyWithLongLong(ctx, (long long)i);
        break;
    case REPLY_BULK: {
        /* The unseen candidates in one string, each followed by "\n": one
         * reply object, as cheap for Redis to send as FLAGS. */
        size_t len = 0;
        for (size_t i = 0; i < b->n; i++)
            if (!seen[i])
                len += b->strs[i].len + 1;
        char *out = RedisModule_Alloc(len ? len : 1), *p = out;
        for (size_t i = 0; i < b->n;) {
            if (seen[i]) {
                i++;
                continue;
            }
            /* Lines of a BULK argument that are unseen one after another
             * are copied at once, newlines included: most candidates are
             * unseen, and a copy per 24-byte item cost more than the
             * bytes. */
            size_t j = i + 1;
            if (b->lines)
                while (j < b->n && !seen[j])
                    j++;
            const char *from = b->strs[i].ptr;
            const char *last = b->strs[j - 1].ptr;
            size_t span = (size_t)(last + b->strs[j - 1].len - from);
            memcpy(p, from, span);
            p += span;
            *p++ = '\n';
            i = j;
        }
        RedisModule_ReplyWithStringBuffer(ctx, out, len);
        RedisModule_Free(out);
        break;
    }
    }
}

/* REPLY BULK separates items by newlines: none may hold one. */
static bool bulk_reply_ok(const item_batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        if (memchr(b->strs[i].ptr, '\n', b->strs[i].len))
            return false;
    return true;
}

/* Run the candidates against every key (a missing key has seen nothing);
 * each is hashed once per kind of key, however many keys there are. */
static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
    return x < y ? -1 : x > y;
}

static const char *run_filter(RedisModuleKey **keys, int nkeys, item_batch *b, int64_t now,
                              uint8_t *seen)
{
    /* A key named twice is queried once: the answers are ORed anyway. */
    seen_key **sets = RedisModule_Alloc((size_t)nkeys * sizeof *sets);
    int nsets = 0;
    for (int j = 0; j < nkeys; j++) {
        seen_key *k = keys[j] ? RedisModule_ModuleTypeGetValue(keys[j]) : NULL;
        if (k != NULL)
            sets[nsets++] = k;
    }
    qsort(sets, (size_t)nsets, sizeof *sets, cmp_ptr);
    int distinct = 0;
    for (int j = 0; j < nsets; j++)
        if (distinct == 0 || sets[distinct - 1] != sets[j])
            sets[distinct++] = sets[j];
    seen_query *by_kind[2] = {NULL, NULL};
    const char *err = NULL;
    for (int j = 0; j < distinct && !err; j++) {
        seen_key *k = sets[j];
        seen_ids ids = seen_get_policy(seen_key_set(k))->ids;
        seen_err e = SEEN_OK;
        if (by_kind[ids] == NULL) {
            if (ids == SEEN_IDS_INT)
                e = item_batch_ints(b, &err) ? seen_query_int(b->ints, b->n, &by_kind[ids])
                                             : SEEN_OK;
            else
                e = seen_query_str(b->strs, b->n, &by_kind[ids]);
        }
        if (!err && e == SEEN_OK)
            e = seen_query_run(seen_key_set(k), by_kind[ids], now, seen);
        if (!err && e != SEEN_OK)
            err = seen_reply_error(e);
    }
    seen_query_free(by_kind[0]);
    seen_query_free(by_kind[1]);
    RedisModule_Free(sets);
    return err;
}

static int do_filter(RedisModuleCtx *ctx, filter_request *q)
{
    const char *err;
    item_batch b;
    if (!source_parse(&q->items, &b, &err)) {
        item_batch_free(&b);
        return RedisModule_ReplyWithError(ctx, err);
    }
    if (q->form == REPLY_BULK && !q->items.bulk && !bulk_reply_ok(&b)) {
        item_batch_free(&b);
        return RedisModule_ReplyWithError(ctx, "ERR REPLY BULK separates items by newlines: a "
                                               "candidate holds one (use REPLY UNSEEN)");
    }
    RedisModuleKey **keys = RedisModule_Alloc((size_t)q->nkeys * sizeof *keys);
    int opened = 0;
    for (; opened < q->nkeys; opened++) {
        seen_key *k;
        if (!open_seen_key(ctx, q->keys[opened], REDISMODULE_READ, &keys[opened], &k))
            break;
    }
    if (opened == q->nkeys) {
        int64_t now = q->has_at ? q->at : RedisModule_Milliseconds();
        uint8_t *seen = RedisModule_Alloc(b.n ? b.n : 1);
        memset(seen, 0, b.n);
        err = run_filter(keys, q->nkeys, &b, now, seen);
        if (err) {
            RedisModule_ReplyWithError(ctx, err);
        } else {
            size_t nseen = count_seen(seen, b.n);
            reply_filtered(ctx, q->form, &b, seen, nseen);
            atomic_fetch_add_explicit(&seen_counters.filter_calls, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&seen_counters.candidates_checked, b.n, memory_order_relaxed);
            atomic_fetch_add_explicit(&seen_counters.candidates_seen, nseen, memory_order_relaxed);
        }
        RedisModule_Free(seen);
    }
    for (int j = 0; j < opened; j++)
        RedisModule_CloseKey(keys[j]);
    RedisModule_Free(keys);
    item_batch_free(&b);
    return REDISMODULE_OK;
}

static int cmd_filter(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 3)
        return RedisModule_WrongArity(ctx);
    filter_request q = {argv + 1, 1, false, 0, REPLY_UNSEEN, {argv + 2, argc - 2, NULL, false}};
    return do_filter(ctx, &q);
}

/* numkeys at argv[1], or 0 if it is not a usable count. */
static int mfilter_numkeys(RedisModuleString **argv, int argc)
{
    uint64_t n;
    if (argc < 3 || !arg_u64(argv[1], &n) || n < 1 || n > (uint64_t)argc - 2)
        return 0;
    return (int)n;
}

/* When the rest of an MFILTER does not parse and one of its numkeys "keys"
 * is ITEMS or BULK, numkeys was too large: say so (replies, returns 1),
 * rather than complain about an item.  0 if that is not the case. */
static int mfilter_numkeys_error(RedisModuleCtx *ctx, RedisModuleString **argv, int numkeys)
{
    for (int j = 0; j < numkeys; j++)
        if (is_source_word(argv[2 + j])) {
            char msg[160];
            snprintf(msg, sizeof msg, "ERR numkeys is %d but %d key%s come%s before %s", numkeys, j,
                     j == 1 ? "" : "s", j == 1 ? "s" : "",
                     arg_is(argv[2 + j], "ITEMS") ? "ITEMS" : "BULK");
            RedisModule_ReplyWithError(ctx, msg);
            return 1;
        }
    return 0;
}

static int cmd_mfilter(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    int numkeys = mfilter_numkeys(argv, argc);
    /* Redis (ACL, Cluster routing) may only ask where the keys are: answer
     * that and touch nothing. */
    if (RedisModule_IsKeysPositionRequest(ctx)) {
        for (int j = 0; j < numkeys; j++)
            RedisModule_KeyAtPosWithFlags(ctx, 2 + j, (int)REDISMODULE_CMD_KEY_RO);
        return REDISMODULE_OK;
    }
    if (argc < 5)
        return RedisModule_WrongArity(ctx);
    if (numkeys == 0)
        return RedisModule_ReplyWithError(
            ctx, "ERR numkeys must be a positive integer no larger than the number of keys given");
    if ((uint64_t)numkeys > seen_cfg.mfilter_max_keys) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "ERR numkeys %d is more than seen.mfilter-max-keys (%llu): split the request",
                 numkeys, (unsigned long long)seen_cfg.mfilter_max_keys);
        return RedisModule_ReplyWithError(ctx, msg);
    }

    filter_request q = {argv + 2, numkeys, false, 0, REPLY_UNSEEN, {NULL, 0, NULL, false}};
    const char *err = NULL;
    int i = 2 + numkeys;
    while (i < argc && !is_source_word(argv[i])) {
        if (arg_is(argv[i], "AT")) {
            if (i + 1 >= argc || !arg_time(argv[i + 1], &q.at))
                return RedisModule_ReplyWithError(ctx, "ERR bad AT: give ms since the epoch");
            q.has_at = true;
        } else if (arg_is(argv[i], "REPLY")) {
            if (i + 1 < argc && arg_is(argv[i + 1], "UNSEEN"))
                q.form = REPLY_UNSEEN;
            else if (i + 1 < argc && arg_is(argv[i + 1], "FLAGS"))
                q.form = REPLY_FLAGS;
            else if (i + 1 < argc && arg_is(argv[i + 1], "INDEXES"))
                q.form = REPLY_INDEXES;
            else if (i + 1 < argc && arg_is(argv[i + 1], "BULK"))
                q.form = REPLY_BULK;
            else
                return RedisModule_ReplyWithError(
                    ctx, "ERR REPLY must be UNSEEN, FLAGS, INDEXES or BULK");
        } else {
            if (mfilter_numkeys_error(ctx, argv, numkeys))
                return REDISMODULE_OK;
            return reply_unknown(ctx, argv[i], "SEEN.MFILTER");
        }
        i += 2;
    }
    if (i >= argc)
        return mfilter_numkeys_error(ctx, argv, numkeys)
                   ? REDISMODULE_OK
                   : RedisModule_ReplyWithError(ctx,
                                                "ERR ITEMS or BULK expected after the options");
    if (!source_take(argv, argc, i, &q.items, &err))
        return RedisModule_ReplyWithError(ctx, err);
    return do_filter(ctx, &q);
}

/* ------------------------------------------------------------ DEL, REMOVE */

static int do_remove(RedisModuleCtx *ctx, RedisModuleString *name, bool has_now, int64_t now,
                     const item_source *src)
{
    item_batch b;
    RedisModuleKey *key;
    seen_key *k;
    int64_t *unused_at; /* stays NULL: removals take no times */
    if (!write_begin(ctx, name, has_now, &now, src, &b, &unused_at, &key, &k))
        return REDISMODULE_OK;
    const char *err = NULL;
    if (k == NULL) {
        item_batch_free(&b);
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithLongLong(ctx, 0);
    }
    size_t removed = 0;
    seen_err e = SEEN_OK;
    if (seen_get_policy(seen_key_set(k))->ids == SEEN_IDS_INT) {
        if (item_batch_ints(&b, &err))
            e = seen_remove_int(seen_key_set(k), b.ints, b.n, now, &removed);
    } else {
        e = seen_remove_str(seen_key_set(k), b.strs, b.n, now, &removed);
    }
    item_batch_free(&b);
    if (err || e != SEEN_OK) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, err ? err : seen_reply_error(e));
    }
    after_write(ctx, key, name, k, now, "seen.del");
    RedisModule_CloseKey(key);

    repl_args r;
    repl_begin(ctx, &r, name, now);
    repl_items(ctx, &r, src);
    repl_send(ctx, &r, "SEEN.REMOVE");

    atomic_fetch_add_explicit(&seen_counters.remove_calls, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&seen_counters.items_removed, removed, memory_order_relaxed);
    return RedisModule_ReplyWithLongLong(ctx, (long long)removed);
}

static int cmd_del(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 3)
        return RedisModule_WrongArity(ctx);
    item_source src = {argv + 2, argc - 2, NULL, false};
    return do_remove(ctx, argv[1], false, 0, &src);
}

static int cmd_remove(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 4)
        return RedisModule_WrongArity(ctx);
    bool has_now = false;
    int64_t now = 0;
    int i = 2;
    if (arg_is(argv[i], "NOW")) {
        if (i + 1 >= argc || !arg_time(argv[i + 1], &now))
            return RedisModule_ReplyWithError(ctx, "ERR bad NOW: ms since the epoch");
        has_now = true;
        i += 2;
    }
    if (i >= argc || !is_source_word(argv[i]))
        return i < argc ? reply_unknown(ctx, argv[i], "SEEN.REMOVE")
                        : RedisModule_ReplyWithError(ctx, "ERR ITEMS or BULK expected");
    item_source src;
    const char *err;
    if (!source_take(argv, argc, i, &src, &err))
        return RedisModule_ReplyWithError(ctx, err);
    return do_remove(ctx, argv[1], has_now, now, &src);
}

/* ------------------------------------------------------------ COMPACT */

int seen_compact_key(RedisModuleCtx *ctx, RedisModuleString *name, int64_t now, const char **err)
{
    RedisModuleKey *key = RedisModule_OpenKey(ctx, name, REDISMODULE_READ | REDISMODULE_WRITE);
    if (RedisModule_KeyType(key) == REDISMODULE_KEYTYPE_EMPTY ||
        RedisModule_ModuleTypeGetType(key) != seen_type) {
        RedisModule_CloseKey(key);
        return 0; /* gone or replaced since: nothing of ours to compact */
    }
    seen_key *k = RedisModule_ModuleTypeGetValue(key);
    seen_set *set = seen_key_set(k);
    if (!seen_compactable(set, now) && !seen_holds_forgotten(set, now)) {
        RedisModule_CloseKey(key);
        return 0;
    }
    seen_err e = seen_expire(seen_key_set(k), now);
    if (e != SEEN_OK) {
        RedisModule_CloseKey(key);
        *err = seen_reply_error(e);
        return -1;
    }
    after_write(ctx, key, name, k, now, "seen.compact");
    RedisModule_CloseKey(key);
    repl_args r;
    repl_begin(ctx, &r, name, now);
    repl_send(ctx, &r, "SEEN.COMPACT");
    return 1;
}

static int cmd_compact(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 2 && argc != 4)
        return RedisModule_WrongArity(ctx);
    bool has_now = argc == 4;
    int64_t now = 0;
    if (has_now && (!arg_is(argv[2], "NOW") || !arg_time(argv[3], &now)))
        return RedisModule_ReplyWithError(ctx, "ERR bad NOW: ms since the epoch");
    const char *err = resolve_now(ctx, has_now, &now);
    if (err)
        return RedisModule_ReplyWithError(ctx, err);
    RedisModuleKey *key;
    seen_key *k;
    if (!open_seen_key(ctx, argv[1], REDISMODULE_READ, &key, &k))
        return REDISMODULE_OK;
    RedisModule_CloseKey(key);
    int done = k ? seen_compact_key(ctx, argv[1], now, &err) : 0;
    if (done < 0)
        return RedisModule_ReplyWithError(ctx, err);
    return RedisModule_ReplyWithLongLong(ctx, done);
}

/* ------------------------------------------------------------ COUNT, INFO */

static int cmd_count(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 2)
        return RedisModule_WrongArity(ctx);
    seen_key *k;
    RedisModuleKey *key;
    if (!open_seen_key(ctx, argv[1], REDISMODULE_READ, &key, &k))
        return REDISMODULE_OK;
    long long n = k ? (long long)seen_count(seen_key_set(k), RedisModule_Milliseconds()) : 0;
    RedisModule_CloseKey(key);
    return RedisModule_ReplyWithLongLong(ctx, n);
}

static const char *encoding_name(seen_encoding e)
{
    switch (e) {
    case SEEN_ENC_BUFFER:
        return "buffer";
    case SEEN_ENC_EXACT:
        return "exact";
    case SEEN_ENC_COMPACT:
        return "compact";
    }
    return "unknown";
}

/* One word for the whole set: how its stored runs are encoded. */
static const char *set_encoding(const seen_run_info *runs, size_t n)
{
    bool exact = false, compact = false;
    for (size_t i = 0; i < n; i++) {
        exact |= runs[i].encoding == SEEN_ENC_EXACT;
        compact |= runs[i].encoding == SEEN_ENC_COMPACT;
    }
    if (compact)
        return exact ? "mixed" : "compact";
    return n ? "exact" : "empty";
}

static void reply_policy(RedisModuleCtx *ctx, seen_key *k)
{
    const seen_policy *p = seen_get_policy(seen_key_set(k));
    RedisModule_ReplyWithMap(ctx, 8);
    RedisModule_ReplyWithCString(ctx, "window-ms");
    RedisModule_ReplyWithLongLong(ctx, (long long)p->window_ms);
    RedisModule_ReplyWithCString(ctx, "slices");
    RedisModule_ReplyWithLongLong(ctx, p->slices);
    RedisModule_ReplyWithCString(ctx, "error");
    RedisModule_ReplyWithDouble(ctx, p->error);
    RedisModule_ReplyWithCString(ctx, "capacity");
    RedisModule_ReplyWithLongLong(ctx, (long long)p->capacity);
    RedisModule_ReplyWithCString(ctx, "ids");
    RedisModule_ReplyWithCString(ctx, p->ids == SEEN_IDS_INT ? "int" : "str");
    RedisModule_ReplyWithCString(ctx, "exact-limit");
    RedisModule_ReplyWithLongLong(ctx, p->exact_limit);
    RedisModule_ReplyWithCString(ctx, "expiry");
    RedisModule_ReplyWithCString(ctx, (k->flags & SEEN_KEY_EXPIRY) ? "on" : "off");
    RedisModule_ReplyWithCString(ctx, "jitter-ms");
    RedisModule_ReplyWithLongLong(ctx, k->jitter_ms);
}

static void reply_runs(RedisModuleCtx *ctx, const seen_run_info *runs, size_t n)
{
    RedisModule_ReplyWithArray(ctx, (long)n);
    for (size_t i = 0; i < n; i++) {
        RedisModule_ReplyWithMap(ctx, 8);
        RedisModule_ReplyWithCString(ctx, "encoding");
        RedisModule_ReplyWithCString(ctx, encoding_name(runs[i].encoding));
        RedisModule_ReplyWithCString(ctx, "items");
        RedisModule_ReplyWithLongLong(ctx, (long long)runs[i].items);
        RedisModule_ReplyWithCString(ctx, "bytes");
        RedisModule_ReplyWithLongLong(ctx, (long long)runs[i].bytes);
        RedisModule_ReplyWithCString(ctx, "held-bytes");
        RedisModule_ReplyWithLongLong(ctx, (long long)runs[i].held);
        RedisModule_ReplyWithCString(ctx, "blocks");
        RedisModule_ReplyWithLongLong(ctx, runs[i].blocks);
        RedisModule_ReplyWithCString(ctx, "bits-per-item");
        RedisModule_ReplyWithDouble(ctx, runs[i].bits_per_item);
        RedisModule_ReplyWithCString(ctx, "fpr");
        RedisModule_ReplyWithDouble(ctx, runs[i].fpr);
        RedisModule_ReplyWithCString(ctx, "segments");
        RedisModule_ReplyWithLongLong(ctx, runs[i].segments);
    }
}

static void reply_slices(RedisModuleCtx *ctx, const seen_segment_info *segs, size_t n, int64_t now)
{
    RedisModule_ReplyWithArray(ctx, (long)n);
    for (size_t i = 0; i < n; i++) {
        const seen_segment_info *g = &segs[i];
        bool windowed = g->forget_ms != INT64_MAX;
        RedisModule_ReplyWithMap(ctx, 6);
        RedisModule_ReplyWithCString(ctx, "start-ms");
        RedisModule_ReplyWithLongLong(ctx, g->start_ms);
        RedisModule_ReplyWithCString(ctx, "age-ms");
        RedisModule_ReplyWithLongLong(ctx, windowed ? now - g->start_ms : 0);
        RedisModule_ReplyWithCString(ctx, "end-ms");
        RedisModule_ReplyWithLongLong(ctx, windowed ? g->end_ms : -1);
        RedisModule_ReplyWithCString(ctx, "forget-at-ms");
        RedisModule_ReplyWithLongLong(ctx, windowed ? g->forget_ms : -1);
        RedisModule_ReplyWithCString(ctx, "step");
        RedisModule_ReplyWithLongLong(ctx, g->seq);
        RedisModule_ReplyWithCString(ctx, "items");
        RedisModule_ReplyWithLongLong(ctx, (long long)g->items);
    }
}

static int cmd_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 2)
        return RedisModule_WrongArity(ctx);
    seen_key *k;
    RedisModuleKey *key;
    if (!open_seen_key(ctx, argv[1], REDISMODULE_READ, &key, &k))
        return REDISMODULE_OK;
    if (k == NULL) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, "ERR no such key");
    }
    int64_t now = RedisModule_Milliseconds();
    size_t nruns = seen_runs(seen_key_set(k), NULL, 0);
    size_t nsegs = seen_segments(seen_key_set(k), now, NULL, 0);
    seen_run_info *runs = RedisModule_Alloc((nruns ? nruns : 1) * sizeof *runs);
    seen_segment_info *segs = RedisModule_Alloc((nsegs ? nsegs : 1) * sizeof *segs);
    nruns = seen_runs(seen_key_set(k), runs, nruns);
    nsegs = seen_segments(seen_key_set(k), now, segs, nsegs);
    int64_t forget = seen_forget_all_at(seen_key_set(k));

    RedisModule_ReplyWithMap(ctx, 11);
    RedisModule_ReplyWithCString(ctx, "policy");
    reply_policy(ctx, k);
    RedisModule_ReplyWithCString(ctx, "items");
    RedisModule_ReplyWithLongLong(ctx, (long long)seen_count(seen_key_set(k), now));
    RedisModule_ReplyWithCString(ctx, "bytes");
    RedisModule_ReplyWithLongLong(ctx, (long long)seen_key_bytes(k));
    RedisModule_ReplyWithCString(ctx, "serialized-bytes");
    RedisModule_ReplyWithLongLong(ctx, (long long)seen_serialized_size(seen_key_set(k)));
    RedisModule_ReplyWithCString(ctx, "error");
    RedisModule_ReplyWithDouble(ctx, seen_get_policy(seen_key_set(k))->error);
    RedisModule_ReplyWithCString(ctx, "fpr-estimate");
    RedisModule_ReplyWithDouble(ctx, seen_fpr_estimate(seen_key_set(k)));
    RedisModule_ReplyWithCString(ctx, "forget-all-at-ms");
    RedisModule_ReplyWithLongLong(ctx, forget == INT64_MAX ? -1 : forget);
    RedisModule_ReplyWithCString(ctx, "encoding");
    RedisModule_ReplyWithCString(ctx, set_encoding(runs, nruns));
    RedisModule_ReplyWithCString(ctx, "keys");
    RedisModule_ReplyWithCString(ctx, seen_keys_raw(seen_key_set(k)) ? "raw" : "hashed");
    RedisModule_ReplyWithCString(ctx, "runs");
    reply_runs(ctx, runs, nruns);
    RedisModule_ReplyWithCString(ctx, "slices");
    reply_slices(ctx, segs, nsegs, now);
    RedisModule_Free(runs);
    RedisModule_Free(segs);
    RedisModule_CloseKey(key);
    return REDISMODULE_OK;
}

/* ------------------------------------------------------------ LOAD */

typedef struct load_request {
    bool has_now, chunked;
    int64_t now;
    key_options meta;
    uint64_t offset, total;
    RedisModuleString *blob;
} load_request;

static const char *load_parse(RedisModuleString **argv, int argc, load_request *q)
{
    memset(q, 0, sizeof *q);
    q->meta.jitter_ms = -1;
    bool has_offset = false, has_total = false;
    if ((argc - 3) % 2 != 0)
        return "ERR syntax error: SEEN.LOAD key [option value ...] blob";
    for (int i = 2; i < argc - 1; i += 2) {
        RedisModuleString *name = argv[i], *value = argv[i + 1];
        if (arg_is(name, "NOW")) {
            if (!arg_time(value, &q->now))
                return "ERR bad NOW: ms since the epoch";
            q->has_now = true;
        } else if (arg_is(name, "OFFSET")) {
            if (!arg_u64(value, &q->offset))
                return "ERR bad OFFSET";
            has_offset = true;
        } else if (arg_is(name, "TOTAL")) {
            if (!arg_u64(value, &q->total) || q->total == 0 || q->total > SIZE_MAX / 2)
                return "ERR bad TOTAL";
            has_total = true;
        } else if (arg_is(name, "EXPIRY") || arg_is(name, "JITTER")) {
            int at = i;
            const char *err = NULL;
            if (key_option_parse(&q->meta, argv, argc - 1, &at, &err) < 0)
                return err;
        } else {
            return "ERR unknown option for SEEN.LOAD";
        }
    }
    if (has_offset != has_total)
        return "ERR OFFSET and TOTAL go together";
    q->chunked = has_offset;
    q->blob = argv[argc - 1];
    return NULL;
}

static void repl_load(RedisModuleCtx *ctx, RedisModuleString *name, const load_request *q,
                      seen_key *k, int64_t now)
{
    repl_args r;
    repl_begin(ctx, &r, name, now);
    repl_word(ctx, &r, "EXPIRY");
    repl_word(ctx, &r,
              k ? ((k->flags & SEEN_KEY_EXPIRY) ? "ON" : "OFF") : (q->meta.expiry ? "ON" : "OFF"));
    if (k || q->meta.jitter_ms >= 0) {
        repl_word(ctx, &r, "JITTER");
        repl_number(ctx, &r, k ? k->jitter_ms : q->meta.jitter_ms);
    }
    if (q->chunked) {
        repl_word(ctx, &r, "OFFSET");
        repl_number(ctx, &r, (long long)q->offset);
        repl_word(ctx, &r, "TOTAL");
        repl_number(ctx, &r, (long long)q->total);
    }
    repl_push(&r, q->blob, false);
    repl_send(ctx, &r, "SEEN.LOAD");
}

/* A SEEN.LOAD that fails while the server replays its AOF loses a key,
 * and Redis goes on loading without a word: say which and why. */
static int load_failed(RedisModuleCtx *ctx, RedisModuleString *name, const char *err)
{
    if (RedisModule_GetContextFlags(ctx) & REDISMODULE_CTX_FLAGS_LOADING) {
        size_t len;
        const char *k = RedisModule_StringPtrLen(name, &len);
        RedisModule_Log(ctx, "warning", "seen: SEEN.LOAD of key '%.*s' in the AOF failed: %s",
                        (int)(len < 200 ? len : 200), k, err);
    }
    return RedisModule_ReplyWithError(ctx, err);
}

static int cmd_load(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 3)
        return RedisModule_WrongArity(ctx);
    load_request q;
    const char *err = load_parse(argv, argc, &q);
    int64_t now = q.now;
    if (err || (err = resolve_now(ctx, q.has_now, &now)))
        return load_failed(ctx, argv[1], err);
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_WRITE);
    if (RedisModule_KeyType(key) != REDISMODULE_KEYTYPE_EMPTY) {
        RedisModule_CloseKey(key);
        return load_failed(ctx, argv[1], "ERR key already exists");
    }
    const uint8_t *bytes;
    size_t len;
    seen_upload *whole = NULL;
    if (q.chunked) {
        if ((err = seen_upload_chunk(ctx, argv[1], q.offset, q.total, q.blob, &whole))) {
            RedisModule_CloseKey(key);
            return load_failed(ctx, argv[1], err);
        }
        if (whole == NULL) {
            RedisModule_CloseKey(key);
            repl_load(ctx, argv[1], &q, NULL, now);
            return RedisModule_ReplyWithSimpleString(ctx, "OK");
        }
        bytes = seen_upload_bytes(whole, &len);
    } else {
        bytes = (const uint8_t *)RedisModule_StringPtrLen(q.blob, &len);
    }
    seen_set *set;
    seen_err e = seen_key_deserialize(bytes, len, &set);
    seen_upload_free(whole);
    if (e != SEEN_OK) {
        RedisModule_CloseKey(key);
        return load_failed(ctx, argv[1], seen_reply_error(e));
    }
    if (q.meta.jitter_ms < 0)
        q.meta.jitter_ms = q.meta.expiry ? draw_jitter() : 0;
    if (!seen_key_meta_valid(q.meta.expiry ? SEEN_KEY_EXPIRY : 0, q.meta.jitter_ms,
                             seen_get_policy(set))) {
        seen_free(set);
        RedisModule_CloseKey(key);
        return load_failed(
            ctx, argv[1],
            "ERR EXPIRY ON needs a set with a window: a key without one is never forgotten");
    }
    seen_key *k = new_value(&q.meta, set);
    RedisModule_ModuleTypeSetValue(key, seen_type, k);
    after_write(ctx, key, argv[1], k, now, "seen.load");
    RedisModule_CloseKey(key);
    repl_load(ctx, argv[1], &q, k, now);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

/* ------------------------------------------------------------ registration */

typedef struct command_def {
    const char *name;
    RedisModuleCmdFunc fn;
    const char *flags;
    int arity;
    uint64_t key_flags;
    const char *summary;
    const char *complexity;
    const char *acl; /* ACL categories, where the server takes them */
} command_def;

#define KEY_WRITE_INSERT (REDISMODULE_CMD_KEY_RW | REDISMODULE_CMD_KEY_INSERT)
#define KEY_WRITE_DELETE (REDISMODULE_CMD_KEY_RW | REDISMODULE_CMD_KEY_DELETE)

/* Every command ends by letting the keys it touched rest (packed again
 * if small), whatever path it returns by. */
#define SETTLED(fn)                                                                                \
    static int fn##_settled(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)               \
    {                                                                                              \
        int r = fn(ctx, argv, argc);                                                               \
        seen_keys_settle(RedisModule_Milliseconds(), true);                                        \
        return r;                                                                                  \
    }
SETTLED(cmd_reserve)
SETTLED(cmd_add)
SETTLED(cmd_insert)
SETTLED(cmd_filter)
SETTLED(cmd_mfilter)
SETTLED(cmd_del)
SETTLED(cmd_remove)
SETTLED(cmd_count)
SETTLED(cmd_info)
SETTLED(cmd_compact)
SETTLED(cmd_load)

static const command_def commands[] = {
    {"seen.reserve", cmd_reserve_settled, "write deny-oom", -2, KEY_WRITE_INSERT,
     "Create an empty seen set with a policy", "O(1)", "write"},
    {"seen.add", cmd_add_settled, "write deny-oom", -3, KEY_WRITE_INSERT,
     "Add items; returns how many were new", "O(N log N) for N items", "write"},
    {"seen.insert", cmd_insert_settled, "write deny-oom", -4, KEY_WRITE_INSERT,
     "Add items given as arguments or in one newline-separated argument", "O(N log N) for N items",
     "write"},
    {"seen.filter", cmd_filter_settled, "readonly", -3, REDISMODULE_CMD_KEY_RO,
     "Return the candidates not seen, in input order", "O(N log N) for N candidates", "read"},
    {"seen.del", cmd_del_settled, "write", -3, KEY_WRITE_DELETE,
     "Forget items; returns how many were seen", "O(N log N + M) for N items, M stored", "write"},
    {"seen.remove", cmd_remove_settled, "write", -4, KEY_WRITE_DELETE,
     "Forget items given as arguments or in one newline-separated argument",
     "O(N log N + M) for N items, M stored", "write"},
    {"seen.count", cmd_count_settled, "readonly fast", 2, REDISMODULE_CMD_KEY_RO,
     "Number of items remembered", "O(S) for S slices", "read"},
    {"seen.info", cmd_info_settled, "readonly fast", 2, REDISMODULE_CMD_KEY_RO,
     "Policy, size, encodings, slices and false-positive rates of a set", "O(S) for S slices",
     "read"},
    {"seen.compact", cmd_compact_settled, "write", -2,
     REDISMODULE_CMD_KEY_RW | REDISMODULE_CMD_KEY_UPDATE,
     "Compact now an import the server would compact a second after its last write",
     "O(M) for M stored items", "write"},
    {"seen.load", cmd_load_settled, "write deny-oom", -3,
     REDISMODULE_CMD_KEY_OW | REDISMODULE_CMD_KEY_UPDATE,
     "Create a key from a serialized set (AOF rewrite form)", "O(M) for M stored bytes",
     "write dangerous"},
};

static const RedisModuleCommandInfoVersion info_version = {
    1, sizeof(RedisModuleCommandHistoryEntry), sizeof(RedisModuleCommandKeySpec),
    sizeof(RedisModuleCommandArg)};

static int set_info(RedisModuleCtx *ctx, const char *name, const char *summary,
                    const char *complexity, int arity, RedisModuleCommandKeySpec *specs)
{
    RedisModuleCommand *cmd = RedisModule_GetCommand(ctx, name);
    RedisModuleCommandInfo info = {
        .version = &info_version,
        .summary = summary,
        .complexity = complexity,
        .since = SEEN_VERSION_STRING,
        .arity = arity,
        .key_specs = specs,
    };
    return cmd ? RedisModule_SetCommandInfo(cmd, &info) : REDISMODULE_ERR;
}

/* ACL categories for a command (@read, @write, @dangerous).  Servers
 * before 7.2 give module commands no categories at all and have no call to
 * set them: there ACL rules name the commands (docs/commands.md, "ACL"). */
static int set_acl(RedisModuleCtx *ctx, const char *name, const char *categories)
{
    if (RedisModule_SetCommandACLCategories == NULL)
        return REDISMODULE_OK;
    RedisModuleCommand *cmd = RedisModule_GetCommand(ctx, name);
    return cmd ? RedisModule_SetCommandACLCategories(cmd, categories) : REDISMODULE_ERR;
}

int seen_commands_register(RedisModuleCtx *ctx)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        const command_def *c = &commands[i];
        if (RedisModule_CreateCommand(ctx, c->name, c->fn, c->flags, 1, 1, 1) != REDISMODULE_OK)
            return REDISMODULE_ERR;
        RedisModuleCommandKeySpec specs[2] = {{0}};
        specs[0].flags = c->key_flags;
        specs[0].begin_search_type = REDISMODULE_KSPEC_BS_INDEX;
        specs[0].bs.index.pos = 1;
        specs[0].find_keys_type = REDISMODULE_KSPEC_FK_RANGE;
        specs[0].fk.range.lastkey = 0;
        specs[0].fk.range.keystep = 1;
        if (set_info(ctx, c->name, c->summary, c->complexity, c->arity, specs) != REDISMODULE_OK ||
            set_acl(ctx, c->name, c->acl) != REDISMODULE_OK)
            return REDISMODULE_ERR;
    }
    /* Keys counted by numkeys: key specs give ACL the keys; Redis 7.0's
     * Cluster routing only reads legacy ranges or the getkeys API, so the
     * command also answers key-position requests itself. */
    /* Not "fast": a batch costs its candidates times its keys. */
    if (RedisModule_CreateCommand(ctx, "seen.mfilter", cmd_mfilter_settled, "readonly getkeys-api",
                                  0, 0, 0) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    RedisModuleCommandKeySpec specs[2] = {{0}};
    specs[0].flags = REDISMODULE_CMD_KEY_RO;
    specs[0].begin_search_type = REDISMODULE_KSPEC_BS_INDEX;
    specs[0].bs.index.pos = 1;
    specs[0].find_keys_type = REDISMODULE_KSPEC_FK_KEYNUM;
    specs[0].fk.keynum.keynumidx = 0;
    specs[0].fk.keynum.firstkey = 1;
    specs[0].fk.keynum.keystep = 1;
    if (set_info(ctx, "seen.mfilter",
                 "Filter candidates against several sets at once; compact reply forms",
                 "O(K * N log N) for K keys and N candidates", -5, specs) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    return set_acl(ctx, "seen.mfilter", "read");
}
