/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * collectors/sampler/sampler-source.c on this machine's real kernel: the
 * source runs on an sd_event loop with a sink that records what it gets,
 * while spin (main -> outer_work -> inner_spin) burns CPU pinned to one CPU.
 * What the source hands on is checked against what the test finds itself:
 * the child's CPU time from /proc/PID/stat, the functions' address ranges
 * from the ELF symbol table (libelf) placed by the executable mapping the
 * sink got, the child's [stack] mapping and cgroup from /proc, the cgroup's
 * id from a stat(2) of its directory (kernfs inode numbers are cgroup ids).
 *
 *   test-sampler-source SPIN_FP SPIN_NOFP
 *
 * Needs root (CPU-wide events); exits 77 without, or when the kernel
 * refuses a cpu-clock event.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <libelf.h>
#include <systemd/sd-event.h>

#include "cpulist.h"
#include "macro.h"
#include "sampler-source.h"
#include "source.h"
#include "task-map.h"

#define SPIN_SECONDS "2.5"
#define MAX_CHAIN 256
#define MAX_SAMPLES 4096
#define X86_REG_SP 7    /* regs[] index of PERF_REG_X86_SP in the default mask (sampler-source.h) */
#define X86_REG_IP 8

static const char *spin_fp, *spin_nofp;

struct range {
        uint64_t lo, hi;        /* file virtual addresses, then run-time ones */
};

struct got_sample {
        uint32_t cpu, pid, tid;
        uint64_t ip, period, cgroup_id;
        uint64_t chain[MAX_CHAIN];
        size_t n_chain;
        uint64_t regs_abi, regs_mask, sp, reg_ip;
        size_t nr_regs, stack_len;
        uint8_t *stack;
};

struct got_mapping {
        uint64_t start, len, pgoff;
        char filename[PATH_MAX];
        uint8_t build_id[20];
        size_t build_id_len;
};

struct recorder {
        uint32_t child;
        struct got_sample *samples;
        size_t n_samples, n_all;
        struct got_mapping exe;
        bool has_exe;
        const char *exe_path;
        char comm_event[TASK_MAP_COMM_LEN];
        uint64_t cgroup_event_id;
        char cgroup_event_path[PATH_MAX];
};

static void on_samples(void *userdata, const struct source_sample *s, size_t n) {
        struct recorder *r = userdata;

        for (size_t i = 0; i < n; i++) {
                struct got_sample *g;

                r->n_all++;
                if (s[i].pid != r->child || r->n_samples == MAX_SAMPLES)
                        continue;
                g = &r->samples[r->n_samples++];
                *g = (struct got_sample) {
                        .cpu = s[i].cpu, .pid = s[i].pid, .tid = s[i].tid, .ip = s[i].ip, .period = s[i].period,
                        .cgroup_id = s[i].cgroup_id, .n_chain = MIN(s[i].nr_callchain, (size_t) MAX_CHAIN),
                        .regs_abi = s[i].regs_abi, .regs_mask = s[i].regs_mask, .nr_regs = s[i].nr_regs,
                        .stack_len = s[i].stack_len,
                };
                memcpy(g->chain, s[i].callchain, g->n_chain * 8);
                if (s[i].nr_regs > X86_REG_IP) {
                        g->sp = s[i].regs[X86_REG_SP];
                        g->reg_ip = s[i].regs[X86_REG_IP];
                }
                if (s[i].stack_len > 0) {
                        g->stack = malloc(s[i].stack_len);
                        assert_non_null(g->stack);
                        memcpy(g->stack, s[i].stack, s[i].stack_len);
                }
        }
}

static void on_mapping(void *userdata, const struct source_mapping *m) {
        struct recorder *r = userdata;
        char real[PATH_MAX];

        if (m->pid != r->child || !realpath(r->exe_path, real) || !streq(m->filename, real))
                return;
        /* The executable segment: the one whose placement gives inner_spin an address. */
        r->exe = (struct got_mapping) { .start = m->start, .len = m->len, .pgoff = m->pgoff,
                                        .build_id_len = MIN(m->build_id_len, sizeof(r->exe.build_id)) };
        if (r->exe.build_id_len > 0)
                memcpy(r->exe.build_id, m->build_id, r->exe.build_id_len);
        snprintf(r->exe.filename, sizeof(r->exe.filename), "%s", m->filename);
        r->has_exe = true;
}

static void on_task(void *userdata, const struct source_task *t) {
        struct recorder *r = userdata;

        if (t->pid != r->child)
                return;
        if (t->kind == SOURCE_TASK_COMM && t->comm)
                snprintf(r->comm_event, sizeof(r->comm_event), "%s", t->comm);
        if (t->kind == SOURCE_TASK_CGROUP) {
                r->cgroup_event_id = t->cgroup_id;
                snprintf(r->cgroup_event_path, sizeof(r->cgroup_event_path), "%s", t->cgroup_path);
        }
}

/* The symbol's [st_value, st_value + st_size) and the PT_LOAD that holds it (vaddr - offset). */
static void elf_symbol(const char *path, const char *name, struct range *ret, uint64_t *ret_vaddr_minus_off) {
        Elf_Scn *scn = NULL;
        size_t nph;
        bool found = false;
        Elf *elf;
        int fd;

        assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        elf = elf_begin(fd, ELF_C_READ, NULL);
        assert_non_null(elf);
        while ((scn = elf_nextscn(elf, scn)) && !found) {
                GElf_Shdr sh;
                Elf_Data *d;

                if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
                        continue;
                d = elf_getdata(scn, NULL);
                for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
                        GElf_Sym sym;
                        const char *n;

                        if (!gelf_getsym(d, (int) i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC)
                                continue;
                        n = elf_strptr(elf, sh.sh_link, sym.st_name);
                        if (n && streq(n, name)) {
                                *ret = (struct range) { sym.st_value, sym.st_value + sym.st_size };
                                found = true;
                                break;
                        }
                }
        }
        assert_true(found);
        assert_int_equal(elf_getphdrnum(elf, &nph), 0);
        for (size_t i = 0; i < nph; i++) {
                GElf_Phdr ph;

                if (gelf_getphdr(elf, (int) i, &ph) && ph.p_type == PT_LOAD && ret->lo >= ph.p_vaddr &&
                    ret->lo < ph.p_vaddr + ph.p_memsz)
                        *ret_vaddr_minus_off = ph.p_vaddr - ph.p_offset;
        }
        elf_end(elf);
        close(fd);
}

/* The NT_GNU_BUILD_ID note of an ELF file, from its .note.gnu.build-id section; 0 when none. */
static size_t elf_build_id(const char *path, uint8_t *buf, size_t len) {
        Elf_Scn *scn = NULL;
        size_t shstrndx, n = 0;
        Elf *elf;
        int fd;

        assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        elf = elf_begin(fd, ELF_C_READ, NULL);
        assert_non_null(elf);
        assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
        while ((scn = elf_nextscn(elf, scn)) && n == 0) {
                GElf_Shdr sh;
                GElf_Nhdr nh;
                size_t name_off, desc_off;
                const char *name;
                Elf_Data *d;

                if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
                        continue;
                name = elf_strptr(elf, shstrndx, sh.sh_name);
                if (!name || !streq(name, ".note.gnu.build-id"))
                        continue;
                d = elf_getdata(scn, NULL);
                if (d && gelf_getnote(d, 0, &nh, &name_off, &desc_off) > 0 && nh.n_type == NT_GNU_BUILD_ID &&
                    nh.n_descsz <= len) {
                        memcpy(buf, (const uint8_t *) d->d_buf + desc_off, nh.n_descsz);
                        n = nh.n_descsz;
                }
        }
        elf_end(elf);
        close(fd);
        return n;
}

/* A function's run-time range: file vaddr -> file offset (its PT_LOAD) -> the mapping that holds it. */
static struct range runtime_range(const struct recorder *r, const char *path, const char *name) {
        struct range f = {};
        uint64_t vmo = 0, off;

        elf_symbol(path, name, &f, &vmo);
        off = f.lo - vmo;
        assert_true(off >= r->exe.pgoff && off < r->exe.pgoff + r->exe.len);
        return (struct range) { r->exe.start + (off - r->exe.pgoff), r->exe.start + (off - r->exe.pgoff) + (f.hi - f.lo) };
}

/* Whether the function starts by linking a frame: x86-64 push %rbp (after an endbr64), arm64 stp x29, x30. */
static bool leaf_links_frame(const char *path, const char *name) {
        struct range f = {};
        uint64_t vmo = 0;
        uint8_t code[8];
        size_t at = 0;
        FILE *fp;

        elf_symbol(path, name, &f, &vmo);
        fp = fopen(path, "re");
        assert_non_null(fp);
        assert_int_equal(fseek(fp, (long) (f.lo - vmo), SEEK_SET), 0);
        assert_int_equal(fread(code, 1, sizeof(code), fp), sizeof(code));
        fclose(fp);
#if defined(__x86_64__)
        if (memcmp(code, "\xf3\x0f\x1e\xfa", 4) == 0)
                at = 4;
        return code[at] == 0x55;
#elif defined(__aarch64__)
        /* stp x29, x30, [sp, #-N]!: 0xa9800000 | ... with Rt 29, Rt2 30. */
        {
                uint32_t insn;

                memcpy(&insn, code, 4);
                return (insn & 0xffc07fff) == 0xa9807bfd;
        }
#else
        return true;
#endif
}

static bool in(const struct range *x, uint64_t a) {
        return a >= x->lo && a < x->hi;
}

/* utime + stime of a child that exited but is not reaped (waitid(WNOWAIT)), in nanoseconds. */
static uint64_t cpu_ns_of(pid_t pid) {
        char path[PATH_MAX], buf[2048], *p;
        unsigned long utime, stime;
        FILE *f;
        size_t n;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        f = fopen(path, "re");
        assert_non_null(f);
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        /* proc(5): fields 14 and 15 after "pid (comm) " (field 3 on). */
        p = strrchr(buf, ')');
        assert_non_null(p);
        assert_int_equal(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime), 2);
        return (uint64_t) (utime + stime) * NSEC_PER_SEC / (uint64_t) sysconf(_SC_CLK_TCK);
}

/* The [stack] mapping of pid, from /proc/PID/maps. */
static struct range stack_of(pid_t pid) {
        char path[PATH_MAX], line[PATH_MAX + 128];
        struct range s = {};
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/maps", (int) pid);
        f = fopen(path, "re");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f))
                if (strstr(line, "[stack]"))
                        assert_int_equal(sscanf(line, "%" SCNx64 "-%" SCNx64, &s.lo, &s.hi), 2);
        fclose(f);
        assert_true(s.hi > s.lo);
        return s;
}

/*
 * A cgroup v2 directory of our own for the child: under the host's cgroup2
 * mount, or under one made here when the host has v1 only (the v2
 * hierarchy exists there too, without controllers). "" with the reason
 * printed when neither works; then the cgroup is not checked.
 */
struct test_cgroup {
        char mount[PATH_MAX];           /* the cgroup2 mount */
        bool mounted_here;
        char rel[PATH_MAX];             /* "/armprofd-test-sampler-PID" */
        char dir[PATH_MAX];
        uint64_t id;                    /* the directory's inode number: kernfs ids are cgroup ids */
};

static void cgroup_make(struct test_cgroup *cg) {
        char line[PATH_MAX + 256];
        struct statfs sfs;
        struct stat st;
        FILE *f;

        *cg = (struct test_cgroup) {};
        f = fopen("/proc/self/mountinfo", "re");
        assert_non_null(f);
        while (!cg->mount[0] && fgets(line, sizeof(line), f)) {
                char mnt[PATH_MAX];
                char *sep = strstr(line, " - ");

                if (sep && strncmp(sep + 3, "cgroup2 ", 8) == 0 &&
                    sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1)
                        snprintf(cg->mount, sizeof(cg->mount), "%s", mnt);
        }
        fclose(f);
        if (!cg->mount[0]) {
                snprintf(cg->mount, sizeof(cg->mount), "/tmp/armprofd-cg2-XXXXXX");
                assert_non_null(mkdtemp(cg->mount));
                if (mount("none", cg->mount, "cgroup2", 0, NULL) < 0) {
                        print_message("cgroup not checked: cannot mount cgroup2: %s\n", strerror(errno));
                        rmdir(cg->mount);
                        cg->mount[0] = '\0';
                        return;
                }
                cg->mounted_here = true;
        }
        assert_int_equal(statfs(cg->mount, &sfs), 0);
        assert_true(sfs.f_type == CGROUP2_SUPER_MAGIC);
        snprintf(cg->rel, sizeof(cg->rel), "/armprofd-test-sampler-%d", (int) getpid());
        snprintf(cg->dir, sizeof(cg->dir), "%s%s", cg->mount, cg->rel);
        if (mkdir(cg->dir, 0755) < 0) {
                print_message("cgroup not checked: cannot create %s: %s\n", cg->dir, strerror(errno));
                cg->dir[0] = '\0';
                return;
        }
        assert_int_equal(stat(cg->dir, &st), 0);
        cg->id = (uint64_t) st.st_ino;
}

static void cgroup_remove(struct test_cgroup *cg) {
        if (cg->dir[0])
                assert_int_equal(rmdir(cg->dir), 0);
        if (cg->mounted_here) {
                assert_int_equal(umount(cg->mount), 0);
                assert_int_equal(rmdir(cg->mount), 0);
        }
}

/* In the child, before exec: into the cgroup (cgroup-v2.rst "Processes": write 0 to cgroup.procs). */
static void cgroup_enter(const struct test_cgroup *cg) {
        char path[PATH_MAX];
        int fd;

        if (!cg->dir[0])
                return;
        snprintf(path, sizeof(path), "%s/cgroup.procs", cg->dir);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "0", 1) != 1)
                _exit(126);
        close(fd);
}

struct run {
        struct recorder rec;
        struct task_map *tasks;
        uint64_t cpu_ns;
        unsigned cpu;
        struct range stack;
        struct test_cgroup cg;
        struct source_status status;
};

static void run_spin(const char *exe, enum sampler_unwind unwind, struct run *run) {
        struct source_sink sink = {
                .userdata = &run->rec,
                .samples = on_samples,
                .mapping = on_mapping,
                .task = on_task,
        };
        struct sampler_options o = { .unwind = unwind };
        struct source *src = NULL;
        sd_event *e = NULL;
        char cpu_arg[DECIMAL_STR_MAX(unsigned)], line[64];
        int fds[2], k;
        pid_t pid;
        FILE *out;

        run->cpu = sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 1 : 0;
        /* Before the source starts: it looks for the cgroup2 mount once. */
        cgroup_make(&run->cg);
        run->rec.samples = calloc(MAX_SAMPLES, sizeof(struct got_sample));
        assert_non_null(run->rec.samples);
        run->rec.exe_path = exe;
        assert_int_equal(task_map_new(&run->tasks), 0);
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(sampler_source_new(&o, &sink, run->tasks, &src), 0);
        assert_int_equal(source_start(src, e, NULL), 0);

        assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
        snprintf(cpu_arg, sizeof(cpu_arg), "%u", run->cpu);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                cgroup_enter(&run->cg);
                dup2(fds[1], STDOUT_FILENO);
                execl(exe, exe, SPIN_SECONDS, cpu_arg, (char *) NULL);
                _exit(127);
        }
        run->rec.child = (uint32_t) pid;
        close(fds[1]);
        out = fdopen(fds[0], "r");
        assert_non_null(out);
        assert_non_null(fgets(line, sizeof(line), out));
        assert_true(strncmp(line, "ready ", 6) == 0);
        run->stack = stack_of(pid);

        for (;;) {
                siginfo_t si = {};

                k = sd_event_run(e, 100 * USEC_PER_MSEC);
                assert_true(k >= 0);
                assert_int_equal(waitid(P_PID, (id_t) pid, &si, WEXITED | WNOHANG | WNOWAIT), 0);
                if (si.si_pid == pid)
                        break;
        }
        run->cpu_ns = cpu_ns_of(pid);
        assert_int_equal(waitpid(pid, &k, 0), pid);
        assert_true(WIFEXITED(k) && WEXITSTATUS(k) == 0);
        fclose(out);
        /* What the rings still hold. */
        while (source_drain(src, SIZE_MAX) > 0)
                ;
        source_status(src, &run->status);
        source_free(src);
        sd_event_unref(e);
        cgroup_remove(&run->cg);
}

static void run_done(struct run *run) {
        for (size_t i = 0; i < run->rec.n_samples; i++)
                free(run->rec.samples[i].stack);
        free(run->rec.samples);
        task_map_free(run->tasks);
        source_status_done(&run->status);
}

/* What both runs must show: the samples of the child, on its CPU, as many as its CPU time says. */
static void check_common(struct run *run, const char *exe, const char *comm) {
        const struct task_info *ti;
        uint64_t period = NSEC_PER_SEC / SAMPLER_DEFAULT_FREQUENCY, sum = 0;
        double expected = (double) run->cpu_ns / (double) period, bound;
        char real[PATH_MAX];

        print_message("%s: %zu samples of the child (%zu in all), CPU time %.3f s, %.1f expected\n", exe,
                      run->rec.n_samples, run->rec.n_all, (double) run->cpu_ns / 1e9, expected);
        assert_int_equal(run->status.state, SOURCE_RUNNING);
        assert_string_equal(run->status.kind, "sampler");
        assert_int_equal(run->status.sample_period, period);
        assert_true(run->rec.n_samples > 0);
        for (size_t i = 0; i < run->rec.n_samples; i++) {
                assert_int_equal(run->rec.samples[i].cpu, run->cpu);
                /* cpu-clock's period is fixed at NSEC_PER_SEC / freq (kernel/events/core.c
                 * perf_swevent_init_hrtimer()): computed here, not by the source. */
                assert_int_equal(run->rec.samples[i].period, period);
                sum += run->rec.samples[i].period;
        }
        /*
         * The samples land on the child at the timer's ticks on its CPU while
         * it runs there: as many as its CPU time holds periods. When other
         * tasks share the CPU (this machine is shared), whether a tick finds
         * the child is a draw: three standard deviations of a Poisson count,
         * and two for the ends of the run.
         */
        bound = 3.0 * sqrt(expected) + 2.0;
        assert_true((double) run->rec.n_samples >= expected - bound);
        assert_true((double) run->rec.n_samples <= expected + bound);
        assert_true(sum == run->rec.n_samples * period);
        /* The process's name reached the task map and the sink (COMM with exec). */
        ti = task_map_get(run->tasks, run->rec.child);
        assert_non_null(ti);
        assert_string_equal(ti->comm, comm);
        assert_string_equal(run->rec.comm_event, comm);
        /* Its executable's MMAP2. */
        assert_true(run->rec.has_exe);
        assert_non_null(realpath(exe, real));
        assert_string_equal(run->rec.exe.filename, real);
        /* With attr.build_id (Linux 5.12+) the MMAP2 carries the file's build id: the note's. */
        if (run->rec.exe.build_id_len > 0) {
                uint8_t bid[20];

                assert_int_equal(elf_build_id(real, bid, sizeof(bid)), run->rec.exe.build_id_len);
                assert_memory_equal(bid, run->rec.exe.build_id, run->rec.exe.build_id_len);
                print_message("the MMAP2 carried the build id of %s\n", real);
        } else
                print_message("the MMAP2 carried no build id (a kernel before 5.12, or the page was not in "
                              "memory)\n");
        /* Its cgroup, the one made here: the kernel's samples carry its id, the source's event its path. */
        if (run->cg.dir[0]) {
                assert_string_equal(run->rec.cgroup_event_path, run->cg.rel);
                assert_int_equal(run->rec.cgroup_event_id, run->cg.id);
                for (size_t i = 0; i < run->rec.n_samples; i++)
                        assert_int_equal(run->rec.samples[i].cgroup_id, run->cg.id);
                print_message("cgroup %s (id %" PRIu64 ") on every sample and in the CGROUP event\n", run->cg.rel,
                              run->cg.id);
        }
}

/* The user part of a callchain: the entries after PERF_CONTEXT_USER. */
static size_t user_chain(const struct got_sample *g, const uint64_t **ret) {
        for (size_t i = 0; i < g->n_chain; i++)
                if (g->chain[i] == (uint64_t) PERF_CONTEXT_USER) {
                        *ret = g->chain + i + 1;
                        return g->n_chain - i - 1;
                }
        return 0;
}

static void test_frame_pointers(void **state) {
        struct run run = {};
        struct range inner, outer, mainr;
        size_t in_inner = 0, whole = 0;
        bool leaf_frame;

        run_spin(spin_fp, SAMPLER_UNWIND_FP, &run);
        check_common(&run, spin_fp, "spin-fp");
        inner = runtime_range(&run.rec, spin_fp, "inner_spin");
        outer = runtime_range(&run.rec, spin_fp, "outer_work");
        mainr = runtime_range(&run.rec, spin_fp, "main");
        /*
         * A frame-pointer walk finds outer_work only when inner_spin, a leaf,
         * links its own frame; GCC 12 does not for a leaf that needs no stack
         * even with -mno-omit-leaf-frame-pointer, and then outer_work's
         * return address sits at the stack pointer, off the chain (the
         * kernel's walk, arch/x86/events/core.c perf_callchain_user(), follows
         * the frame pointer only). What the walk must give is decided from
         * the code itself.
         */
        leaf_frame = leaf_links_frame(spin_fp, "inner_spin");
        if (!leaf_frame)
                print_message("inner_spin links no frame (the compiler omitted it): outer_work is not expected\n");
        for (size_t i = 0; i < run.rec.n_samples; i++) {
                const struct got_sample *g = &run.rec.samples[i];
                const uint64_t *u = NULL;
                size_t n = user_chain(g, &u), at_outer = SIZE_MAX, at_main = SIZE_MAX;

                /* Frame pointers only: no registers, no stack copy. */
                assert_int_equal(g->nr_regs, 0);
                assert_int_equal(g->stack_len, 0);
                if (!in(&inner, g->ip))
                        continue;
                in_inner++;
                /* The sampled IP first, then return addresses: outer_work's, then main's. */
                assert_true(n >= 1);
                assert_int_equal(u[0], g->ip);
                for (size_t j = 1; j < n; j++) {
                        if (at_outer == SIZE_MAX && in(&outer, u[j]))
                                at_outer = j;
                        if (at_main == SIZE_MAX && in(&mainr, u[j]))
                                at_main = j;
                }
                whole += at_main != SIZE_MAX && (!leaf_frame || (at_outer != SIZE_MAX && at_outer < at_main));
        }
        print_message("%zu samples in inner_spin, %zu with %smain\n", in_inner, whole,
                      leaf_frame ? "outer_work then " : "");
        /* Most of the burn is inner_spin's; the chain may miss a frame only in a prologue. */
        assert_true(in_inner * 2 >= run.rec.n_samples);
        assert_true(whole * 10 >= in_inner * 9);
        run_done(&run);
}

static bool stack_holds(const struct got_sample *g, const struct range *r) {
        for (size_t off = 0; off + 8 <= g->stack_len; off += 8) {
                uint64_t w;

                memcpy(&w, g->stack + off, 8);
                if (in(r, w))
                        return true;
        }
        return false;
}

static void test_dwarf(void **state) {
        struct run run = {};
        struct range inner, outer, mainr;
        size_t in_inner = 0, whole = 0, user = 0;

        run_spin(spin_nofp, SAMPLER_UNWIND_DWARF, &run);
        check_common(&run, spin_nofp, "spin-nofp");
        inner = runtime_range(&run.rec, spin_nofp, "inner_spin");
        outer = runtime_range(&run.rec, spin_nofp, "outer_work");
        mainr = runtime_range(&run.rec, spin_nofp, "main");
        for (size_t i = 0; i < run.rec.n_samples; i++) {
                const struct got_sample *g = &run.rec.samples[i];
                const uint64_t *u = NULL;

                /* A user process: its registers and a copy of its stack, from the stack pointer up. */
                assert_int_equal(g->regs_abi, PERF_SAMPLE_REGS_ABI_64);
                assert_int_equal(g->regs_mask, sampler_default_regs_mask());
                assert_int_equal(g->nr_regs, __builtin_popcountll(sampler_default_regs_mask()));
                assert_true(g->stack_len > 0);
                assert_true(g->stack_len <= SAMPLER_DEFAULT_STACK_BYTES);
                assert_true(g->sp >= run.stack.lo && g->sp < run.stack.hi);
                /* Taken in user mode: the registers are the sample's own, IP included. */
                if (user_chain(g, &u) > 0 && g->chain[0] == (uint64_t) PERF_CONTEXT_USER) {
                        assert_int_equal(g->reg_ip, g->ip);
                        user++;
                }
                if (!in(&inner, g->ip))
                        continue;
                in_inner++;
                /* What an unwinder needs is in the copy: the return addresses into outer_work and main. */
                whole += stack_holds(g, &outer) && stack_holds(g, &mainr);
        }
        print_message("%zu user-mode samples, %zu in inner_spin, %zu with outer_work's and main's return "
                      "addresses in the stack copy\n", user, in_inner, whole);
        assert_true(user * 2 >= run.rec.n_samples);
        assert_true(in_inner * 2 >= run.rec.n_samples);
        assert_true(whole * 10 >= in_inner * 9);
        run_done(&run);
}

static const struct sampler_cpu_stats *cpu_stats(const struct source_status *st, uint32_t cpu) {
        for (size_t i = 0; i < st->n_sampler_cpus; i++)
                if (st->sampler_cpus[i].cpu == cpu)
                        return &st->sampler_cpus[i];
        return NULL;
}

/* Run the loop until every CPU of the status brought a sample more than in `before` (NULL: any). */
static void run_until_samples(sd_event *e, struct source *src, const struct source_status *before) {
        char last[512] = "";

        for (unsigned i = 0; i < 100; i++) {
                struct source_status st;
                bool all = true;
                size_t o = 0;

                assert_true(sd_event_run(e, 100 * USEC_PER_MSEC) >= 0);
                (void) source_drain(src, SIZE_MAX);
                source_status(src, &st);
                for (size_t c = 0; c < st.n_sampler_cpus; c++) {
                        const struct sampler_cpu_stats *b = before ? cpu_stats(before, st.sampler_cpus[c].cpu) : NULL;

                        if (streq(st.sampler_cpus[c].state, "active") &&
                            st.sampler_cpus[c].samples <= (b ? b->samples : 0))
                                all = false;
                        if (o < sizeof(last))
                                o += (size_t) snprintf(last + o, sizeof(last) - o, " cpu%" PRIu32 " %s %" PRIu64 " (%s)",
                                                       st.sampler_cpus[c].cpu, st.sampler_cpus[c].state,
                                                       st.sampler_cpus[c].samples, st.sampler_cpus[c].note);
                }
                source_status_done(&st);
                if (all)
                        return;
        }
        fail_msg("no samples on every active CPU after 100 turns of the loop:%s", last);
}

/* spin pinned to each CPU for `seconds`, so that every CPU has something to sample. */
static void busy_cpus(long n, pid_t *pids, const char *seconds) {
        for (long c = 0; c < n; c++) {
                char cpu[16];

                snprintf(cpu, sizeof(cpu), "%ld", c);
                pids[c] = fork();
                assert_true(pids[c] >= 0);
                if (pids[c] == 0) {
                        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

                        dup2(null, STDOUT_FILENO);
                        execl(spin_fp, spin_fp, seconds, cpu, (char *) NULL);
                        _exit(127);
                }
        }
}

static void busy_cpus_done(long n, const pid_t *pids) {
        for (long c = 0; c < n; c++) {
                (void) kill(pids[c], SIGKILL);
                (void) waitpid(pids[c], NULL, 0);
        }
}

/*
 * CPU hotplug as the collector reports it (cpus_changed): a CPU that goes
 * is closed and said offline, the others sample on; back, it samples again.
 * Each CPU runs spin meanwhile: an idle CPU in a tickless kernel may not take
 * cpu-clock samples for seconds (seen under ASan, one CPU busy with the test).
 */
static void test_hotplug_status(void **state) {
        struct source_sink sink = {};
        struct sampler_options o = { .unwind = SAMPLER_UNWIND_FP };
        struct source_status st, before;
        struct task_map *tasks = NULL;
        struct cpulist online = {}, fewer;
        struct source *src = NULL;
        sd_event *e = NULL;
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        pid_t *pids;

        if (n < 2) {
                print_message("one CPU: hotplug not tried\n");
                return;
        }
        pids = calloc((size_t) n, sizeof(pid_t));
        assert_non_null(pids);
        busy_cpus(n, pids, "30");
        assert_int_equal(task_map_new(&tasks), 0);
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(sampler_source_new(&o, &sink, tasks, &src), 0);
        assert_int_equal(source_start(src, e, NULL), 0);
        run_until_samples(e, src, NULL);
        source_status(src, &st);
        assert_int_equal(st.state, SOURCE_RUNNING);
        assert_int_equal(st.n_sampler_cpus, (size_t) n);
        for (size_t c = 0; c < st.n_sampler_cpus; c++) {
                assert_int_equal(st.sampler_cpus[c].cpu, c);
                assert_string_equal(st.sampler_cpus[c].state, "active");
                assert_true(st.sampler_cpus[c].samples > 0);
                assert_int_equal(st.sampler_cpus[c].bad_records, 0);
        }
        source_status_done(&st);

        for (long c = 0; c < n; c++)
                assert_int_equal(cpulist_add(&online, (unsigned) c), 0);
        fewer = online;
        cpulist_del(&fewer, 1);
        assert_int_equal(source_cpus_changed(src, &fewer), 0);
        source_status(src, &st);
        assert_string_equal(cpu_stats(&st, 1)->state, "offline");
        assert_string_equal(cpu_stats(&st, 1)->note, "offline");
        assert_string_equal(cpu_stats(&st, 0)->state, "active");
        source_status_done(&st);

        assert_int_equal(source_cpus_changed(src, &online), 0);
        source_status(src, &before);
        assert_string_equal(cpu_stats(&before, 1)->state, "active");
        assert_string_equal(cpu_stats(&before, 1)->note, "");
        run_until_samples(e, src, &before);
        source_status_done(&before);
        source_free(src);
        sd_event_unref(e);
        task_map_free(tasks);
        busy_cpus_done(n, pids);
        free(pids);
}

/* A hardware event on a machine without a PMU (this VM): off, saying why, not failed. */
static void test_no_such_event(void **state) {
        struct source_sink sink = {};
        struct sampler_options o = { .type = PERF_TYPE_HARDWARE, .config = PERF_COUNT_HW_CPU_CYCLES,
                                     .event_name = "cycles" };
        struct task_map *tasks = NULL;
        struct source *src = NULL;
        struct source_status st;
        sd_event *e = NULL;
        int k;

        assert_int_equal(task_map_new(&tasks), 0);
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(sampler_source_new(&o, &sink, tasks, &src), 0);
        k = source_start(src, e, NULL);
        source_status(src, &st);
        if (k == 0)
                print_message("this machine has a cycles event: nothing to check\n");
        else {
                print_message("cycles: %s: %s\n", source_state_to_string(st.state), st.reason);
                assert_true(k == -ENOENT || k == -EOPNOTSUPP);
                assert_int_equal(st.state, SOURCE_OFF);
                assert_non_null(strstr(st.reason, "no cycles event"));
                assert_true(st.n_sampler_cpus > 0);
                assert_string_equal(st.sampler_cpus[0].state, "failed");
                /* Periods of a hardware event are events, not nanoseconds: unknown. */
                assert_int_equal(st.sample_period, 0);
        }
        source_status_done(&st);
        source_free(src);
        sd_event_unref(e);
        task_map_free(tasks);
}

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_frame_pointers),
                cmocka_unit_test(test_dwarf),
                cmocka_unit_test(test_hotplug_status),
                cmocka_unit_test(test_no_such_event),
        };
        struct perf_event_attr a = {
                .size = sizeof(a),
                .type = PERF_TYPE_SOFTWARE,
                .config = PERF_COUNT_SW_CPU_CLOCK,
                .sample_freq = 19,
                .freq = 1,
                .disabled = 1,
        };
        long fd;

        if (argc != 3) {
                fprintf(stderr, "usage: %s SPIN_FP SPIN_NOFP\n", argv[0]);
                return 2;
        }
        spin_fp = argv[1];
        spin_nofp = argv[2];
        if (geteuid() != 0) {
                printf("skipped: CPU-wide sampling events need root\n");
                return 77;
        }
        fd = syscall(SYS_perf_event_open, &a, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
                printf("skipped: the kernel refuses a cpu-clock sampling event: %s\n", strerror(errno));
                return 77;
        }
        close((int) fd);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
