/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The arm_spe PMUs of a machine, from sysfs (drivers/perf/arm_spe_pmu.c: its
 * format/ and caps/ attributes), and the perf_event_attr that opens one of
 * them on a CPU (arm_spe_pmu_event_init() there; perf_event_open(2)).
 *
 * Every SPE implementation is an event source `arm_spe_<n>` under
 * /sys/bus/event_source/devices with its `type`, the CPUs it covers
 * (`cpumask`), its `format/` fields (where each option sits in
 * attr.config, config1, config2 or config3: read, never hard-coded) and
 * its `caps/` (min_interval, count_size, arch_inst, ernd). big.LITTLE
 * machines have one per core type.
 *
 * Library code: no logging, no perf_event_open() (the collector opens the
 * event); errors are negative errno values with a message for /status.
 */

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpulist.h"

#define SPE_PMU_PREFIX          "arm_spe_"
/* perf's default interval when caps/min_interval cannot be read (tools/perf/arch/arm64/util/arm-spe.c). */
#define SPE_PMU_DEFAULT_INTERVAL 4096U
/* PMSIRR_EL1.INTERVAL is bits [31:8]: the driver drops the low byte of the period. */
#define SPE_PMU_INTERVAL_GRAIN  256U
#define SPE_PMU_INTERVAL_MAX    UINT32_C(0xFFFFFF00)
#define SPE_PMU_MAX_FORMAT      32
/* A PMU's or a format field's name (a sysfs file name); longer ones are refused. */
#define SPE_PMU_NAME_MAX        32

/* One format/ field: which config word and which bits of it. */
struct spe_pmu_format {
        char name[SPE_PMU_NAME_MAX];
        unsigned word;                  /* 0: config, 1: config1, ... 9: config9 (only up to 3 settable) */
        uint64_t mask;                  /* the bits, possibly several ranges */
};

struct spe_pmu {
        char name[SPE_PMU_NAME_MAX];    /* "arm_spe_0" */
        uint32_t type;
        struct cpulist cpus;
        struct spe_pmu_format format[SPE_PMU_MAX_FORMAT];
        size_t n_format;
        uint32_t min_interval;          /* caps/min_interval, SPE_PMU_DEFAULT_INTERVAL when absent */
        uint32_t count_size;            /* caps/count_size: counter bits (12 or 16), 0 when absent */
        bool arch_inst, ernd;           /* caps/arch_inst, caps/ernd */
};

/*
 * The arm_spe PMUs under root (NULL: "/sys"), sorted by name. None is not
 * an error (*ret_n = 0). A PMU directory that cannot be parsed is an
 * error naming the file and what is wrong in err.
 */
int spe_pmu_discover(const char *root, struct spe_pmu **ret, size_t *ret_n, char *err, size_t err_len);

/* The PMU covering cpu, or NULL. */
const struct spe_pmu *spe_pmu_for_cpu(const struct spe_pmu *pmus, size_t n, unsigned cpu);

/*
 * Parse a format/ file: "config:0", "config1:0-63", "config:0-3,8"; words
 * config..config9 (*ret_word 0..9), though only 0..3 can be set. -EINVAL
 * otherwise.
 */
int spe_pmu_parse_format(const char *value, unsigned *ret_word, uint64_t *ret_mask);

/*
 * The perf_event_attr handed to perf_event_open(2), with room for config3.
 * config3 came with PERF_ATTR_SIZE_VER8 (136 bytes, Linux 6.3,
 * include/uapi/linux/perf_event.h: "add: config3") at offset 128, right
 * after sig_data; the headers we build with may be older (Debian 12's, 6.1,
 * end at 128 bytes), so config3 is reached by its ABI offset, not by name.
 * attr.size stays sizeof(struct perf_event_attr) unless a config3 field is
 * set to a non-zero value; then it is at least SPE_PMU_ATTR_SIZE_VER8, which
 * a kernel without config3 refuses with E2BIG (perf_copy_attr() wants the
 * bytes past what it knows to be zero) instead of dropping the filter.
 */
#define SPE_PMU_ATTR_SIZE_VER8  136U
#define SPE_PMU_CONFIG3_OFFSET  128U
struct spe_pmu_event_attr {
        union {
                struct perf_event_attr attr;
                uint8_t raw[sizeof(struct perf_event_attr) > SPE_PMU_ATTR_SIZE_VER8 ?
                            sizeof(struct perf_event_attr) : SPE_PMU_ATTR_SIZE_VER8];
        };
};

/* attr.config3 of a, whatever the headers' attr has. */
uint64_t spe_pmu_attr_config3(const struct spe_pmu_event_attr *a);

/*
 * Put value into the field `name` of a (its bits, low to high). -ENOENT
 * when the PMU has no such field, -ERANGE when value does not fit,
 * -EOPNOTSUPP for a word past config3 (no attr ABI has one yet).
 */
int spe_pmu_set(const struct spe_pmu *p, struct spe_pmu_event_attr *a, const char *name, uint64_t value);

struct spe_pmu_options {
        uint64_t interval;              /* operations between samples; 0: caps/min_interval */
        bool physical_addresses;        /* pa_enable ([privacy] physical_addresses) */
        bool physical_timestamps;       /* pct_enable: the physical counter, not the virtual one */
        bool jitter;                    /* randomise the interval (perf's default too) */
        bool loads, stores, branches;   /* all false: every op; else keep only these */
        uint32_t min_latency;           /* keep samples at least this many cycles, 0: all */
        uint64_t event_filter;          /* event_filter (PMSEVFR_EL1): keep ops with all these events, 0: all */
        uint64_t inv_event_filter;      /* inv_event_filter (PMSNEVFR_EL1, SPEv1p2, config3): drop ops with any */
        bool exclude_kernel, exclude_user;
};

/*
 * The interval the driver programs for `want` operations (0: the PMU's
 * minimum): at least caps/min_interval, at most what PMSIRR_EL1 holds,
 * rounded down to 256 (arm_spe_event_to_pmsirr()).
 */
uint64_t spe_pmu_interval(const struct spe_pmu *p, uint64_t want);

/*
 * The attr of a per-CPU SPE event of p: disabled (enabled once the AUX
 * area is mapped), timestamps on (records end with a Timestamp packet),
 * sample ids carrying tid, time and CPU, the interval clamped to
 * min_interval and to what PMSIRR holds. *ret_interval: the interval the
 * hardware will use. Errors (a missing field an option needs, a minimum
 * latency the counters cannot hold) are named in err.
 */
int spe_pmu_attr(const struct spe_pmu *p, const struct spe_pmu_options *o, struct spe_pmu_event_attr *ret,
                 uint64_t *ret_interval, char *err, size_t err_len);
