/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * x86 memory samples into the store's record (collectors/memsample): each
 * data_src value is built here from the bit layout of union perf_mem_data_src
 * (the PERF_MEM_*_SHIFT and value macros of include/uapi/linux/perf_event.h,
 * through DS() below, not through the decoder), mostly the encodings the
 * kernel writes for PEBS (arch/x86/events/intel/ds.c pebs_data_source[],
 * intel_pmu_pebs_data_source_skl(), precise_store_data()); the expected
 * source is what tools/perf/util/mem-events.c c2c_decode_stats() counts it as.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <linux/perf_event.h>

#include "memsample-decode.h"
#include "perf-record.h"
#include "spe-pkt.h"

/* One field of union perf_mem_data_src at its uapi shift. */
#define F(field, value) ((uint64_t) (value) << PERF_MEM_##field##_SHIFT)
#define OP_LOAD         F(OP, PERF_MEM_OP_LOAD)
#define OP_STORE        F(OP, PERF_MEM_OP_STORE)
#define LVL(v)          F(LVL, v)
#define LVLNUM(v)       F(LVLNUM, v)
#define SNOOP(v)        F(SNOOP, v)
#define SNOOPX(v)       F(SNOOPX, v)
#define REMOTE          F(REMOTE, PERF_MEM_REMOTE_REMOTE)
#define TLB(v)          F(TLB, v)
#define LOCKED          F(LOCK, PERF_MEM_LOCK_LOCKED)

#define ALL_FIELDS (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_CPU | \
                    PERF_SAMPLE_PERIOD | PERF_SAMPLE_WEIGHT | PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_PHYS_ADDR)

static struct perf_data_sample sample(uint64_t data_src, uint64_t weight) {
        return (struct perf_data_sample) {
                .rec = {
                        .type = PERF_RECORD_SAMPLE,
                        .misc = PERF_RECORD_MISC_USER,
                        .sid = { .valid = PERF_DATA_ID_TID | PERF_DATA_ID_CPU | PERF_DATA_ID_TIME,
                                 .pid = 100, .tid = 101, .cpu = 3, .time = 5000 },
                },
                .fields = ALL_FIELDS,
                .ip = 0x401234,
                .addr = 0x7f0000001020,
                .phys_addr = 0x80001020,
                .weight = weight,
                .data_src = data_src,
        };
}

struct expect {
        uint64_t data_src;
        bool store;
        enum spe_data_src source;
        enum spe_peer peer;             /* as the store will count it (spe_data_src_peer() of a load) */
};

/* The c2c buckets, one sample each. */
static const struct expect TABLE[] = {
        /* ds.c 0x01 L1 hit: ld_l1hit */
        { OP_LOAD | LVL(PERF_MEM_LVL_HIT | PERF_MEM_LVL_L1) | LVLNUM(PERF_MEM_LVLNUM_L1) | SNOOP(PERF_MEM_SNOOP_NONE),
          false, SPE_DATA_SRC_L1D, SPE_PEER_NONE },
        /* 0x02 LFB hit: ld_fbhit */
        { OP_LOAD | LVL(PERF_MEM_LVL_HIT | PERF_MEM_LVL_LFB) | LVLNUM(PERF_MEM_LVLNUM_LFB) | SNOOP(PERF_MEM_SNOOP_NONE),
          false, SPE_DATA_SRC_L1D, SPE_PEER_NONE },
        /* 0x03 L2 hit: ld_l2hit */
        { OP_LOAD | LVL(PERF_MEM_LVL_HIT | PERF_MEM_LVL_L2) | LVLNUM(PERF_MEM_LVLNUM_L2) | SNOOP(PERF_MEM_SNOOP_NONE),
          false, SPE_DATA_SRC_L2, SPE_PEER_NONE },
        /* L2 hit with snoopx PEER: lcl_peer */
        { OP_LOAD | LVL(PERF_MEM_LVL_HIT | PERF_MEM_LVL_L2) | LVLNUM(PERF_MEM_LVLNUM_L2) | SNOOPX(PERF_MEM_SNOOPX_PEER),
          false, SPE_DATA_SRC_PEER_CORE, SPE_PEER_LOCAL },
        /* 0x04 L3 hit, 0x06 L3 hit snoop hit: ld_llchit */
        { OP_LOAD | LVL(PERF_MEM_LVL_HIT | PERF_MEM_LVL_L3) | LVLNUM(PERF_MEM_LVLNUM_L3) | SNOOP(PERF_MEM_SNOOP_NONE),
          false, SPE_DATA_SRC_SYS_CACHE, SPE_PEER_NONE },
        { OP_LOAD | LVL(PERF_MEM_LVL_HIT | PERF_MEM_LVL_L3) | LVLNUM(PERF_MEM_LVLNUM_L3) | SNOOP(PERF_MEM_SNOOP_HIT),
          false, SPE_DATA_SRC_SYS_CACHE, SPE_PEER_NONE },
        /* 0x07 L3 hit, snoop HITM: lcl_hitm */
        { OP_LOAD | LVL(PERF_MEM_LVL_HIT | PERF_MEM_LVL_L3) | LVLNUM(PERF_MEM_LVLNUM_L3) | SNOOP(PERF_MEM_SNOOP_HITM),
          false, SPE_DATA_SRC_PEER_CORE, SPE_PEER_LOCAL },
        /* 0x08 L3 miss, remote snoop hit: rmt_hit (clean) */
        { OP_LOAD | LVL(PERF_MEM_LVL_HIT | PERF_MEM_LVL_REM_CCE1) | REMOTE | LVLNUM(PERF_MEM_LVLNUM_L3) |
          SNOOP(PERF_MEM_SNOOP_HIT), false, SPE_DATA_SRC_SYS_CACHE, SPE_PEER_NONE },
        /* 0x09 L3 miss, remote snoop HITM: rmt_hitm */
        { OP_LOAD | LVL(PERF_MEM_LVL_HIT | PERF_MEM_LVL_REM_CCE1) | REMOTE | LVLNUM(PERF_MEM_LVLNUM_L3) |
          SNOOP(PERF_MEM_SNOOP_HITM), false, SPE_DATA_SRC_REMOTE, SPE_PEER_REMOTE },
        /* Skylake 0x0d: lvl HIT only, ANY_CACHE, REMOTE, HITM (mrem): rmt_hitm */
        { OP_LOAD | LVL(PERF_MEM_LVL_HIT) | REMOTE | LVLNUM(PERF_MEM_LVLNUM_ANY_CACHE) | SNOOP(PERF_MEM_SNOOP_HITM),
          false, SPE_DATA_SRC_REMOTE, SPE_PEER_REMOTE },
        /* Skylake 0x0c: ANY_CACHE, REMOTE, snoopx FWD (mrem, no snoop): rmt_dram */
        { OP_LOAD | LVL(PERF_MEM_LVL_HIT) | REMOTE | LVLNUM(PERF_MEM_LVLNUM_ANY_CACHE) | SNOOPX(PERF_MEM_SNOOPX_FWD),
          false, SPE_DATA_SRC_DRAM, SPE_PEER_NONE },
        /* 0x0c local DRAM: lcl_dram */
        { OP_LOAD | LVL(PERF_MEM_LVL_HIT | PERF_MEM_LVL_LOC_RAM) | LVLNUM(PERF_MEM_LVLNUM_RAM) |
          SNOOP(PERF_MEM_SNOOP_NONE | PERF_MEM_SNOOP_MISS), false, SPE_DATA_SRC_DRAM, SPE_PEER_NONE },
        /* 0x0d remote DRAM: rmt_dram */
        { OP_LOAD | LVL(PERF_MEM_LVL_HIT | PERF_MEM_LVL_REM_RAM1) | LVLNUM(PERF_MEM_LVLNUM_RAM) | REMOTE |
          SNOOP(PERF_MEM_SNOOP_NONE | PERF_MEM_SNOOP_MISS), false, SPE_DATA_SRC_DRAM, SPE_PEER_NONE },
        /* mem_lvl NA, LVLNUM only (as AMD IBS fills it): L2 peer, remote peer, local RAM */
        { OP_LOAD | LVL(PERF_MEM_LVL_NA) | LVLNUM(PERF_MEM_LVLNUM_L3) | SNOOPX(PERF_MEM_SNOOPX_PEER),
          false, SPE_DATA_SRC_PEER_CORE, SPE_PEER_LOCAL },
        { OP_LOAD | LVL(PERF_MEM_LVL_NA) | LVLNUM(PERF_MEM_LVLNUM_ANY_CACHE) | REMOTE | SNOOPX(PERF_MEM_SNOOPX_PEER),
          false, SPE_DATA_SRC_REMOTE, SPE_PEER_REMOTE },
        { OP_LOAD | LVL(PERF_MEM_LVL_NA) | LVLNUM(PERF_MEM_LVLNUM_RAM), false, SPE_DATA_SRC_DRAM, SPE_PEER_NONE },
        /* precise_store_data(): STORE | SNOOP NA | LVL L1 | TLB L2 + HIT or MISS; a store is never a peer */
        { OP_STORE | SNOOP(PERF_MEM_SNOOP_NA) | LVL(PERF_MEM_LVL_L1 | PERF_MEM_LVL_HIT) |
          TLB(PERF_MEM_TLB_L2 | PERF_MEM_TLB_HIT), true, SPE_DATA_SRC_L1D, SPE_PEER_NONE },
        { OP_STORE | SNOOP(PERF_MEM_SNOOP_NA) | LVL(PERF_MEM_LVL_L1 | PERF_MEM_LVL_MISS) |
          TLB(PERF_MEM_TLB_L2 | PERF_MEM_TLB_HIT), true, SPE_DATA_SRC_L1D, SPE_PEER_NONE },
        { OP_STORE | LVL(PERF_MEM_LVL_HIT | PERF_MEM_LVL_L3) | SNOOP(PERF_MEM_SNOOP_HITM), true,
          SPE_DATA_SRC_SYS_CACHE, SPE_PEER_NONE },
        /* a store with nothing known (st_na) */
        { OP_STORE | LVL(PERF_MEM_LVL_NA) | SNOOP(PERF_MEM_SNOOP_NA), true, SPE_DATA_SRC_NONE, SPE_PEER_NONE },
};

static void test_table(void **state) {
        struct memsample_stats st = {};
        uint64_t loads = 0, stores = 0, peer = 0;

        for (size_t i = 0; i < sizeof(TABLE) / sizeof(TABLE[0]); i++) {
                const struct expect *e = &TABLE[i];
                struct perf_data_sample s = sample(e->data_src, 77);
                struct spe_record rec;

                assert_int_equal(memsample_decode(&s, &rec, &st), 1);
                /* what the store reads (store.c record_op(), record_peer()) */
                assert_true(rec.present & SPE_REC_OP);
                assert_int_equal(rec.op_class, SPE_OP_CLASS_LDST);
                assert_int_equal(!!(rec.op_flags & SPE_OPF_STORE), e->store);
                assert_int_equal(!!(rec.op_flags & SPE_OPF_LOAD), !e->store);
                assert_int_equal(rec.source, e->source);
                assert_int_equal(!!(rec.present & SPE_REC_SOURCE), e->source != SPE_DATA_SRC_NONE);
                assert_int_equal(e->store ? SPE_PEER_NONE : spe_data_src_peer(rec.source), e->peer);
                assert_int_equal(memsample_source(e->data_src, !e->store, NULL), e->source);
                assert_int_equal(rec.source_raw, e->data_src);
                assert_int_equal(rec.cpu, 3);
                assert_int_equal(rec.context, 101);
                assert_int_equal(rec.pc.addr, 0x401234);
                assert_int_equal(rec.pc.el, 0);
                assert_int_equal(rec.va, 0x7f0000001020);
                assert_int_equal(rec.pa, 0x80001020);
                assert_true(rec.present & SPE_REC_VA && rec.present & SPE_REC_PA && rec.present & SPE_REC_PC);
                assert_true(rec.present & SPE_REC_LAT_TOTAL);
                assert_int_equal(rec.lat_total, 77);
                loads += !e->store;
                stores += e->store;
                peer += e->peer != SPE_PEER_NONE;
        }
        assert_int_equal(st.samples, sizeof(TABLE) / sizeof(TABLE[0]));
        assert_int_equal(st.records, st.samples);
        assert_int_equal(st.loads, loads);
        assert_int_equal(st.stores, stores);
        assert_int_equal(st.peer, peer);
        /* 0x07, 0x09, Skylake 0x0d: loads with snoop HITM (the store's HITM is no load) */
        assert_int_equal(st.hitm, 3);
        assert_int_equal(st.remote_clean, 1);   /* 0x08 */
        assert_int_equal(st.remote_dram, 2);    /* Skylake 0x0c, 0x0d remote DRAM */
        assert_int_equal(st.dropped_not_mem + st.dropped_no_data_src + st.no_addr + st.lat_clamped, 0);
}

static void test_events(void **state) {
        struct memsample_stats st = {};
        struct spe_record rec;
        struct perf_data_sample s;

        /* HITM at L3, TLB miss, locked: a locked load stays a load for the store */
        s = sample(OP_LOAD | LVL(PERF_MEM_LVL_HIT | PERF_MEM_LVL_L3) | SNOOP(PERF_MEM_SNOOP_HITM) |
                           TLB(PERF_MEM_TLB_MISS | PERF_MEM_TLB_L2) | LOCKED, 120);
        assert_int_equal(memsample_decode(&s, &rec, &st), 1);
        assert_true(rec.op_flags & SPE_OPF_ATOMIC);
        assert_true(rec.op_flags & SPE_OPF_LOAD);
        assert_false(rec.op_flags & SPE_OPF_STORE);
        assert_true(rec.events & SPE_EV_BIT(SPE_EV_CACHE_DATA_MODIFIED));
        assert_true(rec.events & SPE_EV_BIT(SPE_EV_DATA_SNOOPED));
        assert_true(rec.events & SPE_EV_BIT(SPE_EV_LLC_ACCESS));
        assert_true(rec.events & SPE_EV_BIT(SPE_EV_L1D_REFILL));
        assert_false(rec.events & SPE_EV_BIT(SPE_EV_LLC_MISS));
        assert_true(rec.events & SPE_EV_BIT(SPE_EV_TLB_ACCESS));
        assert_true(rec.events & SPE_EV_BIT(SPE_EV_TLB_WALK));

        /* L1 hit, TLB hit: no refill, no walk */
        s = sample(OP_LOAD | LVL(PERF_MEM_LVL_HIT | PERF_MEM_LVL_L1) | TLB(PERF_MEM_TLB_HIT | PERF_MEM_TLB_L1), 31);
        assert_int_equal(memsample_decode(&s, &rec, &st), 1);
        assert_false(rec.op_flags & SPE_OPF_ATOMIC);
        assert_true(rec.events & SPE_EV_BIT(SPE_EV_L1D_ACCESS));
        assert_false(rec.events & SPE_EV_BIT(SPE_EV_L1D_REFILL));
        assert_true(rec.events & SPE_EV_BIT(SPE_EV_TLB_ACCESS));
        assert_false(rec.events & SPE_EV_BIT(SPE_EV_TLB_WALK));
        assert_false(rec.events & SPE_EV_BIT(SPE_EV_DATA_SNOOPED));

        /* LFB: recently fetched; remote DRAM: LLC miss and remote access */
        s = sample(OP_LOAD | LVL(PERF_MEM_LVL_HIT | PERF_MEM_LVL_LFB), 40);
        assert_int_equal(memsample_decode(&s, &rec, &st), 1);
        assert_true(rec.events & SPE_EV_BIT(SPE_EV_RECENTLY_FETCHED));
        s = sample(OP_LOAD | LVL(PERF_MEM_LVL_HIT | PERF_MEM_LVL_REM_RAM1) | REMOTE, 400);
        assert_int_equal(memsample_decode(&s, &rec, &st), 1);
        assert_true(rec.events & SPE_EV_BIT(SPE_EV_LLC_MISS));
        assert_true(rec.events & SPE_EV_BIT(SPE_EV_REMOTE_ACCESS));
}

static void test_drops_and_fields(void **state) {
        struct memsample_stats st = {};
        struct spe_record rec;
        struct perf_data_sample s;

        /* not a load or store: prefetch, exec, NA, a data_src of 0 */
        s = sample(F(OP, PERF_MEM_OP_PFETCH) | LVL(PERF_MEM_LVL_HIT | PERF_MEM_LVL_L1), 1);
        assert_int_equal(memsample_decode(&s, &rec, &st), 0);
        s = sample(F(OP, PERF_MEM_OP_EXEC), 1);
        assert_int_equal(memsample_decode(&s, &rec, &st), 0);
        s = sample(F(OP, PERF_MEM_OP_NA), 1);
        assert_int_equal(memsample_decode(&s, &rec, &st), 0);
        s = sample(0, 1);
        assert_int_equal(memsample_decode(&s, &rec, &st), 0);
        assert_int_equal(st.dropped_not_mem, 4);
        /* no DATA_SRC in sample_type (a cpu-clock sample) */
        s = sample(OP_LOAD, 1);
        s.fields &= ~(uint64_t) PERF_SAMPLE_DATA_SRC;
        assert_int_equal(memsample_decode(&s, &rec, &st), 0);
        assert_int_equal(st.dropped_no_data_src, 1);
        assert_int_equal(st.records, 0);

        /* a weight past u16 is clamped and counted */
        s = sample(OP_LOAD | LVL(PERF_MEM_LVL_HIT | PERF_MEM_LVL_LOC_RAM), 70000);
        assert_int_equal(memsample_decode(&s, &rec, &st), 1);
        assert_int_equal(rec.lat_total, UINT16_MAX);
        assert_int_equal(st.lat_clamped, 1);
        /* a store's weight of 0 is no latency; a load's 0 is one */
        s = sample(OP_STORE | LVL(PERF_MEM_LVL_L1 | PERF_MEM_LVL_HIT), 0);
        assert_int_equal(memsample_decode(&s, &rec, &st), 1);
        assert_false(rec.present & SPE_REC_LAT_TOTAL);
        s = sample(OP_LOAD | LVL(PERF_MEM_LVL_L1 | PERF_MEM_LVL_HIT), 0);
        assert_int_equal(memsample_decode(&s, &rec, &st), 1);
        assert_true(rec.present & SPE_REC_LAT_TOTAL);
        /* no ADDR, no PHYS_ADDR, no TID, kernel cpumode */
        s = sample(OP_LOAD | LVL(PERF_MEM_LVL_L1 | PERF_MEM_LVL_HIT), 5);
        s.fields &= ~(uint64_t) (PERF_SAMPLE_ADDR | PERF_SAMPLE_PHYS_ADDR);
        s.rec.sid.valid &= ~(unsigned) PERF_DATA_ID_TID;
        s.rec.misc = PERF_RECORD_MISC_KERNEL;
        assert_int_equal(memsample_decode(&s, &rec, &st), 1);
        assert_false(rec.present & (SPE_REC_VA | SPE_REC_PA | SPE_REC_CONTEXT));
        assert_int_equal(rec.pc.el, 1);
        assert_int_equal(st.no_addr, 1);

        assert_int_equal(memsample_decode(NULL, &rec, &st), -EINVAL);
        assert_int_equal(memsample_decode(&s, NULL, &st), -EINVAL);
        assert_int_equal(memsample_decode(&s, &rec, NULL), -EINVAL);
}

/* A raw PERF_RECORD_SAMPLE with WEIGHT_STRUCT, through the shared parser: var1_dw is the latency. */
static void test_weight_struct(void **state) {
        struct perf_event_attr attr = {
                .type = PERF_TYPE_RAW,
                .size = sizeof(attr),
                .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_ADDR | PERF_SAMPLE_CPU |
                               PERF_SAMPLE_WEIGHT_STRUCT | PERF_SAMPLE_DATA_SRC,
        };
        uint64_t ds = OP_LOAD | LVL(PERF_MEM_LVL_HIT | PERF_MEM_LVL_L3) | LVLNUM(PERF_MEM_LVLNUM_L3) |
                      SNOOP(PERF_MEM_SNOOP_HITM);
        /* header, ip, pid/tid, addr, cpu/res, weight {var1_dw 321, var2_w 9 (retire latency), var3_w 0}, data_src */
        uint8_t raw[8 + 8 + 8 + 8 + 8 + 8 + 8];
        struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .misc = PERF_RECORD_MISC_USER,
                                       .size = sizeof(raw) };
        uint64_t v;
        uint32_t u;
        struct perf_data_record rec = {};
        struct perf_data_sample s = {};
        struct memsample_stats st = {};
        struct spe_record out;
        size_t o = 0;

        memcpy(raw, &h, sizeof(h));
        o = 8;
        v = 0x401000;
        memcpy(raw + o, &v, 8), o += 8;
        u = 7;
        memcpy(raw + o, &u, 4);
        u = 8;
        memcpy(raw + o + 4, &u, 4), o += 8;
        v = 0x7f0000000040;
        memcpy(raw + o, &v, 8), o += 8;
        u = 1;
        memcpy(raw + o, &u, 4);
        u = 0;
        memcpy(raw + o + 4, &u, 4), o += 8;
        v = 321 | (UINT64_C(9) << 32);
        memcpy(raw + o, &v, 8), o += 8;
        memcpy(raw + o, &ds, 8), o += 8;
        assert_int_equal(o, sizeof(raw));

        perf_record_header(raw, 0, &rec);
        assert_int_equal(perf_record_parse_sample(&attr, &rec, &s), 0);
        assert_int_equal(memsample_decode(&s, &out, &st), 1);
        assert_int_equal(out.lat_total, 321);
        assert_int_equal(out.source, SPE_DATA_SRC_PEER_CORE);
        assert_int_equal(out.context, 8);
        assert_int_equal(out.cpu, 1);
        assert_int_equal(out.va, 0x7f0000000040);
        assert_int_equal(st.hitm, 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table),
                cmocka_unit_test(test_events),
                cmocka_unit_test(test_drops_and_fields),
                cmocka_unit_test(test_weight_struct),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
