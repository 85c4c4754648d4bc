/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pmu-bandwidth.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"
#include "macro.h"
#include "parse-util.h"
#include "pmu-group.h"
#include "strbuf.h"

#define CMN_PREFIX "arm_cmn_"
#define IMC_PREFIX "uncore_imc"
/* Entries of event_source/devices looked at, as pmu-sysfs.c bounds them. */
#define DEVICES_MAX_ENTRIES 4096U

static void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}

static const char *const method_names[_PMU_BANDWIDTH_METHOD_MAX] = {
        [PMU_BANDWIDTH_CMN_HNF_MC] = "cmn-hnf-mc",
        [PMU_BANDWIDTH_IMC_CAS] = "imc-cas",
};

const char *pmu_bandwidth_method_to_string(enum pmu_bandwidth_method m) {
        if (m < 0 || m >= _PMU_BANDWIDTH_METHOD_MAX)
                return NULL;
        return method_names[m];
}

static int cmp_names(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* One PMU: its type, cpumask, and the two events of its method, through its
 * format/ (pmu_desc_event_config_terms()). Adds a source per cpumask CPU. */
static void plan_one(struct pmu_bandwidth_plan *p, const char *devices, const char *name,
                     enum pmu_bandwidth_method method) {
        /* drivers/perf/arm-cmn.c: CMN_EVENT_HNF(CMN_ANY, mc_retries, 0x0c),
         * CMN_EVENT_HNF(CMN_ANY, mc_reqs, 0x0d), printed as events/hnf_mc_reqs;
         * arch/x86/events/intel/uncore_snbep.c (and _discovery.c):
         * INTEL_UNCORE_EVENT_DESC(cas_count_read, ...), cas_count_write. */
        static const char *const events[_PMU_BANDWIDTH_METHOD_MAX][2] = {
                [PMU_BANDWIDTH_CMN_HNF_MC] = { "hnf_mc_reqs", "hnf_mc_retries" },
                [PMU_BANDWIDTH_IMC_CAS] = { "cas_count_read", "cas_count_write" },
        };
        struct pmu_desc d = { .name = (char *) name };
        struct pmu_bandwidth_source src = { .method = method, .n = 2 };
        char path[PATH_MAX], value[DECIMAL_STR_MAX(uint32_t) + 1], mask[CPULIST_TEXT_MAX];
        struct cpulist cpus;
        uint64_t type;
        int r;

        snprintf(src.name, sizeof(src.name), "%s", name);
        r = pmu_sysfs_join(path, sizeof(path), devices, name, "type");
        if (r >= 0)
                r = pmu_sysfs_read_string(path, value, sizeof(value));
        if (r >= 0)
                r = safe_atou64(value, &type) < 0 || type > UINT32_MAX ? -EINVAL : 0;
        if (r >= 0)
                r = pmu_sysfs_join(path, sizeof(path), devices, name, "cpumask");
        if (r >= 0)
                r = pmu_sysfs_read_string(path, mask, sizeof(mask));
        if (r >= 0)
                r = cpulist_parse(mask, &cpus);
        if (r < 0) {
                STR_APPENDF(p->note, "%s%s: unreadable type or cpumask (%s)", p->note[0] ? "; " : "", name,
                            strerror(-r));
                return;
        }
        src.type = (uint32_t) type;

        r = pmu_sysfs_join(path, sizeof(path), devices, name, "events");
        if (r >= 0)
                r = pmu_sysfs_read_attr_dir(path, &d.events, &d.n_events);
        if (r >= 0)
                r = pmu_sysfs_join(path, sizeof(path), devices, name, "format");
        if (r >= 0)
                r = pmu_sysfs_read_attr_dir(path, &d.format, &d.n_format);
        for (size_t i = 0; r >= 0 && i < 2; i++) {
                r = pmu_desc_event_config_terms(&d, events[method][i], &src.config[i]);
                if (r < 0)
                        STR_APPENDF(p->note, "%s%s: events/%s: %s", p->note[0] ? "; " : "", name, events[method][i],
                                    r == -ENOENT ? "not listed" : strerror(-r));
        }
        pmu_sysfs_attrs_free(d.events, d.n_events);
        pmu_sysfs_attrs_free(d.format, d.n_format);
        if (r < 0)
                return;

        CPULIST_FOREACH(cpu, &cpus) {
                if (p->n == PMU_BANDWIDTH_MAX_SOURCES) {
                        STR_APPENDF(p->note, "%s%s on cpu %d and later: more than %u memory PMU groups, not counted",
                                    p->note[0] ? "; " : "", name, cpu, PMU_BANDWIDTH_MAX_SOURCES);
                        return;
                }
                src.cpu = (unsigned) cpu;
                p->sources[p->n++] = src;
        }
}

int pmu_bandwidth_plan(const char *sysfs_root, struct pmu_bandwidth_plan *ret) {
        struct pmu_bandwidth_plan p = {};
        char devices[PATH_MAX];
        _cleanup_(closedirp) DIR *dir = NULL;
        char **names = NULL;
        size_t n_names = 0;
        struct dirent *e;
        int r;

        if (!ret)
                return -EINVAL;
        r = pmu_sysfs_join(devices, sizeof(devices), sysfs_root ? sysfs_root : PMU_SYSFS_DEFAULT_ROOT,
                           "bus/event_source", "devices");
        if (r < 0)
                return r;
        p.sources = xcalloc(PMU_BANDWIDTH_MAX_SOURCES, sizeof(*p.sources));
        dir = opendir(devices);
        while (dir && (e = readdir(dir)) && n_names < DEVICES_MAX_ENTRIES) {
                if (strncmp(e->d_name, CMN_PREFIX, strlen(CMN_PREFIX)) != 0 &&
                    strncmp(e->d_name, IMC_PREFIX, strlen(IMC_PREFIX)) != 0)
                        continue;
                names = xrealloc(names, (n_names + 1) * sizeof(*names));
                names[n_names++] = xstrdup(e->d_name);
        }
        if (n_names > 0)
                qsort(names, n_names, sizeof(*names), cmp_names);
        for (size_t i = 0; i < n_names; i++) {
                plan_one(&p, devices, names[i],
                         strncmp(names[i], CMN_PREFIX, strlen(CMN_PREFIX)) == 0 ? PMU_BANDWIDTH_CMN_HNF_MC
                                                                                 : PMU_BANDWIDTH_IMC_CAS);
                free(names[i]);
        }
        free(names);
        if (n_names == 0)
                STR_APPENDF(p.note, "no memory-side PMU in %s (arm_cmn_*, uncore_imc*: a mesh without the arm_cmn "
                                    "driver loaded, most virtual machines)",
                            devices);
        *ret = p;
        return 0;
}

void pmu_bandwidth_plan_done(struct pmu_bandwidth_plan *p) {
        free(p->sources);
        *p = (struct pmu_bandwidth_plan) {};
}

int pmu_bandwidth_bytes(const struct pmu_bandwidth_source *s, const uint64_t delta[static 2], uint64_t d_enabled,
                        uint64_t d_running, uint64_t *ret) {
        uint64_t requests, scaled;
        int r;

        switch (s->method) {
        case PMU_BANDWIDTH_CMN_HNF_MC:
                /* Requests the HN-Fs sent to the memory controllers less
                 * those the controllers retried: retries are a share of the
                 * requests (tools/perf/pmu-events/arch/arm64/arm/cmn/sys/
                 * metric.json, mc_message_retry_rate = hnf_mc_retries /
                 * hnf_mc_reqs), and a retried request is sent again and
                 * counted again. Each one that went through moves a line. */
                requests = delta[0] > delta[1] ? delta[0] - delta[1] : 0;
                break;
        case PMU_BANDWIDTH_IMC_CAS:
                requests = delta[0] + delta[1];
                break;
        default:
                return -EINVAL;
        }
        r = pmu_group_scale(requests, d_enabled, d_running, &scaled);
        if (r < 0)
                return r;
        *ret = scaled > UINT64_MAX / PMU_BANDWIDTH_REQUEST_BYTES ? UINT64_MAX : scaled * PMU_BANDWIDTH_REQUEST_BYTES;
        return 0;
}
