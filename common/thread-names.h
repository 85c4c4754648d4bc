/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The names the daemon's threads give themselves (pthread_setname_np(), at
 * most 15 bytes), as top -H, perf and /proc/self/task/TID/comm show them,
 * and as process-metrics.c reads them back to say which thread used how
 * much CPU. The main thread keeps the process's name.
 */

#define THREAD_NAME_COLLECTOR "collector"
#define THREAD_NAME_PUSH "push"
#define THREAD_NAME_HTTP_TIMER "http-timer"
#define THREAD_NAME_HTTP_AUTH "http-auth"
/* libmicrohttpd names its internal polling thread itself. */
#define THREAD_NAME_HTTP "MHD-single"
