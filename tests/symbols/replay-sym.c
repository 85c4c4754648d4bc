/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "replay-sym.h"

#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "spe-replay.h"
#include "strbuf.h"
#include "symbolizer.h"

struct ctx {
        struct symbols *s;
        struct pprof_builder *b;
        struct replay_sym_stats *st;
        int error;
};

static void count_function(struct replay_sym_stats *st, const char *name) {
        for (size_t i = 0; i < st->n_funcs; i++)
                if (streq(st->funcs[i].name, name)) {
                        st->funcs[i].count++;
                        return;
                }
        if (st->n_funcs == REPLAY_SYM_MAX_FUNCS)
                abort(); /* a test input with more functions than we expect */
        st->funcs[st->n_funcs].name = xstrdup(name);
        st->funcs[st->n_funcs++].count = 1;
}

static void on_mapping(void *userdata, const struct source_mapping *m) {
        struct ctx *c = userdata;
        int r;

        c->st->mappings++;
        r = symbolizer_add_mapping(symbols_get_maps(c->s), m);
        if (r < 0 && c->error == 0)
                c->error = r;
}

static void on_records(void *userdata, const struct spe_record *recs, const uint32_t *pids,
                       const uint32_t *tids, size_t n) {
        struct ctx *c = userdata;

        for (size_t i = 0; i < n; i++) {
                struct symbols_result res = {};
                uint64_t mapping_id = 0;
                const int64_t one = 1;
                struct pprof_label labels[2] = {
                        { .key = "op", .str = spe_op_name(&recs[i]) },
                        { .key = "pid", .num = pids[i] },
                };
                bool found;

                c->st->records++;
                if (!(recs[i].present & SPE_REC_PC))
                        continue;
                c->st->with_pc++;
                found = symbols_lookup(c->s, pids[i], recs[i].pc.addr, &res) == 0;
                count_function(c->st, found && res.function ? res.function : REPLAY_SYM_UNKNOWN);
                if (!c->b)
                        continue;
                if (found && res.has_mapping)
                        mapping_id = pprof_mapping(c->b, res.map_start, res.map_limit, res.map_pgoff,
                                                   res.filename, res.build_id_hex, res.symbols_read);
                if (pprof_sample(c->b, recs[i].pc.addr, mapping_id, found ? res.function : NULL, &one, labels,
                                 pids[i] == SOURCE_NO_ID ? 1 : 2) < 0 && c->error == 0)
                        c->error = -EINVAL;
        }
}

int replay_sym_run(const char *perf_data, struct symbols *s, struct pprof_builder *b,
                   struct replay_sym_stats *ret) {
        struct ctx c = { .s = s, .b = b, .st = ret };
        struct source_sink sink = { .userdata = &c, .records = on_records, .mapping = on_mapping };
        struct spe_replay *r = NULL;
        int k;

        *ret = (struct replay_sym_stats) {};
        k = spe_replay_path(perf_data, &sink, &r);
        spe_replay_free(r);
        return k < 0 ? k : c.error;
}

uint64_t replay_sym_count(const struct replay_sym_stats *st, const char *name) {
        for (size_t i = 0; i < st->n_funcs; i++)
                if (streq(st->funcs[i].name, name))
                        return st->funcs[i].count;
        return 0;
}

void replay_sym_done(struct replay_sym_stats *st) {
        for (size_t i = 0; i < st->n_funcs; i++)
                free(st->funcs[i].name);
        *st = (struct replay_sym_stats) {};
}
