/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Micro-benchmark of the sampler's side of ingestion (not a test: figures
 * only, no assertions on time): samples/s through one CPU's data ring
 * (collectors/sampler/sampler-ring.c: the ring walk, the shared parser,
 * the process table's lookups, the batches handed to a sink that reads the
 * callchain, registers and stack), for the two shapes a sample has:
 *   - frame pointers: a 24-entry callchain, ~240 bytes a record;
 *   - DWARF: the same, plus 20 user registers and an 8 KiB stack copy,
 *     ~8.6 KiB a record, as perf record --call-graph dwarf writes them.
 * The baseline, in the same run, is a byte sum over the same records (what
 * reading them costs at the least). The kernel's side is played on
 * ordinary memory (tests/perf/ring-kernel.h); 64 processes, none in /proc.
 * Usage: bench-sampler-ring [SAMPLES] (default 200000).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ring-kernel.h"
#include "proc-table.h"
#include "sampler-ring.h"
#include "task-map.h"

#define DATA_SIZE (256 * 1024)
#define CHAIN 24
#define REGS_MASK UINT64_C(0xff0fff)
#define NREGS 20
#define STACK 8192

static volatile uint64_t sink_sum;

static void on_samples(void *userdata, const struct source_sample *s, size_t n) {
        uint64_t h = 0;

        for (size_t i = 0; i < n; i++) {
                for (size_t j = 0; j < s[i].nr_callchain; j++)
                        h += s[i].callchain[j];
                for (size_t j = 0; j < s[i].nr_regs; j++)
                        h += s[i].regs[j];
                /* An unwinder reads a few words of the copy, not all of it. */
                if (s[i].stack_len >= 64)
                        h += s[i].stack[0] + s[i].stack[63];
        }
        sink_sum += h;
}

static double now_s(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static size_t make_sample(uint64_t *rec, uint64_t i, bool dwarf) {
        struct perf_event_header h;
        size_t n = 1;

        rec[n++] = 0x400000 + i % 4096;                         /* IP */
        rec[n++] = ((uint64_t) (1000 + i % 64) << 32) | (1000 + i % 64);
        rec[n++] = i;                                           /* TIME */
        rec[n++] = 0;                                           /* {cpu, res} */
        rec[n++] = 52631578;                                    /* PERIOD */
        rec[n++] = CHAIN;
        rec[n++] = (uint64_t) PERF_CONTEXT_USER;
        for (size_t j = 1; j < CHAIN; j++)
                rec[n++] = 0x400000 + (i * 31 + j) % 65536;
        if (dwarf) {
                rec[n++] = PERF_SAMPLE_REGS_ABI_64;
                for (size_t j = 0; j < NREGS; j++)
                        rec[n++] = 0x7ffc0000 + j;
                rec[n++] = STACK;
                memset(&rec[n], (int) (i & 0xff), STACK);
                n += STACK / 8;
                rec[n++] = STACK - 512;                         /* dyn_size */
        }
        h = (struct perf_event_header) { .type = PERF_RECORD_SAMPLE, .size = (uint16_t) (n * 8) };
        memcpy(rec, &h, sizeof(h));
        return n * 8;
}

static void run(const char *name, bool dwarf, uint64_t samples) {
        struct perf_event_attr attr = {
                .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                               PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN,
                .sample_max_stack = 127,
                .sample_id_all = 1,
        };
        struct source_sink sink = { .samples = on_samples };
        static uint64_t rec[(STACK + 4096) / 8];
        struct sampler_cpu_stats st = {};
        struct proc_table *procs = NULL;
        struct task_map *tasks = NULL;
        double t_base = 0, t_ring = 0, t0;
        struct sampler_ring r;
        struct kernel k;
        uint64_t done = 0, base = 0;
        size_t len;

        if (dwarf) {
                attr.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
                attr.sample_regs_user = REGS_MASK;
                attr.sample_stack_user = STACK;
        }
        kernel_init(&k, DATA_SIZE, 4096);
        if (task_map_new(&tasks) < 0 || proc_table_new("/nonexistent", "/nonexistent", &sink, tasks, &procs) < 0 ||
            sampler_ring_init(&r, &k.page, k.data, DATA_SIZE, &attr, &sink, procs, &st) < 0)
                abort();
        len = make_sample(rec, 0, dwarf);
        while (done < samples) {
                uint64_t batch = 0, tail = k.page.data_tail;

                /* Fill the ring (the record's fields vary a little), then read it twice: sum, then parse. */
                while (done + batch < samples) {
                        rec[1] = 0x400000 + (done + batch) % 4096;
                        rec[2] = ((uint64_t) (1000 + (done + batch) % 64) << 32) | (1000 + (done + batch) % 64);
                        if (!kernel_record_raw(&k, rec, len))
                                break;
                        batch++;
                }
                kernel_publish(&k);
                t0 = now_s();
                for (uint64_t pos = tail; pos < k.data_head; pos += 8) {
                        uint64_t w;

                        memcpy(&w, k.data + (pos & (DATA_SIZE - 1)), 8);
                        base += w;
                }
                t_base += now_s() - t0;
                t0 = now_s();
                (void) sampler_ring_drain(&r, 0);
                t_ring += now_s() - t0;
                done += batch;
        }
        sink_sum += base;
        printf("%-15s %6zu B/sample  ring %8.0f samples/s (%.2f us each)  byte-sum baseline %9.0f samples/s  "
               "ratio %.1fx\n", name, len, (double) st.samples / t_ring, t_ring / (double) st.samples * 1e6,
               (double) done / t_base, t_ring / t_base);
        sampler_ring_done(&r);
        proc_table_free(procs);
        task_map_free(tasks);
        kernel_free(&k);
}

int main(int argc, char **argv) {
        uint64_t samples = argc > 1 ? strtoull(argv[1], NULL, 10) : 200000;

        printf("bench-sampler-ring: %" PRIu64 " samples, one CPU's ring of %d KiB, 64 processes\n", samples,
               DATA_SIZE / 1024);
        run("frame pointers", false, samples);
        run("dwarf (8 KiB)", true, samples);
        return 0;
}
