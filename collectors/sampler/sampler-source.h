/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The cpu-clock sampler: a source on the seam (collectors/source.h) for
 * machines without SPE. One sampling event per online CPU (pid -1), by
 * default PERF_COUNT_SW_CPU_CLOCK at 19 Hz (freq=1; a prime, so it does not
 * beat with the timer tick), with the kernel's callchain (its walk of the
 * kernel stack and, by frame pointers, of the user stack) and, unless
 * unwind = fp, the user registers and a copy of the user stack that a
 * DWARF unwinder needs (perf record --call-graph dwarf). The same event
 * brings the processes' lives (COMM, FORK, EXIT, MMAP2, CGROUP): see
 * proc-table.h for what is read from /proc and when.
 *
 * The kernel's side (perf_event_open(2), kernel/events/core.c):
 *  - each event is opened disabled, its data ring mapped, then enabled;
 *    the ring wakes the poll when half full (no wakeup_events: one wakeup
 *    per many samples) and the drain timer reads it every interval, so
 *    samples reach the sink within one interval;
 *  - PERF_SAMPLE_CGROUP and attr.cgroup are Linux 5.7+, attr.build_id
 *    (MMAP2 with the build id) 5.12+: an older kernel refuses them with
 *    EINVAL, and the event is opened again without them (the status's
 *    warnings say what was given up);
 *  - sample_max_stack above kernel.perf_event_max_stack is refused
 *    (EOVERFLOW), a frequency above kernel.perf_event_max_sample_rate
 *    too (EINVAL): both are lowered to the sysctl, with a warning;
 *  - EACCES/EPERM (perf_event_paranoid, no CAP_PERFMON) fail the CPU and
 *    say so; ENOENT/EOPNOTSUPP (a hardware event on a VM without a PMU)
 *    turn the source off with the reason; EBUSY, EMFILE, ENOMEM are
 *    retried with a backoff doubling to a minute; a data ring beyond the
 *    memlock limit is halved down to SAMPLER_DATA_FLOOR;
 *  - CPU hotplug: CPUs that go are closed, CPUs that come are opened
 *    (cpus_changed, and the drain timer looks at sysfs), an event whose
 *    time enabled stopped is reopened.
 * Nothing is fatal: a CPU that cannot sample says why in its
 * sampler_cpu_stats' state and note; the status sums it up.
 *
 * Threads: the collector thread's, like every source.
 */

#include <stdbool.h>
#include <stdint.h>

#include "proc-table.h"
#include "source.h"

enum sampler_unwind {
        SAMPLER_UNWIND_AUTO,            /* callchain, + REGS_USER and STACK_USER: the daemon picks per mapping */
        SAMPLER_UNWIND_FP,              /* the kernel's callchain only (frame pointers) */
        SAMPLER_UNWIND_DWARF,           /* callchain, + REGS_USER and STACK_USER */
};

/*
 * Zero means the default for every number; event_name NULL means
 * cpu-clock whatever type and config say (PERF_TYPE_HARDWARE and
 * PERF_COUNT_HW_CPU_CYCLES are zeros too: name them to use them).
 */
struct sampler_options {
        const char *sysfs_root;         /* NULL: "/sys" (online CPUs) */
        const char *procfs_root;        /* NULL: "/proc" */
        uint32_t type;                  /* perf_event_attr.type, default PERF_TYPE_SOFTWARE */
        uint64_t config;                /* default PERF_COUNT_SW_CPU_CLOCK */
        const char *event_name;         /* "cpu-clock": for status/logs */
        uint64_t frequency;             /* Hz, freq=1; default 19 */
        uint32_t max_stack;             /* frames; clamped to /proc/sys/kernel/perf_event_max_stack; default 127 */
        enum sampler_unwind unwind;     /* fp: callchain only; dwarf/auto: + REGS_USER and STACK_USER */
        uint32_t stack_bytes;           /* sample_stack_user, default 8192 (multiple of 8, below 65535) */
        uint64_t regs_mask;             /* sample_regs_user; 0: sampler_default_regs_mask() */
        uint64_t data_bytes;            /* per CPU data ring, power of two of pages; default 256 KiB */
        uint64_t drain_interval_usec;   /* the drain timer, default 1 s */
};

#define SAMPLER_DEFAULT_FREQUENCY       19
#define SAMPLER_DEFAULT_MAX_STACK       127
#define SAMPLER_DEFAULT_STACK_BYTES     8192
#define SAMPLER_DEFAULT_DATA_BYTES      (256 * 1024)
#define SAMPLER_DEFAULT_DRAIN_USEC      (1000 * 1000)
/* The kernel's bound on sample_stack_user (kernel/events/core.c perf_copy_attr(): below USHRT_MAX, u64-aligned). */
#define SAMPLER_STACK_BYTES_MAX         65528
/* The smallest data ring retried down to after the memlock limit refused a larger one. */
#define SAMPLER_DATA_FLOOR              (16 * 1024)
/* Records read per dispatch of the source's own events: the unwinding sink must not starve the loop. */
#define SAMPLER_SOURCE_BUDGET           256
/* Backoff for EBUSY, EMFILE...: first retry after this, doubling up to the max. */
#define SAMPLER_RETRY_MIN_USEC          (1000 * 1000)
#define SAMPLER_RETRY_MAX_USEC          (60 * 1000 * 1000)
/* A source whose CPUs brought no sample for this many drain intervals is idle (not up). */
#define SAMPLER_IDLE_INTERVALS          10

/*
 * The user registers asked for when options.regs_mask is 0, as perf's
 * `--call-graph dwarf` asks (tools/perf/arch/<arch>/include/perf_regs.h
 * PERF_REGS_MASK). Bits are the kernel's perf register numbers
 * (arch/<arch>/include/uapi/asm/perf_regs.h); a sample's regs[] holds one
 * value per set bit, in ascending bit order (perf_output_sample_regs()):
 *  - x86-64: PERF_REG_X86_AX(0) BX CX DX SI DI BP(6) SP(7) IP(8) FLAGS CS
 *    SS(11), then R8(16)..R15(23): mask 0xff0fff, 20 values, the segment
 *    registers DS ES FS GS (12-15) left out as perf does. regs[6] is BP,
 *    regs[7] SP, regs[8] IP, regs[12..19] R8..R15.
 *  - arm64: PERF_REG_ARM64_X0(0)..X28, X29 (FP), LR(30), SP(31), PC(32):
 *    mask (1 << 33) - 1, 33 values, regs[n] is register n.
 *  - any other architecture: 0 (no registers: only the callchain).
 */
uint64_t sampler_default_regs_mask(void);

/* Parse "cpu-clock", "task-clock", "cycles", "instructions", "ref-cycles"... (perf's names, or rNNNN raw) into type/config: 0 or -EINVAL. */
int sampler_event_parse(const char *name, uint32_t *ret_type, uint64_t *ret_config);

/*
 * A source not started yet (source_start() opens the events). -EINVAL for
 * options out of range: a ring not a power of two of pages, stack_bytes not
 * a multiple of 8 or above SAMPLER_STACK_BYTES_MAX, max_stack above 65535,
 * an unknown unwind mode.
 */
int sampler_source_new(const struct sampler_options *o, const struct source_sink *sink,
                       struct task_map *tasks, struct source **ret);

