/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "privacy.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define ADDR_TOP_SHIFT  56
#define ADDR_TOP_KERNEL UINT64_C(0xff)
#define ADDR_TAG_MASK   ((UINT64_C(1) << ADDR_TOP_SHIFT) - 1)

bool privacy_kernel_addr(uint64_t addr) {
        return (addr >> ADDR_TOP_SHIFT) == ADDR_TOP_KERNEL;
}

bool privacy_kernel_pc(unsigned el, uint64_t pc) {
        /* EL0 is user code; the others are the kernel, the hypervisor or firmware (Arm ARM D1.1). */
        return el != 0 || privacy_kernel_addr(pc);
}

static const struct privacy_policy *or_default(const struct privacy_policy *p) {
        static const struct privacy_policy d = PRIVACY_POLICY_DEFAULT;

        return p ?: &d;
}

bool privacy_pc_shown(const struct privacy_policy *p, unsigned el, uint64_t pc) {
        return or_default(p)->kernel_addresses || !privacy_kernel_pc(el, pc);
}

bool privacy_data_shown(const struct privacy_policy *p, privacy_region_fn region, void *userdata, uint32_t pid,
                        uint64_t va, char *buf, size_t len) {
        char name[PATH_MAX];
        uint64_t off;

        p = or_default(p);
        if (privacy_kernel_addr(va)) {
                if (p->kernel_addresses && p->data_addresses)
                        return true;
                /* A kernel address is in none of a process's mappings: [kernel] whatever data_addresses says. */
                snprintf(buf, len, "%s", PRIVACY_KERNEL);
                return false;
        }
        if (p->data_addresses)
                return true;
        if (!region || !region(userdata, pid, va & ADDR_TAG_MASK, name, sizeof(name), &off)) {
                snprintf(buf, len, "%s", PRIVACY_UNKNOWN);
                return false;
        }
        /* perf names anonymous memory "//anon"; /proc/PID/maps leaves its path empty. */
        if (!name[0] || streq(name, "//anon"))
                snprintf(name, sizeof(name), "%s", PRIVACY_ANON);
        snprintf(buf, len, "%s+0x%" PRIx64, name, off);
        return false;
}
