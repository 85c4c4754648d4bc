/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * pprof profile builder: the caller adds mappings and samples, pprof_finish()
 * writes a gzip-compressed serialized perftools.profiles.Profile
 * (proto/profile.proto), which is what `go tool pprof` and the /debug/pprof
 * endpoint (ARCHITECTURE.md §7; README.md, "Endpoints") expect.
 *
 * Conventions of pprof's profile.proto documentation that this module keeps
 * for its callers:
 *  - string_table[0] is "" and every string is stored once (interned);
 *  - Mapping, Location and Function ids are nonzero and unique;
 *  - locations are one per (mapping, address), functions one per name;
 *  - every Sample has one value per sample type.
 * Samples with the same location and the same labels are merged by summing
 * their values element-wise, which the documentation defines as the meaning
 * of aggregating samples; memory therefore grows with the distinct
 * (location, labels) keys the caller adds, not with the number of calls.
 *
 * Allocation failure aborts (strbuf.h's policy); the module does not log.
 * A builder is used by one thread at a time.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

/* A Profile.sample_type or period_type entry: e.g. {"samples", "count"}. */
struct pprof_value_type {
        const char *type;
        const char *unit;
};

/*
 * A Sample.label: a string label when str is not NULL, else a numeric one
 * with an optional unit (profile.proto: "At most one of the following must
 * be present"; num_unit "Should only be present when num is present").
 */
struct pprof_label {
        const char *key;
        const char *str;
        int64_t num;
        const char *num_unit;   /* NULL: none */
};

struct pprof_builder;

/*
 * sample_types: n entries (n >= 1), copied. period_type may be NULL (then
 * period is not written either). time_nanos: start of the collection in ns
 * since the epoch; duration_nanos: its length. Never returns NULL.
 *
 * default_sample_type is sample_types[0]: profile.proto puts the count of
 * events at index 0 "by convention", and without the field pprof would
 * show the last type first. pprof_set_default_sample_type() changes it.
 */
struct pprof_builder *pprof_builder_new(const struct pprof_value_type *sample_types, size_t n,
                                        const struct pprof_value_type *period_type, int64_t period,
                                        uint64_t time_nanos, uint64_t duration_nanos);
struct pprof_builder *pprof_builder_free(struct pprof_builder *b);

/* The sample type pprof shows unless told otherwise: 0 or -EINVAL (index >= n). */
int pprof_set_default_sample_type(struct pprof_builder *b, size_t index);

/*
 * A line of Profile.comment ("Freeform text associated with the profile",
 * profile.proto), which go tool pprof prints above its reports; copied.
 * Every part of pprof_finish_parts() carries them all.
 */
void pprof_add_comment(struct pprof_builder *b, const char *text);

/*
 * A mapping [start, limit) of filename at file_offset; build_id_hex may be
 * NULL. Returns its id (>= 1); the same arguments return the same id.
 *
 * has_functions: the caller read the file's symbols, so a location of it
 * without a function has none to give (true once any call for the mapping
 * says so, or once one of its locations is named). pprof symbolizes a
 * mapping without it itself, from the file on its own host, then asks the
 * profile's server (/debug/pprof/symbol): github.com/google/pprof
 * internal/symbolizer newMapping() and internal/symbolz Symbolize(). The
 * mapping claims file names, line numbers and inline frames once one of its
 * locations has lines (pprof_location_lines()).
 */
uint64_t pprof_mapping(struct pprof_builder *b, uint64_t start, uint64_t limit, uint64_t file_offset,
                       const char *filename, const char *build_id_hex, bool has_functions);

/*
 * One sample at a leaf address: mapping_id from pprof_mapping() or 0 for
 * none; function NULL when unknown. values: one per sample type. A location
 * takes the function of the first sample that named one for it.
 * Returns 0, or -EINVAL for a mapping id the builder did not hand out.
 */
int pprof_sample(struct pprof_builder *b, uint64_t address, uint64_t mapping_id, const char *function,
                 const int64_t *values, const struct pprof_label *labels, size_t n_labels);

/*
 * A location for pprof_sample_stack(): address in mapping_id (0: none),
 * function NULL when unknown; one per (mapping, address), which takes the
 * function of the first call that named one, as pprof_sample()'s do (the
 * two share them). Returns 0 and the location's id (>= 1) in ret_id, or
 * -EINVAL for a mapping id the builder did not hand out.
 */
int pprof_location(struct pprof_builder *b, uint64_t address, uint64_t mapping_id, const char *function,
                   uint64_t *ret_id);

/* Lines a location keeps: a chain of inlined frames deeper than this is cut (its outermost). */
#define PPROF_MAX_LINES 8

/* A Line of a Location (profile.proto): a function, its source file (NULL: unknown) and a line (0: unknown). */
struct pprof_line {
        const char *function;
        const char *filename;
        int64_t line;
};

/*
 * The Lines of the location at (address, mapping_id), made if it is not
 * there yet (it then has no function of its own until a pprof_sample() or
 * pprof_location() names one): its inlined frames, innermost first
 * (profile.proto: "line[i] is inlined into line[i+1]"), n <= PPROF_MAX_LINES
 * kept, each function a Function of that name and file. The first call that
 * gives lines wins. With lines, the location's Lines are these and not its
 * function's one; its mapping then says has_filenames, has_line_numbers and
 * (more than one) has_inline_frames, so that `go tool pprof -list` and
 * `-lines` read them. Returns 0, or -EINVAL for a mapping id the builder did
 * not hand out.
 */
int pprof_location_lines(struct pprof_builder *b, uint64_t address, uint64_t mapping_id,
                         const struct pprof_line *lines, size_t n);

/*
 * One sample with a call stack: location ids from pprof_location(), leaf
 * first (profile.proto: "The leaf is at location_id[0]"), copied. Samples
 * with the same locations in the same order and the same labels are
 * merged as pprof_sample()'s are. Returns 0, or -EINVAL for a location id
 * the builder did not hand out.
 */
int pprof_sample_stack(struct pprof_builder *b, const uint64_t *location_ids, size_t n_locations,
                       const int64_t *values, const struct pprof_label *labels, size_t n_labels);

/* Samples so far after merging (for callers' accounting and tests). */
size_t pprof_n_samples(const struct pprof_builder *b);

/*
 * Serialize and gzip (RFC 1952) the profile, appending it to ret_gz. The
 * builder stays usable (more samples, another finish). Returns 0, or
 * -EFBIG (over 4 GiB serialized) or -EIO (zlib failed); ret_gz's contents
 * are then unchanged.
 */
int pprof_finish(struct pprof_builder *b, struct strbuf *ret_gz);

/*
 * Finishing as parts, for a store with per-profile limits. Grafana
 * Pyroscope refuses a profile with more samples or more serialized
 * (uncompressed) bytes than its limits allow (pkg/validation/limits.go:
 * MaxProfileSizeBytes 4 MiB, MaxProfileStacktraceSamples 16,000 by
 * default), so the push splits a large profile into parts that each
 * pass, and trims what does not fit in max_parts of them.
 */
struct pprof_part_limits {
        size_t max_samples;     /* samples per part, >= 1 */
        size_t max_bytes;       /* serialized (uncompressed) bytes per part; 0: no limit */
        size_t max_parts;       /* >= 1; what does not fit in them is trimmed */
        /*
         * Part k (from 0) starts k * time_step_ns after the profile and lasts
         * as much less (its end stays the profile's), when that is within the
         * duration; 0: every part has the profile's times. For a store that
         * keeps one profile of a series per timestamp: Grafana Pyroscope's
         * querier deduplicates profiles whose series labels and timestamps
         * (milliseconds) are equal (pkg/querier/select_merge.go), which would
         * read one part of a split interval.
         */
        uint64_t time_step_ns;
};

struct pprof_parts {
        struct strbuf *parts;   /* n gzipped profiles, each a complete profile.proto */
        size_t n;
        uint64_t trimmed_samples;       /* samples (after merging) left out */
        int64_t trimmed_value;          /* the sum of their default sample type's values */
};

/*
 * Samples go heaviest first by the default sample type's value (equal
 * ones in the order they were added), so that the first part holds the
 * heaviest and a trim leaves out the lightest. Parts are filled in that
 * order up to max_samples and max_bytes; each carries only the mappings,
 * locations, functions and strings its samples use (its own string table,
 * string_table[0] = ""), and the sample types, period, times and default
 * type of the whole. A sample over max_bytes on its own is trimmed. When
 * the whole fits, there is one part, byte for byte pprof_finish()'s.
 *
 * Returns 0 with ret filled (n may be 0 when everything was trimmed; free
 * it with pprof_parts_done()), -EINVAL for limits out of range, or
 * -EFBIG/-EIO as pprof_finish() (ret is then untouched). The builder is
 * unchanged.
 */
int pprof_finish_parts(struct pprof_builder *b, const struct pprof_part_limits *lim, struct pprof_parts *ret);
void pprof_parts_done(struct pprof_parts *p);
