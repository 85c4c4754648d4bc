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

#include "lathist.h"
#include "prom.h"
#include "spe-replay.h"
#include "store.h"
#include "symbols.h"

#define SPE_LAT_OPS 3 /* load, store, branch */

/* Cumulative latency histogram: counters, never reset. */
struct spe_latency_cum {
        uint64_t count, sum;
        uint64_t bucket[LATHIST_NBUCKETS];
};

struct spe_metrics_input {
        const struct store_totals *totals; /* cumulative */
        const struct spe_stream_stats *cpus;
        size_t n_cpus;
        const struct spe_latency_cum *latency; /* [kind * SPE_LAT_OPS + op] or NULL */
        uint64_t store_bytes;                  /* the store's memory bound */
        bool up;
};

void spe_metrics_write(const struct spe_metrics_input *in, struct prom_writer *w);

/* The symbol cache: its evictions, files read, and what build ids decided. */
void symbols_metrics_write(const struct symbols_stats *st, struct prom_writer *w);
