/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "sampler-ring.h"

#include <errno.h>
#include <string.h>

#include "macro.h"
#include "perf-record.h"

static int flush(void *userdata) {
        struct sampler_ring *r = userdata;

        if (r->n_batch > 0 && r->sink->samples)
                r->sink->samples(r->sink->userdata, r->batch, r->n_batch);
        r->n_batch = 0;
        return 0;
}

static bool aligned8(const void *p) {
        return ((uintptr_t) p & 7) == 0;
}

/* Entries that are no context marker. */
static size_t callchain_frames(const uint64_t *ips, size_t n) {
        size_t frames = 0;

        for (size_t i = 0; i < n; i++)
                frames += !perf_callchain_is_context(ips[i]);
        return frames;
}

static void on_sample(struct sampler_ring *r, const struct perf_data_record *rec) {
        const struct perf_event_attr *a = r->attr;
        struct perf_data_sample s;
        struct source_sample *out;

        if (perf_record_parse_sample(a, rec, &s) < 0 ||
            /* Records are u64-aligned in the ring (perf_prepare_sample() pads them), so are their arrays. */
            !aligned8(s.callchain) || !aligned8(s.regs_user)) {
                r->st->bad_records++;
                return;
        }
        proc_table_sample(r->procs, (s.rec.sid.valid & PERF_DATA_ID_TID) ? s.rec.sid.pid : SOURCE_NO_ID,
                             (s.rec.sid.valid & PERF_DATA_ID_TID) ? s.rec.sid.tid : SOURCE_NO_ID,
                             s.rec.sid.time, s.cgroup);
        out = &r->batch[r->n_batch++];
        *out = (struct source_sample) {
                .cpu = (s.rec.sid.valid & PERF_DATA_ID_CPU) ? s.rec.sid.cpu : r->cpu,
                .pid = (s.rec.sid.valid & PERF_DATA_ID_TID) ? s.rec.sid.pid : SOURCE_NO_ID,
                .tid = (s.rec.sid.valid & PERF_DATA_ID_TID) ? s.rec.sid.tid : SOURCE_NO_ID,
                .time_ns = s.rec.sid.time,
                .ip = s.ip,
                .period = s.period,
                .cgroup_id = s.cgroup,
                .callchain = (const uint64_t *) s.callchain,
                .nr_callchain = s.nr_callchain,
                .regs_abi = s.regs_user_abi,
                .regs_mask = (a->sample_type & PERF_SAMPLE_REGS_USER) ? a->sample_regs_user : 0,
                .regs = (const uint64_t *) s.regs_user,
                .nr_regs = s.nr_regs_user,
                .stack = s.stack_user,
                .stack_len = s.stack_user_dyn_size,
        };
        r->st->samples++;
        /* The kernel stops its walk at sample_max_stack frames (kernel/events/callchain.c
         * perf_callchain_store()); the context markers are not counted. */
        if ((a->sample_type & PERF_SAMPLE_CALLCHAIN) && a->sample_max_stack > 0 &&
            callchain_frames(out->callchain, out->nr_callchain) >= a->sample_max_stack)
                r->st->callchain_truncated++;
        if (s.stack_user_size > 0 && s.stack_user_dyn_size == s.stack_user_size)
                r->st->stack_truncated++;
        if (r->n_batch == SAMPLER_RING_BATCH)
                (void) flush(r);
}

static bool is_sideband(uint32_t type) {
        return type == PERF_RECORD_COMM || type == PERF_RECORD_FORK || type == PERF_RECORD_EXIT ||
               type == PERF_RECORD_MMAP || type == PERF_RECORD_MMAP2 || type == PERF_RECORD_CGROUP;
}

/* FNV-1a of a record's bytes: how the drain knows a record the pre-scan handed on. */
static uint64_t record_hash(const uint8_t *raw, size_t len) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);

        for (size_t i = 0; i < len; i++)
                h = (h ^ raw[i]) * UINT64_C(0x100000001b3);
        return h;
}

static void sideband(struct sampler_ring *r, const uint8_t *raw, uint32_t type);

static int on_record(void *userdata, const uint8_t *raw, size_t len) {
        struct sampler_ring *r = userdata;
        struct perf_data_record rec;
        uint32_t type = perf_rd32(raw); /* header.type */

        if (type == PERF_RECORD_SAMPLE) {
                perf_record_header(raw, 0, &rec);
                on_sample(r, &rec);
                return 0;
        }
        if (type == PERF_RECORD_THROTTLE) {
                r->st->throttles++;
                return 0;
        }
        if (type == PERF_RECORD_UNTHROTTLE)
                return 0;
        /* Handed on by the pre-scan already: the drain only releases it. */
        if (is_sideband(type) && r->n_early > 0 && r->early[r->early_head] == record_hash(raw, len)) {
                r->early_head = (r->early_head + 1) % SAMPLER_RING_EARLY;
                r->n_early--;
                return 0;
        }
        /* The samples before a task or mapping record go first: a COMM renames what follows only. */
        (void) flush(r);
        sideband(r, raw, type);
        return 0;
}

static void sideband(struct sampler_ring *r, const uint8_t *raw, uint32_t type) {
        struct perf_data_record rec;
        uint32_t tlen;

        if (perf_record_parse_ring(r->attr, raw, 0, &rec, &tlen) < 0) {
                r->st->bad_records += perf_record_fixed_size(type) != 0;
                return;
        }

        switch (rec.type) {
        case PERF_RECORD_COMM: {
                struct perf_data_comm c;

                if (perf_record_parse_comm(&rec, tlen, &c) < 0)
                        break;
                proc_table_comm(r->procs, &c);
                return;
        }
        case PERF_RECORD_FORK:
        case PERF_RECORD_EXIT: {
                struct perf_data_task t;

                if (perf_record_parse_task(&rec, tlen, &t) < 0)
                        break;
                proc_table_task(r->procs, &t);
                return;
        }
        case PERF_RECORD_MMAP:
        case PERF_RECORD_MMAP2: {
                struct perf_data_mmap m;

                if (perf_record_parse_mmap(&rec, tlen, &m) < 0)
                        break;
                proc_table_mapping(r->procs, &m);
                return;
        }
        case PERF_RECORD_CGROUP: {
                struct perf_data_cgroup c;

                if (perf_record_parse_cgroup(&rec, tlen, &c) < 0)
                        break;
                proc_table_cgroup(r->procs, &c);
                return;
        }
        default:
                /* Nothing else was asked for; a kernel that adds records adds them here. */
                return;
        }
        r->st->bad_records++;
}

static const struct aux_ring_ops ring_ops = {
        .record = on_record,
        .end = flush,
};

int sampler_ring_init(struct sampler_ring *r, struct perf_event_mmap_page *page, const void *data, size_t data_size,
                      const struct perf_event_attr *attr, const struct source_sink *sink,
                      struct proc_table *procs, struct sampler_cpu_stats *st) {
        int k;

        if (!r || !attr || !sink || !procs || !st)
                return -EINVAL;
        memset(r, 0, sizeof(*r));
        k = aux_ring_init(&r->ring, page, data, data_size, NULL, 0);
        if (k < 0)
                return k;
        aux_ring_set_attr(&r->ring, attr);
        r->attr = attr;
        r->sink = sink;
        r->procs = procs;
        r->st = st;
        r->cpu = st->cpu;
        return 0;
}

void sampler_ring_done(struct sampler_ring *r) {
        aux_ring_done(&r->ring);
}

int sampler_ring_drain(struct sampler_ring *r, size_t max) {
        uint64_t lost = r->ring.stats.lost, lost_samples = r->ring.stats.lost_samples, bad = r->ring.stats.bad_records;
        int k;

        k = aux_ring_drain_max(&r->ring, &ring_ops, r, max, NULL);
        /* The ring's counts are this event's; the CPU's are since start. */
        r->st->lost += r->ring.stats.lost - lost;
        r->st->lost_samples += r->ring.stats.lost_samples - lost_samples;
        r->st->bad_records += r->ring.stats.bad_records - bad;
        /*
         * Bytes the drain skipped may hold records the pre-scan handed on:
         * their hashes would never be met, and every later one would be
         * handed on twice. Start the pre-scan over from what is left.
         */
        if (r->ring.stats.bad_records != bad) {
                r->n_early = r->early_head = 0;
                r->prescan_pos = __atomic_load_n(&r->ring.page->data_tail, __ATOMIC_RELAXED);
        }
        if (r->ring.stats.lost != lost)
                proc_table_lost(r->procs);
        return k;
}

static int prescan_one(void *userdata, const uint8_t *raw, size_t len) {
        struct sampler_ring *r = userdata;
        uint32_t type = perf_rd32(raw);

        if (!is_sideband(type))
                return 0;
        if (r->n_early == SAMPLER_RING_EARLY)
                return -ENOBUFS; /* the rest in order, with the drain */
        sideband(r, raw, type);
        r->early[(r->early_head + r->n_early) % SAMPLER_RING_EARLY] = record_hash(raw, len);
        r->n_early++;
        return 0;
}

void sampler_ring_prescan(struct sampler_ring *r) {
        /* Nothing of the pre-scan is left in the ring: what it handed on has all been skipped. */
        if (!aux_ring_pending(&r->ring))
                r->n_early = r->early_head = 0;
        (void) aux_ring_peek(&r->ring, &r->prescan_pos, prescan_one, r);
}

bool sampler_ring_pending(const struct sampler_ring *r) {
        return aux_ring_pending(&r->ring);
}
