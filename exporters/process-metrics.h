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

/* The daemon's threads by the name they give themselves (common/thread-names.h). */
enum process_thread {
        PROCESS_THREAD_MAIN,       /* the process's first thread: the manager's loop */
        PROCESS_THREAD_COLLECTOR,
        PROCESS_THREAD_HTTP,       /* libmicrohttpd's polling thread: every request's answer */
        PROCESS_THREAD_HTTP_TIMER,
        PROCESS_THREAD_HTTP_AUTH,
        PROCESS_THREAD_PUSH,
        PROCESS_THREAD_OTHER,      /* any other (a library's), summed */
        _PROCESS_THREAD_MAX,
};

const char *process_thread_label(enum process_thread t);

struct process_thread_stats {
        double cpu_seconds[_PROCESS_THREAD_MAX]; /* user + system, of the threads that run now */
        unsigned threads[_PROCESS_THREAD_MAX];
};

/*
 * Each running thread's CPU time from /proc/self/task/TID/stat (or
 * `procfs`/self/task for tests), summed by thread. Threads that ended are
 * in process_cpu_seconds_total only. Returns 0 or -errno.
 */
int process_threads_read(const char *procfs, struct process_thread_stats *ret);
/* armprofd_collector_busy_seconds_total{thread}. */
void process_threads_write(const struct process_thread_stats *st, struct prom_writer *w);
