/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The fixed address-space layout of the synthetic workload: one process
 * (SPEGEN_PID) whose code is a small fake AArch64 ELF mapped at
 * SPEGEN_TEXT_BASE and whose data lives in one anonymous mapping at
 * SPEGEN_DATA_BASE. The generator, the ELF writer and the truth summary all
 * read it from here, so "which line is falsely shared and by which
 * function" has exactly one definition.
 */

#include <stdint.h>

#define SPEGEN_PID              4242U
#define SPEGEN_PROC_COMM        "spe_demo"

/* User text: the fake ELF is mapped from file offset 0 at TEXT_BASE; its
 * .text section starts at file offset/vaddr ELF_TEXT_OFF. */
#define SPEGEN_TEXT_BASE        UINT64_C(0xaaaac0000000)
#define SPEGEN_ELF_TEXT_OFF     UINT64_C(0x1000)
#define SPEGEN_ELF_TEXT_SIZE    UINT64_C(0x1000)
#define SPEGEN_TEXT_MAP_LEN     (SPEGEN_ELF_TEXT_OFF + SPEGEN_ELF_TEXT_SIZE)

/* User data (anonymous, rw). Physical pages follow the VA linearly from
 * SPEGEN_PA_BASE, inside NUMA node 0 of the fake memory topology. */
#define SPEGEN_DATA_BASE        UINT64_C(0xffff8a000000)
#define SPEGEN_DATA_LEN         UINT64_C(0x4000000)
#define SPEGEN_PA_BASE          UINT64_C(0x40000000)

#define SPEGEN_CACHE_LINE       64U

/* Cache lines the sharing scenarios use (all 64-byte aligned). */
#define SPEGEN_LINE_FALSE_SHARE (SPEGEN_DATA_BASE + 0x1000)
#define SPEGEN_LINE_TRUE_SHARE  (SPEGEN_DATA_BASE + 0x2000)
#define SPEGEN_LINE_READ_ONLY   (SPEGEN_DATA_BASE + 0x3000)
#define SPEGEN_LINE_PADDED      (SPEGEN_DATA_BASE + 0x4000)
#define SPEGEN_LINE_REMOTE      (SPEGEN_DATA_BASE + 0x5000)
#define SPEGEN_NOISE_AREA       (SPEGEN_DATA_BASE + 0x20000)
#define SPEGEN_NOISE_AREA_LEN   UINT64_C(0x10000)
#define SPEGEN_DRAM_AREA        (SPEGEN_DATA_BASE + 0x100000)
#define SPEGEN_DRAM_AREA_LEN    UINT64_C(0x2000000)

/* Field offsets inside the false-sharing line: writers store to
 * FS_LOCK0/FS_LOCK1, readers load FS_READER1/FS_READER2 (the shape of
 * Joe Mario's false_sharing_example.c, the demo of perf-c2c(1)). */
#define SPEGEN_FS_LOCK0         0x00U
#define SPEGEN_FS_LOCK1         0x08U
#define SPEGEN_FS_READER1       0x20U
#define SPEGEN_FS_READER2       0x28U
/* True sharing: everyone loads and stores one counter. */
#define SPEGEN_TS_COUNTER       0x10U
/* Padded fix: the writer's field and the readers' field are 64 bytes
 * apart, so they sit on two different lines. */
#define SPEGEN_PAD_WRITER       0x00U
#define SPEGEN_PAD_READER       0x40U
#define SPEGEN_RM_FIELD         0x18U

/* Kernel (EL1) text and data, arm64 48-bit VA kernel layout. */
#define SPEGEN_KTEXT_BASE       UINT64_C(0xffff800008010000)
#define SPEGEN_KTEXT_LEN        UINT64_C(0x10000)
#define SPEGEN_KDATA_BASE       UINT64_C(0xffff000012340000)
#define SPEGEN_KDATA_PA_BASE    UINT64_C(0x80000000)

/* Fake memory topology: 2 nodes x 32 blocks of 1 GiB. */
#define SPEGEN_MEM_BLOCK        UINT64_C(0x40000000)
#define SPEGEN_MEM_BLOCKS_NODE  32U

/* Functions of the fake ELF (offsets are ELF vaddrs = file offsets). */
enum spegen_func {
        SPEGEN_FN_MAIN,
        SPEGEN_FN_WRITER,
        SPEGEN_FN_READER,
        SPEGEN_FN_TRUE_SHARE,
        SPEGEN_FN_RO_READER,
        SPEGEN_FN_PAD_WRITER,
        SPEGEN_FN_PAD_READER,
        SPEGEN_FN_DRAM_WALK,
        SPEGEN_FN_BRANCHY,
        SPEGEN_FN_REMOTE_READER,
        SPEGEN_FN_REMOTE_WRITER,
        SPEGEN_FN_EXT_HDR,
        SPEGEN_FN_HOT_LOOP,
        SPEGEN_FN_NOISE,
        _SPEGEN_FN_MAX,
};

struct spegen_func_info {
        const char *name;
        uint64_t offset; /* ELF vaddr */
        uint64_t size;
};

extern const struct spegen_func_info spegen_funcs[_SPEGEN_FN_MAX];

/* User PC of byte `off` inside function fn. */
static inline uint64_t spegen_func_pc(enum spegen_func fn, uint64_t off) {
        return SPEGEN_TEXT_BASE + spegen_funcs[fn].offset + off;
}
