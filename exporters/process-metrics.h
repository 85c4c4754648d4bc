/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The standard process_* metrics with the meaning the Prometheus client
 * libraries give them (client_golang process_collector_procfs):
 * CPU seconds (utime+stime), RSS and VSZ in bytes, open and max fds, and
 * the start time in seconds since the epoch.
 */

#include <stdint.h>

struct prom_writer;

struct process_stats {
        double cpu_seconds;
        uint64_t resident_bytes;
        uint64_t virtual_bytes;
        uint64_t open_fds;
        uint64_t max_fds;
        double start_time_seconds;
};

/* Reads /proc/self (or `procfs`/self for tests). Returns 0 or -errno. */
int process_stats_read(const char *procfs, struct process_stats *ret);
void process_stats_write(const struct process_stats *st, struct prom_writer *w);
