/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Configuration: /etc/armprofd/armprofd.conf plus drop-ins in
 * armprofd.conf.d/ (files ending in .conf, lexical order, later wins), INI parsed by libinih
 * through one declarative table (section, key, parser, destination, limits).
 *
 * Files are read whole into memory first: regular files only, at most
 * CONFIG_FILE_MAX bytes, opened non-blocking (a FIFO, a device or a
 * directory is refused at once, never read). Lines are at most 4096
 * bytes (CONFIG_LINE_MAX, config.c; comment lines do not count); a NUL byte
 * is an error; a value is on one line (an indented line is not a
 * continuation). A key may appear once per file; a later drop-in overrides it.
 * Every error of every file is reported (up to CONFIG_ERRORS_MAX).
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
                uint64_t max_memory_bytes; /* bound on store_bytes() of the above */
        } store;
        struct {
                /* Key hot lines by physical address (sharing across processes) and serve PAs. */
                bool physical_addresses;
        } privacy;
};

#define CONFIG_FILE_MAX   (1024 * 1024)
#define CONFIG_ERRORS_MAX 20

/*
 * Every error found, in the order found, each "file:line: [section] key: reason"
 * (or "file: reason"), non-printable bytes escaped as \xNN. n counts them
 * all; the first CONFIG_ERRORS_MAX are kept.
 */
struct config_error {
        unsigned n;
        char msg[CONFIG_ERRORS_MAX][MESSAGE_MAX];
};

/* Log each kept error at LOG_ERR as "config: <msg>", then how many were left out. */
void config_error_log(const struct config_error *err);

void config_init(struct config *c);

/*
 * Parse `size` bytes of INI text into c (which holds defaults or earlier
 * files). `filename` only names the text in errors. Returns 0, or -EINVAL
 * with the errors appended to err.
 */
int config_parse_buffer(struct config *c, const void *data, size_t size, const char *filename,
                        struct config_error *err);
/* The same for a NUL-terminated string. */
int config_parse_string(struct config *c, const char *text, const char *filename,
                        struct config_error *err);

/* The memory the store described by c's [store] section is bounded by (store_bytes()). */
uint64_t config_store_bytes(const struct config *c);

/*
 * Checks across keys, on a complete configuration: the store's memory bound
 * against [store] max_memory. `filename` names the configuration in errors.
 * Returns 0, or -E2BIG with an error appended to err.
 */
int config_check(const struct config *c, const char *filename, struct config_error *err);

/*
 * Defaults, then `path`, then the .conf files of `path`.d/ in lexical order,
 * then config_check(). A missing main file is an error only when `must_exist`
 * (the user named it with -c); a missing drop-in directory never is. On error
 * ret is untouched and err holds every error found.
 */
int config_load(const char *path, bool must_exist, struct config *ret, struct config_error *err);

/* Iterate the table, e.g. for --help or documentation. */
size_t config_n_items(void);
void config_item_name(size_t i, const char **ret_section, const char **ret_key);
