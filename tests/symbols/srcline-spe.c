/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A perf.data of SPE records at the addresses the caller gives, for
 * tests/symbols/test-srcline-spe.py: a process PID (COMM) with FILE mapped
 * as each "map:START:LEN:PGOFF:rx|rw" says (an MMAP2 each, as the loader maps
 * its segments), and each record "CPU:TID:PC:VA:ld|st" a load or store of
 * that thread on that CPU, in the order given per CPU. Written with the
 * generator's perf.data writer and packet encoder (tests/spegen), which
 * share nothing with collectors/spe:
 *
 *   srcline-spe OUT FILE PID COMM ARG...
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "macro.h"
#include "perfdata-writer.h"
#include "spe-enc.h"
#include "spegen-gen.h"

#define SPE_MAX_CPUS    16
#define SPE_REC_MAX     64
#define SPE_MAX_RECORDS 100000
/* Loads served by a peer core's cache (a peer snoop: the evidence of a shared line), 20 cycles. */
#define SPE_TOTAL_LAT   20
#define SIDEBAND_TIME   1000

static size_t encode(uint8_t *buf, uint32_t tid, uint64_t pc, uint64_t va, bool store) {
        size_t n = 0;

        n += spe_enc_address(buf + n, SPE_ENC_ADDR_PC, spe_enc_ip_payload(pc, 0, true), false);
        n += spe_enc_context(buf + n, SPE_ENC_CONTEXT_EL1, tid);
        n += spe_enc_op_type(buf + n, SPE_ENC_OP_LDST, store ? SPE_ENC_OP_LDST_ST : SPE_ENC_OP_LDST_GP);
        n += spe_enc_events(buf + n, SPE_ENC_EV_RETIRED | SPE_ENC_EV_L1D_ACCESS | SPE_ENC_EV_TLB_ACCESS, 2);
        n += spe_enc_counter(buf + n, SPE_ENC_CNT_TOTAL, SPE_TOTAL_LAT, false);
        n += spe_enc_address(buf + n, SPE_ENC_ADDR_VA, va, false);
        if (!store)
                n += spe_enc_data_source(buf + n, SPE_ENC_DS_PEER_CORE, 1);
        n += spe_enc_end(buf + n);
        return n;
}

int main(int argc, char **argv) {
        static uint8_t stream[SPE_MAX_CPUS][SPE_MAX_RECORDS / 4 * SPE_REC_MAX];
        size_t len[SPE_MAX_CPUS] = {}, n_cpus = 1;
        uint32_t tids[SPE_MAX_CPUS * 4];
        size_t n_tids = 0;
        struct pdw_config pc;
        struct pdw *w = NULL;
        struct { uint64_t start, len, pgoff; bool exec; } maps[8];
        size_t n_maps = 0;
        uint32_t pid;
        int fd, r;

        if (argc < 5) {
                fprintf(stderr, "usage: srcline-spe OUT FILE PID COMM ARG...\n");
                return 2;
        }
        pid = (uint32_t) strtoul(argv[3], NULL, 0);
        for (int i = 5; i < argc; i++) {
                if (strncmp(argv[i], "map:", 4) == 0) {
                        char prot[3];

                        if (n_maps == ELEMENTSOF(maps) ||
                            sscanf(argv[i] + 4, "%" SCNx64 ":%" SCNx64 ":%" SCNx64 ":%2s", &maps[n_maps].start,
                                   &maps[n_maps].len, &maps[n_maps].pgoff, prot) != 4) {
                                fprintf(stderr, "srcline-spe: bad %s\n", argv[i]);
                                return 2;
                        }
                        maps[n_maps++].exec = streq(prot, "rx");
                        continue;
                }
                unsigned cpu;
                uint32_t tid;
                uint64_t ip, va;
                char op[3];

                if (sscanf(argv[i], "%u:%" SCNu32 ":%" SCNx64 ":%" SCNx64 ":%2s", &cpu, &tid, &ip, &va, op) != 5 ||
                    cpu >= SPE_MAX_CPUS || len[cpu] + SPE_REC_MAX > sizeof(stream[cpu])) {
                        fprintf(stderr, "srcline-spe: bad record %s\n", argv[i]);
                        return 2;
                }
                len[cpu] += encode(stream[cpu] + len[cpu], tid, ip, va, streq(op, "st"));
                n_cpus = MAX(n_cpus, (size_t) cpu + 1);
                bool seen = false;
                for (size_t k = 0; k < n_tids; k++)
                        seen |= tids[k] == tid;
                if (!seen && n_tids < ELEMENTSOF(tids))
                        tids[n_tids++] = tid;
        }

        fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
                perror(argv[1]);
                return 1;
        }
        pdw_config_init(&pc);
        pc.n_cpus = (unsigned) n_cpus;
        pc.midr = spegen_midr(SPEGEN_MIDR_N1);
        pc.n_nodes = 1;
        r = pdw_new(fd, &pc, &w);
        if (r >= 0)
                r = pdw_comm(w, pid, pid, argv[4], SIDEBAND_TIME);
        for (size_t k = 0; r >= 0 && k < n_maps; k++)
                r = pdw_mmap2(w, pid, pid, maps[k].start, maps[k].len, maps[k].pgoff,
                              PROT_READ | (maps[k].exec ? PROT_EXEC : PROT_WRITE), MAP_PRIVATE, argv[2],
                              SIDEBAND_TIME);
        for (size_t k = 0; r >= 0 && k < n_tids; k++)
                if (tids[k] != pid)
                        r = pdw_fork(w, pid, pid, tids[k], pid, SIDEBAND_TIME);
        for (unsigned cpu = 0; r >= 0 && cpu < n_cpus; cpu++)
                r = pdw_itrace_start(w, cpu, pid, pid, SIDEBAND_TIME);
        for (unsigned cpu = 0; r >= 0 && cpu < n_cpus; cpu++) {
                /* AUXTRACE sizes are multiples of 8: the rest is padding (0x00 packets). */
                while (len[cpu] % 8)
                        stream[cpu][len[cpu]++] = SPE_ENC_HDR_PAD;
                if (len[cpu])
                        r = pdw_aux(w, cpu, stream[cpu], len[cpu], 0, SIDEBAND_TIME + 1);
        }
        if (r >= 0)
                r = pdw_finish(w);
        pdw_free(w);
        close(fd);
        if (r < 0) {
                fprintf(stderr, "srcline-spe: %s\n", strerror(-r));
                return 1;
        }
        return 0;
}
