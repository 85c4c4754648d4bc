/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "replay.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "aggregates.h"
#include "collector.h"
#include "log.h"
#include "spe-replay.h"
#include "store.h"
#include "symbols.h"

#define REPORT_HOTPCS 50
#define REPORT_HOTLINES 20

struct once {
        struct store *store;
        struct symbols *symbols;
};

static void sink_records(void *userdata, const struct spe_record *recs, const uint32_t *pids,
                         const uint32_t *tids, size_t n) {
        struct once *o = userdata;

        for (size_t i = 0; i < n; i++)
                store_add(o->store, &recs[i], pids[i], tids[i]);
}

static void sink_mapping(void *userdata, const struct spe_mapping *m) {
        struct once *o = userdata;

        (void) symbols_add_mapping(o->symbols, m->pid, m->start, m->len, m->pgoff, m->filename, m->build_id,
                                   m->build_id_len);
}

static bool symbol(void *userdata, uint32_t pid, uint64_t pc, char *buf, size_t len) {
        struct symbols_result r;

        if (symbols_lookup(userdata, pid, pc, &r) < 0 || !r.function)
                return false;
        snprintf(buf, len, "%s", r.function);
        return true;
}

static json_t *decoder_errors_json(const struct spe_decoder_stats *d) {
        return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "bad_header", (json_int_t) d->bad_header,
                         "bad_extended_header", (json_int_t) d->bad_ext_header, "dropped_records",
                         (json_int_t) d->dropped_records, "unknown_index", (json_int_t) d->unknown_index,
                         "reserved_op", (json_int_t) d->reserved_op, "duplicate_packets",
                         (json_int_t) d->duplicate_pkts, "flushed_records", (json_int_t) d->flushed_records);
}

static json_t *cpus_json(const struct spe_replay *r, struct spe_decoder_stats *ret_sum) {
        json_t *cpus = json_array();

        *ret_sum = (struct spe_decoder_stats) {};
        for (size_t i = 0; i < spe_replay_n_cpus(r); i++) {
                const struct spe_replay_cpu_stats *c = spe_replay_cpu(r, i);

                ret_sum->bad_header += c->decoder.bad_header;
                ret_sum->bad_ext_header += c->decoder.bad_ext_header;
                ret_sum->dropped_records += c->decoder.dropped_records;
                ret_sum->unknown_index += c->decoder.unknown_index;
                ret_sum->reserved_op += c->decoder.reserved_op;
                ret_sum->duplicate_pkts += c->decoder.duplicate_pkts;
                ret_sum->flushed_records += c->decoder.flushed_records;
                json_array_append_new(
                        cpus, json_pack("{s:i, s:o, s:I, s:I, s:{s:I, s:I, s:I, s:I}, s:I, s:I, s:o}", "cpu",
                                        (int) c->cpu, "midr", agg_hex(c->midr), "records", (json_int_t) c->records,
                                        "bytes", (json_int_t) c->bytes, "aux", "records",
                                        (json_int_t) c->aux_records, "truncated", (json_int_t) c->aux_truncated,
                                        "collisions", (json_int_t) c->aux_collision, "partial",
                                        (json_int_t) c->aux_partial, "lost", (json_int_t) c->lost,
                                        "discontinuities", (json_int_t) c->discontinuities, "decode_errors",
                                        decoder_errors_json(&c->decoder)));
        }
        return cpus;
}

int replay_once(const char *path, const struct config *cfg, FILE *out) {
        struct store_options so;
        struct store *s = NULL;
        struct spe_replay *r = NULL;
        struct spe_decoder_stats errors;
        struct store_snapshot *snap;
        struct store_totals_result totals;
        struct store_hotpcs_result pcs;
        struct store_hotlines_result lines;
        struct store_latency_result lat;
        json_t *report;
        int k, rr;

        collector_store_options(cfg, &so);
        k = store_new(&so, 0, &s);
        if (k < 0)
                return log_error_errno(k, "Failed to create the aggregate store: %m");
        struct once once = { s, symbols_new(NULL) };
        struct spe_sink sink = { &once, sink_records, sink_mapping };
        struct agg_symbolizer sym = { once.symbols, symbol };

        /* A replay is one epoch covering the whole file. */
        /* "-" reads a pipe-mode stream from stdin: perf record -o - | armprofd --replay - --once */
        if (streq(path, "-"))
                rr = spe_replay_fd(STDIN_FILENO, &sink, &r);
        else
                rr = spe_replay_path(path, &sink, &r);
        store_epoch_end(s, now_monotonic_usec() * NSEC_PER_USEC);

        snap = store_snapshot_get(s);
        store_query_totals(snap, STORE_WINDOW_ALL, &totals);
        store_query_hotpcs(snap, STORE_WINDOW_ALL, REPORT_HOTPCS, STORE_PID_ANY, &pcs);
        store_query_hotlines(snap, STORE_WINDOW_ALL, REPORT_HOTLINES, STORE_PID_ANY, &lines);
        store_query_latency(snap, STORE_WINDOW_ALL, &lat);

        report = json_pack("{s:s, s:s, s:b}", "file", path, "mode", spe_replay_is_pipe(r) ? "pipe" : "file",
                           "complete", rr >= 0);
        if (rr < 0)
                json_object_set_new(report, "error", json_string(spe_replay_error(r)));
        json_object_set_new(report, "cpus", cpus_json(r, &errors));
        json_object_set_new(report, "decode_errors", decoder_errors_json(&errors));
        json_object_set_new(report, "unattributed_records", json_integer((json_int_t) spe_replay_unattributed(r)));
        json_object_set_new(report, "sample_period", json_integer((json_int_t) spe_replay_sample_period(r)));
        json_object_set_new(report, "totals", agg_totals_json(&totals.t));
        json_object_set_new(report, "hotpcs", agg_hotpcs_json(&pcs, &sym));
        json_object_set_new(report, "hotlines", agg_hotlines_json(&lines, &sym));
        json_object_set_new(report, "latency", agg_latency_json(&lat));
        json_dumpf(report, out, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        fputc('\n', out);

        json_decref(report);
        store_hotpcs_result_done(&pcs);
        store_hotlines_result_done(&lines);
        store_latency_result_done(&lat);
        store_snapshot_unref(snap);
        store_free(s);
        symbols_free(once.symbols);
        if (rr < 0)
                log_error("replay: %s", spe_replay_error(r));
        spe_replay_free(r);
        return rr < 0 ? rr : 0;
}
