/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz the PMU library's parsers of kernel output: sysfs cpulists,
 * PERF_FORMAT_GROUP read buffers and perf format/ files (arm_spe). The
 * first byte picks the parser.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"
#include "pmu-group.h"
#include "spe-pmu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size == 0)
                return 0;
        if (data[0] % 3 == 2) {
                char *s = malloc(size);
                unsigned word;
                uint64_t mask;

                if (!s)
                        return 0;
                memcpy(s, data + 1, size - 1);
                s[size - 1] = '\0';
                /* A field is some bits of one of the config words config..config9, never none. */
                if (spe_pmu_parse_format(s, &word, &mask) == 0 && (word > 9 || mask == 0))
                        abort();
                free(s);
        } else if (data[0] & 1) {
                char *s = malloc(size);
                struct cpulist l;

                if (!s)
                        return 0;
                memcpy(s, data + 1, size - 1);
                s[size - 1] = '\0';
                if (cpulist_parse(s, &l) == 0) {
                        char buf[CPULIST_MAX_CPUS * 6];

                        /* Round trip: what we print we must parse back the same. */
                        if (cpulist_format(&l, buf, sizeof(buf)) == 0) {
                                struct cpulist again;

                                if (cpulist_parse(buf, &again) != 0 || !cpulist_equal(&l, &again))
                                        abort();
                        }
                }
                free(s);
        } else {
                struct pmu_group_reading r;
                uint64_t scaled;

                if (pmu_group_parse_read(data + 1, size - 1, &r) == 0) {
                        if (r.n > PMU_GROUP_MAX_EVENTS)
                                abort();
                        for (size_t i = 0; i < r.n; i++)
                                if (pmu_group_scale(r.value[i], r.enabled, r.running, &scaled) == 0 &&
                                    r.running >= r.enabled && scaled != r.value[i])
                                        abort();
                }
        }
        return 0;
}
