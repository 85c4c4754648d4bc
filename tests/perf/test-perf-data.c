/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the perf.data reader on byte streams built by pd-builder:
 * every record type in file and pipe mode, AUXTRACE payloads split across
 * read chunks, truncation at every byte offset, corrupt sizes, foreign
 * magic, missing features, compressed records, fds and pipes.
 *
 * `test-perf-data --write-seeds DIR` writes the fuzz seed inputs instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "pd-builder.h"
#include "perf-data.h"
#include "spe-info.h"
#include "strbuf.h"

#define MAX_RECS 256
#define SPE_PMU_TYPE 8
#define MIDR_N1 UINT64_C(0x413fd0c1)
#define MIDR_V1 UINT64_C(0x410fd400)

/* ---- a consumer that writes down everything it is given ---- */

struct sink {
        struct strbuf log;
        size_t nr;
        uint64_t offsets[MAX_RECS];
        uint32_t types[MAX_RECS];
        uint16_t sizes[MAX_RECS];
        struct strbuf payload[2];       /* reassembled AUXTRACE bytes of cpu 0 and 1 */
        size_t chunks;
        uint64_t expect_chunk_off;
        int stop_at_type;               /* return -ECANCELED at this record type */
        int stop_at_feature;            /* return -ECANCELED at this feature */
        bool quiet;                     /* no log, records only */
        struct spe_info_decoder spe;    /* SPE AUXTRACE_INFO, as the replay decodes it */
};

static void sink_init(struct sink *s) {
        *s = (struct sink) { .log = STRBUF_INIT, .stop_at_type = -1, .stop_at_feature = -1 };
        s->payload[0] = (struct strbuf) STRBUF_INIT;
        s->payload[1] = (struct strbuf) STRBUF_INIT;
}

static void sink_done(struct sink *s) {
        strbuf_done(&s->log);
        strbuf_done(&s->payload[0]);
        strbuf_done(&s->payload[1]);
        spe_info_decoder_done(&s->spe);
}

_printf_(2, 3)
static void logf_(struct sink *s, const char *fmt, ...) {
        va_list ap;

        if (s->quiet)
                return;
        va_start(ap, fmt);
        strbuf_vprintf(&s->log, fmt, ap);
        va_end(ap);
        strbuf_putc(&s->log, '\n');
}

static void log_sid(struct sink *s, const struct perf_data_sample_id *sid) {
        if (s->quiet)
                return;
        /* Appended to the previous line. */
        s->log.len--;
        if (sid->valid & PERF_DATA_ID_TID)
                strbuf_printf(&s->log, " [%" PRIu32 "/%" PRIu32 "]", sid->pid, sid->tid);
        if (sid->valid & PERF_DATA_ID_TIME)
                strbuf_printf(&s->log, " t=%" PRIu64, sid->time);
        if (sid->valid & PERF_DATA_ID_CPU)
                strbuf_printf(&s->log, " cpu=%" PRIu32, sid->cpu);
        if (sid->valid & PERF_DATA_ID_ID)
                strbuf_printf(&s->log, " id=%" PRIu64, sid->id);
        strbuf_putc(&s->log, '\n');
}

static int on_record(void *u, const struct perf_data_record *rec) {
        struct sink *s = u;

        if (s->nr < MAX_RECS) {
                s->offsets[s->nr] = rec->file_offset;
                s->types[s->nr] = rec->type;
                s->sizes[s->nr] = rec->size;
        }
        s->nr++;
        /* The record's bytes are its header: type and size as announced. */
        assert_int_equal(rec->raw[0] | rec->raw[1] << 8 | rec->raw[2] << 16 | rec->raw[3] << 24, (int) rec->type);
        if ((int) rec->type == s->stop_at_type)
                return -ECANCELED;
        return 0;
}

static int on_attr(void *u, const struct perf_data_attr *a) {
        struct sink *s = u;

        if (s->quiet)
                return 0;
        strbuf_printf(&s->log, "attr type=%" PRIu32 " config=0x%llx st=0x%llx ids=", a->attr.type,
                      (unsigned long long) a->attr.config, (unsigned long long) a->attr.sample_type);
        for (size_t i = 0; i < a->nr_ids; i++)
                strbuf_printf(&s->log, "%s%" PRIu64, i ? "," : "", a->ids[i]);
        strbuf_putc(&s->log, '\n');
        return 0;
}

static int on_feature(void *u, unsigned feat, const uint8_t *data, size_t len) {
        struct sink *s = u;

        logf_(s, "feature %u len=%zu", feat, len);
        if ((int) feat == s->stop_at_feature)
                return -ECANCELED;
        return 0;
}

static int on_auxtrace_info(void *u, const struct perf_data_auxtrace_info *info) {
        struct sink *s = u;

        if (s->quiet)
                return 0;
        const struct spe_info *si = info->type == PERF_AUXTRACE_ARM_SPE ? info->decoded : NULL;
        static const struct spe_info none = {};

        if (!si)
                si = &none;
        strbuf_printf(&s->log, "auxtrace_info type=%" PRIu32 " spe_v=%u pmu=%" PRIu64, info->type,
                      si->version, si->pmu_type);
        for (size_t i = 0; i < si->n_cpus; i++) {
                const struct spe_info_cpu *c = &si->cpus[i];

                strbuf_printf(&s->log, " cpu%" PRIu32 ":midr=0x%" PRIx64 ",pmu=%" PRIu64 ",ival=%" PRIu64
                              ",ef=0x%" PRIx64 ",n=%u", c->cpu, c->midr, c->pmu_type, c->min_interval,
                              c->event_filter, c->nr_params);
        }
        strbuf_putc(&s->log, '\n');
        return 0;
}

static int on_auxtrace(void *u, const struct perf_data_auxtrace *at, uint64_t chunk_offset,
                       const uint8_t *data, size_t len, bool last) {
        struct sink *s = u;

        /* Pieces arrive in order, without gaps, and `last` exactly at the end. */
        if (chunk_offset == 0)
                s->expect_chunk_off = 0;
        assert_int_equal(chunk_offset, s->expect_chunk_off);
        s->expect_chunk_off += len;
        assert_true(chunk_offset + len <= at->size);
        assert_int_equal(last, chunk_offset + len == at->size);
        if (len > 0)
                assert_non_null(data);
        s->chunks++;
        if (at->cpu < 2)
                strbuf_append(&s->payload[at->cpu], data, len);
        if (last)
                logf_(s, "auxtrace size=%" PRIu64 " offset=0x%" PRIx64 " ref=0x%" PRIx64 " idx=%" PRIu32
                      " tid=%" PRId32 " cpu=%" PRIu32, at->size, at->offset, at->reference, at->idx,
                      (int32_t) at->tid, at->cpu);
        return 0;
}

static int on_aux(void *u, const struct perf_data_aux *a) {
        logf_(u, "aux off=0x%" PRIx64 " size=0x%" PRIx64 " flags=0x%" PRIx64, a->aux_offset, a->aux_size, a->flags);
        log_sid(u, &a->rec.sid);
        return 0;
}

static int on_lost(void *u, const struct perf_data_lost *l) {
        logf_(u, "%s id=%" PRIu64 " lost=%" PRIu64, l->rec.type == PERF_RECORD_LOST ? "lost" : "lost_samples",
              l->id, l->lost);
        log_sid(u, &l->rec.sid);
        return 0;
}

static int on_comm(void *u, const struct perf_data_comm *c) {
        logf_(u, "comm %" PRIu32 "/%" PRIu32 " %s exec=%d", c->pid, c->tid, c->comm, c->exec);
        log_sid(u, &c->rec.sid);
        return 0;
}

static int on_mmap(void *u, const struct perf_data_mmap *m) {
        struct sink *s = u;

        if (m->rec.type == PERF_RECORD_MMAP)
                logf_(s, "mmap %" PRIu32 "/%" PRIu32 " 0x%" PRIx64 "+0x%" PRIx64 " pgoff=0x%" PRIx64 " %s",
                      m->pid, m->tid, m->addr, m->len, m->pgoff, m->filename);
        else if (m->has_build_id) {
                logf_(s, "mmap2 %" PRIu32 "/%" PRIu32 " 0x%" PRIx64 "+0x%" PRIx64 " prot=%" PRIu32
                      " flags=%" PRIu32 " bid[%u]=%02x..%02x %s", m->pid, m->tid, m->addr, m->len,
                      m->prot, m->flags, m->build_id_size, m->build_id[0],
                      m->build_id[m->build_id_size ? m->build_id_size - 1 : 0], m->filename);
        } else
                logf_(s, "mmap2 %" PRIu32 "/%" PRIu32 " 0x%" PRIx64 "+0x%" PRIx64 " pgoff=0x%" PRIx64
                      " dev=%" PRIu32 ":%" PRIu32 " ino=%" PRIu64 " gen=%" PRIu64 " prot=%" PRIu32
                      " flags=%" PRIu32 " %s", m->pid, m->tid, m->addr, m->len, m->pgoff, m->maj, m->min,
                      m->ino, m->ino_generation, m->prot, m->flags, m->filename);
        log_sid(s, &m->rec.sid);
        return 0;
}

static int on_fork(void *u, const struct perf_data_task *t) {
        logf_(u, "fork %" PRIu32 "/%" PRIu32 " from %" PRIu32 "/%" PRIu32 " time=%" PRIu64,
              t->pid, t->tid, t->ppid, t->ptid, t->time);
        log_sid(u, &t->rec.sid);
        return 0;
}

static int on_exit_(void *u, const struct perf_data_task *t) {
        logf_(u, "exit %" PRIu32 "/%" PRIu32 " time=%" PRIu64, t->pid, t->tid, t->time);
        log_sid(u, &t->rec.sid);
        return 0;
}

static int on_switch(void *u, const struct perf_data_switch *sw) {
        if (sw->rec.type == PERF_RECORD_SWITCH)
                logf_(u, "switch out=%d preempt=%d", sw->out, sw->preempt);
        else
                logf_(u, "switch_cpu_wide out=%d next_prev=%" PRIu32 "/%" PRIu32, sw->out,
                      sw->next_prev_pid, sw->next_prev_tid);
        log_sid(u, &sw->rec.sid);
        return 0;
}

static int on_itrace_start(void *u, const struct perf_data_itrace_start *is) {
        logf_(u, "itrace_start %" PRIu32 "/%" PRIu32, is->pid, is->tid);
        log_sid(u, &is->rec.sid);
        return 0;
}

static int on_time_conv(void *u, const struct perf_data_time_conv *tc) {
        if (tc->has_cycles)
                logf_(u, "time_conv shift=%" PRIu64 " mult=%" PRIu64 " zero=%" PRIu64 " cycles=%" PRIu64
                      " mask=0x%" PRIx64 " caps=%d%d", tc->time_shift, tc->time_mult, tc->time_zero,
                      tc->time_cycles, tc->time_mask, tc->cap_user_time_zero, tc->cap_user_time_short);
        else
                logf_(u, "time_conv shift=%" PRIu64 " mult=%" PRIu64 " zero=%" PRIu64,
                      tc->time_shift, tc->time_mult, tc->time_zero);
        return 0;
}

static int on_sample(void *u, const struct perf_data_sample *smp) {
        struct sink *s = u;

        if (!smp->attr) {
                logf_(s, "sample (no attr)");
                return 0;
        }
        logf_(s, "sample attr=%" PRIu32 " ip=0x%" PRIx64 " data_src=0x%" PRIx64 " phys=0x%" PRIx64,
              smp->attr->attr.type, smp->ip, smp->data_src, smp->phys_addr);
        log_sid(s, &smp->rec.sid);
        return 0;
}

static const struct perf_data_ops sink_ops = {
        .on_record = on_record,
        .on_attr = on_attr,
        .on_feature = on_feature,
        .on_auxtrace_info = on_auxtrace_info,
        .on_auxtrace = on_auxtrace,
        .on_aux = on_aux,
        .on_lost = on_lost,
        .on_comm = on_comm,
        .on_mmap = on_mmap,
        .on_fork = on_fork,
        .on_exit = on_exit_,
        .on_switch = on_switch,
        .on_itrace_start = on_itrace_start,
        .on_time_conv = on_time_conv,
        .on_sample = on_sample,
};

/* ---- the reference stream ---- */

static void payload_bytes(uint8_t *p, size_t n, uint8_t seed) {
        for (size_t i = 0; i < n; i++)
                p[i] = (uint8_t) (seed + i * 7);
}

static void set_sid(struct pdb *b, uint32_t pid, uint32_t tid, uint64_t time, uint32_t cpu, uint64_t id) {
        b->sid = (struct pdb_sid) { .pid = pid, .tid = tid, .time = time, .cpu = cpu, .id = id };
}

/* Every record type the reader handles, with values the expected log spells out. */
static uint8_t *build_reference(bool pipe, size_t *ret_len) {
        static const uint32_t cpus[2] = { 0, 1 };
        static const uint64_t midrs[2] = { MIDR_N1, MIDR_V1 };
        struct perf_event_attr spe, dummy;
        uint64_t spe_ids[2] = { 100, 101 }, dummy_ids[2] = { 200, 201 };
        uint8_t bid[20], pay[64], odd[12] = { 1, 2, 3 };
        uint64_t throttle[3] = { 1500, 100, 100 }, ksym[2] = { 0xffff800010000000, 0x40 };
        struct pdb b;
        uint8_t *out;

        pdb_init(&b, pipe);
        pdb_spe_attr(&spe, SPE_PMU_TYPE);
        pdb_dummy_attr(&dummy);
        pdb_add_attr(&b, &spe, spe_ids, 2);
        pdb_add_attr(&b, &dummy, dummy_ids, 2);
        pdb_feature_string(&b, PDB_FEAT_HOSTNAME, "testhost");
        pdb_feature_nrcpus(&b, 8, 2);
        pdb_feature_string(&b, PDB_FEAT_CPUID, "0x00000000413fd0c1");

        pdb_time_conv(&b, 0, 1, 0, true);
        pdb_auxtrace_info_spe_v2(&b, SPE_PMU_TYPE, cpus, midrs, 2, 4);

        set_sid(&b, 4242, 4243, 1000, 0, 200);
        pdb_comm(&b, 4242, 4243, "spe_demo", true);
        b.sid.time = 1001;
        pdb_mmap(&b, 4242, 4242, 0x400000, 0x1000, 0, "/bin/true");
        pdb_mmap2(&b, 4242, 4243, 0xaaaac0000000, 0x2000, 0x1000, 8, 1, 77, 5, 2, "spe_demo.elf");
        for (size_t i = 0; i < sizeof(bid); i++)
                bid[i] = (uint8_t) (i + 1);
        pdb_mmap2_build_id(&b, 4242, 4243, 0xffff00000000, 0x3000, bid, 20, "libfoo.so");
        pdb_task(&b, PERF_RECORD_FORK, 4242, 1, 4244, 1, 999);
        b.sid.time = 5000;
        pdb_task(&b, PERF_RECORD_EXIT, 4244, 4242, 4244, 4242, 5000);
        set_sid(&b, 4242, 4243, 1100, 1, 201);
        pdb_itrace_start(&b, 4242, 4243);
        pdb_switch(&b, true, true);
        pdb_switch_cpu_wide(&b, false, 4250, 4251);
        set_sid(&b, 4242, 4243, 1200, 0, 100);
        pdb_aux(&b, 0, 0x100, PERF_AUX_FLAG_TRUNCATED | PERF_AUX_FLAG_PARTIAL);
        set_sid(&b, 4242, 4243, 1300, 1, 101);
        pdb_aux(&b, 0x100, 0x80, PERF_AUX_FLAG_COLLISION);
        pdb_aux(&b, 0x180, 0x40, PERF_AUX_FLAG_OVERWRITE);
        pdb_lost(&b, 101, 7);
        set_sid(&b, 4242, 4243, 1400, 0, 200);
        pdb_lost_samples(&b, 3);

        {
                /* IDENTIFIER IP TID TIME CPU DATA_SRC PHYS_ADDR, in perf_event_open(2) order */
                uint64_t w[] = { 101, 0xaaaac0001504, 4242 | (UINT64_C(4243) << 32), 2000, 1,
                                 0x288100142, 0x8840100200 };
                uint64_t d[] = { 200, 0xaaaac0001660, 4242 | (UINT64_C(4244) << 32), 2100, 0 };

                pdb_sample_words(&b, w, ELEMENTSOF(w), PERF_RECORD_MISC_USER);
                pdb_sample_words(&b, d, ELEMENTSOF(d), PERF_RECORD_MISC_USER);
        }

        payload_bytes(pay, 40, 0x10);
        pdb_auxtrace(&b, 0, 0, UINT32_MAX, 0, pay, 40);
        payload_bytes(pay, 64, 0x80);
        pdb_auxtrace(&b, 1, 1, UINT32_MAX, 0x100, pay, 64);
        payload_bytes(pay, 24, (uint8_t) (0x10 + 40 * 7));
        pdb_auxtrace(&b, 0, 0, UINT32_MAX, 40, pay, 24);
        pdb_auxtrace(&b, 1, 1, UINT32_MAX, 0x140, NULL, 0);

        set_sid(&b, 0, 0, 1500, 1, 100);
        pdb_record(&b, PERF_RECORD_THROTTLE, 0, throttle, sizeof(throttle), true);
        pdb_record(&b, PERF_RECORD_KSYMBOL, 0, ksym, sizeof(ksym), true);
        /* A user type we do not know, 12-byte body: the next records are not 8-aligned. */
        pdb_record(&b, 99, 0, odd, sizeof(odd), false);
        pdb_tracing_data(&b, "tracing-data-bytes!!", 20);
        pdb_finished_round(&b);

        out = pdb_finish(&b, ret_len);
        pdb_done(&b);
        return out;
}

/* What the sink must log for build_reference(); the feature lines differ by mode. */
static const char reference_log_records[] =
        "time_conv shift=0 mult=1 zero=0 cycles=12345 mask=0xffffffffffff caps=11\n"
        "auxtrace_info type=4 spe_v=2 pmu=8 cpu0:midr=0x413fd0c1,pmu=8,ival=1024,ef=0x6,n=4"
        " cpu1:midr=0x410fd400,pmu=8,ival=1024,ef=0x6,n=4\n"
        "comm 4242/4243 spe_demo exec=1 [4242/4243] t=1000 cpu=0 id=200\n"
        "mmap 4242/4242 0x400000+0x1000 pgoff=0x0 /bin/true [4242/4243] t=1001 cpu=0 id=200\n"
        "mmap2 4242/4243 0xaaaac0000000+0x2000 pgoff=0x1000 dev=8:1 ino=77 gen=78 prot=5 flags=2 spe_demo.elf"
        " [4242/4243] t=1001 cpu=0 id=200\n"
        "mmap2 4242/4243 0xffff00000000+0x3000 prot=5 flags=2 bid[20]=01..14 libfoo.so [4242/4243] t=1001 cpu=0 id=200\n"
        "fork 4242/4244 from 1/1 time=999 [4242/4243] t=1001 cpu=0 id=200\n"
        "exit 4244/4244 time=5000 [4242/4243] t=5000 cpu=0 id=200\n"
        "itrace_start 4242/4243 [4242/4243] t=1100 cpu=1 id=201\n"
        "switch out=1 preempt=1 [4242/4243] t=1100 cpu=1 id=201\n"
        "switch_cpu_wide out=0 next_prev=4250/4251 [4242/4243] t=1100 cpu=1 id=201\n"
        "aux off=0x0 size=0x100 flags=0x5 [4242/4243] t=1200 cpu=0 id=100\n"
        "aux off=0x100 size=0x80 flags=0x8 [4242/4243] t=1300 cpu=1 id=101\n"
        "aux off=0x180 size=0x40 flags=0x2 [4242/4243] t=1300 cpu=1 id=101\n"
        "lost id=101 lost=7 [4242/4243] t=1300 cpu=1 id=101\n"
        "lost_samples id=0 lost=3 [4242/4243] t=1400 cpu=0 id=200\n"
        "sample attr=8 ip=0xaaaac0001504 data_src=0x288100142 phys=0x8840100200 [4242/4243] t=2000 cpu=1 id=101\n"
        "sample attr=1 ip=0xaaaac0001660 data_src=0x0 phys=0x0 [4242/4244] t=2100 cpu=0 id=200\n"
        "auxtrace size=40 offset=0x0 ref=0x500000000 idx=0 tid=-1 cpu=0\n"
        "auxtrace size=64 offset=0x100 ref=0x500000001 idx=1 tid=-1 cpu=1\n"
        "auxtrace size=24 offset=0x28 ref=0x500000000 idx=0 tid=-1 cpu=0\n"
        "auxtrace size=0 offset=0x140 ref=0x500000001 idx=1 tid=-1 cpu=1\n";

static const char reference_log_attrs[] =
        "attr type=8 config=0x3 st=0x98087 ids=100,101\n"
        "attr type=1 config=0x9 st=0x10087 ids=200,201\n";

/*
 * File mode: features in bit order (3 HOSTNAME, 7 NRCPUS, 9 CPUID) before the
 * records; pipe mode: in stream order, which the builder keeps the same.
 */
static const char reference_log_features[] =
        "feature 3 len=68\n"
        "feature 7 len=8\n"
        "feature 9 len=68\n";

#define NR_REFERENCE_RECORDS_FILE 27
#define NR_REFERENCE_RECORDS_PIPE (NR_REFERENCE_RECORDS_FILE + 2 + 3) /* + ATTR records + FEATURE records */

static int run_memory(const uint8_t *data, size_t len, size_t read_size, struct sink *s,
                      struct perf_data_reader **ret) {
        struct perf_data_reader *r;
        int k;

        assert_int_equal(perf_data_reader_new_memory(data, len, &r), 0);
        assert_int_equal(spe_info_attach(r, &s->spe), 0);
        if (read_size)
                perf_data_reader_set_read_size(r, read_size);
        k = perf_data_reader_run(r, &sink_ops, s);
        if (ret)
                *ret = r;
        else
                perf_data_reader_free(r);
        return k;
}

static void check_reference_payloads(const struct sink *s) {
        uint8_t want0[64], want1[64];

        payload_bytes(want0, 64, 0x10);
        payload_bytes(want1, 64, 0x80);
        assert_int_equal(s->payload[0].len, 64);
        assert_memory_equal(s->payload[0].buf, want0, 64);
        assert_int_equal(s->payload[1].len, 64);
        assert_memory_equal(s->payload[1].buf, want1, 64);
}

static void check_reference_stats(struct perf_data_reader *r, bool pipe) {
        const struct perf_data_stats *st = perf_data_reader_stats(r);
        const struct perf_data_cpu_stats *c0 = perf_data_reader_cpu_stats(r, 0), *c1 = perf_data_reader_cpu_stats(r, 1);
        uint32_t avail = 0, online = 0;
        uint64_t midr = 0;

        assert_int_equal(st->records_total, pipe ? NR_REFERENCE_RECORDS_PIPE : NR_REFERENCE_RECORDS_FILE);
        assert_int_equal(st->records_by_type[PERF_RECORD_COMM], 1);
        assert_int_equal(st->records_by_type[PERF_RECORD_MMAP], 1);
        assert_int_equal(st->records_by_type[PERF_RECORD_MMAP2], 2);
        assert_int_equal(st->records_by_type[PERF_RECORD_AUX], 3);
        assert_int_equal(st->records_by_type[PDB_RECORD_AUXTRACE], 4);
        assert_int_equal(st->records_by_type[PERF_RECORD_SAMPLE], 2);
        assert_int_equal(st->records_by_type[99], 1);
        assert_int_equal(st->records_by_type[PDB_RECORD_HEADER_ATTR], pipe ? 2 : 0);
        assert_int_equal(st->records_by_type[PDB_RECORD_HEADER_FEATURE], pipe ? 3 : 0);
        assert_int_equal(st->aux_bytes, 128);
        assert_int_equal(st->aux_truncated, 1);
        assert_int_equal(st->aux_partial, 1);
        assert_int_equal(st->aux_collision, 1);
        assert_int_equal(st->aux_overwrite, 1);
        assert_int_equal(st->lost, 7);
        assert_int_equal(st->lost_samples, 3);
        assert_int_equal(st->unresolved_ids, 0);

        assert_non_null(c0);
        assert_non_null(c1);
        assert_int_equal(c0->aux_bytes, 64);
        assert_int_equal(c0->auxtrace_records, 2);
        assert_int_equal(c1->aux_bytes, 64);
        assert_int_equal(c1->auxtrace_records, 2);
        assert_int_equal(c0->aux_records, 1);
        assert_int_equal(c1->aux_records, 2);
        assert_int_equal(c0->aux_truncated, 1);
        assert_int_equal(c0->aux_partial, 1);
        assert_int_equal(c0->aux_collision, 0);
        assert_int_equal(c1->aux_collision, 1);
        assert_int_equal(c1->aux_overwrite, 1);
        assert_int_equal(c0->lost, 3);
        assert_int_equal(c1->lost, 7);
        assert_int_equal(c0->samples, 1);
        assert_int_equal(c1->samples, 1);
        assert_null(perf_data_reader_cpu_stats(r, 77));

        assert_int_equal(perf_data_reader_nr_cpus(r, &avail, &online), 0);
        assert_int_equal(avail, 8);
        assert_int_equal(online, 2);
        assert_string_equal(perf_data_reader_cpuid(r), "0x00000000413fd0c1");
        /* Per-CPU MIDR from the version 2 metadata, header CPUID for the rest. */
        assert_int_equal(perf_data_reader_midr(r, 1, &midr), 0);
        assert_int_equal(midr, MIDR_V1);
        assert_int_equal(perf_data_reader_midr(r, 0, &midr), 0);
        assert_int_equal(midr, MIDR_N1);
        midr = 0;
        assert_int_equal(perf_data_reader_midr(r, 5, &midr), 0);
        assert_int_equal(midr, MIDR_N1);
        assert_int_equal(perf_data_reader_nr_attrs(r), 2);
        assert_int_equal(perf_data_reader_attr(r, 1)->attr.type, PERF_TYPE_SOFTWARE);
        assert_null(perf_data_reader_attr(r, 2));
        assert_int_equal(perf_data_reader_is_pipe(r), pipe);
        assert_string_equal(perf_data_reader_error(r), "");
}

static void check_reference_run(bool pipe, size_t read_size) {
        _cleanup_free_ uint8_t *data = NULL;
        struct perf_data_reader *r;
        struct strbuf want = STRBUF_INIT;
        struct sink s;
        size_t len;

        data = build_reference(pipe, &len);
        sink_init(&s);
        assert_int_equal(run_memory(data, len, read_size, &s, &r), 0);

        strbuf_puts(&want, reference_log_attrs);
        strbuf_puts(&want, reference_log_features);
        strbuf_puts(&want, reference_log_records);
        assert_string_equal(s.log.buf, want.buf);
        check_reference_payloads(&s);
        check_reference_stats(r, pipe);
        /* Record offsets: the first data record right after header+attrs+ids (file) or the ATTRs (pipe). */
        assert_int_equal(s.offsets[0], pipe ? PDB_PIPE_HEADER_SIZE : PDB_FILE_HEADER_SIZE + 2 * 144 + 4 * 8);
        assert_int_equal(s.types[0], pipe ? PDB_RECORD_HEADER_ATTR : PDB_RECORD_TIME_CONV);
        assert_int_equal(s.types[s.nr - 1], PDB_RECORD_FINISHED_ROUND);
        /* One piece per payload when the buffer holds it; more when reads are smaller than a payload. */
        if (read_size == 0)
                assert_int_equal(s.chunks, 4);
        else if (read_size < 40)
                assert_true(s.chunks > 4);
        else
                assert_true(s.chunks >= 4);

        perf_data_reader_free(r);
        strbuf_done(&want);
        sink_done(&s);
}

static void test_reference_file(void **state) {
        check_reference_run(false, 0);
}

static void test_reference_pipe(void **state) {
        check_reference_run(true, 0);
}

/* Tiny reads make records and AUXTRACE payloads straddle chunk boundaries. */
static void test_small_reads(void **state) {
        static const size_t sizes[] = { 1, 3, 7, 8, 13, 64, 100 };

        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                check_reference_run(false, sizes[i]);
                check_reference_run(true, sizes[i]);
        }
}

/* ---- truncation at every byte ---- */

static void check_truncations(bool pipe, size_t read_size) {
        _cleanup_free_ uint8_t *data = NULL;
        struct sink full;
        size_t len;

        data = build_reference(pipe, &len);
        sink_init(&full);
        full.quiet = true;
        assert_int_equal(run_memory(data, len, 0, &full, NULL), 0);
        assert_true(full.nr < MAX_RECS);

        for (size_t cut = 0; cut < len; cut++) {
                struct perf_data_reader *r;
                bool boundary = false;
                size_t want = 0;
                struct sink s;
                int k;

                sink_init(&s);
                s.quiet = true;
                k = run_memory(data, cut, read_size, &s, &r);

                /* Records whose header.size bytes lie before the cut were delivered, in order. */
                for (size_t i = 0; i < full.nr; i++) {
                        if (full.offsets[i] + full.sizes[i] <= cut)
                                want++;
                        if (full.offsets[i] == cut)
                                boundary = true;
                }
                if (s.nr != want)
                        fail_msg("cut at %zu: %zu records delivered, want %zu (%s)", cut, s.nr, want,
                                 perf_data_reader_error(r));
                for (size_t i = 0; i < s.nr; i++) {
                        assert_int_equal(s.offsets[i], full.offsets[i]);
                        assert_int_equal(s.types[i], full.types[i]);
                }
                if (pipe && boundary) {
                        /* A pipe may legitimately end between records. */
                        assert_int_equal(k, 0);
                } else {
                        if (k >= 0)
                                fail_msg("cut at %zu of %zu: no error", cut, len);
                        assert_true(k == -ENODATA || k == -EBADMSG);
                        if (!strstr(perf_data_reader_error(r), "0x") && !strstr(perf_data_reader_error(r), "offset 0"))
                                fail_msg("cut at %zu: message names no offset: %s", cut, perf_data_reader_error(r));
                }
                perf_data_reader_free(r);
                sink_done(&s);
        }
        sink_done(&full);
}

static void test_truncate_file(void **state) {
        check_truncations(false, 0);
        check_truncations(false, 5);
}

static void test_truncate_pipe(void **state) {
        check_truncations(true, 0);
        check_truncations(true, 5);
}

/* ---- corruption ---- */

struct corrupt_case {
        const char *name;
        bool pipe;
        int want;
        const char *msg;        /* substring of the error message */
        size_t want_records;    /* records delivered before the damage */
};

static void build_with_bad(const struct corrupt_case *c, uint8_t **ret, size_t *ret_len, uint64_t *ret_bad_off) {
        struct perf_event_attr spe;
        uint64_t ids[1] = { 100 };
        struct pdb b;

        pdb_init(&b, c->pipe);
        pdb_spe_attr(&spe, SPE_PMU_TYPE);
        pdb_add_attr(&b, &spe, ids, 1);
        set_sid(&b, 1, 2, 3, 0, 100);
        pdb_comm(&b, 1, 2, "ok", false);
        *ret_bad_off = pdb_offset(&b);

        if (streq(c->name, "size-below-header")) {
                struct perf_event_header h = { .type = PERF_RECORD_COMM, .size = 4 };

                pdb_raw(&b, &h, sizeof(h));
                pdb_raw(&b, "\0\0\0\0\0\0\0\0", 8);
        } else if (streq(c->name, "size-past-data")) {
                /* The last record's header claims 8 bytes more than the data section has. */
                pdb_comm(&b, 1, 2, "second", false);
                b.data.len -= 8;
        } else if (streq(c->name, "auxtrace-past-data")) {
                uint8_t pay[16] = { 0 };

                pdb_auxtrace(&b, 0, 0, UINT32_MAX, 0, pay, sizeof(pay));
                b.data.len -= 8;
        } else if (streq(c->name, "sample-too-short")) {
                uint64_t w[2] = { 100, 0x1234 };

                pdb_sample_words(&b, w, 2, 0);
        } else if (streq(c->name, "comm-unterminated")) {
                uint8_t body[16];

                memset(body, 'A', sizeof(body));
                pdb_record(&b, PERF_RECORD_COMM, 0, body, sizeof(body), true);
        } else if (streq(c->name, "trailer-too-big")) {
                uint64_t v = 5;

                /* LOST_SAMPLES without room for the 4-word sample_id trailer. */
                pdb_record(&b, PERF_RECORD_LOST_SAMPLES, 0, &v, sizeof(v), false);
        } else if (streq(c->name, "compressed")) {
                uint8_t z[16] = { 0x28, 0xb5, 0x2f, 0xfd };

                pdb_record(&b, PDB_RECORD_COMPRESSED, 0, z, sizeof(z), false);
        } else if (streq(c->name, "spe-info-nr-cpus")) {
                /* type, then a version 2 header {2, 4 u64s, pmu 8, 8 CPUs} and no CPU blocks */
                uint64_t v[5] = { PDB_AUXTRACE_ARM_SPE, 2, 4, 8, 8 };

                pdb_record(&b, PDB_RECORD_AUXTRACE_INFO, 0, v, sizeof(v), false);
        } else if (streq(c->name, "spe-info-magic")) {
                static const uint32_t cpus[1] = { 3 };
                static const uint64_t midrs[1] = { MIDR_N1 };
                size_t at = pdb_offset(&b) - (c->pipe ? 0 : PDB_FILE_HEADER_SIZE + 144 + 8);

                pdb_auxtrace_info_spe_v2(&b, SPE_PMU_TYPE, cpus, midrs, 1, 3);
                /* The per-CPU magic is after header(8) + type(8) + 4 header u64s. */
                (c->pipe ? b.out.buf : b.data.buf)[at + 8 + 8 + 32] ^= 0xff;
        } else if (streq(c->name, "attr-too-big")) {
                uint8_t body[PERF_ATTR_SIZE_VER0] = { 0 };
                uint32_t sz = 0x1000;

                memcpy(body + offsetof(struct perf_event_attr, size), &sz, sizeof(sz));
                pdb_record(&b, PDB_RECORD_HEADER_ATTR, 0, body, sizeof(body), false);
        } else if (streq(c->name, "callback-stop")) {
                pdb_lost(&b, 100, 1);
        }
        if (!strstr(c->name, "past-data"))
                pdb_comm(&b, 9, 9, "after", false);
        *ret = pdb_finish(&b, ret_len);
        pdb_done(&b);
}

static const struct corrupt_case corrupt_cases[] = {
        { "size-below-header", false, -EBADMSG, "less than its header", 1 },
        { "size-below-header", true, -EBADMSG, "less than its header", 2 },
        { "size-past-data", false, -EBADMSG, "past end of data", 1 },
        { "auxtrace-past-data", false, -EBADMSG, "past end of data", 2 },
        { "sample-too-short", false, -EBADMSG, "too short for sample_type", 1 },
        { "sample-too-short", true, -EBADMSG, "too short for sample_type", 2 },
        { "comm-unterminated", false, -EBADMSG, "unterminated", 2 },
        { "trailer-too-big", true, -EBADMSG, "too short", 2 },
        { "compressed", false, -EOPNOTSUPP, "not supported", 2 },
        { "compressed", true, -EOPNOTSUPP, "not supported", 3 },
        { "spe-info-nr-cpus", false, -EBADMSG, "claims 8 CPUs", 2 },
        { "spe-info-magic", false, -EBADMSG, "per-CPU magic", 2 },
        { "spe-info-magic", true, -EBADMSG, "per-CPU magic", 3 },
        { "attr-too-big", true, -EBADMSG, "exceeds the record", 3 },
};

static void test_corrupt(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(corrupt_cases); i++) {
                const struct corrupt_case *c = &corrupt_cases[i];
                _cleanup_free_ uint8_t *data = NULL;
                struct perf_data_reader *r;
                char off[32];
                uint64_t bad;
                struct sink s;
                size_t len;
                int k;

                build_with_bad(c, &data, &len, &bad);
                sink_init(&s);
                s.quiet = true;
                k = run_memory(data, len, 0, &s, &r);
                if (k != c->want || !strstr(perf_data_reader_error(r), c->msg))
                        fail_msg("%s (%s): got %d \"%s\", want %d \"%s\"", c->name, c->pipe ? "pipe" : "file",
                                 k, perf_data_reader_error(r), c->want, c->msg);
                /* The message names the damaged record's offset. */
                snprintf(off, sizeof(off), "0x%" PRIx64, bad);
                if (!strstr(perf_data_reader_error(r), off))
                        fail_msg("%s: \"%s\" does not name offset %s", c->name, perf_data_reader_error(r), off);
                if (s.nr != c->want_records)
                        fail_msg("%s (%s): %zu records delivered, want %zu", c->name, c->pipe ? "pipe" : "file",
                                 s.nr, c->want_records);
                perf_data_reader_free(r);
                sink_done(&s);
        }
}

static void test_callback_stop(void **state) {
        _cleanup_free_ uint8_t *data = NULL;
        struct perf_data_reader *r;
        struct sink s;
        size_t len;

        data = build_reference(false, &len);
        sink_init(&s);
        s.quiet = true;
        s.stop_at_type = PERF_RECORD_MMAP;
        assert_int_equal(run_memory(data, len, 0, &s, &r), -ECANCELED);
        /* TIME_CONV, AUXTRACE_INFO, COMM, then MMAP stopped the run. */
        assert_int_equal(s.nr, 4);
        /* A reader runs once. */
        assert_int_equal(perf_data_reader_run(r, &sink_ops, &s), -EALREADY);
        perf_data_reader_free(r);
        sink_done(&s);

        /* Stopping in a feature (file mode reads them first) stops before any record. */
        sink_init(&s);
        s.stop_at_feature = PERF_DATA_FEAT_NRCPUS;
        assert_int_equal(run_memory(data, len, 0, &s, &r), -ECANCELED);
        assert_int_equal(s.nr, 0);
        assert_string_equal(perf_data_reader_error(r), "");
        perf_data_reader_free(r);
        sink_done(&s);
}

/* ---- headers ---- */

struct magic_case {
        const char *name;
        uint8_t bytes[16];
        size_t len;
        int want;
        const char *msg;
};

static const struct magic_case magic_cases[] = {
        { "foreign", "NOTPERF!\x10\0\0\0\0\0\0\0", 16, -EPROTONOSUPPORT, "not a perf.data" },
        { "big-endian", "2ELIFREP\0\0\0\0\0\0\0\x10", 16, -EPROTONOSUPPORT, "opposite-endian" },
        { "v1", "PERFFILE\x10\0\0\0\0\0\0\0", 16, -EPROTONOSUPPORT, "PERFFILE" },
        { "empty", "", 0, -ENODATA, "cut by the end of the input at 0x0" },
        { "short-magic", "PERF", 4, -ENODATA, "cut" },
        { "short-big-endian", "2ELIFREP", 8, -EPROTONOSUPPORT, "opposite-endian" },
        { "header-size-bad", "PERFILE2\x20\0\0\0\0\0\0\0", 16, -ENODATA, "header" },
};

static void test_magic(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(magic_cases); i++) {
                const struct magic_case *c = &magic_cases[i];
                struct perf_data_reader *r;
                struct sink s;
                int k;

                sink_init(&s);
                k = run_memory(c->bytes, c->len, 0, &s, &r);
                if (k != c->want || !strstr(perf_data_reader_error(r), c->msg))
                        fail_msg("%s: got %d \"%s\", want %d \"%s\"", c->name, k, perf_data_reader_error(r),
                                 c->want, c->msg);
                assert_int_equal(s.nr, 0);
                perf_data_reader_free(r);
                sink_done(&s);
        }
}

/* A file with no features and SPE metadata version 1: nothing to say about CPUs. */
static void test_missing_features(void **state) {
        struct perf_event_attr spe;
        uint64_t ids[1] = { 100 }, midr = 0;
        _cleanup_free_ uint8_t *data = NULL;
        struct perf_data_reader *r;
        struct pdb b;
        struct sink s;
        size_t len;

        pdb_init(&b, false);
        pdb_spe_attr(&spe, SPE_PMU_TYPE);
        pdb_add_attr(&b, &spe, ids, 1);
        pdb_auxtrace_info_spe_v1(&b, SPE_PMU_TYPE);
        data = pdb_finish(&b, &len);
        pdb_done(&b);

        sink_init(&s);
        assert_int_equal(run_memory(data, len, 0, &s, &r), 0);
        assert_string_equal(s.log.buf,
                            "attr type=8 config=0x3 st=0x98087 ids=100\n"
                            "auxtrace_info type=4 spe_v=1 pmu=8\n");
        assert_int_equal(perf_data_reader_nr_cpus(r, NULL, NULL), -ENOENT);
        assert_null(perf_data_reader_cpuid(r));
        assert_int_equal(perf_data_reader_midr(r, 0, &midr), -ENOENT);
        assert_int_equal(perf_data_reader_nr_cpu_stats(r), 0);
        perf_data_reader_free(r);
        sink_done(&s);
}

/* A feature bit whose section points past the end: the records still come, then the error. */
static void test_feature_past_end(void **state) {
        _cleanup_free_ uint8_t *data = NULL;
        struct perf_data_reader *r;
        struct sink s;
        uint64_t bad = UINT64_C(0x100000);
        size_t len;

        data = build_reference(false, &len);
        /* The last feature section entry (CPUID) is 16 bytes before the 3 sections (68+8+68). */
        memcpy(data + len - 144 - 16, &bad, sizeof(bad));
        sink_init(&s);
        s.quiet = true;
        assert_int_equal(run_memory(data, len, 0, &s, &r), -ENODATA);
        assert_non_null(strstr(perf_data_reader_error(r), "feature 9 section at offset 0x100000"));
        assert_int_equal(s.nr, NR_REFERENCE_RECORDS_FILE);
        perf_data_reader_free(r);
        sink_done(&s);
}

/* ---- the build-id table ---- */

#define BID_NAME_ALIGN 64

static int log_build_id(void *u, const struct perf_data_build_id *bid) {
        struct strbuf *log = u;

        strbuf_printf(log, "bid pid=%" PRId32 " misc=0x%" PRIx16 " id=", bid->pid, bid->misc);
        for (unsigned i = 0; i < bid->build_id_size; i++)
                strbuf_printf(log, "%02x", bid->build_id[i]);
        strbuf_printf(log, " file=%s\n", bid->filename);
        return 0;
}

/*
 * One entry as perf's write_buildid() lays it out: header, pid, 24 id bytes
 * (the length in byte 20 when misc says so), the name padded to 64 bytes.
 * In pipe mode the header is the record's, so only the rest is returned.
 */
static size_t bid_entry(uint8_t *out, uint16_t misc, int32_t pid, uint8_t fill, uint8_t size, const char *name,
                        bool with_header) {
        struct perf_data_wire_build_id w = { .misc = misc, .pid = pid, .build_id_size = size };
        size_t name_len = (strlen(name) + 1 + BID_NAME_ALIGN - 1) / BID_NAME_ALIGN * BID_NAME_ALIGN;

        memset(w.build_id, fill, sizeof(w.build_id));
        w.size = (uint16_t) (sizeof(w) + name_len);
        /* Zero the whole entry first: GCC's -Warray-bounds under -fsanitize=address
         * misread a memset at out + sizeof(w) (a false positive that stopped the ASan build). */
        memset(out, 0, sizeof(w) + name_len);
        memcpy(out, &w, sizeof(w));
        memcpy(out + sizeof(w), name, strlen(name));
        if (with_header)
                return sizeof(w) + name_len;
        memmove(out, out + 8, sizeof(w) + name_len - 8); /* drop the perf_event_header */
        return sizeof(w) + name_len - 8;
}

#define BID_USER (PERF_RECORD_MISC_USER | PDB_MISC_BUILD_ID_SIZE)

static const char want_build_ids[] =
        "bid pid=-1 misc=0x8002 id=1111111111111111111111111111111111111111 file=/usr/lib/libc.so.6\n"
        "bid pid=-1 misc=0x1 id=2222222222222222222222222222222222222222 file=[kernel.kallsyms]\n"
        "bid pid=-1 misc=0x8002 id=33333333333333333333333333333333 file=/opt/md5-linked\n"
        "bid pid=4242 misc=0x8005 id=4444444444444444444444444444444444444444 file=/guest/bin/app\n";

/* The table in a file's feature section and as pipe-mode records; then damaged entries. */
static void test_build_id_table(void **state) {
        static const struct perf_data_ops ops = { .on_build_id = log_build_id };
        uint8_t sec[1024];
        size_t n = 0, len;

        for (int pipe = 0; pipe <= 1; pipe++) {
                _cleanup_free_ uint8_t *data = NULL;
                struct strbuf log = STRBUF_INIT;
                struct perf_data_reader *r;
                struct pdb b;
                uint8_t e[256];
                const struct {
                        uint16_t misc;
                        int32_t pid;
                        uint8_t fill, size;
                        const char *name;
                } ents[] = {
                        { BID_USER, -1, 0x11, 20, "/usr/lib/libc.so.6" },
                        { PERF_RECORD_MISC_KERNEL, -1, 0x22, 0, "[kernel.kallsyms]" }, /* no size: 20 */
                        { BID_USER, -1, 0x33, 16, "/opt/md5-linked" },
                        { PERF_RECORD_MISC_GUEST_USER | PDB_MISC_BUILD_ID_SIZE, 4242, 0x44, 20,
                          "/guest/bin/app" },
                };

                pdb_init(&b, pipe);
                n = 0;
                for (size_t i = 0; i < ELEMENTSOF(ents); i++) {
                        if (pipe) {
                                size_t el = bid_entry(e, ents[i].misc, ents[i].pid, ents[i].fill, ents[i].size,
                                                      ents[i].name, false);

                                pdb_record(&b, PDB_RECORD_HEADER_BUILD_ID, ents[i].misc, e, el, false);
                        } else
                                n += bid_entry(sec + n, ents[i].misc, ents[i].pid, ents[i].fill, ents[i].size,
                                               ents[i].name, true);
                }
                if (!pipe)
                        pdb_add_feature(&b, PDB_FEAT_BUILD_ID, sec, n);
                data = pdb_finish(&b, &len);
                pdb_done(&b);
                assert_int_equal(perf_data_reader_new_memory(data, len, &r), 0);
                assert_int_equal(perf_data_reader_run(r, &ops, &log), 0);
                assert_string_equal(log.buf, want_build_ids);
                perf_data_reader_free(r);
                strbuf_done(&log);
        }

        /* Damage in the file's section: named with its offset, the good entries before it kept. */
        const struct {
                size_t at;              /* byte of the third entry's header to change */
                uint16_t size;          /* its new header.size; 0: unterminate the name instead */
                const char *msg;
        } bad[] = {
                { 6, 12, "has size 0xc outside" },
                { 6, 0xfff0, "has size 0xfff0 outside" },
                { 0, 0, "has an unterminated file name" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_free_ uint8_t *data = NULL;
                struct strbuf log = STRBUF_INIT;
                struct perf_data_reader *r;
                size_t third = 0, m = 0;
                struct pdb b;

                n = 0;
                n += bid_entry(sec + n, BID_USER, -1, 0x11, 20, "/usr/lib/libc.so.6", true);
                n += bid_entry(sec + n, PERF_RECORD_MISC_KERNEL, -1, 0x22, 0, "[kernel.kallsyms]", true);
                third = n;
                m = bid_entry(sec + n, BID_USER, -1, 0x33, 16, "/opt/md5-linked", true);
                if (bad[i].size)
                        memcpy(sec + third + bad[i].at, &bad[i].size, sizeof(bad[i].size));
                else
                        memset(sec + third + sizeof(struct perf_data_wire_build_id), 'x',
                               m - sizeof(struct perf_data_wire_build_id));
                n += m;
                pdb_init(&b, false);
                pdb_add_feature(&b, PDB_FEAT_BUILD_ID, sec, n);
                data = pdb_finish(&b, &len);
                pdb_done(&b);
                assert_int_equal(perf_data_reader_new_memory(data, len, &r), 0);
                assert_int_equal(perf_data_reader_run(r, &(struct perf_data_ops) { .on_build_id = log_build_id },
                                                      &log), -EBADMSG);
                assert_non_null(strstr(perf_data_reader_error(r), bad[i].msg));
                assert_non_null(strstr(perf_data_reader_error(r), "build-id entry at offset 0x"));
                /* The two entries before the damage were delivered. */
                assert_int_equal(strlen(log.buf), strlen(want_build_ids) -
                                 strlen(strstr(want_build_ids, "bid pid=-1 misc=0x8002 id=3333")));
                perf_data_reader_free(r);
                strbuf_done(&log);
        }
}

/* SPE AUXTRACE_INFO private areas written word by word (tools/perf/util/arm-spe.h). */
struct spe_info_case {
        const char *name;
        uint64_t words[24];             /* {type, reserved} as one u64, then priv[] */
        size_t nr;
        const char *want;               /* the sink's auxtrace_info line */
        uint32_t midr_cpu;
        uint64_t midr;                  /* perf_data_reader_midr(midr_cpu) afterwards */
};

#define SPE_MAGIC PDB_SPE_CPU_MAGIC
static const struct spe_info_case spe_info_cases[] = {
        { "v1", { 4, 8, 1 }, 3, "auxtrace_info type=4 spe_v=1 pmu=8\n", 0, MIDR_N1 /* from CPUID */ },
        { "v2-3-params", { 4, 2, 4, 9, 2,
                           SPE_MAGIC, 2, 3, MIDR_V1, 9, 512,
                           SPE_MAGIC, 3, 3, 0x410fd490, UINT64_MAX, 0 }, 17,
          "auxtrace_info type=4 spe_v=2 pmu=9 cpu2:midr=0x410fd400,pmu=9,ival=512,ef=0x0,n=3"
          " cpu3:midr=0x410fd490,pmu=18446744073709551615,ival=0,ef=0x0,n=3\n", 3, 0x410fd490 },
        /* A longer header (a future version) is skipped by its size word. */
        { "v3-longer-header", { 4, 3, 5, 8, 1, 0x77,
                                SPE_MAGIC, 7, 4, MIDR_V1, 8, 1024, 0xff }, 13,
          "auxtrace_info type=4 spe_v=3 pmu=8 cpu7:midr=0x410fd400,pmu=8,ival=1024,ef=0xff,n=4\n", 7, MIDR_V1 },
        /* Zero parameters: no MIDR for that CPU, the CPUID one applies. */
        { "v2-no-params", { 4, 2, 4, 8, 1, SPE_MAGIC, 1, 0 }, 8,
          "auxtrace_info type=4 spe_v=2 pmu=8 cpu1:midr=0x0,pmu=8,ival=0,ef=0x0,n=0\n", 1, MIDR_N1 },
        /* Not SPE: passed through raw. */
        { "intel-pt", { 1, 0x1234, 0x5678 }, 3, "auxtrace_info type=1 spe_v=0 pmu=0\n", 0, MIDR_N1 },
};

static void test_spe_info_variants(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(spe_info_cases); i++) {
                const struct spe_info_case *c = &spe_info_cases[i];
                _cleanup_free_ uint8_t *data = NULL;
                struct perf_data_reader *r;
                uint64_t midr = 0;
                struct pdb b;
                struct sink s;
                size_t len;

                pdb_init(&b, true);
                pdb_feature_string(&b, PDB_FEAT_CPUID, "0x00000000413fd0c1");
                pdb_record(&b, PDB_RECORD_AUXTRACE_INFO, 0, c->words, c->nr * 8, false);
                data = pdb_finish(&b, &len);
                pdb_done(&b);

                sink_init(&s);
                if (run_memory(data, len, 0, &s, &r) != 0)
                        fail_msg("%s: %s", c->name, perf_data_reader_error(r));
                /* Skip the feature line. */
                assert_non_null(strchr(s.log.buf, '\n'));
                if (!streq(strchr(s.log.buf, '\n') + 1, c->want))
                        fail_msg("%s: got %s want %s", c->name, strchr(s.log.buf, '\n') + 1, c->want);
                assert_int_equal(perf_data_reader_midr(r, c->midr_cpu, &midr), 0);
                assert_int_equal(midr, c->midr);
                perf_data_reader_free(r);
                sink_done(&s);
        }
}

struct midr_case {
        const char *s;
        int want;
        uint64_t midr;
};

static const struct midr_case midr_cases[] = {
        { "0x00000000410fd0c0", 0, UINT64_C(0x410fd0c0) },
        { "0x00000000413FD0C1", 0, UINT64_C(0x413fd0c1) },
        { "0xffffffffffffffff", 0, UINT64_MAX },
        { "0x1ffffffffffffffff", -ERANGE, 0 },
        { "GenuineIntel,6,85,4", -EINVAL, 0 },
        { "0x", -EINVAL, 0 },
        { "0x41 ", -EINVAL, 0 },
        { "410fd0c0", -EINVAL, 0 },
        { "", -EINVAL, 0 },
};

static void test_parse_midr(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(midr_cases); i++) {
                uint64_t v = 0xdead;
                int k = perf_data_parse_midr(midr_cases[i].s, &v);

                if (k != midr_cases[i].want)
                        fail_msg("\"%s\": %d, want %d", midr_cases[i].s, k, midr_cases[i].want);
                assert_int_equal(v, k == 0 ? midr_cases[i].midr : 0xdead);
        }
}

/* ---- samples with many fields ---- */

struct sample_got {
        struct perf_data_sample s;
        int n;
};

static int on_sample_got(void *u, const struct perf_data_sample *smp) {
        struct sample_got *got = u;
        uint64_t second;

        got->s = *smp;
        got->n++;
        /* Pointers live only during the call: check the callchain now. */
        memcpy(&second, smp->callchain + 8, sizeof(second));
        assert_int_equal(second, 0xb);
        got->s.callchain = NULL;
        got->s.rest = NULL;
        return 0;
}

static void test_sample_fields(void **state) {
        struct perf_event_attr a = {
                .type = PERF_TYPE_RAW,
                .size = sizeof(a),
                .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
                               PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
                               PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW |
                               PERF_SAMPLE_BRANCH_STACK | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER |
                               PERF_SAMPLE_WEIGHT_STRUCT | PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_TRANSACTION |
                               PERF_SAMPLE_REGS_INTR | PERF_SAMPLE_PHYS_ADDR | PERF_SAMPLE_CGROUP |
                               PERF_SAMPLE_DATA_PAGE_SIZE | PERF_SAMPLE_CODE_PAGE_SIZE | PERF_SAMPLE_AUX,
                .read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED,
                .branch_sample_type = PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_HW_INDEX,
                .sample_regs_user = 0x7,        /* 3 registers */
                .sample_regs_intr = 0x3,        /* 2 registers */
        };
        uint64_t ids[1] = { 42 };
        const uint64_t w[] = {
                0x1111,                         /* IP */
                10 | (UINT64_C(11) << 32),      /* TID */
                12345,                          /* TIME */
                0xdada,                         /* ADDR */
                42,                             /* ID */
                43,                             /* STREAM_ID */
                3,                              /* CPU */
                1000,                           /* PERIOD */
                2, 777, 5, 42, 6, 43,           /* READ: nr, time_enabled, {value, id} x2 */
                2, 0xa, 0xb,                    /* CALLCHAIN */
                12 | (UINT64_C(0x61616161) << 32), 0x6262626262626262, /* RAW: u32 size 12 + 12 bytes */
                1, 99, 0x1, 0x2, 0x3,           /* BRANCH_STACK: nr, hw_idx, 1 entry of 24 bytes */
                2, 0x100, 0x101, 0x102,         /* REGS_USER: abi 64, 3 regs */
                16, 0x5, 0x6, 16,               /* STACK_USER: size, 16 bytes, dyn_size */
                77 | (UINT64_C(5) << 32) | (UINT64_C(6) << 48), /* WEIGHT_STRUCT */
                0x288100142,                    /* DATA_SRC */
                0x9,                            /* TRANSACTION */
                0,                              /* REGS_INTR: abi none, no regs */
                0x8840100200,                   /* PHYS_ADDR */
                0xc9,                           /* CGROUP */
                4096,                           /* DATA_PAGE_SIZE */
                65536,                          /* CODE_PAGE_SIZE */
                8, 0xfeedface,                  /* AUX: size 8 + 8 bytes, left raw */
        };
        struct perf_data_reader *r;
        _cleanup_free_ uint8_t *data = NULL;
        struct pdb b;
        size_t len;
        struct sample_got got = { .n = 0 };
        const struct perf_data_ops ops = { .on_sample = on_sample_got };

        pdb_init(&b, false);
        pdb_add_attr(&b, &a, ids, 1);
        pdb_sample_words(&b, w, ELEMENTSOF(w), 0);
        /* The same sample without its last three words: CODE_PAGE_SIZE is missing. */
        pdb_sample_words(&b, w, ELEMENTSOF(w) - 3, 0);
        data = pdb_finish(&b, &len);
        pdb_done(&b);

        assert_int_equal(perf_data_reader_new_memory(data, len, &r), 0);
        assert_int_equal(perf_data_reader_run(r, &ops, &got), -EBADMSG);
        assert_int_equal(got.n, 1);
        assert_int_equal(got.s.ip, 0x1111);
        assert_int_equal(got.s.rec.sid.pid, 10);
        assert_int_equal(got.s.rec.sid.tid, 11);
        assert_int_equal(got.s.rec.sid.time, 12345);
        assert_int_equal(got.s.addr, 0xdada);
        assert_int_equal(got.s.rec.sid.id, 42);
        assert_int_equal(got.s.rec.sid.stream_id, 43);
        assert_int_equal(got.s.rec.sid.cpu, 3);
        assert_int_equal(got.s.period, 1000);
        assert_int_equal(got.s.nr_callchain, 2);
        assert_int_equal(got.s.weight, 77);
        assert_int_equal(got.s.weight_var2, 5);
        assert_int_equal(got.s.weight_var3, 6);
        assert_int_equal(got.s.data_src, 0x288100142);
        assert_int_equal(got.s.transaction, 0x9);
        assert_int_equal(got.s.phys_addr, 0x8840100200);
        assert_int_equal(got.s.cgroup, 0xc9);
        assert_int_equal(got.s.data_page_size, 4096);
        assert_int_equal(got.s.code_page_size, 65536);
        assert_int_equal(got.s.rest_len, 16);
        assert_int_equal(got.s.fields & PERF_SAMPLE_AUX, 0);
        assert_int_equal(got.s.fields & PERF_SAMPLE_PHYS_ADDR, PERF_SAMPLE_PHYS_ADDR);
        assert_non_null(strstr(perf_data_reader_error(r), "too short for sample_type"));
        perf_data_reader_free(r);
}

/* ---- fds, paths, pipes ---- */

static char *make_tmpdir(void) {
        const char *base = getenv("TMPDIR") ?: "/tmp";
        struct strbuf sb = STRBUF_INIT;

        strbuf_printf(&sb, "%s/test-perf-data-XXXXXX", base);
        assert_non_null(mkdtemp(sb.buf));
        return strbuf_steal(&sb, NULL);
}

static void test_path_and_fd(void **state) {
        _cleanup_free_ uint8_t *file = NULL, *pipe_data = NULL;
        _cleanup_free_ char *dir = make_tmpdir(), *p1 = NULL, *p2 = NULL;
        struct perf_data_reader *r;
        size_t flen, plen;
        int fds[2], status;
        struct sink s;
        pid_t pid;

        file = build_reference(false, &flen);
        pipe_data = build_reference(true, &plen);
        p1 = pdb_write_file(dir, "file.data", file, flen);
        p2 = pdb_write_file(dir, "pipe.data", pipe_data, plen);

        /* A path to a file-mode file and to a pipe-mode stream stored in a file. */
        for (int i = 0; i < 2; i++) {
                sink_init(&s);
                assert_int_equal(perf_data_reader_new_path(i ? p2 : p1, &r), 0);
                assert_int_equal(spe_info_attach(r, &s.spe), 0);
                perf_data_reader_set_read_size(r, 11);
                assert_int_equal(perf_data_reader_run(r, &sink_ops, &s), 0);
                check_reference_payloads(&s);
                check_reference_stats(r, i == 1);
                perf_data_reader_free(r);
                sink_done(&s);
        }
        assert_int_equal(perf_data_reader_new_path("/nonexistent/perf.data", &r), -ENOENT);

        /* A real pipe, as `perf record -o - | armprofd --replay -` gives it: written in pieces. */
        for (int mode = 0; mode < 2; mode++) {
                const uint8_t *src = mode ? file : pipe_data;
                size_t n = mode ? flen : plen;

                assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
                pid = fork();
                assert_true(pid >= 0);
                if (pid == 0) {
                        close(fds[0]);
                        for (size_t off = 0; off < n; off += 37) {
                                size_t m = MIN((size_t) 37, n - off);

                                if (write(fds[1], src + off, m) != (ssize_t) m)
                                        _exit(1);
                                usleep(100);
                        }
                        _exit(0);
                }
                close(fds[1]);
                sink_init(&s);
                assert_int_equal(perf_data_reader_new_fd(fds[0], true, &r), 0);
                assert_int_equal(spe_info_attach(r, &s.spe), 0);
                if (mode == 0) {
                        assert_int_equal(perf_data_reader_run(r, &sink_ops, &s), 0);
                        check_reference_payloads(&s);
                        check_reference_stats(r, true);
                } else {
                        /* File mode needs seeking. */
                        assert_int_equal(perf_data_reader_run(r, &sink_ops, &s), -ESPIPE);
                        assert_non_null(strstr(perf_data_reader_error(r), "unseekable"));
                }
                perf_data_reader_free(r);
                sink_done(&s);
                /* The writer may die of SIGPIPE in the file-mode case; both are fine. */
                assert_int_equal(waitpid(pid, &status, 0), pid);
        }

        unlink(p1);
        unlink(p2);
        rmdir(dir);
}

/* A payload of several MiB goes out in read-buffer-sized pieces, never in one piece. */
static int count_big(void *u, const struct perf_data_auxtrace *at, uint64_t chunk_offset,
                     const uint8_t *data, size_t len, bool last) {
        uint64_t *v = u;

        v[0]++;
        v[1] = MAX(v[1], (uint64_t) len);
        v[2] += len;
        for (size_t i = 0; i < len; i += 4096)
                if (data[i] != (uint8_t) ((chunk_offset + i) >> 12))
                        return -EIO;
        return 0;
}

static void test_big_payload(void **state) {
        const size_t n = 3 * 1024 * 1024 + 4096;
        _cleanup_free_ uint8_t *pay = malloc(n), *data = NULL;
        struct perf_data_ops ops = { .on_auxtrace = count_big };
        struct perf_data_reader *r;
        uint64_t v[3] = { 0 };
        struct pdb b;
        size_t len;

        assert_non_null(pay);
        for (size_t i = 0; i < n; i++)
                pay[i] = (uint8_t) (i >> 12);
        pdb_init(&b, false);
        pdb_auxtrace(&b, 0, 0, UINT32_MAX, 0, pay, n);
        pdb_finished_round(&b);
        data = pdb_finish(&b, &len);
        pdb_done(&b);

        assert_int_equal(perf_data_reader_new_memory(data, len, &r), 0);
        assert_int_equal(perf_data_reader_run(r, &ops, v), 0);
        assert_int_equal(v[2], n);
        assert_true(v[0] >= 4);
        assert_true(v[1] <= 1024 * 1024);
        assert_int_equal(perf_data_reader_stats(r)->records_total, 2);
        perf_data_reader_free(r);
}

/* ---- fuzz seeds ---- */

static int write_seeds(const char *dir) {
        static const struct corrupt_case seeds[] = {
                { "sample-too-short", true, 0, NULL, 0 },
                { "spe-info-magic", false, 0, NULL, 0 },
                { "compressed", true, 0, NULL, 0 },
        };
        uint8_t *d;
        size_t len;
        uint64_t bad;

        d = build_reference(false, &len);
        free(pdb_write_file(dir, "reference-file.data", d, len));
        free(d);
        d = build_reference(true, &len);
        free(pdb_write_file(dir, "reference-pipe.data", d, len));
        free(d);
        for (size_t i = 0; i < ELEMENTSOF(seeds); i++) {
                char name[64];

                build_with_bad(&seeds[i], &d, &len, &bad);
                snprintf(name, sizeof(name), "%s-%s.data", seeds[i].name, seeds[i].pipe ? "pipe" : "file");
                free(pdb_write_file(dir, name, d, len));
                free(d);
        }
        return 0;
}

/*
 * perf-record.h without a reader, as the live rings and the sampler call it:
 * a cpu-clock SAMPLE laid out by hand from perf_event_open(2)'s order, and
 * an AUX record's sample_id trailer.
 */
static void test_record_parsers(void **state) {
        struct perf_event_attr attr = {
                .sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                               PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_CGROUP,
                .sample_id_all = 1,
        };
        uint64_t words[] = {
                0,                                      /* header, below */
                77,                                     /* IDENTIFIER */
                0xffff800010001234,                     /* IP */
                (UINT64_C(4243) << 32) | 4242,          /* {pid, tid} */
                123456789,                              /* TIME */
                3,                                      /* {cpu, res} */
                1000003,                                /* PERIOD */
                2, 0xfffffffffffffe00, 0xaaaa0000,      /* CALLCHAIN: nr, ips */
                0x1f,                                   /* CGROUP */
        };
        struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .misc = PERF_RECORD_MISC_KERNEL,
                                       .size = sizeof(words) };
        struct perf_data_record rec;
        struct perf_data_sample s;
        uint32_t tlen;

        memcpy(words, &h, sizeof(h));
        perf_record_header((const uint8_t *) words, 0x40, &rec);
        assert_int_equal(rec.type, PERF_RECORD_SAMPLE);
        assert_int_equal(rec.size, sizeof(words));
        assert_int_equal(perf_record_parse_sample(&attr, &rec, &s), 0);
        assert_int_equal(s.rec.file_offset, 0x40);
        assert_int_equal(s.rec.sid.id, 77);
        assert_int_equal(s.ip, 0xffff800010001234);
        assert_int_equal(s.rec.sid.pid, 4242);
        assert_int_equal(s.rec.sid.tid, 4243);
        assert_int_equal(s.rec.sid.time, 123456789);
        assert_int_equal(s.rec.sid.cpu, 3);
        assert_int_equal(s.rec.sid.valid, PERF_DATA_ID_ID | PERF_DATA_ID_TID | PERF_DATA_ID_TIME | PERF_DATA_ID_CPU);
        assert_int_equal(s.period, 1000003);
        assert_int_equal(s.nr_callchain, 2);
        assert_int_equal(perf_rd64(s.callchain + 8), 0xaaaa0000);
        assert_int_equal(s.cgroup, 0x1f);
        assert_int_equal(s.rest_len, 0);
        assert_null(s.attr);
        /* One word short: the cgroup is missing. */
        rec.size -= 8;
        assert_int_equal(perf_record_parse_sample(&attr, &rec, &s), -EBADMSG);

        /* AUX {aux_offset, aux_size, flags} then {pid,tid} time {cpu,res} identifier. */
        uint64_t aux[] = { 0, 0x10000, 0x2000, PERF_AUX_FLAG_TRUNCATED,
                           (UINT64_C(11) << 32) | 10, 555, 2, 77 };
        struct perf_data_aux a;

        h = (struct perf_event_header) { .type = PERF_RECORD_AUX, .size = sizeof(aux) };
        memcpy(aux, &h, sizeof(h));
        perf_record_header((const uint8_t *) aux, 0, &rec);
        assert_int_equal(perf_record_trailer_size(attr.sample_type), 32);
        assert_int_equal(perf_record_parse_trailer(&attr, &rec, 24, &tlen), 0);
        assert_int_equal(tlen, 32);
        assert_int_equal(perf_record_parse_aux(&rec, tlen, &a), 0);
        assert_int_equal(a.aux_offset, 0x10000);
        assert_int_equal(a.aux_size, 0x2000);
        assert_int_equal(a.flags, PERF_AUX_FLAG_TRUNCATED);
        assert_int_equal(a.rec.sid.tid, 11);
        assert_int_equal(a.rec.sid.time, 555);
        assert_int_equal(a.rec.sid.cpu, 2);
        /* Without sample_id_all there is no trailer; a body cut by the trailer is too short. */
        attr.sample_id_all = 0;
        assert_int_equal(perf_record_parse_trailer(&attr, &rec, 24, &tlen), 0);
        assert_int_equal(tlen, 0);
        assert_int_equal(perf_record_parse_aux(&rec, 48, &a), -EBADMSG);
        assert_int_equal(perf_record_fixed_size(PERF_RECORD_AUX), 32);
}

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_reference_file),
                cmocka_unit_test(test_reference_pipe),
                cmocka_unit_test(test_small_reads),
                cmocka_unit_test(test_truncate_file),
                cmocka_unit_test(test_truncate_pipe),
                cmocka_unit_test(test_corrupt),
                cmocka_unit_test(test_callback_stop),
                cmocka_unit_test(test_magic),
                cmocka_unit_test(test_missing_features),
                cmocka_unit_test(test_feature_past_end),
                cmocka_unit_test(test_parse_midr),
                cmocka_unit_test(test_spe_info_variants),
                cmocka_unit_test(test_sample_fields),
                cmocka_unit_test(test_path_and_fd),
                cmocka_unit_test(test_big_payload),
                cmocka_unit_test(test_build_id_table),
                cmocka_unit_test(test_record_parsers),
        };

        if (argc == 3 && streq(argv[1], "--write-seeds"))
                return write_seeds(argv[2]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
