/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * collectors/cgroup.c on outside input: the input as a /proc/PID/cgroup file
 * (cgroup_parse_proc()), and as a cgroup path (cgroup_service()), with the
 * promises of both checked: a parsed path is absolute and fits, a service
 * fits and a container is 64 hex digits.
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "cgroup.h"
#include "macro.h"
#include "strbuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Small buffers too, so that the bounds are what is exercised. */
static const size_t lens[] = { 1, 8, CGROUP_CONTAINER_ID_LEN + 1, PATH_MAX };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = xmalloc(size + 1);
        char buf[PATH_MAX];

        memcpy(text, data, size);
        text[size] = '\0';
        for (size_t i = 0; i < ELEMENTSOF(lens); i++) {
                enum cgroup_kind kind;

                if (cgroup_parse_proc(text, size, buf, lens[i]) == 0 && (buf[0] != '/' || strlen(buf) >= lens[i]))
                        __builtin_trap();
                kind = cgroup_service(text, buf, lens[i]);
                if (strlen(buf) >= lens[i] || !cgroup_kind_to_string(kind))
                        __builtin_trap();
                if (kind == CGROUP_KIND_CONTAINER && lens[i] > CGROUP_CONTAINER_ID_LEN &&
                    (strlen(buf) != CGROUP_CONTAINER_ID_LEN || buf[strspn(buf, "0123456789abcdef")]))
                        __builtin_trap();
                if (kind == CGROUP_KIND_ROOT && buf[0])
                        __builtin_trap();
        }
        return 0;
}
