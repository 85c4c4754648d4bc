/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * symbols/symbols.c: lookups in ELF files written by the generator's ELF
 * writer (tests/spegen/fake-elf.c), patched into the variants that matter
 * (a PT_LOAD whose vaddr differs from its offset, ET_EXEC, .dynsym only),
 * the bounds and their eviction counters, then the generator's perf.data:
 * every record's PC resolves to the function its ground truth names.
 *
 * Usage: test-symbols ARMPROFD-SPEGEN
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake-elf.h"
#include "macro.h"
#include "replay-sym.h"
#include "strbuf.h"
#include "test-files.h"
#include "symbols.h"

#define TEXT_OFF        UINT64_C(0x1000)
#define TEXT_SIZE       UINT64_C(0x1000)
#define FILE_MAP_LEN    (TEXT_OFF + TEXT_SIZE)
#define BASE            UINT64_C(0x555500000000)
/* Where a non-PIE AArch64/x86-64 executable is linked. */
#define EXEC_VADDR      UINT64_C(0x400000)
#define PID             1234
#define KERNEL_PC       UINT64_C(0xffff800008010000)

static const struct fake_elf_sym test_syms[] = {
        { "alpha", 0x1000, 0x100 },
        { "beta", 0x1100, 0x80 },       /* a gap follows, up to 0x1200 */
        { "gamma", 0x1200, 0x200 },
};

static const char *spegen_path;
static char tmpdir[] = "/tmp/test-symbols-XXXXXX";

static char *tmp_path(const char *name) {
        struct strbuf sb = STRBUF_INIT;

        strbuf_printf(&sb, "%s/%s", tmpdir, name);
        return strbuf_steal(&sb, NULL);
}

enum elf_variant {
        ELF_PLAIN,      /* ET_DYN, vaddr == offset */
        ELF_DYN_BIAS,   /* ET_DYN linked at EXEC_VADDR */
        ELF_EXEC_BIAS,  /* ET_EXEC linked at EXEC_VADDR */
        ELF_DYNSYM,     /* symbols in .dynsym, no .symtab */
};

/* Write the fake ELF, then patch the ELF header, program header and
 * symbols in place (ELF-64 gABI layouts from <elf.h>). */
static char *write_elf(const char *name, enum elf_variant v) {
        char *path = tmp_path(name);
        struct stat st;
        uint8_t *img;
        Elf64_Ehdr *eh;
        int fd;

        fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(fake_elf_write(fd, TEXT_OFF, TEXT_SIZE, test_syms, ELEMENTSOF(test_syms)), 0);
        assert_int_equal(fstat(fd, &st), 0);
        img = xmalloc((size_t) st.st_size);
        assert_int_equal(pread(fd, img, (size_t) st.st_size, 0), st.st_size);
        eh = (Elf64_Ehdr *) img;

        if (v == ELF_DYN_BIAS || v == ELF_EXEC_BIAS) {
                Elf64_Phdr *ph = (Elf64_Phdr *) (img + eh->e_phoff);

                if (v == ELF_EXEC_BIAS)
                        eh->e_type = ET_EXEC;
                ph->p_vaddr += EXEC_VADDR;
                ph->p_paddr += EXEC_VADDR;
        }
        for (unsigned i = 0; i < eh->e_shnum; i++) {
                Elf64_Shdr *sh = (Elf64_Shdr *) (img + eh->e_shoff + (uint64_t) i * eh->e_shentsize);

                if (sh->sh_type != SHT_SYMTAB)
                        continue;
                if (v == ELF_DYNSYM)
                        sh->sh_type = SHT_DYNSYM;
                if (v == ELF_DYN_BIAS || v == ELF_EXEC_BIAS)
                        for (uint64_t k = 1; k < sh->sh_size / sizeof(Elf64_Sym); k++)
                                ((Elf64_Sym *) (img + sh->sh_offset))[k].st_value += EXEC_VADDR;
        }
        assert_int_equal(pwrite(fd, img, (size_t) st.st_size, 0), st.st_size);
        free(img);
        close(fd);
        return path;
}

static void assert_function(struct symbols *s, uint32_t pid, uint64_t pc, const char *name, uint64_t offset) {
        struct symbols_result r;

        assert_int_equal(symbols_lookup(s, pid, pc, &r), 0);
        if (!name) {
                assert_null(r.function);
                return;
        }
        assert_non_null(r.function);
        assert_string_equal(r.function, name);
        assert_int_equal(r.function_offset, offset);
}

static void test_lookup(void **state) {
        _cleanup_free_ char *path = write_elf("plain.elf", ELF_PLAIN);
        static const uint8_t build_id[] = { 0xde, 0xad, 0xbe, 0xef, 0x01 };
        struct symbols *s = symbols_new(NULL);
        struct symbols_result r;

        assert_int_equal(symbols_add_mapping(s, PID, BASE, FILE_MAP_LEN, 0, path, build_id, sizeof(build_id)), 0);
        assert_int_equal(symbols_lookup(s, PID, BASE + 0x1010, &r), 0);
        assert_true(r.has_mapping);
        assert_int_equal(r.map_start, BASE);
        assert_int_equal(r.map_limit, BASE + FILE_MAP_LEN);
        assert_int_equal(r.map_pgoff, 0);
        assert_string_equal(r.filename, path);
        assert_string_equal(r.build_id_hex, "deadbeef01");
        assert_string_equal(r.function, "alpha");
        assert_int_equal(r.function_offset, 0x10);

        assert_function(s, PID, BASE + 0x1000, "alpha", 0);
        assert_function(s, PID, BASE + 0x10ff, "alpha", 0xff);
        assert_function(s, PID, BASE + 0x1100, "beta", 0);
        assert_function(s, PID, BASE + 0x117f, "beta", 0x7f);
        assert_function(s, PID, BASE + 0x1180, NULL, 0);        /* the gap */
        /* Unnamed, but the file was read: it names nothing there (pprof's has_functions). */
        assert_int_equal(symbols_lookup(s, PID, BASE + 0x1180, &r), 0);
        assert_true(r.symbols_read);
        assert_function(s, PID, BASE + 0x13fc, "gamma", 0x1fc);
        assert_function(s, PID, BASE + 0x0800, NULL, 0);        /* before the first symbol */

        assert_int_equal(symbols_lookup(s, PID, BASE + FILE_MAP_LEN, &r), -ENOENT);
        assert_int_equal(symbols_lookup(s, PID, BASE - 1, &r), -ENOENT);
        assert_int_equal(symbols_lookup(s, PID + 1, BASE + 0x1000, &r), -ENOENT);
        /* Loaded once, however many lookups. */
        assert_int_equal(symbols_get_stats(s)->files_loaded, 1);
        assert_int_equal(symbols_get_stats(s)->file_errors, 0);
        assert_null(symbols_free(s));
        assert_null(symbols_free(NULL));
        unlink(path);
}

/* pc - start + pgoff: a mapping of the text alone (pgoff 0x1000). */
static void test_pgoff(void **state) {
        _cleanup_free_ char *path = write_elf("pgoff.elf", ELF_PLAIN);
        struct symbols *s = symbols_new(NULL);
        struct symbols_result r;

        assert_int_equal(symbols_add_mapping(s, PID, BASE, TEXT_SIZE, TEXT_OFF, path, NULL, 0), 0);
        assert_function(s, PID, BASE, "alpha", 0);
        assert_function(s, PID, BASE + 0x100, "beta", 0);
        assert_int_equal(symbols_lookup(s, PID, BASE + 0x200, &r), 0);
        assert_int_equal(r.map_pgoff, TEXT_OFF);
        assert_string_equal(r.build_id_hex, "");
        assert_string_equal(r.function, "gamma");
        symbols_free(s);
        unlink(path);
}

/*
 * Data addresses ([privacy] data_addresses = no): the region is the mapping's name and the offset
 * /proc/PID/maps gives, its offset column (file mappings' pgoff, 0 for anonymous memory) plus the
 * distance from the start. No ELF file is read: the paths need not exist.
 */
static void test_region(void **state) {
        struct symbols *s = symbols_new(NULL);
        char name[PATH_MAX];
        uint64_t off = 0;

        /* libfoo.so's .data: mapped at 0x7f0000003000 from file offset 0x2000. */
        assert_int_equal(symbols_add_mapping(s, PID, 0x7f0000003000, 0x1000, 0x2000, "/usr/lib/libfoo.so", NULL, 0), 0);
        /* perf records anonymous memory with pgoff = its address: /proc/PID/maps says 0. */
        assert_int_equal(symbols_add_mapping(s, PID, 0x5555000000, 0x21000, 0x5555000000, "[heap]", NULL, 0), 0);
        assert_int_equal(symbols_add_mapping(s, PID, 0xffff8a000000, 0x4000000, 0xffff8a000, "//anon", NULL, 0), 0);
        assert_int_equal(symbols_add_mapping(s, PID, 0x7f1000000000, 0x1000, 0x3000, "/memfd:jit (deleted)", NULL, 0), 0);

        assert_int_equal(symbols_region(s, PID, 0x7f0000003040, name, sizeof(name), &off), 0);
        assert_string_equal(name, "/usr/lib/libfoo.so");
        assert_int_equal(off, 0x2040);
        assert_int_equal(symbols_region(s, PID, 0x5555001c40, name, sizeof(name), &off), 0);
        assert_string_equal(name, "[heap]");
        assert_int_equal(off, 0x1c40);
        assert_int_equal(symbols_region(s, PID, 0xffff8a001000, name, sizeof(name), &off), 0);
        assert_string_equal(name, "//anon");
        assert_int_equal(off, 0x1000);
        assert_int_equal(symbols_region(s, PID, 0x7f1000000010, name, sizeof(name), &off), 0);
        assert_int_equal(off, 0x3010);
        /* The first byte past a mapping, another process, nothing mapped: no region, outputs untouched. */
        off = 7;
        assert_int_equal(symbols_region(s, PID, 0x7f0000004000, name, sizeof(name), &off), -ENOENT);
        assert_int_equal(symbols_region(s, PID + 1, 0x7f0000003040, name, sizeof(name), &off), -ENOENT);
        assert_int_equal(symbols_region(s, PID, 0x1000, name, sizeof(name), &off), -ENOENT);
        assert_int_equal(off, 7);
        symbols_free(s);
}

/* Data mappings share a process's bound but never push a code mapping out; every drop is counted. */
static void test_region_bound(void **state) {
        struct symbols *s = symbols_new(&(struct symbols_limits) { .max_mappings_per_pid = 2, .debug_dirs = "" });
        struct symbols_maps *m = symbols_get_maps(s);
        char name[PATH_MAX];
        uint64_t off;

        assert_int_equal(symbols_maps_add(m, PID, 0x1000, 0x1000, 0, "/bin/a", NULL, 0), 0);
        assert_int_equal(symbols_maps_add_data(m, PID, 0x10000, 0x1000, 0, "[heap]"), 0);
        /* Full: a second data mapping displaces the first, not /bin/a. */
        assert_int_equal(symbols_maps_add_data(m, PID, 0x20000, 0x1000, 0, "//anon"), 0);
        assert_int_equal(symbols_region(s, PID, 0x10010, name, sizeof(name), &off), -ENOENT);
        assert_int_equal(symbols_region(s, PID, 0x20010, name, sizeof(name), &off), 0);
        assert_string_equal(name, "//anon");
        assert_int_equal(symbols_region(s, PID, 0x1010, name, sizeof(name), &off), 0);
        assert_string_equal(name, "/bin/a");
        /* A code mapping displaces the data one. */
        assert_int_equal(symbols_maps_add(m, PID, 0x3000, 0x1000, 0, "/bin/b", NULL, 0), 0);
        assert_int_equal(symbols_region(s, PID, 0x20010, name, sizeof(name), &off), -ENOENT);
        /* Full of code: a data mapping is dropped, both code mappings stay. */
        assert_int_equal(symbols_maps_add_data(m, PID, 0x30000, 0x1000, 0, "[stack]"), 0);
        assert_int_equal(symbols_region(s, PID, 0x30010, name, sizeof(name), &off), -ENOENT);
        assert_int_equal(symbols_region(s, PID, 0x1010, name, sizeof(name), &off), 0);
        assert_int_equal(symbols_region(s, PID, 0x3010, name, sizeof(name), &off), 0);
        assert_string_equal(name, "/bin/b");
        assert_int_equal(symbols_get_stats(s)->mapping_evictions, 3);
        symbols_free(s);
}

/* + p_vaddr - p_offset of the PT_LOAD for ET_DYN and ET_EXEC (perf does the same). */
static void test_load_bias(void **state) {
        _cleanup_free_ char *dyn = write_elf("dyn-bias.elf", ELF_DYN_BIAS);
        _cleanup_free_ char *exec = write_elf("exec-bias.elf", ELF_EXEC_BIAS);
        struct symbols *s = symbols_new(NULL);

        assert_int_equal(symbols_add_mapping(s, PID, BASE, FILE_MAP_LEN, 0, dyn, NULL, 0), 0);
        assert_function(s, PID, BASE + 0x1104, "beta", 4);
        assert_function(s, PID, BASE + 0x1000, "alpha", 0);
        assert_int_equal(symbols_add_mapping(s, PID + 1, EXEC_VADDR, FILE_MAP_LEN, 0, exec, NULL, 0), 0);
        assert_function(s, PID + 1, EXEC_VADDR + 0x1208, "gamma", 8);
        assert_function(s, PID + 1, EXEC_VADDR + 0x1180, NULL, 0);
        symbols_free(s);
        unlink(dyn);
        unlink(exec);
}

static void test_dynsym(void **state) {
        _cleanup_free_ char *path = write_elf("dynsym.elf", ELF_DYNSYM);
        struct symbols *s = symbols_new(NULL);

        assert_int_equal(symbols_add_mapping(s, PID, BASE, FILE_MAP_LEN, 0, path, NULL, 0), 0);
        assert_function(s, PID, BASE + 0x1100, "beta", 0);
        symbols_free(s);
        unlink(path);
}

static void test_kernel_and_non_files(void **state) {
        struct symbols *s = symbols_new(NULL);
        struct symbols_result r;

        /* Kernel: no mapping needed, no pid needed. */
        assert_int_equal(symbols_lookup(s, 99, KERNEL_PC, &r), 0);
        assert_false(r.has_mapping);
        assert_string_equal(r.function, SYMBOLS_KERNEL_NAME);

        /* Anonymous memory and unreadable files: the mapping, no function,
         * and an unreadable file is tried once. */
        assert_int_equal(symbols_add_mapping(s, PID, BASE, 0x1000, 0, "//anon", NULL, 0), 0);
        assert_int_equal(symbols_add_mapping(s, PID, BASE + 0x1000, 0x1000, 0, "[vdso]", NULL, 0), 0);
        assert_int_equal(symbols_add_mapping(s, PID, BASE + 0x2000, 0x1000, 0, "/nonexistent/lib.so", NULL, 0), 0);
        assert_int_equal(symbols_lookup(s, PID, BASE + 0x10, &r), 0);
        assert_true(r.has_mapping);
        assert_string_equal(r.filename, "//anon");
        assert_null(r.function);
        /* No symbols were read for any of them: another reader might name them. */
        assert_false(r.symbols_read);
        assert_int_equal(symbols_lookup(s, PID, BASE + 0x1010, &r), 0);
        assert_string_equal(r.filename, "[vdso]");
        assert_null(r.function);
        assert_false(r.symbols_read);
        assert_int_equal(symbols_get_stats(s)->files_loaded, 0);
        for (int i = 0; i < 3; i++) {
                assert_int_equal(symbols_lookup(s, PID, BASE + 0x2010, &r), 0);
                assert_string_equal(r.filename, "/nonexistent/lib.so");
                assert_null(r.function);
                assert_false(r.symbols_read);
        }
        assert_int_equal(symbols_get_stats(s)->files_loaded, 1);
        assert_int_equal(symbols_get_stats(s)->file_errors, 1);
        symbols_free(s);
}

/*
 * A FIFO where a mapped file was (a perf.data names any path; a process can
 * replace its file after mapping it): the lookup returns at once, without a
 * function, and counts a file error. Opened without O_NONBLOCK, open(2) of a
 * FIFO with no writer never returns and this test would time out.
 */
static void test_fifo_not_read(void **state) {
        _cleanup_free_ char *fifo = tmp_path("fifo.so");
        struct symbols *s = symbols_new(NULL);
        struct symbols_result r;

        assert_int_equal(mkfifo(fifo, 0600), 0);
        assert_int_equal(symbols_add_mapping(s, PID, BASE, 0x1000, 0, fifo, NULL, 0), 0);
        assert_int_equal(symbols_lookup(s, PID, BASE + 0x10, &r), 0);
        assert_true(r.has_mapping);
        assert_null(r.function);
        assert_int_equal(symbols_get_stats(s)->files_loaded, 1);
        assert_int_equal(symbols_get_stats(s)->file_errors, 1);
        symbols_free(s);
        assert_int_equal(unlink(fifo), 0);
}

static void test_bad_args(void **state) {
        static const uint8_t long_id[SYMBOLS_BUILD_ID_MAX + 1] = {};
        struct symbols *s = symbols_new(NULL);

        assert_int_equal(symbols_add_mapping(s, PID, BASE, 0, 0, "/x", NULL, 0), -EINVAL);
        assert_int_equal(symbols_add_mapping(s, PID, UINT64_MAX - 10, 100, 0, "/x", NULL, 0), -EINVAL);
        assert_int_equal(symbols_add_mapping(s, PID, BASE, 1, 0, "/x", long_id, sizeof(long_id)), -EINVAL);
        assert_int_equal(symbols_add_mapping(s, PID, BASE, 1, 0, NULL, NULL, 0), -EINVAL);
        symbols_free(s);
}

/* A new mapping replaces what it overlaps; a split keeps both ends with the right pgoff. */
static void test_overlap(void **state) {
        _cleanup_free_ char *path = write_elf("overlap.elf", ELF_PLAIN);
        struct symbols *s = symbols_new(NULL);
        struct symbols_result r;

        assert_int_equal(symbols_add_mapping(s, PID, BASE, 0x4000, 0, path, NULL, 0), 0);
        assert_int_equal(symbols_add_mapping(s, PID, BASE + 0x1000, 0x100, 0, "//anon", NULL, 0), 0);
        assert_int_equal(symbols_lookup(s, PID, BASE + 0x1080, &r), 0);
        assert_string_equal(r.filename, "//anon");
        assert_int_equal(r.map_start, BASE + 0x1000);
        assert_int_equal(r.map_limit, BASE + 0x1100);
        assert_int_equal(symbols_lookup(s, PID, BASE + 0x10, &r), 0);
        assert_string_equal(r.filename, path);
        assert_int_equal(r.map_limit, BASE + 0x1000);
        assert_int_equal(symbols_lookup(s, PID, BASE + 0x1100, &r), 0);
        assert_string_equal(r.filename, path);
        assert_int_equal(r.map_start, BASE + 0x1100);
        assert_int_equal(r.map_pgoff, 0x1100);
        assert_string_equal(r.function, "beta");

        /* Covering both: one mapping left. */
        assert_int_equal(symbols_add_mapping(s, PID, BASE, 0x4000, 0, "//anon", NULL, 0), 0);
        assert_int_equal(symbols_lookup(s, PID, BASE + 0x1100, &r), 0);
        assert_string_equal(r.filename, "//anon");
        assert_int_equal(r.map_start, BASE);
        assert_int_equal(r.map_limit, BASE + 0x4000);
        assert_int_equal(symbols_get_stats(s)->mapping_evictions, 0);
        symbols_free(s);
        unlink(path);
}

static void test_bounds(void **state) {
        struct symbols_limits lim = { .max_pids = 2, .max_mappings_per_pid = 3, .max_files = 2 };
        char *files[3];
        struct symbols *s = symbols_new(&lim);
        struct symbols_result r;

        /* Processes: least recently used goes. */
        assert_int_equal(symbols_add_mapping(s, 1, BASE, 0x1000, 0, "//anon", NULL, 0), 0);
        assert_int_equal(symbols_add_mapping(s, 2, BASE, 0x1000, 0, "//anon", NULL, 0), 0);
        assert_int_equal(symbols_lookup(s, 1, BASE, &r), 0);
        assert_int_equal(symbols_add_mapping(s, 3, BASE, 0x1000, 0, "//anon", NULL, 0), 0);
        assert_int_equal(symbols_get_stats(s)->pid_evictions, 1);
        assert_int_equal(symbols_lookup(s, 1, BASE, &r), 0);
        assert_int_equal(symbols_lookup(s, 2, BASE, &r), -ENOENT);
        assert_int_equal(symbols_lookup(s, 3, BASE, &r), 0);
        symbols_remove_pid(s, 3);
        assert_int_equal(symbols_lookup(s, 3, BASE, &r), -ENOENT);

        /* Mappings per process: the oldest goes. */
        for (uint64_t i = 0; i < 4; i++)
                assert_int_equal(symbols_add_mapping(s, 1, BASE + 0x10000 * (i + 1), 0x1000, 0, "//anon", NULL, 0), 0);
        assert_int_equal(symbols_get_stats(s)->mapping_evictions, 2);
        assert_int_equal(symbols_lookup(s, 1, BASE, &r), -ENOENT);
        assert_int_equal(symbols_lookup(s, 1, BASE + 0x10000, &r), -ENOENT);
        for (uint64_t i = 1; i < 4; i++)
                assert_int_equal(symbols_lookup(s, 1, BASE + 0x10000 * (i + 1), &r), 0);

        /* ELF files: least recently used goes, and comes back correct. */
        symbols_remove_pid(s, 1);
        files[0] = write_elf("f0.elf", ELF_PLAIN);
        files[1] = write_elf("f1.elf", ELF_DYN_BIAS);
        files[2] = write_elf("f2.elf", ELF_DYNSYM);
        for (uint64_t i = 0; i < 3; i++)
                assert_int_equal(symbols_add_mapping(s, 7, BASE + 0x100000 * i, FILE_MAP_LEN, 0, files[i], NULL, 0),
                                 0);
        for (int round = 0; round < 2; round++)
                for (uint64_t i = 0; i < 3; i++)
                        assert_function(s, 7, BASE + 0x100000 * i + 0x1100, "beta", 0);
        /* Round robin over 3 files with room for 2: every lookup reloads. */
        assert_int_equal(symbols_get_stats(s)->files_loaded, 6);
        assert_int_equal(symbols_get_stats(s)->file_evictions, 4);
        /* Two files alternating: f1 and f2 are cached, so f0 evicts f1 and f1
         * then evicts f2; after those two loads both stay cached. */
        for (int round = 0; round < 3; round++) {
                assert_function(s, 7, BASE + 0x1000, "alpha", 0);
                assert_function(s, 7, BASE + 0x100000 + 0x1200, "gamma", 0);
        }
        assert_int_equal(symbols_get_stats(s)->files_loaded, 8);
        assert_int_equal(symbols_get_stats(s)->file_evictions, 6);
        symbols_free(s);
        for (int i = 0; i < 3; i++) {
                unlink(files[i]);
                free(files[i]);
        }
}

/* key=value from the generator's truth.txt; NULL when absent. */
static void test_spegen(void **state) {
        _cleanup_free_ char *data = tmp_path("p.data"), *truth_path = tmp_path("p.truth.txt");
        _cleanup_free_ char *truth = NULL, *hot_pc = NULL, *hot_sym = NULL, *hot_count = NULL, *pid = NULL;
        struct symbols *s = symbols_new(NULL);
        struct replay_sym_stats st;
        struct symbols_result r;
        uint64_t total = 0;
        pid_t child;
        int status;

        child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                execl(spegen_path, spegen_path, "--out-dir", tmpdir, "--prefix", "p", "--records", "2000",
                      "--scenario", "all", "--no-bin", "--no-truth", (char *) NULL);
                _exit(127);
        }
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

        truth = test_read_text(truth_path);
        assert_non_null(truth);
        hot_pc = test_truth_get(truth, "hottest.pc");
        hot_sym = test_truth_get(truth, "hottest.symbol");
        hot_count = test_truth_get(truth, "hottest.count");
        pid = test_truth_get(truth, "pid");
        assert_non_null(hot_pc);
        assert_non_null(hot_count);
        assert_non_null(hot_sym);
        assert_non_null(pid);
        assert_string_equal(hot_sym, "hot_loop");

        assert_int_equal(replay_sym_run(data, s, NULL, &st), 0);
        assert_int_equal(st.mappings, 2);
        assert_int_equal(st.with_pc, 2000);

        /* The hottest PC names hot_loop; the perf.data's MMAP2 names the ELF the generator wrote. */
        assert_int_equal(symbols_lookup(s, (uint32_t) strtoul(pid, NULL, 10), strtoull(hot_pc, NULL, 16), &r), 0);
        assert_non_null(r.function);
        assert_string_equal(r.function, hot_sym);
        assert_true(strstr(r.filename, "/p.elf") != NULL);

        /* Every function the truth counts has exactly that many records
         * resolved to it, [kernel] included; nothing is left unresolved. */
        for (const char *l = truth; (l = strstr(l, "function_records.")); l++) {
                const char *name = l + strlen("function_records.");
                _cleanup_free_ char *fn = strndup(name, strcspn(name, "="));
                uint64_t want = strtoull(name + strlen(fn) + 1, NULL, 10);

                assert_int_equal(replay_sym_count(&st, fn), want);
                total += want;
        }
        assert_int_equal(total, 2000);
        assert_int_equal(replay_sym_count(&st, REPLAY_SYM_UNKNOWN), 0);
        assert_int_equal(replay_sym_count(&st, hot_sym), strtoull(hot_count, NULL, 10));
        replay_sym_done(&st);
        symbols_free(s);
}

/*
 * Snapshots are immutable: what the table does after a publish (a new
 * mapping, one punched through an old one, a process forgotten) is seen
 * from the next publish only; a publish with nothing changed is the same
 * snapshot; the eviction counters are the table's at its publish.
 */
/*
 * Bare addresses (pprof's symbol requests): an address is attributed when
 * every process that maps it maps the same file, build and offset there;
 * different files, builds or offsets, anonymous memory, or nothing mapped
 * leave it to nobody. The attributed pid then names it as a lookup does.
 */
static void test_owners(void **state) {
        _cleanup_free_ char *path = write_elf("owners.elf", ELF_PLAIN);
        static const uint8_t id_x[] = { 0x0a }, id_y[] = { 0x0b };
        struct symbols_maps *m = symbols_maps_new(NULL);
        struct symbols_cache *c = symbols_cache_new(NULL);
        enum { SHARED, TWO_FILES, TWO_OFFSETS, ANON, TWO_BUILDS, FILE_AND_ANON, UNMAPPED, ALONE, KERNEL, _N };
        /* Ascending, as the callers sort them. */
        static const uint64_t addrs[_N] = {
                [SHARED] = BASE + 0x1010,
                [TWO_FILES] = BASE + 0x10000010,
                [TWO_OFFSETS] = BASE + 0x20000010,
                [ANON] = BASE + 0x30000010,
                [TWO_BUILDS] = BASE + 0x40000010,
                [FILE_AND_ANON] = BASE + 0x50000010,
                [UNMAPPED] = BASE + 0x60000010,
                [ALONE] = BASE + 0x70001100,
                [KERNEL] = KERNEL_PC,
        };
        uint32_t pids[_N];
        struct symbols_snapshot *snap;
        struct symbols_result r;

        /* The same file at the same place in three processes (a non-PIE program, or ASLR's luck). */
        for (uint32_t pid = 10; pid < 13; pid++)
                assert_int_equal(symbols_maps_add(m, pid, BASE, FILE_MAP_LEN, 0, path, NULL, 0), 0);
        assert_int_equal(symbols_maps_add(m, 20, BASE + 0x10000000, 0x1000, 0, "/bin/b", NULL, 0), 0);
        assert_int_equal(symbols_maps_add(m, 21, BASE + 0x10000000, 0x1000, 0, "/bin/c", NULL, 0), 0);
        assert_int_equal(symbols_maps_add(m, 30, BASE + 0x20000000, 0x1000, 0, "/bin/d", NULL, 0), 0);
        assert_int_equal(symbols_maps_add(m, 31, BASE + 0x20000000, 0x1000, 0x1000, "/bin/d", NULL, 0), 0);
        assert_int_equal(symbols_maps_add(m, 40, BASE + 0x30000000, 0x1000, 0, "//anon", NULL, 0), 0);
        assert_int_equal(symbols_maps_add(m, 50, BASE + 0x40000000, 0x1000, 0, "/bin/e", id_x, 1), 0);
        assert_int_equal(symbols_maps_add(m, 51, BASE + 0x40000000, 0x1000, 0, "/bin/e", id_y, 1), 0);
        assert_int_equal(symbols_maps_add(m, 60, BASE + 0x50000000, 0x1000, 0, "/bin/f", NULL, 0), 0);
        assert_int_equal(symbols_maps_add(m, 61, BASE + 0x50000000, 0x1000, 0, "/dev/zero", NULL, 0), 0);
        assert_int_equal(symbols_maps_add(m, 70, BASE + 0x70000000, FILE_MAP_LEN, 0, path, NULL, 0), 0);
        snap = symbols_maps_publish(m);
        for (size_t i = 1; i < _N; i++)
                assert_true(addrs[i - 1] < addrs[i]);

        symbols_snapshot_owners(snap, addrs, _N, pids);
        assert_int_equal(pids[SHARED], 10);
        for (size_t i = TWO_FILES; i <= UNMAPPED; i++)
                assert_int_equal(pids[i], SYMBOLS_PID_NONE);
        assert_int_equal(pids[ALONE], 70);
        assert_int_equal(pids[KERNEL], SYMBOLS_PID_NONE);

        /* Named through the pid given, as a lookup of that process is. */
        assert_int_equal(symbols_cache_lookup(c, snap, pids[SHARED], addrs[SHARED], &r), 0);
        assert_string_equal(r.function, "alpha");
        assert_int_equal(symbols_cache_lookup(c, snap, pids[ALONE], addrs[ALONE], &r), 0);
        assert_string_equal(r.function, "beta");

        /* Nothing published, nothing asked. */
        symbols_snapshot_owners(NULL, addrs, _N, pids);
        for (size_t i = 0; i < _N; i++)
                assert_int_equal(pids[i], SYMBOLS_PID_NONE);
        symbols_snapshot_owners(snap, NULL, 0, NULL);

        symbols_snapshot_unref(snap);
        symbols_cache_free(c);
        symbols_maps_free(m);
        unlink(path);
}

static void test_snapshots(void **state) {
        _cleanup_free_ char *path = write_elf("snap.elf", ELF_PLAIN);
        struct symbols_maps *m = symbols_maps_new(&(struct symbols_limits) { .max_pids = 2 });
        struct symbols_cache *c = symbols_cache_new(NULL);
        struct symbols_snapshot *a, *b, *again;
        struct symbols_stats st = {};
        struct symbols_result r;

        assert_int_equal(symbols_cache_lookup(c, NULL, PID, BASE + 0x1010, &r), -ENOENT);
        assert_int_equal(symbols_maps_add(m, PID, BASE, FILE_MAP_LEN, 0, path, NULL, 0), 0);
        assert_int_equal(symbols_maps_add(m, PID + 1, BASE, 0x1000, 0, "//anon", NULL, 0), 0);
        a = symbols_maps_publish(m);
        again = symbols_maps_publish(m);
        assert_ptr_equal(a, again);
        symbols_snapshot_unref(again);
        assert_int_equal(symbols_snapshot_mappings(a), 2);

        /* Punch //anon through PID's file, add a third process (evicting PID + 1, the least recent). */
        assert_int_equal(symbols_maps_add(m, PID, BASE + 0x1000, 0x100, 0, "//anon", NULL, 0), 0);
        assert_int_equal(symbols_maps_add(m, PID + 2, BASE, 0x1000, 0, "//anon", NULL, 0), 0);
        b = symbols_maps_publish(m);
        assert_ptr_not_equal(a, b);

        /* a: the file whole, PID + 1 there, PID + 2 not, no eviction yet. */
        assert_int_equal(symbols_cache_lookup(c, a, PID, BASE + 0x1010, &r), 0);
        assert_string_equal(r.filename, path);
        assert_int_equal(r.map_limit, BASE + FILE_MAP_LEN);
        assert_string_equal(r.function, "alpha");
        assert_int_equal(symbols_cache_lookup(c, a, PID + 1, BASE, &r), 0);
        assert_int_equal(symbols_cache_lookup(c, a, PID + 2, BASE, &r), -ENOENT);
        symbols_snapshot_stats(a, &st);
        assert_int_equal(st.pid_evictions, 0);

        /* b: the file split around //anon, PID + 1 gone, PID + 2 there, one eviction. */
        assert_int_equal(symbols_cache_lookup(c, b, PID, BASE + 0x1010, &r), 0);
        assert_string_equal(r.filename, "//anon");
        assert_int_equal(symbols_cache_lookup(c, b, PID, BASE + 0x1100, &r), 0);
        assert_string_equal(r.filename, path);
        assert_int_equal(r.map_pgoff, 0x1100);
        assert_string_equal(r.function, "beta");
        assert_int_equal(symbols_cache_lookup(c, b, PID + 1, BASE, &r), -ENOENT);
        assert_int_equal(symbols_cache_lookup(c, b, PID + 2, BASE, &r), 0);
        assert_int_equal(symbols_snapshot_mappings(b), 4);
        symbols_snapshot_stats(b, &st);
        assert_int_equal(st.pid_evictions, 1);

        /* Snapshots outlive the table; the file was read once for both. */
        symbols_maps_free(m);
        assert_int_equal(symbols_cache_lookup(c, a, PID, BASE + 0x1100, &r), 0);
        assert_string_equal(r.function, "beta");
        symbols_cache_stats(c, &st);
        assert_int_equal(st.files_loaded, 1);
        symbols_snapshot_unref(a);
        symbols_snapshot_unref(b);
        symbols_cache_free(c);
        unlink(path);
}

/* ---- build ids and detached debug files, on ELF files built by the compiler ---- */

#define BUILD_ID_A      "0123456789abcdef0123456789abcdef01234567"
#define BUILD_ID_B      "89abcdef0123456789abcdef0123456789abcdef"
#define LIB_MAP_LEN     UINT64_C(0x10000)

static const char lib_src[] =
        "static int __attribute__((noinline)) hidden_fn(int x) { return x * 3 + VARIANT; }\n"
        "int exported_fn(int x) { return hidden_fn(x) + 2; }\n";

/* The toolchain test_build_id() drives: it skips, saying so, only when one
 * of them is not installed; anything they fail to do is a failure. */
static const char *const tools[] = { "cc", "strip", "objcopy", "nm", "readelf" };
static const char *missing_tool; /* set when test_build_id() skipped */

static bool in_path(const char *name) {
        const char *p = getenv("PATH") ?: "/usr/bin:/bin";
        struct strbuf f = STRBUF_INIT;
        bool found;

        for (;;) {
                size_t n = strcspn(p, ":");

                strbuf_printf(&f, "%.*s/%s", (int) n, n ? p : ".", name); /* empty: the current directory */
                found = access(f.buf, X_OK) == 0;
                strbuf_done(&f);
                if (found || !p[n])
                        return found;
                p += n + 1;
        }
}

/* Run a shell command in tmpdir; false if it failed, with what it said. */
static bool sh(const char *fmt, ...) _printf_(1, 2);
static bool sh(const char *fmt, ...) {
        struct strbuf cmd = STRBUF_INIT;
        char line[512];
        va_list ap;
        FILE *out;
        int r;

        strbuf_printf(&cmd, "cd '%s' && (", tmpdir);
        va_start(ap, fmt);
        strbuf_vprintf(&cmd, fmt, ap);
        va_end(ap);
        strbuf_printf(&cmd, ") >sh.log 2>&1");
        r = system(cmd.buf);
        if (r != -1 && WIFEXITED(r) && WEXITSTATUS(r) == 0) {
                strbuf_done(&cmd);
                return true;
        }
        print_error("failed (%s %d): %s\n", r == -1 ? "system" : WIFEXITED(r) ? "exit" : "signal",
                    r == -1 ? errno : WIFEXITED(r) ? WEXITSTATUS(r) : WTERMSIG(r), cmd.buf);
        strbuf_done(&cmd);
        strbuf_printf(&cmd, "%s/sh.log", tmpdir);
        out = fopen(cmd.buf, "re");
        while (out && fgets(line, sizeof(line), out))
                print_error("  %s", line);
        if (out)
                fclose(out);
        strbuf_done(&cmd);
        return false;
}

/* The file offset where symbol `name` of the ELF at path is loaded from
 * (its value through the PT_LOAD holding it), read with nm and readelf. */
static uint64_t symbol_offset(const char *path, const char *name) {
        struct strbuf cmd = STRBUF_INIT;
        uint64_t value = 0, off = 0, vaddr, poff, filesz;
        char line[512], sym[128];
        FILE *f;

        strbuf_printf(&cmd, "nm '%s'", path);
        f = popen(cmd.buf, "r");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "%" SCNx64 " %*c %127s", &value, sym) == 2 && streq(sym, name))
                        break;
        pclose(f);
        assert_string_equal(sym, name);
        strbuf_done(&cmd);
        strbuf_printf(&cmd, "readelf -lW '%s'", path);
        f = popen(cmd.buf, "r");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, " LOAD 0x%" SCNx64 " 0x%" SCNx64 " 0x%*x 0x%" SCNx64, &poff, &vaddr, &filesz) == 3 &&
                    value >= vaddr && value - vaddr < filesz)
                        off = value - vaddr + poff;
        pclose(f);
        strbuf_done(&cmd);
        assert_true(off > 0);
        return off;
}

static const uint8_t *id_bytes(const char *hex) {
        static uint8_t b[SYMBOLS_BUILD_ID_MAX];

        for (size_t i = 0; i < sizeof(b); i++)
                sscanf(hex + 2 * i, "%2hhx", &b[i]);
        return b;
}

/* A 2-file cache whose roots are tmpdir/a then tmpdir/b. */
static struct symbols *symbols_two_roots(const char *a, const char *b) {
        struct strbuf roots = STRBUF_INIT;
        struct symbols *s;

        strbuf_printf(&roots, "%s/%s:%s/%s", tmpdir, a, tmpdir, b);
        s = symbols_new(&(struct symbols_limits) { .debug_dirs = roots.buf, .max_files = 2 });
        strbuf_done(&roots);
        return s;
}

/*
 * A stripped library (only .dynsym, as Debian ships them) is named through
 * the debug file of its build id; a library of another build at the
 * mapping's path names nothing rather than the wrong functions; a debug
 * file of another build is not used.
 */
static void test_build_id(void **state) {
        _cleanup_free_ char *a = tmp_path("liba.so"), *stripped = tmp_path("liba-stripped.so");
        _cleanup_free_ char *b = tmp_path("libb.so"), *dbgdir = tmp_path("debug");
        uint64_t hidden, exported;
        struct symbols_result r;
        struct symbols *s;

        for (size_t i = 0; i < ELEMENTSOF(tools); i++)
                if (!in_path(tools[i])) {
                        missing_tool = tools[i];
                        print_message("%s not installed: skipped\n", missing_tool);
                        skip();
                }
        assert_true(sh("printf '%%s' '%s' > lib.c", lib_src));
        assert_true(sh("cc -O1 -shared -fPIC -DVARIANT=1 -Wl,--build-id=0x%s -o liba.so lib.c", BUILD_ID_A));
        assert_true(sh("cc -O1 -shared -fPIC -DVARIANT=7 -Wl,--build-id=0x%s -o libb.so lib.c", BUILD_ID_B));
        assert_true(sh("strip --strip-all -o liba-stripped.so liba.so"));
        hidden = symbol_offset(a, "hidden_fn");
        exported = symbol_offset(a, "exported_fn");

        /* The unstripped build named by its own build id. */
        s = symbols_new(&(struct symbols_limits) { .debug_dirs = "" });
        assert_int_equal(symbols_add_mapping(s, PID, BASE, LIB_MAP_LEN, 0, a, id_bytes(BUILD_ID_A), 20), 0);
        assert_function(s, PID, BASE + hidden, "hidden_fn", 0);
        assert_function(s, PID, BASE + exported + 4, "exported_fn", 4);

        /* Stripped, no debug file: only the exported function has a name. */
        assert_int_equal(symbols_add_mapping(s, PID + 1, BASE, LIB_MAP_LEN, 0, stripped, id_bytes(BUILD_ID_A), 20), 0);
        assert_function(s, PID + 1, BASE + exported, "exported_fn", 0);
        assert_function(s, PID + 1, BASE + hidden, NULL, 0);

        /* Another build at the path: no names at all, counted once per mapping. */
        assert_int_equal(symbols_add_mapping(s, PID + 2, BASE, LIB_MAP_LEN, 0, b, id_bytes(BUILD_ID_A), 20), 0);
        for (int i = 0; i < 3; i++) {
                assert_int_equal(symbols_lookup(s, PID + 2, BASE + exported, &r), 0);
                assert_true(r.has_mapping);
                assert_string_equal(r.build_id_hex, BUILD_ID_A);
                assert_null(r.function);
        }
        assert_int_equal(symbols_get_stats(s)->build_id_mismatches, 1);
        assert_int_equal(symbols_get_stats(s)->debug_files, 0);
        symbols_free(s);

        /* The debug file of build A installed as a -dbgsym package would. */
        assert_true(sh("mkdir -p debug/.build-id/%.2s && objcopy --only-keep-debug liba.so debug/.build-id/%.2s/%s.debug",
                       BUILD_ID_A, BUILD_ID_A, &BUILD_ID_A[2]));
        s = symbols_new(&(struct symbols_limits) { .debug_dirs = dbgdir });
        assert_int_equal(symbols_add_mapping(s, PID, BASE, LIB_MAP_LEN, 0, stripped, id_bytes(BUILD_ID_A), 20), 0);
        for (int i = 0; i < 3; i++) {
                assert_function(s, PID, BASE + hidden + 2, "hidden_fn", 2);
                assert_function(s, PID, BASE + exported, "exported_fn", 0);
        }
        /* Without a build id in the mapping, the file's own note finds it. */
        assert_int_equal(symbols_add_mapping(s, PID + 1, BASE, LIB_MAP_LEN, 0, stripped, NULL, 0), 0);
        assert_function(s, PID + 1, BASE + hidden, "hidden_fn", 0);
        assert_int_equal(symbols_get_stats(s)->debug_files, 2);
        assert_int_equal(symbols_get_stats(s)->build_id_mismatches, 0);
        symbols_free(s);

        /* A debug file of another build under A's name is not believed. */
        assert_true(sh("objcopy --only-keep-debug libb.so debug/.build-id/%.2s/%s.debug", BUILD_ID_A, &BUILD_ID_A[2]));
        s = symbols_new(&(struct symbols_limits) { .debug_dirs = dbgdir });
        assert_int_equal(symbols_add_mapping(s, PID, BASE, LIB_MAP_LEN, 0, stripped, id_bytes(BUILD_ID_A), 20), 0);
        assert_function(s, PID, BASE + hidden, NULL, 0);
        assert_function(s, PID, BASE + exported, "exported_fn", 0);
        assert_int_equal(symbols_get_stats(s)->debug_files, 0);
        symbols_free(s);

        /* perf's build-id cache (second root): the kept binary names a mapping whose path now
         * holds another build, and its `debug` file a stripped one. A root without the file
         * costs no cache slot: nothing fails to load. */
        assert_true(sh("rm -rf debug && mkdir -p empty perfcache/.build-id/%.2s/%s && "
                       "cp liba.so perfcache/.build-id/%.2s/%s/elf", BUILD_ID_A, &BUILD_ID_A[2], BUILD_ID_A,
                       &BUILD_ID_A[2]));
        s = symbols_two_roots("empty", "perfcache");
        assert_int_equal(symbols_add_mapping(s, PID, BASE, LIB_MAP_LEN, 0, b, id_bytes(BUILD_ID_A), 20), 0);
        for (int i = 0; i < 3; i++)
                assert_function(s, PID, BASE + hidden + 1, "hidden_fn", 1);
        assert_int_equal(symbols_get_stats(s)->build_id_cache_files, 1);
        assert_int_equal(symbols_get_stats(s)->build_id_mismatches, 0);
        symbols_free(s);

        assert_true(sh("mv perfcache/.build-id/%.2s/%s/elf perfcache/.build-id/%.2s/%s/debug", BUILD_ID_A,
                       &BUILD_ID_A[2], BUILD_ID_A, &BUILD_ID_A[2]));
        s = symbols_two_roots("empty", "perfcache");
        assert_int_equal(symbols_add_mapping(s, PID, BASE, LIB_MAP_LEN, 0, stripped, id_bytes(BUILD_ID_A), 20), 0);
        /* Another build at its path and no kept binary: nothing, counted; the cache root's debug
         * file alone cannot give the layout. */
        assert_int_equal(symbols_add_mapping(s, PID + 1, BASE, LIB_MAP_LEN, 0, b, id_bytes(BUILD_ID_A), 20), 0);
        for (int i = 0; i < 3; i++) {
                assert_function(s, PID, BASE + hidden, "hidden_fn", 0);
                assert_function(s, PID + 1, BASE + hidden, NULL, 0);
        }
        assert_int_equal(symbols_get_stats(s)->debug_files, 1);
        assert_int_equal(symbols_get_stats(s)->build_id_mismatches, 1);
        assert_int_equal(symbols_get_stats(s)->file_errors, 0);
        symbols_free(s);
        assert_true(sh("rm -rf debug empty perfcache lib.c liba.so libb.so liba-stripped.so sh.log"));
}

static void write_text(const char *path, const char *mode, const char *text) {
        FILE *f = fopen(path, mode);

        assert_non_null(f);
        assert_true(fputs(text, f) >= 0);
        assert_int_equal(fclose(f), 0);
}

#define JIT_BASE        UINT64_C(0x7f0000000000)
#define JIT_LEN         UINT64_C(0x10000)
#define JIT_PID         4321

/*
 * JIT code named from perf-PID.map (jit-interface.txt): hex lines, names
 * with spaces, bad lines skipped and counted, appended lines found by a
 * re-read when a PC misses, the last line for an address winning, a half
 * written line ignored, every anonymous mapping shape, a process without a
 * map, a new process under the same pid, a FIFO in place of the map.
 */
static void test_perf_map(void **state) {
        _cleanup_free_ char *map = tmp_path("perf-4321.map"), *fifo = tmp_path("perf-99.map");
        const struct symbols_limits lim = { .perf_map_dir = tmpdir, .procfs_root = "" };
        static const char *const anon[] = { "//anon", "[anon:v8 code]", "", "/memfd:doublemapper (deleted)",
                                            "/anon_hugepage (deleted)" };
        struct symbols_result r;
        struct symbols *s;

        write_text(map, "we", "7f0000001000 40 LazyCompile:~foo app.js:3\n"
                              "0x7f0000001040 0x20 bar\n"
                              "zz 10 not-hex\n"
                              "7f0000003000 10\n"
                              "7f0000002000\t100\tInterpreter stub\r\n");
        s = symbols_new(&lim);
        assert_int_equal(symbols_add_mapping(s, JIT_PID, JIT_BASE, JIT_LEN, 0, "//anon", NULL, 0), 0);
        assert_int_equal(symbols_lookup(s, JIT_PID, JIT_BASE + 0x1010, &r), 0);
        assert_true(r.has_mapping);
        assert_string_equal(r.filename, "//anon");
        assert_string_equal(r.function, "LazyCompile:~foo app.js:3");
        assert_int_equal(r.function_offset, 0x10);
        assert_true(r.symbols_read);
        /* In no line of a map that was read. */
        assert_int_equal(symbols_lookup(s, JIT_PID, JIT_BASE + 0x9000, &r), 0);
        assert_null(r.function);
        assert_true(r.symbols_read);
        assert_function(s, JIT_PID, JIT_BASE + 0x1045, "bar", 5);
        assert_function(s, JIT_PID, JIT_BASE + 0x20ff, "Interpreter stub", 0xff);
        assert_int_equal(symbols_get_stats(s)->perf_maps_loaded, 1);
        assert_int_equal(symbols_get_stats(s)->bad_symbol_lines, 2);
        assert_int_equal(symbols_get_stats(s)->files_loaded, 0);

        /* The JIT appends: a PC it did not name makes it re-read; a PC it named does not. */
        write_text(map, "ae", "7f0000004000 80 baz\n7f0000001000 40 foo_optimized\n");
        assert_function(s, JIT_PID, JIT_BASE + 0x4010, "baz", 0x10);
        assert_int_equal(symbols_get_stats(s)->perf_maps_loaded, 2);
        assert_function(s, JIT_PID, JIT_BASE + 0x1000, "foo_optimized", 0);
        assert_function(s, JIT_PID, JIT_BASE + 0x1044, "bar", 4);
        assert_int_equal(symbols_get_stats(s)->perf_maps_loaded, 2);
        /* A line being written (no newline yet) names nothing. */
        write_text(map, "ae", "7f0000005000 10 half");
        assert_function(s, JIT_PID, JIT_BASE + 0x5000, NULL, 0);
        write_text(map, "ae", "_written\n");
        assert_function(s, JIT_PID, JIT_BASE + 0x5004, "half_written", 4);
        assert_function(s, JIT_PID, JIT_BASE + 0x8000, NULL, 0); /* in no line */

        /* Every shape of anonymous memory. */
        for (size_t i = 0; i < ELEMENTSOF(anon); i++) {
                assert_int_equal(symbols_add_mapping(s, JIT_PID, JIT_BASE + 0x1000, 0x1000, 0, anon[i], NULL, 0), 0);
                assert_function(s, JIT_PID, JIT_BASE + 0x1048, "bar", 8);
        }
        /* A process without a perf map, and a file mapping: no perf map read for either. */
        assert_int_equal(symbols_add_mapping(s, JIT_PID + 1, JIT_BASE, JIT_LEN, 0, "//anon", NULL, 0), 0);
        assert_function(s, JIT_PID + 1, JIT_BASE + 0x1010, NULL, 0);
        assert_int_equal(symbols_get_stats(s)->file_errors, 0);
        assert_int_equal(symbols_get_stats(s)->files_loaded, 0);

        /* The process ends; a new one under its pid writes a new map at the same path. */
        symbols_remove_pid(s, JIT_PID);
        assert_int_equal(unlink(map), 0);
        write_text(map, "we", "7f0000001000 40 new_process_fn\n");
        assert_int_equal(symbols_add_mapping(s, JIT_PID, JIT_BASE, JIT_LEN, 0, "//anon", NULL, 0), 0);
        assert_function(s, JIT_PID, JIT_BASE + 0x1010, "new_process_fn", 0x10);
        assert_function(s, JIT_PID, JIT_BASE + 0x4010, NULL, 0);

        /* A FIFO where a perf map should be: no wait, an error counted once. */
        assert_int_equal(mkfifo(fifo, 0600), 0);
        assert_int_equal(symbols_add_mapping(s, 99, JIT_BASE, JIT_LEN, 0, "//anon", NULL, 0), 0);
        for (int i = 0; i < 3; i++)
                assert_function(s, 99, JIT_BASE + 0x10, NULL, 0);
        assert_int_equal(symbols_get_stats(s)->file_errors, 1);
        symbols_free(s);
        assert_int_equal(unlink(fifo), 0);
        assert_int_equal(unlink(map), 0);
}

/*
 * A containerised JIT: its map is in its own root's /tmp under the pid of
 * its namespace (NSpid), read through a proc root written here; a process
 * that is gone is looked for in the perf map directory under its own pid.
 */
static void test_perf_map_namespace(void **state) {
        _cleanup_free_ char *proc = tmp_path("proc"), *outside = tmp_path("perf-777.map");
        struct strbuf path = STRBUF_INIT;
        struct symbols *s;

        assert_true(sh("mkdir -p proc/777/root/tmp && printf 'Name:\\tnode\\nNSpid:\\t777\\t5\\n' > proc/777/status && "
                       "printf '7f0000001000 100 inside_container\\n' > proc/777/root/tmp/perf-5.map"));
        write_text(outside, "we", "7f0000001000 100 host_file\n");
        s = symbols_new(&(struct symbols_limits) { .perf_map_dir = tmpdir, .procfs_root = proc });
        assert_int_equal(symbols_add_mapping(s, 777, JIT_BASE, JIT_LEN, 0, "//anon", NULL, 0), 0);
        assert_function(s, 777, JIT_BASE + 0x1001, "inside_container", 1);
        symbols_free(s);
        /* Gone from the proc root: the perf map directory's file of its pid. */
        assert_true(sh("rm -rf proc"));
        s = symbols_new(&(struct symbols_limits) { .perf_map_dir = tmpdir, .procfs_root = proc });
        assert_int_equal(symbols_add_mapping(s, 777, JIT_BASE, JIT_LEN, 0, "//anon", NULL, 0), 0);
        assert_function(s, 777, JIT_BASE + 0x1001, "host_file", 1);
        symbols_free(s);
        strbuf_done(&path);
        assert_int_equal(unlink(outside), 0);
}

/*
 * JITs leave their maps behind: a map last written before its process
 * started (by the start time of a proc root written here: btime + starttime
 * ticks) is an earlier process's under the same pid and names nothing; once
 * the process writes it, it does.
 */
static void test_perf_map_stale(void **state) {
        _cleanup_free_ char *proc = tmp_path("proc"), *map = NULL;
        struct strbuf path = STRBUF_INIT;
        struct timespec times[2] = {};
        struct symbols *s;

        /* Started 1000 s (100000 ticks at USER_HZ 100) after boot at 1700000000; "(comm)" has ") " in it. */
        assert_int_equal(sysconf(_SC_CLK_TCK), 100);
        assert_true(sh("mkdir -p proc/777/root/tmp && printf 'NSpid:\t777\n' > proc/777/status && "
                       "printf '777 (node (x) y) S 1 777 777 0 -1 4194304 100 0 0 0 5 3 0 0 20 0 11 0 100000 1 2\n' "
                       "> proc/777/stat && printf 'cpu  1 2 3\nbtime 1700000000\nprocesses 9\n' > proc/stat && "
                       "printf '7f0000001000 100 old_process_fn\n' > proc/777/root/tmp/perf-777.map"));
        strbuf_printf(&path, "%s/777/root/tmp/perf-777.map", proc);
        map = strbuf_steal(&path, NULL);
        times[0].tv_sec = times[1].tv_sec = 1700000500;
        assert_int_equal(utimensat(AT_FDCWD, map, times, 0), 0);
        s = symbols_new(&(struct symbols_limits) { .perf_map_dir = tmpdir, .procfs_root = proc });
        assert_int_equal(symbols_add_mapping(s, 777, JIT_BASE, JIT_LEN, 0, "//anon", NULL, 0), 0);
        assert_function(s, 777, JIT_BASE + 0x1001, NULL, 0);
        assert_int_equal(symbols_get_stats(s)->perf_maps_loaded, 0);
        symbols_free(s);

        /* Written by the process, after its start. */
        write_text(map, "we", "7f0000001000 100 new_process_fn\n");
        times[0].tv_sec = times[1].tv_sec = 1700001001;
        assert_int_equal(utimensat(AT_FDCWD, map, times, 0), 0);
        s = symbols_new(&(struct symbols_limits) { .perf_map_dir = tmpdir, .procfs_root = proc });
        assert_int_equal(symbols_add_mapping(s, 777, JIT_BASE, JIT_LEN, 0, "//anon", NULL, 0), 0);
        assert_function(s, 777, JIT_BASE + 0x1001, "new_process_fn", 1);
        symbols_free(s);
        assert_true(sh("rm -rf proc"));
}

/*
 * Kernel addresses named from a kallsyms file written here: aliases (the
 * global name wins), data symbols ignored, weak functions kept, each symbol
 * up to the next of its object, modules' objects, the last symbols' page
 * ends; a restricted file (every address 0) refused without losing what was
 * loaded; without kallsyms, SYMBOLS_KERNEL_NAME as before.
 */
static void test_kallsyms(void **state) {
        _cleanup_free_ char *ks = tmp_path("kallsyms"), *zero = tmp_path("kallsyms-restricted"),
                            *empty = tmp_path("kallsyms-empty"), *missing = tmp_path("kallsyms-missing");
        static const char text[] = "ffffffff81000000 t _text_local\n"
                                   "ffffffff81000000 T _stext\n"
                                   "ffffffff81000100 T do_one\n"
                                   "ffffffff81000180 D some_data\n"
                                   "ffffffff81000200 t helper\n"
                                   "bad line\n"
                                   "ffffffff81000300 W weak_fn\n"
                                   "ffffffffc0001000 t mod_fn1\t[nf_tables]\n"
                                   "ffffffffc0001080 T mod_fn2\t[nf_tables]\n"
                                   "ffffffffc0010000 t other_fn\t[ext4]\n";
        static const struct {
                uint64_t pc;
                const char *function, *object;
                uint64_t offset;
        } expect[] = {
                { UINT64_C(0xffffffff81000010), "_stext", SYMBOLS_KALLSYMS_OBJECT, 0x10 },
                { UINT64_C(0xffffffff81000190), "do_one", SYMBOLS_KALLSYMS_OBJECT, 0x90 },
                { UINT64_C(0xffffffff81000250), "helper", SYMBOLS_KALLSYMS_OBJECT, 0x50 },
                { UINT64_C(0xffffffff81000310), "weak_fn", SYMBOLS_KALLSYMS_OBJECT, 0x10 },
                /* The last of the kernel's own: up to the second page boundary after it. */
                { UINT64_C(0xffffffff81001fff), "weak_fn", SYMBOLS_KALLSYMS_OBJECT, 0x1cff },
                { UINT64_C(0xffffffff81002000), NULL, NULL, 0 },
                { UINT64_C(0xffffffffc0001000), "mod_fn1", "[nf_tables]", 0 },
                { UINT64_C(0xffffffffc0001090), "mod_fn2", "[nf_tables]", 0x10 },
                { UINT64_C(0xffffffffc0002fff), "mod_fn2", "[nf_tables]", 0x1f7f },
                { UINT64_C(0xffffffffc0003000), NULL, NULL, 0 },
                { UINT64_C(0xffffffffc0010004), "other_fn", "[ext4]", 4 },
                { UINT64_C(0xffffffffc0011fff), "other_fn", "[ext4]", 0x1fff },
                { UINT64_C(0xffffffffc0012000), NULL, NULL, 0 },
                { UINT64_C(0xffffffff80000000), NULL, NULL, 0 },
        };
        struct symbols *s = symbols_new(NULL);
        struct symbols_result r;
        char obj[PATH_MAX];

        /* Not loaded: as before. */
        assert_int_equal(symbols_lookup(s, 1, expect[0].pc, &r), 0);
        assert_string_equal(r.function, SYMBOLS_KERNEL_NAME);
        assert_null(r.filename);

        write_text(ks, "we", text);
        assert_int_equal(symbols_load_kallsyms(s, ks), 7);
        assert_int_equal(symbols_get_stats(s)->bad_symbol_lines, 1);
        for (size_t i = 0; i < ELEMENTSOF(expect); i++) {
                assert_int_equal(symbols_lookup(s, 1, expect[i].pc, &r), 0);
                assert_false(r.has_mapping);
                assert_true(symbols_result_object(&r, obj, sizeof(obj)));
                if (!expect[i].function) {
                        assert_string_equal(r.function, SYMBOLS_KERNEL_NAME);
                        assert_null(r.filename);
                        assert_string_equal(obj, SYMBOLS_KERNEL_NAME);
                        continue;
                }
                assert_string_equal(r.function, expect[i].function);
                assert_int_equal(r.function_offset, expect[i].offset);
                assert_string_equal(r.filename, expect[i].object);
                assert_string_equal(obj, expect[i].object);
        }

        /* kptr_restrict's view: refused, the loaded table kept. */
        write_text(zero, "we", "0000000000000000 T _stext\n0000000000000000 t helper\n"
                               "0000000000000000 t mod_fn1\t[nf_tables]\n");
        assert_int_equal(symbols_load_kallsyms(s, zero), -EPERM);
        write_text(empty, "we", "");
        assert_int_equal(symbols_load_kallsyms(s, empty), -EBADMSG);
        assert_int_equal(symbols_load_kallsyms(s, missing), -ENOENT);
        assert_function(s, 1, UINT64_C(0xffffffff81000250), "helper", 0x50);
        symbols_free(s);
        unlink(ks);
        unlink(zero);
        unlink(empty);
}

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_lookup),
                cmocka_unit_test(test_pgoff),
                cmocka_unit_test(test_region),
                cmocka_unit_test(test_region_bound),
                cmocka_unit_test(test_load_bias),
                cmocka_unit_test(test_dynsym),
                cmocka_unit_test(test_kernel_and_non_files),
                cmocka_unit_test(test_fifo_not_read),
                cmocka_unit_test(test_bad_args),
                cmocka_unit_test(test_overlap),
                cmocka_unit_test(test_bounds),
                cmocka_unit_test(test_owners),
                cmocka_unit_test(test_snapshots),
                cmocka_unit_test(test_spegen),
                cmocka_unit_test(test_build_id),
                cmocka_unit_test(test_perf_map),
                cmocka_unit_test(test_perf_map_namespace),
                cmocka_unit_test(test_perf_map_stale),
                cmocka_unit_test(test_kallsyms),
        };
        int r;

        if (argc != 2) {
                fprintf(stderr, "usage: %s ARMPROFD-SPEGEN\n", argv[0]);
                return 2;
        }
        spegen_path = argv[1];
        if (!mkdtemp(tmpdir)) {
                perror("mkdtemp");
                return 1;
        }
        r = cmocka_run_group_tests(tests, NULL, NULL);
        test_rm_tmpdir(tmpdir);
        if (r == 0 && missing_tool) {
                /* cmocka counts a skipped test as passed: say it here. */
                printf("SKIP: %s not installed (Debian packages gcc, binutils): the build-id test did not run; "
                       "the other tests passed\n", missing_tool);
                return 77;
        }
        return r;
}
