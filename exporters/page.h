/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The browser's pages: a view (views.h) as an HTML document with its tables
 * (sortable by their header cells), latency histograms and per-CPU heat
 * strips as inline SVG drawn here, a window selector and links between the
 * views. No framework and nothing from another host: one stylesheet and one
 * small script, both served by the daemon under /static/, and a
 * Content-Security-Policy that allows nothing else (no inline script or
 * style, no frames, no form posting elsewhere).
 */

#include "strbuf.h"
#include "views.h"

/* Every page's policy: only the daemon's own script, style and images. */
#define PAGE_CSP                                                                                    \
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; base-uri 'none'; " \
        "form-action 'none'; frame-ancestors 'none'"

#define PAGE_STYLE_PATH "/static/armprofd.css"
#define PAGE_SCRIPT_PATH "/static/armprofd.js"
/* Where browsers look for a site's icon, even on a JSON answer: an SVG. */
#define PAGE_ICON_PATH "/favicon.ico"

struct page_request {
        const char *path;   /* "/hotlines" */
        const char *window; /* the window shown, as asked ("1m" when not given); NULL: no window selector */
        /* The rest of the query (limit, pid, cgroup, all) as name/value pairs, NULL-terminated; NULL none. */
        const char *const *keep;
};

/* A view as a whole page. */
void page_render_view(const struct view *v, const struct page_request *req, struct strbuf *out);

/* "/": every view, the machine-readable endpoints, and the daemon's version. */
void page_render_index(const char *host, struct strbuf *out);

/* The static files: their body and content type; NULL for another path. */
const char *page_static(const char *path, const char **ret_content_type);
