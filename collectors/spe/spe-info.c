/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "spe-info.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "strbuf.h"

_printf_(4, 5)
static int fail(char *err, size_t err_len, int k, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
        return k;
}

int spe_info_parse(const struct perf_data_auxtrace_info *info, struct spe_info *ret, char *err, size_t err_len) {
        const uint8_t *p = info->priv;
        size_t nr = info->priv_len / 8, hdr, nr_cpus, at;
        struct spe_info_cpu *cpus;
        struct spe_info res = {};

        if (info->priv_len == SPE_INFO_V1_PRIV_U64 * 8) {
                res.version = 1;
                res.pmu_type = perf_rd64(p + SPE_INFO_V1_PMU_TYPE * 8);
                *ret = res;
                return 0;
        }
        if (nr < SPE_INFO_HDR_MIN_U64)
                return fail(err, err_len, -EBADMSG, "Arm SPE AUXTRACE_INFO at offset 0x%" PRIx64
                            " has %zu private u64s: neither version 1 (2) nor a version 2 header (>= %u)",
                            info->rec.file_offset, nr, SPE_INFO_HDR_MIN_U64);
        hdr = perf_rd64(p + SPE_INFO_HDR_SIZE * 8) > nr ? SIZE_MAX : (size_t) perf_rd64(p + SPE_INFO_HDR_SIZE * 8);
        if (hdr < SPE_INFO_HDR_MIN_U64 || hdr > nr)
                return fail(err, err_len, -EBADMSG, "Arm SPE AUXTRACE_INFO at offset 0x%" PRIx64
                            ": header size %" PRIu64 " u64s outside [%u, %zu]", info->rec.file_offset,
                            perf_rd64(p + SPE_INFO_HDR_SIZE * 8), SPE_INFO_HDR_MIN_U64, nr);
        res.version = (unsigned) MIN(perf_rd64(p + SPE_INFO_HDR_VERSION * 8), (uint64_t) UINT32_MAX);
        res.pmu_type = perf_rd64(p + SPE_INFO_HDR_PMU_TYPE * 8);
        /* Each CPU block takes at least 3 u64s, which bounds the allocation by the record size. */
        if (perf_rd64(p + SPE_INFO_HDR_NR_CPUS * 8) > (nr - hdr) / SPE_INFO_CPU_FIXED_U64)
                return fail(err, err_len, -EBADMSG, "Arm SPE AUXTRACE_INFO at offset 0x%" PRIx64
                            " claims %" PRIu64 " CPUs, room for at most %zu", info->rec.file_offset,
                            perf_rd64(p + SPE_INFO_HDR_NR_CPUS * 8), (nr - hdr) / SPE_INFO_CPU_FIXED_U64);
        nr_cpus = (size_t) perf_rd64(p + SPE_INFO_HDR_NR_CPUS * 8);

        cpus = xcalloc(MAX(nr_cpus, (size_t) 1), sizeof(*cpus));
        at = hdr;
        for (size_t c = 0; c < nr_cpus; c++) {
                const uint8_t *q = p + at * 8;
                uint64_t nparams;

                if (at + SPE_INFO_CPU_FIXED_U64 > nr ||
                    perf_rd64(q + SPE_INFO_CPU_MAGIC * 8) != SPE_INFO_CPU_MAGIC_VALUE) {
                        free(cpus);
                        return fail(err, err_len, -EBADMSG, "Arm SPE AUXTRACE_INFO at offset 0x%" PRIx64
                                    ": CPU block %zu at offset 0x%" PRIx64 " lacks the per-CPU magic",
                                    info->rec.file_offset, c,
                                    (uint64_t) (info->priv - info->rec.raw) + info->rec.file_offset + at * 8);
                }
                nparams = perf_rd64(q + SPE_INFO_CPU_NR_PARAMS * 8);
                if (nparams > nr - at - SPE_INFO_CPU_FIXED_U64) {
                        free(cpus);
                        return fail(err, err_len, -EBADMSG, "Arm SPE AUXTRACE_INFO at offset 0x%" PRIx64
                                    ": CPU block %zu claims %" PRIu64 " parameters past the record end",
                                    info->rec.file_offset, c, nparams);
                }
                q += SPE_INFO_CPU_FIXED_U64 * 8;
                cpus[c] = (struct spe_info_cpu) {
                        .cpu = (uint32_t) perf_rd64(p + (at + SPE_INFO_CPU_NUM) * 8),
                        .nr_params = (unsigned) nparams,
                        .pmu_type = res.pmu_type,
                };
                if (nparams > SPE_INFO_PARAM_MIDR)
                        cpus[c].midr = perf_rd64(q + SPE_INFO_PARAM_MIDR * 8);
                if (nparams > SPE_INFO_PARAM_PMU_TYPE)
                        cpus[c].pmu_type = perf_rd64(q + SPE_INFO_PARAM_PMU_TYPE * 8);
                if (nparams > SPE_INFO_PARAM_MIN_IVAL)
                        cpus[c].min_interval = perf_rd64(q + SPE_INFO_PARAM_MIN_IVAL * 8);
                if (nparams > SPE_INFO_PARAM_EVENT_FILTER)
                        cpus[c].event_filter = perf_rd64(q + SPE_INFO_PARAM_EVENT_FILTER * 8);
                at += SPE_INFO_CPU_FIXED_U64 + (size_t) nparams;
        }
        res.cpus = cpus;
        res.n_cpus = nr_cpus;
        *ret = res;
        return 0;
}

void spe_info_done(struct spe_info *i) {
        free(i->cpus);
        *i = (struct spe_info) {};
}

int spe_info_midr(const struct spe_info_cpu *cpus, size_t n_cpus, uint32_t cpu, uint64_t *ret_midr) {
        for (size_t i = 0; i < n_cpus; i++)
                if (cpus[i].cpu == cpu && cpus[i].nr_params > SPE_INFO_PARAM_MIDR) {
                        *ret_midr = cpus[i].midr;
                        return 0;
                }
        return -ENOENT;
}

static int decode(void *state, struct perf_data_auxtrace_info *info, char *err, size_t err_len) {
        struct spe_info_decoder *d = state;
        struct spe_info i;
        int k;

        k = spe_info_parse(info, &i, err, err_len);
        if (k < 0)
                return k;
        /* The MIDRs of the last record that had per-CPU metadata: version 1 adds none. */
        if (i.version >= 2) {
                free(d->cpus);
                d->cpus = NULL;
                d->n_cpus = 0;
                if (i.n_cpus > 0) {
                        d->cpus = xmalloc(i.n_cpus * sizeof(*d->cpus));
                        memcpy(d->cpus, i.cpus, i.n_cpus * sizeof(*d->cpus));
                        d->n_cpus = i.n_cpus;
                }
        }
        spe_info_done(&d->last);
        d->last = i;
        info->decoded = &d->last;
        return 0;
}

static int midr(void *state, uint32_t cpu, uint64_t *ret_midr) {
        struct spe_info_decoder *d = state;

        return spe_info_midr(d->cpus, d->n_cpus, cpu, ret_midr);
}

int spe_info_attach(struct perf_data_reader *reader, struct spe_info_decoder *d) {
        *d = (struct spe_info_decoder) {
                .decoder = { .type = PERF_AUXTRACE_ARM_SPE, .decode = decode, .midr = midr, .state = d },
        };
        return perf_data_reader_add_auxtrace_decoder(reader, &d->decoder);
}

void spe_info_decoder_done(struct spe_info_decoder *d) {
        spe_info_done(&d->last);
        free(d->cpus);
        d->cpus = NULL;
        d->n_cpus = 0;
}
