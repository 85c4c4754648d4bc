/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Memory bandwidth from the memory-side PMUs sysfs lists: Arm CMN meshes
 * (arm_cmn_*: the HN-F's requests to the memory controller) and Intel
 * integrated memory controllers (uncore_imc*: CAS commands). One group per
 * PMU, opened on the CPU its cpumask names; bytes are counted, so that
 * PromQL's rate() gives bytes/s. Pure here: discovery from sysfs files and
 * the bytes of an interval; pmu-collector.c opens and reads.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pmu-sysfs.h"

/* Bytes a memory request moves: a 64-byte line, CHI's transfer unit for
 * CMN's HN-F to SN-F requests and one CAS burst of a 64-bit DDR channel
 * (BL8 x 8 bytes) for Intel's IMC. A protocol's size, not the CPU's line
 * (which HACKING.md §5 takes from sysfs). */
#define PMU_BANDWIDTH_REQUEST_BYTES 64U
/* Memory PMUs planned at most (a 8-socket host with 12 IMC channels each
 * has 96): those beyond are said in the note, not opened. */
#define PMU_BANDWIDTH_MAX_SOURCES 128U
#define PMU_BANDWIDTH_NOTE_MAX 512U
/* A PMU's name in sysfs: "arm_cmn_0", "uncore_imc_11". */
#define PMU_BANDWIDTH_NAME_MAX 64U

enum pmu_bandwidth_method {
        PMU_BANDWIDTH_CMN_HNF_MC, /* (hnf_mc_reqs - hnf_mc_retries) x 64 */
        PMU_BANDWIDTH_IMC_CAS,    /* (cas_count_read + cas_count_write) x 64 */
        _PMU_BANDWIDTH_METHOD_MAX,
};

struct pmu_bandwidth_source {
        char name[PMU_BANDWIDTH_NAME_MAX];
        enum pmu_bandwidth_method method;
        uint32_t type;
        unsigned cpu; /* a CPU of its cpumask: one source per CPU listed there (IMC: one per socket) */
        size_t n;
        uint64_t config[2]; /* CMN: reqs, retries; IMC: read, write */
};

struct pmu_bandwidth_plan {
        size_t n;
        struct pmu_bandwidth_source *sources;
        /* What is absent or could not be planned, for /status. */
        char note[PMU_BANDWIDTH_NOTE_MAX];
};

/* Scan <sysfs_root>/bus/event_source/devices for arm_cmn_* and uncore_imc*
 * PMUs. Always fills *ret (no source: a note saying which were looked for).
 * Free with pmu_bandwidth_plan_done(). */
int pmu_bandwidth_plan(const char *sysfs_root, struct pmu_bandwidth_plan *ret);
void pmu_bandwidth_plan_done(struct pmu_bandwidth_plan *p);

/* Bytes of an interval from the raw count deltas of one read of the
 * source's group (delta[i] for config[i]), scaled by enabled/running when
 * the group was multiplexed (libperf's perf_counts_values__scale()).
 * Returns -ENODATA when running == 0. */
int pmu_bandwidth_bytes(const struct pmu_bandwidth_source *s, const uint64_t delta[static 2], uint64_t d_enabled,
                        uint64_t d_running, uint64_t *ret);

const char *pmu_bandwidth_method_to_string(enum pmu_bandwidth_method m);
