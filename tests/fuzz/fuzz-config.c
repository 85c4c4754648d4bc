/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Config parser over arbitrary bytes: never crash, and errors always say where. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct config_error err = {};
        struct config c;
        char *text;
        int r;

        if (size > 64 * 1024)
                return 0;
        text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';

        config_init(&c);
        r = config_parse_string(&c, text, "fuzz.conf", &err);
        if (r < 0 && strncmp(err.msg, "fuzz.conf:", strlen("fuzz.conf:")) != 0)
                abort(); /* every parse error names file:line */
        if (r == 0 && (c.http.max_connections < 1 || c.pmu.interval_usec == 0))
                abort(); /* accepted values respect the table's bounds */
        free(text);
        return 0;
}
