/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * x86 precise memory samples -> the store's record.
 *
 * A PERF_RECORD_SAMPLE of a memory event (Intel PEBS `cpu/mem-loads,ldlat=N/P`
 * and `cpu/mem-stores/P`, as `perf mem record` and `perf c2c record` open
 * them; AMD IBS op with the kernel's DATA_SRC) becomes one struct spe_record,
 * so that the store, /hotlines, /hotpcs and /latency take it unchanged. The
 * sample must carry PERF_SAMPLE_DATA_SRC; IP, TID, TIME, ADDR, CPU, WEIGHT or
 * WEIGHT_STRUCT and PHYS_ADDR are used when present.
 *
 * union perf_mem_data_src (include/uapi/linux/perf_event.h) is decoded the
 * way perf c2c counts it (tools/perf/util/mem-events.c, c2c_decode_stats()),
 * onto the SPE terms of enum spe_data_src:
 *
 *   mem_op LOAD / STORE          op class LDST, SPE_OPF_LOAD / SPE_OPF_STORE;
 *                                anything else (NA, PFETCH, EXEC, none): not a
 *                                memory access, dropped and counted
 *   mem_lock LOCKED              SPE_OPF_ATOMIC added (a locked load stays a load)
 *   lvl HIT|L1, HIT|LFB          L1D (perf's ld_l1hit, ld_fbhit)
 *   a remote cache: lvl REM_CCE1/2, or "mrem" (mem_remote && !mem_hops) with
 *   lvl L2/L3 or a snoop HIT/HITM/snoopx PEER (Skylake's 0x0d: lvl HIT,
 *   LVLNUM ANY_CACHE, REMOTE, HITM; arch/x86/events/intel/ds.c
 *   intel_pmu_pebs_data_source_skl()):
 *                                snoop HIT: SYS_CACHE (rmt_hit, clean; perf
 *                                checks HIT first); else HITM or snoopx PEER:
 *                                REMOTE (rmt_hitm, rmt_peer)
 *   lvl HIT|L2                   L2; with snoopx PEER: PEER_CORE (lcl_peer)
 *   lvl HIT|L3                   snoop HITM or snoopx PEER: PEER_CORE
 *                                (lcl_hitm, lcl_peer), else SYS_CACHE (ld_llchit)
 *   lvl HIT|LOC_RAM              DRAM (lcl_dram)
 *   lvl REM_RAM1/2, or mrem otherwise: DRAM (rmt_dram)
 *   lvl L1 without HIT (a store's L1 MISS): L1D
 *   mem_lvl NA or 0: the same rules over mem_lvl_num (L1, LFB, L2, L3, L4,
 *                                ANY_CACHE, RAM, CXL, PMEM) and mem_remote
 *
 * Where perf counts one sample twice (lvl HIT|L3 with mrem is both lcl_hitm
 * and rmt_hitm in c2c_decode_stats()), a record has one source: mem_remote
 * says remote.
 * So a HITM or peer-cache load is a peer snoop of the store (spe_data_src_peer():
 * PEER_CORE local, REMOTE remote) and /hotlines' classes work unchanged.
 * The store has no remote-DRAM or remote-clean-hit source: those loads
 * count as DRAM and SYS_CACHE (not peer snoops, as perf c2c does not count
 * them as HITM either) and are counted in memsample_stats.remote_dram /
 * remote_clean. Stores keep the level (L1 hit or miss: L1D), or NONE when NA.
 *
 * The weight is the latency (SPE_REC_LAT_TOTAL): on Intel PEBS it is the
 * load's use latency in core cycles (from dispatch until the data can be
 * used: the ldlat threshold applies to it), on AMD IBS the op's data-cache
 * miss latency; it is not SPE's issue-to-complete total latency. A store's
 * weight is taken only when it is not 0 (PEBS stores before Alder Lake
 * report none). Weights above 65535 are clamped and counted.
 *
 * mem_dtlb: HIT or MISS -> SPE_EV_TLB_ACCESS, MISS -> SPE_EV_TLB_WALK. The
 * level adds the SPE cache events the /hotpcs breakdown reads (L1D_ACCESS,
 * L1D_REFILL past L1, LLC_ACCESS at L3 and beyond, LLC_MISS for DRAM,
 * REMOTE_ACCESS, CACHE_DATA_MODIFIED for HITM, RECENTLY_FETCHED for LFB,
 * DATA_SNOOPED for snoop HIT/HITM).
 *
 * The IP's privilege comes from the header's cpumode (PERF_RECORD_MISC_USER:
 * EL0, KERNEL: EL1, hypervisor: EL2), so the store's kernel-address policy
 * applies to x86 samples as to SPE ones.
 *
 * No allocation, no I/O.
 */

#include <stdint.h>

#include "perf-record.h"
#include "spe-rec.h"

struct memsample_stats {
        uint64_t samples;               /* handed to memsample_decode() */
        uint64_t records;               /* became records */
        uint64_t loads, stores;
        uint64_t dropped_no_data_src;   /* the event's sample_type lacks DATA_SRC: not a memory event */
        uint64_t dropped_not_mem;       /* mem_op neither LOAD nor STORE */
        uint64_t no_addr;               /* records without a data address (no ADDR, or 0) */
        uint64_t hitm;                  /* loads with snoop HITM */
        uint64_t peer;                  /* loads that became peer snoops (HITM or snoopx PEER) */
        uint64_t remote_dram;           /* loads from remote DRAM, counted as DRAM */
        uint64_t remote_clean;          /* loads from a remote cache, clean (snoop HIT), counted as SYS_CACHE */
        uint64_t lat_clamped;           /* weights above 65535 */
};

/* The fields of union perf_mem_data_src, unpacked (include/uapi/linux/perf_event.h). */
struct memsample_data_src {
        uint32_t op, lvl, snoop, lock, dtlb, lvl_num, remote, snoopx, blk, hops;
};

void memsample_data_src_unpack(uint64_t v, struct memsample_data_src *ret);

/*
 * The enum spe_data_src a load (is_load) or store with data source v was
 * served from, by the rules above; *ret_peer_rule (may be NULL) is set when
 * the load is a peer snoop (HITM or snoopx PEER).
 */
enum spe_data_src memsample_source(uint64_t v, bool is_load, bool *ret_peer_rule);

/*
 * One sample. Returns 1 with *ret filled (cpu, pc, va, pa, latency,
 * op, source, events; the thread is the sample's tid, rec.context and
 * SPE_REC_CONTEXT set when PERF_SAMPLE_TID is there), 0 when the sample
 * is not a memory access (counted in st), -EINVAL for NULL arguments.
 */
int memsample_decode(const struct perf_data_sample *s, struct spe_record *ret, struct memsample_stats *st);
