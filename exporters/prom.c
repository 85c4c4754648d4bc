/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "prom.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

static const char *const type_names[] = {
        [PROM_COUNTER] = "counter",
        [PROM_GAUGE] = "gauge",
        [PROM_HISTOGRAM] = "histogram",
        [PROM_UNTYPED] = "untyped",
};

/* HELP text escapes only backslash and newline (exposition_formats.md). */
static void escape_help(struct strbuf *out, const char *s) {
        for (; *s; s++) {
                if (*s == '\\')
                        strbuf_puts(out, "\\\\");
                else if (*s == '\n')
                        strbuf_puts(out, "\\n");
                else
                        strbuf_putc(out, *s);
        }
}

void prom_escape_label_value(struct strbuf *out, const char *s) {
        for (; *s; s++) {
                if (*s == '\\')
                        strbuf_puts(out, "\\\\");
                else if (*s == '"')
                        strbuf_puts(out, "\\\"");
                else if (*s == '\n')
                        strbuf_puts(out, "\\n");
                else
                        strbuf_putc(out, *s);
        }
}

void prom_family(struct prom_writer *w, const char *name, enum prom_type type, const char *help) {
        strbuf_printf(w->out, "# HELP %s ", name);
        escape_help(w->out, help);
        strbuf_printf(w->out, "\n# TYPE %s %s\n", name, type_names[type]);
}

static void write_name_labels(struct prom_writer *w, const char *name, const char *const *labels) {
        strbuf_puts(w->out, name);
        if (!labels || !labels[0])
                return;
        strbuf_putc(w->out, '{');
        for (size_t i = 0; labels[i] && labels[i + 1]; i += 2) {
                if (i > 0)
                        strbuf_putc(w->out, ',');
                strbuf_printf(w->out, "%s=\"", labels[i]);
                prom_escape_label_value(w->out, labels[i + 1]);
                strbuf_putc(w->out, '"');
        }
        strbuf_putc(w->out, '}');
}

void prom_sample_u64(struct prom_writer *w, const char *name, const char *const *labels, uint64_t v) {
        write_name_labels(w, name, labels);
        strbuf_printf(w->out, " %" PRIu64 "\n", v);
}

void prom_sample_double(struct prom_writer *w, const char *name, const char *const *labels, double v) {
        write_name_labels(w, name, labels);
        if (isnan(v))
                strbuf_puts(w->out, " NaN\n");
        else if (isinf(v))
                strbuf_puts(w->out, v > 0 ? " +Inf\n" : " -Inf\n");
        else
                /* %.17g round-trips every double exactly. */
                strbuf_printf(w->out, " %.17g\n", v);
}
