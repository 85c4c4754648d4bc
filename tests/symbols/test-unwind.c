/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * symbols/unwind.c on real samples: spin (tests/sampler/spin.c, main ->
 * outer_work -> inner_spin) built without frame pointers and with them,
 * sampled here with a cpu-clock event carrying the user registers and
 * stack, unwound by CFI and named by the symbols module. Without frame
 * pointers the kernel's frame-pointer chain of the same samples loses
 * outer_work (what the unwinder is for); with them both must agree address
 * for address. Then unwind_merge_fp() on hand-made chains, garbage stacks and
 * registers (every walk ends, within max_frames), the bounds and the errors.
 *
 * Needs root (perf_event_open(2) on another process with REGS_USER and
 * STACK_USER): exits 77 without.
 *
 * Usage: test-unwind SPIN-NOFP SPIN-FP VDSO-SPIN SPIN-NOPIE SPIN-LLD LLVM-SPIN SPIN-DEBUGFRAME SPIN-NOCFI SPIN-FAKEFP
 * ("" when not built)
 */
#include <elf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/perf_event.h>
#if defined(__x86_64__) || defined(__aarch64__)
#include <asm/perf_regs.h>
#endif

#include <cmocka.h>
#include <elfutils/libdwelf.h>
#include <gelf.h>
#include <libelf.h>

#include "macro.h"
#include "strbuf.h"
#include "symbols.h"
#include "unwind-capture.h"
#include "unwind.h"

/* Enough samples in inner_spin for a fraction to mean something; spin spends nearly all its time there. */
#define WANT_SAMPLES    200U
#define MIN_INNER       50U
#define GARBAGE_ROUNDS  20000U
/* Below the default, so that stopping at the limit is seen; frames has room for twice as many. */
#define GARBAGE_MAX_FRAMES 64U
#define FUNCTION_MAX    128U

static const char *spin_nofp, *spin_fp, *vdso_spin, *spin_nopie, *spin_lld, *llvm_spin, *spin_debugframe,
                  *spin_nocfi, *spin_fakefp;
static char skip_reason[MESSAGE_MAX];

static unsigned last_cpu(void) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);

        return n > 1 ? (unsigned) n - 1 : 0;
}

/* The capture, or false (and the skip reason) when this machine cannot sample. */
static bool capture_or_skip_running(const char *program, bool keep_running, struct capture *ret) {
        char err[MESSAGE_MAX] = "";
        int r;

        if (geteuid() != 0) {
                snprintf(skip_reason, sizeof(skip_reason), "not root: perf_event_open on another process needs it");
                return false;
        }
        r = capture_run(program, last_cpu(), unwind_regs_mask(), WANT_SAMPLES, keep_running, ret, err,
                        sizeof(err));
        if (r == -EACCES || r == -EPERM || r == -ENOENT || r == -ENOSYS || r == -EOPNOTSUPP) {
                snprintf(skip_reason, sizeof(skip_reason), "%s", err);
                return false;
        }
        if (r < 0)
                fail_msg("capture of %s: %s", program, err);
        return true;
}

static bool capture_or_skip(const char *program, struct capture *ret) {
        return capture_or_skip_running(program, false, ret);
}

static void feed(const struct capture *c, struct unwind *u, struct symbols *s) {
        for (size_t i = 0; i < c->n_maps; i++) {
                const struct capture_mapping *m = &c->maps[i];

                /* What a sampler gets from PERF_RECORD_MMAP2 without mmap_data: the executable ones. */
                if (!m->exec)
                        continue;
                assert_int_equal(unwind_add_mapping(u, (uint32_t) c->pid, m->start, m->len, m->pgoff, m->filename,
                                                    NULL, 0), 0);
                if (s)
                        assert_int_equal(symbols_add_mapping(s, (uint32_t) c->pid, m->start, m->len, m->pgoff,
                                                             m->filename, NULL, 0), 0);
        }
}

/* The function of frame i: the pc itself for the leaf, the call (return address - 1) for the others. */
static void name_of(struct symbols *s, uint32_t pid, const uint64_t *frames, size_t i, char *buf, size_t len) {
        struct symbols_result res;

        if (symbols_lookup(s, pid, i == 0 ? frames[0] : frames[i] - 1, &res) == 0 && res.function)
                snprintf(buf, len, "%s", res.function);
        else
                snprintf(buf, len, "?");
}

static bool is_chain(struct symbols *s, uint32_t pid, const uint64_t *frames, size_t n) {
        static const char *const chain[] = { "inner_spin", "outer_work", "main" };
        char name[FUNCTION_MAX];

        if (n < ELEMENTSOF(chain))
                return false;
        for (size_t i = 0; i < ELEMENTSOF(chain); i++) {
                name_of(s, pid, frames, i, name, sizeof(name));
                if (!streq(name, chain[i]))
                        return false;
        }
        return true;
}

/*
 * Whether the kernel's frame-pointer chain of a sample is the CFI frames
 * address for address: the same pc, then the same return addresses, the
 * CFI's first one aside when the leaf kept no frame (its caller's return
 * address is then not on the frame-pointer chain). At least two return
 * addresses must match.
 */
static bool fp_agrees(const uint64_t *cfi, size_t n_cfi, const uint64_t *fp, size_t n_fp) {
        if (n_fp < 3 || n_cfi < 1 || cfi[0] != fp[0])
                return false;
        for (size_t skip = 1; skip <= 2; skip++)
                if (n_cfi >= skip + n_fp - 1 && memcmp(cfi + skip, fp + 1, (n_fp - 1) * sizeof(uint64_t)) == 0)
                        return true;
        return false;
}

struct spin_result {
        size_t samples, inner, cfi_whole, fp_whole, same_addresses;
        size_t outermost;               /* of inner, walks unwind_last_whole() says reached the outermost frame */
        size_t fp_taken;                /* of those, where merging without it would not have kept the CFI frames */
        struct unwind_stats stats;
};

static bool unwind_spin(const char *program, struct spin_result *ret) {
        struct capture c;
        struct unwind *u;
        struct symbols *s;
        struct spin_result res = {};
        uint64_t frames[UNWIND_MAX_FRAMES];

        if (!capture_or_skip(program, &c))
                return false;
        u = unwind_new(NULL);
        s = symbols_new(NULL);
        feed(&c, u, s);

        for (size_t i = 0; i < c.n_samples; i++) {
                const struct capture_sample *cs = &c.samples[i];
                struct unwind_input in = capture_input(cs);
                char leaf[FUNCTION_MAX];
                int n;

                if (cs->pid != (uint32_t) c.pid)
                        continue;
                res.samples++;
                n = unwind_user(u, &in, frames, ELEMENTSOF(frames));
                assert_true(n >= 1);
                /* The first frame is the sample's own ip: the registers are the same instant. */
                assert_int_equal(frames[0], cs->ip);
                name_of(s, cs->pid, frames, 0, leaf, sizeof(leaf));
                if (!streq(leaf, "inner_spin"))
                        continue;
                res.inner++;
                if (is_chain(s, cs->pid, frames, (size_t) n))
                        res.cfi_whole++;
                if (is_chain(s, cs->pid, cs->fp, cs->n_fp))
                        res.fp_whole++;
                if (fp_agrees(frames, (size_t) n, cs->fp, cs->n_fp))
                        res.same_addresses++;
                if (unwind_last_whole(u)) {
                        uint64_t merged[UNWIND_MAX_FRAMES];
                        size_t m = unwind_merge_fp(frames, (size_t) n, false, cs->fp, cs->n_fp, merged,
                                                   ELEMENTSOF(merged));

                        res.outermost++;
                        res.fp_taken += m != (size_t) n || memcmp(merged, frames, m * sizeof(uint64_t)) != 0;
                }
        }
        unwind_get_stats(u, &res.stats);
        printf("%s: %zu samples, %zu in inner_spin: whole chain by CFI %zu, by the kernel's FP chain %zu, "
               "same addresses %zu, CFI to the outermost frame %zu (of which the FP chain longer or past it %zu); "
               "frames %" PRIu64 ", failed %" PRIu64 ", no_module %" PRIu64 ", stack_end %" PRIu64
               ", whole %" PRIu64 ", reports %" PRIu64 ", module_errors %" PRIu64 "\n",
               program, res.samples, res.inner, res.cfi_whole, res.fp_whole, res.same_addresses, res.outermost,
               res.fp_taken, res.stats.frames, res.stats.failed, res.stats.no_module, res.stats.stack_end,
               res.stats.whole, res.stats.reports, res.stats.module_errors);
        symbols_free(s);
        unwind_free(u);
        capture_done(&c);
        *ret = res;
        return true;
}

/*
 * Enough samples in inner_spin, every sample unwound, the modules reported
 * once (the mappings did not change between samples), all of them, the vDSO
 * too unless we have none to copy (valgrind hides it), and CFI finds the
 * whole chain in (nearly) every sample.
 */
static void assert_cfi_whole(const struct spin_result *res) {
        assert_true(res->inner >= MIN_INNER);
        assert_int_equal(res->stats.samples, res->samples);
        assert_int_equal(res->stats.reports, 1);
        assert_int_equal(res->stats.module_errors, getauxval(AT_SYSINFO_EHDR) ? 0 : 1);
        assert_true(res->cfi_whole * 10 >= res->inner * 9);
}

static void test_spin_nofp(void **state) {
        struct spin_result res;

        if (!unwind_spin(spin_nofp, &res))
                skip();
        assert_cfi_whole(&res);
        /* The kernel's frame-pointer chain of the same samples does not: nothing there keeps rbp. */
        assert_true(res.fp_whole * 2 < res.inner);
}

static void test_spin_fp(void **state) {
        struct spin_result res;

        if (!unwind_spin(spin_fp, &res))
                skip();
        assert_cfi_whole(&res);
        /*
         * With frame pointers both walks are right where they overlap: the
         * same return addresses, not only the same names. (GCC 12 gives
         * inner_spin no frame even with -mno-omit-leaf-frame-pointer, so the
         * kernel's chain lacks outer_work; fp_agrees() allows that.)
         */
        assert_true(res.same_addresses * 10 >= res.inner * 9);
}

/*
 * No .eh_frame for spin's own code (the PLT's and _start's FDEs only) and
 * no frame pointers: its CFI in .debug_frame is all there is.
 */
static void test_spin_debugframe(void **state) {
        struct spin_result res;

        if (!unwind_spin(spin_debugframe, &res))
                skip();
        assert_cfi_whole(&res);
}

/*
 * No CFI at all for spin's own code (as Go's binaries have none), but frame
 * pointers: the walk goes on by the frame records, as libdwfl's did, and
 * finds the whole chain.
 */
static void test_spin_nocfi(void **state) {
        struct spin_result res;

        if (!unwind_spin(spin_nocfi, &res))
                skip();
        assert_cfi_whole(&res);
}

/*
 * spin-fakefp: while it burns, the frame-pointer register points at 16
 * decoy frame records (tests/sampler/spin.c). The kernel's chain follows
 * them; CFI reaches the outermost frame all the same, and merging (unwind =
 * auto) told so keeps the CFI frames, where the longer chain used to win.
 */
static void test_spin_fakefp(void **state) {
        struct spin_result res;

        if (!unwind_spin(spin_fakefp, &res))
                skip();
        assert_cfi_whole(&res);
        assert_true(res.outermost * 10 >= res.inner * 9);
        /* The decoys were there: merging without knowing the walk whole would have taken them. */
        assert_true(res.fp_taken * 10 >= res.outermost * 9);
}

/* The GNU build id of an ELF file (NT_GNU_BUILD_ID), into buf; its length. */
static size_t file_build_id(const char *path, uint8_t *buf, size_t len) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        const void *bid;
        ssize_t n = -1;
        Elf *elf;

        elf_version(EV_CURRENT);
        elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
        if (elf)
                n = dwelf_elf_gnu_build_id(elf, &bid);
        if (n > 0 && (size_t) n <= len)
                memcpy(buf, bid, (size_t) n);
        else
                n = 0;
        if (elf)
                elf_end(elf);
        return (size_t) n;
}

/*
 * A mapping with a build id is unwound only by that build's file: spin-nofp
 * given its own build id unwinds; given another (a binary upgraded since it
 * was mapped) it is no module, rather than another build's CFI.
 */
static void test_build_id(void **state) {
        struct capture c;
        uint8_t bid[SYMBOLS_BUILD_ID_MAX];
        size_t bid_len;
        uint64_t frames[UNWIND_MAX_FRAMES];
        _cleanup_free_ char *exe = NULL;

        if (!capture_or_skip(spin_nofp, &c))
                skip();
        exe = realpath(spin_nofp, NULL);
        assert_non_null(exe);
        bid_len = file_build_id(exe, bid, sizeof(bid));
        assert_true(bid_len > 0);

        for (int wrong = 0; wrong <= 1; wrong++) {
                struct unwind *u = unwind_new(NULL);
                struct unwind_stats st;
                size_t sampled = 0, whole = 0;

                if (wrong)
                        bid[bid_len - 1] ^= 0xff;
                for (size_t i = 0; i < c.n_maps; i++) {
                        const struct capture_mapping *m = &c.maps[i];
                        bool ours = streq(m->filename, exe);

                        if (m->exec)
                                assert_int_equal(unwind_add_mapping(u, (uint32_t) c.pid, m->start, m->len, m->pgoff,
                                                                    m->filename, ours ? bid : NULL,
                                                                    ours ? bid_len : 0), 0);
                }
                for (size_t i = 0; i < c.n_samples; i++) {
                        const struct capture_sample *cs = &c.samples[i];
                        struct unwind_input in = capture_input(cs);

                        if (cs->pid != (uint32_t) c.pid)
                                continue;
                        sampled++;
                        /* inner_spin, outer_work, main, then libc's start and _start. */
                        if (unwind_user(u, &in, frames, ELEMENTSOF(frames)) >= 6)
                                whole++;
                }
                unwind_get_stats(u, &st);
                assert_true(sampled >= MIN_INNER);
                if (wrong) {
                        assert_int_equal(whole, 0);
                        assert_int_equal(st.no_module, sampled);
                        assert_int_equal(st.module_errors, getauxval(AT_SYSINFO_EHDR) ? 1 : 2);
                } else {
                        assert_true(whole * 10 >= sampled * 9);
                        assert_int_equal(st.module_errors, getauxval(AT_SYSINFO_EHDR) ? 0 : 1);
                }
                unwind_free(u);
        }
        capture_done(&c);
}

static size_t open_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        size_t n = 0;

        assert_non_null(d);
        while (readdir(d))
                n++;
        closedir(d);
        return n;
}

/*
 * Many processes mapping the same files (every service maps libc): each
 * file is read once and holds no descriptor, whatever the number of
 * processes; evicted processes take their Dwfl with them.
 */
static void test_many_processes(void **state) {
        struct capture c;
        struct unwind_limits l = { .max_pids = 16 };
        struct unwind *u;
        struct unwind_stats st;
        uint64_t frames[UNWIND_MAX_FRAMES];
        const struct capture_sample *cs = NULL;
        size_t fds;

        if (!capture_or_skip(spin_nofp, &c))
                skip();
        for (size_t i = 0; i < c.n_samples && !cs; i++)
                if (c.samples[i].pid == (uint32_t) c.pid)
                        cs = &c.samples[i];
        assert_non_null(cs);
        u = unwind_new(&l);
        fds = open_fds();
        for (uint32_t k = 0; k < 50; k++) {
                /* The same process under another pid: same mappings, same stack. */
                uint32_t pid = (uint32_t) c.pid + 100000 + k;
                struct unwind_input in = capture_input(cs);

                in.pid = in.tid = pid;
                for (size_t i = 0; i < c.n_maps; i++)
                        if (c.maps[i].exec)
                                assert_int_equal(unwind_add_mapping(u, pid, c.maps[i].start, c.maps[i].len,
                                                                    c.maps[i].pgoff, c.maps[i].filename,
                                                                    NULL, 0), 0);
                /* inner_spin, outer_work, main, libc's two, _start. */
                assert_int_equal(unwind_user(u, &in, frames, ELEMENTSOF(frames)), 6);
                assert_int_equal(open_fds(), fds);
        }
        unwind_get_stats(u, &st);
        assert_int_equal(st.pid_evictions, 50 - 16);
        assert_int_equal(st.reports, 50);
        unwind_free(u);
        capture_done(&c);
}

/* VmRSS, proc(5): what the kernel says this process has resident, in bytes. */
static size_t rss_bytes(void) {
        char line[MESSAGE_MAX];
        size_t kb = 0;
        FILE *f = fopen("/proc/self/status", "re");

        assert_non_null(f);
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "VmRSS: %zu kB", &kb) == 1)
                        break;
        fclose(f);
        return kb * 1024;
}

/*
 * Many processes mapping one large library (libLLVM, its .eh_frame some
 * megabytes): samples of llvm-spin, all over the library, unwound as
 * SHARED_PROCS processes. The first one's walks cost what libdw keeps of
 * the library's CFI (every FDE it looked up, or passed on its way); each
 * further process adds its mappings only, a few kilobytes, as the kernel's
 * VmRSS of this process says: the CFI is read once a file, not once a
 * process. (With a Dwfl per process each one paid the first one's price
 * again: 3.4 MiB a process mapping libLLVM in the daemon.)
 */
#define SHARED_PROCS            48U
#define SHARED_SAMPLES          400U
#define SHARED_PROC_BYTES_MAX   (64U << 10)

static void test_shared_cfi(void **state) {
        char err[MESSAGE_MAX] = "", *argv[] = { (char *) llvm_spin, (char *) "--probe", NULL };
        uint64_t frames[UNWIND_MAX_FRAMES], lo = 0, hi = 0;
        size_t rss0, rss1, rss2, deep = 0, in_llvm = 0;
        struct unwind_limits l = { .max_pids = SHARED_PROCS };
        struct unwind_stats st;
        struct capture c;
        struct unwind *u;
        pid_t child;
        int status, r;

        if (geteuid() != 0) {
                snprintf(skip_reason, sizeof(skip_reason), "not root: perf_event_open on another process needs it");
                skip();
        }
        assert_int_equal(posix_spawn(&child, llvm_spin, NULL, NULL, argv, environ), 0);
        assert_int_equal(waitpid(child, &status, 0), child);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
                snprintf(skip_reason, sizeof(skip_reason), "no libLLVM to load (Debian: libllvm15, which clang brings)");
                skip();
        }
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        r = capture_run(llvm_spin, last_cpu(), unwind_regs_mask(), SHARED_SAMPLES, false, &c, err, sizeof(err));
        if (r == -EACCES || r == -EPERM || r == -ENOENT || r == -ENOSYS || r == -EOPNOTSUPP) {
                snprintf(skip_reason, sizeof(skip_reason), "%s", err);
                skip();
        }
        assert_int_equal(r, 0);
        for (size_t i = 0; i < c.n_maps; i++)
                if (c.maps[i].exec && strstr(c.maps[i].filename, "/libLLVM")) {
                        lo = c.maps[i].start;
                        hi = c.maps[i].start + c.maps[i].len;
                }
        assert_true(hi > lo);

        u = unwind_new(&l);
        rss0 = rss_bytes();
        for (uint32_t k = 0; k < SHARED_PROCS; k++) {
                /* The same process under another pid: same mappings, same stacks. */
                uint32_t pid = (uint32_t) c.pid + 100000 + k;

                for (size_t i = 0; i < c.n_maps; i++)
                        if (c.maps[i].exec)
                                assert_int_equal(unwind_add_mapping(u, pid, c.maps[i].start, c.maps[i].len,
                                                                    c.maps[i].pgoff, c.maps[i].filename, NULL, 0),
                                                 0);
                for (size_t i = 0; i < c.n_samples; i++) {
                        struct unwind_input in = capture_input(&c.samples[i]);
                        int n;

                        if (c.samples[i].pid != (uint32_t) c.pid)
                                continue;
                        in.pid = in.tid = pid;
                        n = unwind_user(u, &in, frames, ELEMENTSOF(frames));
                        assert_true(n >= 1);
                        if (k == 0 && frames[0] >= lo && frames[0] < hi) {
                                in_llvm++;
                                /* Out of the library through its C++ frames, to llvm-spin's own. */
                                deep += n >= 4 && !(frames[n - 1] >= lo && frames[n - 1] < hi);
                        }
                }
                if (k == 0)
                        rss1 = rss_bytes();
        }
        rss2 = rss_bytes();
        unwind_get_stats(u, &st);
        printf("%s: %zu samples in libLLVM, %zu unwound out of it; VmRSS +%zu KiB for the first process, "
               "+%zu KiB for %u more (%zu bytes each); %" PRIu64 " processes, %" PRIu64 " evicted\n",
               llvm_spin, in_llvm, deep, (rss1 - rss0) >> 10, (rss2 - rss1) >> 10, SHARED_PROCS - 1,
               (rss2 - rss1) / (SHARED_PROCS - 1), st.pids, st.pid_evictions);
        assert_true(in_llvm >= SHARED_SAMPLES / 2);
        assert_true(deep * 10 >= in_llvm * 8);
        assert_int_equal(st.pids, SHARED_PROCS);
        assert_int_equal(st.pid_evictions, 0);
        /* ASan keeps what is freed in quarantine: the resident set says nothing of what is held then. */
        if (!streq(getenv("ARMPROFD_SANITIZED") ?: "0", "1"))
                assert_true(rss2 - rss1 <= (size_t) (SHARED_PROCS - 1) * SHARED_PROC_BYTES_MAX);
        unwind_free(u);
        capture_done(&c);
}

/* ET_EXEC: no bias. */
static void test_spin_nopie(void **state) {
        struct spin_result res;

        if (!unwind_spin(spin_nopie, &res))
                skip();
        assert_cfi_whole(&res);
}

/* lld's layout: the code segment's bias is found from the segment the code mapping holds, not the first. */
static void test_spin_lld(void **state) {
        struct spin_result res;

        if (!spin_lld[0]) {
                snprintf(skip_reason, sizeof(skip_reason), "no lld: spin-lld was not built");
                skip();
        }
        if (!unwind_spin(spin_lld, &res))
                skip();
        assert_cfi_whole(&res);
}

static void test_merge_fp(void **state) {
        uint64_t out[16];
        size_t n;

        /* CFI stopped in JIT code (0x70): the FP chain goes on after it. */
        {
                const uint64_t cfi[] = { 0x10, 0x20, 0x70 };
                const uint64_t fp[] = { 0x10, 0x70, 0x80, 0x90 };
                const uint64_t want[] = { 0x10, 0x20, 0x70, 0x80, 0x90 };

                n = unwind_merge_fp(cfi, ELEMENTSOF(cfi), false, fp, ELEMENTSOF(fp), out, ELEMENTSOF(out));
                assert_int_equal(n, ELEMENTSOF(want));
                assert_memory_equal(out, want, sizeof(want));
        }
        /* CFI complete, FP chain broken (no frame pointers): CFI alone. */
        {
                const uint64_t cfi[] = { 0x10, 0x20, 0x30, 0x40 };
                const uint64_t fp[] = { 0x10, 0xdead };

                n = unwind_merge_fp(cfi, ELEMENTSOF(cfi), false, fp, ELEMENTSOF(fp), out, ELEMENTSOF(out));
                assert_int_equal(n, ELEMENTSOF(cfi));
                assert_memory_equal(out, cfi, sizeof(cfi));
        }
        /* CFI gave the leaf only (no .eh_frame): the FP chain from its first return address. */
        {
                const uint64_t cfi[] = { 0x10 };
                const uint64_t fp[] = { 0x10, 0x20, 0x30 };

                n = unwind_merge_fp(cfi, ELEMENTSOF(cfi), false, fp, ELEMENTSOF(fp), out, ELEMENTSOF(out));
                assert_int_equal(n, ELEMENTSOF(fp));
                assert_memory_equal(out, fp, sizeof(fp));
        }
        /* The last CFI frame is not in the FP chain and the FP chain is longer: it alone. */
        {
                const uint64_t cfi[] = { 0x10, 0x20 };
                const uint64_t fp[] = { 0x10, 0x30, 0x40, 0x50 };

                n = unwind_merge_fp(cfi, ELEMENTSOF(cfi), false, fp, ELEMENTSOF(fp), out, ELEMENTSOF(out));
                assert_int_equal(n, ELEMENTSOF(fp));
                assert_memory_equal(out, fp, sizeof(fp));
        }
        /* Recursion: the CFI's last frame is the second 0x20, the FP chain goes on after its second. */
        {
                const uint64_t cfi[] = { 0x10, 0x20, 0x20 };
                const uint64_t fp[] = { 0x10, 0x20, 0x20, 0x20, 0x30 };
                const uint64_t want[] = { 0x10, 0x20, 0x20, 0x20, 0x30 };

                n = unwind_merge_fp(cfi, ELEMENTSOF(cfi), false, fp, ELEMENTSOF(fp), out, ELEMENTSOF(out));
                assert_int_equal(n, ELEMENTSOF(want));
                assert_memory_equal(out, want, sizeof(want));
        }
        /* Bounded by max, either way. */
        {
                const uint64_t cfi[] = { 0x10, 0x20 };
                const uint64_t fp[] = { 0x10, 0x20, 0x30, 0x40, 0x50 };

                n = unwind_merge_fp(cfi, ELEMENTSOF(cfi), false, fp, ELEMENTSOF(fp), out, 3);
                assert_int_equal(n, 3);
                assert_int_equal(out[2], 0x30);
                n = unwind_merge_fp(fp, ELEMENTSOF(fp), false, cfi, 1, out, 2);
                assert_int_equal(n, 2);
                assert_int_equal(out[1], 0x20);
        }
        /*
         * CFI reached the outermost frame: its frames alone, though a longer FP
         * chain (a register that held no frame pointer, walked into garbage)
         * would have been taken whole, or its frames after the last CFI one.
         */
        {
                const uint64_t cfi[] = { 0x10, 0x20, 0x30 };
                const uint64_t garbage[] = { 0x10, 0x7f00, 0x7f10, 0x7f20, 0x7f30 };
                const uint64_t past[] = { 0x10, 0x20, 0x30, 0x7f00 };

                n = unwind_merge_fp(cfi, ELEMENTSOF(cfi), false, garbage, ELEMENTSOF(garbage), out, ELEMENTSOF(out));
                assert_int_equal(n, ELEMENTSOF(garbage));
                n = unwind_merge_fp(cfi, ELEMENTSOF(cfi), true, garbage, ELEMENTSOF(garbage), out, ELEMENTSOF(out));
                assert_int_equal(n, ELEMENTSOF(cfi));
                assert_memory_equal(out, cfi, sizeof(cfi));
                n = unwind_merge_fp(cfi, ELEMENTSOF(cfi), true, past, ELEMENTSOF(past), out, ELEMENTSOF(out));
                assert_int_equal(n, ELEMENTSOF(cfi));
                assert_memory_equal(out, cfi, sizeof(cfi));
                n = unwind_merge_fp(cfi, ELEMENTSOF(cfi), true, garbage, ELEMENTSOF(garbage), out, 2);
                assert_int_equal(n, 2);
        }
        /* Nothing from CFI: the FP chain; nothing at all: nothing. */
        {
                const uint64_t fp[] = { 0x10, 0x20 };

                n = unwind_merge_fp(NULL, 0, false, fp, ELEMENTSOF(fp), out, ELEMENTSOF(out));
                assert_int_equal(n, 2);
                assert_memory_equal(out, fp, sizeof(fp));
                assert_int_equal(unwind_merge_fp(NULL, 0, false, NULL, 0, out, ELEMENTSOF(out)), 0);
        }
}

/* An input for u with the registers all set from regs (by bit order of the mask), over stack. */
static struct unwind_input input_of(uint32_t pid, const uint64_t *regs, const uint8_t *stack, size_t stack_len) {
        return (struct unwind_input) {
                .pid = pid, .tid = pid,
                .regs_abi = PERF_SAMPLE_REGS_ABI_64,
                .regs_mask = unwind_regs_mask(),
                .regs = regs,
                .nr_regs = (size_t) __builtin_popcountll(unwind_regs_mask()),
                .stack = stack, .stack_len = stack_len,
        };
}

#ifdef CAPTURE_PERF_PC
static uint64_t rnd(uint64_t *x) {
        /* splitmix64: a seeded sequence, so a failing round can be replayed. */
        uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));

        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}
#endif

static void test_garbage(void **state) {
#ifdef CAPTURE_PERF_PC
        struct capture c;
        struct unwind_limits l = { .max_frames = GARBAGE_MAX_FRAMES };
        struct unwind *u;
        struct unwind_stats st;
        size_t nr = (size_t) __builtin_popcountll(unwind_regs_mask());
        uint64_t regs[CAPTURE_PERF_REGS_MAX], frames[2 * GARBAGE_MAX_FRAMES], seed = 14, text_lo = 0, text_hi = 0;
        _cleanup_free_ uint8_t *stack = xmalloc(CAPTURE_STACK_USER);

        if (!capture_or_skip(spin_nofp, &c))
                skip();
        u = unwind_new(&l);
        feed(&c, u, NULL);
        for (size_t i = 0; i < c.n_maps; i++)
                if (c.maps[i].exec && strstr(c.maps[i].filename, "libc")) {
                        text_lo = c.maps[i].start;
                        text_hi = c.maps[i].start + c.maps[i].len;
                }
        assert_true(text_hi > text_lo);

        for (unsigned round = 0; round < GARBAGE_ROUNDS; round++) {
                struct unwind_input in;
                int n;

                for (size_t i = 0; i < nr; i++)
                        regs[i] = rnd(&seed);
                /* Mostly a pc in libc's code, where CFI will be applied to the garbage; else anywhere. */
                if (round % 4 != 0)
                        regs[capture_reg_index(CAPTURE_PERF_PC)] = text_lo + rnd(&seed) % (text_hi - text_lo);
                /* Words of the stack: random, return addresses into libc, or pointers into the copy itself. */
                for (size_t off = 0; off < CAPTURE_STACK_USER; off += 8) {
                        uint64_t w, kind = rnd(&seed) % 3;

                        w = kind == 0 ? rnd(&seed)
                          : kind == 1 ? text_lo + rnd(&seed) % (text_hi - text_lo)
                          : regs[capture_reg_index(CAPTURE_PERF_SP)] + rnd(&seed) % CAPTURE_STACK_USER;
                        memcpy(stack + off, &w, 8);
                }
                in = input_of((uint32_t) c.pid, regs, stack, (size_t) (rnd(&seed) % (CAPTURE_STACK_USER + 1)));
                n = unwind_user(u, &in, frames, ELEMENTSOF(frames));
                assert_true(n >= 1);
                assert_true(n <= (int) GARBAGE_MAX_FRAMES);
                assert_int_equal(frames[0], regs[capture_reg_index(CAPTURE_PERF_PC)]);
        }
        unwind_get_stats(u, &st);
        printf("garbage: %" PRIu64 " samples, %" PRIu64 " frames, failed %" PRIu64 ", no_module %" PRIu64
               ", stack_end %" PRIu64 ", truncated %" PRIu64 "\n",
               st.samples, st.frames, st.failed, st.no_module, st.stack_end, st.truncated);
        assert_int_equal(st.samples, GARBAGE_ROUNDS);
        /* A quarter of the pcs are anywhere, nearly never in a module. */
        assert_true(st.no_module >= GARBAGE_ROUNDS / 8);
        unwind_free(u);
        capture_done(&c);
#else
        skip();
#endif
}

/*
 * Hand-made stacks over spin-fp's outer_work, whose CFI after its prologue
 * is CFA = rbp + 16, return address at CFA - 8, caller's rbp at CFA - 16: a
 * chain of saved rbps 16 bytes apart is an endless recursion (cut at
 * max_frames, counted truncated), a saved rbp pointing at itself a frame
 * that does not move (cut at once, not repeated up to max_frames).
 */
static void test_guards(void **state) {
#if defined(__x86_64__)
        struct capture c;
        struct unwind_limits l = { .max_frames = 32 };
        struct unwind *u;
        struct unwind_stats st;
        uint64_t frames[UNWIND_MAX_FRAMES], regs[CAPTURE_PERF_REGS_MAX] = {}, ra = 0, w;
        uint64_t sp = UINT64_C(0x7ffd00000000);
        _cleanup_free_ uint8_t *stack = xmalloc(CAPTURE_STACK_USER);
        struct unwind_input in;
        int n;

        if (!capture_or_skip(spin_fp, &c))
                skip();
        u = unwind_new(&l);
        feed(&c, u, NULL);
        for (size_t i = 0; i < c.n_samples && ra == 0; i++) {
                const struct capture_sample *cs = &c.samples[i];
                struct unwind_input real = capture_input(cs);

                if (cs->pid == (uint32_t) c.pid && unwind_user(u, &real, frames, ELEMENTSOF(frames)) >= 3)
                        ra = frames[1];         /* inner_spin's return into outer_work */
        }
        assert_true(ra != 0);

        regs[capture_reg_index(CAPTURE_PERF_PC)] = ra;
        regs[capture_reg_index(CAPTURE_PERF_SP)] = sp;
        regs[capture_reg_index(CAPTURE_PERF_FP)] = sp;
        for (size_t k = 0; k + 1 < CAPTURE_STACK_USER / 8; k += 2) {
                w = sp + 8 * (k + 2);
                memcpy(stack + 8 * k, &w, 8);
                memcpy(stack + 8 * (k + 1), &ra, 8);
        }
        in = input_of((uint32_t) c.pid, regs, stack, CAPTURE_STACK_USER);
        n = unwind_user(u, &in, frames, ELEMENTSOF(frames));
        assert_int_equal(n, 32);
        for (int i = 0; i < n; i++)
                assert_int_equal(frames[i], ra);
        unwind_get_stats(u, &st);
        assert_int_equal(st.truncated, 1);

        /* The saved rbp is the frame's own: the next frame has the same sp. */
        memcpy(stack, &sp, 8);
        n = unwind_user(u, &in, frames, ELEMENTSOF(frames));
        assert_true(n >= 1);
        assert_true(n <= 2);
        unwind_get_stats(u, &st);
        assert_int_equal(st.truncated, 1);
        unwind_free(u);
        capture_done(&c);
#else
        skip();
#endif
}

static void test_bad_args(void **state) {
        struct unwind *u = unwind_new(NULL);
        uint64_t regs[CAPTURE_PERF_REGS_MAX] = {}, frames[4];
        uint8_t stack[64] = {};
        struct unwind_input in;
        struct unwind_stats st;

        if (unwind_regs_mask() == 0) {
                in = input_of(1, regs, stack, sizeof(stack));
                assert_int_equal(unwind_user(u, &in, frames, 4), -EOPNOTSUPP);
                unwind_free(u);
                return;
        }
        in = input_of(1, NULL, stack, sizeof(stack));
        assert_int_equal(unwind_user(u, &in, frames, 4), -EINVAL);
        in = input_of(1, regs, stack, sizeof(stack));
        in.regs_abi = PERF_SAMPLE_REGS_ABI_NONE;
        assert_int_equal(unwind_user(u, &in, frames, 4), -EINVAL);
        in.regs_abi = PERF_SAMPLE_REGS_ABI_32;
        assert_int_equal(unwind_user(u, &in, frames, 4), -EOPNOTSUPP);
        in = input_of(1, regs, stack, sizeof(stack));
        in.nr_regs--;
        assert_int_equal(unwind_user(u, &in, frames, 4), -EINVAL);
        in = input_of(1, regs, stack, sizeof(stack));
        in.regs_mask = 1;
        in.nr_regs = 1;
        assert_int_equal(unwind_user(u, &in, frames, 4), -EINVAL);
        unwind_get_stats(u, &st);
        assert_int_equal(st.samples, 0);

        /* A process never mapped: the pc alone, counted as failed for want of a module. */
        in = input_of(99, regs, stack, sizeof(stack));
        regs[capture_reg_index(CAPTURE_PERF_PC)] = 0x401000;
        assert_int_equal(unwind_user(u, &in, frames, 4), 1);
        assert_int_equal(frames[0], 0x401000);
        assert_int_equal(unwind_user(u, &in, frames, 0), 0);
        unwind_get_stats(u, &st);
        assert_int_equal(st.samples, 1);
        assert_int_equal(st.failed, 1);
        assert_int_equal(st.no_module, 1);

        assert_int_equal(unwind_add_mapping(u, 1, 0x1000, 0, 0, "/bin/true", NULL, 0), -EINVAL);
        assert_int_equal(unwind_add_mapping(u, 1, UINT64_MAX - 10, 0x1000, 0, "/bin/true", NULL, 0), -EINVAL);
        assert_int_equal(unwind_add_mapping(u, 1, 0x1000, 0x1000, 0, "/bin/true", stack, 21), -EINVAL);
        unwind_free(u);
}

static void test_bounds(void **state) {
        struct unwind_limits l = { .max_pids = 2, .max_mappings_per_pid = 2 };
        struct unwind *u = unwind_new(&l);
        struct unwind_stats st;

        for (uint32_t pid = 1; pid <= 3; pid++)
                assert_int_equal(unwind_add_mapping(u, pid, 0x1000, 0x1000, 0, "/bin/true", NULL, 0), 0);
        unwind_get_stats(u, &st);
        assert_int_equal(st.pid_evictions, 1);

        /* Three disjoint mappings in a process holding two: the oldest goes. */
        for (uint64_t i = 0; i < 3; i++)
                assert_int_equal(unwind_add_mapping(u, 3, 0x10000 * (i + 2), 0x1000, 0, "/bin/true", NULL, 0), 0);
        unwind_get_stats(u, &st);
        assert_int_equal(st.mapping_evictions, 2);

        /* A mapping cut in two by one inside it is two mappings: one more eviction, no more. */
        assert_int_equal(unwind_add_mapping(u, 2, 0x100000, 0x3000, 0, "/bin/true", NULL, 0), 0);
        assert_int_equal(unwind_add_mapping(u, 2, 0x101000, 0x1000, 0, "//anon", NULL, 0), 0);
        unwind_get_stats(u, &st);
        assert_int_equal(st.mapping_evictions, 3);
        unwind_remove_pid(u, 2);
        unwind_remove_pid(u, 2);
        unwind_free(u);
}

/* Our vDSO's image size (as unwind.c copies it) and where its function name is, from its image. */
static bool vdso_function(const char *name, uint64_t *ret_size, uint64_t *ret_offset) {
        const uint8_t *image = (const uint8_t *) getauxval(AT_SYSINFO_EHDR);
        const Elf64_Ehdr *eh = (const Elf64_Ehdr *) image;
        uint64_t size, first = UINT64_MAX;
        Elf_Scn *scn = NULL;
        Elf *elf;
        bool found = false;

        if (!image)
                return false;
        size = eh->e_shoff + (uint64_t) eh->e_shnum * eh->e_shentsize;
        for (unsigned i = 0; i < eh->e_phnum; i++) {
                const Elf64_Phdr *ph = (const Elf64_Phdr *) (image + eh->e_phoff + (uint64_t) i * eh->e_phentsize);

                if (ph->p_type == PT_LOAD) {
                        size = MAX(size, ph->p_offset + ph->p_filesz);
                        first = MIN(first, ph->p_vaddr);
                }
        }
        elf_version(EV_CURRENT);
        elf = elf_memory((char *) image, size);
        while (elf && !found && (scn = elf_nextscn(elf, scn))) {
                GElf_Shdr sh;
                Elf_Data *data;

                if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !(data = elf_getdata(scn, NULL)))
                        continue;
                for (size_t i = 0; sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
                        GElf_Sym sym;
                        const char *n;

                        if (gelf_getsym(data, (int) i, &sym) && (n = elf_strptr(elf, sh.sh_link, sym.st_name)) &&
                            streq(n, name) && sym.st_value >= first) {
                                *ret_offset = sym.st_value - first;
                                found = true;
                                break;
                        }
                }
        }
        elf_end(elf);
        *ret_size = size;
        return found;
}

/*
 * A module spans its file's segments and the holes between them, and
 * another file may be mapped in a hole: Debian's arm64 kernel maps the vDSO
 * between ld.so's text and data (tests/arm64vm). A pc there is that file's:
 * here our vDSO is mapped over the pages of spin-nofp's data (its text mapped
 * as a sampler reports it) and the sample is at the first instruction of its
 * clock_gettime, whose CFI says the return address is on top of the stack.
 * Taken for spin-nofp's, the pc has no CFI and the walk ends there.
 */
static void test_vdso_in_hole(void **state) {
#if defined(__x86_64__) || defined(__aarch64__)
        const uint64_t base = UINT64_C(0x7f0000000000), mask = unwind_regs_mask(), sp = UINT64_C(0x7ffff0000000);
#if defined(__x86_64__)
        const unsigned pc_reg = PERF_REG_X86_IP, sp_reg = PERF_REG_X86_SP;
        const char *function = "__vdso_clock_gettime";
#else
        const unsigned pc_reg = PERF_REG_ARM64_PC, sp_reg = PERF_REG_ARM64_SP;
        const char *function = "__kernel_clock_gettime";
#endif
        _cleanup_free_ char *path = realpath(spin_nofp, NULL);
        uint64_t regs[64] = {}, stack[64] = {}, frames[8], size = 0, offset = 0, page = (uint64_t) sysconf(_SC_PAGESIZE);
        /* Where spin-nofp's text is: a return address into it. */
        const uint64_t ret = base + 0x1100;
        struct unwind_input in = {
                .pid = 4242, .tid = 4242, .regs_abi = PERF_SAMPLE_REGS_ABI_64, .regs_mask = mask,
                .regs = regs, .nr_regs = (size_t) __builtin_popcountll(mask),
                .stack = (const uint8_t *) stack, .stack_len = sizeof(stack),
        };
        struct unwind *u;
        int n;

        assert_non_null(path);
        if (!vdso_function(function, &size, &offset)) {
                snprintf(skip_reason, sizeof(skip_reason), "no %s in this vDSO", function);
                skip();
        }
        /* spin-nofp's PT_LOADs span [0, 0x4098) (tests/sampler/meson.build: x86-64 GNU ld's layout). */
        if (base + 0x2000 + offset >= base + 0x4098) {
                snprintf(skip_reason, sizeof(skip_reason), "%s at 0x%" PRIx64 " is past spin-nofp's span", function,
                         offset);
                skip();
        }
        u = unwind_new(NULL);
        assert_int_equal(unwind_add_mapping(u, 4242, base + 0x1000, 0x1000, 0x1000, path, NULL, 0), 0);
        assert_int_equal(unwind_add_mapping(u, 4242, base + 0x2000, (size + page - 1) & ~(page - 1), 0, "[vdso]",
                                            NULL, 0), 0);
        regs[__builtin_popcountll(mask & ((UINT64_C(1) << sp_reg) - 1))] = sp;
        regs[__builtin_popcountll(mask & ((UINT64_C(1) << pc_reg) - 1))] = base + 0x2000 + offset;
#if defined(__x86_64__)
        stack[0] = ret;         /* call pushed it: the CFI of a function's entry says CFA = rsp + 8 */
#else
        regs[__builtin_popcountll(mask & ((UINT64_C(1) << PERF_REG_ARM64_LR) - 1))] = ret;
#endif
        n = unwind_user(u, &in, frames, ELEMENTSOF(frames));
        printf("# %s at vDSO+0x%" PRIx64 " (a %" PRIu64 "-byte image) in spin-nofp's hole: %d frames, the second "
               "0x%" PRIx64 "\n", function, offset, size, n, n > 1 ? frames[1] : 0);
        assert_true(n >= 2);
        assert_int_equal(frames[1], ret);
        unwind_free(u);
#else
        skip();
#endif
}

/*
 * Samples in the vDSO: its .eh_frame (from our own, the same kernel's) leads
 * to libc's clock_gettime and on to vdso_spin, vdso_outer, main.
 */
static void test_vdso(void **state) {
        struct capture c;
        struct unwind *u;
        struct symbols *s;
        uint64_t frames[UNWIND_MAX_FRAMES], vdso_lo = 0, vdso_hi = 0;
        size_t in_vdso = 0, whole = 0;

        if (!getauxval(AT_SYSINFO_EHDR)) {
                /* cmocka counts a skip as a pass: main() says it. */
                snprintf(skip_reason, sizeof(skip_reason), "no vDSO in this process (valgrind hides it)");
                skip();
        }
        if (!capture_or_skip(vdso_spin, &c))
                skip();
        u = unwind_new(NULL);
        s = symbols_new(NULL);
        feed(&c, u, s);
        for (size_t i = 0; i < c.n_maps; i++)
                if (streq(c.maps[i].filename, "[vdso]")) {
                        vdso_lo = c.maps[i].start;
                        vdso_hi = c.maps[i].start + c.maps[i].len;
                }
        if (vdso_hi == 0) {
                snprintf(skip_reason, sizeof(skip_reason), "no [vdso] mapping in %s", vdso_spin);
                goto finish;
        }

        for (size_t i = 0; i < c.n_samples; i++) {
                const struct capture_sample *cs = &c.samples[i];
                struct unwind_input in = capture_input(cs);
                char name[FUNCTION_MAX];
                size_t j;
                int n;

                if (cs->pid != (uint32_t) c.pid || cs->ip < vdso_lo || cs->ip >= vdso_hi)
                        continue;
                in_vdso++;
                n = unwind_user(u, &in, frames, ELEMENTSOF(frames));
                /* Past the vDSO and libc's wrapper (one frame or a few), the program's own chain. */
                for (j = 1; j < (size_t) n; j++) {
                        name_of(s, cs->pid, frames, j, name, sizeof(name));
                        if (streq(name, "vdso_spin"))
                                break;
                }
                if (j + 2 >= (size_t) n)
                        continue;
                name_of(s, cs->pid, frames, j + 1, name, sizeof(name));
                if (!streq(name, "vdso_outer"))
                        continue;
                name_of(s, cs->pid, frames, j + 2, name, sizeof(name));
                if (streq(name, "main"))
                        whole++;
        }
        printf("%s: %zu samples, %zu in the vDSO, whole chain by CFI %zu\n", vdso_spin, c.n_samples, in_vdso, whole);
        assert_true(in_vdso >= MIN_INNER / 5);
        assert_true(whole * 10 >= in_vdso * 9);
finish:
        symbols_free(s);
        unwind_free(u);
        capture_done(&c);
}

/* The program interpreter (PT_INTERP) of an ELF64 file, into buf. */
static bool elf_interp(const char *path, char *buf, size_t len) {
        _cleanup_free_ char *text = NULL;
        struct strbuf sb = STRBUF_INIT;
        char chunk[BUFSIZ];
        size_t n, size;
        FILE *f = fopen(path, "re");
        const Elf64_Ehdr *eh;

        if (!f)
                return false;
        while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
                strbuf_append(&sb, chunk, n);
        fclose(f);
        text = strbuf_steal(&sb, &size);
        eh = (const Elf64_Ehdr *) text;
        if (size < sizeof(*eh) || eh->e_phoff > size || (size - eh->e_phoff) / sizeof(Elf64_Phdr) < eh->e_phnum)
                return false;
        for (unsigned i = 0; i < eh->e_phnum; i++) {
                const Elf64_Phdr *ph = (const Elf64_Phdr *) (text + eh->e_phoff) + i;

                if (ph->p_type == PT_INTERP && ph->p_offset < size && ph->p_filesz < len &&
                    size - ph->p_offset >= ph->p_filesz) {
                        memcpy(buf, text + ph->p_offset, ph->p_filesz);
                        buf[ph->p_filesz] = 0;
                        return true;
                }
        }
        return false;
}

static bool sh(const char *fmt, ...) _printf_(1, 2);
static bool sh(const char *fmt, ...) {
        _cleanup_free_ char *cmd = NULL;
        struct strbuf sb = STRBUF_INIT;
        va_list ap;

        va_start(ap, fmt);
        strbuf_vprintf(&sb, fmt, ap);
        va_end(ap);
        cmd = strbuf_steal(&sb, NULL);
        return system(cmd) == 0;
}

/*
 * A process in another root, as a container's: its files are not at the
 * paths its mappings name, here, but under /proc/PID/map_files and
 * /proc/PID/root while it runs.
 * spin-nofp chrooted with its loader and libc. /proc/PID/maps names them
 * from our root (proc(5) paths are the reader's), PERF_RECORD_MMAP2 from the
 * process's (kernel/events/core.c perf_event_mmap_event(): d_path() from
 * its root): the mappings are given as MMAP2 would, "/armprofd-test-spin",
 * a path that is nowhere here.
 */
static void test_proc_root(void **state) {
        char dir[] = "/tmp/test-unwind-root-XXXXXX", interp[PATH_MAX], libc[PATH_MAX] = "";
        char line[CAPTURE_MAPS_LINE_MAX];
        _cleanup_free_ char *script = NULL;
        struct strbuf sb = STRBUF_INIT;
        struct capture c;
        struct unwind *u;
        struct symbols *s;
        struct unwind_stats st;
        uint64_t frames[UNWIND_MAX_FRAMES];
        size_t inner = 0, whole = 0;
        FILE *f;

        if (geteuid() != 0) {
                snprintf(skip_reason, sizeof(skip_reason), "not root: chroot and perf_event_open need it");
                skip();
        }
        assert_true(elf_interp(spin_nofp, interp, sizeof(interp)));
        f = fopen("/proc/self/maps", "re");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f)) {
                char *p = strchr(line, '/');

                if (p && strstr(p, "/libc.so")) {
                        p[strcspn(p, "\n")] = 0;
                        snprintf(libc, sizeof(libc), "%s", p);
                }
        }
        fclose(f);
        assert_true(libc[0] == '/');
        assert_non_null(mkdtemp(dir));
        strbuf_printf(&sb, "%s/run.sh", dir);
        script = strbuf_steal(&sb, NULL);
        assert_true(sh("mkdir -p \"$(dirname %s%s)\" \"$(dirname %s%s)\" && cp -L %s %s%s && cp -L %s %s%s && "
                       "cp %s %s/armprofd-test-spin && "
                       "printf '#!/bin/sh\\nexec chroot %s /armprofd-test-spin \"$@\"\\n' > %s "
                       "&& chmod +x %s",
                       dir, interp, dir, libc, interp, dir, interp, libc, dir, libc,
                       spin_nofp, dir, dir, script, script));

        if (!capture_or_skip_running(script, true, &c)) {
                assert_true(sh("rm -rf %s", dir));
                skip();
        }
        assert_true(c.running > 0);
        u = unwind_new(NULL);
        s = symbols_new(NULL);
        for (size_t i = 0; i < c.n_maps; i++) {
                const struct capture_mapping *m = &c.maps[i];
                const char *in_root = m->filename;

                if (!m->exec)
                        continue;
                if (strncmp(m->filename, dir, strlen(dir)) == 0)
                        in_root = m->filename + strlen(dir);
                assert_int_equal(unwind_add_mapping(u, (uint32_t) c.pid, m->start, m->len, m->pgoff, in_root,
                                                    NULL, 0), 0);
                /* Names from the same files, for the check: by our path to them, not the unwinder's way in. */
                assert_int_equal(symbols_add_mapping(s, (uint32_t) c.pid, m->start, m->len, m->pgoff,
                                                     m->filename, NULL, 0), 0);
        }
        for (size_t i = 0; i < c.n_samples; i++) {
                const struct capture_sample *cs = &c.samples[i];
                struct unwind_input in = capture_input(cs);
                char leaf[FUNCTION_MAX];
                int n;

                if (cs->pid != (uint32_t) c.pid)
                        continue;
                n = unwind_user(u, &in, frames, ELEMENTSOF(frames));
                name_of(s, cs->pid, frames, 0, leaf, sizeof(leaf));
                if (!streq(leaf, "inner_spin"))
                        continue;
                inner++;
                if (is_chain(s, cs->pid, frames, (size_t) n))
                        whole++;
        }
        unwind_get_stats(u, &st);
        printf("chroot: %zu samples, %zu in inner_spin, whole chain by CFI %zu, module errors %" PRIu64 "\n",
               c.n_samples, inner, whole, st.module_errors);
        assert_true(inner >= MIN_INNER);
        assert_true(whole * 10 >= inner * 9);
        assert_int_equal(st.module_errors, getauxval(AT_SYSINFO_EHDR) ? 0 : 1);
        symbols_free(s);
        unwind_free(u);
        capture_done(&c);
        assert_true(sh("rm -rf %s", dir));
}

/*
 * A binary deleted while it runs (a package upgrade): its path names nothing,
 * the mapping still holds the file (/proc/PID/map_files).
 */
static void test_deleted(void **state) {
        char dir[] = "/tmp/test-unwind-deleted-XXXXXX", path[PATH_MAX];
        struct capture c;
        struct unwind *u;
        struct unwind_stats st;
        uint64_t frames[UNWIND_MAX_FRAMES];
        size_t sampled = 0, whole = 0;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/spin", dir);
        assert_true(sh("cp %s %s", spin_nofp, path));
        if (!capture_or_skip_running(path, true, &c)) {
                assert_true(sh("rm -rf %s", dir));
                skip();
        }
        assert_true(sh("rm -rf %s", dir));
        assert_int_equal(access(path, F_OK), -1);

        u = unwind_new(NULL);
        feed(&c, u, NULL);
        for (size_t i = 0; i < c.n_samples; i++) {
                const struct capture_sample *cs = &c.samples[i];
                struct unwind_input in = capture_input(cs);

                if (cs->pid != (uint32_t) c.pid)
                        continue;
                sampled++;
                /* inner_spin, outer_work, main, then libc's start and _start. */
                if (unwind_user(u, &in, frames, ELEMENTSOF(frames)) >= 6)
                        whole++;
        }
        unwind_get_stats(u, &st);
        assert_true(sampled >= MIN_INNER);
        assert_true(whole * 10 >= sampled * 9);
        assert_int_equal(st.module_errors, getauxval(AT_SYSINFO_EHDR) ? 0 : 1);
        unwind_free(u);
        capture_done(&c);
}

/* New mappings after the first sample: reported again, the files already reported are not reopened. */
static void test_remap(void **state) {
        struct capture c;
        struct unwind *u;
        struct unwind_stats st;
        uint64_t frames[UNWIND_MAX_FRAMES];
        size_t i;
        int n0, n1;

        if (!capture_or_skip(spin_nofp, &c))
                skip();
        assert_true(c.n_samples > 0);
        u = unwind_new(NULL);
        feed(&c, u, NULL);
        for (i = 0; i < c.n_samples && c.samples[i].pid != (uint32_t) c.pid; i++)
                ;
        assert_true(i < c.n_samples);
        {
                const struct capture_sample *cs = &c.samples[i];
                struct unwind_input in = capture_input(cs);

                n0 = unwind_user(u, &in, frames, ELEMENTSOF(frames));
                /* A file the process does not map, far from everything: a dlopen(). */
                _cleanup_free_ char *other = realpath(spin_fp, NULL);

                assert_non_null(other);
                assert_int_equal(unwind_add_mapping(u, cs->pid, UINT64_C(0x100000000), 0x1000, 0,
                                                    other, NULL, 0), 0);
                n1 = unwind_user(u, &in, frames, ELEMENTSOF(frames));
                assert_int_equal(n0, n1);
                unwind_get_stats(u, &st);
                assert_int_equal(st.reports, 2);
                /* The same again, the process removed: it is forgotten, the pc alone. */
                unwind_remove_pid(u, cs->pid);
                assert_int_equal(unwind_user(u, &in, frames, ELEMENTSOF(frames)), 1);
        }
        unwind_free(u);
        capture_done(&c);
}

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_merge_fp),
                cmocka_unit_test(test_bad_args),
                cmocka_unit_test(test_bounds),
                cmocka_unit_test(test_vdso_in_hole),
                cmocka_unit_test(test_spin_nofp),
                cmocka_unit_test(test_spin_fp),
                cmocka_unit_test(test_spin_nopie),
                cmocka_unit_test(test_spin_lld),
                cmocka_unit_test(test_spin_debugframe),
                cmocka_unit_test(test_spin_nocfi),
                cmocka_unit_test(test_spin_fakefp),
                cmocka_unit_test(test_remap),
                cmocka_unit_test(test_build_id),
                cmocka_unit_test(test_many_processes),
                cmocka_unit_test(test_shared_cfi),
                cmocka_unit_test(test_vdso),
                cmocka_unit_test(test_proc_root),
                cmocka_unit_test(test_deleted),
                cmocka_unit_test(test_guards),
                cmocka_unit_test(test_garbage),
        };
        int r;

        if (argc != 10) {
                fprintf(stderr, "usage: %s SPIN-NOFP SPIN-FP VDSO-SPIN SPIN-NOPIE SPIN-LLD LLVM-SPIN "
                        "SPIN-DEBUGFRAME SPIN-NOCFI SPIN-FAKEFP\n", argv[0]);
                return 2;
        }
        spin_nofp = argv[1];
        spin_fp = argv[2];
        vdso_spin = argv[3];
        spin_nopie = argv[4];
        spin_lld = argv[5];
        llvm_spin = argv[6];
        spin_debugframe = argv[7];
        spin_nocfi = argv[8];
        spin_fakefp = argv[9];
        r = cmocka_run_group_tests(tests, NULL, NULL);
        if (r == 0 && skip_reason[0]) {
                printf("SKIP: %s: the tests that need it did not run; the others passed\n", skip_reason);
                return 77;
        }
        return r;
}
