/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "cfi-expr.h"

#include <dwarf.h>

static bool reg_get(const struct cfi_expr_regs *r, uint64_t regno, uint64_t *ret) {
        if (regno >= r->n || regno >= 64 || !(r->known & (UINT64_C(1) << regno)))
                return false;
        *ret = r->v[regno];
        return true;
}

bool cfi_expr_eval(const Dwarf_Op *ops, size_t nops, const struct cfi_expr_regs *r, uint64_t cfa, uint64_t bias,
                   cfi_expr_read_fn read, void *userdata, uint64_t *ret) {
        uint64_t stack[CFI_EXPR_STACK_MAX], a, b, c;
        size_t sp = 0, steps = 0;
        bool location = false;

#define PUSH(x) do { if (sp == CFI_EXPR_STACK_MAX) return false; stack[sp++] = (x); } while (0)
#define POP(x) do { if (sp == 0) return false; (x) = stack[--sp]; } while (0)
        if (nops == 0)
                return false;
        for (size_t i = 0; i < nops; i++) {
                const Dwarf_Op *op = &ops[i];

                if (++steps > CFI_EXPR_STEPS_MAX)
                        return false;
                switch (op->atom) {
                case DW_OP_lit0 ... DW_OP_lit31:
                        PUSH((uint64_t) (op->atom - DW_OP_lit0));
                        break;
                case DW_OP_addr:
                        PUSH(op->number + bias);
                        break;
                case DW_OP_const1u: case DW_OP_const1s: case DW_OP_const2u: case DW_OP_const2s:
                case DW_OP_const4u: case DW_OP_const4s: case DW_OP_const8u: case DW_OP_const8s:
                case DW_OP_constu: case DW_OP_consts:
                        PUSH(op->number);
                        break;
                case DW_OP_reg0 ... DW_OP_reg31:
                        if (!reg_get(r, op->atom - DW_OP_reg0, &a))
                                return false;
                        PUSH(a);
                        break;
                case DW_OP_regx:
                        if (!reg_get(r, op->number, &a))
                                return false;
                        PUSH(a);
                        break;
                case DW_OP_breg0 ... DW_OP_breg31:
                        if (!reg_get(r, op->atom - DW_OP_breg0, &a))
                                return false;
                        PUSH(a + op->number);
                        break;
                case DW_OP_bregx:
                        if (!reg_get(r, op->number, &a))
                                return false;
                        PUSH(a + op->number2);
                        break;
                case DW_OP_dup:
                        POP(a);
                        PUSH(a);
                        PUSH(a);
                        break;
                case DW_OP_drop:
                        POP(a);
                        break;
                case DW_OP_pick:
                        if (op->number >= sp)
                                return false;
                        a = stack[sp - 1 - op->number];
                        PUSH(a);
                        break;
                case DW_OP_over:
                        if (sp < 2)
                                return false;
                        a = stack[sp - 2];
                        PUSH(a);
                        break;
                case DW_OP_swap:
                        POP(a);
                        POP(b);
                        PUSH(a);
                        PUSH(b);
                        break;
                case DW_OP_rot:
                        /* The top three: the first (top) goes third, the others move up. */
                        POP(a);
                        POP(b);
                        POP(c);
                        PUSH(a);
                        PUSH(c);
                        PUSH(b);
                        break;
                case DW_OP_deref:
                case DW_OP_deref_size:
                        POP(a);
                        if (!read(userdata, a, &a))
                                return false;
                        if (op->atom == DW_OP_deref_size) {
                                if (op->number == 0 || op->number > sizeof(uint64_t))
                                        return false;
                                /* Little-endian, both architectures: the low bytes are the first. */
                                if (op->number < sizeof(uint64_t))
                                        a &= (UINT64_C(1) << (op->number * 8)) - 1;
                        }
                        PUSH(a);
                        break;
                case DW_OP_abs:
                        POP(a);
                        PUSH((int64_t) a < 0 ? -a : a);
                        break;
                case DW_OP_neg:
                        POP(a);
                        PUSH(-a);
                        break;
                case DW_OP_not:
                        POP(a);
                        PUSH(~a);
                        break;
                case DW_OP_plus_uconst:
                        POP(a);
                        PUSH(a + op->number);
                        break;
                case DW_OP_and: case DW_OP_div: case DW_OP_minus: case DW_OP_mod: case DW_OP_mul:
                case DW_OP_or: case DW_OP_plus: case DW_OP_shl: case DW_OP_shr: case DW_OP_shra:
                case DW_OP_xor: case DW_OP_le: case DW_OP_ge: case DW_OP_eq: case DW_OP_lt:
                case DW_OP_gt: case DW_OP_ne:
                        POP(b);
                        POP(a);
                        switch (op->atom) {
                        case DW_OP_and: a &= b; break;
                        case DW_OP_div:
                                if (b == 0 || ((int64_t) a == INT64_MIN && (int64_t) b == -1))
                                        return false;
                                a = (uint64_t) ((int64_t) a / (int64_t) b);
                                break;
                        case DW_OP_minus: a -= b; break;
                        case DW_OP_mod:
                                if (b == 0)
                                        return false;
                                a %= b;
                                break;
                        case DW_OP_mul: a *= b; break;
                        case DW_OP_or: a |= b; break;
                        case DW_OP_plus: a += b; break;
                        case DW_OP_shl: a = b < 64 ? a << b : 0; break;
                        case DW_OP_shr: a = b < 64 ? a >> b : 0; break;
                        case DW_OP_shra: a = (uint64_t) ((int64_t) a >> (b < 64 ? b : 63)); break;
                        case DW_OP_xor: a ^= b; break;
                        case DW_OP_le: a = (int64_t) a <= (int64_t) b; break;
                        case DW_OP_ge: a = (int64_t) a >= (int64_t) b; break;
                        case DW_OP_eq: a = a == b; break;
                        case DW_OP_lt: a = (int64_t) a < (int64_t) b; break;
                        case DW_OP_gt: a = (int64_t) a > (int64_t) b; break;
                        default: a = a != b; break;
                        }
                        PUSH(a);
                        break;
                case DW_OP_bra:
                        POP(a);
                        if (a == 0)
                                break;
                        __attribute__((fallthrough));
                case DW_OP_skip: {
                        /* Its 2-byte operand counts from the end of the 3-byte operation. */
                        uint64_t to = op->offset + 3 + (uint64_t) (int64_t) (int16_t) op->number;
                        size_t j;

                        for (j = 0; j < nops && ops[j].offset != to; j++)
                                ;
                        if (j == nops)
                                return false;
                        i = j - 1;      /* the loop's i++ lands on it */
                        break;
                }
                case DW_OP_nop:
                        break;
                case DW_OP_call_frame_cfa:
                        if (cfa == 0)
                                return false;
                        PUSH(cfa);
                        location = true;
                        break;
                case DW_OP_stack_value:
                        location = false;
                        break;
                default:
                        return false;
                }
        }
#undef PUSH
#undef POP
        if (sp == 0)
                return false;
        a = stack[sp - 1];
        if (location && !read(userdata, a, &a))
                return false;
        *ret = a;
        return true;
}

