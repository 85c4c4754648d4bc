/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <ini.h>

#include "macro.h"
#include "pmu-event.h"

/* Every section of the contract (DESIGN.md §6), known even when empty. */
static const char *const known_sections[] = {
        "http", "pmu", "spe", "sampler", "store", "push", "privacy",
};

struct config_item;
typedef int (*config_parse_fn)(const struct config_item *it, const char *value, void *dest,
                               char *err, size_t errlen);

struct config_item {
        const char *section;
        const char *key;
        config_parse_fn parse;
        size_t offset;
        uint64_t min, max;
};

static int check_range(const struct config_item *it, uint64_t v, const char *value, char *err,
                       size_t errlen) {
        if (v < it->min || v > it->max) {
                snprintf(err, errlen, "value '%s' out of range [%" PRIu64 ", %" PRIu64 "]",
                         value, it->min, it->max);
                return -ERANGE;
        }
        return 0;
}

static int parse_item_bool(const struct config_item *it, const char *value, void *dest,
                           char *err, size_t errlen) {
        if (parse_bool(value, dest) < 0) {
                snprintf(err, errlen, "invalid boolean '%s' (expected yes/no, true/false, on/off, 1/0)",
                         value);
                return -EINVAL;
        }
        return 0;
}

static int parse_item_u32(const struct config_item *it, const char *value, void *dest, char *err,
                          size_t errlen) {
        uint32_t v;
        int r;

        r = safe_atou32(value, &v);
        if (r < 0) {
                snprintf(err, errlen, "invalid unsigned number '%s'", value);
                return r;
        }
        r = check_range(it, v, value, err, errlen);
        if (r < 0)
                return r;
        *(uint32_t *) dest = v;
        return 0;
}

static int parse_item_duration(const struct config_item *it, const char *value, void *dest,
                               char *err, size_t errlen) {
        uint64_t v;
        int r;

        r = parse_duration_usec(value, &v);
        if (r < 0) {
                snprintf(err, errlen, "invalid duration '%s' (expected e.g. 10s, 500ms, 1m)", value);
                return r;
        }
        if (v < it->min || v > it->max) {
                snprintf(err, errlen, "duration '%s' out of range [%" PRIu64 "ms, %" PRIu64 "s]",
                         value, it->min / USEC_PER_MSEC, it->max / USEC_PER_SEC);
                return -ERANGE;
        }
        *(uint64_t *) dest = v;
        return 0;
}

static int parse_item_size(const struct config_item *it, const char *value, void *dest, char *err,
                           size_t errlen) {
        uint64_t v;
        int r;

        r = parse_size(value, &v);
        if (r < 0) {
                snprintf(err, errlen, "invalid size '%s' (expected e.g. 4096, 64KiB, 16MiB)", value);
                return r;
        }
        r = check_range(it, v, value, err, errlen);
        if (r < 0)
                return r;
        *(uint64_t *) dest = v;
        return 0;
}

static int parse_item_listen(const struct config_item *it, const char *value, void *dest,
                             char *err, size_t errlen) {
        if (parse_listen_addr(value, dest) < 0) {
                snprintf(err, errlen,
                         "invalid listen address '%s' (expected ADDR:PORT, [IPV6]:PORT or :PORT)",
                         value);
                return -EINVAL;
        }
        return 0;
}

/* "cycles instructions, page_faults": names of the PMU event catalogue. */
static int parse_item_pmu_events(const struct config_item *it, const char *value, void *dest,
                                 char *err, size_t errlen) {
        char copy[1024], *save = NULL;
        uint32_t mask = 0;

        if (strlen(value) >= sizeof(copy)) {
                snprintf(err, errlen, "event list too long");
                return -ERANGE;
        }
        strcpy(copy, value);
        for (char *t = strtok_r(copy, " \t,", &save); t; t = strtok_r(NULL, " \t,", &save)) {
                const struct pmu_event_def *d = pmu_event_by_name(t);

                if (!d) {
                        snprintf(err, errlen, "unknown event '%s' (known: see armprofd.conf)", t);
                        return -EINVAL;
                }
                mask |= UINT32_C(1) << d->id;
        }
        if (mask == 0) {
                snprintf(err, errlen, "empty event list (use enable = no to turn counting off)");
                return -EINVAL;
        }
        *(uint32_t *) dest = mask;
        return 0;
}

/* 0 (from sysfs) or a power of two between 16 and 1024 bytes. */
static int parse_item_line_size(const struct config_item *it, const char *value, void *dest,
                                char *err, size_t errlen) {
        uint32_t v;

        if (safe_atou32(value, &v) < 0 || (v != 0 && (v < 16 || v > 1024 || (v & (v - 1)) != 0))) {
                snprintf(err, errlen, "invalid line size '%s' (0 for sysfs, or a power of two 16..1024)",
                         value);
                return -EINVAL;
        }
        *(uint32_t *) dest = v;
        return 0;
}

#define ITEM(sec, k, fn, field, lo, hi) \
        { sec, k, fn, offsetof(struct config, field), lo, hi }

static const struct config_item items[] = {
        ITEM("http", "listen", parse_item_listen, http.listen, 0, 0),
        ITEM("http", "max_connections", parse_item_u32, http.max_connections, 1, 4096),
        ITEM("http", "per_ip_connections", parse_item_u32, http.per_ip_connections, 0, 4096),
        ITEM("http", "timeout", parse_item_duration, http.timeout_usec, USEC_PER_SEC, 3600 * USEC_PER_SEC),
        ITEM("http", "max_request_size", parse_item_size, http.max_request_bytes, 4096, 1024 * 1024),
        ITEM("pmu", "enable", parse_item_bool, pmu.enable, 0, 0),
        ITEM("pmu", "interval", parse_item_duration, pmu.interval_usec, 100 * USEC_PER_MSEC,
             3600 * USEC_PER_SEC),
        ITEM("pmu", "events", parse_item_pmu_events, pmu.events_mask, 0, 0),
        ITEM("pmu", "general_counters", parse_item_u32, pmu.general_counters, 0, 31),
        ITEM("store", "epoch", parse_item_duration, store.epoch_usec, USEC_PER_SEC, 3600 * USEC_PER_SEC),
        ITEM("store", "epochs", parse_item_u32, store.epochs, 1, 8640),
        ITEM("store", "hotpcs", parse_item_u32, store.hotpcs, 16, 1U << 20),
        ITEM("store", "hotlines", parse_item_u32, store.hotlines, 16, 1U << 20),
        ITEM("store", "line_offsets", parse_item_u32, store.line_offsets, 1, 1024),
        ITEM("store", "line_size", parse_item_line_size, store.line_size, 0, 0),
        ITEM("privacy", "physical_addresses", parse_item_bool, privacy.physical_addresses, 0, 0),
};

size_t config_n_items(void) {
        return ELEMENTSOF(items);
}

void config_item_name(size_t i, const char **ret_section, const char **ret_key) {
        *ret_section = items[i].section;
        *ret_key = items[i].key;
}

void config_init(struct config *c) {
        *c = (struct config) {
                .http = {
                        .max_connections = 32,
                        .per_ip_connections = 8,
                        .timeout_usec = 15 * USEC_PER_SEC,
                        .max_request_bytes = 32 * 1024,
                },
                .pmu = {
                        .enable = true,
                        .interval_usec = USEC_PER_SEC,
                        .events_mask = (UINT32_C(1) << _PMU_EVENT_MAX) - 1,
                },
                .store = {
                        .epoch_usec = 10 * USEC_PER_SEC,
                        .epochs = 60,
                        .hotpcs = 1024,
                        .hotlines = 256,
                        .line_offsets = 8,
                },
        };
        /* The default is a constant we own; it cannot fail to parse. */
        (void) parse_listen_addr(CONFIG_DEFAULT_LISTEN, &c->http.listen);
}

/*
 * libinih reads through our line reader, so the handler knows the line it is
 * on (Debian builds libinih without INI_HANDLER_LINENO) and over-long lines
 * are reported rather than split into two.
 */
struct line_reader {
        FILE *file;
        const char *text;
        size_t pos;
        unsigned line;
        unsigned too_long_line; /* first line longer than libinih's buffer, or 0 */
};

static bool reader_getc(struct line_reader *lr, int *ret) {
        if (lr->file) {
                *ret = fgetc(lr->file);
                return *ret != EOF;
        }
        if (lr->text[lr->pos] == '\0')
                return false;
        *ret = (unsigned char) lr->text[lr->pos++];
        return true;
}

static char *read_line(char *str, int num, void *stream) {
        struct line_reader *lr = stream;
        size_t n = 0;
        int c;

        if (num < 2)
                return NULL;
        while (reader_getc(lr, &c)) {
                if (n + 1 >= (size_t) num) {
                        /* Too long: drop the rest of it and hand libinih an empty line. */
                        while (c != '\n' && reader_getc(lr, &c))
                                ;
                        lr->line++;
                        if (lr->too_long_line == 0)
                                lr->too_long_line = lr->line;
                        strcpy(str, "\n");
                        return str;
                }
                str[n++] = (char) c;
                if (c == '\n')
                        break;
        }
        if (n == 0)
                return NULL;
        str[n] = '\0';
        lr->line++;
        return str;
}

struct parse_state {
        struct config *config;
        const char *filename;
        struct line_reader *reader;
        bool failed;
        unsigned line;
        char reason[384];
        char section[64];
        char key[64];
};

static bool section_known(const char *section) {
        for (size_t i = 0; i < ELEMENTSOF(known_sections); i++)
                if (streq(section, known_sections[i]))
                        return true;
        return false;
}

static int fail(struct parse_state *s, const char *section, const char *key, const char *fmt, ...)
        _printf_(4, 5);
static int fail(struct parse_state *s, const char *section, const char *key, const char *fmt, ...) {
        va_list ap;

        s->failed = true;
        s->line = s->reader->line;
        snprintf(s->section, sizeof(s->section), "%s", section);
        snprintf(s->key, sizeof(s->key), "%s", key);
        va_start(ap, fmt);
        vsnprintf(s->reason, sizeof(s->reason), fmt, ap);
        va_end(ap);
        return 0; /* tells libinih this line failed */
}

static int on_ini_line(void *user, const char *section, const char *name, const char *value) {
        struct parse_state *s = user;

        /* libinih keeps going after an error; only the first one is reported. */
        if (s->failed)
                return 1;
        if (section[0] == '\0')
                return fail(s, "", name, "key outside of any [section]");
        if (!section_known(section))
                return fail(s, section, name, "unknown section [%s]", section);

        for (size_t i = 0; i < ELEMENTSOF(items); i++) {
                const struct config_item *it = &items[i];
                char reason[256];

                if (!streq(it->section, section) || !streq(it->key, name))
                        continue;
                if (it->parse(it, value, (uint8_t *) s->config + it->offset, reason, sizeof(reason)) < 0)
                        return fail(s, section, name, "%s", reason);
                return 1;
        }
        return fail(s, section, name, "unknown key");
}

static int parse_stream(struct config *c, struct line_reader *lr, const char *filename,
                        struct config_error *err) {
        struct parse_state s = { .config = c, .filename = filename, .reader = lr };
        unsigned first;
        int r;

        r = ini_parse_stream(read_line, lr, on_ini_line, &s);
        if (r == -2) {
                if (err)
                        snprintf(err->msg, sizeof(err->msg), "%s: out of memory", filename);
                return -ENOMEM;
        }
        if (r == 0 && lr->too_long_line == 0)
                return 0;

        /* Report the earliest problem: a syntax error, a bad key, or a long line. */
        first = r > 0 ? (unsigned) r : UINT32_MAX;
        if (lr->too_long_line != 0 && lr->too_long_line < first)
                first = lr->too_long_line;
        if (!err)
                return -EINVAL;
        if (s.failed && s.line == first)
                snprintf(err->msg, sizeof(err->msg), "%s:%u: [%s] %s: %s", filename, first, s.section,
                         s.key, s.reason);
        else if (first == lr->too_long_line)
                snprintf(err->msg, sizeof(err->msg), "%s:%u: line too long (at most %d bytes)", filename,
                         first, INI_MAX_LINE - 2);
        else
                snprintf(err->msg, sizeof(err->msg),
                         "%s:%u: syntax error (expected [section] or key = value)", filename, first);
        return -EINVAL;
}

int config_parse_string(struct config *c, const char *text, const char *filename,
                        struct config_error *err) {
        struct line_reader lr = { .text = text };

        return parse_stream(c, &lr, filename, err);
}

static int config_parse_file(struct config *c, const char *path, struct config_error *err) {
        struct line_reader lr = {};
        int r;

        lr.file = fopen(path, "re");
        if (!lr.file) {
                r = -errno;
                if (err)
                        snprintf(err->msg, sizeof(err->msg), "%s: cannot open: %s", path, strerror(-r));
                return r;
        }
        r = parse_stream(c, &lr, path, err);
        fclose(lr.file);
        return r;
}

static int dropin_filter(const struct dirent *de) {
        size_t n = strlen(de->d_name);

        return de->d_name[0] != '.' && n > 5 && streq(de->d_name + n - 5, ".conf");
}

/* Lexical order in the C sense, as systemd sorts drop-ins: not locale-dependent. */
static int dropin_compare(const struct dirent **a, const struct dirent **b) {
        return strcmp((*a)->d_name, (*b)->d_name);
}

int config_load(const char *path, bool must_exist, struct config *ret, struct config_error *err) {
        struct config c;
        struct dirent **list = NULL;
        char dir[4096];
        int n, r = 0;

        config_init(&c);

        r = config_parse_file(&c, path, err);
        if (r == -ENOENT && !must_exist)
                r = 0;
        if (r < 0)
                return r;

        if ((size_t) snprintf(dir, sizeof(dir), "%s.d", path) >= sizeof(dir)) {
                if (err)
                        snprintf(err->msg, sizeof(err->msg), "%s: path too long", path);
                return -ENAMETOOLONG;
        }
        n = scandir(dir, &list, dropin_filter, dropin_compare);
        if (n < 0) {
                if (errno == ENOENT || errno == ENOTDIR)
                        goto done;
                r = -errno;
                if (err)
                        snprintf(err->msg, sizeof(err->msg), "%s: cannot read drop-in directory: %m", dir);
                return r;
        }
        for (int i = 0; i < n; i++) {
                char file[4096 + 256];

                snprintf(file, sizeof(file), "%s/%s", dir, list[i]->d_name);
                if (r == 0)
                        r = config_parse_file(&c, file, err);
                free(list[i]);
        }
        free(list);
        if (r < 0)
                return r;
done:
        *ret = c;
        return 0;
}
