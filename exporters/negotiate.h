/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * HTTP content negotiation (RFC 9110 §12.5.1): pick the best of the media
 * types we offer for an Accept header. Each offer takes the quality of the
 * most specific media range that matches it (type/subtype with parameters,
 * then type/subtype, type/, then the catch-all); the highest quality wins,
 * ties go to the earlier offer; q=0 means "not acceptable". Malformed ranges
 * are skipped, never fatal: "Targets MUST validate the Accept header"
 * (Prometheus content_negotiation.md), and validation here means a hostile
 * header cannot do more than fall back to the default.
 */

#include <stdbool.h>
#include <stddef.h>

struct media_param_rule {
        const char *name;
        /* NULL-terminated values accepted for it. */
        const char *const *values;
        /* The range must carry this parameter to match (e.g. proto=...). */
        bool required;
};

struct media_offer {
        const char *type;    /* "text" */
        const char *subtype; /* "plain" */
        const struct media_param_rule *rules; /* NULL or terminated by { NULL } */
};

#define NEGOTIATE_MAX_HEADER 4096
#define NEGOTIATE_MAX_OFFERS 16

/*
 * Index of the best offer, or -1 when nothing is acceptable (including a
 * missing, empty, oversized or unparsable header: the caller falls back)
 * or when there are more than NEGOTIATE_MAX_OFFERS offers.
 */
int negotiate(const char *accept, const struct media_offer *offers, size_t n_offers);

/* Accept-Encoding allows gzip with q > 0. */
bool negotiate_gzip(const char *accept_encoding);

/* The /metrics formats. */
enum prom_format {
        PROM_FORMAT_TEXT,        /* text/plain; version=0.0.4 (the default and last resort) */
        PROM_FORMAT_OPENMETRICS, /* application/openmetrics-text; version=1.0.0 */
        PROM_FORMAT_PROTOBUF,    /* delimited io.prometheus.client.MetricFamily */
};

enum prom_format negotiate_prom_format(const char *accept);
const char *prom_format_content_type(enum prom_format f);
