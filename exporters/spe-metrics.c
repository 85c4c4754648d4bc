/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "spe-metrics.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"

static const char *const lat_op_names[SPE_LAT_OPS] = { "load", "store", "branch" };

/* Classic bucket bounds in cycles: powers of two up to the 16-bit counter maximum. */
#define CLASSIC_BUCKETS 17

static void per_cpu(struct prom_writer *w, const struct spe_metrics_input *in, const char *name,
                    const char *help, size_t field_offset) {
        prom_family(w, name, PROM_COUNTER, help);
        for (size_t i = 0; i < in->n_cpus; i++) {
                char cpu[16];

                snprintf(cpu, sizeof(cpu), "%" PRIu32, in->cpus[i].cpu);
                prom_sample_u64(w, (const char *const[]) { "cpu", cpu, NULL },
                                *(const uint64_t *) ((const uint8_t *) &in->cpus[i] + field_offset));
        }
}

static void latency(struct prom_writer *w, const struct spe_latency_cum *lat) {
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
                        const struct spe_latency_cum *h = &lat[k * SPE_LAT_OPS + o];
                        struct prom_histogram ph = {
                                .count = h->count, .sum = (double) h->sum,
                                .n_buckets = CLASSIC_BUCKETS, .upper_bounds = upper, .cumulative_counts = cum,
                                .native = true, .schema = LATHIST_SCHEMA, .zero_threshold = 0,
                                .native_index = idx, .native_count = cnt,
                        };
                        size_t n = 0;

                        /* Classic: every store bucket lies wholly below or above a power of two. */
                        for (unsigned c = 0; c < CLASSIC_BUCKETS; c++) {
                                cum[c] = 0;
                                for (unsigned i = 0; i < LATHIST_NBUCKETS; i++)
                                        if (b[i].hi <= upper[c])
                                                cum[c] += h->bucket[i];
                        }
                        /* Native: the store's buckets are schema-7 buckets; the zero bucket holds 0. */
                        for (unsigned i = 0; i < LATHIST_NBUCKETS; i++) {
                                if (h->bucket[i] == 0)
                                        continue;
                                if (b[i].native_index == INT32_MIN) {
                                        ph.zero_count += h->bucket[i];
                                        continue;
                                }
                                idx[n] = b[i].native_index;
                                cnt[n] = h->bucket[i];
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
        uint64_t errors = 0, dropped = 0;

        /* The store is sized at start; this is its bound (store/store.h formula). */
        prom_family_unit(w, "armprofd_store_bytes", PROM_GAUGE, "bytes",
                         "Upper bound of the aggregate store's memory, fixed at start by [store] settings.");
        prom_sample_u64(w, NULL, in->store_bytes);
        if (!in->up)
                return;

        per_cpu(w, in, "armprofd_spe_records_total", "SPE records decoded.",
                offsetof(struct spe_stream_stats, records));
        prom_family_unit(w, "armprofd_spe_bytes_total", PROM_COUNTER, "bytes", "SPE trace bytes read.");
        for (size_t i = 0; i < in->n_cpus; i++) {
                char cpu[16];

                snprintf(cpu, sizeof(cpu), "%" PRIu32, in->cpus[i].cpu);
                prom_sample_u64(w, (const char *const[]) { "cpu", cpu, NULL }, in->cpus[i].bytes);
                errors += in->cpus[i].decoder.bad_header + in->cpus[i].decoder.bad_ext_header;
                dropped += in->cpus[i].decoder.dropped_records;
        }
        per_cpu(w, in, "armprofd_spe_aux_truncated_total",
                "AUX buffer updates the kernel flagged truncated (samples lost to a full buffer).",
                offsetof(struct spe_stream_stats, aux_truncated));
        per_cpu(w, in, "armprofd_spe_aux_collisions_total",
                "AUX buffer updates flagged with sample collisions.",
                offsetof(struct spe_stream_stats, aux_collision));
        prom_family(w, "armprofd_spe_decode_errors_total", PROM_COUNTER,
                    "SPE bytes skipped because they did not decode as a packet.");
        prom_sample_u64(w, NULL, errors);
        prom_family(w, "armprofd_spe_dropped_records_total", PROM_COUNTER,
                    "Partial SPE records discarded when undecodable bytes interrupted them.");
        prom_sample_u64(w, NULL, dropped);

        prom_family(w, "armprofd_spe_loads_total", PROM_COUNTER, "Sampled loads by data source.");
        for (int s = SPE_SOURCE_UNKNOWN; s < _SPE_SOURCE_MAX; s++)
                prom_sample_u64(w, (const char *const[]) { "source", spe_source_name(s), NULL },
                                t->loads_by_source[s]);
        prom_family(w, "armprofd_spe_peer_snoops_total", PROM_COUNTER,
                    "Sampled loads served by another core's cache (perf c2c peer snoops), by scope.");
        prom_sample_u64(w, (const char *const[]) { "scope", "local", NULL }, t->peer_local);
        prom_sample_u64(w, (const char *const[]) { "scope", "remote", NULL }, t->peer_remote);

        prom_family(w, "armprofd_store_evictions_total", PROM_COUNTER,
                    "Entries the bounded aggregate tables evicted to stay within their capacity.");
        prom_sample_u64(w, (const char *const[]) { "table", "hotpcs", NULL }, t->evict_hotpcs);
        prom_sample_u64(w, (const char *const[]) { "table", "hotlines", NULL }, t->evict_hotlines);
        prom_sample_u64(w, (const char *const[]) { "table", "offsets", NULL }, t->evict_offsets);

        if (in->latency)
                latency(w, in->latency);
}

void symbols_metrics_write(const struct symbols_stats *st, struct prom_writer *w) {
        static const struct {
                const char *name, *help;
                size_t offset;
        } counters[] = {
                { "armprofd_symbols_files_loaded_total", "ELF files read for symbols (again after an eviction).",
                  offsetof(struct symbols_stats, files_loaded) },
                { "armprofd_symbols_file_errors_total", "Files named by mappings that could not be read as ELF.",
                  offsetof(struct symbols_stats, file_errors) },
                { "armprofd_symbols_truncated_total", "Function symbols left out of a file beyond the per-file bound.",
                  offsetof(struct symbols_stats, symbols_truncated) },
                { "armprofd_symbols_build_id_mismatches_total",
                  "Mappings whose file on disk is another build than the one sampled, with no copy of theirs: left unnamed.",
                  offsetof(struct symbols_stats, build_id_mismatches) },
                { "armprofd_symbols_debug_files_total",
                  "Mappings of stripped files named through a detached debug file (/usr/lib/debug/.build-id).",
                  offsetof(struct symbols_stats, debug_files) },
                { "armprofd_symbols_build_id_cache_files_total",
                  "Mappings whose file on disk is another build, named from perf's copy of their build "
                  "(~/.debug/.build-id).",
                  offsetof(struct symbols_stats, build_id_cache_files) },
        };

        prom_family(w, "armprofd_symbols_evictions_total", PROM_COUNTER,
                    "Entries the bounded symbol cache evicted to stay within its capacity.");
        prom_sample_u64(w, (const char *const[]) { "table", "processes", NULL }, st->pid_evictions);
        prom_sample_u64(w, (const char *const[]) { "table", "mappings", NULL }, st->mapping_evictions);
        prom_sample_u64(w, (const char *const[]) { "table", "files", NULL }, st->file_evictions);
        for (size_t i = 0; i < ELEMENTSOF(counters); i++) {
                uint64_t v;

                memcpy(&v, (const uint8_t *) st + counters[i].offset, sizeof(v));
                prom_family(w, counters[i].name, PROM_COUNTER, counters[i].help);
                prom_sample_u64(w, NULL, v);
        }
}
