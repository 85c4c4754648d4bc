/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The answers of /hotlines, /hotpcs, /latency and /counters as a person
 * reads them: a header block (window, host, source, totals), tables in the
 * layout of the perf command a profiler's user knows (perf c2c report, perf
 * report, perf stat -A) and the data of the charts. A view is built from the
 * very JSON document the endpoint answers (one query, three renderings: the
 * JSON, its protobuf and this), so the renderings cannot disagree; text
 * here (view_render_text()), HTML in page.h.
 */

#include <jansson.h>

#include "strbuf.h"
#include "table.h"

/* What the answer alone does not say. */
struct view_context {
        const char *host;   /* the host's name */
        const char *source; /* what sampled: "spe (replay of FILE)", "sampler (cpu-clock 19 Hz)" */
        const char *window; /* the window asked for, as given ("1m", "all") */
        const char *no_spe; /* why no SPE source runs (/status' reason); NULL when one does */
};

struct view_fact {
        const char *name;
        char *value;
};

struct view_section {
        char *heading;
        char *note;   /* a sentence under the heading; NULL none */
        struct table table;
};

/* A latency histogram: counts at power-of-two bounds (the JSON's "buckets"). */
struct view_histogram {
        char *title;
        size_t n;
        uint64_t *le, *count;
};

/* One value per CPU (IPC, a miss ratio): a heat strip in HTML. */
struct view_strip {
        char *title;
        size_t n;
        unsigned *cpu;
        double *value;
};

#define VIEW_MAX_FACTS 16
#define VIEW_MAX_SECTIONS 8
#define VIEW_MAX_CHARTS 16

struct view {
        const char *title; /* "Hot cache lines" */
        size_t nfacts, nsections, nhist, nstrips;
        struct view_fact facts[VIEW_MAX_FACTS];
        struct view_section sections[VIEW_MAX_SECTIONS];
        struct view_histogram hist[VIEW_MAX_CHARTS];
        struct view_strip strips[VIEW_MAX_CHARTS];
};

void view_done(struct view *v);

/* Each fills *v from its endpoint's JSON answer; -EINVAL when the document is not one. */
int view_hotlines(const json_t *answer, const struct view_context *ctx, struct view *v);
int view_hotpcs(const json_t *answer, const struct view_context *ctx, struct view *v);
int view_latency(const json_t *answer, const struct view_context *ctx, struct view *v);
int view_counters(const json_t *answer, const struct view_context *ctx, struct view *v);

/* The text answer: the header block behind "# ", then each section's table, then the histograms. */
void view_render_text(const struct view *v, struct strbuf *out);

/* A histogram's bars in text: one row per bucket, a bar of '#' up to this width. */
#define VIEW_BAR_WIDTH 50
