/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "file-util.h"
#include "log.h"
#include "macro.h"
#include "pmu-event.h"
#include "privacy.h"
#include "push.h"
#include "push-request.h"
#include "sampler-source.h"
#include "store.h"
#include "strbuf.h"

/* Every section of the contract (ARCHITECTURE.md §7), known even when empty. */
static const char *const known_sections[] = {
        "http", "pmu", "spe", "sampler", "budget", "store", "push", "privacy",
};

struct config_item;
typedef int (*config_parse_fn)(const struct config_item *it, const char *value, void *dest,
                               char *err, size_t errlen);

struct config_item {
        const char *section;
        const char *key;
        config_parse_fn parse;
        size_t offset;
        uint64_t min, max;
        unsigned min_pages; /* ring sizes: the floor in pages, beside min in bytes */
};

static int check_range(const struct config_item *it, uint64_t v, const char *value, char *err,
                       size_t errlen) {
        if (v < it->min || v > it->max) {
                snprintf(err, errlen, "value '%s' out of range [%" PRIu64 ", %" PRIu64 "]",
                         value, it->min, it->max);
                return -ERANGE;
        }
        return 0;
}

static int parse_item_bool(const struct config_item *it, const char *value, void *dest,
                           char *err, size_t errlen) {
        if (parse_bool(value, dest) < 0) {
                snprintf(err, errlen, "invalid boolean '%s' (expected yes/no, true/false, on/off, 1/0)",
                         value);
                return -EINVAL;
        }
        return 0;
}

static int parse_item_u32(const struct config_item *it, const char *value, void *dest, char *err,
                          size_t errlen) {
        uint32_t v;
        int r;

        r = safe_atou32(value, &v);
        if (r < 0) {
                snprintf(err, errlen, "invalid unsigned number '%s'", value);
                return r;
        }
        r = check_range(it, v, value, err, errlen);
        if (r < 0)
                return r;
        *(uint32_t *) dest = v;
        return 0;
}

/* A percentage such as 1, 0.25 or .5, within [min, max]. */
static int parse_item_percent(const struct config_item *it, const char *value, void *dest, char *err,
                              size_t errlen) {
        char *end = NULL;
        double v;

        errno = 0;
        v = strtod(value, &end);
        /* Decimal digits and a point only: no sign, exponent, hex, inf or nan. */
        if (value[strspn(value, "0123456789.")] != '\0' || errno != 0 || end == value || *end != '\0' ||
            !isfinite(v)) {
                snprintf(err, errlen, "invalid percentage '%s' (expected a number such as 1 or 0.25)", value);
                return -EINVAL;
        }
        if (v < (double) it->min || v > (double) it->max) {
                snprintf(err, errlen, "percentage '%s' out of range [%" PRIu64 ", %" PRIu64 "]", value, it->min,
                         it->max);
                return -ERANGE;
        }
        *(double *) dest = v;
        return 0;
}

static int parse_item_duration(const struct config_item *it, const char *value, void *dest,
                               char *err, size_t errlen) {
        uint64_t v;
        int r;

        r = parse_duration_usec(value, &v);
        if (r < 0) {
                snprintf(err, errlen, "invalid duration '%s' (expected e.g. 10s, 500ms, 1m)", value);
                return r;
        }
        if (v < it->min || v > it->max) {
                snprintf(err, errlen, "duration '%s' out of range [%" PRIu64 "ms, %" PRIu64 "s]",
                         value, it->min / USEC_PER_MSEC, it->max / USEC_PER_SEC);
                return -ERANGE;
        }
        *(uint64_t *) dest = v;
        return 0;
}

static int parse_item_size(const struct config_item *it, const char *value, void *dest, char *err,
                           size_t errlen) {
        uint64_t v;
        int r;

        r = parse_size(value, &v);
        if (r < 0) {
                snprintf(err, errlen, "invalid size '%s' (expected e.g. 4096, 64KiB, 16MiB)", value);
                return r;
        }
        r = check_range(it, v, value, err, errlen);
        if (r < 0)
                return r;
        *(uint64_t *) dest = v;
        return 0;
}

/* A decimal or a 0x hexadecimal number of 64 bits (event filters are bit masks). */
static int parse_number_u64(const char *s, uint64_t *ret) {
        unsigned long long v;
        char *end = NULL;

        if (!(s[0] == '0' && (s[1] == 'x' || s[1] == 'X')))
                return safe_atou64(s, ret);
        /* strtoull() would take a sign or blanks after "0x"; only hex digits may follow. */
        if (!isxdigit((unsigned char) s[2]))
                return -EINVAL;
        errno = 0;
        v = strtoull(s + 2, &end, 16);
        if (errno == ERANGE)
                return -ERANGE;
        if (errno != 0 || *end != '\0')
                return -EINVAL;
        *ret = (uint64_t) v;
        return 0;
}

static int parse_item_u64(const struct config_item *it, const char *value, void *dest, char *err,
                          size_t errlen) {
        uint64_t v;
        int r;

        r = parse_number_u64(value, &v);
        if (r < 0) {
                snprintf(err, errlen, "invalid unsigned number '%s' (decimal or 0x hex, at most 64 bits)",
                         value);
                return r;
        }
        r = check_range(it, v, value, err, errlen);
        if (r < 0)
                return r;
        *(uint64_t *) dest = v;
        return 0;
}

static uint64_t page_size(void) {
        long p = sysconf(_SC_PAGESIZE);

        /* sysconf() cannot fail for _SC_PAGESIZE on Linux; 4 KiB should it ever. */
        return p > 0 ? (uint64_t) p : 4096;
}

/*
 * The size of a ring the kernel maps: perf_mmap() (kernel/events/core.c)
 * refuses a data ring or an AUX area that is not a power of two of pages. At
 * least it->min_pages pages and it->min bytes, at most it->max. The page size
 * is this machine's (4 KiB or 64 KiB on arm64), so the floor is too.
 */
static int parse_item_ring_size(const struct config_item *it, const char *value, void *dest,
                                char *err, size_t errlen) {
        uint64_t v, page = page_size(), lo = MAX(it->min, it->min_pages * page);
        int r;

        r = parse_size(value, &v);
        if (r < 0) {
                snprintf(err, errlen, "invalid size '%s' (expected e.g. 64KiB, 256KiB, 4MiB)", value);
                return r;
        }
        if (v < lo || v > it->max) {
                char also[64] = "";

                if (it->min > 0)
                        snprintf(also, sizeof(also), " and %" PRIu64 " bytes", it->min);
                snprintf(err, errlen,
                         "value '%s' out of range [%" PRIu64 ", %" PRIu64 "] (at least %u page%s of %" PRIu64
                         " bytes%s)",
                         value, lo, it->max, it->min_pages, it->min_pages == 1 ? "" : "s", page, also);
                return -ERANGE;
        }
        if ((v & (v - 1)) != 0) {
                snprintf(err, errlen, "value '%s' is not a power of two (e.g. 64KiB, 256KiB, 4MiB)", value);
                return -EINVAL;
        }
        *(uint64_t *) dest = v;
        return 0;
}

/* auto|yes|no; yes and no in every spelling of a boolean. */
static int parse_item_spe_enable(const struct config_item *it, const char *value, void *dest,
                                 char *err, size_t errlen) {
        bool b;

        if (strcasecmp(value, "auto") == 0)
                *(enum config_spe_enable *) dest = CONFIG_SPE_AUTO;
        else if (parse_bool(value, &b) >= 0)
                *(enum config_spe_enable *) dest = b ? CONFIG_SPE_YES : CONFIG_SPE_NO;
        else {
                snprintf(err, errlen, "invalid value '%s' (expected auto, yes or no)", value);
                return -EINVAL;
        }
        return 0;
}

/* [http] detail: who is served per-process detail. */
static int parse_item_http_detail(const struct config_item *it, const char *value, void *dest,
                                  char *err, size_t errlen) {
        if (strcasecmp(value, "loopback") == 0)
                *(bool *) dest = false;
        else if (strcasecmp(value, "any") == 0)
                *(bool *) dest = true;
        else {
                snprintf(err, errlen, "invalid value '%s' (expected loopback or any)", value);
                return -EINVAL;
        }
        return 0;
}

/* A sampling event's name, as the sampler knows them (sampler_event_parse()). */
static int parse_item_sampler_event(const struct config_item *it, const char *value, void *dest,
                                    char *err, size_t errlen) {
        uint32_t type;
        uint64_t config;

        if (strlen(value) >= CONFIG_SAMPLER_EVENT_MAX || sampler_event_parse(value, &type, &config) < 0) {
                snprintf(err, errlen, "unknown event '%s' (expected cpu-clock, task-clock, cycles, instructions...)",
                         value);
                return -EINVAL;
        }
        memcpy(dest, value, strlen(value) + 1);
        return 0;
}

static int parse_item_unwind(const struct config_item *it, const char *value, void *dest,
                             char *err, size_t errlen) {
        static const char *const names[] = {
                [CONFIG_UNWIND_AUTO] = "auto",
                [CONFIG_UNWIND_FP] = "fp",
                [CONFIG_UNWIND_DWARF] = "dwarf",
        };

        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (strcasecmp(value, names[i]) == 0) {
                        *(enum config_unwind *) dest = (enum config_unwind) i;
                        return 0;
                }
        snprintf(err, errlen, "invalid value '%s' (expected auto, fp or dwarf)", value);
        return -EINVAL;
}

/* Bytes of user stack per sample: a multiple of 8 the kernel takes. */
static int parse_item_stack_size(const struct config_item *it, const char *value, void *dest,
                                 char *err, size_t errlen) {
        uint64_t v;
        int r;

        r = parse_size(value, &v);
        if (r < 0) {
                snprintf(err, errlen, "invalid size '%s'", value);
                return r;
        }
        r = check_range(it, v, value, err, errlen);
        if (r < 0)
                return r;
        if (v % 8 != 0) {
                snprintf(err, errlen, "value '%s' is not a multiple of 8 bytes", value);
                return -EINVAL;
        }
        *(uint64_t *) dest = v;
        return 0;
}

static int parse_item_listen(const struct config_item *it, const char *value, void *dest,
                             char *err, size_t errlen) {
        if (parse_listen_addr(value, dest) < 0) {
                snprintf(err, errlen,
                         "invalid listen address '%s' (expected ADDR:PORT, [IPV6]:PORT or :PORT)",
                         value);
                return -EINVAL;
        }
        return 0;
}

/* "cycles instructions, page_faults": names of the PMU event catalogue. */
static int parse_item_pmu_events(const struct config_item *it, const char *value, void *dest,
                                 char *err, size_t errlen) {
        _cleanup_free_ char *copy = xstrdup(value);
        char *save = NULL;
        uint32_t mask = 0;

        for (char *t = strtok_r(copy, " \t,", &save); t; t = strtok_r(NULL, " \t,", &save)) {
                const struct pmu_event_def *d = pmu_event_by_name(t);

                if (!d) {
                        char known[MESSAGE_MAX];
                        size_t o = 0;

                        for (int i = 0; i < _PMU_EVENT_MAX && o < sizeof(known); i++)
                                o += (size_t) snprintf(known + o, sizeof(known) - o, "%s%s", i ? " " : "",
                                                       pmu_event_get((enum pmu_event_id) i)->name);
                        snprintf(err, errlen, "unknown event '%s' (known: %s)", t, known);
                        return -EINVAL;
                }
                mask |= UINT32_C(1) << d->id;
        }
        if (mask == 0) {
                snprintf(err, errlen, "empty event list (use enable = no to turn counting off)");
                return -EINVAL;
        }
        *(uint32_t *) dest = mask;
        return 0;
}

/* 0 (from sysfs) or a line size parse_line_size() takes. */
static int parse_item_line_size(const struct config_item *it, const char *value, void *dest,
                                char *err, size_t errlen) {
        uint32_t v;

        if (safe_atou32(value, &v) < 0 || (v != 0 && parse_line_size(value, &v) < 0)) {
                snprintf(err, errlen, "invalid line size '%s' (0 for sysfs, or a power of two %u..%u)",
                         value, LINE_SIZE_MIN, LINE_SIZE_MAX);
                return -EINVAL;
        }
        *(uint32_t *) dest = v;
        return 0;
}

/* A string of at most it->max - 1 bytes, printable (it goes into HTTP headers and labels). */
static int parse_item_text(const struct config_item *it, const char *value, void *dest, char *err,
                           size_t errlen) {
        size_t len = strlen(value);

        if (len >= it->max) {
                snprintf(err, errlen, "longer than %" PRIu64 " bytes", it->max - 1);
                return -ERANGE;
        }
        for (const unsigned char *c = (const unsigned char *) value; *c; c++)
                if (*c < 0x20 || *c == 0x7f) {
                        snprintf(err, errlen, "holds a control character");
                        return -EINVAL;
                }
        memcpy(dest, value, len + 1);
        return 0;
}

/* An absolute path, or "" for none. */
static int parse_item_path(const struct config_item *it, const char *value, void *dest, char *err,
                           size_t errlen) {
        if (value[0] && value[0] != '/') {
                snprintf(err, errlen, "'%s' is not an absolute path", value);
                return -EINVAL;
        }
        return parse_item_text(it, value, dest, err, errlen);
}

static int parse_item_push_url(const struct config_item *it, const char *value, void *dest, char *err,
                               size_t errlen) {
        if (value[0] && push_url_check(value, err, errlen) < 0)
                return -EINVAL;
        return parse_item_text(it, value, dest, err, errlen);
}

static int parse_item_push_labels(const struct config_item *it, const char *value, void *dest, char *err,
                                  size_t errlen) {
        struct push_label *labels = NULL;
        size_t n = 0;
        int r;

        r = push_labels_parse(value, &labels, &n, err, errlen);
        push_labels_free(labels, n);
        if (r < 0)
                return r;
        return parse_item_text(it, value, dest, err, errlen);
}

#define ITEM(sec, k, fn, field, lo, hi) \
        { sec, k, fn, offsetof(struct config, field), lo, hi, 0 }
#define ITEM_RING(sec, k, field, pages, lo, hi) \
        { sec, k, parse_item_ring_size, offsetof(struct config, field), lo, hi, pages }

static const struct config_item items[] = {
        ITEM("http", "listen", parse_item_listen, http.listen, 0, 0),
        ITEM("http", "max_connections", parse_item_u32, http.max_connections, 1, 4096),
        ITEM("http", "per_ip_connections", parse_item_u32, http.per_ip_connections, 0, 4096),
        ITEM("http", "timeout", parse_item_duration, http.timeout_usec, USEC_PER_SEC, 3600 * USEC_PER_SEC),
        ITEM("http", "max_request_size", parse_item_size, http.max_request_bytes, 4096, 1024 * 1024),
        ITEM("http", "detail", parse_item_http_detail, http.detail_any, 0, 0),
        ITEM("http", "web_config", parse_item_path, http.web_config, 0, PATH_MAX),
        ITEM("pmu", "enable", parse_item_bool, pmu.enable, 0, 0),
        ITEM("pmu", "interval", parse_item_duration, pmu.interval_usec, 100 * USEC_PER_MSEC,
             3600 * USEC_PER_SEC),
        ITEM("pmu", "events", parse_item_pmu_events, pmu.events_mask, 0, 0),
        ITEM("pmu", "general_counters", parse_item_u32, pmu.general_counters, 0, 31),
        ITEM("spe", "enable", parse_item_spe_enable, spe.enable, 0, 0),
        ITEM("spe", "period", parse_item_u64, spe.period, CONFIG_SPE_PERIOD_MIN, CONFIG_SPE_PERIOD_MAX),
        ITEM("spe", "jitter", parse_item_bool, spe.jitter, 0, 0),
        ITEM("spe", "load_filter", parse_item_bool, spe.load_filter, 0, 0),
        ITEM("spe", "store_filter", parse_item_bool, spe.store_filter, 0, 0),
        ITEM("spe", "branch_filter", parse_item_bool, spe.branch_filter, 0, 0),
        ITEM("spe", "min_latency", parse_item_u32, spe.min_latency, 0, CONFIG_SPE_MIN_LATENCY_MAX),
        ITEM("spe", "event_filter", parse_item_u64, spe.event_filter, 0, UINT64_MAX),
        ITEM("spe", "inv_event_filter", parse_item_u64, spe.inv_event_filter, 0, UINT64_MAX),
        ITEM("spe", "exclude_kernel", parse_item_bool, spe.exclude_kernel, 0, 0),
        ITEM_RING("spe", "aux_buffer", spe.aux_buffer, CONFIG_SPE_AUX_BUFFER_PAGES, CONFIG_SPE_AUX_BUFFER_MIN,
                  CONFIG_SPE_AUX_BUFFER_MAX),
        ITEM_RING("spe", "data_buffer", spe.data_buffer, CONFIG_SPE_DATA_BUFFER_PAGES, 0,
                  CONFIG_SPE_DATA_BUFFER_MAX),
        /* Below aux_buffer: config_check(). */
        ITEM("spe", "watermark", parse_item_size, spe.watermark, 0, CONFIG_SPE_AUX_BUFFER_MAX),
        ITEM("spe", "drain_interval", parse_item_duration, spe.drain_interval_usec, 10 * USEC_PER_MSEC,
             60 * USEC_PER_SEC),
        ITEM("sampler", "enable", parse_item_spe_enable, sampler.enable, 0, 0),
        ITEM("sampler", "event", parse_item_sampler_event, sampler.event, 0, 0),
        ITEM("sampler", "frequency", parse_item_u32, sampler.frequency, 1, CONFIG_SAMPLER_FREQ_MAX),
        ITEM("sampler", "max_stack", parse_item_u32, sampler.max_stack, 1, CONFIG_SAMPLER_MAX_STACK_MAX),
        ITEM("sampler", "unwind", parse_item_unwind, sampler.unwind, 0, 0),
        ITEM("sampler", "stack_size", parse_item_stack_size, sampler.stack_size, 0, CONFIG_SAMPLER_STACK_SIZE_MAX),
        ITEM_RING("sampler", "data_buffer", sampler.data_buffer, CONFIG_SPE_DATA_BUFFER_PAGES, 0,
                  CONFIG_SPE_DATA_BUFFER_MAX),
        ITEM("budget", "cpu_percent", parse_item_percent, budget.cpu_percent, 0, 100),
        ITEM("budget", "window", parse_item_duration, budget.window_usec, USEC_PER_SEC, 3600 * USEC_PER_SEC),
        ITEM("store", "epoch", parse_item_duration, store.epoch_usec, USEC_PER_SEC, 3600 * USEC_PER_SEC),
        ITEM("store", "epochs", parse_item_u32, store.epochs, 1, 8640),
        ITEM("store", "hotpcs", parse_item_u32, store.hotpcs, 16, 1U << 20),
        ITEM("store", "hotlines", parse_item_u32, store.hotlines, 16, 1U << 20),
        ITEM("store", "line_offsets", parse_item_u32, store.line_offsets, 1, 1024),
        ITEM("store", "line_size", parse_item_line_size, store.line_size, 0, 0),
        ITEM("store", "stacks", parse_item_u32, store.stacks, 16, 1U << 20),
        ITEM("store", "max_memory", parse_item_size, store.max_memory_bytes, UINT64_C(1) << 20,
             UINT64_C(1) << 40),
        ITEM("push", "url", parse_item_push_url, push.url, 0, CONFIG_PUSH_URL_MAX),
        ITEM("push", "interval", parse_item_duration, push.interval_usec, USEC_PER_SEC, 3600 * USEC_PER_SEC),
        ITEM("push", "service_name", parse_item_text, push.service_name, 0, CONFIG_PUSH_NAME_MAX),
        ITEM("push", "labels", parse_item_push_labels, push.labels, 0, CONFIG_PUSH_LABELS_MAX),
        ITEM("push", "tenant", parse_item_text, push.tenant, 0, CONFIG_PUSH_NAME_MAX),
        ITEM("push", "basic_auth_user", parse_item_text, push.basic_auth_user, 0, CONFIG_PUSH_NAME_MAX),
        ITEM("push", "basic_auth_password_file", parse_item_path, push.basic_auth_password_file, 0, PATH_MAX),
        ITEM("push", "bearer_token_file", parse_item_path, push.bearer_token_file, 0, PATH_MAX),
        ITEM("push", "tls_ca_file", parse_item_path, push.tls_ca_file, 0, PATH_MAX),
        ITEM("push", "tls_insecure_skip_verify", parse_item_bool, push.tls_insecure_skip_verify, 0, 0),
        ITEM("push", "timeout", parse_item_duration, push.timeout_usec, USEC_PER_SEC, 300 * USEC_PER_SEC),
        ITEM("push", "max_profile_bytes", parse_item_size, push.max_profile_bytes, 64 * 1024,
             256 * (UINT64_C(1) << 20)),
        ITEM("push", "max_samples", parse_item_u32, push.max_samples, 100, 1U << 24),
        ITEM("push", "max_age", parse_item_duration, push.max_age_usec, USEC_PER_SEC, CONFIG_PUSH_MAX_AGE_MAX),
        ITEM("push", "spool_dir", parse_item_path, push.spool_dir, 0, PATH_MAX),
        ITEM("push", "spool_max_bytes", parse_item_size, push.spool_max_bytes, 64 * 1024, UINT64_C(1) << 40),
        ITEM("privacy", "physical_addresses", parse_item_bool, privacy.physical_addresses, 0, 0),
        ITEM("privacy", "kernel_addresses", parse_item_bool, privacy.kernel_addresses, 0, 0),
        ITEM("privacy", "data_addresses", parse_item_bool, privacy.data_addresses, 0, 0),
};

size_t config_n_items(void) {
        return ELEMENTSOF(items);
}

void config_item_name(size_t i, const char **ret_section, const char **ret_key) {
        *ret_section = items[i].section;
        *ret_key = items[i].key;
}

void config_init(struct config *c) {
        *c = (struct config) {
                .http = {
                        .max_connections = 32,
                        .per_ip_connections = 8,
                        .timeout_usec = 15 * USEC_PER_SEC,
                        .max_request_bytes = 32 * 1024,
                },
                .pmu = {
                        .enable = true,
                        .interval_usec = USEC_PER_SEC,
                        .events_mask = (UINT32_C(1) << _PMU_EVENT_MAX) - 1,
                },
                .spe = {
                        .enable = CONFIG_SPE_AUTO,
                        /*
                         * 2^20 operations: a core retiring 3e9 operations a second gives
                         * 2,861 records a second (5,722 at 2 per cycle), 183 KB/s of
                         * 64-byte Neoverse N1 records; README "SPE on a Neoverse host".
                         */
                        .period = UINT64_C(1) << 20,
                        .jitter = true,
                        .exclude_kernel = true,
                        /*
                         * Holds 1.4 s of the above, the daemon woken at half of it. With
                         * the data ring and the user page, 324 KiB of locked memory per CPU:
                         * within the kernel's default perf_event_mlock_kb (516 KiB per CPU
                         * with 4 KiB pages), so no RLIMIT_MEMLOCK or CAP_IPC_LOCK is needed.
                         */
                        .aux_buffer = 256 * UINT64_C(1024),
                        .data_buffer = 64 * UINT64_C(1024),
                        .drain_interval_usec = USEC_PER_SEC,
                },
                .sampler = {
                        .enable = CONFIG_SPE_AUTO,
                        .event = "cpu-clock",
                        .frequency = 19,
                        .max_stack = 127,
                        .unwind = CONFIG_UNWIND_AUTO,
                        /*
                         * What perf record --call-graph dwarf copies by default: enough for
                         * the frames of most services' hot paths. 19 Hz x 8 KiB is 152 KiB/s
                         * per busy CPU through the data ring; 256 KiB wakes the daemon about
                         * once a second at worst, and is within perf_event_mlock_kb.
                         */
                        .stack_size = 8192,
                        .data_buffer = 256 * UINT64_C(1024),
                },
                /*
                         * The published bars of always-on profilers (the OpenTelemetry eBPF
                         * profiler's 1% upper limit, Parca's "under 1%"): a ceiling the
                         * collector never reaches at the defaults (0.06% of a 192-CPU host
                         * with SPE on every CPU, README "The daemon's own cost").
                         */
                .budget = {
                        .cpu_percent = 1.0,
                        .window_usec = 60 * USEC_PER_SEC,
                },
                .push = {
                        /* The eBPF profilers' collect interval (Grafana Alloy's pyroscope.ebpf). */
                        .interval_usec = 15 * USEC_PER_SEC,
                        .timeout_usec = 10 * USEC_PER_SEC,
                        /* Pyroscope's per-tenant defaults (pkg/validation/limits.go). */
                        .max_profile_bytes = 4 * (UINT64_C(1) << 20),
                        .max_samples = 16000,
                        /* Under the store's reject-older-than (1 h): sent late, still taken. */
                        .max_age_usec = 55 * 60 * USEC_PER_SEC,
                        .spool_dir = "/var/lib/armprofd/spool",
                        /* 45 minutes of 15 s requests of 350 KiB: a long outage of a busy host. */
                        .spool_max_bytes = 64 * (UINT64_C(1) << 20),
                },
                /* Data addresses are served as they are unless the administrator asks for offsets. */
                .privacy = {
                        .data_addresses = true,
                },
                .store = {
                        .epoch_usec = 10 * USEC_PER_SEC,
                        .epochs = 60,
                        .hotpcs = 1024,
                        .hotlines = 256,
                        .line_offsets = 8,
                        .stacks = STORE_STACKS_DEFAULT,
                        /*
                         * The defaults need 125 MiB (store.h, MEMORY), 77 MiB of it CPU stack
                         * tables, 48 MiB without them ([sampler] enable = no). 256 MiB leaves
                         * room for 20 minutes of history with stacks (epochs = 120: 246 MiB),
                         * 55 minutes without (epochs = 330: 254 MiB), and refuses the typo that would
                         * ask for gigabytes at start.
                         */
                        .max_memory_bytes = 256 * (UINT64_C(1) << 20),
                },
        };
        /* The default is a constant we own; it cannot fail to parse. */
        (void) parse_listen_addr(CONFIG_DEFAULT_LISTEN, &c->http.listen);
}

/* ---- errors ---- */

static void add_error(struct config_error *err, const char *fmt, ...) _printf_(2, 3);
static void add_error(struct config_error *err, const char *fmt, ...) {
        char raw[2 * MESSAGE_MAX]; /* a path and a reason, before escape() cuts them to one message */
        va_list ap;

        if (!err)
                return;
        if (err->n < CONFIG_ERRORS_MAX) {
                va_start(ap, fmt);
                vsnprintf(raw, sizeof(raw), fmt, ap);
                va_end(ap);
                /* Bytes outside printable ASCII as \xNN: a config may be any file. */
                escape_bytes(err->msg[err->n], sizeof(err->msg[err->n]), raw, strlen(raw));
        }
        err->n++;
}

void config_error_log(const struct config_error *err) {
        for (unsigned i = 0; i < MIN(err->n, (unsigned) CONFIG_ERRORS_MAX); i++)
                log_error("config: %s", err->msg[i]);
        if (err->n > CONFIG_ERRORS_MAX)
                log_error("config: ... and %u more errors", err->n - CONFIG_ERRORS_MAX);
}

/* ---- checks across keys ---- */

void config_stack_options(const struct config *c, struct store_options *o) {
        if (c->sampler.enable == CONFIG_SPE_NO) {
                o->stacks = o->stack_frames = o->stack_contexts = o->stack_strings = 0;
                return;
        }
        o->stacks = c->store.stacks;
        o->stack_frames = c->store.stacks * 32U;
        o->stack_contexts = MAX(c->store.stacks / 4U, 64U);
        /* Names of a context: comm, thread, cgroup path and service, 64 bytes on average once shared. */
        o->stack_strings = o->stack_contexts * 64U;
}

uint64_t config_store_bytes(const struct config *c) {
        struct store_options o;

        /* The fields store_bytes() depends on, as collector_store_options() sets them. */
        store_options_init(&o);
        o.epochs = c->store.epochs;
        o.hotpcs = c->store.hotpcs;
        o.hotlines = c->store.hotlines;
        o.line_offsets = c->store.line_offsets;
        config_stack_options(c, &o);
        return store_bytes(&o);
}

/* "1023 B" .. "16.0 EiB": shorter than a uint64_t in decimal. */
#define FORMAT_BYTES_MAX DECIMAL_STR_MAX(uint64_t)

static void format_bytes(uint64_t v, char *buf, size_t size) {
        static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
        double d = (double) v;
        size_t i = 0;

        if (v < 1024) {
                snprintf(buf, size, "%" PRIu64 " B", v);
                return;
        }
        d /= 1024;
        while (d >= 1024 && i + 1 < ELEMENTSOF(units)) {
                d /= 1024;
                i++;
        }
        snprintf(buf, size, "%.1f %s", d, units[i]);
}

static int check_store_memory(const struct config *c, const char *filename, struct config_error *err) {
        uint64_t need = config_store_bytes(c);
        char need_s[FORMAT_BYTES_MAX], max_s[FORMAT_BYTES_MAX];

        if (need <= c->store.max_memory_bytes)
                return 0;
        format_bytes(need, need_s, sizeof(need_s));
        format_bytes(c->store.max_memory_bytes, max_s, sizeof(max_s));
        add_error(err,
                  "%s: [store] epochs = %" PRIu32 ", hotpcs = %" PRIu32 ", hotlines = %" PRIu32
                  ", line_offsets = %" PRIu32 ", stacks = %" PRIu32 " need up to %" PRIu64 " bytes (%s), more than "
                  "[store] max_memory = %s; make the tables smaller (a host that needs no CPU stacks: "
                  "[sampler] enable = no) or raise max_memory",
                  filename, c->store.epochs, c->store.hotpcs, c->store.hotlines, c->store.line_offsets,
                  c->sampler.enable == CONFIG_SPE_NO ? 0 : c->store.stacks, need, need_s, max_s);
        return -E2BIG;
}

/*
 * The kernel wakes the reader when aux_watermark bytes are written since the
 * last wakeup (kernel/events/ring_buffer.c, rb_need_aux_wakeup()); one at or
 * above the buffer's size would never come before the buffer is full, and a
 * full buffer ends the SPE session (PERF_AUX_FLAG_TRUNCATED).
 */
static int check_spe_watermark(const struct config *c, const char *filename, struct config_error *err) {
        char wm_s[FORMAT_BYTES_MAX], aux_s[FORMAT_BYTES_MAX];

        if (c->spe.watermark < c->spe.aux_buffer)
                return 0;
        format_bytes(c->spe.watermark, wm_s, sizeof(wm_s));
        format_bytes(c->spe.aux_buffer, aux_s, sizeof(aux_s));
        add_error(err,
                  "%s: [spe] watermark = %" PRIu64 " bytes (%s) is not below [spe] aux_buffer = %" PRIu64
                  " bytes (%s); lower it (0 = half the buffer) or raise aux_buffer",
                  filename, c->spe.watermark, wm_s, c->spe.aux_buffer, aux_s);
        return -EINVAL;
}

void config_privacy_policy(const struct config *c, struct privacy_policy *ret) {
        *ret = (struct privacy_policy) {
                .kernel_addresses = c->privacy.kernel_addresses,
                .data_addresses = c->privacy.data_addresses,
        };
}

/*
 * The push's options (exporters/push.h) pointing into c. An attempt after
 * timeouts may take up to PUSH_TIMEOUT_GROWTH_MAX timeouts, but never so
 * long that an interval's epochs leave the ring meanwhile (check_push_ring():
 * the ring outlasts interval + timeout, so this is never under timeout).
 */
void config_push_options(const struct config *c, struct push_options *o) {
        uint64_t ring = c->store.epoch_usec * c->store.epochs;

        *o = (struct push_options) {
                .url = c->push.url,
                .interval_usec = c->push.interval_usec,
                .timeout_usec = c->push.timeout_usec,
                .timeout_max_usec = MIN(PUSH_TIMEOUT_GROWTH_MAX * c->push.timeout_usec,
                                        ring > c->push.interval_usec ? ring - c->push.interval_usec : 0),
                .max_age_usec = c->push.max_age_usec,
                .tenant = c->push.tenant,
                .basic_auth_user = c->push.basic_auth_user,
                .basic_auth_password_file = c->push.basic_auth_password_file,
                .bearer_token_file = c->push.bearer_token_file,
                .tls_ca_file = c->push.tls_ca_file,
                .tls_insecure_skip_verify = c->push.tls_insecure_skip_verify,
                .spool_dir = c->push.spool_dir,
                .spool_max_bytes = c->push.spool_max_bytes,
                .service_name = c->push.service_name,
                .labels = c->push.labels,
        };
}

/* Credentials come in pairs and one kind at a time. */
static int check_push_auth(const struct config *c, const char *filename, struct config_error *err) {
        bool user = c->push.basic_auth_user[0], password = c->push.basic_auth_password_file[0];

        if (user != password) {
                add_error(err, "%s: [push] basic_auth_user and basic_auth_password_file go together", filename);
                return -EINVAL;
        }
        if (user && c->push.bearer_token_file[0]) {
                add_error(err, "%s: [push] basic_auth_user and bearer_token_file exclude each other", filename);
                return -EINVAL;
        }
        return 0;
}

/*
 * A push sends the epochs closed since the previous one: all of them must
 * still be in the ring then, a store that hangs for the whole timeout
 * included, or an interval is partly lost.
 */
static int check_push_ring(const struct config *c, const char *filename, struct config_error *err) {
        uint64_t ring = c->store.epoch_usec * c->store.epochs, need = c->push.interval_usec + c->push.timeout_usec;

        if (!c->push.url[0] || need < ring)
                return 0;
        add_error(err,
                  "%s: [push] interval (%.0f s) and timeout (%.0f s) outlast the store's ring ([store] epoch x "
                  "epochs = %.0f s): epochs would leave it before they are pushed; push more often or raise "
                  "[store] epochs",
                  filename, (double) c->push.interval_usec / USEC_PER_SEC, (double) c->push.timeout_usec / USEC_PER_SEC,
                  (double) ring / USEC_PER_SEC);
        return -EINVAL;
}

int config_check(const struct config *c, const char *filename, struct config_error *err) {
        int r, k, a, g;

        /* All, so that one run names every mistake. */
        r = check_store_memory(c, filename, err);
        k = check_spe_watermark(c, filename, err);
        a = check_push_auth(c, filename, err);
        g = check_push_ring(c, filename, err);
        return r < 0 ? r : k < 0 ? k : a < 0 ? a : g;
}

/* ---- the line reader ---- */

/*
 * Longest line (without its newline) that is not a comment. libinih's line
 * buffer is fixed at build time upstream (INI_MAX_LINE, 200 on Debian); the
 * Debian library exports it as run-time options (ini_use_stack,
 * ini_allow_realloc, ini_max_line: see <ini.h>), set in config_parse_buffer() so
 * that a line up to this long reaches us whole. Longer lines are refused by
 * the reader below, never split.
 */
#define CONFIG_LINE_MAX 4096

/*
 * libinih reads through our reader, which hands it one line at a time (with
 * fgets semantics, so libinih's buffer can grow) after checking it:
 *  - a line with a NUL byte, a line longer than CONFIG_LINE_MAX, and a line
 *    that is neither a [section] nor key = value are reported here and
 *    handed on as an empty line, so every such line is reported, not only
 *    the first (libinih only returns the first error's line);
 *  - comment lines are handed on empty, so their length never matters;
 *  - leading blanks are dropped, so libinih never takes an indented line as
 *    the continuation of the previous value (which would silently replace
 *    it): an indented word is a syntax error.
 * The handler knows the line it is on (Debian builds libinih without
 * INI_HANDLER_LINENO).
 */
struct parse_state {
        struct config *config;
        const char *filename;
        struct config_error *err;
        unsigned n_errors; /* this text's */
        unsigned first_error_line;

        const char *data;
        size_t size, pos;
        unsigned line;
        const char *cur; /* the rest of the current line, or NULL */
        size_t cur_len;

        unsigned key_line[ELEMENTSOF(items)]; /* where each key was set in this text, or 0 */
};

static void line_error(struct parse_state *s, unsigned line, const char *fmt, ...) _printf_(3, 4);
static void line_error(struct parse_state *s, unsigned line, const char *fmt, ...) {
        char reason[MESSAGE_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(reason, sizeof(reason), fmt, ap);
        va_end(ap);
        add_error(s->err, "%s:%u: %s", s->filename, line, reason);
        s->n_errors++;
        if (s->first_error_line == 0)
                s->first_error_line = line;
}

/* libinih's find_chars_or_comment(): the first of `chars`, or an inline "whitespace ;" comment. */
static const char *find_chars_or_comment(const char *p, const char *end, const char *chars) {
        bool was_space = false;

        for (; p < end; p++) {
                if (strchr(chars, *p) || (was_space && *p == ';'))
                        return p;
                was_space = *p == ' ' || *p == '\t' || *p == '\r';
        }
        return end;
}

static bool line_syntax_ok(const char *p, const char *end) {
        const char *q;

        if (*p == '[') {
                q = find_chars_or_comment(p + 1, end, "]");
                return q < end && *q == ']';
        }
        q = find_chars_or_comment(p, end, "=:");
        return q < end && (*q == '=' || *q == ':');
}

/* Take the next line of the text, check it, and make it (or an empty line) the current one. */
static bool next_line(struct parse_state *s) {
        const char *p, *nl, *end;
        size_t len;

        if (s->pos >= s->size)
                return false;
        p = s->data + s->pos;
        nl = memchr(p, '\n', s->size - s->pos);
        len = nl ? (size_t) (nl - p) + 1 : s->size - s->pos;
        s->pos += len;
        s->line++;
        end = p + len - (nl ? 1 : 0);
        if (end > p && end[-1] == '\r')
                end--;

        /* The UTF-8 byte order mark libinih would skip. */
        if (s->line == 1 && end - p >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
                p += 3;
        while (p < end && (*p == ' ' || *p == '\t'))
                p++;

        s->cur = "\n";
        s->cur_len = 1;
        if (memchr(p, '\0', (size_t) (end - p))) {
                line_error(s, s->line, "NUL byte in line (is this a text file?)");
                return true;
        }
        if (p == end || *p == ';' || *p == '#')
                return true;
        if ((size_t) (end - p) > CONFIG_LINE_MAX) {
                line_error(s, s->line, "line too long (%zu bytes, at most %d)", (size_t) (end - p),
                           CONFIG_LINE_MAX);
                return true;
        }
        if (!line_syntax_ok(p, end)) {
                line_error(s, s->line, "syntax error (expected [section] or key = value)");
                return true;
        }
        /* Through the newline, if any: libinih strips what follows the value. */
        s->cur = p;
        s->cur_len = (size_t) (s->data + s->pos - p);
        return true;
}

static char *read_line(char *str, int num, void *stream) {
        struct parse_state *s = stream;
        size_t n;

        if (num < 2)
                return NULL;
        if (!s->cur && !next_line(s))
                return NULL;
        n = MIN(s->cur_len, (size_t) num - 1);
        memcpy(str, s->cur, n);
        str[n] = '\0';
        s->cur += n;
        s->cur_len -= n;
        if (s->cur_len == 0)
                s->cur = NULL;
        return str;
}

/* ---- the handler ---- */

static bool section_known(const char *section) {
        for (size_t i = 0; i < ELEMENTSOF(known_sections); i++)
                if (streq(section, known_sections[i]))
                        return true;
        return false;
}

static int on_ini_line(void *user, const char *section, const char *name, const char *value) {
        struct parse_state *s = user;

        if (section[0] == '\0') {
                line_error(s, s->line, "[] %s: key outside of any [section]", name);
                return 1;
        }
        if (!section_known(section)) {
                line_error(s, s->line, "[%s] %s: unknown section [%s]", section, name, section);
                return 1;
        }

        for (size_t i = 0; i < ELEMENTSOF(items); i++) {
                const struct config_item *it = &items[i];
                char reason[MESSAGE_MAX];

                if (!streq(it->section, section) || !streq(it->key, name))
                        continue;
                /* A second value in one file is a mistake (only one would count). */
                if (s->key_line[i] != 0) {
                        line_error(s, s->line,
                                   "[%s] %s: set again (first on line %u); a key may appear once per file, "
                                   "a later drop-in overrides it",
                                   section, name, s->key_line[i]);
                        return 1;
                }
                s->key_line[i] = s->line;
                if (it->parse(it, value, (uint8_t *) s->config + it->offset, reason, sizeof(reason)) < 0)
                        line_error(s, s->line, "[%s] %s: %s", section, name, reason);
                return 1;
        }
        line_error(s, s->line, "[%s] %s: unknown key", section, name);
        /* Our own errors are counted above; a 0 here would only repeat them in libinih's result. */
        return 1;
}

int config_parse_buffer(struct config *c, const void *data, size_t size, const char *filename,
                        struct config_error *err) {
        struct parse_state s = {
                .config = c,
                .filename = filename,
                .err = err,
                .data = data,
                .size = size,
        };
        int r;

        /* See CONFIG_LINE_MAX. The parse runs on one thread (start, reload). */
        ini_use_stack = false;
        ini_allow_realloc = true;
        ini_max_line = CONFIG_LINE_MAX + 3; /* '\r', '\n', '\0' */

        r = ini_parse_stream(read_line, &s, on_ini_line, &s);
        if (r == -2) {
                add_error(err, "%s: out of memory", filename);
                return -ENOMEM;
        }
        /* The reader checks what libinih refuses; should libinih still find a line we did not. */
        if (r > 0 && (s.first_error_line == 0 || (unsigned) r < s.first_error_line))
                line_error(&s, (unsigned) r, "syntax error (expected [section] or key = value)");
        return s.n_errors > 0 ? -EINVAL : 0;
}

int config_parse_string(struct config *c, const char *text, const char *filename,
                        struct config_error *err) {
        return config_parse_buffer(c, text, strlen(text), filename, err);
}

/* ---- files ---- */

/*
 * Read a whole config file into memory: only regular files of at most
 * CONFIG_FILE_MAX bytes (a FIFO would block, /dev/zero never end).
 */
static int read_file(const char *path, char **ret_data, size_t *ret_size, struct config_error *err) {
        struct stat st;
        int r;

        r = read_regular_file(path, CONFIG_FILE_MAX, ret_data, ret_size);
        if (r == -EBADFD && stat(path, &st) == 0)
                add_error(err, "%s: refused: %s, config files must be regular files", path,
                          file_mode_kind(st.st_mode));
        else if (r == -EFBIG && stat(path, &st) == 0 && st.st_size > CONFIG_FILE_MAX)
                add_error(err, "%s: refused: %jd bytes, config files are at most %d bytes", path,
                          (intmax_t) st.st_size, CONFIG_FILE_MAX);
        else if (r == -EFBIG) /* grew while read */
                add_error(err, "%s: refused: more than %d bytes, config files are at most %d bytes", path,
                          CONFIG_FILE_MAX, CONFIG_FILE_MAX);
        else if (r < 0)
                add_error(err, "%s: cannot open: %s", path, strerror(-r));
        return r;
}

static int config_parse_file(struct config *c, const char *path, struct config_error *err) {
        _cleanup_free_ char *data = NULL;
        size_t size = 0;
        int r;

        r = read_file(path, &data, &size, err);
        if (r < 0)
                return r;
        return config_parse_buffer(c, data, size, path, err);
}

static int dropin_filter(const struct dirent *de) {
        size_t n = strlen(de->d_name);

        return de->d_name[0] != '.' && n > 5 && streq(de->d_name + n - 5, ".conf");
}

/* Lexical order in the C sense, as systemd sorts drop-ins: not locale-dependent. */
static int dropin_compare(const struct dirent **a, const struct dirent **b) {
        return strcmp((*a)->d_name, (*b)->d_name);
}

/* The main file may be absent unless the user named it. */
static int config_parse_main(struct config *c, const char *path, bool must_exist,
                             struct config_error *err) {
        if (!must_exist && access(path, F_OK) < 0 && errno == ENOENT)
                return 0;
        return config_parse_file(c, path, err);
}

int config_load(const char *path, bool must_exist, struct config *ret, struct config_error *err) {
        struct config c;
        struct dirent **list = NULL;
        char dir[PATH_MAX];
        int n, r;

        config_init(&c);

        r = config_parse_main(&c, path, must_exist, err);
        /* An unreadable main file says nothing of the drop-ins: stop there. */
        if (r < 0 && r != -EINVAL)
                return r;

        if ((size_t) snprintf(dir, sizeof(dir), "%s.d", path) >= sizeof(dir)) {
                add_error(err, "%s: path too long", path);
                return -ENAMETOOLONG;
        }
        n = scandir(dir, &list, dropin_filter, dropin_compare);
        if (n < 0 && errno != ENOENT && errno != ENOTDIR) {
                int k = -errno;

                add_error(err, "%s: cannot read drop-in directory: %s", dir, strerror(-k));
                return k;
        }
        /* Every drop-in is read, so that all their errors are reported at once. */
        for (int i = 0; i < n; i++) {
                char file[4096 + 256];
                int k;

                snprintf(file, sizeof(file), "%s/%s", dir, list[i]->d_name);
                k = config_parse_file(&c, file, err);
                if (r == 0)
                        r = k;
                free(list[i]);
        }
        free(list);
        if (r < 0)
                return r;
        r = config_check(&c, path, err);
        if (r < 0)
                return r;
        *ret = c;
        return 0;
}
