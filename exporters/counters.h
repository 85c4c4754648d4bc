/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Exports a published PMU counting snapshot: Prometheus families, the
 * /counters JSON document and the collector's /status entry. Reads the
 * snapshot only; the collector thread never waits for us.
 */

#include <jansson.h>

#include "pmu-snapshot.h"
#include "prom.h"

/* The collector runs and counts something. */
bool counters_up(const struct pmu_snapshot *s);
/* `s` may be NULL (counting disabled or not started): nothing is written. */
void counters_write_metrics(const struct pmu_snapshot *s, struct prom_writer *w);
/* cpu: only that CPU in "cpus" (the host aggregate stays whole), or -1 for all. */
json_t *counters_to_json(const struct pmu_snapshot *s, double interval_seconds, int64_t cpu);
json_t *counters_status_json(const struct pmu_snapshot *s, const char *disabled_reason);
