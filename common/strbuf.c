/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "strbuf.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void oom(void) {
        static const char msg[] = "armprofd: out of memory\n";
        ssize_t _unused_ r = write(STDERR_FILENO, msg, sizeof(msg) - 1);
        abort();
}

void *xmalloc(size_t n) {
        void *p = malloc(n ? n : 1);
        if (!p)
                oom();
        return p;
}

void *xcalloc(size_t n, size_t size) {
        void *p = calloc(n ? n : 1, size ? size : 1);
        if (!p)
                oom();
        return p;
}

void *xrealloc(void *p, size_t n) {
        p = realloc(p, n ? n : 1);
        if (!p)
                oom();
        return p;
}

char *xstrdup(const char *s) {
        char *p = strdup(s);
        if (!p)
                oom();
        return p;
}

void malloc_keep_freed_buffers(void) {
        /* Setting either turns glibc's sliding thresholds off: both are set. */
        (void) mallopt(M_MMAP_THRESHOLD, (int) MALLOC_HEAP_BLOCK_MAX);
        (void) mallopt(M_TRIM_THRESHOLD, (int) MALLOC_KEEP_FREED);
}

void strbuf_reserve(struct strbuf *sb, size_t extra) {
        size_t need = sb->len + extra + 1; /* keep room for the NUL */

        if (need < sb->len)
                oom();
        if (need <= sb->cap)
                return;
        size_t cap = sb->cap ? sb->cap : 256;
        while (cap < need)
                cap *= 2;
        sb->buf = xrealloc(sb->buf, cap);
        sb->cap = cap;
}

void strbuf_append(struct strbuf *sb, const void *data, size_t len) {
        strbuf_reserve(sb, len);
        memcpy(sb->buf + sb->len, data, len);
        sb->len += len;
        sb->buf[sb->len] = '\0';
}

void strbuf_puts(struct strbuf *sb, const char *s) {
        strbuf_append(sb, s, strlen(s));
}

void strbuf_putc(struct strbuf *sb, char c) {
        if (sb->len + 2 > sb->cap)
                strbuf_reserve(sb, 1);
        sb->buf[sb->len++] = c;
        sb->buf[sb->len] = '\0';
}

void strbuf_put_u64(struct strbuf *sb, uint64_t v) {
        char buf[DECIMAL_STR_MAX(uint64_t)], *p = buf + sizeof(buf);

        do {
                *--p = (char) ('0' + v % 10);
                v /= 10;
        } while (v);
        strbuf_append(sb, p, (size_t) (buf + sizeof(buf) - p));
}

void strbuf_vprintf(struct strbuf *sb, const char *fmt, va_list ap) {
        size_t room = sb->cap > sb->len ? sb->cap - sb->len : 0;
        va_list aq;
        int n;

        /* Formatted once where it fits (the common case), measured and formatted again where not. */
        va_copy(aq, ap);
        n = vsnprintf(room ? sb->buf + sb->len : NULL, room, fmt, aq);
        va_end(aq);
        if (n < 0) {
                if (room)
                        sb->buf[sb->len] = '\0';
                return;
        }
        if ((size_t) n >= room) {
                strbuf_reserve(sb, (size_t) n);
                vsnprintf(sb->buf + sb->len, (size_t) n + 1, fmt, ap);
        }
        sb->len += (size_t) n;
}

void strbuf_printf(struct strbuf *sb, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        strbuf_vprintf(sb, fmt, ap);
        va_end(ap);
}

void str_appendf(char *buf, size_t size, const char *fmt, ...) {
        size_t len = strnlen(buf, size);
        va_list ap;

        if (len + 1 >= size)
                return;
        va_start(ap, fmt);
        (void) vsnprintf(buf + len, size - len, fmt, ap);
        va_end(ap);
}

void escape_bytes(char *dst, size_t size, const char *src, size_t len) {
        size_t o = 0;

        for (size_t i = 0; i < len && o + 5 <= size; i++) {
                unsigned char c = (unsigned char) src[i];

                if (c >= 0x20 && c < 0x7f)
                        dst[o++] = (char) c;
                else
                        o += (size_t) snprintf(dst + o, size - o, "\\x%02x", c);
        }
        dst[MIN(o, size - 1)] = '\0';
}

char *strbuf_steal(struct strbuf *sb, size_t *ret_len) {
        char *p;

        strbuf_reserve(sb, 0);
        p = sb->buf;
        if (ret_len)
                *ret_len = sb->len;
        *sb = (struct strbuf) STRBUF_INIT;
        return p;
}

void strbuf_done(struct strbuf *sb) {
        free(sb->buf);
        *sb = (struct strbuf) STRBUF_INIT;
}
