/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The DWARF expressions of call frame information (DWARF 5, 2.5 "DWARF
 * Expressions"; 6.4.2 "Call Frame Instructions") as libdw hands them over
 * (dwarf_frame_cfa(3), dwarf_frame_register(3)), evaluated on a frame's
 * registers: the unwinder's (unwind.c) CFA and register rules.
 *
 * The operations come from the .eh_frame or .debug_frame of whatever file a
 * sampled process maps: outside input (a user's own binary may be hostile),
 * so the stack is CFI_EXPR_STACK_MAX values at most and an evaluation
 * CFI_EXPR_STEPS_MAX operations (branches included); anything else this
 * does not know fails the rule, never the daemon. fuzz-cfi-expr runs it on
 * arbitrary operations.
 *
 * Library code: no allocation, no I/O but through `read`.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdw.h>

/*
 * The expressions of .eh_frame are a few operations (a register plus an
 * offset, glibc's signal frames a dozen), so more is a broken or hostile
 * file, refused.
 */
#define CFI_EXPR_STACK_MAX 64
#define CFI_EXPR_STEPS_MAX 1024

/* A frame's registers, by DWARF number: v[r] holds register r's value when bit r of known is set. */
struct cfi_expr_regs {
        const uint64_t *v;
        size_t n;                       /* at most 64 */
        uint64_t known;
};

/* The 8 bytes at addr of the unwound process, little-endian; false when they are not at hand. */
typedef bool (*cfi_expr_read_fn)(void *userdata, uint64_t addr, uint64_t *ret);

/*
 * ops[0, nops) on the callee's registers r, with cfa for
 * DW_OP_call_frame_cfa (0: not known yet, the CFA itself is being
 * computed) and bias added to DW_OP_addr (the file's load bias). A rule
 * that starts from the CFA gives an address, where the caller's value is
 * saved, which is read, unless it ends with DW_OP_stack_value (a value
 * rule); a rule in registers alone gives the value. True with *ret set;
 * false (ret untouched) when an operation is unknown, a register unknown,
 * the stack over- or underflows, the steps run out, a branch leads
 * nowhere, or memory cannot be read.
 */
bool cfi_expr_eval(const Dwarf_Op *ops, size_t nops, const struct cfi_expr_regs *r, uint64_t cfa, uint64_t bias,
                   cfi_expr_read_fn read, void *userdata, uint64_t *ret);
