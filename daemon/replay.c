/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "replay.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "aggregates.h"
#include "collector.h"
#include "log.h"
#include "memnode.h"
#include "perf-data.h"
#include "replay-clock.h"
#include "replay-source.h"
#include "spe-replay.h"
#include "store.h"
#include "symbolizer.h"
#include "symbols.h"
#include "task-map.h"

#define REPORT_HOTPCS 50
#define REPORT_HOTLINES 20

struct once {
        struct store *store;
        struct task_map *tasks;         /* what the file's COMM and FORK records said: who ran a record */
        struct symbols *symbols;
        FILE *records; /* --records FILE, or NULL */
        struct replay_clock clock;
        struct memnode *memnode;        /* the file's memory topology, when it has one */
};

static const char *file_type(mode_t m) {
        if (S_ISDIR(m))
                return "a directory";
        if (S_ISCHR(m))
                return "a character device";
        if (S_ISBLK(m))
                return "a block device";
        if (S_ISSOCK(m))
                return "a socket";
        return "not a regular file";
}

int replay_open(const struct replay_args *a, int *ret_fd) {
        const char *what = a->raw ? "--replay-raw reads a raw SPE buffer"
                                  : "--replay reads a perf.data (perf record -o FILE)";
        _cleanup_close_ int fd = -1;
        struct stat st;

        if (streq(a->path, "-")) {
                /* stdin is whatever the caller gave: a pipe, a file, even a terminal. */
                fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
                if (fd < 0)
                        return log_error_errno(-errno, "replay: cannot use stdin: %m");
                *ret_fd = TAKE_FD(fd);
                return 0;
        }
        /* O_NONBLOCK: open(2) of a FIFO would wait for a writer, and no signal would end that. */
        fd = open(a->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return log_error_errno(-errno, "replay: cannot open %s: %m", a->path);
        if (fstat(fd, &st) < 0)
                return log_error_errno(-errno, "replay: cannot stat %s: %m", a->path);
        if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
                return log_error_errno(S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL,
                                       "replay: %s is %s; %s from a regular file, a FIFO or - (stdin)",
                                       a->path, file_type(st.st_mode), what);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int replay_run(const struct replay_args *a, int fd, int cancel_fd, const struct source_sink *sink,
               struct task_map *tasks, struct spe_replay **ret) {
        return spe_replay_run(&(struct spe_replay_input) {
                                      .fd = fd,
                                      .cancel_fd = cancel_fd,
                                      .name = streq(a->path, "-") ? "stdin" : a->path,
                                      .raw = a->raw,
                                      .raw_cpu = a->cpu,
                                      .raw_midr = a->midr,
                              },
                              sink, tasks, ret);
}

bool replay_complete(const struct spe_replay *replay, int run_result) {
        return run_result >= 0 && spe_replay_dropped_payloads(replay) == 0;
}

/* One decoded record as a JSON object: the fields the record has, none it lacks. */
static void write_ip(FILE *f, const char *name, const struct spe_ip *ip) {
        fprintf(f, ",\"%s\":\"0x%" PRIx64 "\",\"%s_el\":%u,\"%s_ns\":%u", name, ip->addr, name,
                (unsigned) ip->el, name, (unsigned) ip->ns);
}

static void write_record(FILE *f, const struct spe_record *rec, uint32_t pid, uint32_t tid) {
        fprintf(f, "{\"cpu\":%" PRIu32, rec->cpu);
        if (pid != SOURCE_NO_ID)
                fprintf(f, ",\"pid\":%" PRIu32, pid);
        if (tid != SOURCE_NO_ID)
                fprintf(f, ",\"tid\":%" PRIu32, tid);
        if (rec->present & SPE_REC_PC)
                write_ip(f, "pc", &rec->pc);
        if (rec->present & SPE_REC_OP)
                fprintf(f, ",\"op\":\"%s\",\"op_class\":%u,\"op_subclass\":\"%s\",\"op_raw\":%u,"
                           "\"conditional\":%s,\"indirect\":%s",
                        spe_op_name(rec), (unsigned) rec->op_class,
                        spe_op_subclass_name((enum spe_op_subclass) rec->op_subclass), (unsigned) rec->op_raw,
                        (rec->op_flags & SPE_OPF_COND) ? "true" : "false",
                        (rec->op_flags & SPE_OPF_INDIRECT) ? "true" : "false");
        if (rec->present & SPE_REC_EVENTS) {
                const char *sep = "";

                fprintf(f, ",\"events\":\"0x%" PRIx64 "\",\"event_names\":[", rec->events);
                for (unsigned bit = 0; bit < 64; bit++)
                        if ((rec->events & SPE_EV_BIT(bit)) && spe_event_name(bit)) {
                                fprintf(f, "%s\"%s\"", sep, spe_event_name(bit));
                                sep = ",";
                        }
                fputc(']', f);
        }
        if (rec->present & SPE_REC_LAT_TOTAL)
                fprintf(f, ",\"total_lat\":%u", (unsigned) rec->lat_total);
        if (rec->present & SPE_REC_LAT_ISSUE)
                fprintf(f, ",\"issue_lat\":%u", (unsigned) rec->lat_issue);
        if (rec->present & SPE_REC_LAT_XLAT)
                fprintf(f, ",\"xlat_lat\":%u", (unsigned) rec->lat_xlat);
        if (rec->present & SPE_REC_BR_TGT)
                write_ip(f, "br_tgt", &rec->br_tgt);
        if (rec->present & SPE_REC_PBT)
                write_ip(f, "pbt", &rec->pbt);
        if (rec->present & SPE_REC_VA)
                fprintf(f, ",\"va\":\"0x%" PRIx64 "\"", rec->va);
        if (rec->present & SPE_REC_PA)
                fprintf(f, ",\"pa\":\"0x%" PRIx64 "\"", rec->pa);
        if (rec->present & SPE_REC_SOURCE)
                fprintf(f, ",\"data_source\":\"0x%" PRIx64 "\",\"source\":\"%s\"", rec->source_raw,
                        spe_data_src_name((enum spe_data_src) rec->source));
        if (rec->present & SPE_REC_CONTEXT)
                fprintf(f, ",\"context\":%" PRIu32, rec->context);
        if (rec->present & SPE_REC_TIMESTAMP)
                fprintf(f, ",\"ts\":%" PRIu64, rec->timestamp);
        fputs("}\n", f);
}

static void sink_records(void *userdata, const struct spe_record *recs, const uint32_t *pids,
                         const uint32_t *tids, size_t n) {
        struct once *o = userdata;
        struct store_task task;

        for (size_t i = 0; i < n; i++) {
                if (i == 0 || tids[i] != task.tid || pids[i] != task.pid)
                        collector_store_task(o->tasks, pids[i], tids[i], &task);
                replay_clock_record(&o->clock, &recs[i]);
                store_add_task(o->store, &recs[i], &task);
                if (o->records)
                        write_record(o->records, &recs[i], pids[i], tids[i]);
        }
}

static void sink_clock(void *userdata, const struct source_clock *c) {
        struct once *o = userdata;

        replay_clock_file(&o->clock, c);
}

static void sink_mapping(void *userdata, const struct source_mapping *m) {
        struct once *o = userdata;

        (void) symbolizer_add_mapping(symbols_get_maps(o->symbols), m);
}

static void sink_feature(void *userdata, unsigned feat, const uint8_t *data, size_t len) {
        struct once *o = userdata;

        if (feat == PERF_DATA_FEAT_MEM_TOPOLOGY) {
                o->memnode = memnode_free(o->memnode);
                if (memnode_from_perf_header(data, len, &o->memnode) < 0)
                        log_debug("replay: the file's memory topology cannot be read, no NUMA nodes");
        }
}

static int node(void *userdata, uint64_t pa) {
        const struct once *o = userdata;

        return memnode_node(o->memnode, pa);
}

static bool symbol(void *userdata, uint32_t pid, uint64_t pc, char *buf, size_t len) {
        const struct once *o = userdata;
        struct symbols_result res;

        if (symbols_lookup(o->symbols, pid, pc, &res) < 0 || !res.function)
                return false;
        snprintf(buf, len, "%s", res.function);
        return true;
}

static bool object(void *userdata, uint32_t pid, uint64_t pc, char *buf, size_t len) {
        const struct once *o = userdata;
        struct symbols_result res;

        return symbols_lookup(o->symbols, pid, pc, &res) == 0 && symbols_result_object(&res, buf, len);
}

static bool source(void *userdata, uint32_t pid, uint64_t pc, char *buf, size_t len) {
        const struct once *o = userdata;
        struct symbols_frame frames[SYMBOLS_MAX_FRAMES];
        int n = symbols_lines(o->symbols, pid, pc, frames, ELEMENTSOF(frames));

        return n > 0 && frames[0].file && frames[0].line > 0 &&
               snprintf(buf, len, "%s:%" PRIu32, frames[0].file, frames[0].line) < (int) len;
}

static bool data_symbol(void *userdata, uint32_t pid, uint64_t va, char *buf, size_t len, char *member,
                        size_t member_len) {
        const struct once *o = userdata;
        struct symbols_data d;

        if (symbols_data_symbol(o->symbols, pid, va, &d) < 0 ||
            snprintf(buf, len, "%s+0x%" PRIx64, d.symbol, d.offset) >= (int) len)
                return false;
        if (snprintf(member, member_len, "%s", d.member) >= (int) member_len)
                member[0] = '\0';
        return true;
}

static bool region(void *userdata, uint32_t pid, uint64_t va, char *name, size_t name_len, uint64_t *ret_offset) {
        const struct once *o = userdata;

        return symbols_region(o->symbols, pid, va, name, name_len, ret_offset) == 0;
}

static json_t *decoder_errors_json(const struct spe_decoder_stats *d) {
        return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "bad_header", (json_int_t) d->bad_header,
                         "bad_extended_header", (json_int_t) d->bad_ext_header, "dropped_records",
                         (json_int_t) d->dropped_records, "unknown_index", (json_int_t) d->unknown_index,
                         "reserved_op", (json_int_t) d->reserved_op, "duplicate_packets",
                         (json_int_t) d->duplicate_pkts, "flushed_records", (json_int_t) d->flushed_records);
}

static json_t *cpus_json(const struct spe_replay *replay, struct spe_decoder_stats *ret_sum) {
        json_t *cpus = json_array();

        *ret_sum = (struct spe_decoder_stats) {};
        for (size_t i = 0; i < spe_replay_n_cpus(replay); i++) {
                struct spe_stream_stats st;
                const struct spe_stream_stats *c = &st;

                spe_replay_stream_stats(replay, i, &st);

                ret_sum->bad_header += c->decoder.bad_header;
                ret_sum->bad_ext_header += c->decoder.bad_ext_header;
                ret_sum->dropped_records += c->decoder.dropped_records;
                ret_sum->unknown_index += c->decoder.unknown_index;
                ret_sum->reserved_op += c->decoder.reserved_op;
                ret_sum->duplicate_pkts += c->decoder.duplicate_pkts;
                ret_sum->flushed_records += c->decoder.flushed_records;
                json_array_append_new(
                        cpus, json_pack("{s:i, s:o, s:I, s:I, s:{s:I, s:I, s:I, s:I}, s:I, s:I, s:I, s:o}", "cpu",
                                        (int) c->cpu, "midr", agg_hex(c->midr), "records", (json_int_t) c->records,
                                        "bytes", (json_int_t) c->bytes, "aux", "records",
                                        (json_int_t) c->aux_records, "truncated", (json_int_t) c->aux_truncated,
                                        "collisions", (json_int_t) c->aux_collision, "partial",
                                        (json_int_t) c->aux_partial, "lost", (json_int_t) c->lost, "lost_samples",
                                        (json_int_t) c->lost_samples, "discontinuities",
                                        (json_int_t) c->discontinuities, "decode_errors",
                                        decoder_errors_json(&c->decoder)));
        }
        return cpus;
}

int replay_once(const struct replay_args *a, const char *records_path, const struct config *cfg, FILE *out) {
        char warnings[SOURCE_WARNINGS_MAX][SOURCE_WARNING_LEN];
        _cleanup_close_ int fd = -1;
        size_t n_warnings;
        bool complete;
        struct store_options so;
        struct store *s = NULL;
        struct spe_replay *replay = NULL;
        struct spe_decoder_stats errors;
        struct store_snapshot *snap;
        struct store_totals_result totals;
        struct store_hotpcs_result pcs;
        struct agg_pc_rows pc_rows;
        struct store_hotlines_result lines;
        struct store_latency_result lat;
        json_t *report, *jw;
        int k, rr;

        k = replay_open(a, &fd);
        if (k < 0)
                return k;
        collector_store_options(cfg, &so);
        k = store_new(&so, 0, &s);
        if (k < 0)
                return log_error_errno(k, "Failed to create the aggregate store: %m");
        struct once once = { .store = s, .symbols = symbols_new(NULL), .clock = { .store = s } };
        (void) task_map_new(&once.tasks);
        struct source_sink sink = { .userdata = &once, .records = sink_records, .mapping = sink_mapping,
                                    .clock = sink_clock, .feature = sink_feature };
        struct privacy_policy privacy;
        struct agg_symbolizer sym = { &once, symbol, object, node, .region = region, .privacy = &privacy,
                                      .source = source, .data_symbol = data_symbol };

        /* [privacy] as the daemon's answers apply it. */
        config_privacy_policy(cfg, &privacy);

        if (records_path) {
                once.records = fopen(records_path, "we");
                if (!once.records) {
                        k = log_error_errno(-errno, "replay: cannot create %s: %m", records_path);
                        store_free(s);
                        symbols_free(once.symbols);
                        task_map_free(once.tasks);
                        return k;
                }
        }

        /* A replay is one epoch covering the whole file: the file's first to last timestamp. */
        rr = replay_run(a, fd, -1, &sink, once.tasks, &replay);
        complete = replay_complete(replay, rr);
        n_warnings = spe_replay_warnings(replay, rr, warnings);
        replay_clock_finish(&once.clock);

        snap = store_snapshot_get(s);
        store_query_totals(snap, STORE_WINDOW_ALL, &totals);
        /* Every PC, so that each row sums all of its command's PCs in its function (agg_hotpcs_rows()). */
        store_query_hotpcs(snap, STORE_WINDOW_ALL, SIZE_MAX, STORE_PID_ANY, &pcs);
        agg_hotpcs_rows(&pcs.pcs, &sym, NULL, REPORT_HOTPCS, &pc_rows);
        store_query_hotlines(snap, STORE_WINDOW_ALL, REPORT_HOTLINES, STORE_PID_ANY, HOTLINES_ALL_LINES, &lines);
        store_query_latency(snap, STORE_WINDOW_ALL, &lat);

        report = json_pack("{s:s, s:s, s:b}", "file", a->path, "mode",
                           spe_replay_is_raw(replay) ? "raw" : spe_replay_is_pipe(replay) ? "pipe" : "file", "complete",
                           complete);
        if (rr < 0)
                json_object_set_new(report, "error", json_string(spe_replay_error(replay)));
        jw = json_array();
        for (size_t i = 0; i < n_warnings; i++)
                json_array_append_new(jw, json_string(warnings[i]));
        json_object_set_new(report, "warnings", jw);
        json_object_set_new(report, "dropped_input",
                            json_pack("{s:I, s:I}", "aux_payloads", (json_int_t) spe_replay_dropped_payloads(replay),
                                      "bytes", (json_int_t) spe_replay_dropped_bytes(replay)));
        json_object_set_new(report, "cpus", cpus_json(replay, &errors));
        json_object_set_new(report, "decode_errors", decoder_errors_json(&errors));
        json_object_set_new(report, "unattributed_records", json_integer((json_int_t) spe_replay_unattributed(replay)));
        json_object_set_new(report, "sample_period", json_integer((json_int_t) spe_replay_sample_period(replay)));
        {
                /* x86 memory samples (perf mem/c2c record files): what became records, what was dropped. */
                const struct memsample_stats *ms = spe_replay_memsample_stats(replay);

                json_object_set_new(
                        report, "memory_samples",
                        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s}", "samples",
                                  (json_int_t) ms->samples, "records", (json_int_t) ms->records, "loads",
                                  (json_int_t) ms->loads, "stores", (json_int_t) ms->stores, "hitm",
                                  (json_int_t) ms->hitm, "peer_snoops", (json_int_t) ms->peer, "remote_dram",
                                  (json_int_t) ms->remote_dram, "remote_clean_hits", (json_int_t) ms->remote_clean,
                                  "dropped_no_data_src", (json_int_t) ms->dropped_no_data_src, "dropped_not_memory",
                                  (json_int_t) ms->dropped_not_mem, "latency_clamped", (json_int_t) ms->lat_clamped,
                                  "latency", "weight: PEBS load use latency / IBS miss latency, core cycles"));
        }
        json_object_set_new(report, "totals", agg_totals_json(&totals.t));
        json_object_set_new(report, "hotpcs", agg_hotpcs_json(&pcs, &pc_rows, &sym));
        json_object_set_new(report, "hotlines", agg_hotlines_json(&lines, &sym));
        json_object_set_new(report, "latency", agg_latency_json(&lat));
        json_dumpf(report, out, JSON_INDENT(2) | AGG_JSON_REAL_PRECISION);
        fputc('\n', out);

        json_decref(report);
        agg_pc_rows_done(&pc_rows);
        store_hotpcs_result_done(&pcs);
        store_hotlines_result_done(&lines);
        store_latency_result_done(&lat);
        store_snapshot_unref(snap);
        store_free(s);
        symbols_free(once.symbols);
        memnode_free(once.memnode);
        k = 0;
        if (once.records && fclose(once.records) != 0)
                k = log_error_errno(-errno, "replay: cannot write %s: %m", records_path);
        for (size_t i = 0; i < n_warnings; i++)
                log_warning("replay: %s: %s", a->path, warnings[i]);
        if (rr < 0)
                log_error("replay: %s", spe_replay_error(replay));
        spe_replay_free(replay);
        task_map_free(once.tasks);
        if (rr < 0)
                return rr;
        if (k < 0)
                return k;
        return complete ? 0 : -EBADMSG;
}
