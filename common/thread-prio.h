/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The threads that answer (the HTTP server's, its timer and password
 * checks, the push) run at a lower priority than the collector. When the
 * CPUs are short, a collector that falls behind loses records for good (a
 * full AUX area is truncated and the event stays off until it is drained);
 * an answer late by a few milliseconds loses nothing. Nice values are per
 * thread on Linux (setpriority(2), NOTES), so the main and collector threads
 * keep the process's own.
 *
 * Raising a nice value needs no privilege; lowering it again would
 * (RLIMIT_NICE, CAP_SYS_NICE), so a thread does it once and for good.
 */

/* Nice value steps above the process's: CFS then weighs such a thread at 110
 * against a nice-0 thread's 1024 (kernel/sched/core.c, sched_prio_to_weight). */
#define THREAD_PRIO_ANSWER_NICE 10

/* The calling thread answers: its nice value rises by THREAD_PRIO_ANSWER_NICE
 * (to 19 at most). Once per thread; later calls return at once. A failure is
 * logged at debug level and changes nothing. */
void thread_prio_answer_self(void);
