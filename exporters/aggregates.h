/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * JSON for the store's answers, shared by the HTTP API (/hotpcs, /hotlines,
 * /latency) and `armprofd --replay FILE --once`. Stable field names,
 * numbers as numbers, addresses as "0x..." strings.
 */

#include <jansson.h>

#include "store.h"

json_t *agg_interval_json(const struct store_interval *iv);
/* Unix nanoseconds as RFC 3339 UTC with milliseconds ("2026-11-23T08:54:21.123Z"). 0 or -ERANGE/-ENOBUFS. */
int agg_rfc3339(int64_t unix_ns, char *buf, size_t len);
/* json_dumps() flags for every JSON answer: reals with at most 10 significant digits. */
#define AGG_JSON_REAL_PRECISION JSON_REAL_PRECISION(10)
json_t *agg_totals_json(const struct store_totals *t);
/* Names a PC of a process: writes the function into buf and returns true when known. */
struct agg_symbolizer {
        void *userdata;
        bool (*name)(void *userdata, uint32_t pid, uint64_t pc, char *buf, size_t len);
};

/* `sym` may be NULL: no "symbol" fields. */
json_t *agg_hotpcs_json(const struct store_hotpcs_result *r, const struct agg_symbolizer *sym);
json_t *agg_hotlines_json(const struct store_hotlines_result *r, const struct agg_symbolizer *sym);
json_t *agg_latency_json(const struct store_latency_result *r);
json_t *agg_hex(uint64_t v);
