/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The views over any JSON document: the four builders take whatever shape
 * they are given (a field of the wrong type, a missing one, a string full of
 * markup or control characters: symbol names and cgroup paths come from
 * files on the host), and their renderings stay safe: the text holds no
 * control character but newlines, the page no markup but its own (one
 * script element, every '<' of the data escaped). The first byte picks the
 * builder; the rest is the document.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "macro.h"
#include "page.h"
#include "views.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_text(const struct strbuf *out) {
        for (size_t i = 0; i < out->len; i++)
                if (((unsigned char) out->buf[i] < 0x20 && out->buf[i] != '\n') || out->buf[i] == 0x7f)
                        abort();
}

static void check_page(const struct strbuf *out) {
        const char *p = out->buf;
        size_t scripts = 0;

        while ((p = strstr(p, "<script")))
                scripts++, p++;
        if (scripts != 1)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static int (*const build[])(const json_t *, const struct view_context *, struct view *) = {
                view_hotlines, view_hotpcs, view_latency, view_counters,
        };
        static const char *const keep[] = { "limit", "5", "cgroup", "/a b&<c>", NULL };
        struct view v = {};
        json_t *doc;

        if (size < 1)
                return 0;
        doc = json_loadb((const char *) data + 1, size - 1, JSON_DECODE_ANY, NULL);
        if (!doc)
                return 0;
        if (build[data[0] % ELEMENTSOF(build)](doc, &(struct view_context) { "h<o>st\x1b", "s\"rc", "1m" }, &v) == 0) {
                struct strbuf text = STRBUF_INIT, page = STRBUF_INIT;

                view_render_text(&v, &text);
                page_render_view(&v, &(struct page_request) { "/hotlines", "1m", keep }, &page);
                check_text(&text);
                check_page(&page);
                strbuf_done(&text);
                strbuf_done(&page);
        }
        view_done(&v);
        json_decref(doc);
        return 0;
}
