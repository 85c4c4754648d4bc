/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "spe-metrics.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "strbuf.h"

/* Op groups exported as armprofd_spe_latency_cycles{op}: load, store, branch. */
#define SPE_LAT_OPS 3
static const enum hotpcs_op lat_ops[SPE_LAT_OPS] = { HOTPCS_OP_LOAD, HOTPCS_OP_STORE, HOTPCS_OP_BRANCH };
static const char *const lat_op_names[SPE_LAT_OPS] = { "load", "store", "branch" };

/* Classic bucket bounds in cycles: powers of two up to the 16-bit counter maximum. */
#define CLASSIC_BUCKETS 17

/* The "cpu" label values, written once for the families that each have a sample per CPU. */
typedef char cpu_label[DECIMAL_STR_MAX(uint32_t)];

static void per_cpu(struct prom_writer *w, const struct spe_metrics_input *in, const cpu_label *cpus,
                    const char *name, const char *help, size_t field_offset) {
        prom_family(w, name, PROM_COUNTER, help);
        for (size_t i = 0; i < in->n_cpus; i++)
                prom_sample_u64(w, (const char *const[]) { "cpu", cpus[i], NULL },
                                *(const uint64_t *) ((const uint8_t *) &in->cpus[i] + field_offset));
}

static void latency(struct prom_writer *w, const struct store_latency_cumulative *lat) {
        const struct lathist_bucket *b = lathist_buckets();
        double upper[CLASSIC_BUCKETS];
        uint64_t cum[CLASSIC_BUCKETS];
        int32_t idx[LATHIST_NBUCKETS];
        uint64_t cnt[LATHIST_NBUCKETS];

        for (unsigned i = 0; i < CLASSIC_BUCKETS; i++)
                upper[i] = (double) (UINT64_C(1) << i);

        prom_family(w, "armprofd_spe_latency_cycles", PROM_HISTOGRAM,
                    "Latency of sampled operations in cycles, by kind (total, issue, translation) and op.");
        for (int k = 0; k < _STORE_LAT_KIND_MAX; k++)
                for (int o = 0; o < SPE_LAT_OPS; o++) {
                        const struct lathist_merged *h = &lat->h[k][lat_ops[o]];
                        struct prom_histogram ph = {
                                .count = h->n, .sum = (double) h->sum,
                                .n_buckets = CLASSIC_BUCKETS, .upper_bounds = upper, .cumulative_counts = cum,
                                .native = true, .schema = LATHIST_SCHEMA, .zero_threshold = 0,
                                .native_index = idx, .native_count = cnt,
                        };
                        size_t n = 0;

                        /*
                         * Classic: every store bucket lies wholly below or above a power of two, and
                         * their upper ends increase: each adds to the first bound at or above it, then
                         * the counts are made cumulative.
                         */
                        memset(cum, 0, sizeof(cum));
                        for (unsigned i = 0, c = 0; i < LATHIST_NBUCKETS; i++) {
                                while (c < CLASSIC_BUCKETS && b[i].hi > upper[c])
                                        c++;
                                if (c == CLASSIC_BUCKETS)
                                        break;
                                cum[c] += h->count[i];
                        }
                        for (unsigned c = 1; c < CLASSIC_BUCKETS; c++)
                                cum[c] += cum[c - 1];
                        /* Native: the store's buckets are schema-7 buckets; the zero bucket holds 0. */
                        for (unsigned i = 0; i < LATHIST_NBUCKETS; i++) {
                                if (h->count[i] == 0)
                                        continue;
                                if (b[i].native_index == INT32_MIN) {
                                        ph.zero_count += h->count[i];
                                        continue;
                                }
                                idx[n] = b[i].native_index;
                                cnt[n] = h->count[i];
                                n++;
                        }
                        ph.n_native = n;
                        prom_sample_histogram(w,
                                              (const char *const[]) { "kind", store_lat_kind_name(k), "op",
                                                                      lat_op_names[o], NULL },
                                              &ph);
                }
}

void spe_metrics_write(const struct spe_metrics_input *in, struct prom_writer *w) {
        const struct store_totals *t = in->totals;
        _cleanup_free_ cpu_label *cpus = NULL;
        uint64_t errors = 0, dropped = 0;

        /* The store is sized at start; this is its bound (store/store.h formula). */
        prom_family_unit(w, "armprofd_store_bytes", PROM_GAUGE, "bytes",
                         "Upper bound of the aggregate store's memory, fixed at start by [store] settings.");
        prom_sample_u64(w, NULL, in->store_bytes);
        /* Every host's: the hot-PC table holds the CPU sampler's leaf PCs too. */
        prom_family(w, "armprofd_store_evictions_total", PROM_COUNTER,
                    "Entries the bounded aggregate tables evicted to stay within their capacity.");
        for (unsigned i = 0; i < _STORE_TABLE_MAX; i++)
                prom_sample_u64(w, (const char *const[]) { "table", store_table_name(i), NULL }, t->evictions[i]);
        /* A live source that is not up still says what happened to each CPU. */
        if (!in->up && in->n_cpus == 0)
                return;

        cpus = xmalloc(MAX(in->n_cpus, (size_t) 1) * sizeof(*cpus));
        for (size_t i = 0; i < in->n_cpus; i++)
                snprintf(cpus[i], sizeof(cpus[i]), "%" PRIu32, in->cpus[i].cpu);

        per_cpu(w, in, cpus, "armprofd_spe_records_total", "SPE records decoded.",
                offsetof(struct spe_stream_stats, records));
        prom_family_unit(w, "armprofd_spe_bytes_total", PROM_COUNTER, "bytes", "SPE trace bytes read.");
        for (size_t i = 0; i < in->n_cpus; i++) {
                prom_sample_u64(w, (const char *const[]) { "cpu", cpus[i], NULL }, in->cpus[i].bytes);
                errors += in->cpus[i].decoder.bad_header + in->cpus[i].decoder.bad_ext_header;
                dropped += in->cpus[i].decoder.dropped_records;
        }
        per_cpu(w, in, cpus, "armprofd_spe_aux_truncated_total",
                "AUX buffer updates the kernel flagged truncated (samples lost to a full buffer).",
                offsetof(struct spe_stream_stats, aux_truncated));
        per_cpu(w, in, cpus, "armprofd_spe_aux_collisions_total",
                "AUX buffer updates flagged with sample collisions.",
                offsetof(struct spe_stream_stats, aux_collision));
        per_cpu(w, in, cpus, "armprofd_spe_aux_partial_total",
                "AUX buffer updates flagged partial (the last record cut by a buffer fault).",
                offsetof(struct spe_stream_stats, aux_partial));
        per_cpu(w, in, cpus, "armprofd_spe_discontinuities_total",
                "SPE buffers that did not continue the previous one (data lost between).",
                offsetof(struct spe_stream_stats, discontinuities));
        per_cpu(w, in, cpus, "armprofd_spe_lost_records_total",
                "PERF_RECORD_LOST: data-ring records the kernel had no room for.",
                offsetof(struct spe_stream_stats, lost));
        per_cpu(w, in, cpus, "armprofd_spe_lost_samples_total",
                "PERF_RECORD_LOST_SAMPLES: samples the kernel reported lost.",
                offsetof(struct spe_stream_stats, lost_samples));
        per_cpu(w, in, cpus, "armprofd_spe_throttled_total",
                "PERF_RECORD_THROTTLE: times the kernel throttled sampling.",
                offsetof(struct spe_stream_stats, throttles));
        per_cpu(w, in, cpus, "armprofd_spe_unattributed_records_total",
                "SPE records that no process could be named for (kept, with no pid).",
                offsetof(struct spe_stream_stats, unattributed));
        prom_family(w, "armprofd_spe_thread_unknown_records_total", PROM_COUNTER,
                    "Unattributed SPE records with no CONTEXT packet whose thread a switch may have hidden, by why: "
                    "the event was off (truncated, flushed), the data ring lost records, or no clock places "
                    "a switch among them.");
        for (size_t i = 0; i < in->n_cpus; i++) {
                prom_sample_u64(w, (const char *const[]) { "cpu", cpus[i], "reason", "event_off", NULL },
                                in->cpus[i].thread_unknown_off);
                prom_sample_u64(w, (const char *const[]) { "cpu", cpus[i], "reason", "lost", NULL },
                                in->cpus[i].thread_unknown_lost);
                prom_sample_u64(w, (const char *const[]) { "cpu", cpus[i], "reason", "no_clock", NULL },
                                in->cpus[i].thread_unknown_no_clock);
        }
        if (in->procs) {
                const struct proc_table_stats *p = in->procs;

                prom_family(w, "armprofd_spe_processes", PROM_GAUGE,
                            "Processes in live SPE's table now: running ones, and exited ones kept 30 s for their "
                            "records read late.");
                prom_sample_u64(w, NULL, p->procs);
                prom_family(w, "armprofd_spe_proc_reads_total", PROM_COUNTER,
                            "Processes live SPE looked up in /proc at their first records, for what no record had "
                            "told it (they started before the daemon: name, mappings, cgroup): read, or gone "
                            "(exited before it looked: their PCs stay unnamed).");
                prom_sample_u64(w, (const char *const[]) { "result", "read", NULL }, p->procs_read - p->procs_gone);
                prom_sample_u64(w, (const char *const[]) { "result", "gone", NULL }, p->procs_gone);
                prom_family(w, "armprofd_spe_proc_mappings_read_total", PROM_COUNTER,
                            "Executable mappings live SPE read from /proc/PID/maps.");
                prom_sample_u64(w, NULL, p->mappings_read);
        }
        per_cpu(w, in, cpus, "armprofd_spe_switch_overflows_total",
                "Task switches applied before their records were read: more in one AUX chunk than the log holds.",
                offsetof(struct spe_stream_stats, switch_overflows));
        per_cpu(w, in, cpus, "armprofd_spe_aux_reenabled_total",
                "Live events re-enabled after their session ended (truncated, or stalled).",
                offsetof(struct spe_stream_stats, reenables));
        per_cpu(w, in, cpus, "armprofd_spe_aux_stalls_total",
                "Live sessions found ended with no TRUNCATED record read (it was lost): re-enabled too.",
                offsetof(struct spe_stream_stats, aux_stalls));
        per_cpu(w, in, cpus, "armprofd_spe_aux_fault_restarts_total",
                "Live sessions found stopped with the event on and no TRUNCATED (a fatal buffer fault): "
                "restarted by DISABLE + ENABLE.",
                offsetof(struct spe_stream_stats, aux_fault_restarts));
        prom_family_unit(w, "armprofd_spe_not_sampling_seconds_total", PROM_COUNTER, "seconds",
                         "Time without samples after full AUX buffers: last record before to first after.");
        for (size_t i = 0; i < in->n_cpus; i++)
                prom_sample_double(w, (const char *const[]) { "cpu", cpus[i], NULL },
                                   (double) in->cpus[i].not_sampling_ns / 1e9);
        prom_family(w, "armprofd_spe_decode_errors_total", PROM_COUNTER,
                    "SPE bytes skipped because they did not decode as a packet.");
        prom_sample_u64(w, NULL, errors);
        prom_family(w, "armprofd_spe_dropped_records_total", PROM_COUNTER,
                    "Partial SPE records discarded when undecodable bytes interrupted them.");
        prom_sample_u64(w, NULL, dropped);

        prom_family(w, "armprofd_spe_loads_total", PROM_COUNTER, "Sampled loads by data source.");
        for (int s = SPE_DATA_SRC_UNKNOWN; s < _SPE_DATA_SRC_MAX; s++)
                prom_sample_u64(w, (const char *const[]) { "source", spe_data_src_name(s), NULL },
                                t->loads_by_source[s]);
        prom_family(w, "armprofd_spe_peer_snoops_total", PROM_COUNTER,
                    "Sampled loads served by another core's cache (perf c2c peer snoops), by scope.");
        prom_sample_u64(w, (const char *const[]) { "scope", "local", NULL }, t->peer_local);
        prom_sample_u64(w, (const char *const[]) { "scope", "remote", NULL }, t->peer_remote);

        prom_family(w, "armprofd_store_records_total", PROM_COUNTER,
                    "SPE records the aggregates counted, in closed epochs (what the evictions are out of).");
        prom_sample_u64(w, NULL, t->records);

        if (in->latency)
                latency(w, in->latency);
}
