/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pd-spe-v2: writes a perf.data (file or pipe mode) whose Arm SPE
 * AUXTRACE_INFO is version 2, with per-CPU metadata for four CPUs of three
 * kinds, the way newer perf records on a
 * heterogeneous machine (tools/perf/arch/arm64/util/arm-spe.c,
 * arm_spe_save_cpu_header()). Each CPU gets an AUXTRACE chunk of padding,
 * so a reader has a stream per CPU. perf-data-spe-v2-vs-perf.py hands the
 * file to a perf that reads version 2 and to our reader.
 *
 * usage: pd-spe-v2 [--pipe] OUT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd-builder.h"

#define SPE_PMU_TYPE    9
#define NR_CPUS         4

/* MIDR_EL1: Neoverse N1 r3p1, N2 r0p0, V1 r1p1 (each core's TRM, "MIDR_EL1"). */
static const uint32_t cpus[NR_CPUS] = { 0, 1, 2, 3 };
static const uint64_t midrs[NR_CPUS] = { 0x413fd0c1, 0x410fd490, 0x411fd401, 0x413fd0c1 };

int main(int argc, char **argv) {
        uint64_t spe_ids[NR_CPUS] = { 100, 101, 102, 103 }, dummy_ids[NR_CPUS] = { 200, 201, 202, 203 };
        struct perf_event_attr spe, dummy;
        uint8_t pad[64] = { 0 };
        const char *out = NULL;
        bool pipe = false;
        struct pdb b;
        uint8_t *data;
        size_t len;
        FILE *f;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--pipe") == 0)
                        pipe = true;
                else
                        out = argv[i];
        }
        if (!out) {
                fprintf(stderr, "usage: %s [--pipe] OUT\n", argv[0]);
                return 2;
        }

        pdb_init(&b, pipe);
        pdb_spe_attr(&spe, SPE_PMU_TYPE);
        pdb_dummy_attr(&dummy);
        pdb_add_attr(&b, &spe, spe_ids, NR_CPUS);
        pdb_add_attr(&b, &dummy, dummy_ids, NR_CPUS);
        pdb_feature_nrcpus(&b, NR_CPUS, NR_CPUS);
        pdb_feature_string(&b, PDB_FEAT_CPUID, "0x00000000413fd0c1");
        pdb_auxtrace_info_spe_v2(&b, SPE_PMU_TYPE, cpus, midrs, NR_CPUS, 4);

        b.sid = (struct pdb_sid) { .pid = 4242, .tid = 4242, .time = 1000, .cpu = 0, .id = 200 };
        pdb_comm(&b, 4242, 4242, "spe_v2", true);
        for (uint32_t c = 0; c < NR_CPUS; c++) {
                b.sid = (struct pdb_sid) { .pid = 4242, .tid = 4242, .time = 2000 + c, .cpu = c, .id = 100 + c };
                pdb_aux(&b, 0, sizeof(pad), 0);
                pdb_auxtrace(&b, c, c, UINT32_MAX, 0, pad, sizeof(pad));
        }
        pdb_finished_round(&b);

        data = pdb_finish(&b, &len);
        pdb_done(&b);
        f = fopen(out, "we");
        if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
                perror(out);
                return 1;
        }
        free(data);
        return 0;
}
