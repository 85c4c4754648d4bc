/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: arbitrary bytes through the memory-backed perf.data
 * reader, once with the default read size and once with a tiny one, with a
 * consumer that reads every byte and string it is handed (so ASan sees any
 * pointer that strays outside the input or the read buffer).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "perf-data.h"
#include "spe-info.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

static void touch(const void *p, size_t n) {
        const uint8_t *b = p;
        uint64_t h = 0;

        for (size_t i = 0; i < n; i++)
                h = h * 31 + b[i];
        sink += h;
}

static int on_record(void *u, const struct perf_data_record *rec) {
        touch(rec->raw, rec->size);
        return 0;
}

static int on_attr(void *u, const struct perf_data_attr *a) {
        touch(a->ids, a->nr_ids * sizeof(uint64_t));
        return 0;
}

static int on_feature(void *u, unsigned feat, const uint8_t *data, size_t len) {
        touch(data, len);
        return 0;
}

static int on_auxtrace_info(void *u, const struct perf_data_auxtrace_info *info) {
        touch(info->priv, info->priv_len);
        if (info->decoded) {
                const struct spe_info *si = info->decoded;

                touch(si->cpus, si->n_cpus * sizeof(*si->cpus));
        }
        return 0;
}

static int on_auxtrace(void *u, const struct perf_data_auxtrace *at, uint64_t chunk_offset,
                       const uint8_t *data, size_t len, bool last) {
        touch(data, len);
        return 0;
}

static int on_comm(void *u, const struct perf_data_comm *c) {
        touch(c->comm, strlen(c->comm));
        return 0;
}

static int on_mmap(void *u, const struct perf_data_mmap *m) {
        touch(m->filename, strlen(m->filename));
        return 0;
}

static int on_build_id(void *u, const struct perf_data_build_id *b) {
        touch(b->filename, strlen(b->filename));
        touch(b->build_id, b->build_id_size);
        return 0;
}

static int on_sample(void *u, const struct perf_data_sample *s) {
        touch(s->callchain, s->nr_callchain * 8);
        touch(s->rest, s->rest_len);
        return 0;
}

static const struct perf_data_ops ops = {
        .on_record = on_record,
        .on_attr = on_attr,
        .on_feature = on_feature,
        .on_auxtrace_info = on_auxtrace_info,
        .on_auxtrace = on_auxtrace,
        .on_comm = on_comm,
        .on_mmap = on_mmap,
        .on_build_id = on_build_id,
        .on_sample = on_sample,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        for (int pass = 0; pass < 2; pass++) {
                struct perf_data_reader *r;
                uint32_t cpu_avail;
                uint64_t midr;

                if (perf_data_reader_new_memory(data, size, &r) < 0)
                        return 0;
                if (pass == 1)
                        perf_data_reader_set_read_size(r, 1 + size % 23);
                struct spe_info_decoder spe_info;

                (void) spe_info_attach(r, &spe_info);
                (void) perf_data_reader_run(r, &ops, NULL);
                touch(perf_data_reader_error(r), strlen(perf_data_reader_error(r)));
                (void) perf_data_reader_nr_cpus(r, &cpu_avail, NULL);
                (void) perf_data_reader_midr(r, 0, &midr);
                perf_data_reader_free(r);
                spe_info_decoder_done(&spe_info);
        }
        return 0;
}
