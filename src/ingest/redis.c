/* redis.c — writes pipelines of commands to one Redis or to the masters of
 * a Redis Cluster.
 *
 * hiredis 0.14 (Debian 12) knows nothing of Cluster, so routing is done
 * here: the slot map comes from CLUSTER SLOTS, each command goes to the
 * master of its key's slot, MOVED updates the map (and asks for a refresh
 * before the next round), ASK sends ASKING and the command to the named node
 * once.  Every command the ingester sends is idempotent, so anything whose
 * reply was not read (a dropped connection, a timeout) is simply sent again. */
#include "ingest.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 2000
/* More redirections than this for one command means the map is churning:
 * back off and reload it instead of chasing. */
#define MAX_REDIRECTS 16

bool parse_host_port(const char *s, char *host, size_t hostlen, int *port)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || (size_t)(colon - s) >= hostlen)
        return false;
    uint64_t p;
    if (!decimal_u64(colon + 1, strlen(colon + 1), &p) || p == 0 || p > 65535)
        return false;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    *port = (int)p;
    return true;
}

static struct timeval timeval_of(int ms)
{
    return (struct timeval){.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
}

void redis_node_close(struct redis_node *node)
{
    if (node->ctx)
        redisFree(node->ctx);
    node->ctx = NULL;
}

redisContext *redis_node_connect(struct redis_node *node, int timeout_ms)
{
    if (node->ctx)
        return node->ctx;
    redisContext *c = redisConnectWithTimeout(node->host, node->port, timeval_of(timeout_ms));
    if (!c || c->err) {
        log_msg(LOG_WARN, "cannot connect to redis %s:%d: %s", node->host, node->port,
                c ? c->errstr : "out of memory");
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, timeval_of(timeout_ms));
    redisEnableKeepAlive(c);
    if (node->auth.password) {
        const char *argv[3] = {"AUTH", node->auth.user, node->auth.password};
        int argc = node->auth.user ? 3 : 2;
        if (!node->auth.user)
            argv[1] = node->auth.password;
        redisReply *r = redisCommandArgv(c, argc, argv, NULL);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            /* Logged as an error but retried like any unreachable node: the
             * server's ACLs may be fixed while the ingester waits. */
            log_msg(LOG_ERROR, "redis %s:%d: AUTH%s%s refused: %s", node->host, node->port,
                    node->auth.user ? " as " : "", node->auth.user ? node->auth.user : "",
                    r ? r->str : c->errstr);
            if (r)
                freeReplyObject(r);
            redisFree(c);
            return NULL;
        }
        freeReplyObject(r);
    }
    node->ctx = c;
    return c;
}

redisReply *redis_node_command(struct redis_node *node, int timeout_ms, int argc, const char **argv,
                               const size_t *argvlen)
{
    redisContext *c = redis_node_connect(node, timeout_ms);
    if (!c)
        return NULL;
    redisReply *reply = redisCommandArgv(c, argc, argv, argvlen);
    if (!reply) {
        log_msg(LOG_WARN, "redis %s:%d: %s", node->host, node->port, c->errstr);
        redis_node_close(node);
    }
    return reply;
}

static int find_node(struct redis_target *t, const char *host, int port)
{
    for (size_t i = 0; i < t->n_nodes; i++)
        if (t->nodes[i].port == port && strcmp(t->nodes[i].host, host) == 0)
            return (int)i;
    if (t->n_nodes == t->cap_nodes) {
        t->cap_nodes = t->cap_nodes ? 2 * t->cap_nodes : 4;
        t->nodes = xrealloc(t->nodes, t->cap_nodes * sizeof *t->nodes);
    }
    struct redis_node *node = &t->nodes[t->n_nodes];
    *node = (struct redis_node){.port = port, .auth = t->auth};
    snprintf(node->host, sizeof node->host, "%s", host);
    return (int)t->n_nodes++;
}

bool redis_target_init(struct redis_target *t, const char *addr, bool cluster, int timeout_ms,
                       const struct redis_auth *auth)
{
    *t = (struct redis_target){.cluster = cluster, .timeout_ms = timeout_ms};
    if (auth)
        t->auth = *auth;
    if (!parse_host_port(addr, t->seed_host, sizeof t->seed_host, &t->seed_port))
        return false;
    for (int s = 0; s < CLUSTER_SLOTS; s++)
        t->slot_node[s] = cluster ? -1 : 0;
    if (!cluster) {
        find_node(t, t->seed_host, t->seed_port);
        t->slots_known = true;
    }
    return true;
}

void redis_target_free(struct redis_target *t)
{
    for (size_t i = 0; i < t->n_nodes; i++)
        redis_node_close(&t->nodes[i]);
    free(t->nodes);
    t->nodes = NULL;
    t->n_nodes = t->cap_nodes = 0;
}

/* Reads a CLUSTER SLOTS reply into the map; false if it is unusable. */
static bool load_slot_map(struct redis_target *t, const redisReply *r, const char *asked_host)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements == 0)
        return false;
    int map[CLUSTER_SLOTS];
    for (int s = 0; s < CLUSTER_SLOTS; s++)
        map[s] = -1;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *range = r->element[i];
        if (range->type != REDIS_REPLY_ARRAY || range->elements < 3 ||
            range->element[0]->type != REDIS_REPLY_INTEGER ||
            range->element[1]->type != REDIS_REPLY_INTEGER ||
            range->element[2]->type != REDIS_REPLY_ARRAY || range->element[2]->elements < 2)
            return false;
        const redisReply *master = range->element[2];
        if (master->element[0]->type != REDIS_REPLY_STRING ||
            master->element[1]->type != REDIS_REPLY_INTEGER)
            return false;
        const char *host = master->element[0]->str;
        if (strcmp(host, "?") == 0) /* endpoint unknown to the node: skip */
            continue;
        if (host[0] == '\0') /* "the host you asked" */
            host = asked_host;
        int node = find_node(t, host, (int)master->element[1]->integer);
        long long lo = range->element[0]->integer, hi = range->element[1]->integer;
        for (long long s = lo; s <= hi && s < CLUSTER_SLOTS; s++)
            if (s >= 0)
                map[s] = node;
    }
    memcpy(t->slot_node, map, sizeof map);
    return true;
}

/* Asks the known nodes (the seed among them) for the slot map. */
static bool refresh_slots(struct redis_target *t)
{
    find_node(t, t->seed_host, t->seed_port);
    const char *argv[] = {"CLUSTER", "SLOTS"};
    size_t n = t->n_nodes; /* load_slot_map may add nodes: ask only these */
    for (size_t i = 0; i < n; i++) {
        char host[256];
        snprintf(host, sizeof host, "%s", t->nodes[i].host);
        int port = t->nodes[i].port;
        redisReply *r = redis_node_command(&t->nodes[i], t->timeout_ms, 2, argv, NULL);
        if (!r)
            continue;
        bool ok = load_slot_map(t, r, host);
        if (!ok)
            log_msg(LOG_WARN, "redis %s:%d: unusable CLUSTER SLOTS reply%s%s", host, port,
                    r->type == REDIS_REPLY_ERROR ? ": " : "",
                    r->type == REDIS_REPLY_ERROR ? r->str : "");
        freeReplyObject(r);
        if (ok) {
            t->slots_known = true;
            log_msg(LOG_DEBUG, "slot map loaded from %s:%d", host, port);
            return true;
        }
    }
    return false;
}

bool redis_error_is_permanent(const char *msg)
{
    /* Only errors about the data itself: the same command can never
     * succeed.  Anything else (unknown command, NOPERM, OOM, LOADING, a bad
     * policy...) is the server's state or configuration, and retrying until
     * it is fixed is what keeps the at-least-once promise. */
    return strncmp(msg, "WRONGTYPE", 9) == 0 || strncmp(msg, "ERR items", 9) == 0 ||
           strncmp(msg, "ERR batch of", 12) == 0 || strncmp(msg, "ERR item ", 9) == 0;
}

/* "MOVED 3999 127.0.0.1:6381" or "ASK ..." → the node index; -1 if bad. */
static int redirect_node(struct redis_target *t, const char *msg, const char *from_host)
{
    const char *addr = strchr(msg, ' ');
    addr = addr ? strchr(addr + 1, ' ') : NULL;
    if (!addr)
        return -1;
    addr++;
    char host[256];
    int port;
    if (addr[0] == ':') { /* an empty host means the one we talked to */
        char full[300];
        snprintf(full, sizeof full, "%s%s", from_host, addr);
        if (!parse_host_port(full, host, sizeof host, &port))
            return -1;
    } else if (!parse_host_port(addr, host, sizeof host, &port)) {
        return -1;
    }
    return find_node(t, host, port);
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* What one round of the pipeline asks of the next. */
struct round {
    bool backoff;      /* a transient failure: wait before the next round */
    bool reload_slots; /* the slot map is stale */
};

/* Interprets one reply to one command. */
static void take_reply(struct redis_target *t, struct rcmd *cmd, const redisReply *r, int node,
                       struct round *round)
{
    if (r->type == REDIS_REPLY_INTEGER) {
        cmd->integer = r->integer;
        cmd->state = RCMD_DONE;
        return;
    }
    if (r->type != REDIS_REPLY_ERROR) {
        cmd->state = RCMD_DONE; /* +OK or a bulk reply: a success all the same */
        return;
    }
    const char *from = t->nodes[node].host;
    if (t->cluster && (starts_with(r->str, "MOVED ") || starts_with(r->str, "ASK "))) {
        int to = redirect_node(t, r->str, from);
        if (to < 0 || ++cmd->redirects > MAX_REDIRECTS) {
            log_msg(LOG_WARN, "redis: too many or bad redirections (%s)", r->str);
            round->backoff = round->reload_slots = true;
            cmd->redirects = 0;
            cmd->ask_node = -1;
            return;
        }
        if (r->str[0] == 'M') {
            stats.moved++;
            t->slot_node[cmd->slot] = to; /* the slot moved for good */
            cmd->ask_node = -1;
            round->reload_slots = true; /* others probably moved with it */
        } else {
            stats.ask++;
            cmd->ask_node = to; /* this command only, this once */
        }
        return;
    }
    if (cmd->errors_final || redis_error_is_permanent(r->str)) {
        cmd->state = RCMD_FAILED;
        free(cmd->error);
        cmd->error = xstrdup(r->str);
        return;
    }
    if (starts_with(r->str, "CLUSTERDOWN") || starts_with(r->str, "READONLY") ||
        starts_with(r->str, "MASTERDOWN"))
        round->reload_slots = true; /* a failover: the map will change */
    log_msg(LOG_WARN, "redis %s:%d: %s (will retry)", from, t->nodes[node].port, r->str);
    round->backoff = true;
}

static int node_for(const struct redis_target *t, const struct rcmd *cmd)
{
    if (cmd->ask_node >= 0)
        return cmd->ask_node;
    return t->cluster ? t->slot_node[cmd->slot] : 0;
}

/* Sends the pending commands routed to `node` and reads their replies.  A
 * broken connection leaves its unanswered commands pending. */
static void exchange_with_node(struct redis_target *t, int node, struct rcmd *cmds, size_t n,
                               const int *route, struct round *round)
{
    struct redis_node *rn = &t->nodes[node];
    redisContext *c = rn->ctx;
    bool broken = false;
    for (size_t i = 0; i < n; i++) {
        if (route[i] != node)
            continue;
        if (broken) {
            /* Read what was sent before the break; the rest stays pending. */
            continue;
        }
        redisReply *r = NULL;
        bool asking = cmds[i].ask_node == node;
        if (asking) {
            if (redisGetReply(c, (void **)&r) != REDIS_OK) {
                broken = true;
                continue;
            }
            freeReplyObject(r); /* ASKING's +OK */
            cmds[i].ask_node = -1;
        }
        if (redisGetReply(c, (void **)&r) != REDIS_OK) {
            broken = true;
            continue;
        }
        take_reply(t, &cmds[i], r, node, round);
        freeReplyObject(r);
    }
    if (broken) {
        log_msg(LOG_WARN, "redis %s:%d: %s (will retry)", rn->host, rn->port, c->errstr);
        redis_node_close(rn);
        round->backoff = true;
        round->reload_slots = t->cluster;
    }
}

/* Queues the pending commands for each node and flushes every socket before
 * reading any reply, so all nodes work on their share at once. */
static void run_round(struct redis_target *t, struct rcmd *cmds, size_t n, int *route,
                      struct round *round)
{
    size_t n_nodes = t->n_nodes; /* replies may add nodes; they serve the next round */
    enum { UNUSED, USED, UNREACHABLE } *use = xmalloc(n_nodes * sizeof *use);
    for (size_t k = 0; k < n_nodes; k++)
        use[k] = UNUSED;
    for (size_t i = 0; i < n; i++) {
        route[i] = -1;
        if (cmds[i].state != RCMD_PENDING)
            continue;
        int node = node_for(t, &cmds[i]);
        if (node < 0) { /* a slot no master serves (yet) */
            round->backoff = round->reload_slots = true;
            continue;
        }
        redisContext *c =
            use[node] == UNREACHABLE ? NULL : redis_node_connect(&t->nodes[node], t->timeout_ms);
        if (!c) { /* one attempt per node and round */
            use[node] = UNREACHABLE;
            round->backoff = true;
            round->reload_slots = t->cluster;
            continue;
        }
        if (cmds[i].ask_node == node)
            redisAppendCommand(c, "ASKING");
        redisAppendCommandArgv(c, cmds[i].argc, cmds[i].argv, cmds[i].argvlen);
        route[i] = node;
        use[node] = USED;
    }
    for (size_t k = 0; k < n_nodes; k++) {
        if (use[k] != USED)
            continue;
        int done = 0;
        while (!done && redisBufferWrite(t->nodes[k].ctx, &done) == REDIS_OK)
            ;
        /* A write error shows up again when the replies are read. */
    }
    for (size_t k = 0; k < n_nodes; k++)
        if (use[k] == USED)
            exchange_with_node(t, (int)k, cmds, n, route, round);
    free(use);
}

bool redis_exec(struct redis_target *t, struct rcmd *cmds, size_t n)
{
    int *route = xmalloc(n * sizeof *route);
    for (;;) {
        if (t->cluster && !t->slots_known && !refresh_slots(t))
            log_msg(LOG_WARN, "redis cluster: no node answered CLUSTER SLOTS (will retry)");
        struct round round = {0};
        if (!t->cluster || t->slots_known)
            run_round(t, cmds, n, route, &round);
        else
            round.backoff = true;
        bool pending = false;
        for (size_t i = 0; i < n && !pending; i++)
            pending = cmds[i].state == RCMD_PENDING;
        if (!pending) {
            t->backoff_ms = 0;
            free(route);
            return true;
        }
        if (round.reload_slots && t->cluster)
            t->slots_known = false;
        if (round.backoff) {
            if (giving_up()) {
                free(route);
                return false;
            }
            stats.retries++;
            t->backoff_ms = t->backoff_ms ? t->backoff_ms * 2 : BACKOFF_MIN_MS;
            if (t->backoff_ms > BACKOFF_MAX_MS)
                t->backoff_ms = BACKOFF_MAX_MS;
            if (while_waiting)
                while_waiting();
            sleep_ms(t->backoff_ms);
        }
    }
}
