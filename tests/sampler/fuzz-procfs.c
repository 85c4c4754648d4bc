/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: collectors/procfs.c's parsers of what /proc holds, over
 * arbitrary text: the first byte picks a /proc/PID/maps line or a
 * /proc/PID/stat line, the rest is the text (NUL-terminated copy, as the
 * readers hand it). The path a maps line yields is read whole.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct procfs_mapping m;
        uint64_t start;
        char *text;

        if (size < 1)
                return 0;
        text = malloc(size);
        if (!text)
                return 0;
        memcpy(text, data + 1, size - 1);
        text[size - 1] = '\0';
        if (data[0] & 1) {
                if (procfs_parse_maps_line(text, &m) == 0)
                        sink += m.start + m.end + m.inode + strlen(m.path) + m.perms[0];
        } else if (procfs_parse_stat_start(text, &start) == 0)
                sink += start;
        free(text);
        return 0;
}
