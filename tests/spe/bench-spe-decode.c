/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Micro-benchmark of the SPE decoders (not a test: figures only, no
 * assertions on time). Builds an in-memory stream of 64-byte records with
 * the op mix of a typical run (loads, stores, branches, other ops, so the
 * packets present vary from record to record) in the Neoverse N1
 * fixed-slot layout (quipper's N1 test record), then times:
 *   - baseline: a byte-sum over the same buffer (same run),
 *   - spe_pkt_decode() over every packet,
 *   - spe_decoder_decode() (batch) and spe_decoder_next() (one record per call).
 * A second stream holds the same packets back to back with each record's
 * padding split at random over three places (armprofd-spegen
 * --pad-layout=split uses two): packets then sit at offsets that change from
 * record to record, and the dispatch after each padding run mispredicts.
 * Usage: bench-spe-decode [RECORDS] (default 1000000).
 * Reference point outside this run: perf 6.1 `perf script --itrace=e`
 * decodes ~6-8 M records/s on the 2-vCPU build VM (bench-replay measures
 * it in the same run).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "macro.h"
#include "parse-util.h"
#include "spe-pkt.h"
#include "spe-rec.h"

#define RECORD_SIZE 64U
#define PASSES 5
#define BATCH 256

static uint64_t rng_state = UINT64_C(0x9e3779b97f4a7c15);

static uint64_t rnd(void) {
        /* xorshift64*: reproducible, fast, good enough for field values */
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return rng_state * UINT64_C(0x2545f4914f6cdd1d);
}

static uint8_t *put_le(uint8_t *p, uint64_t v, unsigned n) {
        for (unsigned i = 0; i < n; i++)
                *p++ = (uint8_t) (v >> (8 * i));
        return p;
}

/*
 * The Neoverse N1 slot of each packet kind (quipper's N1 test record and the
 * captures), written out here on purpose rather than taken from the
 * decoder. Packets absent from a record leave their slot zero.
 */
enum {
        SLOT_PC = 0x00, SLOT_CTX = 0x0E, SLOT_OP = 0x13, SLOT_EV = 0x15, SLOT_ISSUE = 0x18,
        SLOT_TOTAL = 0x1B, SLOT_ADDR = 0x1E, SLOT_XLAT = 0x27, SLOT_DS = 0x33, SLOT_TS = 0x37,
};

#define MAX_PKTS 10

struct pkt {
        uint8_t slot;
        uint8_t len;
        uint8_t b[9];
};

static struct pkt *add_pkt(struct pkt *k, uint8_t slot, uint8_t hdr, uint64_t payload, unsigned plen) {
        k->slot = slot;
        k->len = (uint8_t) (1 + plen);
        k->b[0] = hdr;
        put_le(k->b + 1, payload, plen);
        return k + 1;
}

/*
 * One record with the op mix of a typical run: 50% loads (VA, xlat, data
 * source), 20% stores (VA, xlat), 20% branches (target), 10% other ops
 * (no address). fixed: the N1 slots. varied: the same packets back to back
 * with the record's padding split at random over three places (after the
 * PC, before a random later packet, before the timestamp), as
 * armprofd-spegen --pad-layout=split does.
 */
static void build_record(uint8_t *rec, uint64_t i, bool varied) {
        static const uint8_t sources[] = { 0x0, 0x0, 0x0, 0x8, 0x9, 0xa, 0xb, 0xc, 0xd, 0xe };
        struct pkt pkts[MAX_PKTS], *k = pkts;
        uint64_t r = rnd(), v = rnd();
        unsigned kind = (unsigned) (r % 10), n, content = 0, slack, pad1, pad2, split;
        uint8_t *p = rec;

        k = add_pkt(k, SLOT_PC, SPE_HDR_ADDRESS | SPE_ADDR_IDX_PC,
                    (UINT64_C(1) << SPE_ADDR_NS_SHIFT) | (UINT64_C(0xaaaac0000000) + ((r >> 8) & 0xffffc)), 8);
        k = add_pkt(k, SLOT_CTX, SPE_HDR_CONTEXT | SPE_CTX_IDX_EL1, 4242 + (r & 7), 4);
        if (kind < 5)
                k = add_pkt(k, SLOT_OP, SPE_HDR_OP_TYPE | SPE_OP_CLASS_LDST, SPE_OP_LDST_GP_REG, 1);
        else if (kind < 7)
                k = add_pkt(k, SLOT_OP, SPE_HDR_OP_TYPE | SPE_OP_CLASS_LDST, SPE_OP_LDST_GP_REG | SPE_OP_LDST_ST, 1);
        else if (kind < 9)
                k = add_pkt(k, SLOT_OP, SPE_HDR_OP_TYPE | SPE_OP_CLASS_BRANCH, SPE_OP_BR_COND, 1);
        else
                k = add_pkt(k, SLOT_OP, SPE_HDR_OP_TYPE | SPE_OP_CLASS_OTHER, 0, 1);
        k = add_pkt(k, SLOT_EV, SPE_HDR_EVENTS | (1U << SPE_HDR_SZ_SHIFT), 0x0002 | ((r >> 20) & 0x031c), 2);
        k = add_pkt(k, SLOT_ISSUE, SPE_HDR_COUNTER | SPE_CNT_IDX_ISSUE, (r >> 32) & 0xff, 2);
        k = add_pkt(k, SLOT_TOTAL, SPE_HDR_COUNTER | SPE_CNT_IDX_TOTAL, (r >> 40) & 0x3ff, 2);
        if (kind < 7) {
                k = add_pkt(k, SLOT_ADDR, SPE_HDR_ADDRESS | SPE_ADDR_IDX_DATA_VA,
                            UINT64_C(0xffff8a000000) + ((r >> 4) & 0xffff8), 8);
                k = add_pkt(k, SLOT_XLAT, SPE_HDR_COUNTER | SPE_CNT_IDX_XLAT, (r >> 50) & 0xf, 2);
        } else if (kind < 9) {
                k = add_pkt(k, SLOT_ADDR, SPE_HDR_ADDRESS | SPE_ADDR_IDX_BR_TGT,
                            (UINT64_C(1) << SPE_ADDR_NS_SHIFT) | (UINT64_C(0xaaaac0000000) + ((r >> 12) & 0xffffc)), 8);
        }
        if (kind < 5)
                k = add_pkt(k, SLOT_DS, SPE_HDR_DATA_SOURCE, sources[(r >> 56) % ELEMENTSOF(sources)], 1);
        k = add_pkt(k, SLOT_TS, SPE_HDR_TIMESTAMP, UINT64_C(1000000000) + i * 100, 8);
        n = (unsigned) (k - pkts);

        memset(rec, 0, RECORD_SIZE);
        if (!varied) {
                for (unsigned j = 0; j < n; j++)
                        memcpy(rec + pkts[j].slot, pkts[j].b, pkts[j].len);
                return;
        }
        for (unsigned j = 0; j < n; j++)
                content += pkts[j].len;
        slack = RECORD_SIZE - content;
        pad1 = (unsigned) (v % (slack + 1));
        pad2 = (unsigned) ((v >> 8) % (slack - pad1 + 1));
        split = 2 + (unsigned) ((v >> 16) % (n - 2));  /* a packet after the context, or the timestamp */
        for (unsigned j = 0; j < n; j++) {
                if (j == split)
                        p += pad2;
                if (j == n - 1)
                        p = rec + RECORD_SIZE - pkts[j].len;  /* the rest of the padding */
                memcpy(p, pkts[j].b, pkts[j].len);
                p += pkts[j].len;
                if (j == 0)
                        p += pad1;
        }
}

static double now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static volatile uint64_t sink;

static double bench_baseline(const uint8_t *buf, size_t len, uint64_t *ret_records) {
        double t0 = now();
        uint64_t sum = 0;

        for (size_t i = 0; i < len; i++)
                sum += buf[i];
        sink += sum;
        *ret_records = len / RECORD_SIZE;
        return now() - t0;
}

static double bench_pkt(const uint8_t *buf, size_t len, uint64_t *ret_records) {
        double t0 = now();
        uint64_t sum = 0, records = 0;
        size_t pos = 0;

        while (pos < len) {
                struct spe_pkt p;
                int k = spe_pkt_decode(buf + pos, len - pos, &p);

                if (k <= 0) {
                        pos++;
                        continue;
                }
                sum += p.payload;
                records += p.type == SPE_PKT_TIMESTAMP || p.type == SPE_PKT_END;
                pos += (size_t) k;
        }
        sink += sum;
        *ret_records = records;
        return now() - t0;
}

static double bench_batch(const uint8_t *buf, size_t len, uint64_t *ret_records) {
        static struct spe_record recs[BATCH];
        struct spe_decoder d;
        double t0 = now();
        uint64_t sum = 0;
        size_t pos = 0;

        spe_decoder_init(&d, 0, UINT64_C(0x414fd0c1));
        while (pos < len) {
                size_t c, n = spe_decoder_decode(&d, buf + pos, len - pos, recs, BATCH, &c);

                for (size_t i = 0; i < n; i++)
                        sum += recs[i].pc.addr + recs[i].lat_total + recs[i].source;
                pos += c;
        }
        sink += sum;
        *ret_records = d.stats.records;
        return now() - t0;
}

static double bench_next(const uint8_t *buf, size_t len, uint64_t *ret_records) {
        struct spe_decoder d;
        struct spe_record r;
        double t0 = now();
        uint64_t sum = 0;
        size_t pos = 0;

        spe_decoder_init(&d, 0, UINT64_C(0x414fd0c1));
        while (pos < len) {
                size_t c;

                if (spe_decoder_next(&d, buf + pos, len - pos, &c, &r) == 1)
                        sum += r.pc.addr + r.lat_total + r.source;
                pos += c;
        }
        sink += sum;
        *ret_records = d.stats.records;
        return now() - t0;
}

typedef double (*bench_fn)(const uint8_t *buf, size_t len, uint64_t *ret_records);

static double best_of(bench_fn fn, const uint8_t *buf, size_t len, uint64_t *ret_records) {
        double best = 1e30;

        for (int i = 0; i < PASSES; i++) {
                double t = fn(buf, len, ret_records);

                best = MIN(best, t);
        }
        return best;
}

int main(int argc, char **argv) {
        uint64_t nrec = 1000000, got;
        const struct {
                const char *name;
                bench_fn fn;
        } runs[] = {
                { "baseline byte-sum", bench_baseline },
                { "spe_pkt_decode", bench_pkt },
                { "spe_decoder_decode (batch)", bench_batch },
                { "spe_decoder_next", bench_next },
        };
        double base = 0;
        uint8_t *buf;
        size_t len;

        if (argc > 1 && safe_atou64(argv[1], &nrec) < 0) {
                fprintf(stderr, "usage: %s [RECORDS]\n", argv[0]);
                return EXIT_FAILURE;
        }
        if (nrec == 0 || nrec > UINT64_C(100000000)) {
                fprintf(stderr, "RECORDS must be 1..100000000\n");
                return EXIT_FAILURE;
        }

        len = (size_t) nrec * RECORD_SIZE;
        buf = malloc(len);
        if (!buf) {
                fprintf(stderr, "out of memory\n");
                return EXIT_FAILURE;
        }
        for (int varied = 0; varied <= 1; varied++) {
                for (uint64_t i = 0; i < nrec; i++)
                        build_record(buf + i * RECORD_SIZE, i, varied);

                printf("%sstream: %" PRIu64 " records x %u bytes = %.1f MiB, %s, best of %d passes\n",
                       varied ? "\n" : "", nrec, RECORD_SIZE, (double) len / (1 << 20),
                       varied ? "padding split at random" : "N1 fixed slots", PASSES);
                for (size_t i = 0; i < ELEMENTSOF(runs); i++) {
                        double t = best_of(runs[i].fn, buf, len, &got);

                        if (i == 0)
                                base = t;
                        if (got != nrec)
                                printf("  note: %s saw %" PRIu64 " records\n", runs[i].name, got);
                        printf("%-28s %8.3f ms  %8.2f M records/s  %8.1f MB/s  %6.2fx baseline time\n",
                               runs[i].name, t * 1e3, (double) nrec / t / 1e6, (double) len / t / 1e6, t / base);
                }
        }
        free(buf);
        return EXIT_SUCCESS;
}
