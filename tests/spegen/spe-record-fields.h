/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Every field of struct spe_record (collectors/spe/spe-rec.h), for the
 * tests that compare or hash decoded records field by field
 * (tests/perf/test-aux-ring.c, tests/spe/spe-arm64-driver.c): X(field) for each.
 * A field added to the struct belongs here too.
 */
#define SPE_RECORD_FIELDS(X)                                                    \
        X(pc.addr) X(pc.el) X(pc.ns) X(pc.nse)                                  \
        X(br_tgt.addr) X(br_tgt.el) X(br_tgt.ns) X(br_tgt.nse)                  \
        X(pbt.addr) X(pbt.el) X(pbt.ns) X(pbt.nse)                              \
        X(va) X(pa) X(timestamp) X(events) X(source_raw)                        \
        X(present) X(flags) X(op_flags) X(context) X(cpu)                       \
        X(lat_total) X(lat_issue) X(lat_xlat)                                   \
        X(va_tag) X(pa_ns) X(pa_ch) X(pa_pat) X(pa_nse)                         \
        X(op_class) X(op_subclass) X(op_raw) X(op_evl_bits_log2)                \
        X(source) X(context_el)
