/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdio.h>

#include "config.h"

/*
 * `armprofd --replay FILE --once`: feed a perf.data with SPE records through
 * the same decode and aggregation path as live data, then print one JSON
 * report (records per CPU and stream health, counts by op and data source,
 * decode errors, hot PCs, hot lines, latency quantiles) to `out`.
 * Returns 0, or a negative errno after the report when the file was
 * unreadable or damaged (what decoded before the damage is in the report).
 */
int replay_once(const char *path, const struct config *cfg, FILE *out);
