/* SPDX-License-Identifier: GPL-2.0-or-later */
/* store_window_parse() over arbitrary bytes (the ?window= query value): never
 * crash, write the result only on success, never accept a zero window. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const uint64_t canary = UINT64_C(0xdeadbeefcafef00d);
        uint64_t w = canary;
        char *s = malloc(size + 1);
        int r;

        if (!s)
                return 0;
        memcpy(s, data, size);
        s[size] = '\0';
        r = store_window_parse(s, &w);
        if (r < 0 && w != canary)
                abort();
        if (r == 0 && w == 0)
                abort();
        if (r > 0)
                abort();
        free(s);
        return 0;
}
