/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Minimal perf.data writer for Arm SPE captures, file mode and pipe mode,
 * following tools/perf/Documentation/perf.data-file-format.txt and what
 * Debian's perf 6.1 needs to decode SPE (tools/perf/util/arm-spe.c of
 * that version): two attrs (the arm_spe event and a dummy:u tracking
 * event) with one sample id per CPU and PERF_SAMPLE_IDENTIFIER, TIME_CONV
 * before AUXTRACE_INFO, side-band records with the sample_id_all trailer,
 * PERF_RECORD_AUX + PERF_RECORD_AUXTRACE (payload inline) per chunk, the
 * build-id table, and the header features perf c2c needs.
 *
 * Writes are buffered and AUX payloads go straight to the fd, so writing
 * millions of records costs little more than the bytes themselves.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The "dynamic" PMU type we claim for arm_spe_0 (sysfs `type`). */
#define PDW_SPE_PMU_TYPE_DEFAULT 8U
#define PDW_MAX_CPUS             256U

struct pdw_config {
        bool pipe;               /* pipe-mode layout (no seeks, features as events) */
        unsigned n_cpus;
        uint32_t spe_pmu_type;
        uint64_t spe_config;     /* arm_spe attr.config (ts_enable, pa_enable...) */
        uint64_t spe_period;
        uint64_t midr;           /* HEADER_CPUID, e.g. Neoverse N1 */
        unsigned n_nodes;        /* NUMA nodes; CPUs split evenly */
        uint64_t mem_block;      /* HEADER_MEM_TOPOLOGY block size */
        unsigned blocks_per_node;
        uint64_t mem_total_kb;
        const char *hostname;
        const char *osrelease;
        const char *arch;        /* "aarch64" makes perf c2c default to peer */
        const char *cpudesc;
        const char *cmdline;     /* one string */
        /*
         * x86 memory sampling instead of SPE, as `perf c2c record` (perf 6.1,
         * tools/perf/builtin-c2c.c with tools/perf/arch/x86/util/mem-events.c)
         * writes it on a Skylake server: attr 0 `cpu/mem-loads,ldlat=N/P`
         * (PERF_TYPE_RAW, config 0x1cd MEM_TRANS_RETIRED.LOAD_LATENCY,
         * config1 = ldlat), attr 1 `cpu/mem-stores/P` (config 0x82d0
         * MEM_INST_RETIRED.ALL_STORES), both precise_ip 3 and sampling
         * IDENTIFIER|IP|TID|TIME|ADDR|CPU|PERIOD|WEIGHT|DATA_SRC|PHYS_ADDR
         * (-W -d --phys-data --sample-cpu); attr 0 also tracks mmap/comm/task.
         * No TIME_CONV, AUXTRACE_INFO or AUXTRACE; samples by pdw_mem_sample().
         */
        bool x86_mem;
        uint64_t mem_ldlat;      /* config1 of mem-loads (30) */
        uint64_t mem_period;     /* sample_period of both events */
        const char *x86_cpuid;   /* HEADER_CPUID, "GenuineIntel,6,85,4" */
};

struct pdw;

void pdw_config_init(struct pdw_config *c);

/* Start writing to fd (which stays owned by the caller). File mode needs a
 * seekable fd (the header is written last, with pwrite). */
int pdw_new(int fd, const struct pdw_config *c, struct pdw **ret);

/* Build id of a mapped file, as perf writes its build-id table
 * (tools/perf/util/header.c write_buildid()): one entry {header (misc
 * PERF_RECORD_MISC_USER | PERF_RECORD_MISC_BUILD_ID_SIZE), pid -1 (the
 * host machine), build_id[24] with the size in byte 20, the file name
 * padded with NULs to NAME_ALIGN (64)}. File mode: collected into the
 * HEADER_BUILD_ID feature section (header type 0). Pipe mode: written at
 * once as a PERF_RECORD_HEADER_BUILD_ID (67) record, so call it just
 * before the file's MMAP2, where `perf inject --buildid-all` puts it (perf
 * 6.1's record writes none in pipe mode). At most 20 id bytes;
 * filename must be the MMAP2's. */
int pdw_build_id(struct pdw *w, const char *filename, const uint8_t *build_id, size_t build_id_size);

/* Side band. cpu is the CPU stamped in the sample_id trailer. */
int pdw_comm(struct pdw *w, uint32_t pid, uint32_t tid, const char *comm, uint64_t time);
int pdw_fork(struct pdw *w, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid, uint64_t time);
int pdw_mmap2(struct pdw *w, uint32_t pid, uint32_t tid, uint64_t addr, uint64_t len, uint64_t pgoff,
              uint32_t prot, uint32_t flags, const char *filename, uint64_t time);
int pdw_itrace_start(struct pdw *w, unsigned cpu, uint32_t pid, uint32_t tid, uint64_t time);

/* One chunk of CPU cpu's AUX stream starting at AUX position aux_offset:
 * PERF_RECORD_AUX then PERF_RECORD_AUXTRACE + payload. len must be a
 * multiple of 8 (perf.data-file-format.txt: AUXTRACE sizes are). */
int pdw_aux(struct pdw *w, unsigned cpu, const void *data, size_t len, uint64_t aux_offset,
            uint64_t time);

/* Optional: first/last sample time for HEADER_SAMPLE_TIME (file mode). */
/* x86 mode: one PERF_RECORD_SAMPLE of attr 0 (store false: mem-loads) or
 * attr 1 (store true: mem-stores), fields in the sample_type order of
 * perf_event_open(2); misc is the cpumode (PERF_RECORD_MISC_USER...). */
int pdw_mem_sample(struct pdw *w, bool store, unsigned cpu, uint32_t pid, uint32_t tid, uint64_t time,
                   uint64_t ip, uint64_t addr, uint64_t data_src, uint64_t weight, uint64_t phys_addr,
                   uint16_t misc);

void pdw_set_sample_time(struct pdw *w, uint64_t first, uint64_t last);

/* Write the features and the header. The writer is unusable afterwards. */
int pdw_finish(struct pdw *w);

struct pdw *pdw_free(struct pdw *w);
