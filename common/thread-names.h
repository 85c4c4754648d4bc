/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The names the daemon's threads give themselves (pthread_setname_np(), at
 * most 15 bytes), as top -H, perf and /proc/self/task/TID/comm show them,
 * and the threads that took them, by tid: process-metrics.c reads those
 * threads' CPU time alone to say which used how much (a scrape that read
 * every thread's /proc/self/task/TID/stat cost 23 us a thread). The main
 * thread keeps the process's name and is not listed (its tid is the pid).
 */

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

#define THREAD_NAME_COLLECTOR "collector"
#define THREAD_NAME_PUSH "push"
#define THREAD_NAME_HTTP_TIMER "http-timer"
#define THREAD_NAME_HTTP_AUTH "http-auth"
/* libmicrohttpd names its internal polling thread itself. */
#define THREAD_NAME_HTTP "MHD-single"

#define THREAD_NAMES_MAX 64     /* threads listed at most; past that, a thread is named but not listed */

struct thread_names_entry {
        pid_t tid;
        char name[16];
};

/*
 * pthread_create() of a thread named `name`: returns once the new thread
 * has its name and is listed, so that nothing started after it (a scrape
 * of /metrics, top -H) sees it nameless. 0 or a negative errno; ret is
 * written only on success.
 */
int thread_names_create(pthread_t *ret, const char *name, void *(*fn)(void *), void *arg);
/* The calling thread takes `name` and is listed under it. */
void thread_names_set_self(const char *name);
/* The calling thread, named by a library (libmicrohttpd's), is listed under `name`: once per thread. */
void thread_names_note_self(const char *name);
/* A thread by its tid (the tests' procfs trees); again for the same tid renames it. */
void thread_names_add(pid_t tid, const char *name);
/* A thread that ended: the tid may come back as another thread. */
void thread_names_forget(pid_t tid);
/* The listed threads, at most max; any thread. */
size_t thread_names_list(struct thread_names_entry *ret, size_t max);
