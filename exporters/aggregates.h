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
        /*
         * pc's source file and line from DWARF, "FILE:LINE" (perf c2c's
         * Source:Line), for "source" fields; false when unknown. May be NULL.
         */
        bool (*source)(void *userdata, uint32_t pid, uint64_t pc, char *buf, size_t len);
        /*
         * The variable at data address va, "SYMBOL+0xOFFSET" (perf c2c's Data
         * Symbol), for "data_symbol" fields, and in member the member there
         * from its DWARF type ("struct stats.hits"; "" when unknown), for
         * "data_member"; false when no variable is known. May be NULL.
         */
        bool (*data_symbol)(void *userdata, uint32_t pid, uint64_t va, char *buf, size_t len, char *member,
                            size_t member_len);
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
 * One /hotpcs row: the hot PCs a person counts as one, by perf report's
 * default sort keys (comm,dso,sym): one command at one EL in one function
 * of one file, its PCs and the processes that ran them summed (counts,
 * errors, ops, events, latency: the sum of upper bounds bounds the sum),
 * so 500 short processes of one program are one row. A PC the privacy
 * policy withholds is in the function "[kernel]" (a command's kernel PCs
 * at one EL are one row, as the CPU profile's kernel frames are one frame);
 * a PC no function names (a kernel PC served but not in kallsyms, which
 * the symbolizer names "[kernel]", included) stays a row of its own
 * process and address, and so do the PCs of a task with no command (perf
 * names it by its pid).
 */
struct agg_pc_row {
        struct hotpcs_item sum;         /* the counts summed; pc and pid of its hottest PC, its el and comm */
        char *symbol, *object;          /* NULL: not known */
        bool withheld;                  /* kernel PCs the policy withholds: no pc, "[kernel]" */
        uint32_t *pids;                 /* every process summed, ascending */
        size_t n_pids;
};

struct agg_pc_rows {
        struct agg_pc_row *row;         /* by samples, descending */
        size_t n;
        /* Samples of the processes kept whose user PC lies in no mapping the daemon knows (0 without sym). */
        uint64_t unmapped;
};

/*
 * The rows of m's PCs, at most `limit`, of the processes whose cgroup path
 * starts with cgroup_prefix (NULL: all; agg_pid_in_cgroup()). Query the
 * store without a limit before, so that each row sums all of its PCs.
 * `sym` may be NULL: no names (a row per process and PC), and
 * PRIVACY_POLICY_DEFAULT. Free with agg_pc_rows_done().
 */
void agg_hotpcs_rows(const struct hotpcs_merged *m, const struct agg_symbolizer *sym, const char *cgroup_prefix,
                     size_t limit, struct agg_pc_rows *ret);
void agg_pc_rows_done(struct agg_pc_rows *rows);

/*
 * `sym` may be NULL: no "symbol", "object" or "node" fields, and
 * PRIVACY_POLICY_DEFAULT. An address the policy withholds is left out
 * ("pc" of a kernel PC; "address" and "va" of a line whose data address is
 * withheld; 0 in protobuf) and a "region" string says what it was:
 * "[kernel]", "[unknown]" or "MAPPING+0xOFFSET" (privacy.h); a kernel PC's
 * "symbol" is "[kernel]". /hotpcs renders res's table facts and the rows
 * agg_hotpcs_rows() made of it.
 */
json_t *agg_hotpcs_json(const struct store_hotpcs_result *res, const struct agg_pc_rows *rows,
                        const struct agg_symbolizer *sym);
json_t *agg_hotlines_json(const struct store_hotlines_result *res, const struct agg_symbolizer *sym);
json_t *agg_latency_json(const struct store_latency_result *res);
json_t *agg_hex(uint64_t v);
