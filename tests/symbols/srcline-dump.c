/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * symbols_lines() and symbols_lookup() of PCs of one mapped ELF file, for
 * tests/symbols/test-srcline.py, which compares them with addr2line -f -i:
 *
 *   srcline-dump DEBUG_DIRS FILE START LEN PGOFF PC...
 *
 * maps FILE at [START, START + LEN) from file offset PGOFF in a process,
 * with DEBUG_DIRS as the build-id roots ("" for none), and prints for each
 * PC: "pc 0x... SYMBOL" then one "frame FUNCTION FILE:LINE" per frame,
 * innermost first ("?" for what is unknown). Among the PCs,
 * "map:START:LEN:PGOFF:PATH" adds a data mapping (PERF_RECORD_MISC_MMAP_DATA;
 * PATH "//anon" for anonymous memory) and "d0xADDR" asks for the variable at
 * a data address: "data 0x... SYMBOL+0xOFFSET SIZE MEMBER" ("?": no member
 * known), or "data 0x... -".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols.h"

#define DUMP_PID 1

int main(int argc, char **argv) {
        struct symbols_limits lim = {};
        struct symbols *s;
        uint64_t start, len, pgoff;

        if (argc < 6) {
                fprintf(stderr, "usage: srcline-dump DEBUG_DIRS FILE START LEN PGOFF PC...\n");
                return 2;
        }
        lim.debug_dirs = argv[1];
        start = strtoull(argv[3], NULL, 0);
        len = strtoull(argv[4], NULL, 0);
        pgoff = strtoull(argv[5], NULL, 0);
        s = symbols_new(&lim);
        if (symbols_add_mapping(s, DUMP_PID, start, len, pgoff, argv[2], NULL, 0) < 0) {
                fprintf(stderr, "srcline-dump: bad mapping\n");
                symbols_free(s);
                return 2;
        }
        for (int i = 6; i < argc; i++) {
                if (strncmp(argv[i], "map:", 4) == 0) {
                        char *p = argv[i] + 4;
                        uint64_t ms = strtoull(p, &p, 0), ml = strtoull(p + 1, &p, 0), mo = strtoull(p + 1, &p, 0);

                        if (*p != ':' || symbols_maps_add_data(symbols_get_maps(s), DUMP_PID, ms, ml, mo, p + 1) < 0) {
                                fprintf(stderr, "srcline-dump: bad %s\n", argv[i]);
                                symbols_free(s);
                                return 2;
                        }
                        continue;
                }
                if (argv[i][0] == 'd') {
                        uint64_t addr = strtoull(argv[i] + 1, NULL, 0);
                        struct symbols_data dd;

                        if (symbols_data_symbol(s, DUMP_PID, addr, &dd) == 0)
                                printf("data 0x%" PRIx64 " %s+0x%" PRIx64 " %" PRIu64 " %s\n", addr, dd.symbol,
                                       dd.offset, dd.size, dd.member[0] ? dd.member : "?");
                        else
                                printf("data 0x%" PRIx64 " -\n", addr);
                        continue;
                }
                uint64_t pc = strtoull(argv[i], NULL, 0);
                struct symbols_frame frames[SYMBOLS_MAX_FRAMES];
                struct symbols_result res;
                int n;

                if (symbols_lookup(s, DUMP_PID, pc, &res) < 0) {
                        printf("pc 0x%" PRIx64 " -\n", pc);
                        continue;
                }
                printf("pc 0x%" PRIx64 " %s\n", pc, res.function ?: "?");
                n = symbols_lines(s, DUMP_PID, pc, frames, SYMBOLS_MAX_FRAMES);
                for (int j = 0; j < n; j++)
                        printf("frame %s %s:%" PRIu32 "\n", frames[j].function ?: "?", frames[j].file ?: "?",
                               frames[j].line);
        }
        printf("stats dwarf_loaded=%" PRIu64 " dwarf_errors=%" PRIu64 " debug_files=%" PRIu64 "\n",
               symbols_get_stats(s)->dwarf_loaded, symbols_get_stats(s)->dwarf_errors,
               symbols_get_stats(s)->debug_files);
        symbols_free(s);
        return 0;
}
