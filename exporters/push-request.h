/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The pieces of a push to Grafana Pyroscope that need no network: the
 * operator's extra labels, the per-sample IDs, the serialized PushRequest
 * (proto/push.proto) and the store's Retry-After. Everything the store would
 * refuse (Pyroscope's pkg/validation/limits.go defaults) is refused here
 * first, so a request that leaves the host can only fail for reasons the
 * host could not know.
 */

#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

struct push_label {
        char *name, *value; /* owned */
};

/* Label names per series the store accepts (pkg/validation/limits.go, max_label_names_per_series). */
#define PUSH_LABELS_MAX 30
/* Longest label name and value the store accepts (same file: max_label_name_length, max_label_value_length). */
#define PUSH_LABEL_NAME_MAX 1024
#define PUSH_LABEL_VALUE_MAX 2048
/* The labels armprofd sets on every series: __name__, __delta__, service_name, host, source, and one
 * kept spare (a per-process or per-service split). "[push] labels" may add the rest. */
#define PUSH_LABELS_OURS 6
#define PUSH_EXTRA_LABELS_MAX (PUSH_LABELS_MAX - PUSH_LABELS_OURS)
/* "[push] labels" as a whole: every item at its longest, with "=" and ", " between them. */
#define PUSH_LABELS_TEXT_MAX (PUSH_EXTRA_LABELS_MAX * (PUSH_LABEL_NAME_MAX + PUSH_LABEL_VALUE_MAX + 3))
/* A UUID in its 8-4-4-4-12 hex form (RFC 9562 §4), with the NUL. */
#define PUSH_UUID_STR_MAX 37

/* A label name an operator may choose: a Prometheus label name [a-zA-Z_][a-zA-Z0-9_]* of at most
 * PUSH_LABEL_NAME_MAX bytes, not starting "__" (reserved to the store and to us: __name__,
 * __delta__). 0 or -EINVAL. */
int push_label_name_check(const char *name);

/*
 * "[push] labels": "k=v, k2=v2". Items are separated by ','; blanks (space, tab) around an item, its
 * name and its value are trimmed; the value is everything after the first '=' and so may hold '='
 * but never ','. An empty or blank text is no labels. Refused with -EINVAL and a sentence in err
 * naming the item: an empty item (",,", a trailing ','), a missing '=', an empty name, a name that
 * push_label_name_check() refuses, a name armprofd sets itself (service_name, host, source: the
 * first has its own key), a duplicate name, an empty value (Prometheus and Pyroscope take an empty
 * value for an absent label), a value over PUSH_LABEL_VALUE_MAX bytes or not printable UTF-8 (no
 * C0 or C1 control character, no DEL, no overlong form or surrogate), more than
 * PUSH_EXTRA_LABELS_MAX items, or a text longer than PUSH_LABELS_TEXT_MAX. On success *ret holds
 * *ret_n labels (NULL and 0 for none), in the order written; free with push_labels_free().
 */
int push_labels_parse(const char *text, struct push_label **ret, size_t *ret_n, char *err, size_t errlen);
void push_labels_free(struct push_label *l, size_t n);

/* A random (version 4, RFC 9562 §5.4) UUID, lower-case, 36 chars + NUL, from getrandom(2). */
void push_uuid4(char out[PUSH_UUID_STR_MAX]);

/* One series: its labels and its raw profiles (each gzipped pprof bytes) with their IDs. */
struct push_series {
        const struct push_label *labels;
        size_t n_labels;
        const struct strbuf *profiles;
        const char *const *ids;
        size_t n_profiles;
};

/*
 * The serialized push.v1.PushRequest, one RawProfileSeries per series in the order given, appended
 * to ret (what was in ret stays in front). Refused with -EINVAL and a sentence in err, ret left as
 * it was, for what the store would refuse: no series; a series with no labels, no profiles, more
 * than PUSH_LABELS_MAX labels or two labels of one name; a label name that is not
 * [a-zA-Z_][a-zA-Z0-9_]* (here "__name__", "__delta__" are allowed: push_label_name_check() is the
 * check for an operator's names) or longer than PUSH_LABEL_NAME_MAX; a value longer than
 * PUSH_LABEL_VALUE_MAX or not valid UTF-8 (proto3 strings must be); a "__name__" that is not
 * [a-zA-Z_][a-zA-Z0-9_]* (it becomes the first part of a ':'-separated profile type ID); an empty
 * profile; a missing or empty ID, or one that is not valid UTF-8.
 */
int push_request_encode(const struct push_series *series, size_t n, struct strbuf *ret, char *err, size_t errlen);

/*
 * A Retry-After field value (RFC 9110 §10.2.3), blanks around it trimmed: delay-seconds (1*DIGIT)
 * or an HTTP-date in the IMF-fixdate form (RFC 9110 §5.6.7; the two obsolete forms are refused),
 * taken relative to now_unix (Unix seconds). Capped at max_usec. 0 with the wait in *ret_usec (0
 * for a date not in the future), or -EINVAL (nothing written).
 */
int push_retry_after_parse(const char *value, int64_t now_unix, uint64_t max_usec, uint64_t *ret_usec);
