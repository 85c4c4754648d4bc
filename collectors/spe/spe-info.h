/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Arm SPE's PERF_RECORD_AUXTRACE_INFO: what `perf record -e arm_spe//`
 * writes about the SPE PMU and, since version 2, about each CPU (its MIDR,
 * the minimum interval). The perf.data container passes the private area
 * through; this decodes it, as a decoder the reader calls
 * (spe_info_attach()) or on its own (spe_info_parse()).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perf-data.h"

/*
 * Arm SPE private area of PERF_RECORD_AUXTRACE_INFO (u64 indexes,
 * tools/perf/util/arm-spe.h, tools/perf/arch/arm64/util/arm-spe.c).
 * Version 1: exactly two u64s, {pmu_type, per_cpu_mmaps}.
 * Version 2+: a header {version, header size in u64s, pmu_type, nr_cpus},
 * then per CPU {magic, cpu, nr_params, params[nr_params]} where params are
 * {midr, pmu_type, min_interval, event_filter caps (newer perf)}.
 */
#define SPE_INFO_V1_PRIV_U64       2
#define SPE_INFO_V1_PMU_TYPE       0
#define SPE_INFO_V1_PER_CPU_MMAPS  1
#define SPE_INFO_HDR_VERSION       0
#define SPE_INFO_HDR_SIZE          1
#define SPE_INFO_HDR_PMU_TYPE      2
#define SPE_INFO_HDR_NR_CPUS       3
#define SPE_INFO_HDR_MIN_U64       4
#define SPE_INFO_CPU_MAGIC_VALUE   UINT64_C(0x1010101010101010)
#define SPE_INFO_CPU_MAGIC         0
#define SPE_INFO_CPU_NUM           1
#define SPE_INFO_CPU_NR_PARAMS     2
#define SPE_INFO_CPU_FIXED_U64     3
/* Parameter indexes, relative to the first parameter. */
#define SPE_INFO_PARAM_MIDR        0
#define SPE_INFO_PARAM_PMU_TYPE    1
#define SPE_INFO_PARAM_MIN_IVAL    2
#define SPE_INFO_PARAM_EVENT_FILTER 3

struct spe_info_cpu {
        uint32_t cpu;
        uint64_t midr;
        uint64_t pmu_type;              /* UINT64_MAX: no SPE on this CPU */
        uint64_t min_interval;
        uint64_t event_filter;
        unsigned nr_params;
};

struct spe_info {
        unsigned version;               /* 1, or the header version (2+) */
        uint64_t pmu_type;
        size_t n_cpus;                  /* 0 for version 1 */
        struct spe_info_cpu *cpus;      /* owned: spe_info_done() */
};

/*
 * Decode an SPE AUXTRACE_INFO's private area. 0 with *ret set, or -EBADMSG
 * with a message naming the record's offset in err (*ret untouched).
 */
int spe_info_parse(const struct perf_data_auxtrace_info *info, struct spe_info *ret, char *err, size_t err_len);
void spe_info_done(struct spe_info *i);
/* CPU cpu's MIDR as the info states it; -ENOENT when it does not (version 1, no MIDR parameter). */
int spe_info_midr(const struct spe_info_cpu *cpus, size_t n_cpus, uint32_t cpu, uint64_t *ret_midr);

/*
 * The reader's decoder of SPE AUXTRACE_INFO: each one decoded into
 * info->decoded (a struct spe_info, valid during on_auxtrace_info), and the
 * last per-CPU metadata kept for perf_data_reader_midr(). The state must
 * outlive the reader's run; spe_info_decoder_done() frees it.
 */
struct spe_info_decoder {
        struct perf_data_auxtrace_decoder decoder;
        struct spe_info last;           /* the last record's */
        struct spe_info_cpu *cpus;      /* the last version 2+ record's, for the MIDRs */
        size_t n_cpus;
};

int spe_info_attach(struct perf_data_reader *reader, struct spe_info_decoder *d);
void spe_info_decoder_done(struct spe_info_decoder *d);
