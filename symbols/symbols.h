/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Symbolization of user PCs from the mappings perf.data announces
 * (PERF_RECORD_MMAP/MMAP2, perf_event_open(2)) and the ELF files they name.
 *
 * A PC of process `pid` falls in one of its mappings [start, start + len);
 * its offset in the file is pc - start + pgoff (perf's map__map_ip()). For
 * ET_EXEC and ET_DYN files that offset becomes an ELF virtual address by
 * adding p_vaddr - p_offset of the PT_LOAD segment holding it (ELF gABI
 * "Program Header"; perf's dso__find_symbol() sees the same addresses), and
 * the FUNC symbol of .symtab (else .dynsym) covering it names the function.
 *
 * Build ids: a mapping that carries one (MMAP2, perf's build-id table) is
 * named only from a file of that build. When the file at its path is another
 * build (upgraded since the recording, another container's file), the copy
 * perf record keeps in its build-id cache is used when there is one, else
 * its PCs get no function name rather than a wrong one. A file without
 * .symtab (stripped, as Debian ships binaries) takes its function names from
 * the detached debug file of its build id, when installed, and its address
 * layout from the binary itself, else from the debug file its
 * .gnu_debuglink names (GDB's places; the same build id, or the link's
 * CRC-32). Files found by build id or link are looked for once per mapping;
 * a miss costs no cache slot.
 *
 * JIT code: a PC in anonymous executable memory ("//anon", "[anon:NAME]",
 * "/anon_hugepage", "/dev/zero", "/memfd:...": the shapes of perf's
 * is_anon_memory() in tools/perf/util/map.c, and of /proc/PID/maps) is named
 * from the process's perf map, /tmp/perf-PID.map, whose lines are
 * "START SIZE name" in hex (tools/perf/Documentation/jit-interface.txt). A
 * live process's map is read through its own root, <procfs>/PID/root/tmp,
 * under the pid its namespace gave it ("NSpid:" of <procfs>/PID/status,
 * proc(5)), as perf does (map__new(), nsinfo__pid()); a gone process's from
 * /tmp (SYMBOLS_PERF_MAP_DIR). A perf map takes a slot of the ELF file cache,
 * its lines bounded as a file's symbols are; JITs append, so a PC it does not
 * name makes it re-read when the file grew (or is another file: a new process
 * under a reused pid). The last line for an address wins. JITs leave their
 * maps behind: a live process's map last written before it started (proc(5)
 * starttime and btime) is an earlier process's and is not read.
 *
 * Kernel addresses are named from a kallsyms file (/proc/kallsyms, proc(5))
 * once the caller loads one; the caller decides whether it may (kernel
 * addresses are private: kptr_restrict, Documentation/admin-guide/sysctl/
 * kernel.rst). Without it they are SYMBOLS_KERNEL_NAME.
 *
 * Everything is bounded (struct symbols_limits): processes and mappings per
 * process are evicted least recently used / oldest first, ELF files are
 * cached least recently used with their symbols sorted once per load; each
 * eviction is counted. A file that cannot be read is cached as such so that
 * it is not retried for every sample.
 *
 * Two halves, so that the thread that learns of mappings never waits for
 * one that reads ELF files:
 *
 *  - the mapping table (struct symbols_maps): pid -> mappings, written by
 *    one thread (the collector's), which publishes it as immutable,
 *    reference-counted snapshots (struct symbols_snapshot). A publish
 *    shares every process's mappings with the table; the writer copies a
 *    process's mappings only when it changes them while a snapshot holds
 *    them (copy on write, per process). Snapshots may be read from any
 *    thread, and dropped on any.
 *  - the ELF file cache (struct symbols_cache): files, their symbols and
 *    what each mapping's lookups found, owned by the readers. Not
 *    thread-safe: one thread at a time (the readers' lock) per cache, and
 *    one cache per mapping table. A lookup takes a snapshot and the cache.
 *    Its counters are the exception: symbols_cache_stats() reads them from
 *    any thread without that lock, so a scrape of the counters never waits
 *    while a reader loads ELF files.
 *
 * struct symbols is the two together for one thread (a replay from
 * beginning to end, the tests): each lookup sees every mapping added.
 *
 * Library code: no logging, errors are negative errno values, allocation
 * failure aborts (strbuf.h).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

#define SYMBOLS_MAX_PIDS                4096
#define SYMBOLS_MAX_MAPPINGS_PER_PID    256
#define SYMBOLS_MAX_FILES               64
#define SYMBOLS_MAX_SYMBOLS_PER_FILE    (1U << 20)
/* NT_GNU_BUILD_ID of a SHA-1 build id; MMAP2 carries at most this much. */
#define SYMBOLS_BUILD_ID_MAX            20
/* Two lowercase hex digits per byte and the NUL. */
#define SYMBOLS_BUILD_ID_HEX_SIZE       (2 * SYMBOLS_BUILD_ID_MAX + 1)
/*
 * Where files are found by build id (colon-separated roots), in two layouts:
 * GDB's ROOT/.build-id/ab/cdef....debug (Debian's -dbgsym packages install
 * under /usr/lib/debug), and perf's build-id cache ROOT/.build-id/ab/cdef.../
 * with `elf` (the binary perf record kept) and `debug` (root's ~/.debug).
 */
#define SYMBOLS_DEBUG_DIRS              "/usr/lib/debug:/root/.debug"
/* What kernel addresses (top byte 0xff on arm64 and x86-64) resolve to. */
#define SYMBOLS_KERNEL_NAME             "[kernel]"
/* The object of a kernel function named from kallsyms, as perf says it; a module's is "[MODULE]". */
#define SYMBOLS_KALLSYMS_OBJECT         "[kernel.kallsyms]"
/* Where JITs write perf-PID.map (jit-interface.txt), for a process whose own root is gone. */
#define SYMBOLS_PERF_MAP_DIR            "/tmp"
#define SYMBOLS_PROCFS_ROOT             "/proc"

struct symbols_limits {
        size_t max_pids;
        size_t max_mappings_per_pid;
        size_t max_files;
        size_t max_symbols_per_file;
        const char *debug_dirs;         /* NULL: SYMBOLS_DEBUG_DIRS; "": none */
        const char *perf_map_dir;       /* NULL: SYMBOLS_PERF_MAP_DIR */
        const char *procfs_root;        /* NULL: SYMBOLS_PROCFS_ROOT; "": never through a live process's root */
};

struct symbols_stats {
        uint64_t pid_evictions;         /* processes forgotten to make room */
        uint64_t mapping_evictions;     /* mappings dropped from a full process */
        uint64_t file_evictions;        /* ELF files dropped from the cache */
        uint64_t files_loaded;          /* ELF files read (a re-read after eviction counts again) */
        uint64_t file_errors;           /* files that could not be read as ELF */
        uint64_t symbols_truncated;     /* FUNC symbols beyond max_symbols_per_file */
        uint64_t build_id_mismatches;   /* mappings whose file on disk is another build: no names */
        uint64_t debug_files;           /* mappings named through a detached debug file */
        uint64_t build_id_cache_files;  /* mappings named from perf's copy of their build */
        uint64_t perf_maps_loaded;      /* perf-PID.map files read (a re-read after growth counts again) */
        uint64_t bad_symbol_lines;      /* perf map and kallsyms lines that did not parse, or too long */
        uint64_t dwarf_loaded;          /* files whose DWARF was opened for source lines (again after an eviction) */
        uint64_t dwarf_errors;          /* files whose DWARF libdw refused (corrupt, truncated) or too large to read */
};

/*
 * The result of a lookup. filename points into the snapshot looked up (valid
 * while it is held), or for a kernel address into the cache; function into
 * the cache (valid until its next lookup or kallsyms load).
 * With struct symbols, both stay valid until its next symbols_add_mapping()
 * or symbols_lookup().
 */
struct symbols_result {
        bool has_mapping;               /* false for kernel addresses (filename: their kallsyms object, or NULL) */
        uint64_t map_start, map_limit;  /* [start, limit) */
        uint64_t map_pgoff;             /* file offset of map_start */
        const char *filename;
        char build_id_hex[SYMBOLS_BUILD_ID_HEX_SIZE]; /* "" when none */
        const char *function;           /* NULL when the file or symbol is unknown */
        uint64_t function_offset;       /* pc's distance from the symbol's start */
        /*
         * The mapping's symbols were read: its file (or the debug file or the
         * build-id cache's copy that names it), or its process's perf map for
         * anonymous memory. A pc without a function then has none there; when
         * false (the file is gone, unreadable, another build; [vdso]) nothing
         * was looked at, and another reader of the file might name it.
         */
        bool symbols_read;
};

/* ---- The mapping table (one writer) ---- */

struct symbols_maps;
struct symbols_snapshot;

/* limits NULL: the SYMBOLS_MAX_* defaults. Zero fields take the default too (here and below). */
struct symbols_maps *symbols_maps_new(const struct symbols_limits *limits);
struct symbols_maps *symbols_maps_free(struct symbols_maps *m);

/*
 * Add a mapping of `filename` at [start, start + len) from file offset
 * pgoff, replacing the parts of older mappings of that pid it overlaps (as
 * mmap(2) does). build_id may be NULL. Returns 0, or -EINVAL for an empty
 * or wrapping range or a build id longer than SYMBOLS_BUILD_ID_MAX.
 * Readers see it from the next symbols_maps_publish().
 */
int symbols_maps_add(struct symbols_maps *m, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
                     const char *filename, const uint8_t *build_id, size_t build_id_len);
/*
 * The same for a data mapping (PERF_RECORD_MISC_MMAP_DATA: heap, stack,
 * anonymous memory, a file's data), which names data addresses
 * (symbols_snapshot_region()). In a full process it displaces the oldest
 * data mapping, never a code one (it is dropped instead, and counted).
 */
int symbols_maps_add_data(struct symbols_maps *m, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
                          const char *filename);
/* Forget a process (PERF_RECORD_EXIT). */
void symbols_maps_remove_pid(struct symbols_maps *m, uint32_t pid);

/*
 * A reference to an immutable snapshot of the table as it is now (the same
 * one as last time when nothing changed since). Never fails.
 */
struct symbols_snapshot *symbols_maps_publish(struct symbols_maps *m);
struct symbols_snapshot *symbols_snapshot_ref(struct symbols_snapshot *snap);
/* Any thread. Returns NULL. */
struct symbols_snapshot *symbols_snapshot_unref(struct symbols_snapshot *snap);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct symbols_snapshot *, symbols_snapshot_unref);
/* Mappings it holds, over every process. */
size_t symbols_snapshot_mappings(const struct symbols_snapshot *snap);
/* The table's counters (pid_evictions, mapping_evictions) when it was published, into ret; snap may be NULL. */
void symbols_snapshot_stats(const struct symbols_snapshot *snap, struct symbols_stats *ret);

/*
 * Data mappings (symbols_maps_add_data(): PERF_RECORD_MISC_MMAP_DATA, what
 * perf record -d and attr.mmap_data bring) share the per-process bound
 * (SYMBOLS_MAX_MAPPINGS_PER_PID, evictions counted) but never push a code
 * mapping out.
 *
 * The mapping of pid that holds addr, for a data address (no ELF file is
 * read: any thread, no cache): its filename ("[heap]", "//anon", a path)
 * copied into name, and in *ret_offset the offset /proc/PID/maps would
 * give: its offset column (the file offset of a file's mapping, 0 for
 * anonymous memory) plus addr - start. Returns 0, or -ENOENT when no
 * mapping of pid holds addr (snap may be NULL).
 */
int symbols_snapshot_region(const struct symbols_snapshot *snap, uint32_t pid, uint64_t addr, char *name,
                            size_t name_len, uint64_t *ret_offset);

/* No process: what symbols_snapshot_owners() gives for an address it cannot attribute. */
#define SYMBOLS_PID_NONE UINT32_MAX

/*
 * Addresses without a process (pprof posts bare addresses to the symbol
 * endpoint): for each of the n addresses of addrs, ascending and distinct, a
 * pid in ret_pids to look it up in (symbols_cache_lookup()) when every
 * mapping of snap that holds it, over all processes, maps the same file (its
 * path and build id) at the same file offset there, so that it is the same
 * code whichever process it was sampled in; SYMBOLS_PID_NONE when no mapping
 * holds it, or two hold different files or offsets, or one of them is no
 * file (anonymous memory, [vdso], [heap]: each process's own). Kernel
 * addresses are in no mapping. No ELF file is read: any thread. snap may be
 * NULL.
 */
void symbols_snapshot_owners(const struct symbols_snapshot *snap, const uint64_t *addrs, size_t n,
                             uint32_t *ret_pids);

/* ---- The ELF file cache (readers, under their lock) ---- */

struct symbols_cache;

struct symbols_cache *symbols_cache_new(const struct symbols_limits *limits);
struct symbols_cache *symbols_cache_free(struct symbols_cache *c);

/*
 * Resolve pc of pid in snap (may be NULL: nothing mapped yet). Returns 0
 * with ret filled (ret->function may be NULL), or -ENOENT when no mapping
 * of pid covers pc. Kernel addresses return 0 with has_mapping false and
 * function SYMBOLS_KERNEL_NAME. Reads ELF files: never call it where
 * waiting on a disk is wrong.
 */
int symbols_cache_lookup(struct symbols_cache *c, const struct symbols_snapshot *snap, uint32_t pid, uint64_t pc,
                         struct symbols_result *ret);
/*
 * Source lines of pc of pid (symbols/srcline.h): its frames, innermost
 * first (the inlined functions that hold pc, then the function they are
 * inlined into), at most max, into ret. Returns how many: 0 for a pc
 * without lines (no DWARF for its file, or no line table row at it; a
 * kernel address, anonymous memory), or -ENOENT when no mapping of pid
 * covers pc. Strings point into the cache, valid until its next lookup.
 *
 * The DWARF is read from the file symbols_cache_lookup() names pc from
 * (the binary, or the detached debug file of its build id), else the
 * binary, else the debug file of its build id under the debug roots; each
 * is a slot of the ELF file cache (max_files, its evictions counted),
 * opened once per load. Reads files: never on a collector's path.
 */
#define SYMBOLS_MAX_FRAMES 8
struct symbols_frame {
        const char *function;   /* DWARF's name of the (inlined) function; NULL when none */
        const char *file;       /* source file as the line table gives it; NULL when unknown */
        uint32_t line;          /* 0: unknown */
};
int symbols_cache_lines(struct symbols_cache *c, const struct symbols_snapshot *snap, uint32_t pid, uint64_t pc,
                        struct symbols_frame *ret, size_t max);
/*
 * Both symbols_cache_lookup() and symbols_cache_lines() of pc, whose strings
 * all stay valid until the cache's next lookup (each alone may evict the
 * file the other's strings point into). 0 with ret, ret_frames and *ret_n
 * filled, or -ENOENT.
 */
int symbols_cache_lookup_lines(struct symbols_cache *c, const struct symbols_snapshot *snap, uint32_t pid,
                               uint64_t pc, struct symbols_result *ret, struct symbols_frame *ret_frames, size_t max,
                               size_t *ret_n);

/*
 * The variable that holds data address addr of pid (perf c2c's Data
 * Symbol): an OBJECT symbol (.data, .bss, .rodata; ELF gABI "Symbol Table")
 * of the file mapped there, or of the file whose mapping ends where the
 * anonymous one holding addr starts (the rest of its .bss, past the file's
 * pages), found through the PT_LOAD whose memory image holds addr, by the
 * symbols that name the file's functions (.symtab, a debug file by build id),
 * and the member at that offset from the variable's DWARF type when its DWARF
 * can be read (the files symbols_cache_lines() reads).
 * Thread-local variables (STT_TLS) are not addresses and are not found.
 * Returns 0 with ret filled (strings valid until the cache's next lookup),
 * or -ENOENT. Reads ELF files: never on a collector's path.
 */
/* A member's name, "struct shard[3].lock.owner": a type name and a path of a few members. */
#define SYMBOLS_MEMBER_MAX 512
struct symbols_data {
        const char *symbol;
        uint64_t offset;        /* addr's distance from the symbol's start, < size */
        uint64_t size;          /* st_size */
        const char *filename;   /* the file whose symbol it is (its mapping's path) */
        /*
         * The member at offset from the variable's DWARF type
         * (srcline_member(): "struct stats.misses", "struct shard[3].lock");
         * "" when the file has no DWARF or the type does not say (type_size 0).
         */
        char member[SYMBOLS_MEMBER_MAX];
        uint64_t type_size;
};
int symbols_cache_data_symbol(struct symbols_cache *c, const struct symbols_snapshot *snap, uint32_t pid,
                              uint64_t addr, struct symbols_data *ret);

/*
 * The cache's counters into ret (every field but pid_evictions and
 * mapping_evictions, left as they are). Any thread, without the cache's
 * lock, even while a lookup runs: each counter is exact and monotonic, but
 * they are read one by one, not as one instant.
 */
void symbols_cache_stats(const struct symbols_cache *c, struct symbols_stats *ret);
/*
 * Name kernel addresses from a kallsyms file ("ADDRESS TYPE NAME [MODULE]"
 * lines, /proc/kallsyms): its text symbols (types t, T, w, W), each up to
 * the next one (of its module: perf's symbols__fixup_end() in
 * tools/perf/util/symbol.c), replacing what an earlier load gave. Returns
 * the number of symbols kept; -EPERM when every address is 0 (what
 * kptr_restrict shows a reader not allowed to see them), -EBADMSG when no
 * line is a text symbol, or -errno of the file; the cache is unchanged on
 * error. Lookups of kernel addresses then give the function, its offset and
 * filename SYMBOLS_KALLSYMS_OBJECT or "[MODULE]" (has_mapping false).
 */
int symbols_cache_load_kallsyms(struct symbols_cache *c, const char *path);

/* ---- Both, for one thread ---- */

struct symbols;

struct symbols *symbols_new(const struct symbols_limits *limits);
struct symbols *symbols_free(struct symbols *s);
/* symbols_maps_add() */
int symbols_add_mapping(struct symbols *s, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
                        const char *filename, const uint8_t *build_id, size_t build_id_len);
void symbols_remove_pid(struct symbols *s, uint32_t pid);
/* Its mapping table, for code that feeds a symbols_maps (the daemon's one mapping callback). */
struct symbols_maps *symbols_get_maps(struct symbols *s);
/* symbols_cache_load_kallsyms() */
int symbols_load_kallsyms(struct symbols *s, const char *path);
/* symbols_cache_lookup() of every mapping added so far. */
int symbols_lookup(struct symbols *s, uint32_t pid, uint64_t pc, struct symbols_result *ret);
/* symbols_cache_data_symbol() of every mapping added so far. */
int symbols_data_symbol(struct symbols *s, uint32_t pid, uint64_t addr, struct symbols_data *ret);
/* symbols_cache_lines() of every mapping added so far. */
int symbols_lines(struct symbols *s, uint32_t pid, uint64_t pc, struct symbols_frame *ret, size_t max);
/* symbols_snapshot_region() of every mapping added so far. */
int symbols_region(struct symbols *s, uint32_t pid, uint64_t addr, char *name, size_t name_len,
                   uint64_t *ret_offset);

/* perf's "Object" of a lookup: the mapped file, or for a kernel address its
 * kallsyms object ("[kernel.kallsyms]", "[MODULE]") or else SYMBOLS_KERNEL_NAME,
 * copied into buf; false when there is none. */
bool symbols_result_object(const struct symbols_result *r, char *buf, size_t len);

/* Both halves' counters; valid until the next call. */
const struct symbols_stats *symbols_get_stats(struct symbols *s);
