/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "negotiate.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "macro.h"

#define MAX_PARAMS 8
#define MAX_TOKEN 128
#define Q_SCALE 1000 /* qvalue: at most three decimals (RFC 9110 §12.4.2) */

struct token {
        const char *p;
        size_t n;
};

struct media_range {
        struct token type, subtype;
        struct token names[MAX_PARAMS], values[MAX_PARAMS];
        size_t n_params;
        int q; /* 0..Q_SCALE */
};

static bool tok_eq(struct token t, const char *s) {
        return strlen(s) == t.n && strncasecmp(t.p, s, t.n) == 0;
}

static bool tchar(char c) {
        /* RFC 9110 §5.6.2 token characters. */
        return isalnum((unsigned char) c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static const char *skip_ows(const char *p, const char *end) {
        while (p < end && (*p == ' ' || *p == '\t'))
                p++;
        return p;
}

static const char *parse_token(const char *p, const char *end, struct token *ret) {
        const char *s = p;

        while (p < end && tchar(*p))
                p++;
        if (p == s || (size_t) (p - s) > MAX_TOKEN)
                return NULL;
        *ret = (struct token) { s, (size_t) (p - s) };
        return p;
}

/* qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ) */
static bool parse_q(struct token t, int *ret) {
        int v, scale = 100;

        if (t.n == 0 || (t.p[0] != '0' && t.p[0] != '1'))
                return false;
        v = (t.p[0] - '0') * Q_SCALE;
        if (t.n == 1) {
                *ret = v;
                return true;
        }
        if (t.p[1] != '.' || t.n > 5)
                return false;
        for (size_t i = 2; i < t.n; i++, scale /= 10) {
                if (!isdigit((unsigned char) t.p[i]))
                        return false;
                v += (t.p[i] - '0') * scale;
        }
        if (v > Q_SCALE)
                return false;
        *ret = v;
        return true;
}

/* One media range up to the next ',' (or end). Returns false if malformed. */
static bool parse_range(const char *p, const char *end, struct media_range *range) {
        *range = (struct media_range) { .q = Q_SCALE };

        p = skip_ows(p, end);
        p = parse_token(p, end, &range->type);
        if (!p || p >= end || *p != '/')
                return false;
        p = parse_token(p + 1, end, &range->subtype);
        if (!p)
                return false;
        /* "*" as type requires "*" as subtype. */
        if (tok_eq(range->type, "*") && !tok_eq(range->subtype, "*"))
                return false;

        for (;;) {
                struct token name, value;

                p = skip_ows(p, end);
                if (p >= end)
                        return true;
                if (*p != ';')
                        return false;
                p = skip_ows(p + 1, end);
                if (p >= end)
                        return true; /* tolerate a trailing ';' */
                p = parse_token(p, end, &name);
                if (!p || p >= end || *p != '=')
                        return false;
                p++;
                if (p < end && *p == '"') {
                        const char *s = ++p;

                        while (p < end && *p != '"') {
                                if (*p == '\\')
                                        p++;
                                p++;
                        }
                        if (p >= end)
                                return false;
                        value = (struct token) { s, (size_t) (p - s) };
                        p++;
                } else {
                        p = parse_token(p, end, &value);
                        if (!p)
                                return false;
                }
                if (tok_eq(name, "q")) {
                        if (!parse_q(value, &range->q))
                                return false;
                        continue;
                }
                if (range->n_params >= MAX_PARAMS)
                        return false;
                range->names[range->n_params] = name;
                range->values[range->n_params] = value;
                range->n_params++;
        }
}

/*
 * How specifically `range` matches offer `o`: 0 = no match, 1 = "* / *",
 * 2 = "type/ *", 3 = type/subtype, 4 = with parameters.
 */
static int match(const struct media_range *range, const struct media_offer *o) {
        int spec;

        if (tok_eq(range->type, "*"))
                spec = 1;
        else if (!tok_eq(range->type, o->type))
                return 0;
        else if (tok_eq(range->subtype, "*"))
                spec = 2;
        else if (!tok_eq(range->subtype, o->subtype))
                return 0;
        else
                spec = 3;

        for (const struct media_param_rule *rule = o->rules; rule && rule->name; rule++) {
                bool found = false;

                for (size_t i = 0; i < range->n_params; i++) {
                        if (!tok_eq(range->names[i], rule->name))
                                continue;
                        found = true;
                        bool ok = false;
                        for (const char *const *v = rule->values; *v; v++)
                                if (tok_eq(range->values[i], *v))
                                        ok = true;
                        if (!ok)
                                return 0;
                }
                if (spec == 3 && rule->required && !found)
                        return 0;
        }
        return spec == 3 && range->n_params > 0 ? 4 : spec;
}

int negotiate(const char *accept, const struct media_offer *offers, size_t n_offers) {
        int best_q[NEGOTIATE_MAX_OFFERS], best_spec[NEGOTIATE_MAX_OFFERS];
        int best = -1, best_quality = 0;
        const char *p, *end;
        size_t len;

        if (!accept || n_offers == 0 || n_offers > ELEMENTSOF(best_q))
                return -1;
        len = strnlen(accept, NEGOTIATE_MAX_HEADER + 1);
        if (len == 0 || len > NEGOTIATE_MAX_HEADER)
                return -1;

        for (size_t i = 0; i < n_offers; i++)
                best_q[i] = best_spec[i] = 0;

        for (p = accept, end = accept + len; p < end;) {
                const char *comma = memchr(p, ',', (size_t) (end - p));
                const char *stop = comma ? comma : end;
                struct media_range range;

                if (parse_range(p, stop, &range))
                        for (size_t i = 0; i < n_offers; i++) {
                                int s = match(&range, &offers[i]);

                                /* The most specific matching range decides an offer's quality. */
                                if (s > best_spec[i]) {
                                        best_spec[i] = s;
                                        best_q[i] = range.q;
                                }
                        }
                p = comma ? comma + 1 : end;
        }

        for (size_t i = 0; i < n_offers; i++)
                if (best_spec[i] > 0 && best_q[i] > best_quality) {
                        best_quality = best_q[i];
                        best = (int) i;
                }
        return best;
}

/*
 * Accept-Encoding (RFC 9110 §12.5.3): codings with an optional ";q=". An
 * explicit "gzip" entry decides; otherwise "*" does.
 */
bool negotiate_gzip(const char *accept_encoding) {
        int gzip_q = -1, any_q = -1;
        const char *p, *end;
        size_t len;

        if (!accept_encoding)
                return false;
        len = strnlen(accept_encoding, NEGOTIATE_MAX_HEADER + 1);
        if (len > NEGOTIATE_MAX_HEADER)
                return false;

        for (p = accept_encoding, end = accept_encoding + len; p < end;) {
                const char *comma = memchr(p, ',', (size_t) (end - p));
                const char *stop = comma ? comma : end;
                struct token coding, name, value;
                int qv = Q_SCALE;
                const char *c;

                c = parse_token(skip_ows(p, stop), stop, &coding);
                p = comma ? comma + 1 : end;
                if (!c)
                        continue;
                c = skip_ows(c, stop);
                if (c < stop) {
                        /* Only a q parameter is defined for codings. */
                        if (*c != ';')
                                continue;
                        c = parse_token(skip_ows(c + 1, stop), stop, &name);
                        if (!c || c >= stop || *c != '=' || !tok_eq(name, "q"))
                                continue;
                        c = parse_token(c + 1, stop, &value);
                        if (!c || skip_ows(c, stop) != stop || !parse_q(value, &qv))
                                continue;
                }
                if (tok_eq(coding, "gzip") || tok_eq(coding, "x-gzip"))
                        gzip_q = qv;
                else if (tok_eq(coding, "*"))
                        any_q = qv;
        }
        return gzip_q > 0 || (gzip_q < 0 && any_q > 0);
}

static const char *const text_versions[] = { "0.0.4", "1.0.0", NULL };
static const char *const om_versions[] = { "1.0.0", "0.0.1", NULL };
static const char *const proto_names[] = { "io.prometheus.client.MetricFamily", NULL };
static const char *const proto_encodings[] = { "delimited", NULL };
static const char *const any_escaping[] = { "allow-utf-8", "underscores", "dots", "values", NULL };
static const char *const utf8[] = { "utf-8", NULL };

enum prom_format negotiate_prom_format(const char *accept) {
        /* Order = our preference when qualities tie; text first (the default). */
        static const struct media_param_rule text_rules[] = {
                { "version", text_versions, false },
                { "escaping", any_escaping, false },
                { "charset", utf8, false },
                {},
        };
        static const struct media_param_rule om_rules[] = {
                { "version", om_versions, false },
                { "escaping", any_escaping, false },
                { "charset", utf8, false },
                {},
        };
        static const struct media_param_rule proto_rules[] = {
                { "proto", proto_names, true },
                { "encoding", proto_encodings, false },
                { "escaping", any_escaping, false },
                {},
        };
        static const struct media_offer offers[] = {
                [PROM_FORMAT_TEXT] = { "text", "plain", text_rules },
                [PROM_FORMAT_OPENMETRICS] = { "application", "openmetrics-text", om_rules },
                [PROM_FORMAT_PROTOBUF] = { "application", "vnd.google.protobuf", proto_rules },
        };
        int i = negotiate(accept, offers, ELEMENTSOF(offers));

        /* "MUST use PrometheusText0.0.4 as a last resort" (content_negotiation.md). */
        return i < 0 ? PROM_FORMAT_TEXT : (enum prom_format) i;
}

const char *prom_format_content_type(enum prom_format f) {
        switch (f) {
        case PROM_FORMAT_OPENMETRICS:
                return "application/openmetrics-text; version=1.0.0; charset=utf-8";
        case PROM_FORMAT_PROTOBUF:
                return "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
                       "encoding=delimited";
        case PROM_FORMAT_TEXT:
        default:
                return "text/plain; version=0.0.4; charset=utf-8";
        }
}
