/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * symbols/cfi-expr.c on arbitrary operations, as a hostile file's CFI would
 * hand them over through libdw: each 20 bytes of input are one operation
 * (its atom, its two operands, and a 2-byte step to its offset, so that
 * branches find or miss their targets), after 17 registers of 8 bytes and a
 * byte of which are known. Memory answers for addresses whose low three
 * bits are zero, a value made from the address, and refuses the others.
 * The evaluation must end (the steps are bounded), touch nothing outside
 * its operations, and leave the result alone when it refuses.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cfi-expr.h"
#include "macro.h"

#define FUZZ_REGS       17U
#define FUZZ_OP_BYTES   20U
#define FUZZ_OPS_MAX    512U

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool mem(void *userdata, uint64_t addr, uint64_t *ret) {
        (void) userdata;
        if (addr & 7)
                return false;
        *ret = addr * UINT64_C(0x9E3779B97F4A7C15);
        return true;
}

static uint64_t word(const uint8_t *p, size_t n) {
        uint64_t v = 0;

        memcpy(&v, p, MIN(n, sizeof(v)));
        return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static Dwarf_Op ops[FUZZ_OPS_MAX];
        uint64_t regs_v[FUZZ_REGS] = {}, v = 0x5a5a, cfa;
        struct cfi_expr_regs regs = { .v = regs_v, .n = FUZZ_REGS };
        Dwarf_Word at = 0;
        size_t n = 0;

        if (size < FUZZ_REGS * 8 + 9)
                return 0;
        for (size_t i = 0; i < FUZZ_REGS; i++)
                regs_v[i] = word(data + 8 * i, 8);
        data += FUZZ_REGS * 8;
        size -= FUZZ_REGS * 8;
        regs.known = word(data, 8) & ((UINT64_C(1) << FUZZ_REGS) - 1);
        cfa = word(data, 8) >> 20;
        data += 8;
        size -= 8;
        for (; size >= FUZZ_OP_BYTES && n < FUZZ_OPS_MAX; data += FUZZ_OP_BYTES, size -= FUZZ_OP_BYTES) {
                ops[n] = (Dwarf_Op) {
                        .atom = data[0],
                        .number = word(data + 1, 8),
                        .number2 = word(data + 9, 8),
                        .offset = at,
                };
                at += 1 + (Dwarf_Word) (data[17] % 9);
                n++;
        }
        if (!cfi_expr_eval(ops, n, &regs, cfa, word(data, size), mem, NULL, &v) && v != 0x5a5a)
                abort();        /* a refusal wrote the result */
        return 0;
}
