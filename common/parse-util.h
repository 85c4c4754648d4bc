/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Checked parsers for numbers and units in outside input (config files,
 * sysfs, query strings). All return 0 or a negative errno and write their
 * result only on success: -EINVAL for malformed text, -ERANGE for values
 * that do not fit. Leading/trailing whitespace is not accepted; callers trim.
 */

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "macro.h"

int safe_atou64(const char *s, uint64_t *ret);
int safe_atou32(const char *s, uint32_t *ret);
int safe_atoi32(const char *s, int32_t *ret);
/* The value of a hex digit (either case), or -1 for any other character. */
int hex_digit_value(char c);

/* "yes/no/true/false/on/off/1/0", case-insensitive. */
int parse_bool(const char *s, bool *ret);

/* "10s", "500ms", "1m", "2h", "250us", a bare number is seconds. */
int parse_duration_usec(const char *s, uint64_t *ret_usec);

/* "4096", "64K", "64KiB", "64MiB", "1G", "2GB"... Binary multiples (K = KiB). */
int parse_size(const char *s, uint64_t *ret_bytes);

/*
 * A cache line size, wherever it comes from ([store] line_size, sysfs
 * coherency_line_size: Documentation/ABI/testing/sysfs-devices-system-cpu):
 * a power of two in LINE_SIZE_MIN..LINE_SIZE_MAX bytes, else -EINVAL (a
 * number that does not parse) or -ERANGE. LINE_SIZE_DEFAULT is the size when
 * sysfs has none: every Arm Neoverse core's and every x86-64 core's.
 */
#define LINE_SIZE_MIN 16U
#define LINE_SIZE_MAX 1024U
#define LINE_SIZE_DEFAULT 64U
int parse_line_size(const char *s, uint32_t *ret);

/*
 * Listen addresses as Prometheus exporters spell them: "ADDR:PORT",
 * "[IPV6]:PORT" or ":PORT" (all addresses, dual stack). Port 0 picks an
 * ephemeral port.
 */
struct listen_addr {
        struct sockaddr_storage sa;
        socklen_t len;
        bool any; /* ":PORT": bind the IPv6 wildcard with dual stack */
};

int parse_listen_addr(const char *s, struct listen_addr *ret);
/* "[" IPv6 address "]:" port, NUL (INET6_ADDRSTRLEN counts the NUL). */
#define LISTEN_ADDR_STR_MAX (1U + INET6_ADDRSTRLEN + 2U + DECIMAL_STR_MAX(uint16_t))
/* Format back to "ADDR:PORT" / "[ADDR]:PORT"; buf holds LISTEN_ADDR_STR_MAX bytes. */
const char *listen_addr_to_string(const struct listen_addr *a, char *buf, size_t len);

/*
 * The shortest of "%.15g", "%.16g" and "%.17g" that strtod() reads back as
 * exactly `v` (%.17g always does for an IEEE 754 double; when a shorter
 * decimal exists, %.15g finds it, except for a few subnormals). NaN and
 * infinities come out as printf spells them; callers that need another
 * spelling test for them first. `buf` holds FORMAT_DOUBLE_MAX bytes.
 */
#define FORMAT_DOUBLE_MAX 32
const char *format_double_shortest(double v, char buf[static FORMAT_DOUBLE_MAX]);
