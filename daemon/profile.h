/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * pprof profiles of sampled operations: the store's PC-by-context table
 * over a window, symbolized, as a gzip-compressed profile.proto (go tool
 * pprof reads it). Sample types: samples/count (the SPE samples), latency
 * /cycles (their total latency), l1d_refills, llc_misses, tlb_walks and
 * mispredicts/count; each sample carries pid, tid, cpu, el, op and (for
 * loads) data source labels.
 */

#include <stdint.h>

#include "store.h"
#include "strbuf.h"
#include "symbols.h"

/*
 * `sym` may be NULL (no symbols). `period`: the SPE sampling interval (one
 * sample every N operations), 0 when unknown. Returns 0 or a negative errno.
 */
int profile_build(const struct store_snapshot *snap, uint64_t window_ns, struct symbols *sym, uint64_t period,
                  struct strbuf *ret_gz);
/* The same of the epochs overlapping [start_ns, end_ns) of the store's clock; time_nanos and
 * duration_nanos say the span those epochs cover. */
int profile_build_span(const struct store_snapshot *snap, uint64_t start_ns, uint64_t end_ns, struct symbols *sym,
                       uint64_t period, struct strbuf *ret_gz);
