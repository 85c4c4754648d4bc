/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Live SPE: a source on the seam (collectors/source.h) that opens one
 * arm_spe event per online CPU an arm_spe PMU covers, maps its data ring
 * and AUX area, and hands what the hardware sampled to the sink, decoded
 * and attributed (spe-stream.h).
 *
 * The kernel's side (drivers/perf/arm_spe_pmu.c, kernel/events/ring_buffer.c,
 * perf_event_open(2)):
 *  - each event is opened disabled and enabled once the AUX area is mapped
 *    (those opened at start all together on the loop's first turn, when
 *    their rings start being read); the driver commits a chunk of the AUX
 *    area with a PERF_RECORD_AUX in the data ring each time aux_watermark
 *    bytes were written, and wakes the poll. Every CPU's event is in one
 *    edge-triggered epoll set: a wakeup drains the CPUs that woke it and,
 *    on a busy host, the set is left alone for a while after
 *    (SPE_LIVE_HOLD_MAX_USEC) so that one wakeup serves many rings;
 *  - the driver commits what it has when the event is stopped, which is
 *    how a quiet CPU's partial buffer is flushed (DISABLE, drain, ENABLE on
 *    the drain timer);
 *  - a full AUX area ends the session with PERF_AUX_FLAG_TRUNCATED and the
 *    event disabled: the source drains, then re-enables it (as perf's
 *    auxtrace_record__read_finish() does; harmless on kernels that failed
 *    to disable it), counting the truncation and the time not sampled;
 *  - the event carries context_switch, mmap2, comm and task, so its data
 *    ring also brings PERF_RECORD_SWITCH_CPU_WIDE (attribution without
 *    CONTEXT packets, by time), MMAP2 (symbols), COMM/FORK/EXIT (names);
 *  - SPE is exclusive per CPU: EBUSY while another session (perf record
 *    -e arm_spe//) holds it, retried with a backoff; pa_enable/pct_enable
 *    without CAP_PERFMON fail with EACCES, retried without them and said;
 *    an AUX area beyond the memlock limit fails at mmap, retried halved
 *    down to SPE_LIVE_AUX_FLOOR (and reopened when aux_watermark was set
 *    past half of what fits);
 *  - a CPU that goes offline takes its event off for good, even when it is
 *    back before the online CPUs are looked at again: an event whose time
 *    enabled stands still is reopened, and offline CPUs are reopened once
 *    sysfs lists them again.
 * Nothing is fatal: a CPU that cannot sample says why in its stream's
 * state and note, the source's status sums it up.
 *
 * Threads: the collector thread's, like every source.
 */

#include <stdbool.h>
#include <stdint.h>

#include "source.h"
#include "spe-pmu.h"

/* The smallest AUX area retried down to after the memlock limit refused a larger one (perf's floor too). */
#define SPE_LIVE_AUX_FLOOR      (8 * 1024)
/* EBUSY backoff: first retry after this, doubling up to the max. */
#define SPE_LIVE_RETRY_MIN_USEC (1 * USEC_PER_SEC)
#define SPE_LIVE_RETRY_MAX_USEC (60 * USEC_PER_SEC)
/* A source whose CPUs delivered nothing for this many drain intervals is idle (not up). */
#define SPE_LIVE_IDLE_INTERVALS 10
/*
 * A CPU that brought no PERF_RECORD_AUX for this many drain intervals is
 * flushed (DISABLE, drain, ENABLE): its records reach the store within
 * that many intervals (3 s by default, within the 10 s epoch), and an idle
 * host is not interrupted every interval on every CPU.
 */
#define SPE_LIVE_FLUSH_TICKS    3
/*
 * After a wakeup the rings are left alone for a quarter of the time the
 * room past their wakeup points lasted at their pace, at most this long
 * (with the default 256 KiB areas, the 118 KiB past the wakeup point
 * last 140 ms at 4 operations a cycle on a 3.5 GHz core at the default
 * period), and not at all below the least (a hold shorter than a timer's
 * slack saves nothing) or when fewer than two ring wakeups are due within
 * it (its end wakes the thread too).
 */
#define SPE_LIVE_HOLD_MAX_USEC  (50 * USEC_PER_MSEC)
#define SPE_LIVE_HOLD_MIN_USEC  (1 * USEC_PER_MSEC)
/* The rate of ring wakeups that decides whether a hold pays is measured over this long. */
#define SPE_LIVE_WAKE_RATE_USEC (4 * SPE_LIVE_HOLD_MAX_USEC)
/* The largest SPE record a PMU writes (PMSIDR_EL1.MaxSize: 2 KiB at most). */
#define SPE_LIVE_MAX_RECORD     2048

struct spe_live_options {
        const char *sysfs_root;         /* NULL: "/sys" */
        const char *procfs_root;        /* NULL: "/proc" */
        struct spe_pmu_options pmu;     /* period, filters, physical addresses, exclude_kernel... */
        bool required;                  /* [spe] enable = yes: no SPE is a failure, not "off" */
        uint64_t aux_bytes;             /* per CPU, a power of two of pages */
        uint64_t data_bytes;            /* per CPU, a power of two of pages */
        uint64_t watermark;             /* AUX bytes per wakeup; 0: half the AUX area */
        uint64_t drain_interval_usec;   /* the timer that flushes quiet CPUs and retries busy ones */
        /* MMAP2 records of data mappings too (attr.mmap_data): data addresses named by their
         * mappings ([privacy] data_addresses = no). They share the mapping table's bounds. */
        bool data_mappings;
};

/* A source not started yet (source_start() opens the events). */
int spe_live_source_new(const struct spe_live_options *o, const struct source_sink *sink, struct task_map *tasks,
                        struct source **ret);
