/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The web configuration parser (exporters/web-config.c) over arbitrary
 * bytes: never crash, never leak; a refusal always says which line; an
 * accepted config keeps its bounds (users, list lengths) and only headers
 * the toolkit allows.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "web-config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct web_config *c = NULL;
        char err[MESSAGE_MAX] = "";
        int r;

        r = web_config_parse((const char *) data, size, "/etc/armprofd", &c, err, sizeof(err));
        if (r < 0) {
                if (c || (r != -EFBIG && strncmp(err, "line ", 5) != 0))
                        abort();
                return 0;
        }
        if (!c || c->n_users > WEB_CONFIG_USERS_MAX || c->tls.n_cipher_suites > WEB_CONFIG_LIST_MAX ||
            c->tls.n_curves > WEB_CONFIG_LIST_MAX || c->tls.n_allowed_sans > WEB_CONFIG_LIST_MAX ||
            c->tls.min_version > c->tls.max_version)
                abort();
        for (size_t i = 0; i < c->n_users; i++)
                if (strlen(c->users[i].hash) != 60 || strchr(c->users[i].name, ':'))
                        abort();
        for (size_t i = 0; i < c->n_headers; i++)
                if (strpbrk(c->headers[i].value, "\r\n"))
                        abort();
        if (c->tls.cert_file && c->tls.cert_file[0] != '/')
                abort();
        web_config_unref(c);
        return 0;
}
