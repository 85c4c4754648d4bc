/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * What PMU counting publishes: a value type the exporters read
 * (exporters/counters.c) without seeing the collector's internals
 * (pmu-collector.h). pmu_collector_snapshot() fills it on the collector
 * thread; it is immutable once handed on.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pmu-bandwidth.h"
#include "pmu-event.h"
#include "pmu-ratio.h"
#include "pmu-topdown.h"

#define PMU_MESSAGE_MAX 1024U
#define PMU_NAME_MAX 64U
/* Group slots per CPU: hardware groups of the CPU's PMU (at most one per
 * event, pmu-group.h's PMU_GROUP_MAX_GROUPS), plus software. */
#define PMU_MAX_GROUPS ((size_t) _PMU_EVENT_MAX + 1U)

enum pmu_state {
        PMU_STATE_OK,                /* every configured event counts somewhere */
        PMU_STATE_DEGRADED,          /* some events unavailable, see events[] */
        PMU_STATE_PERMISSION_DENIED, /* EACCES/EPERM: nothing could be opened */
        PMU_STATE_NO_EVENTS,         /* nothing could be opened, other reasons */
        _PMU_STATE_MAX,
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

/* Top-down on one CPU (pmu-topdown.h): what it can compute and the
 * fractions of the last interval, all from one read of one group. */
struct pmu_cpu_topdown {
        enum pmu_topdown_method method; /* NONE: nothing, see note */
        char core[PMU_TOPDOWN_CORE_MAX];
        /* Why absent or partial, "" if complete: the plan's note, "; ", and
         * why its group is not open or not running (each PMU_TOPDOWN_NOTE_MAX). */
        char note[2 * PMU_TOPDOWN_NOTE_MAX + 2];
        char mpki_note[2 * PMU_TOPDOWN_NOTE_MAX + 2]; /* the same for the MPKI group */
        bool computes[_PMU_TOPDOWN_METRIC_MAX];
        struct pmu_topdown last; /* present[] false when the group did not run */
};

struct pmu_cpu_snapshot {
        unsigned cpu;
        char pmu[PMU_NAME_MAX]; /* core PMU name, "" if none */
        struct pmu_event_value events[_PMU_EVENT_MAX];
        size_t n_groups;
        struct pmu_group_times groups[PMU_MAX_GROUPS];
        struct pmu_ratio ratios[_PMU_RATIO_MAX];
        struct pmu_cpu_topdown topdown;
};

struct pmu_event_status {
        bool configured;
        bool available; /* open on at least one online CPU */
        int error;      /* negative errno of the first failure, 0 if none */
};

/* One memory-side PMU group: bytes moved since the collector started. */
struct pmu_bandwidth_value {
        char pmu[PMU_BANDWIDTH_NAME_MAX];
        unsigned cpu;
        enum pmu_bandwidth_method method;
        uint64_t bytes_total;
        bool counted; /* it ran in the last interval */
        int error;    /* negative errno of its open, 0 when open */
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
        /* Memory bandwidth (pmu-bandwidth.h), and what is absent. */
        size_t n_bandwidth;
        struct pmu_bandwidth_value *bandwidth;
        char bandwidth_note[PMU_BANDWIDTH_NOTE_MAX];
};

struct pmu_snapshot *pmu_snapshot_free(struct pmu_snapshot *s);
const struct pmu_cpu_snapshot *pmu_snapshot_cpu(const struct pmu_snapshot *s, unsigned cpu);
const char *pmu_state_to_string(enum pmu_state s);
