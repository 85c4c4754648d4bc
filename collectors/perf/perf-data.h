/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * perf.data reader: a streaming parser for the files (and pipe streams) that
 * `perf record` writes, independent of the daemon. It reads in bounded
 * chunks (never the whole file), hands every record it understands to a
 * table of callbacks and delivers AUXTRACE payloads (the raw SPE bytes) in
 * pieces straight out of its read buffer.
 *
 * Layout references: tools/perf/Documentation/perf.data-file-format.txt
 * ("perf.data format"), tools/perf/util/header.h, tools/perf/util/event.h,
 * tools/lib/perf/include/perf/event.h, and perf_event_open(2) for the kernel
 * record bodies. Only little-endian files are supported (every machine we run
 * on is little-endian); an opposite-endian file is rejected with a message.
 *
 * Errors are negative errno values:
 *   -EBADMSG          corrupt structure (bad size, section past the end...)
 *   -ENODATA          the input ends inside a header, section or record
 *   -EPROTONOSUPPORT  not a perf.data (foreign magic, opposite endianness,
 *                     old "PERFFILE" v1 format)
 *   -EOPNOTSUPP       compressed records (perf record -z)
 *   -ESPIPE           file-mode perf.data on an unseekable fd
 *   -errno from read(2)/pread(2), or whatever a callback returned.
 * perf_data_reader_error() then says what went wrong and at which byte
 * offset of the input. Everything decoded before the damage has already been
 * delivered.
 *
 * Order of delivery. File mode: the attrs, then the feature sections (they
 * sit after the data but say what the machine was), then the data records in
 * file order. A damaged feature section does not hold back the records; its
 * error is returned after them. Pipe mode: everything in stream order (the
 * ATTR and FEATURE records included). Records are not time-sorted: that is
 * the consumer's business (perf sorts by FINISHED_ROUND; SPE consumers
 * usually only need per-CPU order, which the stream already has).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

#include "perf-record.h"

/* "PERFILE2" read as a little-endian u64 [perf.data-file-format.txt]. */
#define PERF_DATA_MAGIC2        UINT64_C(0x32454c4946524550)
/* The same bytes written by a big-endian machine. */
#define PERF_DATA_MAGIC2_SWAPPED UINT64_C(0x50455246494c4532)
/* "PERFFILE": the pre-2.6.37 format. */
#define PERF_DATA_MAGIC1        UINT64_C(0x454c494646524550)

/* struct perf_file_section: {u64 offset; u64 size} */
struct perf_data_file_section {
        uint64_t offset;
        uint64_t size;
};

/* struct perf_file_header [perf.data-file-format.txt "header"]. */
#define PERF_DATA_FEAT_BITS     256
struct perf_data_file_header {
        uint64_t magic;
        uint64_t size;          /* size of this header */
        uint64_t attr_size;     /* size of one attrs entry: attr + ids section */
        struct perf_data_file_section attrs;
        struct perf_data_file_section data;
        struct perf_data_file_section event_types; /* unused */
        uint64_t adds_features[PERF_DATA_FEAT_BITS / 64];
};
#define PERF_DATA_FILE_HEADER_SIZE      104
#define PERF_DATA_PIPE_HEADER_SIZE      16

/* Feature bits (enum HEADER_*, tools/perf/util/header.h). */
enum {
        PERF_DATA_FEAT_TRACING_DATA     = 1,
        PERF_DATA_FEAT_BUILD_ID         = 2,
        PERF_DATA_FEAT_HOSTNAME         = 3,
        PERF_DATA_FEAT_OSRELEASE        = 4,
        PERF_DATA_FEAT_VERSION          = 5,
        PERF_DATA_FEAT_ARCH             = 6,
        PERF_DATA_FEAT_NRCPUS           = 7,
        PERF_DATA_FEAT_CPUDESC          = 8,
        PERF_DATA_FEAT_CPUID            = 9,
        PERF_DATA_FEAT_TOTAL_MEM        = 10,
        PERF_DATA_FEAT_CMDLINE          = 11,
        PERF_DATA_FEAT_EVENT_DESC       = 12,
        PERF_DATA_FEAT_CPU_TOPOLOGY     = 13,
        PERF_DATA_FEAT_NUMA_TOPOLOGY    = 14,
        PERF_DATA_FEAT_BRANCH_STACK     = 15,
        PERF_DATA_FEAT_PMU_MAPPINGS     = 16,
        PERF_DATA_FEAT_GROUP_DESC       = 17,
        PERF_DATA_FEAT_AUXTRACE         = 18,
        PERF_DATA_FEAT_STAT             = 19,
        PERF_DATA_FEAT_CACHE            = 20,
        PERF_DATA_FEAT_SAMPLE_TIME      = 21,
        PERF_DATA_FEAT_MEM_TOPOLOGY     = 22,
        PERF_DATA_FEAT_CLOCKID          = 23,
        PERF_DATA_FEAT_DIR_FORMAT       = 24,
        PERF_DATA_FEAT_BPF_PROG_INFO    = 25,
        PERF_DATA_FEAT_BPF_BTF          = 26,
        PERF_DATA_FEAT_COMPRESSED       = 27,
        PERF_DATA_FEAT_CPU_PMU_CAPS     = 28,
        PERF_DATA_FEAT_CLOCK_DATA       = 29,
        PERF_DATA_FEAT_HYBRID_TOPOLOGY  = 30,
        PERF_DATA_FEAT_PMU_CAPS         = 31,
};

/* perf >= 5.10 appended time_cycles..cap_user_time_short; older files stop at time_zero. */
struct perf_data_wire_time_conv {
        uint64_t time_shift, time_mult, time_zero;
        uint64_t time_cycles, time_mask;
        uint8_t cap_user_time_zero, cap_user_time_short;
        uint8_t reserved[6];
};
#define PERF_DATA_TIME_CONV_V1_SIZE     (3 * sizeof(uint64_t))

/* PERF_RECORD_AUXTRACE: followed by `size` payload bytes not counted in header.size. */
struct perf_data_wire_auxtrace {
        uint64_t size, offset, reference;
        uint32_t idx, tid, cpu, reserved;
};

struct perf_data_wire_auxtrace_info {   /* + u64 priv[] */
        uint32_t type, reserved;
};

/* PERF_RECORD_HEADER_TRACING_DATA: followed by `size` bytes of tracing data. */
struct perf_data_wire_tracing_data {
        uint32_t size, pad;
};

/*
 * A build-id table entry: HEADER_BUILD_ID feature sections hold a run of
 * them (header.type 0), pipe mode sends each as PERF_RECORD_HEADER_BUILD_ID
 * (perf's struct perf_record_header_build_id, tools/perf/util/header.c
 * write_buildid()). The 24-byte id field holds the id, then its length when
 * misc has PERF_DATA_MISC_BUILD_ID_SIZE (else the id is 20 bytes); the
 * NUL-terminated file name follows, padded to 64 bytes.
 */
struct perf_data_wire_build_id {        /* + char filename[] */
        uint32_t type;
        uint16_t misc, size;
        int32_t pid;
        uint8_t build_id[PERF_DATA_BUILD_ID_MAX];
        uint8_t build_id_size;
        uint8_t reserved[3];
};
#define PERF_DATA_MISC_BUILD_ID_SIZE    (1U << 15)
/* The pid of the host's entries (perf's HOST_KERNEL_ID); guests have their own. */
#define PERF_DATA_BUILD_ID_HOST         (-1)

/* PERF_RECORD_HEADER_FEATURE: + the feature section's contents. */
struct perf_data_wire_feature {
        uint64_t feat_id;
};

/* HEADER_NRCPUS section (tools/perf/util/header.c write_nrcpus). */
struct perf_data_wire_nrcpus {
        uint32_t nr_cpus_avail, nr_cpus_online;
};

/* Stats count records by type below this bound; others go to "other". */
#define PERF_DATA_NR_TYPES              128

/* enum auxtrace_type (tools/perf/util/auxtrace.h). */
enum {
        PERF_AUXTRACE_UNKNOWN           = 0,
        PERF_AUXTRACE_INTEL_PT          = 1,
        PERF_AUXTRACE_INTEL_BTS         = 2,
        PERF_AUXTRACE_CS_ETM            = 3,
        PERF_AUXTRACE_ARM_SPE           = 4,
        PERF_AUXTRACE_S390_CPUMSF       = 5,
        PERF_AUXTRACE_HISI_PTT          = 6,
};

struct perf_data_attr {
        struct perf_event_attr attr;    /* zero-extended to our struct size */
        uint32_t attr_size;             /* size the file had */
        size_t nr_ids;
        uint64_t *ids;
};

struct perf_data_auxtrace_info {
        struct perf_data_record rec;
        uint32_t type;                  /* PERF_AUXTRACE_* */
        const uint8_t *priv;            /* raw private area; unaligned */
        size_t priv_len;
        /*
         * The private area as the decoder of this type made it (its own
         * struct: struct spe_info for Arm SPE), NULL without a decoder.
         */
        const void *decoded;
};

struct perf_data_auxtrace {
        uint64_t file_offset;           /* of the 48-byte record */
        uint64_t size;                  /* payload bytes */
        uint64_t offset;                /* AUX ring position of the first byte */
        uint64_t reference;
        uint32_t idx;                   /* mmap (queue) index */
        uint32_t tid;                   /* (u32)-1 in per-CPU mode */
        uint32_t cpu;                   /* (u32)-1 in per-thread mode */
};

struct perf_data_build_id {
        uint64_t file_offset;           /* of the entry */
        uint16_t misc;                  /* PERF_RECORD_MISC_CPUMODE_MASK: kernel, user, guest... */
        int32_t pid;                    /* the machine: PERF_DATA_BUILD_ID_HOST, else a guest */
        uint8_t build_id_size;
        uint8_t build_id[PERF_DATA_BUILD_ID_MAX];
        const char *filename;
};

/* PERF_RECORD_TIME_CONV (tools/lib/perf/include/perf/event.h). */
struct perf_data_time_conv {
        struct perf_data_record rec;
        uint64_t time_shift, time_mult, time_zero;
        bool has_cycles;                /* newer perf: the fields below */
        uint64_t time_cycles, time_mask;
        bool cap_user_time_zero, cap_user_time_short;
};

/*
 * Consumer callbacks. Any may be NULL. A negative return stops the reader,
 * which returns that value. Pointers are valid only during the call.
 */
struct perf_data_ops {
        /* Every record, before its typed callback (dump tools, unknown types). */
        int (*on_record)(void *userdata, const struct perf_data_record *rec);
        /* File mode: each attrs entry; pipe mode: each HEADER_ATTR record. */
        int (*on_attr)(void *userdata, const struct perf_data_attr *attr);
        /* A feature section (file mode, sections up to 64 KiB) or HEADER_FEATURE. */
        int (*on_feature)(void *userdata, unsigned feat, const uint8_t *data, size_t len);
        int (*on_auxtrace_info)(void *userdata, const struct perf_data_auxtrace_info *info);
        /*
         * AUXTRACE payload in pieces: `chunk_offset` is where `data` starts
         * within the payload; `last` is set on the final piece (a zero-size
         * payload gets one call with len 0).
         */
        int (*on_auxtrace)(void *userdata, const struct perf_data_auxtrace *at,
                           uint64_t chunk_offset, const uint8_t *data, size_t len, bool last);
        int (*on_aux)(void *userdata, const struct perf_data_aux *aux);
        int (*on_lost)(void *userdata, const struct perf_data_lost *lost);
        int (*on_comm)(void *userdata, const struct perf_data_comm *comm);
        int (*on_mmap)(void *userdata, const struct perf_data_mmap *mmap);
        /* The build-id table: file mode before the records (it is a feature), pipe mode where it comes. */
        int (*on_build_id)(void *userdata, const struct perf_data_build_id *bid);
        int (*on_fork)(void *userdata, const struct perf_data_task *task);
        int (*on_exit)(void *userdata, const struct perf_data_task *task);
        int (*on_switch)(void *userdata, const struct perf_data_switch *sw);
        int (*on_itrace_start)(void *userdata, const struct perf_data_itrace_start *is);
        int (*on_time_conv)(void *userdata, const struct perf_data_time_conv *tc);
        int (*on_sample)(void *userdata, const struct perf_data_sample *sample);
};

/*
 * Per-CPU counters; CPUs beyond PERF_DATA_MAX_CPUS or (u32)-1 are not kept.
 * These are the container's raw per-record counts, whatever the records
 * carry; the replay turns what concerns an SPE stream into its struct
 * spe_stream_stats (collectors/source.h), the one struct for stream health.
 */
#define PERF_DATA_MAX_CPUS      4096
struct perf_data_cpu_stats {
        uint64_t auxtrace_records;
        uint64_t aux_bytes;             /* AUXTRACE payload bytes */
        uint64_t aux_records;           /* PERF_RECORD_AUX */
        uint64_t aux_truncated, aux_overwrite, aux_partial, aux_collision;
        uint64_t lost;                  /* LOST.lost + LOST_SAMPLES.lost */
        uint64_t samples;
};

struct perf_data_stats {
        uint64_t records_total;
        uint64_t records_by_type[PERF_DATA_NR_TYPES];
        uint64_t records_other_type;    /* type >= PERF_DATA_NR_TYPES */
        uint64_t aux_bytes;             /* all AUXTRACE payload bytes */
        uint64_t aux_truncated, aux_overwrite, aux_partial, aux_collision;
        uint64_t lost;                  /* sum of LOST.lost */
        uint64_t lost_samples;          /* sum of LOST_SAMPLES.lost */
        uint64_t unresolved_ids;        /* records whose sample id matched no attr */
};

struct perf_data_reader;

/*
 * A decoder of one auxtrace type's AUXTRACE_INFO private area, which the
 * container does not know (Arm SPE's: spe_info_attach(), collectors/spe/
 * spe-info.h). It runs before on_auxtrace_info, which then sees its result.
 */
struct perf_data_auxtrace_decoder {
        uint32_t type;                  /* PERF_AUXTRACE_* */
        /*
         * Decode info->priv and set info->decoded (memory the decoder owns).
         * 0, or a negative errno with a message in err: the run fails with it.
         */
        int (*decode)(void *state, struct perf_data_auxtrace_info *info, char *err, size_t err_len);
        /* Optional: a CPU's MIDR as the decoded info states it, -ENOENT when it does not. */
        int (*midr)(void *state, uint32_t cpu, uint64_t *ret_midr);
        void *state;
};

/* Constructors read nothing yet; perf_data_reader_run() does the work. */
int perf_data_reader_new_path(const char *path, struct perf_data_reader **ret);
/* take_fd: the reader closes fd when freed. A pipe must carry pipe mode. */
int perf_data_reader_new_fd(int fd, bool take_fd, struct perf_data_reader **ret);
/* The memory must outlive the reader; nothing is copied beyond the read buffer. */
int perf_data_reader_new_memory(const void *data, size_t size, struct perf_data_reader **ret);
struct perf_data_reader *perf_data_reader_free(struct perf_data_reader *reader);

/*
 * Test hook: read at most max_read bytes per read call (default 1 MiB), so
 * that records and AUXTRACE payloads straddle chunk boundaries.
 */
void perf_data_reader_set_read_size(struct perf_data_reader *reader, size_t max_read);

/*
 * Before each read, wait with poll(2) until the input is ready or cancel_fd
 * is readable (an eventfd, say); the run then fails with -ECANCELED. Pipes
 * are always polled first, so a FIFO opened with O_NONBLOCK and no writer yet
 * waits for one instead of reading an early end of file.
 */
void perf_data_reader_set_cancel_fd(struct perf_data_reader *reader, int cancel_fd);
/*
 * That wait alone: 0 when fd has data or its writer left, -ECANCELED when
 * cancel_fd (or -1 for none) became readable first, or -errno.
 */
int perf_data_wait_readable(int fd, int cancel_fd);

/*
 * Read everything once, blocking: a pipe is waited for with poll(2) (and
 * cancel_fd). 0 on success, else a negative error (see above). It is
 * perf_data_reader_begin() and perf_data_reader_step() until the end.
 */
int perf_data_reader_run(struct perf_data_reader *reader, const struct perf_data_ops *ops, void *userdata);

/*
 * The resumable reader, for an event loop: begin() once (it allocates the
 * read buffer and reads nothing), then step() whenever the input may have
 * more. A step hands out at most `budget` units (a record, or a piece of an
 * AUXTRACE payload as it sits in the read buffer, at most 1 MiB) and returns
 *   1        more is ready: step again (after the loop's other work)
 *   0        the input ended cleanly (the deferred feature error, if any,
 *            is returned instead, as perf_data_reader_run() does)
 *   -EAGAIN  a pipe or FIFO (opened O_NONBLOCK) has nothing now: step again
 *            when it polls readable. The state survives anywhere, inside a
 *            record or an AUXTRACE payload; no byte is read twice or lost.
 *   <0       an error, with perf_data_reader_error() as for run().
 * Once it returned 0 or an error, it returns the same again. A step never
 * blocks on a pipe (cancel_fd is not used); a file-mode input reads its
 * header, attrs and features in the first step (a seekable input never
 * waits). Callbacks run inside the step, as with run().
 */
int perf_data_reader_begin(struct perf_data_reader *reader, const struct perf_data_ops *ops, void *userdata);
int perf_data_reader_step(struct perf_data_reader *reader, size_t budget);
/* The last step returned 0 or an error. */
bool perf_data_reader_done(const struct perf_data_reader *reader);

/* "" when nothing failed. */
const char *perf_data_reader_error(const struct perf_data_reader *reader);

bool perf_data_reader_is_pipe(const struct perf_data_reader *reader);
const struct perf_data_stats *perf_data_reader_stats(const struct perf_data_reader *reader);
/* NULL when nothing was counted for that CPU. */
const struct perf_data_cpu_stats *perf_data_reader_cpu_stats(const struct perf_data_reader *reader, uint32_t cpu);
/* One past the highest CPU with stats. */
uint32_t perf_data_reader_nr_cpu_stats(const struct perf_data_reader *reader);

size_t perf_data_reader_nr_attrs(const struct perf_data_reader *reader);
const struct perf_data_attr *perf_data_reader_attr(const struct perf_data_reader *reader, size_t i);

/* HEADER_NRCPUS: -ENOENT when the input had none. */
int perf_data_reader_nr_cpus(const struct perf_data_reader *reader, uint32_t *ret_avail, uint32_t *ret_online);
/* HEADER_CPUID string ("0x00000000410fd0c0" on arm64), NULL when absent. */
const char *perf_data_reader_cpuid(const struct perf_data_reader *reader);
/* The decoder of one auxtrace type (the last one set for a type wins); d must outlive the reader. */
int perf_data_reader_add_auxtrace_decoder(struct perf_data_reader *reader, const struct perf_data_auxtrace_decoder *d);

/*
 * MIDR of a CPU: from an auxtrace decoder (the SPE AUXTRACE_INFO per-CPU
 * metadata) when it knows, else the HEADER_CPUID MIDR (perf assumes a
 * homogeneous machine then). -ENOENT when neither says.
 */
int perf_data_reader_midr(const struct perf_data_reader *reader, uint32_t cpu, uint64_t *ret_midr);

/* Parse an arm64 CPUID string "0x<hex>" into a MIDR; -EINVAL otherwise. */
int perf_data_parse_midr(const char *s, uint64_t *ret_midr);
