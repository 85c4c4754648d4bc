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
json_t *agg_totals_json(const struct store_totals *t);
json_t *agg_hotpcs_json(const struct store_hotpcs_result *r);
json_t *agg_hotlines_json(const struct store_hotlines_result *r);
json_t *agg_latency_json(const struct store_latency_result *r);
json_t *agg_hex(uint64_t v);
