/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * symbolizer_bare_names(), what /debug/pprof/symbol answers: addresses
 * without a process. The test maps its own executable (from
 * /proc/self/maps) into the mapping table for two processes at the place
 * it runs, so a function of this file is named by the name the compiler
 * gave it; a third process mapping another file over the same place makes
 * it nobody's. Kernel addresses come from a kallsyms file written here and
 * are named only when [privacy] kernel_addresses lets them out; without,
 * the daemon must not be an oracle for the kernel's layout.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "macro.h"
#include "source.h"
#include "symbolizer.h"

/* A function of this executable with a symbol of its own (not inlined, not static: in .symtab by name). */
__attribute__((noinline)) int bare_names_probe(int x);
__attribute__((noinline)) int bare_names_probe(int x) {
        return x * 3 + 1;
}

#define KERNEL_FN_ADDR  UINT64_C(0xffffffff81000000)

struct named {
        const char *name[8];
};

static void found(void *ctx, size_t i, const char *name) {
        struct named *n = ctx;

        assert_true(i < ELEMENTSOF(n->name));
        assert_null(n->name[i]);
        n->name[i] = strdup(name);
}

static void named_done(struct named *n) {
        for (size_t i = 0; i < ELEMENTSOF(n->name); i++)
                free((char *) n->name[i]);
        *n = (struct named) {};
}

/* The mapping of /proc/self/maps that holds addr: start, length, offset and path. */
static void self_mapping(uint64_t addr, struct source_mapping *ret, char *path, size_t path_len) {
        FILE *f = fopen("/proc/self/maps", "re");
        char line[PATH_MAX + 128];

        assert_non_null(f);
        while (fgets(line, sizeof(line), f)) {
                uint64_t start, end, off;
                int n = 0;

                if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %*s %*s %n", &start, &end, &off, &n) < 3 ||
                    addr < start || addr >= end)
                        continue;
                line[strcspn(line, "\n")] = '\0';
                snprintf(path, path_len, "%s", line + n);
                *ret = (struct source_mapping) { .start = start, .len = end - start, .pgoff = off, .filename = path };
                fclose(f);
                return;
        }
        fail_msg("no mapping of /proc/self/maps holds %#" PRIx64, addr);
}

static void test_bare_names(void **state) {
        char tmpl[] = "/tmp/test-symbolizer-bare-XXXXXX", kallsyms[PATH_MAX], path[PATH_MAX];
        uint64_t probe = (uint64_t) (uintptr_t) &bare_names_probe;
        struct source_mapping m;
        struct symbolizer z;
        struct named n = {};
        FILE *f;
        int fd;

        assert_int_equal(bare_names_probe(1), 4);
        self_mapping(probe, &m, path, sizeof(path));
        symbolizer_init(&z, NULL);
        m.pid = 100;
        assert_int_equal(symbolizer_add_mapping(z.maps, &m), 0);
        m.pid = 101;
        assert_int_equal(symbolizer_add_mapping(z.maps, &m), 0);
        symbolizer_publish(&z);

        fd = mkstemp(tmpl);
        assert_true(fd >= 0);
        close(fd);
        snprintf(kallsyms, sizeof(kallsyms), "%s", tmpl);
        assert_non_null(f = fopen(kallsyms, "we"));
        fprintf(f, "%016" PRIx64 " T fake_kernel_fn\n%016" PRIx64 " T fake_kernel_next\n", KERNEL_FN_ADDR,
                KERNEL_FN_ADDR + 0x100);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(symbolizer_load_kallsyms(&z, kallsyms), 2);

        {
                /* Ascending: nothing mapped, the probe, past the mapping, kernel text, kernel before any symbol. */
                const uint64_t addrs[] = { 0x10, probe + 1, m.start + m.len, KERNEL_FN_ADDR - 0x1000,
                                           KERNEL_FN_ADDR + 0x10 };

                /* Kernel addresses withheld (the default): never named, even known. */
                symbolizer_bare_names(&z, addrs, ELEMENTSOF(addrs), found, &n);
                assert_null(n.name[0]);
                assert_non_null(n.name[1]);
                assert_string_equal(n.name[1], "bare_names_probe");
                assert_null(n.name[2]);
                assert_null(n.name[3]);
                assert_null(n.name[4]);
                named_done(&n);

                /* Served: kallsyms names its own, and nothing else is called "[kernel]". */
                z.privacy.kernel_addresses = true;
                symbolizer_bare_names(&z, addrs, ELEMENTSOF(addrs), found, &n);
                assert_string_equal(n.name[1], "bare_names_probe");
                assert_null(n.name[3]);
                assert_string_equal(n.name[4], "fake_kernel_fn");
                named_done(&n);
                z.privacy.kernel_addresses = false;

                /* Another file over the same place in a third process: which one was sampled? Neither. */
                m.pid = 102;
                m.filename = "/usr/lib/another.so";
                assert_int_equal(symbolizer_add_mapping(z.maps, &m), 0);
                /* Not yet published: readers still see the two. */
                symbolizer_bare_names(&z, addrs, ELEMENTSOF(addrs), found, &n);
                assert_string_equal(n.name[1], "bare_names_probe");
                named_done(&n);
                symbolizer_publish(&z);
                symbolizer_bare_names(&z, addrs, ELEMENTSOF(addrs), found, &n);
                for (size_t i = 0; i < ELEMENTSOF(addrs); i++)
                        assert_null(n.name[i]);
                named_done(&n);
        }
        symbolizer_done(&z);
        unlink(kallsyms);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_bare_names),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
