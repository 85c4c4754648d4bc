/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "thread-prio.h"

#define NICE_MAX 19

void thread_prio_answer_self(void) {
        static _Thread_local bool done;
        id_t tid = (id_t) gettid();
        int nice;

        if (done)
                return;
        done = true;
        /* -1 is a nice value as well as the error return. */
        errno = 0;
        nice = getpriority(PRIO_PROCESS, tid);
        if (nice == -1 && errno != 0) {
                log_debug_errno(errno, "getpriority(thread %u): %m", (unsigned) tid);
                return;
        }
        if (setpriority(PRIO_PROCESS, tid, MIN(nice + THREAD_PRIO_ANSWER_NICE, NICE_MAX)) < 0)
                log_debug_errno(errno, "setpriority(thread %u): %m", (unsigned) tid);
}
