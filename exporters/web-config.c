/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "web-config.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/gnutls.h>
#include <yaml.h>

#include "file-util.h"
#include "parse-util.h"
#include "strbuf.h"

/* Keys of one mapping we tell apart (a bit each, for duplicates). */
#define WEB_CONFIG_KEYS_MAX 16

static const char *const client_auth_names[_WEB_CLIENT_AUTH_MAX] = {
        [WEB_CLIENT_AUTH_NONE] = "NoClientCert",
        [WEB_CLIENT_AUTH_REQUEST] = "RequestClientCert",
        [WEB_CLIENT_AUTH_REQUIRE_ANY] = "RequireAnyClientCert",
        [WEB_CLIENT_AUTH_VERIFY_IF_GIVEN] = "VerifyClientCertIfGiven",
        [WEB_CLIENT_AUTH_REQUIRE_AND_VERIFY] = "RequireAndVerifyClientCert",
};

static const char *const tls_version_names[_WEB_TLS_VERSION_MAX] = {
        [WEB_TLS10] = "TLS10",
        [WEB_TLS11] = "TLS11",
        [WEB_TLS12] = "TLS12",
        [WEB_TLS13] = "TLS13",
};

/* GnuTLS's priority keyword of each version. */
static const char *const tls_version_priorities[_WEB_TLS_VERSION_MAX] = {
        [WEB_TLS10] = "VERS-TLS1.0",
        [WEB_TLS11] = "VERS-TLS1.1",
        [WEB_TLS12] = "VERS-TLS1.2",
        [WEB_TLS13] = "VERS-TLS1.3",
};

/*
 * The names Go's crypto/tls gives cipher suites (tls.CipherSuites() and
 * tls.InsecureCipherSuites(), which the toolkit accepts), with their IANA
 * numbers (RFC 5246, 5289, 7905, 8446).
 */
static const struct {
        const char *name;
        uint16_t id;
} cipher_suites[] = {
        { "TLS_RSA_WITH_RC4_128_SHA", 0x0005 },
        { "TLS_RSA_WITH_3DES_EDE_CBC_SHA", 0x000a },
        { "TLS_RSA_WITH_AES_128_CBC_SHA", 0x002f },
        { "TLS_RSA_WITH_AES_256_CBC_SHA", 0x0035 },
        { "TLS_RSA_WITH_AES_128_CBC_SHA256", 0x003c },
        { "TLS_RSA_WITH_AES_128_GCM_SHA256", 0x009c },
        { "TLS_RSA_WITH_AES_256_GCM_SHA384", 0x009d },
        { "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA", 0xc007 },
        { "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", 0xc009 },
        { "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", 0xc00a },
        { "TLS_ECDHE_RSA_WITH_RC4_128_SHA", 0xc011 },
        { "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", 0xc012 },
        { "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", 0xc013 },
        { "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", 0xc014 },
        { "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", 0xc023 },
        { "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", 0xc027 },
        { "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", 0xc02b },
        { "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", 0xc02c },
        { "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", 0xc02f },
        { "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", 0xc030 },
        { "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", 0xcca8 },
        { "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", 0xcca9 },
        /* Go's older spellings of the two above. */
        { "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", 0xcca8 },
        { "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", 0xcca9 },
        /* TLS 1.3's: Go lists them and ignores them in a config (its 1.3 suites are fixed). */
        { "TLS_AES_128_GCM_SHA256", 0x1301 },
        { "TLS_AES_256_GCM_SHA384", 0x1302 },
        { "TLS_CHACHA20_POLY1305_SHA256", 0x1303 },
};

/* The toolkit's curve names (Go's tls.CurveID) and GnuTLS's groups. */
static const struct {
        const char *name;
        const char *group;
} curves[] = {
        { "CurveP256", "GROUP-SECP256R1" },
        { "CurveP384", "GROUP-SECP384R1" },
        { "CurveP521", "GROUP-SECP521R1" },
        { "X25519", "GROUP-X25519" },
};

/*
 * The headers http_server_config may set, and the values allowed (none
 * listed: any), as the toolkit has them (web/handler.go, extraHTTPHeaders).
 */
static const struct {
        const char *name;
        const char *values[3];
} allowed_headers[] = {
        { "Strict-Transport-Security", {} },
        { "X-Content-Type-Options", { "nosniff" } },
        { "X-Frame-Options", { "deny", "sameorigin" } },
        { "X-XSS-Protection", {} },
        { "Content-Security-Policy", {} },
};

struct parser {
        yaml_document_t doc;
        const char *dir;
        struct web_config *c;
        char *err;
        size_t errlen;
};

_printf_(3, 4) static int fail(struct parser *p, const yaml_node_t *n, const char *fmt, ...) {
        char msg[MESSAGE_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        snprintf(p->err, p->errlen, "line %zu: %s", n ? n->start_mark.line + 1 : 1, msg);
        return -EINVAL;
}

static yaml_node_t *node(struct parser *p, int i) {
        return yaml_document_get_node(&p->doc, i);
}

/* YAML 1.1's null: "", "~", "null" unquoted (the toolkit's parser, yaml.v2, reads 1.1). */
static bool is_null(const yaml_node_t *n) {
        const char *v = NULL;

        if (!n)
                return true;
        if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
                return false;
        v = (const char *) n->data.scalar.value;
        return n->data.scalar.length == 0 || streq(v, "~") || streq(v, "null") || streq(v, "Null") ||
               streq(v, "NULL");
}

/* A scalar of at most max bytes with no NUL ("\0" is a valid escape in YAML). */
static int scalar(struct parser *p, const yaml_node_t *n, const char *key, size_t max, const char **ret) {
        if (!n || n->type != YAML_SCALAR_NODE)
                return fail(p, n, "%s: a string was expected", key);
        if (n->data.scalar.length > max)
                return fail(p, n, "%s: longer than %zu bytes", key, max);
        if (strlen((const char *) n->data.scalar.value) != n->data.scalar.length)
                return fail(p, n, "%s: holds a NUL byte", key);
        *ret = (const char *) n->data.scalar.value;
        return 0;
}

static int scalar_dup(struct parser *p, const yaml_node_t *n, const char *key, size_t max, char **ret) {
        const char *v = NULL;
        int r;

        r = scalar(p, n, key, max, &v);
        if (r < 0)
                return r;
        free(*ret);
        *ret = xstrdup(v);
        return 0;
}

/* A file name, made absolute against the config's directory as the toolkit does (config.JoinDir). */
static int file_name(struct parser *p, const yaml_node_t *n, const char *key, char **ret) {
        const char *v = NULL;
        int r;

        r = scalar(p, n, key, PATH_MAX - 1, &v);
        if (r < 0)
                return r;
        free(*ret);
        *ret = NULL;
        if (!*v)
                return 0;
        if (v[0] != '/' && p->dir) {
                struct strbuf b = STRBUF_INIT;

                strbuf_printf(&b, "%s/%s", p->dir, v);
                if (b.len >= PATH_MAX) {
                        strbuf_done(&b);
                        return fail(p, n, "%s: the path is too long", key);
                }
                *ret = strbuf_steal(&b, NULL);
        } else
                *ret = xstrdup(v);
        return 0;
}

static int boolean(struct parser *p, const yaml_node_t *n, const char *key, bool *ret) {
        const char *v = NULL;
        int r;

        r = scalar(p, n, key, WEB_CONFIG_VALUE_MAX, &v);
        if (r < 0)
                return r;
        if (parse_bool(v, ret) < 0)
                return fail(p, n, "%s: '%s' is not a boolean (true or false)", key, v);
        return 0;
}

/*
 * Calls fn for each key of mapping n (NULL or null: none) with its value.
 * Keys must be among `keys` (NULL-terminated) and appear once.
 */
typedef int (*key_fn)(struct parser *p, size_t key_index, const char *key, const yaml_node_t *value);

static int each_key(struct parser *p, const yaml_node_t *n, const char *what, const char *const *keys, key_fn fn) {
        unsigned seen = 0;

        if (is_null(n))
                return 0;
        if (n->type != YAML_MAPPING_NODE)
                return fail(p, n, "%s: a mapping of keys to values was expected", what);
        for (yaml_node_pair_t *pair = n->data.mapping.pairs.start; pair < n->data.mapping.pairs.top; pair++) {
                const yaml_node_t *k = node(p, pair->key), *v = node(p, pair->value);
                const char *name;
                size_t i;
                int r;

                r = scalar(p, k, what, WEB_CONFIG_VALUE_MAX, &name);
                if (r < 0)
                        return r;
                for (i = 0; keys[i] && !streq(keys[i], name); i++)
                        ;
                if (!keys[i])
                        return fail(p, k, "%s: unknown key '%s'", what, name);
                if (seen & (1u << i))
                        return fail(p, k, "%s: '%s' given twice", what, name);
                seen |= 1u << i;
                r = fn(p, i, name, v);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A sequence of scalars (NULL or null: empty), at most WEB_CONFIG_LIST_MAX. */
typedef int (*item_fn)(struct parser *p, const char *key, const yaml_node_t *item, const char *value);

static int each_item(struct parser *p, const yaml_node_t *n, const char *key, item_fn fn) {
        if (is_null(n))
                return 0;
        if (n->type != YAML_SEQUENCE_NODE)
                return fail(p, n, "%s: a list was expected", key);
        if (n->data.sequence.items.top - n->data.sequence.items.start > WEB_CONFIG_LIST_MAX)
                return fail(p, n, "%s: more than %d items", key, WEB_CONFIG_LIST_MAX);
        for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
                const yaml_node_t *item = node(p, *it);
                const char *v;
                int r;

                r = scalar(p, item, key, WEB_CONFIG_VALUE_MAX, &v);
                if (r < 0)
                        return r;
                r = fn(p, key, item, v);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int cipher_item(struct parser *p, const char *key, const yaml_node_t *item, const char *v) {
        struct web_tls *t = &p->c->tls;

        for (size_t i = 0; i < ELEMENTSOF(cipher_suites); i++)
                if (streq(cipher_suites[i].name, v)) {
                        t->cipher_suites[t->n_cipher_suites++] = cipher_suites[i].id;
                        return 0;
                }
        return fail(p, item, "%s: unknown cipher suite '%s' (Go's names, such as "
                             "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)", key, v);
}

static int curve_item(struct parser *p, const char *key, const yaml_node_t *item, const char *v) {
        struct web_tls *t = &p->c->tls;

        for (size_t i = 0; i < ELEMENTSOF(curves); i++)
                if (streq(curves[i].name, v)) {
                        t->curves[t->n_curves++] = xstrdup(curves[i].group);
                        return 0;
                }
        return fail(p, item, "%s: unknown curve '%s' (CurveP256, CurveP384, CurveP521 or X25519)", key, v);
}

static int san_item(struct parser *p, const char *key, const yaml_node_t *item, const char *v) {
        struct web_tls *t = &p->c->tls;

        t->allowed_sans[t->n_allowed_sans++] = xstrdup(v);
        return 0;
}

static int tls_version(struct parser *p, const yaml_node_t *n, const char *key, enum web_tls_version *ret) {
        const char *v = NULL;
        int r;

        r = scalar(p, n, key, WEB_CONFIG_VALUE_MAX, &v);
        if (r < 0)
                return r;
        for (size_t i = 0; i < _WEB_TLS_VERSION_MAX; i++)
                if (streq(tls_version_names[i], v)) {
                        *ret = (enum web_tls_version) i;
                        return 0;
                }
        return fail(p, n, "%s: unknown TLS version '%s' (TLS10, TLS11, TLS12 or TLS13)", key, v);
}

static int client_auth(struct parser *p, const yaml_node_t *n, const char *key, enum web_client_auth *ret) {
        const char *v = NULL;
        int r;

        r = scalar(p, n, key, WEB_CONFIG_VALUE_MAX, &v);
        if (r < 0)
                return r;
        if (!*v) {
                *ret = WEB_CLIENT_AUTH_NONE;
                return 0;
        }
        if (streq(v, "RequireClientCert")) { /* the toolkit's older name */
                *ret = WEB_CLIENT_AUTH_REQUIRE_ANY;
                return 0;
        }
        for (size_t i = 0; i < _WEB_CLIENT_AUTH_MAX; i++)
                if (streq(client_auth_names[i], v)) {
                        *ret = (enum web_client_auth) i;
                        return 0;
                }
        return fail(p, n, "%s: unknown '%s' (NoClientCert, RequestClientCert, RequireAnyClientCert, "
                          "VerifyClientCertIfGiven or RequireAndVerifyClientCert)", key, v);
}

/* Each mapping's keys: the enum names the case, the table the spelling (each_key()'s index). */
enum {
        TLS_CERT_FILE,
        TLS_KEY_FILE,
        TLS_CERT,
        TLS_KEY,
        TLS_CLIENT_CA_FILE,
        TLS_CLIENT_CA,
        TLS_CLIENT_AUTH_TYPE,
        TLS_CIPHER_SUITES,
        TLS_CURVE_PREFERENCES,
        TLS_MIN_VERSION,
        TLS_MAX_VERSION,
        TLS_PREFER_SERVER_CIPHER_SUITES,
        TLS_CLIENT_ALLOWED_SANS,
        _TLS_KEY_MAX,
};

static const char *const tls_keys[_TLS_KEY_MAX + 1] = {
        [TLS_CERT_FILE] = "cert_file",
        [TLS_KEY_FILE] = "key_file",
        [TLS_CERT] = "cert",
        [TLS_KEY] = "key",
        [TLS_CLIENT_CA_FILE] = "client_ca_file",
        [TLS_CLIENT_CA] = "client_ca",
        [TLS_CLIENT_AUTH_TYPE] = "client_auth_type",
        [TLS_CIPHER_SUITES] = "cipher_suites",
        [TLS_CURVE_PREFERENCES] = "curve_preferences",
        [TLS_MIN_VERSION] = "min_version",
        [TLS_MAX_VERSION] = "max_version",
        [TLS_PREFER_SERVER_CIPHER_SUITES] = "prefer_server_cipher_suites",
        [TLS_CLIENT_ALLOWED_SANS] = "client_allowed_sans",
};

static int tls_key(struct parser *p, size_t i, const char *key, const yaml_node_t *v) {
        struct web_tls *t = &p->c->tls;

        switch (i) {
        case TLS_CERT_FILE: return file_name(p, v, key, &t->cert_file);
        case TLS_KEY_FILE: return file_name(p, v, key, &t->key_file);
        case TLS_CERT: return scalar_dup(p, v, key, WEB_CONFIG_FILE_MAX, &t->cert);
        case TLS_KEY: return scalar_dup(p, v, key, WEB_CONFIG_FILE_MAX, &t->key);
        case TLS_CLIENT_CA_FILE: return file_name(p, v, key, &t->client_ca_file);
        case TLS_CLIENT_CA: return scalar_dup(p, v, key, WEB_CONFIG_FILE_MAX, &t->client_ca);
        case TLS_CLIENT_AUTH_TYPE: return client_auth(p, v, key, &t->client_auth);
        case TLS_CIPHER_SUITES: return each_item(p, v, key, cipher_item);
        case TLS_CURVE_PREFERENCES: return each_item(p, v, key, curve_item);
        case TLS_MIN_VERSION: return tls_version(p, v, key, &t->min_version);
        case TLS_MAX_VERSION: return tls_version(p, v, key, &t->max_version);
        case TLS_PREFER_SERVER_CIPHER_SUITES: return boolean(p, v, key, &t->prefer_server_cipher_suites);
        case TLS_CLIENT_ALLOWED_SANS: return each_item(p, v, key, san_item);
        default: abort();
        }
}

static int header_value(struct parser *p, const yaml_node_t *k, const char *name, const yaml_node_t *v) {
        struct web_config *c = p->c;
        const char *value;
        size_t i;
        int r;

        for (i = 0; i < ELEMENTSOF(allowed_headers) && !streq(allowed_headers[i].name, name); i++)
                ;
        if (i == ELEMENTSOF(allowed_headers))
                return fail(p, k, "headers: HTTP header '%s' can not be configured (Strict-Transport-Security, "
                                  "X-Content-Type-Options, X-Frame-Options, X-XSS-Protection, "
                                  "Content-Security-Policy)", name);
        r = scalar(p, v, name, WEB_CONFIG_VALUE_MAX, &value);
        if (r < 0)
                return r;
        /* It goes into a response header as it is. */
        if (value[strcspn(value, "\r\n")])
                return fail(p, v, "headers: %s: a value on one line was expected", name);
        if (allowed_headers[i].values[0]) {
                bool ok = false;

                for (size_t j = 0; j < ELEMENTSOF(allowed_headers[i].values) && allowed_headers[i].values[j]; j++)
                        ok = ok || streq(allowed_headers[i].values[j], value);
                if (!ok)
                        return fail(p, v, "headers: invalid value '%s' for %s", value, name);
        }
        c->headers = xrealloc(c->headers, (c->n_headers + 1) * sizeof(*c->headers));
        c->headers[c->n_headers++] = (struct web_header) { xstrdup(name), xstrdup(value) };
        return 0;
}

static int headers(struct parser *p, const yaml_node_t *n) {
        if (is_null(n))
                return 0;
        if (n->type != YAML_MAPPING_NODE)
                return fail(p, n, "headers: a mapping of header names to values was expected");
        for (yaml_node_pair_t *pair = n->data.mapping.pairs.start; pair < n->data.mapping.pairs.top; pair++) {
                const yaml_node_t *k = node(p, pair->key);
                const char *name;
                int r;

                r = scalar(p, k, "headers", WEB_CONFIG_VALUE_MAX, &name);
                if (r < 0)
                        return r;
                for (size_t j = 0; j < p->c->n_headers; j++)
                        if (streq(p->c->headers[j].name, name))
                                return fail(p, k, "headers: '%s' given twice", name);
                r = header_value(p, k, name, node(p, pair->value));
                if (r < 0)
                        return r;
        }
        return 0;
}

static const char *const http_keys[] = { "http2", "headers", NULL };

static int http_key(struct parser *p, size_t i, const char *key, const yaml_node_t *v) {
        return i == 0 ? boolean(p, v, key, &p->c->http2) : headers(p, v);
}

/*
 * A bcrypt hash as crypt(3) and htpasswd -B write it: "$2a$", "$2b$" or
 * "$2y$", a two-digit cost 04..31, "$", 53 characters of bcrypt's base64.
 */
static bool is_bcrypt(const char *h) {
        static const char alphabet[] = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        unsigned cost;

        if (strlen(h) != 60 || h[0] != '$' || h[1] != '2' || !strchr("aby", h[2]) || h[3] != '$' ||
            h[4] < '0' || h[4] > '9' || h[5] < '0' || h[5] > '9' || h[6] != '$')
                return false;
        cost = (unsigned) (h[4] - '0') * 10 + (unsigned) (h[5] - '0');
        if (cost < 4 || cost > 31)
                return false;
        return strspn(h + 7, alphabet) == 53;
}

static int users(struct parser *p, const yaml_node_t *n) {
        struct web_config *c = p->c;

        if (is_null(n))
                return 0;
        if (n->type != YAML_MAPPING_NODE)
                return fail(p, n, "basic_auth_users: a mapping of user names to bcrypt hashes was expected");
        for (yaml_node_pair_t *pair = n->data.mapping.pairs.start; pair < n->data.mapping.pairs.top; pair++) {
                const yaml_node_t *k = node(p, pair->key), *v = node(p, pair->value);
                const char *name, *hash;
                int r;

                r = scalar(p, k, "basic_auth_users", WEB_CONFIG_VALUE_MAX, &name);
                if (r < 0)
                        return r;
                /* RFC 7617: the user name ends at the first colon. */
                if (strchr(name, ':'))
                        return fail(p, k, "basic_auth_users: '%s': a user name cannot hold a colon", name);
                for (size_t j = 0; j < c->n_users; j++)
                        if (streq(c->users[j].name, name))
                                return fail(p, k, "basic_auth_users: '%s' given twice", name);
                if (c->n_users == WEB_CONFIG_USERS_MAX)
                        return fail(p, k, "basic_auth_users: more than %d users", WEB_CONFIG_USERS_MAX);
                r = scalar(p, v, name, WEB_CONFIG_VALUE_MAX, &hash);
                if (r < 0)
                        return r;
                if (!is_bcrypt(hash))
                        return fail(p, v, "basic_auth_users: '%s': not a bcrypt hash (as htpasswd -nBC 10 "
                                          "USER writes it: $2y$10$ and 53 characters)", name);
                c->users = xrealloc(c->users, (c->n_users + 1) * sizeof(*c->users));
                c->users[c->n_users++] = (struct web_user) { xstrdup(name), xstrdup(hash) };
        }
        return 0;
}

static const char *const rate_keys[] = { "burst", "interval", NULL };

static int rate_key(struct parser *p, size_t i, const char *key, const yaml_node_t *v) {
        const char *s = NULL;
        int r;

        r = scalar(p, v, key, WEB_CONFIG_VALUE_MAX, &s);
        if (r < 0)
                return r;
        if (i == 0 && (safe_atou32(s, &p->c->rate_burst) < 0 || p->c->rate_burst > 1000000))
                return fail(p, v, "burst: '%s' is not a count of requests (0..1000000)", s);
        if (i == 1 && (parse_duration_usec(s, &p->c->rate_interval_usec) < 0 ||
                       p->c->rate_interval_usec > 3600 * USEC_PER_SEC))
                return fail(p, v, "interval: '%s' is not a duration of at most 1h (such as 100ms or 1s)", s);
        return 0;
}

enum {
        TOP_TLS_SERVER_CONFIG,
        TOP_HTTP_SERVER_CONFIG,
        TOP_BASIC_AUTH_USERS,
        TOP_RATE_LIMIT,
        _TOP_KEY_MAX,
};

static const char *const top_keys[_TOP_KEY_MAX + 1] = {
        [TOP_TLS_SERVER_CONFIG] = "tls_server_config",
        [TOP_HTTP_SERVER_CONFIG] = "http_server_config",
        [TOP_BASIC_AUTH_USERS] = "basic_auth_users",
        [TOP_RATE_LIMIT] = "rate_limit",
};

static int top_key(struct parser *p, size_t i, const char *key, const yaml_node_t *v) {
        switch (i) {
        case TOP_TLS_SERVER_CONFIG: return each_key(p, v, key, tls_keys, tls_key);
        case TOP_HTTP_SERVER_CONFIG: return each_key(p, v, key, http_keys, http_key);
        case TOP_BASIC_AUTH_USERS: return users(p, v);
        case TOP_RATE_LIMIT: return each_key(p, v, key, rate_keys, rate_key);
        default: abort();
        }
}

/* What the toolkit checks of the TLS settings as a whole (ConfigToTLSConfig). */
static int check_tls(struct parser *p, const yaml_node_t *root) {
        struct web_tls *t = &p->c->tls;

        /* Checked without certificates too: max_version TLS10 alone is a mistake, whatever it meant. */
        if (t->min_version > t->max_version)
                return fail(p, root, "tls_server_config: min_version %s is above max_version %s",
                            tls_version_names[t->min_version], tls_version_names[t->max_version]);
        t->enabled = t->cert_file || t->cert || t->key_file || t->key || t->client_ca_file || t->client_ca ||
                     t->client_auth != WEB_CLIENT_AUTH_NONE;
        if (!t->enabled)
                return 0;
        if (!t->cert_file && !t->cert)
                return fail(p, root, "tls_server_config: missing one of cert or cert_file");
        if (!t->key_file && !t->key)
                return fail(p, root, "tls_server_config: missing one of key or key_file");
        if ((t->cert_file && t->cert) || (t->key_file && t->key) || (t->client_ca_file && t->client_ca))
                return fail(p, root, "tls_server_config: give a certificate, key or CA inline or as a file, "
                                     "not both");
        if ((t->client_ca_file || t->client_ca) && t->client_auth == WEB_CLIENT_AUTH_NONE)
                return fail(p, root, "tls_server_config: client CA's have been configured without a Client "
                                     "Auth Policy (client_auth_type)");
        /* Go would verify against the system's CAs; a client CA of the operator's is safer and says what is meant. */
        if ((t->client_auth == WEB_CLIENT_AUTH_VERIFY_IF_GIVEN || t->client_auth == WEB_CLIENT_AUTH_REQUIRE_AND_VERIFY) &&
            !t->client_ca_file && !t->client_ca)
                return fail(p, root, "tls_server_config: client_auth_type %s needs client_ca_file (the CA "
                                     "that signs the clients' certificates)", client_auth_names[t->client_auth]);
        return 0;
}

int web_config_parse(const char *buf, size_t len, const char *dir, struct web_config **ret, char *err,
                     size_t errlen) {
        _cleanup_(web_config_unrefp) struct web_config *c = NULL;
        struct parser p = { .dir = dir, .err = err, .errlen = errlen };
        yaml_parser_t parser;
        yaml_node_t *root;
        int r;

        if (len > WEB_CONFIG_FILE_MAX) {
                snprintf(err, errlen, "more than %d bytes", WEB_CONFIG_FILE_MAX);
                return -EFBIG;
        }
        c = xcalloc(1, sizeof(*c));
        c->n_ref = 1;
        /* The toolkit's defaults (web/tls_config.go, getConfig). */
        c->tls.min_version = WEB_TLS12;
        c->tls.max_version = WEB_TLS13;
        c->tls.prefer_server_cipher_suites = true;
        c->http2 = true;
        p.c = c;

        if (!yaml_parser_initialize(&parser))
                oom();
        yaml_parser_set_input_string(&parser, (const unsigned char *) buf, len);
        if (!yaml_parser_load(&parser, &p.doc)) {
                snprintf(err, errlen, "line %zu: %s%s%s", parser.problem_mark.line + 1,
                         parser.problem ?: "invalid YAML", parser.context ? " " : "", parser.context ?: "");
                yaml_parser_delete(&parser);
                return -EINVAL;
        }
        root = yaml_document_get_root_node(&p.doc);
        r = each_key(&p, root, "the web configuration", top_keys, top_key);
        if (r >= 0)
                r = check_tls(&p, root);
        if (r >= 0) {
                yaml_document_t next;

                /* The toolkit reads one document; a second is a mistake worth saying. */
                if (!yaml_parser_load(&parser, &next)) {
                        snprintf(err, errlen, "line %zu: %s", parser.problem_mark.line + 1,
                                 parser.problem ?: "invalid YAML");
                        r = -EINVAL;
                } else {
                        if (yaml_document_get_root_node(&next))
                                r = fail(&p, yaml_document_get_root_node(&next),
                                         "a second YAML document: the web configuration is one");
                        yaml_document_delete(&next);
                }
        }
        yaml_document_delete(&p.doc);
        yaml_parser_delete(&parser);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}

static void web_tls_done(struct web_tls *t) {
        free(t->cert_file);
        free(t->key_file);
        free(t->client_ca_file);
        free(t->cert);
        if (t->key)
                explicit_bzero(t->key, strlen(t->key));
        free(t->key);
        free(t->client_ca);
        for (size_t i = 0; i < t->n_curves; i++)
                free(t->curves[i]);
        for (size_t i = 0; i < t->n_allowed_sans; i++)
                free(t->allowed_sans[i]);
        free(t->cert_pem);
        if (t->key_pem)
                explicit_bzero(t->key_pem, strlen(t->key_pem));
        free(t->key_pem);
        free(t->client_ca_pem);
}

struct web_config *web_config_ref(struct web_config *c) {
        if (c)
                __atomic_add_fetch(&c->n_ref, 1, __ATOMIC_RELAXED);
        return c;
}

struct web_config *web_config_unref(struct web_config *c) {
        if (!c || __atomic_sub_fetch(&c->n_ref, 1, __ATOMIC_ACQ_REL) > 0)
                return NULL;
        web_tls_done(&c->tls);
        for (size_t i = 0; i < c->n_users; i++) {
                free(c->users[i].name);
                free(c->users[i].hash);
        }
        free(c->users);
        for (size_t i = 0; i < c->n_headers; i++) {
                free(c->headers[i].name);
                free(c->headers[i].value);
        }
        free(c->headers);
        free(c);
        return NULL;
}

/* Why read_regular_file() failed, for a person. */
static const char *read_error(int r) {
        return r == -EFBIG ? "larger than 1 MiB" : r == -EBADFD ? "not a regular file" : strerror(-r);
}

/* A PEM file the TLS settings name, or its inline text, as a string for GnuTLS. */
static int read_pem(const char *key, const char *file, const char *text, char **ret, char *err, size_t errlen) {
        size_t size;
        int r;

        if (!file) {
                *ret = xstrdup(text);
                return 0;
        }
        r = read_regular_file(file, WEB_CONFIG_FILE_MAX, ret, &size);
        if (r < 0) {
                snprintf(err, errlen, "tls_server_config: %s %s: %s", key, file, read_error(r));
                return r;
        }
        return 0;
}

static int check_credentials(struct web_tls *t, char *err, size_t errlen) {
        gnutls_certificate_credentials_t cred;
        gnutls_datum_t cert = { (unsigned char *) t->cert_pem, (unsigned) strlen(t->cert_pem) };
        gnutls_datum_t key = { (unsigned char *) t->key_pem, (unsigned) strlen(t->key_pem) };
        int g, r = 0;

        if (gnutls_certificate_allocate_credentials(&cred) < 0)
                oom();
        /* GnuTLS checks that the key is the certificate's (GNUTLS_E_CERTIFICATE_KEY_MISMATCH). */
        g = gnutls_certificate_set_x509_key_mem(cred, &cert, &key, GNUTLS_X509_FMT_PEM);
        if (g < 0) {
                snprintf(err, errlen, "tls_server_config: the certificate (%s) and key (%s): %s",
                         t->cert_file ?: "cert", t->key_file ?: "key", gnutls_strerror(g));
                r = -EINVAL;
        } else if (t->client_ca_pem) {
                gnutls_datum_t ca = { (unsigned char *) t->client_ca_pem, (unsigned) strlen(t->client_ca_pem) };

                g = gnutls_certificate_set_x509_trust_mem(cred, &ca, GNUTLS_X509_FMT_PEM);
                if (g <= 0) {
                        snprintf(err, errlen, "tls_server_config: client CA (%s): %s",
                                 t->client_ca_file ?: "client_ca",
                                 g == 0 ? "no certificate in it" : gnutls_strerror(g));
                        r = -EINVAL;
                }
        }
        gnutls_certificate_free_credentials(cred);
        return r;
}

static bool suite_listed(const struct web_tls *t, uint16_t id) {
        for (size_t i = 0; i < t->n_cipher_suites; i++)
                if (t->cipher_suites[i] == id)
                        return true;
        return false;
}

/* The suite GnuTLS numbers `id` by its IANA number, or -1. */
static ssize_t gnutls_suite(uint16_t id, gnutls_kx_algorithm_t *ret_kx, gnutls_cipher_algorithm_t *ret_cipher,
                            gnutls_mac_algorithm_t *ret_mac, const char **ret_name) {
        unsigned char cs[2];

        for (size_t i = 0;; i++) {
                const char *name = gnutls_cipher_suite_info(i, cs, ret_kx, ret_cipher, ret_mac, NULL);

                if (!name)
                        return -1;
                if (cs[0] == (id >> 8) && cs[1] == (id & 0xff)) {
                        *ret_name = name;
                        return (ssize_t) i;
                }
        }
}

/* ":+item" unless the string has it already (a cipher or MAC that several suites share). */
static void priority_add(struct strbuf *b, const char *item) {
        size_t n = strlen(item);

        for (const char *s = strstr(b->buf, ":+"); s; s = strstr(s + 2, ":+"))
                if (strncmp(s + 2, item, n) == 0 && (s[2 + n] == ':' || s[2 + n] == '\0'))
                        return;
        strbuf_printf(b, ":+%s", item);
}

/*
 * GnuTLS's priority string for the settings: the versions, the groups, the
 * cipher suites. GnuTLS enables suites by key exchange, cipher and MAC, so a
 * list is honoured only where those make up exactly the listed suites; else
 * an error names a suite that would come along.
 */
static int build_priorities(struct web_tls *t, char *err, size_t errlen) {
        struct strbuf b = STRBUF_INIT;
        gnutls_priority_t prio;
        const char *errpos = NULL;
        int g, r = 0;

        strbuf_puts(&b, "NORMAL:-VERS-ALL");
        for (int v = (int) t->max_version; v >= (int) t->min_version; v--)
                strbuf_printf(&b, ":+%s", tls_version_priorities[v]);
        if (t->n_curves > 0) {
                strbuf_puts(&b, ":-GROUP-ALL");
                for (size_t i = 0; i < t->n_curves; i++)
                        priority_add(&b, t->curves[i]);
        }
        if (t->n_cipher_suites > 0) {
                strbuf_puts(&b, ":-CIPHER-ALL:-MAC-ALL:-KX-ALL");
                for (size_t i = 0; i < t->n_cipher_suites; i++) {
                        gnutls_kx_algorithm_t kx;
                        gnutls_cipher_algorithm_t cipher;
                        gnutls_mac_algorithm_t mac;
                        const char *name;

                        if (gnutls_suite(t->cipher_suites[i], &kx, &cipher, &mac, &name) < 0) {
                                snprintf(err, errlen, "tls_server_config: cipher_suites: suite 0x%04x is not "
                                                      "available in GnuTLS %s", t->cipher_suites[i],
                                         gnutls_check_version(NULL));
                                r = -EOPNOTSUPP;
                                goto out;
                        }
                        priority_add(&b, gnutls_cipher_get_name(cipher));
                        priority_add(&b, gnutls_mac_get_name(mac));
                        /* TLS 1.3's suites have no key exchange of their own. */
                        if (kx != GNUTLS_KX_UNKNOWN)
                                priority_add(&b, gnutls_kx_get_name(kx));
                }
        }
        if (t->prefer_server_cipher_suites)
                strbuf_puts(&b, ":%SERVER_PRECEDENCE");
        if (b.len >= sizeof(t->priorities)) {
                snprintf(err, errlen, "tls_server_config: too many cipher suites and curves");
                r = -E2BIG;
                goto out;
        }
        g = gnutls_priority_init(&prio, b.buf, &errpos);
        if (g < 0) {
                snprintf(err, errlen, "tls_server_config: GnuTLS refuses the settings at '%.40s': %s",
                         errpos ?: b.buf, gnutls_strerror(g));
                r = -EINVAL;
                goto out;
        }
        for (unsigned i = 0; t->n_cipher_suites > 0; i++) {
                unsigned sidx;
                unsigned char cs[2];
                const char *name;

                g = gnutls_priority_get_cipher_suite_index(prio, i, &sidx);
                if (g == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
                        break;
                if (g < 0)
                        continue; /* an index this version of the library does not implement */
                name = gnutls_cipher_suite_info(sidx, cs, NULL, NULL, NULL, NULL);
                /* TLS 1.3's (0x13xx) follow from the ciphers; Go ignores them in a list too. */
                if (name && cs[0] != 0x13 && !suite_listed(t, (uint16_t) (cs[0] << 8 | cs[1]))) {
                        snprintf(err, errlen, "tls_server_config: cipher_suites: GnuTLS enables suites by key "
                                              "exchange, cipher and MAC, and these would enable %s (0x%02x%02x) "
                                              "too: list it as well, or fewer", name, cs[0], cs[1]);
                        r = -EINVAL;
                        break;
                }
        }
        gnutls_priority_deinit(prio);
        if (r == 0)
                memcpy(t->priorities, b.buf, b.len + 1);
out:
        strbuf_done(&b);
        return r;
}

int web_config_load(const char *path, struct web_config **ret, char *err, size_t errlen) {
        _cleanup_(web_config_unrefp) struct web_config *c = NULL;
        _cleanup_free_ char *data = NULL, *dir_copy = NULL;
        char msg[MESSAGE_MAX];
        struct web_tls *t;
        size_t size;
        int r;

        r = read_regular_file(path, WEB_CONFIG_FILE_MAX, &data, &size);
        if (r < 0) {
                snprintf(err, errlen, "%s: %s", path, read_error(r));
                return r;
        }
        dir_copy = xstrdup(path);
        r = web_config_parse(data, size, dirname(dir_copy), &c, msg, sizeof(msg));
        if (r < 0) {
                snprintf(err, errlen, "%s: %s", path, msg);
                return r;
        }
        t = &c->tls;
        if (t->enabled) {
                r = read_pem("cert_file", t->cert_file, t->cert, &t->cert_pem, msg, sizeof(msg));
                if (r >= 0)
                        r = read_pem("key_file", t->key_file, t->key, &t->key_pem, msg, sizeof(msg));
                if (r >= 0 && (t->client_ca_file || t->client_ca))
                        r = read_pem("client_ca_file", t->client_ca_file, t->client_ca, &t->client_ca_pem, msg,
                                     sizeof(msg));
                if (r >= 0)
                        r = check_credentials(t, msg, sizeof(msg));
                if (r >= 0)
                        r = build_priorities(t, msg, sizeof(msg));
                if (r < 0) {
                        snprintf(err, errlen, "%s: %s", path, msg);
                        return r;
                }
        }
        *ret = TAKE_PTR(c);
        return 0;
}

static bool streq_null(const char *a, const char *b) {
        return (!a && !b) || (a && b && streq(a, b));
}

bool web_config_tls_equal(const struct web_config *a, const struct web_config *b) {
        const struct web_tls *x = a ? &a->tls : NULL, *y = b ? &b->tls : NULL;
        bool ex = x && x->enabled, ey = y && y->enabled;

        if (!ex || !ey)
                return ex == ey;
        /* What the server hands to GnuTLS; the rest it checks per request. */
        return streq_null(x->cert_pem, y->cert_pem) && streq_null(x->key_pem, y->key_pem) &&
               streq_null(x->client_ca_pem, y->client_ca_pem) && streq(x->priorities, y->priorities) &&
               (x->client_auth == WEB_CLIENT_AUTH_NONE) == (y->client_auth == WEB_CLIENT_AUTH_NONE);
}

bool web_config_authenticates(const struct web_config *c) {
        return c && (c->n_users > 0 || (c->tls.enabled && c->tls.client_auth == WEB_CLIENT_AUTH_REQUIRE_AND_VERIFY));
}

const char *web_client_auth_to_string(enum web_client_auth a) {
        return a < _WEB_CLIENT_AUTH_MAX ? client_auth_names[a] : NULL;
}

const char *web_tls_version_to_string(enum web_tls_version v) {
        return v < _WEB_TLS_VERSION_MAX ? tls_version_names[v] : NULL;
}
