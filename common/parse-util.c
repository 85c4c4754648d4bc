/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "parse-util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "macro.h"

int safe_atou64(const char *s, uint64_t *ret) {
        char *end = NULL;
        unsigned long long v;

        /* strtoull() accepts leading blanks and a minus sign; we do not. */
        if (!s || !isdigit((unsigned char) s[0]))
                return -EINVAL;

        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (errno != 0 || *end != '\0')
                return -EINVAL;

        *ret = (uint64_t) v;
        return 0;
}

int safe_atou32(const char *s, uint32_t *ret) {
        uint64_t v;
        int r;

        r = safe_atou64(s, &v);
        if (r < 0)
                return r;
        if (v > UINT32_MAX)
                return -ERANGE;

        *ret = (uint32_t) v;
        return 0;
}

int safe_atoi32(const char *s, int32_t *ret) {
        bool neg = false;
        uint64_t v;
        int r;

        if (s && s[0] == '-') {
                neg = true;
                s++;
        }
        r = safe_atou64(s, &v);
        if (r < 0)
                return r;
        if (neg ? v > (uint64_t) INT32_MAX + 1 : v > INT32_MAX)
                return -ERANGE;

        *ret = neg ? (int32_t) -(int64_t) v : (int32_t) v;
        return 0;
}

int hex_digit_value(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

int parse_line_size(const char *s, uint32_t *ret) {
        uint32_t v;
        int r;

        r = safe_atou32(s, &v);
        if (r < 0)
                return r;
        if (v < LINE_SIZE_MIN || v > LINE_SIZE_MAX || (v & (v - 1)) != 0)
                return -ERANGE;
        *ret = v;
        return 0;
}

int parse_bool(const char *s, bool *ret) {
        static const char *const yes[] = { "1", "yes", "true", "on", "y" };
        static const char *const no[] = { "0", "no", "false", "off", "n" };

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                if (strcasecmp(s, yes[i]) == 0) {
                        *ret = true;
                        return 0;
                }
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                if (strcasecmp(s, no[i]) == 0) {
                        *ret = false;
                        return 0;
                }
        return -EINVAL;
}

struct unit {
        const char *suffix;
        uint64_t factor;
};

/* The digits of "123unit": more than a uint64_t has (20), so that leading zeros pass. */
#define UNIT_DIGITS_MAX 32

/*
 * Split "123unit" into number and suffix, look the suffix up in a table
 * and multiply with overflow checks. An empty suffix uses `bare`.
 */
static int parse_with_units(const char *s, const struct unit *units, size_t n_units, uint64_t bare,
                            uint64_t *ret) {
        char digits[UNIT_DIGITS_MAX];
        const char *p = s;
        uint64_t v, factor = 0;
        size_t n;
        int r;

        if (!s)
                return -EINVAL;
        while (isdigit((unsigned char) *p))
                p++;
        n = (size_t) (p - s);
        if (n == 0 || n >= sizeof(digits))
                return n == 0 ? -EINVAL : -ERANGE;
        memcpy(digits, s, n);
        digits[n] = '\0';

        r = safe_atou64(digits, &v);
        if (r < 0)
                return r;

        if (*p == '\0')
                factor = bare;
        else
                for (size_t i = 0; i < n_units; i++)
                        if (strcmp(p, units[i].suffix) == 0) {
                                factor = units[i].factor;
                                break;
                        }
        if (factor == 0)
                return -EINVAL;
        if (v != 0 && factor > UINT64_MAX / v)
                return -ERANGE;

        *ret = v * factor;
        return 0;
}

int parse_duration_usec(const char *s, uint64_t *ret_usec) {
        static const struct unit units[] = {
                { "us", 1 },
                { "ms", USEC_PER_MSEC },
                { "s", USEC_PER_SEC },
                { "sec", USEC_PER_SEC },
                { "m", 60 * USEC_PER_SEC },
                { "min", 60 * USEC_PER_SEC },
                { "h", 3600 * USEC_PER_SEC },
        };

        return parse_with_units(s, units, ELEMENTSOF(units), USEC_PER_SEC, ret_usec);
}

int parse_size(const char *s, uint64_t *ret_bytes) {
        static const struct unit units[] = {
                { "B", 1 },
                { "K", UINT64_C(1) << 10 }, { "KiB", UINT64_C(1) << 10 }, { "KB", UINT64_C(1) << 10 },
                { "M", UINT64_C(1) << 20 }, { "MiB", UINT64_C(1) << 20 }, { "MB", UINT64_C(1) << 20 },
                { "G", UINT64_C(1) << 30 }, { "GiB", UINT64_C(1) << 30 }, { "GB", UINT64_C(1) << 30 },
                { "T", UINT64_C(1) << 40 }, { "TiB", UINT64_C(1) << 40 }, { "TB", UINT64_C(1) << 40 },
        };

        return parse_with_units(s, units, ELEMENTSOF(units), 1, ret_bytes);
}

static int parse_port(const char *s, uint16_t *ret) {
        uint32_t v;
        int r;

        r = safe_atou32(s, &v);
        if (r < 0)
                return r;
        if (v > 65535)
                return -ERANGE;
        *ret = (uint16_t) v;
        return 0;
}

int parse_listen_addr(const char *s, struct listen_addr *ret) {
        struct listen_addr a = {};
        char host[INET6_ADDRSTRLEN + 1];
        const char *port_str;
        uint16_t port;
        size_t hlen;
        int r;

        if (!s)
                return -EINVAL;

        if (s[0] == '[') {
                const char *close = strchr(s, ']');

                if (!close || close[1] != ':')
                        return -EINVAL;
                hlen = (size_t) (close - s - 1);
                if (hlen == 0 || hlen >= sizeof(host))
                        return -EINVAL;
                memcpy(host, s + 1, hlen);
                host[hlen] = '\0';
                port_str = close + 2;
        } else {
                const char *colon = strrchr(s, ':');

                if (!colon)
                        return -EINVAL;
                hlen = (size_t) (colon - s);
                if (hlen >= sizeof(host) || memchr(s, ':', hlen))
                        return -EINVAL; /* bare IPv6 needs brackets */
                memcpy(host, s, hlen);
                host[hlen] = '\0';
                port_str = colon + 1;
        }

        r = parse_port(port_str, &port);
        if (r < 0)
                return r;

        if (host[0] == '\0') {
                struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *) &a.sa;

                sin6->sin6_family = AF_INET6;
                sin6->sin6_addr = in6addr_any;
                sin6->sin6_port = htons(port);
                a.len = sizeof(*sin6);
                a.any = true;
        } else if (s[0] == '[') {
                struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *) &a.sa;

                if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
                        return -EINVAL;
                sin6->sin6_family = AF_INET6;
                sin6->sin6_port = htons(port);
                a.len = sizeof(*sin6);
        } else {
                struct sockaddr_in *sin = (struct sockaddr_in *) &a.sa;

                if (strcmp(host, "localhost") == 0)
                        strcpy(host, "127.0.0.1");
                if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
                        return -EINVAL;
                sin->sin_family = AF_INET;
                sin->sin_port = htons(port);
                a.len = sizeof(*sin);
        }

        *ret = a;
        return 0;
}

const char *listen_addr_to_string(const struct listen_addr *a, char *buf, size_t len) {
        char host[INET6_ADDRSTRLEN];

        if (a->any) {
                const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *) &a->sa;
                snprintf(buf, len, ":%u", ntohs(sin6->sin6_port));
        } else if (a->sa.ss_family == AF_INET6) {
                const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *) &a->sa;
                inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
                snprintf(buf, len, "[%s]:%u", host, ntohs(sin6->sin6_port));
        } else {
                const struct sockaddr_in *sin = (const struct sockaddr_in *) &a->sa;
                inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
                snprintf(buf, len, "%s:%u", host, ntohs(sin->sin_port));
        }
        return buf;
}

const char *format_double_shortest(double v, char buf[static FORMAT_DOUBLE_MAX]) {
        for (int digits = 15; digits < 17; digits++) {
                snprintf(buf, FORMAT_DOUBLE_MAX, "%.*g", digits, v);
                if (strtod(buf, NULL) == v)
                        return buf;
        }
        snprintf(buf, FORMAT_DOUBLE_MAX, "%.17g", v);
        return buf;
}
