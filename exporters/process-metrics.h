/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The standard process_* metrics with the meaning the Prometheus client
 * libraries give them (client_golang process_collector_procfs):
 * CPU seconds (utime+stime), RSS and VSZ in bytes, open and max fds, and
 * the start time in seconds since the epoch.
 */

#include <stdbool.h>
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

/* Reads /proc/self (or `procfs`/self for tests), the boot time from the clocks. Returns 0 or -errno. */
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
        PROCESS_THREAD_OTHER,      /* the rest of the process's time: any other thread's, ended ones' too */
        _PROCESS_THREAD_MAX,
};

const char *process_thread_label(enum process_thread t);

struct process_thread_stats {
        double cpu_seconds[_PROCESS_THREAD_MAX]; /* user + system, of every thread seen since the first read */
        unsigned threads[_PROCESS_THREAD_MAX];   /* threads that run now (other: the process's less the named) */
        bool shown[_PROCESS_THREAD_MAX];         /* a thread of this name ran at some read: the series exists */
};

/*
 * What each named thread showed at the last read, so that a counter does
 * not go down when a thread ends (a TLS reload replacing libmicrohttpd's
 * threads): an ended thread's last figure stays in its name's total; a
 * thread that renames itself leaves what it used so far under the old
 * name. Only the main thread and those thread-names.h lists are read, not
 * every thread of the process (libraries' threads; the simulated PMU's
 * cores, one a CPU). Any thread; reads are serialized.
 */
struct process_threads;

struct process_threads *process_threads_new(void);
struct process_threads *process_threads_free(struct process_threads *pt);

/*
 * The named threads' CPU time from /proc/self/task/TID/stat (or `procfs`/self
 * for tests), summed by name with what ended threads used while seen; other
 * is the rest of the process's time (self/stat: every thread that ran,
 * ended ones included), so the figures sum to process_cpu_seconds_total.
 * Returns 0 or -errno.
 */
int process_threads_read(struct process_threads *pt, const char *procfs, struct process_thread_stats *ret);
/* armprofd_collector_busy_seconds_total{thread}. */
void process_threads_write(const struct process_thread_stats *st, struct prom_writer *w);
