/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * SPE record decoder on whatever CPU runs this program (tests/spe/
 * spe-arm64-vm-test.py runs it on the host and, cross-compiled statically,
 * on a real arm64 kernel under qemu). libc only, no cmocka, no files: the
 * VM has nothing but this binary.
 *
 *  1. A seeded, deterministic stream of SPE records is encoded here from
 *     the packet format (Arm ARM D10, the packet sections), while a
 *     small model of the decoder contract (spe-rec.h) computes the records
 *     and statistics the decoder must produce: Neoverse N1 64-byte
 *     fixed-slot records, packets back to back, padding runs of every
 *     length 1..40 at every alignment inside and between records, extended
 *     headers, unknown indexes, the "20 00" alignment pseudo packet,
 *     garbage (bad headers and bad extended headers), stray terminators,
 *     END and TIMESTAMP terminators, a record cut at the end of the stream.
 *  2. It is decoded (i) in large buffers, (ii) in chunks of 1..23 bytes
 *     copied to scratch buffers at varying alignment (chunks below 16 bytes
 *     take the decoder's checked slow path, so this compares the fast path,
 *     with its select_nz()/zero_run() padding skip, against the slow path
 *     on this CPU) and (iii) in chunks of 24..4096 bytes. Every field of
 *     every record, the statistics and the final decoder state must agree
 *     between the modes and with the model.
 *  3. The two real 64-byte WindowsPerf captures (shared/testdata/spe/
 *     spe-b1-ts{0,1}.data, given as hex by -0/-1) are decoded and checked
 *     against their CSV oracle.
 *  4. One line "spe-arm64: records N packets N bytes N ... stream 0x...
 *     hash 0x..." with the statistics, an FNV-1a hash of the generated
 *     stream (tells a non-portable generator from a non-portable decoder)
 *     and one over all decoded fields in a fixed order: the same on every
 *     architecture when the decoder is portable.
 *
 * Usage: spe-arm64-driver [-n RECORDS] [-s SEED]
 * Prints PASS/FAIL lines; exits 0 when everything passes, 1 otherwise.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "macro.h"
#include "spe-enc.h"
#include "spe-rec.h"
#include "spe-record-fields.h"
#include "vm-check.h"

#define MIDR_N1 UINT64_C(0x414fd0c1)
#define TEST_CPU 3U
#define DEFAULT_RECORDS 200000U
#define DEFAULT_SEED UINT64_C(0x5be0a64d3c0de001)
#define MAX_PAD_RUN 40U
#define MAX_REPORTS 10U


static double now_s(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static void *xrealloc(void *p, size_t n) {
        void *q = realloc(p, n);

        if (!q) {
                printf("FAIL out of memory (%zu bytes)\n", n);
                exit(1);
        }
        return q;
}

/* ---------------------------------------------------------------------
 * Deterministic PRNG (splitmix64): same sequence on every architecture.
 */
static uint64_t rng_state;

static uint64_t rnd64(void) {
        uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));

        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

/* Uniform enough in [0, n) for test data (n small). */
static unsigned rnd(unsigned n) {
        return (unsigned) (rnd64() % n);
}

static bool chance(unsigned percent) {
        return rnd(100) < percent;
}

/* ---------------------------------------------------------------------
 * Header classification written from Arm ARM D10 "Packet headers" (not from spe-pkt.c):
 * picks the garbage bytes, and is cross-checked against spe_hdr_table.
 */
static bool hdr_valid(unsigned h) {
        return h == 0x00 || h == 0x01 || h == 0x71 ||
               (h & 0xCF) == 0x42 || (h & 0xCF) == 0x43 ||
               (h & 0xFC) == 0x64 || (h & 0xFC) == 0x48 || (h & 0xFC) == 0x20 ||
               (h & 0xF8) == 0xB0 || (h & 0xF8) == 0x98;
}

static bool hdr_addr_or_counter(unsigned h) {
        return (h & 0xF8) == 0xB0 || (h & 0xF8) == 0x98;
}

static uint8_t bad_bytes[256];
static unsigned n_bad_bytes;

/* ---------------------------------------------------------------------
 * The generator: appends packets to the stream and runs the model of the
 * decoder contract (spe-rec.h) alongside, producing the expected records,
 * every field of them.
 */
struct gen {
        uint8_t *buf;
        size_t len, cap;

        struct spe_record cur;          /* the record the decoder is building */
        bool started;                   /* cur holds at least one packet */
        bool after_error;
        struct spe_record *exp;         /* expected records */
        size_t nexp, capexp;
        struct spe_decoder_stats st;    /* expected statistics */
        size_t carry_at_end;            /* bytes of the packet cut at the end */
};

static struct gen g;

static void put(uint8_t b) {
        if (g.len == g.cap) {
                g.cap = g.cap ? 2 * g.cap : 1U << 20;
                g.buf = xrealloc(g.buf, g.cap);
        }
        g.buf[g.len++] = b;
}

static void put_le(uint64_t v, unsigned n) {
        for (unsigned i = 0; i < n; i++)
                put((uint8_t) (v >> (8 * i)));
}

static void m_reset(void) {
        memset(&g.cur, 0, sizeof(g.cur));
        g.cur.cpu = TEST_CPU;
        g.started = false;
}

static void m_present(uint32_t bit) {
        if (g.cur.present & bit) {
                g.st.duplicate_pkts++;
                g.cur.flags |= SPE_REC_F_DUPLICATE;
        }
        g.cur.present |= bit;
}

/* A decoded packet that is not padding. */
static void m_pkt(void) {
        g.st.packets++;
        g.started = true;
}

static void m_unknown(void) {
        g.st.unknown_index++;
        g.cur.flags |= SPE_REC_F_UNKNOWN_PKT;
}

static void m_ip(struct spe_ip *ip, uint64_t v) {
        unsigned el = (unsigned) (v >> 61) & 3U, ns = (unsigned) (v >> 63);

        ip->addr = v & UINT64_C(0x00FFFFFFFFFFFFFF);
        if (ns && (el == 1 || el == 2))
                ip->addr |= UINT64_C(0xFF00000000000000);
        ip->el = (uint8_t) el;
        ip->ns = (uint8_t) ns;
        ip->nse = (uint8_t) ((v >> 60) & 1U);
}

/* A terminator was decoded (spe-rec.h: no record when nothing came before it). */
static void m_end_record(void) {
        if (!g.started) {
                g.st.empty_records++;
                m_reset();
                return;
        }
        if (g.after_error) {
                g.cur.flags |= SPE_REC_F_AFTER_ERROR;
                g.after_error = false;
        }
        if (g.nexp == g.capexp) {
                g.capexp = g.capexp ? 2 * g.capexp : 4096;
                g.exp = xrealloc(g.exp, g.capexp * sizeof(*g.exp));
        }
        g.exp[g.nexp++] = g.cur;
        g.st.records++;
        m_reset();
}

/* An undecodable byte: skipped, the record in progress dropped. */
static void m_bad(bool ext) {
        if (ext)
                g.st.bad_ext_header++;
        else
                g.st.bad_header++;
        if (g.started) {
                g.st.dropped_records++;
                m_reset();
        }
        g.after_error = true;
}

/* --- packet encoders (Arm ARM D10, the packet sections) --- */

/* One packet from the generator's encoder (tests/spegen/spe-enc.c, written from the spec). */
static void put_pkt(const uint8_t *b, size_t n) {
        for (size_t i = 0; i < n; i++)
                put(b[i]);
}

static void e_pad(unsigned n) {
        for (unsigned i = 0; i < n; i++)
                put(0x00);
}

static void e_pad_to(size_t off) {
        while (g.len < off)
                put(0x00);
}

/* Address packet; the extended form is forced for index >= 8. */
static void e_addr(unsigned idx, uint64_t v, bool ext) {
        uint8_t b[SPE_ENC_MAX_PKT];

        put_pkt(b, spe_enc_address(b, idx, v, ext));

        m_pkt();
        switch (idx) {
        case 0:
                m_present(SPE_REC_PC);
                m_ip(&g.cur.pc, v);
                break;
        case 1:
                m_present(SPE_REC_BR_TGT);
                m_ip(&g.cur.br_tgt, v);
                break;
        case 2: {
                uint64_t a = v & UINT64_C(0x00FFFFFFFFFFFFFF);

                m_present(SPE_REC_VA);
                if (((a >> 52) & 0xF) == 0xF)
                        a |= UINT64_C(0xFF00000000000000);
                g.cur.va = a;
                g.cur.va_tag = (uint8_t) (v >> 56);
                break;
        }
        case 3:
                m_present(SPE_REC_PA);
                g.cur.pa = v & UINT64_C(0x00FFFFFFFFFFFFFF);
                g.cur.pa_ns = (uint8_t) (v >> 63);
                g.cur.pa_ch = (uint8_t) ((v >> 62) & 1U);
                g.cur.pa_nse = (uint8_t) ((v >> 60) & 1U);
                g.cur.pa_pat = (uint8_t) ((v >> 56) & 0xFU);
                break;
        case 4:
                m_present(SPE_REC_PBT);
                m_ip(&g.cur.pbt, v);
                break;
        default:
                m_unknown();
                break;
        }
}

static void e_counter(unsigned idx, uint16_t v, bool ext) {
        uint8_t b[SPE_ENC_MAX_PKT];

        put_pkt(b, spe_enc_counter(b, idx, v, ext));

        m_pkt();
        switch (idx) {
        case 0:
                m_present(SPE_REC_LAT_TOTAL);
                g.cur.lat_total = v;
                break;
        case 1:
                m_present(SPE_REC_LAT_ISSUE);
                g.cur.lat_issue = v;
                break;
        case 2:
                m_present(SPE_REC_LAT_XLAT);
                g.cur.lat_xlat = v;
                break;
        default:
                m_unknown();
                break;
        }
}

static uint64_t trunc_bytes(uint64_t v, unsigned n) {
        return n >= 8 ? v : v & ((UINT64_C(1) << (8 * n)) - 1);
}

/* Events, payload 1 << sz bytes (header 0x42/0x52/0x62/0x72). */
static void e_events(unsigned sz, uint64_t v) {
        unsigned n = 1U << sz;
        uint8_t b[SPE_ENC_MAX_PKT];

        put_pkt(b, spe_enc_events(b, v, n));
        m_pkt();
        m_present(SPE_REC_EVENTS);
        g.cur.events = trunc_bytes(v, n);
}

/* Data source (0x43/0x53/0x63/0x73); "common" encoding for the N1 MIDR (§7.1). */
static void e_source(unsigned sz, uint64_t v) {
        static const uint8_t common[16] = {
                [0x0] = SPE_DATA_SRC_L1D,         [0x8] = SPE_DATA_SRC_L2,
                [0x9] = SPE_DATA_SRC_PEER_CORE,   [0xA] = SPE_DATA_SRC_LOCAL_CLUSTER,
                [0xB] = SPE_DATA_SRC_SYS_CACHE,   [0xC] = SPE_DATA_SRC_PEER_CLUSTER,
                [0xD] = SPE_DATA_SRC_REMOTE,      [0xE] = SPE_DATA_SRC_DRAM,
        };
        unsigned n = 1U << sz;
        uint64_t raw = trunc_bytes(v, n);
        uint8_t b[SPE_ENC_MAX_PKT];

        put_pkt(b, spe_enc_data_source(b, v, n));
        m_pkt();
        m_present(SPE_REC_SOURCE);
        g.cur.source_raw = raw;
        g.cur.source = raw < 16 && common[raw] ? common[raw] : SPE_DATA_SRC_UNKNOWN;
}

/* Context 0x64..0x67: index 0 = EL1, 1 = EL2, 2..3 undefined. */
static void e_context(unsigned idx, uint32_t v) {
        uint8_t b[SPE_ENC_MAX_PKT];

        put_pkt(b, spe_enc_context(b, idx, v));
        m_pkt();
        if (idx > 1) {
                m_unknown();
                return;
        }
        m_present(SPE_REC_CONTEXT);
        g.cur.context = v;
        g.cur.context_el = (uint8_t) (idx + 1);
}

/* bit of v as flag f */
static uint32_t m_bit(uint8_t v, unsigned bit, uint32_t f) {
        return (v >> bit) & 1U ? f : 0U;
}

/*
 * Operation type, written from Arm ARM D10 "Operation Type packet" as a chain of tests in the
 * order of its tables (the decoder uses a table built at compile time).
 * Payload bits are named by number as the spec's tables give them.
 */
static void m_op_other(uint8_t v) {
        uint8_t evl = (uint8_t) ((v >> 4) & 7U);

        if ((v & 0xF8) == 0x00) {               /* §6.1 generic: COND bit0, FP bit1, ASE bit2 */
                g.cur.op_subclass = SPE_OP_SUB_OTHER;
                g.cur.op_flags = m_bit(v, 0, SPE_OPF_COND) | m_bit(v, 1, SPE_OPF_FP) | m_bit(v, 2, SPE_OPF_SIMD);
        } else if ((v & 0x89) == 0x08) {        /* SVE: EVL = 32 << bits[6:4], PRED bit2, FP bit1 */
                g.cur.op_subclass = SPE_OP_SUB_SVE_OTHER;
                g.cur.op_flags = SPE_OPF_SVE | m_bit(v, 1, SPE_OPF_FP) | m_bit(v, 2, SPE_OPF_PRED);
                g.cur.op_evl_bits_log2 = (uint8_t) (5U + evl);
        } else if ((v & 0x89) == 0x88) {        /* SME: ETS = 128 << (bits[6:4] << 1 | bit2), FP bit1 */
                g.cur.op_subclass = SPE_OP_SUB_SME_OTHER;
                g.cur.op_flags = SPE_OPF_SME | m_bit(v, 1, SPE_OPF_FP);
                g.cur.op_evl_bits_log2 = (uint8_t) (7U + ((unsigned) evl << 1) + ((v >> 2) & 1U));
        }
}

static void m_op_ldst(uint8_t v) {
        /* §6.2: bit0 store, else load, whatever the subclass. */
        g.cur.op_flags = (v & 1U) ? SPE_OPF_STORE : SPE_OPF_LOAD;
        if ((v & 0xE2) == 0x02) {
                g.cur.op_subclass = SPE_OP_SUB_LDST_EXT;
                g.cur.op_flags |= m_bit(v, 2, SPE_OPF_ATOMIC) | m_bit(v, 3, SPE_OPF_EXCLUSIVE) |
                                  m_bit(v, 4, SPE_OPF_ACQREL);
        } else if ((v & 0xFE) == 0x04) {
                g.cur.op_subclass = SPE_OP_SUB_LDST_SIMD_FP;
                g.cur.op_flags |= SPE_OPF_SIMD;
        } else if ((v & 0xFE) == 0x00) {
                g.cur.op_subclass = SPE_OP_SUB_LDST_GP_REG;
        } else if ((v & 0xFE) == 0x10) {
                g.cur.op_subclass = SPE_OP_SUB_LDST_UNSPEC_REG;
                g.cur.op_flags |= SPE_OPF_UNSPEC_REG;
        } else if ((v & 0xFE) == 0x30) {
                g.cur.op_subclass = SPE_OP_SUB_LDST_NV_SYSREG;
                g.cur.op_flags |= SPE_OPF_NV_SYSREG;
        } else if ((v & 0xFE) == 0x14) {
                g.cur.op_subclass = SPE_OP_SUB_LDST_MTE_TAG;
                g.cur.op_flags |= SPE_OPF_MTE_TAG;
        } else if ((v & 0xFE) == 0x20) {
                g.cur.op_subclass = SPE_OP_SUB_LDST_MEMCPY;
                g.cur.op_flags |= SPE_OPF_MEMCPY;
        } else if (v == 0x25) {
                g.cur.op_subclass = SPE_OP_SUB_LDST_MEMSET;
                g.cur.op_flags |= SPE_OPF_MEMSET;
        } else if ((v & 0x0A) == 0x08) {        /* SVE/SME register: EVL bits[6:4], PRED bit2, SG bit7 */
                g.cur.op_subclass = SPE_OP_SUB_LDST_SVE_SME;
                g.cur.op_flags |= SPE_OPF_SVE | m_bit(v, 2, SPE_OPF_PRED) | m_bit(v, 7, SPE_OPF_SG);
                g.cur.op_evl_bits_log2 = (uint8_t) (5U + ((v >> 4) & 7U));
        } else if ((v & 0xFA) == 0x40) {
                g.cur.op_subclass = SPE_OP_SUB_LDST_GCS;
                g.cur.op_flags |= SPE_OPF_GCS | m_bit(v, 2, SPE_OPF_GCS_COMM);
        }
}

static void m_op_branch(uint8_t v) {
        /* §6.3: COND bit0, IND bit1, GCS bit2, call/return hint bits[4:3]. */
        static const uint32_t cr[4] = { 0U, SPE_OPF_CALL, SPE_OPF_RET, SPE_OPF_CR_OTHER };

        g.cur.op_subclass = SPE_OP_SUB_BRANCH;
        g.cur.op_flags = SPE_OPF_BRANCH | m_bit(v, 0, SPE_OPF_COND) | m_bit(v, 1, SPE_OPF_INDIRECT) |
                         m_bit(v, 2, SPE_OPF_GCS) | cr[(v >> 3) & 3U];
}

static void e_op(unsigned cls, uint8_t v) {
        uint8_t b[SPE_ENC_MAX_PKT];

        put_pkt(b, spe_enc_op_type(b, cls, v));
        m_pkt();
        m_present(SPE_REC_OP);
        g.cur.op_class = (uint8_t) cls;
        g.cur.op_raw = v;
        /* A second op packet replaces the first entirely (the last one is kept). */
        g.cur.op_subclass = SPE_OP_SUB_UNKNOWN;
        g.cur.op_flags = 0;
        g.cur.op_evl_bits_log2 = 0;
        switch (cls) {
        case 0:
                m_op_other(v);
                break;
        case 1:
                m_op_ldst(v);
                break;
        case 2:
                m_op_branch(v);
                break;
        default:                                /* reserved class 3: nothing decoded */
                g.st.reserved_op++;
                break;
        }
}

static void e_ts(uint64_t v) {
        uint8_t b[SPE_ENC_MAX_PKT];

        put_pkt(b, spe_enc_timestamp(b, v));
        g.st.packets++;
        m_present(SPE_REC_TIMESTAMP);
        g.cur.timestamp = v;
        m_end_record();
}

static void e_end(void) {
        uint8_t b[SPE_ENC_MAX_PKT];

        put_pkt(b, spe_enc_end(b));
        g.st.packets++;
        g.cur.flags |= SPE_REC_F_END;
        m_end_record();
}

static void e_term(void) {
        if (chance(50))
                e_ts(rnd64());
        else
                e_end();
}

/* "2n 00": Linux's alignment pseudo packet, decoded as 2 bytes of padding. */
static void e_align(void) {
        put((uint8_t) (0x20 | rnd(4)));
        put(0x00);
        g.st.align_pkts++;
}

static void e_garbage(void) {
        put(bad_bytes[rnd(n_bad_bytes)]);
        m_bad(false);
}

/*
 * An extended prefix whose second byte is neither an address/counter
 * header nor 00: a bad extended header. The byte after it is decoded as a
 * header of its own, so the caller must emit a packet that does not start
 * with 00 or a short address/counter header right after.
 */
static void e_bad_ext(void) {
        put((uint8_t) (0x20 | rnd(4)));
        m_bad(true);
}

/* --- payloads --- */

static uint64_t ip_payload(void) {
        unsigned el, ns = 1;
        uint64_t a;

        if (chance(25))
                return rnd64();
        el = chance(70) ? 0 : 1 + rnd(2);
        a = el ? UINT64_C(0x00FF800000000000) | (rnd64() & UINT64_C(0x7FFFFFFFFFFC))
               : UINT64_C(0x0000400000000000) | (rnd64() & UINT64_C(0x3FFFFFFFFFFC));
        if (chance(5))
                ns = 0;
        return a | (uint64_t) el << 61 | (uint64_t) ns << 63;
}

static uint64_t va_payload(void) {
        uint64_t a;

        if (chance(25))
                return rnd64();
        if (chance(20))
                a = UINT64_C(0x00FFF00000000000) | (rnd64() & UINT64_C(0x0FFFFFFFFFF8));
        else
                a = rnd64() & UINT64_C(0x0000FFFFFFFFFFF8);
        if (chance(30))
                a |= (uint64_t) rnd(256) << 56; /* TBI / MTE tag */
        return a;
}

static uint64_t pa_payload(void) {
        uint64_t a = rnd64() & UINT64_C(0x000000FFFFFFFFC0);

        if (chance(25))
                return rnd64();
        return a | UINT64_C(1) << 63;
}

/* --- record shapes --- */

/*
 * Neoverse N1 fixed 64-byte slot: PC 0x00, context 0x0e, op 0x13, events
 * (0x52, 2 bytes) 0x15, issue 0x18, total 0x1b, VA or branch target 0x1e,
 * xlat 0x27, PA 0x2a, data source (0x43) 0x33, timestamp 0x37 or END 0x3f;
 * absent packets are left as zero bytes (padding).
 */
static void rec_n1_slot(void) {
        size_t s = g.len;
        unsigned cls = rnd(3);  /* other, load/store, branch */
        bool ldst = cls == 1, br = cls == 2;

        if (chance(95))
                e_addr(0, ip_payload(), false);
        e_pad_to(s + 0x0e);
        if (chance(40)) {
                unsigned idx = chance(70) ? 1 : 0;

                e_context(idx, (uint32_t) rnd(1U << 22));
        }
        e_pad_to(s + 0x13);
        if (chance(95)) {
                static const uint8_t ldst_ops[] = { 0x00, 0x01, 0x04, 0x05, 0x16, 0x17, 0x02, 0x1e, 0x08, 0x89, 0x25, 0x20 };
                static const uint8_t br_ops[] = { 0x00, 0x01, 0x02, 0x03, 0x08, 0x0a, 0x10 };
                static const uint8_t other_ops[] = { 0x00, 0x01, 0x02, 0x04, 0x08, 0x0a, 0x88 };
                uint8_t v = ldst ? ldst_ops[rnd(ELEMENTSOF(ldst_ops))] :
                            br ? br_ops[rnd(ELEMENTSOF(br_ops))] : other_ops[rnd(ELEMENTSOF(other_ops))];

                e_op(cls, v);
        }
        e_pad_to(s + 0x15);
        if (chance(90)) {
                uint64_t mask = chance(80) ? 0x3FFU : 0xFFFFU;

                e_events(1, rnd64() & mask);
        }
        e_pad_to(s + 0x18);
        if (chance(90))
                e_counter(1, (uint16_t) rnd(chance(90) ? 64 : 65536), false);
        e_pad_to(s + 0x1b);
        if (chance(90))
                e_counter(0, (uint16_t) rnd(chance(90) ? 512 : 65536), false);
        e_pad_to(s + 0x1e);
        if (ldst && chance(90))
                e_addr(2, va_payload(), false);
        else if (br && chance(90))
                e_addr(1, ip_payload(), false);
        e_pad_to(s + 0x27);
        if (ldst && chance(80))
                e_counter(2, (uint16_t) rnd(chance(90) ? 32 : 65536), false);
        e_pad_to(s + 0x2a);
        if (ldst && chance(70))
                e_addr(3, pa_payload(), false);
        e_pad_to(s + 0x33);
        if (ldst && chance(70)) {
                static const uint8_t ds[] = { 0x0, 0x8, 0x9, 0xa, 0xb, 0xc, 0xd, 0xe, 0x3, 0xf };

                e_source(0, ds[rnd(ELEMENTSOF(ds))]);
        }
        if (chance(50)) {
                e_pad_to(s + 0x37);
                e_ts(rnd64() & UINT64_C(0x00FFFFFFFFFFFFFF));
        } else {
                e_pad_to(s + 0x3f);
                e_end();
        }
}

/*
 * One packet of any kind (terminators excepted), any encoding. Random
 * values are drawn into locals one statement at a time: the order in which
 * function arguments are evaluated differs between compilers and targets
 * (GCC on x86-64 and on aarch64 differ), and the stream must not.
 */
static void rand_packet(void) {
        unsigned k = rnd(100), idx, sz;
        uint64_t v;
        bool ext = chance(5);

        if (k < 35) {
                idx = k < 12 ? 0 : k < 18 ? 1 : k < 26 ? 2 : k < 32 ? 3 : 4;
                v = idx == 2 ? va_payload() : idx == 3 ? pa_payload() : ip_payload();
                e_addr(idx, v, ext);
        } else if (k < 37) {
                idx = 5 + rnd(3);                       /* undefined short index */
                e_addr(idx, rnd64(), false);
        } else if (k < 40) {
                idx = rnd(32);                          /* extended, any index */
                e_addr(idx, rnd64(), true);
        } else if (k < 57) {
                idx = k < 52 ? rnd(3) : k < 54 ? 3 + rnd(5) : rnd(32);
                v = rnd64();
                e_counter(idx, (uint16_t) v, k >= 54 || ext);
        } else if (k < 66) {
                sz = chance(60) ? 1 : rnd(4);
                e_events(sz, rnd64());
        } else if (k < 72) {
                sz = chance(70) ? 0 : rnd(4);
                v = chance(70) ? rnd(16) : rnd64();
                e_source(sz, v);
        } else if (k < 80) {
                idx = chance(90) ? rnd(2) : 2 + rnd(2);
                e_context(idx, (uint32_t) rnd64());
        } else if (k < 97) {
                idx = chance(95) ? rnd(3) : 3;
                e_op(idx, (uint8_t) rnd(256));
        } else {
                e_align();
        }
}

/* 1..10 packets back to back, then END or TIMESTAMP. */
static void rec_back_to_back(void) {
        unsigned n = 1 + rnd(10);

        for (unsigned i = 0; i < n; i++)
                rand_packet();
        e_term();
}

/* Packets with padding runs of 1..40 bytes between them. */
static void rec_padded(void) {
        unsigned n = 1 + rnd(10);

        for (unsigned i = 0; i < n; i++) {
                if (chance(60))
                        e_pad(1 + rnd(MAX_PAD_RUN));
                rand_packet();
        }
        if (chance(60))
                e_pad(1 + rnd(MAX_PAD_RUN));
        if (chance(10))
                e_align();
        e_term();
}

/* Garbage before, inside or at the end of a record. */
static void rec_garbage(void) {
        unsigned n = 1 + rnd(8), at = rnd(n + 2);

        for (unsigned i = 0; i <= n; i++) {
                if (i == at) {
                        unsigned m = 1 + rnd(4);

                        for (unsigned j = 0; j < m; j++) {
                                if (chance(70)) {
                                        e_garbage();
                                } else {
                                        e_bad_ext();
                                        /* Follow with something that is not 00 nor a short address/counter. */
                                        unsigned x = rnd(5), y = rnd(8);

                                        switch (x) {
                                        case 0:
                                                e_garbage();
                                                break;
                                        case 1:
                                                e_op(y & 3U, (uint8_t) rnd(256));
                                                break;
                                        case 2:
                                                e_events(y & 3U, rnd64());
                                                break;
                                        case 3:
                                                e_addr(y, rnd64(), true);
                                                break;
                                        default:
                                                e_end();
                                                break;
                                        }
                                }
                        }
                }
                if (i < n) {
                        if (chance(30))
                                e_pad(1 + rnd(MAX_PAD_RUN));
                        rand_packet();
                }
        }
        e_term();
}

/* END or TIMESTAMP with nothing before it: no record. */
static void rec_stray_term(void) {
        if (chance(50))
                e_pad(1 + rnd(MAX_PAD_RUN));
        e_term();
}

/*
 * Make the stream length congruent to a (mod 8) inside a record, with
 * packets of distinct kinds (no duplicates): 9 = VA, 2 = op, 3 = issue,
 * 4 = events(1) + data source(1), 5 = context, 7 = context + op.
 */
static void align_filler(unsigned a) {
        switch ((a - (unsigned) g.len) & 7U) {
        case 1:
                e_addr(2, va_payload(), false);
                break;
        case 2:
                e_op(1, 0x00);
                break;
        case 3:
                e_counter(1, 7, false);
                break;
        case 4:
                e_events(0, 0x02);
                e_source(0, 0x0);
                break;
        case 5:
                e_context(0, 1234);
                break;
        case 6:
                e_op(1, 0x01);
                e_events(0, 0x06);
                e_source(0, 0x8);
                break;
        case 7:
                e_context(1, 4321);
                e_op(2, 0x01);
                break;
        default:
                break;
        }
}

/*
 * Padding runs of every length 1..MAX_PAD_RUN starting at every offset
 * modulo 8, inside a record and between records.
 */
static void sweep_padding(void) {
        for (unsigned len = 1; len <= MAX_PAD_RUN; len++) {
                for (unsigned a = 0; a < 8; a++) {
                        /* inside: PC, filler, run, total latency, END */
                        e_addr(0, ip_payload(), false);
                        align_filler(a);
                        e_pad(len);
                        e_counter(0, (uint16_t) len, false);
                        e_end();

                        /* between: PC, filler, END, run (the next record follows) */
                        e_addr(0, ip_payload(), false);
                        align_filler((a - 1U) & 7U);
                        e_end();
                        e_pad(len);
                }
        }
}

static void generate(unsigned nrecords) {
        m_reset();
        sweep_padding();
        while (g.st.records < nrecords) {
                unsigned k = rnd(100);

                if (k < 45)
                        rec_n1_slot();
                else if (k < 65)
                        rec_back_to_back();
                else if (k < 85)
                        rec_padded();
                else if (k < 95)
                        rec_garbage();
                else if (k < 97)
                        rec_stray_term();
                else
                        e_align();
                if (chance(15))
                        e_pad(1 + rnd(MAX_PAD_RUN));
        }

        /* A record cut by the end of the stream: PC, then 4 bytes of a TIMESTAMP. */
        e_addr(0, ip_payload(), false);
        put(0x71);
        put_le(rnd64(), 3);
        g.carry_at_end = 4;
}

/* ---------------------------------------------------------------------
 * Record comparison and hashing, every field of struct spe_record
 * (spe-record-fields.h).
 */
/* Name of the first field that differs, NULL when equal. */
static const char *rec_diff(const struct spe_record *a, const struct spe_record *b) {
#define X(f)                                                                    \
        if ((uint64_t) a->f != (uint64_t) b->f)                                 \
                return #f;
        SPE_RECORD_FIELDS(X)
#undef X
        return NULL;
}

static void rec_print(const char *what, const struct spe_record *r) {
        printf("#   %s:", what);
#define X(f) printf(" " #f "=0x%" PRIx64, (uint64_t) r->f);
        SPE_RECORD_FIELDS(X)
#undef X
        putchar('\n');
}

#define FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV_PRIME UINT64_C(0x100000001b3)

static uint64_t fnv_u64(uint64_t h, uint64_t v) {
        for (unsigned i = 0; i < 8; i++) {
                h ^= (uint8_t) (v >> (8 * i));
                h *= FNV_PRIME;
        }
        return h;
}

static uint64_t hash_record(uint64_t h, const struct spe_record *r) {
#define X(f) h = fnv_u64(h, (uint64_t) r->f);
        SPE_RECORD_FIELDS(X)
#undef X
        return h;
}

#define SPE_STATS_FIELDS(X)                                                     \
        X(bytes) X(packets) X(records) X(bad_header) X(bad_ext_header)          \
        X(dropped_records) X(flushed_bytes) X(flushed_records) X(unknown_index) \
        X(reserved_op) X(duplicate_pkts) X(align_pkts) X(empty_records)

static bool stats_equal(const char *what, const struct spe_decoder_stats *a,
                        const struct spe_decoder_stats *b) {
        bool ok = true;

#define X(f)                                                                            \
        if (a->f != b->f) {                                                             \
                printf("#   %s: stats." #f " %" PRIu64 " != %" PRIu64 "\n", what, a->f, b->f); \
                ok = false;                                                             \
        }
        SPE_STATS_FIELDS(X)
#undef X
        return ok;
}

static uint64_t hash_stats(uint64_t h, const struct spe_decoder_stats *s) {
#define X(f) h = fnv_u64(h, s->f);
        SPE_STATS_FIELDS(X)
#undef X
        return h;
}

/* Decoder state after the stream: partial record and carried bytes. */
static bool state_equal(const char *what, const struct spe_decoder *a, const struct spe_decoder *b) {
        const char *f;

        if (a->in_record != b->in_record || a->after_error != b->after_error ||
            a->carry_len != b->carry_len || memcmp(a->carry, b->carry, a->carry_len) != 0) {
                printf("#   %s: state in_record %d/%d after_error %d/%d carry_len %u/%u\n", what,
                       a->in_record, b->in_record, a->after_error, b->after_error,
                       a->carry_len, b->carry_len);
                return false;
        }
        if (a->in_record && (f = rec_diff(&a->cur, &b->cur))) {
                printf("#   %s: partial record differs in %s\n", what, f);
                return false;
        }
        return true;
}

/* ---------------------------------------------------------------------
 * Decoding modes.
 */
struct out {
        struct spe_record *recs;
        size_t n, cap;
};

/* (i) Large buffers: the whole stream, up to 65536 records per call. */
static void decode_large(struct spe_decoder *d, const uint8_t *buf, size_t len, struct out *o) {
        size_t pos = 0;

        spe_decoder_init(d, TEST_CPU, MIDR_N1);
        while (pos < len) {
                size_t c = 0, n;

                if (o->cap - o->n < 65536) {
                        o->cap += 65536;
                        o->recs = xrealloc(o->recs, o->cap * sizeof(*o->recs));
                }
                n = spe_decoder_decode(d, buf + pos, len - pos, o->recs + o->n, 65536, &c);
                o->n += n;
                if (c == 0 && n == 0) {
                        printf("#   large: no progress at offset %zu\n", pos);
                        break;
                }
                pos += c;
        }
}

/* Compares records as they come against a reference list. */
struct cmp {
        const char *what;
        const struct spe_record *ref;
        size_t nref;
        size_t n;               /* records seen */
        unsigned bad;
};

static void cmp_record(struct cmp *c, const struct spe_record *r, size_t stream_off) {
        const char *f = NULL;

        if (c->n >= c->nref || (f = rec_diff(&c->ref[c->n], r))) {
                if (c->bad++ < MAX_REPORTS) {
                        printf("#   %s: record %zu (ends before stream offset %zu) differs in %s\n",
                               c->what, c->n, stream_off, f ? f : "(extra record)");
                        if (c->n < c->nref)
                                rec_print("large", &c->ref[c->n]);
                        rec_print(c->what, r);
                }
        }
        c->n++;
}

/*
 * (ii) Chunks of lo..hi bytes. With copy, each chunk is copied to a scratch
 * buffer at a varying offset (0..15) and followed by filler bytes (zero or
 * not), so a read past the chunk would change the result.
 */
static void decode_chunked(struct spe_decoder *d, const uint8_t *buf, size_t len, unsigned lo,
                           unsigned hi, unsigned maxrecs, bool copy, struct cmp *c) {
        static uint8_t scratch[16 + 4096 + 64] __attribute__((aligned(64)));
        struct spe_record recs[64];
        size_t pos = 0;

        spe_decoder_init(d, TEST_CPU, MIDR_N1);
        while (pos < len) {
                size_t clen = lo + rnd(hi - lo + 1), off = 0;
                const uint8_t *chunk = buf + pos;

                clen = MIN(clen, len - pos);
                if (copy) {
                        unsigned at = rnd(16);
                        int fill = chance(50) ? 0x00 : chance(50) ? 0x01 : (int) rnd(256);

                        memset(scratch, fill, sizeof(scratch));
                        memcpy(scratch + at, chunk, clen);
                        chunk = scratch + at;
                }
                while (off < clen) {
                        size_t used = 0, n;
                        unsigned max = 1 + rnd(maxrecs);

                        n = spe_decoder_decode(d, chunk + off, clen - off, recs, max, &used);
                        for (size_t i = 0; i < n; i++)
                                cmp_record(c, &recs[i], pos + off + used);
                        if (used == 0 && n == 0) {
                                printf("#   %s: no progress at offset %zu\n", c->what, pos + off);
                                c->bad++;
                                return;
                        }
                        off += used;
                }
                pos += clen;
        }
}

/* ---------------------------------------------------------------------
 * The real captures, shared/testdata/spe/spe-b1-ts{0,1}.data (WindowsPerf,
 * upstream Arm telemetry-solution spe_parser test vectors). They are not
 * part of this project: spe-arm64-vm-test.py reads them and passes them
 * as hex arguments (-0 HEX, -1 HEX), as the VM holds only this program.
 * Oracle spe-b1-ts{0,1}.csv:
 *   cpu,op,pc,el,condition,indirect,event,issue_lat,total_lat,br_tgt,br_tgt_lvl,...,ts
 *   0,B,0x7ffdbf2143e0,0,true,false,RETIRED,39,40,0x7ffdbf214408,0,,0,,0
 *   0,B,0x7ffdbf2143e0,0,true,false,RETIRED,41,42,0x7ffdbf214408,0,,0,,3913207673451
 */
#define CAPTURE_SIZE 64

/* 2 * CAPTURE_SIZE hex digits into out; false if the text is anything else. */
static bool parse_capture(const char *hex, uint8_t out[CAPTURE_SIZE]) {
        if (strlen(hex) != 2 * CAPTURE_SIZE)
                return false;
        for (size_t i = 0; i < CAPTURE_SIZE; i++) {
                char byte[3] = { hex[2 * i], hex[2 * i + 1], 0 }, *end;

                if (!isxdigit((unsigned char) byte[0]) || !isxdigit((unsigned char) byte[1]))
                        return false;
                out[i] = (uint8_t) strtoul(byte, &end, 16);
        }
        return true;
}

static uint64_t check_capture(const char *name, const uint8_t *bytes, unsigned issue, unsigned total,
                              uint64_t ts, uint64_t h) {
        struct spe_decoder d, d1;
        struct spe_record rec[4], one[4];
        size_t used = 0, n, n1 = 0;
        const struct spe_record *r = &rec[0];
        const char *f;
        bool ok;

        spe_decoder_init(&d, 0, MIDR_N1);
        n = spe_decoder_decode(&d, bytes, 64, rec, ELEMENTSOF(rec), &used);
        check(n == 1 && used == 64 && d.stats.records == 1 && d.stats.packets == 7 &&
              spe_decoder_errors(&d) == 0 && !d.in_record && d.carry_len == 0,
              "%s: one record, 7 packets, 64 bytes, no errors (got %zu records, %zu bytes, %" PRIu64
              " packets)", name, n, used, d.stats.packets);
        if (n != 1)
                return h;

        ok = r->present == (SPE_REC_PC | SPE_REC_OP | SPE_REC_EVENTS | SPE_REC_LAT_ISSUE |
                            SPE_REC_LAT_TOTAL | SPE_REC_BR_TGT | (ts ? SPE_REC_TIMESTAMP : 0U)) &&
             r->flags == (ts ? 0U : SPE_REC_F_END) && r->cpu == 0;
        check(ok, "%s: present 0x%x flags 0x%x", name, r->present, r->flags);
        check(r->pc.addr == UINT64_C(0x7ffdbf2143e0) && r->pc.el == 0 && r->pc.ns == 1 && r->pc.nse == 0,
              "%s: pc 0x%" PRIx64 " el%u ns%u (oracle 0x7ffdbf2143e0 el0)", name, r->pc.addr,
              r->pc.el, r->pc.ns);
        check(r->op_class == SPE_OP_CLASS_BRANCH && r->op_subclass == SPE_OP_SUB_BRANCH &&
              r->op_raw == 0x01 && r->op_flags == (SPE_OPF_BRANCH | SPE_OPF_COND) &&
              spe_record_op_kind(r) == SPE_OP_KIND_BRANCH,
              "%s: op B, condition true, indirect false (op_flags 0x%x)", name, r->op_flags);
        check(r->events == SPE_EV_BIT(SPE_EV_RETIRED), "%s: events RETIRED (0x%" PRIx64 ")", name,
              r->events);
        check(r->lat_issue == issue && r->lat_total == total && r->lat_xlat == 0,
              "%s: issue_lat %u total_lat %u (oracle %u %u)", name, r->lat_issue, r->lat_total,
              issue, total);
        check(r->br_tgt.addr == UINT64_C(0x7ffdbf214408) && r->br_tgt.el == 0 && r->br_tgt.ns == 1,
              "%s: br_tgt 0x%" PRIx64 " el%u (oracle 0x7ffdbf214408 lvl 0)", name, r->br_tgt.addr,
              r->br_tgt.el);
        check(r->timestamp == ts, "%s: ts %" PRIu64 " (oracle %" PRIu64 ")", name, r->timestamp, ts);
        check(!(r->present & (SPE_REC_CONTEXT | SPE_REC_VA | SPE_REC_PA | SPE_REC_PBT | SPE_REC_SOURCE)) &&
              r->source == SPE_DATA_SRC_NONE && r->context == 0,
              "%s: no context, data address or data source", name);

        /* Byte by byte (slow path only): the same record. */
        spe_decoder_init(&d1, 0, MIDR_N1);
        for (size_t i = 0; i < 64; i++) {
                size_t u;

                n1 += spe_decoder_decode(&d1, bytes + i, 1, one + n1, ELEMENTSOF(one) - n1, &u);
        }
        f = n1 == 1 ? rec_diff(r, &one[0]) : "count";
        check(n1 == 1 && !f && stats_equal(name, &d.stats, &d1.stats),
              "%s: byte-by-byte decode identical%s%s", name, f ? ", differs in " : "", f ? f : "");

        h = hash_record(h, r);
        return hash_stats(h, &d.stats);
}

/* ---------------------------------------------------------------------
 */
static const char *arch_name(void) {
#if defined(__aarch64__)
        return "aarch64 (select_nz: csel)";
#elif defined(__x86_64__)
        return "x86_64 (select_nz: cmovz)";
#else
        return "other (select_nz: plain C)";
#endif
}

int main(int argc, char **argv) {
        static uint8_t capture_ts0[CAPTURE_SIZE], capture_ts1[CAPTURE_SIZE];
        bool have_capture[2] = {};
        unsigned nrecords = DEFAULT_RECORDS;
        uint64_t seed = DEFAULT_SEED, h = FNV_OFFSET, hs = FNV_OFFSET;
        struct spe_decoder dl, dc, dm;
        struct out large = {};
        struct cmp cs, cm;
        double t0, t_gen, t_large, t_small, t_medium;
        unsigned bad = 0, table_bad = 0;

        for (int i = 1; i < argc; i++) {
                if (!strcmp(argv[i], "-n") && i + 1 < argc)
                        nrecords = (unsigned) strtoul(argv[++i], NULL, 0);
                else if (!strcmp(argv[i], "-s") && i + 1 < argc)
                        seed = strtoull(argv[++i], NULL, 0);
                else if ((!strcmp(argv[i], "-0") || !strcmp(argv[i], "-1")) && i + 1 < argc &&
                         parse_capture(argv[i + 1], argv[i][1] == '0' ? capture_ts0 : capture_ts1)) {
                        have_capture[argv[i][1] - '0'] = true;
                        i++;
                }
                else {
                        fprintf(stderr, "usage: %s [-n RECORDS] [-s SEED] [-0 HEX64] [-1 HEX64]\n", argv[0]);
                        return 2;
                }
        }
        printf("# arch %s, %u records, seed 0x%" PRIx64 "\n", arch_name(), nrecords, seed);

        /* Header classes from the spec against the library's table. */
        for (unsigned b = 0; b < 256; b++) {
                bool lib_bad = spe_hdr_table[b].type == SPE_PKT_BAD;

                if (!hdr_valid(b))
                        bad_bytes[n_bad_bytes++] = (uint8_t) b;
                if (lib_bad != !hdr_valid(b) ||
                    (hdr_addr_or_counter(b) != (spe_hdr_table[b].type == SPE_PKT_ADDRESS ||
                                                spe_hdr_table[b].type == SPE_PKT_COUNTER)))
                        table_bad++;
        }
        check(table_bad == 0 && n_bad_bytes > 0, "header classes agree with the Arm ARM (%u bad bytes)",
              n_bad_bytes);

        /* 1. Stream and model. */
        t0 = now_s();
        rng_state = seed;
        generate(nrecords);
        t_gen = now_s() - t0;
        g.st.bytes = g.len;
        for (size_t i = 0; i < g.len; i += 8) {
                uint64_t w = 0;

                for (size_t j = 0; j < 8 && i + j < g.len; j++)
                        w |= (uint64_t) g.buf[i + j] << (8 * j);
                hs = fnv_u64(hs, w);
        }
        printf("# stream: %zu bytes, %zu expected records, %" PRIu64 " empty, %" PRIu64 " dropped\n",
               g.len, g.nexp, g.st.empty_records, g.st.dropped_records);

        /* The model's op decode must have met every subclass, and both
         * vector-length encodings, for the comparison to cover them. */
        {
                bool seen[_SPE_OP_SUB_MAX] = { false };
                unsigned n_seen = 0, n_evl = 0;

                for (size_t i = 0; i < g.nexp; i++) {
                        seen[g.exp[i].op_subclass] = true;
                        n_evl += g.exp[i].op_evl_bits_log2 != 0;
                }
                for (unsigned k = 0; k < _SPE_OP_SUB_MAX; k++)
                        n_seen += seen[k];
                check(n_seen == _SPE_OP_SUB_MAX && n_evl > 0,
                      "op model: %u of %u subclasses, %u records with a vector length", n_seen,
                      (unsigned) _SPE_OP_SUB_MAX, n_evl);
        }

        /* 2 (i). Large buffers. */
        t0 = now_s();
        decode_large(&dl, g.buf, g.len, &large);
        t_large = now_s() - t0;

        bad = 0;
        for (size_t i = 0; i < MIN(large.n, g.nexp); i++) {
                const char *f = rec_diff(&g.exp[i], &large.recs[i]);

                if (f && bad++ < MAX_REPORTS) {
                        printf("#   model: record %zu differs in %s\n", i, f);
                        rec_print("expected", &g.exp[i]);
                        rec_print("large", &large.recs[i]);
                }
        }
        check(large.n == g.nexp && bad == 0, "large buffers: %zu records match the model (%zu expected, %u differ)",
              large.n, g.nexp, bad);
        check(stats_equal("large vs model", &dl.stats, &g.st),
              "large buffers: stats match the model (packets %" PRIu64 ", bad %" PRIu64 "+%" PRIu64
              ", dropped %" PRIu64 ", empty %" PRIu64 ", dup %" PRIu64 ", unknown %" PRIu64 ")",
              dl.stats.packets, dl.stats.bad_header, dl.stats.bad_ext_header,
              dl.stats.dropped_records, dl.stats.empty_records, dl.stats.duplicate_pkts,
              dl.stats.unknown_index);
        check(dl.in_record && dl.carry_len == g.carry_at_end && dl.cur.present == SPE_REC_PC,
              "large buffers: the record cut at the end is kept (in_record %d, carry %u bytes)",
              dl.in_record, dl.carry_len);

        /* 2 (ii). Chunks of 1..23 bytes at varying alignment: slow path vs fast path. */
        cs = (struct cmp) { .what = "small", .ref = large.recs, .nref = large.n };
        t0 = now_s();
        decode_chunked(&dc, g.buf, g.len, 1, 23, 4, true, &cs);
        t_small = now_s() - t0;
        check(cs.n == large.n && cs.bad == 0, "chunks 1..23: %zu records identical to large buffers (%u differ)",
              cs.n, cs.bad);
        check(stats_equal("small vs large", &dc.stats, &dl.stats), "chunks 1..23: identical stats");
        check(state_equal("small vs large", &dc, &dl), "chunks 1..23: identical final state");

        /* 2 (iii). Chunks of 24..4096 bytes straight from the stream. */
        cm = (struct cmp) { .what = "medium", .ref = large.recs, .nref = large.n };
        t0 = now_s();
        decode_chunked(&dm, g.buf, g.len, 24, 4096, 64, false, &cm);
        t_medium = now_s() - t0;
        check(cm.n == large.n && cm.bad == 0, "chunks 24..4096: %zu records identical to large buffers (%u differ)",
              cm.n, cm.bad);
        check(stats_equal("medium vs large", &dm.stats, &dl.stats), "chunks 24..4096: identical stats");
        check(state_equal("medium vs large", &dm, &dl), "chunks 24..4096: identical final state");

        /* End of stream: the cut record and its partial packet are flushed. */
        spe_decoder_reset(&dl);
        spe_decoder_reset(&dc);
        g.st.flushed_records = 1;
        g.st.flushed_bytes = g.carry_at_end;
        check(stats_equal("flush", &dl.stats, &g.st) && stats_equal("flush small", &dc.stats, &g.st),
              "reset flushes 1 record and %zu bytes", g.carry_at_end);

        /* 3. Real captures, when given. */
        if (have_capture[0])
                h = check_capture("spe-b1-ts0", capture_ts0, 39, 40, 0, h);
        if (have_capture[1])
                h = check_capture("spe-b1-ts1", capture_ts1, 41, 42, UINT64_C(3913207673451), h);
        printf("# real captures checked: %d of 2\n", have_capture[0] + have_capture[1]);

        /* 4. The portable summary. */
        for (size_t i = 0; i < large.n; i++)
                h = hash_record(h, &large.recs[i]);
        h = hash_stats(h, &dl.stats);
        printf("# timing: generate %.3fs, large %.3fs, chunks 1..23 %.3fs, chunks 24..4096 %.3fs\n",
               t_gen, t_large, t_small, t_medium);
        printf("spe-arm64: records %" PRIu64 " packets %" PRIu64 " bytes %" PRIu64 " bad_header %" PRIu64
               " bad_ext %" PRIu64 " dropped %" PRIu64 " empty %" PRIu64 " dup %" PRIu64
               " unknown %" PRIu64 " align %" PRIu64 " reserved_op %" PRIu64 " stream 0x%016" PRIx64
               " hash 0x%016" PRIx64 "\n",
               dl.stats.records, dl.stats.packets, dl.stats.bytes, dl.stats.bad_header,
               dl.stats.bad_ext_header, dl.stats.dropped_records, dl.stats.empty_records,
               dl.stats.duplicate_pkts, dl.stats.unknown_index, dl.stats.align_pkts,
               dl.stats.reserved_op, hs, h);

        free(large.recs);
        free(g.exp);
        free(g.buf);
        printf("%s: %u check(s) failed\n", vm_failures ? "FAIL" : "PASS", vm_failures);
        return vm_failures ? 1 : 0;
}
