/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * What the decoder must make of fields the generator encoded: the truth in
 * struct spe_record terms, for the tests that compare decoded records with
 * the generator's truth. Written from perf's rules, not from spe-rec.c.
 */

#include <stdbool.h>
#include <stdint.h>

#include "spe-enc.h"
#include "spe-rec.h"

/* perf's address rules (tools/perf/util/arm-spe-decoder/arm-spe-decoder.c):
 * NS=1 at EL1/EL2 is a kernel address (top byte 0xff). */
static inline uint64_t spegen_expect_ip(uint64_t addr, unsigned el, bool ns) {
        return ns && (el == 1 || el == 2) ? addr | UINT64_C(0xff00000000000000) : addr;
}

/* A data VA keeps bits [55:0], top byte 0xff when bits [55:52] are all
 * ones, its tag byte apart. */
static inline uint64_t spegen_expect_va(uint64_t raw) {
        uint64_t va = raw & SPE_ENC_ADDR_VA_MASK;

        return ((raw >> 52) & 0xf) == 0xf ? va | UINT64_C(0xff00000000000000) : va;
}

/* Neoverse "common" data-source encoding (Neoverse TRMs, "Data source packet"). */
static inline uint8_t spegen_expect_source(uint16_t ds) {
        switch (ds) {
        case SPE_ENC_DS_L1D:           return SPE_DATA_SRC_L1D;
        case SPE_ENC_DS_L2:            return SPE_DATA_SRC_L2;
        case SPE_ENC_DS_PEER_CORE:     return SPE_DATA_SRC_PEER_CORE;
        case SPE_ENC_DS_LOCAL_CLUSTER: return SPE_DATA_SRC_LOCAL_CLUSTER;
        case SPE_ENC_DS_SYS_CACHE:     return SPE_DATA_SRC_SYS_CACHE;
        case SPE_ENC_DS_PEER_CLUSTER:  return SPE_DATA_SRC_PEER_CLUSTER;
        case SPE_ENC_DS_REMOTE:        return SPE_DATA_SRC_REMOTE;
        case SPE_ENC_DS_DRAM:          return SPE_DATA_SRC_DRAM;
        default:                       return SPE_DATA_SRC_UNKNOWN;
        }
}
