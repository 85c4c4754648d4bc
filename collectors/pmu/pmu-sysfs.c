/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pmu-sysfs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "macro.h"
#include "parse-util.h"
#include "pmu-event.h"
#include "strbuf.h"

#define SYSFS_PATH_MAX 4096U
/* sysfs attributes are at most a page; ours are a few bytes. */
#define SYSFS_VALUE_MAX 4096U
/* Bounds on what we accept from one directory, so a broken or hostile
 * tree cannot make discovery allocate without limit. */
#define SYSFS_DIR_MAX_ENTRIES 4096U

#define EVENT_SOURCE_DIR "bus/event_source/devices"
#define CPU_ONLINE_FILE "devices/system/cpu/online"
/* The x86 core PMU (arch/x86/events/core.c registers it as "cpu"). */
#define X86_CORE_PMU_NAME "cpu"

static const char *const kind_names[_PMU_KIND_MAX] = {
        [PMU_KIND_ARM_PMUV3] = "arm-pmuv3",
        [PMU_KIND_X86] = "x86",
        [PMU_KIND_OTHER] = "other",
};

const char *pmu_kind_to_string(enum pmu_kind k) {
        if (k < 0 || k >= _PMU_KIND_MAX)
                return NULL;
        return kind_names[k];
}

int pmu_sysfs_read_string(const char *path, char *buf, size_t len) {
        _cleanup_close_ int fd = -1;
        size_t off = 0;

        if (len == 0)
                return -ENOBUFS;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (;;) {
                ssize_t n;

                if (off == len - 1)
                        return -EFBIG;
                n = read(fd, buf + off, len - 1 - off);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                off += (size_t) n;
        }
        buf[off] = '\0';
        if (strlen(buf) != off)
                return -EINVAL;
        while (off > 0 && isspace((unsigned char) buf[off - 1]))
                buf[--off] = '\0';
        return 0;
}

const char *pmu_perf_permission_hint(const char *procfs_root, char *buf, size_t len) {
        char path[PATH_MAX], value[DECIMAL_STR_MAX(int32_t) + 2];
        int32_t paranoid;

        if (snprintf(path, sizeof(path), "%s/sys/kernel/perf_event_paranoid", procfs_root) >= (int) sizeof(path) ||
            pmu_sysfs_read_string(path, value, sizeof(value)) < 0 || safe_atoi32(value, &paranoid) < 0) {
                snprintf(buf, len, "CPU-wide events need CAP_PERFMON (Linux >= 5.8; CAP_SYS_ADMIN before)");
                return buf;
        }
        if (paranoid > 2)
                /* Mainline stops at 2. Debian's and Ubuntu's kernels add 3
                 * and 4 (CONFIG_SECURITY_PERF_EVENTS_RESTRICT), checked in
                 * perf_event_open() as capable(CAP_SYS_ADMIN) before anything
                 * else: CAP_PERFMON does not pass it. */
                snprintf(buf, len,
                         "kernel.perf_event_paranoid is %" PRIi32 " (Debian, Ubuntu): CAP_SYS_ADMIN only, "
                         "CAP_PERFMON is not enough; set it to 2",
                         paranoid);
        else
                snprintf(buf, len, "kernel.perf_event_paranoid is %" PRIi32 ": CPU-wide events need CAP_PERFMON "
                                   "(or CAP_SYS_ADMIN) or a value <= 0",
                         paranoid);
        return buf;
}

int pmu_sysfs_join(char *buf, size_t len, const char *a, const char *b, const char *c) {
        int n = snprintf(buf, len, "%s/%s%s%s", a, b, c ? "/" : "", c ? c : "");

        if (n < 0 || (size_t) n >= len)
                return -ENAMETOOLONG;
        return 0;
}

int pmu_sysfs_read_cpulist(const char *path, struct cpulist *ret) {
        _cleanup_free_ char *buf = xmalloc(CPULIST_TEXT_MAX);
        int r;

        r = pmu_sysfs_read_string(path, buf, CPULIST_TEXT_MAX);
        if (r < 0)
                return r;
        return cpulist_parse(buf, ret);
}

int pmu_sysfs_read_online(const char *root, struct cpulist *ret) {
        char path[SYSFS_PATH_MAX];
        int r;

        r = pmu_sysfs_join(path, sizeof(path), root ? root : PMU_SYSFS_DEFAULT_ROOT, CPU_ONLINE_FILE, NULL);
        if (r < 0)
                return r;
        return pmu_sysfs_read_cpulist(path, ret);
}

void pmu_sysfs_attrs_free(struct pmu_sysfs_attr *a, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(a[i].name);
                free(a[i].value);
        }
        free(a);
}

static int cmp_attr(const void *a, const void *b) {
        return strcmp(((const struct pmu_sysfs_attr *) a)->name, ((const struct pmu_sysfs_attr *) b)->name);
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Read every regular file of dir as (name, value). A missing dir gives an
 * empty list. Unreadable files (sysfs write-only attributes) are skipped. */
int pmu_sysfs_read_attr_dir(const char *dir, struct pmu_sysfs_attr **ret, size_t *ret_n) {
        struct pmu_sysfs_attr *list = NULL;
        size_t n = 0;
        DIR *d;
        struct dirent *e;
        int r = 0;

        d = opendir(dir);
        if (!d) {
                if (errno == ENOENT || errno == ENOTDIR) {
                        *ret = NULL;
                        *ret_n = 0;
                        return 0;
                }
                return -errno;
        }
        while ((e = readdir(d))) {
                char path[SYSFS_PATH_MAX], value[SYSFS_VALUE_MAX];

                if (e->d_name[0] == '.')
                        continue;
                if (n >= SYSFS_DIR_MAX_ENTRIES) {
                        r = -E2BIG;
                        goto fail;
                }
                r = pmu_sysfs_join(path, sizeof(path), dir, e->d_name, NULL);
                if (r < 0)
                        goto fail;
                if (pmu_sysfs_read_string(path, value, sizeof(value)) < 0)
                        continue;
                list = xrealloc(list, (n + 1) * sizeof(*list));
                list[n].name = xstrdup(e->d_name);
                list[n].value = xstrdup(value);
                n++;
        }
        closedir(d);
        if (n > 0)
                qsort(list, n, sizeof(*list), cmp_attr);
        *ret = list;
        *ret_n = n;
        return 0;
fail:
        closedir(d);
        pmu_sysfs_attrs_free(list, n);
        return r;
}

const char *pmu_desc_attr(const struct pmu_sysfs_attr *attrs, size_t n, const char *name) {
        for (size_t i = 0; i < n; i++)
                if (streq(attrs[i].name, name))
                        return attrs[i].value;
        return NULL;
}

int pmu_sysfs_parse_hex(const char *s, uint64_t *ret) {
        static const char digits[] = "0123456789abcdef";
        static const char prefix[] = "0x";
        const unsigned nibble_bits = 4;
        uint64_t v = 0;

        if (strncasecmp(s, prefix, sizeof(prefix) - 1) != 0)
                return -EINVAL;
        s += sizeof(prefix) - 1;
        if (*s == '\0')
                return -EINVAL;
        for (; *s; s++) {
                const char *d = strchr(digits, tolower((unsigned char) *s));

                if (!d)
                        return -EINVAL;
                if (v > (UINT64_MAX >> nibble_bits))
                        return -ERANGE;
                v = (v << nibble_bits) | (uint64_t) (d - digits);
        }
        *ret = v;
        return 0;
}

int pmu_desc_event_config(const struct pmu_desc *p, const char *name, uint64_t *ret) {
        const char *v = pmu_desc_event(p, name);
        static const char prefix[] = "event=";

        if (!v)
                return -ENOENT;
        if (strncmp(v, prefix, sizeof(prefix) - 1) != 0)
                return -EOPNOTSUPP;
        v += sizeof(prefix) - 1;
        if (strchr(v, ','))
                return -EOPNOTSUPP;
        return pmu_sysfs_parse_hex(v, ret);
}

/* "config:0-7" or "config:63" into the bit range; other words (config1,
 * config2, split ranges "config:0-7,32-35") are not for us: -EOPNOTSUPP. */
static int parse_format_range(const char *f, unsigned *ret_lo, unsigned *ret_hi) {
        static const char prefix[] = "config:";
        unsigned lo, hi;
        int n = 0;

        if (strncmp(f, prefix, sizeof(prefix) - 1) != 0)
                return -EOPNOTSUPP;
        f += sizeof(prefix) - 1;
        if (sscanf(f, "%u-%u%n", &lo, &hi, &n) == 2 && f[n] == '\0')
                ;
        else if (sscanf(f, "%u%n", &lo, &n) == 1 && f[n] == '\0')
                hi = lo;
        else
                return -EOPNOTSUPP;
        if (lo > hi || hi > 63)
                return -EINVAL;
        *ret_lo = lo;
        *ret_hi = hi;
        return 0;
}

int pmu_desc_event_config_terms(const struct pmu_desc *p, const char *name, uint64_t *ret) {
        const char *v = pmu_desc_event(p, name);
        char buf[PMU_EVENT_STRING_MAX];
        char *save = NULL;
        uint64_t config = 0;
        int r;

        if (!v)
                return -ENOENT;
        if (strlen(v) >= sizeof(buf))
                return -E2BIG;
        snprintf(buf, sizeof(buf), "%s", v);
        for (char *term = strtok_r(buf, ",", &save); term; term = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(term, '=');
                const char *format;
                unsigned lo, hi;
                uint64_t value, mask;

                if (!eq)
                        return -EOPNOTSUPP;
                *eq = '\0';
                format = pmu_desc_attr(p->format, p->n_format, term);
                if (!format)
                        return -EOPNOTSUPP;
                r = parse_format_range(format, &lo, &hi);
                if (r < 0)
                        return r;
                /* "event=0x3c" and "any=1", "cmask=1": hex or decimal, as perf reads them */
                r = strncasecmp(eq + 1, "0x", 2) == 0 ? pmu_sysfs_parse_hex(eq + 1, &value) : safe_atou64(eq + 1, &value);
                if (r < 0)
                        return r;
                mask = hi - lo == 63 ? UINT64_MAX : ((UINT64_C(1) << (hi - lo + 1)) - 1);
                if (value & ~mask)
                        return -ERANGE;
                config |= value << lo;
        }
        *ret = config;
        return 0;
}

static bool name_has_prefix(const char *name, const char *prefix) {
        return strncmp(name, prefix, strlen(prefix)) == 0;
}

/* Arm core PMUs register as armv8_* / armv9_* (drivers/perf/arm_pmuv3.c:
 * armv8_pmuv3, armv8_cortex_a76, armv8_neoverse_n1, armv9_cortex_a710...);
 * with ACPI the generic one becomes armv8_pmuv3_<n>. A core PMU whose
 * events/cpu_cycles is the PMUv3 CPU_CYCLES encoding is one too. */
static enum pmu_kind classify(const struct pmu_desc *p) {
        uint64_t cfg;

        if (name_has_prefix(p->name, "armv8_") || name_has_prefix(p->name, "armv9_"))
                return PMU_KIND_ARM_PMUV3;
        if (pmu_desc_event_config(p, "cpu_cycles", &cfg) >= 0 && cfg == ARMV8_PMUV3_CPU_CYCLES)
                return PMU_KIND_ARM_PMUV3;
        /* x86: "cpu", or on hybrid parts "cpu_core" / "cpu_atom"
         * (arch/x86/events/intel/core.c). */
        if (streq(p->name, X86_CORE_PMU_NAME) || name_has_prefix(p->name, "cpu_"))
                return PMU_KIND_X86;
        return PMU_KIND_OTHER;
}

static void desc_done(struct pmu_desc *p) {
        free(p->name);
        pmu_sysfs_attrs_free(p->events, p->n_events);
        pmu_sysfs_attrs_free(p->format, p->n_format);
        pmu_sysfs_attrs_free(p->caps, p->n_caps);
        memset(p, 0, sizeof(*p));
}

/* Fill *p from dir if it is a core PMU. Returns 1 if it is, 0 if not. */
static int read_pmu(const char *dir, const char *name, struct pmu_desc *p) {
        char path[SYSFS_PATH_MAX], value[SYSFS_VALUE_MAX];
        struct pmu_desc d = {};
        int r;

        r = pmu_sysfs_join(path, sizeof(path), dir, name, "cpus");
        if (r < 0)
                return r;
        r = pmu_sysfs_read_cpulist(path, &d.cpus);
        if (r == -ENOENT) {
                /* No cpus file: not a core PMU, unless it is x86's "cpu". */
                if (!streq(name, X86_CORE_PMU_NAME))
                        return 0;
                d.all_cpus = true;
        } else if (r < 0)
                return r;

        r = pmu_sysfs_join(path, sizeof(path), dir, name, "type");
        if (r < 0)
                return r;
        r = pmu_sysfs_read_string(path, value, sizeof(value));
        if (r < 0)
                return r;
        r = safe_atou32(value, &d.type);
        if (r < 0)
                return r;

        d.name = xstrdup(name);

        r = pmu_sysfs_join(path, sizeof(path), dir, name, "events");
        if (r >= 0)
                r = pmu_sysfs_read_attr_dir(path, &d.events, &d.n_events);
        if (r >= 0)
                r = pmu_sysfs_join(path, sizeof(path), dir, name, "format");
        if (r >= 0)
                r = pmu_sysfs_read_attr_dir(path, &d.format, &d.n_format);
        if (r >= 0)
                r = pmu_sysfs_join(path, sizeof(path), dir, name, "caps");
        if (r >= 0)
                r = pmu_sysfs_read_attr_dir(path, &d.caps, &d.n_caps);
        if (r < 0) {
                desc_done(&d);
                return r;
        }

        d.kind = classify(&d);
        switch (d.kind) {
        case PMU_KIND_ARM_PMUV3:
                d.general_counters = PMU_ARM_DEFAULT_GENERAL_COUNTERS;
                d.cycle_counter = true; /* PMCCNTR_EL0, ARMV8_PMU_CYCLE_IDX */
                break;
        case PMU_KIND_X86:
                d.general_counters = PMU_X86_DEFAULT_GENERAL_COUNTERS;
                break;
        default:
                d.general_counters = PMU_OTHER_DEFAULT_GENERAL_COUNTERS;
                break;
        }
        *p = d;
        return 1;
}

struct pmu_sysfs *pmu_sysfs_free(struct pmu_sysfs *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_pmus; i++)
                desc_done(&s->pmus[i]);
        free(s->pmus);
        for (size_t i = 0; i < s->n_others; i++)
                free(s->others[i]);
        free(s->others);
        free(s->broken_pmu);
        free(s->root);
        free(s);
        return NULL;
}

static void pmu_sysfs_freep(struct pmu_sysfs **s) {
        pmu_sysfs_free(*s);
}

static int cmp_desc(const void *a, const void *b) {
        return strcmp(((const struct pmu_desc *) a)->name, ((const struct pmu_desc *) b)->name);
}

int pmu_sysfs_discover(const char *root, struct pmu_sysfs **ret) {
        _cleanup_(pmu_sysfs_freep) struct pmu_sysfs *s = NULL;
        char dir[SYSFS_PATH_MAX];
        DIR *d;
        struct dirent *e;
        size_t seen = 0;
        int r;

        if (!root)
                root = PMU_SYSFS_DEFAULT_ROOT;
        s = xcalloc(1, sizeof(*s));
        s->root = xstrdup(root);

        r = pmu_sysfs_read_online(root, &s->online);
        if (r < 0)
                return r;

        r = pmu_sysfs_join(dir, sizeof(dir), root, EVENT_SOURCE_DIR, NULL);
        if (r < 0)
                return r;
        d = opendir(dir);
        if (!d) {
                if (errno != ENOENT)
                        return -errno;
                *ret = TAKE_PTR(s);
                return 0;
        }
        while ((e = readdir(d))) {
                struct pmu_desc p;

                if (e->d_name[0] == '.')
                        continue;
                if (++seen > SYSFS_DIR_MAX_ENTRIES) {
                        r = -E2BIG;
                        break;
                }
                r = read_pmu(dir, e->d_name, &p);
                if (r < 0) {
                        if (!s->broken_pmu) {
                                s->broken_pmu = xstrdup(e->d_name);
                                s->broken_error = r;
                        }
                        r = 0;
                        continue;
                }
                if (r > 0) {
                        s->pmus = xrealloc(s->pmus, (s->n_pmus + 1) * sizeof(*s->pmus));
                        s->pmus[s->n_pmus++] = p;
                } else {
                        s->others = xrealloc(s->others, (s->n_others + 1) * sizeof(*s->others));
                        s->others[s->n_others++] = xstrdup(e->d_name);
                }
                r = 0;
        }
        closedir(d);
        if (r < 0)
                return r;
        if (s->n_pmus > 0)
                qsort(s->pmus, s->n_pmus, sizeof(*s->pmus), cmp_desc);
        if (s->n_others > 0)
                qsort(s->others, s->n_others, sizeof(*s->others), cmp_str);

        *ret = TAKE_PTR(s);
        return 0;
}

const struct pmu_desc *pmu_sysfs_pmu_for_cpu(const struct pmu_sysfs *s, unsigned cpu) {
        const struct pmu_desc *all = NULL;

        for (size_t i = 0; i < s->n_pmus; i++) {
                if (s->pmus[i].all_cpus) {
                        if (!all)
                                all = &s->pmus[i];
                } else if (cpulist_has(&s->pmus[i].cpus, cpu))
                        return &s->pmus[i];
        }
        return all;
}

const struct pmu_desc *pmu_sysfs_pmu_by_name(const struct pmu_sysfs *s, const char *name) {
        for (size_t i = 0; i < s->n_pmus; i++)
                if (streq(s->pmus[i].name, name))
                        return &s->pmus[i];
        return NULL;
}
