/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: arbitrary bytes as a raw SPE buffer through
 * spe_replay_run() (--replay-raw): its reads, the decoder and the thread
 * attribution of context packets. The first byte picks the core (so each
 * data-source table is reached) and the CPU number; the sink reads every
 * record it is handed.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "spe-replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink_sum;

static void records(void *userdata, const struct spe_record *recs, const uint32_t *pids, const uint32_t *tids,
                    size_t n) {
        for (size_t i = 0; i < n; i++)
                sink_sum += recs[i].pc.addr + recs[i].va + recs[i].lat_total + pids[i] + tids[i];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* Neoverse N1, N2, V1 (common data sources), Ampere1A, and an unknown core. */
        static const uint64_t midrs[] = { 0x414fd0c1, 0x410fd490, 0x411fd401, 0xc00fac40, 0 };
        struct source_sink sink = { .records = records };
        struct spe_replay *r = NULL;
        int fd;

        if (size < 1)
                return 0;
        fd = memfd_create("fuzz-replay-raw", MFD_CLOEXEC);
        if (fd < 0)
                return 0;
        if (size > 1 && write(fd, data + 1, size - 1) != (ssize_t) (size - 1)) {
                close(fd);
                return 0;
        }
        (void) lseek(fd, 0, SEEK_SET);
        (void) spe_replay_run(&(struct spe_replay_input) {
                                      .fd = fd,
                                      .cancel_fd = -1,
                                      .name = "fuzz",
                                      .raw = true,
                                      .raw_cpu = data[0] >> 3,
                                      .raw_midr = midrs[(data[0] & 7) % (sizeof(midrs) / sizeof(midrs[0]))],
                              },
                              &sink, NULL, &r);
        for (size_t i = 0; i < spe_replay_n_cpus(r); i++) {
                struct spe_stream_stats st;

                spe_replay_stream_stats(r, i, &st);
                sink_sum += st.records;
        }
        spe_replay_free(r);
        close(fd);
        return 0;
}
