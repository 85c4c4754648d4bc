/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * symbols/unwind.c walking a sample's registers and stack copy (outside
 * input: whatever the sampled process had on its stack) against a fixed
 * Dwfl: this binary's own executable mappings and libc's, from
 * /proc/self/maps, reported once.
 *
 * Input: the registers of unwind_regs_mask() (8 bytes each, in bit order,
 * zeros when short), then the stack copy (at most 8 KiB). So that the
 * fuzzer can build chains whatever the address layout of the run, a
 * register or an 8-byte-aligned stack word whose top two bits are 01 is
 * taken as an offset into this binary's code, 10 as an offset from the
 * stack copy's start; other words are used as they are. The walk must end
 * with 1..max_frames frames, the first the pc.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "macro.h"
#include "unwind-capture.h"
#include "unwind.h"

#define FUZZ_STACK_MAX  8192U
#define FUZZ_SP         UINT64_C(0x7ffd00000000)
#define FUZZ_FRAMES     64U
#define TAG(w)          ((w) >> 62)
#define TAG_TEXT        UINT64_C(1)
#define TAG_STACK       UINT64_C(2)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct unwind *fuzz_unwind;
static uint64_t text_lo, text_len;

static void fuzz_init(void) {
        char exe[PATH_MAX], line[CAPTURE_MAPS_LINE_MAX];
        ssize_t n;
        FILE *f;

        fuzz_unwind = unwind_new(&(struct unwind_limits) { .max_frames = FUZZ_FRAMES });
        n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        exe[n > 0 ? n : 0] = 0;
        f = fopen("/proc/self/maps", "re");
        if (!f)
                abort();
        while (fgets(line, sizeof(line), f)) {
                uint64_t start, end, pgoff;
                char perms[sizeof("rwxp")], name[PATH_MAX] = "";

                /* proc(5): address perms offset dev inode pathname */
                if (sscanf(line, "%lx-%lx %4s %lx %*s %*s %4095s", &start, &end, perms, &pgoff, name) < 4 ||
                    perms[2] != 'x')
                        continue;
                if (unwind_add_mapping(fuzz_unwind, (uint32_t) getpid(), start, end - start, pgoff, name,
                                       NULL, 0) < 0)
                        abort();
                if (streq(name, exe)) {
                        text_lo = start;
                        text_len = end - start;
                }
        }
        fclose(f);
        if (text_len == 0)
                abort();
}

static uint64_t place(uint64_t w, size_t stack_len) {
        if (TAG(w) == TAG_TEXT)
                return text_lo + w % text_len;
        if (TAG(w) == TAG_STACK)
                return FUZZ_SP + w % (stack_len + 64);
        return w;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
#ifdef CAPTURE_PERF_PC
        static uint8_t stack[FUZZ_STACK_MAX];
        uint64_t regs[CAPTURE_PERF_REGS_MAX] = {}, frames[FUZZ_FRAMES + 8];
        size_t nr = (size_t) __builtin_popcountll(unwind_regs_mask()), regs_len = nr * 8, stack_len;
        struct unwind_input in;
        int n;

        if (!fuzz_unwind)
                fuzz_init();

        memcpy(regs, data, MIN(size, regs_len));
        stack_len = size > regs_len ? MIN(size - regs_len, (size_t) FUZZ_STACK_MAX) : 0;
        memcpy(stack, data + MIN(size, regs_len), stack_len);
        for (size_t off = 0; off + 8 <= stack_len; off += 8) {
                uint64_t w;

                memcpy(&w, stack + off, 8);
                w = place(w, stack_len);
                memcpy(stack + off, &w, 8);
        }
        for (size_t i = 0; i < nr; i++)
                regs[i] = place(regs[i], stack_len);
        regs[capture_reg_index(CAPTURE_PERF_SP)] = FUZZ_SP;

        in = (struct unwind_input) {
                .pid = (uint32_t) getpid(), .tid = (uint32_t) getpid(),
                .regs_abi = PERF_SAMPLE_REGS_ABI_64,
                .regs_mask = unwind_regs_mask(),
                .regs = regs, .nr_regs = nr,
                .stack = stack, .stack_len = stack_len,
        };
        n = unwind_user(fuzz_unwind, &in, frames, ELEMENTSOF(frames));
        if (n < 1 || n > (int) FUZZ_FRAMES ||
            frames[0] != regs[capture_reg_index(CAPTURE_PERF_PC)])
                __builtin_trap();
#endif
        return 0;
}
