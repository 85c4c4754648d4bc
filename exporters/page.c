/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "page.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "build-config.h"
#include "macro.h"

static const char style[] =
        ":root{color-scheme:light dark;--fg:#1b1f24;--bg:#fff;--mute:#59636e;--line:#d1d9e0;--head:#f6f8fa;"
        "--bar:#3572b0;--accent:#0b63c5}\n"
        "@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--mute:#9198a1;--line:#30363d;"
        "--head:#161b22;--bar:#4c8fd6;--accent:#58a6ff}}\n"
        "body{font:14px/1.45 system-ui,sans-serif;color:var(--fg);background:var(--bg);margin:0}\n"
        "header{background:var(--head);border-bottom:1px solid var(--line);padding:.5em 1em}\n"
        "header nav a{margin-right:1.2em;color:var(--accent);text-decoration:none}\n"
        "header nav a[aria-current]{font-weight:600;color:var(--fg)}\n"
        "main{padding:0 1em 2em}\n"
        "h1{font-size:1.4em;margin:.6em 0 .3em}h2{font-size:1.1em;margin:1.4em 0 .2em}\n"
        ".note,.formats,.windows{color:var(--mute);margin:.2em 0}\n"
        ".windows a,.formats a{color:var(--accent);margin:0 .25em}\n"
        ".windows a[aria-current]{font-weight:700;color:var(--fg);text-decoration:none}\n"
        "dl.facts{display:grid;grid-template-columns:max-content auto;gap:.1em 1em;margin:.6em 0}\n"
        "dl.facts dt{color:var(--mute)}dl.facts dd{margin:0}\n"
        ".scroll{overflow-x:auto}\n"
        "table.sortable{border-collapse:collapse;font:12px/1.35 ui-monospace,monospace;white-space:nowrap}\n"
        "table.sortable th,table.sortable td{padding:.15em .6em;border-bottom:1px solid var(--line)}\n"
        "table.sortable thead{background:var(--head)}\n"
        "table.sortable tr.groups th{font-weight:400;color:var(--mute);border-bottom:0}\n"
        "table.sortable th button{font:inherit;font-weight:600;color:inherit;background:none;border:0;padding:0;"
        "cursor:pointer}\n"
        "table.sortable th[aria-sort=ascending] button::after{content:' \\25b4'}\n"
        "table.sortable th[aria-sort=descending] button::after{content:' \\25be'}\n"
        "table.sortable .num{text-align:right}table.sortable .txt{text-align:left}\n"
        "table.sortable tr.summary td{font-weight:600;background:var(--head);border-top:2px solid var(--line)}\n"
        "figure{margin:1em 0}figcaption{color:var(--mute)}\n"
        "svg text{font:11px system-ui,sans-serif;fill:var(--fg)}\n"
        "svg .bar{fill:var(--bar)}svg .axis{stroke:var(--line)}\n";

/*
 * Sorting: a click on a header cell orders each <tbody> by that column
 * (numbers by their data-v, the rest as text), descending first; summary
 * rows stay at the head of their block.
 */
static const char script[] =
        "'use strict';\n"
        "function cellKey(td) {\n"
        "  return td.dataset.v !== undefined ? parseFloat(td.dataset.v) : td.textContent;\n"
        "}\n"
        "function sortBy(table, col, th) {\n"
        "  const desc = th.getAttribute('aria-sort') !== 'descending';\n"
        "  for (const h of th.parentNode.cells) h.setAttribute('aria-sort', 'none');\n"
        "  th.setAttribute('aria-sort', desc ? 'descending' : 'ascending');\n"
        "  for (const body of table.tBodies) {\n"
        "    const rows = Array.from(body.rows).filter((r) => !r.classList.contains('summary'));\n"
        "    rows.sort((a, b) => {\n"
        "      const x = cellKey(a.cells[col]), y = cellKey(b.cells[col]);\n"
        "      const c = typeof x === 'number' && typeof y === 'number' ? x - y\n"
        "        : String(x).localeCompare(String(y), undefined, { numeric: true });\n"
        "      return desc ? -c : c;\n"
        "    });\n"
        "    for (const r of rows) body.appendChild(r);\n"
        "  }\n"
        "}\n"
        "for (const table of document.querySelectorAll('table.sortable')) {\n"
        "  const head = table.tHead.rows[table.tHead.rows.length - 1];\n"
        "  Array.from(head.cells).forEach((th, col) => {\n"
        "    const b = th.querySelector('button');\n"
        "    if (b) b.addEventListener('click', () => sortBy(table, col, th));\n"
        "  });\n"
        "}\n";

/* A browser asks for /favicon.ico on every page: a 404 there is an error in its console. */
static const char icon[] =
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 16 16\">"
        "<rect x=\"1\" y=\"9\" width=\"3\" height=\"6\" fill=\"#3572b0\"/>"
        "<rect x=\"6\" y=\"4\" width=\"3\" height=\"11\" fill=\"#3572b0\"/>"
        "<rect x=\"11\" y=\"1\" width=\"3\" height=\"14\" fill=\"#3572b0\"/></svg>\n";

const char *page_static(const char *path, const char **ret_content_type) {
        if (streq(path, PAGE_ICON_PATH)) {
                *ret_content_type = "image/svg+xml";
                return icon;
        }
        if (streq(path, PAGE_STYLE_PATH)) {
                *ret_content_type = "text/css; charset=utf-8";
                return style;
        }
        if (streq(path, PAGE_SCRIPT_PATH)) {
                *ret_content_type = "text/javascript; charset=utf-8";
                return script;
        }
        return NULL;
}

static const struct {
        const char *path, *name, *what;
} views[] = {
        { "/hotlines", "Hot lines", "cache lines that bounce between cores: perf c2c's tables, continuously" },
        { "/hotpcs", "Hot PCs", "the hottest sampled instructions, by op and event" },
        { "/latency", "Latency", "latency quantiles and histograms by op and data source" },
        { "/counters", "Counters", "per-CPU PMU counts, rates and ratios: perf stat -A" },
};

/* A query value as a URL's (RFC 3986 unreserved characters kept, the rest %XX). */
static void url_escape(struct strbuf *out, const char *s) {
        for (; *s; s++) {
                unsigned char c = (unsigned char) *s;

                if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-._~/", c))
                        strbuf_putc(out, (char) c);
                else
                        strbuf_printf(out, "%%%02X", c);
        }
}

static void page_head(struct strbuf *out, const char *title, const char *current) {
        strbuf_puts(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>");
        html_escape(out, title);
        strbuf_puts(out, "</title>\n<link rel=\"icon\" href=\"" PAGE_ICON_PATH "\" type=\"image/svg+xml\">\n"
                         "<link rel=\"stylesheet\" href=\"" PAGE_STYLE_PATH "\">\n"
                         "<script src=\"" PAGE_SCRIPT_PATH "\" defer></script>\n</head>\n<body>\n<header><nav>"
                         "<a href=\"/\"");
        if (streq(current, "/"))
                strbuf_puts(out, " aria-current=\"page\"");
        strbuf_puts(out, ">armprofd</a>");
        for (size_t i = 0; i < ELEMENTSOF(views); i++) {
                strbuf_printf(out, "<a href=\"%s\"%s>%s</a>", views[i].path,
                              streq(current, views[i].path) ? " aria-current=\"page\"" : "", views[i].name);
        }
        strbuf_puts(out, "<a href=\"/status\">Status</a><a href=\"/metrics\">Metrics</a></nav></header>\n<main>\n");
}

static void page_tail(struct strbuf *out) {
        strbuf_puts(out, "</main>\n</body>\n</html>\n");
}

/* href="PATH?window=W&name=value...&format=F" (format NULL: none), escaped for the attribute. */
static void link_query(struct strbuf *out, const struct page_request *req, const char *window, const char *format) {
        struct strbuf url = STRBUF_INIT;
        char sep = '?';

        strbuf_puts(&url, req->path);
        if (window) {
                strbuf_puts(&url, "?window=");
                url_escape(&url, window);
                sep = '&';
        }
        for (size_t i = 0; req->keep && req->keep[i]; i += 2) {
                strbuf_printf(&url, "%c%s=", sep, req->keep[i]);
                url_escape(&url, req->keep[i + 1]);
                sep = '&';
        }
        if (format)
                strbuf_printf(&url, "%cformat=%s", sep, format);
        strbuf_puts(out, "href=\"");
        html_escape(out, url.buf ?: "");
        strbuf_putc(out, '"');
        strbuf_done(&url);
}

static void window_selector(struct strbuf *out, const struct page_request *req) {
        static const char *const windows[] = { "10s", "1m", "10m", "1h", "all" };

        /* /counters has no window: no selector. */
        if (req->window) {
                strbuf_puts(out, "<p class=\"windows\">Window:");
                for (size_t i = 0; i < ELEMENTSOF(windows); i++) {
                        strbuf_puts(out, " <a ");
                        link_query(out, req, windows[i], NULL);
                        if (streq(req->window, windows[i]))
                                strbuf_puts(out, " aria-current=\"true\"");
                        strbuf_printf(out, ">%s</a>", windows[i]);
                }
                strbuf_puts(out, "</p>\n");
        }
        strbuf_puts(out, "<p class=\"formats\">This view as");
        strbuf_puts(out, " <a ");
        link_query(out, req, req->window, "text");
        strbuf_puts(out, ">text</a> <a ");
        link_query(out, req, req->window, "json");
        strbuf_puts(out, ">JSON</a></p>\n");
}

/* 1, 2, 4, ... 512, 1k, 2k, ... 64k: a bucket's bound short enough to sit under its bar. */
static void short_count(char *buf, size_t len, uint64_t v) {
        if (v >= 1024 && v % 1024 == 0)
                snprintf(buf, len, "%" PRIu64 "k", v / 1024);
        else
                snprintf(buf, len, "%" PRIu64, v);
}

#define HIST_W 720
#define HIST_H 220
#define HIST_PAD_LEFT 56
#define HIST_PAD_BOTTOM 28
#define HIST_PAD_TOP 10

static void render_histogram(const struct view_histogram *h, size_t index, struct strbuf *out) {
        double plot_w = HIST_W - HIST_PAD_LEFT - 8, plot_h = HIST_H - HIST_PAD_BOTTOM - HIST_PAD_TOP;
        double bw = h->n ? plot_w / (double) h->n : plot_w;
        uint64_t max = 0;

        for (size_t i = 0; i < h->n; i++)
                max = MAX(max, h->count[i]);
        strbuf_printf(out, "<figure>\n<svg class=\"histogram\" id=\"histogram-%zu\" role=\"img\" width=\"%d\" "
                           "height=\"%d\" viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\" aria-label=\"",
                      index, HIST_W, HIST_H, HIST_W, HIST_H);
        html_escape(out, h->title);
        strbuf_puts(out, "\">\n");
        strbuf_printf(out, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n", HIST_PAD_LEFT,
                      HIST_H - HIST_PAD_BOTTOM, HIST_W - 8, HIST_H - HIST_PAD_BOTTOM);
        strbuf_printf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%" PRIu64 "</text>\n", HIST_PAD_LEFT - 4,
                      HIST_PAD_TOP + 10, max);
        strbuf_printf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">0</text>\n", HIST_PAD_LEFT - 4,
                      HIST_H - HIST_PAD_BOTTOM);
        for (size_t i = 0; i < h->n; i++) {
                double bh = max ? plot_h * (double) h->count[i] / (double) max : 0;
                double x = HIST_PAD_LEFT + bw * (double) i;
                char le[32];

                /* A bucket that holds anything is at least one pixel tall: a rare slow access stays visible. */
                if (h->count[i] && bh < 1)
                        bh = 1;
                short_count(le, sizeof(le), h->le[i]);
                strbuf_printf(out, "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">"
                                   "<title>&lt;= %s cycles: %" PRIu64 "</title></rect>\n",
                              x + 1, HIST_H - HIST_PAD_BOTTOM - bh, MAX(bw - 2, 1.0), bh, le, h->count[i]);
                strbuf_printf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x + bw / 2,
                              HIST_H - HIST_PAD_BOTTOM + 14, le);
        }
        strbuf_printf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">cycles &lt;=</text>\n", HIST_W - 8,
                      HIST_H - 2);
        strbuf_puts(out, "</svg>\n<figcaption>");
        html_escape(out, h->title);
        strbuf_puts(out, "</figcaption>\n</figure>\n");
}

#define STRIP_W 960
#define STRIP_CELL_MAX 48
#define STRIP_H 34

/* Blue, lighter for lower values: v in [0, 1]. */
static void strip_colour(double v, char *buf, size_t len) {
        int l = (int) lround(88 - 50 * v);

        snprintf(buf, len, "hsl(212,70%%,%d%%)", l);
}

static void render_strip(const struct view_strip *s, size_t index, struct strbuf *out) {
        double lo = INFINITY, hi = -INFINITY, cw;

        for (size_t i = 0; i < s->n; i++) {
                lo = MIN(lo, s->value[i]);
                hi = MAX(hi, s->value[i]);
        }
        cw = s->n ? MIN((double) STRIP_CELL_MAX, (double) STRIP_W / (double) s->n) : STRIP_CELL_MAX;
        strbuf_printf(out, "<figure>\n<svg class=\"heatstrip\" id=\"strip-%zu\" role=\"img\" width=\"%.0f\" "
                           "height=\"%d\" viewBox=\"0 0 %.0f %d\" xmlns=\"http://www.w3.org/2000/svg\" aria-label=\"",
                      index, cw * (double) s->n, STRIP_H, cw * (double) s->n, STRIP_H);
        html_escape(out, s->title);
        strbuf_puts(out, "\">\n");
        for (size_t i = 0; i < s->n; i++) {
                char colour[32];

                strip_colour(hi > lo ? (s->value[i] - lo) / (hi - lo) : 0.5, colour, sizeof(colour));
                strbuf_printf(out, "<rect x=\"%.1f\" y=\"0\" width=\"%.1f\" height=\"20\" fill=\"%s\">"
                                   "<title>CPU%u: %.4g</title></rect>\n",
                              cw * (double) i, MAX(cw - 1, 1.0), colour, s->cpu[i], s->value[i]);
                if (cw >= 16)
                        strbuf_printf(out, "<text x=\"%.1f\" y=\"32\" text-anchor=\"middle\">%u</text>\n",
                                      cw * (double) i + cw / 2, s->cpu[i]);
        }
        strbuf_puts(out, "</svg>\n<figcaption>");
        html_escape(out, s->title);
        strbuf_printf(out, " by CPU: %.4g (lightest) to %.4g (darkest)</figcaption>\n</figure>\n", lo, hi);
}

void page_render_view(const struct view *v, const struct page_request *req, struct strbuf *out) {
        page_head(out, v->title, req->path);
        strbuf_puts(out, "<h1>");
        html_escape(out, v->title);
        strbuf_puts(out, "</h1>\n");
        window_selector(out, req);
        strbuf_puts(out, "<dl class=\"facts\">\n");
        for (size_t i = 0; i < v->nfacts; i++) {
                strbuf_puts(out, "<dt>");
                html_escape(out, v->facts[i].name);
                strbuf_puts(out, "</dt><dd>");
                html_escape(out, v->facts[i].value);
                strbuf_puts(out, "</dd>\n");
        }
        strbuf_puts(out, "</dl>\n");
        for (size_t i = 0; i < v->nstrips; i++)
                render_strip(&v->strips[i], i, out);
        for (size_t i = 0; i < v->nsections; i++) {
                const struct view_section *s = &v->sections[i];
                char id[32];

                strbuf_puts(out, "<section>\n<h2>");
                html_escape(out, s->heading);
                strbuf_puts(out, "</h2>\n");
                if (s->note) {
                        strbuf_puts(out, "<p class=\"note\">");
                        html_escape(out, s->note);
                        strbuf_puts(out, "</p>\n");
                }
                snprintf(id, sizeof(id), "table-%zu", i);
                if (s->table.nrows == 0)
                        strbuf_puts(out, "<p class=\"note\">(none)</p>\n");
                else {
                        strbuf_puts(out, "<div class=\"scroll\">\n");
                        table_render_html(&s->table, id, out);
                        strbuf_puts(out, "</div>\n");
                }
                strbuf_puts(out, "</section>\n");
        }
        if (v->nhist)
                strbuf_puts(out, "<h2>Histograms</h2>\n");
        for (size_t i = 0; i < v->nhist; i++)
                render_histogram(&v->hist[i], i, out);
        page_tail(out);
}

void page_render_index(const char *host, struct strbuf *out) {
        static const struct {
                const char *path, *what;
        } raw[] = {
                { "/metrics", "Prometheus metrics (text 0.0.4, OpenMetrics, protobuf by Accept)" },
                { "/hotlines?window=1m&limit=20&format=json", "hot cache lines as JSON (protobuf by Accept)" },
                { "/hotpcs?window=1m&limit=50&format=json", "hot PCs as JSON" },
                { "/latency?window=1m&format=json", "latency as JSON" },
                { "/counters?format=json", "counters as JSON" },
                { "/debug/pprof/spe?window=1m", "pprof profile of the sampled operations of the window (go tool pprof)" },
                { "/debug/pprof/profile?seconds=5", "pprof profile collected over the next N seconds" },
                { "/status", "collectors, availability, versions, configuration (JSON)" },
                { "/healthz", "liveness of the collector loop" },
        };

        page_head(out, "armprofd", "/");
        strbuf_puts(out, "<h1>armprofd " ARMPROFD_VERSION " on ");
        html_escape(out, host ?: "this host");
        strbuf_puts(out, "</h1>\n<p class=\"note\">Always-on hardware profiler.</p>\n<h2>Views</h2>\n<ul>\n");
        for (size_t i = 0; i < ELEMENTSOF(views); i++)
                strbuf_printf(out, "<li><a href=\"%s\">%s</a>: %s (<a href=\"%s?format=text\">text</a>)</li>\n",
                              views[i].path, views[i].name, views[i].what, views[i].path);
        strbuf_puts(out, "</ul>\n<h2>For programs</h2>\n<ul>\n");
        for (size_t i = 0; i < ELEMENTSOF(raw); i++) {
                strbuf_puts(out, "<li><a href=\"");
                html_escape(out, raw[i].path);
                strbuf_puts(out, "\">");
                html_escape(out, raw[i].path);
                strbuf_puts(out, "</a>: ");
                html_escape(out, raw[i].what);
                strbuf_puts(out, "</li>\n");
        }
        strbuf_puts(out, "</ul>\n");
        page_tail(out);
}
