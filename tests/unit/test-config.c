/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
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

static void test_defaults(void **state) {
        struct config c;
        char buf[80];

        config_init(&c);
        assert_string_equal(listen_addr_to_string(&c.http.listen, buf, sizeof(buf)), ":9769");
        assert_int_equal(c.http.max_connections, 32);
        assert_int_equal(c.http.timeout_usec, 15 * USEC_PER_SEC);
        assert_true(c.pmu.enable);
        assert_int_equal(c.pmu.interval_usec, USEC_PER_SEC);
        assert_int_equal(c.pmu.events_mask, (1U << _PMU_EVENT_MAX) - 1);
        assert_int_equal(c.pmu.general_counters, 0);
}

/* Each bad input must fail with the exact file:line and name the key. */
static void test_errors(void **state) {
        static const struct {
                const char *text;
                const char *want; /* exact error message */
        } cases[] = {
                { "[http]\nlisten = nowhere\n",
                  "t.conf:2: [http] listen: invalid listen address 'nowhere' (expected ADDR:PORT, [IPV6]:PORT or :PORT)" },
                { "[http]\n\n# comment\nmax_connections = 0\n",
                  "t.conf:4: [http] max_connections: value '0' out of range [1, 4096]" },
                { "[http]\nmax_connections = 5000\n",
                  "t.conf:2: [http] max_connections: value '5000' out of range [1, 4096]" },
                { "[http]\nmax_connections = -1\n",
                  "t.conf:2: [http] max_connections: invalid unsigned number '-1'" },
                { "[http]\ntimeout = 5 parsecs\n",
                  "t.conf:2: [http] timeout: invalid duration '5 parsecs' (expected e.g. 10s, 500ms, 1m)" },
                { "[http]\ntimeout = 500ms\n",
                  "t.conf:2: [http] timeout: duration '500ms' out of range [1000ms, 3600s]" },
                { "[http]\nmax_request_size = lots\n",
                  "t.conf:2: [http] max_request_size: invalid size 'lots' (expected e.g. 4096, 64KiB, 16MiB)" },
                { "[http]\nmax_request_size = 2MiB\n",
                  "t.conf:2: [http] max_request_size: value '2MiB' out of range [4096, 1048576]" },
                { "[pmu]\nenable = perhaps\n",
                  "t.conf:2: [pmu] enable: invalid boolean 'perhaps' (expected yes/no, true/false, on/off, 1/0)" },
                { "[pmu]\ninterval = 10ms\n",
                  "t.conf:2: [pmu] interval: duration '10ms' out of range [100ms, 3600s]" },
                { "[pmu]\nintervall = 1s\n", "t.conf:2: [pmu] intervall: unknown key" },
                { "[pmu]\nevents = cycles, bogus\n",
                  "t.conf:2: [pmu] events: unknown event 'bogus' (known: see armprofd.conf)" },
                { "[pmu]\nevents = , ,\n",
                  "t.conf:2: [pmu] events: empty event list (use enable = no to turn counting off)" },
                { "[pmu]\ngeneral_counters = 32\n",
                  "t.conf:2: [pmu] general_counters: value '32' out of range [0, 31]" },
                { "[bogus]\nkey = 1\n", "t.conf:2: [bogus] key: unknown section [bogus]" },
                { "stray = 1\n[http]\n", "t.conf:1: [] stray: key outside of any [section]" },
                { "[http]\nthis line has no equals sign\n",
                  "t.conf:2: syntax error (expected [section] or key = value)" },
                { "[http\nlisten = :1\n", "t.conf:1: syntax error (expected [section] or key = value)" },
                /* A key error after a syntax error does not hide it. */
                { "[pmu]\n[broken\nenable = x\n", "t.conf:2: syntax error (expected [section] or key = value)" },
                { "[pmu]\nenable = 1\n  continued\n",
                  "t.conf:3: [pmu] enable: invalid boolean 'continued' (expected yes/no, true/false, on/off, 1/0)" },
                /* Only the first of several errors is reported. */
                { "[pmu]\nenable = x\ninterval = y\n",
                  "t.conf:2: [pmu] enable: invalid boolean 'x' (expected yes/no, true/false, on/off, 1/0)" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct config_error err = {};
                struct config c;
                int r;

                config_init(&c);
                r = config_parse_string(&c, cases[i].text, "t.conf", &err);
                if (r != -EINVAL)
                        fail_msg("case %zu: got %d, want -EINVAL", i, r);
                if (strcmp(err.msg, cases[i].want) != 0)
                        fail_msg("case %zu:\n got:  %s\n want: %s", i, err.msg, cases[i].want);
        }
}

static void test_long_line(void **state) {
        struct config_error err = {};
        struct config c;
        char text[1024];

        /* A line longer than libinih's buffer is an error on its own line, not two lines. */
        snprintf(text, sizeof(text), "[pmu]\n# %0600d\nenable = no\ninterval = x\n", 0);
        config_init(&c);
        assert_int_equal(config_parse_string(&c, text, "t.conf", &err), -EINVAL);
        assert_non_null(strstr(err.msg, "t.conf:2: line too long"));
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
                                             "[pmu]\n"
                                             "enable = off\n"
                                             "interval = 250ms\n"
                                             "events = page_faults,cycles  context_switches\n"
                                             "general_counters = 4\n"
                                             "[privacy]\n"
                                             "physical_addresses = yes\n"
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
                snprintf(text, sizeof(text), "[%s]\n%s = !\n", section, key);
                r = config_parse_string(&c, text, "t.conf", &err);
                /* "!" is invalid for every type: the error must name this key, not "unknown". */
                assert_int_equal(r, -EINVAL);
                assert_non_null(strstr(err.msg, key));
                assert_null(strstr(err.msg, "unknown key"));
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
        write_file(t->path, "armprofd.conf", "[pmu]\ninterval = 5s\n[http]\nmax_connections = 7\n");
        assert_int_equal(mkdir(dropins, 0755), 0);
        /* Lexical order: 10 before 20; 20 wins. Non-.conf files are ignored. */
        write_file(dropins, "20-late.conf", "[pmu]\ninterval = 3s\n");
        write_file(dropins, "10-early.conf", "[pmu]\ninterval = 2s\nenable = no\n");
        write_file(dropins, "README", "this is not ini\n");
        write_file(dropins, "30-x.conf.disabled", "[pmu]\ninterval = 9s\n");

        assert_int_equal(config_load(main_conf, true, &c, &err), 0);
        assert_int_equal(c.pmu.interval_usec, 3 * USEC_PER_SEC);
        assert_false(c.pmu.enable);
        assert_int_equal(c.http.max_connections, 7);

        /* An error in a drop-in names the drop-in and its line; ret stays untouched. */
        write_file(dropins, "15-bad.conf", "[pmu]\n\nenable = sometimes\n");
        c.http.max_connections = 1234;
        assert_int_equal(config_load(main_conf, true, &c, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "armprofd.conf.d/15-bad.conf:3: [pmu] enable: invalid boolean"));
        assert_int_equal(c.http.max_connections, 1234);
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
        assert_non_null(strstr(err.msg, "absent.conf: cannot open: No such file or directory"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_long_line),
                cmocka_unit_test(test_values),
                cmocka_unit_test(test_table_complete),
                cmocka_unit_test_setup_teardown(test_load_dropins, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_load_missing, setup_dir, teardown_dir),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
