/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * symbols/cfi-expr.c against values worked out by hand from DWARF 5
 * (2.5 "DWARF Expressions", 6.4.2 "Call Frame Instructions") for the rules
 * unwinding meets: a CFA of a register plus an offset, a register saved at
 * CFA-8, a value rule, glibc's x86-64 signal frame (the CFA read from the
 * saved context), arithmetic, branches; and the refusals that keep a
 * hostile file's expression bounded: a loop, a stack over- and underflow,
 * an unknown register or operation, a division by zero, memory not at
 * hand. A refused evaluation leaves the result alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dwarf.h>

#include "cfi-expr.h"
#include "macro.h"

#define SP      UINT64_C(0x7ffd1000)
#define RBX     UINT64_C(0x1234)
#define CFA     UINT64_C(0x7ffd1010)
#define RET     UINT64_C(0xdeadbeef)

/* DWARF registers 0..16 of x86-64 (psABI): rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip; rsp and rbx known. */
static const uint64_t reg_v[17] = { [3] = RBX, [7] = SP };
static const struct cfi_expr_regs regs = { .v = reg_v, .n = 17, .known = (1U << 3) | (1U << 7) };

/* Memory: the words the cases name, nothing else. */
static bool mem(void *userdata, uint64_t addr, uint64_t *ret) {
        static const struct { uint64_t addr, v; } words[] = {
                { CFA - 8, UINT64_C(0x401234) },        /* a return address saved at CFA-8 */
                { SP + 160, UINT64_C(0x7ffd2000) },     /* ucontext's rsp, as glibc's sigreturn frame has it */
                { SP, UINT64_C(0x1122334455667788) },
        };
        unsigned *reads = userdata;

        if (reads)
                (*reads)++;
        for (size_t i = 0; i < ELEMENTSOF(words); i++)
                if (words[i].addr == addr) {
                        *ret = words[i].v;
                        return true;
                }
        return false;
}

/* ops with their byte offsets as a DWARF expression lays them out: 1 byte an op, plus `size` of operands. */
#define OP(a, n, sz) { .atom = (a), .number = (Dwarf_Word) (n), .offset = (sz) }

static bool eval(Dwarf_Op *ops, size_t n, uint64_t cfa, uint64_t *ret) {
        /* Offsets: .offset holds each op's operand size until here, as the test writes them. */
        Dwarf_Word at = 0;

        for (size_t i = 0; i < n; i++) {
                Dwarf_Word size = ops[i].offset;

                ops[i].offset = at;
                at += 1 + size;
        }
        return cfi_expr_eval(ops, n, &regs, cfa, 0, mem, NULL, ret);
}

static void test_rules(void **state) {
        uint64_t v;

        /* CFA = rsp + 16 (DW_CFA_def_cfa rsp 16, as libdw hands it: breg7 16): a value. */
        Dwarf_Op cfa_rule[] = { OP(DW_OP_breg7, 16, 1) };
        assert_true(eval(cfa_rule, ELEMENTSOF(cfa_rule), 0, &v));
        assert_int_equal(v, SP + 16);

        /* The return address saved at CFA-8 (DW_CFA_offset rip, -8): an address, read. */
        Dwarf_Op saved[] = { OP(DW_OP_call_frame_cfa, 0, 0), OP(DW_OP_consts, -8, 1), OP(DW_OP_plus, 0, 0) };
        assert_true(eval(saved, ELEMENTSOF(saved), CFA, &v));
        assert_int_equal(v, UINT64_C(0x401234));

        /* The same with DW_OP_stack_value (DW_CFA_val_offset): CFA-8 itself. */
        Dwarf_Op value[] = { OP(DW_OP_call_frame_cfa, 0, 0), OP(DW_OP_lit8, 0, 0), OP(DW_OP_minus, 0, 0),
                             OP(DW_OP_stack_value, 0, 0) };
        assert_true(eval(value, ELEMENTSOF(value), CFA, &v));
        assert_int_equal(v, CFA - 8);

        /* glibc's x86-64 __restore_rt: CFA = *(rsp + 160), the rsp saved in the ucontext. */
        Dwarf_Op sigframe[] = { OP(DW_OP_breg7, 160, 2), OP(DW_OP_deref, 0, 0) };
        assert_true(eval(sigframe, ELEMENTSOF(sigframe), 0, &v));
        assert_int_equal(v, UINT64_C(0x7ffd2000));

        /* deref_size 4 keeps the low (first, little-endian) 4 bytes. */
        Dwarf_Op size4[] = { OP(DW_OP_breg7, 0, 1), OP(DW_OP_deref_size, 4, 1) };
        assert_true(eval(size4, ELEMENTSOF(size4), 0, &v));
        assert_int_equal(v, UINT64_C(0x55667788));

        /* Arithmetic and stack: (rbx - 4) * 3, swapped operands, signed division. */
        Dwarf_Op arith[] = { OP(DW_OP_lit4, 0, 0), OP(DW_OP_breg3, 0, 1), OP(DW_OP_swap, 0, 0),
                             OP(DW_OP_minus, 0, 0), OP(DW_OP_lit3, 0, 0), OP(DW_OP_mul, 0, 0) };
        assert_true(eval(arith, ELEMENTSOF(arith), 0, &v));
        assert_int_equal(v, (RBX - 4) * 3);
        Dwarf_Op sdiv[] = { OP(DW_OP_consts, -9, 1), OP(DW_OP_lit2, 0, 0), OP(DW_OP_div, 0, 0) };
        assert_true(eval(sdiv, ELEMENTSOF(sdiv), 0, &v));
        assert_int_equal((int64_t) v, -4);

        /* A taken branch skips the lit31: lit1, bra +1 (over the 1-byte lit31), lit7. */
        Dwarf_Op branch[] = { OP(DW_OP_lit1, 0, 0), OP(DW_OP_bra, 1, 2), OP(DW_OP_lit31, 0, 0),
                              OP(DW_OP_lit7, 0, 0) };
        assert_true(eval(branch, ELEMENTSOF(branch), 0, &v));
        assert_int_equal(v, 7);
        /* Not taken (lit0): lit31 then lit7, the top is 7 and 31 below it. */
        Dwarf_Op fall[] = { OP(DW_OP_lit0, 0, 0), OP(DW_OP_bra, 1, 2), OP(DW_OP_lit31, 0, 0), OP(DW_OP_lit7, 0, 0),
                            OP(DW_OP_plus, 0, 0) };
        assert_true(eval(fall, ELEMENTSOF(fall), 0, &v));
        assert_int_equal(v, 38);
}

static void test_refusals(void **state) {
        const uint64_t untouched = UINT64_C(0x5a5a5a5a5a5a5a5a);
        Dwarf_Op over[CFI_EXPR_STACK_MAX + 1];
        unsigned reads = 0;
        uint64_t v = untouched;

        /* skip -3 jumps to itself: the steps run out. */
        Dwarf_Op loop[] = { OP(DW_OP_lit1, 0, 0), OP(DW_OP_skip, -3, 2) };
        assert_false(eval(loop, ELEMENTSOF(loop), 0, &v));
        /* A branch into the middle of an operation leads nowhere. */
        Dwarf_Op nowhere[] = { OP(DW_OP_skip, 1, 2), OP(DW_OP_const2u, 0, 2), OP(DW_OP_lit1, 0, 0) };
        assert_false(eval(nowhere, ELEMENTSOF(nowhere), 0, &v));
        /* One more value than the stack holds. */
        for (size_t i = 0; i < ELEMENTSOF(over); i++)
                over[i] = (Dwarf_Op) OP(DW_OP_lit1, 0, 0);
        assert_false(eval(over, ELEMENTSOF(over), 0, &v));
        assert_true(eval(over, CFI_EXPR_STACK_MAX, 0, &v));
        assert_int_equal(v, 1);
        v = untouched;
        /* Underflow, an unknown register, an unknown operation, nothing at all. */
        Dwarf_Op under[] = { OP(DW_OP_plus, 0, 0) };
        assert_false(eval(under, ELEMENTSOF(under), 0, &v));
        Dwarf_Op unknown_reg[] = { OP(DW_OP_breg0, 0, 1) };
        assert_false(eval(unknown_reg, ELEMENTSOF(unknown_reg), 0, &v));
        Dwarf_Op regx_far[] = { { .atom = DW_OP_bregx, .number = 4000, .number2 = 0 } };
        assert_false(cfi_expr_eval(regx_far, 1, &regs, 0, 0, mem, NULL, &v));
        Dwarf_Op unknown_op[] = { OP(DW_OP_lit1, 0, 0), OP(DW_OP_GNU_push_tls_address, 0, 0) };
        assert_false(eval(unknown_op, ELEMENTSOF(unknown_op), 0, &v));
        assert_false(cfi_expr_eval(NULL, 0, &regs, 0, 0, mem, NULL, &v));
        /* Division by zero, and INT64_MIN / -1. */
        Dwarf_Op div0[] = { OP(DW_OP_lit1, 0, 0), OP(DW_OP_lit0, 0, 0), OP(DW_OP_div, 0, 0) };
        assert_false(eval(div0, ELEMENTSOF(div0), 0, &v));
        Dwarf_Op divmin[] = { OP(DW_OP_const8s, INT64_MIN, 8), OP(DW_OP_consts, -1, 1), OP(DW_OP_div, 0, 0) };
        assert_false(eval(divmin, ELEMENTSOF(divmin), 0, &v));
        /* The CFA itself cannot start from the CFA. */
        Dwarf_Op cfa0[] = { OP(DW_OP_call_frame_cfa, 0, 0) };
        assert_false(eval(cfa0, ELEMENTSOF(cfa0), 0, &v));
        /* A location whose memory is not at hand: one read, refused. */
        Dwarf_Op gone[] = { OP(DW_OP_call_frame_cfa, 0, 0), OP(DW_OP_lit16, 0, 0), OP(DW_OP_plus, 0, 0) };
        for (size_t i = 0, at = 0; i < ELEMENTSOF(gone); i++, at++)
                gone[i].offset = at;
        assert_false(cfi_expr_eval(gone, ELEMENTSOF(gone), &regs, CFA, 0, mem, &reads, &v));
        assert_int_equal(reads, 1);
        assert_int_equal(v, untouched);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rules),
                cmocka_unit_test(test_refusals),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
