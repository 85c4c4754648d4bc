/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "build-config.h"
#include "cli.h"
#include "macro.h"

#define MAX_ARGS 16

/* Runs cli_parse on a NULL-terminated list; captures what it prints. */
static int parse(struct cli_args *ret, char *errbuf, size_t errlen, const char *first, ...) {
        char *argv[MAX_ARGS] = { (char *) "armprofd" };
        int argc = 1, r;
        va_list ap;
        FILE *f;

        va_start(ap, first);
        for (const char *a = first; a && argc < MAX_ARGS - 1; a = va_arg(ap, const char *))
                argv[argc++] = (char *) a;
        va_end(ap);

        f = fmemopen(errbuf, errlen, "w");
        assert_non_null(f);
        r = cli_parse(argc, argv, f, ret);
        fclose(f);
        return r;
}

static void test_defaults(void **state) {
        char err[4096] = "";
        struct cli_args a;

        assert_int_equal(parse(&a, err, sizeof(err), NULL), 0);
        assert_int_equal(a.action, CLI_RUN);
        assert_string_equal(a.config_path, ARMPROFD_CONFIG_FILE);
        /*
         * /etc whatever the prefix (/usr/local by default), as packaged daemons and the
         * README have it. Holds for meson's default sysconfdir; an absolute
         * -Dsysconfdir elsewhere is kept, and this would then say so.
         */
        assert_string_equal(a.config_path, "/etc/armprofd/armprofd.conf");
        assert_false(a.config_explicit);
        assert_null(a.listen);
        assert_null(a.replay);
        assert_false(a.once);
        assert_false(a.check_config);
        assert_int_equal(a.log_level, -1);
        assert_string_equal(err, "");
}

static void test_all_options(void **state) {
        char err[4096] = "";
        struct cli_args a;

        assert_int_equal(parse(&a, err, sizeof(err), "-c", "/x.conf", "--listen=[::1]:1", "--replay",
                               "p.data", "--once", "--check-config", "--log-level", "debug", NULL),
                         0);
        assert_string_equal(a.config_path, "/x.conf");
        assert_true(a.config_explicit);
        assert_string_equal(a.listen, "[::1]:1");
        assert_string_equal(a.replay, "p.data");
        assert_true(a.once);
        assert_true(a.check_config);
        assert_int_equal(a.log_level, 7);

        assert_int_equal(parse(&a, err, sizeof(err), "--config", "/y.conf", "--log-level=3", NULL), 0);
        assert_string_equal(a.config_path, "/y.conf");
        assert_int_equal(a.log_level, 3);

        assert_int_equal(parse(&a, err, sizeof(err), "--version", NULL), 0);
        assert_int_equal(a.action, CLI_VERSION);
        assert_int_equal(parse(&a, err, sizeof(err), "-h", NULL), 0);
        assert_int_equal(a.action, CLI_HELP);
        assert_int_equal(parse(&a, err, sizeof(err), "--help", NULL), 0);
        assert_int_equal(a.action, CLI_HELP);
}

static void test_errors(void **state) {
        static const struct {
                const char *args[4];
                const char *want;
        } cases[] = {
                { { "--bogus" }, "unknown option '--bogus'" },
                { { "-x" }, "unknown option '-x'" },
                { { "--listen" }, "option '--listen' needs a value" },
                { { "-c" }, "option '-c' needs a value" },
                { { "--config" }, "option '--config' needs a value" },
                { { "--replay" }, "option '--replay' needs a value" },
                { { "--log-level" }, "option '--log-level' needs a value" },
                { { "--log-level", "loud" }, "invalid --log-level 'loud'" },
                { { "--listen", "9769" }, "invalid --listen address '9769'" },
                { { "stray" }, "unexpected argument 'stray'" },
                { { "--once" }, "--once needs --replay FILE" },
                { { "--version=1" }, "unknown option '--version=1'" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char err[4096] = "";
                struct cli_args a = { .action = 99 };
                int r = parse(&a, err, sizeof(err), cases[i].args[0], cases[i].args[1], cases[i].args[2], NULL);

                assert_int_equal(r, -EINVAL);
                assert_int_equal(a.action, 99); /* untouched on error */
                if (!strstr(err, cases[i].want))
                        fail_msg("case %zu: '%s' not in:\n%s", i, cases[i].want, err);
                assert_non_null(strstr(err, "Usage: armprofd [OPTIONS]"));
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_all_options),
                cmocka_unit_test(test_errors),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
