/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The command line (ARCHITECTURE.md §7; README.md, "Running it"). */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum cli_action {
        CLI_RUN,
        CLI_HELP,
        CLI_VERSION,
};

struct cli_args {
        enum cli_action action;
        const char *config_path;
        bool config_explicit; /* -c given: the file must exist */
        const char *listen;   /* overrides [http] listen */
        const char *web_config; /* --web.config.file: overrides [http] web_config */
        const char *replay;  /* --replay or --replay-raw FILE, "-" for stdin */
        bool replay_raw;     /* --replay-raw: a raw SPE buffer of one CPU */
        uint64_t midr;       /* --midr, with --replay-raw */
        uint32_t cpu;        /* --cpu, with --replay-raw (default 0) */
        const char *records; /* --records FILE, with --once */
        bool once;
        bool check_config;
        int log_level; /* -1: not given */
};

/*
 * Parse argv. Returns 0, or -EINVAL after printing the reason and the usage
 * to `err` (the caller exits 2). Strings point into argv.
 */
int cli_parse(int argc, char **argv, FILE *err, struct cli_args *ret);
void cli_usage(FILE *f, const char *prog);
