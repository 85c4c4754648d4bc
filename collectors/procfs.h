/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * What /proc says of a task, for sources that see a thread id and need its
 * process (a CONTEXT packet holds the TID only).
 */

#include <stdint.h>

/*
 * The thread group (the process) of thread tid: "Tgid:" of
 * <root>/<tid>/status (proc(5); root NULL: "/proc"). -ENOENT when the
 * thread is gone (or never was), -EBADMSG when the file has no Tgid line.
 */
int procfs_tgid(const char *root, uint32_t tid, uint32_t *ret);
