/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * JSON for the store's answers, shared by the HTTP API (/hotpcs, /hotlines,
 * /latency) and `armprofd --replay FILE --once`. Stable field names,
 * numbers as numbers, addresses as "0x..." strings.
 */

#include <jansson.h>

#include "privacy.h"
#include "store.h"

json_t *agg_interval_json(const struct store_interval *iv);
/* Unix nanoseconds as RFC 3339 UTC with milliseconds ("2026-11-23T08:54:21.123Z"). 0 or -ERANGE/-ENOBUFS. */
/* Its text: 20 bytes around the year, which gmtime_r() gives as an int (11 characters at most), and the NUL. */
#define AGG_RFC3339_MAX (20U + DECIMAL_STR_MAX(int))
int agg_rfc3339(int64_t unix_ns, char *buf, size_t len);
/* json_dumps() flags for every JSON answer: reals with at most 10 significant digits. */
#define AGG_JSON_REAL_PRECISION JSON_REAL_PRECISION(10)
json_t *agg_totals_json(const struct store_totals *t);
/*
 * Names a PC of a process: `name` writes the function into buf, `object`
 * (may be NULL) the file of the mapping that holds it (perf's "Object");
 * each returns true when known. `node` (may be NULL) gives the NUMA node of
 * a physical address, or -1 when the topology does not say.
 */
struct agg_symbolizer {
        void *userdata;
        bool (*name)(void *userdata, uint32_t pid, uint64_t pc, char *buf, size_t len);
        bool (*object)(void *userdata, uint32_t pid, uint64_t pc, char *buf, size_t len);
        int (*node)(void *userdata, uint64_t pa);
        /*
         * The cgroup v2 path of a process and what it stands for (its systemd
         * unit or container id), each copied into its buffer; false when not
         * known. May be NULL: no "cgroup" or "service" fields.
         */
        bool (*cgroup)(void *userdata, uint32_t pid, char *path, size_t path_len, char *service, size_t service_len);
        /* The mapping of a data address, for "region" with data_addresses = no (privacy.h); may be NULL. */
        privacy_region_fn region;
        /* What may be served of addresses (privacy.h); NULL: PRIVACY_POLICY_DEFAULT. */
        const struct privacy_policy *privacy;
};

/* A cgroup path (PATH_MAX) and a service name (a unit name is at most 255 bytes, unit_name_is_valid()). */
#define AGG_CGROUP_MAX 4096
#define AGG_SERVICE_MAX 256

/*
 * Whether pid's cgroup path starts with prefix ("/system.slice/" keeps the
 * system services, "/system.slice/nginx.service" one); false when the
 * cgroup is not known.
 */
bool agg_pid_in_cgroup(const struct agg_symbolizer *sym, uint32_t pid, const char *prefix);

/*
 * The hot PCs as the privacy policy (NULL: PRIVACY_POLICY_DEFAULT) lets
 * them be served: the withheld kernel PCs of a process at one EL become one
 * [kernel] entry (counts, errors, ops, events and latency summed: the sum of
 * upper bounds bounds the sum), as the CPU profile's kernel frames are one
 * [kernel] frame; then at most `limit` entries, by count. Query the store
 * without a limit before, so a process's kernel entries are all summed.
 */
void agg_hotpcs_withhold(struct hotpcs_merged *m, const struct privacy_policy *p, size_t limit);

/*
 * `sym` may be NULL: no "symbol", "object" or "node" fields, and
 * PRIVACY_POLICY_DEFAULT. An address the policy withholds is left out
 * ("pc" of a kernel PC; "address" and "va" of a line whose data address is
 * withheld; 0 in protobuf) and a "region" string says what it was:
 * "[kernel]", "[unknown]" or "MAPPING+0xOFFSET" (privacy.h); a kernel PC's
 * "symbol" is "[kernel]".
 */
json_t *agg_hotpcs_json(const struct store_hotpcs_result *res, const struct agg_symbolizer *sym);
json_t *agg_hotlines_json(const struct store_hotlines_result *res, const struct agg_symbolizer *sym);
json_t *agg_latency_json(const struct store_latency_result *res);
json_t *agg_hex(uint64_t v);
