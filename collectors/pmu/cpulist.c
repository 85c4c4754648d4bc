/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "cpulist.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"

#define DECIMAL_BASE 10U

void cpulist_clear(struct cpulist *l) {
        memset(l, 0, sizeof(*l));
}

int cpulist_add(struct cpulist *l, unsigned cpu) {
        if (cpu >= CPULIST_MAX_CPUS)
                return -ERANGE;
        l->bits[cpu / CPULIST_WORD_BITS] |= UINT64_C(1) << (cpu % CPULIST_WORD_BITS);
        return 0;
}

void cpulist_del(struct cpulist *l, unsigned cpu) {
        if (cpu >= CPULIST_MAX_CPUS)
                return;
        l->bits[cpu / CPULIST_WORD_BITS] &= ~(UINT64_C(1) << (cpu % CPULIST_WORD_BITS));
}

bool cpulist_has(const struct cpulist *l, unsigned cpu) {
        if (cpu >= CPULIST_MAX_CPUS)
                return false;
        return l->bits[cpu / CPULIST_WORD_BITS] & (UINT64_C(1) << (cpu % CPULIST_WORD_BITS));
}

unsigned cpulist_count(const struct cpulist *l) {
        unsigned n = 0;

        for (size_t i = 0; i < ELEMENTSOF(l->bits); i++)
                n += (unsigned) __builtin_popcountll(l->bits[i]);
        return n;
}

bool cpulist_equal(const struct cpulist *a, const struct cpulist *b) {
        return memcmp(a->bits, b->bits, sizeof(a->bits)) == 0;
}

int cpulist_next(const struct cpulist *l, unsigned from) {
        for (unsigned w = from / CPULIST_WORD_BITS; w < ELEMENTSOF(l->bits); w++) {
                uint64_t word = l->bits[w];

                if (w == from / CPULIST_WORD_BITS)
                        word &= ~UINT64_C(0) << (from % CPULIST_WORD_BITS);
                if (word)
                        return (int) (w * CPULIST_WORD_BITS + (unsigned) __builtin_ctzll(word));
        }
        return -1;
}

/* Parse a decimal CPU number at *p, advancing *p. Digits only: no sign, no
 * blanks, no base prefixes (the kernel prints plain decimal). */
static int parse_cpu(const char **p, unsigned *ret) {
        const char *s = *p;
        unsigned v = 0;

        if (!isdigit((unsigned char) *s))
                return -EINVAL;
        while (isdigit((unsigned char) *s)) {
                v = v * DECIMAL_BASE + (unsigned) (*s - '0');
                if (v >= CPULIST_MAX_CPUS) {
                        /* Keep consuming so the error is about range. */
                        while (isdigit((unsigned char) *s))
                                s++;
                        *p = s;
                        return -ERANGE;
                }
                s++;
        }
        *p = s;
        *ret = v;
        return 0;
}

int cpulist_parse(const char *s, struct cpulist *ret) {
        struct cpulist l;
        const char *p = s;
        int r;

        if (!s)
                return -EINVAL;

        cpulist_clear(&l);
        /* An empty list (e.g. "online" of a PMU with no CPUs) is valid. */
        if (*p == '\0' || streq(p, "\n")) {
                *ret = l;
                return 0;
        }

        for (;;) {
                unsigned a, b;

                r = parse_cpu(&p, &a);
                if (r < 0)
                        return r;
                b = a;
                if (*p == '-') {
                        p++;
                        r = parse_cpu(&p, &b);
                        if (r < 0)
                                return r;
                        if (b < a)
                                return -EINVAL;
                }
                for (unsigned c = a; c <= b; c++)
                        (void) cpulist_add(&l, c);

                if (*p == ',') {
                        p++;
                        continue;
                }
                if (*p == '\n')
                        p++;
                if (*p != '\0')
                        return -EINVAL;
                break;
        }

        *ret = l;
        return 0;
}

int cpulist_format(const struct cpulist *l, char *buf, size_t len) {
        size_t off = 0;
        int cpu;

        if (len == 0)
                return -ENOBUFS;
        buf[0] = '\0';
        cpu = cpulist_next(l, 0);
        while (cpu >= 0) {
                unsigned end = (unsigned) cpu;
                int n;

                while (end + 1 < CPULIST_MAX_CPUS && cpulist_has(l, end + 1))
                        end++;
                if (end == (unsigned) cpu)
                        n = snprintf(buf + off, len - off, "%s%d", off ? "," : "", cpu);
                else
                        n = snprintf(buf + off, len - off, "%s%d-%u", off ? "," : "", cpu, end);
                if (n < 0 || (size_t) n >= len - off)
                        return -ENOBUFS;
                off += (size_t) n;
                cpu = end + 1 < CPULIST_MAX_CPUS ? cpulist_next(l, end + 1) : -1;
        }
        return 0;
}
