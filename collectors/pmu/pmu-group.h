/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The pure side of event groups: how configured events are split into
 * groups that fit a PMU, how a PERF_FORMAT_GROUP read is parsed, how a
 * multiplexed count is scaled, and how per-interval deltas accumulate into
 * cumulative totals that survive a reopen. No system calls here, so all of
 * it is unit tested.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pmu-event.h"

/* At most one group per event, plus nothing: a group holds >= 1 event. */
#define PMU_GROUP_MAX_GROUPS ((size_t) _PMU_EVENT_MAX)
#define PMU_GROUP_MAX_EVENTS ((size_t) _PMU_EVENT_MAX)

struct pmu_group_spec {
        bool software;
        size_t n;
        enum pmu_event_id ev[PMU_GROUP_MAX_EVENTS];
};

struct pmu_group_plan {
        size_t n_groups;
        struct pmu_group_spec groups[PMU_GROUP_MAX_GROUPS];
};

/*
 * Split events into groups. Hardware events go into groups of at most
 * general_counters events, except that when cycle_counter is true and
 * PMU_EVENT_CYCLES is among them, the first group leads with cycles and
 * holds one more (PMUv3 counts CPU_CYCLES on the dedicated PMCCNTR_EL0,
 * Arm ARM D17.2). Software events all go into one group of their own, last:
 * they never compete for counters and must not be unscheduled with a
 * hardware group. Order is otherwise kept, so related events configured
 * next to each other share a group (and a scale factor).
 * Returns -EINVAL for general_counters == 0 with hardware events, or for
 * an invalid or repeated id.
 */
int pmu_group_plan(const enum pmu_event_id *ids, size_t n, unsigned general_counters,
                   bool cycle_counter, struct pmu_group_plan *ret);

/*
 * struct read_format for PERF_FORMAT_GROUP | TOTAL_TIME_ENABLED |
 * TOTAL_TIME_RUNNING | ID (perf_event_open(2)):
 *   u64 nr; u64 time_enabled; u64 time_running; { u64 value; u64 id; } cntr[nr];
 */
#define PMU_GROUP_READ_HEADER_WORDS 3U
#define PMU_GROUP_READ_WORDS_PER_EVENT 2U
#define PMU_GROUP_READ_SIZE(n)                                                           \
        ((PMU_GROUP_READ_HEADER_WORDS + PMU_GROUP_READ_WORDS_PER_EVENT * (size_t) (n)) * \
         sizeof(uint64_t))

struct pmu_group_reading {
        uint64_t enabled;
        uint64_t running;
        size_t n;
        uint64_t value[PMU_GROUP_MAX_EVENTS];
        uint64_t id[PMU_GROUP_MAX_EVENTS];
};

/* Parse len bytes returned by read(2). -EBADMSG when short or when nr does
 * not match the bytes, -E2BIG when nr exceeds PMU_GROUP_MAX_EVENTS. */
int pmu_group_parse_read(const void *buf, size_t len, struct pmu_group_reading *ret);

/*
 * Scale a count for multiplexing as libperf does (perf_counts_values__scale
 * in tools/lib/perf/evsel.c): value * enabled / running, in 128-bit
 * arithmetic so that no product overflows; saturates at UINT64_MAX.
 * running == 0 means the event was not counted at all: returns -ENODATA
 * and the caller must report no value (never 0).
 */
int pmu_group_scale(uint64_t value, uint64_t enabled, uint64_t running, uint64_t *ret);

/* Enabled/running time of one group: cumulative over reopens. */
struct pmu_group_time {
        uint64_t prev_enabled, prev_running; /* of the current fds */
        uint64_t enabled_ns_total, running_ns_total;
};

/* Fold one reading of the group's times in; returns the deltas. */
void pmu_group_time_advance(struct pmu_group_time *t, uint64_t enabled, uint64_t running,
                            uint64_t *ret_d_enabled, uint64_t *ret_d_running);
/* New fds start at zero: forget the previous readings, keep the totals. */
void pmu_group_time_reopen(struct pmu_group_time *t);

/* One event on one CPU: scaled cumulative total that survives reopens. */
struct pmu_group_counter {
        uint64_t prev_raw; /* raw value of the current fd at the last read */
        uint64_t total;    /* sum of scaled deltas, never decreases */
        uint64_t delta;    /* scaled delta of the last interval */
        bool counted;      /* delta is valid (the group ran in the interval) */
};

/*
 * Fold one raw reading in, given the group's time deltas for the same
 * interval. With d_running == 0 the interval is not counted (counted =
 * false, total unchanged) but prev_raw still follows the fd. The scaled
 * delta is (raw - prev_raw) * d_enabled / d_running.
 */
void pmu_group_counter_advance(struct pmu_group_counter *c, uint64_t raw, uint64_t d_enabled,
                               uint64_t d_running);
void pmu_group_counter_reopen(struct pmu_group_counter *c);
