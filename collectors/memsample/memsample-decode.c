/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "memsample-decode.h"

#include <errno.h>
#include <string.h>

/*
 * union perf_mem_data_src, little-endian bit layout (include/uapi/linux/perf_event.h):
 * mem_op:5 at PERF_MEM_OP_SHIFT (0), mem_lvl:14 at PERF_MEM_LVL_SHIFT (5),
 * mem_snoop:5 at PERF_MEM_SNOOP_SHIFT (19), mem_lock:2 at PERF_MEM_LOCK_SHIFT (24),
 * mem_dtlb:7 at PERF_MEM_TLB_SHIFT (26), mem_lvl_num:4 at PERF_MEM_LVLNUM_SHIFT (33),
 * mem_remote:1 at PERF_MEM_REMOTE_SHIFT (37), mem_snoopx:2 at PERF_MEM_SNOOPX_SHIFT (38),
 * mem_blk:3 at PERF_MEM_BLK_SHIFT (40), mem_hops:3 at PERF_MEM_HOPS_SHIFT (43).
 */
#define FIELD(v, shift, bits) ((uint32_t) (((v) >> (shift)) & ((UINT64_C(1) << (bits)) - 1)))

void memsample_data_src_unpack(uint64_t v, struct memsample_data_src *ret) {
        *ret = (struct memsample_data_src) {
                .op = FIELD(v, PERF_MEM_OP_SHIFT, 5),
                .lvl = FIELD(v, PERF_MEM_LVL_SHIFT, 14),
                .snoop = FIELD(v, PERF_MEM_SNOOP_SHIFT, 5),
                .lock = FIELD(v, PERF_MEM_LOCK_SHIFT, 2),
                .dtlb = FIELD(v, PERF_MEM_TLB_SHIFT, 7),
                .lvl_num = FIELD(v, PERF_MEM_LVLNUM_SHIFT, 4),
                .remote = FIELD(v, PERF_MEM_REMOTE_SHIFT, 1),
                .snoopx = FIELD(v, PERF_MEM_SNOOPX_SHIFT, 2),
                .blk = FIELD(v, PERF_MEM_BLK_SHIFT, 3),
                .hops = FIELD(v, PERF_MEM_HOPS_SHIFT, 3),
        };
}

/* What the level and snoop fields say, before they become one enum spe_data_src. */
enum where {
        W_NONE = 0,
        W_L1,           /* L1 or fill buffer */
        W_LFB,
        W_L2,
        W_L3,
        W_LOC_RAM,
        W_REM_CACHE,
        W_REM_RAM,
};

/*
 * The level from mem_lvl, in the order of tools/perf/util/mem-events.c,
 * c2c_decode_stats(): the HIT levels L1, LFB, L2, L3, LOC_RAM, then REM_RAM1/2
 * or "mrem" (mem_remote && !mem_hops, "Skylake might report unknown remote
 * level via this bit"), then REM_CCE1/2 or mrem for a remote cache.
 * Falls back to mem_lvl_num (PERF_MEM_LVLNUM_*) when mem_lvl is NA or 0:
 * kernels fill both for Intel (arch/x86/events/intel/ds.c) but only
 * mem_lvl_num for some sources (AMD IBS, arch/x86/events/amd/ibs.c).
 */
static enum where where_of(const struct memsample_data_src *d) {
        bool mrem = d->remote && !d->hops;
        uint32_t lvl = d->lvl;

        if (lvl != 0 && lvl != PERF_MEM_LVL_NA) {
                /* c2c_decode_stats() counts a HIT|L3 with mrem both as lcl_hitm and
                 * rmt_hitm; one record has one source, and mem_remote says remote. */
                bool rem_cache = (lvl & (PERF_MEM_LVL_REM_CCE1 | PERF_MEM_LVL_REM_CCE2)) ||
                                 (mrem && ((lvl & (PERF_MEM_LVL_L2 | PERF_MEM_LVL_L3)) ||
                                           (d->snoop & (PERF_MEM_SNOOP_HIT | PERF_MEM_SNOOP_HITM)) ||
                                           (d->snoopx & PERF_MEM_SNOOPX_PEER)));

                if (lvl & PERF_MEM_LVL_HIT) {
                        if (lvl & PERF_MEM_LVL_L1)
                                return W_L1;
                        if (lvl & PERF_MEM_LVL_LFB)
                                return W_LFB;
                }
                if (rem_cache)
                        return W_REM_CACHE;
                if (lvl & PERF_MEM_LVL_HIT) {
                        if (lvl & PERF_MEM_LVL_L2)
                                return W_L2;
                        if (lvl & PERF_MEM_LVL_L3)
                                return W_L3;
                        if (lvl & PERF_MEM_LVL_LOC_RAM)
                                return W_LOC_RAM;
                }
                if ((lvl & (PERF_MEM_LVL_REM_RAM1 | PERF_MEM_LVL_REM_RAM2)) || mrem)
                        return W_REM_RAM;
                if (lvl & PERF_MEM_LVL_L1)      /* L1 MISS: stores (st_l1miss) */
                        return W_L1;
                return W_NONE;
        }
        switch (d->lvl_num) {
        case PERF_MEM_LVLNUM_L1:
                return W_L1;
        case PERF_MEM_LVLNUM_LFB:
                return W_LFB;
        case PERF_MEM_LVLNUM_L2:
                return d->remote ? W_REM_CACHE : W_L2;
        case PERF_MEM_LVLNUM_L3:
        case PERF_MEM_LVLNUM_L4:
        case PERF_MEM_LVLNUM_ANY_CACHE:
                return d->remote ? W_REM_CACHE : W_L3;
        case PERF_MEM_LVLNUM_RAM:
        case PERF_MEM_LVLNUM_CXL:
        case PERF_MEM_LVLNUM_PMEM:
                return d->remote ? W_REM_RAM : W_LOC_RAM;
        default:
                return W_NONE;
        }
}

/* The snoop that makes a load a peer transfer: snoop HITM (perf c2c lcl_hitm/rmt_hitm) or snoopx PEER (lcl_peer/rmt_peer). */
static bool is_peer_snoop(const struct memsample_data_src *d) {
        return (d->snoop & PERF_MEM_SNOOP_HITM) || (d->snoopx & PERF_MEM_SNOOPX_PEER);
}

static enum spe_data_src source_of(const struct memsample_data_src *d, enum where w, bool is_load,
                                   bool *ret_peer) {
        bool peer = is_load && is_peer_snoop(d);

        if (ret_peer)
                *ret_peer = false;
        switch (w) {
        case W_L1:
        case W_LFB:
                return SPE_DATA_SRC_L1D;
        case W_L2:
                /* c2c_decode_stats(): lvl HIT|L2 with snoopx PEER is lcl_peer. */
                if (peer && (d->snoopx & PERF_MEM_SNOOPX_PEER)) {
                        if (ret_peer)
                                *ret_peer = true;
                        return SPE_DATA_SRC_PEER_CORE;
                }
                return SPE_DATA_SRC_L2;
        case W_L3:
                /* lvl HIT|L3: HITM is lcl_hitm, snoopx PEER lcl_peer, else ld_llchit. */
                if (peer) {
                        if (ret_peer)
                                *ret_peer = true;
                        return SPE_DATA_SRC_PEER_CORE;
                }
                return SPE_DATA_SRC_SYS_CACHE;
        case W_LOC_RAM:
                return SPE_DATA_SRC_DRAM;
        case W_REM_CACHE:
                /* REM_CCE1/2 or mrem: snoop HIT is rmt_hit (checked first, as perf does),
                 * else HITM rmt_hitm, else snoopx PEER rmt_peer. */
                if (peer && !(d->snoop & PERF_MEM_SNOOP_HIT)) {
                        if (ret_peer)
                                *ret_peer = true;
                        return SPE_DATA_SRC_REMOTE;
                }
                return SPE_DATA_SRC_SYS_CACHE;
        case W_REM_RAM:
                return SPE_DATA_SRC_DRAM;
        default:
                return SPE_DATA_SRC_NONE;
        }
}

enum spe_data_src memsample_source(uint64_t v, bool is_load, bool *ret_peer_rule) {
        struct memsample_data_src d;

        memsample_data_src_unpack(v, &d);
        return source_of(&d, where_of(&d), is_load, ret_peer_rule);
}

/* SPE event bits for the /hotpcs breakdown (spe-pkt.h SPE_EV_*), from the level, snoop and TLB fields. */
static uint64_t events_of(const struct memsample_data_src *d, enum where w) {
        uint64_t ev = SPE_EV_BIT(SPE_EV_RETIRED);

        if (w != W_NONE)
                ev |= SPE_EV_BIT(SPE_EV_L1D_ACCESS);
        if (w == W_LFB)
                ev |= SPE_EV_BIT(SPE_EV_RECENTLY_FETCHED);
        if (w >= W_L2 || (w == W_L1 && (d->lvl & PERF_MEM_LVL_MISS)))
                ev |= SPE_EV_BIT(SPE_EV_L1D_REFILL);
        if (w >= W_L3)
                ev |= SPE_EV_BIT(SPE_EV_LLC_ACCESS);
        if (w == W_LOC_RAM || w == W_REM_RAM)
                ev |= SPE_EV_BIT(SPE_EV_LLC_MISS);
        if (w == W_REM_CACHE || w == W_REM_RAM || d->remote)
                ev |= SPE_EV_BIT(SPE_EV_REMOTE_ACCESS);
        if (d->snoop & PERF_MEM_SNOOP_HITM)
                ev |= SPE_EV_BIT(SPE_EV_CACHE_DATA_MODIFIED);
        if (d->snoop & (PERF_MEM_SNOOP_HIT | PERF_MEM_SNOOP_HITM))
                ev |= SPE_EV_BIT(SPE_EV_DATA_SNOOPED);
        if (d->dtlb & (PERF_MEM_TLB_HIT | PERF_MEM_TLB_MISS))
                ev |= SPE_EV_BIT(SPE_EV_TLB_ACCESS);
        if (d->dtlb & PERF_MEM_TLB_MISS)
                ev |= SPE_EV_BIT(SPE_EV_TLB_WALK);
        return ev;
}

/* perf_event_open(2) "misc": the cpumode of the sample's IP, as an exception level. */
static uint8_t el_of(uint16_t misc) {
        switch (misc & PERF_RECORD_MISC_CPUMODE_MASK) {
        case PERF_RECORD_MISC_KERNEL:
        case PERF_RECORD_MISC_GUEST_KERNEL:
                return 1;
        case PERF_RECORD_MISC_HYPERVISOR:
                return 2;
        default:
                return 0;
        }
}

int memsample_decode(const struct perf_data_sample *s, struct spe_record *ret, struct memsample_stats *st) {
        struct memsample_data_src d;
        enum where w;
        bool is_load, peer = false;

        if (!s || !ret || !st)
                return -EINVAL;
        st->samples++;
        if (!(s->fields & PERF_SAMPLE_DATA_SRC)) {
                st->dropped_no_data_src++;
                return 0;
        }
        memsample_data_src_unpack(s->data_src, &d);
        /* mem_op: a sample that is neither a load nor a store is no memory access of ours
         * (c2c_decode_stats() counts only LOAD and STORE too; PFETCH, EXEC, NA fall out). */
        if (d.op & PERF_MEM_OP_LOAD)
                is_load = true;
        else if (d.op & PERF_MEM_OP_STORE)
                is_load = false;
        else {
                st->dropped_not_mem++;
                return 0;
        }

        memset(ret, 0, sizeof(*ret));
        w = where_of(&d);
        ret->present = SPE_REC_OP | SPE_REC_EVENTS;
        ret->op_class = SPE_OP_CLASS_LDST;
        ret->op_subclass = SPE_OP_SUB_LDST_GP_REG;
        ret->op_flags = is_load ? SPE_OPF_LOAD : SPE_OPF_STORE;
        if (d.lock & PERF_MEM_LOCK_LOCKED)
                ret->op_flags |= SPE_OPF_ATOMIC;
        ret->events = events_of(&d, w);
        ret->source_raw = s->data_src;
        ret->source = (uint8_t) source_of(&d, w, is_load, &peer);
        if (ret->source != SPE_DATA_SRC_NONE)
                ret->present |= SPE_REC_SOURCE;
        ret->cpu = (s->rec.sid.valid & PERF_DATA_ID_CPU) ? s->rec.sid.cpu : 0;

        if (s->fields & PERF_SAMPLE_IP) {
                ret->present |= SPE_REC_PC;
                ret->pc.addr = s->ip;
                ret->pc.el = el_of(s->rec.misc);
        }
        if ((s->fields & PERF_SAMPLE_ADDR) && s->addr != 0) {
                ret->present |= SPE_REC_VA;
                ret->va = s->addr;
        } else
                st->no_addr++;
        if ((s->fields & PERF_SAMPLE_PHYS_ADDR) && s->phys_addr != 0) {
                ret->present |= SPE_REC_PA;
                ret->pa = s->phys_addr;
        }
        if (s->rec.sid.valid & PERF_DATA_ID_TID) {
                ret->present |= SPE_REC_CONTEXT;
                ret->context = s->rec.sid.tid;
                ret->context_el = 1;
        }
        /* PERF_SAMPLE_WEIGHT or WEIGHT_STRUCT's var1_dw (perf-record.h): the latency. */
        if ((s->fields & (PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT)) && (is_load || s->weight != 0)) {
                ret->present |= SPE_REC_LAT_TOTAL;
                if (s->weight > UINT16_MAX) {
                        ret->lat_total = UINT16_MAX;
                        st->lat_clamped++;
                } else
                        ret->lat_total = (uint16_t) s->weight;
        }

        st->records++;
        if (is_load) {
                st->loads++;
                st->hitm += !!(d.snoop & PERF_MEM_SNOOP_HITM);
                st->peer += peer;
                st->remote_dram += w == W_REM_RAM;
                st->remote_clean += w == W_REM_CACHE && !peer;
        } else
                st->stores++;
        return 1;
}
