/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The collector thread (DESIGN.md §3): one epoll loop that owns every
 * collector fd and is the only writer of collected state. Each cycle it
 * reads the PMU, then publishes an immutable, reference-counted view; HTTP
 * threads take a reference for the length of a request and never block the
 * loop. Each cycle ends with a heartbeat that /healthz and the systemd
 * watchdog look at, so both report real progress.
 */

#include <stdbool.h>
#include <stdint.h>

#include "pmu-collector.h"

struct collector_options {
        uint64_t interval_usec;
        bool pmu_enable;
        uint32_t pmu_events_mask; /* bit i: pmu_event_id i */
        uint32_t pmu_general_counters;
};

/* What one cycle produced. Immutable once published. */
struct collector_view {
        uint64_t cycle;
        double interval_seconds;
        struct pmu_snapshot *pmu; /* NULL when counting is off or could not start */
        char pmu_reason[256];     /* why pmu is NULL */
};

struct collector;

int collector_start(const struct collector_options *opts, struct collector **ret);
struct collector *collector_stop(struct collector *c);

/* New options take effect at the next cycle (PMU events are reopened if they changed). */
void collector_reconfigure(struct collector *c, const struct collector_options *opts);

/* A reference to the latest view (never NULL); give it back with collector_view_put(). */
const struct collector_view *collector_view_get(struct collector *c);
void collector_view_put(const struct collector_view *v);

/* Completed cycles, and whether the last one is recent (3 intervals, at least 5 s). */
uint64_t collector_cycles(struct collector *c);
bool collector_alive(struct collector *c);

uint64_t now_monotonic_usec(void);
