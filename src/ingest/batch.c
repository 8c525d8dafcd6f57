/* batch.c — collects events and writes them as few SEEN commands as
 * possible: one per key.
 *
 * By default every item carries its own event time (SEEN.INSERT ... TIMED),
 * so a key's events go in one command whatever their times: a back-filled
 * stream or a migrated history costs as few commands as live traffic.  With
 * --ts-granularity > 0 (a module without TIMED), `AT` stamps every item of a
 * command with one time instead: events of a key are grouped by bucket
 * (ts / granularity) and each group is written at the latest event time in
 * it, so an item is remembered at most one bucket longer than its own time
 * says, never shorter — the module's "no false negatives inside the window"
 * holds either way.  Large groups go as one BULK argument, which Redis
 * parses much faster than one argument per item. */
#include "ingest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Items per command, well under the module's default seen.max-batch. */
#define MAX_COMMAND_ITEMS 100000

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a: only orders the sort */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
    return h;
}

void batch_add(struct batch *b, const char *key, size_t key_len, int64_t ts, const char *item,
               size_t item_len)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 1024;
        b->entries = xrealloc(b->entries, b->cap * sizeof *b->entries);
    }
    if (b->n == 0)
        b->first_ms = mono_ms();
    struct batch_entry *e = &b->entries[b->n++];
    e->key_hash = hash_bytes(key, key_len);
    e->key_off = b->arena.len;
    e->key_len = (uint32_t)key_len;
    buf_append(&b->arena, key, key_len);
    e->item_off = b->arena.len;
    e->item_len = (uint32_t)item_len;
    buf_append(&b->arena, item, item_len);
    e->ts = ts;
}

void batch_clear(struct batch *b)
{
    b->n = 0;
    b->arena.len = 0;
    b->first_ms = 0;
}

void batch_free(struct batch *b)
{
    buf_free(&b->arena);
    free(b->entries);
    *b = (struct batch){0};
}

/* ------------------------------------------------------------ writer */
static const char *const policy_with_value[] = {"WINDOW", "SLICES",     "ERROR",  "CAPACITY",
                                                "IDS",    "EXACTLIMIT", "EXPIRY", "JITTER"};

static bool is_policy_option(const char *word, bool *takes_value)
{
    if (strcasecmp(word, "EXACT") == 0) {
        *takes_value = false;
        return true;
    }
    for (size_t i = 0; i < sizeof policy_with_value / sizeof *policy_with_value; i++)
        if (strcasecmp(word, policy_with_value[i]) == 0) {
            *takes_value = true;
            return true;
        }
    return false;
}

bool writer_init(struct writer *w, struct redis_target *t, const struct config *cfg, char *err,
                 size_t errlen)
{
    *w = (struct writer){.target = t, .cfg = cfg};
    if (!cfg->policy)
        return true;
    char *copy = xstrdup(cfg->policy);
    for (char *save = NULL, *word = strtok_r(copy, " \t", &save); word;
         word = strtok_r(NULL, " \t", &save)) {
        w->policy_argv = xrealloc(w->policy_argv, (size_t)(w->policy_argc + 1) * sizeof(char *));
        w->policy_argv[w->policy_argc++] = xstrdup(word);
    }
    free(copy);
    for (int i = 0; i < w->policy_argc; i++) {
        bool takes_value;
        if (!is_policy_option(w->policy_argv[i], &takes_value)) {
            snprintf(err, errlen,
                     "unknown policy option '%s' (known: WINDOW SLICES ERROR EXACT "
                     "CAPACITY IDS EXACTLIMIT EXPIRY JITTER)",
                     w->policy_argv[i]);
            return false;
        }
        if (takes_value && ++i == w->policy_argc) {
            snprintf(err, errlen, "policy option '%s' needs a value", w->policy_argv[i - 1]);
            return false;
        }
    }
    return true;
}

void writer_free(struct writer *w)
{
    for (int i = 0; i < w->policy_argc; i++)
        free(w->policy_argv[i]);
    free(w->policy_argv);
    w->policy_argv = NULL;
    w->policy_argc = 0;
}

/* The time bucket of an event; granularity 0 (TIMED writes): one bucket. */
static int64_t bucket_of(int64_t ts, int64_t granularity)
{
    return granularity > 0 ? ts / granularity : 0;
}

/* qsort has no context argument in C11; flushing is single-threaded. */
static const struct batch *sorting;
static int64_t sorting_granularity;

static int compare_entries(const void *pa, const void *pb)
{
    const struct batch_entry *a = &sorting->entries[*(const size_t *)pa];
    const struct batch_entry *b = &sorting->entries[*(const size_t *)pb];
    if (a->key_hash != b->key_hash)
        return a->key_hash < b->key_hash ? -1 : 1;
    const char *arena = sorting->arena.data;
    if (a->key_len != b->key_len)
        return a->key_len < b->key_len ? -1 : 1;
    int c = memcmp(arena + a->key_off, arena + b->key_off, a->key_len);
    if (c)
        return c;
    int64_t ba = bucket_of(a->ts, sorting_granularity), bb = bucket_of(b->ts, sorting_granularity);
    if (ba != bb)
        return ba < bb ? -1 : 1;
    if (a->item_len != b->item_len)
        return a->item_len < b->item_len ? -1 : 1;
    return memcmp(arena + a->item_off, arena + b->item_off, a->item_len);
}

static bool same_key(const struct batch *b, const struct batch_entry *x,
                     const struct batch_entry *y)
{
    return x->key_hash == y->key_hash && x->key_len == y->key_len &&
           memcmp(b->arena.data + x->key_off, b->arena.data + y->key_off, x->key_len) == 0;
}

static bool same_item(const struct batch *b, const struct batch_entry *x,
                      const struct batch_entry *y)
{
    return x->item_len == y->item_len &&
           memcmp(b->arena.data + x->item_off, b->arena.data + y->item_off, x->item_len) == 0;
}

/* One command: a run of distinct items of one key and bucket. */
struct group {
    size_t first, count; /* in the deduplicated index */
    int64_t at;
    char at_text[24];
    size_t bulk_off, bulk_len; /* in the bulk buffer, when sent as BULK */
    bool bulk;
};

struct flush_state {
    struct writer *w;
    const struct batch *b;
    bool timed;    /* every item with its own time (TIMED) */
    size_t *order; /* entry indices, sorted, duplicates removed */
    int64_t *ts;   /* per order[] slot: the item's latest time in the batch */
    char (*ts_text)[24];
    struct group *groups;
    size_t n_groups;
    struct buf bulk;
};

static const char *entry_key(const struct batch *b, size_t i)
{
    return b->arena.data + b->entries[i].key_off;
}

static const char *entry_item(const struct batch *b, size_t i)
{
    return b->arena.data + b->entries[i].item_off;
}

/* Fills cmd for items order[first .. first+count) of group g. */
static void build_command(struct flush_state *fs, const struct group *g, size_t first, size_t count,
                          bool bulk, struct rcmd *cmd)
{
    const struct writer *w = fs->w;
    const struct batch *b = fs->b;
    size_t key_entry = fs->order[first];
    bool insert = bulk || w->policy_argc > 0 || fs->timed;
    size_t argc = 4 + (insert ? (size_t)w->policy_argc + 1 : 0) + (bulk ? 1 : 2 * count);
    const char **argv = xmalloc(argc * sizeof *argv);
    size_t *lens = xmalloc(argc * sizeof *lens);
    size_t k = 0;
#define ARG(p, n) (argv[k] = (p), lens[k] = (n), k++)
    if (insert)
        ARG("SEEN.INSERT", 11);
    else
        ARG("SEEN.ADD", 8);
    ARG(entry_key(b, key_entry), b->entries[key_entry].key_len);
    if (fs->timed) {
        ARG("TIMED", 5);
    } else {
        ARG("AT", 2);
        ARG(g->at_text, strlen(g->at_text));
    }
    if (insert) {
        for (int p = 0; p < w->policy_argc; p++)
            ARG(w->policy_argv[p], strlen(w->policy_argv[p]));
        if (bulk) {
            ARG("BULK", 4);
            ARG(fs->bulk.data + g->bulk_off, g->bulk_len);
        } else {
            ARG("ITEMS", 5);
        }
    }
    for (size_t i = first; !bulk && i < first + count; i++) {
        if (fs->timed)
            ARG(fs->ts_text[i], strlen(fs->ts_text[i]));
        ARG(entry_item(b, fs->order[i]), b->entries[fs->order[i]].item_len);
    }
#undef ARG
    *cmd = (struct rcmd){.argc = (int)k,
                         .argv = argv,
                         .argvlen = lens,
                         .slot = key_slot(argv[1], lens[1]),
                         .ask_node = -1};
}

static void free_commands(struct rcmd *cmds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(cmds[i].argv);
        free(cmds[i].argvlen);
        free(cmds[i].error);
    }
    free(cmds);
}

/* Sorts, removes duplicates, cuts the batch into groups and lays out the
 * BULK arguments. */
static void plan_groups(struct flush_state *fs, int64_t granularity, size_t bulk_threshold)
{
    const struct batch *b = fs->b;
    fs->timed = granularity == 0;
    fs->ts = xmalloc(b->n * sizeof *fs->ts);
    size_t *order = xmalloc(b->n * sizeof *order);
    for (size_t i = 0; i < b->n; i++)
        order[i] = i;
    sorting = b;
    sorting_granularity = granularity;
    qsort(order, b->n, sizeof *order, compare_entries);
    sorting = NULL;

    size_t n = 0;
    fs->groups = xmalloc(b->n * sizeof *fs->groups);
    fs->n_groups = 0;
    for (size_t i = 0; i < b->n; i++) {
        const struct batch_entry *e = &b->entries[order[i]];
        struct group *g = fs->n_groups ? &fs->groups[fs->n_groups - 1] : NULL;
        const struct batch_entry *prev = n ? &b->entries[order[n - 1]] : NULL;
        bool same_group = g && g->count < MAX_COMMAND_ITEMS && same_key(b, prev, e) &&
                          bucket_of(prev->ts, granularity) == bucket_of(e->ts, granularity);
        if (same_group && same_item(b, prev, e)) {
            if (e->ts > g->at)
                g->at = e->ts;
            if (e->ts > fs->ts[n - 1])
                fs->ts[n - 1] = e->ts;
            continue; /* the same item twice in one command: its latest time */
        }
        if (!same_group) {
            g = &fs->groups[fs->n_groups++];
            *g = (struct group){.first = n, .at = e->ts};
        }
        if (e->ts > g->at)
            g->at = e->ts;
        fs->ts[n] = e->ts;
        order[n++] = order[i];
        g->count++;
    }
    fs->order = order;
    fs->ts_text = xmalloc((n ? n : 1) * sizeof *fs->ts_text);
    for (size_t i = 0; i < n; i++)
        snprintf(fs->ts_text[i], sizeof fs->ts_text[i], "%lld", (long long)fs->ts[i]);

    fs->bulk.len = 0;
    for (size_t gi = 0; gi < fs->n_groups; gi++) {
        struct group *g = &fs->groups[gi];
        snprintf(g->at_text, sizeof g->at_text, "%lld", (long long)g->at);
        if (g->count < bulk_threshold)
            continue;
        bool newline = false;
        for (size_t i = g->first; i < g->first + g->count && !newline; i++)
            newline = memchr(entry_item(b, order[i]), '\n', b->entries[order[i]].item_len);
        if (newline)
            continue; /* BULK separates items by newlines */
        g->bulk = true;
        g->bulk_off = fs->bulk.len;
        for (size_t i = g->first; i < g->first + g->count; i++) {
            if (fs->timed) {
                buf_append(&fs->bulk, fs->ts_text[i], strlen(fs->ts_text[i]));
                buf_append(&fs->bulk, " ", 1);
            }
            buf_append(&fs->bulk, entry_item(b, order[i]), b->entries[order[i]].item_len);
            buf_append(&fs->bulk, "\n", 1);
        }
        g->bulk_len = fs->bulk.len - g->bulk_off;
    }
}

/* A failed command: WRONGTYPE fails every item alike; other refusals are
 * about some item, so its items are tried one by one to find which. */
static void report_failures(struct flush_state *fs, struct rcmd *cmd, const struct group *g,
                            bool *complete)
{
    bool whole_key = strncmp(cmd->error, "WRONGTYPE", 9) == 0;
    if (g->count > 1 && !whole_key) {
        struct rcmd *singles = xmalloc(g->count * sizeof *singles);
        for (size_t i = 0; i < g->count; i++)
            build_command(fs, g, g->first + i, 1, false, &singles[i]);
        if (!redis_exec(fs->w->target, singles, g->count))
            *complete = false;
        for (size_t i = 0; i < g->count; i++) {
            if (singles[i].state == RCMD_DONE) {
                stats.items_new += (uint64_t)singles[i].integer;
                stats.commands++;
            } else if (singles[i].state == RCMD_FAILED) {
                struct group one = *g;
                one.first = g->first + i;
                one.count = 1;
                report_failures(fs, &singles[i], &one, complete);
            }
        }
        free_commands(singles, g->count);
        return;
    }
    const struct batch *b = fs->b;
    for (size_t i = g->first; i < g->first + g->count; i++) {
        size_t e = fs->order[i];
        int64_t at = fs->timed ? fs->ts[i] : g->at;
        log_msg(LOG_WARN, "redis refused item of key '%.*s': %s", (int)b->entries[e].key_len,
                entry_key(b, e), cmd->error);
        stats.write_errors++;
        if (fs->w->on_failure)
            fs->w->on_failure(fs->w->failure_ctx, entry_key(b, e), b->entries[e].key_len, at,
                              entry_item(b, e), b->entries[e].item_len, cmd->error);
    }
}

bool writer_flush(struct writer *w, struct batch *b)
{
    if (b->n == 0)
        return true;
    struct flush_state fs = {.w = w, .b = b};
    plan_groups(&fs, w->cfg->ts_granularity_ms, (size_t)w->cfg->bulk_threshold);
    struct rcmd *cmds = xmalloc(fs.n_groups * sizeof *cmds);
    for (size_t gi = 0; gi < fs.n_groups; gi++)
        build_command(&fs, &fs.groups[gi], fs.groups[gi].first, fs.groups[gi].count,
                      fs.groups[gi].bulk, &cmds[gi]);
    bool complete = redis_exec(w->target, cmds, fs.n_groups);
    for (size_t gi = 0; gi < fs.n_groups && complete; gi++) {
        if (cmds[gi].state == RCMD_DONE) {
            stats.commands++;
            stats.items_new += (uint64_t)cmds[gi].integer;
        } else if (cmds[gi].state == RCMD_FAILED) {
            report_failures(&fs, &cmds[gi], &fs.groups[gi], &complete);
        }
    }
    free_commands(cmds, fs.n_groups);
    free(fs.order);
    free(fs.ts);
    free(fs.ts_text);
    free(fs.groups);
    buf_free(&fs.bulk);
    if (complete)
        stats.batches++;
    return complete;
}
