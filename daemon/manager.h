/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The daemon's life on the main thread, an sd-event loop: signals (TERM/INT
 * stop, HUP reload), the systemd watchdog, the end of a replay, and the
 * objects it owns (the collector thread, the HTTP server).
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
        const char *web_config_override; /* --web.config.file, kept across reloads */
        int listen_fd;               /* socket activation, or -1 */
        /*
         * --replay: read into the store by a source on the collector's
         * loop; the HTTP server starts and READY is sent at once (/status
         * says the replay's state), and the daemon exits with an error when
         * the replay fails. replay_fd is replay_open()'s (the caller closes
         * it after manager_free()).
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
