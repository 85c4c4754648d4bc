/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The HTTP endpoints. The daemon hands in a provider of published state as
 * callbacks; the exporters never reach into collectors (ARCHITECTURE.md §2).
 */

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "http.h"
#include "privacy.h"
#include "prom.h"
#include "store.h"
#include "symbolz.h"

struct api_provider {
        void *userdata;
        /* The collector loop made progress recently (/healthz). */
        bool (*alive)(void *userdata);
        /* Appends the daemon's own families to /metrics. */
        void (*write_metrics)(void *userdata, struct prom_writer *w);
        /* Adds "config" and "collectors" members to the /status object. */
        void (*fill_status)(void *userdata, json_t *status);
        /* The /counters document (new reference); cpu -1 for all CPUs. */
        json_t *(*counters_json)(void *userdata, int64_t cpu);
        /* A reference to the newest aggregate snapshot (/hotpcs, /hotlines, /latency). */
        struct store_snapshot *(*snapshot)(void *userdata);
        /* The function of a PC of a process, for "symbol" fields; false when unknown. */
        bool (*symbol)(void *userdata, uint32_t pid, uint64_t pc, char *buf, size_t len);
        /* The file mapped at a PC of a process, for "object" fields; false when unknown. */
        bool (*object)(void *userdata, uint32_t pid, uint64_t pc, char *buf, size_t len);
        /* The NUMA node of a physical address, for "node" fields; -1 when unknown. */
        int (*node)(void *userdata, uint64_t pa);
        /* A process's cgroup path and service, for "cgroup"/"service" fields and ?cgroup= (aggregates.h). */
        bool (*cgroup)(void *userdata, uint32_t pid, char *path, size_t path_len, char *service, size_t service_len);
        /* A gzip-compressed pprof profile of the window (/debug/pprof/...). */
        int (*pprof)(void *userdata, uint64_t window_ns, struct strbuf *out);
        /* The same of the epochs overlapping [start_ns, end_ns) of the store's clock. */
        int (*pprof_span)(void *userdata, uint64_t start_ns, uint64_t end_ns, struct strbuf *out);
        /*
         * Close an epoch at this store-clock time too (a profile span's end),
         * so the span is answered when it ends; false when it will not.
         */
        bool (*epoch_end_at)(void *userdata, uint64_t at_ns);
        /* Now in the store's clock (live data: CLOCK_MONOTONIC ns). */
        uint64_t (*now_ns)(void *userdata);
        /* The mapping of a data address, for "region" fields with [privacy] data_addresses = no (privacy.h). */
        privacy_region_fn region;
        /* What /hotpcs and /hotlines may say of addresses; NULL: PRIVACY_POLICY_DEFAULT. Must outlive the api. */
        const struct privacy_policy *privacy;
        /*
         * /debug/pprof/symbol: names of addresses that come without a process
         * (symbolz.h); NULL: none is known. The daemon's answer is
         * symbolizer_bare_names() (daemon/symbolizer.h), which says which.
         */
        symbolz_names_fn bare_symbols;
        /* The source file and line of a PC, "FILE:LINE", for "source" fields; false when unknown. May be NULL. */
        bool (*source)(void *userdata, uint32_t pid, uint64_t pc, char *buf, size_t len);
        /* The variable at a data address, "SYMBOL+0xOFFSET", and its member there (agg_symbolizer); may be NULL. */
        bool (*data_symbol)(void *userdata, uint32_t pid, uint64_t va, char *buf, size_t len, char *member,
                            size_t member_len);
};

struct api;

struct api *api_new(const struct api_provider *provider);
struct api *api_free(struct api *a);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct api *, api_free);

/* The route table, with the api as each handler's userdata. */
const struct http_route *api_routes(size_t *ret_n);
