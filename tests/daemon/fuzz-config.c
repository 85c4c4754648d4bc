/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Config parser over arbitrary bytes, as config_load() hands it a file's
 * contents (NUL bytes included): never crash, every error says where, and
 * no error message carries a raw control or non-ASCII byte.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct config_error err = {};
        struct config c;
        int r;

        if (size > CONFIG_FILE_MAX)
                return 0;

        config_init(&c);
        r = config_parse_buffer(&c, data, size, "fuzz.conf", &err);
        if ((r < 0) != (err.n > 0))
                abort(); /* an error is reported exactly when the parse fails */
        for (unsigned i = 0; i < MIN(err.n, (unsigned) CONFIG_ERRORS_MAX); i++) {
                if (strncmp(err.msg[i], "fuzz.conf:", strlen("fuzz.conf:")) != 0)
                        abort(); /* every parse error names file:line */
                for (const char *p = err.msg[i]; *p; p++)
                        if ((unsigned char) *p < 0x20 || (unsigned char) *p >= 0x7f)
                                abort(); /* escaped */
        }
        if (r == 0 && (c.http.max_connections < 1 || c.pmu.interval_usec == 0 ||
                       c.store.max_memory_bytes < (UINT64_C(1) << 20) ||
                       c.spe.period < CONFIG_SPE_PERIOD_MIN || c.spe.period > CONFIG_SPE_PERIOD_MAX ||
                       c.spe.aux_buffer < CONFIG_SPE_AUX_BUFFER_MIN || (c.spe.aux_buffer & (c.spe.aux_buffer - 1)) ||
                       c.spe.data_buffer == 0 || (c.spe.data_buffer & (c.spe.data_buffer - 1))))
                abort(); /* accepted values respect the table's bounds */
        /* The cross-key checks run on whatever was accepted, and fail only for their reasons. */
        if (r == 0 && config_check(&c, "fuzz.conf", &err) < 0 && config_store_bytes(&c) <= c.store.max_memory_bytes &&
            c.spe.watermark < c.spe.aux_buffer &&
            !c.push.basic_auth_user[0] == !c.push.basic_auth_password_file[0] &&
            !(c.push.basic_auth_user[0] && c.push.bearer_token_file[0]) &&
            !(c.push.url[0] && c.push.interval_usec + c.push.timeout_usec >= c.store.epoch_usec * c.store.epochs))
                abort();
        return 0;
}
