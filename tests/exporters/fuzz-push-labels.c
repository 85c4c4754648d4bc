/* SPDX-License-Identifier: GPL-2.0-or-later */
/* "[push] labels" over arbitrary bytes: never crash; what is accepted is within the store's limits
 * and encodes, with the labels armprofd adds, into a PushRequest push_request_encode() takes. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "push-request.h"
#include "strbuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct push_label all[PUSH_LABELS_MAX], *l = NULL;
        struct strbuf profile = { (char *) "p", 1, 0 }, out = STRBUF_INIT;
        const char *ids[] = { "id" };
        char err[MESSAGE_MAX];
        size_t n = 0;
        char *s;
        int r;

        if (size > PUSH_LABELS_TEXT_MAX + 1)
                return 0;
        s = malloc(size + 1);
        if (!s)
                return 0;
        memcpy(s, data, size);
        s[size] = '\0';
        r = push_labels_parse(s, &l, &n, err, sizeof(err));
        if (r != 0 && r != -EINVAL)
                abort();
        if (r < 0) {
                if (!err[0] || strlen(err) >= sizeof(err))
                        abort();
                free(s);
                return 0;
        }
        if (n > PUSH_EXTRA_LABELS_MAX || (n == 0) != (l == NULL))
                abort();
        all[0] = (struct push_label) { (char *) "__name__", (char *) "process_cpu" };
        all[1] = (struct push_label) { (char *) "__delta__", (char *) "false" };
        all[2] = (struct push_label) { (char *) "service_name", (char *) "svc" };
        all[3] = (struct push_label) { (char *) "host", (char *) "h" };
        all[4] = (struct push_label) { (char *) "source", (char *) "spe" };
        for (size_t i = 0; i < n; i++) {
                if (push_label_name_check(l[i].name) < 0 || !l[i].value[0] || strchr(l[i].value, ',') ||
                    strlen(l[i].value) > PUSH_LABEL_VALUE_MAX)
                        abort();
                all[5 + i] = l[i];
        }
        struct push_series series = { all, 5 + n, &profile, ids, 1 };
        if (push_request_encode(&series, 1, &out, err, sizeof(err)) != 0)
                abort();
        strbuf_done(&out);
        push_labels_free(l, n);
        free(s);
        return 0;
}
