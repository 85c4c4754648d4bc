/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Real samples for the unwinder's test and benchmark: run a program (the
 * spin of tests/sampler), read its /proc/PID/maps, and sample it with a
 * cpu-clock event on its pid carrying what `perf record --call-graph dwarf`
 * asks for (perf_event_open(2): PERF_SAMPLE_CALLCHAIN, REGS_USER,
 * STACK_USER), from the event's ring, read here with a few lines rather
 * than the daemon's reader so that the test depends on the unwinder only.
 */

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#if defined(__x86_64__) || defined(__aarch64__)
#include <asm/perf_regs.h>
#endif

#include "macro.h"
#include "unwind.h"

/* The perf registers the tests read or set by hand (arch/{x86,arm64}/include/uapi/asm/perf_regs.h). */
#if defined(__x86_64__)
#define CAPTURE_PERF_PC PERF_REG_X86_IP
#define CAPTURE_PERF_SP PERF_REG_X86_SP
#define CAPTURE_PERF_FP PERF_REG_X86_BP
#elif defined(__aarch64__)
#define CAPTURE_PERF_PC PERF_REG_ARM64_PC
#define CAPTURE_PERF_SP PERF_REG_ARM64_SP
#define CAPTURE_PERF_FP PERF_REG_ARM64_X29
#endif

/* What the sampler asks the kernel to copy of the user stack (perf's --call-graph dwarf default). */
#define CAPTURE_STACK_USER      8192U
/* One value per bit of attr.sample_regs_user, at most. */
#define CAPTURE_PERF_REGS_MAX   64U
/*
 * A /proc/PID/maps line (proc(5)): the address range, permissions, offset,
 * device and inode, padded to a column, then the path.
 */
#define CAPTURE_MAPS_LINE_MAX   (sizeof("ffffffffffffffff-ffffffffffffffff rwxp ffffffffffffffff fff:fffff ") + \
                                 DECIMAL_STR_MAX(uint64_t) + sizeof("                          ") + PATH_MAX)

struct capture_mapping {
        uint64_t start, len, pgoff;
        char *filename;
        int exec;
};

struct capture_sample {
        uint32_t pid, tid;
        uint64_t ip;
        uint64_t *fp;                   /* the kernel's user callchain, PERF_CONTEXT_* markers removed */
        size_t n_fp;
        uint64_t regs_abi, regs_mask;
        uint64_t *regs;
        size_t nr_regs;
        uint8_t *stack;
        size_t stack_len;
};

struct capture {
        pid_t pid;
        pid_t running;                  /* pid while it runs (keep_running), else -1 */
        struct capture_mapping *maps;
        size_t n_maps;
        struct capture_sample *samples;
        size_t n_samples;
};

/*
 * Run `program SECONDS CPU`, wait for its "ready PID", read its maps, sample
 * it (1 kHz of its CPU time, user mode only, regs_mask) until `want` samples
 * or its end, then kill it, or with keep_running leave that to
 * capture_done(). Returns 0, or a negative errno with a reason in err
 * (-EACCES, -ENOENT, -ENOSYS: the caller skips).
 */
int capture_run(const char *program, unsigned cpu, uint64_t regs_mask, size_t want, bool keep_running,
                struct capture *ret, char *err, size_t err_len);
/* Kills the program if it still runs, frees the rest. */
void capture_done(struct capture *c);

/* Where perf register reg is in a sample's regs: one value per bit of unwind_regs_mask(), in bit order. */
static inline size_t capture_reg_index(unsigned reg) {
        return (size_t) __builtin_popcountll(unwind_regs_mask() & ((UINT64_C(1) << reg) - 1));
}

/* The unwinder's input for a captured sample. */
static inline struct unwind_input capture_input(const struct capture_sample *cs) {
        return (struct unwind_input) {
                .pid = cs->pid, .tid = cs->tid,
                .regs_abi = cs->regs_abi, .regs_mask = cs->regs_mask,
                .regs = cs->regs, .nr_regs = cs->nr_regs,
                .stack = cs->stack, .stack_len = cs->stack_len,
        };
}
