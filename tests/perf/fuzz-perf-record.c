/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: perf-record.c's parsers over (attr, record bytes), as the
 * live rings and the samplers call them with no perf.data around. The input
 * is five little-endian u64s of attr (sample_type, read_format, flags: bit 0
 * sample_id_all, bit 1 PERF_SAMPLE_BRANCH_HW_INDEX; sample_regs_user,
 * sample_regs_intr), then one record; its header.size is clamped to the
 * bytes there are, as the rings guarantee. Every pointer a parser returns is
 * read whole, so ASan sees any that strays outside the record.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "perf-record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ATTR_WORDS 5

static volatile uint64_t sink;

static void touch(const void *p, size_t n) {
        const uint8_t *b = p;
        uint64_t h = 0;

        for (size_t i = 0; i < n; i++)
                h = h * 31 + b[i];
        sink += h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct perf_event_attr attr = {};
        struct perf_data_record rec;
        uint8_t *copy;
        uint32_t tlen = 0;
        uint16_t len;

        if (size < ATTR_WORDS * 8 + PERF_RECORD_HEADER_SIZE)
                return 0;
        attr.sample_type = perf_rd64(data);
        attr.read_format = perf_rd64(data + 8);
        attr.sample_id_all = perf_rd64(data + 16) & 1;
        if (perf_rd64(data + 16) & 2)
                attr.branch_sample_type = PERF_SAMPLE_BRANCH_HW_INDEX;
        attr.sample_regs_user = perf_rd64(data + 24);
        attr.sample_regs_intr = perf_rd64(data + 32);
        data += ATTR_WORDS * 8;
        size -= ATTR_WORDS * 8;

        /* An exact-size copy, so that any read past header.size is a heap overflow. */
        len = (uint16_t) (size > UINT16_MAX ? UINT16_MAX : size);
        copy = malloc(len);
        if (!copy)
                return 0;
        memcpy(copy, data, len);
        perf_record_header(copy, 0, &rec);
        if (rec.size < PERF_RECORD_HEADER_SIZE || rec.size > len)
                rec.size = len;

        if (rec.type == PERF_RECORD_SAMPLE) {
                struct perf_data_sample s;

                if (perf_record_parse_sample(&attr, &rec, &s) == 0) {
                        touch(s.callchain, s.nr_callchain * 8);
                        touch(s.regs_user, s.nr_regs_user * 8);
                        touch(s.stack_user, s.stack_user_dyn_size);
                        touch(s.rest, s.rest_len);
                        sink += s.rec.sid.pid + s.rec.sid.cpu + s.weight + s.data_src;
                }
                free(copy);
                return 0;
        }

        if (perf_record_parse_trailer(&attr, &rec, 0, &tlen) < 0) {
                free(copy);
                return 0;
        }
        switch (rec.type) {
        case PERF_RECORD_MMAP:
        case PERF_RECORD_MMAP2: {
                struct perf_data_mmap m;

                if (perf_record_parse_mmap(&rec, tlen, &m) == 0)
                        touch(m.filename, strlen(m.filename));
                break;
        }
        case PERF_RECORD_COMM: {
                struct perf_data_comm c;

                if (perf_record_parse_comm(&rec, tlen, &c) == 0)
                        touch(c.comm, strlen(c.comm));
                break;
        }
        case PERF_RECORD_FORK:
        case PERF_RECORD_EXIT: {
                struct perf_data_task t;

                if (perf_record_parse_task(&rec, tlen, &t) == 0)
                        sink += t.pid + t.time;
                break;
        }
        case PERF_RECORD_LOST:
        case PERF_RECORD_LOST_SAMPLES: {
                struct perf_data_lost l;

                if (perf_record_parse_lost(&rec, tlen, &l) == 0)
                        sink += l.lost;
                break;
        }
        case PERF_RECORD_AUX: {
                struct perf_data_aux a;

                if (perf_record_parse_aux(&rec, tlen, &a) == 0)
                        sink += a.aux_offset + a.flags;
                break;
        }
        case PERF_RECORD_ITRACE_START: {
                struct perf_data_itrace_start is;

                if (perf_record_parse_itrace_start(&rec, tlen, &is) == 0)
                        sink += is.tid;
                break;
        }
        case PERF_RECORD_CGROUP: {
                struct perf_data_cgroup c;

                if (perf_record_parse_cgroup(&rec, tlen, &c) == 0)
                        touch(c.path, strlen(c.path));
                break;
        }
        case PERF_RECORD_SWITCH:
        case PERF_RECORD_SWITCH_CPU_WIDE: {
                struct perf_data_switch sw;

                if (perf_record_parse_switch(&rec, tlen, &sw) == 0)
                        sink += sw.next_prev_tid;
                break;
        }
        default:
                break;
        }
        free(copy);
        return 0;
}
