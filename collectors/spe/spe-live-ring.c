/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "spe-live-ring.h"

#include <errno.h>
#include <string.h>

#include "perf-record.h"
#include "proc-table.h"
#include "task-map.h"

/*
 * The user page's time conversion, read before each drain under the page's
 * seqcount as perf_event_open(2) says (the kernel rewrites the fields in
 * perf_event_update_userpage(), on every DISABLE/ENABLE among others).
 */
static void read_clock(struct spe_live_ring *r) {
        const struct perf_event_mmap_page *pg = r->ring.page;
        struct perf_event_mmap_page caps;       /* for its capability bit-fields */
        struct source_clock c = {};
        uint32_t seq;

        /* Each field loaded with acquire order, so the seqcount's second read cannot come
         * before them (a fence would do too, but ThreadSanitizer does not model fences). */
        do {
                seq = __atomic_load_n(&pg->lock, __ATOMIC_ACQUIRE);
                caps.capabilities = __atomic_load_n(&pg->capabilities, __ATOMIC_ACQUIRE);
                c.time_shift = __atomic_load_n(&pg->time_shift, __ATOMIC_ACQUIRE);
                c.time_mult = __atomic_load_n(&pg->time_mult, __ATOMIC_ACQUIRE);
                c.time_zero = __atomic_load_n(&pg->time_zero, __ATOMIC_ACQUIRE);
                c.time_cycles = __atomic_load_n(&pg->time_cycles, __ATOMIC_ACQUIRE);
                c.time_mask = __atomic_load_n(&pg->time_mask, __ATOMIC_ACQUIRE);
        } while ((seq & 1) || __atomic_load_n(&pg->lock, __ATOMIC_RELAXED) != seq);
        /* The fields are valid while cap_user_time_zero says so. */
        c.has_time_conv = caps.cap_user_time_zero;
        c.cap_user_time_short = caps.cap_user_time_short;
        if (!c.cap_user_time_short) {
                c.time_cycles = 0;
                c.time_mask = UINT64_MAX;
        }
        r->clock = c;
        spe_stream_set_clock(r->stream, r->clock.has_time_conv ? &r->clock : NULL);
}

/* The first records after a truncation: how long the CPU did not sample. */
static void note_sampling_resumed(struct spe_live_ring *r) {
        struct spe_stream *s = r->stream;

        /* The first record decoded since the cut (s->first_timestamp, zeroed there), not the
         * chunk's last: the time not sampled ends where sampling resumed. */
        if (r->cut_timestamp == 0 || s->first_timestamp == 0)
                return;
        if (r->clock.has_time_conv && s->first_timestamp > r->cut_timestamp)
                s->st.not_sampling_ns += source_clock_perf_ns(&r->clock, s->first_timestamp) -
                                         source_clock_perf_ns(&r->clock, r->cut_timestamp);
        r->cut_timestamp = 0;
}

/*
 * A PERF_RECORD_LOST read since the last look (aux-ring.c counts them, in
 * the order of the ring: before the record that follows it): the lost
 * records may have held switches, so the task is unknown from there.
 */
static void note_lost(struct spe_live_ring *r) {
        if (r->ring.stats.lost == r->lost_seen)
                return;
        r->lost_seen = r->ring.stats.lost;
        spe_stream_doubt(r->stream, r->out->tasks, SPE_STREAM_DOUBT_LOST);
        /* A FORK or EXIT may be among them: a pid's process is checked again at its next records. */
        if (r->procs)
                proc_table_lost(r->procs);
}

/*
 * Bytes read up to aux_head that no PERF_RECORD_AUX announced (aux-ring.c
 * deliver_unannounced()): their record was lost, and the PERF_RECORD_LOST
 * that says so may not have come (kernel/events/ring_buffer.c
 * perf_output_begin() counts rb->lost, and perf_event_lost() writes it only
 * before the next record that fits); the switches lost with it may lie
 * among them. Their records after the last switch read have no known task,
 * as after a LOST. Their records only: the bytes may be older than
 * switches read since (a LOST read before them made its doubt where it
 * belongs, note_lost()), or the driver's padding alone, and the records
 * that come later must not be doubted for them (on_aux() takes the doubt
 * back if none of them reached it). Once per read (a read that wraps comes
 * in two pieces).
 */
static void note_unannounced(struct spe_live_ring *r, const struct aux_ring_chunk *ch) {
        if (!ch->unannounced || r->ring.stats.aux_unannounced == r->unannounced_seen)
                return;
        r->unannounced_seen = r->ring.stats.aux_unannounced;
        spe_stream_doubt(r->stream, r->out->tasks, SPE_STREAM_DOUBT_LOST);
        r->unannounced_doubt = true;
}

static int on_aux(void *userdata, const struct aux_ring_chunk *ch, const uint8_t *data, size_t len, bool last) {
        struct spe_live_ring *r = userdata;
        struct spe_stream *s = r->stream;

        note_lost(r);
        note_unannounced(r, ch);

        /* Data lost before this chunk: the decoder must not join the halves around it. Once per
         * chunk: one that wraps the ring comes in two pieces, both with gap. */
        if (ch->gap && !r->in_chunk)
                spe_stream_gap(s);
        r->in_chunk = !last;
        spe_stream_decode(s, r->out, data, len);
        /* A fill (padding, the bytes before a chunk that comes after a gap) ends no chunk. */
        if (last && !ch->fill)
                spe_stream_chunk_end(s);
        if (last && r->unannounced_doubt) {
                (void) spe_stream_doubt_undo(s);
                r->unannounced_doubt = false;
        }
        /* A fill (the driver's padding, a chunk whose PERF_RECORD_AUX was lost) has no flags of its own. */
        if (!last || ch->fill)
                return 0;
        note_sampling_resumed(r);
        s->st.aux_records++;
        s->st.aux_collision += !!(ch->flags & PERF_AUX_FLAG_COLLISION);
        s->st.aux_partial += !!(ch->flags & PERF_AUX_FLAG_PARTIAL);
        /* Late: its bytes, and newer ones, were decoded already; its flags count, no more. */
        if (ch->late) {
                s->st.aux_truncated += !!(ch->flags & PERF_AUX_FLAG_TRUNCATED);
                return 0;
        }
        r->last_aux_flags = ch->flags;
        if (ch->flags & PERF_AUX_FLAG_TRUNCATED) {
                /* The session ended there (a full buffer, or PMBSR.DL with PARTIAL: the last
                 * record is cut); the next bytes start a new one, never its continuation. */
                s->st.aux_truncated++;
                spe_stream_reset(s);
                /* No record with a time before the cut: no interval to measure. */
                r->cut_timestamp = s->last_timestamp;
                s->first_timestamp = 0;
        }
        return 0;
}

/*
 * A PERF_RECORD_SWITCH_CPU_WIDE, read in place: with context_switch on
 * every change of thread writes two, the most frequent records of the data
 * ring (half a record per SPE record in the fleet harness's streams), and
 * perf_record_parse_ring() + perf_record_parse_switch() decoded each into
 * a struct perf_data_record field by field (185 instructions of 1,405 a
 * record). The layout is the kernel's: perf_event_switch_output()
 * (kernel/events/core.c) writes the header, {next_prev_pid,
 * next_prev_tid}, then perf_event__output_id_sample(), whose
 * __perf_event__output_id_sample() puts {pid, tid} first (PERF_SAMPLE_TID)
 * and the time after it (PERF_SAMPLE_TIME), at the record's end. The same
 * checks as the slow path: a record too short for its body and trailer is
 * skipped; without a time it places nothing (on_record()).
 */
static void on_switch(struct spe_live_ring *r, const uint8_t *raw) {
        uint32_t size = perf_rd16(raw + 6), pid = SOURCE_NO_ID, tid = SOURCE_NO_ID;
        uint32_t next_prev_pid, next_prev_tid;
        const uint8_t *trailer;
        uint64_t time;

        if (size < PERF_RECORD_HEADER_SIZE + 2 * sizeof(uint32_t) + r->switch_tlen)
                return;
        next_prev_pid = perf_rd32(raw + PERF_RECORD_HEADER_SIZE);
        next_prev_tid = perf_rd32(raw + PERF_RECORD_HEADER_SIZE + sizeof(uint32_t));
        trailer = raw + size - r->switch_tlen;
        if (r->switch_has_tid) {
                pid = perf_rd32(trailer);
                tid = perf_rd32(trailer + sizeof(uint32_t));
                trailer += sizeof(uint64_t);
        }
        time = perf_rd64(trailer);
        /* perf_event_open(2): on a switch out, the sample id is the task going out and
         * next_prev_* the one coming in; on a switch in, the other way. */
        if (perf_rd16(raw + 4) & PERF_RECORD_MISC_SWITCH_OUT)
                spe_stream_switch_at(r->stream, r->out->tasks, time, next_prev_pid, next_prev_tid, pid, tid);
        else if (r->switch_has_tid)
                spe_stream_switch_at(r->stream, r->out->tasks, time, pid, tid, next_prev_pid, next_prev_tid);
}

static int on_record(void *userdata, const uint8_t *raw, size_t len) {
        struct spe_live_ring *r = userdata;
        struct task_map *tasks = r->out->tasks;
        struct perf_data_record rec;
        uint32_t type = perf_rd32(raw), tlen; /* header.type */

        note_lost(r);
        if (type == PERF_RECORD_SWITCH_CPU_WIDE && r->switch_fast) {
                on_switch(r, raw);
                return 0;
        }
        if (type == PERF_RECORD_THROTTLE) {
                r->stream->st.throttles++;
                return 0;
        }
        if (perf_record_parse_ring(r->attr, raw, 0, &rec, &tlen) < 0)
                return 0;

        switch (rec.type) {
        case PERF_RECORD_SWITCH_CPU_WIDE: {
                struct perf_data_switch sw;

                if (perf_record_parse_switch(&rec, tlen, &sw) < 0 || !(rec.sid.valid & PERF_DATA_ID_TIME))
                        break;
                /* perf_event_open(2): on a switch out, the sample id is the task going
                 * out and next_prev_* the one coming in; on a switch in, the other way. */
                if (!(rec.sid.valid & PERF_DATA_ID_TID))
                        rec.sid.pid = rec.sid.tid = SOURCE_NO_ID;
                if (sw.out)
                        spe_stream_switch_at(r->stream, tasks, rec.sid.time, sw.next_prev_pid, sw.next_prev_tid,
                                             rec.sid.pid, rec.sid.tid);
                else if (rec.sid.valid & PERF_DATA_ID_TID)
                        spe_stream_switch_at(r->stream, tasks, rec.sid.time, rec.sid.pid, rec.sid.tid,
                                             sw.next_prev_pid, sw.next_prev_tid);
                break;
        }
        case PERF_RECORD_ITRACE_START: {
                struct perf_data_itrace_start is;

                if (perf_record_parse_itrace_start(&rec, tlen, &is) < 0)
                        break;
                if (rec.sid.valid & PERF_DATA_ID_TIME)
                        spe_stream_switch_at(r->stream, tasks, rec.sid.time, is.pid, is.tid, SOURCE_NO_ID,
                                             SOURCE_NO_ID);
                else
                        spe_stream_switch_in(r->stream, tasks, is.pid, is.tid);
                break;
        }
        case PERF_RECORD_COMM: {
                struct perf_data_comm cm;

                if (perf_record_parse_comm(&rec, tlen, &cm) < 0)
                        break;
                if (r->procs)
                        proc_table_comm(r->procs, &cm);
                else
                        spe_stream_out_comm(r->out, &cm);
                break;
        }
        case PERF_RECORD_FORK:
        case PERF_RECORD_EXIT: {
                struct perf_data_task t;

                if (perf_record_parse_task(&rec, tlen, &t) < 0)
                        break;
                if (r->procs)
                        proc_table_task(r->procs, &t);
                else
                        spe_stream_out_task(r->out, &t);
                break;
        }
        case PERF_RECORD_MMAP:
        case PERF_RECORD_MMAP2: {
                struct perf_data_mmap m;

                if (perf_record_parse_mmap(&rec, tlen, &m) < 0)
                        break;
                if (r->procs)
                        proc_table_mapping(r->procs, &m);
                else
                        spe_stream_out_mapping(r->out, &m, NULL, 0);
                break;
        }
        default:
                break;
        }
        return 0;
}

static const struct aux_ring_ops ring_ops = {
        .aux = on_aux,
        .record = on_record,
};

int spe_live_ring_init(struct spe_live_ring *r, struct perf_event_mmap_page *page, const void *data,
                       size_t data_size, const void *aux, size_t aux_size, const struct perf_event_attr *attr,
                       struct spe_stream *stream, struct spe_stream_out *out) {
        int k;

        memset(r, 0, sizeof(*r));
        k = aux_ring_init(&r->ring, page, data, data_size, aux, aux_size);
        if (k < 0)
                return k;
        aux_ring_set_attr(&r->ring, attr);
        r->attr = attr;
        r->switch_fast = attr && attr->sample_id_all && (attr->sample_type & PERF_SAMPLE_TIME);
        r->switch_has_tid = attr && (attr->sample_type & PERF_SAMPLE_TID);
        r->switch_tlen = attr ? perf_record_trailer_size(attr->sample_type) : 0;
        r->out = out;
        r->stream = stream;
        spe_stream_reset(stream);
        /* The kernel fills the page's clock at mmap (perf_mmap(): perf_event_update_userpage()). */
        read_clock(r);
        return 0;
}

void spe_live_ring_enabled(struct spe_live_ring *r) {
        spe_stream_doubt(r->stream, r->out->tasks, SPE_STREAM_DOUBT_OFF);
}

void spe_live_ring_done(struct spe_live_ring *r) {
        spe_stream_set_clock(r->stream, NULL);
        aux_ring_done(&r->ring);
}

static int drain(struct spe_live_ring *r, bool stopped, bool *ret_ended) {
        uint64_t lost = r->ring.stats.lost, lost_samples = r->ring.stats.lost_samples;
        uint64_t unannounced = r->ring.stats.aux_unannounced;
        bool truncated = false, stalled;
        int k;

        read_clock(r);
        k = stopped ? aux_ring_drain_stopped(&r->ring, &ring_ops, r, &truncated) :
                      aux_ring_drain(&r->ring, &ring_ops, r, &truncated);
        note_lost(r);
        /* The ring's counts are this event's; the stream's are the CPU's since start. */
        r->stream->st.lost += r->ring.stats.lost - lost;
        r->stream->st.lost_samples += r->ring.stats.lost_samples - lost_samples;
        if (k < 0)
                return k;
        /* Read on up to aux_head: the records announcing those bytes were lost, a TRUNCATED one
         * may have been among them. */
        stalled = r->ring.stats.aux_unannounced != unannounced;
        r->stream->st.aux_stalls += stalled && !truncated;
        if (ret_ended)
                *ret_ended = truncated || stalled;
        return k;
}

int spe_live_ring_drain(struct spe_live_ring *r, bool *ret_ended) {
        return drain(r, false, ret_ended);
}

int spe_live_ring_drain_stopped(struct spe_live_ring *r, bool *ret_ended) {
        return drain(r, true, ret_ended);
}
