/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "procfs.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "parse-util.h"

int procfs_tgid(const char *root, uint32_t tid, uint32_t *ret) {
        char path[PATH_MAX], line[256];
        int k = -EBADMSG;
        FILE *f;

        snprintf(path, sizeof(path), "%s/%" PRIu32 "/status", root ?: "/proc", tid);
        f = fopen(path, "re");
        if (!f)
                return errno == ENOENT || errno == ESRCH ? -ENOENT : -errno;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "Tgid:", 5) == 0) {
                        line[strcspn(line, "\n")] = '\0';
                        k = safe_atou32(line + 5 + strspn(line + 5, " \t"), ret);
                        if (k < 0 || *ret == 0)
                                k = -EBADMSG;
                        break;
                }
        fclose(f);
        return k;
}
