/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pd-builder.h"

#include <assert.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pd-abi.h"

/* perf pads strings in records to u64 and in feature sections to 64 bytes (NAME_ALIGN). */
#define PDB_NAME_ALIGN 64

static struct strbuf *stream(struct pdb *b) {
        return b->pipe ? &b->out : &b->data;
}

static void put(struct strbuf *sb, const void *p, size_t n) {
        /* memcpy(dst, NULL, 0) is undefined; bodyless records pass NULL. */
        if (n == 0)
                return;
        strbuf_append(sb, p, n);
}

static void put64(struct strbuf *sb, uint64_t v) {
        put(sb, &v, sizeof(v));
}

static void put32(struct strbuf *sb, uint32_t v) {
        put(sb, &v, sizeof(v));
}

static void pad_to(struct strbuf *sb, size_t from, size_t align) {
        static const uint8_t zero[PDB_NAME_ALIGN];
        size_t n = (sb->len - from) % align;

        if (n)
                put(sb, zero, align - n);
}

void pdb_init(struct pdb *b, bool pipe) {
        *b = (struct pdb) { .pipe = pipe, .out = STRBUF_INIT, .data = STRBUF_INIT };
        if (pipe) {
                put64(&b->out, PDB_MAGIC2);
                put64(&b->out, PDB_PIPE_HEADER_SIZE);
        }
}

void pdb_done(struct pdb *b) {
        strbuf_done(&b->out);
        strbuf_done(&b->data);
        for (size_t i = 0; i < b->nr_features; i++)
                strbuf_done(&b->features[i].data);
        b->nr_features = 0;
}

uint64_t pdb_offset(const struct pdb *b) {
        if (b->pipe)
                return b->out.len;
        /* File mode lays out header, attrs, ids, then data (see pdb_finish). */
        size_t ids = 0;

        for (size_t i = 0; i < b->nr_attrs; i++)
                ids += b->attrs[i].nr_ids * 8;
        return PDB_FILE_HEADER_SIZE + b->nr_attrs * (sizeof(struct perf_event_attr) + 16) + ids + b->data.len;
}

static size_t trailer_len(const struct pdb *b) {
        uint64_t st = b->trailer_type;

        return 8 * (!!(st & PERF_SAMPLE_TID) + !!(st & PERF_SAMPLE_TIME) + !!(st & PERF_SAMPLE_ID) +
                    !!(st & PERF_SAMPLE_STREAM_ID) + !!(st & PERF_SAMPLE_CPU) + !!(st & PERF_SAMPLE_IDENTIFIER));
}

static void put_trailer(struct pdb *b, struct strbuf *sb) {
        uint64_t st = b->trailer_type;

        if (st & PERF_SAMPLE_TID) {
                put32(sb, b->sid.pid);
                put32(sb, b->sid.tid);
        }
        if (st & PERF_SAMPLE_TIME)
                put64(sb, b->sid.time);
        if (st & PERF_SAMPLE_ID)
                put64(sb, b->sid.id);
        if (st & PERF_SAMPLE_STREAM_ID)
                put64(sb, b->sid.stream_id);
        if (st & PERF_SAMPLE_CPU) {
                put32(sb, b->sid.cpu);
                put32(sb, 0);
        }
        if (st & PERF_SAMPLE_IDENTIFIER)
                put64(sb, b->sid.id);
}

void pdb_add_attr(struct pdb *b, const struct perf_event_attr *attr, const uint64_t *ids, size_t nr_ids) {
        struct pdb_attr *a;

        assert(b->nr_attrs < PDB_MAX_ATTRS && nr_ids <= PDB_MAX_IDS);
        a = &b->attrs[b->nr_attrs++];
        a->attr = *attr;
        a->attr.size = sizeof(a->attr);
        memcpy(a->ids, ids, nr_ids * sizeof(*ids));
        a->nr_ids = nr_ids;
        if (b->nr_attrs == 1)
                b->trailer_type = attr->sample_id_all ? attr->sample_type : 0;

        if (b->pipe) {
                /* PDB_RECORD_HEADER_ATTR: attr then the ids, header.size covering both. */
                struct perf_event_header h = {
                        .type = PDB_RECORD_HEADER_ATTR,
                        .size = (uint16_t) (sizeof(h) + sizeof(a->attr) + nr_ids * 8),
                };

                put(&b->out, &h, sizeof(h));
                put(&b->out, &a->attr, sizeof(a->attr));
                put(&b->out, ids, nr_ids * 8);
        }
}

void pdb_add_feature(struct pdb *b, unsigned feat, const void *data, size_t len) {
        if (b->pipe) {
                /* PDB_RECORD_HEADER_FEATURE: {header; u64 feat_id; data}, not padded. */
                struct perf_event_header h = {
                        .type = PDB_RECORD_HEADER_FEATURE,
                        .size = (uint16_t) (sizeof(h) + 8 + len),
                };

                assert(sizeof(h) + 8 + len <= UINT16_MAX);
                put(&b->out, &h, sizeof(h));
                put64(&b->out, feat);
                put(&b->out, data, len);
                return;
        }
        assert(b->nr_features < PDB_MAX_FEATURES);
        /* Sections go out in increasing bit order; keep the list sorted. */
        size_t i = b->nr_features++;
        while (i > 0 && b->features[i - 1].feat > feat) {
                b->features[i] = b->features[i - 1];
                i--;
        }
        b->features[i] = (struct pdb_feature) { .feat = feat, .data = STRBUF_INIT };
        put(&b->features[i].data, data, len);
}

void pdb_feature_string(struct pdb *b, unsigned feat, const char *s) {
        struct strbuf sb = STRBUF_INIT;
        size_t n = strlen(s) + 1;
        uint32_t len = (uint32_t) ((n + PDB_NAME_ALIGN - 1) / PDB_NAME_ALIGN * PDB_NAME_ALIGN);

        /* do_write_string(): {u32 len; char str[len]} with NUL padding to NAME_ALIGN. */
        put32(&sb, len);
        put(&sb, s, n);
        pad_to(&sb, 4, PDB_NAME_ALIGN);
        pdb_add_feature(b, feat, sb.buf, sb.len);
        strbuf_done(&sb);
}

void pdb_feature_nrcpus(struct pdb *b, uint32_t avail, uint32_t online) {
        uint32_t v[2] = { avail, online };

        pdb_add_feature(b, PDB_FEAT_NRCPUS, v, sizeof(v));
}

void pdb_raw(struct pdb *b, const void *data, size_t len) {
        put(stream(b), data, len);
}

void pdb_record(struct pdb *b, uint32_t type, uint16_t misc, const void *body, size_t len, bool with_trailer) {
        struct strbuf *sb = stream(b);
        size_t tl = with_trailer ? trailer_len(b) : 0;
        struct perf_event_header h = {
                .type = type,
                .misc = misc,
                .size = (uint16_t) (sizeof(h) + len + tl),
        };

        assert(sizeof(h) + len + tl <= UINT16_MAX);
        put(sb, &h, sizeof(h));
        put(sb, body, len);
        if (with_trailer)
                put_trailer(b, sb);
}

/* Body with a NUL-terminated string padded to u64 (perf_event_comm_event etc). */
static void record_with_string(struct pdb *b, uint32_t type, uint16_t misc, struct strbuf *body, const char *s) {
        size_t start = body->len;

        put(body, s, strlen(s) + 1);
        pad_to(body, start, 8);
        pdb_record(b, type, misc, body->buf, body->len, true);
        strbuf_done(body);
}

void pdb_comm(struct pdb *b, uint32_t pid, uint32_t tid, const char *comm, bool exec) {
        struct strbuf body = STRBUF_INIT;

        put32(&body, pid);
        put32(&body, tid);
        record_with_string(b, PERF_RECORD_COMM, exec ? PERF_RECORD_MISC_COMM_EXEC : 0, &body, comm);
}

/* {u32 pid, tid; u64 addr, len, pgoff}: how MMAP and MMAP2 start. */
static void put_mmap_head(struct strbuf *body, uint32_t pid, uint32_t tid, uint64_t addr, uint64_t len,
                          uint64_t pgoff) {
        put32(body, pid);
        put32(body, tid);
        put64(body, addr);
        put64(body, len);
        put64(body, pgoff);
}

void pdb_mmap(struct pdb *b, uint32_t pid, uint32_t tid, uint64_t addr, uint64_t len, uint64_t pgoff,
              const char *filename) {
        struct strbuf body = STRBUF_INIT;

        put_mmap_head(&body, pid, tid, addr, len, pgoff);
        record_with_string(b, PERF_RECORD_MMAP, PERF_RECORD_MISC_USER, &body, filename);
}

void pdb_mmap2(struct pdb *b, uint32_t pid, uint32_t tid, uint64_t addr, uint64_t len, uint64_t pgoff,
               uint32_t maj, uint32_t min, uint64_t ino, uint32_t prot, uint32_t flags, const char *filename) {
        struct strbuf body = STRBUF_INIT;

        put_mmap_head(&body, pid, tid, addr, len, pgoff);
        put32(&body, maj);
        put32(&body, min);
        put64(&body, ino);
        put64(&body, ino + 1); /* ino_generation */
        put32(&body, prot);
        put32(&body, flags);
        record_with_string(b, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, &body, filename);
}

void pdb_mmap2_build_id(struct pdb *b, uint32_t pid, uint32_t tid, uint64_t addr, uint64_t len,
                        const uint8_t *build_id, uint8_t build_id_size, const char *filename) {
        struct strbuf body = STRBUF_INIT;
        uint8_t bid[24] = { build_id_size };

        put_mmap_head(&body, pid, tid, addr, len, 0);
        memcpy(bid + 4, build_id, build_id_size);
        put(&body, bid, sizeof(bid));
        put32(&body, 5);        /* PROT_READ|PROT_EXEC */
        put32(&body, 2);        /* MAP_PRIVATE */
        record_with_string(b, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID,
                           &body, filename);
}

void pdb_task(struct pdb *b, uint32_t type, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid, uint64_t time) {
        struct strbuf body = STRBUF_INIT;

        put32(&body, pid);
        put32(&body, ppid);
        put32(&body, tid);
        put32(&body, ptid);
        put64(&body, time);
        pdb_record(b, type, 0, body.buf, body.len, true);
        strbuf_done(&body);
}

void pdb_lost(struct pdb *b, uint64_t id, uint64_t lost) {
        uint64_t v[2] = { id, lost };

        pdb_record(b, PERF_RECORD_LOST, 0, v, sizeof(v), true);
}

void pdb_lost_samples(struct pdb *b, uint64_t lost) {
        pdb_record(b, PERF_RECORD_LOST_SAMPLES, 0, &lost, sizeof(lost), true);
}

void pdb_aux(struct pdb *b, uint64_t aux_offset, uint64_t aux_size, uint64_t flags) {
        uint64_t v[3] = { aux_offset, aux_size, flags };

        pdb_record(b, PERF_RECORD_AUX, 0, v, sizeof(v), true);
}

void pdb_itrace_start(struct pdb *b, uint32_t pid, uint32_t tid) {
        uint32_t v[2] = { pid, tid };

        pdb_record(b, PERF_RECORD_ITRACE_START, 0, v, sizeof(v), true);
}

void pdb_switch(struct pdb *b, bool out, bool preempt) {
        uint16_t misc = (out ? PERF_RECORD_MISC_SWITCH_OUT : 0) | (preempt ? PERF_RECORD_MISC_SWITCH_OUT_PREEMPT : 0);

        pdb_record(b, PERF_RECORD_SWITCH, misc, NULL, 0, true);
}

void pdb_switch_cpu_wide(struct pdb *b, bool out, uint32_t next_prev_pid, uint32_t next_prev_tid) {
        uint32_t v[2] = { next_prev_pid, next_prev_tid };

        pdb_record(b, PERF_RECORD_SWITCH_CPU_WIDE, out ? PERF_RECORD_MISC_SWITCH_OUT : 0, v, sizeof(v), true);
}

void pdb_time_conv(struct pdb *b, uint64_t shift, uint64_t mult, uint64_t zero, bool ext) {
        uint64_t v[6] = { shift, mult, zero, 12345, UINT64_C(0xffffffffffff), 0x0101 };

        pdb_record(b, PDB_RECORD_TIME_CONV, 0, v, ext ? sizeof(v) : 3 * sizeof(uint64_t), false);
}

void pdb_finished_round(struct pdb *b) {
        pdb_record(b, PDB_RECORD_FINISHED_ROUND, 0, NULL, 0, false);
}

void pdb_sample_words(struct pdb *b, const uint64_t *words, size_t nr, uint16_t misc) {
        pdb_record(b, PERF_RECORD_SAMPLE, misc, words, nr * 8, false);
}

void pdb_auxtrace(struct pdb *b, uint32_t idx, uint32_t cpu, uint32_t tid, uint64_t offset,
                  const void *data, size_t len) {
        struct strbuf body = STRBUF_INIT;

        put64(&body, len);
        put64(&body, offset);
        put64(&body, UINT64_C(0x500000000) + idx); /* reference */
        put32(&body, idx);
        put32(&body, tid);
        put32(&body, cpu);
        put32(&body, 0);
        pdb_record(b, PDB_RECORD_AUXTRACE, 0, body.buf, body.len, false);
        pdb_raw(b, data, len);
        strbuf_done(&body);
}

void pdb_auxtrace_info_spe_v1(struct pdb *b, uint64_t pmu_type) {
        uint64_t v[3] = { PDB_AUXTRACE_ARM_SPE, pmu_type, 1 };

        pdb_record(b, PDB_RECORD_AUXTRACE_INFO, 0, v, sizeof(v), false);
}

void pdb_auxtrace_info_spe_v2(struct pdb *b, uint64_t pmu_type, const uint32_t *cpus, const uint64_t *midrs,
                              size_t nr_cpus, unsigned nr_params) {
        struct strbuf body = STRBUF_INIT;

        put32(&body, PDB_AUXTRACE_ARM_SPE);
        put32(&body, 0);
        put64(&body, 2);        /* header version */
        put64(&body, 4);        /* header size in u64s */
        put64(&body, pmu_type);
        put64(&body, nr_cpus);
        for (size_t i = 0; i < nr_cpus; i++) {
                uint64_t params[4] = { midrs[i], pmu_type, 1024, 0x6 };

                put64(&body, PDB_SPE_CPU_MAGIC);
                put64(&body, cpus[i]);
                put64(&body, nr_params);
                put(&body, params, nr_params * 8);
        }
        pdb_record(b, PDB_RECORD_AUXTRACE_INFO, 0, body.buf, body.len, false);
        strbuf_done(&body);
}

void pdb_tracing_data(struct pdb *b, const void *data, size_t len) {
        uint32_t v[2] = { (uint32_t) len, 0 };

        pdb_record(b, PDB_RECORD_HEADER_TRACING_DATA, 0, v, sizeof(v), false);
        pdb_raw(b, data, len);
}

static void put_section(struct strbuf *sb, uint64_t offset, uint64_t size) {
        put64(sb, offset);
        put64(sb, size);
}

uint8_t *pdb_finish(struct pdb *b, size_t *ret_len) {
        const uint64_t attr_size = sizeof(struct perf_event_attr) + PDB_SECTION_SIZE;
        uint64_t features[PDB_FEAT_WORDS] = {};
        uint64_t attrs_size, ids_off, data_off, off;
        struct strbuf out = STRBUF_INIT;

        if (b->pipe) {
                *ret_len = b->out.len;
                return (uint8_t *) strbuf_steal(&b->out, NULL);
        }

        /* header | attrs entries | ids | data | feature index | feature sections */
        attrs_size = b->nr_attrs * attr_size;
        ids_off = PDB_FILE_HEADER_SIZE + attrs_size;
        data_off = ids_off;
        for (size_t i = 0; i < b->nr_attrs; i++)
                data_off += b->attrs[i].nr_ids * 8;
        for (size_t i = 0; i < b->nr_features; i++)
                features[b->features[i].feat / 64] |= UINT64_C(1) << (b->features[i].feat % 64);

        /* struct perf_file_header, field by field. */
        put64(&out, PDB_MAGIC2);
        put64(&out, PDB_FILE_HEADER_SIZE);
        put64(&out, attr_size);
        put_section(&out, PDB_FILE_HEADER_SIZE, attrs_size);
        put_section(&out, data_off, b->data.len);
        put_section(&out, 0, 0);        /* event_types: unused since perf 2.6.39 */
        put(&out, features, sizeof(features));
        assert(out.len == PDB_FILE_HEADER_SIZE);

        off = ids_off;
        for (size_t i = 0; i < b->nr_attrs; i++) {
                put(&out, &b->attrs[i].attr, sizeof(b->attrs[i].attr));
                put_section(&out, off, b->attrs[i].nr_ids * 8);
                off += b->attrs[i].nr_ids * 8;
        }
        for (size_t i = 0; i < b->nr_attrs; i++)
                put(&out, b->attrs[i].ids, b->attrs[i].nr_ids * 8);
        assert(out.len == data_off);
        put(&out, b->data.buf ?: "", b->data.len);

        off = data_off + b->data.len + b->nr_features * PDB_SECTION_SIZE;
        for (size_t i = 0; i < b->nr_features; i++) {
                put_section(&out, off, b->features[i].data.len);
                off += b->features[i].data.len;
        }
        for (size_t i = 0; i < b->nr_features; i++)
                put(&out, b->features[i].data.buf, b->features[i].data.len);

        return (uint8_t *) strbuf_steal(&out, ret_len);
}

void pdb_spe_attr(struct perf_event_attr *a, uint32_t pmu_type) {
        *a = (struct perf_event_attr) {
                .type = pmu_type,
                .size = sizeof(*a),
                .config = 0x3,
                .sample_period = 4096,
                .sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                               PERF_SAMPLE_CPU | PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_PHYS_ADDR,
                .sample_id_all = 1,
                .exclude_kernel = 1,
                .exclude_hv = 1,
        };
}

void pdb_dummy_attr(struct perf_event_attr *a) {
        *a = (struct perf_event_attr) {
                .type = PERF_TYPE_SOFTWARE,
                .size = sizeof(*a),
                .config = PERF_COUNT_SW_DUMMY,
                .sample_period = 1,
                .sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                               PERF_SAMPLE_CPU,
                .sample_id_all = 1,
                .mmap = 1,
                .mmap2 = 1,
                .comm = 1,
                .task = 1,
                .context_switch = 1,
        };
}

char *pdb_write_file(const char *dir, const char *name, const void *data, size_t len) {
        struct strbuf path = STRBUF_INIT;
        int fd;

        strbuf_printf(&path, "%s/%s", dir, name);
        fd = open(path.buf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, data, len) != (ssize_t) len) {
                perror(path.buf);
                abort();
        }
        close(fd);
        return strbuf_steal(&path, NULL);
}
