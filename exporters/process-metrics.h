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
        double cpu_seconds[_PROCESS_THREAD_MAX]; /* user + system, of every thread seen since the first read */
        unsigned threads[_PROCESS_THREAD_MAX];   /* threads that run now */
        bool shown[_PROCESS_THREAD_MAX];         /* a thread of this name ran at some read: the series exists */
};

/*
 * What each thread showed at the last read, so that a counter does not go
 * down when a thread ends (a TLS reload replacing libmicrohttpd's threads,
 * libcurl's resolver): an ended thread's last figure stays in its name's
 * total; a thread that renames itself leaves what it used so far under the
 * old name. At most PROCESS_THREADS_TRACKED threads are remembered; past
 * that the rest are summed as they run (the daemon has a handful). Any
 * thread; reads are serialized.
 */
#define PROCESS_THREADS_TRACKED 4096

struct process_threads;

struct process_threads *process_threads_new(void);
struct process_threads *process_threads_free(struct process_threads *pt);

/*
 * Each thread's CPU time from /proc/self/task/TID/stat (or `procfs`/self
 * for tests), summed by thread name with what ended threads used while
 * seen. Time a thread used after the last read and before it ended is
 * in process_cpu_seconds_total only. Returns 0 or -errno.
 */
int process_threads_read(struct process_threads *pt, const char *procfs, struct process_thread_stats *ret);
/* armprofd_collector_busy_seconds_total{thread}. */
void process_threads_write(const struct process_thread_stats *st, struct prom_writer *w);
