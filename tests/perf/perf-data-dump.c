/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * perf-data-dump: read a perf.data (file or pipe mode; "-" is stdin) with
 * the armprofd reader and print what it found: mode, attrs, CPUs, record
 * counts by type, AUX statistics, Arm SPE's AUXTRACE_INFO ("spe_info",
 * and "spe_cpu" per CPU for version 2), the build-id table ("build_id HEX FILE",
 * as `perf buildid-list` prints it). With --offsets also one line per
 * record ("record OFFSET TYPE"), to compare with `perf report -D`; with
 * --samples one line per sample ("sample IP PID TID TIME CPU", each field
 * "-" when the sample does not carry it), to compare with
 * `perf script -F ip,pid,tid,time,cpu`.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "perf-data.h"
#include "spe-info.h"

static int print_record(void *userdata, const struct perf_data_record *rec) {
        const char *name = perf_data_record_type_name(rec->type);

        if (name)
                printf("record 0x%" PRIx64 " %s\n", rec->file_offset, name);
        else
                printf("record 0x%" PRIx64 " TYPE_%" PRIu32 "\n", rec->file_offset, rec->type);
        return 0;
}

static int print_sample(void *userdata, const struct perf_data_sample *s) {
        const struct perf_data_sample_id *sid = &s->rec.sid;

        printf("sample ");
        if (s->fields & PERF_SAMPLE_IP)
                printf("0x%" PRIx64, s->ip);
        else
                printf("-");
        if (sid->valid & PERF_DATA_ID_TID)
                printf(" %" PRIu32 " %" PRIu32, sid->pid, sid->tid);
        else
                printf(" - -");
        if (sid->valid & PERF_DATA_ID_TIME)
                printf(" %" PRIu64, sid->time);
        else
                printf(" -");
        if (sid->valid & PERF_DATA_ID_CPU)
                printf(" %" PRIu32 "\n", sid->cpu);
        else
                printf(" -\n");
        return 0;
}

static int print_auxtrace_info(void *userdata, const struct perf_data_auxtrace_info *info) {
        if (info->type != PERF_AUXTRACE_ARM_SPE)
                return 0;
        const struct spe_info *si = info->decoded;

        if (!si)
                return 0;
        printf("spe_info version %u pmu %" PRIu64 "\n", si->version, si->pmu_type);
        for (size_t i = 0; i < si->n_cpus; i++) {
                const struct spe_info_cpu *c = &si->cpus[i];

                printf("spe_cpu %" PRIu32 " midr 0x%" PRIx64 " pmu %" PRIu64 " min_interval %" PRIu64
                       " nr_params %u\n", c->cpu, c->midr, c->pmu_type, c->min_interval, c->nr_params);
        }
        return 0;
}

static int print_build_id(void *userdata, const struct perf_data_build_id *bid) {
        printf("build_id ");
        for (unsigned i = 0; i < bid->build_id_size; i++)
                printf("%02x", bid->build_id[i]);
        printf(" %s\n", bid->filename);
        return 0;
}

static void print_summary(struct perf_data_reader *r) {
        const struct perf_data_stats *st = perf_data_reader_stats(r);
        uint32_t avail, online;
        uint64_t midr;

        printf("mode %s\n", perf_data_reader_is_pipe(r) ? "pipe" : "file");
        printf("attrs %zu\n", perf_data_reader_nr_attrs(r));
        for (size_t i = 0; i < perf_data_reader_nr_attrs(r); i++) {
                const struct perf_data_attr *a = perf_data_reader_attr(r, i);

                printf("attr %zu type %" PRIu32 " config 0x%llx sample_type 0x%llx ids %zu\n", i, a->attr.type,
                       (unsigned long long) a->attr.config, (unsigned long long) a->attr.sample_type, a->nr_ids);
        }
        if (perf_data_reader_nr_cpus(r, &avail, &online) == 0)
                printf("nr_cpus_avail %" PRIu32 "\nnr_cpus_online %" PRIu32 "\n", avail, online);
        if (perf_data_reader_cpuid(r))
                printf("cpuid %s\n", perf_data_reader_cpuid(r));
        if (perf_data_reader_midr(r, 0, &midr) == 0)
                printf("midr_cpu0 0x%" PRIx64 "\n", midr);
        printf("records %" PRIu64 "\n", st->records_total);
        for (uint32_t t = 0; t < PERF_DATA_NR_TYPES; t++) {
                const char *name = perf_data_record_type_name(t);

                if (st->records_by_type[t] == 0)
                        continue;
                if (name)
                        printf("type %s %" PRIu64 "\n", name, st->records_by_type[t]);
                else
                        printf("type TYPE_%" PRIu32 " %" PRIu64 "\n", t, st->records_by_type[t]);
        }
        if (st->records_other_type)
                printf("type OTHER %" PRIu64 "\n", st->records_other_type);
        printf("aux_bytes %" PRIu64 "\n", st->aux_bytes);
        printf("aux_flags truncated %" PRIu64 " partial %" PRIu64 " collision %" PRIu64 " overwrite %" PRIu64 "\n",
               st->aux_truncated, st->aux_partial, st->aux_collision, st->aux_overwrite);
        printf("lost %" PRIu64 " lost_samples %" PRIu64 "\n", st->lost, st->lost_samples);
        for (uint32_t c = 0; c < perf_data_reader_nr_cpu_stats(r); c++) {
                const struct perf_data_cpu_stats *cs = perf_data_reader_cpu_stats(r, c);

                if (!cs->samples && !cs->aux_bytes && !cs->aux_records && !cs->lost)
                        continue;
                printf("cpu %" PRIu32 " samples %" PRIu64 " aux_bytes %" PRIu64 " aux_records %" PRIu64
                       " truncated %" PRIu64 " collision %" PRIu64 " lost %" PRIu64 "\n", c, cs->samples,
                       cs->aux_bytes, cs->aux_records, cs->aux_truncated, cs->aux_collision, cs->lost);
        }
}

int main(int argc, char **argv) {
        struct perf_data_ops ops = { .on_build_id = print_build_id, .on_auxtrace_info = print_auxtrace_info };
        struct spe_info_decoder spe_info;
        struct perf_data_reader *r;
        const char *path = NULL;
        int k;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--offsets") == 0)
                        ops.on_record = print_record;
                else if (strcmp(argv[i], "--samples") == 0)
                        ops.on_sample = print_sample;
                else if (!path)
                        path = argv[i];
                else
                        path = NULL, i = argc;
        }
        if (!path) {
                fprintf(stderr, "usage: %s [--offsets] [--samples] FILE|-\n", argv[0]);
                return 2;
        }
        if (strcmp(path, "-") == 0)
                k = perf_data_reader_new_fd(STDIN_FILENO, false, &r);
        else
                k = perf_data_reader_new_path(path, &r);
        if (k < 0) {
                fprintf(stderr, "%s: %s\n", path, strerror(-k));
                return 1;
        }
        k = spe_info_attach(r, &spe_info);
        if (k >= 0)
                k = perf_data_reader_run(r, &ops, NULL);
        print_summary(r);
        if (k < 0)
                fprintf(stderr, "%s: %s (%s)\n", path, perf_data_reader_error(r), strerror(-k));
        perf_data_reader_free(r);
        spe_info_decoder_done(&spe_info);
        return k < 0 ? 1 : 0;
}
