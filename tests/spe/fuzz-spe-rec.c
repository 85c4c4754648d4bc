/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the record decoder fed in chunks whose sizes come from
 * the input itself. The first byte seeds the chunk sizes; the same stream
 * is also decoded in one piece and both must yield the same records and
 * the same counters (chunking must never change the result).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "spe-rec.h"

#define MAX_RECS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t run(const uint8_t *buf, size_t len, unsigned seed, struct spe_decoder *d,
                  struct spe_record *out, size_t max_out) {
        struct spe_record recs[3];
        size_t pos = 0, nout = 0;
        unsigned x = seed | 1U;

        spe_decoder_init(d, 7, UINT64_C(0x414fd0c1));
        while (pos < len) {
                size_t chunk, used = 0;

                if (seed == 0)
                        chunk = len - pos;
                else {
                        x = x * 1103515245U + 12345U;
                        chunk = 1 + (x >> 16) % 23;
                        if (chunk > len - pos)
                                chunk = len - pos;
                }
                while (used < chunk) {
                        size_t c = 0, n;

                        n = spe_decoder_decode(d, buf + pos + used, chunk - used, recs, 3, &c);
                        if (c > chunk - used)
                                abort();
                        for (size_t i = 0; i < n; i++)
                                if (nout < max_out)
                                        out[nout++] = recs[i];
                        used += c;
                }
                pos += chunk;
        }
        return nout;
}

static int rec_eq(const struct spe_record *a, const struct spe_record *b) {
        return a->present == b->present && a->flags == b->flags && a->pc.addr == b->pc.addr &&
               a->br_tgt.addr == b->br_tgt.addr && a->pbt.addr == b->pbt.addr && a->va == b->va &&
               a->pa == b->pa && a->timestamp == b->timestamp && a->events == b->events &&
               a->source_raw == b->source_raw && a->op_flags == b->op_flags &&
               a->context == b->context && a->lat_total == b->lat_total &&
               a->lat_issue == b->lat_issue && a->lat_xlat == b->lat_xlat &&
               a->op_raw == b->op_raw && a->op_subclass == b->op_subclass && a->source == b->source;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static struct spe_record a[MAX_RECS], b[MAX_RECS];
        struct spe_decoder da, db;
        size_t na, nb;

        if (size < 1)
                return 0;

        na = run(data + 1, size - 1, 0, &da, a, MAX_RECS);
        nb = run(data + 1, size - 1, data[0] + 1U, &db, b, MAX_RECS);
        if (na != nb || da.stats.records != db.stats.records ||
            da.stats.bad_header != db.stats.bad_header ||
            da.stats.bad_ext_header != db.stats.bad_ext_header ||
            da.stats.dropped_records != db.stats.dropped_records ||
            da.stats.packets != db.stats.packets || da.stats.bytes != db.stats.bytes ||
            da.stats.bytes != size - 1)
                abort();
        for (size_t i = 0; i < na; i++) {
                if (!rec_eq(&a[i], &b[i]))
                        abort();
                (void) spe_record_peer(&a[i]);
                (void) spe_op_name(&a[i]);
        }
        spe_decoder_reset(&da);
        return 0;
}
