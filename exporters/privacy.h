/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * What [privacy] lets an answer say of an address: the one filter every
 * renderer of SPE data applies (the JSON of /hotpcs and /hotlines, hence
 * their protobuf, which is made from it; the SPE pprof profile, hence the
 * pushed one, built by the same builder).
 *
 * Why here, at rendering, and not at the store's ingress: the store keys
 * hot PCs and lines by address, and must, to count and classify them
 * (two kernel lines merged into one would look shared); a data address's
 * mapping is known only to the symbolizer's table, which readers consult;
 * and the addresses themselves never leave the host, which is what the
 * keys are about. The CPU sampler's kernel frames are the exception: its
 * stacks collapse them when they are taken (daemon/sample-sink.c), since
 * they are stored as frames, not as keys. Every output goes through the
 * functions below, so a renderer cannot forget a rule of its own.
 *
 * Kernel addresses: an address whose top byte is 0xff (arm64's TTBR1 half,
 * as the decoder sign-fills it: Arm ARM D8.2, perf's arm_spe_calc_ip()),
 * and for a PC also any PC of a record at EL1, EL2 or EL3. A user pointer
 * tagged 0xff (TBI) is taken for a kernel one: the error withholds, it
 * never reveals.
 */

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

struct privacy_policy {
        bool kernel_addresses;          /* [privacy] kernel_addresses: kernel PCs and data addresses as they are */
        bool data_addresses;            /* [privacy] data_addresses: data VAs as they are, else mapping+offset */
};

/* What the daemon does with no configuration: kernel addresses withheld, data addresses served. */
#define PRIVACY_POLICY_DEFAULT ((struct privacy_policy) { .kernel_addresses = false, .data_addresses = true })

#define PRIVACY_KERNEL  "[kernel]"
#define PRIVACY_UNKNOWN "[unknown]"
/* The name of an anonymous mapping (perf's "//anon", an empty /proc/PID/maps path). */
#define PRIVACY_ANON    "[anon]"

/* A region: a mapping's path or name (PATH_MAX, its NUL included), "+0x", a u64 in hex. */
#define PRIVACY_REGION_MAX (PATH_MAX + 3U + 16U)

/*
 * The mapping of process pid that holds the data address va: its name
 * (path, "[heap]", "//anon"...) copied into name, and the offset the region
 * shows in *ret_offset: the /proc/PID/maps offset column (0 for a mapping
 * of no file) plus va's distance from the mapping's start. False when no
 * known mapping holds va.
 */
typedef bool (*privacy_region_fn)(void *userdata, uint32_t pid, uint64_t va, char *name, size_t name_len,
                                  uint64_t *ret_offset);

bool privacy_kernel_addr(uint64_t addr);
bool privacy_kernel_pc(unsigned el, uint64_t pc);

/*
 * p NULL: PRIVACY_POLICY_DEFAULT. Whether a PC of a record at el may be
 * served; when not, it is served as PRIVACY_KERNEL without an address.
 */
bool privacy_pc_shown(const struct privacy_policy *p, unsigned el, uint64_t pc);

/*
 * How data address va of pid is served: true when as it is; false with
 * buf (PRIVACY_REGION_MAX) holding what is served instead: PRIVACY_KERNEL,
 * PRIVACY_UNKNOWN or "MAPPING+0xOFFSET" (region may be NULL: no mapping
 * known, so PRIVACY_UNKNOWN). The top byte of a user address (its TBI tag)
 * is ignored for the lookup.
 */
bool privacy_data_shown(const struct privacy_policy *p, privacy_region_fn region, void *userdata, uint32_t pid,
                        uint64_t va, char *buf, size_t len);
