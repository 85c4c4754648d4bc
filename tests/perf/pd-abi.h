/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The perf.data format as the test builder writes it, written down here
 * from perf's own sources and not taken from the reader's perf-data.h, so
 * that the reader's tests check it against an independent statement of the
 * format rather than against itself. Kernel record types and misc bits come
 * from <linux/perf_event.h> (the kernel ABI); what perf adds on top is:
 *
 *  - tools/perf/Documentation/perf.data-file-format.txt: magic, header,
 *    the user record types, the feature bits;
 *  - tools/perf/util/header.h (struct perf_file_header, enum HEADER_*);
 *  - tools/lib/perf/include/perf/event.h (enum perf_user_event_type);
 *  - tools/perf/util/auxtrace.h (enum auxtrace_type);
 *  - tools/perf/util/arm-spe.h and arch/arm64/util/arm-spe.c (the SPE
 *    AUXTRACE_INFO private area, version 2 per-CPU metadata).
 */

#include <stdint.h>

/* "PERFILE2" read as a little-endian u64. */
#define PDB_MAGIC2                      UINT64_C(0x32454c4946524550)

/*
 * struct perf_file_header: magic, size, attr_size, then the attrs, data and
 * event_types sections as {u64 offset; u64 size}, then a 256-bit feature
 * bitmap (adds_features). struct perf_pipe_file_header: magic, size.
 */
#define PDB_FILE_HEADER_SIZE            (3 * 8 + 3 * 16 + 256 / 8)
#define PDB_PIPE_HEADER_SIZE            16
#define PDB_SECTION_SIZE                16      /* struct perf_file_section */
#define PDB_FEAT_WORDS                  4

/* enum HEADER_* feature bits. */
#define PDB_FEAT_BUILD_ID               2
#define PDB_FEAT_HOSTNAME               3
#define PDB_FEAT_NRCPUS                 7
#define PDB_FEAT_CPUID                  9

/* enum perf_user_event_type. */
#define PDB_RECORD_HEADER_ATTR          64
#define PDB_RECORD_HEADER_TRACING_DATA  66
#define PDB_RECORD_HEADER_BUILD_ID      67
#define PDB_RECORD_FINISHED_ROUND       68
#define PDB_RECORD_AUXTRACE_INFO        70
#define PDB_RECORD_AUXTRACE             71
#define PDB_RECORD_TIME_CONV            79
#define PDB_RECORD_HEADER_FEATURE       80
#define PDB_RECORD_COMPRESSED           81

/* A build-id event's misc bit saying its size byte is valid (util/event.h). */
#define PDB_MISC_BUILD_ID_SIZE          (1U << 15)

/* enum auxtrace_type. */
#define PDB_AUXTRACE_ARM_SPE            4

/* Arm SPE AUXTRACE_INFO, version 2: the per-CPU block's first word. */
#define PDB_SPE_CPU_MAGIC               UINT64_C(0x1010101010101010)
