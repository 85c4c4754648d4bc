/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Record decoder unit tests. Streams are assembled here from the packet
 * formats of the Arm ARM (D10, the packet sections; a tiny encoder
 * independent of the decoder); expected fields are written out by hand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "macro.h"
#include "spe-rec.h"

#define MIDR_N1         UINT64_C(0x414fd0c1)    /* Neoverse N1 r4p1 */
#define MIDR_A53        UINT64_C(0x410fd034)    /* Cortex-A53: no data-source table */
#define MIDR_AMPERE1A   UINT64_C(0xc00fac41)

/* ---------------------------------------------------------------------
 * A minimal packet encoder for building test streams.
 */
struct praw {
        uint8_t b[10];
        uint8_t n;
};

static struct praw le_pkt(const uint8_t *hdr, unsigned hlen, uint64_t v, unsigned plen) {
        struct praw p = { .n = (uint8_t) (hlen + plen) };

        memcpy(p.b, hdr, hlen);
        for (unsigned i = 0; i < plen; i++)
                p.b[hlen + i] = (uint8_t) (v >> (8 * i));
        return p;
}

static struct praw P_ADDR(unsigned idx, uint64_t v) {
        if (idx < 8) {
                uint8_t h = (uint8_t) (0xb0 | idx);
                return le_pkt(&h, 1, v, 8);
        }
        uint8_t h[2] = { (uint8_t) (0x20 | (idx >> 3)), (uint8_t) (0xb0 | (idx & 7)) };
        return le_pkt(h, 2, v, 8);
}

static struct praw P_CNT(unsigned idx, uint16_t v) {
        if (idx < 8) {
                uint8_t h = (uint8_t) (0x98 | idx);
                return le_pkt(&h, 1, v, 2);
        }
        uint8_t h[2] = { (uint8_t) (0x20 | (idx >> 3)), (uint8_t) (0x98 | (idx & 7)) };
        return le_pkt(h, 2, v, 2);
}

static unsigned szcode(unsigned plen) {
        return plen == 1 ? 0 : plen == 2 ? 1 : plen == 4 ? 2 : 3;
}

static struct praw P_EV(unsigned plen, uint64_t v) {
        uint8_t h = (uint8_t) (0x42 | (szcode(plen) << 4));
        return le_pkt(&h, 1, v, plen);
}

static struct praw P_DS(unsigned plen, uint64_t v) {
        uint8_t h = (uint8_t) (0x43 | (szcode(plen) << 4));
        return le_pkt(&h, 1, v, plen);
}

static struct praw P_CTX(unsigned idx, uint32_t v) {
        uint8_t h = (uint8_t) (0x64 | idx);
        return le_pkt(&h, 1, v, 4);
}

static struct praw P_OP(unsigned cls, uint8_t v) {
        uint8_t h = (uint8_t) (0x48 | cls);
        return le_pkt(&h, 1, v, 1);
}

static struct praw P_TS(uint64_t v) {
        uint8_t h = 0x71;
        return le_pkt(&h, 1, v, 8);
}

static struct praw P_END(void) {
        return (struct praw) { .b = { 0x01 }, .n = 1 };
}

struct stream {
        uint8_t b[16384];
        size_t n;
};

static void put(struct stream *s, struct praw p) {
        assert_true(s->n + p.n <= sizeof(s->b));
        memcpy(s->b + s->n, p.b, p.n);
        s->n += p.n;
}

static void put_bytes(struct stream *s, const uint8_t *b, size_t n) {
        assert_true(s->n + n <= sizeof(s->b));
        memcpy(s->b + s->n, b, n);
        s->n += n;
}

static void put_pad(struct stream *s, size_t n) {
        assert_true(s->n + n <= sizeof(s->b));
        memset(s->b + s->n, 0, n);
        s->n += n;
}

/* ---------------------------------------------------------------------
 * The reference record: a load on N1 with every packet kind.
 */
#define REF_TS UINT64_C(44731163950)

static unsigned ref_packets(struct praw *p) {
        unsigned n = 0;

        p[n++] = P_ADDR(0, UINT64_C(0xc0ffba66eda1c2d0));       /* PC el2 ns=1 */
        p[n++] = P_CTX(1, 0x5f80);                              /* CONTEXTIDR_EL2 */
        p[n++] = P_OP(1, 0x00);                                 /* LD GP-REG */
        p[n++] = P_EV(2, 0x0016);                               /* RETIRED L1D-ACCESS TLB-ACCESS */
        p[n++] = P_CNT(1, 4);                                   /* issue */
        p[n++] = P_CNT(0, 12);                                  /* total */
        p[n++] = P_ADDR(2, UINT64_C(0x3cff0e3703096b28));       /* VA, tag 0x3c */
        p[n++] = P_CNT(2, 1);                                   /* xlat */
        p[n++] = P_ADDR(3, UINT64_C(0xd400080bd88a09e8));       /* PA ns ch nse pat=4 */
        p[n++] = P_DS(1, 0x09);                                 /* PEER_CORE */
        p[n++] = P_ADDR(4, UINT64_C(0x8000aaaa00001000));       /* PBT el0 ns=1 */
        p[n++] = P_ADDR(1, UINT64_C(0xa0ff800010000000));       /* TGT el1 ns=1 */
        return n;
}

static void check_ref(const struct spe_record *r) {
        assert_int_equal(r->present, SPE_REC_PC | SPE_REC_BR_TGT | SPE_REC_PBT | SPE_REC_VA |
                                     SPE_REC_PA | SPE_REC_LAT_TOTAL | SPE_REC_LAT_ISSUE |
                                     SPE_REC_LAT_XLAT | SPE_REC_EVENTS | SPE_REC_OP |
                                     SPE_REC_SOURCE | SPE_REC_CONTEXT | SPE_REC_TIMESTAMP);
        assert_int_equal(r->flags, 0);
        assert_true(r->pc.addr == UINT64_C(0xffffba66eda1c2d0));
        assert_int_equal(r->pc.el, 2);
        assert_int_equal(r->pc.ns, 1);
        assert_int_equal(r->pc.nse, 0);
        assert_true(r->br_tgt.addr == UINT64_C(0xffff800010000000));
        assert_int_equal(r->br_tgt.el, 1);
        assert_true(r->pbt.addr == UINT64_C(0x0000aaaa00001000));
        assert_int_equal(r->pbt.el, 0);
        assert_int_equal(r->pbt.ns, 1);
        assert_true(r->va == UINT64_C(0xffff0e3703096b28));
        assert_int_equal(r->va_tag, 0x3c);
        assert_true(r->pa == UINT64_C(0x080bd88a09e8));
        assert_int_equal(r->pa_ns, 1);
        assert_int_equal(r->pa_ch, 1);
        assert_int_equal(r->pa_nse, 1);
        assert_int_equal(r->pa_pat, 4);
        assert_int_equal(r->lat_total, 12);
        assert_int_equal(r->lat_issue, 4);
        assert_int_equal(r->lat_xlat, 1);
        assert_true(r->events == (SPE_EV_BIT(SPE_EV_RETIRED) | SPE_EV_BIT(SPE_EV_L1D_ACCESS) |
                                  SPE_EV_BIT(SPE_EV_TLB_ACCESS)));
        assert_int_equal(r->op_class, SPE_OP_CLASS_LDST);
        assert_int_equal(r->op_subclass, SPE_OP_SUB_LDST_GP_REG);
        assert_int_equal(r->op_flags, SPE_OPF_LOAD);
        assert_int_equal(r->source_raw, 9);
        assert_int_equal(r->source, SPE_DATA_SRC_PEER_CORE);
        assert_int_equal(r->context, 0x5f80);
        assert_int_equal(r->context_el, 2);
        assert_true(r->timestamp == REF_TS);
        assert_int_equal(r->cpu, 3);
        assert_int_equal(spe_record_peer(r), SPE_PEER_LOCAL);
        assert_string_equal(spe_op_name(r), "load");
}

/* Field-wise comparison (struct padding is not part of the contract). */
static void assert_rec_equal(const struct spe_record *a, const struct spe_record *b) {
        assert_int_equal(a->present, b->present);
        assert_int_equal(a->flags, b->flags);
        assert_true(a->pc.addr == b->pc.addr && a->pc.el == b->pc.el && a->pc.ns == b->pc.ns &&
                    a->pc.nse == b->pc.nse);
        assert_true(a->br_tgt.addr == b->br_tgt.addr && a->br_tgt.el == b->br_tgt.el &&
                    a->br_tgt.ns == b->br_tgt.ns);
        assert_true(a->pbt.addr == b->pbt.addr && a->pbt.el == b->pbt.el && a->pbt.ns == b->pbt.ns);
        assert_true(a->va == b->va && a->va_tag == b->va_tag);
        assert_true(a->pa == b->pa && a->pa_ns == b->pa_ns && a->pa_ch == b->pa_ch &&
                    a->pa_pat == b->pa_pat && a->pa_nse == b->pa_nse);
        assert_true(a->timestamp == b->timestamp);
        assert_true(a->events == b->events);
        assert_true(a->source_raw == b->source_raw);
        assert_int_equal(a->source, b->source);
        assert_int_equal(a->op_flags, b->op_flags);
        assert_int_equal(a->op_class, b->op_class);
        assert_int_equal(a->op_subclass, b->op_subclass);
        assert_int_equal(a->op_raw, b->op_raw);
        assert_int_equal(a->op_evl_bits_log2, b->op_evl_bits_log2);
        assert_int_equal(a->context, b->context);
        assert_int_equal(a->context_el, b->context_el);
        assert_int_equal(a->cpu, b->cpu);
        assert_int_equal(a->lat_total, b->lat_total);
        assert_int_equal(a->lat_issue, b->lat_issue);
        assert_int_equal(a->lat_xlat, b->lat_xlat);
}

#define MAX_OUT 256

/*
 * Decode buf in chunks (chunk == 0: one piece; chunk > 0: that size;
 * split > 0: two pieces at split) with a small record array so the
 * "array full" path runs too.
 */
static size_t decode(struct spe_decoder *d, const uint8_t *buf, size_t len, size_t chunk,
                     size_t split, struct spe_record *out) {
        struct spe_record recs[2];
        size_t pos = 0, nout = 0;

        while (pos < len) {
                size_t end = len, used = 0;

                if (split > 0)
                        end = pos < split ? split : len;
                else if (chunk > 0)
                        end = MIN(len, pos + chunk);

                while (pos + used < end) {
                        size_t c = 0, n;

                        n = spe_decoder_decode(d, buf + pos + used, end - pos - used, recs,
                                               ELEMENTSOF(recs), &c);
                        assert_true(c <= end - pos - used);
                        assert_true(c > 0 || n > 0);
                        for (size_t i = 0; i < n; i++) {
                                assert_true(nout < MAX_OUT);
                                out[nout++] = recs[i];
                        }
                        used += c;
                }
                pos = end;
        }
        return nout;
}

static size_t decode_one_piece(uint64_t midr, const uint8_t *buf, size_t len, struct spe_record *out,
                               struct spe_decoder *ret_d) {
        struct spe_decoder d;
        size_t n;

        spe_decoder_init(&d, 3, midr);
        n = decode(&d, buf, len, 0, 0, out);
        if (ret_d)
                *ret_d = d;
        return n;
}

/* ---------------------------------------------------------------------
 * Tests.
 */

static void test_full_record(void **state) {
        struct praw p[16];
        struct stream s = { .n = 0 };
        struct spe_record out[MAX_OUT];
        struct spe_decoder d;
        unsigned np = ref_packets(p);

        for (unsigned i = 0; i < np; i++)
                put(&s, p[i]);
        put(&s, P_TS(REF_TS));

        assert_int_equal(decode_one_piece(MIDR_N1, s.b, s.n, out, &d), 1);
        check_ref(&out[0]);
        assert_int_equal(d.stats.records, 1);
        assert_int_equal(d.stats.packets, np + 1);
        assert_int_equal(d.stats.bytes, s.n);
        assert_int_equal(spe_decoder_errors(&d), 0);
}

/* Any order of the packets before the terminator gives the same record. */
static void test_order_independence(void **state) {
        struct praw p[16], q[16];
        unsigned np = ref_packets(p);
        uint32_t x = 12345;

        for (unsigned perm = 0; perm < 2 * np + 20; perm++) {
                struct stream s = { .n = 0 };
                struct spe_record out[MAX_OUT];

                if (perm < np) /* rotations */
                        for (unsigned i = 0; i < np; i++)
                                q[i] = p[(i + perm) % np];
                else if (perm < 2 * np) /* reversed rotations */
                        for (unsigned i = 0; i < np; i++)
                                q[i] = p[(np - 1 - i + perm) % np];
                else { /* Fisher-Yates with a fixed LCG */
                        memcpy(q, p, sizeof(p));
                        for (unsigned i = np - 1; i > 0; i--) {
                                x = x * 1664525u + 1013904223u;
                                unsigned j = (x >> 8) % (i + 1);
                                struct praw t = q[i];
                                q[i] = q[j];
                                q[j] = t;
                        }
                }
                for (unsigned i = 0; i < np; i++)
                        put(&s, q[i]);
                put(&s, P_TS(REF_TS));
                assert_int_equal(decode_one_piece(MIDR_N1, s.b, s.n, out, NULL), 1);
                check_ref(&out[0]);
        }
}

/* Padding before, between and after packets changes nothing. */
static void test_padding(void **state) {
        struct praw p[16];
        unsigned np = ref_packets(p);

        for (unsigned pad = 1; pad <= 17; pad += 4) {
                struct stream s = { .n = 0 };
                struct spe_record out[MAX_OUT];
                struct spe_decoder d;

                put_pad(&s, pad);
                for (unsigned i = 0; i < np; i++) {
                        put(&s, p[i]);
                        put_pad(&s, (i * pad) % 7);
                }
                put_pad(&s, pad);
                put(&s, P_TS(REF_TS));
                put_pad(&s, 64);
                assert_int_equal(decode_one_piece(MIDR_N1, s.b, s.n, out, &d), 1);
                check_ref(&out[0]);
                assert_int_equal(d.stats.bytes, s.n);
                assert_false(d.in_record);
        }
}

static void test_end_vs_timestamp(void **state) {
        struct stream s = { .n = 0 };
        struct spe_record out[MAX_OUT];

        /* END-terminated branch, then TS-terminated branch */
        put(&s, P_ADDR(0, UINT64_C(0x80007ffdbf2143e0)));
        put(&s, P_OP(2, 0x01));
        put(&s, P_END());
        put(&s, P_ADDR(0, UINT64_C(0x80007ffdbf2143e4)));
        put(&s, P_OP(2, 0x02));
        put(&s, P_TS(777));

        assert_int_equal(decode_one_piece(MIDR_N1, s.b, s.n, out, NULL), 2);
        assert_int_equal(out[0].flags, SPE_REC_F_END);
        assert_false(out[0].present & SPE_REC_TIMESTAMP);
        assert_true(out[0].timestamp == 0);
        assert_int_equal(out[0].op_flags, SPE_OPF_BRANCH | SPE_OPF_COND);
        assert_true(out[0].pc.addr == UINT64_C(0x7ffdbf2143e0));
        assert_int_equal(out[1].flags, 0);
        assert_true(out[1].present & SPE_REC_TIMESTAMP);
        assert_true(out[1].timestamp == 777);
        assert_int_equal(out[1].op_flags, SPE_OPF_BRANCH | SPE_OPF_INDIRECT);
        assert_string_equal(spe_op_name(&out[1]), "branch");
}

/* A multi-record stream with every oddity the decoder must carry across chunks. */
static size_t build_multi(struct stream *s) {
        struct praw p[16];
        unsigned np = ref_packets(p);
        size_t nrec = 0;
        const uint8_t align[] = { 0x20, 0x00 };

        for (unsigned k = 0; k < 4; k++) {
                /* the reference record, rotated */
                for (unsigned i = 0; i < np; i++)
                        put(s, p[(i + k) % np]);
                put(s, P_TS(REF_TS + k));
                nrec++;
                put_pad(s, k * 3);

                /* branch with END, 8-byte events, extended headers, alignment pseudo-pad */
                put(s, P_ADDR(0, UINT64_C(0x8000aaaac0001000) + k));
                put_bytes(s, align, sizeof(align));
                put(s, P_EV(8, UINT64_C(0x8000000000000082)));
                put(s, P_ADDR(10, 0x1234));     /* unknown index 10 via extended header */
                put(s, P_CNT(17, 99));          /* unknown index 17 via extended header */
                put(s, P_ADDR(1, UINT64_C(0x8000aaaac0002000)));
                put(s, P_OP(2, 0x09));          /* B COND, CR-BL */
                put(s, P_END());
                nrec++;

                /* KVM-guest order: latencies, events, op, 4-byte data source */
                put(s, P_CNT(1, 11));
                put(s, P_CNT(0, 13));
                put(s, P_EV(4, 0x0000031e));
                put(s, P_OP(1, 0x05));
                put(s, P_DS(4, 0x0e));
                put(s, P_ADDR(2, UINT64_C(0x00ff000070d840d0)));
                put_pad(s, 3);
                put(s, P_TS(UINT64_C(86447955877) + k));
                nrec++;
        }
        return nrec;
}

static void assert_stats_equal(const struct spe_decoder *a, const struct spe_decoder *b) {
        assert_int_equal(a->stats.bytes, b->stats.bytes);
        assert_int_equal(a->stats.packets, b->stats.packets);
        assert_int_equal(a->stats.records, b->stats.records);
        assert_int_equal(a->stats.bad_header, b->stats.bad_header);
        assert_int_equal(a->stats.bad_ext_header, b->stats.bad_ext_header);
        assert_int_equal(a->stats.dropped_records, b->stats.dropped_records);
        assert_int_equal(a->stats.unknown_index, b->stats.unknown_index);
        assert_int_equal(a->stats.align_pkts, b->stats.align_pkts);
        assert_int_equal(a->stats.empty_records, b->stats.empty_records);
}

static void test_multi_reference(void **state) {
        struct stream s = { .n = 0 };
        static struct spe_record out[MAX_OUT];
        struct spe_decoder d;
        size_t nrec = build_multi(&s), n;

        n = decode_one_piece(MIDR_N1, s.b, s.n, out, &d);
        assert_int_equal(n, nrec);
        check_ref(&out[0]);
        assert_true(out[3].timestamp == REF_TS + 1);
        /* record 1: the branch */
        assert_int_equal(out[1].flags, SPE_REC_F_END | SPE_REC_F_UNKNOWN_PKT);
        assert_int_equal(out[1].op_flags, SPE_OPF_BRANCH | SPE_OPF_COND | SPE_OPF_CALL);
        assert_true(out[1].events == UINT64_C(0x8000000000000082));
        assert_true(out[1].br_tgt.addr == UINT64_C(0xaaaac0002000));
        assert_true(out[1].pc.addr == UINT64_C(0xaaaac0001000));
        /* record 2: the KVM-style store */
        assert_int_equal(out[2].op_flags, SPE_OPF_STORE | SPE_OPF_SIMD);
        assert_int_equal(out[2].op_subclass, SPE_OP_SUB_LDST_SIMD_FP);
        assert_int_equal(out[2].source, SPE_DATA_SRC_DRAM);
        assert_int_equal(out[2].lat_issue, 11);
        assert_int_equal(out[2].lat_total, 13);
        assert_true(out[2].va == UINT64_C(0xffff000070d840d0));
        assert_int_equal(spe_record_peer(&out[2]), SPE_PEER_NONE); /* a store */
        assert_int_equal(d.stats.unknown_index, 8);
        assert_int_equal(d.stats.align_pkts, 4);
        assert_int_equal(spe_decoder_errors(&d), 0);
}

/* Splitting the stream at every byte offset yields identical records and counters. */
static void test_chunked_every_split(void **state) {
        struct stream s = { .n = 0 };
        static struct spe_record ref[MAX_OUT], out[MAX_OUT];
        struct spe_decoder dref;
        size_t nrec = build_multi(&s), n;

        n = decode_one_piece(MIDR_N1, s.b, s.n, ref, &dref);
        assert_int_equal(n, nrec);

        for (size_t split = 1; split < s.n; split++) {
                struct spe_decoder d;

                spe_decoder_init(&d, 3, MIDR_N1);
                n = decode(&d, s.b, s.n, 0, split, out);
                assert_int_equal(n, nrec);
                for (size_t i = 0; i < n; i++)
                        assert_rec_equal(&out[i], &ref[i]);
                assert_stats_equal(&d, &dref);
        }

        for (size_t chunk = 1; chunk <= 23; chunk++) {
                struct spe_decoder d;

                spe_decoder_init(&d, 3, MIDR_N1);
                n = decode(&d, s.b, s.n, chunk, 0, out);
                assert_int_equal(n, nrec);
                for (size_t i = 0; i < n; i++)
                        assert_rec_equal(&out[i], &ref[i]);
                assert_stats_equal(&d, &dref);
        }
}

/* The single-record API: one record per call, consumed ends right after it. */
static void test_next_api(void **state) {
        struct stream s = { .n = 0 };
        static struct spe_record ref[MAX_OUT];
        struct spe_decoder d;
        size_t nrec = build_multi(&s), pos = 0, got = 0;

        assert_int_equal(decode_one_piece(MIDR_N1, s.b, s.n, ref, NULL), nrec);
        spe_decoder_init(&d, 3, MIDR_N1);
        for (;;) {
                struct spe_record r;
                size_t c = 0;
                int k = spe_decoder_next(&d, s.b + pos, s.n - pos, &c, &r);

                assert_true(k == 0 || k == 1);
                pos += c;
                if (k == 0) {
                        assert_int_equal(pos, s.n);
                        break;
                }
                /* a record ends with END (0x01) or the last byte of a TS packet */
                assert_true(s.b[pos - 1] == 0x01 || s.b[pos - 9] == 0x71);
                assert_rec_equal(&r, &ref[got]);
                got++;
        }
        assert_int_equal(got, nrec);

        {
                struct spe_record r;
                size_t c;

                assert_int_equal(spe_decoder_next(NULL, s.b, 1, &c, &r), -EINVAL);
                assert_int_equal(spe_decoder_next(&d, NULL, 1, &c, &r), -EINVAL);
                assert_int_equal(spe_decoder_next(&d, s.b, 1, NULL, &r), -EINVAL);
                assert_int_equal(spe_decoder_next(&d, s.b, 1, &c, NULL), -EINVAL);
        }
}

/* Garbage between records: skipped byte by byte, counted, records intact. */
static void test_garbage_between_records(void **state) {
        struct praw p[16];
        unsigned np = ref_packets(p);
        struct stream s = { .n = 0 };
        struct spe_record out[MAX_OUT];
        struct spe_decoder d;
        const uint8_t garbage[] = { 0xff, 0xfe, 0x02, 0xcd };

        for (unsigned i = 0; i < np; i++)
                put(&s, p[i]);
        put(&s, P_TS(REF_TS));
        put_bytes(&s, garbage, sizeof(garbage));
        for (unsigned i = 0; i < np; i++)
                put(&s, p[i]);
        put(&s, P_TS(REF_TS));

        assert_int_equal(decode_one_piece(MIDR_N1, s.b, s.n, out, &d), 2);
        check_ref(&out[0]);
        assert_int_equal(out[1].flags, SPE_REC_F_AFTER_ERROR);
        out[1].flags = 0;
        check_ref(&out[1]);
        assert_int_equal(d.stats.bad_header, sizeof(garbage));
        assert_int_equal(d.stats.dropped_records, 0);
        assert_int_equal(spe_decoder_errors(&d), sizeof(garbage));
}

/* Garbage inside a record: the partial record is dropped, not emitted half-built. */
static void test_garbage_mid_record(void **state) {
        struct praw p[16];
        unsigned np = ref_packets(p);
        struct stream s = { .n = 0 };
        struct spe_record out[MAX_OUT];
        struct spe_decoder d;

        put(&s, p[0]);          /* PC */
        put(&s, p[1]);          /* CONTEXT */
        put_bytes(&s, (const uint8_t[]) { 0xff }, 1);
        put(&s, p[5]);          /* total latency: the tail of the broken record */
        put(&s, P_END());
        for (unsigned i = 0; i < np; i++)
                put(&s, p[i]);
        put(&s, P_TS(REF_TS));

        assert_int_equal(decode_one_piece(MIDR_N1, s.b, s.n, out, &d), 2);
        /* tail record: only what followed the garbage, flagged */
        assert_int_equal(out[0].flags, SPE_REC_F_AFTER_ERROR | SPE_REC_F_END);
        assert_int_equal(out[0].present, SPE_REC_LAT_TOTAL);
        assert_int_equal(out[0].lat_total, 12);
        check_ref(&out[1]);
        assert_int_equal(d.stats.bad_header, 1);
        assert_int_equal(d.stats.dropped_records, 1);
        assert_int_equal(d.stats.records, 2);
}

/* Extended header with a bad second byte; a stray END is not a record. */
static void test_bad_extended(void **state) {
        struct praw p[16];
        unsigned np = ref_packets(p);
        struct stream s = { .n = 0 };
        struct spe_record out[MAX_OUT];
        struct spe_decoder d;

        put_bytes(&s, (const uint8_t[]) { 0x22, 0x01 }, 2);
        for (unsigned i = 0; i < np; i++)
                put(&s, p[i]);
        put(&s, P_TS(REF_TS));
        put(&s, P_END());

        assert_int_equal(decode_one_piece(MIDR_N1, s.b, s.n, out, &d), 1);
        assert_int_equal(out[0].flags, SPE_REC_F_AFTER_ERROR);
        assert_int_equal(d.stats.bad_ext_header, 1);
        assert_int_equal(d.stats.bad_header, 0);
        assert_int_equal(d.stats.empty_records, 2);
        out[0].flags = 0;
        check_ref(&out[0]);

        /* the same with the bad prefix split from its second byte */
        {
                struct spe_decoder d2;
                static struct spe_record out2[MAX_OUT];

                spe_decoder_init(&d2, 3, MIDR_N1);
                assert_int_equal(decode(&d2, s.b, s.n, 0, 1, out2), 1);
                assert_int_equal(out2[0].flags, SPE_REC_F_AFTER_ERROR);
                out2[0].flags = 0;
                assert_rec_equal(&out2[0], &out[0]);
                assert_int_equal(d2.stats.bad_ext_header, 1);
                assert_int_equal(d2.stats.empty_records, 2);
        }
}

/* The negative vector of quipper's decoder test must not yield a record. */
static void test_quipper_negative(void **state) {
        const uint8_t b[] = { 0xab, 0xcd, 0xef, 0xff, 0x99, 0x88, 0x77, 0x66, 0x55, 0x44 };
        struct spe_record out[MAX_OUT];
        struct spe_decoder d;

        assert_int_equal(decode_one_piece(MIDR_N1, b, sizeof(b), out, &d), 0);
        assert_int_equal(d.stats.bad_header, 4);
        assert_int_equal(d.stats.records, 0);
        assert_int_equal(d.carry_len, 3);       /* "66 55 44": a context packet still short */
        spe_decoder_reset(&d);
        assert_int_equal(d.stats.flushed_records, 1);
        assert_int_equal(d.stats.flushed_bytes, 3);
}

static void test_duplicates_and_unknown(void **state) {
        struct stream s = { .n = 0 };
        struct spe_record out[MAX_OUT];
        struct spe_decoder d;

        put(&s, P_ADDR(0, 0x1000));
        put(&s, P_ADDR(0, 0x2000));
        put(&s, P_ADDR(5, 0x3000));
        put(&s, P_CNT(3, 7));
        put(&s, P_CTX(2, 42));
        put(&s, P_OP(3, 0x00));
        put(&s, P_END());
        assert_int_equal(decode_one_piece(MIDR_N1, s.b, s.n, out, &d), 1);
        assert_true(out[0].pc.addr == 0x2000);
        assert_int_equal(out[0].flags, SPE_REC_F_END | SPE_REC_F_DUPLICATE | SPE_REC_F_UNKNOWN_PKT);
        assert_int_equal(out[0].present, SPE_REC_PC | SPE_REC_OP);
        assert_int_equal(out[0].op_subclass, SPE_OP_SUB_UNKNOWN);
        assert_int_equal(spe_record_op_kind(&out[0]), SPE_OP_KIND_UNKNOWN);
        assert_int_equal(d.stats.duplicate_pkts, 1);
        assert_int_equal(d.stats.unknown_index, 3);
        assert_int_equal(d.stats.reserved_op, 1);
}

/* Batch API: a full array stops early; the rest decodes on the next call. */
static void test_batch_limits(void **state) {
        struct stream s = { .n = 0 };
        struct spe_record recs[1];
        struct spe_decoder d;
        size_t nrec = build_multi(&s), pos = 0, got = 0, c;

        spe_decoder_init(&d, 3, MIDR_N1);
        assert_int_equal(spe_decoder_decode(&d, s.b, s.n, recs, 0, &c), 0);
        assert_int_equal(c, 0);
        while (pos < s.n) {
                size_t n = spe_decoder_decode(&d, s.b + pos, s.n - pos, recs, 1, &c);

                assert_true(n <= 1);
                got += n;
                pos += c;
        }
        assert_int_equal(got, nrec);
        assert_int_equal(d.stats.records, nrec);
}

static void test_reset(void **state) {
        struct praw p[16];
        unsigned np = ref_packets(p);
        struct stream s = { .n = 0 };
        struct spe_record out[MAX_OUT];
        struct spe_decoder d;
        size_t n;

        for (unsigned i = 0; i < np; i++)
                put(&s, p[i]);
        put(&s, P_TS(REF_TS));

        spe_decoder_init(&d, 3, MIDR_N1);
        /* half a record and half a packet, then a discontinuity */
        n = decode(&d, s.b, 12, 0, 0, out);
        assert_int_equal(n, 0);
        assert_true(d.in_record);
        assert_int_equal(d.carry_len, 3);      /* 9-byte PC, then 3 of the 5 context bytes */
        spe_decoder_reset(&d);
        assert_int_equal(d.stats.flushed_records, 1);
        assert_int_equal(d.stats.flushed_bytes, 3);
        assert_false(d.in_record);
        /* the next full record is clean and unflagged */
        n = decode(&d, s.b, s.n, 0, 0, out);
        assert_int_equal(n, 1);
        check_ref(&out[0]);
        assert_int_equal(spe_decoder_errors(&d), 1);
}

struct midr_case {
        uint64_t midr;
        enum spe_ds_map map;
};

static void test_midr_map(void **state) {
        static const struct midr_case cases[] = {
                { UINT64_C(0x414fd0c1), SPE_DS_MAP_COMMON },    /* Neoverse N1 */
                { UINT64_C(0x410fd490), SPE_DS_MAP_COMMON },    /* N2 */
                { UINT64_C(0x411fd401), SPE_DS_MAP_COMMON },    /* V1 */
                { UINT64_C(0x410fd4f0), SPE_DS_MAP_COMMON },    /* V2 */
                { UINT64_C(0x410fd810), SPE_DS_MAP_COMMON },    /* A720 */
                { UINT64_C(0x410fd870), SPE_DS_MAP_COMMON },    /* A725 */
                { UINT64_C(0x410fd4c0), SPE_DS_MAP_COMMON },    /* X1C */
                { UINT64_C(0x410fd4e0), SPE_DS_MAP_COMMON },    /* X3 */
                { UINT64_C(0x410fd850), SPE_DS_MAP_COMMON },    /* X925 */
                { UINT64_C(0x410fd034), SPE_DS_MAP_NONE },      /* A53 */
                { UINT64_C(0x410fd8e0), SPE_DS_MAP_NONE },      /* N3: not in perf's list */
                { UINT64_C(0x480fd0c0), SPE_DS_MAP_NONE },      /* another implementer, same part */
                { UINT64_C(0xc00fac41), SPE_DS_MAP_AMPERE1A },
                { UINT64_C(0xc00fac30), SPE_DS_MAP_NONE },      /* AmpereOne (not 1A) */
                { 0, SPE_DS_MAP_NONE },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                if (spe_ds_map_from_midr(cases[i].midr) != cases[i].map)
                        fail_msg("midr 0x%llx", (unsigned long long) cases[i].midr);
}

static void test_source_tables(void **state) {
        static const enum spe_data_src common[16] = {
                SPE_DATA_SRC_L1D, SPE_DATA_SRC_UNKNOWN, SPE_DATA_SRC_UNKNOWN, SPE_DATA_SRC_UNKNOWN,
                SPE_DATA_SRC_UNKNOWN, SPE_DATA_SRC_UNKNOWN, SPE_DATA_SRC_UNKNOWN, SPE_DATA_SRC_UNKNOWN,
                SPE_DATA_SRC_L2, SPE_DATA_SRC_PEER_CORE, SPE_DATA_SRC_LOCAL_CLUSTER, SPE_DATA_SRC_SYS_CACHE,
                SPE_DATA_SRC_PEER_CLUSTER, SPE_DATA_SRC_REMOTE, SPE_DATA_SRC_DRAM, SPE_DATA_SRC_UNKNOWN,
        };
        static const enum spe_data_src ampere[16] = {
                SPE_DATA_SRC_PEER_CORE, SPE_DATA_SRC_UNKNOWN, SPE_DATA_SRC_UNKNOWN, SPE_DATA_SRC_SYS_CACHE,
                SPE_DATA_SRC_UNKNOWN, SPE_DATA_SRC_REMOTE, SPE_DATA_SRC_UNKNOWN, SPE_DATA_SRC_DRAM,
                SPE_DATA_SRC_L1D, SPE_DATA_SRC_L2, SPE_DATA_SRC_UNKNOWN, SPE_DATA_SRC_UNKNOWN,
                SPE_DATA_SRC_UNKNOWN, SPE_DATA_SRC_UNKNOWN, SPE_DATA_SRC_UNKNOWN, SPE_DATA_SRC_UNKNOWN,
        };

        for (unsigned v = 0; v < 16; v++) {
                assert_int_equal(spe_data_src_from_raw(SPE_DS_MAP_COMMON, v), common[v]);
                assert_int_equal(spe_data_src_from_raw(SPE_DS_MAP_AMPERE1A, v), ampere[v]);
                assert_int_equal(spe_data_src_from_raw(SPE_DS_MAP_NONE, v), SPE_DATA_SRC_UNKNOWN);
        }
        assert_int_equal(spe_data_src_from_raw(SPE_DS_MAP_COMMON, 0x100), SPE_DATA_SRC_UNKNOWN);
        assert_int_equal(spe_data_src_from_raw(SPE_DS_MAP_COMMON, UINT64_C(1) << 63), SPE_DATA_SRC_UNKNOWN);

        assert_string_equal(spe_data_src_name(SPE_DATA_SRC_PEER_CLUSTER), "peer_cluster");
        assert_string_equal(spe_data_src_name(SPE_DATA_SRC_SYS_CACHE), "sys_cache");
        assert_string_equal(spe_data_src_name(SPE_DATA_SRC_NONE), "none");
        assert_string_equal(spe_data_src_name((enum spe_data_src) 99), "unknown");
        assert_string_equal(spe_peer_name(SPE_PEER_REMOTE), "remote");
}

/* Unknown CPU: raw value kept, source unknown, never a peer. */
static void test_source_unknown_cpu(void **state) {
        struct stream s = { .n = 0 };
        struct spe_record out[MAX_OUT];

        put(&s, P_OP(1, 0x00));
        put(&s, P_DS(2, 0x0009));
        put(&s, P_END());
        assert_int_equal(decode_one_piece(MIDR_A53, s.b, s.n, out, NULL), 1);
        assert_true(out[0].present & SPE_REC_SOURCE);
        assert_int_equal(out[0].source_raw, 9);
        assert_int_equal(out[0].source, SPE_DATA_SRC_UNKNOWN);
        assert_int_equal(spe_record_peer(&out[0]), SPE_PEER_NONE);

        assert_int_equal(decode_one_piece(MIDR_AMPERE1A, s.b, s.n, out, NULL), 1);
        assert_int_equal(out[0].source, SPE_DATA_SRC_L2);
}

struct peer_case {
        int op_class;           /* -1: no op packet */
        uint8_t op;
        int ds;                 /* -1: no data-source packet */
        enum spe_peer want;
};

static void test_peer(void **state) {
        static const struct peer_case cases[] = {
                { 1, 0x00, 0x9, SPE_PEER_LOCAL },       /* load, PEER_CORE */
                { 1, 0x00, 0xa, SPE_PEER_LOCAL },       /* LOCAL_CLUSTER */
                { 1, 0x00, 0xc, SPE_PEER_LOCAL },       /* PEER_CLUSTER */
                { 1, 0x00, 0xd, SPE_PEER_REMOTE },      /* REMOTE */
                { 1, 0x00, 0xb, SPE_PEER_NONE },        /* SYS_CACHE */
                { 1, 0x00, 0xe, SPE_PEER_NONE },        /* DRAM */
                { 1, 0x00, 0x0, SPE_PEER_NONE },        /* L1D */
                { 1, 0x00, 0x8, SPE_PEER_NONE },        /* L2 */
                { 1, 0x00, 0x5, SPE_PEER_NONE },        /* unknown value */
                { 1, 0x01, 0x9, SPE_PEER_NONE },        /* store */
                { 1, 0x16, 0x9, SPE_PEER_LOCAL },       /* LD AT AR: load side of an atomic */
                { 1, 0x05, 0xd, SPE_PEER_NONE },        /* ST SIMD-FP */
                { 1, 0x04, 0xd, SPE_PEER_REMOTE },      /* LD SIMD-FP */
                { -1, 0x00, 0x9, SPE_PEER_NONE },       /* no op packet */
                { 2, 0x00, 0x9, SPE_PEER_NONE },        /* branch */
                { 1, 0x00, -1, SPE_PEER_NONE },         /* no data source */
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct stream s = { .n = 0 };
                struct spe_record out[MAX_OUT];

                if (cases[i].op_class >= 0)
                        put(&s, P_OP((unsigned) cases[i].op_class, cases[i].op));
                if (cases[i].ds >= 0)
                        put(&s, P_DS(1, (uint64_t) cases[i].ds));
                put(&s, P_ADDR(0, 0x400000));
                put(&s, P_END());
                assert_int_equal(decode_one_piece(MIDR_N1, s.b, s.n, out, NULL), 1);
                if (spe_record_peer(&out[0]) != cases[i].want)
                        fail_msg("peer case %zu", i);
        }
        assert_int_equal(spe_record_peer(NULL), SPE_PEER_NONE);
}

struct op_case {
        unsigned cls;
        uint8_t v;
        enum spe_op_subclass sub;
        uint32_t flags;
        uint8_t evl_log2;
        enum spe_op_kind kind;
};

static void test_op_decode(void **state) {
        static const struct op_case cases[] = {
                { 0, 0x00, SPE_OP_SUB_OTHER, 0, 0, SPE_OP_KIND_OTHER },
                { 0, 0x01, SPE_OP_SUB_OTHER, SPE_OPF_COND, 0, SPE_OP_KIND_OTHER },
                { 0, 0x06, SPE_OP_SUB_OTHER, SPE_OPF_SIMD | SPE_OPF_FP, 0, SPE_OP_KIND_OTHER },
                { 0, 0x08, SPE_OP_SUB_SVE_OTHER, SPE_OPF_SVE, 5, SPE_OP_KIND_OTHER },
                { 0, 0x2e, SPE_OP_SUB_SVE_OTHER, SPE_OPF_SVE | SPE_OPF_PRED | SPE_OPF_FP, 7, SPE_OP_KIND_OTHER },
                { 0, 0x88, SPE_OP_SUB_SME_OTHER, SPE_OPF_SME, 7, SPE_OP_KIND_OTHER },
                { 0, 0x9e, SPE_OP_SUB_SME_OTHER, SPE_OPF_SME | SPE_OPF_FP, 10, SPE_OP_KIND_OTHER },
                { 0, 0x80, SPE_OP_SUB_UNKNOWN, 0, 0, SPE_OP_KIND_OTHER },
                { 1, 0x00, SPE_OP_SUB_LDST_GP_REG, SPE_OPF_LOAD, 0, SPE_OP_KIND_LOAD },
                { 1, 0x01, SPE_OP_SUB_LDST_GP_REG, SPE_OPF_STORE, 0, SPE_OP_KIND_STORE },
                { 1, 0x16, SPE_OP_SUB_LDST_EXT, SPE_OPF_LOAD | SPE_OPF_ATOMIC | SPE_OPF_ACQREL, 0, SPE_OP_KIND_ATOMIC },
                { 1, 0x0b, SPE_OP_SUB_LDST_EXT, SPE_OPF_STORE | SPE_OPF_EXCLUSIVE, 0, SPE_OP_KIND_STORE },
                { 1, 0x05, SPE_OP_SUB_LDST_SIMD_FP, SPE_OPF_STORE | SPE_OPF_SIMD, 0, SPE_OP_KIND_STORE },
                { 1, 0x10, SPE_OP_SUB_LDST_UNSPEC_REG, SPE_OPF_LOAD | SPE_OPF_UNSPEC_REG, 0, SPE_OP_KIND_LOAD },
                { 1, 0x31, SPE_OP_SUB_LDST_NV_SYSREG, SPE_OPF_STORE | SPE_OPF_NV_SYSREG, 0, SPE_OP_KIND_STORE },
                { 1, 0x14, SPE_OP_SUB_LDST_MTE_TAG, SPE_OPF_LOAD | SPE_OPF_MTE_TAG, 0, SPE_OP_KIND_LOAD },
                { 1, 0x20, SPE_OP_SUB_LDST_MEMCPY, SPE_OPF_LOAD | SPE_OPF_MEMCPY, 0, SPE_OP_KIND_LOAD },
                { 1, 0x21, SPE_OP_SUB_LDST_MEMCPY, SPE_OPF_STORE | SPE_OPF_MEMCPY, 0, SPE_OP_KIND_STORE },
                { 1, 0x25, SPE_OP_SUB_LDST_MEMSET, SPE_OPF_STORE | SPE_OPF_MEMSET, 0, SPE_OP_KIND_STORE },
                { 1, 0x08, SPE_OP_SUB_LDST_SVE_SME, SPE_OPF_LOAD | SPE_OPF_SVE, 5, SPE_OP_KIND_LOAD },
                { 1, 0xac, SPE_OP_SUB_LDST_SVE_SME, SPE_OPF_LOAD | SPE_OPF_SVE | SPE_OPF_PRED | SPE_OPF_SG, 7, SPE_OP_KIND_LOAD },
                { 1, 0x44, SPE_OP_SUB_LDST_GCS, SPE_OPF_LOAD | SPE_OPF_GCS | SPE_OPF_GCS_COMM, 0, SPE_OP_KIND_LOAD },
                { 1, 0x41, SPE_OP_SUB_LDST_GCS, SPE_OPF_STORE | SPE_OPF_GCS, 0, SPE_OP_KIND_STORE },
                { 1, 0x80, SPE_OP_SUB_UNKNOWN, SPE_OPF_LOAD, 0, SPE_OP_KIND_LOAD },
                { 2, 0x00, SPE_OP_SUB_BRANCH, SPE_OPF_BRANCH, 0, SPE_OP_KIND_BRANCH },
                { 2, 0x01, SPE_OP_SUB_BRANCH, SPE_OPF_BRANCH | SPE_OPF_COND, 0, SPE_OP_KIND_BRANCH },
                { 2, 0x02, SPE_OP_SUB_BRANCH, SPE_OPF_BRANCH | SPE_OPF_INDIRECT, 0, SPE_OP_KIND_BRANCH },
                { 2, 0x04, SPE_OP_SUB_BRANCH, SPE_OPF_BRANCH | SPE_OPF_GCS, 0, SPE_OP_KIND_BRANCH },
                { 2, 0x08, SPE_OP_SUB_BRANCH, SPE_OPF_BRANCH | SPE_OPF_CALL, 0, SPE_OP_KIND_BRANCH },
                { 2, 0x12, SPE_OP_SUB_BRANCH, SPE_OPF_BRANCH | SPE_OPF_RET | SPE_OPF_INDIRECT, 0, SPE_OP_KIND_BRANCH },
                { 2, 0x18, SPE_OP_SUB_BRANCH, SPE_OPF_BRANCH | SPE_OPF_CR_OTHER, 0, SPE_OP_KIND_BRANCH },
                { 3, 0x00, SPE_OP_SUB_UNKNOWN, 0, 0, SPE_OP_KIND_UNKNOWN },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct stream s = { .n = 0 };
                struct spe_record out[MAX_OUT];

                put(&s, P_OP(cases[i].cls, cases[i].v));
                put(&s, P_END());
                assert_int_equal(decode_one_piece(MIDR_N1, s.b, s.n, out, NULL), 1);
                if (out[0].op_subclass != cases[i].sub || out[0].op_flags != cases[i].flags ||
                    out[0].op_evl_bits_log2 != cases[i].evl_log2 ||
                    spe_record_op_kind(&out[0]) != cases[i].kind)
                        fail_msg("op class %u payload 0x%02x: sub %u flags 0x%x evl %u kind %d",
                                 cases[i].cls, cases[i].v, out[0].op_subclass, out[0].op_flags,
                                 out[0].op_evl_bits_log2, spe_record_op_kind(&out[0]));
                assert_int_equal(out[0].op_class, cases[i].cls);
                assert_int_equal(out[0].op_raw, cases[i].v);
        }
        assert_string_equal(spe_op_kind_name(SPE_OP_KIND_ATOMIC), "atomic");
        assert_string_equal(spe_op_subclass_name(SPE_OP_SUB_LDST_SVE_SME), "SVE-SME-REG");
        assert_string_equal(spe_op_subclass_name((enum spe_op_subclass) 200), "UNKNOWN");
}

/* Kernel/user address rules of perf's arm_spe_calc_ip. */
static void test_address_rules(void **state) {
        static const struct {
                unsigned idx;
                uint64_t payload, want;
        } cases[] = {
                { 0, UINT64_C(0xa0ff80001029d3f4), UINT64_C(0xffff80001029d3f4) },     /* el1 ns */
                { 0, UINT64_C(0xc0ffba66eda1c2d0), UINT64_C(0xffffba66eda1c2d0) },     /* el2 ns */
                { 0, UINT64_C(0x80007ffdbf2143e0), UINT64_C(0x00007ffdbf2143e0) },     /* el0 ns */
                { 0, UINT64_C(0x20ff80001029d3f4), UINT64_C(0x00ff80001029d3f4) },     /* el1 secure: no fill */
                { 0, UINT64_C(0xe0ff80001029d3f4), UINT64_C(0x00ff80001029d3f4) },     /* el3: no fill */
                { 2, UINT64_C(0x00ff000070d840d0), UINT64_C(0xffff000070d840d0) },     /* kernel VA */
                { 2, UINT64_C(0xf0f0000070d840d0), UINT64_C(0xfff0000070d840d0) },     /* [55:52]=0xf, tag 0xf0 */
                { 2, UINT64_C(0x0fe0000070d840d0), UINT64_C(0x00e0000070d840d0) },     /* [55:52]=0xe: user */
                { 2, UINT64_C(0x3c00aaaae65dda43), UINT64_C(0x0000aaaae65dda43) },     /* tag stripped */
                { 3, UINT64_C(0xffffffffffffffff), UINT64_C(0x00ffffffffffffff) },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct stream s = { .n = 0 };
                struct spe_record out[MAX_OUT];
                uint64_t got;

                put(&s, P_ADDR(cases[i].idx, cases[i].payload));
                put(&s, P_END());
                assert_int_equal(decode_one_piece(MIDR_N1, s.b, s.n, out, NULL), 1);
                got = cases[i].idx == 0 ? out[0].pc.addr : cases[i].idx == 2 ? out[0].va : out[0].pa;
                if (got != cases[i].want)
                        fail_msg("case %zu: got 0x%llx", i, (unsigned long long) got);
        }
}

static void test_event_names(void **state) {
        assert_string_equal(spe_event_name(SPE_EV_TLB_WALK), "TLB-REFILL");
        assert_string_equal(spe_event_name(SPE_EV_LLC_MISS), "LLC-REFILL");
        assert_string_equal(spe_event_name(SPE_EV_CACHE_DATA_MODIFIED), "HITM");
        assert_null(spe_event_name(SPE_EV_IMPDEF_12));
        assert_null(spe_event_name(63));
        assert_null(spe_event_name(1000));
}

static void test_null_safety(void **state) {
        struct spe_record r;
        size_t c = 99;

        spe_decoder_init(NULL, 0, 0);
        spe_decoder_reset(NULL);
        assert_int_equal(spe_decoder_errors(NULL), 0);
        assert_int_equal(spe_decoder_decode(NULL, NULL, 0, &r, 1, &c), 0);
        assert_int_equal(c, 0);
        assert_int_equal(spe_record_op_kind(NULL), SPE_OP_KIND_UNKNOWN);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_full_record),
                cmocka_unit_test(test_order_independence),
                cmocka_unit_test(test_padding),
                cmocka_unit_test(test_end_vs_timestamp),
                cmocka_unit_test(test_multi_reference),
                cmocka_unit_test(test_chunked_every_split),
                cmocka_unit_test(test_next_api),
                cmocka_unit_test(test_garbage_between_records),
                cmocka_unit_test(test_garbage_mid_record),
                cmocka_unit_test(test_bad_extended),
                cmocka_unit_test(test_quipper_negative),
                cmocka_unit_test(test_duplicates_and_unknown),
                cmocka_unit_test(test_batch_limits),
                cmocka_unit_test(test_reset),
                cmocka_unit_test(test_midr_map),
                cmocka_unit_test(test_source_tables),
                cmocka_unit_test(test_source_unknown_cpu),
                cmocka_unit_test(test_peer),
                cmocka_unit_test(test_op_decode),
                cmocka_unit_test(test_address_rules),
                cmocka_unit_test(test_event_names),
                cmocka_unit_test(test_null_safety),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
