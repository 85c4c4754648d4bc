/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * A growable byte buffer for building response bodies. Allocation failure
 * aborts through oom(): a long-running daemon that cannot allocate a few
 * kilobytes for a response has nothing better to do, and threading -ENOMEM
 * through every formatter would hide the logic (chrony does the same).
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

struct strbuf {
        char *buf;
        size_t len;
        size_t cap;
};

#define STRBUF_INIT { NULL, 0, 0 }

_noreturn_ void oom(void);
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

/*
 * The allocator's thresholds for a process that builds large answers over
 * and over (a /metrics of 150 KB to 1 MB a scrape, with its writer's
 * arrays): blocks up to MALLOC_HEAP_BLOCK_MAX come from the heap rather
 * than from mmap(), and up to MALLOC_KEEP_FREED bytes freed at a heap's top
 * stay there. With glibc's defaults each answer's memory went back to the
 * kernel when it was freed and the next answer faulted it in again, a page
 * at a time (100 faults a scrape, more than half of its time in a VM). The
 * cost: up to MALLOC_KEEP_FREED bytes of each thread's heap kept unused.
 * mallopt(3); the daemon calls this first thing.
 */
#define MALLOC_HEAP_BLOCK_MAX (2U << 20)
#define MALLOC_KEEP_FREED (4U << 20)
void malloc_keep_freed_buffers(void);

void strbuf_reserve(struct strbuf *sb, size_t extra);
void strbuf_append(struct strbuf *sb, const void *data, size_t len);
void strbuf_puts(struct strbuf *sb, const char *s);
void strbuf_putc(struct strbuf *sb, char c);
/* v in decimal, as "%" PRIu64 writes it, without printf's cost (a /metrics has thousands). */
void strbuf_put_u64(struct strbuf *sb, uint64_t v);
void strbuf_printf(struct strbuf *sb, const char *fmt, ...) _printf_(2, 3);
void strbuf_vprintf(struct strbuf *sb, const char *fmt, va_list ap) _printf_(2, 0);
/*
 * Append to the NUL-terminated string in buf[0, size) (a note, a message
 * for people), cut where buf ends; nothing once it is full.
 */
void str_appendf(char *buf, size_t size, const char *fmt, ...) _printf_(3, 4);
/* The same into a char array. */
#define STR_APPENDF(array, ...) str_appendf((array), sizeof(array), __VA_ARGS__)
/*
 * src[0, len) into dst (size > 0), NUL-terminated: printable ASCII as it
 * is, every other byte as \xNN (outside input in a message or a log line),
 * cut where dst ends, never inside an escape.
 */
void escape_bytes(char *dst, size_t size, const char *src, size_t len);
/* Hand the NUL-terminated buffer to the caller; sb is reset. */
char *strbuf_steal(struct strbuf *sb, size_t *ret_len);
void strbuf_done(struct strbuf *sb);
