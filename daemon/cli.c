/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <string.h>

#include "build-config.h"
#include "config.h"
#include "log.h"
#include "parse-util.h"

enum {
        OPT_LISTEN = 0x100,
        OPT_REPLAY,
        OPT_ONCE,
        OPT_CHECK_CONFIG,
        OPT_LOG_LEVEL,
        OPT_VERSION,
};

void cli_usage(FILE *f, const char *prog) {
        fprintf(f,
                "Usage: %s [OPTIONS]\n"
                "\n"
                "Always-on hardware profiler: PMU counters, SPE samples, hot cache lines.\n"
                "\n"
                "  -c, --config=FILE      configuration file (default %s)\n"
                "                         drop-ins are read from FILE.d/*.conf\n"
                "      --listen=ADDR:PORT override [http] listen (e.g. 127.0.0.1:9769, [::1]:9769, :9769)\n"
                "      --replay=FILE      feed a perf.data with SPE records instead of live sources\n"
                "      --once             process once (the whole --replay file), print a JSON report, exit\n"
                "      --check-config     validate the configuration and exit 0 (valid) or 1\n"
                "      --log-level=LEVEL  emerg..debug or 0..7 (default info)\n"
                "      --version          print version and exit\n"
                "  -h, --help             print this help and exit\n",
                prog, ARMPROFD_CONFIG_FILE);
}

int cli_parse(int argc, char **argv, FILE *err, struct cli_args *ret) {
        static const struct option options[] = {
                { "config", required_argument, NULL, 'c' },
                { "listen", required_argument, NULL, OPT_LISTEN },
                { "replay", required_argument, NULL, OPT_REPLAY },
                { "once", no_argument, NULL, OPT_ONCE },
                { "check-config", no_argument, NULL, OPT_CHECK_CONFIG },
                { "log-level", required_argument, NULL, OPT_LOG_LEVEL },
                { "version", no_argument, NULL, OPT_VERSION },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        struct cli_args a = {
                .action = CLI_RUN,
                .config_path = ARMPROFD_CONFIG_FILE,
                .log_level = -1,
        };
        const char *prog = argc > 0 ? argv[0] : "armprofd";
        struct listen_addr la;
        int c;

        /* Reset getopt so the parser can run more than once (tests). */
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":c:h", options, NULL)) >= 0) {
                switch (c) {
                case 'c':
                        a.config_path = optarg;
                        a.config_explicit = true;
                        break;
                case OPT_LISTEN:
                        if (parse_listen_addr(optarg, &la) < 0) {
                                fprintf(err, "%s: invalid --listen address '%s'\n", prog, optarg);
                                goto usage;
                        }
                        a.listen = optarg;
                        break;
                case OPT_REPLAY:
                        a.replay = optarg;
                        break;
                case OPT_ONCE:
                        a.once = true;
                        break;
                case OPT_CHECK_CONFIG:
                        a.check_config = true;
                        break;
                case OPT_LOG_LEVEL:
                        a.log_level = log_level_from_string(optarg);
                        if (a.log_level < 0) {
                                fprintf(err, "%s: invalid --log-level '%s'\n", prog, optarg);
                                goto usage;
                        }
                        break;
                case OPT_VERSION:
                        a.action = CLI_VERSION;
                        break;
                case 'h':
                        a.action = CLI_HELP;
                        break;
                case ':':
                        fprintf(err, "%s: option '%s' needs a value\n", prog, argv[optind - 1]);
                        goto usage;
                default:
                        fprintf(err, "%s: unknown option '%s'\n", prog, argv[optind - 1]);
                        goto usage;
                }
        }
        if (optind < argc) {
                fprintf(err, "%s: unexpected argument '%s'\n", prog, argv[optind]);
                goto usage;
        }
        if (a.once && !a.replay && a.action == CLI_RUN) {
                fprintf(err, "%s: --once needs --replay FILE\n", prog);
                goto usage;
        }

        *ret = a;
        return 0;
usage:
        cli_usage(err, prog);
        return -EINVAL;
}
