/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A store's Retry-After over arbitrary bytes: never crash, never a wait over the cap, nothing
 * written on refusal. The first 8 bytes (when present) are "now" so dates land on both sides of it. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "push-request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const uint64_t cap = 600 * USEC_PER_SEC;
        int64_t now = 1795467600; /* 2026-11-23 21:00:00 UTC */
        uint64_t wait = UINT64_MAX;
        char *s;
        int r;

        if (size >= sizeof(now)) {
                memcpy(&now, data, sizeof(now));
                data += sizeof(now);
                size -= sizeof(now);
        }
        s = malloc(size + 1);
        if (!s)
                return 0;
        memcpy(s, data, size);
        s[size] = '\0';
        r = push_retry_after_parse(s, now, cap, &wait);
        if (r == 0 ? wait > cap : (r != -EINVAL || wait != UINT64_MAX))
                abort();
        free(s);
        return 0;
}
