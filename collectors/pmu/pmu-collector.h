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

#define PMU_MESSAGE_MAX 1024U
#define PMU_NAME_MAX 64U
/* Group slots per CPU: hardware groups of the CPU's PMU, plus software. */
#define PMU_MAX_GROUPS (PMU_GROUP_MAX_GROUPS + 1U)
/* Consecutive reads with time_running == 0 since open after which a
 * hardware group counts as oversized and is split. */
#define PMU_DEFAULT_STUCK_READS 2U

enum pmu_state {
        PMU_STATE_OK,                /* every configured event counts somewhere */
        PMU_STATE_DEGRADED,          /* some events unavailable, see events[] */
        PMU_STATE_PERMISSION_DENIED, /* EACCES/EPERM: nothing could be opened */
        PMU_STATE_NO_EVENTS,         /* nothing could be opened, other reasons */
        _PMU_STATE_MAX,
};

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

struct pmu_event_value {
        bool available; /* an fd is open for it on this CPU */
        bool counted;   /* delta is valid: its group ran in the last interval */
        uint64_t total; /* scaled, cumulative since the collector started */
        uint64_t delta; /* scaled, last interval; 0 when !counted */
};

struct pmu_group_times {
        char name[PMU_NAME_MAX]; /* "<pmu>/<n>" or "software" */
        size_t n_events;         /* events currently in it, 0 if gone */
        uint64_t enabled_ns_total;
        uint64_t running_ns_total;
};

struct pmu_cpu_snapshot {
        unsigned cpu;
        char pmu[PMU_NAME_MAX]; /* core PMU name, "" if none */
        struct pmu_event_value events[_PMU_EVENT_MAX];
        size_t n_groups;
        struct pmu_group_times groups[PMU_MAX_GROUPS];
        struct pmu_ratio ratios[_PMU_RATIO_MAX];
};

struct pmu_event_status {
        bool configured;
        bool available; /* open on at least one online CPU */
        int error;      /* negative errno of the first failure, 0 if none */
};

struct pmu_snapshot {
        uint64_t reads; /* number of pmu_collector_read() calls so far */
        enum pmu_state state;
        char message[PMU_MESSAGE_MAX];
        struct pmu_event_status events[_PMU_EVENT_MAX];
        size_t n_cpus; /* online CPUs that are being counted, ascending */
        struct pmu_cpu_snapshot *cpus;
        /* Host-wide: deltas summed over the CPUs above (counted if counted
         * on any); totals summed over every CPU ever counted, offline ones
         * included, so they never decrease; ratios from the sums of deltas
         * over the CPUs where both events were counted. */
        struct pmu_event_value host[_PMU_EVENT_MAX];
        struct pmu_ratio host_ratios[_PMU_RATIO_MAX];
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
struct pmu_snapshot *pmu_snapshot_free(struct pmu_snapshot *s);
const struct pmu_cpu_snapshot *pmu_snapshot_cpu(const struct pmu_snapshot *s, unsigned cpu);

enum pmu_state pmu_collector_state(const struct pmu_collector *c, const char **ret_message);
const struct cpulist *pmu_collector_online(const struct pmu_collector *c);
/* The general-counter budget currently planned for a core PMU (after any
 * run-time reduction), or -ENOENT. */
int pmu_collector_pmu_counters(const struct pmu_collector *c, const char *pmu, unsigned *ret);
/* Number of hardware groups split at run time because they never ran. */
unsigned pmu_collector_resplits(const struct pmu_collector *c);

const char *pmu_state_to_string(enum pmu_state s);

/* Raise RLIMIT_NOFILE's soft limit to the hard limit (one fd per event per
 * CPU adds up). ret_limit, if given, gets the resulting soft limit. */
int pmu_raise_nofile_limit(uint64_t *ret_limit);
