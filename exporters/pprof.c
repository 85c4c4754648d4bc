/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pprof.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "macro.h"
#include "pb-scratch.h"
#include "profile.pb-c.h"

/* gzip (RFC 1952) framing for deflate: windowBits 15 + 16 (zlib.h). pprof's
 * profile.proto: "On-disk, the serialized proto must be gzip-compressed." */
#define PPROF_GZIP_WINDOW_BITS  (15 + 16)
#define PPROF_GZIP_MEM_LEVEL    8

/* Open-addressing tables stay at most half full; they start this small. */
#define ITAB_MIN_SLOTS          64
#define ARRAY_MIN_CAP           16

/* FNV-1a (64-bit) offset basis and prime. */
#define FNV64_OFFSET            UINT64_C(0xcbf29ce484222325)
#define FNV64_PRIME             UINT64_C(0x100000001b3)

/*
 * A hash index over one of the builder's arrays: each used slot holds the
 * element's hash and its array index + 1 (0 = empty). The elements stay in
 * their array, so ids (index + 1) are stable and the table only finds them.
 */
struct itab_slot {
        uint64_t hash;
        size_t idx1;
};

struct itab {
        struct itab_slot *slot;
        size_t mask;            /* slots - 1; slots is a power of two */
        size_t n;
};

struct pprof_mapping_rec {
        uint64_t start, limit, offset;
        int64_t filename, build_id;     /* string table indexes */
        bool has_functions;
        bool has_lines;                 /* a location of it has Lines with files and line numbers */
        bool has_inline_frames;         /* ... more than one */
};

struct pprof_location_rec {
        uint64_t mapping_id, address;
        uint64_t function_id;           /* 0: unknown */
        size_t first_line, n_lines;     /* in lines[]: its inlined frames, innermost first; 0: function_id's one */
};

/* A Line: its function (name and file) and line number. */
struct pprof_line_rec {
        uint64_t function_id;
        int64_t line;
};

/* A Function: its name and source file (string table indexes; filename 0 when unknown). */
struct pprof_function_rec {
        int64_t name, filename;
};

struct pprof_label_rec {
        int64_t key, str, num, num_unit; /* string table indexes but num */
};

struct pprof_sample_rec {
        size_t first_location, n_locations;     /* in sample_locations[], leaf first */
        size_t first_label, n_labels;   /* in labels[] */
        size_t first_value;             /* n_types values in values[] */
};

struct pprof_builder {
        /* string_table: strs[0] == "" (profile.proto: "string_table[0] must always be \"\""). */
        char **strs;
        size_t n_strs, cap_strs;
        struct itab str_index;

        struct pprof_value_type_rec {
                int64_t type, unit;
        } *types, period_type;
        size_t n_types;
        size_t default_type;            /* index into types */
        int64_t *comments;              /* string table indexes */
        size_t n_comments, cap_comments;
        bool has_period_type;
        int64_t period;
        uint64_t time_nanos, duration_nanos;

        struct pprof_mapping_rec *mappings;
        size_t n_mappings, cap_mappings;
        struct itab mapping_index;

        struct pprof_location_rec *locations;
        size_t n_locations, cap_locations;
        struct itab location_index;

        struct pprof_function_rec *functions;   /* per function id - 1 */
        size_t n_functions, cap_functions;
        struct itab function_index;

        struct pprof_line_rec *lines;   /* the locations' Lines */
        size_t n_lines, cap_lines;

        struct pprof_sample_rec *samples;
        size_t n_samples, cap_samples;
        uint64_t *sample_locations;     /* the samples' location ids */
        size_t n_sample_locations, cap_sample_locations;
        struct itab sample_index;
        int64_t *values;
        size_t n_values, cap_values;
        struct pprof_label_rec *labels;
        size_t n_labels, cap_labels;
};

static void grow(void **p, size_t *cap, size_t need, size_t elem) {
        size_t c = *cap ? *cap : ARRAY_MIN_CAP;

        if (need <= *cap)
                return;
        while (c < need) {
                if (c > SIZE_MAX / 2 / elem)
                        oom();
                c *= 2;
        }
        *p = xrealloc(*p, c * elem);
        *cap = c;
}
#define GROW(arr, cap, need) grow((void **) &(arr), &(cap), (need), sizeof(*(arr)))

static uint64_t fnv_bytes(uint64_t h, const void *data, size_t len) {
        const uint8_t *p = data;

        for (size_t i = 0; i < len; i++) {
                h ^= p[i];
                h *= FNV64_PRIME;
        }
        return h;
}

static uint64_t fnv_u64(uint64_t h, uint64_t v) {
        return fnv_bytes(h, &v, sizeof(v));
}

static void itab_done(struct itab *t) {
        free(t->slot);
        *t = (struct itab) {};
}

/*
 * The slot holding an element with this hash for which eq() holds, or the
 * empty slot where it would go. eq(ctx, idx, key) compares element idx.
 */
typedef bool (*itab_eq_fn)(const struct pprof_builder *b, size_t idx, const void *key);

static struct itab_slot *itab_find(const struct pprof_builder *b, const struct itab *t, uint64_t hash,
                                   itab_eq_fn eq, const void *key) {
        for (size_t i = hash & t->mask;; i = (i + 1) & t->mask) {
                struct itab_slot *s = &t->slot[i];

                if (s->idx1 == 0)
                        return s;
                if (s->hash == hash && eq(b, s->idx1 - 1, key))
                        return s;
        }
}

/* Make room for one more element; keeps the load factor <= 1/2 so that
 * itab_find() always meets an empty slot. */
static void itab_reserve(struct itab *t) {
        struct itab old = *t;
        size_t slots;

        if (t->slot && (t->n + 1) * 2 <= t->mask + 1)
                return;
        slots = t->slot ? (t->mask + 1) * 2 : ITAB_MIN_SLOTS;
        if (slots > SIZE_MAX / sizeof(struct itab_slot))
                oom();
        t->slot = xcalloc(slots, sizeof(struct itab_slot));
        t->mask = slots - 1;
        for (size_t i = 0; old.slot && i <= old.mask; i++) {
                const struct itab_slot *s = &old.slot[i];
                size_t j;

                if (s->idx1 == 0)
                        continue;
                for (j = s->hash & t->mask; t->slot[j].idx1; j = (j + 1) & t->mask)
                        ;
                t->slot[j] = *s;
        }
        free(old.slot);
}

/* The slot of the element equal to key (idx1 != 0), or the empty slot a new
 * one goes to: the caller then appends it to its array and itab_claim()s. */
static struct itab_slot *itab_lookup(const struct pprof_builder *b, struct itab *t, uint64_t hash, itab_eq_fn eq,
                                     const void *key) {
        itab_reserve(t);
        return itab_find(b, t, hash, eq, key);
}

/* Record the element just appended as number ++*n_elems; returns its id (index + 1). */
static size_t itab_claim(struct itab *t, struct itab_slot *slot, uint64_t hash, size_t *n_elems) {
        *slot = (struct itab_slot) { hash, ++*n_elems };
        t->n++;
        return *n_elems;
}

static bool str_eq(const struct pprof_builder *b, size_t idx, const void *key) {
        return streq(b->strs[idx], key);
}

/* The string table index of s, adding it on first use; NULL is "". */
static int64_t intern(struct pprof_builder *b, const char *s) {
        struct itab_slot *slot;
        uint64_t h;

        if (!s || !*s)
                return 0;
        h = fnv_bytes(FNV64_OFFSET, s, strlen(s));
        slot = itab_lookup(b, &b->str_index, h, str_eq, s);
        if (slot->idx1)
                return (int64_t) (slot->idx1 - 1);
        GROW(b->strs, b->cap_strs, b->n_strs + 1);
        b->strs[b->n_strs] = xstrdup(s);
        return (int64_t) itab_claim(&b->str_index, slot, h, &b->n_strs) - 1;
}

struct pprof_builder *pprof_builder_new(const struct pprof_value_type *sample_types, size_t n,
                                        const struct pprof_value_type *period_type, int64_t period,
                                        uint64_t time_nanos, uint64_t duration_nanos) {
        struct pprof_builder *b = xcalloc(1, sizeof(*b));

        GROW(b->strs, b->cap_strs, 1);
        b->strs[b->n_strs++] = xstrdup("");
        b->n_types = n;
        b->types = xcalloc(n ? n : 1, sizeof(*b->types));
        for (size_t i = 0; i < n; i++) {
                b->types[i].type = intern(b, sample_types[i].type);
                b->types[i].unit = intern(b, sample_types[i].unit);
        }
        if (period_type) {
                b->has_period_type = true;
                b->period_type.type = intern(b, period_type->type);
                b->period_type.unit = intern(b, period_type->unit);
                b->period = period;
        }
        b->time_nanos = time_nanos;
        b->duration_nanos = duration_nanos;
        return b;
}

int pprof_set_default_sample_type(struct pprof_builder *b, size_t index) {
        if (index >= b->n_types)
                return -EINVAL;
        b->default_type = index;
        return 0;
}

void pprof_add_comment(struct pprof_builder *b, const char *text) {
        GROW(b->comments, b->cap_comments, b->n_comments + 1);
        b->comments[b->n_comments++] = intern(b, text);
}

struct pprof_builder *pprof_builder_free(struct pprof_builder *b) {
        if (!b)
                return NULL;
        for (size_t i = 0; i < b->n_strs; i++)
                free(b->strs[i]);
        free(b->strs);
        free(b->types);
        free(b->comments);
        free(b->mappings);
        free(b->locations);
        free(b->functions);
        free(b->lines);
        free(b->samples);
        free(b->sample_locations);
        free(b->values);
        free(b->labels);
        itab_done(&b->str_index);
        itab_done(&b->mapping_index);
        itab_done(&b->location_index);
        itab_done(&b->function_index);
        itab_done(&b->sample_index);
        free(b);
        return NULL;
}

static bool mapping_eq(const struct pprof_builder *b, size_t idx, const void *key) {
        const struct pprof_mapping_rec *m = &b->mappings[idx], *k = key;

        return m->start == k->start && m->limit == k->limit && m->offset == k->offset &&
               m->filename == k->filename && m->build_id == k->build_id;
}

uint64_t pprof_mapping(struct pprof_builder *b, uint64_t start, uint64_t limit, uint64_t file_offset,
                       const char *filename, const char *build_id_hex, bool has_functions) {
        struct pprof_mapping_rec k = {
                .start = start,
                .limit = limit,
                .offset = file_offset,
                .filename = intern(b, filename),
                .build_id = intern(b, build_id_hex),
        };
        struct itab_slot *slot;
        uint64_t h = FNV64_OFFSET;

        h = fnv_u64(h, k.start);
        h = fnv_u64(h, k.limit);
        h = fnv_u64(h, k.offset);
        h = fnv_u64(h, (uint64_t) k.filename);
        h = fnv_u64(h, (uint64_t) k.build_id);
        slot = itab_lookup(b, &b->mapping_index, h, mapping_eq, &k);
        if (slot->idx1) {
                b->mappings[slot->idx1 - 1].has_functions |= has_functions;
                return slot->idx1;
        }
        k.has_functions = has_functions;
        GROW(b->mappings, b->cap_mappings, b->n_mappings + 1);
        b->mappings[b->n_mappings] = k;
        return itab_claim(&b->mapping_index, slot, h, &b->n_mappings);
}

static bool function_eq(const struct pprof_builder *b, size_t idx, const void *key) {
        const struct pprof_function_rec *k = key;

        return b->functions[idx].name == k->name && b->functions[idx].filename == k->filename;
}

/* Function id (>= 1) for a name in a source file (NULL: unknown): one Function per distinct pair. */
static uint64_t function_id_file(struct pprof_builder *b, const char *name, const char *filename) {
        struct pprof_function_rec k = { intern(b, name), intern(b, filename) };
        uint64_t h = fnv_u64(fnv_u64(FNV64_OFFSET, (uint64_t) k.name), (uint64_t) k.filename);
        struct itab_slot *slot;

        slot = itab_lookup(b, &b->function_index, h, function_eq, &k);
        if (slot->idx1)
                return slot->idx1;
        GROW(b->functions, b->cap_functions, b->n_functions + 1);
        b->functions[b->n_functions] = k;
        return itab_claim(&b->function_index, slot, h, &b->n_functions);
}

static uint64_t function_id(struct pprof_builder *b, const char *name) {
        return function_id_file(b, name, NULL);
}

static bool location_eq(const struct pprof_builder *b, size_t idx, const void *key) {
        const struct pprof_location_rec *l = &b->locations[idx], *k = key;

        return l->mapping_id == k->mapping_id && l->address == k->address;
}

static uint64_t location_id(struct pprof_builder *b, uint64_t address, uint64_t mapping_id,
                            const char *function) {
        struct pprof_location_rec k = { .mapping_id = mapping_id, .address = address };
        uint64_t h = fnv_u64(fnv_u64(FNV64_OFFSET, mapping_id), address);
        struct itab_slot *slot;
        struct pprof_location_rec *l;

        slot = itab_lookup(b, &b->location_index, h, location_eq, &k);
        if (slot->idx1)
                l = &b->locations[slot->idx1 - 1];
        else {
                GROW(b->locations, b->cap_locations, b->n_locations + 1);
                l = &b->locations[b->n_locations];
                *l = k;
                itab_claim(&b->location_index, slot, h, &b->n_locations);
        }
        /* A location with Lines is named by them: its function's own Function would be one no Line uses. */
        if (function && *function && l->function_id == 0) {
                if (l->n_lines == 0)
                        l->function_id = function_id(b, function);
                if (mapping_id)
                        b->mappings[mapping_id - 1].has_functions = true;
        }
        return slot->idx1;
}

/* Lines for location id (>= 1) when it has none: see pprof_location_lines(). */
static void location_set_lines(struct pprof_builder *b, uint64_t id, const struct pprof_line *lines, size_t n) {
        struct pprof_location_rec *l = &b->locations[id - 1];
        size_t first = b->n_lines;

        if (l->n_lines > 0 || n == 0)
                return;
        n = MIN(n, (size_t) PPROF_MAX_LINES);
        GROW(b->lines, b->cap_lines, first + n);
        for (size_t i = 0; i < n; i++)
                b->lines[first + i] = (struct pprof_line_rec) {
                        .function_id = function_id_file(b, lines[i].function ?: "", lines[i].filename),
                        .line = lines[i].line,
                };
        /* Re-fetched: function_id_file() does not move locations, but be plain about it. */
        l = &b->locations[id - 1];
        l->first_line = first;
        l->n_lines = n;
        b->n_lines = first + n;
        if (l->mapping_id) {
                struct pprof_mapping_rec *m = &b->mappings[l->mapping_id - 1];

                m->has_lines = true;
                m->has_inline_frames |= n > 1;
                m->has_functions |= lines[0].function && lines[0].function[0];
        }
}

int pprof_location_lines(struct pprof_builder *b, uint64_t address, uint64_t mapping_id,
                         const struct pprof_line *lines, size_t n) {
        if (mapping_id > b->n_mappings)
                return -EINVAL;
        location_set_lines(b, location_id(b, address, mapping_id, NULL), lines, n);
        return 0;
}

int pprof_location(struct pprof_builder *b, uint64_t address, uint64_t mapping_id, const char *function,
                   uint64_t *ret_id) {
        if (mapping_id > b->n_mappings)
                return -EINVAL;
        *ret_id = location_id(b, address, mapping_id, function);
        return 0;
}

struct sample_key {
        const uint64_t *location_ids;
        size_t n_locations;
        const struct pprof_label_rec *labels;
        size_t n_labels;
};

static bool sample_eq(const struct pprof_builder *b, size_t idx, const void *key) {
        const struct pprof_sample_rec *s = &b->samples[idx];
        const struct sample_key *k = key;

        return s->n_locations == k->n_locations && s->n_labels == k->n_labels &&
               (k->n_locations == 0 ||
                memcmp(&b->sample_locations[s->first_location], k->location_ids,
                       k->n_locations * sizeof(*k->location_ids)) == 0) &&
               (k->n_labels == 0 ||
                memcmp(&b->labels[s->first_label], k->labels, k->n_labels * sizeof(*k->labels)) == 0);
}

/* Intern the labels at the end of labels[] (not counted yet: a merge drops them again). */
static size_t intern_labels(struct pprof_builder *b, const struct pprof_label *labels, size_t n_labels) {
        size_t first_label = b->n_labels;

        GROW(b->labels, b->cap_labels, first_label + n_labels);
        for (size_t i = 0; i < n_labels; i++) {
                struct pprof_label_rec *l = &b->labels[first_label + i];

                *l = (struct pprof_label_rec) { .key = intern(b, labels[i].key) };
                if (labels[i].str)
                        l->str = intern(b, labels[i].str);
                else {
                        l->num = labels[i].num;
                        l->num_unit = intern(b, labels[i].num_unit);
                }
        }
        return first_label;
}

/* Add to the sample of these locations and the labels interned at first_label, or make it. */
static void sample_add(struct pprof_builder *b, const uint64_t *location_ids, size_t n_locations,
                       const int64_t *values, size_t first_label, size_t n_labels) {
        struct sample_key k = {
                .location_ids = location_ids,
                .n_locations = n_locations,
                .labels = &b->labels[first_label],
                .n_labels = n_labels,
        };
        struct pprof_sample_rec *s;
        struct itab_slot *slot;
        uint64_t h;

        h = fnv_bytes(FNV64_OFFSET, location_ids, n_locations * sizeof(*location_ids));
        h = fnv_bytes(h, k.labels, n_labels * sizeof(*k.labels));
        slot = itab_lookup(b, &b->sample_index, h, sample_eq, &k);
        if (slot->idx1) {
                s = &b->samples[slot->idx1 - 1];
                /* Element-wise sum (profile.proto, Sample.value); wraps instead of UB. */
                for (size_t i = 0; i < b->n_types; i++)
                        b->values[s->first_value + i] =
                                (int64_t) ((uint64_t) b->values[s->first_value + i] + (uint64_t) values[i]);
                return;
        }

        GROW(b->samples, b->cap_samples, b->n_samples + 1);
        GROW(b->values, b->cap_values, b->n_values + b->n_types);
        GROW(b->sample_locations, b->cap_sample_locations, b->n_sample_locations + n_locations);
        s = &b->samples[b->n_samples];
        *s = (struct pprof_sample_rec) {
                .first_location = b->n_sample_locations,
                .n_locations = n_locations,
                .first_label = first_label,
                .n_labels = n_labels,
                .first_value = b->n_values,
        };
        if (n_locations)
                memcpy(&b->sample_locations[b->n_sample_locations], location_ids,
                       n_locations * sizeof(*location_ids));
        b->n_sample_locations += n_locations;
        if (b->n_types)
                memcpy(&b->values[b->n_values], values, b->n_types * sizeof(*values));
        b->n_values += b->n_types;
        b->n_labels += n_labels;
        itab_claim(&b->sample_index, slot, h, &b->n_samples);
}

int pprof_sample(struct pprof_builder *b, uint64_t address, uint64_t mapping_id, const char *function,
                 const int64_t *values, const struct pprof_label *labels, size_t n_labels) {
        size_t first_label;
        uint64_t loc;

        if (mapping_id > b->n_mappings)
                return -EINVAL;
        first_label = intern_labels(b, labels, n_labels);
        loc = location_id(b, address, mapping_id, function);
        sample_add(b, &loc, 1, values, first_label, n_labels);
        return 0;
}

int pprof_sample_stack(struct pprof_builder *b, const uint64_t *location_ids, size_t n_locations,
                       const int64_t *values, const struct pprof_label *labels, size_t n_labels) {
        for (size_t i = 0; i < n_locations; i++)
                if (location_ids[i] == 0 || location_ids[i] > b->n_locations)
                        return -EINVAL;
        sample_add(b, location_ids, n_locations, values, intern_labels(b, labels, n_labels), n_labels);
        return 0;
}

size_t pprof_n_samples(const struct pprof_builder *b) {
        return b->n_samples;
}

/* Zeroed count * elem bytes that live until pb_scratch_free(). */
static void *scratch_array(struct pb_scratch *sc, size_t count, size_t elem) {
        if (count && elem > SIZE_MAX / count)
                oom();
        return pb_scratch_alloc(sc, count * elem);
}

/* The per-element messages, shared by build_profile() and the parts' size
 * accounting (part_size_add()) so that the two cannot disagree. */
/* labels: this sample's n_labels Label pointers. */
static void fill_sample(const struct pprof_builder *b, size_t i, Perftools__Profiles__Label **labels,
                        Perftools__Profiles__Sample *sm) {
        const struct pprof_sample_rec *s = &b->samples[i];

        perftools__profiles__sample__init(sm);
        /* Leaf first (profile.proto: "The leaf is at location_id[0]"); one for SPE's samples. */
        sm->n_location_id = s->n_locations;
        sm->location_id = s->n_locations ? &b->sample_locations[s->first_location] : NULL;
        sm->n_value = b->n_types;
        sm->value = &b->values[s->first_value];
        sm->n_label = s->n_labels;
        sm->label = labels;
}

static void fill_label(const struct pprof_builder *b, size_t i, Perftools__Profiles__Label *lb) {
        perftools__profiles__label__init(lb);
        lb->key = b->labels[i].key;
        lb->str = b->labels[i].str;
        lb->num = b->labels[i].num;
        lb->num_unit = b->labels[i].num_unit;
}

static void fill_mapping(const struct pprof_builder *b, size_t i, Perftools__Profiles__Mapping *mp) {
        const struct pprof_mapping_rec *m = &b->mappings[i];

        perftools__profiles__mapping__init(mp);
        mp->id = i + 1;
        mp->memory_start = m->start;
        mp->memory_limit = m->limit;
        mp->file_offset = m->offset;
        mp->filename = m->filename;
        mp->build_id = m->build_id;
        /* Its symbols were read here: pprof then neither reads the file again nor asks /debug/pprof/symbol. */
        mp->has_functions = m->has_functions;
        /* Lines from the file's DWARF: pprof then does not look for them itself (internal/symbolizer). */
        mp->has_filenames = m->has_lines;
        mp->has_line_numbers = m->has_lines;
        mp->has_inline_frames = m->has_inline_frames;
}

/* ln, lnp: room for the location's Lines (location_n_lines()) and their pointers. */
static void fill_location(const struct pprof_builder *b, size_t i, Perftools__Profiles__Location *lc,
                          Perftools__Profiles__Line *ln, Perftools__Profiles__Line **lnp) {
        const struct pprof_location_rec *l = &b->locations[i];

        perftools__profiles__location__init(lc);
        lc->id = i + 1;
        lc->mapping_id = l->mapping_id;
        lc->address = l->address;
        if (l->n_lines > 0) {
                /* profile.proto: "line[i] is inlined into line[i+1]": the innermost first, as given. */
                for (size_t j = 0; j < l->n_lines; j++) {
                        perftools__profiles__line__init(&ln[j]);
                        ln[j].function_id = b->lines[l->first_line + j].function_id;
                        ln[j].line = b->lines[l->first_line + j].line;
                        lnp[j] = &ln[j];
                }
                lc->n_line = l->n_lines;
                lc->line = lnp;
        } else if (l->function_id) {
                perftools__profiles__line__init(ln);
                ln->function_id = l->function_id;
                *lnp = ln;
                lc->n_line = 1;
                lc->line = lnp;
        }
}

static void fill_function(const struct pprof_builder *b, size_t i, Perftools__Profiles__Function *fn) {
        perftools__profiles__function__init(fn);
        fn->id = i + 1;
        fn->name = b->functions[i].name;
        fn->system_name = b->functions[i].name;
        fn->filename = b->functions[i].filename;
}

/* Everything of the Profile but its repeated samples, mappings, locations,
 * functions and strings; vt: n_types + 1 entries. */
static void fill_header(const struct pprof_builder *b, Perftools__Profiles__ValueType *vt,
                        Perftools__Profiles__ValueType **vtp, Perftools__Profiles__Profile *p) {
        p->n_sample_type = b->n_types;
        p->sample_type = vtp;
        for (size_t i = 0; i < b->n_types; i++) {
                perftools__profiles__value_type__init(&vt[i]);
                vt[i].type = b->types[i].type;
                vt[i].unit = b->types[i].unit;
                p->sample_type[i] = &vt[i];
        }
        if (b->has_period_type) {
                Perftools__Profiles__ValueType *pt = &vt[b->n_types];

                perftools__profiles__value_type__init(pt);
                pt->type = b->period_type.type;
                pt->unit = b->period_type.unit;
                p->period_type = pt;
                p->period = b->period;
        }
        if (b->n_types)
                p->default_sample_type = b->types[b->default_type].type;
        p->n_comment = b->n_comments;
        p->comment = b->comments;
        p->time_nanos = (int64_t) b->time_nanos;
        p->duration_nanos = (int64_t) b->duration_nanos;
}

/*
 * The message graph of one pprof_finish(): a handful of arrays on one
 * scratch list (protobuf-c does not own messages it packs, ecosystem.md §c),
 * pointing at the builder's strings and values rather than copying them.
 */
static void build_profile(const struct pprof_builder *b, struct pb_scratch *a, Perftools__Profiles__Profile *p) {
        Perftools__Profiles__ValueType *vt = scratch_array(a, b->n_types + 1, sizeof(*vt));
        Perftools__Profiles__Sample *sm = scratch_array(a, b->n_samples, sizeof(*sm));
        Perftools__Profiles__Label *lb = scratch_array(a, b->n_labels, sizeof(*lb));
        Perftools__Profiles__Mapping *mp = scratch_array(a, b->n_mappings, sizeof(*mp));
        Perftools__Profiles__Location *lc = scratch_array(a, b->n_locations, sizeof(*lc));
        /* One Line per location without lines of its own (its function's), the lines of the others. */
        Perftools__Profiles__Line *ln = scratch_array(a, b->n_locations + b->n_lines, sizeof(*ln));
        Perftools__Profiles__Function *fn = scratch_array(a, b->n_functions, sizeof(*fn));
        Perftools__Profiles__Label **lbp = scratch_array(a, b->n_labels, sizeof(*lbp));
        Perftools__Profiles__Line **lnp = scratch_array(a, b->n_locations + b->n_lines, sizeof(*lnp));
        size_t next_line = 0;

        fill_header(b, vt, scratch_array(a, b->n_types, sizeof(*p->sample_type)), p);

        for (size_t i = 0; i < b->n_labels; i++) {
                fill_label(b, i, &lb[i]);
                lbp[i] = &lb[i];
        }
        p->n_sample = b->n_samples;
        p->sample = scratch_array(a, b->n_samples, sizeof(*p->sample));
        for (size_t i = 0; i < b->n_samples; i++) {
                fill_sample(b, i, &lbp[b->samples[i].first_label], &sm[i]);
                p->sample[i] = &sm[i];
        }

        p->n_mapping = b->n_mappings;
        p->mapping = scratch_array(a, b->n_mappings, sizeof(*p->mapping));
        for (size_t i = 0; i < b->n_mappings; i++) {
                fill_mapping(b, i, &mp[i]);
                p->mapping[i] = &mp[i];
        }

        p->n_location = b->n_locations;
        p->location = scratch_array(a, b->n_locations, sizeof(*p->location));
        for (size_t i = 0; i < b->n_locations; i++) {
                fill_location(b, i, &lc[i], &ln[next_line], &lnp[next_line]);
                next_line += MAX(b->locations[i].n_lines, (size_t) 1);
                p->location[i] = &lc[i];
        }

        p->n_function = b->n_functions;
        p->function = scratch_array(a, b->n_functions, sizeof(*p->function));
        for (size_t i = 0; i < b->n_functions; i++) {
                fill_function(b, i, &fn[i]);
                p->function[i] = &fn[i];
        }

        p->n_string_table = b->n_strs;
        p->string_table = b->strs;
}

static int gzip_append(const uint8_t *in, size_t len, struct strbuf *out) {
        z_stream z = {};
        uLong bound;
        int r;

        /* zlib counts in uInt; a profile that large is a caller bug. */
        if (len > UINT32_MAX)
                return -EFBIG;
        if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, PPROF_GZIP_WINDOW_BITS, PPROF_GZIP_MEM_LEVEL,
                         Z_DEFAULT_STRATEGY) != Z_OK)
                return -EIO;
        bound = deflateBound(&z, (uLong) len);
        strbuf_reserve(out, bound);
        z.next_in = (Bytef *) in;
        z.avail_in = (uInt) len;
        z.next_out = (Bytef *) out->buf + out->len;
        z.avail_out = (uInt) bound;
        r = deflate(&z, Z_FINISH);
        if (r == Z_STREAM_END) {
                out->len += z.total_out;
                out->buf[out->len] = '\0';
        }
        deflateEnd(&z);
        return r == Z_STREAM_END ? 0 : -EIO;
}

int pprof_finish(struct pprof_builder *b, struct strbuf *ret_gz) {
        Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
        struct pb_scratch sc = {};
        uint8_t *buf;
        size_t len;
        int r;

        build_profile(b, &sc, &p);
        len = perftools__profiles__profile__get_packed_size(&p);
        buf = xmalloc(len ? len : 1);
        perftools__profiles__profile__pack(&p, buf);
        pb_scratch_free(&sc);
        r = gzip_append(buf, len, ret_gz);
        free(buf);
        return r;
}

/* Bytes of a varint (protobuf encoding spec, "Base 128 Varints"). */
static size_t varint_size(uint64_t v) {
        size_t n = 1;

        while (v >= 0x80) {
                v >>= 7;
                n++;
        }
        return n;
}

/* One element of a repeated field numbered under 16 (every one of Profile's
 * but comment's, profile.proto): a one-byte tag, the length, the bytes. */
static size_t field_size(size_t len) {
        return 1 + varint_size(len) + len;
}

/* The serialized bytes the elements at or after these counts add to b's profile. */
struct part_mark {
        size_t n_strs, n_mappings, n_locations, n_functions, n_samples;
};

static struct part_mark part_mark(const struct pprof_builder *b) {
        return (struct part_mark) { b->n_strs, b->n_mappings, b->n_locations, b->n_functions, b->n_samples };
}

static size_t part_size_since(const struct pprof_builder *b, const struct part_mark *m) {
        size_t size = 0;

        for (size_t i = m->n_strs; i < b->n_strs; i++)
                size += field_size(strlen(b->strs[i]));
        for (size_t i = m->n_mappings; i < b->n_mappings; i++) {
                Perftools__Profiles__Mapping mp;

                fill_mapping(b, i, &mp);
                size += field_size(perftools__profiles__mapping__get_packed_size(&mp));
        }
        for (size_t i = m->n_locations; i < b->n_locations; i++) {
                Perftools__Profiles__Location lc;
                Perftools__Profiles__Line ln[PPROF_MAX_LINES], *lnp[PPROF_MAX_LINES];

                fill_location(b, i, &lc, ln, lnp);
                size += field_size(perftools__profiles__location__get_packed_size(&lc));
        }
        for (size_t i = m->n_functions; i < b->n_functions; i++) {
                Perftools__Profiles__Function fn;

                fill_function(b, i, &fn);
                size += field_size(perftools__profiles__function__get_packed_size(&fn));
        }
        for (size_t i = m->n_samples; i < b->n_samples; i++) {
                const struct pprof_sample_rec *s = &b->samples[i];
                Perftools__Profiles__Label *lb = xcalloc(s->n_labels ? s->n_labels : 1, sizeof(*lb));
                Perftools__Profiles__Label **lbp = xcalloc(s->n_labels ? s->n_labels : 1, sizeof(*lbp));
                Perftools__Profiles__Sample sm;

                for (size_t j = 0; j < s->n_labels; j++) {
                        fill_label(b, s->first_label + j, &lb[j]);
                        lbp[j] = &lb[j];
                }
                fill_sample(b, i, lbp, &sm);
                size += field_size(perftools__profiles__sample__get_packed_size(&sm));
                free(lbp);
                free(lb);
        }
        return size;
}

/* The profile of a part without any element: sample types, period, times, default type, comments. */
static size_t part_header_size(const struct pprof_builder *b) {
        Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
        Perftools__Profiles__ValueType *vt = xcalloc(b->n_types + 1, sizeof(*vt));
        Perftools__Profiles__ValueType **vtp = xcalloc(b->n_types + 1, sizeof(*vtp));
        size_t size;

        fill_header(b, vt, vtp, &p);
        size = perftools__profiles__profile__get_packed_size(&p);
        free(vtp);
        free(vt);
        return size;
}

/*
 * An empty builder with b's sample types, period, default type and comments,
 * and b's times but shift_ns later, as much shorter
 * (pprof_part_limits.time_step_ns).
 */
static struct pprof_builder *part_new(const struct pprof_builder *b, uint64_t shift_ns) {
        struct pprof_value_type *types = xcalloc(b->n_types ? b->n_types : 1, sizeof(*types));
        struct pprof_value_type pt = {};
        struct pprof_builder *p;

        for (size_t i = 0; i < b->n_types; i++)
                types[i] = (struct pprof_value_type) { b->strs[b->types[i].type], b->strs[b->types[i].unit] };
        if (b->has_period_type)
                pt = (struct pprof_value_type) { b->strs[b->period_type.type], b->strs[b->period_type.unit] };
        p = pprof_builder_new(types, b->n_types, b->has_period_type ? &pt : NULL, b->period, b->time_nanos + shift_ns,
                              b->duration_nanos - shift_ns);
        p->default_type = b->default_type;
        for (size_t i = 0; i < b->n_comments; i++)
                pprof_add_comment(p, b->strs[b->comments[i]]);
        free(types);
        return p;
}

/* Copy b's sample si into part p with p's own ids and strings. */
static void part_add(struct pprof_builder *p, const struct pprof_builder *b, size_t si) {
        const struct pprof_sample_rec *s = &b->samples[si];
        _cleanup_free_ uint64_t *ids = xcalloc(s->n_locations ? s->n_locations : 1, sizeof(*ids));
        size_t first_label;

        for (size_t i = 0; i < s->n_locations; i++) {
                const struct pprof_location_rec *l = &b->locations[b->sample_locations[s->first_location + i] - 1];
                uint64_t mapping_id = 0;

                if (l->mapping_id) {
                        const struct pprof_mapping_rec *m = &b->mappings[l->mapping_id - 1];

                        mapping_id = pprof_mapping(p, m->start, m->limit, m->offset, b->strs[m->filename],
                                                   b->strs[m->build_id], m->has_functions);
                        /*
                         * Its flags as the whole profile's from the start: one that a later sample's
                         * lines turned on would grow a mapping part_size_since() already counted.
                         */
                        p->mappings[mapping_id - 1].has_lines |= m->has_lines;
                        p->mappings[mapping_id - 1].has_inline_frames |= m->has_inline_frames;
                }
                ids[i] = location_id(p, l->address, mapping_id,
                                     l->function_id ? b->strs[b->functions[l->function_id - 1].name] : NULL);
                if (l->n_lines > 0) {
                        struct pprof_line lines[PPROF_MAX_LINES];

                        for (size_t j = 0; j < l->n_lines; j++) {
                                const struct pprof_line_rec *ln = &b->lines[l->first_line + j];
                                const struct pprof_function_rec *fn = &b->functions[ln->function_id - 1];

                                lines[j] = (struct pprof_line) {
                                        .function = b->strs[fn->name],
                                        .filename = fn->filename ? b->strs[fn->filename] : NULL,
                                        .line = ln->line,
                                };
                        }
                        location_set_lines(p, ids[i], lines, l->n_lines);
                }
        }

        first_label = p->n_labels;
        GROW(p->labels, p->cap_labels, first_label + s->n_labels);
        for (size_t i = 0; i < s->n_labels; i++) {
                const struct pprof_label_rec *l = &b->labels[s->first_label + i];

                p->labels[first_label + i] = (struct pprof_label_rec) {
                        .key = intern(p, b->strs[l->key]),
                        .str = intern(p, b->strs[l->str]),
                        .num = l->num,
                        .num_unit = intern(p, b->strs[l->num_unit]),
                };
        }
        sample_add(p, ids, s->n_locations, &b->values[s->first_value], first_label, s->n_labels);
}

struct part_order {
        int64_t value;
        size_t idx;
};

/* Heaviest first; equal weights in the order they were added. */
static int part_order_cmp(const void *x, const void *y) {
        const struct part_order *a = x, *b = y;

        if (a->value != b->value)
                return a->value > b->value ? -1 : 1;
        return a->idx < b->idx ? -1 : a->idx > b->idx;
}

void pprof_parts_done(struct pprof_parts *p) {
        if (!p)
                return;
        for (size_t i = 0; i < p->n; i++)
                strbuf_done(&p->parts[i]);
        free(p->parts);
        *p = (struct pprof_parts) {};
}

/* Finish p as one more of parts. */
static int parts_append(struct pprof_parts *parts, struct pprof_builder *p) {
        struct strbuf sb = {};
        int r;

        r = pprof_finish(p, &sb);
        if (r < 0) {
                strbuf_done(&sb);
                return r;
        }
        parts->parts = xrealloc(parts->parts, (parts->n + 1) * sizeof(*parts->parts));
        parts->parts[parts->n++] = sb;
        return 0;
}

/* A part holding the samples order[from, to) of b. */
static struct pprof_builder *part_build(const struct pprof_builder *b, const struct part_order *order, size_t from,
                                        size_t to, uint64_t shift_ns) {
        struct pprof_builder *p = part_new(b, shift_ns);

        /* The same additions in the same order: the same ids, strings and size as before the one that did not fit. */
        for (size_t i = from; i < to; i++)
                part_add(p, b, order[i].idx);
        return p;
}

/* How much later part `index` starts than the whole (pprof_part_limits.time_step_ns), within its duration. */
static uint64_t part_shift(const struct pprof_builder *b, const struct pprof_part_limits *lim, size_t index) {
        uint64_t shift;

        if (b->duration_nanos == 0 || __builtin_mul_overflow((uint64_t) index, lim->time_step_ns, &shift))
                return 0;
        return shift < (uint64_t) b->duration_nanos ? shift : 0;
}

int pprof_finish_parts(struct pprof_builder *b, const struct pprof_part_limits *lim, struct pprof_parts *ret) {
        _cleanup_free_ struct part_order *order = NULL;
        struct pprof_parts parts = {};
        struct pprof_builder *p = NULL;
        size_t first = 0, size = 0;     /* the open part: order[first, i), size bytes */
        size_t max_bytes;
        int r = 0;

        if (!lim || lim->max_samples < 1 || lim->max_parts < 1)
                return -EINVAL;
        max_bytes = lim->max_bytes ? lim->max_bytes : SIZE_MAX;

        /* The common case: the whole profile fits, and is exactly pprof_finish()'s. */
        if (b->n_samples <= lim->max_samples) {
                Perftools__Profiles__Profile whole = PERFTOOLS__PROFILES__PROFILE__INIT;
                struct pb_scratch sc = {};
                size_t len;

                build_profile(b, &sc, &whole);
                len = perftools__profiles__profile__get_packed_size(&whole);
                pb_scratch_free(&sc);
                if (len <= max_bytes) {
                        r = parts_append(&parts, b);
                        if (r < 0)
                                return r;
                        *ret = parts;
                        return 0;
                }
        }

        order = xcalloc(b->n_samples ? b->n_samples : 1, sizeof(*order));
        for (size_t i = 0; i < b->n_samples; i++)
                order[i] = (struct part_order) {
                        .value = b->n_types ? b->values[b->samples[i].first_value + b->default_type] : 0,
                        .idx = i,
                };
        qsort(order, b->n_samples, sizeof(*order), part_order_cmp);

        for (size_t i = 0; i < b->n_samples; i++) {
                struct part_mark m;
                size_t added;

                if (parts.n == lim->max_parts) {
                        /* Every part is full: the rest, the lightest, are trimmed. */
                        parts.trimmed_samples++;
                        parts.trimmed_value = (int64_t) ((uint64_t) parts.trimmed_value + (uint64_t) order[i].value);
                        continue;
                }
                if (p && i - first == lim->max_samples) {
                        r = parts_append(&parts, p);
                        p = pprof_builder_free(p);
                        if (r < 0)
                                goto fail;
                        i--;
                        continue;
                }
                if (!p) {
                        p = part_new(b, part_shift(b, lim, parts.n));
                        first = i;
                        /* The header and the strings it names ("" and the sample types'). */
                        m = (struct part_mark) {};
                        size = part_header_size(p) + part_size_since(p, &m);
                }
                m = part_mark(p);
                part_add(p, b, order[i].idx);
                added = part_size_since(p, &m);
                if (size + added <= max_bytes) {
                        size += added;
                        continue;
                }
                if (i == first) {
                        /* Over max_bytes alone: no part can hold it. */
                        p = pprof_builder_free(p);
                        parts.trimmed_samples++;
                        parts.trimmed_value = (int64_t) ((uint64_t) parts.trimmed_value + (uint64_t) order[i].value);
                        continue;
                }
                /* The part is full without this sample: close it, and this one starts the next. */
                pprof_builder_free(p);
                p = part_build(b, order, first, i, part_shift(b, lim, parts.n));
                r = parts_append(&parts, p);
                p = pprof_builder_free(p);
                if (r < 0)
                        goto fail;
                i--;
        }
        if (p) {
                r = parts_append(&parts, p);
                p = pprof_builder_free(p);
                if (r < 0)
                        goto fail;
        }
        *ret = parts;
        return 0;

fail:
        pprof_parts_done(&parts);
        return r;
}
