/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Checks for the drivers that run alone in the arm64 VM (tests/arm64vm.py):
 * static binaries with libc only, no cmocka. Each check prints one
 * PASS/FAIL line; vm_failures counts the failed ones for the exit status.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "macro.h"

static unsigned vm_failures;

_printf_(2, 3) static inline void check(bool ok, const char *fmt, ...) {
        va_list ap;

        printf("%s ", ok ? "PASS" : "FAIL");
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
        if (!ok)
                vm_failures++;
}
