/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <string.h>

#include "build-config.h"
#include "config.h"
#include "log.h"
#include "parse-util.h"
#include "perf-data.h"
#include "spe-replay.h"

enum {
        OPT_LISTEN = 0x100,
        OPT_WEB_CONFIG,
        OPT_REPLAY,
        OPT_REPLAY_RAW,
        OPT_MIDR,
        OPT_CPU,
        OPT_RECORDS,
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
                "      --web.config.file=FILE\n"
                "                         override [http] web_config: TLS and basic auth, the YAML of\n"
                "                         node_exporter's --web.config.file\n"
                "      --replay=FILE      feed a perf.data with SPE records instead of live sources\n"
                "      --replay-raw=FILE  feed a raw SPE buffer (the bytes the hardware wrote, as Arm's\n"
                "                         spe-parser reads them) instead of live sources; needs --midr\n"
                "      --midr=MIDR        MIDR_EL1 of the core that recorded --replay-raw, in hex\n"
                "                         (0x410fd0c0: Neoverse N1); it selects the data-source encoding\n"
                "      --cpu=N            the CPU number --replay-raw data is reported under (default 0)\n"
                "      --once             process once (the whole --replay file), print a JSON report, exit\n"
                "      --records=FILE     with --once: also write every decoded record to FILE, one JSON\n"
                "                         object a line\n"
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
                { "web.config.file", required_argument, NULL, OPT_WEB_CONFIG },
                { "replay", required_argument, NULL, OPT_REPLAY },
                { "replay-raw", required_argument, NULL, OPT_REPLAY_RAW },
                { "midr", required_argument, NULL, OPT_MIDR },
                { "cpu", required_argument, NULL, OPT_CPU },
                { "records", required_argument, NULL, OPT_RECORDS },
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
        bool has_midr = false, has_cpu = false;
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
                case OPT_WEB_CONFIG:
                        if (optarg[0] != '/') {
                                fprintf(err, "%s: --web.config.file '%s' is not an absolute path\n", prog, optarg);
                                goto usage;
                        }
                        a.web_config = optarg;
                        break;
                case OPT_REPLAY:
                case OPT_REPLAY_RAW:
                        if (a.replay) {
                                fprintf(err, "%s: give one of --replay and --replay-raw, once\n", prog);
                                goto usage;
                        }
                        a.replay = optarg;
                        a.replay_raw = c == OPT_REPLAY_RAW;
                        break;
                case OPT_MIDR:
                        /* MIDR_EL1 is 32 bits (Arm ARM D23.2 "MIDR_EL1"). */
                        if (perf_data_parse_midr(optarg, &a.midr) < 0 || a.midr > UINT32_MAX) {
                                fprintf(err, "%s: invalid --midr '%s' (a 32-bit hex MIDR_EL1 value, such as "
                                             "0x410fd0c0)\n", prog, optarg);
                                goto usage;
                        }
                        has_midr = true;
                        break;
                case OPT_CPU:
                        if (safe_atou32(optarg, &a.cpu) < 0 || a.cpu >= SPE_REPLAY_MAX_CPUS) {
                                fprintf(err, "%s: invalid --cpu '%s' (0..%u)\n", prog, optarg,
                                        SPE_REPLAY_MAX_CPUS - 1);
                                goto usage;
                        }
                        has_cpu = true;
                        break;
                case OPT_RECORDS:
                        a.records = optarg;
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
                fprintf(err, "%s: --once needs --replay FILE (or --replay-raw FILE)\n", prog);
                goto usage;
        }
        if ((has_midr || has_cpu) && !a.replay_raw && a.action == CLI_RUN) {
                fprintf(err, "%s: --midr and --cpu describe --replay-raw data (a perf.data names its CPUs)\n",
                        prog);
                goto usage;
        }
        if (a.replay_raw && !has_midr && a.action == CLI_RUN) {
                fprintf(err, "%s: --replay-raw needs --midr: the data-source encoding depends on the core\n",
                        prog);
                goto usage;
        }
        if (a.records && !a.once && a.action == CLI_RUN) {
                fprintf(err, "%s: --records needs --once\n", prog);
                goto usage;
        }

        *ret = a;
        return 0;
usage:
        cli_usage(err, prog);
        return -EINVAL;
}
