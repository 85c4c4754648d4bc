/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Allocations for a protobuf-c message graph that we build (not unpack):
 * protobuf-c does not own such memory (protobuf-c.h), so every node goes on
 * one list that is freed after packing.
 */

#include <stddef.h>

struct pb_scratch {
        void **ptrs;
        size_t n, cap;
};

/* Zeroed memory that lives until pb_scratch_free(). */
void *pb_scratch_alloc(struct pb_scratch *sc, size_t size);
void pb_scratch_free(struct pb_scratch *sc);
