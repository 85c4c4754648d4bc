/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * symbols/symbols.c reading an ELF file it is given (outside input): the
 * input is mapped as a process's file through a memfd, then looked up at
 * every 4th address of the first pages, as samples of that process would be,
 * for its function and for its source lines (its DWARF: symbols/srcline.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "macro.h"
#include "spegen-io.h"
#include "symbols.h"

#define FUZZ_PID        1
#define FUZZ_BASE       UINT64_C(0x400000)
#define FUZZ_MAP_LEN    UINT64_C(0x4000)
/* A64 instructions are 4 bytes. */
#define FUZZ_PC_STEP    4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_close_ int fd = memfd_create("fuzz-symbols", MFD_CLOEXEC);
        struct symbols *s;
        char path[64];
        size_t chars = 0;

        if (fd < 0 || spegen_write_full(fd, data, size, 0) < 0)
                return 0;
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        s = symbols_new(NULL);
        if (symbols_add_mapping(s, FUZZ_PID, FUZZ_BASE, FUZZ_MAP_LEN, 0, path, NULL, 0) == 0)
                for (uint64_t pc = FUZZ_BASE; pc < FUZZ_BASE + FUZZ_MAP_LEN; pc += FUZZ_PC_STEP) {
                        struct symbols_result r;

                        struct symbols_frame frames[SYMBOLS_MAX_FRAMES];
                        int n;

                        if (symbols_lookup(s, FUZZ_PID, pc, &r) < 0 || !r.has_mapping)
                                __builtin_trap();
                        /* Its DWARF too (srcline.c): at most the frames asked for. */
                        n = symbols_lines(s, FUZZ_PID, pc, frames, ELEMENTSOF(frames));
                        if (n < 0 || n > (int) ELEMENTSOF(frames))
                                __builtin_trap();
                        /* Data symbols and their DWARF members at the same addresses (.rodata may be there). */
                        struct symbols_data d;

                        if (symbols_data_symbol(s, FUZZ_PID, pc, &d) == 0)
                                chars += strlen(d.symbol) + strlen(d.member);
                        /* Every string read to its end: ASan stops at one that points out of its file's data. */
                        for (int i = 0; i < n; i++)
                                chars += (frames[i].file ? strlen(frames[i].file) : 0) +
                                         (frames[i].function ? strlen(frames[i].function) : 0);
                }
        symbols_free(s);
        if (chars == SIZE_MAX)
                __builtin_trap();
        return 0;
}
