/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * symbols/symbols.c against real programs built here with cc: a PIE, a
 * non-PIE executable, and a stripped PIE whose names are in a debug file
 * laid out as Debian's -dbgsym packages do (<root>/.build-id/ab/cdef....debug,
 * objcopy --only-keep-debug). Each runs, prints where its functions are and
 * maps an anonymous executable region as a JIT would; the test maps it as
 * its /proc/PID/maps says and checks that the printed addresses, and the
 * last byte of each function by nm -S of the unstripped build (the
 * independent truth, which also gives the load bias), resolve to the right
 * names; a perf-PID.map written in /tmp names the JIT region, read through
 * /proc/PID/root. Then this machine's /proc/kallsyms: the address of
 * "schedule", read from the file here, resolves back to it (skipped with
 * the reason when the file shows no addresses).
 *
 * Last, the sampler's test programs (tests/sampler/spin.c, with and without
 * frame pointers): while each runs, main, outer_work and inner_spin resolve
 * at their first and last byte, placed by the test from nm -S and readelf -l
 * and the program's /proc/PID/maps.
 *
 * Needs cc, nm, objcopy, strip and readelf (skipped with the reason without them).
 *
 * Usage: test-real-binaries [SPIN...]
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "macro.h"
#include "strbuf.h"
#include "symbols.h"

#define BUILD_ID        "ab5e1f7c0d9e8f6a5b4c3d2e1f00112233445566"
/* The JIT region the program maps, and where its made-up functions are in it. */
#define JIT_ONE_OFF     UINT64_C(0x100)
#define JIT_TWO_OFF     UINT64_C(0x200)

static const char prog_src[] =
        "#include <stdio.h>\n"
        "#include <sys/mman.h>\n"
        "#include <unistd.h>\n"
        "volatile int sink;\n"
        "__attribute__((noinline)) static int hidden_work(int x) {\n"
        "        for (int i = 0; i < x; i++) sink += i * x;\n"
        "        return sink;\n"
        "}\n"
        "__attribute__((noinline)) int exported_work(int x) {\n"
        "        for (int i = 0; i < x; i++) sink ^= hidden_work(i);\n"
        "        return sink;\n"
        "}\n"
        "int main(int argc, char **argv) {\n"
        "        char c;\n"
        "        void *jit = mmap(NULL, 0x4000, PROT_READ | PROT_WRITE | PROT_EXEC,\n"
        "                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);\n"
        "        if (jit == MAP_FAILED) return 1;\n"
        "        exported_work(argc);\n"
        "        printf(\"hidden_work %p\\nexported_work %p\\nmain %p\\njit %p\\n\", (void *) hidden_work,\n"
        "               (void *) exported_work, (void *) main, jit);\n"
        "        fflush(stdout);\n"
        "        while (read(0, &c, 1) > 0) ;\n"
        "        return 0;\n"
        "}\n";

static const char *const functions[] = { "hidden_work", "exported_work", "main" };

static char tmpdir[] = "/tmp/test-real-binaries-XXXXXX";
static const char *missing_tool;

/* Run a shell command in tmpdir; false (with its output printed) when it fails. */
static bool sh(const char *fmt, ...) _printf_(1, 2);
static bool sh(const char *fmt, ...) {
        struct strbuf cmd = STRBUF_INIT;
        va_list ap;
        int r;

        strbuf_printf(&cmd, "cd '%s' && (", tmpdir);
        va_start(ap, fmt);
        strbuf_vprintf(&cmd, fmt, ap);
        va_end(ap);
        strbuf_printf(&cmd, ") >sh.log 2>&1 || { cat sh.log >&2; exit 1; }");
        r = system(cmd.buf);
        strbuf_done(&cmd);
        return r != -1 && WIFEXITED(r) && WEXITSTATUS(r) == 0;
}

static bool in_path(const char *tool) {
        struct strbuf cmd = STRBUF_INIT;
        int r;

        strbuf_printf(&cmd, "command -v %s >/dev/null 2>&1", tool);
        r = system(cmd.buf);
        strbuf_done(&cmd);
        return r != -1 && WIFEXITED(r) && WEXITSTATUS(r) == 0;
}

static bool tools_present(void) {
        static const char *const tools[] = { "cc", "nm", "objcopy", "strip", "readelf" };

        for (size_t i = 0; i < ELEMENTSOF(tools); i++)
                if (!in_path(tools[i])) {
                        missing_tool = tools[i];
                        print_message("%s not installed: skipped\n", tools[i]);
                        return false;
                }
        return true;
}

/* nm -S of the unstripped build (a path, or a file in tmpdir): value and size of name. */
static void nm_symbol(const char *file, const char *name, uint64_t *ret_value, uint64_t *ret_size) {
        struct strbuf cmd = STRBUF_INIT;
        char line[PATH_MAX], sym[PATH_MAX];
        uint64_t value, size;
        bool found = false;
        FILE *f;

        if (file[0] == '/')
                strbuf_printf(&cmd, "nm -S '%s'", file);
        else
                strbuf_printf(&cmd, "nm -S '%s/%s'", tmpdir, file);
        f = popen(cmd.buf, "r");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "%" SCNx64 " %" SCNx64 " %*c %4095s", &value, &size, sym) == 3 && streq(sym, name)) {
                        *ret_value = value;
                        *ret_size = size;
                        found = true;
                }
        pclose(f);
        strbuf_done(&cmd);
        assert_true(found);
        assert_true(*ret_size > 1);
}

struct running {
        pid_t pid;
        int in;                 /* its stdin: closing it ends it */
        uint64_t addr[ELEMENTSOF(functions)];
        uint64_t jit;
};

static void start(const char *file, struct running *ret) {
        char path[PATH_MAX], line[PATH_MAX], name[PATH_MAX];
        int in[2], out[2];
        uint64_t v;
        size_t got = 0;
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", tmpdir, file);
        assert_int_equal(pipe2(in, O_CLOEXEC), 0);
        assert_int_equal(pipe2(out, O_CLOEXEC), 0);
        ret->pid = fork();
        assert_true(ret->pid >= 0);
        if (ret->pid == 0) {
                dup2(in[0], 0);
                dup2(out[1], 1);
                execl(path, path, (char *) NULL);
                _exit(127);
        }
        close(in[0]);
        close(out[1]);
        ret->in = in[1];
        f = fdopen(out[0], "r");
        assert_non_null(f);
        while (got < ELEMENTSOF(functions) + 1 && fgets(line, sizeof(line), f)) {
                assert_int_equal(sscanf(line, "%4095s %" SCNx64, name, &v), 2);
                if (streq(name, "jit")) {
                        ret->jit = v;
                        got++;
                }
                for (size_t i = 0; i < ELEMENTSOF(functions); i++)
                        if (streq(name, functions[i])) {
                                ret->addr[i] = v;
                                got++;
                        }
        }
        fclose(f);
        assert_int_equal(got, ELEMENTSOF(functions) + 1);
}

static void stop(struct running *r) {
        int status;

        close(r->in);
        assert_int_equal(waitpid(r->pid, &status, 0), r->pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Every mapping of pid as /proc/PID/maps shows it: files by path, anonymous memory as perf names it. */
static void add_proc_maps(struct symbols *s, pid_t pid) {
        char path[PATH_MAX], line[2 * PATH_MAX], file[PATH_MAX];
        uint64_t start, end, off;
        size_t n = 0;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/maps", (int) pid);
        f = fopen(path, "re");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f)) {
                int k;

                file[0] = '\0';
                k = sscanf(line, "%" SCNx64 "-%" SCNx64 " %*4s %" SCNx64 " %*x:%*x %*u %4095s", &start, &end, &off,
                           file);
                assert_true(k >= 3);
                assert_int_equal(symbols_add_mapping(s, (uint32_t) pid, start, end - start, off,
                                                     file[0] ? file : "//anon", NULL, 0),
                                 0);
                n++;
        }
        fclose(f);
        assert_true(n > 3);
}

static void assert_named(struct symbols *s, pid_t pid, uint64_t pc, const char *name, uint64_t offset) {
        struct symbols_result r;

        assert_int_equal(symbols_lookup(s, (uint32_t) pid, pc, &r), 0);
        assert_true(r.has_mapping);
        if (!name) {
                assert_null(r.function);
                return;
        }
        assert_non_null(r.function);
        assert_string_equal(r.function, name);
        assert_int_equal(r.function_offset, offset);
}

/*
 * The program `file` (unstripped twin: `truth`) running: each function at
 * its printed address, and at its last byte by nm -S; the load bias the
 * same for all (0 for a non-PIE executable). names false: the test expects
 * no names at all (a stripped file without its debug file).
 */
static void check_program(const char *file, const char *truth, const struct symbols_limits *lim, bool pie,
                          bool names) {
        struct symbols *s = symbols_new(lim);
        struct running run;
        uint64_t bias = 0;

        start(file, &run);
        add_proc_maps(s, run.pid);
        for (size_t i = 0; i < ELEMENTSOF(functions); i++) {
                uint64_t value, size;

                nm_symbol(truth, functions[i], &value, &size);
                if (i == 0)
                        bias = run.addr[i] - value;
                assert_int_equal(run.addr[i] - value, bias);
                assert_named(s, run.pid, run.addr[i], names ? functions[i] : NULL, 0);
                assert_named(s, run.pid, run.addr[i] + size - 1, names ? functions[i] : NULL, size - 1);
        }
        if (pie)
                assert_true(bias != 0 && bias % (uint64_t) sysconf(_SC_PAGESIZE) == 0);
        else
                assert_int_equal(bias, 0);
        assert_int_equal(symbols_get_stats(s)->file_errors, 0);
        symbols_free(s);
        stop(&run);
}

static void test_pie_and_exec(void **state) {
        if (!tools_present())
                skip();
        assert_true(sh("printf '%%s' '%s' > prog.c", prog_src));
        assert_true(sh("cc -O1 -g -fPIE -pie -o prog-pie prog.c && cc -O1 -fno-pie -no-pie -o prog-exec prog.c"));
        assert_true(sh("readelf -h prog-pie | grep -q 'DYN' && readelf -h prog-exec | grep -q 'EXEC'"));
        check_program("prog-pie", "prog-pie", NULL, true, true);
        check_program("prog-exec", "prog-exec", NULL, false, true);
}

static void test_stripped_with_debug_file(void **state) {
        char debug_root[PATH_MAX];

        if (!tools_present())
                skip();
        snprintf(debug_root, sizeof(debug_root), "%s/debug", tmpdir);
        assert_true(sh("printf '%%s' '%s' > prog.c", prog_src));
        assert_true(sh("cc -O1 -g -fPIE -pie -Wl,--build-id=0x%s -o prog-full prog.c && "
                       "mkdir -p debug/.build-id/%.2s && "
                       "objcopy --only-keep-debug prog-full debug/.build-id/%.2s/%s.debug && "
                       "strip --strip-all -o prog-stripped prog-full && "
                       "! nm prog-stripped 2>/dev/null | grep -q hidden_work",
                       BUILD_ID, BUILD_ID, BUILD_ID, &BUILD_ID[2]));
        /* Without the debug file nothing names its functions; with it, all of them. */
        check_program("prog-stripped", "prog-full", &(struct symbols_limits) { .debug_dirs = "" }, true, false);
        check_program("prog-stripped", "prog-full", &(struct symbols_limits) { .debug_dirs = debug_root }, true, true);
}

/*
 * A JIT's perf map, where a JIT writes it: /tmp/perf-PID.map, read through
 * /proc/PID/root/tmp; but not while its time says an earlier process under
 * that pid left it (an hour before this one started, by this machine's /proc).
 */
static void test_jit_perf_map(void **state) {
        char map[PATH_MAX], text[PATH_MAX];
        struct symbols *s;
        struct running run;
        struct timespec old[2] = {};
        FILE *f;

        if (!tools_present())
                skip();
        assert_true(sh("printf '%%s' '%s' > prog.c && cc -O1 -o prog-jit prog.c", prog_src));
        start("prog-jit", &run);
        snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int) run.pid);
        snprintf(text, sizeof(text), "%" PRIx64 " 80 jit_fn_one\n%" PRIx64 " 40 Builtin: jit fn two\n",
                 run.jit + JIT_ONE_OFF, run.jit + JIT_TWO_OFF);
        f = fopen(map, "we");
        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);

        old[0].tv_sec = old[1].tv_sec = time(NULL) - 3600;
        assert_int_equal(utimensat(AT_FDCWD, map, old, 0), 0);
        s = symbols_new(NULL);
        add_proc_maps(s, run.pid);
        assert_named(s, run.pid, run.jit + JIT_ONE_OFF + 0x10, NULL, 0);
        assert_int_equal(symbols_get_stats(s)->perf_maps_loaded, 0);
        symbols_free(s);

        /* Written now, by the process as far as anyone can tell. */
        assert_int_equal(utimensat(AT_FDCWD, map, NULL, 0), 0);
        s = symbols_new(NULL);
        add_proc_maps(s, run.pid);
        assert_named(s, run.pid, run.jit + JIT_ONE_OFF + 0x10, "jit_fn_one", 0x10);
        assert_named(s, run.pid, run.jit + JIT_TWO_OFF + 0x3f, "Builtin: jit fn two", 0x3f);
        assert_named(s, run.pid, run.jit + JIT_TWO_OFF + 0x40, NULL, 0);
        assert_int_equal(symbols_get_stats(s)->perf_maps_loaded, 1);
        symbols_free(s);
        stop(&run);
        assert_int_equal(unlink(map), 0);
}

static const char *kallsyms_skip;

/* The first "T name" of /proc/kallsyms, read here with sscanf. */
static uint64_t kallsyms_address(const char *name) {
        char line[PATH_MAX], sym[PATH_MAX], type;
        uint64_t addr;
        FILE *f = fopen("/proc/kallsyms", "re");

        if (!f)
                return 0;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "%" SCNx64 " %c %4095s", &addr, &type, sym) == 3 && type == 'T' &&
                    streq(sym, name)) {
                        fclose(f);
                        return addr;
                }
        fclose(f);
        return 0;
}

static void test_proc_kallsyms(void **state) {
        uint64_t addr = kallsyms_address("schedule");
        struct symbols *s = symbols_new(NULL);
        struct symbols_result r;
        char obj[PATH_MAX];
        int k;

        if (addr == 0) {
                kallsyms_skip = "/proc/kallsyms shows no address for schedule (kptr_restrict, or not root)";
                print_message("skipped: %s\n", kallsyms_skip);
                symbols_free(s);
                skip();
        }
        k = symbols_load_kallsyms(s, "/proc/kallsyms");
        /* Any kernel has thousands of functions. */
        assert_true(k > 1000);
        assert_int_equal(symbols_lookup(s, 0, addr, &r), 0);
        assert_false(r.has_mapping);
        assert_string_equal(r.function, "schedule");
        assert_int_equal(r.function_offset, 0);
        assert_true(symbols_result_object(&r, obj, sizeof(obj)));
        assert_string_equal(obj, SYMBOLS_KALLSYMS_OBJECT);
        assert_int_equal(symbols_lookup(s, 0, addr + 4, &r), 0);
        assert_string_equal(r.function, "schedule");
        assert_int_equal(r.function_offset, 4);
        symbols_free(s);
}

static char **spin_paths;
static int n_spin;

/* The file offset of ELF virtual address vaddr in path: readelf -lW's PT_LOAD that holds it. */
static uint64_t file_offset(const char *path, uint64_t vaddr) {
        struct strbuf cmd = STRBUF_INIT;
        uint64_t poff, pvaddr, filesz, off = UINT64_MAX;
        char line[PATH_MAX];
        FILE *f;

        strbuf_printf(&cmd, "readelf -lW '%s'", path);
        f = popen(cmd.buf, "r");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, " LOAD 0x%" SCNx64 " 0x%" SCNx64 " 0x%*x 0x%" SCNx64, &poff, &pvaddr, &filesz) == 3 &&
                    vaddr >= pvaddr && vaddr - pvaddr < filesz)
                        off = vaddr - pvaddr + poff;
        pclose(f);
        strbuf_done(&cmd);
        assert_true(off != UINT64_MAX);
        return off;
}

/* Where file offset off of path is mapped in pid, by its /proc/PID/maps. */
static uint64_t runtime_address(pid_t pid, const char *path, uint64_t off) {
        char maps[PATH_MAX], line[2 * PATH_MAX], file[PATH_MAX], real[PATH_MAX];
        uint64_t start, end, pgoff, pc = 0;
        FILE *f;

        assert_non_null(realpath(path, real));
        snprintf(maps, sizeof(maps), "/proc/%d/maps", (int) pid);
        f = fopen(maps, "re");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*4s %" SCNx64 " %*x:%*x %*u %4095s", &start, &end, &pgoff,
                           file) == 4 &&
                    streq(file, real) && off >= pgoff && off - pgoff < end - start)
                        pc = start + off - pgoff;
        fclose(f);
        assert_true(pc != 0);
        return pc;
}

/* tests/sampler's spin programs while they run: the chain a profile must show, each function named. */
static void test_spin_programs(void **state) {
        static const char *const chain[] = { "main", "outer_work", "inner_spin" };

        if (n_spin == 0) {
                print_message("no spin program given: skipped\n");
                skip();
        }
        if (!tools_present())
                skip();
        for (int i = 0; i < n_spin; i++) {
                struct symbols *s = symbols_new(&(struct symbols_limits) { .debug_dirs = "" });
                char line[PATH_MAX], *argv[] = { spin_paths[i], (char *) "30", NULL };
                int out[2], status;
                pid_t pid;
                FILE *f;

                assert_int_equal(pipe2(out, O_CLOEXEC), 0);
                pid = fork();
                assert_true(pid >= 0);
                if (pid == 0) {
                        dup2(out[1], 1);
                        execv(argv[0], argv);
                        _exit(127);
                }
                close(out[1]);
                f = fdopen(out[0], "r");
                assert_non_null(f);
                /* "ready PID": running, its mappings in place. */
                assert_non_null(fgets(line, sizeof(line), f));
                assert_int_equal(strncmp(line, "ready ", strlen("ready ")), 0);
                add_proc_maps(s, pid);
                for (size_t k = 0; k < ELEMENTSOF(chain); k++) {
                        uint64_t value, size, pc;

                        nm_symbol(spin_paths[i], chain[k], &value, &size);
                        pc = runtime_address(pid, spin_paths[i], file_offset(spin_paths[i], value));
                        print_message("%s: %s at %#" PRIx64 " (+%#" PRIx64 ")\n", spin_paths[i], chain[k], pc, size);
                        assert_named(s, pid, pc, chain[k], 0);
                        assert_named(s, pid, pc + size - 1, chain[k], size - 1);
                }
                kill(pid, SIGTERM);
                fclose(f);
                assert_int_equal(waitpid(pid, &status, 0), pid);
                symbols_free(s);
        }
}

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pie_and_exec),
                cmocka_unit_test(test_stripped_with_debug_file),
                cmocka_unit_test(test_jit_perf_map),
                cmocka_unit_test(test_proc_kallsyms),
                cmocka_unit_test(test_spin_programs),
        };
        _cleanup_free_ char **paths = xcalloc((size_t) argc, sizeof(char *));
        int r;

        /* Absolute: the programs are read from the test's own directory too. */
        for (int i = 1; i < argc; i++) {
                paths[i - 1] = realpath(argv[i], NULL);
                if (!paths[i - 1]) {
                        perror(argv[i]);
                        return 1;
                }
        }
        spin_paths = paths;
        n_spin = argc - 1;

        if (!mkdtemp(tmpdir)) {
                perror("mkdtemp");
                return 1;
        }
        r = cmocka_run_group_tests(tests, NULL, NULL);
        sh("rm -rf debug prog.c prog-pie prog-exec prog-full prog-stripped prog-jit sh.log");
        rmdir(tmpdir);
        /* cmocka counts a skipped test as passed: say it here. */
        if (r == 0 && missing_tool)
                printf("SKIP: %s not installed (Debian packages gcc, binutils): the program tests did not run\n",
                       missing_tool);
        if (r == 0 && kallsyms_skip)
                printf("SKIP: %s: the kallsyms test did not run\n", kallsyms_skip);
        for (int i = 0; i < n_spin; i++)
                free(spin_paths[i]);
        return r;
}
