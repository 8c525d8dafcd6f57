/* stats.c — the periodic one-line statistics of seen-ingest, as text for
 * people or as one JSON object a line for machines (docs/ingest.md lists
 * the fields). */
#include "ingest.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct stats stats = {.lag = -1};

void stats_open(struct stats_reporter *r, const struct config *cfg)
{
    *r = (struct stats_reporter){.cfg = cfg, .last_ms = mono_ms(), .last = stats};
    if (cfg->stats_file) {
        r->file = fopen(cfg->stats_file, "a");
        if (!r->file)
            log_msg(LOG_WARN, "cannot open --stats-file %s: writing stats to stderr",
                    cfg->stats_file);
    }
}

void stats_close(struct stats_reporter *r)
{
    if (r->file)
        fclose(r->file);
    r->file = NULL;
}

/* The counters, in the order both formats print them. */
#define STATS_FIELDS(X)                                                                            \
    X(messages)                                                                                    \
    X(events)                                                                                      \
    X(malformed)                                                                                   \
    X(batches)                                                                                     \
    X(commands)                                                                                    \
    X(items_new)                                                                                   \
    X(write_errors) X(retries) X(moved) X(ask) X(commits) X(commit_errors) X(dead_letters)

void stats_maybe_report(struct stats_reporter *r, bool force, const char *phase)
{
    int64_t now = mono_ms();
    if (!force && (r->cfg->stats_interval_ms <= 0 || now - r->last_ms < r->cfg->stats_interval_ms))
        return;
    double seconds = (double)(now - r->last_ms) / 1000.0;
    double rate = seconds > 0 ? (double)(stats.events - r->last.events) / seconds : 0;
    char line[1024];
    size_t n = 0;
    bool json = r->cfg->stats_format == STATS_JSON;
#define PUT(...) n += (size_t)snprintf(line + n, n < sizeof line ? sizeof line - n : 0, __VA_ARGS__)
    if (json)
        PUT("{\"ts\":%" PRId64 ",\"phase\":\"%s\",\"events_per_sec\":%.1f", now_ms(), phase, rate);
    else
        PUT("stats %s events/s=%.0f", phase, rate);
#define FIELD(name)                                                                                \
    if (json)                                                                                      \
        PUT(",\"" #name "\":%" PRIu64, stats.name);                                                \
    else                                                                                           \
        PUT(" " #name "=%" PRIu64, stats.name);
    STATS_FIELDS(FIELD)
#undef FIELD
    if (json)
        PUT(",\"lag\":%" PRId64 "}", stats.lag);
    else
        PUT(" lag=%" PRId64, stats.lag);
#undef PUT
    if (r->file) {
        fprintf(r->file, "%s\n", line);
        fflush(r->file);
    } else if (json) {
        fprintf(stderr, "%s\n", line);
    } else {
        log_msg(LOG_INFO, "%s", line);
    }
    r->last = stats;
    r->last_ms = now;
    log_reset_budget();
}
