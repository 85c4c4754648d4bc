/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "unwind.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/perf_event.h>
#if defined(__x86_64__) || defined(__aarch64__)
#include <asm/perf_regs.h>
#endif

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <gelf.h>
#include <libelf.h>

#include "cfi-expr.h"
#include "macro.h"
#include "strbuf.h"

/* MMAP2 carries at most a SHA-1 build id (perf_event_open(2), PERF_RECORD_MISC_MMAP_BUILD_ID). */
#define UNWIND_BUILD_ID_MAX 20
/* How proc(5) and PERF_RECORD_MMAP name the vDSO's mapping. */
#define VDSO_NAME "[vdso]"
/* The vDSO is a few pages; more is not one (bounds the copy of our own). */
#define VDSO_SIZE_MAX (UINT64_C(1) << 20)
/*
 * The perf registers a sample carries, by DWARF register number: CFI names
 * registers by their DWARF numbers, perf gives them in the bit order of its
 * own enum (arch/<arch>/include/uapi/asm/perf_regs.h).
 */
#if defined(__x86_64__)
/*
 * System V AMD64 psABI, "DWARF Register Number Mapping": 0..15 are rax, rdx,
 * rcx, rbx, rsi, rdi, rbp, rsp, r8..r15, and 16 the return address (rip).
 */
static const uint8_t dwarf_to_perf[] = {
        PERF_REG_X86_AX, PERF_REG_X86_DX, PERF_REG_X86_CX, PERF_REG_X86_BX,
        PERF_REG_X86_SI, PERF_REG_X86_DI, PERF_REG_X86_BP, PERF_REG_X86_SP,
        PERF_REG_X86_R8, PERF_REG_X86_R9, PERF_REG_X86_R10, PERF_REG_X86_R11,
        PERF_REG_X86_R12, PERF_REG_X86_R13, PERF_REG_X86_R14, PERF_REG_X86_R15,
        PERF_REG_X86_IP,
};
#define ARCH_PERF_PC    PERF_REG_X86_IP
#define ARCH_PERF_SP    PERF_REG_X86_SP
#define ARCH_DWARF_SP   7U
#define ARCH_DWARF_FP   6U      /* rbp */
#define ARCH_DWARF_RA   16U
#define ARCH_MACHINE    EM_X86_64
#define ARCH_SUPPORTED  1
#define ARCH_FRAMELESS_LEAF 0   /* call pushes the return address: every caller's sp is above */
#elif defined(__aarch64__)
/*
 * "DWARF for the Arm 64-bit Architecture" (AADWARF64), 4.1: x0..x30 are
 * 0..30, sp is 31; the pc has no DWARF number of its own (the return
 * address column is x30).
 */
static const uint8_t dwarf_to_perf[] = {
        PERF_REG_ARM64_X0, PERF_REG_ARM64_X1, PERF_REG_ARM64_X2, PERF_REG_ARM64_X3,
        PERF_REG_ARM64_X4, PERF_REG_ARM64_X5, PERF_REG_ARM64_X6, PERF_REG_ARM64_X7,
        PERF_REG_ARM64_X8, PERF_REG_ARM64_X9, PERF_REG_ARM64_X10, PERF_REG_ARM64_X11,
        PERF_REG_ARM64_X12, PERF_REG_ARM64_X13, PERF_REG_ARM64_X14, PERF_REG_ARM64_X15,
        PERF_REG_ARM64_X16, PERF_REG_ARM64_X17, PERF_REG_ARM64_X18, PERF_REG_ARM64_X19,
        PERF_REG_ARM64_X20, PERF_REG_ARM64_X21, PERF_REG_ARM64_X22, PERF_REG_ARM64_X23,
        PERF_REG_ARM64_X24, PERF_REG_ARM64_X25, PERF_REG_ARM64_X26, PERF_REG_ARM64_X27,
        PERF_REG_ARM64_X28, PERF_REG_ARM64_X29, PERF_REG_ARM64_LR, PERF_REG_ARM64_SP,
};
#define ARCH_PERF_PC    PERF_REG_ARM64_PC
#define ARCH_PERF_SP    PERF_REG_ARM64_SP
#define ARCH_DWARF_SP   31U
#define ARCH_DWARF_FP   29U     /* x29 */
#define ARCH_DWARF_RA   30U     /* x30, the link register */
#define ARCH_MACHINE    EM_AARCH64
#define ARCH_SUPPORTED  1
#define ARCH_FRAMELESS_LEAF 1   /* bl leaves sp alone: a leaf's caller may have its sp */
#else
#define ARCH_SUPPORTED  0
#define ARCH_MACHINE    EM_NONE
#define ARCH_NREGS      1U
#define ARCH_FRAMELESS_LEAF 0
#endif
#if ARCH_SUPPORTED
/* The registers a frame has, by DWARF number: those the sample carries. */
#define ARCH_NREGS      ELEMENTSOF(dwarf_to_perf)
#endif

struct mapping {
        uint64_t start, end, pgoff;     /* [start, end) maps the file from pgoff */
        char *filename;
        uint8_t build_id[UNWIND_BUILD_ID_MAX];
        size_t build_id_len;
        uint64_t seq;                   /* order of arrival: the oldest is evicted first */
        bool failed;                    /* its file could not be reported: not retried until remapped */
};

/*
 * An ELF file some process maps, read once for every process that maps it
 * (by device and inode: the same path may be another file in another mount
 * namespace): mapped by libelf, its descriptor closed, so that a module costs
 * no file descriptor; and its CFI, read once too. CFI is in the file's own
 * addresses, so one Dwarf_CFI serves every process whatever its load
 * address: what libdw keeps of it (each FDE it looked up, and every FDE
 * before one when it cannot use the file's .eh_frame_hdr, whose section
 * must come first for libdw 0.188's dwarf_getcfi_elf()) is paid once a
 * file, not once a process (a Dwfl per process paid megabytes each for
 * libLLVM).
 */
struct elf_file {
        dev_t dev;
        ino_t ino;
        Elf *elf;
        size_t refs;                    /* modules of our processes using it */
        uint8_t build_id[UNWIND_BUILD_ID_MAX];
        size_t build_id_len;            /* 0: none, or longer than MMAP2 carries */
        bool eh_read, debug_read;       /* eh_cfi, debug_cfi were looked for */
        Dwarf_CFI *eh_cfi;              /* .eh_frame (dwarf_getcfi_elf()), NULL: none */
        Dwarf *dwarf;                   /* for .debug_frame, where .eh_frame has no FDE */
        Dwarf_CFI *debug_cfi;           /* dwarf's (dwarf_getcfi()), NULL: none */
};

/* A file a process maps, where it runs: a module. */
struct module {
        char *name;                     /* the mapping's filename */
        uint64_t low, high;             /* [low, high): its segments in the process */
        uint64_t bias;                  /* the process's address of the file's vaddr 0 */
        struct elf_file *file;
        bool kept;                      /* seen again in the report under way */
};

struct proc {
        uint32_t pid;
        uint64_t last_used;
        struct mapping *maps;           /* sorted by start, disjoint */
        size_t n_maps, cap_maps;
        struct module *mods;
        size_t n_mods, cap_mods;
        bool dirty;                     /* mappings changed since the last report */
};

/* A frame's registers, by DWARF number. */
struct regs {
        uint64_t v[ARCH_NREGS];
        uint64_t known;                 /* bit r: v[r] holds the register's value */
};

/* The sample being unwound. */
struct walk {
        const struct unwind_input *in;
        const struct proc *proc;
        uint64_t sp;                    /* the sampled sp: the stack copy's address */
        bool stack_end, no_module, truncated;
        bool outermost;                 /* ended where the psABI ends a stack: nothing is beyond */
        uint64_t pac_mask;              /* the bits of a return address a PAC may take (pac_insn_mask()) */
};

struct unwind {
        struct unwind_limits limits;
        struct proc **procs;            /* sorted by pid */
        size_t n_procs;
        struct elf_file **files;
        size_t n_files, cap_files;
        uint64_t tick, seq;
        /*
         * Our own vDSO image, in a memfd: every 64-bit process of this kernel
         * maps the same one (vdso(7)), so its .eh_frame unwinds theirs.
         */
        int vdso_fd;
        uint64_t pac_mask;
        struct walk walk;
        bool last_whole;                /* the last walk's walk.outermost */
        struct unwind_stats stats;
};

static bool filename_is_file(const char *filename) {
        /* perf and proc(5) name anonymous and special mappings "//anon", "[heap]", "[vdso]"... */
        if (!filename)
                return false;
        return (filename[0] == '/' && filename[1] != '/') || streq(filename, VDSO_NAME);
}

/*
 * A memfd holding our vDSO (getauxval(AT_SYSINFO_EHDR), vdso(7)): its ELF
 * image from the header to the end of its section headers or segments,
 * whichever is further (the kernel's vdso images keep them in the mapping).
 */
static int vdso_memfd(void) {
        const uint8_t *image = (const uint8_t *) getauxval(AT_SYSINFO_EHDR);
        const Elf64_Ehdr *eh = (const Elf64_Ehdr *) image;
        uint64_t size;
        int fd;

        if (!image || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64)
                return -ENOENT;
        size = eh->e_shoff + (uint64_t) eh->e_shnum * eh->e_shentsize;
        for (unsigned i = 0; i < eh->e_phnum; i++) {
                const Elf64_Phdr *ph = (const Elf64_Phdr *) (image + eh->e_phoff + (uint64_t) i * eh->e_phentsize);

                if (ph->p_type == PT_LOAD)
                        size = MAX(size, ph->p_offset + ph->p_filesz);
        }
        if (size < sizeof(*eh) || size > VDSO_SIZE_MAX)
                return -EFBIG;
        fd = memfd_create("armprofd-vdso", MFD_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (write(fd, image, size) != (ssize_t) size) {
                safe_close(fd);
                return -EIO;
        }
        return fd;
}

/* ---- Processes: a sorted array, least recently used evicted ---- */

static void elf_file_unref(struct unwind *u, struct elf_file *f) {
        if (!f || --f->refs > 0)
                return;
        for (size_t i = 0; i < u->n_files; i++)
                if (u->files[i] == f) {
                        u->files[i] = u->files[--u->n_files];
                        break;
                }
        /* The CFI before the Dwarf and the Elf it was read from (dwarf_getcfi_elf(3), dwarf_getcfi(3)). */
        if (f->eh_cfi)
                dwarf_cfi_end(f->eh_cfi);
        if (f->dwarf)
                dwarf_end(f->dwarf);
        elf_end(f->elf);
        free(f);
}

static void module_done(struct unwind *u, struct module *mod) {
        free(mod->name);
        elf_file_unref(u, mod->file);
}

static void proc_free(struct unwind *u, struct proc *p) {
        if (!p)
                return;
        for (size_t i = 0; i < p->n_maps; i++)
                free(p->maps[i].filename);
        for (size_t i = 0; i < p->n_mods; i++)
                module_done(u, &p->mods[i]);
        free(p->maps);
        free(p->mods);
        free(p);
}

/* Index of pid in u->procs, or where it would go (*found false). */
static size_t proc_index(const struct unwind *u, uint32_t pid, bool *found) {
        size_t lo = 0, hi = u->n_procs;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (u->procs[mid]->pid < pid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *found = lo < u->n_procs && u->procs[lo]->pid == pid;
        return lo;
}

static struct proc *proc_get(struct unwind *u, uint32_t pid, bool create) {
        struct proc *p;
        bool found;
        size_t i = proc_index(u, pid, &found);

        if (found) {
                p = u->procs[i];
                p->last_used = ++u->tick;
                return p;
        }
        if (!create)
                return NULL;

        if (u->n_procs >= u->limits.max_pids) {
                size_t lru = 0;

                for (size_t j = 1; j < u->n_procs; j++)
                        if (u->procs[j]->last_used < u->procs[lru]->last_used)
                                lru = j;
                proc_free(u, u->procs[lru]);
                memmove(u->procs + lru, u->procs + lru + 1, (u->n_procs - lru - 1) * sizeof(u->procs[0]));
                u->n_procs--;
                u->stats.pid_evictions++;
                if (lru < i)
                        i--;
        }

        p = xcalloc(1, sizeof(*p));
        p->pid = pid;
        p->last_used = ++u->tick;
        memmove(u->procs + i + 1, u->procs + i, (u->n_procs - i) * sizeof(u->procs[0]));
        u->procs[i] = p;
        u->n_procs++;
        return p;
}

/*
 * arm64 pointer authentication (FEAT_PAuth; GCC and Clang's
 * -mbranch-protection=standard, pac-ret: paciasp signs x30 before a function
 * saves it, autiasp checks it before the return): a return address read from
 * the stack, or x30 sampled between a prologue's paciasp and its epilogue's
 * autiasp, carries a PAC in its upper bits, and no module contains it until
 * they are cleared. The kernel clears them in the frame-pointer callchains it
 * records (arch/arm64/kernel/perf_callchain.c, user_backtrace():
 * ptrauth_strip_insn_pac(), named ptrauth_strip_user_insn_pac() in later
 * kernels) with the user instruction PAC mask: GENMASK(54, vabits_actual)
 * (arch/arm64/include/asm/pointer_auth.h, ptrauth_user_pac_mask()), and in
 * later kernels bits 63:56 too where TCR_EL1.TBID0 gives the top byte of
 * instruction addresses to the PAC (asm/compiler.h,
 * ptrauth_user_insn_pac_mask());
 * debuggers get that mask from ptrace's NT_ARM_PAC_MASK
 * (arch/arm64/kernel/ptrace.c, pac_mask_get()). We cannot ptrace the
 * processes we profile, but every EL0 task of a kernel has the same one (one
 * vabits_actual, one TCR_EL1 configuration for TTBR0): XPACLRI, which clears
 * x30's PAC as the hardware defines it for EL0 addresses (bit 55 clear),
 * shows which bits those are here. It is in the hint space (HINT #7), a NOP
 * on a CPU without FEAT_PAuth: a mask of 0, nothing to clear.
 */
static uint64_t pac_insn_mask(void) {
#if defined(__aarch64__)
        const uint64_t probe = ~(UINT64_C(1) << 55);
        register uint64_t lr __asm__("x30") = probe;

        __asm__ volatile("hint #7" : "+r"(lr)); /* xpaclri */
        return probe & ~lr;
#else
        return 0;
#endif
}

struct unwind *unwind_new(const struct unwind_limits *l) {
        struct unwind *u = xcalloc(1, sizeof(*u));

        if (l)
                u->limits = *l;
        if (u->limits.max_pids == 0)
                u->limits.max_pids = UNWIND_MAX_PIDS;
        if (u->limits.max_mappings_per_pid == 0)
                u->limits.max_mappings_per_pid = UNWIND_MAX_MAPPINGS_PER_PID;
        if (u->limits.max_frames == 0)
                u->limits.max_frames = UNWIND_MAX_FRAMES;
        u->procs = xcalloc(u->limits.max_pids, sizeof(u->procs[0]));
        u->pac_mask = pac_insn_mask();

        elf_version(EV_CURRENT);
        /* Without it, pcs in the vDSO are in no module: the walk stops there. */
        u->vdso_fd = vdso_memfd();
        return u;
}

struct unwind *unwind_free(struct unwind *u) {
        if (!u)
                return NULL;
        for (size_t i = 0; i < u->n_procs; i++)
                proc_free(u, u->procs[i]);
        free(u->procs);
        assert(u->n_files == 0);
        free(u->files);
        safe_close(u->vdso_fd);
        free(u);
        return NULL;
}

void unwind_remove_pid(struct unwind *u, uint32_t pid) {
        bool found;
        size_t i = proc_index(u, pid, &found);

        if (!found)
                return;
        proc_free(u, u->procs[i]);
        memmove(u->procs + i, u->procs + i + 1, (u->n_procs - i - 1) * sizeof(u->procs[0]));
        u->n_procs--;
}

/* ---- Mappings ---- */

static void maps_insert_at(struct proc *p, size_t i, const struct mapping *m) {
        if (p->n_maps == p->cap_maps) {
                p->cap_maps = p->cap_maps ? 2 * p->cap_maps : 16;
                p->maps = xrealloc(p->maps, p->cap_maps * sizeof(p->maps[0]));
        }
        memmove(p->maps + i + 1, p->maps + i, (p->n_maps - i) * sizeof(p->maps[0]));
        p->maps[i] = *m;
        p->n_maps++;
}

static void maps_remove_at(struct proc *p, size_t i) {
        free(p->maps[i].filename);
        memmove(p->maps + i, p->maps + i + 1, (p->n_maps - i - 1) * sizeof(p->maps[0]));
        p->n_maps--;
}

/* Cut [start, end) out of p's mappings, as a new mmap(2) over them does. Returns whether anything was cut. */
static bool maps_cut(struct proc *p, uint64_t start, uint64_t end) {
        bool cut = false;

        for (size_t i = 0; i < p->n_maps;) {
                struct mapping *m = &p->maps[i];

                if (m->end <= start || m->start >= end) {
                        i++;
                        continue;
                }
                cut = true;
                if (m->start < start && m->end > end) {
                        /* The new one falls inside: the part above it is a mapping of its own. */
                        struct mapping right = *m;

                        right.pgoff += end - m->start;
                        right.start = end;
                        right.filename = xstrdup(m->filename);
                        m->end = start;
                        maps_insert_at(p, i + 1, &right);
                        i += 2;
                } else if (m->start < start) {
                        m->end = start;
                        i++;
                } else if (m->end > end) {
                        m->pgoff += end - m->start;
                        m->start = end;
                        i++;
                } else
                        maps_remove_at(p, i);
        }
        return cut;
}

int unwind_add_mapping(struct unwind *u, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
                       const char *filename, const uint8_t *build_id, size_t build_id_len) {
        struct mapping m = {};
        struct proc *p;
        bool cut, is_file;
        size_t i;

        if (len == 0 || start + len < start)
                return -EINVAL;
        if (build_id_len > UNWIND_BUILD_ID_MAX || (build_id_len > 0 && !build_id))
                return -EINVAL;

        p = proc_get(u, pid, true);
        cut = maps_cut(p, start, start + len);
        is_file = filename_is_file(filename);
        /* A cut inside a mapping makes two of it: the bound holds after the cut too. */
        while (p->n_maps + is_file > u->limits.max_mappings_per_pid) {
                size_t oldest = 0;

                for (size_t j = 1; j < p->n_maps; j++)
                        if (p->maps[j].seq < p->maps[oldest].seq)
                                oldest = j;
                maps_remove_at(p, oldest);
                u->stats.mapping_evictions++;
        }
        if (!is_file) {
                /* A hole: what it replaced is gone, nothing is added. */
                p->dirty |= cut;
                return 0;
        }

        m.start = start;
        m.end = start + len;
        m.pgoff = pgoff;
        m.filename = xstrdup(filename);
        if (build_id_len > 0)
                memcpy(m.build_id, build_id, build_id_len);
        m.build_id_len = build_id_len;
        m.seq = ++u->seq;
        for (i = 0; i < p->n_maps && p->maps[i].start < m.start; i++)
                ;
        maps_insert_at(p, i, &m);
        p->dirty = true;
        return 0;
}

/* ---- A process's files: its modules ---- */

/*
 * The file a mapping of pid maps: while the process lives, the mapping's own
 * file through /proc/PID/map_files/START-END (proc(5): the very file, even
 * deleted or replaced since by an upgrade, even in another mount namespace);
 * else the file at its path; else the same path under /proc/PID/root (a
 * container's file).
 */
static int open_mapped_file(uint32_t pid, const struct mapping *m) {
        char path[PATH_MAX];
        int fd;

        snprintf(path, sizeof(path), "/proc/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64, pid, m->start, m->end);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
                return fd;
        fd = open(m->filename, O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
                return fd;
        if (snprintf(path, sizeof(path), "/proc/%" PRIu32 "/root%s", pid, m->filename) >= (int) sizeof(path))
                return -ENAMETOOLONG;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        return fd >= 0 ? fd : -errno;
}

/*
 * The load bias of the file of mapping m: what to add to its p_vaddr to get
 * the address it runs at. m maps file offsets [pgoff, pgoff + len) at start;
 * the PT_LOAD segment holding them puts offset o at p_vaddr + o - p_offset
 * (ELF gABI, "Program Header"; perf's map__map_ip()).
 */
static int mapping_bias(Elf *elf, const struct mapping *m, uint64_t *ret) {
        GElf_Ehdr ehdr;
        size_t phnum;
        bool found = false;
        GElf_Phdr best = {};

        if (!gelf_getehdr(elf, &ehdr))
                return -EBADMSG;
        if (ehdr.e_type == ET_EXEC) {
                *ret = 0;
                return 0;
        }
        if (ehdr.e_type != ET_DYN)
                return -EBADMSG;
        if (elf_getphdrnum(elf, &phnum) < 0)
                return -EBADMSG;
        for (size_t i = 0; i < phnum; i++) {
                GElf_Phdr ph;

                if (!gelf_getphdr(elf, (int) i, &ph) || ph.p_type != PT_LOAD)
                        continue;
                /* The mapping's file range [pgoff, pgoff + len) meets [p_offset, p_offset + p_filesz). */
                if (ph.p_offset >= m->pgoff + (m->end - m->start) || m->pgoff >= ph.p_offset + ph.p_filesz)
                        continue;
                if (!found || (!(best.p_flags & PF_X) && (ph.p_flags & PF_X)))
                        best = ph;
                found = true;
        }
        if (!found)
                return -ENOENT;
        *ret = m->start - m->pgoff + best.p_offset - best.p_vaddr;
        return 0;
}

/*
 * The ELF file open as fd, from the cache or read now. Only ELF64 files of
 * our machine are kept: the registers are this architecture's.
 */
static int elf_file_get(struct unwind *u, int fd, struct elf_file **ret) {
        struct stat st;
        struct elf_file *f;
        GElf_Ehdr ehdr;
        const void *bid;
        ssize_t n;
        Elf *elf;

        if (fstat(fd, &st) < 0)
                return -errno;
        for (size_t i = 0; i < u->n_files; i++)
                if (u->files[i]->dev == st.st_dev && u->files[i]->ino == st.st_ino) {
                        *ret = u->files[i];
                        return 0;
                }

        elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (!elf)
                return -EBADMSG;
        if (elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64 || !gelf_getehdr(elf, &ehdr) ||
            ehdr.e_machine != ARCH_MACHINE ||
            /* All of it in memory (mapped, or read where mmap failed), then the descriptor is let go (as FDDONE). */
            elf_cntl(elf, ELF_C_FDREAD) < 0) {
                elf_end(elf);
                return -EBADMSG;
        }

        f = xcalloc(1, sizeof(*f));
        f->dev = st.st_dev;
        f->ino = st.st_ino;
        f->elf = elf;
        n = dwelf_elf_gnu_build_id(elf, &bid);
        if (n > 0 && n <= UNWIND_BUILD_ID_MAX) {
                memcpy(f->build_id, bid, (size_t) n);
                f->build_id_len = (size_t) n;
        }
        if (u->n_files == u->cap_files) {
                u->cap_files = u->cap_files ? 2 * u->cap_files : 16;
                u->files = xrealloc(u->files, u->cap_files * sizeof(u->files[0]));
        }
        u->files[u->n_files++] = f;
        *ret = f;
        return 0;
}

/*
 * Where the module of a file loaded with bias spans: from its first PT_LOAD's
 * p_vaddr rounded down to its alignment (where the loader maps it) to the
 * end of the last one.
 */
static int elf_file_range(Elf *elf, uint64_t bias, uint64_t *ret_low, uint64_t *ret_high) {
        uint64_t low = 0, high = 0;
        bool first = true;
        size_t phnum;

        if (elf_getphdrnum(elf, &phnum) < 0)
                return -EBADMSG;
        for (size_t i = 0; i < phnum; i++) {
                GElf_Phdr ph;

                if (!gelf_getphdr(elf, (int) i, &ph) || ph.p_type != PT_LOAD)
                        continue;
                if (first) {
                        low = ph.p_vaddr & -(ph.p_align ? ph.p_align : 1);
                        first = false;
                }
                high = MAX(high, ph.p_vaddr + ph.p_memsz);
        }
        if (first || high <= low)
                return -EBADMSG;
        *ret_low = bias + low;
        *ret_high = bias + high;
        return 0;
}

/* The file of m as a new module of p. */
static int module_report_new(struct unwind *u, struct proc *p, struct mapping *m) {
        _cleanup_close_ int fd = -1;
        struct elf_file *f = NULL;
        uint64_t bias, low, high, page;
        int r;

        if (streq(m->filename, VDSO_NAME)) {
                if (u->vdso_fd < 0)
                        return -ENOENT;
                fd = fcntl(u->vdso_fd, F_DUPFD_CLOEXEC, 3);
                if (fd < 0)
                        return -errno;
        } else {
                fd = open_mapped_file(p->pid, m);
                if (fd < 0)
                        return fd;
        }
        r = elf_file_get(u, fd, &f);
        if (r < 0)
                return r;
        f->refs++;      /* the module's, or dropped below: an unused file is not kept */
        /* Another build's CFI would unwind the wrong code: no module rather than a wrong stack. */
        r = -ESTALE;
        if (m->build_id_len > 0 &&
            (f->build_id_len != m->build_id_len || memcmp(f->build_id, m->build_id, m->build_id_len) != 0))
                goto fail;
        r = mapping_bias(f->elf, m, &bias);
        if (r < 0)
                goto fail;
        r = elf_file_range(f->elf, bias, &low, &high);
        if (r < 0)
                goto fail;
        /*
         * A bias that does not put the mapping inside the file's segments (as
         * mmap(2) rounds them to pages) is wrong: do not trust it.
         */
        page = (uint64_t) sysconf(_SC_PAGESIZE);
        r = -EBADMSG;
        if (m->start < (low & ~(page - 1)) || m->end > ((high + page - 1) & ~(page - 1)))
                goto fail;

        if (p->n_mods == p->cap_mods) {
                p->cap_mods = p->cap_mods ? 2 * p->cap_mods : 8;
                p->mods = xrealloc(p->mods, p->cap_mods * sizeof(p->mods[0]));
        }
        p->mods[p->n_mods++] = (struct module) {
                .name = xstrdup(m->filename),
                .low = low,
                .high = high,
                .bias = bias,
                .file = f,
                .kept = true,
        };
        return 0;

fail:
        elf_file_unref(u, f);
        return r;
}

static struct module *module_covering(struct proc *p, const struct mapping *m) {
        for (size_t i = 0; i < p->n_mods; i++)
                if (streq(p->mods[i].name, m->filename) && p->mods[i].low <= m->start && m->end <= p->mods[i].high)
                        return &p->mods[i];
        return NULL;
}

/* The process's modules anew from its mappings: a module still mapped is kept with its file. */
static void proc_report(struct unwind *u, struct proc *p) {
        size_t n_old = p->n_mods, kept = 0;

        p->dirty = false;
        u->stats.reports++;
        for (size_t i = 0; i < p->n_mods; i++)
                p->mods[i].kept = false;
        for (size_t i = 0; i < p->n_maps; i++) {
                struct mapping *m = &p->maps[i];
                struct module *mod;

                if (m->failed)
                        continue;
                mod = module_covering(p, m);
                if (mod) {
                        mod->kept = true;
                        continue;
                }
                if (module_report_new(u, p, m) < 0) {
                        m->failed = true;
                        u->stats.module_errors++;
                }
        }
        /* Those of the old ones no mapping holds any more go; the new ones (after n_old) stay. */
        for (size_t i = 0; i < p->n_mods; i++) {
                if (i >= n_old || p->mods[i].kept)
                        p->mods[kept++] = p->mods[i];
                else
                        module_done(u, &p->mods[i]);
        }
        p->n_mods = kept;
}

/* ---- The walk ---- */

#if ARCH_SUPPORTED
/* The mapping that covers addr (p->maps is sorted by start and disjoint), or NULL. */
static const struct mapping *mapping_at(const struct proc *p, uint64_t addr) {
        size_t lo = 0, hi = p->n_maps;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (addr < p->maps[mid].start)
                        hi = mid;
                else if (addr >= p->maps[mid].end)
                        lo = mid + 1;
                else
                        return &p->maps[mid];
        }
        return NULL;
}

/*
 * The module whose file is at addr. A module spans its file's segments and
 * the gaps between them, and a gap may hold another mapping: Debian's arm64
 * kernel maps the vDSO in the hole between ld.so's text and data (seen in
 * the arm64 guest of tests/arm64vm), so a pc of the vDSO is in ld.so's span
 * too. Where a reported mapping (a file's, or the vDSO) covers addr, only
 * the module of that mapping's file is it; where none does, the span
 * (anonymous mappings are not kept: they only cut the files' ones).
 */
static const struct module *module_at(const struct proc *p, uint64_t addr) {
        const struct mapping *m = mapping_at(p, addr);

        for (size_t i = 0; i < p->n_mods; i++)
                if (p->mods[i].low <= addr && addr < p->mods[i].high &&
                    (!m || (m->filename && streq(p->mods[i].name, m->filename))))
                        return &p->mods[i];
        return NULL;
}

static bool perf_reg(const struct unwind_input *in, unsigned reg, uint64_t *ret) {
        size_t i;

        if (reg >= 64 || !(in->regs_mask & (UINT64_C(1) << reg)))
                return false;
        i = (size_t) __builtin_popcountll(in->regs_mask & ((UINT64_C(1) << reg) - 1));
        if (i >= in->nr_regs)
                return false;
        *ret = in->regs[i];
        return true;
}

static bool reg_get(const struct regs *r, uint64_t regno, uint64_t *ret) {
        if (regno >= ARCH_NREGS || !(r->known & (UINT64_C(1) << regno)))
                return false;
        *ret = r->v[regno];
        return true;
}

static void reg_set(struct regs *r, unsigned regno, uint64_t v) {
        r->v[regno] = v;
        r->known |= UINT64_C(1) << regno;
}

/* Memory at addr of a module's file, where a PT_LOAD segment holds it (CFI expressions may read code or data). */
static bool module_read(const struct proc *p, uint64_t addr, uint64_t *ret) {
        const struct module *mod = module_at(p, addr);
        const char *raw;
        size_t raw_size, phnum;
        uint64_t vaddr;

        if (!mod || elf_getphdrnum(mod->file->elf, &phnum) < 0)
                return false;
        raw = elf_rawfile(mod->file->elf, &raw_size);
        if (!raw)
                return false;
        vaddr = addr - mod->bias;
        for (size_t i = 0; i < phnum; i++) {
                GElf_Phdr ph;
                uint64_t off;

                if (!gelf_getphdr(mod->file->elf, (int) i, &ph) || ph.p_type != PT_LOAD)
                        continue;
                if (vaddr < ph.p_vaddr || vaddr - ph.p_vaddr >= ph.p_filesz ||
                    ph.p_filesz - (vaddr - ph.p_vaddr) < sizeof(*ret))
                        continue;
                off = ph.p_offset + (vaddr - ph.p_vaddr);
                if (off > raw_size || raw_size - off < sizeof(*ret))
                        return false;
                memcpy(ret, raw + off, sizeof(*ret));
                return true;
        }
        return false;
}

/* The word at addr: from the stack copy, else from a module's file; nothing else of the process is at hand. */
static bool memory_read(struct walk *w, uint64_t addr, uint64_t *ret) {
        uint64_t off = addr - w->sp;

        /* The stack copy: stack_len bytes at the sampled sp (perf_event_open(2), PERF_SAMPLE_STACK_USER). */
        if (addr >= w->sp && off < w->in->stack_len && w->in->stack_len - off >= sizeof(*ret)) {
                memcpy(ret, w->in->stack + off, sizeof(*ret));
                return true;
        }
        if (module_read(w->proc, addr, ret))
                return true;
        /* Above the copy, in no file: the stack went on beyond what the kernel copied. */
        if (addr >= w->sp && off + sizeof(*ret) > w->in->stack_len)
                w->stack_end = true;
        return false;
}

/* The word at addr for a CFI expression (cfi-expr.h): memory_read() of the walk. */
static bool expr_read(void *userdata, uint64_t addr, uint64_t *ret) {
        return memory_read(userdata, addr, ret);
}

static bool expr_eval(struct walk *w, const struct regs *r, uint64_t cfa, uint64_t bias, const Dwarf_Op *ops,
                      size_t nops, uint64_t *ret) {
        const struct cfi_expr_regs regs = { .v = r->v, .n = ARCH_NREGS, .known = r->known };

        return cfi_expr_eval(ops, nops, &regs, cfa, bias, expr_read, w, ret);
}

/*
 * The CFI frame of a pc of mod, from the file's .eh_frame, else its
 * .debug_frame (each read the first time a walk needs it, then kept with
 * the file: the DWARF of a file whose .eh_frame covers its code is never
 * opened). NULL when neither has an FDE for it; free() it.
 */
static Dwarf_Frame *cfi_frame(const struct module *mod, uint64_t pc) {
        struct elf_file *f = mod->file;
        Dwarf_Frame *frame;

        if (!f->eh_read) {
                f->eh_read = true;
                f->eh_cfi = dwarf_getcfi_elf(f->elf);
        }
        if (f->eh_cfi && dwarf_cfi_addrframe(f->eh_cfi, pc - mod->bias, &frame) == 0)
                return frame;
        if (!f->debug_read) {
                f->debug_read = true;
                /* A file without DWARF has no Dwarf, and no .debug_frame. */
                f->dwarf = dwarf_begin_elf(f->elf, DWARF_C_READ, NULL);
                if (f->dwarf)
                        f->debug_cfi = dwarf_getcfi(f->dwarf);
        }
        if (f->debug_cfi && dwarf_cfi_addrframe(f->debug_cfi, pc - mod->bias, &frame) == 0)
                return frame;
        return NULL;
}

/*
 * A step by the frame pointer, for a pc of a module that has no CFI for it
 * (Go's binaries have none; a PLT entry may have none): the frame record
 * the x86-64 psABI's and AAPCS64's frame-pointer convention pushes, the
 * caller's frame pointer at [fp] and the return address at [fp + 8], the
 * caller's sp above them, as libdwfl's backends do where CFI is missing
 * (elfutils backends/x86_64_unwind.c, aarch64_unwind.c). The sampled frame
 * of arm64 is not popped so: a leaf keeps its return address in x30 with
 * no frame record of its own, so [fp + 8] would skip its caller.
 */
static bool fp_step(struct walk *w, const struct regs *r, bool initial, uint64_t *cfa, struct regs *ret_regs,
                    uint64_t *ret_pc) {
        struct regs caller = {};
        uint64_t fp, prev_fp, ra;

#if defined(__aarch64__)
        if (initial)
                return false;
#endif
        if (!reg_get(r, ARCH_DWARF_FP, &fp) || fp == 0 || !memory_read(w, fp + 8, &ra))
                return false;
        /* The sp after the frame record: a CFA the CFI steps' monotony holds to. */
        if (*cfa && fp + 16 <= *cfa)
                return false;
        if (memory_read(w, fp, &prev_fp))
                reg_set(&caller, ARCH_DWARF_FP, prev_fp);
        reg_set(&caller, ARCH_DWARF_SP, fp + 16);
        /* A frame record's return address is signed as a CFI-saved one is (pac_insn_mask()). */
        ra &= ~w->pac_mask;
        reg_set(&caller, ARCH_DWARF_RA, ra);
        *cfa = fp + 16;
        *ret_regs = caller;
        *ret_pc = ra;
        return true;
}

/*
 * A pc where it was (sampled, or interrupted by a signal) in arm64's vDSO,
 * which has no CFI (Debian's 6.1 kernel links it without .eh_frame): its
 * functions (arch/arm64/kernel/vdso/vgettimeofday.c, the generic
 * lib/vdso/gettimeofday.c inlined) are leaves that keep no frame, so the
 * return address is x30 (signed by the kernel's pac-ret: paciasp at
 * __kernel_clock_gettime's entry, its PAC cleared) and the caller's sp is
 * ours. elfutils' aarch64 backend does so for the initial frame of any
 * code without CFI, its sp unmoved (backends/aarch64_unwind.c,
 * aarch64_unwind(): "The initial frame is special"); here only the vDSO,
 * known to be leaves: elsewhere a stale x30 would make up a frame. The caller's x30 is left unknown: its own CFI says
 * where it saved it. False elsewhere, and on other architectures (a call
 * pushes the return address on x86-64, where the CFI of every pc says so).
 */
static bool vdso_leaf_step(struct walk *w, const struct module *mod, const struct regs *r, uint64_t *cfa,
                           struct regs *ret_regs, uint64_t *ret_pc) {
#if defined(__aarch64__)
        struct regs caller = {};
        uint64_t lr, sp;

        if (!streq(mod->name, VDSO_NAME) || !reg_get(r, ARCH_DWARF_RA, &lr) || !reg_get(r, ARCH_DWARF_SP, &sp))
                return false;
        for (unsigned regno = 0; regno < ARCH_NREGS; regno++) {
                uint64_t v;

                if (regno != ARCH_DWARF_RA && reg_get(r, regno, &v))
                        reg_set(&caller, regno, v);
        }
        *cfa = sp;
        *ret_regs = caller;
        *ret_pc = lr & ~w->pac_mask;
        return true;
#else
        return false;
#endif
}

/*
 * One step up the stack (DWARF 5, 6.4.4 "Call Frame Information Example"):
 * from the callee's registers `r`, at pc, the caller's registers, its pc
 * (the return address column's value) in *ret_pc, and whether the callee is
 * a signal frame (its caller's pc is then the interrupted one, not after a
 * call). `activation`: pc is where the callee is (the sampled pc, or a pc a
 * signal interrupted), not a return address (which points after the call,
 * so its CFI row is that of pc - 1). *cfa is the callee's CFA on entry (0
 * for the sampled frame), then the caller's: each must be above the last.
 * Where the module has no CFI for pc, a frame-pointer step (fp_step()).
 * False where the walk ends: a pc in no module, no CFA, the return address
 * undefined (the outermost frame: w->outermost) or not recovered.
 */
static bool step(struct walk *w, const struct regs *r, uint64_t pc, bool activation, uint64_t *cfa,
                 struct regs *ret_regs, uint64_t *ret_pc, bool *ret_signal) {
        uint64_t lookup = activation ? pc : pc - 1, new_cfa, ra_value = 0;
        const struct module *mod = module_at(w->proc, lookup);
        struct regs caller = {};
        Dwarf_Frame *frame;
        Dwarf_Op *ops;
        size_t nops;
        bool signal = false, ra_known = false, ra_undefined = false;
        int ra;

        if (!mod)
                return false;
        frame = cfi_frame(mod, lookup);
        if (!frame && activation && vdso_leaf_step(w, mod, r, cfa, ret_regs, ret_pc)) {
                *ret_signal = false;
                return true;
        }
        if (!frame) {
                if (!fp_step(w, r, *cfa == 0, cfa, ret_regs, ret_pc))
                        return false;
                *ret_signal = false;
                return true;
        }
        ra = dwarf_frame_info(frame, NULL, NULL, &signal);
        if (ra < 0 || dwarf_frame_cfa(frame, &ops, &nops) != 0 ||
            !expr_eval(w, r, 0, mod->bias, ops, nops, &new_cfa) || new_cfa == 0 || (*cfa && new_cfa <= *cfa)) {
                free(frame);
                return false;
        }
        for (unsigned regno = 0; regno < ARCH_NREGS; regno++) {
                Dwarf_Op ops_mem[3];
                uint64_t v;

                if (dwarf_frame_register(frame, (int) regno, ops_mem, &ops, &nops) != 0)
                        continue;
                if (nops == 0) {
                        /* ops_mem: undefined (call-clobbered); NULL: the same value as the callee's. */
                        if (ops == NULL && reg_get(r, regno, &v))
                                reg_set(&caller, regno, v);
                        ra_undefined |= ops != NULL && (int) regno == ra;
                } else if (expr_eval(w, r, new_cfa, mod->bias, ops, nops, &v))
                        reg_set(&caller, regno, v);
        }
        /* aarch64's return address column is x30, in the registers; a column beyond them is not one we have. */
        if ((unsigned) ra < ARCH_NREGS)
                ra_known = reg_get(&caller, (unsigned) ra, &ra_value);
        free(frame);
        if (!ra_known) {
                /*
                 * The return address undefined is how CFI marks the outermost
                 * frame (DWARF 5 6.4.4; glibc's _start and clone3 say
                 * cfi_undefined of rip, x30). Never by default: elfutils'
                 * x86_64_abi_cfi() and aarch64_abi_cfi() give the return
                 * address column the same-value rule.
                 */
                w->outermost = ra_undefined;
                return false;
        }
        /*
         * A signed return address (pac_insn_mask()): its PAC cleared, so that
         * it is a pc in its module; the caller's x30 keeps it as saved.
         */
        ra_value &= ~w->pac_mask;
        *cfa = new_cfa;
        *ret_regs = caller;
        *ret_pc = ra_value;
        *ret_signal = signal;
        return true;
}

/* The walk from the sampled frame: ret[0] is its pc already; returns the frames in ret. */
static size_t walk_frames(struct walk *w, const struct unwind_input *in, uint64_t pc, uint64_t sp, uint64_t *ret,
                          size_t max) {
        struct regs r = {};
        uint64_t cfa = 0, last_sp = sp;
        bool activation = true;
        size_t n = 1;

        /* A register the sample lacks stays unknown: a rule that needs it fails, not guesses. */
        for (unsigned i = 0; i < ARCH_NREGS; i++) {
                uint64_t v;

                if (perf_reg(in, dwarf_to_perf[i], &v))
                        reg_set(&r, i, v);
        }
        /* Code outside every module has no CFI. */
        if (!module_at(w->proc, pc)) {
                w->no_module = true;
                return n;
        }
        for (;;) {
                struct regs caller;
                uint64_t caller_pc, caller_sp;
                bool signal;

                if (!step(w, &r, pc, activation, &cfa, &caller, &caller_pc, &signal))
                        break;
                /* A zero return address ends a stack (the x86-64 psABI's and AAPCS64's outermost frame). */
                if (caller_pc == 0) {
                        w->outermost = true;
                        break;
                }
                /*
                 * Each caller's frame is above its callee's (the stack grows
                 * down on both): an sp that did not move up means CFI applied
                 * to garbage, which could otherwise loop until max_frames.
                 * Except on arm64 from where the pc was (sampled, or where a
                 * signal interrupted it): bl pushes nothing (AAPCS64: the
                 * return address is in x30), so a leaf that keeps no frame
                 * (CFA = sp) has its caller at the same sp. The step after it
                 * is from a return address, whose frame must have moved: it
                 * cannot repeat.
                 */
                if (reg_get(&caller, ARCH_DWARF_SP, &caller_sp)) {
                        if (caller_sp < last_sp || (caller_sp == last_sp && !(ARCH_FRAMELESS_LEAF && activation)))
                                break;
                        last_sp = caller_sp;
                }
                if (n >= max) {
                        w->truncated = true;
                        break;
                }
                ret[n++] = caller_pc;
                /*
                 * A return address into no module (JIT code): no CFI to go on
                 * with. pc - 1 is in the call itself; the pc a signal
                 * interrupted is where it was.
                 */
                if (!module_at(w->proc, signal ? caller_pc : caller_pc - 1)) {
                        w->no_module = true;
                        break;
                }
                r = caller;
                pc = caller_pc;
                activation = signal;
        }
        return n;
}
#endif

uint64_t unwind_pac_mask(const struct unwind *u) {
        return u->pac_mask;
}

uint64_t unwind_regs_mask(void) {
#if ARCH_SUPPORTED
        uint64_t mask = UINT64_C(1) << ARCH_PERF_PC;

        for (size_t i = 0; i < ELEMENTSOF(dwarf_to_perf); i++)
                mask |= UINT64_C(1) << dwarf_to_perf[i];
        return mask;
#else
        return 0;
#endif
}

int unwind_user(struct unwind *u, const struct unwind_input *in, uint64_t *ret, size_t max) {
#if ARCH_SUPPORTED
        struct proc *p;
        uint64_t pc, sp;
        size_t n = 1;

        u->last_whole = false;
        if (!in->regs || in->regs_abi == PERF_SAMPLE_REGS_ABI_NONE)
                return -EINVAL;
        if (in->regs_abi != PERF_SAMPLE_REGS_ABI_64)
                return -EOPNOTSUPP;
        if ((size_t) __builtin_popcountll(in->regs_mask) != in->nr_regs)
                return -EINVAL;
        if (!perf_reg(in, ARCH_PERF_PC, &pc) || !perf_reg(in, ARCH_PERF_SP, &sp))
                return -EINVAL;
        if (!in->stack && in->stack_len > 0)
                return -EINVAL;
        if (max == 0)
                return 0;

        u->stats.samples++;
        ret[0] = pc;
        u->walk = (struct walk) { .in = in, .sp = sp, .pac_mask = u->pac_mask };

        p = proc_get(u, in->pid, false);
        if (p && p->dirty)
                proc_report(u, p);
        if (p && p->n_mods > 0) {
                u->walk.proc = p;
                n = walk_frames(&u->walk, in, pc, sp, ret, MIN(max, u->limits.max_frames));
        } else
                u->walk.no_module = true;

        if (u->walk.truncated)
                u->stats.truncated++;
        else if (u->walk.no_module)
                u->stats.no_module++;
        else if (u->walk.stack_end)
                u->stats.stack_end++;
        if (n <= 1)
                u->stats.failed++;
        u->stats.frames += n;
        u->last_whole = u->walk.outermost;
        u->stats.whole += u->last_whole;
        u->walk = (struct walk) {};
        return (int) n;
#else
        return -EOPNOTSUPP;
#endif
}

/* ---- Merging with the kernel's frame-pointer chain ---- */

/* memcpy(3) wants valid pointers even for no bytes, and an empty chain may come as NULL. */
static void copy_frames(uint64_t *ret, const uint64_t *src, size_t n) {
        if (n > 0)
                memcpy(ret, src, n * sizeof(ret[0]));
}

bool unwind_last_whole(const struct unwind *u) {
        return u->last_whole;
}

size_t unwind_merge_fp(const uint64_t *cfi, size_t n_cfi, bool cfi_whole, const uint64_t *fp, size_t n_fp,
                       uint64_t *ret, size_t max) {
        size_t occurrence = 0, j, n;

        if (cfi_whole && n_cfi > 0) {
                n = MIN(n_cfi, max);
                copy_frames(ret, cfi, n);
                return n;
        }
        if (n_cfi == 0) {
                n = MIN(n_fp, max);
                copy_frames(ret, fp, n);
                return n;
        }

        /* Which occurrence of the last CFI frame's address it is: a recursive return address repeats. */
        for (size_t i = 0; i < n_cfi; i++)
                if (cfi[i] == cfi[n_cfi - 1])
                        occurrence++;
        for (j = 0; j < n_fp; j++)
                if (fp[j] == cfi[n_cfi - 1] && --occurrence == 0)
                        break;

        if (j < n_fp) {
                n = MIN(n_cfi, max);
                copy_frames(ret, cfi, n);
                for (j++; j < n_fp && n < max; j++)
                        ret[n++] = fp[j];
                return n;
        }

        if (n_fp > n_cfi) {
                n = MIN(n_fp, max);
                copy_frames(ret, fp, n);
                return n;
        }
        n = MIN(n_cfi, max);
        copy_frames(ret, cfi, n);
        return n;
}

void unwind_get_stats(const struct unwind *u, struct unwind_stats *ret) {
        *ret = u->stats;
        ret->pids = u->n_procs;
}
