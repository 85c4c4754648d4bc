/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <jansson.h>
#include <systemd/sd-daemon.h>

#include "build-config.h"
#include "cli.h"
#include "config.h"
#include "log.h"
#include "push.h"
#include "web-config.h"
#include "manager.h"
#include "replay.h"
#include "strbuf.h"

#define EXIT_USAGE 2

/*
 * systemd socket activation: at most one listening TCP socket. Must run
 * before any thread starts, since it unsets $LISTEN_FDS (sd_listen_fds(3)).
 */
static int take_listen_fd(int *ret_fd) {
        int n = sd_listen_fds(1);

        if (n < 0)
                return log_error_errno(n, "Failed to read $LISTEN_FDS: %m");
        if (n == 0) {
                *ret_fd = -1;
                return 0;
        }
        if (n > 1)
                return log_error_errno(-EINVAL, "Got %d sockets from systemd, expected one", n);
        if (sd_is_socket(SD_LISTEN_FDS_START, AF_UNSPEC, SOCK_STREAM, 1) <= 0)
                return log_error_errno(-EINVAL, "The socket passed by systemd is not a listening stream socket");
        *ret_fd = SD_LISTEN_FDS_START;
        return 0;
}

static int block_signals(void) {
        sigset_t mask;

        /* Blocked before any thread exists, so only the signalfd sees them. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;
        signal(SIGPIPE, SIG_IGN);
        return 0;
}

/*
 * What only a start would find, for --check-config: the web config's
 * certificates and keys, a missing password file, a spool it cannot write.
 */
static int check_config_files(const struct config *cfg) {
        char why[MESSAGE_MAX];

        if (cfg->http.web_config[0]) {
                struct web_config *web = NULL;

                if (web_config_load(cfg->http.web_config, &web, why, sizeof(why)) < 0) {
                        log_error("config: [http] web_config: %s", why);
                        return -EINVAL;
                }
                web_config_unref(web);
        }
        if (cfg->push.url[0]) {
                struct push_options po;

                config_push_options(cfg, &po);
                if (push_check(&po, why, sizeof(why)) < 0) {
                        log_error("config: %s", why);
                        return -EINVAL;
                }
        }
        return 0;
}

int main(int argc, char **argv) {
        /* Declared first so that it is closed last, after the collector that reads it stopped. */
        _cleanup_close_ int replay_fd = -1;
        _cleanup_(manager_freep) struct manager *m = NULL;
        struct config_error err = {};
        struct cli_args args;
        struct config cfg;
        int listen_fd = -1, r;

        malloc_keep_freed_buffers();
        log_open();

        if (cli_parse(argc, argv, stderr, &args) < 0)
                return EXIT_USAGE;
        if (args.action == CLI_HELP) {
                cli_usage(stdout, argv[0]);
                return EXIT_SUCCESS;
        }
        if (args.action == CLI_VERSION) {
                printf("armprofd %s (%s)\n", ARMPROFD_VERSION, ARMPROFD_REVISION);
                return EXIT_SUCCESS;
        }
        if (args.log_level >= 0)
                log_set_max_level(args.log_level);

        r = config_load(args.config_path, args.config_explicit, &cfg, &err);
        if (r < 0) {
                config_error_log(&err);
                return EXIT_FAILURE;
        }
        if (args.web_config)
                snprintf(cfg.http.web_config, sizeof(cfg.http.web_config), "%s", args.web_config);
        if (args.check_config && check_config_files(&cfg) < 0)
                return EXIT_FAILURE;
        if (args.check_config) {
                printf("%s: configuration is valid\n", args.config_path);
                return EXIT_SUCCESS;
        }
        struct replay_args replay = {
                .path = args.replay,
                .raw = args.replay_raw,
                .cpu = args.cpu,
                .midr = args.midr,
        };
        if (args.replay && args.once)
                return replay_once(&replay, args.records, &cfg, stdout) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;

        r = take_listen_fd(&listen_fd);
        if (r < 0)
                return EXIT_FAILURE;
        /* Refused at once when it cannot be a replay; it is read after the signal loop runs. */
        if (args.replay && replay_open(&replay, &replay_fd) < 0)
                return EXIT_FAILURE;
        r = block_signals();
        if (r < 0) {
                log_error_errno(r, "Failed to block signals: %m");
                return EXIT_FAILURE;
        }
        /* jansson's hash seed, before threads (jansson threadsafety.rst). */
        json_object_seed(0);

        r = manager_new(&(struct manager_options) {
                                .config_path = args.config_path,
                                .config_explicit = args.config_explicit,
                                .listen_override = args.listen,
                                .web_config_override = args.web_config,
                                .listen_fd = listen_fd,
                                .replay = args.replay ? &replay : NULL,
                                .replay_fd = replay_fd,
                        },
                        &cfg, &m);
        if (r < 0)
                return EXIT_FAILURE;
        r = manager_start(m);
        if (r < 0) {
                sd_notifyf(0, "STATUS=Failed to start: %s\nERRNO=%d", strerror(-r), -r);
                return EXIT_FAILURE;
        }
        r = manager_run(m);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
