/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Configuration: /etc/armprofd/armprofd.conf plus drop-ins in
 * armprofd.conf.d/ (files ending in .conf, lexical order, later wins), INI parsed by libinih
 * through one declarative table (section, key, parser, destination, limits).
 *
 * The struct is plain data, so a reload parses into a fresh copy and swaps it
 * in only when the whole new configuration is valid.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "parse-util.h"

#define CONFIG_DEFAULT_LISTEN ":9769"

struct config {
        struct {
                struct listen_addr listen;
                uint32_t max_connections;
                uint32_t per_ip_connections; /* 0 = no per-IP limit */
                uint64_t timeout_usec;
                uint64_t max_request_bytes;  /* request line + headers */
        } http;
        struct {
                bool enable;
                uint64_t interval_usec;
                /* Bit i set: pmu_event_id i is counted. All bits: the catalogue. */
                uint32_t events_mask;
                uint32_t general_counters; /* 0: per-PMU default */
        } pmu;
        struct {
                uint64_t epoch_usec;
                uint32_t epochs;
                uint32_t hotpcs;
                uint32_t hotlines;
                uint32_t line_offsets;
                uint32_t line_size; /* 0: sysfs coherency_line_size, else 64 */
        } store;
        struct {
                /* Key hot lines by physical address (sharing across processes) and serve PAs. */
                bool physical_addresses;
        } privacy;
};

/* First error only: "file:line: [section] key: reason". */
struct config_error {
        char msg[512];
};

void config_init(struct config *c);

/*
 * Parse INI text into c (which holds defaults or earlier files). `filename`
 * only names the text in errors. Returns 0, or -EINVAL with err filled.
 */
int config_parse_string(struct config *c, const char *text, const char *filename,
                        struct config_error *err);

/*
 * Defaults, then `path`, then the .conf files of `path`.d/ in lexical order. A missing
 * main file is an error only when `must_exist` (the user named it with -c);
 * a missing drop-in directory never is. On error ret is untouched.
 */
int config_load(const char *path, bool must_exist, struct config *ret, struct config_error *err);

/* Iterate the table, e.g. for --help or documentation. */
size_t config_n_items(void);
void config_item_name(size_t i, const char **ret_section, const char **ret_key);
