/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The daemon's life on the main thread: signals through signalfd (TERM/INT
 * stop, HUP reload), the systemd watchdog, and the objects it owns (the
 * collector thread, the HTTP server).
 */

#include <stdbool.h>

#include "config.h"
#include "macro.h"
#include "replay.h"

struct manager;

struct manager_options {
        const char *config_path;
        bool config_explicit;
        const char *listen_override; /* --listen, kept across reloads */
        int listen_fd;               /* socket activation, or -1 */
        /*
         * --replay: loaded into the store by the collector thread; the HTTP
         * server starts and READY is sent once it is in, and the daemon
         * exits with an error when it fails. replay_fd is replay_open()'s
         * (the caller closes it after manager_free()).
         */
        const struct replay_args *replay;
        int replay_fd;
};

/* Call with SIGTERM, SIGINT and SIGHUP already blocked in every thread. */
int manager_new(const struct manager_options *opts, const struct config *cfg, struct manager **ret);
struct manager *manager_free(struct manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct manager *, manager_free);

/* Start collecting and serving. */
int manager_start(struct manager *m);
/* Run until SIGTERM/SIGINT. Returns 0 on a clean stop, a negative errno when the replay failed. */
int manager_run(struct manager *m);
