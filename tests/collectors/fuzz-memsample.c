/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: arbitrary bytes as the body of an x86 memory sample
 * (a PERF_RECORD_SAMPLE of perf mem/c2c record, outside input in a replayed
 * file) through perf_record_parse_sample() and memsample_decode(). The first
 * byte picks the layout: WEIGHT or WEIGHT_STRUCT, with or without PHYS_ADDR
 * and DATA_PAGE_SIZE, and the record's cpumode; the rest is the body. The
 * decoder's promises are checked: a record is a load or a store, a weight
 * past 16 bits is clamped and counted, every sample is a record or a drop.
 */
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "memsample-decode.h"
#include "perf-data.h"
#include "perf-record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* perf c2c record's sample_type (tools/perf/builtin-c2c.c, perf mem's -W -d -p). */
        uint64_t type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |
                        PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_DATA_SRC;
        static const uint16_t modes[] = { PERF_RECORD_MISC_USER, PERF_RECORD_MISC_KERNEL,
                                          PERF_RECORD_MISC_GUEST_USER, PERF_RECORD_MISC_HYPERVISOR };
        struct perf_event_attr attr = { .size = sizeof(attr), .type = PERF_TYPE_RAW };
        struct perf_data_attr dattr = {};
        struct memsample_stats st = {};
        struct perf_data_record rec;
        struct perf_data_sample s;
        struct spe_record out;
        uint8_t *raw;
        size_t len;

        if (size < 1 || size > 4096)
                return 0;
        type |= data[0] & 1 ? PERF_SAMPLE_WEIGHT_STRUCT : PERF_SAMPLE_WEIGHT;
        if (data[0] & 2)
                type |= PERF_SAMPLE_PHYS_ADDR;
        if (data[0] & 4)
                type |= PERF_SAMPLE_DATA_PAGE_SIZE;
        attr.sample_type = type;
        attr.precise_ip = 2;

        /* The record as a file holds it: header, then the body. */
        len = PERF_RECORD_HEADER_SIZE + size - 1;
        raw = malloc(len);
        if (!raw)
                return 0;
        memcpy(raw + PERF_RECORD_HEADER_SIZE, data + 1, size - 1);
        ((struct perf_event_header *) raw)->type = PERF_RECORD_SAMPLE;
        ((struct perf_event_header *) raw)->misc = modes[(data[0] >> 3) % ELEMENTSOF(modes)];
        ((struct perf_event_header *) raw)->size = (uint16_t) len;
        perf_record_header(raw, 0, &rec);
        if (perf_record_parse_sample(&attr, &rec, &s) == 0) {
                int k;

                dattr.attr = attr;
                s.attr = &dattr;
                k = memsample_decode(&s, &out, &st);
                if (k < 0 || st.samples != 1 || st.records != (uint64_t) k ||
                    st.records + st.dropped_no_data_src + st.dropped_not_mem != 1 ||
                    st.loads + st.stores != st.records || st.peer > st.loads)
                        abort();
                /* A record is a load or a store, never both; a weight past 16 bits is clamped, said. */
                if (k == 1 && !(out.op_flags & SPE_OPF_LOAD) == !(out.op_flags & SPE_OPF_STORE))
                        abort();
                if (k == 1 && (out.present & SPE_REC_LAT_TOTAL) && s.weight > UINT16_MAX &&
                    (out.lat_total != UINT16_MAX || st.lat_clamped != 1))
                        abort();
        }
        free(raw);
        return 0;
}
