/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "spe-replay.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "memsample-decode.h"
#include "perf-data.h"
#include "spe-info.h"
#include "spe-stream.h"
#include "strbuf.h"
#include "task-map.h"

/*
 * The perf.data build-id table (host user files) that names the build of
 * each mapped file whose MMAP2 carries none, as perf record writes it by
 * default. Bounded: entries beyond it are counted and left out.
 */
#define REPLAY_MAX_BUILD_IDS 16384
/* Events of a recording (SPE plus perf's dummy/tracking events): a few. */
#define REPLAY_MAX_ATTRS 16
/* Bytes per read(2) of a raw SPE buffer. */
#define RAW_READ_SIZE (256 * 1024)

struct build_id_entry {
        char *filename;
        uint8_t size;
        uint8_t id[PERF_DATA_BUILD_ID_MAX];
};

struct spe_replay {
        struct perf_data_reader *reader;
        const struct source_sink *sink;
        struct spe_stream *queues[SPE_REPLAY_MAX_CPUS];
        struct spe_stream *sorted[SPE_REPLAY_MAX_CPUS];
        size_t n_queues;
        struct task_map *tasks;         /* tid -> pid: the shared map, or our own */
        bool own_tasks;
        struct build_id_entry *build_ids; /* sorted by filename when build_ids_sorted */
        size_t n_build_ids, cap_build_ids;
        bool build_ids_sorted;
        uint64_t build_ids_dropped;
        struct {
                uint32_t type;
                uint64_t period;
        } attrs[REPLAY_MAX_ATTRS];
        size_t n_attrs;
        struct spe_info_decoder spe_info; /* the reader's decoder of SPE AUXTRACE_INFO */
        uint64_t spe_pmu_type;
        bool has_spe_pmu_type;
        bool raw;
        uint64_t raw_midr;
        uint64_t dropped_payloads, dropped_bytes;
        struct source_clock clock;
        char error[SOURCE_REASON_MAX];

        /* Stepping (spe_replay_new()): the input, and how it ended once it did. */
        int fd;
        char *name;
        uint8_t *raw_buf;
        uint64_t raw_off;
        bool finished;
        int result;

        struct spe_stream_out out;

        /* PERF_RECORD_SAMPLEs of x86 memory events (perf mem/c2c record), decoded as they come. */
        struct memsample_stats memsample;
        uint64_t memsample_unattributed;
};

/* A replay with nothing read yet; tasks NULL: a task map of its own. */
static struct spe_replay *replay_alloc(const struct source_sink *sink, struct task_map *tasks) {
        struct spe_replay *replay = xcalloc(1, sizeof(*replay));

        replay->sink = sink;
        replay->tasks = tasks;
        if (!tasks) {
                if (task_map_new(&replay->tasks) < 0)
                        oom();
                replay->own_tasks = true;
        }
        replay->out.sink = sink;
        replay->out.tasks = replay->tasks;
        return replay;
}

static struct spe_stream *queue(struct spe_replay *replay, uint32_t cpu) {
        struct spe_stream *q;
        uint64_t midr = 0;

        if (cpu >= SPE_REPLAY_MAX_CPUS)
                return NULL;
        q = replay->queues[cpu];
        if (q)
                return q;

        q = xcalloc(1, sizeof(*q));
        /* A MIDR we cannot find keeps raw data sources ("unknown"), never a guess. */
        if (replay->raw)
                midr = replay->raw_midr;
        else
                (void) perf_data_reader_midr(replay->reader, cpu, &midr);
        spe_stream_init(q, cpu, midr);
        replay->queues[cpu] = q;

        /* Keep an ascending index for reporting. */
        size_t i = replay->n_queues++;
        while (i > 0 && replay->sorted[i - 1]->st.cpu > cpu) {
                replay->sorted[i] = replay->sorted[i - 1];
                i--;
        }
        replay->sorted[i] = q;
        return q;
}

static int on_auxtrace(void *userdata, const struct perf_data_auxtrace *at, uint64_t chunk_offset,
                       const uint8_t *data, size_t len, bool last) {
        struct spe_replay *replay = userdata;
        /* Per-thread recordings have cpu = -1: the mmap index is the queue then. */
        struct spe_stream *q = queue(replay, at->cpu != UINT32_MAX ? at->cpu : at->idx);

        if (!q) {
                /* No queue for that CPU number: nothing of it is decoded, and it is said. */
                replay->dropped_payloads += chunk_offset == 0;
                replay->dropped_bytes += len;
                return 0;
        }
        /* A payload that does not continue the last one (ring overwritten,
         * data lost) must not glue two unrelated halves of a record. */
        if (chunk_offset == 0)
                spe_stream_begin_chunk(q, at->offset, at->size);
        spe_stream_decode(q, &replay->out, data, len);
        return 0;
}

static int on_attr(void *userdata, const struct perf_data_attr *a) {
        struct spe_replay *replay = userdata;

        if (replay->n_attrs < REPLAY_MAX_ATTRS) {
                replay->attrs[replay->n_attrs].type = a->attr.type;
                /* SPE samples by operation count: attr.freq is 0 and this is the interval. */
                replay->attrs[replay->n_attrs].period = a->attr.freq ? 0 : a->attr.sample_period;
                replay->n_attrs++;
        }
        return 0;
}

static int on_auxtrace_info(void *userdata, const struct perf_data_auxtrace_info *info) {
        struct spe_replay *replay = userdata;

        if (info->type == PERF_AUXTRACE_ARM_SPE && info->decoded) {
                replay->spe_pmu_type = ((const struct spe_info *) info->decoded)->pmu_type;
                replay->has_spe_pmu_type = true;
        }
        return 0;
}

static int on_aux(void *userdata, const struct perf_data_aux *aux) {
        struct spe_replay *replay = userdata;
        struct spe_stream *q;

        if (!(aux->rec.sid.valid & PERF_DATA_ID_CPU))
                return 0;
        q = queue(replay, aux->rec.sid.cpu);
        if (!q)
                return 0;
        q->st.aux_records++;
        q->st.aux_truncated += !!(aux->flags & PERF_AUX_FLAG_TRUNCATED);
        q->st.aux_collision += !!(aux->flags & PERF_AUX_FLAG_COLLISION);
        q->st.aux_partial += !!(aux->flags & PERF_AUX_FLAG_PARTIAL);
        return 0;
}

static int on_lost(void *userdata, const struct perf_data_lost *lost) {
        struct spe_replay *replay = userdata;
        struct spe_stream *q;

        if (!(lost->rec.sid.valid & PERF_DATA_ID_CPU))
                return 0;
        q = queue(replay, lost->rec.sid.cpu);
        if (!q)
                return 0;
        if (lost->rec.type == PERF_RECORD_LOST_SAMPLES)
                q->st.lost_samples += lost->lost;
        else
                q->st.lost += lost->lost;
        return 0;
}

static int on_comm(void *userdata, const struct perf_data_comm *c) {
        struct spe_replay *replay = userdata;

        spe_stream_out_comm(&replay->out, c);
        return 0;
}

static int build_id_cmp(const void *a, const void *b) {
        return strcmp(((const struct build_id_entry *) a)->filename, ((const struct build_id_entry *) b)->filename);
}

static int on_build_id(void *userdata, const struct perf_data_build_id *bid) {
        struct spe_replay *replay = userdata;

        /* The host's user files: guests' and the kernel's are not mapped by host processes. */
        if (bid->pid != PERF_DATA_BUILD_ID_HOST ||
            (bid->misc & PERF_RECORD_MISC_CPUMODE_MASK) != PERF_RECORD_MISC_USER)
                return 0;
        if (replay->n_build_ids == REPLAY_MAX_BUILD_IDS) {
                replay->build_ids_dropped++;
                return 0;
        }
        if (replay->n_build_ids == replay->cap_build_ids) {
                replay->cap_build_ids = replay->cap_build_ids ? 2 * replay->cap_build_ids : 64;
                replay->build_ids = xrealloc(replay->build_ids, replay->cap_build_ids * sizeof(*replay->build_ids));
        }
        replay->build_ids[replay->n_build_ids] = (struct build_id_entry) {
                .filename = xstrdup(bid->filename),
                .size = bid->build_id_size,
        };
        memcpy(replay->build_ids[replay->n_build_ids].id, bid->build_id, sizeof(bid->build_id));
        replay->n_build_ids++;
        replay->build_ids_sorted = false;
        return 0;
}

/* The table's build id of filename, or NULL. */
static const struct build_id_entry *build_id_of(struct spe_replay *replay, const char *filename) {
        struct build_id_entry key = { .filename = (char *) filename };

        if (replay->n_build_ids == 0)
                return NULL;
        if (!replay->build_ids_sorted) {
                qsort(replay->build_ids, replay->n_build_ids, sizeof(*replay->build_ids), build_id_cmp);
                replay->build_ids_sorted = true;
        }
        return bsearch(&key, replay->build_ids, replay->n_build_ids, sizeof(*replay->build_ids), build_id_cmp);
}

static int on_mmap(void *userdata, const struct perf_data_mmap *m) {
        struct spe_replay *replay = userdata;
        const struct build_id_entry *e = NULL;

        if (!replay->sink || !replay->sink->mapping)
                return 0;
        /* perf record by default puts build ids in the file's table, not in MMAP2. */
        if (!m->has_build_id)
                e = build_id_of(replay, m->filename);
        spe_stream_out_mapping(&replay->out, m, e ? e->id : NULL, e ? e->size : 0);
        return 0;
}

/* FORK and EXIT (the map keeps an exited thread: its last records may still be on their way). */
static int on_task(void *userdata, const struct perf_data_task *t) {
        struct spe_replay *replay = userdata;

        spe_stream_out_task(&replay->out, t);
        return 0;
}

static void switch_in(struct spe_replay *replay, uint32_t cpu, uint32_t pid, uint32_t tid) {
        struct spe_stream *q = queue(replay, cpu);

        if (q)
                spe_stream_switch_in(q, replay->tasks, pid, tid);
}

static int on_switch(void *userdata, const struct perf_data_switch *sw) {
        const struct perf_data_sample_id *sid = &sw->rec.sid;

        if (!(sid->valid & PERF_DATA_ID_CPU))
                return 0;
        /* perf_event_open(2) PERF_RECORD_SWITCH_CPU_WIDE: on a switch out,
         * next_prev_* is the task coming in; on a switch in, the sample id
         * is the task that now runs. */
        if (sw->rec.type == PERF_RECORD_SWITCH_CPU_WIDE && sw->out)
                switch_in(userdata, sid->cpu, sw->next_prev_pid, sw->next_prev_tid);
        else if (!sw->out && (sid->valid & PERF_DATA_ID_TID))
                switch_in(userdata, sid->cpu, sid->pid, sid->tid);
        return 0;
}

static int on_itrace_start(void *userdata, const struct perf_data_itrace_start *is) {
        if (is->rec.sid.valid & PERF_DATA_ID_CPU)
                switch_in(userdata, is->rec.sid.cpu, is->pid, is->tid);
        return 0;
}

/*
 * The end of the input: an unterminated record or a packet cut at the end is
 * counted (stats.flushed_*), then the decoders' counters are kept.
 */
static void finish(struct spe_replay *replay) {
        for (size_t i = 0; i < replay->n_queues; i++)
                spe_stream_reset(replay->sorted[i]);
}

static void clock_changed(struct spe_replay *replay) {
        if (replay->sink && replay->sink->clock)
                replay->sink->clock(replay->sink->userdata, &replay->clock);
}

static int on_time_conv(void *userdata, const struct perf_data_time_conv *tc) {
        struct spe_replay *replay = userdata;

        replay->clock.has_time_conv = true;
        replay->clock.time_shift = tc->time_shift;
        replay->clock.time_mult = tc->time_mult;
        replay->clock.time_zero = tc->time_zero;
        replay->clock.cap_user_time_short = tc->has_cycles && tc->cap_user_time_short;
        replay->clock.time_cycles = tc->has_cycles ? tc->time_cycles : 0;
        replay->clock.time_mask = tc->has_cycles ? tc->time_mask : UINT64_MAX;
        clock_changed(replay);
        return 0;
}

/* HEADER_CLOCK_DATA (tools/perf/util/header.c write_clock_data): u32 version, u32 clockid,
 * u64 time of day (ns), u64 the clockid's time (ns) at the same moment. */
static int on_feature(void *userdata, unsigned feat, const uint8_t *data, size_t len) {
        struct spe_replay *replay = userdata;
        uint32_t clockid;
        uint64_t tod, ref;

        if (replay->sink && replay->sink->feature)
                replay->sink->feature(replay->sink->userdata, feat, data, len);
        if (feat != PERF_DATA_FEAT_CLOCK_DATA || len < 24)
                return 0;
        memcpy(&clockid, data + 4, sizeof(clockid));
        memcpy(&tod, data + 8, sizeof(tod));
        memcpy(&ref, data + 16, sizeof(ref));
        replay->clock.has_clock_data = true;
        replay->clock.clockid = clockid;
        replay->clock.unix_minus_perf_ns = (int64_t) (tod - ref);
        clock_changed(replay);
        return 0;
}

/*
 * A PERF_RECORD_SAMPLE: an x86 memory event's (PEBS mem-loads/mem-stores, IBS
 * op with DATA_SRC, as `perf mem record` and `perf c2c record` write them)
 * becomes a record for the sink at once, attributed by the sample's own
 * PID/TID (PERF_SAMPLE_TID). Samples of other events (no DATA_SRC: cpu-clock,
 * an SPE recording's dummy event) are counted in memsample.dropped_* and
 * change nothing else, so an SPE replay stays as it was.
 */
static int on_sample(void *userdata, const struct perf_data_sample *s) {
        struct spe_replay *replay = userdata;
        struct spe_record rec;
        uint32_t pid = SOURCE_NO_ID, tid = SOURCE_NO_ID;

        if (memsample_decode(s, &rec, &replay->memsample) <= 0)
                return 0;
        if (s->rec.sid.valid & PERF_DATA_ID_TID) {
                tid = s->rec.sid.tid;
                pid = s->rec.sid.pid;
        }
        if (pid == SOURCE_NO_ID)
                replay->memsample_unattributed++;
        if (replay->sink && replay->sink->records)
                replay->sink->records(replay->sink->userdata, &rec, &pid, &tid, 1);
        return 0;
}

static const struct perf_data_ops replay_ops = {
        .on_feature = on_feature,
        .on_attr = on_attr,
        .on_auxtrace_info = on_auxtrace_info,
        .on_auxtrace = on_auxtrace,
        .on_aux = on_aux,
        .on_lost = on_lost,
        .on_comm = on_comm,
        .on_mmap = on_mmap,
        .on_build_id = on_build_id,
        .on_fork = on_task,
        .on_exit = on_task,
        .on_switch = on_switch,
        .on_itrace_start = on_itrace_start,
        .on_time_conv = on_time_conv,
        .on_sample = on_sample,
};

static int run(struct perf_data_reader *reader, const struct source_sink *sink, struct task_map *tasks,
               struct spe_replay **replay_out) {
        struct spe_replay *replay = replay_alloc(sink, tasks);
        int k;

        replay->reader = reader;
        k = spe_info_attach(reader, &replay->spe_info);
        if (k >= 0)
                k = perf_data_reader_run(reader, &replay_ops, replay);
        if (k < 0)
                snprintf(replay->error, sizeof(replay->error), "%s", perf_data_reader_error(reader));
        finish(replay);
        *replay_out = replay;
        return k;
}

static int raw_step(struct spe_replay *r, size_t budget);

/* A replay of a raw SPE buffer: one queue, CPU in->raw_cpu of an in->raw_midr core. */
static struct spe_replay *raw_new(const struct spe_replay_input *in, const struct source_sink *sink,
                                  struct task_map *tasks) {
        struct spe_replay *replay = replay_alloc(sink, tasks);

        replay->fd = in->fd;
        replay->name = xstrdup(in->name ?: "input");
        replay->raw = true;
        replay->raw_midr = in->raw_midr;
        replay->raw_buf = xmalloc(RAW_READ_SIZE);
        /* A CPU beyond the bound is the first step's error, with its message. */
        if (!queue(replay, in->raw_cpu)) {
                snprintf(replay->error, sizeof(replay->error),
                         "%s: CPU %" PRIu32 " is beyond the %u CPUs a replay keeps",
                         replay->name, in->raw_cpu, SPE_REPLAY_MAX_CPUS);
                replay->finished = true;
                replay->result = -EINVAL;
        }
        return replay;
}

/* Raw SPE bytes of one CPU, read to the end (no perf.data framing): the steps, waiting for a pipe between them. */
static int run_raw(const struct spe_replay_input *in, const struct source_sink *sink, struct task_map *tasks,
                   struct spe_replay **replay_out) {
        struct spe_replay *replay = raw_new(in, sink, tasks);
        int k = replay->result;

        while (!replay->finished) {
                /* Before every read, as perf_data_reader_run() does: a pipe's data, or the cancel_fd. */
                k = perf_data_wait_readable(in->fd, in->cancel_fd);
                if (k < 0) {
                        snprintf(replay->error, sizeof(replay->error), "%s: read stopped at offset 0x%" PRIx64 ": %s",
                                 replay->name, replay->raw_off, strerror(-k));
                        break;
                }
                k = raw_step(replay, 1);
                if (k == 1 || k == -EAGAIN)
                        continue;
                break;
        }
        finish(replay);
        replay->finished = true;
        replay->result = k;
        *replay_out = replay;
        return k;
}

int spe_replay_run(const struct spe_replay_input *in, const struct source_sink *sink, struct task_map *tasks,
                   struct spe_replay **replay_out) {
        struct perf_data_reader *reader = NULL;
        int k;

        if (in->raw)
                return run_raw(in, sink, tasks, replay_out);
        k = perf_data_reader_new_fd(in->fd, false, &reader);
        if (k < 0) {
                struct spe_replay *replay = replay_alloc(sink, tasks);

                snprintf(replay->error, sizeof(replay->error), "%s: %s", in->name, strerror(-k));
                *replay_out = replay;
                return k;
        }
        perf_data_reader_set_cancel_fd(reader, in->cancel_fd);
        return run(reader, sink, tasks, replay_out);
}

int spe_replay_path(const char *path, const struct source_sink *sink, struct spe_replay **replay_out) {
        struct perf_data_reader *reader = NULL;
        int k;

        k = perf_data_reader_new_path(path, &reader);
        if (k < 0) {
                struct spe_replay *replay = replay_alloc(sink, NULL);

                snprintf(replay->error, sizeof(replay->error), "%s: %s", path, strerror(-k));
                *replay_out = replay;
                return k;
        }
        return run(reader, sink, NULL, replay_out);
}

struct spe_replay *spe_replay_free(struct spe_replay *replay) {
        if (!replay)
                return NULL;
        for (size_t i = 0; i < replay->n_queues; i++) {
                spe_stream_done(replay->sorted[i]);
                free(replay->sorted[i]);
        }
        for (size_t i = 0; i < replay->n_build_ids; i++)
                free(replay->build_ids[i].filename);
        free(replay->build_ids);
        perf_data_reader_free(replay->reader);
        spe_info_decoder_done(&replay->spe_info);
        free(replay->raw_buf);
        free(replay->name);
        if (replay->own_tasks)
                task_map_free(replay->tasks);
        free(replay);
        return NULL;
}

const char *spe_replay_error(const struct spe_replay *replay) {
        return replay->error;
}

bool spe_replay_is_pipe(const struct spe_replay *replay) {
        return replay->reader && perf_data_reader_is_pipe(replay->reader);
}

size_t spe_replay_n_cpus(const struct spe_replay *replay) {
        return replay->n_queues;
}

uint64_t spe_replay_sample_period(const struct spe_replay *replay) {
        if (!replay->has_spe_pmu_type)
                return 0;
        for (size_t i = 0; i < replay->n_attrs; i++)
                if (replay->attrs[i].type == replay->spe_pmu_type)
                        return replay->attrs[i].period;
        return 0;
}

uint64_t spe_replay_unattributed(const struct spe_replay *replay) {
        uint64_t n = replay->memsample_unattributed;

        for (size_t i = 0; i < replay->n_queues; i++)
                n += replay->sorted[i]->st.unattributed;
        return n;
}

const struct memsample_stats *spe_replay_memsample_stats(const struct spe_replay *replay) {
        return &replay->memsample;
}

uint64_t spe_replay_tid_evictions(const struct spe_replay *replay) {
        return task_map_evictions(replay->tasks);
}

bool spe_replay_is_raw(const struct spe_replay *replay) {
        return replay->raw;
}

uint64_t spe_replay_dropped_payloads(const struct spe_replay *replay) {
        return replay->dropped_payloads;
}

uint64_t spe_replay_dropped_bytes(const struct spe_replay *replay) {
        return replay->dropped_bytes;
}

uint64_t spe_replay_build_ids_dropped(const struct spe_replay *replay) {
        return replay->build_ids_dropped;
}

/* ---- stepping ------------------------------------------------------------ */

int spe_replay_new(const struct spe_replay_input *in, const struct source_sink *sink, struct task_map *tasks,
                   struct spe_replay **ret) {
        struct spe_replay *replay;
        int k;

        if (!in || in->fd < 0 || !ret)
                return -EINVAL;
        if (in->raw) {
                *ret = raw_new(in, sink, tasks);
                return 0;
        }
        replay = replay_alloc(sink, tasks);
        replay->fd = in->fd;
        replay->name = xstrdup(in->name ?: "input");
        k = perf_data_reader_new_fd(in->fd, false, &replay->reader);
        if (k >= 0)
                k = spe_info_attach(replay->reader, &replay->spe_info);
        if (k >= 0)
                k = perf_data_reader_begin(replay->reader, &replay_ops, replay);
        if (k < 0) {
                spe_replay_free(replay);
                return k;
        }
        *ret = replay;
        return 0;
}

/* Up to budget reads of a raw SPE buffer, never waiting: 1, 0 at its end, -EAGAIN, or -errno. */
static int raw_step(struct spe_replay *replay, size_t budget) {
        struct spe_stream *q = replay->sorted[0];

        for (size_t i = 0; i < budget; i++) {
                struct pollfd p = { .fd = replay->fd, .events = POLLIN };
                ssize_t n;

                /* As perf_data_wait_readable(), without the wait: a FIFO with no writer yet is not ready. */
                n = poll(&p, 1, 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int k = -errno;

                        snprintf(replay->error, sizeof(replay->error), "%s: read stopped at offset 0x%" PRIx64 ": %s",
                                 replay->name, replay->raw_off, strerror(-k));
                        return k;
                }
                if (n == 0)
                        return -EAGAIN;
                n = read(replay->fd, replay->raw_buf, RAW_READ_SIZE);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return -EAGAIN;
                if (n < 0) {
                        int k = -errno;

                        snprintf(replay->error, sizeof(replay->error), "%s: read error at offset 0x%" PRIx64 ": %s",
                                 replay->name, replay->raw_off, strerror(-k));
                        return k;
                }
                if (n == 0)
                        return 0;
                spe_stream_decode(q, &replay->out, replay->raw_buf, (size_t) n);
                replay->raw_off += (uint64_t) n;
        }
        return 1;
}

int spe_replay_step(struct spe_replay *replay, size_t budget) {
        int k;

        if (!replay)
                return -EINVAL;
        if (replay->finished)
                return replay->result;
        budget = MAX(budget, (size_t) 1);
        if (replay->raw)
                k = raw_step(replay, budget);
        else {
                k = perf_data_reader_step(replay->reader, budget);
                if (k < 0 && k != -EAGAIN)
                        snprintf(replay->error, sizeof(replay->error), "%s", perf_data_reader_error(replay->reader));
        }
        if (k == 1 || k == -EAGAIN)
                return k;
        finish(replay);
        replay->finished = true;
        replay->result = k;
        return k;
}

bool spe_replay_finished(const struct spe_replay *replay) {
        return replay->finished;
}

void spe_replay_stream_stats(const struct spe_replay *replay, size_t i, struct spe_stream_stats *ret) {
        spe_stream_stats(replay->sorted[i], ret);
}

size_t spe_replay_warnings(const struct spe_replay *replay, int run_result,
                           char ret[SOURCE_WARNINGS_MAX][SOURCE_WARNING_LEN]) {
        uint64_t bytes = 0, undecoded = 0, records = 0;
        size_t n = 0;

        for (size_t i = 0; i < replay->n_queues; i++) {
                const struct spe_stream *q = replay->sorted[i];

                bytes += q->st.bytes;
                records += q->st.records;
                /* Skipped headers and packets cut by a reset or the end: bytes that made no packet. */
                undecoded += q->dec.stats.bad_header + q->dec.stats.bad_ext_header + q->dec.stats.flushed_bytes;
        }
        if (replay->dropped_payloads > 0)
                snprintf(ret[n++], SOURCE_WARNING_LEN,
                         "%" PRIu64 " AUXTRACE payloads (%" PRIu64 " bytes) name a CPU beyond the %u a replay "
                         "keeps: not decoded",
                         replay->dropped_payloads, replay->dropped_bytes, SPE_REPLAY_MAX_CPUS);
        /* An input that failed before its end has the error to say what is wrong with it. */
        if (replay->memsample.samples > 0 && replay->memsample.records == 0 && bytes == 0 && run_result >= 0)
                snprintf(ret[n++], SOURCE_WARNING_LEN,
                         "%" PRIu64 " samples and none of a memory access (%" PRIu64 " without DATA_SRC, %" PRIu64
                         " neither load nor store): record with perf mem record or perf c2c record",
                         replay->memsample.samples, replay->memsample.dropped_no_data_src,
                         replay->memsample.dropped_not_mem);
        else if (bytes == 0 && replay->dropped_bytes == 0 && replay->memsample.records == 0 && run_result >= 0)
                snprintf(ret[n++], SOURCE_WARNING_LEN, "%s",
                         replay->raw ? "no SPE data: the input is empty"
                                : "no SPE data: the file has no AUXTRACE payloads (was it recorded "
                                  "with an arm_spe event, perf record -e arm_spe//?)");
        else if (undecoded * 1000 > bytes * SPE_REPLAY_UNDECODED_WARN_PERMILLE)
                snprintf(ret[n++], SOURCE_WARNING_LEN,
                         "%.1f%% of the SPE bytes (%" PRIu64 " of %" PRIu64 ") did not decode and gave %" PRIu64
                         " records: the data is damaged, not SPE, or not of the CPU its MIDR names",
                         100.0 * (double) undecoded / (double) bytes, undecoded, bytes, records);
        return n;
}
