/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "spe-pmu.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "parse-util.h"
#include "pmu-sysfs.h"
#include "strbuf.h"

#define EVENT_SOURCES "bus/event_source/devices"
#define SPE_PATH_MAX 4096
#define SPE_VALUE_MAX 256
/*
 * format/ word names: config, config1 .. config9. Only config..config3 are in
 * the attr ABI today (include/uapi/linux/perf_event.h); a later word (a
 * proposed arm_spe data_src_filter uses config4) must not make discovery of
 * the whole PMU fail, so it parses and only setting it is refused.
 */
#define SPE_CONFIG_WORD_MAX 9U
#define SPE_CONFIG_WORDS_KNOWN 4U

_printf_(4, 5) static int failf(char *err, size_t len, int r, const char *fmt, ...) {
        va_list ap;

        if (err && len) {
                va_start(ap, fmt);
                vsnprintf(err, len, fmt, ap);
                va_end(ap);
        }
        return r;
}

/* "config:0", "config1:0-63", "config:0-3,8": the word, then bit ranges (perf's pmu format grammar). */
int spe_pmu_parse_format(const char *value, unsigned *ret_word, uint64_t *ret_mask) {
        const char *colon = strchr(value, ':'), *p;
        uint64_t mask = 0;
        unsigned word;

        if (!colon)
                return -EINVAL;
        if (colon - value == 6 && strncmp(value, "config", 6) == 0)
                word = 0;
        else if (colon - value == 7 && strncmp(value, "config", 6) == 0 && value[6] >= '1' &&
                 value[6] <= (char) ('0' + SPE_CONFIG_WORD_MAX))
                word = (unsigned) (value[6] - '0');
        else
                return -EINVAL;

        for (p = colon + 1;;) {
                char *end;
                unsigned long lo, hi;

                if (*p < '0' || *p > '9')
                        return -EINVAL;
                lo = strtoul(p, &end, 10);
                hi = lo;
                if (*end == '-') {
                        if (end[1] < '0' || end[1] > '9')
                                return -EINVAL;
                        hi = strtoul(end + 1, &end, 10);
                }
                if (lo > hi || hi > 63)
                        return -EINVAL;
                mask |= (UINT64_MAX >> (63 - (hi - lo))) << lo;
                if (*end == '\0')
                        break;
                if (*end != ',')
                        return -EINVAL;
                p = end + 1;
        }
        *ret_word = word;
        *ret_mask = mask;
        return 0;
}

static int read_u32(const char *dir, const char *name, uint32_t *ret) {
        char path[SPE_PATH_MAX], value[SPE_VALUE_MAX];
        int r;

        if (pmu_sysfs_join(path, sizeof(path), dir, name, NULL) < 0)
                return -ENAMETOOLONG;
        r = pmu_sysfs_read_string(path, value, sizeof(value));
        if (r < 0)
                return r;
        return safe_atou32(value, ret);
}

static int read_pmu(const char *dir, const char *name, struct spe_pmu *p, char *err, size_t err_len) {
        struct pmu_sysfs_attr *attrs = NULL;
        char path[SPE_PATH_MAX];
        size_t n = 0;
        uint32_t v;
        int r;

        *p = (struct spe_pmu) { .min_interval = SPE_PMU_DEFAULT_INTERVAL };
        if (strlen(name) >= sizeof(p->name))
                return failf(err, err_len, -ENAMETOOLONG, "%s: name too long", name);
        strcpy(p->name, name);
        r = read_u32(dir, "type", &p->type);
        if (r < 0)
                return failf(err, err_len, r, "%s/type: %s", dir, strerror(-r));
        r = pmu_sysfs_join(path, sizeof(path), dir, "cpumask", NULL);
        if (r == 0)
                r = pmu_sysfs_read_cpulist(path, &p->cpus);
        if (r < 0)
                return failf(err, err_len, r, "%s: %s", path, strerror(-r));

        r = pmu_sysfs_join(path, sizeof(path), dir, "format", NULL);
        if (r == 0)
                r = pmu_sysfs_read_attr_dir(path, &attrs, &n);
        if (r < 0)
                return failf(err, err_len, r, "%s: %s", path, strerror(-r));
        for (size_t i = 0; i < n; i++) {
                struct spe_pmu_format *f = &p->format[p->n_format];

                if (p->n_format == SPE_PMU_MAX_FORMAT || strlen(attrs[i].name) >= sizeof(f->name)) {
                        r = failf(err, err_len, -E2BIG, "%s/%s: more format fields than %d, or a name too long",
                                  path, attrs[i].name, SPE_PMU_MAX_FORMAT);
                        break;
                }
                r = spe_pmu_parse_format(attrs[i].value, &f->word, &f->mask);
                if (r < 0) {
                        r = failf(err, err_len, r, "%s/%s: \"%s\" is not a perf format (config[N]:BITS)", path,
                                  attrs[i].name, attrs[i].value);
                        break;
                }
                strcpy(f->name, attrs[i].name);
                p->n_format++;
        }
        pmu_sysfs_attrs_free(attrs, n);
        if (r < 0)
                return r;

        /* caps/ are optional (older kernels); what is there must parse. */
        if (pmu_sysfs_join(path, sizeof(path), dir, "caps", NULL) < 0)
                return failf(err, err_len, -ENAMETOOLONG, "%s/caps: path too long", dir);
        if (read_u32(path, "min_interval", &v) == 0 && v > 0)
                p->min_interval = v;
        if (read_u32(path, "count_size", &v) == 0)
                p->count_size = v;
        if (read_u32(path, "arch_inst", &v) == 0)
                p->arch_inst = v != 0;
        if (read_u32(path, "ernd", &v) == 0)
                p->ernd = v != 0;
        return 0;
}

static int cmp_pmu(const void *a, const void *b) {
        return strcmp(((const struct spe_pmu *) a)->name, ((const struct spe_pmu *) b)->name);
}

int spe_pmu_discover(const char *root, struct spe_pmu **ret, size_t *ret_n, char *err, size_t err_len) {
        char dir[SPE_PATH_MAX];
        struct spe_pmu *list = NULL;
        struct dirent *e;
        size_t n = 0;
        DIR *d;
        int r = 0;

        if (pmu_sysfs_join(dir, sizeof(dir), root ? root : "/sys", EVENT_SOURCES, NULL) < 0)
                return failf(err, err_len, -ENAMETOOLONG, "sysfs root too long");
        d = opendir(dir);
        if (!d) {
                if (errno != ENOENT)
                        return failf(err, err_len, -errno, "%s: %s", dir, strerror(errno));
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        while ((e = readdir(d))) {
                char sub[SPE_PATH_MAX];

                if (strncmp(e->d_name, SPE_PMU_PREFIX, strlen(SPE_PMU_PREFIX)) != 0)
                        continue;
                if (pmu_sysfs_join(sub, sizeof(sub), dir, e->d_name, NULL) < 0) {
                        r = failf(err, err_len, -ENAMETOOLONG, "%s/%s: path too long", dir, e->d_name);
                        break;
                }
                list = xrealloc(list, (n + 1) * sizeof(*list));
                r = read_pmu(sub, e->d_name, &list[n], err, err_len);
                if (r < 0)
                        break;
                n++;
        }
        closedir(d);
        if (r < 0) {
                free(list);
                return r;
        }
        if (n > 1)
                qsort(list, n, sizeof(*list), cmp_pmu);
        *ret = list;
        *ret_n = n;
        return 0;
}

const struct spe_pmu *spe_pmu_for_cpu(const struct spe_pmu *pmus, size_t n, unsigned cpu) {
        for (size_t i = 0; i < n; i++)
                if (cpulist_has(&pmus[i].cpus, cpu))
                        return &pmus[i];
        return NULL;
}

static const struct spe_pmu_format *format_of(const struct spe_pmu *p, const char *name) {
        for (size_t i = 0; i < p->n_format; i++)
                if (streq(p->format[i].name, name))
                        return &p->format[i];
        return NULL;
}

/* Where config3 is in the attr of headers that name it; ours may not (spe-pmu.h). */
#ifdef PERF_ATTR_SIZE_VER8
_Static_assert(offsetof(struct perf_event_attr, config3) == SPE_PMU_CONFIG3_OFFSET, "config3 at 128");
#endif
_Static_assert(offsetof(struct perf_event_attr, config2) + sizeof(__u64) <= SPE_PMU_CONFIG3_OFFSET,
               "config3 past config2");

uint64_t spe_pmu_attr_config3(const struct spe_pmu_event_attr *a) {
        uint64_t v;

        memcpy(&v, a->raw + SPE_PMU_CONFIG3_OFFSET, sizeof(v));
        return v;
}

int spe_pmu_set(const struct spe_pmu *p, struct spe_pmu_event_attr *a, const char *name, uint64_t value) {
        const struct spe_pmu_format *f = format_of(p, name);
        uint64_t bits = 0, word;
        unsigned k = 0;

        if (!f)
                return -ENOENT;
        /* Scatter value's bits into the field's bits, low to high (perf's pmu_format_value()). */
        for (unsigned b = 0; b < 64; b++) {
                if (!(f->mask & (UINT64_C(1) << b)))
                        continue;
                if (k < 64 && (value >> k) & 1)
                        bits |= UINT64_C(1) << b;
                k++;
        }
        if (k < 64 && (value >> k) != 0)
                return -ERANGE;
        if (f->word >= SPE_CONFIG_WORDS_KNOWN)
                return -EOPNOTSUPP;
        switch (f->word) {
        case 0:
                a->attr.config = (a->attr.config & ~f->mask) | bits;
                break;
        case 1:
                a->attr.config1 = (a->attr.config1 & ~f->mask) | bits;
                break;
        case 2:
                a->attr.config2 = (a->attr.config2 & ~f->mask) | bits;
                break;
        default:
                /* config3 by its offset; the kernel reads it only if attr.size covers it. */
                word = (spe_pmu_attr_config3(a) & ~f->mask) | bits;
                memcpy(a->raw + SPE_PMU_CONFIG3_OFFSET, &word, sizeof(word));
                if (word != 0 && a->attr.size < SPE_PMU_ATTR_SIZE_VER8)
                        a->attr.size = SPE_PMU_ATTR_SIZE_VER8;
                break;
        }
        return 0;
}

uint64_t spe_pmu_interval(const struct spe_pmu *p, uint64_t want) {
        uint64_t interval = want ? want : p->min_interval;

        /* The driver's rule (arm_spe_event_to_pmsirr): at least min_interval, low byte dropped. */
        interval = MAX(interval, (uint64_t) p->min_interval);
        return MIN(interval, (uint64_t) SPE_PMU_INTERVAL_MAX) & ~(uint64_t) (SPE_PMU_INTERVAL_GRAIN - 1);
}

int spe_pmu_attr(const struct spe_pmu *p, const struct spe_pmu_options *o, struct spe_pmu_event_attr *ret,
                 uint64_t *ret_interval, char *err, size_t err_len) {
        struct spe_pmu_event_attr a = { .attr = {
                .type = p->type,
                .size = sizeof(struct perf_event_attr),
                /* Enabled with PERF_EVENT_IOC_ENABLE once the AUX area is mapped: the
                 * driver starts profiling into it (drivers/perf/arm_spe_pmu.c,
                 * arm_spe_pmu_start() -> arm_spe_perf_aux_output_begin()). */
                .disabled = 1,
                .sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU,
                .sample_id_all = 1,
                .exclude_kernel = o->exclude_kernel,
                .exclude_user = o->exclude_user,
        } };
        const struct {
                const char *field;
                uint64_t value;
                bool needed;            /* only a field the options use must exist */
        } sets[] = {
                { "ts_enable", 1, true },
                { "pa_enable", o->physical_addresses, o->physical_addresses },
                { "pct_enable", o->physical_timestamps, o->physical_timestamps },
                { "jitter", o->jitter, o->jitter },
                { "load_filter", o->loads, o->loads },
                { "store_filter", o->stores, o->stores },
                { "branch_filter", o->branches, o->branches },
                { "min_latency", o->min_latency, o->min_latency > 0 },
                { "event_filter", o->event_filter, o->event_filter != 0 },
                { "inv_event_filter", o->inv_event_filter, o->inv_event_filter != 0 },
        };
        uint64_t interval = spe_pmu_interval(p, o->interval);
        int r;

        a.attr.sample_period = interval;

        if (p->count_size && o->min_latency >= (UINT64_C(1) << p->count_size))
                return failf(err, err_len, -ERANGE, "%s: min_latency %u does not fit its %u-bit counters", p->name,
                             o->min_latency, p->count_size);
        for (size_t i = 0; i < ELEMENTSOF(sets); i++) {
                r = spe_pmu_set(p, &a, sets[i].field, sets[i].value);
                if (r == -ENOENT && !sets[i].needed)
                        continue;
                if (r < 0)
                        return failf(err, err_len, r, "%s: format/%s: %s", p->name, sets[i].field,
                                     r == -ENOENT ? "missing (an older kernel or another SPE version)" :
                                     r == -EOPNOTSUPP ? "in a config word past config3, unknown to this build" :
                                                        "value does not fit its bits");
        }
        *ret = a;
        if (ret_interval)
                *ret_interval = interval;
        return 0;
}
