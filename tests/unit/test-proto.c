/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The generated armprofd.v1 code builds, links, and round-trips with the field numbers we publish. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "armprofd.pb-c.h"

static void test_status_roundtrip(void **state) {
        Armprofd__V1__BuildInfo build = ARMPROFD__V1__BUILD_INFO__INIT;
        Armprofd__V1__Status st = ARMPROFD__V1__STATUS__INIT;
        Armprofd__V1__Status *back;
        uint8_t buf[256];
        size_t n;

        build.version = (char *) "1.2.3";
        build.revision = (char *) "abc";
        st.build = &build;
        st.uptime_seconds = 2.5;
        st.listen = (char *) "[::1]:9769";

        n = armprofd__v1__status__get_packed_size(&st);
        assert_true(n < sizeof(buf));
        assert_int_equal(armprofd__v1__status__pack(&st, buf), n);
        /* Field 1 (build), wire type 2: tag byte 0x0a; its field 1 "1.2.3" follows. */
        assert_int_equal(buf[0], 0x0a);
        assert_memory_equal(buf + 2, "\x0a\x05" "1.2.3", 7);

        back = armprofd__v1__status__unpack(NULL, n, buf);
        assert_non_null(back);
        assert_string_equal(back->build->revision, "abc");
        assert_string_equal(back->listen, "[::1]:9769");
        assert_true(back->uptime_seconds == 2.5);
        armprofd__v1__status__free_unpacked(back, NULL);

        /* Truncated input is rejected, not half-decoded. */
        assert_null(armprofd__v1__status__unpack(NULL, n - 1, buf));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_status_roundtrip),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
