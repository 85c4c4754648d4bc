/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The web configuration file of the Prometheus exporter toolkit
 * (github.com/prometheus/exporter-toolkit, docs/web-configuration.md), the
 * YAML that node_exporter reads with --web.config.file:
 *
 *   tls_server_config:      cert_file, key_file (or cert, key inline),
 *                           client_auth_type, client_ca_file (or client_ca),
 *                           client_allowed_sans, min_version, max_version,
 *                           cipher_suites, curve_preferences,
 *                           prefer_server_cipher_suites
 *   http_server_config:     http2, headers
 *   basic_auth_users:       user: bcrypt hash
 *   rate_limit:             interval, burst
 *
 * The keys, their values and their defaults are the toolkit's; an unknown
 * key, a value of the wrong kind and a header the toolkit would refuse are
 * errors naming the line. Relative file names are relative to the file's
 * directory, as there.
 *
 * web_config_parse() reads the YAML only (a fuzz target); web_config_load()
 * also reads the certificate, key and CA files and checks them with GnuTLS,
 * so a config it returns can be served: a reload that fails keeps the old.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/* The file and each certificate, key or CA file (a CA bundle of a few hundred certificates fits). */
#define WEB_CONFIG_FILE_MAX (1024 * 1024)
#define WEB_CONFIG_USERS_MAX 1024
/* cipher_suites, curve_preferences, client_allowed_sans */
#define WEB_CONFIG_LIST_MAX 64
/* A user name, a header value, a SAN, a file name. */
#define WEB_CONFIG_VALUE_MAX 4096
/* gnutls priority string built from the TLS settings. */
#define WEB_CONFIG_PRIORITIES_MAX 1024

enum web_client_auth {
        WEB_CLIENT_AUTH_NONE,               /* NoClientCert (or absent) */
        WEB_CLIENT_AUTH_REQUEST,            /* RequestClientCert: asked for, not checked */
        WEB_CLIENT_AUTH_REQUIRE_ANY,        /* RequireAnyClientCert (RequireClientCert): one must come, not checked */
        WEB_CLIENT_AUTH_VERIFY_IF_GIVEN,    /* VerifyClientCertIfGiven */
        WEB_CLIENT_AUTH_REQUIRE_AND_VERIFY, /* RequireAndVerifyClientCert */
        _WEB_CLIENT_AUTH_MAX,
};

/* As the toolkit spells them: TLS10 .. TLS13. */
enum web_tls_version {
        WEB_TLS10,
        WEB_TLS11,
        WEB_TLS12,
        WEB_TLS13,
        _WEB_TLS_VERSION_MAX,
};

struct web_user {
        char *name;
        char *hash; /* "$2y$10$...": bcrypt, as htpasswd -nBC 10 writes it */
};

struct web_header {
        char *name;
        char *value;
};

struct web_tls {
        bool enabled; /* any TLS key given (the toolkit's IsEnabled) */
        char *cert_file, *key_file, *client_ca_file; /* absolute, or NULL */
        char *cert, *key, *client_ca;                /* inline PEM, or NULL */
        enum web_client_auth client_auth;
        enum web_tls_version min_version, max_version;
        uint16_t cipher_suites[WEB_CONFIG_LIST_MAX]; /* IANA numbers */
        size_t n_cipher_suites;
        char *curves[WEB_CONFIG_LIST_MAX]; /* GnuTLS group names, "GROUP-X25519" */
        size_t n_curves;
        bool prefer_server_cipher_suites;
        char *allowed_sans[WEB_CONFIG_LIST_MAX];
        size_t n_allowed_sans;

        /* Filled by web_config_load(): what the server hands to GnuTLS. */
        char *cert_pem, *key_pem, *client_ca_pem;
        char priorities[WEB_CONFIG_PRIORITIES_MAX];
};

struct web_config {
        unsigned n_ref;
        struct web_tls tls;
        struct web_user *users;
        size_t n_users;
        struct web_header *headers;
        size_t n_headers;
        bool http2; /* accepted for the toolkit's sake: this server speaks HTTP/1.1 */
        uint64_t rate_interval_usec; /* 0: no rate limit */
        uint32_t rate_burst;
};

/*
 * Parses the YAML in buf (len bytes; need not be NUL-terminated) into a new
 * config with one reference. dir is where relative file names point (NULL:
 * left as they are). On failure a negative errno and a message naming the
 * line in err.
 */
int web_config_parse(const char *buf, size_t len, const char *dir, struct web_config **ret, char *err,
                     size_t errlen);

/* Reads and parses path, then reads and checks the TLS files it names (web_config_parse plus GnuTLS). */
int web_config_load(const char *path, struct web_config **ret, char *err, size_t errlen);

struct web_config *web_config_ref(struct web_config *c);
struct web_config *web_config_unref(struct web_config *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct web_config *, web_config_unref);

/* Whether two loaded configs serve TLS the same way (same certificates, keys and settings). */
bool web_config_tls_equal(const struct web_config *a, const struct web_config *b);

/* Whether the config authenticates clients: basic_auth_users, or verified client certificates required. */
bool web_config_authenticates(const struct web_config *c);

const char *web_client_auth_to_string(enum web_client_auth a);
const char *web_tls_version_to_string(enum web_tls_version v);
