/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The cpu-clock sampler's families on /metrics: samples, losses and
 * truncations per CPU (the source's status), its process table, and what
 * became of the samples (the store's cumulative totals: samples stored,
 * dropped by full stack tables). Never a pid, comm, symbol or cgroup
 * label: those are unbounded and belong in /hotpcs and the profiles.
 */

#include <stddef.h>

#include "prom.h"
#include "source.h"
#include "store.h"

struct sampler_metrics_input {
        const struct store_totals *totals;              /* cumulative */
        const struct sampler_cpu_stats *cpus;
        size_t n_cpus;
        const struct proc_table_stats *procs;        /* NULL: no sampler */
};

void sampler_metrics_write(const struct sampler_metrics_input *in, struct prom_writer *w);
