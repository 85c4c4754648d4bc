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

#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <libelf.h>

#include "macro.h"
#include "strbuf.h"

/* MMAP2 carries at most a SHA-1 build id (perf_event_open(2), PERF_RECORD_MISC_MMAP_BUILD_ID). */
#define UNWIND_BUILD_ID_MAX 20
/* How proc(5) and PERF_RECORD_MMAP name the vDSO's mapping. */
#define VDSO_NAME "[vdso]"
/* The vDSO is a few pages; more is not one (bounds the copy of our own). */
#define VDSO_SIZE_MAX (UINT64_C(1) << 20)

/*
 * The perf registers a sample carries, by DWARF register number: the frame
 * API takes the initial registers by their DWARF numbers
 * (dwfl_thread_state_registers()), perf gives them in the bit order of its
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
#define ARCH_MACHINE    EM_X86_64
#define ARCH_SUPPORTED  1
#elif defined(__aarch64__)
/*
 * "DWARF for the Arm 64-bit Architecture" (AADWARF64), 4.1: x0..x30 are
 * 0..30, sp is 31; the pc has no DWARF number of its own and is passed with
 * dwfl_thread_state_register_pc().
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
#define ARCH_MACHINE    EM_AARCH64
#define ARCH_SUPPORTED  1
#else
#define ARCH_SUPPORTED  0
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
 * no file descriptor. Each module's Elf is a reference to this one
 * (elf_begin(3) with a reference Elf).
 */
struct elf_file {
        dev_t dev;
        ino_t ino;
        Elf *elf;
        size_t refs;                    /* modules of our processes using it */
        uint8_t build_id[UNWIND_BUILD_ID_MAX];
        size_t build_id_len;            /* 0: none, or longer than MMAP2 carries */
};

/* A file reported to the process's Dwfl: a module. */
struct module {
        char *name;                     /* the mapping's filename, the Dwfl module's name */
        uint64_t low, high;
        struct elf_file *file;
        bool kept;                      /* reported again in the report under way */
};

struct proc {
        uint32_t pid;
        uint64_t last_used;
        struct mapping *maps;           /* sorted by start, disjoint */
        size_t n_maps, cap_maps;
        struct module *mods;
        size_t n_mods, cap_mods;
        Dwfl *dwfl;                     /* NULL until its first sample */
        bool attached;                  /* dwfl_attach_state() done */
        bool dirty;                     /* mappings changed since the last report */
};

/* The sample being unwound: what the thread callbacks answer from. */
struct walk {
        const struct unwind_input *in;
        Dwfl *dwfl;
        uint64_t sp;                    /* the sampled sp: the stack copy's address */
        uint64_t last_sp;
        uint64_t *ret;
        size_t n, max;
        bool started;                   /* the initial frame was seen */
        bool stack_end, no_module, truncated;
};

struct unwind {
        struct unwind_limits limits;
        struct proc **procs;            /* sorted by pid */
        size_t n_procs;
        struct elf_file **files;
        size_t n_files, cap_files;
        uint64_t tick, seq;
        /* The architecture for dwfl_attach_state(): an ELF header alone, so no module's Elf is needed. */
        Elf64_Ehdr arch_ehdr;
        Elf *arch_elf;
        /*
         * Our own vDSO image, in a memfd: every 64-bit process of this kernel
         * maps the same one (vdso(7)), so its .eh_frame unwinds theirs.
         */
        int vdso_fd;
        struct walk walk;
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
        /* The Dwfl first: its modules' references to our Elfs go with it. */
        if (p->dwfl)
                dwfl_end(p->dwfl);
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

        elf_version(EV_CURRENT);
#if ARCH_SUPPORTED
        memcpy(u->arch_ehdr.e_ident, ELFMAG, SELFMAG);
        u->arch_ehdr.e_ident[EI_CLASS] = ELFCLASS64;
        u->arch_ehdr.e_ident[EI_DATA] = ELFDATA2LSB;
        u->arch_ehdr.e_ident[EI_VERSION] = EV_CURRENT;
        u->arch_ehdr.e_type = ET_EXEC;
        u->arch_ehdr.e_machine = ARCH_MACHINE;
        u->arch_ehdr.e_version = EV_CURRENT;
        u->arch_ehdr.e_ehsize = sizeof(Elf64_Ehdr);
        u->arch_elf = elf_memory((char *) &u->arch_ehdr, sizeof(u->arch_ehdr));
#endif
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
        /* After every Dwfl: dwfl_attach_state(3) wants the Elf valid for a Dwfl's lifetime. */
        if (u->arch_elf)
                elf_end(u->arch_elf);
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

/* ---- Reporting a process's files to its Dwfl ---- */

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
 * our machine are kept: the frame API unwinds with one architecture.
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
            ehdr.e_machine != u->arch_ehdr.e_machine ||
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
 * p_vaddr rounded down to its alignment to the end of the last one. libdwfl
 * takes the module's bias as low minus that rounded p_vaddr
 * (dwfl_module_getdwarf.c, __libdwfl_getelf()), so low is chosen to make it
 * ours.
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

/* Report the file of m as a new module of p's Dwfl. */
static int module_report_new(struct unwind *u, struct proc *p, struct mapping *m) {
        _cleanup_close_ int fd = -1;
        struct elf_file *f = NULL;
        uint64_t bias, low, high, page;
        Dwfl_Module *mod;
        void **userdata;
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

        /* Its Elf comes from find_elf_shared() when libdw first needs it. */
        mod = dwfl_report_module(p->dwfl, m->filename, low, high);
        if (!mod || !dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL))
                goto fail;
        *userdata = f;

        if (p->n_mods == p->cap_mods) {
                p->cap_mods = p->cap_mods ? 2 * p->cap_mods : 8;
                p->mods = xrealloc(p->mods, p->cap_mods * sizeof(p->mods[0]));
        }
        p->mods[p->n_mods++] = (struct module) {
                .name = xstrdup(m->filename),
                .low = low,
                .high = high,
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

static int find_elf_shared(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                           char **file_name, Elf **elfp) {
        struct elf_file *f = *userdata;

        /*
         * A reference to the file's one Elf (elf_begin(3): a reference Elf
         * that is no archive is counted and returned), no descriptor: the
         * module ends its reference when it goes.
         */
        if (f)
                *elfp = elf_begin(-1, ELF_C_READ_MMAP, f->elf);
        return -1;
}

static int find_no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                             const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                             char **debuginfo_file_name) {
        /*
         * Unwinding needs .eh_frame, which the binary itself carries; looking
         * for detached debug files (or asking debuginfod, as the standard
         * callback may) would put file or network I/O on the sample path.
         */
        return -1;
}

static const Dwfl_Callbacks dwfl_callbacks = {
        .find_elf = find_elf_shared,
        .find_debuginfo = find_no_debuginfo,
        .section_address = dwfl_offline_section_address,
};

static const Dwfl_Thread_Callbacks thread_callbacks;

static void proc_report(struct unwind *u, struct proc *p) {
        size_t kept = 0;

        p->dirty = false;
        u->stats.reports++;
        if (!p->dwfl) {
                p->dwfl = dwfl_begin(&dwfl_callbacks);
                if (!p->dwfl)
                        return;
        }
        if (!p->attached && u->arch_elf)
                p->attached = dwfl_attach_state(p->dwfl, u->arch_elf, (pid_t) p->pid, &thread_callbacks, u);

        /*
         * Modules not reported again before dwfl_report_end() are dropped;
         * those reported again keep their Elf and CFI.
         */
        dwfl_report_begin(p->dwfl);
        for (size_t i = 0; i < p->n_mods; i++)
                p->mods[i].kept = false;
        for (size_t i = 0; i < p->n_maps; i++) {
                struct mapping *m = &p->maps[i];
                struct module *mod;

                if (m->failed)
                        continue;
                mod = module_covering(p, m);
                if (mod) {
                        if (!mod->kept && dwfl_report_module(p->dwfl, mod->name, mod->low, mod->high))
                                mod->kept = true;
                        continue;
                }
                if (module_report_new(u, p, m) < 0) {
                        m->failed = true;
                        u->stats.module_errors++;
                }
        }
        dwfl_report_end(p->dwfl, NULL, NULL);

        for (size_t i = 0; i < p->n_mods; i++) {
                if (p->mods[i].kept)
                        p->mods[kept++] = p->mods[i];
                else
                        module_done(u, &p->mods[i]);
        }
        p->n_mods = kept;
}

/* ---- The walk ---- */

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

static pid_t next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp) {
        struct unwind *u = dwfl_arg;

        /* One thread: the sample's. */
        if (*thread_argp)
                return 0;
        *thread_argp = u;
        return (pid_t) u->walk.in->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *dwfl_arg, void **thread_argp) {
        *thread_argp = dwfl_arg;
        return true;
}

/* Memory at addr of a module's file, where a PT_LOAD segment holds it (CFI expressions may read code or data). */
static bool module_read(Dwfl *dwfl, uint64_t addr, Dwarf_Word *result) {
        Dwfl_Module *mod;
        GElf_Addr bias;
        Elf *elf;
        const char *raw;
        size_t raw_size, phnum;
        uint64_t vaddr;

        mod = dwfl_addrmodule(dwfl, addr);
        if (!mod)
                return false;
        elf = dwfl_module_getelf(mod, &bias);
        if (!elf || elf_getphdrnum(elf, &phnum) < 0)
                return false;
        raw = elf_rawfile(elf, &raw_size);
        if (!raw)
                return false;
        vaddr = addr - bias;
        for (size_t i = 0; i < phnum; i++) {
                GElf_Phdr ph;
                uint64_t off;

                if (!gelf_getphdr(elf, (int) i, &ph) || ph.p_type != PT_LOAD)
                        continue;
                if (vaddr < ph.p_vaddr || vaddr - ph.p_vaddr >= ph.p_filesz ||
                    ph.p_filesz - (vaddr - ph.p_vaddr) < sizeof(*result))
                        continue;
                off = ph.p_offset + (vaddr - ph.p_vaddr);
                if (off > raw_size || raw_size - off < sizeof(*result))
                        return false;
                memcpy(result, raw + off, sizeof(*result));
                return true;
        }
        return false;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg) {
        struct unwind *u = dwfl_arg;
        struct walk *w = &u->walk;
        uint64_t off = addr - w->sp;

        /* The stack copy: stack_len bytes at the sampled sp (perf_event_open(2), PERF_SAMPLE_STACK_USER). */
        if (addr >= w->sp && off < w->in->stack_len && w->in->stack_len - off >= sizeof(*result)) {
                memcpy(result, w->in->stack + off, sizeof(*result));
                return true;
        }
        if (module_read(dwfl, addr, result))
                return true;
        /* Above the copy, in no file: the stack went on beyond what the kernel copied. */
        if (addr >= w->sp && off + sizeof(*result) > w->in->stack_len)
                w->stack_end = true;
        return false;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg) {
#if ARCH_SUPPORTED
        struct unwind *u = thread_arg;
        const struct unwind_input *in = u->walk.in;
        uint64_t pc;

        for (unsigned i = 0; i < ELEMENTSOF(dwarf_to_perf); i++) {
                Dwarf_Word val;
                uint64_t v;

                /* A register the sample lacks stays undefined: a rule that needs it fails, not guesses. */
                if (!perf_reg(in, dwarf_to_perf[i], &v))
                        continue;
                val = v;
                if (!dwfl_thread_state_registers(thread, (int) i, 1, &val))
                        return false;
        }
        if (!perf_reg(in, ARCH_PERF_PC, &pc))
                return false;
        dwfl_thread_state_register_pc(thread, pc);
        return true;
#else
        return false;
#endif
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
        .next_thread = next_thread,
        .get_thread = get_thread,
        .memory_read = memory_read,
        .set_initial_registers = set_initial_registers,
};

static int frame_callback(Dwfl_Frame *state, void *arg) {
        struct unwind *u = arg;
        struct walk *w = &u->walk;
        Dwarf_Addr pc;
        bool activation;
#if ARCH_SUPPORTED
        Dwarf_Word sp;
#endif

        if (!dwfl_frame_pc(state, &pc, &activation))
                return DWARF_CB_ABORT;

        if (!w->started) {
                /* The initial frame: the sampled pc, ret[0] already. Code outside every module has no CFI. */
                w->started = true;
                if (!dwfl_addrmodule(w->dwfl, pc)) {
                        w->no_module = true;
                        return DWARF_CB_ABORT;
                }
                return DWARF_CB_OK;
        }

        /* A zero return address ends a stack (the x86-64 psABI's and AAPCS64's outermost frame). */
        if (pc == 0)
                return DWARF_CB_ABORT;
#if ARCH_SUPPORTED
        /*
         * Each caller's frame is above its callee's (the stack grows down on
         * both): an sp that did not move up means CFI applied to garbage, which
         * could otherwise loop until max_frames.
         */
        if (dwfl_frame_reg(state, ARCH_DWARF_SP, &sp) == 0) {
                if (sp <= w->last_sp)
                        return DWARF_CB_ABORT;
                w->last_sp = sp;
        }
#endif
        if (w->n >= w->max) {
                w->truncated = true;
                return DWARF_CB_ABORT;
        }
        w->ret[w->n++] = pc;
        /*
         * A return address into no module (JIT code): no CFI to go on with.
         * pc - 1 is in the call itself; a frame interrupted by a signal
         * (activation) is at its pc.
         */
        if (!dwfl_addrmodule(w->dwfl, activation ? pc : pc - 1)) {
                w->no_module = true;
                return DWARF_CB_ABORT;
        }
        return DWARF_CB_OK;
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
        u->walk = (struct walk) {
                .in = in,
                .sp = sp,
                .last_sp = sp,
                .ret = ret,
                .n = 1,
                .max = MIN(max, u->limits.max_frames),
        };

        p = proc_get(u, in->pid, false);
        if (p && p->dirty)
                proc_report(u, p);
        if (p && p->attached && p->n_mods > 0) {
                u->walk.dwfl = p->dwfl;
                (void) dwfl_getthread_frames(p->dwfl, (pid_t) (in->tid ? in->tid : in->pid), frame_callback, u);
        } else
                u->walk.no_module = true;

        if (u->walk.truncated)
                u->stats.truncated++;
        else if (u->walk.no_module)
                u->stats.no_module++;
        else if (u->walk.stack_end)
                u->stats.stack_end++;
        if (u->walk.n <= 1)
                u->stats.failed++;
        u->stats.frames += u->walk.n;
        u->walk.in = NULL;
        return (int) u->walk.n;
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

size_t unwind_merge_fp(const uint64_t *cfi, size_t n_cfi, const uint64_t *fp, size_t n_fp,
                       uint64_t *ret, size_t max) {
        size_t occurrence = 0, j, n;

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
