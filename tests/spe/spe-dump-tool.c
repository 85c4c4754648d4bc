/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spe-dump-tool: print raw SPE bytes (a file, or stdin with "-") the way
 * `perf report -D` prints an AUXTRACE buffer, using spe_dump_file(). For
 * the oracle comparison in spe-dump-vs-perf.py; not installed.
 * Usage: spe-dump-tool [--perf61] [--no-header] [--midr HEX] FILE|-
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "spe-dump.h"

#define MAX_INPUT (256U << 20)

int main(int argc, char **argv) {
        _cleanup_free_ uint8_t *buf = NULL;
        unsigned flags = 0;
        uint64_t midr = 0;
        const char *path = NULL;
        size_t len = 0, cap = 0;
        FILE *f;
        int r;

        for (int i = 1; i < argc; i++) {
                if (streq(argv[i], "--perf61"))
                        flags |= SPE_DUMP_F_PERF61;
                else if (streq(argv[i], "--no-header"))
                        flags |= SPE_DUMP_F_NO_HEADER;
                else if (streq(argv[i], "--midr") && i + 1 < argc) {
                        /* safe_atou64 is decimal; MIDRs are written in hex */
                        char *end = NULL;

                        errno = 0;
                        midr = strtoull(argv[++i], &end, 16);
                        if (errno || !end || *end || argv[i][0] == '-') {
                                fprintf(stderr, "spe-dump-tool: bad --midr '%s'\n", argv[i]);
                                return EXIT_FAILURE;
                        }
                } else if (!path)
                        path = argv[i];
                else {
                        fprintf(stderr, "usage: spe-dump-tool [--perf61] [--no-header] [--midr HEX] FILE|-\n");
                        return EXIT_FAILURE;
                }
        }
        if (!path) {
                fprintf(stderr, "usage: spe-dump-tool [--perf61] [--no-header] [--midr HEX] FILE|-\n");
                return EXIT_FAILURE;
        }

        f = streq(path, "-") ? stdin : fopen(path, "rb");
        if (!f) {
                fprintf(stderr, "spe-dump-tool: %s: %s\n", path, strerror(errno));
                return EXIT_FAILURE;
        }
        for (;;) {
                size_t n;

                if (len == cap) {
                        uint8_t *nbuf;

                        cap = cap ? cap * 2 : 65536;
                        if (cap > MAX_INPUT) {
                                fprintf(stderr, "spe-dump-tool: input larger than %u bytes\n", MAX_INPUT);
                                return EXIT_FAILURE;
                        }
                        nbuf = realloc(buf, cap);
                        if (!nbuf) {
                                fprintf(stderr, "spe-dump-tool: out of memory\n");
                                return EXIT_FAILURE;
                        }
                        buf = nbuf;
                }
                n = fread(buf + len, 1, cap - len, f);
                len += n;
                if (n == 0)
                        break;
        }
        if (ferror(f)) {
                fprintf(stderr, "spe-dump-tool: %s: read error\n", path);
                return EXIT_FAILURE;
        }
        if (f != stdin)
                fclose(f);

        r = spe_dump_file(stdout, buf, len, midr, flags);
        if (r < 0 || fflush(stdout) != 0) {
                fprintf(stderr, "spe-dump-tool: write failed\n");
                return EXIT_FAILURE;
        }
        return EXIT_SUCCESS;
}
