/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>
#include <zlib.h>

#include "macro.h"
#include "srcline.h"
#include "strbuf.h"

/* Bytes read at a time for a file's CRC-32 (.gnu_debuglink). */
#define CRC_CHUNK               (UINT32_C(1) << 16)

/* Kernel addresses: the top byte is 0xff (arm64 TTBR1 half, x86-64 upper half). */
#define KERNEL_ADDR_SHIFT       56
#define KERNEL_ADDR_TOP_BYTE    UINT64_C(0xff)
/* PT_LOAD segments remembered per file; more are ignored (real binaries have 2-4). */
#define MAX_LOADS               16
/* First allocation of a growing array (mappings of a process, symbols of a file). */
#define ARRAY_MIN_CAP           16
#define HEX_DIGITS_PER_BYTE     2
#define NIBBLE_BITS             4
#define NIBBLE_MASK             0xfU
/*
 * The longest perf map line read: a JIT's name with its source location
 * (V8's "LazyCompile:~f https://host/app.js:12:3") stays far below it;
 * longer lines are skipped and counted.
 */
#define PERF_MAP_LINE_MAX       4096U
/* Names of one perf map, at most (the names of max_symbols_per_file lines share it). */
#define PERF_MAP_NAMES_MAX      (UINT32_C(64) << 20)
/* A mapping whose process has no perf map looks again at most this often (a JIT may write it later). */
#define PERF_MAP_RETRY_USEC     UINT64_C(1000000)
/*
 * A kallsyms line: the address, the type, a name of at most KSYM_NAME_LEN
 * (512, include/linux/kallsyms.h) and "\t[MODULE]" of at most
 * MODULE_NAME_LEN (56, include/linux/module.h).
 */
#define KALLSYMS_LINE_MAX       1024U
/* The last symbol of the kernel or of a module ends on the next page boundary
 * but one (perf's symbols__fixup_end(), tools/perf/util/symbol.c). */
#define KALLSYMS_TAIL           UINT64_C(4096)

struct sym {
        uint64_t start, size;
        uint32_t name;          /* offset into elf_file.names */
        uint8_t rank;           /* binding preference among aliases: lower wins */
};

struct load_seg {
        uint64_t offset, filesz, vaddr, memsz;
};

/* One cached ELF file. `gen` changes whenever the slot is (re)loaded, so a
 * mapping's cached (slot, gen) pair says whether the slot still holds its file. */
struct elf_file {
        char *path;             /* NULL: slot unused */
        uint64_t gen;
        uint64_t last_used;
        int error;              /* < 0: unreadable, no symbols */
        bool relocatable;       /* ET_DYN/ET_EXEC: offsets need a PT_LOAD's vaddr - offset */
        bool has_symtab;        /* .symtab, not only .dynsym */
        bool perf_map;          /* a perf-PID.map read as text, not an ELF file */
        dev_t dev;              /* perf map: the file read, when it was written, the bytes of its whole lines */
        ino_t ino;
        struct timespec mtime;
        uint64_t size;
        char build_id_hex[SYMBOLS_BUILD_ID_HEX_SIZE]; /* NT_GNU_BUILD_ID, "" when none */
        struct load_seg loads[MAX_LOADS];
        size_t n_loads;
        struct sym *syms;       /* sorted by start */
        size_t n_syms;
        struct sym *dsyms;      /* data: OBJECT symbols of nonzero size, sorted by start (names in names too) */
        size_t n_dsyms;
        char *names;
        /* Its DWARF (symbols_cache_lines()), opened at the first line asked of it: DWARF_* below. */
        uint8_t dwarf_state;
        struct srcline *dwarf;
        /* .gnu_debuglink: the name of its debug file and that file's CRC-32; NULL when none. */
        char *debuglink;
        uint32_t debuglink_crc;
        /* Its own CRC-32 (zlib's crc32(), the one .gnu_debuglink holds), computed when first asked. */
        bool crc_done;
        uint32_t crc;
};

enum {
        DWARF_UNKNOWN = 0,      /* not opened yet */
        DWARF_NONE,             /* none, or refused */
        DWARF_OPEN,
};

/* Where a mapping's file was in the cache: valid while the slot's gen is unchanged. */
struct file_ref {
        size_t slot;
        uint64_t gen;
};

/*
 * What the two halves share: the LRU clock of processes. The writer ticks it
 * when it adds a mapping, readers when they look a process up, so a process
 * that is only ever looked up is as recent as one that maps files. Atomic:
 * readers tick it from their threads.
 */
struct symbols_shared {
        unsigned ref;
        uint64_t tick;
};

/*
 * A mapped file as a mapping names it. Shared, never copied, by the
 * mappings of one mmap (a split keeps both ends on it) and by every snapshot
 * holding them; freed with its last reference, on whichever thread drops it.
 * The lookup state below is the cache's: only symbols_cache_lookup() writes
 * it, under the caller's cache lock; the writer never reads it.
 */
struct map_file {
        unsigned ref;
        char *filename;
        char build_id_hex[SYMBOLS_BUILD_ID_HEX_SIZE];
        const struct symbols_cache *owner;  /* the cache the state below is of */
        struct file_ref file, debug, build; /* the file at its path, a debug file, its build from a cache */
        uint8_t debug_state, build_state;   /* LOOKUP_*: the files found by build id, looked for once */
        uint8_t link_state;     /* LOOKUP_*: the debug file its .gnu_debuglink names (in debug), looked for once */
        bool counted;           /* its mismatch or debug file is in the stats */
        bool perf_map_checked;  /* anonymous memory: its process's perf map was checked for changes */
        uint64_t perf_map_retry; /* anonymous memory without a perf map: not looked for before (µs) */
};

struct mapping {
        uint64_t start, end, pgoff;
        uint64_t seq;           /* insertion order, for eviction */
        struct map_file *file;
        bool data;              /* a data mapping: never displaces a code one (symbols_maps_add_data()) */
};

/*
 * A process's mappings, sorted by start, non-overlapping. Immutable once a
 * snapshot holds it (ref > 1): the writer then changes a copy
 * (proc_writable()), so a publish shares every unchanged process.
 */
struct proc_maps {
        unsigned ref;
        size_t n, cap;          /* cap grows up to lim.max_mappings_per_pid */
        struct mapping *maps;
};

/* When a process was last used, shared by the writer's table and the snapshots. */
struct proc_lru {
        unsigned ref;
        uint64_t last_used;
};

struct proc {
        uint32_t pid;
        struct proc_lru *lru;
        struct proc_maps *pm;
};

struct symbols_snapshot {
        unsigned ref;
        struct symbols_shared *shared;
        uint64_t pid_evictions, mapping_evictions; /* the writer's, when it published this */
        size_t n_procs;
        struct proc procs[];    /* sorted by pid; each holds a reference to its lru and pm */
};

struct symbols_maps {
        struct symbols_limits lim;
        struct symbols_shared *shared;
        uint64_t pid_evictions, mapping_evictions;
        uint64_t seq;
        struct proc *procs;     /* sorted by pid */
        size_t n_procs;
        struct symbols_snapshot *published; /* NULL when the table changed since */
};

/* Kernel text symbols from kallsyms, sorted, each with its end and object. */
struct ksym {
        uint64_t start, end;
        uint32_t name, object;  /* offsets into kallsyms.names */
};

struct kallsyms {
        struct ksym *syms;
        size_t n;
        char *names;
};

struct symbols_cache {
        struct symbols_limits lim;
        char *debug_dirs;       /* colon-separated roots; "" when none */
        char *perf_map_dir, *procfs_root;
        struct kallsyms ksyms;
        /*
         * Written by the lookup that holds the cache, read by
         * symbols_cache_stats() from any thread without it (cache_count()),
         * so that /metrics does not wait for a profile build.
         */
        struct symbols_stats st;
        uint64_t tick;          /* LRU clock of files */
        uint64_t gen;
        struct elf_file *files; /* lim.max_files slots */
};

/* The single-threaded combination (symbols.h). */
struct symbols {
        struct symbols_maps *maps;
        struct symbols_cache *cache;
        struct symbols_snapshot *snap;
        struct symbols_stats st;
};

static void limits_init(struct symbols_limits *lim, const struct symbols_limits *limits) {
        *lim = (struct symbols_limits) {
                .max_pids = SYMBOLS_MAX_PIDS,
                .max_mappings_per_pid = SYMBOLS_MAX_MAPPINGS_PER_PID,
                .max_files = SYMBOLS_MAX_FILES,
                .max_symbols_per_file = SYMBOLS_MAX_SYMBOLS_PER_FILE,
        };
        if (limits) {
                if (limits->max_pids)
                        lim->max_pids = limits->max_pids;
                if (limits->max_mappings_per_pid)
                        lim->max_mappings_per_pid = limits->max_mappings_per_pid;
                if (limits->max_files)
                        lim->max_files = limits->max_files;
                if (limits->max_symbols_per_file)
                        lim->max_symbols_per_file = limits->max_symbols_per_file;
        }
        lim->debug_dirs = NULL;
        lim->perf_map_dir = NULL;
        lim->procfs_root = NULL;
}

/* ---- reference counting (objects shared between the writer and readers' threads) ---- */

static void ref_inc(unsigned *ref) {
        __atomic_add_fetch(ref, 1, __ATOMIC_RELAXED);
}

static bool ref_dec(unsigned *ref) {
        return __atomic_sub_fetch(ref, 1, __ATOMIC_ACQ_REL) == 0;
}

/* Only the writer adds references to what it still holds: 1 means nobody else has it. */
static bool ref_only(unsigned *ref) {
        return __atomic_load_n(ref, __ATOMIC_ACQUIRE) == 1;
}

static uint64_t shared_tick(struct symbols_shared *sh) {
        return __atomic_add_fetch(&sh->tick, 1, __ATOMIC_RELAXED);
}

static void shared_unref(struct symbols_shared *sh) {
        if (sh && ref_dec(&sh->ref))
                free(sh);
}

static struct map_file *map_file_ref(struct map_file *f) {
        ref_inc(&f->ref);
        return f;
}

static void map_file_unref(struct map_file *f) {
        if (f && ref_dec(&f->ref)) {
                free(f->filename);
                free(f);
        }
}

static void proc_maps_unref(struct proc_maps *pm) {
        if (pm && ref_dec(&pm->ref)) {
                for (size_t i = 0; i < pm->n; i++)
                        map_file_unref(pm->maps[i].file);
                free(pm->maps);
                free(pm);
        }
}

static void proc_lru_unref(struct proc_lru *l) {
        if (l && ref_dec(&l->ref))
                free(l);
}

static void proc_done(struct proc *p) {
        proc_maps_unref(p->pm);
        proc_lru_unref(p->lru);
        *p = (struct proc) {};
}

static void proc_touch(struct symbols_shared *sh, const struct proc *p) {
        __atomic_store_n(&p->lru->last_used, shared_tick(sh), __ATOMIC_RELAXED);
}

static uint64_t proc_last_used(const struct proc *p) {
        return __atomic_load_n(&p->lru->last_used, __ATOMIC_RELAXED);
}

/* Index of pid in procs[n], or where it would be inserted (*ret_found false). */
static size_t proc_search(const struct proc *procs, size_t n, uint32_t pid, bool *ret_found) {
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (procs[mid].pid < pid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *ret_found = lo < n && procs[lo].pid == pid;
        return lo;
}

/* ---- the mapping table (writer) ---- */

struct symbols_maps *symbols_maps_new(const struct symbols_limits *limits) {
        struct symbols_maps *m = xcalloc(1, sizeof(*m));

        limits_init(&m->lim, limits);
        m->shared = xcalloc(1, sizeof(*m->shared));
        m->shared->ref = 1;
        m->procs = xcalloc(m->lim.max_pids, sizeof(*m->procs));
        return m;
}

struct symbols_maps *symbols_maps_free(struct symbols_maps *m) {
        if (!m)
                return NULL;
        for (size_t i = 0; i < m->n_procs; i++)
                proc_done(&m->procs[i]);
        free(m->procs);
        symbols_snapshot_unref(m->published);
        shared_unref(m->shared);
        free(m);
        return NULL;
}

/* The table is about to change: the published snapshot no longer shows it. */
static void maps_changed(struct symbols_maps *m) {
        m->published = symbols_snapshot_unref(m->published);
}

static void proc_remove_at(struct symbols_maps *m, size_t i) {
        maps_changed(m);
        proc_done(&m->procs[i]);
        memmove(&m->procs[i], &m->procs[i + 1], (m->n_procs - i - 1) * sizeof(*m->procs));
        m->n_procs--;
}

static struct proc *proc_get_or_add(struct symbols_maps *m, uint32_t pid) {
        bool found;
        size_t i = proc_search(m->procs, m->n_procs, pid, &found);

        if (found) {
                proc_touch(m->shared, &m->procs[i]);
                return &m->procs[i];
        }
        maps_changed(m);
        if (m->n_procs == m->lim.max_pids) {
                /* Full: forget the least recently used process. A scan, but only
                 * when a new process arrives at a full table. */
                size_t lru = 0;

                for (size_t j = 1; j < m->n_procs; j++)
                        if (proc_last_used(&m->procs[j]) < proc_last_used(&m->procs[lru]))
                                lru = j;
                proc_remove_at(m, lru);
                m->pid_evictions++;
                i = proc_search(m->procs, m->n_procs, pid, &found);
        }
        memmove(&m->procs[i + 1], &m->procs[i], (m->n_procs - i) * sizeof(*m->procs));
        m->n_procs++;
        m->procs[i] = (struct proc) {
                .pid = pid,
                .lru = xcalloc(1, sizeof(struct proc_lru)),
                .pm = xcalloc(1, sizeof(struct proc_maps)),
        };
        m->procs[i].lru->ref = 1;
        m->procs[i].pm->ref = 1;
        proc_touch(m->shared, &m->procs[i]);
        return &m->procs[i];
}

void symbols_maps_remove_pid(struct symbols_maps *m, uint32_t pid) {
        bool found;
        size_t i = proc_search(m->procs, m->n_procs, pid, &found);

        if (found)
                proc_remove_at(m, i);
}

/*
 * The process's mappings, for the writer to change: its own copy when a
 * snapshot holds them (copy on write, of this process only).
 */
static struct proc_maps *proc_writable(struct symbols_maps *m, struct proc *p) {
        struct proc_maps *pm;

        maps_changed(m);
        if (ref_only(&p->pm->ref))
                return p->pm;
        pm = xcalloc(1, sizeof(*pm));
        pm->ref = 1;
        pm->n = p->pm->n;
        pm->cap = p->pm->cap;
        pm->maps = xmalloc(MAX(pm->cap, (size_t) 1) * sizeof(*pm->maps));
        for (size_t i = 0; i < pm->n; i++) {
                pm->maps[i] = p->pm->maps[i];
                map_file_ref(pm->maps[i].file);
        }
        proc_maps_unref(p->pm);
        p->pm = pm;
        return pm;
}

static void map_remove_at(struct proc_maps *pm, size_t i) {
        map_file_unref(pm->maps[i].file);
        memmove(&pm->maps[i], &pm->maps[i + 1], (pm->n - i - 1) * sizeof(*pm->maps));
        pm->n--;
}

/* Insert m keeping maps sorted by start; the caller keeps n below the limit. */
static void map_insert(struct proc_maps *pm, const struct mapping *m) {
        size_t i = pm->n;

        if (pm->n == pm->cap) {
                pm->cap = pm->cap ? pm->cap * 2 : ARRAY_MIN_CAP;
                pm->maps = xrealloc(pm->maps, pm->cap * sizeof(*pm->maps));
        }

        while (i > 0 && pm->maps[i - 1].start > m->start)
                i--;
        memmove(&pm->maps[i + 1], &pm->maps[i], (pm->n - i) * sizeof(*pm->maps));
        pm->maps[i] = *m;
        pm->n++;
}

/*
 * Make room in a full process for a mapping: the oldest data mapping goes
 * first, so data addresses never cost a PC its name; with none, the oldest
 * code mapping, unless the newcomer is data itself (false: it is the one
 * dropped). Either way one eviction is counted.
 */
static bool map_evict_oldest(struct symbols_maps *m, struct proc_maps *pm, bool for_data) {
        size_t oldest = SIZE_MAX, oldest_data = SIZE_MAX;

        for (size_t i = 0; i < pm->n; i++) {
                if (oldest == SIZE_MAX || pm->maps[i].seq < pm->maps[oldest].seq)
                        oldest = i;
                if (pm->maps[i].data && (oldest_data == SIZE_MAX || pm->maps[i].seq < pm->maps[oldest_data].seq))
                        oldest_data = i;
        }
        m->mapping_evictions++;
        if (oldest_data == SIZE_MAX && for_data)
                return false;
        map_remove_at(pm, oldest_data != SIZE_MAX ? oldest_data : oldest);
        return true;
}

/*
 * A new mapping replaces what it overlaps, as a new mmap(2) over an old one
 * does (perf's maps__fixup_overlappings() splits the old map the same way).
 */
static void map_punch(struct symbols_maps *sm, struct proc_maps *pm, uint64_t start, uint64_t end) {
        for (size_t i = 0; i < pm->n;) {
                struct mapping *m = &pm->maps[i];

                if (m->end <= start || m->start >= end) {
                        i++;
                        continue;
                }
                if (m->start >= start && m->end <= end) {
                        map_remove_at(pm, i);
                        continue;
                }
                if (m->start < start && m->end > end) {
                        /* The new mapping splits m: keep both ends, on the same file. */
                        struct mapping tail = *m;

                        tail.pgoff += end - m->start;
                        tail.start = end;
                        m->end = start;
                        if (pm->n == sm->lim.max_mappings_per_pid)
                                /* No room for the tail: it is the one evicted. */
                                sm->mapping_evictions++;
                        else {
                                map_file_ref(tail.file);
                                map_insert(pm, &tail);
                        }
                        return; /* nothing else can overlap [start, end) */
                }
                if (m->start < start)
                        m->end = start;
                else {
                        m->pgoff += end - m->start;
                        m->start = end;
                }
                i++;
        }
}

/* Lowercase hex of a build id of at most SYMBOLS_BUILD_ID_MAX bytes into out (NUL-terminated). */
static void build_id_to_hex(const uint8_t *id, size_t len, char out[SYMBOLS_BUILD_ID_HEX_SIZE]) {
        static const char hex[] = "0123456789abcdef";

        len = MIN(len, (size_t) SYMBOLS_BUILD_ID_MAX);
        for (size_t i = 0; i < len; i++) {
                out[HEX_DIGITS_PER_BYTE * i] = hex[id[i] >> NIBBLE_BITS];
                out[HEX_DIGITS_PER_BYTE * i + 1] = hex[id[i] & NIBBLE_MASK];
        }
        out[HEX_DIGITS_PER_BYTE * len] = 0;
}

static int maps_add(struct symbols_maps *sm, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
                    const char *filename, const uint8_t *build_id, size_t build_id_len, bool data) {
        struct map_file *f;
        struct proc_maps *pm;
        struct mapping m;

        if (len == 0 || start + len < start || build_id_len > SYMBOLS_BUILD_ID_MAX || !filename)
                return -EINVAL;

        f = xcalloc(1, sizeof(*f));
        *f = (struct map_file) {
                .ref = 1,
                .filename = xstrdup(filename),
                .file.slot = SIZE_MAX,
                .debug.slot = SIZE_MAX,
                .build.slot = SIZE_MAX,
        };
        if (build_id)
                build_id_to_hex(build_id, build_id_len, f->build_id_hex);
        m = (struct mapping) {
                .start = start,
                .end = start + len,
                .pgoff = pgoff,
                .seq = ++sm->seq,
                .file = f,
                .data = data,
        };

        pm = proc_writable(sm, proc_get_or_add(sm, pid));
        map_punch(sm, pm, m.start, m.end);
        if (pm->n == sm->lim.max_mappings_per_pid && !map_evict_oldest(sm, pm, data)) {
                map_file_unref(f);
                return 0;
        }
        map_insert(pm, &m);
        return 0;
}

int symbols_maps_add(struct symbols_maps *sm, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
                     const char *filename, const uint8_t *build_id, size_t build_id_len) {
        return maps_add(sm, pid, start, len, pgoff, filename, build_id, build_id_len, false);
}

int symbols_maps_add_data(struct symbols_maps *sm, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
                          const char *filename) {
        return maps_add(sm, pid, start, len, pgoff, filename, NULL, 0, true);
}

struct symbols_snapshot *symbols_maps_publish(struct symbols_maps *m) {
        struct symbols_snapshot *snap;

        if (m->published)
                return symbols_snapshot_ref(m->published);

        snap = xcalloc(1, sizeof(*snap) + m->n_procs * sizeof(struct proc));
        snap->ref = 1;
        ref_inc(&m->shared->ref);
        snap->shared = m->shared;
        snap->pid_evictions = m->pid_evictions;
        snap->mapping_evictions = m->mapping_evictions;
        snap->n_procs = m->n_procs;
        for (size_t i = 0; i < m->n_procs; i++) {
                snap->procs[i] = m->procs[i];
                ref_inc(&snap->procs[i].lru->ref);
                ref_inc(&snap->procs[i].pm->ref);
        }
        m->published = snap;
        return symbols_snapshot_ref(snap);
}

struct symbols_snapshot *symbols_snapshot_ref(struct symbols_snapshot *snap) {
        if (snap)
                ref_inc(&snap->ref);
        return snap;
}

struct symbols_snapshot *symbols_snapshot_unref(struct symbols_snapshot *snap) {
        if (snap && ref_dec(&snap->ref)) {
                for (size_t i = 0; i < snap->n_procs; i++)
                        proc_done(&snap->procs[i]);
                shared_unref(snap->shared);
                free(snap);
        }
        return NULL;
}

size_t symbols_snapshot_mappings(const struct symbols_snapshot *snap) {
        size_t n = 0;

        for (size_t i = 0; snap && i < snap->n_procs; i++)
                n += snap->procs[i].pm->n;
        return n;
}

void symbols_snapshot_stats(const struct symbols_snapshot *snap, struct symbols_stats *ret) {
        if (!snap)
                return;
        ret->pid_evictions = snap->pid_evictions;
        ret->mapping_evictions = snap->mapping_evictions;
}

/* The mapping of pm that holds addr (they are sorted by start and do not overlap), or NULL. */
static const struct mapping *maps_find(const struct proc_maps *pm, uint64_t addr) {
        size_t lo = 0, hi = pm->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (pm->maps[mid].start <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo > 0 && addr < pm->maps[lo - 1].end ? &pm->maps[lo - 1] : NULL;
}

static bool is_file_path(const char *path);
static bool is_anon_memory(const char *path);
/* A memfd's name in MMAP2 and /proc/PID/maps (memfd_create(2)): a file, whose offsets count. */
#define MEMFD_PREFIX "/memfd:"

int symbols_snapshot_region(const struct symbols_snapshot *snap, uint32_t pid, uint64_t addr, char *name,
                            size_t name_len, uint64_t *ret_offset) {
        const struct mapping *m;
        size_t i;
        bool found, file;

        if (!snap)
                return -ENOENT;
        i = proc_search(snap->procs, snap->n_procs, pid, &found);
        if (!found)
                return -ENOENT;
        /* Not proc_touch(): a reader's look at data keeps no process from eviction. */
        m = maps_find(snap->procs[i].pm, addr);
        if (!m)
                return -ENOENT;
        /*
         * The offset column of /proc/PID/maps is the file offset of a file's
         * mapping and 0 for anonymous memory (fs/proc/task_mmu.c,
         * show_map_vma()), whatever pgoff perf recorded for it; a memfd is a file.
         */
        file = is_file_path(m->file->filename) &&
               (!is_anon_memory(m->file->filename) ||
                strncmp(m->file->filename, MEMFD_PREFIX, strlen(MEMFD_PREFIX)) == 0);
        snprintf(name, name_len, "%s", m->file->filename);
        *ret_offset = (file ? m->pgoff : 0) + (addr - m->start);
        return 0;
}

/* A mapping of a file on disk, whose code is the same in every process that maps it: not anonymous memory. */
static bool maps_a_file(const struct mapping *m) {
        return is_file_path(m->file->filename) && !is_anon_memory(m->file->filename);
}

/* Whether a and b (both holding addr) map the same bytes of the same file there. */
static bool same_code(const struct mapping *a, const struct mapping *b, uint64_t addr) {
        return maps_a_file(a) && maps_a_file(b) &&
               (a->file == b->file || (streq(a->file->filename, b->file->filename) &&
                                       streq(a->file->build_id_hex, b->file->build_id_hex))) &&
               addr - a->start + a->pgoff == addr - b->start + b->pgoff;
}

/* The first of addrs[0, n) (ascending) at or above addr. */
static size_t addrs_lower_bound(const uint64_t *addrs, size_t n, uint64_t addr) {
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (addrs[mid] < addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

void symbols_snapshot_owners(const struct symbols_snapshot *snap, const uint64_t *addrs, size_t n,
                             uint32_t *ret_pids) {
        _cleanup_free_ const struct mapping **held = xcalloc(n ? n : 1, sizeof(*held));
        _cleanup_free_ bool *mixed = xcalloc(n ? n : 1, sizeof(*mixed));

        for (size_t i = 0; i < n; i++)
                ret_pids[i] = SYMBOLS_PID_NONE;
        /* Each mapping of each process once, against the addresses it holds: no pass per address. */
        for (size_t p = 0; snap && p < snap->n_procs; p++) {
                const struct proc_maps *pm = snap->procs[p].pm;

                for (size_t j = 0; j < pm->n; j++) {
                        const struct mapping *m = &pm->maps[j];

                        for (size_t i = addrs_lower_bound(addrs, n, m->start); i < n && addrs[i] < m->end; i++) {
                                if (!held[i]) {
                                        held[i] = m;
                                        ret_pids[i] = snap->procs[p].pid;
                                } else if (!same_code(held[i], m, addrs[i]))
                                        mixed[i] = true;
                        }
                }
        }
        for (size_t i = 0; i < n; i++)
                if (mixed[i] || (held[i] && !maps_a_file(held[i])))
                        ret_pids[i] = SYMBOLS_PID_NONE;
}

/* ---- the ELF file cache (readers) ---- */

struct symbols_cache *symbols_cache_new(const struct symbols_limits *limits) {
        struct symbols_cache *c = xcalloc(1, sizeof(*c));

        limits_init(&c->lim, limits);
        c->debug_dirs = xstrdup(limits && limits->debug_dirs ? limits->debug_dirs : SYMBOLS_DEBUG_DIRS);
        c->lim.debug_dirs = c->debug_dirs;
        c->perf_map_dir = xstrdup(limits && limits->perf_map_dir ? limits->perf_map_dir : SYMBOLS_PERF_MAP_DIR);
        c->procfs_root = xstrdup(limits && limits->procfs_root ? limits->procfs_root : SYMBOLS_PROCFS_ROOT);
        c->lim.perf_map_dir = c->perf_map_dir;
        c->lim.procfs_root = c->procfs_root;
        c->files = xcalloc(c->lim.max_files, sizeof(*c->files));
        return c;
}

static void file_done(struct elf_file *f) {
        srcline_close(f->dwarf);
        free(f->debuglink);
        free(f->path);
        free(f->syms);
        free(f->dsyms);
        free(f->names);
        *f = (struct elf_file) {};
}

struct symbols_cache *symbols_cache_free(struct symbols_cache *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; c->files && i < c->lim.max_files; i++)
                file_done(&c->files[i]);
        free(c->files);
        free(c->debug_dirs);
        free(c->perf_map_dir);
        free(c->procfs_root);
        free(c->ksyms.syms);
        free(c->ksyms.names);
        free(c);
        return NULL;
}

/*
 * The cache's counters. One thread at a time writes them (the lookup holding
 * the cache), any thread reads them: each is a relaxed atomic, exact and
 * monotonic on its own; a read is not one instant of all of them.
 */
static void cache_count(uint64_t *counter, uint64_t n) {
        if (n > 0)
                __atomic_add_fetch(counter, n, __ATOMIC_RELAXED);
}

static uint64_t cache_counter(const uint64_t *counter) {
        return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

void symbols_cache_stats(const struct symbols_cache *c, struct symbols_stats *ret) {
        ret->file_evictions = cache_counter(&c->st.file_evictions);
        ret->files_loaded = cache_counter(&c->st.files_loaded);
        ret->file_errors = cache_counter(&c->st.file_errors);
        ret->symbols_truncated = cache_counter(&c->st.symbols_truncated);
        ret->build_id_mismatches = cache_counter(&c->st.build_id_mismatches);
        ret->debug_files = cache_counter(&c->st.debug_files);
        ret->dwarf_loaded = cache_counter(&c->st.dwarf_loaded);
        ret->dwarf_errors = cache_counter(&c->st.dwarf_errors);
        ret->build_id_cache_files = cache_counter(&c->st.build_id_cache_files);
        ret->perf_maps_loaded = cache_counter(&c->st.perf_maps_loaded);
        ret->bad_symbol_lines = cache_counter(&c->st.bad_symbol_lines);
}

static int sym_cmp(const void *a, const void *b) {
        const struct sym *x = a, *y = b;

        if (x->start != y->start)
                return x->start < y->start ? -1 : 1;
        if (x->rank != y->rank)
                return x->rank < y->rank ? -1 : 1;
        return x->name < y->name ? -1 : x->name > y->name;
}

/* Globals name an address better than weaks, weaks better than locals. */
static uint8_t binding_rank(unsigned bind) {
        switch (bind) {
        case STB_GLOBAL:
                return 0;
        case STB_WEAK:
                return 1;
        default:
                return 2;
        }
}

/* The symbol table to use: .symtab when present, else .dynsym (stripped files). */
static Elf_Scn *find_symtab(Elf *elf, GElf_Shdr *ret_shdr) {
        Elf_Scn *scn = NULL, *dyn = NULL;
        GElf_Shdr sh, dynsh = {};

        while ((scn = elf_nextscn(elf, scn))) {
                if (!gelf_getshdr(scn, &sh))
                        continue;
                if (sh.sh_type == SHT_SYMTAB) {
                        *ret_shdr = sh;
                        return scn;
                }
                if (sh.sh_type == SHT_DYNSYM && !dyn) {
                        dyn = scn;
                        dynsh = sh;
                }
        }
        if (dyn)
                *ret_shdr = dynsh;
        return dyn;
}

/*
 * Sort syms by cmp, keep the first of each address, and give zero-sized
 * ones (assembly) the room up to the next symbol, as perf's
 * symbols__fixup_end() does; f takes syms and names.
 */
static void syms_finish(struct elf_file *f, struct sym *syms, size_t n, struct strbuf *names,
                        int (*cmp)(const void *, const void *)) {
        if (n > 0)
                qsort(syms, n, sizeof(*syms), cmp);
        if (n > 0) {
                size_t w = 1;

                for (size_t i = 1; i < n; i++)
                        if (syms[i].start != syms[w - 1].start)
                                syms[w++] = syms[i];
                n = w;
        }
        for (size_t i = 0; i + 1 < n; i++)
                if (syms[i].size == 0)
                        syms[i].size = syms[i + 1].start - syms[i].start;

        f->syms = syms;
        f->n_syms = n;
        f->names = strbuf_steal(names, NULL);
}

static int load_symbols(struct symbols_cache *s, Elf *elf, struct elf_file *f) {
        struct strbuf names = STRBUF_INIT;
        struct sym *syms = NULL, *dsyms = NULL;
        size_t n = 0, cap = 0, nd = 0, capd = 0, count;
        Elf_Scn *scn;
        Elf_Data *data;
        GElf_Shdr sh;

        scn = find_symtab(elf, &sh);
        if (!scn)
                return 0; /* no symbols: mappings resolve, functions do not */
        f->has_symtab = sh.sh_type == SHT_SYMTAB;
        data = elf_getdata(scn, NULL);
        if (!data || sh.sh_entsize == 0)
                return -EBADMSG;
        count = sh.sh_size / sh.sh_entsize;

        for (size_t i = 0; i < count; i++) {
                GElf_Sym es;
                const char *name;

                if (!gelf_getsym(data, (int) i, &es))
                        break;
                if (es.st_shndx == SHN_UNDEF || es.st_shndx >= SHN_LORESERVE || es.st_value == 0)
                        continue;
                /*
                 * Data: a variable of .data, .bss, .rodata (STT_OBJECT, ELF
                 * gABI "Symbol Table"), of its size. Not STT_TLS: its value
                 * is an offset in each thread's TLS block, not an address.
                 */
                if (GELF_ST_TYPE(es.st_info) == STT_OBJECT && es.st_size > 0) {
                        name = elf_strptr(elf, sh.sh_link, es.st_name);
                        if (!name || !*name)
                                continue;
                        if (nd == s->lim.max_symbols_per_file || names.len > UINT32_MAX) {
                                cache_count(&s->st.symbols_truncated, 1);
                                continue;
                        }
                        if (nd == capd) {
                                capd = capd ? capd * 2 : ARRAY_MIN_CAP;
                                dsyms = xrealloc(dsyms, capd * sizeof(*dsyms));
                        }
                        dsyms[nd++] = (struct sym) {
                                .start = es.st_value,
                                .size = es.st_size,
                                .name = (uint32_t) names.len,
                                .rank = binding_rank(GELF_ST_BIND(es.st_info)),
                        };
                        strbuf_append(&names, name, strlen(name) + 1);
                        continue;
                }
                if (GELF_ST_TYPE(es.st_info) != STT_FUNC && GELF_ST_TYPE(es.st_info) != STT_GNU_IFUNC)
                        continue;
                name = elf_strptr(elf, sh.sh_link, es.st_name);
                if (!name || !*name)
                        continue;
                if (n == s->lim.max_symbols_per_file) {
                        cache_count(&s->st.symbols_truncated, 1);
                        continue;
                }
                if (names.len > UINT32_MAX) {
                        cache_count(&s->st.symbols_truncated, 1);
                        continue;
                }
                if (n == cap) {
                        cap = cap ? cap * 2 : ARRAY_MIN_CAP;
                        syms = xrealloc(syms, cap * sizeof(*syms));
                }
                syms[n++] = (struct sym) {
                        .start = es.st_value,
                        .size = es.st_size,
                        .name = (uint32_t) names.len,
                        .rank = binding_rank(GELF_ST_BIND(es.st_info)),
                };
                strbuf_append(&names, name, strlen(name) + 1);
        }

        /* Aliases of one variable (a global and its local twin): the sort puts the preferred first. */
        if (nd > 0) {
                size_t w = 1;

                qsort(dsyms, nd, sizeof(*dsyms), sym_cmp);
                for (size_t i = 1; i < nd; i++)
                        if (dsyms[i].start != dsyms[w - 1].start)
                                dsyms[w++] = dsyms[i];
                nd = w;
        }
        f->dsyms = dsyms;
        f->n_dsyms = nd;
        syms_finish(f, syms, n, &names, sym_cmp);
        return 0;
}

/* NT_GNU_BUILD_ID from the note sections (stripped files and debug files keep them). */
static void read_build_id(Elf *elf, char out[SYMBOLS_BUILD_ID_HEX_SIZE]) {
        Elf_Scn *scn = NULL;
        GElf_Shdr sh;

        while ((scn = elf_nextscn(elf, scn))) {
                Elf_Data *data;
                GElf_Nhdr nh;
                size_t off = 0, name_off, desc_off;

                if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
                        continue;
                data = elf_getdata(scn, NULL);
                while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0)
                        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == sizeof(ELF_NOTE_GNU) &&
                            memcmp((const char *) data->d_buf + name_off, ELF_NOTE_GNU, sizeof(ELF_NOTE_GNU)) == 0) {
                                build_id_to_hex((const uint8_t *) data->d_buf + desc_off, nh.n_descsz, out);
                                return;
                        }
        }
}

/*
 * .gnu_debuglink (GDB's "Debugging Information in Separate Files"; binutils
 * objcopy --add-gnu-debuglink): the debug file's name, NUL-terminated,
 * padded to 4 bytes, then its CRC-32 in the file's byte order. A name with a
 * '/' or longer than NAME_MAX is refused: it is looked for as a file name.
 */
static void read_debuglink(Elf *elf, struct elf_file *f) {
        Elf_Scn *scn = NULL;
        size_t shstrndx;
        GElf_Shdr sh;

        if (elf_getshdrstrndx(elf, &shstrndx) != 0)
                return;
        while ((scn = elf_nextscn(elf, scn))) {
                const char *name;
                Elf_Data *data;
                size_t len, crc_at;
                uint32_t crc;

                if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
                        continue;
                name = elf_strptr(elf, shstrndx, sh.sh_name);
                if (!name || !streq(name, ".gnu_debuglink"))
                        continue;
                /* elf_getdata() gives the bytes as they are (SHT_PROGBITS: no translation). */
                data = elf_getdata(scn, NULL);
                if (!data || !data->d_buf)
                        return;
                len = strnlen(data->d_buf, data->d_size);
                crc_at = (len + 1 + 3) & ~(size_t) 3;
                if (len == 0 || len > NAME_MAX || memchr(data->d_buf, '/', len) || crc_at + sizeof(crc) > data->d_size)
                        return;
                memcpy(&crc, (const char *) data->d_buf + crc_at, sizeof(crc));
                if ((elf_getident(elf, NULL)[EI_DATA] == ELFDATA2MSB) != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__))
                        crc = __builtin_bswap32(crc);
                f->debuglink = strndup(data->d_buf, len);
                if (!f->debuglink)
                        oom();
                f->debuglink_crc = crc;
                return;
        }
}

/*
 * A file the input names (a mapped path, a perf map any process may write,
 * kallsyms), opened read-only: O_NONBLOCK so that a FIFO put there cannot
 * hold the reader in open(2), and only a regular file is read (-EBADF for
 * anything else). Returns the fd, *ret its stat, or a negative errno.
 */
static int open_regular(const char *path, struct stat *ret) {
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

        if (fd < 0)
                return -errno;
        if (fstat(fd, ret) < 0 || !S_ISREG(ret->st_mode)) {
                safe_close(fd);
                return -EBADF;
        }
        return fd;
}

/* The same as a stdio stream, for the text formats; NULL with *ret_err set. */
static FILE *fopen_regular(const char *path, struct stat *ret, int *ret_err) {
        FILE *file;
        int fd = open_regular(path, ret);

        if (fd < 0) {
                *ret_err = fd;
                return NULL;
        }
        file = fdopen(fd, "r");
        if (!file) {
                *ret_err = -errno;
                safe_close(fd);
        }
        return file;
}

static int load_file(struct symbols_cache *s, struct elf_file *f) {
        _cleanup_close_ int fd = -1;
        struct stat st;
        GElf_Ehdr eh;
        size_t phnum;
        Elf *elf;
        int r = 0;

        if (elf_version(EV_CURRENT) == EV_NONE)
                return -ENOTSUP;
        /* A mapped path is named by the input (a perf.data, a process that has since replaced its file). */
        fd = open_regular(f->path, &st);
        if (fd < 0)
                return fd;
        elf = elf_begin(fd, ELF_C_READ, NULL);
        if (!elf)
                return -EBADMSG;
        if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &phnum) != 0) {
                r = -EBADMSG;
                goto out;
        }
        f->relocatable = eh.e_type == ET_DYN || eh.e_type == ET_EXEC;
        for (size_t i = 0; i < phnum && f->n_loads < MAX_LOADS; i++) {
                GElf_Phdr ph;

                if (!gelf_getphdr(elf, (int) i, &ph) || ph.p_type != PT_LOAD)
                        continue;
                f->loads[f->n_loads++] = (struct load_seg) {
                        .offset = ph.p_offset,
                        .filesz = ph.p_filesz,
                        .memsz = ph.p_memsz,
                        .vaddr = ph.p_vaddr,
                };
        }
        read_build_id(elf, f->build_id_hex);
        read_debuglink(elf, f);
        r = load_symbols(s, elf, f);
out:
        elf_end(elf);
        return r;
}

/* ---- JIT perf maps ---- */

/* 1 to 16 hex digits, "0x" allowed (perf reads them with strtoull(, 16)); *p moves past them. */
static bool parse_hex(const char **p, uint64_t *ret) {
        const char *q = *p;
        uint64_t v = 0;
        size_t n = 0;

        if (q[0] == '0' && (q[1] == 'x' || q[1] == 'X'))
                q += 2;
        for (;; q++, n++) {
                unsigned d;

                if (*q >= '0' && *q <= '9')
                        d = (unsigned) (*q - '0');
                else if (*q >= 'a' && *q <= 'f')
                        d = (unsigned) (*q - 'a' + 10);
                else if (*q >= 'A' && *q <= 'F')
                        d = (unsigned) (*q - 'A' + 10);
                else
                        break;
                if (n == 2 * sizeof(v))
                        return false;
                v = v << NIBBLE_BITS | d;
        }
        if (n == 0)
                return false;
        *p = q;
        *ret = v;
        return true;
}

static const char *skip_blanks(const char *p) {
        return p + strspn(p, " \t");
}

/*
 * "START SIZE name" (tools/perf/Documentation/jit-interface.txt; perf's
 * dso__load_perf_map() in tools/perf/util/symbol.c): hex numbers, then the
 * name, the rest of the line, spaces included (V8's names have some).
 */
static bool parse_perf_map_line(const char *line, uint64_t *ret_start, uint64_t *ret_size, const char **ret_name) {
        const char *p = line;
        uint64_t start, size;

        if (!parse_hex(&p, &start) || (*p != ' ' && *p != '\t'))
                return false;
        p = skip_blanks(p);
        if (!parse_hex(&p, &size) || (*p != ' ' && *p != '\t'))
                return false;
        p = skip_blanks(p);
        if (!*p || start == 0 || start + size < start)
                return false;
        *ret_start = start;
        *ret_size = size;
        *ret_name = p;
        return true;
}

/* The later of two lines for one address first, so that it is the one kept. */
static int perf_sym_cmp(const void *a, const void *b) {
        const struct sym *x = a, *y = b;

        if (x->start != y->start)
                return x->start < y->start ? -1 : 1;
        return x->name > y->name ? -1 : x->name < y->name;
}

/* Read f->path as a perf map: its whole lines, each a symbol, bounded as an ELF file's. */
static int load_perf_map(struct symbols_cache *s, struct elf_file *f) {
        _cleanup_free_ char *line = xmalloc(PERF_MAP_LINE_MAX);
        struct strbuf names = STRBUF_INIT;
        struct sym *syms = NULL;
        size_t n = 0, cap = 0;
        uint64_t consumed = 0, whole = 0;
        bool skipping = false;
        struct stat st;
        FILE *file;
        int r;

        /* Any process can put a FIFO at /tmp/perf-PID.map: never wait on one. */
        file = fopen_regular(f->path, &st, &r);
        if (!file)
                return r;
        f->dev = st.st_dev;
        f->ino = st.st_ino;
        f->mtime = st.st_mtim;
        while (fgets(line, PERF_MAP_LINE_MAX, file)) {
                size_t len = strlen(line);
                uint64_t start, size;
                const char *name;

                bool nl = len > 0 && line[len - 1] == '\n';

                consumed += len;
                if (skipping) {
                        /* The rest of a line too long, up to its end. */
                        if (nl) {
                                skipping = false;
                                whole = consumed;
                        }
                        continue;
                }
                if (!nl) {
                        /* Longer than the buffer, or the last line still being written. */
                        if (len == PERF_MAP_LINE_MAX - 1) {
                                cache_count(&s->st.bad_symbol_lines, 1);
                                skipping = true;
                        }
                        continue;
                }
                whole = consumed;
                line[--len] = '\0';
                if (len > 0 && line[len - 1] == '\r')
                        line[--len] = '\0';
                if (!parse_perf_map_line(line, &start, &size, &name)) {
                        cache_count(&s->st.bad_symbol_lines, 1);
                        continue;
                }
                if (n == s->lim.max_symbols_per_file || names.len + strlen(name) + 1 > PERF_MAP_NAMES_MAX) {
                        cache_count(&s->st.symbols_truncated, 1);
                        continue;
                }
                if (n == cap) {
                        cap = cap ? cap * 2 : ARRAY_MIN_CAP;
                        syms = xrealloc(syms, cap * sizeof(*syms));
                }
                syms[n++] = (struct sym) { .start = start, .size = size, .name = (uint32_t) names.len };
                strbuf_append(&names, name, strlen(name) + 1);
        }
        fclose(file);
        f->size = whole;
        f->has_symtab = true;
        syms_finish(f, syms, n, &names, perf_sym_cmp);
        strbuf_done(&names);
        return 0;
}

/* Whether ref still names the file it was taken for. */
static bool ref_valid(const struct symbols_cache *s, const struct file_ref *ref) {
        return ref->slot < s->lim.max_files && s->files[ref->slot].path && s->files[ref->slot].gen == ref->gen;
}

static void file_load(struct symbols_cache *s, struct elf_file *f) {
        f->error = f->perf_map ? load_perf_map(s, f) : load_file(s, f);
        cache_count(f->perf_map ? &s->st.perf_maps_loaded : &s->st.files_loaded, 1);
        if (f->error < 0) {
                free(f->syms);
                free(f->dsyms);
                free(f->names);
                f->syms = NULL;
                f->dsyms = NULL;
                f->names = NULL;
                f->n_syms = f->n_dsyms = 0;
                cache_count(&s->st.file_errors, 1);
        }
}

/* The cache slot holding path (an ELF file, or a perf map), loading it (evicting the LRU slot) if needed. */
static struct elf_file *file_get_kind(struct symbols_cache *s, const char *path, bool perf_map, struct file_ref *ref) {
        struct elf_file *f;
        size_t victim = 0;

        if (ref_valid(s, ref)) {
                f = &s->files[ref->slot];
                f->last_used = ++s->tick;
                return f;
        }
        for (size_t i = 0; i < s->lim.max_files; i++) {
                f = &s->files[i];
                if (f->path && f->perf_map == perf_map && streq(f->path, path)) {
                        victim = i;
                        goto found;
                }
                if (!f->path || (s->files[victim].path && f->last_used < s->files[victim].last_used))
                        victim = i;
        }
        f = &s->files[victim];
        if (f->path) {
                file_done(f);
                cache_count(&s->st.file_evictions, 1);
        }
        f->path = xstrdup(path);
        f->perf_map = perf_map;
        f->gen = ++s->gen;
        file_load(s, f);
found:
        f = &s->files[victim];
        f->last_used = ++s->tick;
        *ref = (struct file_ref) { victim, f->gen };
        return f;
}

static struct elf_file *file_get(struct symbols_cache *s, const char *path, struct file_ref *ref) {
        return file_get_kind(s, path, false, ref);
}

enum {
        LOOKUP_UNKNOWN = 0,
        LOOKUP_NONE,            /* no such file under any root */
        LOOKUP_FOUND,
};

/* ROOT/.build-id/ab/cdef... then one of these (see symbols.h). */
static const char *const debug_layouts[] = { ".debug", "/debug" };
static const char *const build_layouts[] = { "/elf" };

/* The first existing file of id under the roots in one of the layouts; false if none. */
static bool find_by_build_id(const struct symbols_cache *s, const char *id, const char *const *layouts, size_t n,
                             struct strbuf *ret) {
        for (const char *root = s->debug_dirs; *root;) {
                size_t len = strcspn(root, ":");

                for (size_t i = 0; len > 0 && i < n; i++) {
                        ret->len = 0;
                        strbuf_printf(ret, "%.*s/.build-id/%.2s/%s%s", (int) len, root, id,
                                      id + HEX_DIGITS_PER_BYTE, layouts[i]);
                        if (access(ret->buf, R_OK) == 0)
                                return true;
                }
                root += len + (root[len] == ':');
        }
        return false;
}

/*
 * The cached file of id in one of the layouts, looked up on disk once per
 * mapping (*state); NULL when there is none, or when it is unreadable or
 * another build after all.
 */
static const struct elf_file *file_by_build_id(struct symbols_cache *s, const char *id, const char *const *layouts,
                                               size_t n, uint8_t *state, struct file_ref *ref) {
        struct strbuf path = STRBUF_INIT;
        const struct elf_file *f;

        if (*state == LOOKUP_NONE)
                return NULL;
        if (*state == LOOKUP_FOUND && ref_valid(s, ref)) {
                /* Found before and still cached: no lookup on disk. */
                f = &s->files[ref->slot];
                s->files[ref->slot].last_used = ++s->tick;
                return f->error < 0 || !streq(f->build_id_hex, id) ? NULL : f;
        }
        if (!find_by_build_id(s, id, layouts, n, &path)) {
                *state = LOOKUP_NONE;
                strbuf_done(&path);
                return NULL;
        }
        *state = LOOKUP_FOUND;
        f = file_get(s, path.buf, ref);
        strbuf_done(&path);
        return f->error < 0 || !streq(f->build_id_hex, id) ? NULL : f;
}

/* f's CRC-32 over its bytes (zlib's crc32(), GDB's gnu_debuglink_crc32()); false when it cannot be read. */
static bool file_crc(struct elf_file *f, uint32_t *ret) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ uint8_t *buf = NULL;
        uLong crc = crc32(0, Z_NULL, 0);
        struct stat st;
        ssize_t n;

        if (f->crc_done) {
                *ret = f->crc;
                return true;
        }
        fd = open_regular(f->path, &st);
        if (fd < 0)
                return false;
        buf = xmalloc(CRC_CHUNK);
        while ((n = read(fd, buf, CRC_CHUNK)) > 0)
                crc = crc32(crc, buf, (uInt) n);
        if (n < 0)
                return false;
        f->crc = (uint32_t) crc;
        f->crc_done = true;
        *ret = f->crc;
        return true;
}

/*
 * The debug file the .gnu_debuglink of layout names, for mapping m, where
 * GDB looks for it ("Debugging Information in Separate Files"): beside the
 * mapped file, in its directory's .debug/, and under each debug root with
 * the file's directory (/usr/lib/debug/usr/bin/NAME). It must be the build
 * the link was made for: the same build id when both have one, else the
 * CRC-32 the link holds. Looked for once per mapping (m->link_state), kept in
 * m->debug. NULL when there is none.
 */
static const struct elf_file *file_by_debuglink(struct symbols_cache *s, struct map_file *m,
                                                const struct elf_file *layout) {
        _cleanup_free_ char *name = NULL, *dir = NULL;
        char id[SYMBOLS_BUILD_ID_HEX_SIZE];
        struct strbuf path = STRBUF_INIT;
        const char *slash = strrchr(m->filename, '/');
        uint32_t want_crc = layout->debuglink_crc;

        if (m->link_state == LOOKUP_NONE || !layout->debuglink || !slash)
                return NULL;
        if (m->link_state == LOOKUP_FOUND && ref_valid(s, &m->debug)) {
                s->files[m->debug.slot].last_used = ++s->tick;
                return &s->files[m->debug.slot];
        }
        /* file_get() below may evict layout's slot: what is needed of it, copied. */
        name = xstrdup(layout->debuglink);
        memcpy(id, layout->build_id_hex, sizeof(id));
        dir = strndup(m->filename, (size_t) (slash - m->filename));
        if (!dir)
                oom();
        for (unsigned i = 0;; i++) {
                struct elf_file *f;
                uint32_t crc;

                path.len = 0;
                if (i == 0)
                        strbuf_printf(&path, "%s/%s", dir, name);
                else if (i == 1)
                        strbuf_printf(&path, "%s/.debug/%s", dir, name);
                else {
                        /* The debug roots, one per step from i = 2. */
                        const char *root = s->debug_dirs;
                        size_t len;

                        for (unsigned k = 2; k < i && *root; k++)
                                root += strcspn(root, ":") + (root[strcspn(root, ":")] == ':');
                        len = strcspn(root, ":");
                        if (!*root)
                                break;
                        if (len == 0)
                                continue;
                        strbuf_printf(&path, "%.*s%s/%s", (int) len, root, dir, name);
                }
                /* The link names the binary itself (a debug file of the same name beside it is its own). */
                if (streq(path.buf, m->filename) || access(path.buf, R_OK) != 0)
                        continue;
                f = (struct elf_file *) file_get(s, path.buf, &m->debug);
                if (f->error < 0)
                        continue;
                if (id[0] && f->build_id_hex[0] ? streq(id, f->build_id_hex) : file_crc(f, &crc) && crc == want_crc) {
                        m->link_state = LOOKUP_FOUND;
                        strbuf_done(&path);
                        return f;
                }
        }
        m->link_state = LOOKUP_NONE;
        strbuf_done(&path);
        return NULL;
}

/*
 * The debug file of mapping m whose binary (layout) is stripped: by its
 * build id under the debug roots, else by its .gnu_debuglink. NULL when none.
 */
static const struct elf_file *debug_file(struct symbols_cache *s, struct map_file *m, const char *id,
                                         const struct elf_file *layout) {
        const struct elf_file *d = NULL;

        if (id[0])
                d = file_by_build_id(s, id, debug_layouts, ELEMENTSOF(debug_layouts), &m->debug_state, &m->debug);
        if (!d && m->debug_state != LOOKUP_FOUND)
                d = file_by_debuglink(s, m, layout);
        return d;
}

/*
 * The file whose symbols name m's PCs (see the header comment), or NULL.
 * *ret_layout is the file whose PT_LOADs turn file offsets into addresses:
 * the binary (the one at the path, or its build from perf's cache), as a
 * detached debug file's program headers keep the addresses but not the
 * file offsets.
 */
static const struct elf_file *symbol_file(struct symbols_cache *s, struct map_file *m,
                                          const struct elf_file **ret_layout) {
        const struct elf_file *f = file_get(s, m->filename, &m->file), *d, *layout, *sym;
        const char *id = m->build_id_hex[0] ? m->build_id_hex : f->build_id_hex;
        bool count = !m->counted, from_cache = false;
        struct file_ref *layout_ref = &m->file;

        m->counted = true;
        if (f->error >= 0 && (!m->build_id_hex[0] || !f->build_id_hex[0] || streq(m->build_id_hex, f->build_id_hex)))
                layout = f;
        else if (id[0] && (layout = file_by_build_id(s, id, build_layouts, ELEMENTSOF(build_layouts),
                                                     &m->build_state, &m->build))) {
                /* The file at the path is another build (or gone); perf record kept this one. */
                layout_ref = &m->build;
                from_cache = true;
        } else {
                cache_count(&s->st.build_id_mismatches, count && f->error >= 0);
                return NULL;
        }

        sym = layout;
        if (!layout->has_symtab) {
                d = debug_file(s, m, id, layout);
                if (d && d->has_symtab) {
                        sym = d;
                        cache_count(&s->st.debug_files, count);
                }
        }
        /* Each file_get() may evict an older slot: the two in use must still be there. */
        if (!ref_valid(s, layout_ref) || (sym != layout && !ref_valid(s, &m->debug)) ||
            (sym != layout && m->debug.slot == layout_ref->slot))
                return NULL;
        cache_count(&s->st.build_id_cache_files, count && from_cache);
        *ret_layout = layout;
        return sym;
}

/* ELF virtual address of a file offset (see the header comment). */
static uint64_t file_vaddr(const struct elf_file *f, uint64_t off) {
        if (!f->relocatable || f->n_loads == 0)
                return off;
        for (size_t i = 0; i < f->n_loads; i++)
                if (off >= f->loads[i].offset && off - f->loads[i].offset < f->loads[i].filesz)
                        return off - f->loads[i].offset + f->loads[i].vaddr;
        return off - f->loads[0].offset + f->loads[0].vaddr;
}

static const struct sym *sym_find(const struct elf_file *f, uint64_t addr) {
        size_t lo = 0, hi = f->n_syms;
        const struct sym *y;

        /* The last symbol starting at or below addr. */
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (f->syms[mid].start <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo == 0)
                return NULL;
        y = &f->syms[lo - 1];
        if (addr - y->start < y->size || (y->size == 0 && addr == y->start))
                return y;
        return NULL;
}

/* Names that are no file on disk: anonymous memory, [vdso], [stack], //anon. */
static bool is_file_path(const char *path) {
        return path[0] == '/' && path[1] != '/';
}

/* ---- JIT code: anonymous memory named by perf maps ---- */

/*
 * Anonymous memory as perf records name it (perf's is_anon_memory(),
 * tools/perf/util/map.c: "//anon", "/dev/zero", "/anon_hugepage" for
 * MAP_HUGETLB), as /proc/PID/maps does (no name, "[anon:NAME]" of
 * PR_SET_VMA_ANON_NAME, prctl(2)), and memfd code (memfd_create(2): .NET's
 * double-mapped JIT code is "/memfd:doublemapper (deleted)").
 */
static bool is_anon_memory(const char *path) {
        static const char *const prefixes[] = { "//anon", "/dev/zero", "/anon_hugepage", "[anon:", "/memfd:" };

        if (!path[0])
                return true;
        for (size_t i = 0; i < ELEMENTSOF(prefixes); i++)
                if (strncmp(path, prefixes[i], strlen(prefixes[i])) == 0)
                        return true;
        return false;
}

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

/*
 * The pid of pid in its own pid namespace: the last of "NSpid:" in
 * <procfs>/PID/status (proc(5)); pid itself on kernels before 4.1, which
 * have no NSpid. False when the process is gone.
 */
static bool ns_pid(const char *procfs, uint32_t pid, uint32_t *ret) {
        _cleanup_free_ char *line = NULL;
        struct strbuf path = STRBUF_INIT;
        size_t cap = 0;
        uint32_t v = pid;
        FILE *f;

        strbuf_printf(&path, "%s/%" PRIu32 "/status", procfs, pid);
        f = fopen(path.buf, "re");
        strbuf_done(&path);
        if (!f)
                return false;
        while (getline(&line, &cap, f) > 0)
                if (strncmp(line, "NSpid:", strlen("NSpid:")) == 0) {
                        const char *p = line + strlen("NSpid:");
                        char *end;

                        for (;;) {
                                unsigned long long x;

                                p = skip_blanks(p);
                                if (*p < '0' || *p > '9')
                                        break;
                                x = strtoull(p, &end, 10);
                                if (x > 0 && x <= UINT32_MAX)
                                        v = (uint32_t) x;
                                p = end;
                        }
                        break;
                }
        fclose(f);
        *ret = v;
        return true;
}

/*
 * When pid started, in seconds since the epoch: "starttime" of
 * <procfs>/PID/stat (field 22, clock ticks after boot) plus "btime" of
 * <procfs>/stat (proc(5)). False when either cannot be read.
 */
static bool process_start(const char *procfs, uint32_t pid, uint64_t *ret_sec) {
        _cleanup_free_ char *line = NULL;
        struct strbuf path = STRBUF_INIT;
        unsigned long long start = 0, btime = 0;
        bool found = false;
        long hz = sysconf(_SC_CLK_TCK);
        size_t cap = 0;
        const char *p;
        FILE *f;

        strbuf_printf(&path, "%s/%" PRIu32 "/stat", procfs, pid);
        f = fopen(path.buf, "re");
        if (f && getline(&line, &cap, f) > 0 && (p = strrchr(line, ')'))) {
                /* After "(comm)", which may hold anything: the space before field 3 (state), ..., 22 (starttime). */
                for (int field = 3; field <= 22 && p; field++)
                        p = strchr(p + 1, ' ');
                found = p && sscanf(p, " %llu", &start) == 1;
        }
        if (f)
                fclose(f);
        path.len = 0;
        strbuf_printf(&path, "%s/stat", procfs);
        f = found ? fopen(path.buf, "re") : NULL;
        found = false;
        while (f && getline(&line, &cap, f) > 0)
                if (sscanf(line, "btime %llu", &btime) == 1) {
                        found = true;
                        break;
                }
        if (f)
                fclose(f);
        strbuf_done(&path);
        if (!found || hz <= 0)
                return false;
        *ret_sec = btime + start / (unsigned long long) hz;
        return true;
}

/*
 * Whether path is a perf map the running process (started at start_sec)
 * may have written: a JIT writes its map after it starts, and JITs leave
 * their maps behind, so a map last written before the process started is
 * an earlier process's under the same pid. Slack for btime, which proc(5)
 * gives in whole seconds and the kernel derives from the clock.
 */
#define PROCESS_START_SLACK_SEC 2
static bool perf_map_usable(const char *path, bool alive, uint64_t start_sec) {
        struct stat st;

        if (stat(path, &st) < 0 || access(path, R_OK) < 0)
                return false;
        return !alive || (uint64_t) st.st_mtim.tv_sec + PROCESS_START_SLACK_SEC >= start_sec;
}

/* Where pid's perf map is (symbols.h), into ret; false when there is none to read. */
static bool perf_map_path(const struct symbols_cache *s, uint32_t pid, struct strbuf *ret) {
        uint64_t start_sec = 0;
        bool alive = false;
        uint32_t nspid;

        ret->len = 0;
        if (s->procfs_root[0] && ns_pid(s->procfs_root, pid, &nspid)) {
                alive = process_start(s->procfs_root, pid, &start_sec);
                strbuf_printf(ret, "%s/%" PRIu32 "/root/tmp/perf-%" PRIu32 ".map", s->procfs_root, pid, nspid);
                if (perf_map_usable(ret->buf, alive, start_sec))
                        return true;
                ret->len = 0;
        }
        strbuf_printf(ret, "%s/perf-%" PRIu32 ".map", s->perf_map_dir, pid);
        return perf_map_usable(ret->buf, alive, start_sec);
}

/* Whether the perf map at f's path is no longer what f holds: it grew, or is another file. */
static bool perf_map_changed(const struct elf_file *f) {
        struct stat st;

        /* Gone (its process's root with it): what was read still names its code. */
        if (stat(f->path, &st) < 0)
                return false;
        /* An inode number can come back for a new file: its time tells them apart too. */
        return st.st_dev != f->dev || st.st_ino != f->ino || (uint64_t) st.st_size != f->size ||
               st.st_mtim.tv_sec != f->mtime.tv_sec || st.st_mtim.tv_nsec != f->mtime.tv_nsec;
}

static void perf_map_reload(struct symbols_cache *s, struct elf_file *f) {
        free(f->syms);
        free(f->names);
        f->syms = NULL;
        f->names = NULL;
        f->n_syms = 0;
        file_load(s, f);
}

/*
 * The symbol of pc in the perf map of m's process, or NULL (*ret_file: the
 * map). The map is checked for changes when this mapping first uses it (a
 * new process under a reused pid writes a new file at the same path) and
 * when it does not name pc (a JIT appends as it compiles).
 */
static const struct sym *perf_map_find(struct symbols_cache *s, struct map_file *m, uint32_t pid, uint64_t pc,
                                       const struct elf_file **ret_file) {
        struct elf_file *f;
        const struct sym *y;

        if (ref_valid(s, &m->file) && s->files[m->file.slot].perf_map) {
                f = &s->files[m->file.slot];
                f->last_used = ++s->tick;
        } else {
                struct strbuf path = STRBUF_INIT;
                uint64_t now = now_usec();

                if (m->perf_map_retry > now)
                        return NULL;
                if (!perf_map_path(s, pid, &path)) {
                        m->perf_map_retry = now + PERF_MAP_RETRY_USEC;
                        strbuf_done(&path);
                        return NULL;
                }
                f = file_get_kind(s, path.buf, true, &m->file);
                strbuf_done(&path);
        }
        /* Unreadable (a FIFO, no permission): cached as such, as an ELF file is. */
        if (f->error < 0)
                return NULL;
        if (!m->perf_map_checked) {
                m->perf_map_checked = true;
                if (perf_map_changed(f))
                        perf_map_reload(s, f);
        }
        if (f->error < 0)
                return NULL;
        y = sym_find(f, pc);
        if (!y && perf_map_changed(f)) {
                perf_map_reload(s, f);
                y = f->error < 0 ? NULL : sym_find(f, pc);
        }
        *ret_file = f;
        return y;
}

/* ---- kernel symbols ---- */

struct kline {
        uint64_t start;
        uint32_t name, object;
        uint8_t rank;           /* global first among aliases */
        uint32_t seq;           /* then the first line */
};

static int kline_cmp(const void *a, const void *b) {
        const struct kline *x = a, *y = b;

        if (x->start != y->start)
                return x->start < y->start ? -1 : 1;
        if (x->rank != y->rank)
                return x->rank < y->rank ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * "ADDRESS TYPE NAME" and "\t[MODULE]" for a module's (kernel/kallsyms.c,
 * s_show()). Text only: t/T, and w/W (weak, which kallsyms gives for weak
 * functions). *ret_module is "" for the kernel's own. Modifies line.
 */
static bool parse_kallsyms_line(char *line, uint64_t *ret_start, char *ret_type, const char **ret_name,
                                const char **ret_module) {
        const char *p = line;
        char *name, *end;
        uint64_t start;
        char type;

        if (!parse_hex(&p, &start) || *p != ' ')
                return false;
        type = p[1];
        if (!type || p[2] != ' ')
                return false;
        name = (char *) p + 3;
        end = name + strcspn(name, " \t");
        if (end == name)
                return false;
        *ret_module = "";
        if (*end) {
                char *mod = end + strspn(end, " \t"), *close;

                *end = '\0';
                if (*mod) {
                        close = strchr(mod, ']');
                        if (mod[0] != '[' || !close || close == mod + 1 || close[1])
                                return false;
                        *close = '\0';
                        *ret_module = mod + 1;
                }
        }
        *ret_start = start;
        *ret_type = type;
        *ret_name = name;
        return true;
}

int symbols_cache_load_kallsyms(struct symbols_cache *c, const char *path) {
        _cleanup_free_ char *line = xmalloc(KALLSYMS_LINE_MAX);
        struct strbuf names = STRBUF_INIT, module = STRBUF_INIT;
        struct kline *lines = NULL;
        size_t n = 0, cap = 0, text = 0;
        uint32_t core, object = 0;
        bool skipping = false;
        struct ksym *syms;
        struct stat st;
        FILE *file;
        int r;

        file = fopen_regular(path, &st, &r);
        if (!file)
                return r;
        strbuf_append(&names, SYMBOLS_KALLSYMS_OBJECT, sizeof(SYMBOLS_KALLSYMS_OBJECT));
        core = 0;
        while (fgets(line, KALLSYMS_LINE_MAX, file)) {
                size_t len = strlen(line);
                const char *name, *mod;
                uint64_t start;
                char type;

                bool nl = len > 0 && line[len - 1] == '\n';

                if (skipping) {
                        /* The rest of a line too long, up to its end. */
                        skipping = !nl && len == KALLSYMS_LINE_MAX - 1;
                        continue;
                }
                if (!nl && len == KALLSYMS_LINE_MAX - 1) {
                        cache_count(&c->st.bad_symbol_lines, 1);
                        skipping = true;
                        continue;
                }
                line[strcspn(line, "\n")] = '\0';
                if (!parse_kallsyms_line(line, &start, &type, &name, &mod)) {
                        cache_count(&c->st.bad_symbol_lines, 1);
                        continue;
                }
                if (type != 't' && type != 'T' && type != 'w' && type != 'W')
                        continue;
                text++;
                if (start == 0)
                        continue;
                if (n == c->lim.max_symbols_per_file || names.len + strlen(name) + strlen(mod) + 4 > UINT32_MAX) {
                        cache_count(&c->st.symbols_truncated, 1);
                        continue;
                }
                if (!mod[0])
                        object = core;
                else if (object == core || !streq(module.buf, mod)) {
                        /* Modules' lines come together: one "[MODULE]" for each run. */
                        module.len = 0;
                        strbuf_puts(&module, mod);
                        object = (uint32_t) names.len;
                        strbuf_printf(&names, "[%s]", mod);
                        strbuf_putc(&names, '\0');
                }
                if (n == cap) {
                        cap = cap ? cap * 2 : ARRAY_MIN_CAP;
                        lines = xrealloc(lines, cap * sizeof(*lines));
                }
                lines[n] = (struct kline) {
                        .start = start,
                        .name = (uint32_t) names.len,
                        .object = object,
                        .rank = type == 'T' ? 0 : type == 't' ? 1 : 2,
                        .seq = (uint32_t) n,
                };
                n++;
                strbuf_append(&names, name, strlen(name) + 1);
        }
        fclose(file);
        strbuf_done(&module);
        if (n == 0) {
                free(lines);
                strbuf_done(&names);
                /* kptr_restrict: the lines are there, every address 0. */
                return text > 0 ? -EPERM : -EBADMSG;
        }

        qsort(lines, n, sizeof(*lines), kline_cmp);
        syms = xmalloc(n * sizeof(*syms));
        {
                size_t w = 0;

                for (size_t i = 0; i < n; i++)
                        if (w == 0 || lines[i].start != syms[w - 1].start)
                                syms[w++] = (struct ksym) {
                                        .start = lines[i].start,
                                        .name = lines[i].name,
                                        .object = lines[i].object,
                                };
                n = w;
        }
        free(lines);
        /* Up to the next symbol of the same object; the last of each ends a page after its own. */
        for (size_t i = 0; i < n; i++) {
                uint64_t tail = (syms[i].start / KALLSYMS_TAIL + 2) * KALLSYMS_TAIL;

                if (i + 1 < n && syms[i + 1].object == syms[i].object)
                        syms[i].end = syms[i + 1].start;
                else
                        syms[i].end = i + 1 < n ? MIN(tail, syms[i + 1].start) : tail;
                if (syms[i].end < syms[i].start) /* the top page */
                        syms[i].end = UINT64_MAX;
        }
        free(c->ksyms.syms);
        free(c->ksyms.names);
        c->ksyms = (struct kallsyms) { .syms = syms, .n = n, .names = strbuf_steal(&names, NULL) };
        return (int) MIN(n, (size_t) INT32_MAX);
}

static const struct ksym *ksym_find(const struct kallsyms *k, uint64_t addr) {
        size_t lo = 0, hi = k->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (k->syms[mid].start <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo > 0 && addr < k->syms[lo - 1].end ? &k->syms[lo - 1] : NULL;
}

bool symbols_result_object(const struct symbols_result *r, char *buf, size_t len) {
        const char *o = r->has_mapping || r->filename ? r->filename : r->function;

        if (!o || !*o || len == 0)
                return false;
        snprintf(buf, len, "%s", o);
        return true;
}

/* The mapping of pid at pc in snap (NULL when none), its file's lookup state made this cache's. */
static const struct mapping *cache_mapping(const struct symbols_cache *c, const struct symbols_snapshot *snap,
                                           uint32_t pid, uint64_t pc) {
        const struct mapping *m;
        const struct proc *p;
        size_t i;
        bool found;

        if (!snap)
                return NULL;
        i = proc_search(snap->procs, snap->n_procs, pid, &found);
        if (!found)
                return NULL;
        p = &snap->procs[i];
        proc_touch(snap->shared, p);
        m = maps_find(p->pm, pc);
        if (m && m->file->owner != c) {
                struct map_file *mf = m->file;

                /* First looked up by this cache: its refs name no slot of ours. */
                mf->owner = c;
                mf->file.slot = mf->debug.slot = mf->build.slot = SIZE_MAX;
                mf->debug_state = mf->build_state = mf->link_state = LOOKUP_UNKNOWN;
                mf->counted = false;
                mf->perf_map_checked = false;
                mf->perf_map_retry = 0;
        }
        return m;
}

/* ---- Data symbols ---- */

static struct srcline *mapping_dwarf(struct symbols_cache *c, struct map_file *mf, const struct elf_file *f,
                                     const struct elf_file *layout, struct file_ref *ret_ref);

/*
 * The ELF virtual address of file offset off of a data mapping: the PT_LOAD
 * whose file bytes hold it, else one whose memory image does (the part of a
 * page past p_filesz that the loader zeroes: .bss, ELF gABI "Program
 * Loading"). False when none does.
 */
static bool data_vaddr(const struct elf_file *f, uint64_t off, uint64_t *ret) {
        if (!f->relocatable || f->n_loads == 0) {
                *ret = off;
                return true;
        }
        for (size_t i = 0; i < f->n_loads; i++)
                if (off >= f->loads[i].offset && off - f->loads[i].offset < f->loads[i].filesz) {
                        *ret = off - f->loads[i].offset + f->loads[i].vaddr;
                        return true;
                }
        for (size_t i = f->n_loads; i > 0; i--)
                if (off >= f->loads[i - 1].offset && off - f->loads[i - 1].offset < f->loads[i - 1].memsz) {
                        *ret = off - f->loads[i - 1].offset + f->loads[i - 1].vaddr;
                        return true;
                }
        return false;
}

static const struct sym *dsym_find(const struct elf_file *f, uint64_t addr) {
        size_t lo = 0, hi = f->n_dsyms;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (f->dsyms[mid].start <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo == 0 || addr - f->dsyms[lo - 1].start >= f->dsyms[lo - 1].size)
                return NULL;
        return &f->dsyms[lo - 1];
}

int symbols_cache_data_symbol(struct symbols_cache *c, const struct symbols_snapshot *snap, uint32_t pid,
                              uint64_t addr, struct symbols_data *ret) {
        struct file_ref names_ref, dw_ref;
        struct symbols_data res;
        uint64_t var_start;
        struct srcline *dw;
        const struct elf_file *layout = NULL, *f;
        const struct mapping *m, *file_map;
        const struct proc *p;
        const struct sym *y;
        uint64_t off, vaddr;
        size_t i;
        bool found;

        if ((addr >> KERNEL_ADDR_SHIFT) == KERNEL_ADDR_TOP_BYTE)
                return -ENOENT;
        m = cache_mapping(c, snap, pid, addr);
        if (!m)
                return -ENOENT;
        file_map = m;
        off = addr - m->start + m->pgoff;
        if (!is_file_path(m->file->filename) || is_anon_memory(m->file->filename)) {
                /*
                 * The rest of .bss past the file's last page is anonymous
                 * memory right after the file's mapping (the loader maps it:
                 * glibc's _dl_map_segments(), the kernel's load_elf_binary()
                 * set_brk() for the executable): the file's image goes on.
                 */
                i = proc_search(snap->procs, snap->n_procs, pid, &found);
                p = &snap->procs[i];
                if (m == p->pm->maps || (m - 1)->end != m->start || !is_file_path((m - 1)->file->filename) ||
                    is_anon_memory((m - 1)->file->filename))
                        return -ENOENT;
                file_map = m - 1;
                if (file_map->file->owner != c)
                        (void) cache_mapping(c, snap, pid, file_map->start);
                off = file_map->end - file_map->start + file_map->pgoff + (addr - m->start);
        }
        f = symbol_file(c, file_map->file, &layout);
        if (!f || !data_vaddr(layout, off, &vaddr))
                return -ENOENT;
        y = dsym_find(f, vaddr);
        if (!y)
                return -ENOENT;
        var_start = y->start;
        res = (struct symbols_data) {
                .symbol = f->names + y->name,
                .offset = vaddr - y->start,
                .size = y->size,
                .filename = file_map->file->filename,
        };
        /* Its member at that offset, from its DWARF type (srcline_member()); the DWARF may be another file's. */
        names_ref = (struct file_ref) { (size_t) (f - c->files), f->gen };
        dw = mapping_dwarf(c, file_map->file, f, layout, &dw_ref);
        if (dw && srcline_member(dw, var_start, res.offset, res.member, sizeof(res.member), &res.type_size) < 0)
                res.member[0] = '\0';
        /* Opening a debug file for its DWARF may have evicted the file whose name this is. */
        if (!ref_valid(c, &names_ref))
                return -ENOENT;
        *ret = res;
        return 0;
}

/* The DWARF of f, opened once per load of its slot; NULL when it has none. */
static struct srcline *file_dwarf(struct symbols_cache *s, struct elf_file *f) {
        int k;

        if (!f || f->error < 0 || f->perf_map)
                return NULL;
        if (f->dwarf_state == DWARF_UNKNOWN) {
                k = srcline_open(f->path, &f->dwarf);
                f->dwarf_state = k < 0 ? DWARF_NONE : DWARF_OPEN;
                if (k >= 0)
                        cache_count(&s->st.dwarf_loaded, 1);
                else if (k != -ENODATA)
                        cache_count(&s->st.dwarf_errors, 1);
        }
        return f->dwarf;
}

/*
 * The DWARF of the file that names mf's symbols (f: the binary, or the debug
 * file of a stripped one), else of the binary (layout) when it kept its
 * DWARF but not .symtab, else of the detached debug file of its build (GDB's
 * and Debian's layout; perf's build-id cache's "debug"), as symbol_file()
 * finds it for symbols; *ret_ref the slot it is in. Slots are the cache's
 * own, evicted as ELF files are. NULL when none has DWARF.
 */
static struct srcline *mapping_dwarf(struct symbols_cache *c, struct map_file *mf, const struct elf_file *f,
                                     const struct elf_file *layout, struct file_ref *ret_ref) {
        struct srcline *dw = file_dwarf(c, &c->files[f - c->files]);

        if (dw)
                *ret_ref = (struct file_ref) { (size_t) (f - c->files), f->gen };
        if (!dw && layout != f) {
                dw = file_dwarf(c, &c->files[layout - c->files]);
                *ret_ref = (struct file_ref) { (size_t) (layout - c->files), layout->gen };
        }
        if (!dw) {
                const char *id = mf->build_id_hex[0] ? mf->build_id_hex : layout->build_id_hex;
                const struct elf_file *d = debug_file(c, mf, id, layout);

                dw = d ? file_dwarf(c, &c->files[d - c->files]) : NULL;
                if (dw)
                        *ret_ref = (struct file_ref) { (size_t) (d - c->files), d->gen };
        }
        return dw;
}

/* symbols_cache_lines(), and in *ret_ref the slot whose DWARF the strings point into. */
static int lines_of(struct symbols_cache *c, const struct symbols_snapshot *snap, uint32_t pid, uint64_t pc,
                    struct symbols_frame *ret, size_t max, struct file_ref *ret_ref) {
        struct srcline_frame frames[SRCLINE_MAX_FRAMES];
        const struct elf_file *layout = NULL, *f;
        struct srcline *dw = NULL;
        const struct mapping *m;
        struct map_file *mf;
        uint64_t addr;
        size_t n;

        if ((pc >> KERNEL_ADDR_SHIFT) == KERNEL_ADDR_TOP_BYTE)
                return 0;
        m = cache_mapping(c, snap, pid, pc);
        if (!m)
                return -ENOENT;
        mf = m->file;
        if (!is_file_path(mf->filename) || is_anon_memory(mf->filename))
                return 0;
        f = symbol_file(c, mf, &layout);
        if (!f)
                return 0;
        addr = file_vaddr(layout, pc - m->start + m->pgoff);
        dw = mapping_dwarf(c, mf, f, layout, ret_ref);
        if (!dw)
                return 0;
        n = srcline_lookup(dw, addr, frames, MIN(max, (size_t) SRCLINE_MAX_FRAMES));
        for (size_t i = 0; i < n; i++)
                ret[i] = (struct symbols_frame) {
                        .function = frames[i].function,
                        .file = frames[i].file,
                        .line = frames[i].line,
                };
        return (int) n;
}

int symbols_cache_lines(struct symbols_cache *c, const struct symbols_snapshot *snap, uint32_t pid, uint64_t pc,
                        struct symbols_frame *ret, size_t max) {
        struct file_ref ref;

        return lines_of(c, snap, pid, pc, ret, max, &ref);
}

int symbols_cache_lookup_lines(struct symbols_cache *c, const struct symbols_snapshot *snap, uint32_t pid,
                               uint64_t pc, struct symbols_result *ret, struct symbols_frame *ret_frames, size_t max,
                               size_t *ret_n) {
        struct symbols_result res;
        struct file_ref ref = { SIZE_MAX, 0 };
        int n, k;

        n = lines_of(c, snap, pid, pc, ret_frames, max, &ref);
        if (n < 0)
                return n;
        k = symbols_cache_lookup(c, snap, pid, pc, &res);
        if (k < 0)
                return k;
        /* The lookup reads the files the lines' did, all cached; should it have evicted the DWARF's slot, no lines. */
        if (n > 0 && !ref_valid(c, &ref))
                n = 0;
        *ret = res;
        *ret_n = (size_t) n;
        return 0;
}

int symbols_cache_lookup(struct symbols_cache *c, const struct symbols_snapshot *snap, uint32_t pid, uint64_t pc,
                         struct symbols_result *ret) {
        struct symbols_result res = {};
        const struct mapping *m;

        if ((pc >> KERNEL_ADDR_SHIFT) == KERNEL_ADDR_TOP_BYTE) {
                const struct ksym *k = ksym_find(&c->ksyms, pc);

                res.function = SYMBOLS_KERNEL_NAME;
                if (k) {
                        res.function = c->ksyms.names + k->name;
                        res.function_offset = pc - k->start;
                        res.filename = c->ksyms.names + k->object;
                }
                *ret = res;
                return 0;
        }
        m = cache_mapping(c, snap, pid, pc);
        if (!m)
                return -ENOENT;

        res.has_mapping = true;
        res.map_start = m->start;
        res.map_limit = m->end;
        res.map_pgoff = m->pgoff;
        res.filename = m->file->filename;
        memcpy(res.build_id_hex, m->file->build_id_hex, sizeof(res.build_id_hex));
        if (is_anon_memory(m->file->filename)) {
                const struct elf_file *f = NULL;
                const struct sym *y = perf_map_find(c, m->file, pid, pc, &f);

                if (y) {
                        res.function = f->names + y->name;
                        res.function_offset = pc - y->start;
                }
                /* perf_map_find() hands the map back only when it was read. */
                res.symbols_read = f;
        } else if (is_file_path(m->file->filename)) {
                struct map_file *mf = m->file;
                const struct elf_file *layout = NULL, *f;
                uint64_t addr;
                const struct sym *y;

                f = symbol_file(c, mf, &layout);
                addr = f ? file_vaddr(layout, pc - m->start + m->pgoff) : 0;
                y = f ? sym_find(f, addr) : NULL;
                if (y) {
                        res.function = f->names + y->name;
                        res.function_offset = addr - y->start;
                }
                res.symbols_read = f;
        }
        *ret = res;
        return 0;
}

/* ---- the single-threaded combination ---- */

struct symbols *symbols_new(const struct symbols_limits *limits) {
        struct symbols *s = xcalloc(1, sizeof(*s));

        s->maps = symbols_maps_new(limits);
        s->cache = symbols_cache_new(limits);
        return s;
}

struct symbols *symbols_free(struct symbols *s) {
        if (!s)
                return NULL;
        symbols_snapshot_unref(s->snap);
        symbols_maps_free(s->maps);
        symbols_cache_free(s->cache);
        free(s);
        return NULL;
}

int symbols_add_mapping(struct symbols *s, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
                        const char *filename, const uint8_t *build_id, size_t build_id_len) {
        return symbols_maps_add(s->maps, pid, start, len, pgoff, filename, build_id, build_id_len);
}

void symbols_remove_pid(struct symbols *s, uint32_t pid) {
        symbols_maps_remove_pid(s->maps, pid);
}

struct symbols_maps *symbols_get_maps(struct symbols *s) {
        return s->maps;
}

int symbols_load_kallsyms(struct symbols *s, const char *path) {
        return symbols_cache_load_kallsyms(s->cache, path);
}

/* Every mapping added so far. The same snapshot again while nothing was added: a reference, no copy. */
static const struct symbols_snapshot *symbols_current(struct symbols *s) {
        struct symbols_snapshot *snap = symbols_maps_publish(s->maps);

        symbols_snapshot_unref(s->snap);
        s->snap = snap;
        return snap;
}

int symbols_lookup(struct symbols *s, uint32_t pid, uint64_t pc, struct symbols_result *ret) {
        return symbols_cache_lookup(s->cache, symbols_current(s), pid, pc, ret);
}

int symbols_data_symbol(struct symbols *s, uint32_t pid, uint64_t addr, struct symbols_data *ret) {
        return symbols_cache_data_symbol(s->cache, symbols_current(s), pid, addr, ret);
}

int symbols_lines(struct symbols *s, uint32_t pid, uint64_t pc, struct symbols_frame *ret, size_t max) {
        return symbols_cache_lines(s->cache, symbols_current(s), pid, pc, ret, max);
}

int symbols_region(struct symbols *s, uint32_t pid, uint64_t addr, char *name, size_t name_len,
                   uint64_t *ret_offset) {
        return symbols_snapshot_region(symbols_current(s), pid, addr, name, name_len, ret_offset);
}

const struct symbols_stats *symbols_get_stats(struct symbols *s) {
        s->st = (struct symbols_stats) {
                .pid_evictions = s->maps->pid_evictions,
                .mapping_evictions = s->maps->mapping_evictions,
        };
        symbols_cache_stats(s->cache, &s->st);
        return &s->st;
}
