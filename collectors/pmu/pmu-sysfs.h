/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Discovery of the CPU (core) PMUs from sysfs, under a configurable root
 * ("/sys" in production, fixture trees in tests):
 *   <root>/devices/system/cpu/online              online CPUs
 *   <root>/bus/event_source/devices/<pmu>/type    perf_event_attr.type
 *   <root>/bus/event_source/devices/<pmu>/cpus    CPUs a core PMU covers
 *   .../<pmu>/events/ format/ caps/               names the PMU exports
 * A core PMU is recognised by its `cpus` file, not by its name: the name
 * depends on firmware (armv8_pmuv3 with DT, armv8_pmuv3_0 with ACPI) and on
 * the core (armv8_cortex_a76 on big.LITTLE); perf does the same
 * (is_arm_pmu_core() in tools/perf/util/pmu.c). The x86 `cpu` PMU has no
 * `cpus` file and covers every CPU.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpulist.h"

#define PMU_SYSFS_DEFAULT_ROOT "/sys"

/* How many general-purpose counters to plan for when the caller does not
 * say. PMUv3 has PMCR_EL0.N general counters (up to 31,
 * ARMV8_PMU_MAX_GENERAL_COUNTERS) plus a dedicated cycle counter, and
 * sysfs does not expose N; 6 is what Neoverse N1/V1/N2 and QEMU implement.
 * On x86 leave room for the NMI watchdog's counter. */
#define PMU_ARM_DEFAULT_GENERAL_COUNTERS 6U
#define PMU_X86_DEFAULT_GENERAL_COUNTERS 4U
#define PMU_OTHER_DEFAULT_GENERAL_COUNTERS 4U

enum pmu_kind {
        PMU_KIND_ARM_PMUV3, /* raw PMUv3 event numbers through its own type */
        PMU_KIND_X86,       /* x86 `cpu` (or hybrid cpu_core/cpu_atom): generic events */
        PMU_KIND_OTHER,     /* some other core PMU: generic events */
        _PMU_KIND_MAX,
};

struct pmu_sysfs_attr {
        char *name;
        char *value; /* file content, trailing whitespace removed */
};

struct pmu_desc {
        char *name;
        uint32_t type;
        enum pmu_kind kind;
        bool all_cpus;       /* no `cpus` file (x86 `cpu`): covers every CPU */
        struct cpulist cpus; /* valid when !all_cpus */
        struct pmu_sysfs_attr *events;
        size_t n_events;
        struct pmu_sysfs_attr *format;
        size_t n_format;
        struct pmu_sysfs_attr *caps;
        size_t n_caps;
        unsigned general_counters; /* conservative default, see above */
        bool cycle_counter;        /* a dedicated counter for CPU_CYCLES */
};

struct pmu_sysfs {
        char *root;
        struct cpulist online;
        struct pmu_desc *pmus; /* core PMUs only, sorted by name */
        size_t n_pmus;
        char **others; /* other event sources (software, tracepoint...), for /status */
        size_t n_others;
        /* A PMU directory that could not be parsed (kernel bug, odd
         * driver) is skipped, not fatal; the first one is kept for /status. */
        char *broken_pmu;
        int broken_error;
};

/* Discover online CPUs and core PMUs under root (NULL = "/sys"). A missing
 * event_source directory is not an error (no PMUs), nor is a malformed PMU
 * (skipped, see broken_pmu); a missing or malformed online file is. */
int pmu_sysfs_discover(const char *root, struct pmu_sysfs **ret);
struct pmu_sysfs *pmu_sysfs_free(struct pmu_sysfs *s);

/* The files of a directory (format/, caps/, events/) as name/value pairs sorted
 * by name; a missing directory gives none. Free with pmu_sysfs_attrs_free(). */
int pmu_sysfs_read_attr_dir(const char *dir, struct pmu_sysfs_attr **ret, size_t *ret_n);
void pmu_sysfs_attrs_free(struct pmu_sysfs_attr *a, size_t n);
/* <root>/devices/system/cpu/online */
int pmu_sysfs_read_online(const char *root, struct cpulist *ret);
/* Any sysfs cpulist file (online, a PMU's cpus). */
int pmu_sysfs_read_cpulist(const char *path, struct cpulist *ret);

/* The core PMU covering cpu, or NULL. A PMU with an explicit `cpus` file
 * wins over one that covers all CPUs. */
const struct pmu_desc *pmu_sysfs_pmu_for_cpu(const struct pmu_sysfs *s, unsigned cpu);
const struct pmu_desc *pmu_sysfs_pmu_by_name(const struct pmu_sysfs *s, const char *name);

const char *pmu_desc_attr(const struct pmu_sysfs_attr *attrs, size_t n, const char *name);
static inline const char *pmu_desc_event(const struct pmu_desc *p, const char *name) {
        return pmu_desc_attr(p->events, p->n_events, name);
}
/* Parse an events/ file of the simple form "event=0x0011" (optionally with
 * more ",term=value" terms, which are rejected: -EOPNOTSUPP). */
int pmu_desc_event_config(const struct pmu_desc *p, const char *name, uint64_t *ret);
/* An events/ file of several terms ("event=0x00,umask=0x80", as x86
 * writes them), each placed by the PMU's format/<term> ("config:8-15"):
 * the way perf builds perf_event_attr.config (tools/perf/util/pmu.c,
 * pmu_format_value()). Terms outside `config`, or without a format file,
 * are -EOPNOTSUPP; a value wider than its field is -ERANGE. */
#define PMU_EVENT_STRING_MAX 256U /* an events/ file: a few "term=0x.." */
int pmu_desc_event_config_terms(const struct pmu_desc *p, const char *name, uint64_t *ret);
/* Checked "0x..." parser: hex digits only, no sign, no blanks, no overflow. */
int pmu_sysfs_parse_hex(const char *s, uint64_t *ret);

const char *pmu_kind_to_string(enum pmu_kind k);

/* Read a small sysfs/procfs file into buf, trailing whitespace removed. */
int pmu_sysfs_read_string(const char *path, char *buf, size_t len);
/* Why a CPU-wide perf_event_open was refused with EACCES/EPERM, for a log
 * line or /status: one sentence naming kernel.perf_event_paranoid (read
 * from procfs_root) and what would allow it, short enough for a per-CPU
 * note (SPE_STREAM_NOTE_MAX) after "cannot open EVENT: ERROR (". Returns buf. */
const char *pmu_perf_permission_hint(const char *procfs_root, char *buf, size_t len);
/* "a/b" or "a/b/c" (c NULL: two parts) into buf; -ENAMETOOLONG when it does not fit. */
int pmu_sysfs_join(char *buf, size_t len, const char *a, const char *b, const char *c);
