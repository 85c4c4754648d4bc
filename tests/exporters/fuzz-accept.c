/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Accept / Accept-Encoding parsing over arbitrary bytes: never crash, always pick a known format. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "negotiate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const struct media_offer offers[] = {
                { "application", "json", NULL },
                { "application", "x-protobuf", NULL },
        };
        char *s = malloc(size + 1);
        enum prom_format f;
        int i;

        if (!s)
                return 0;
        memcpy(s, data, size);
        s[size] = '\0';
        f = negotiate_prom_format(s);
        if (f != PROM_FORMAT_TEXT && f != PROM_FORMAT_OPENMETRICS && f != PROM_FORMAT_PROTOBUF)
                abort();
        i = negotiate(s, offers, 2);
        if (i < -1 || i > 1)
                abort();
        (void) negotiate_gzip(s);
        free(s);
        return 0;
}
