/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "push-request.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "macro.h"
#include "push.pb-c.h"
#include "strbuf.h"

/* Labels armprofd sets on every series itself; an operator's duplicate would make the store refuse it. */
/* Series labels the push sets, and "service", which pushed profiles carry as a sample label (a series to the store). */
static const char *const labels_ours[] = { "service_name", "host", "source", "service" };

_printf_(3, 4) static int fail(char *err, size_t errlen, const char *fmt, ...) {
        va_list ap;

        if (err && errlen > 0) {
                va_start(ap, fmt);
                vsnprintf(err, errlen, fmt, ap);
                va_end(ap);
        }
        return -EINVAL;
}

static bool is_blank(char c) {
        return c == ' ' || c == '\t';
}

static bool is_alpha_(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

/* [a-zA-Z_][a-zA-Z0-9_]* over p[0..n): Prometheus's label name, and the metric name without ':'. */
static bool prom_name_valid(const char *p, size_t n) {
        if (n == 0 || !is_alpha_(p[0]))
                return false;
        for (size_t i = 1; i < n; i++)
                if (!is_alpha_(p[i]) && !is_digit(p[i]))
                        return false;
        return true;
}

/*
 * UTF-8 as RFC 3629 §4 defines it: no overlong form, no surrogate (U+D800..U+DFFF), nothing above
 * U+10FFFF. With printable, also no C0 control, DEL or C1 control (U+0080..U+009F): a label value is
 * shown in the store's UI and in our logs. Returns false on the first bad sequence.
 */
static bool utf8_valid(const char *s, size_t n, bool printable) {
        const unsigned char *p = (const unsigned char *) s;

        for (size_t i = 0; i < n;) {
                unsigned char c = p[i];
                uint32_t cp, min;
                size_t len;

                if (c < 0x80) {
                        if (printable && (c < 0x20 || c == 0x7f))
                                return false;
                        i++;
                        continue;
                }
                if (c >= 0xc2 && c <= 0xdf) {
                        len = 2;
                        cp = c & 0x1f;
                        min = 0x80;
                } else if (c >= 0xe0 && c <= 0xef) {
                        len = 3;
                        cp = c & 0x0f;
                        min = 0x800;
                } else if (c >= 0xf0 && c <= 0xf4) {
                        len = 4;
                        cp = c & 0x07;
                        min = 0x10000;
                } else
                        return false;
                if (n - i < len)
                        return false;
                for (size_t k = 1; k < len; k++) {
                        if ((p[i + k] & 0xc0) != 0x80)
                                return false;
                        cp = (cp << 6) | (p[i + k] & 0x3f);
                }
                if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                        return false;
                if (printable && cp <= 0x9f)
                        return false;
                i += len;
        }
        return true;
}

int push_label_name_check(const char *name) {
        size_t n;

        if (!name)
                return -EINVAL;
        n = strlen(name);
        if (n > PUSH_LABEL_NAME_MAX || !prom_name_valid(name, n))
                return -EINVAL;
        /* Names starting "__" are reserved to the store (Prometheus data model, "Metric names and
         * labels"); we set __name__ and __delta__ ourselves. */
        if (name[0] == '_' && name[1] == '_')
                return -EINVAL;
        return 0;
}

void push_labels_free(struct push_label *l, size_t n) {
        if (!l)
                return;
        for (size_t i = 0; i < n; i++) {
                free(l[i].name);
                free(l[i].value);
        }
        free(l);
}

static void trim(const char **p, const char **end) {
        while (*p < *end && is_blank(**p))
                (*p)++;
        while (*end > *p && is_blank((*end)[-1]))
                (*end)--;
}

/* An item's text for an error message: cut, and only its printable ASCII, so the message stays one
 * readable line whatever the config holds. */
static void item_excerpt(const char *p, size_t n, char out[static 64]) {
        size_t k = 0;

        for (size_t i = 0; i < n && k < 60; i++)
                out[k++] = (unsigned char) p[i] >= 0x20 && (unsigned char) p[i] < 0x7f ? p[i] : '?';
        if (n > 60) {
                out[k++] = '.';
                out[k++] = '.';
                out[k++] = '.';
        }
        out[k] = '\0';
}

int push_labels_parse(const char *text, struct push_label **ret, size_t *ret_n, char *err, size_t errlen) {
        struct push_label *labels = NULL;
        size_t n = 0, len, item = 0;
        const char *p, *end;
        int r = 0;

        if (!text)
                return fail(err, errlen, "labels: missing");
        len = strlen(text);
        if (len > PUSH_LABELS_TEXT_MAX)
                return fail(err, errlen, "labels: %zu bytes, more than %u", len, (unsigned) PUSH_LABELS_TEXT_MAX);
        p = text;
        end = text + len;
        trim(&p, &end);
        if (p == end) {
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }

        labels = xcalloc(PUSH_EXTRA_LABELS_MAX, sizeof(*labels));
        for (;;) {
                const char *comma = memchr(p, ',', (size_t) (end - p));
                const char *ie = comma ? comma : end, *is = p, *eq, *ns, *ne, *vs, *ve;
                char ex[64];

                item++;
                trim(&is, &ie);
                item_excerpt(is, (size_t) (ie - is), ex);
                if (is == ie) {
                        r = fail(err, errlen, "labels: item %zu is empty (two commas, or one at the end)", item);
                        goto finish;
                }
                if (n == PUSH_EXTRA_LABELS_MAX) {
                        r = fail(err, errlen, "labels: \"%s\" is item %zu; at most %u labels may be added",
                                 ex, item, (unsigned) PUSH_EXTRA_LABELS_MAX);
                        goto finish;
                }
                eq = memchr(is, '=', (size_t) (ie - is));
                if (!eq) {
                        r = fail(err, errlen, "labels: \"%s\" has no '=' (want name=value)", ex);
                        goto finish;
                }
                ns = is;
                ne = eq;
                vs = eq + 1;
                ve = ie;
                trim(&ns, &ne);
                trim(&vs, &ve);
                if (ns == ne) {
                        r = fail(err, errlen, "labels: \"%s\" has an empty name", ex);
                        goto finish;
                }

                _cleanup_free_ char *name = strndup(ns, (size_t) (ne - ns));
                if (!name)
                        oom();
                if (push_label_name_check(name) < 0) {
                        r = fail(err, errlen,
                                 "labels: \"%s\": the name must match [a-zA-Z_][a-zA-Z0-9_]*, not start with \"__\" "
                                 "and be at most %u bytes",
                                 ex, (unsigned) PUSH_LABEL_NAME_MAX);
                        goto finish;
                }
                for (size_t i = 0; i < ELEMENTSOF(labels_ours); i++)
                        if (streq(name, labels_ours[i])) {
                                r = fail(err, errlen, "labels: \"%s\": armprofd sets %s itself%s", ex, name,
                                         streq(name, "service_name") ? " (use the service_name key)" : "");
                                goto finish;
                        }
                for (size_t i = 0; i < n; i++)
                        if (streq(labels[i].name, name)) {
                                r = fail(err, errlen, "labels: \"%s\": %s is given twice", ex, name);
                                goto finish;
                        }
                if (vs == ve) {
                        r = fail(err, errlen, "labels: \"%s\" has an empty value (the store takes it for no label)", ex);
                        goto finish;
                }
                if ((size_t) (ve - vs) > PUSH_LABEL_VALUE_MAX) {
                        r = fail(err, errlen, "labels: \"%s\": the value is longer than %u bytes", ex,
                                 (unsigned) PUSH_LABEL_VALUE_MAX);
                        goto finish;
                }
                if (!utf8_valid(vs, (size_t) (ve - vs), true)) {
                        r = fail(err, errlen, "labels: \"%s\": the value is not printable UTF-8", ex);
                        goto finish;
                }

                labels[n].name = TAKE_PTR(name);
                labels[n].value = strndup(vs, (size_t) (ve - vs));
                if (!labels[n].value)
                        oom();
                n++;
                if (!comma)
                        break;
                p = comma + 1;
        }

finish:
        if (r < 0) {
                push_labels_free(labels, n);
                return r;
        }
        *ret = labels;
        *ret_n = n;
        return 0;
}

void push_uuid4(char out[PUSH_UUID_STR_MAX]) {
        static const char hex[] = "0123456789abcdef";
        uint8_t b[16];
        size_t got = 0, k = 0;

        /* getrandom(2): requests of up to 256 bytes from the urandom source are never cut short once
         * the pool is ready, and block until it is; only a signal interrupts them. A kernel without
         * getrandom (before 3.17) has no SPE either, so failing here means a broken system. */
        while (got < sizeof(b)) {
                ssize_t l = getrandom(b + got, sizeof(b) - got, 0);

                if (l < 0) {
                        if (errno == EINTR)
                                continue;
                        abort();
                }
                got += (size_t) l;
        }
        /* RFC 9562 §5.4: the version (0b0100) in the high nibble of octet 6, the variant (0b10) in the
         * two high bits of octet 8 (§4.1); the other 122 bits random. */
        b[6] = (uint8_t) ((b[6] & 0x0f) | 0x40);
        b[8] = (uint8_t) ((b[8] & 0x3f) | 0x80);
        for (size_t i = 0; i < sizeof(b); i++) {
                if (i == 4 || i == 6 || i == 8 || i == 10)
                        out[k++] = '-';
                out[k++] = hex[b[i] >> 4];
                out[k++] = hex[b[i] & 0x0f];
        }
        out[k] = '\0';
}

static int check_series(const struct push_series *s, size_t si, char *err, size_t errlen) {
        if (s->n_labels == 0)
                return fail(err, errlen, "series %zu has no labels", si);
        if (s->n_labels > PUSH_LABELS_MAX)
                return fail(err, errlen, "series %zu has %zu labels, the store takes at most %u", si, s->n_labels,
                            (unsigned) PUSH_LABELS_MAX);
        if (s->n_profiles == 0 || !s->profiles || !s->ids)
                return fail(err, errlen, "series %zu has no profiles", si);
        if (!s->labels)
                return fail(err, errlen, "series %zu has no labels", si);

        for (size_t i = 0; i < s->n_labels; i++) {
                const struct push_label *l = &s->labels[i];
                size_t nl, vl;

                if (!l->name || !l->value)
                        return fail(err, errlen, "series %zu: label %zu is missing its name or value", si, i);
                nl = strlen(l->name);
                vl = strlen(l->value);
                if (nl > PUSH_LABEL_NAME_MAX)
                        return fail(err, errlen, "series %zu: a label name is longer than %u bytes", si,
                                    (unsigned) PUSH_LABEL_NAME_MAX);
                if (!prom_name_valid(l->name, nl))
                        return fail(err, errlen, "series %zu: label name \"%.64s\" is not [a-zA-Z_][a-zA-Z0-9_]*", si,
                                    l->name);
                if (vl > PUSH_LABEL_VALUE_MAX)
                        return fail(err, errlen, "series %zu: the value of %s is longer than %u bytes", si, l->name,
                                    (unsigned) PUSH_LABEL_VALUE_MAX);
                if (!utf8_valid(l->value, vl, false))
                        return fail(err, errlen, "series %zu: the value of %s is not UTF-8", si, l->name);
                /* The store splits "<__name__>:<type>:<unit>:<period type>:<period unit>" at ':'. */
                if (streq(l->name, "__name__") && !prom_name_valid(l->value, vl))
                        return fail(err, errlen, "series %zu: __name__ \"%.64s\" is not [a-zA-Z_][a-zA-Z0-9_]*", si,
                                    l->value);
                for (size_t k = 0; k < i; k++)
                        if (streq(s->labels[k].name, l->name))
                                return fail(err, errlen, "series %zu: label %s is given twice", si, l->name);
        }

        for (size_t i = 0; i < s->n_profiles; i++) {
                if (s->profiles[i].len == 0 || !s->profiles[i].buf)
                        return fail(err, errlen, "series %zu: profile %zu is empty", si, i);
                if (!s->ids[i] || !s->ids[i][0])
                        return fail(err, errlen, "series %zu: profile %zu has no ID", si, i);
                if (!utf8_valid(s->ids[i], strlen(s->ids[i]), false))
                        return fail(err, errlen, "series %zu: the ID of profile %zu is not UTF-8", si, i);
        }
        return 0;
}

int push_request_encode(const struct push_series *series, size_t n, struct strbuf *ret, char *err, size_t errlen) {
        Push__V1__PushRequest req = PUSH__V1__PUSH_REQUEST__INIT;
        _cleanup_free_ Push__V1__RawProfileSeries *pb_series = NULL;
        _cleanup_free_ Push__V1__RawProfileSeries **pb_series_p = NULL;
        _cleanup_free_ Types__V1__LabelPair *pb_labels = NULL;
        _cleanup_free_ Types__V1__LabelPair **pb_labels_p = NULL;
        _cleanup_free_ Push__V1__RawSample *pb_samples = NULL;
        _cleanup_free_ Push__V1__RawSample **pb_samples_p = NULL;
        size_t total_labels = 0, total_samples = 0, li = 0, pi = 0, size;
        int r;

        if (n == 0 || !series)
                return fail(err, errlen, "the request has no series");
        for (size_t i = 0; i < n; i++) {
                r = check_series(&series[i], i, err, errlen);
                if (r < 0)
                        return r;
                /* Both bounded: labels by PUSH_LABELS_MAX per series, profiles by what the caller holds. */
                total_labels += series[i].n_labels;
                total_samples += series[i].n_profiles;
        }

        pb_series = xcalloc(n, sizeof(*pb_series));
        pb_series_p = xcalloc(n, sizeof(*pb_series_p));
        pb_labels = xcalloc(total_labels, sizeof(*pb_labels));
        pb_labels_p = xcalloc(total_labels, sizeof(*pb_labels_p));
        pb_samples = xcalloc(total_samples, sizeof(*pb_samples));
        pb_samples_p = xcalloc(total_samples, sizeof(*pb_samples_p));

        /* protobuf-c's message fields are not const; pack() only reads them, so the casts below hand it
         * the caller's strings and bytes without copies. */
        for (size_t i = 0; i < n; i++) {
                const struct push_series *s = &series[i];
                Push__V1__RawProfileSeries *ps = &pb_series[i];

                push__v1__raw_profile_series__init(ps);
                ps->n_labels = s->n_labels;
                ps->labels = &pb_labels_p[li];
                for (size_t k = 0; k < s->n_labels; k++, li++) {
                        types__v1__label_pair__init(&pb_labels[li]);
                        pb_labels[li].name = (char *) (uintptr_t) s->labels[k].name;
                        pb_labels[li].value = (char *) (uintptr_t) s->labels[k].value;
                        pb_labels_p[li] = &pb_labels[li];
                }
                ps->n_samples = s->n_profiles;
                ps->samples = &pb_samples_p[pi];
                for (size_t k = 0; k < s->n_profiles; k++, pi++) {
                        push__v1__raw_sample__init(&pb_samples[pi]);
                        pb_samples[pi].raw_profile.data = (uint8_t *) s->profiles[k].buf;
                        pb_samples[pi].raw_profile.len = s->profiles[k].len;
                        pb_samples[pi].id = (char *) (uintptr_t) s->ids[k];
                        pb_samples_p[pi] = &pb_samples[pi];
                }
                pb_series_p[i] = ps;
        }
        req.n_series = n;
        req.series = pb_series_p;

        size = push__v1__push_request__get_packed_size(&req);
        strbuf_reserve(ret, size);
        if (push__v1__push_request__pack(&req, (uint8_t *) ret->buf + ret->len) != size)
                abort(); /* protobuf-c packs exactly what it measured; anything else is its bug */
        ret->len += size;
        ret->buf[ret->len] = '\0';
        return 0;
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (the "days_from_civil"
 * algorithm: shift the year to start in March so the leap day is last). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
        int64_t era;
        unsigned yoe, doy, doe;

        y -= m <= 2;
        era = (y >= 0 ? y : y - 399) / 400;
        yoe = (unsigned) (y - era * 400);
        doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
        doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146097 + (int64_t) doe - 719468;
}

static bool leap_year(unsigned y) {
        return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static bool digits(const char *p, size_t n, unsigned *ret) {
        unsigned v = 0;

        for (size_t i = 0; i < n; i++) {
                if (!is_digit(p[i]))
                        return false;
                v = v * 10 + (unsigned) (p[i] - '0');
        }
        *ret = v;
        return true;
}

/*
 * IMF-fixdate (RFC 9110 §5.6.7): exactly "Sun, 06 Nov 1994 08:49:37 GMT", 29 bytes, names
 * case-sensitive. The day name is checked against the list but not against the date: the RFC
 * gives the date the authority. Seconds may be 60 (a leap second, §5.6.7 "second = 2DIGIT").
 */
static int parse_imf_fixdate(const char *s, size_t n, int64_t *ret) {
        static const char days[7][4] = { "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun" };
        static const char months[12][4] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                             "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
        static const unsigned mdays[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
        unsigned day, year, hour, min, sec, month = 0;
        bool ok = false;

        if (n != 29 || s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' ||
            s[19] != ':' || s[22] != ':' || s[25] != ' ' || memcmp(s + 26, "GMT", 3) != 0)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(days); i++)
                if (memcmp(s, days[i], 3) == 0)
                        ok = true;
        if (!ok)
                return -EINVAL;
        for (month = 0; month < 12; month++)
                if (memcmp(s + 8, months[month], 3) == 0)
                        break;
        if (month == 12)
                return -EINVAL;
        if (!digits(s + 5, 2, &day) || !digits(s + 12, 4, &year) || !digits(s + 17, 2, &hour) ||
            !digits(s + 20, 2, &min) || !digits(s + 23, 2, &sec))
                return -EINVAL;
        if (day < 1 || day > mdays[month] + (month == 1 && leap_year(year)) || hour > 23 || min > 59 || sec > 60)
                return -EINVAL;
        *ret = days_from_civil(year, month + 1, day) * 86400 + hour * 3600 + min * 60 + sec;
        return 0;
}

int push_retry_after_parse(const char *value, int64_t now_unix, uint64_t max_usec, uint64_t *ret_usec) {
        const char *p, *end;
        uint64_t secs = 0;
        bool over = false;

        if (!value)
                return -EINVAL;
        /* A field value has no leading or trailing blanks (RFC 9110 §5.5); a sender may still put
         * them there and a parser excludes them. */
        p = value;
        end = value + strlen(value);
        trim(&p, &end);
        if (p == end)
                return -EINVAL;

        if (is_digit(*p)) {
                /* delay-seconds = 1*DIGIT (RFC 9110 §10.2.3); no sign, no exponent, no fraction.
                 * A number too big for 64 bits is a wait longer than any cap. */
                for (const char *q = p; q < end; q++) {
                        if (!is_digit(*q))
                                return -EINVAL;
                        if (secs > (UINT64_MAX - 9) / 10)
                                over = true;
                        else
                                secs = secs * 10 + (uint64_t) (*q - '0');
                }
        } else {
                int64_t when;

                if (parse_imf_fixdate(p, (size_t) (end - p), &when) < 0)
                        return -EINVAL;
                secs = when > now_unix ? (uint64_t) when - (uint64_t) now_unix : 0;
        }

        if (over || secs > max_usec / USEC_PER_SEC)
                *ret_usec = max_usec;
        else
                *ret_usec = MIN(secs * USEC_PER_SEC, max_usec);
        return 0;
}
