/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "pmu-event.h"
#include "macro.h"
#include "store.h"

static void test_defaults(void **state) {
        struct config c;
        char buf[80];

        config_init(&c);
        assert_string_equal(listen_addr_to_string(&c.http.listen, buf, sizeof(buf)), ":9769");
        assert_int_equal(c.http.max_connections, 32);
        assert_int_equal(c.http.timeout_usec, 15 * USEC_PER_SEC);
        assert_false(c.http.detail_any); /* per-process detail to loopback clients only */
        assert_true(c.pmu.enable);
        assert_int_equal(c.pmu.interval_usec, USEC_PER_SEC);
        assert_int_equal(c.pmu.events_mask, (1U << _PMU_EVENT_MAX) - 1);
        assert_int_equal(c.pmu.general_counters, 0);

        assert_int_equal(c.spe.enable, CONFIG_SPE_AUTO);
        assert_int_equal(c.spe.period, 1048576);
        assert_true(c.spe.jitter);
        assert_false(c.spe.load_filter);
        assert_false(c.spe.store_filter);
        assert_false(c.spe.branch_filter);
        assert_int_equal(c.spe.min_latency, 0);
        assert_int_equal(c.spe.event_filter, 0);
        assert_int_equal(c.spe.inv_event_filter, 0);
        assert_true(c.spe.exclude_kernel);
        assert_int_equal(c.spe.aux_buffer, 256 * 1024);
        assert_int_equal(c.spe.data_buffer, 64 * 1024);
        assert_int_equal(c.spe.watermark, 0);
        assert_int_equal(c.spe.drain_interval_usec, 1000000);

        assert_float_equal(c.budget.cpu_percent, 1.0, 0);
        assert_int_equal(c.budget.window_usec, 60 * USEC_PER_SEC);

        assert_int_equal(c.sampler.enable, CONFIG_SPE_AUTO);
        assert_string_equal(c.sampler.event, "cpu-clock");
        assert_int_equal(c.sampler.frequency, 19);
        assert_int_equal(c.sampler.max_stack, 127);
        assert_int_equal(c.sampler.unwind, CONFIG_UNWIND_AUTO);
        assert_int_equal(c.sampler.stack_size, 8192);
        assert_int_equal(c.sampler.data_buffer, 256 * 1024);
        assert_int_equal(c.store.stacks, STORE_STACKS_DEFAULT);
        assert_false(c.privacy.kernel_addresses);
        assert_true(c.privacy.data_addresses);
}

#define ALL_EVENTS                                                                                  \
        "cycles instructions l1d_cache l1d_cache_refill llc_read llc_read_miss l1d_tlb l1d_tlb_refill " \
        "dtlb_walk branch_mispredicts stall_frontend stall_backend context_switches cpu_migrations "    \
        "page_faults"

/* Each bad input must fail with the exact file:line and name the key; every error is reported. */
static void test_errors(void **state) {
        static const struct {
                const char *text;
                const char *want[4]; /* exact error messages, in order */
        } cases[] = {
                { "[http]\nlisten = nowhere\n",
                  { "t.conf:2: [http] listen: invalid listen address 'nowhere' (expected ADDR:PORT, [IPV6]:PORT or :PORT)" } },
                { "[http]\n\n# comment\nmax_connections = 0\n",
                  { "t.conf:4: [http] max_connections: value '0' out of range [1, 4096]" } },
                { "[http]\nmax_connections = 5000\n",
                  { "t.conf:2: [http] max_connections: value '5000' out of range [1, 4096]" } },
                { "[http]\nmax_connections = -1\n",
                  { "t.conf:2: [http] max_connections: invalid unsigned number '-1'" } },
                { "[http]\ntimeout = 5 parsecs\n",
                  { "t.conf:2: [http] timeout: invalid duration '5 parsecs' (expected e.g. 10s, 500ms, 1m)" } },
                { "[http]\ntimeout = 500ms\n",
                  { "t.conf:2: [http] timeout: duration '500ms' out of range [1000ms, 3600s]" } },
                { "[http]\nmax_request_size = lots\n",
                  { "t.conf:2: [http] max_request_size: invalid size 'lots' (expected e.g. 4096, 64KiB, 16MiB)" } },
                { "[http]\nmax_request_size = 2MiB\n",
                  { "t.conf:2: [http] max_request_size: value '2MiB' out of range [4096, 1048576]" } },
                { "[pmu]\nenable = perhaps\n",
                  { "t.conf:2: [pmu] enable: invalid boolean 'perhaps' (expected yes/no, true/false, on/off, 1/0)" } },
                { "[pmu]\ninterval = 10ms\n",
                  { "t.conf:2: [pmu] interval: duration '10ms' out of range [100ms, 3600s]" } },
                { "[pmu]\nintervall = 1s\n", { "t.conf:2: [pmu] intervall: unknown key" } },
                { "[pmu]\nevents = cycles, bogus\n",
                  { "t.conf:2: [pmu] events: unknown event 'bogus' (known: " ALL_EVENTS ")" } },
                { "[pmu]\nevents = , ,\n",
                  { "t.conf:2: [pmu] events: empty event list (use enable = no to turn counting off)" } },
                { "[pmu]\ngeneral_counters = 32\n",
                  { "t.conf:2: [pmu] general_counters: value '32' out of range [0, 31]" } },
                { "[bogus]\nkey = 1\n", { "t.conf:2: [bogus] key: unknown section [bogus]" } },
                { "stray = 1\n[http]\n", { "t.conf:1: [] stray: key outside of any [section]" } },
                { "[http]\nthis line has no equals sign\n",
                  { "t.conf:2: syntax error (expected [section] or key = value)" } },
                { "[http\nlisten = :1\n",
                  { "t.conf:1: syntax error (expected [section] or key = value)",
                    "t.conf:2: [] listen: key outside of any [section]" } },
                /* A syntax error and a key error after it: both. */
                { "[pmu]\n[broken\nenable = x\n",
                  { "t.conf:2: syntax error (expected [section] or key = value)",
                    "t.conf:3: [pmu] enable: invalid boolean 'x' (expected yes/no, true/false, on/off, 1/0)" } },
                /* An indented line is not a continuation that silently replaces the value. */
                { "[pmu]\nenable = 1\n  continued\n",
                  { "t.conf:3: syntax error (expected [section] or key = value)" } },
                { "[pmu]\nenable = no\n\tinterval = 2s\n[http]\n  listen = :1\n", { NULL } },
                /* Every error, in order, syntax errors included. */
                { "[pmu]\nenable = x\ninterval = y\nnonsense\n[http]\nmax_connections = 0\n",
                  { "t.conf:2: [pmu] enable: invalid boolean 'x' (expected yes/no, true/false, on/off, 1/0)",
                    "t.conf:3: [pmu] interval: invalid duration 'y' (expected e.g. 10s, 500ms, 1m)",
                    "t.conf:4: syntax error (expected [section] or key = value)",
                    "t.conf:6: [http] max_connections: value '0' out of range [1, 4096]" } },
                /* A key given twice in one file: only one could count. */
                { "[pmu]\nevents = cycles\n\n[http]\n[pmu]\nevents = instructions\n",
                  { "t.conf:6: [pmu] events: set again (first on line 2); a key may appear once per file, "
                    "a later drop-in overrides it" } },
                /* [sampler]: each key's refusals. */
                { "[sampler]\nenable = sometimes\n",
                  { "t.conf:2: [sampler] enable: invalid value 'sometimes' (expected auto, yes or no)" } },
                { "[sampler]\nevent = clock\n",
                  { "t.conf:2: [sampler] event: unknown event 'clock' (expected cpu-clock, task-clock, cycles, "
                    "instructions...)" } },
                { "[budget]\ncpu_percent = abc\n",
                  { "t.conf:2: [budget] cpu_percent: invalid percentage 'abc' (expected a number such as 1 or 0.25)" } },
                { "[budget]\ncpu_percent = -1\n",
                  { "t.conf:2: [budget] cpu_percent: invalid percentage '-1' (expected a number such as 1 or 0.25)" } },
                { "[budget]\ncpu_percent = 0.5%\n",
                  { "t.conf:2: [budget] cpu_percent: invalid percentage '0.5%' (expected a number such as 1 or 0.25)" } },
                { "[budget]\ncpu_percent = 0x10\n",
                  { "t.conf:2: [budget] cpu_percent: invalid percentage '0x10' (expected a number such as 1 or 0.25)" } },
                { "[budget]\ncpu_percent = 1e-3\n",
                  { "t.conf:2: [budget] cpu_percent: invalid percentage '1e-3' (expected a number such as 1 or 0.25)" } },
                { "[budget]\ncpu_percent = 1..2\n",
                  { "t.conf:2: [budget] cpu_percent: invalid percentage '1..2' (expected a number such as 1 or 0.25)" } },
                { "[budget]\ncpu_percent = nan\n",
                  { "t.conf:2: [budget] cpu_percent: invalid percentage 'nan' (expected a number such as 1 or 0.25)" } },
                { "[budget]\ncpu_percent = 100.5\n",
                  { "t.conf:2: [budget] cpu_percent: percentage '100.5' out of range [0, 100]" } },
                { "[budget]\nwindow = 500ms\n",
                  { "t.conf:2: [budget] window: duration '500ms' out of range [1000ms, 3600s]" } },
                { "[sampler]\nfrequency = 0\n",
                  { "t.conf:2: [sampler] frequency: value '0' out of range [1, 1000]" } },
                { "[sampler]\nfrequency = 1001\n",
                  { "t.conf:2: [sampler] frequency: value '1001' out of range [1, 1000]" } },
                { "[sampler]\nmax_stack = 1025\n",
                  { "t.conf:2: [sampler] max_stack: value '1025' out of range [1, 1024]" } },
                { "[sampler]\nunwind = lbr\n",
                  { "t.conf:2: [sampler] unwind: invalid value 'lbr' (expected auto, fp or dwarf)" } },
                { "[sampler]\nstack_size = 12\n",
                  { "t.conf:2: [sampler] stack_size: value '12' is not a multiple of 8 bytes" } },
                { "[sampler]\nstack_size = 64KiB\n",
                  { "t.conf:2: [sampler] stack_size: value '64KiB' out of range [0, 65528]" } },
                { "[sampler]\ndata_buffer = 100000\n",
                  { "t.conf:2: [sampler] data_buffer: value '100000' is not a power of two (e.g. 64KiB, 256KiB, "
                    "4MiB)" } },
                { "[store]\nstacks = 15\n",
                  { "t.conf:2: [store] stacks: value '15' out of range [16, 1048576]" } },
                { "[privacy]\nkernel_addresses = maybe\n",
                  { "t.conf:2: [privacy] kernel_addresses: invalid boolean 'maybe' (expected yes/no, true/false, "
                    "on/off, 1/0)" } },
                /* [spe]: each key's refusals (the ring sizes, which depend on the page size: test_spe_rings). */
                { "[spe]\nenable = sometimes\n",
                  { "t.conf:2: [spe] enable: invalid value 'sometimes' (expected auto, yes or no)" } },
                { "[spe]\nenable = autox\n",
                  { "t.conf:2: [spe] enable: invalid value 'autox' (expected auto, yes or no)" } },
                { "[spe]\nperiod = 255\n",
                  { "t.conf:2: [spe] period: value '255' out of range [256, 4294967040]" } },
                { "[spe]\nperiod = 0xFFFFFF01\n",
                  { "t.conf:2: [spe] period: value '0xFFFFFF01' out of range [256, 4294967040]" } },
                { "[spe]\nperiod = 4294967041\n",
                  { "t.conf:2: [spe] period: value '4294967041' out of range [256, 4294967040]" } },
                { "[spe]\nperiod = 1M\n",
                  { "t.conf:2: [spe] period: invalid unsigned number '1M' (decimal or 0x hex, at most 64 bits)" } },
                { "[spe]\nperiod = -1\n",
                  { "t.conf:2: [spe] period: invalid unsigned number '-1' (decimal or 0x hex, at most 64 bits)" } },
                { "[spe]\njitter = maybe\n",
                  { "t.conf:2: [spe] jitter: invalid boolean 'maybe' (expected yes/no, true/false, on/off, 1/0)" } },
                { "[spe]\nload_filter = 2\n",
                  { "t.conf:2: [spe] load_filter: invalid boolean '2' (expected yes/no, true/false, on/off, 1/0)" } },
                { "[spe]\nstore_filter = stores\n",
                  { "t.conf:2: [spe] store_filter: invalid boolean 'stores' (expected yes/no, true/false, on/off, 1/0)" } },
                { "[spe]\nbranch_filter = auto\n",
                  { "t.conf:2: [spe] branch_filter: invalid boolean 'auto' (expected yes/no, true/false, on/off, 1/0)" } },
                { "[spe]\nmin_latency = 65536\n",
                  { "t.conf:2: [spe] min_latency: value '65536' out of range [0, 65535]" } },
                { "[spe]\nmin_latency = 0x10\n",
                  { "t.conf:2: [spe] min_latency: invalid unsigned number '0x10'" } },
                /* 2^64: one hex digit too many. */
                { "[spe]\nevent_filter = 0x10000000000000000\n",
                  { "t.conf:2: [spe] event_filter: invalid unsigned number '0x10000000000000000' (decimal or 0x hex, "
                    "at most 64 bits)" } },
                { "[spe]\nevent_filter = 18446744073709551616\n",
                  { "t.conf:2: [spe] event_filter: invalid unsigned number '18446744073709551616' (decimal or 0x "
                    "hex, at most 64 bits)" } },
                /* strtoull() would take these; a mask is digits only. */
                { "[spe]\nevent_filter = 0x\ninv_event_filter = 0x-1\n",
                  { "t.conf:2: [spe] event_filter: invalid unsigned number '0x' (decimal or 0x hex, at most 64 bits)",
                    "t.conf:3: [spe] inv_event_filter: invalid unsigned number '0x-1' (decimal or 0x hex, at most "
                    "64 bits)" } },
                { "[spe]\ninv_event_filter = 0x 12\n",
                  { "t.conf:2: [spe] inv_event_filter: invalid unsigned number '0x 12' (decimal or 0x hex, at most "
                    "64 bits)" } },
                { "[spe]\nexclude_kernel = kernel\n",
                  { "t.conf:2: [spe] exclude_kernel: invalid boolean 'kernel' (expected yes/no, true/false, on/off, "
                    "1/0)" } },
                { "[spe]\nwatermark = 2GiB\n",
                  { "t.conf:2: [spe] watermark: value '2GiB' out of range [0, 1073741824]" } },
                { "[spe]\nwatermark = half\n",
                  { "t.conf:2: [spe] watermark: invalid size 'half' (expected e.g. 4096, 64KiB, 16MiB)" } },
                { "[spe]\ndrain_interval = 9ms\n",
                  { "t.conf:2: [spe] drain_interval: duration '9ms' out of range [10ms, 60s]" } },
                { "[spe]\ndrain_interval = 61s\n",
                  { "t.conf:2: [spe] drain_interval: duration '61s' out of range [10ms, 60s]" } },
                { "[spe]\ndrain_interval = often\n",
                  { "t.conf:2: [spe] drain_interval: invalid duration 'often' (expected e.g. 10s, 500ms, 1m)" } },
                { "[spe]\nperiode = 4096\n", { "t.conf:2: [spe] periode: unknown key" } },
                { "[spe]\nperiod = 4096\n\nperiod = 8192\n",
                  { "t.conf:4: [spe] period: set again (first on line 2); a key may appear once per file, "
                    "a later drop-in overrides it" } },
                /* Binary junk is escaped, not echoed raw into the log. */
                { "[pmu]\n\x01\x1b[2J\xff = 3\n",
                  { "t.conf:2: [pmu] \\x01\\x1b[2J\\xff: unknown key" } },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct config_error err = {};
                unsigned n = 0;
                struct config c;
                int r;

                while (n < ELEMENTSOF(cases[i].want) && cases[i].want[n])
                        n++;
                config_init(&c);
                r = config_parse_string(&c, cases[i].text, "t.conf", &err);
                if (r != (n > 0 ? -EINVAL : 0))
                        fail_msg("case %zu: got %d, want %s", i, r, n > 0 ? "-EINVAL" : "0");
                if (err.n != n)
                        fail_msg("case %zu: got %u errors, want %u (first: %s)", i, err.n, n, err.msg[0]);
                for (unsigned k = 0; k < n; k++)
                        if (strcmp(err.msg[k], cases[i].want[k]) != 0)
                                fail_msg("case %zu, error %u:\n got:  %s\n want: %s", i, k, err.msg[k],
                                         cases[i].want[k]);
        }
}

static void test_long_lines(void **state) {
        struct config_error err = {};
        struct config c;
        char text[8192];

        /* The whole catalogue on one line (over libinih's default 200-byte buffer) and long comments. */
        assert_true(strlen("events = " ALL_EVENTS) > 200);
        snprintf(text, sizeof(text), "[pmu]\n# %0600d\nevents = " ALL_EVENTS "\n; %01000d\nenable = no\n", 0, 0);
        config_init(&c);
        c.pmu.events_mask = 0;
        assert_int_equal(config_parse_string(&c, text, "t.conf", &err), 0);
        assert_int_equal(err.n, 0);
        assert_int_equal(c.pmu.events_mask, (1U << _PMU_EVENT_MAX) - 1);
        assert_int_equal(_PMU_EVENT_MAX, 15);
        assert_false(c.pmu.enable);

        /* Beyond the limit: one error on its own line, not a line split in two. */
        snprintf(text, sizeof(text), "[pmu]\nevents = cycles %05000d\nenable = no\ninterval = x\n", 0);
        config_init(&c);
        assert_int_equal(config_parse_string(&c, text, "t.conf", &err), -EINVAL);
        assert_int_equal(err.n, 2);
        assert_string_equal(err.msg[0], "t.conf:2: line too long (5016 bytes, at most 4096)");
        assert_non_null(strstr(err.msg[1], "t.conf:4: [pmu] interval: invalid duration 'x'"));
        assert_false(c.pmu.enable);
}

/* A NUL byte does not end the text: "127.0.0.1:1\0garbage" is not "127.0.0.1:1". */
static void test_nul_byte(void **state) {
        static const char text[] = "[http]\nlisten = 127.0.0.1:1\0garbage\nmax_connections = 3\n";
        struct config_error err = {};
        struct config c;
        char buf[80];

        config_init(&c);
        assert_int_equal(config_parse_buffer(&c, text, sizeof(text) - 1, "t.conf", &err), -EINVAL);
        assert_int_equal(err.n, 1);
        assert_string_equal(err.msg[0], "t.conf:2: NUL byte in line (is this a text file?)");
        assert_string_equal(listen_addr_to_string(&c.http.listen, buf, sizeof(buf)), ":9769");
        assert_int_equal(c.http.max_connections, 3);
}

static void test_error_cap(void **state) {
        char text[4096] = "[pmu]\n";
        struct config_error err = {};
        struct config c;

        for (int i = 0; i < 30; i++)
                snprintf(text + strlen(text), sizeof(text) - strlen(text), "bad%d = 1\n", i);
        config_init(&c);
        assert_int_equal(config_parse_string(&c, text, "t.conf", &err), -EINVAL);
        /* All 30 counted, the first CONFIG_ERRORS_MAX kept. */
        assert_int_equal(err.n, 30);
        assert_int_equal(CONFIG_ERRORS_MAX, 20);
        assert_string_equal(err.msg[0], "t.conf:2: [pmu] bad0: unknown key");
        assert_string_equal(err.msg[19], "t.conf:21: [pmu] bad19: unknown key");
}

static void test_values(void **state) {
        struct config_error err = {};
        struct config c;
        char buf[80];

        config_init(&c);
        assert_int_equal(config_parse_string(&c,
                                             "; armprofd\n"
                                             "[http]\n"
                                             "listen = [::1]:9100\n"
                                             "max_connections = 4096\n"
                                             "per_ip_connections = 0\n"
                                             "timeout = 1m\n"
                                             "max_request_size = 64KiB\n"
                                             "detail = Any\n"
                                             "[pmu]\n"
                                             "enable = off\n"
                                             "interval = 250ms\n"
                                             "events = page_faults,cycles  context_switches\n"
                                             "general_counters = 4\n"
                                             "[privacy]\n"
                                             "physical_addresses = yes\n"
                                             "kernel_addresses = yes\n"
                                             "data_addresses = no\n"
                                             "[budget]\n"
                                             "cpu_percent = .25\n"
                                             "window = 10s\n"
                                             "[sampler]\n"
                                             "enable = yes\n"
                                             "event = task-clock\n"
                                             "frequency = 1000\n"
                                             "max_stack = 1\n"
                                             "unwind = DWARF\n"
                                             "stack_size = 65528\n"
                                             "data_buffer = 1MiB\n"
                                             "[store]\n"
                                             "stacks = 16\n"
                                             "[spe]\n",
                                             "t.conf", &err),
                         0);
        assert_string_equal(listen_addr_to_string(&c.http.listen, buf, sizeof(buf)), "[::1]:9100");
        assert_int_equal(c.http.max_connections, 4096);
        assert_int_equal(c.http.per_ip_connections, 0);
        assert_int_equal(c.http.timeout_usec, 60 * USEC_PER_SEC);
        assert_int_equal(c.http.max_request_bytes, 64 * 1024);
        assert_false(c.pmu.enable);
        assert_int_equal(c.pmu.interval_usec, 250 * USEC_PER_MSEC);
        assert_int_equal(c.pmu.events_mask, (1U << PMU_EVENT_PAGE_FAULTS) | (1U << PMU_EVENT_CYCLES) |
                                                    (1U << PMU_EVENT_CONTEXT_SWITCHES));
        assert_int_equal(c.pmu.general_counters, 4);
        assert_true(c.privacy.physical_addresses);
        assert_true(c.privacy.kernel_addresses);
        assert_false(c.privacy.data_addresses);
        assert_float_equal(c.budget.cpu_percent, 0.25, 0);
        assert_int_equal(c.budget.window_usec, 10 * USEC_PER_SEC);
        assert_int_equal(c.sampler.enable, CONFIG_SPE_YES);
        assert_string_equal(c.sampler.event, "task-clock");
        assert_int_equal(c.sampler.frequency, 1000);
        assert_int_equal(c.sampler.max_stack, 1);
        assert_int_equal(c.sampler.unwind, CONFIG_UNWIND_DWARF);
        assert_int_equal(c.sampler.stack_size, 65528);
        assert_int_equal(c.sampler.data_buffer, 1024 * 1024);
        assert_int_equal(c.store.stacks, 16);
        assert_true(c.http.detail_any);
        assert_int_equal(config_parse_string(&c, "[http]\ndetail = loopback\n", "t.conf", &err), 0);
        assert_false(c.http.detail_any);
        err = (struct config_error) {};
        assert_int_equal(config_parse_string(&c, "[http]\ndetail = lan\n", "t.conf", &err), -EINVAL);
        assert_string_equal(err.msg[0], "t.conf:2: [http] detail: invalid value 'lan' (expected loopback or any)");
}

/* Every [spe] key at its range edges and in its other spellings. */
static void test_spe_values(void **state) {
        static const struct {
                const char *value;
                enum config_spe_enable want;
        } enables[] = {
                { "auto", CONFIG_SPE_AUTO }, { "AUTO", CONFIG_SPE_AUTO }, { "yes", CONFIG_SPE_YES },
                { "true", CONFIG_SPE_YES },  { "on", CONFIG_SPE_YES },    { "1", CONFIG_SPE_YES },
                { "no", CONFIG_SPE_NO },     { "False", CONFIG_SPE_NO },  { "off", CONFIG_SPE_NO },
                { "0", CONFIG_SPE_NO },
        };
        struct config_error err = {};
        struct config c;
        char text[128];

        for (size_t i = 0; i < ELEMENTSOF(enables); i++) {
                snprintf(text, sizeof(text), "[spe]\nenable = %s\n", enables[i].value);
                config_init(&c);
                c.spe.enable = (enum config_spe_enable) 99;
                assert_int_equal(config_parse_string(&c, text, "t.conf", &err), 0);
                if (c.spe.enable != enables[i].want)
                        fail_msg("enable = %s: got %d, want %d", enables[i].value, c.spe.enable, enables[i].want);
        }

        /* The low edges, the booleans turned from their defaults, masks in decimal. */
        config_init(&c);
        assert_int_equal(config_parse_string(&c,
                                             "[spe]\n"
                                             "period = 256\n"
                                             "jitter = no\n"
                                             "load_filter = yes\n"
                                             "store_filter = on\n"
                                             "branch_filter = 1\n"
                                             "min_latency = 0\n"
                                             "event_filter = 10\n"
                                             "inv_event_filter = 18446744073709551615\n"
                                             "exclude_kernel = false\n"
                                             "watermark = 0\n"
                                             "drain_interval = 10ms\n",
                                             "t.conf", &err),
                         0);
        assert_int_equal(err.n, 0);
        assert_int_equal(c.spe.period, 256);
        assert_false(c.spe.jitter);
        assert_true(c.spe.load_filter);
        assert_true(c.spe.store_filter);
        assert_true(c.spe.branch_filter);
        assert_int_equal(c.spe.min_latency, 0);
        assert_int_equal(c.spe.event_filter, 10);
        assert_true(c.spe.inv_event_filter == UINT64_MAX);
        assert_false(c.spe.exclude_kernel);
        assert_int_equal(c.spe.watermark, 0);
        assert_int_equal(c.spe.drain_interval_usec, 10000);

        /* The high edges; hex in either case. */
        config_init(&c);
        assert_int_equal(config_parse_string(&c,
                                             "[spe]\n"
                                             "period = 0xFFFFFF00\n"
                                             "min_latency = 65535\n"
                                             "event_filter = 0xffffffffffffffff\n"
                                             "inv_event_filter = 0X0000000000000000000000000000000A\n"
                                             "watermark = 1GiB\n"
                                             "drain_interval = 1m\n",
                                             "t.conf", &err),
                         0);
        assert_int_equal(err.n, 0);
        assert_true(c.spe.period == 4294967040u);
        assert_int_equal(c.spe.min_latency, 65535);
        assert_true(c.spe.event_filter == UINT64_MAX);
        assert_int_equal(c.spe.inv_event_filter, 10);
        assert_int_equal(c.spe.watermark, 1073741824);
        assert_int_equal(c.spe.drain_interval_usec, 60000000);

        /* A period in decimal at the top, and one the driver would round (the source's business). */
        config_init(&c);
        assert_int_equal(config_parse_string(&c, "[spe]\nperiod = 4294967040\n", "t.conf", &err), 0);
        assert_true(c.spe.period == 0xFFFFFF00u);
        assert_int_equal(config_parse_string(&c, "[spe]\nperiod = 1000\n", "t.conf", &err), 0);
        assert_int_equal(c.spe.period, 1000);
}

/*
 * The rings' floors are in pages, so their edges are this machine's: the
 * figures below come from sysconf() here, not from the parser.
 */
static void test_spe_rings(void **state) {
        const uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE);
        const uint64_t aux_lo = page * 2 > 8192 ? page * 2 : 8192;
        const char *s_pages = "2 pages";
        struct config_error err = {};
        struct config c;
        char text[256], want[512];

        assert_true(page >= 4096 && (page & (page - 1)) == 0);

        /* Lowest and highest of each accepted, in bytes and with units. */
        config_init(&c);
        snprintf(text, sizeof(text), "[spe]\naux_buffer = %" PRIu64 "\ndata_buffer = %" PRIu64 "\n", aux_lo, page);
        assert_int_equal(config_parse_string(&c, text, "t.conf", &err), 0);
        assert_int_equal(c.spe.aux_buffer, aux_lo);
        assert_int_equal(c.spe.data_buffer, page);
        config_init(&c);
        assert_int_equal(config_parse_string(&c, "[spe]\naux_buffer = 1GiB\ndata_buffer = 64MiB\n", "t.conf", &err),
                         0);
        assert_int_equal(c.spe.aux_buffer, 1073741824);
        assert_int_equal(c.spe.data_buffer, 67108864);
        config_init(&c);
        assert_int_equal(config_parse_string(&c, "[spe]\naux_buffer = 4M\ndata_buffer = 1MiB\n", "t.conf", &err), 0);
        assert_int_equal(c.spe.aux_buffer, 4 << 20);
        assert_int_equal(c.spe.data_buffer, 1 << 20);

        /* One power of two below the floor, one above the top. */
        config_init(&c);
        snprintf(text, sizeof(text), "[spe]\naux_buffer = %" PRIu64 "\n", aux_lo / 2);
        snprintf(want, sizeof(want),
                 "t.conf:2: [spe] aux_buffer: value '%" PRIu64 "' out of range [%" PRIu64
                 ", 1073741824] (at least %s of %" PRIu64 " bytes and 8192 bytes)",
                 aux_lo / 2, aux_lo, s_pages, page);
        assert_int_equal(config_parse_string(&c, text, "t.conf", &err), -EINVAL);
        assert_int_equal(err.n, 1);
        assert_string_equal(err.msg[0], want);
        assert_int_equal(c.spe.aux_buffer, 256 * 1024);

        err = (struct config_error) {};
        assert_int_equal(config_parse_string(&c, "[spe]\naux_buffer = 2GiB\n", "t.conf", &err), -EINVAL);
        snprintf(want, sizeof(want),
                 "t.conf:2: [spe] aux_buffer: value '2GiB' out of range [%" PRIu64
                 ", 1073741824] (at least %s of %" PRIu64 " bytes and 8192 bytes)",
                 aux_lo, s_pages, page);
        assert_string_equal(err.msg[0], want);

        err = (struct config_error) {};
        snprintf(text, sizeof(text), "[spe]\ndata_buffer = %" PRIu64 "\n", page / 2);
        snprintf(want, sizeof(want),
                 "t.conf:2: [spe] data_buffer: value '%" PRIu64 "' out of range [%" PRIu64
                 ", 67108864] (at least 1 page of %" PRIu64 " bytes)",
                 page / 2, page, page);
        assert_int_equal(config_parse_string(&c, text, "t.conf", &err), -EINVAL);
        assert_string_equal(err.msg[0], want);

        err = (struct config_error) {};
        assert_int_equal(config_parse_string(&c, "[spe]\ndata_buffer = 128MiB\n", "t.conf", &err), -EINVAL);
        snprintf(want, sizeof(want),
                 "t.conf:2: [spe] data_buffer: value '128MiB' out of range [%" PRIu64
                 ", 67108864] (at least 1 page of %" PRIu64 " bytes)",
                 page, page);
        assert_string_equal(err.msg[0], want);

        /* In range but not a power of two (so not a power of two of pages). */
        err = (struct config_error) {};
        assert_int_equal(config_parse_string(&c, "[spe]\naux_buffer = 192KiB\ndata_buffer = 65537\n", "t.conf", &err),
                         -EINVAL);
        assert_int_equal(err.n, 2);
        assert_string_equal(err.msg[0],
                            "t.conf:2: [spe] aux_buffer: value '192KiB' is not a power of two (e.g. 64KiB, 256KiB, 4MiB)");
        assert_string_equal(err.msg[1],
                            "t.conf:3: [spe] data_buffer: value '65537' is not a power of two (e.g. 64KiB, 256KiB, 4MiB)");
        assert_int_equal(c.spe.aux_buffer, 256 * 1024);
        assert_int_equal(c.spe.data_buffer, 64 * 1024);

        err = (struct config_error) {};
        assert_int_equal(config_parse_string(&c, "[spe]\naux_buffer = lots\n", "t.conf", &err), -EINVAL);
        assert_string_equal(err.msg[0],
                            "t.conf:2: [spe] aux_buffer: invalid size 'lots' (expected e.g. 64KiB, 256KiB, 4MiB)");
}

static void test_table_complete(void **state) {
        /* Every key the table knows is accepted by the parser. */
        for (size_t i = 0; i < config_n_items(); i++) {
                const char *section, *key;
                char text[256];
                struct config_error err = {};
                struct config c;
                int r;

                config_item_name(i, &section, &key);
                config_init(&c);
                snprintf(text, sizeof(text), "[%s]\n%s = !\x01\n", section, key);
                r = config_parse_string(&c, text, "t.conf", &err);
                /* "!\x01" is invalid for every type (a control character even for text): the error must name this key, not "unknown". */
                assert_int_equal(r, -EINVAL);
                assert_int_equal(err.n, 1);
                assert_non_null(strstr(err.msg[0], key));
                assert_null(strstr(err.msg[0], "unknown key"));
        }
}

struct tmpdir {
        char path[64];
};

static void write_file(const char *dir, const char *name, const char *text) {
        char p[256];
        FILE *f;

        snprintf(p, sizeof(p), "%s/%s", dir, name);
        f = fopen(p, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static int setup_dir(void **state) {
        struct tmpdir *t = calloc(1, sizeof(*t));

        strcpy(t->path, "/tmp/armprofd-test-config-XXXXXX");
        if (!mkdtemp(t->path))
                return -1;
        *state = t;
        return 0;
}

static int teardown_dir(void **state) {
        struct tmpdir *t = *state;
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->path);
        if (system(cmd) != 0)
                return -1;
        free(t);
        return 0;
}

static void test_load_dropins(void **state) {
        struct tmpdir *t = *state;
        char main_conf[128], dropins[160];
        struct config_error err = {};
        struct config c;

        snprintf(main_conf, sizeof(main_conf), "%s/armprofd.conf", t->path);
        snprintf(dropins, sizeof(dropins), "%s.d", main_conf);
        write_file(t->path, "armprofd.conf",
                   "[pmu]\ninterval = 5s\nevents = cycles\n[http]\nmax_connections = 7\n");
        assert_int_equal(mkdir(dropins, 0755), 0);
        /*
         * Lexical order: 10 before 20; 20 wins. A key set in the main file and again in a
         * drop-in is no error: the drop-in overrides it. Non-.conf files are ignored.
         */
        write_file(dropins, "20-late.conf", "[pmu]\ninterval = 3s\n");
        write_file(dropins, "10-early.conf", "[pmu]\ninterval = 2s\nenable = no\nevents = page_faults\n");
        write_file(dropins, "README", "this is not ini\n");
        write_file(dropins, "30-x.conf.disabled", "[pmu]\ninterval = 9s\n");

        assert_int_equal(config_load(main_conf, true, &c, &err), 0);
        assert_int_equal(c.pmu.interval_usec, 3 * USEC_PER_SEC);
        assert_false(c.pmu.enable);
        assert_int_equal(c.pmu.events_mask, 1U << PMU_EVENT_PAGE_FAULTS);
        assert_int_equal(c.http.max_connections, 7);

        /* An error in a drop-in names the drop-in and its line; ret stays untouched. */
        write_file(dropins, "15-bad.conf", "[pmu]\n\nenable = sometimes\n");
        c.http.max_connections = 1234;
        assert_int_equal(config_load(main_conf, true, &c, &err), -EINVAL);
        assert_non_null(strstr(err.msg[0], "armprofd.conf.d/15-bad.conf:3: [pmu] enable: invalid boolean"));
        assert_int_equal(c.http.max_connections, 1234);

        /* Errors of every file are reported, not only the first file's. */
        write_file(dropins, "16-bad.conf", "[http]\nmax_connections = 0\n");
        err = (struct config_error) {};
        assert_int_equal(config_load(main_conf, true, &c, &err), -EINVAL);
        assert_int_equal(err.n, 2);
        assert_non_null(strstr(err.msg[1], "armprofd.conf.d/16-bad.conf:2: [http] max_connections"));
}

/*
 * Only regular files are read: /dev/zero never ends and a FIFO blocks until a
 * writer comes. alarm() turns a hang into a failure.
 */
static void test_load_not_regular(void **state) {
        struct tmpdir *t = *state;
        char path[128], dropins[160], link[192], big[128];
        struct config_error err = {};
        struct config c;
        FILE *f;

        alarm(10);
        assert_int_equal(config_load("/dev/zero", true, &c, &err), -EBADFD);
        assert_int_equal(err.n, 1);
        assert_string_equal(err.msg[0],
                            "/dev/zero: refused: a character device, config files must be regular files");

        snprintf(path, sizeof(path), "%s/fifo.conf", t->path);
        assert_int_equal(mkfifo(path, 0600), 0);
        err = (struct config_error) {};
        assert_int_equal(config_load(path, true, &c, &err), -EBADFD);
        assert_non_null(strstr(err.msg[0], "fifo.conf: refused: a FIFO, config files must be regular files"));

        err = (struct config_error) {};
        assert_int_equal(config_load(t->path, true, &c, &err), -EBADFD);
        assert_non_null(strstr(err.msg[0], ": refused: a directory"));

        /* A drop-in symlinked to /dev/zero, next to a FIFO drop-in. */
        snprintf(path, sizeof(path), "%s/armprofd.conf", t->path);
        snprintf(dropins, sizeof(dropins), "%s.d", path);
        write_file(t->path, "armprofd.conf", "[pmu]\nenable = no\n");
        assert_int_equal(mkdir(dropins, 0755), 0);
        snprintf(link, sizeof(link), "%s/10-zero.conf", dropins);
        assert_int_equal(symlink("/dev/zero", link), 0);
        snprintf(link, sizeof(link), "%s/20-fifo.conf", dropins);
        assert_int_equal(mkfifo(link, 0600), 0);
        err = (struct config_error) {};
        assert_int_equal(config_load(path, true, &c, &err), -EBADFD);
        assert_int_equal(err.n, 2);
        assert_non_null(strstr(err.msg[0], "10-zero.conf: refused: a character device"));
        assert_non_null(strstr(err.msg[1], "20-fifo.conf: refused: a FIFO"));
        alarm(0);

        /* A regular file over the cap. */
        snprintf(big, sizeof(big), "%s/big.conf", t->path);
        f = fopen(big, "we");
        assert_non_null(f);
        for (int i = 0; i <= CONFIG_FILE_MAX / 64; i++)
                fprintf(f, "# %061d\n", i);
        fclose(f);
        err = (struct config_error) {};
        assert_int_equal(config_load(big, true, &c, &err), -EFBIG);
        assert_non_null(strstr(err.msg[0], "big.conf: refused: 1048640 bytes, config files are at most 1048576 bytes"));
}

/* The configuration passed every per-key range and aborted at start. */
static void test_memory_bound(void **state) {
        struct tmpdir *t = *state;
        struct store_options o;
        struct config_error err = {};
        struct config c;
        char path[128], want[512];

        /* The figure is the store's own bound (store_bytes(), which tests/store/test-bounds checks
         * against the memory the store really takes) of the same tables. */
        config_init(&c);
        store_options_init(&o);
        assert_int_equal(config_store_bytes(&c), store_bytes(&o));
        assert_int_equal(config_check(&c, "t.conf", &err), 0);
        /*
         * The default bound holds 55 minutes of 10 s epochs at the default table
         * sizes on a host that samples no CPU stacks (an SPE host,
         * [sampler] enable = no), and the default 10 minutes with them; the
         * stack tables cost about 1.2 MiB an epoch at most.
         */
        assert_true(config_store_bytes(&c) > store_bytes(&(struct store_options) {
                .epochs = c.store.epochs, .hotpcs = c.store.hotpcs, .hotlines = c.store.hotlines,
                .line_offsets = c.store.line_offsets, .line_size = 64 }));
        c.sampler.enable = CONFIG_SPE_NO;
        c.store.epochs = 330;
        assert_true(config_store_bytes(&c) <= c.store.max_memory_bytes);
        assert_int_equal(c.store.max_memory_bytes, 256 << 20);
        c.sampler.enable = CONFIG_SPE_AUTO;
        assert_true(config_store_bytes(&c) > c.store.max_memory_bytes);
        /* With them, 20 minutes (README, packaging/armprofd.conf). */
        c.store.epochs = 120;
        assert_true(config_store_bytes(&c) <= c.store.max_memory_bytes);

        snprintf(path, sizeof(path), "%s/armprofd.conf", t->path);
        write_file(t->path, "armprofd.conf",
                   "[store]\nepochs = 4320\nhotpcs = 1048576\nhotlines = 1048576\nline_offsets = 1024\n");
        store_options_init(&o);
        o.epochs = 4320;
        o.hotpcs = o.hotlines = 1048576;
        o.line_offsets = 1024;
        snprintf(want, sizeof(want),
                 "%s: [store] epochs = 4320, hotpcs = 1048576, hotlines = 1048576, line_offsets = 1024, "
                 "stacks = 4096 need up to %zu bytes (%.1f TiB), more than [store] max_memory = 256.0 MiB; make the "
                 "tables smaller (a host that needs no CPU stacks: [sampler] enable = no) or raise max_memory",
                 path, store_bytes(&o), (double) store_bytes(&o) / (double) (UINT64_C(1) << 40));
        c.store.epochs = 7;
        assert_int_equal(config_load(path, true, &c, &err), -E2BIG);
        assert_int_equal(err.n, 1);
        assert_string_equal(err.msg[0], want);
        assert_int_equal(c.store.epochs, 7);

        /* Raising the bound is the way to ask for more. */
        write_file(t->path, "armprofd.conf", "[store]\nepochs = 8640\nmax_memory = 32GiB\n");
        err = (struct config_error) {};
        assert_int_equal(config_load(path, true, &c, &err), 0);
        assert_int_equal(c.store.epochs, 8640);
        write_file(t->path, "armprofd.conf", "[store]\nepochs = 8640\n");
        assert_int_equal(config_load(path, true, &c, &err), -E2BIG);
}

/* The watermark must be below the AUX buffer; the check runs on the whole configuration. */
static void test_spe_watermark(void **state) {
        struct tmpdir *t = *state;
        struct config_error err = {};
        char path[128], want[512];
        struct config c;

        config_init(&c);
        assert_int_equal(config_check(&c, "t.conf", &err), 0);
        c.spe.watermark = 256 * 1024 - 1;
        assert_int_equal(config_check(&c, "t.conf", &err), 0);
        c.spe.watermark = 256 * 1024;
        assert_int_equal(config_check(&c, "t.conf", &err), -EINVAL);
        assert_int_equal(err.n, 1);
        assert_string_equal(err.msg[0],
                            "t.conf: [spe] watermark = 262144 bytes (256.0 KiB) is not below [spe] aux_buffer = "
                            "262144 bytes (256.0 KiB); lower it (0 = half the buffer) or raise aux_buffer");

        /* Across files: the main file's watermark against a drop-in's smaller buffer. */
        snprintf(path, sizeof(path), "%s/armprofd.conf", t->path);
        write_file(t->path, "armprofd.conf", "[spe]\nwatermark = 64KiB\n");
        err = (struct config_error) {};
        assert_int_equal(config_load(path, true, &c, &err), 0);
        assert_int_equal(c.spe.watermark, 65536);
        assert_int_equal(c.spe.aux_buffer, 262144);

        {
                char dropins[160];

                snprintf(dropins, sizeof(dropins), "%s.d", path);
                assert_int_equal(mkdir(dropins, 0755), 0);
                write_file(dropins, "10-small.conf", "[spe]\naux_buffer = 64KiB\n");
        }
        c.spe.aux_buffer = 12345;
        err = (struct config_error) {};
        assert_int_equal(config_load(path, true, &c, &err), -EINVAL);
        snprintf(want, sizeof(want),
                 "%s: [spe] watermark = 65536 bytes (64.0 KiB) is not below [spe] aux_buffer = 65536 bytes "
                 "(64.0 KiB); lower it (0 = half the buffer) or raise aux_buffer",
                 path);
        assert_int_equal(err.n, 1);
        assert_string_equal(err.msg[0], want);
        assert_int_equal(c.spe.aux_buffer, 12345); /* untouched */

        /* Both checks fail: both are named, the store's code comes first. */
        write_file(t->path, "armprofd.conf", "[spe]\nwatermark = 1MiB\n[store]\nepochs = 8640\n");
        err = (struct config_error) {};
        assert_int_equal(config_load(path, true, &c, &err), -E2BIG);
        assert_int_equal(err.n, 2);
        assert_non_null(strstr(err.msg[0], ": [store] epochs = 8640,"));
        assert_non_null(strstr(err.msg[1], ": [spe] watermark = 1048576 bytes (1.0 MiB) is not below [spe] "
                                           "aux_buffer = 65536 bytes (64.0 KiB)"));
}

/* [push]: every key, and what each refuses, checked at parse (file:line) or across keys. */
static void test_push_values(void **state) {
        static const struct {
                const char *text;
                const char *want; /* a part of the one error */
        } bad[] = {
                { "[push]\nurl = ftp://store:21\n", "t.conf:2: [push] url: 'ftp://store:21' is not an http:// or https:// URL" },
                { "[push]\nurl = https://user:secret@store\n", "t.conf:2: [push] url: credentials in the URL are refused" },
                { "[push]\nurl = http:///push\n", "t.conf:2: [push] url: 'http:///push' names no host" },
                { "[push]\nurl = http://st\xc3\xb6re/\n", "t.conf:2: [push] url: the URL holds a space, a control character or a byte outside ASCII" },
                { "[push]\nurl = http://store/?a=1\n", "t.conf:2: [push] url: 'http://store/?a=1' has a query or a fragment" },
                { "[push]\ninterval = 500ms\n", "t.conf:2: [push] interval: duration '500ms' out of range" },
                { "[push]\ninterval = 2h\n", "t.conf:2: [push] interval: duration '2h' out of range" },
                { "[push]\nlabels = env\n", "t.conf:2: [push] labels: " },
                { "[push]\nlabels = __name__=x\n", "t.conf:2: [push] labels: " },
                { "[push]\nlabels = a=1, a=2\n", "t.conf:2: [push] labels: " },
                { "[push]\nspool_dir = spool\n", "t.conf:2: [push] spool_dir: 'spool' is not an absolute path" },
                { "[push]\nbearer_token_file = token\n", "t.conf:2: [push] bearer_token_file: 'token' is not an absolute path" },
                { "[push]\nmax_age = 2h\n", "t.conf:2: [push] max_age: duration '2h' out of range" },
                { "[push]\ntls_insecure_skip_verify = maybe\n", "t.conf:2: [push] tls_insecure_skip_verify: invalid boolean" },
                { "[push]\nservice_name = a\x01b\n", "t.conf:2: [push] service_name: holds a control character" },
        };
        struct config_error err = {};
        struct config c;

        config_init(&c);
        assert_string_equal(c.push.url, "");
        assert_int_equal(c.push.interval_usec, 15 * USEC_PER_SEC);
        assert_int_equal(c.push.timeout_usec, 10 * USEC_PER_SEC);
        assert_int_equal(c.push.max_samples, 16000);
        assert_int_equal(c.push.max_profile_bytes, 4 * 1024 * 1024);
        assert_int_equal(c.push.max_age_usec, 55 * 60 * USEC_PER_SEC);
        assert_string_equal(c.push.spool_dir, "/var/lib/armprofd/spool");
        assert_int_equal(c.push.spool_max_bytes, 64 * 1024 * 1024);

        assert_int_equal(config_parse_string(&c,
                                             "[push]\n"
                                             "url = https://profiles-prod-001.grafana.net/\n"
                                             "interval = 1s\n"
                                             "service_name = web-frontend\n"
                                             "labels = env=prod, region=eu-west-1\n"
                                             "tenant = team-a\n"
                                             "basic_auth_user = 123456\n"
                                             "basic_auth_password_file = /etc/armprofd/token\n"
                                             "tls_ca_file = /etc/ssl/ca.pem\n"
                                             "tls_insecure_skip_verify = yes\n"
                                             "timeout = 5m\n"
                                             "max_profile_bytes = 1MiB\n"
                                             "max_samples = 100\n"
                                             "max_age = 1h\n"
                                             "spool_dir = /var/spool/armprofd\n"
                                             "spool_max_bytes = 1GiB\n",
                                             "t.conf", &err),
                         0);
        assert_string_equal(c.push.url, "https://profiles-prod-001.grafana.net/");
        assert_int_equal(c.push.interval_usec, USEC_PER_SEC);
        assert_string_equal(c.push.service_name, "web-frontend");
        assert_string_equal(c.push.labels, "env=prod, region=eu-west-1");
        assert_string_equal(c.push.tenant, "team-a");
        assert_string_equal(c.push.basic_auth_user, "123456");
        assert_string_equal(c.push.basic_auth_password_file, "/etc/armprofd/token");
        assert_string_equal(c.push.tls_ca_file, "/etc/ssl/ca.pem");
        assert_true(c.push.tls_insecure_skip_verify);
        assert_int_equal(c.push.timeout_usec, 300 * USEC_PER_SEC);
        assert_int_equal(c.push.max_profile_bytes, 1024 * 1024);
        assert_int_equal(c.push.max_samples, 100);
        assert_int_equal(c.push.max_age_usec, 3600 * USEC_PER_SEC);
        assert_string_equal(c.push.spool_dir, "/var/spool/armprofd");
        assert_int_equal(c.push.spool_max_bytes, UINT64_C(1) << 30);
        assert_int_equal(config_check(&c, "t.conf", &err), 0);

        /* Credentials in pairs, one kind at a time: across keys, so config_check(). */
        c.push.basic_auth_password_file[0] = '\0';
        assert_int_equal(config_check(&c, "t.conf", &err), -EINVAL);
        assert_string_equal(err.msg[err.n - 1],
                            "t.conf: [push] basic_auth_user and basic_auth_password_file go together");
        snprintf(c.push.basic_auth_password_file, sizeof(c.push.basic_auth_password_file), "/p");
        snprintf(c.push.bearer_token_file, sizeof(c.push.bearer_token_file), "/t");
        assert_int_equal(config_check(&c, "t.conf", &err), -EINVAL);
        assert_string_equal(err.msg[err.n - 1],
                            "t.conf: [push] basic_auth_user and bearer_token_file exclude each other");

        /* Every epoch must still be in the ring when its push comes, after a timeout too: 600 s by default. */
        config_init(&c);
        err = (struct config_error) {};
        snprintf(c.push.url, sizeof(c.push.url), "http://store");
        c.push.interval_usec = 589 * USEC_PER_SEC;
        assert_int_equal(config_check(&c, "t.conf", &err), 0);
        c.push.interval_usec = 600 * USEC_PER_SEC - c.push.timeout_usec;
        assert_int_equal(config_check(&c, "t.conf", &err), -EINVAL);
        assert_string_equal(err.msg[0], "t.conf: [push] interval (590 s) and timeout (10 s) outlast the store's ring "
                                        "([store] epoch x epochs = 600 s): epochs would leave it before they are "
                                        "pushed; push more often or raise [store] epochs");
        c.store.epochs = 61;
        err = (struct config_error) {};
        assert_int_equal(config_check(&c, "t.conf", &err), 0);

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                err = (struct config_error) {};
                config_init(&c);
                assert_int_equal(config_parse_string(&c, bad[i].text, "t.conf", &err), -EINVAL);
                assert_int_equal(err.n, 1);
                if (!strstr(err.msg[0], bad[i].want))
                        fail_msg("case %zu: got '%s', want a part '%s'", i, err.msg[0], bad[i].want);
        }
}

/* A file of the source tree, which the documentation tests read. */
static FILE *open_source(const char *relative) {
        const char *src = getenv("ARMPROFD_SOURCE_DIR");
        char path[4096];
        FILE *f;

        assert_non_null(src);
        snprintf(path, sizeof(path), "%s/%s", src, relative);
        f = fopen(path, "re");
        if (!f)
                fail_msg("cannot open %s: %s", path, strerror(errno));
        return f;
}

/* Fails naming every key of the table that `where` lacks. */
static void assert_every_key_seen(const bool *seen, const char *where) {
        for (size_t i = 0; i < config_n_items(); i++) {
                const char *sec, *key;

                config_item_name(i, &sec, &key);
                if (!seen[i])
                        fail_msg("%s lacks [%s] %s", where, sec, key);
        }
}

/* The shipped file shows every key with its default: uncommented, it changes nothing. */
static void test_shipped_conffile(void **state) {
        char line[8192], *text = calloc(1, 1 << 20), listen[2][80];
        struct config_error err = {};
        struct config want, got;
        unsigned keys = 0;
        size_t n = 0;
        FILE *f;

        assert_non_null(text);
        f = open_source("packaging/armprofd.conf");
        while (fgets(line, sizeof(line), f)) {
                char *p = line;

                /* "#key = value" lines are the keys; "# prose" lines are not. */
                if (line[0] == '#' && line[1] != ' ' && line[1] != '\n' && strchr(line, '=')) {
                        p = line + 1;
                        keys++;
                }
                n += (size_t) snprintf(text + n, (1 << 20) - n, "%s", p);
        }
        fclose(f);
        assert_int_equal(keys, config_n_items());

        config_init(&want);
        config_init(&got);
        got.pmu.events_mask = 0;
        got.store.max_memory_bytes = 0;
        /* Away from their defaults, so that the file must set each back. */
        got.spe = (typeof(got.spe)) {
                .enable = CONFIG_SPE_NO, .period = 1, .jitter = false, .load_filter = true,
                .store_filter = true, .branch_filter = true, .min_latency = 7, .event_filter = 7,
                .inv_event_filter = 7, .exclude_kernel = false, .aux_buffer = 1, .data_buffer = 1,
                .watermark = 7, .drain_interval_usec = 1,
        };
        if (config_parse_string(&got, text, "armprofd.conf", &err) < 0)
                fail_msg("%s", err.msg[0]);
        free(text);
        assert_string_equal(listen_addr_to_string(&got.http.listen, listen[0], sizeof(listen[0])),
                            listen_addr_to_string(&want.http.listen, listen[1], sizeof(listen[1])));
        assert_int_equal(got.http.max_connections, want.http.max_connections);
        assert_int_equal(got.http.per_ip_connections, want.http.per_ip_connections);
        assert_int_equal(got.http.timeout_usec, want.http.timeout_usec);
        assert_int_equal(got.http.max_request_bytes, want.http.max_request_bytes);
        assert_int_equal(got.pmu.enable, want.pmu.enable);
        assert_int_equal(got.pmu.interval_usec, want.pmu.interval_usec);
        assert_int_equal(got.pmu.events_mask, want.pmu.events_mask);
        assert_int_equal(got.pmu.general_counters, want.pmu.general_counters);
        assert_int_equal(got.store.epoch_usec, want.store.epoch_usec);
        assert_int_equal(got.store.epochs, want.store.epochs);
        assert_int_equal(got.store.hotpcs, want.store.hotpcs);
        assert_int_equal(got.store.hotlines, want.store.hotlines);
        assert_int_equal(got.store.line_offsets, want.store.line_offsets);
        assert_int_equal(got.store.line_size, want.store.line_size);
        assert_int_equal(got.store.max_memory_bytes, want.store.max_memory_bytes);
        assert_int_equal(got.privacy.physical_addresses, want.privacy.physical_addresses);
        assert_memory_equal(&got.push, &want.push, sizeof(got.push));
        assert_int_equal(got.spe.enable, want.spe.enable);
        assert_int_equal(got.spe.period, want.spe.period);
        assert_int_equal(got.spe.jitter, want.spe.jitter);
        assert_int_equal(got.spe.load_filter, want.spe.load_filter);
        assert_int_equal(got.spe.store_filter, want.spe.store_filter);
        assert_int_equal(got.spe.branch_filter, want.spe.branch_filter);
        assert_int_equal(got.spe.min_latency, want.spe.min_latency);
        assert_int_equal(got.spe.event_filter, want.spe.event_filter);
        assert_int_equal(got.spe.inv_event_filter, want.spe.inv_event_filter);
        assert_int_equal(got.spe.exclude_kernel, want.spe.exclude_kernel);
        assert_int_equal(got.spe.aux_buffer, want.spe.aux_buffer);
        assert_int_equal(got.spe.data_buffer, want.spe.data_buffer);
        assert_int_equal(got.spe.watermark, want.spe.watermark);
        assert_int_equal(got.spe.drain_interval_usec, want.spe.drain_interval_usec);
}

/* The README's key table names every key of the table, each under its section. */
static void test_readme_keys(void **state) {
        char line[4096], section[64] = "";
        bool *seen = calloc(config_n_items(), sizeof(bool));
        FILE *f;

        assert_non_null(seen);
        f = open_source("README.md");
        while (fgets(line, sizeof(line), f)) {
                char *c1, *c2, *end;

                /* "| `[sec]` | `key` `key2` | default | text |", the section only on its first row. */
                if (strncmp(line, "| | ", 4) == 0) {
                        c1 = line + 1;
                        *c1 = '\0';
                        c2 = line + 4;
                } else if (strncmp(line, "| ", 2) == 0) {
                        c1 = line + 2;
                        c2 = strstr(c1, " | ");
                        if (!c2)
                                continue;
                        *c2 = '\0';
                        c2 += 3;
                } else
                        continue;
                end = strstr(c2, " | ");
                if (!end)
                        continue;
                *end = '\0';
                if (c1[0] == '`' && c1[1] == '[') {
                        size_t n = strcspn(c1 + 2, "]");

                        if (n >= sizeof(section))
                                continue;
                        memcpy(section, c1 + 2, n);
                        section[n] = '\0';
                } else if (c1[0] != '\0')
                        section[0] = '\0'; /* another table */
                for (size_t i = 0; i < config_n_items(); i++) {
                        const char *sec, *key;
                        char quoted[128];

                        config_item_name(i, &sec, &key);
                        snprintf(quoted, sizeof(quoted), "`%s`", key);
                        if (streq(sec, section) && strstr(c2, quoted))
                                seen[i] = true;
                }
        }
        fclose(f);
        assert_every_key_seen(seen, "README.md's configuration table");
        free(seen);
}

/* armprofd.conf(5) documents every key of the table in its section's .SS, as
 * a ".BR key =" entry, and no key the table does not know. */
static void test_manpage_keys(void **state) {
        char line[4096], section[64] = "";
        bool *seen = calloc(config_n_items(), sizeof(bool));
        unsigned entries = 0;
        FILE *f;

        assert_non_null(seen);
        f = open_source("man/armprofd.conf.5");
        while (fgets(line, sizeof(line), f)) {
                char key[128];
                bool known = false;

                line[strcspn(line, "\n")] = '\0';
                if (strncmp(line, ".SH ", 4) == 0) {
                        section[0] = '\0'; /* OPTIONS ends at the next .SH */
                        continue;
                }
                if (sscanf(line, ".SS \"[%63[^]]]\"", section) == 1 || section[0] == '\0')
                        continue;
                if (sscanf(line, ".BR %127s =", key) != 1 || strlen(line) < 2 || !streq(line + strlen(line) - 2, " ="))
                        continue;
                entries++;
                for (size_t i = 0; i < config_n_items(); i++) {
                        const char *sec, *k;

                        config_item_name(i, &sec, &k);
                        if (streq(sec, section) && streq(k, key)) {
                                if (seen[i])
                                        fail_msg("armprofd.conf(5) documents [%s] %s twice", sec, k);
                                seen[i] = known = true;
                        }
                }
                if (!known)
                        fail_msg("armprofd.conf(5) documents [%s] %s, which the configuration table lacks", section, key);
        }
        fclose(f);
        assert_every_key_seen(seen, "armprofd.conf(5)");
        assert_int_equal(entries, config_n_items());
        free(seen);
}

static void test_load_missing(void **state) {
        struct tmpdir *t = *state;
        struct config_error err = {};
        char path[128];
        struct config c;

        snprintf(path, sizeof(path), "%s/absent.conf", t->path);
        /* The default path may be absent: defaults apply. */
        assert_int_equal(config_load(path, false, &c, &err), 0);
        assert_int_equal(c.http.max_connections, 32);
        /* A file named with -c must exist. */
        assert_int_equal(config_load(path, true, &c, &err), -ENOENT);
        assert_non_null(strstr(err.msg[0], "absent.conf: cannot open: No such file or directory"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_push_values),
                cmocka_unit_test(test_long_lines),
                cmocka_unit_test(test_nul_byte),
                cmocka_unit_test(test_error_cap),
                cmocka_unit_test(test_shipped_conffile),
                cmocka_unit_test(test_values),
                cmocka_unit_test(test_spe_values),
                cmocka_unit_test(test_spe_rings),
                cmocka_unit_test(test_table_complete),
                cmocka_unit_test(test_readme_keys),
                cmocka_unit_test(test_manpage_keys),
                cmocka_unit_test_setup_teardown(test_load_dropins, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_load_missing, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_load_not_regular, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_memory_bound, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_spe_watermark, setup_dir, teardown_dir),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
