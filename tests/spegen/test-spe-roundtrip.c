/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Round trip: the generator's encoder (tests/spegen, written from the spec)
 * against the armprofd decoder (collectors/spe, spe_dep). Every record of
 * more than a million, across all scenarios, padded (N1 fixed slots and
 * split padding) and unpadded, END and TIMESTAMP terminated, with injected
 * garbage, must decode to exactly its ground truth, and the decoder's error
 * counters must equal the garbage.
 *
 * Chunks are decoded as the generator emits them, so memory stays at one
 * chunk per CPU.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "spe-rec.h"

#include "spe-enc.h"
#include "spegen-expect.h"
#include "spegen-gen.h"

#define MAX_REPORTS  20
#define DECODE_BATCH 256

struct truth_entry {
        struct spegen_record rec;
        bool after_error;       /* garbage was injected right before it */
};

struct cpu_truth {
        struct truth_entry *recs;
        size_t n, cap;
        uint64_t garbage_bytes, garbage_runs;
        uint64_t records;
        bool next_after_error;
        struct spe_decoder dec;
};

struct rt {
        const char *label;
        struct cpu_truth cpus[SPEGEN_MAX_CPUS];
        struct spe_record batch[DECODE_BATCH];
        uint64_t compared, mismatches;
        uint64_t hash;          /* FNV-1a over all stream bytes: determinism */
};

static void report(struct rt *t, const struct spegen_record *w, const char *field, uint64_t want, uint64_t have) {
        t->mismatches++;
        if (t->mismatches <= MAX_REPORTS)
                printf("FAIL %s: cpu %u record %" PRIu64 " (offset %" PRIu64 ", %s): %s want 0x%" PRIx64
                       " have 0x%" PRIx64 "\n",
                       t->label, w->cpu, w->index, w->offset, spegen_scenario_name(w->scenario), field, want,
                       have);
}

#define CHECK(field, want, have)                                                  \
        do {                                                                      \
                uint64_t _w = (uint64_t) (want), _h = (uint64_t) (have);          \
                if (_w != _h) {                                                   \
                        report(t, w, field, _w, _h);                              \
                        return;                                                   \
                }                                                                 \
        } while (0)

static unsigned want_subclass(const struct spegen_record *w) {
        switch (w->op_class) {
        case SPE_ENC_OP_OTHER:
                return SPE_OP_SUB_OTHER;
        case SPE_ENC_OP_BRANCH:
                return SPE_OP_SUB_BRANCH;
        default:
                if ((w->op_subclass & 0xe2) == SPE_ENC_OP_LDST_EXT)
                        return SPE_OP_SUB_LDST_EXT;
                if ((w->op_subclass & 0xfe) == SPE_ENC_OP_LDST_SIMD)
                        return SPE_OP_SUB_LDST_SIMD_FP;
                return SPE_OP_SUB_LDST_GP_REG;
        }
}

static void compare(struct rt *t, const struct spegen_record *w, const struct spe_record *h, bool after_error) {
        static const struct {
                uint32_t gen, dec;
        } presence[] = {
                { SPEGEN_HAS_PC, SPE_REC_PC },
                { SPEGEN_HAS_TGT, SPE_REC_BR_TGT },
                { SPEGEN_HAS_VA, SPE_REC_VA },
                { SPEGEN_HAS_PA, SPE_REC_PA },
                { SPEGEN_HAS_TOT, SPE_REC_LAT_TOTAL },
                { SPEGEN_HAS_ISSUE, SPE_REC_LAT_ISSUE },
                { SPEGEN_HAS_XLAT, SPE_REC_LAT_XLAT },
                { SPEGEN_HAS_EVENTS, SPE_REC_EVENTS },
                { SPEGEN_HAS_OP, SPE_REC_OP },
                { SPEGEN_HAS_DS, SPE_REC_SOURCE },
                { SPEGEN_HAS_CONTEXT, SPE_REC_CONTEXT },
                { SPEGEN_HAS_TS, SPE_REC_TIMESTAMP },
        };
        uint32_t want_present = 0;

        t->compared++;
        for (size_t i = 0; i < sizeof(presence) / sizeof(presence[0]); i++)
                if (w->has & presence[i].gen)
                        want_present |= presence[i].dec;
        CHECK("present", want_present, h->present);
        CHECK("cpu", w->cpu, h->cpu);
        CHECK("flags.end", !(w->has & SPEGEN_HAS_TS), !!(h->flags & SPE_REC_F_END));
        CHECK("flags.after_error", after_error, !!(h->flags & SPE_REC_F_AFTER_ERROR));
        CHECK("flags.other", 0, h->flags & ~(SPE_REC_F_END | SPE_REC_F_AFTER_ERROR));
        if (w->has & SPEGEN_HAS_PC) {
                CHECK("pc", spegen_expect_ip(w->pc, w->el, w->ns), h->pc.addr);
                CHECK("pc.el", w->el, h->pc.el);
                CHECK("pc.ns", w->ns, h->pc.ns);
        }
        if (w->has & SPEGEN_HAS_TGT) {
                CHECK("tgt", spegen_expect_ip(w->tgt, w->el, w->ns), h->br_tgt.addr);
                CHECK("tgt.el", w->el, h->br_tgt.el);
                CHECK("tgt.ns", w->ns, h->br_tgt.ns);
        }
        if (w->has & SPEGEN_HAS_VA) {
                CHECK("va", spegen_expect_va(w->va), h->va);
                CHECK("va_tag", w->va >> 56, h->va_tag);
        }
        if (w->has & SPEGEN_HAS_PA) {
                CHECK("pa", w->pa, h->pa);
                CHECK("pa.ns", w->pa_ns, h->pa_ns);
                CHECK("pa.ch", w->pa_ch, h->pa_ch);
                CHECK("pa.pat", w->pa_pat, h->pa_pat);
        }
        if (w->has & SPEGEN_HAS_TOT)
                CHECK("lat_total", w->tot_lat, h->lat_total);
        if (w->has & SPEGEN_HAS_ISSUE)
                CHECK("lat_issue", w->issue_lat, h->lat_issue);
        if (w->has & SPEGEN_HAS_XLAT)
                CHECK("lat_xlat", w->xlat_lat, h->lat_xlat);
        if (w->has & SPEGEN_HAS_EVENTS)
                CHECK("events", w->events, h->events);
        if (w->has & SPEGEN_HAS_OP) {
                CHECK("op_class", w->op_class, h->op_class);
                CHECK("op_raw", w->op_subclass, h->op_raw);
                CHECK("op_subclass", want_subclass(w), h->op_subclass);
                if (w->op_class == SPE_ENC_OP_LDST) {
                        bool store = w->op_subclass & SPE_ENC_OP_LDST_ST;

                        CHECK("op.load", !store, !!(h->op_flags & SPE_OPF_LOAD));
                        CHECK("op.store", store, !!(h->op_flags & SPE_OPF_STORE));
                        CHECK("op.atomic", want_subclass(w) == SPE_OP_SUB_LDST_EXT &&
                                                   (w->op_subclass & SPE_ENC_OP_LDST_EXT_AT),
                              !!(h->op_flags & SPE_OPF_ATOMIC));
                } else if (w->op_class == SPE_ENC_OP_BRANCH) {
                        CHECK("op.branch", 1, !!(h->op_flags & SPE_OPF_BRANCH));
                        CHECK("op.cond", !!(w->op_subclass & SPE_ENC_OP_BR_COND), !!(h->op_flags & SPE_OPF_COND));
                        CHECK("op.ind", !!(w->op_subclass & SPE_ENC_OP_BR_IND),
                              !!(h->op_flags & SPE_OPF_INDIRECT));
                }
        }
        if (w->has & SPEGEN_HAS_DS) {
                CHECK("source_raw", w->data_source, h->source_raw);
                CHECK("source", spegen_expect_source(w->data_source), h->source);
        }
        if (w->has & SPEGEN_HAS_CONTEXT) {
                CHECK("context", w->context, h->context);
                CHECK("context_el", w->context_idx + 1U, h->context_el);
        }
        if (w->has & SPEGEN_HAS_TS)
                CHECK("timestamp", w->timestamp, h->timestamp);
}

static int on_record(void *userdata, const struct spegen_record *r) {
        struct rt *t = userdata;
        struct cpu_truth *c = &t->cpus[r->cpu];

        if (c->n == c->cap) {
                size_t cap = c->cap ? c->cap * 2 : 1024;
                struct truth_entry *p = realloc(c->recs, cap * sizeof(*p));

                if (!p)
                        return -ENOMEM;
                c->recs = p;
                c->cap = cap;
        }
        c->recs[c->n] = (struct truth_entry) { *r, c->next_after_error };
        c->next_after_error = false;
        c->n++;
        c->records++;
        return 0;
}

static int on_garbage(void *userdata, const struct spegen_garbage *g) {
        struct rt *t = userdata;
        struct cpu_truth *c = &t->cpus[g->cpu];

        c->garbage_bytes += g->len;
        c->garbage_runs++;
        c->next_after_error = true;
        return 0;
}

static int on_chunk(void *userdata, unsigned cpu, const uint8_t *data, size_t len, uint64_t offset, uint64_t time) {
        struct rt *t = userdata;
        struct cpu_truth *c = &t->cpus[cpu];
        size_t pos = 0, next = 0;

        for (size_t i = 0; i < len; i++)
                t->hash = (t->hash ^ data[i]) * UINT64_C(0x100000001b3);

        while (pos < len) {
                size_t consumed = 0;
                size_t n = spe_decoder_decode(&c->dec, data + pos, len - pos, t->batch, DECODE_BATCH, &consumed);

                for (size_t i = 0; i < n; i++) {
                        if (next >= c->n) {
                                t->mismatches++;
                                printf("FAIL %s: cpu %u: decoder produced a record beyond the %zu in the chunk\n",
                                       t->label, cpu, c->n);
                                continue;
                        }
                        compare(t, &c->recs[next].rec, &t->batch[i], c->recs[next].after_error);
                        next++;
                }
                if (consumed == 0 && n == 0)
                        break;
                pos += consumed;
        }
        if (next != c->n) {
                t->mismatches++;
                printf("FAIL %s: cpu %u chunk at %" PRIu64 ": %zu records in truth, %zu decoded\n", t->label, cpu,
                       offset, c->n, next);
        }
        c->n = 0;
        return 0;
}

static int run_case(const char *label, const struct spegen_config *cfg, uint64_t *ret_hash,
                    struct spegen_stats *ret_stats) {
        struct rt *t = calloc(1, sizeof(*t));
        struct spegen_sink sink = {
                .record = on_record,
                .garbage = on_garbage,
                .chunk = on_chunk,
        };
        struct spegen_stats st = {};
        uint64_t total_garbage = 0, total_errors = 0, total_records = 0;
        int r, failed = 0;

        if (!t)
                return -ENOMEM;
        t->label = label;
        t->hash = UINT64_C(0xcbf29ce484222325);
        sink.userdata = t;
        for (unsigned cpu = 0; cpu < cfg->n_cpus; cpu++)
                spe_decoder_init(&t->cpus[cpu].dec, cpu, spegen_midr(SPEGEN_MIDR_N1));

        r = spegen_run(cfg, &sink, &st);
        if (r < 0) {
                printf("FAIL %s: spegen_run: %s\n", label, strerror(-r));
                failed = 1;
        }

        for (unsigned cpu = 0; cpu < cfg->n_cpus; cpu++) {
                struct cpu_truth *c = &t->cpus[cpu];
                const struct spe_decoder_stats *s = &c->dec.stats;

                spe_decoder_reset(&c->dec);
                if (s->records != c->records || s->bad_header != c->garbage_bytes || s->bad_ext_header != 0 ||
                    s->dropped_records != 0 || s->flushed_records != 0 || s->flushed_bytes != 0 ||
                    s->unknown_index != 0 || s->duplicate_pkts != 0 || s->empty_records != 0 ||
                    spe_decoder_errors(&c->dec) != c->garbage_bytes) {
                        printf("FAIL %s: cpu %u: decoder records %" PRIu64 " (truth %" PRIu64 "), bad_header %" PRIu64
                               " (garbage bytes %" PRIu64 "), bad_ext %" PRIu64 ", dropped %" PRIu64
                               ", flushed %" PRIu64 "/%" PRIu64 ", unknown_index %" PRIu64 ", duplicates %" PRIu64
                               ", empty %" PRIu64 ", errors %" PRIu64 "\n",
                               label, cpu, s->records, c->records, s->bad_header, c->garbage_bytes,
                               s->bad_ext_header, s->dropped_records, s->flushed_records, s->flushed_bytes,
                               s->unknown_index, s->duplicate_pkts, s->empty_records, spe_decoder_errors(&c->dec));
                        failed = 1;
                }
                if (s->bytes != st.bytes_per_cpu[cpu]) {
                        printf("FAIL %s: cpu %u: decoder consumed %" PRIu64 " bytes of %" PRIu64 "\n", label, cpu,
                               s->bytes, st.bytes_per_cpu[cpu]);
                        failed = 1;
                }
                total_garbage += c->garbage_bytes;
                total_errors += spe_decoder_errors(&c->dec);
                total_records += s->records;
                free(c->recs);
        }
        if (t->mismatches > 0 || t->compared != cfg->n_records)
                failed = 1;
        printf("%s: %" PRIu64 " records generated, %" PRIu64 " decoded, %" PRIu64 " compared, %" PRIu64
               " mismatches; garbage %" PRIu64 " bytes, decoder errors %" PRIu64 "; layout packed %" PRIu64
               " split %" PRIu64 " slots %" PRIu64 "\n",
               label, cfg->n_records, total_records, t->compared, t->mismatches, total_garbage, total_errors,
               st.records_per_layout[SPEGEN_LAYOUT_PACKED], st.records_per_layout[SPEGEN_LAYOUT_SPLIT],
               st.records_per_layout[SPEGEN_LAYOUT_SLOTS]);
        if (ret_hash)
                *ret_hash = t->hash;
        if (ret_stats)
                *ret_stats = st;
        free(t);
        return failed ? -EBADMSG : 0;
}

/* The share of records --padded wrote in each layout is what was asked:
 * with the N1 slots, more than min_slots_pct percent; with split, none. */
static int check_layouts(const char *label, const struct spegen_config *c, const struct spegen_stats *st,
                         unsigned min_slots_pct) {
        uint64_t slots = st->records_per_layout[SPEGEN_LAYOUT_SLOTS];
        uint64_t split = st->records_per_layout[SPEGEN_LAYOUT_SPLIT];
        uint64_t packed = st->records_per_layout[SPEGEN_LAYOUT_PACKED];

        if (slots + split + packed != c->n_records || (c->padded && packed != 0) ||
            (!c->padded && packed != c->n_records) ||
            (c->padded && c->pad_layout == SPEGEN_PAD_SPLIT && slots != 0) ||
            (c->padded && c->pad_layout == SPEGEN_PAD_SLOTS && slots * 100 <= c->n_records * min_slots_pct)) {
                printf("FAIL %s: layouts packed %" PRIu64 " split %" PRIu64 " slots %" PRIu64 " of %" PRIu64
                       " records (padded %d, layout %s, want > %u%% slots)\n",
                       label, packed, split, slots, c->n_records, c->padded,
                       spegen_pad_layout_name(c->pad_layout), min_slots_pct);
                return -EBADMSG;
        }
        printf("%s: %.1f%% of the records in the N1 slot layout\n", label,
               100.0 * (double) slots / (double) c->n_records);
        return 0;
}

/* One generator run: its config and the share of N1 slot records it must reach. */
struct rt_case {
        const char *label;
        const char *why;
        uint64_t seed, n_records;
        unsigned n_cpus;
        bool padded, ts;
        enum spegen_pad_layout pad_layout;
        double garbage_rate;
        size_t chunk_size;
        uint32_t scenarios;     /* 0: all */
        unsigned min_slots_pct;
        bool determinism;       /* rerun: same seed, same bytes; next seed, others */
};

#define SC(x) (UINT32_C(1) << SPEGEN_SC_##x)

static const struct rt_case cases[] = {
        { "all-unpadded-ts", "a million records of every scenario, unpadded",
          20261121, 1000000, 4, false, true, SPEGEN_PAD_SLOTS, 0.002, 64 * 1024, 0, 0 },
        /* An 'all' mix puts well over 80% in the slots: only ext-header
         * and part of noise do not fit and keep the split padding. */
        { "all-padded-end", "N1 fixed 64-byte slots, END-terminated, more garbage",
          77, 200000, 3, true, false, SPEGEN_PAD_SLOTS, 0.01, 16 * 1024, 0, 80, true },
        { "ext-noise-padded-ts", "extended headers and noise in padded records, 1 CPU, smallest chunks",
          5, 100000, 1, true, true, SPEGEN_PAD_SLOTS, 0.005, SPEGEN_MIN_CHUNK,
          SC(EXT_HEADER) | SC(NOISE) | SC(KERNEL) | SC(BRANCHES), 50 },
        { "all-padded-split-ts", "the adversarial split padding for every record: nothing in the slots",
          79, 200000, 2, true, true, SPEGEN_PAD_SPLIT, 0.005, 32 * 1024, 0, 0 },
};

static void config_of(const struct rt_case *t, struct spegen_config *c) {
        spegen_config_init(c);
        c->seed = t->seed;
        c->n_records = t->n_records;
        c->n_cpus = t->n_cpus;
        c->padded = t->padded;
        c->pad_layout = t->pad_layout;
        c->ts = t->ts;
        c->garbage_rate = t->garbage_rate;
        c->chunk_size = t->chunk_size;
        if (t->scenarios)
                c->scenarios = t->scenarios;
}

int main(void) {
        struct spegen_config c;
        struct spegen_stats st;
        uint64_t h1 = 0, h2 = 0, h3 = 0;
        int failed = 0;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const struct rt_case *t = &cases[i];

                printf("%s: %s\n", t->label, t->why);
                config_of(t, &c);
                failed |= run_case(t->label, &c, &h1, &st) < 0;
                failed |= check_layouts(t->label, &c, &st, t->min_slots_pct) < 0;
                if (!t->determinism)
                        continue;
                failed |= run_case("  same seed again", &c, &h2, NULL) < 0;
                c.seed++;
                failed |= run_case("  next seed", &c, &h3, NULL) < 0;
                if (h1 != h2 || h1 == h3) {
                        printf("FAIL %s determinism: stream hash %016" PRIx64 " / %016" PRIx64
                               " (same seed), %016" PRIx64 " (next seed)\n", t->label, h1, h2, h3);
                        failed = 1;
                }
        }

        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
