/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Configuration: /etc/armprofd/armprofd.conf plus drop-ins in
 * armprofd.conf.d/ (files ending in .conf, lexical order, later wins), INI parsed by libinih
 * through one declarative table (section, key, parser, destination, limits).
 *
 * Files are read whole into memory first: regular files only, at most
 * CONFIG_FILE_MAX bytes, opened non-blocking (a FIFO, a device or a
 * directory is refused at once, never read). Lines are at most 4096
 * bytes (CONFIG_LINE_MAX, config.c; comment lines do not count); a NUL byte
 * is an error; a value is on one line (an indented line is not a
 * continuation). A key may appear once per file; a later drop-in overrides it.
 * Every error of every file is reported (up to CONFIG_ERRORS_MAX).
 *
 * The struct is plain data, so a reload parses into a fresh copy and swaps it
 * in only when the whole new configuration is valid.
 */

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "parse-util.h"

#define CONFIG_DEFAULT_LISTEN ":9769"

/* [spe] enable: auto|yes|no (yes/no also in every spelling parse_bool() takes). */
enum config_spe_enable { CONFIG_SPE_AUTO, CONFIG_SPE_YES, CONFIG_SPE_NO };

/*
 * [spe] limits. The period is PMSIRR_EL1.INTERVAL, bits [31:8] (Arm ARM,
 * PMSIRR_EL1; drivers/perf/arm_spe_pmu.c, arm_spe_event_sanitise_period()).
 * The AUX area is a power of two of pages, at least 2 (arm_spe_pmu_setup_aux())
 * and at least 8 KiB (perf's tools/perf/arch/arm64/util/arm-spe.c,
 * arm_spe_recording_options(), refuses less); the data ring is a power of two
 * of pages (kernel/events/core.c, perf_mmap()).
 */
#define CONFIG_SPE_PERIOD_MIN          UINT64_C(256)
#define CONFIG_SPE_PERIOD_MAX          UINT64_C(0xFFFFFF00)
#define CONFIG_SPE_MIN_LATENCY_MAX     65535U
#define CONFIG_SPE_AUX_BUFFER_MIN      (UINT64_C(8) << 10)
#define CONFIG_SPE_AUX_BUFFER_PAGES    2U
#define CONFIG_SPE_AUX_BUFFER_MAX      (UINT64_C(1) << 30)
#define CONFIG_SPE_DATA_BUFFER_PAGES   1U
#define CONFIG_SPE_DATA_BUFFER_MAX     (UINT64_C(64) << 20)

/* [sampler] unwind: how user stacks are walked (README "CPU profiles where there is no SPE"). */
enum config_unwind { CONFIG_UNWIND_AUTO, CONFIG_UNWIND_FP, CONFIG_UNWIND_DWARF };

/*
 * [sampler] limits. An always-on profiler samples at tens of Hz (Parca,
 * Pyroscope: 19-20 Hz); 1000 Hz is where its own cost stops being small.
 * The user stack copy: the kernel refuses sample_stack_user of USHRT_MAX or
 * more, or not a multiple of 8 (kernel/events/core.c, perf_copy_attr()).
 * Callchains: PERF_MAX_STACK_DEPTH (include/uapi/linux/perf_event.h) is the
 * kernel's default perf_event_max_stack; the source clamps to the sysctl.
 */
#define CONFIG_SAMPLER_FREQ_MAX        1000U
#define CONFIG_SAMPLER_MAX_STACK_MAX   1024U
#define CONFIG_SAMPLER_STACK_SIZE_MAX  UINT64_C(65528)
#define CONFIG_SAMPLER_EVENT_MAX       32

#define CONFIG_PUSH_URL_MAX        2048
#define CONFIG_PUSH_NAME_MAX       256  /* service_name, tenant, basic_auth_user */
#define CONFIG_PUSH_LABELS_MAX     2048
#define CONFIG_PUSH_MAX_AGE_MAX    (3600 * USEC_PER_SEC) /* the store's window (Pyroscope: 1 h) */

struct config {
        struct {
                struct listen_addr listen;
                uint32_t max_connections;
                uint32_t per_ip_connections; /* 0 = no per-IP limit */
                uint64_t timeout_usec;
                uint64_t max_request_bytes;  /* request line + headers */
                /*
                 * Per-process detail (/hotlines, /hotpcs, /latency, /counters,
                 * /debug/pprof/...) to every client; false (the default,
                 * "loopback"): to loopback clients only.
                 */
                bool detail_any;
                /*
                 * The exporter toolkit's web configuration (TLS, basic auth,
                 * headers, rate limit): an absolute path, "" for none. Re-read
                 * at every reload.
                 */
                char web_config[PATH_MAX];
        } http;
        struct {
                bool enable;
                uint64_t interval_usec;
                /* Bit i set: pmu_event_id i is counted. All bits: the catalogue. */
                uint32_t events_mask;
                uint32_t general_counters; /* 0: per-PMU default */
        } pmu;
        struct {
                enum config_spe_enable enable;  /* auto (default): where an arm_spe PMU covers a CPU, quietly off
                                                   elsewhere; yes: its absence is reported as a failure on /status
                                                   (never fatal); no: never opened */
                uint64_t period;                /* operations between samples, default 1048576; range
                                                   [256, 0xFFFFFF00] (PMSIRR_EL1.INTERVAL, bits [31:8]); the
                                                   source clamps to caps/min_interval and rounds to 256, logging it */
                bool jitter;                    /* default yes (perf's default too) */
                bool load_filter, store_filter, branch_filter; /* default no: all ops */
                uint32_t min_latency;           /* cycles, default 0, max 65535 (the PMU's count_size decides at open) */
                uint64_t event_filter;          /* PMSEVFR_EL1 bits, default 0; accept 0x hex */
                uint64_t inv_event_filter;      /* PMSNEVFR_EL1 bits (SPEv1p2), default 0 */
                bool exclude_kernel;            /* default yes: EL1/EL2 records only when no */
                uint64_t aux_buffer;            /* bytes per CPU, default 256 KiB; a power of two, at least 2 pages
                                                   and 8 KiB, at most 1 GiB (page size at parse: sysconf) */
                uint64_t data_buffer;           /* bytes per CPU of the data ring (AUX and switch records), default
                                                   64 KiB; power of two, ≥ 1 page, ≤ 64 MiB */
                uint64_t watermark;             /* bytes; 0 (default) = half of aux_buffer; must be < aux_buffer
                                                   (config_check(), file-named error) */
                uint64_t drain_interval_usec;   /* default 1s, [10ms, 1min]: the timer that flushes a quiet CPU */
        } spe;
        struct {
                enum config_spe_enable enable;  /* auto (default): on where SPE is absent or off; yes: also beside
                                                   SPE; no: never */
                char event[CONFIG_SAMPLER_EVENT_MAX]; /* "cpu-clock" (default), "task-clock", "cycles"... */
                uint32_t frequency;             /* Hz per CPU, default 19 (a prime: no beat with the tick) */
                uint32_t max_stack;             /* frames, default 127; the kernel's perf_event_max_stack caps it */
                enum config_unwind unwind;      /* auto (default): CFI where the binary has it, else frame pointers */
                uint64_t stack_size;            /* bytes of user stack copied per sample for CFI unwinding, 8 KiB */
                uint64_t data_buffer;           /* bytes per CPU of the data ring, default 256 KiB */
        } sampler;
        struct {
                double cpu_percent;             /* the collector's share of the host's CPUs over a window that
                                                   slows sampling down, default 1; 0: no budget (daemon/budget.h) */
                uint64_t window_usec;           /* default 1 min, [1 s, 1 h] */
        } budget;
        struct {
                uint64_t epoch_usec;
                uint32_t epochs;
                uint32_t hotpcs;
                uint32_t hotlines;
                uint32_t line_offsets;
                uint32_t line_size; /* 0: sysfs coherency_line_size, else 64 */
                uint32_t stacks;    /* distinct CPU-sample stacks per epoch */
                uint64_t max_memory_bytes; /* bound on store_bytes() of the above */
        } store;
        struct {
                /* Strings: "" when unset; the paths absolute. README.md "Send profiles to Pyroscope". */
                char url[CONFIG_PUSH_URL_MAX];  /* base URL; "" (default): no push */
                uint64_t interval_usec;         /* 1 s..1 h, default 15 s */
                char service_name[CONFIG_PUSH_NAME_MAX]; /* "": the host name */
                char labels[CONFIG_PUSH_LABELS_MAX];     /* "k=v, k2=v2" */
                char tenant[CONFIG_PUSH_NAME_MAX];       /* X-Scope-OrgID */
                char basic_auth_user[CONFIG_PUSH_NAME_MAX];
                char basic_auth_password_file[PATH_MAX];
                char bearer_token_file[PATH_MAX];
                char tls_ca_file[PATH_MAX];
                bool tls_insecure_skip_verify;
                uint64_t timeout_usec;          /* default 10 s */
                uint64_t max_profile_bytes;     /* serialized, per profile: default 4 MiB (the store's) */
                uint32_t max_samples;           /* per profile: default 16000 (the store's) */
                uint64_t max_age_usec;          /* spooled longer: dropped; default 55 min */
                char spool_dir[PATH_MAX];       /* default /var/lib/armprofd/spool */
                uint64_t spool_max_bytes;       /* default 64 MiB */
        } push;
        struct {
                /* Key hot lines by physical address (sharing across processes) and serve PAs. */
                bool physical_addresses;
                /* Name kernel frames from /proc/kallsyms (kernel addresses reach the profiles); else one [kernel]. */
                bool kernel_addresses;
                /* Serve data addresses as they are; else as offsets in their mappings ("[heap]+0x1c40"). */
                bool data_addresses;
        } privacy;
};

#define CONFIG_FILE_MAX   (1024 * 1024)
#define CONFIG_ERRORS_MAX 20

/*
 * Every error found, in the order found, each "file:line: [section] key: reason"
 * (or "file: reason"), non-printable bytes escaped as \xNN. n counts them
 * all; the first CONFIG_ERRORS_MAX are kept.
 */
struct config_error {
        unsigned n;
        char msg[CONFIG_ERRORS_MAX][MESSAGE_MAX];
};

/* Log each kept error at LOG_ERR as "config: <msg>", then how many were left out. */
void config_error_log(const struct config_error *err);

void config_init(struct config *c);

/*
 * Parse `size` bytes of INI text into c (which holds defaults or earlier
 * files). `filename` only names the text in errors. Returns 0, or -EINVAL
 * with the errors appended to err.
 */
int config_parse_buffer(struct config *c, const void *data, size_t size, const char *filename,
                        struct config_error *err);
/* The same for a NUL-terminated string. */
int config_parse_string(struct config *c, const char *text, const char *filename,
                        struct config_error *err);

struct push_options;
/* [push] as push_new() takes it; the strings point into c. */
void config_push_options(const struct config *c, struct push_options *o);

struct privacy_policy;
/* [privacy] as the answers and profiles apply it (exporters/privacy.h). */
void config_privacy_policy(const struct config *c, struct privacy_policy *ret);

struct store_options;
/*
 * The store's CPU-stack tables (store.h): sized from [store] stacks (32
 * frames a stack on average, a context for every four stacks), none at all
 * when [sampler] enable = no, so a host that never samples CPU time does
 * not pay for them.
 */
void config_stack_options(const struct config *c, struct store_options *o);

/* The memory the store described by c's [store] section is bounded by (store_bytes()). */
uint64_t config_store_bytes(const struct config *c);

/*
 * Checks across keys, on a complete configuration: the store's memory bound
 * against [store] max_memory, and [spe] watermark below [spe] aux_buffer.
 * `filename` names the configuration in errors. Every failed check appends an
 * error to err; returns 0, or the first failure's code: -E2BIG (store) or
 * -EINVAL (watermark).
 */
int config_check(const struct config *c, const char *filename, struct config_error *err);

/*
 * Defaults, then `path`, then the .conf files of `path`.d/ in lexical order,
 * then config_check(). A missing main file is an error only when `must_exist`
 * (the user named it with -c); a missing drop-in directory never is. On error
 * ret is untouched and err holds every error found.
 */
int config_load(const char *path, bool must_exist, struct config *ret, struct config_error *err);

/* Iterate the table, e.g. for --help or documentation. */
size_t config_n_items(void);
void config_item_name(size_t i, const char **ret_section, const char **ret_key);
