/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: arbitrary bytes as the kernel's side of a sampling
 * event's data ring (collectors/sampler/sampler-ring.c, over aux-ring.c's
 * data-ring-only mode and perf-record.c's parsers), with the sampler's attr:
 * callchains, user registers and stacks, cgroups, sample_id_all. The
 * input's first bytes pick the ring size, where the tail starts (records
 * wrap early), how far data_head runs ahead and the records read per drain.
 * The sink reads every byte of every sample it is handed, so ASan sees any
 * pointer that strays outside the ring; the tail must end at the head. The
 * process table looks at a proc root that does not exist.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "proc-table.h"
#include "sampler-ring.h"
#include "task-map.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEADER_BYTES 4

static volatile uint64_t sink;

static void touch(const void *p, size_t n) {
        const uint8_t *b = p;
        uint64_t h = 0;

        for (size_t i = 0; i < n; i++)
                h = h * 31 + b[i];
        sink += h;
}

static void on_samples(void *userdata, const struct source_sample *s, size_t n) {
        for (size_t i = 0; i < n; i++) {
                touch(s[i].callchain, s[i].nr_callchain * 8);
                touch(s[i].regs, s[i].nr_regs * 8);
                touch(s[i].stack, s[i].stack_len);
                sink += s[i].pid + s[i].ip;
        }
}

static void on_mapping(void *userdata, const struct source_mapping *m) {
        touch(m->filename, strlen(m->filename));
        touch(m->build_id, m->build_id_len);
}

static void on_task(void *userdata, const struct source_task *t) {
        if (t->comm)
                touch(t->comm, strlen(t->comm));
        if (t->cgroup_path)
                touch(t->cgroup_path, strlen(t->cgroup_path));
}

static const struct perf_event_attr attr = {
        .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
                       PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER | PERF_SAMPLE_CGROUP,
        .sample_regs_user = 0xff0fff,
        .sample_stack_user = 8192,
        .sample_max_stack = 127,
        .sample_id_all = 1,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static struct task_map *tasks;
        static const struct source_sink s = { .samples = on_samples, .mapping = on_mapping, .task = on_task };
        struct perf_event_mmap_page page = {};
        struct sampler_cpu_stats st = {};
        struct proc_table *procs = NULL;
        struct sampler_ring r;
        size_t data_size, fill, max;
        uint8_t *dring;
        uint64_t start;

        if (size < HEADER_BYTES)
                return 0;
        if (!tasks && task_map_new(&tasks) < 0)
                return 0;
        data_size = (size_t) 64 << (data[0] % 9);       /* 64 .. 16384 */
        start = (uint64_t) data[1] * 8;
        max = data[3] >> 4;                             /* 0 (all) .. 15 records per drain */
        dring = calloc(1, data_size);
        if (!dring)
                return 0;
        fill = MIN(size - HEADER_BYTES, data_size);
        memcpy(dring, data + HEADER_BYTES, fill);
        page.data_tail = start;
        page.data_head = start + (data[2] & 1 ? fill : (uint64_t) data[2] * 97); /* sometimes beyond the ring */

        if (proc_table_new("/nonexistent", "/nonexistent", &s, tasks, &procs) == 0 &&
            sampler_ring_init(&r, &page, dring, data_size, &attr, &s, procs, &st) == 0) {
                /* Each drain reads at least one record or ends: bounded by the ring's size. */
                for (size_t i = 0; i <= data_size / 8 && sampler_ring_pending(&r); i++) {
                        /* As the source does: every ring's task records first (data[3] says when). */
                        if (data[3] & (1U << (i % 4))) /* the low bits of data[3]; max is in the high ones */
                                sampler_ring_prescan(&r);
                        (void) sampler_ring_drain(&r, max);
                }
                if (page.data_tail != page.data_head)
                        abort();
                sampler_ring_done(&r);
        }
        proc_table_free(procs);
        free(dring);
        return 0;
}
