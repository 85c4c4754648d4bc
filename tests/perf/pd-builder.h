/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Test helper: writes perf.data byte streams (file mode or pipe mode) the
 * way perf record lays them out [perf.data-file-format.txt], so the reader
 * tests, the fuzz seeds and the dump tool can be fed inputs with known
 * contents. Allocation failure aborts (test code).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

#include "pd-abi.h"
#include "strbuf.h"

#define PDB_MAX_ATTRS           8
#define PDB_MAX_IDS             16
#define PDB_MAX_FEATURES        16

/* sample_id trailer values (written per the first attr's sample_type). */
struct pdb_sid {
        uint32_t pid, tid;
        uint64_t time;
        uint64_t id;
        uint64_t stream_id;
        uint32_t cpu;
};

struct pdb_attr {
        struct perf_event_attr attr;
        uint64_t ids[PDB_MAX_IDS];
        size_t nr_ids;
};

struct pdb_feature {
        unsigned feat;
        struct strbuf data;
};

struct pdb {
        bool pipe;
        struct strbuf out;              /* pipe: the whole stream; file: unused until finish */
        struct strbuf data;             /* file mode: the data section */
        struct pdb_attr attrs[PDB_MAX_ATTRS];
        size_t nr_attrs;
        struct pdb_feature features[PDB_MAX_FEATURES];
        size_t nr_features;
        uint64_t trailer_type;          /* sample_type of the trailer; 0 if !sample_id_all */
        struct pdb_sid sid;             /* current trailer values */
};

void pdb_init(struct pdb *b, bool pipe);
void pdb_done(struct pdb *b);

/* Current stream offset where the next record goes (file offset of the output). */
uint64_t pdb_offset(const struct pdb *b);

void pdb_add_attr(struct pdb *b, const struct perf_event_attr *attr, const uint64_t *ids, size_t nr_ids);
void pdb_add_feature(struct pdb *b, unsigned feat, const void *data, size_t len);
void pdb_feature_string(struct pdb *b, unsigned feat, const char *s);
void pdb_feature_nrcpus(struct pdb *b, uint32_t avail, uint32_t online);

/* A raw record: header + body (+ trailer when with_trailer). */
void pdb_record(struct pdb *b, uint32_t type, uint16_t misc, const void *body, size_t len, bool with_trailer);
/* Raw bytes into the stream (payloads, corrupt records). */
void pdb_raw(struct pdb *b, const void *data, size_t len);

void pdb_comm(struct pdb *b, uint32_t pid, uint32_t tid, const char *comm, bool exec);
void pdb_mmap(struct pdb *b, uint32_t pid, uint32_t tid, uint64_t addr, uint64_t len, uint64_t pgoff,
              const char *filename);
void pdb_mmap2(struct pdb *b, uint32_t pid, uint32_t tid, uint64_t addr, uint64_t len, uint64_t pgoff,
               uint32_t maj, uint32_t min, uint64_t ino, uint32_t prot, uint32_t flags, const char *filename);
void pdb_mmap2_build_id(struct pdb *b, uint32_t pid, uint32_t tid, uint64_t addr, uint64_t len,
                        const uint8_t *build_id, uint8_t build_id_size, const char *filename);
void pdb_task(struct pdb *b, uint32_t type, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid, uint64_t time);
void pdb_lost(struct pdb *b, uint64_t id, uint64_t lost);
void pdb_lost_samples(struct pdb *b, uint64_t lost);
void pdb_aux(struct pdb *b, uint64_t aux_offset, uint64_t aux_size, uint64_t flags);
void pdb_itrace_start(struct pdb *b, uint32_t pid, uint32_t tid);
void pdb_switch(struct pdb *b, bool out, bool preempt);
void pdb_switch_cpu_wide(struct pdb *b, bool out, uint32_t next_prev_pid, uint32_t next_prev_tid);
void pdb_time_conv(struct pdb *b, uint64_t shift, uint64_t mult, uint64_t zero, bool ext);
void pdb_finished_round(struct pdb *b);
/* A SAMPLE whose body is given pre-encoded (u64 words). */
void pdb_sample_words(struct pdb *b, const uint64_t *words, size_t nr, uint16_t misc);
void pdb_auxtrace(struct pdb *b, uint32_t idx, uint32_t cpu, uint32_t tid, uint64_t offset,
                  const void *data, size_t len);
void pdb_auxtrace_info_spe_v1(struct pdb *b, uint64_t pmu_type);
/* Version 2: per CPU {magic, cpu, nr_params, midr, pmu_type, min_interval[, event_filter]}. */
void pdb_auxtrace_info_spe_v2(struct pdb *b, uint64_t pmu_type, const uint32_t *cpus, const uint64_t *midrs,
                              size_t nr_cpus, unsigned nr_params);
/* Pipe-mode tracing data: {header; u32 size; u32 pad} + size bytes. */
void pdb_tracing_data(struct pdb *b, const void *data, size_t len);

/* Finish the stream; the returned buffer belongs to the caller (free()). */
uint8_t *pdb_finish(struct pdb *b, size_t *ret_len);

/* A SPE-like attr (IDENTIFIER|IP|TID|TIME|CPU, sample_id_all) and a dummy. */
void pdb_spe_attr(struct perf_event_attr *a, uint32_t pmu_type);
void pdb_dummy_attr(struct perf_event_attr *a);

/* Write a buffer to a new file in dir; returns the malloc()ed path. */
char *pdb_write_file(const char *dir, const char *name, const void *data, size_t len);
