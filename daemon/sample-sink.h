/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The daemon's side of the cpu-clock sampler: each sample the source hands
 * on becomes a named stack in the store (store_add_stack()).
 *
 *  - User frames: by the binaries' CFI from the sample's copy of the user
 *    stack (symbols/unwind.h: Debian builds without frame pointers), by
 *    the kernel's frame-pointer callchain, or, with unwind = auto, CFI
 *    continued by the frame-pointer chain where CFI stops (JIT code).
 *  - Kernel frames: kept only when kernel addresses may leave the host
 *    ([privacy] kernel_addresses, and the symbolizer could read real ones
 *    from kallsyms); otherwise the kernel part of a stack is one
 *    STORE_KERNEL_FRAME, "[kernel]", and no kernel address is stored.
 *    A user frame in the kernel's half of the address space is not the
 *    process's code: as the leaf (x86-64's vsyscall page) it is a kernel
 *    frame, as a caller (a walk into garbage) the stack ends before it.
 *  - Who ran it: the task map's names of the process and the thread, read
 *    when the sample is stored (a process that exited, or whose pid was
 *    reused, keeps the names it had); its cgroup from the sample's cgroup
 *    id (PERF_RECORD_CGROUP, a scan of the cgroup2 mount) or else
 *    /proc/PID/cgroup, and what that cgroup stands for (cgroup_service()).
 *  - A process the source says is gone (SOURCE_TASK_GONE: no sample of it
 *    is left) takes its unwinding state with it (its mappings, and the
 *    files only it mapped with their CFI); its cgroup stays in the table,
 *    for the answers that cover it.
 *
 * The pid -> cgroup table is also what /hotpcs and /hotlines show and
 * filter by (sample_sink_cgroup(), any thread, under its own lock).
 * Everything is bounded; evictions are counted.
 *
 * Threads: the collector thread's, but for sample_sink_cgroup() and
 * sample_sink_get_stats().
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "prom.h"
#include "source.h"

struct store;
struct task_map;

/* Processes whose cgroup the table keeps (least recently sampled evicted first). */
#define SAMPLE_SINK_MAX_PIDS    4096
/* Cgroup ids the id -> path map keeps. */
#define SAMPLE_SINK_MAX_CGROUPS 4096

struct sample_sink_options {
        enum config_unwind unwind;
        bool kernel_addresses;          /* kernel frames may leave the host */
        uint32_t max_stack;             /* frames kept of each part, kernel and user */
        const char *procfs_root;        /* NULL: "/proc" */
        const char *cgroupfs_root;      /* NULL: "/sys/fs/cgroup" */
};

struct sample_sink_stats {
        uint64_t samples;               /* stored */
        uint64_t idle;                  /* of idle CPUs (pid 0): not stored */
        uint64_t ip_only;               /* callchain with markers only (a KVM vCPU in its guest): one [kernel] frame */
        uint64_t unwound;               /* of which user stacks walked by CFI */
        uint64_t cfi_failed;            /* CFI gave no frame beyond the first */
        uint64_t cfi_truncated;         /* stopped at max_stack or the end of the stack copy */
        uint64_t unwind_evictions;      /* processes whose unwinding state was evicted */
        uint64_t unwind_processes;      /* processes with unwinding state now: live, or exited and not yet gone */
        uint64_t cgroup_evictions;      /* pid -> cgroup entries and cgroup ids evicted */
        uint64_t no_cgroup;             /* samples whose cgroup could not be named */
        uint64_t user_kernel_half;      /* user frames in the kernel's half: a leaf made [kernel], a caller cut */
};

struct sample_sink;

int sample_sink_new(const struct sample_sink_options *o, struct store *store, struct task_map *tasks,
                    struct sample_sink **ret);
struct sample_sink *sample_sink_free(struct sample_sink *s);

/* The source_sink callbacks the sampler's samples, mappings and task events go to. */
void sample_sink_samples(struct sample_sink *s, const struct source_sample *samples, size_t n);
void sample_sink_mapping(struct sample_sink *s, const struct source_mapping *m);
void sample_sink_task(struct sample_sink *s, const struct source_task *t);

/* Any thread: pid's cgroup path and service (aggregates.h's callback); false when unknown. */
bool sample_sink_cgroup(struct sample_sink *s, uint32_t pid, char *path, size_t path_len, char *service,
                        size_t service_len);
/* Any thread. */
void sample_sink_get_stats(struct sample_sink *s, struct sample_sink_stats *ret);

/*
 * Its counters as /metrics families (prom_write_counter_rows()), with the
 * evictions of procs (the sampler's process table; NULL: none) beside its own.
 */
#define SAMPLE_SINK_METRIC_ROWS 10
size_t sample_sink_metric_rows(const struct sample_sink_stats *st, const struct proc_table_stats *procs,
                               struct prom_counter_row rows[SAMPLE_SINK_METRIC_ROWS]);
