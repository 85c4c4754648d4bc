/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The push spool's file parser over arbitrary bytes (a damaged or foreign
 * file in the spool directory): never crash, never read outside the input,
 * and a file it takes has exactly the header and the body it says. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "push-spool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint8_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const void *body = NULL;
        uint64_t time_ns;
        size_t len;
        int r;

        r = push_spool_parse(data, size, &time_ns, &body, &len);
        if (r < 0) {
                if (r != -EBADMSG && r != -EFBIG)
                        abort();
                return 0;
        }
        if (size < PUSH_SPOOL_HEADER_SIZE || body != data + PUSH_SPOOL_HEADER_SIZE ||
            len != size - PUSH_SPOOL_HEADER_SIZE || len > PUSH_SPOOL_BODY_MAX)
                abort();
        /* The time is the little-endian field at offset 16. */
        for (size_t i = 0; i < 8; i++)
                if ((uint8_t) (time_ns >> (8 * i)) != data[16 + i])
                        abort();
        /* Touch every byte of the body: ASan finds a bad pointer or length. */
        for (size_t i = 0; i < len; i++)
                sink += ((const uint8_t *) body)[i];
        return 0;
}
