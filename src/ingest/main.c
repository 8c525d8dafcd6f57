/* main.c — seen-ingest: writes exposure and play events from Kafka or Redis
 * Streams into SEEN keys, batched and at-least-once (`run`), and copies
 * legacy ZSET/SET keys into SEEN keys (`migrate`).  docs/ingest.md is its
 * manual. */
#include "ingest.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

int main(int argc, char **argv)
{
    struct config cfg;
    enum command cmd;
    config_load(&cfg, &cmd, argc, argv);
    shutdown_timeout_ms = cfg.shutdown_timeout_ms;
    srand((unsigned)time(NULL) ^ (unsigned)getpid());

    /* No SA_RESTART: a blocked read returns early so the loop sees the stop. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN); /* a dropped Redis connection is an error return */

    int status = cmd == CMD_MIGRATE ? run_migrate(&cfg) : run_ingest(&cfg);
    config_free(&cfg);
    return status;
}
