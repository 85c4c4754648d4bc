/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "spe-stream.h"

#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "strbuf.h"
#include "task-map.h"

_Static_assert(TASK_MAP_NO_ID == SOURCE_NO_ID, "one value for an unknown pid");

void spe_stream_init(struct spe_stream *s, uint32_t cpu, uint64_t midr) {
        memset(s, 0, sizeof(*s));
        spe_decoder_init(&s->dec, cpu, midr);
        s->st.cpu = cpu;
        s->st.midr = midr;
        s->cur_pid = s->cur_tid = SOURCE_NO_ID;
}

void spe_stream_done(struct spe_stream *s) {
        free(s->pending);
        s->pending = NULL;
        s->n_pending = s->cap_pending = 0;
}

void spe_stream_set_clock(struct spe_stream *s, const struct source_clock *clock) {
        s->clock = clock;
}

void spe_stream_begin_chunk(struct spe_stream *s, uint64_t offset, uint64_t size) {
        if (s->started && offset != s->next_offset) {
                spe_decoder_reset(&s->dec);
                s->st.discontinuities++;
        }
        s->started = true;
        s->next_offset = offset + size;
}

void spe_stream_gap(struct spe_stream *s) {
        spe_decoder_reset(&s->dec);
        s->st.discontinuities++;
}

void spe_stream_reset(struct spe_stream *s) {
        spe_decoder_reset(&s->dec);
}

void spe_stream_switch_in(struct spe_stream *s, struct task_map *tasks, uint32_t pid, uint32_t tid) {
        s->cur_pid = pid;
        s->cur_tid = tid;
        /* A switch names the task: whatever was missed before, it is known from here. */
        s->unknown = SPE_STREAM_SWITCH;
        s->no_prev = false;
        if (pid != SOURCE_NO_ID)
                task_map_set_pid(tasks, tid, pid);
}

static void apply_doubt(struct spe_stream *s, enum spe_stream_doubt why) {
        s->cur_pid = s->cur_tid = SOURCE_NO_ID;
        s->unknown = why;
        s->no_prev = s->no_prev || why == SPE_STREAM_DOUBT_LOST;
}

static void apply_oldest(struct spe_stream *s, struct task_map *tasks) {
        const struct spe_stream_switch *sw = &s->pending[s->pending_first];

        if (sw->doubt != SPE_STREAM_SWITCH)
                apply_doubt(s, sw->doubt);
        else
                spe_stream_switch_in(s, tasks, sw->pid, sw->tid);
        s->pending_first = (s->pending_first + 1) % s->cap_pending;
        s->n_pending--;
}

static void queue(struct spe_stream *s, struct task_map *tasks, const struct spe_stream_switch *sw) {
        if (s->n_pending == s->cap_pending && s->cap_pending < SPE_STREAM_SWITCHES_MAX) {
                size_t cap = s->cap_pending ? 2 * s->cap_pending : SPE_STREAM_SWITCHES_MIN;
                struct spe_stream_switch *p = xcalloc(cap, sizeof(*p));

                /* Unwrap into the new ring, oldest first. */
                for (size_t i = 0; i < s->n_pending; i++)
                        p[i] = s->pending[(s->pending_first + i) % s->cap_pending];
                free(s->pending);
                s->pending = p;
                s->pending_first = 0;
                s->cap_pending = cap;
        }
        if (s->n_pending == s->cap_pending) {
                apply_oldest(s, tasks);
                s->st.switch_overflows++;
        }
        s->pending[(s->pending_first + s->n_pending) % s->cap_pending] = *sw;
        s->n_pending++;
}

void spe_stream_switch_at(struct spe_stream *s, struct task_map *tasks, uint64_t time_ns, uint32_t pid,
                          uint32_t tid, uint32_t prev_pid, uint32_t prev_tid) {
        if (!s->clock) {
                spe_stream_switch_in(s, tasks, pid, tid);
                s->chunk_switched = true;
                return;
        }
        s->last_queued_ns = time_ns;
        queue(s, tasks, &(struct spe_stream_switch) {
                .time_ns = time_ns,
                .pid = pid,
                .tid = tid,
                .prev_pid = prev_pid,
                .prev_tid = prev_tid,
                .doubt = SPE_STREAM_SWITCH,
        });
}

void spe_stream_doubt(struct spe_stream *s, struct task_map *tasks, enum spe_stream_doubt why) {
        if (why == SPE_STREAM_SWITCH)
                return;
        if (!s->clock) {
                apply_doubt(s, why);
                return;
        }
        /*
         * After every switch queued so far: the records decoded from now on were written
         * after them (the data ring is read in order, an AUX chunk's records before its
         * PERF_RECORD_AUX), so none of them is earlier than the last one's time.
         */
        queue(s, tasks, &(struct spe_stream_switch) {
                .time_ns = s->last_queued_ns,
                .pid = SOURCE_NO_ID,
                .tid = SOURCE_NO_ID,
                .prev_pid = SOURCE_NO_ID,
                .prev_tid = SOURCE_NO_ID,
                .doubt = why,
        });
}

void spe_stream_chunk_end(struct spe_stream *s) {
        s->chunk_switched = false;
}

bool spe_stream_doubt_undo(struct spe_stream *s) {
        const struct spe_stream_switch *last;

        if (!s->clock || s->n_pending == 0)
                return false;
        last = &s->pending[(s->pending_first + s->n_pending - 1) % s->cap_pending];
        if (last->doubt == SPE_STREAM_SWITCH)
                return false;
        s->n_pending--;
        return true;
}

/* The switches up to the record's time applied; true when one was (the task map may have learned a pid). */
static bool reach(struct spe_stream *s, struct task_map *tasks, const struct spe_record *rec) {
        const struct spe_stream_switch *next;
        bool applied = false;
        uint64_t t;

        /* No time conversion (any more): the switches cannot be placed among the records, and
         * new ones apply at once (spe_stream_switch_at()); so do those still waiting. */
        if (!s->clock) {
                while (s->n_pending > 0)
                        apply_oldest(s, tasks);
                return true;
        }
        if (!(rec->present & SPE_REC_TIMESTAMP))
                return false;
        t = source_clock_perf_ns(s->clock, rec->timestamp);
        for (; s->n_pending > 0 && s->pending[s->pending_first].time_ns <= t; applied = true)
                apply_oldest(s, tasks);
        if (s->n_pending == 0)
                return applied;
        /*
         * Before the next switch, its previous task ran: whatever was missed while the event
         * was off (it reports every switch while on). Not after a loss until a switch applied:
         * the lost records may hold a switch between this record and the next one.
         */
        next = &s->pending[s->pending_first];
        if (next->doubt == SPE_STREAM_SWITCH && !s->no_prev && next->prev_tid != SOURCE_NO_ID &&
            (next->prev_tid != s->cur_tid || next->prev_pid != s->cur_pid)) {
                spe_stream_switch_in(s, tasks, next->prev_pid, next->prev_tid);
                applied = true;
        }
        return applied;
}

static void emit(struct spe_stream *s, struct spe_stream_out *out, size_t n) {
        /* The tid map cannot change during one batch but for switches, and a CPU runs one
         * thread for many records in a row: look each thread up once per run. A flag, not a
         * tid, says the lookup is stale: SOURCE_NO_ID is also the thread a doubt leaves, and
         * the pid of the thread before it must not stay with it. */
        uint32_t map_tid = SOURCE_NO_ID, map_pid = SOURCE_NO_ID;
        bool map_valid = false;
        /* The run out->seen() was last told of, in this batch. */
        uint32_t seen_pid = SOURCE_NO_ID, seen_tid = SOURCE_NO_ID;

        for (size_t i = 0; i < n; i++) {
                const struct spe_record *rec = &out->batch[i];
                uint32_t tid, pid;

                if (s->n_pending > 0 && reach(s, out->tasks, rec))
                        map_valid = false; /* a switch may have named a pid, a doubt unnamed it */
                /* A context packet names the thread and holds until the next one
                 * (or a switch record), as perf carries it over on that CPU. */
                if (rec->present & SPE_REC_CONTEXT && rec->context != s->cur_tid) {
                        s->cur_tid = rec->context;
                        s->cur_pid = SOURCE_NO_ID;
                }
                if (rec->present & SPE_REC_CONTEXT)
                        s->unknown = SPE_STREAM_SWITCH;
                tid = s->cur_tid;
                /* No clock: the chunk's switch may come after this record, or before it. */
                if (s->chunk_switched && !(rec->present & SPE_REC_CONTEXT))
                        tid = SOURCE_NO_ID;
                if (!map_valid || tid != map_tid) {
                        map_valid = true;
                        map_tid = tid;
                        map_pid = tid == SOURCE_NO_ID ? SOURCE_NO_ID : task_map_pid(out->tasks, tid);
                        if (map_pid == SOURCE_NO_ID && tid != SOURCE_NO_ID && out->pid_of)
                                map_pid = out->pid_of(out->userdata, tid);
                }
                pid = map_pid;
                /* The switched-in task's pid is known even without its COMM. */
                if (pid == SOURCE_NO_ID && tid != SOURCE_NO_ID)
                        pid = s->cur_pid;
                if (pid == SOURCE_NO_ID) {
                        s->st.unattributed++;
                        /* No thread either, since a window that may have hidden a switch. */
                        if (tid == SOURCE_NO_ID && s->unknown == SPE_STREAM_DOUBT_OFF)
                                s->st.thread_unknown_off++;
                        else if (tid == SOURCE_NO_ID && s->unknown == SPE_STREAM_DOUBT_LOST)
                                s->st.thread_unknown_lost++;
                        else if (tid == SOURCE_NO_ID && s->chunk_switched)
                                s->st.thread_unknown_no_clock++;
                } else if (out->seen && (pid != seen_pid || tid != seen_tid)) {
                        seen_pid = pid;
                        seen_tid = tid;
                        out->seen(out->userdata, pid, tid,
                                  s->clock && rec->present & SPE_REC_TIMESTAMP
                                          ? source_clock_perf_ns(s->clock, rec->timestamp)
                                          : 0);
                }
                out->tids[i] = tid;
                out->pids[i] = pid;
        }
        s->st.records += n;
        /* Zeroed at a truncation (spe-live-ring.c): one test per batch otherwise. */
        for (size_t i = 0; s->first_timestamp == 0 && i < n; i++)
                if (out->batch[i].present & SPE_REC_TIMESTAMP)
                        s->first_timestamp = out->batch[i].timestamp;
        if (out->batch[n - 1].present & SPE_REC_TIMESTAMP)
                s->last_timestamp = out->batch[n - 1].timestamp;
        if (out->sink && out->sink->records)
                out->sink->records(out->sink->userdata, out->batch, out->pids, out->tids, n);
}

void spe_stream_decode(struct spe_stream *s, struct spe_stream_out *out, const uint8_t *data, size_t len) {
        s->st.bytes += len;
        while (len > 0) {
                size_t consumed = 0, n;

                n = spe_decoder_decode(&s->dec, data, len, out->batch, SPE_STREAM_BATCH, &consumed);
                if (n > 0)
                        emit(s, out, n);
                data += consumed;
                len -= consumed;
                if (n == 0 && consumed == 0)
                        break; /* everything is buffered in the decoder */
        }
}

void spe_stream_stats(const struct spe_stream *s, struct spe_stream_stats *ret) {
        /* The decoder keeps its own counters; the stream's are the rest. */
        *ret = s->st;
        ret->decoder = s->dec.stats;
        /* The time the stream places records at (among the switches, for the time not sampled). */
        ret->time_conv = s->clock != NULL;
        ret->last_record_ns = s->clock && s->last_timestamp ? source_clock_perf_ns(s->clock, s->last_timestamp) : 0;
}

static void task_event(struct spe_stream_out *out, const struct source_task *t) {
        if (out->sink && out->sink->task)
                out->sink->task(out->sink->userdata, t);
}

void spe_stream_out_comm(struct spe_stream_out *out, const struct perf_data_comm *c) {
        task_map_comm(out->tasks, c->pid, c->tid, c->comm);
        task_event(out, &(struct source_task) {
                .kind = SOURCE_TASK_COMM,
                .pid = c->pid,
                .tid = c->tid,
                .time_ns = (c->rec.sid.valid & PERF_DATA_ID_TIME) ? c->rec.sid.time : 0,
                .comm = c->comm,
        });
}

void spe_stream_out_task(struct spe_stream_out *out, const struct perf_data_task *t) {
        bool fork = t->rec.type == PERF_RECORD_FORK;

        if (fork)
                task_map_fork(out->tasks, t->pid, t->tid, t->ptid, t->time);
        task_event(out, &(struct source_task) {
                .kind = fork ? SOURCE_TASK_FORK : SOURCE_TASK_EXIT,
                .pid = t->pid,
                .tid = t->tid,
                .ppid = t->ppid,
                .ptid = t->ptid,
                .time_ns = t->time,
        });
}

void spe_stream_out_mapping(struct spe_stream_out *out, const struct perf_data_mmap *m, const uint8_t *build_id,
                            size_t build_id_len) {
        if (!out->sink || !out->sink->mapping)
                return;
        if (!build_id && m->has_build_id) {
                build_id = m->build_id;
                build_id_len = m->build_id_size;
        }
        out->sink->mapping(out->sink->userdata, &(struct source_mapping) {
                .pid = m->pid,
                .start = m->addr,
                .len = m->len,
                .pgoff = m->pgoff,
                .filename = m->filename,
                .build_id = build_id,
                .build_id_len = build_id ? build_id_len : 0,
                /* perf_event_open(2): MMAP2 of a mapping without PROT_EXEC, sent with attr.mmap_data. */
                .data = (m->rec.misc & PERF_RECORD_MISC_MMAP_DATA) != 0,
        });
}
