/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * symbols/symbols.c reading the text files it is given (outside input): the
 * input as a JIT's perf-PID.map (any process can write one) and as a
 * kallsyms file, then looked up at every address its lines start with and
 * the next byte, as samples would be. A lookup in the mapped range always
 * finds the mapping; a name found is a string within the file's.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "macro.h"
#include "spegen-io.h"
#include "strbuf.h"
#include "symbols.h"

#define FUZZ_PID        1
/* The whole user half of a 48-bit address space, as one anonymous mapping. */
#define FUZZ_ANON_START UINT64_C(0x1000)
#define FUZZ_ANON_END   UINT64_C(0x800000000000)
#define FUZZ_KERNEL_TOP UINT64_C(0xff00000000000000)
/* Addresses looked up per input, at most. */
#define FUZZ_MAX_PCS    256

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[] = "/tmp/fuzz-symbols-text-XXXXXX";

/* The perf map is removed after each input: the directory is empty at exit. */
__attribute__((destructor)) static void remove_dir(void) {
        if (dir[strlen(dir) - 1] != 'X')
                rmdir(dir);
}

static void check(struct symbols *s, uint64_t pc, size_t size) {
        struct symbols_result r;
        bool kernel = pc >= FUZZ_KERNEL_TOP;
        int k = symbols_lookup(s, FUZZ_PID, pc, &r);

        if (kernel ? k != 0 || r.has_mapping || !r.function : (pc >= FUZZ_ANON_START && pc < FUZZ_ANON_END) != (k == 0))
                __builtin_trap();
        /* A name from the file is no longer than the file; SYMBOLS_KERNEL_NAME is not from it. */
        if (k == 0 && r.function && !streq(r.function, SYMBOLS_KERNEL_NAME) &&
            (strlen(r.function) > size || r.function_offset > pc))
                __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_close_ int fd = memfd_create("fuzz-kallsyms", MFD_CLOEXEC);
        _cleanup_free_ char *text = xmalloc(size + 1);
        char map[PATH_MAX], ks[PATH_MAX];
        struct symbols *s;
        size_t n = 0;
        int mfd;

        if (dir[strlen(dir) - 1] == 'X' && !mkdtemp(dir))
                return 0;
        snprintf(map, sizeof(map), "%s/perf-%d.map", dir, FUZZ_PID);
        mfd = open(map, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || mfd < 0 || spegen_write_full(fd, data, size, 0) < 0 ||
            spegen_write_full(mfd, data, size, 0) < 0) {
                safe_close(mfd);
                return 0;
        }
        safe_close(mfd);
        snprintf(ks, sizeof(ks), "/proc/self/fd/%d", fd);
        memcpy(text, data, size);
        text[size] = '\0';

        s = symbols_new(&(struct symbols_limits) { .perf_map_dir = dir, .procfs_root = "" });
        if (symbols_add_mapping(s, FUZZ_PID, FUZZ_ANON_START, FUZZ_ANON_END - FUZZ_ANON_START, 0, "//anon", NULL,
                                0) < 0)
                __builtin_trap();
        (void) symbols_load_kallsyms(s, ks);
        /* Every line's first number, as an address. */
        for (const char *l = text; l && n < FUZZ_MAX_PCS; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL, n++) {
                uint64_t pc = strtoull(l, NULL, 16);

                check(s, pc, size);
                check(s, pc + 1, size);
        }
        symbols_free(s);
        unlink(map);
        return 0;
}
