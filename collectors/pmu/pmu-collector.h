/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Per-CPU counting with perf_event_open(2): one set of groups per online
 * CPU (pid = -1, cpu = N), one read(2) per group per interval, scaled
 * cumulative totals per (cpu, event), derived ratios, hotplug. The daemon's
 * collector thread drives it:
 *
 *     pmu_raise_nofile_limit(NULL);                at start
 *     pmu_collector_new(&cfg, &c);                 discovery + open
 *     each interval:
 *         pmu_collector_update_cpus(c);            hotplug
 *         pmu_collector_read(c);                   read, scale, accumulate
 *         pmu_collector_snapshot(c, &snap);        copy out for exporters
 *
 * No logging, no threads, no global state. Failures are per event and
 * never fatal; they are reported in the snapshot (state, message, errno).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpulist.h"
#include "pmu-event.h"
#include "pmu-group.h"
#include "pmu-ratio.h"
#include "pmu-snapshot.h"

/* Consecutive reads with time_running == 0 since open after which a
 * hardware group counts as oversized and is split. */
#define PMU_DEFAULT_STUCK_READS 2U

/* The snapshot's group slots hold every group a plan can make. */
_Static_assert(PMU_MAX_GROUPS == PMU_GROUP_MAX_GROUPS + 1U, "pmu-snapshot.h's PMU_MAX_GROUPS");

struct pmu_collector_config {
        const char *sysfs_root;          /* NULL: "/sys" */
        const char *procfs_root;         /* NULL: "/proc" (perf_event_paranoid) */
        const enum pmu_event_id *events; /* NULL/0: the whole catalogue */
        size_t n_events;
        /* General counters per core PMU; 0: PMU_*_DEFAULT_GENERAL_COUNTERS.
         * Too large is corrected at run time (oversized groups are split). */
        unsigned general_counters;
        /* Open raw Arm events that the PMU's events/ folder does not list.
         * Off by default: an unlisted event is not in PMCEID and would read 0
         * (or nothing useful); the tests use it to force multiplexing. */
        bool open_unlisted;
        unsigned stuck_reads; /* 0: PMU_DEFAULT_STUCK_READS */
};

struct pmu_collector;

/* Discover and open on every online CPU. Fails only for bad arguments,
 * unreadable sysfs (no online file) or OOM; missing events and permissions
 * are reported through pmu_collector_state() and the snapshot. */
int pmu_collector_new(const struct pmu_collector_config *cfg, struct pmu_collector **ret);
struct pmu_collector *pmu_collector_free(struct pmu_collector *c);

/* Re-read the online mask: close the groups of CPUs that went offline (their
 * series disappear from snapshots, their totals are kept), open groups for
 * CPUs that came (back) online. Returns 1 if the set changed, 0 if not. */
int pmu_collector_update_cpus(struct pmu_collector *c);

/* One read(2) per group; updates totals, deltas, ratios. Splits groups that
 * never run (oversized for the PMU) and reopens groups the kernel turned
 * off; those are counted again from the next interval. */
int pmu_collector_read(struct pmu_collector *c);

int pmu_collector_snapshot(const struct pmu_collector *c, struct pmu_snapshot **ret);

enum pmu_state pmu_collector_state(const struct pmu_collector *c, const char **ret_message);
const struct cpulist *pmu_collector_online(const struct pmu_collector *c);
/* The general-counter budget currently planned for a core PMU (after any
 * run-time reduction), or -ENOENT. */
int pmu_collector_pmu_counters(const struct pmu_collector *c, const char *pmu, unsigned *ret);
/* Number of hardware groups split at run time because they never ran. */
unsigned pmu_collector_resplits(const struct pmu_collector *c);

/* Raise RLIMIT_NOFILE's soft limit to the hard limit (one fd per event per
 * CPU adds up). ret_limit, if given, gets the resulting soft limit. */
int pmu_raise_nofile_limit(uint64_t *ret_limit);
