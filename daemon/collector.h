/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The collector thread (DESIGN.md §3): one epoll loop that owns every
 * collector fd and is the only writer of aggregates. Each cycle ends with a
 * heartbeat; /healthz and the systemd watchdog look at it, so both report
 * real progress rather than a timer that fires regardless.
 */

#include <stdbool.h>
#include <stdint.h>

struct collector;

int collector_start(uint64_t interval_usec, struct collector **ret);
struct collector *collector_stop(struct collector *c);

/* Takes effect at the next cycle. */
void collector_set_interval(struct collector *c, uint64_t interval_usec);

/* Completed cycles, and whether the last one is recent (3 intervals, at least 5 s). */
uint64_t collector_cycles(struct collector *c);
bool collector_alive(struct collector *c);

uint64_t now_monotonic_usec(void);
