/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * symbols/symbols.c reading an ELF file it is given (outside input): the
 * input is mapped as a process's file through a memfd, then looked up at
 * every 4th address of the first pages, as samples of that process would be.
 */
#include <stdint.h>
#include <stdio.h>
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

        if (fd < 0 || spegen_write_full(fd, data, size, 0) < 0)
                return 0;
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        s = symbols_new(NULL);
        if (symbols_add_mapping(s, FUZZ_PID, FUZZ_BASE, FUZZ_MAP_LEN, 0, path, NULL, 0) == 0)
                for (uint64_t pc = FUZZ_BASE; pc < FUZZ_BASE + FUZZ_MAP_LEN; pc += FUZZ_PC_STEP) {
                        struct symbols_result r;

                        if (symbols_lookup(s, FUZZ_PID, pc, &r) < 0 || !r.has_mapping)
                                __builtin_trap();
                }
        symbols_free(s);
        return 0;
}
