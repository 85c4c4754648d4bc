/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * User call stacks by DWARF CFI, from what a sample copied: the user
 * registers (PERF_SAMPLE_REGS_USER) and the bytes of the user stack from the
 * sampled stack pointer up (PERF_SAMPLE_STACK_USER), as
 * `perf record --call-graph dwarf` records them (perf_event_open(2)) and
 * perf unwinds them (tools/perf/util/unwind-libdw.c).
 *
 * The frames come from the .eh_frame (else .debug_frame) of the binaries the
 * process maps, read by elfutils' libdw (dwarf_getcfi_elf(3),
 * dwarf_cfi_addrframe(3)) once a file for every process that maps it: CFI
 * is in the file's own addresses, so each process needs only where it
 * mapped the file (its modules, from its mappings). A frame's rules are
 * evaluated here (DWARF 5, 6.4) on the sample's registers, reading memory
 * from the stack copy or, inside a module, from the ELF file's bytes. An
 * address nowhere in those is unreadable: the walk stops there.
 *
 * Files: a mapping's file is opened through /proc/PID/map_files while the
 * process lives (the very file mapped, even deleted by an upgrade or in a
 * container), else by its path, else under /proc/PID/root; "[vdso]" is our
 * own vDSO (the same kernel's image, vdso(7)). A file is used only when its
 * build id is the mapping's, when the mapping carries one. Each file (device
 * and inode) is read once for every process that maps it, kept mapped while
 * a module uses it, with no descriptor held, its CFI with it: a thousand
 * processes mapping libc cost one mapping of libc, one copy of what libdw
 * keeps of its CFI and no descriptor. The memory is bounded by the files
 * mapped, not by the processes: a process costs its mappings, a few
 * kilobytes.
 *
 * Everything is bounded (struct unwind_limits): processes are evicted least
 * recently used, with their mappings (a file no process maps any more goes
 * with its CFI); a process's mappings, oldest first; a walk stops at
 * max_frames, and at a frame whose stack pointer or CFA does not move up
 * the stack, so a garbage stack copy always ends; an expression stops at a
 * bounded stack and number of steps.
 *
 * Cost: a sample allocates nothing but libdw's row of each frame (freed at
 * once), and the CFI it reads the first time a file is walked through;
 * files are opened (and closed) when a process's mappings changed, at its
 * next sample.
 *
 * Library code: one thread at a time per struct unwind, no logging, errors are
 * negative errno values, allocation failure aborts (strbuf.h).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UNWIND_MAX_PIDS                 256
#define UNWIND_MAX_MAPPINGS_PER_PID     256
#define UNWIND_MAX_FRAMES               127

struct unwind_limits {
        size_t max_pids;                /* processes with their mappings, LRU, default UNWIND_MAX_PIDS */
        size_t max_mappings_per_pid;    /* default UNWIND_MAX_MAPPINGS_PER_PID */
        size_t max_frames;              /* default UNWIND_MAX_FRAMES */
};

/*
 * Why walks stopped: truncated, else no_module, else stack_end, one of them
 * at most per sample (none: the stack's end, or CFI that did not go on);
 * failed counts the samples with the pc alone, whatever stopped them.
 */
struct unwind_stats {
        uint64_t samples, frames;       /* unwound, frames produced */
        uint64_t failed;                /* no frame beyond the first */
        uint64_t no_module;             /* stopped on a pc no mapping covers (JIT, unknown) */
        uint64_t stack_end;             /* stopped because the copied stack ended */
        uint64_t truncated;             /* stopped at max_frames */
        uint64_t whole;                 /* reached the outermost frame (unwind_last_whole()) */
        uint64_t pid_evictions, reports;/* processes evicted; modules made anew from changed mappings */
        uint64_t mapping_evictions;     /* mappings dropped from a full process */
        uint64_t module_errors;         /* mapped files not reported: unreadable, not ELF, another build */
        uint64_t pids;                  /* processes with unwinding state now (at most max_pids) */
};

struct unwind;

/* l NULL: the UNWIND_MAX_* defaults; zero fields take their default too. */
struct unwind *unwind_new(const struct unwind_limits *l);
struct unwind *unwind_free(struct unwind *u);

/*
 * The process's executable mappings, as the sources report them
 * (PERF_RECORD_MMAP2 without attr.mmap_data, the "x" lines of
 * /proc/PID/maps): [start, start + len) maps `filename` from file offset
 * pgoff, replacing what it overlaps (as mmap(2) does). Executable only: the
 * file's code segment is found as the PT_LOAD with PF_X among those its
 * pages hold, and lld puts the read-only segment's tail in the code's first
 * page, so a read-only mapping of that page would be taken for code.
 * Mappings of no file (anonymous, "[heap]", "//anon") are kept as holes: a
 * pc there has no module ("[vdso]" has one). build_id may be NULL. Returns
 * 0, or -EINVAL for an empty or wrapping range or a build id longer than 20
 * bytes.
 */
int unwind_add_mapping(struct unwind *u, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
                       const char *filename, const uint8_t *build_id, size_t build_id_len);
/* Forget a process: exec or exit. */
void unwind_remove_pid(struct unwind *u, uint32_t pid);

struct unwind_input {
        uint32_t pid, tid;
        uint64_t regs_abi;              /* PERF_SAMPLE_REGS_ABI_64 (32-bit ABIs: refuse, -EOPNOTSUPP) */
        uint64_t regs_mask;             /* which perf regs `regs` holds, in bit order */
        const uint64_t *regs;
        size_t nr_regs;
        const uint8_t *stack;           /* from the sampled sp up */
        size_t stack_len;
};

/*
 * The register mask a sample must carry for unwind_user() on this
 * architecture (attr.sample_regs_user), in the bit order of PERF_REG_X86_* or
 * PERF_REG_ARM64_* (arch/{x86,arm64}/include/uapi/asm/perf_regs.h). 0 where
 * unwinding is not supported.
 */
uint64_t unwind_regs_mask(void);

/*
 * User frames by CFI, leaf first: ret[0] is the sampled pc, then return
 * addresses (as perf reports them: the caller's pc, not adjusted), at most
 * max and max_frames. Returns the number of frames (>= 1 when the regs have a
 * pc and max >= 1), or a negative errno: -EINVAL without registers, or without
 * the pc and sp among them (regs_mask lacks what unwind_regs_mask() asks for,
 * nr_regs is not its number of bits); -EOPNOTSUPP for a 32-bit ABI or an
 * architecture this does not unwind.
 */
int unwind_user(struct unwind *u, const struct unwind_input *in, uint64_t *ret, size_t max);

/*
 * Whether the last unwind_user() walk ended at the outermost frame: CFI left
 * the return address undefined (glibc's _start and thread start say so), or
 * it was zero (the x86-64 psABI's and AAPCS64's end of a stack). Its frames
 * are then the whole stack. False after an error, a truncated walk, or one
 * that stopped for want of CFI, a module or stack bytes.
 */
bool unwind_last_whole(const struct unwind *u);

/*
 * The bits of a user return address that arm64 pointer authentication may
 * have filled with a PAC, cleared from every return address a walk recovers
 * (the kernel's ptrauth_user_insn_pac_mask(), as this CPU's XPACLRI shows
 * it); 0 on a CPU without it and on other architectures.
 */
uint64_t unwind_pac_mask(const struct unwind *u);

/*
 * [sampler] unwind = auto: the CFI frames, and where they stop short for want
 * of CFI or a module (JIT code, a binary without .eh_frame), the kernel's
 * frame-pointer chain of the same sample (user part, PERF_CONTEXT_* markers
 * removed by the caller) from the first return address after the last CFI
 * frame; the FP chain alone when it is longer than what CFI gave. When the
 * CFI walk was whole (cfi_whole, unwind_last_whole()) the CFI frames alone:
 * nothing is beyond the outermost frame, and a frame-pointer chain longer
 * than a whole stack is a walk through a register that held no frame
 * pointer (code built without them). Returns the count written to ret (at
 * most max).
 *
 * The last CFI frame is found in the FP chain as the same occurrence of its
 * address (the third time a recursive return address appears in the CFI
 * frames is its third time in the FP chain). When the FP chain does not have
 * it, the longer of the two is taken whole, the CFI frames on a tie.
 */
size_t unwind_merge_fp(const uint64_t *cfi, size_t n_cfi, bool cfi_whole, const uint64_t *fp, size_t n_fp,
                       uint64_t *ret, size_t max);

void unwind_get_stats(const struct unwind *u, struct unwind_stats *ret);
