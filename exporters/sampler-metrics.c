/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "sampler-metrics.h"

#include <inttypes.h>
#include <stdio.h>

#include "macro.h"

static void per_cpu(struct prom_writer *w, const struct sampler_metrics_input *in, const char *name,
                    const char *help, size_t field_offset) {
        prom_family(w, name, PROM_COUNTER, help);
        for (size_t i = 0; i < in->n_cpus; i++) {
                char cpu[DECIMAL_STR_MAX(unsigned)];

                snprintf(cpu, sizeof(cpu), "%" PRIu32, in->cpus[i].cpu);
                prom_sample_u64(w, (const char *const[]) { "cpu", cpu, NULL },
                                *(const uint64_t *) ((const uint8_t *) &in->cpus[i] + field_offset));
        }
}

void sampler_metrics_write(const struct sampler_metrics_input *in, struct prom_writer *w) {
        per_cpu(w, in, "armprofd_cpu_samples_total", "CPU samples read from the sampler's ring, by CPU.",
                offsetof(struct sampler_cpu_stats, samples));
        per_cpu(w, in, "armprofd_cpu_samples_lost_total",
                "CPU samples the kernel could not write (PERF_RECORD_LOST_SAMPLES), by CPU.",
                offsetof(struct sampler_cpu_stats, lost_samples));
        per_cpu(w, in, "armprofd_cpu_sampler_lost_records_total",
                "Records the sampler's full data ring had no room for (PERF_RECORD_LOST), by CPU.",
                offsetof(struct sampler_cpu_stats, lost));
        per_cpu(w, in, "armprofd_cpu_sampler_throttled_total",
                "Times the kernel throttled the sampling event (PERF_RECORD_THROTTLE), by CPU.",
                offsetof(struct sampler_cpu_stats, throttles));
        per_cpu(w, in, "armprofd_cpu_callchain_truncated_total",
                "Callchains the kernel cut at [sampler] max_stack, by CPU.",
                offsetof(struct sampler_cpu_stats, callchain_truncated));
        per_cpu(w, in, "armprofd_cpu_stack_copy_truncated_total",
                "User stack copies that filled [sampler] stack_size (CFI unwinding may stop short), by CPU.",
                offsetof(struct sampler_cpu_stats, stack_truncated));
        if (in->procs) {
                const struct proc_table_stats *p = in->procs;

                prom_family(w, "armprofd_cpu_sampler_processes", PROM_GAUGE,
                            "Processes in the sampler's table now: running ones, and exited ones kept 30 s for "
                            "their samples read late.");
                prom_sample_u64(w, NULL, p->procs);
                prom_family(w, "armprofd_cpu_sampler_proc_reads_total", PROM_COUNTER,
                            "Processes the sampler looked up in /proc for what no record had told it (name, "
                            "mappings, cgroup): read, or gone (exited before it looked, its parent too).");
                prom_sample_u64(w, (const char *const[]) { "result", "read", NULL }, p->procs_read - p->procs_gone);
                prom_sample_u64(w, (const char *const[]) { "result", "gone", NULL }, p->procs_gone);
                prom_family(w, "armprofd_cpu_sampler_processes_exited_total", PROM_COUNTER,
                            "Exited processes whose unwinding state was let go: once every CPU's ring was read past "
                            "their exit (drained), or before it, when 1024 were waiting (early: a sample of theirs "
                            "read later loses its user stack).");
                prom_sample_u64(w, (const char *const[]) { "when", "drained", NULL }, p->gone - p->gone_early);
                prom_sample_u64(w, (const char *const[]) { "when", "early", NULL }, p->gone_early);
        }
        if (!in->totals)
                return;
        prom_family(w, "armprofd_cpu_samples_stored_total", PROM_COUNTER,
                    "CPU samples stored with their stack (all epochs since start).");
        /* The store counts every sample it was given, the ones its full tables dropped too. */
        prom_sample_u64(w, NULL, in->totals->cpu_samples - MIN(in->totals->evict_stacks, in->totals->cpu_samples));
        prom_family(w, "armprofd_cpu_stacks_dropped_total", PROM_COUNTER,
                    "CPU samples the full per-epoch stack table could not hold ([store] stacks).");
        prom_sample_u64(w, NULL, in->totals->evict_stacks);
}
