/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * pprof's symbol service, /debug/pprof/symbol, as Go's net/http/pprof
 * serves it (src/net/http/pprof/pprof.go, Symbol()) and go tool pprof asks
 * it (github.com/google/pprof internal/symbolz): pprof POSTs the addresses
 * of a mapping it could not name, "%#x" each, joined by '+', and reads back
 * "0xADDR NAME" lines, ignoring any other ("num_symbols: 1" first, which a
 * GET gets alone: pprof only cares whether it is above 0). An address we
 * cannot name has no line, as FuncForPC() gives Go nothing for it.
 *
 * The request is outside input: symbolz_parse() bounds it by
 * SYMBOLZ_BODY_MAX and allocates for what it holds, never for what it says.
 */

#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

/*
 * The POST body at most. pprof posts one request per mapping whose symbols
 * were not read here (pprof.h, has_functions: its file gone or another
 * build), with the addresses of its unnamed locations, 15 bytes each in
 * user space ("0x7f0012345678+"): 1 MiB holds 69,905 of them. A larger
 * body gets a 413, and pprof gives up on the profile.
 */
#define SYMBOLZ_BODY_MAX (1024U * 1024U)

struct symbolz_query {
        uint64_t *addrs;        /* in request order, duplicates kept */
        size_t n;
};

/*
 * Words of text[0, len) separated by '+' (a GET query's '+' arrives as ' ':
 * blanks separate too). A word is a hex number with its 0x prefix, as pprof
 * writes them, or a decimal one; any other word, and 0, is skipped, as Go's
 * strconv.ParseUint(word, 0, 64) failing leaves it unanswered. Returns 0
 * with ret filled (free with symbolz_query_done()), or -E2BIG when len is
 * over SYMBOLZ_BODY_MAX (ret untouched).
 */
int symbolz_parse(const char *text, size_t len, struct symbolz_query *ret);
void symbolz_query_done(struct symbolz_query *q);

/* For each addrs[i] named: its name, valid during the call. */
typedef void (*symbolz_found_fn)(void *ctx, size_t i, const char *name);
/*
 * Names addrs[0, n), ascending and distinct, calling found() for each it
 * knows (api_provider.bare_symbols, see api.h).
 */
typedef void (*symbolz_names_fn)(void *userdata, const uint64_t *addrs, size_t n, symbolz_found_fn found,
                                 void *ctx);

/*
 * The answer to q: "num_symbols: 1", then "0xADDR NAME" for each address
 * of q that names() knows, in request order. names NULL: none is known.
 * Bytes of a name that would break the line (below 0x20, 0x7f) are written
 * as \xNN. Appends to out.
 */
void symbolz_answer(const struct symbolz_query *q, symbolz_names_fn names, void *userdata, struct strbuf *out);
