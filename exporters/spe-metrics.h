/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * SPE families on /metrics: records, bytes and stream damage per CPU,
 * decode errors, loads by data source, peer snoops by scope (exact,
 * cumulative counters from the store), and latency histograms: classic
 * buckets in the text formats, schema-7 native buckets (exact: they are
 * the store's own buckets) alongside in protobuf.
 */

#include <stddef.h>

#include "prom.h"
#include "source.h"
#include "store.h"

struct spe_metrics_input {
        const struct store_totals *totals;              /* cumulative */
        const struct spe_stream_stats *cpus;
        size_t n_cpus;
        const struct store_latency_cumulative *latency; /* NULL: no latency family */
        uint64_t store_bytes;                           /* the store's memory bound */
        const struct proc_table_stats *procs;           /* live SPE's process table; NULL: no family */
        bool up;
};

void spe_metrics_write(const struct spe_metrics_input *in, struct prom_writer *w);
