/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Text dump of SPE packets in the style of `perf report -D` (perf's
 * arm_spe_dump / arm_spe_pkt_desc), for debugging and for comparing with
 * perf as an oracle. Off the decode path: it formats with stdio.
 *
 * Line format, as perf prints it:
 *   ".  00000000:  b0 04 15 00 c0 aa aa 00 80                      PC 0xaaaac0001504 el0 ns=1"
 * i.e. ".", "  %08zx: ", " %02x" per byte, padded to 16 byte columns, then
 * " DESCRIPTION". Runs of PAD bytes are merged into one line of up to 16
 * bytes; an undecodable byte prints " Bad packet!" and is skipped.
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "spe-pkt.h"
#include "strbuf.h"

/* Room for the longest description spe_pkt_desc() produces (all 64 event bits: ~370 bytes). */
#define SPE_PKT_DESC_MAX 512

/*
 * Print exactly what Debian's perf 6.1 prints (the oracle on our build
 * machines): event bits 0-11, 17, 18 only; op-type strings of that version
 * (no ASE/FP/GCS/MEMCPY/MEMSET/SME, indirect branch only for payload 0x02/0x03).
 * Without it the text follows current perf (2025: TXN, L2D-*, HITM, LFB,
 * SNOOPED, IMPDEF:n, GCS, CR-*, SME-OTHER...).
 */
#define SPE_DUMP_F_PERF61       (1U << 0)
/* Leave out the ". ... ARM SPE data: size %#zx bytes" first line. */
#define SPE_DUMP_F_NO_HEADER    (1U << 1)

/*
 * perf-style description of one packet into buf (always NUL-terminated
 * when len > 0). midr selects CPU-specific event names (Neoverse N1
 * LATE-PREFETCH), 0 if unknown. Returns the string length, or -ENOBUFS if
 * it had to be truncated, -EINVAL on bad arguments.
 */
int spe_pkt_desc(const struct spe_pkt *pkt, uint64_t midr, unsigned flags, char *buf, size_t len);

/* Dump buf[0..len) to f. Returns 0 or -errno from the stream. */
int spe_dump_file(FILE *f, const uint8_t *buf, size_t len, uint64_t midr, unsigned flags);

/* Same text appended to sb (aborts on OOM like every strbuf user). */
void spe_dump_strbuf(struct strbuf *sb, const uint8_t *buf, size_t len, uint64_t midr, unsigned flags);
