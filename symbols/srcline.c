/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "srcline.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "strbuf.h"

struct srcline_var;

struct srcline {
        int fd;
        Elf *elf;
        Dwarf *dw;
        /* The last lookup's file names made absolute (the strings it handed out). */
        char paths[SRCLINE_MAX_FRAMES][PATH_MAX];
        /* Global variables by address (srcline_member()), indexed at its first call. */
        struct srcline_var *vars;
        size_t n_vars;
        bool indexed, vars_truncated;
};

/*
 * name as a path from the root: a relative one (GCC writes the names it was
 * given, "../src/x.c", beside DW_AT_comp_dir) joined to the unit's
 * compilation directory, "." and ".." taken out lexically as addr2line
 * (binutils) prints them; into buf, or name itself when that cannot be done.
 */
static const char *absolute(Dwarf_Die *cudie, const char *name, char buf[PATH_MAX]) {
        Dwarf_Attribute attr;
        const char *dir;
        size_t len = 0;
        char joined[PATH_MAX];
        char *save = NULL;

        if (!name || name[0] == '/')
                return name;
        dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &attr));
        if (!dir || dir[0] != '/' || snprintf(joined, sizeof(joined), "%s/%s", dir, name) >= (int) sizeof(joined))
                return name;
        for (char *part = strtok_r(joined, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
                if (streq(part, "."))
                        continue;
                if (streq(part, "..")) {
                        while (len > 0 && buf[--len] != '/')
                                ;
                        continue;
                }
                /* Never longer than joined, which fit. */
                len += (size_t) snprintf(buf + len, PATH_MAX - len, "/%s", part);
        }
        if (len == 0)
                buf[len++] = '/';
        buf[len] = '\0';
        return buf;
}

/*
 * Whether the file has DWARF debug info: 0 with a .debug_info section
 * (.zdebug_info: GNU's compressed ones, -gz=zlib-gnu), -ENODATA without,
 * -EFBIG when its DWARF sections, as libdw will hold them in memory
 * (uncompressed: the ELF compression header's ch_size, gABI "Compressed
 * Sections"), are over SRCLINE_MAX_DWARF_BYTES.
 */
static int has_debug_info(Elf *elf) {
        Elf_Scn *scn = NULL;
        uint64_t total = 0;
        size_t shstrndx;
        bool info = false;

        if (elf_getshdrstrndx(elf, &shstrndx) != 0)
                return -ENODATA;
        while ((scn = elf_nextscn(elf, scn))) {
                GElf_Shdr sh;
                GElf_Chdr ch;
                const char *name;
                uint64_t size;

                if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
                        continue;
                name = elf_strptr(elf, shstrndx, sh.sh_name);
                if (!name || (strncmp(name, ".debug_", strlen(".debug_")) != 0 &&
                              strncmp(name, ".zdebug_", strlen(".zdebug_")) != 0))
                        continue;
                info |= streq(name, ".debug_info") || streq(name, ".zdebug_info");
                size = (sh.sh_flags & SHF_COMPRESSED) && gelf_getchdr(scn, &ch) ? ch.ch_size : sh.sh_size;
                /* .zdebug_: "ZLIB" and the uncompressed size, 8 bytes big-endian (binutils' zlib-gnu format). */
                if (name[1] == 'z') {
                        Elf_Data *raw = elf_rawdata(scn, NULL);

                        if (raw && raw->d_size >= 12 && memcmp(raw->d_buf, "ZLIB", 4) == 0) {
                                size = 0;
                                for (int i = 4; i < 12; i++)
                                        size = size << 8 | ((const uint8_t *) raw->d_buf)[i];
                        }
                }
                if (size > SRCLINE_MAX_DWARF_BYTES - total)
                        return -EFBIG;
                total += size;
        }
        return info ? 0 : -ENODATA;
}

int srcline_open(const char *path, struct srcline **ret) {
        struct srcline *s;
        struct stat st;
        Dwarf *dw;
        Elf *elf;
        int fd, k;

        /* A path the input names: never wait in open(2) on a FIFO, read only a regular file. */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                safe_close(fd);
                return -EBADF;
        }
        if (elf_version(EV_CURRENT) == EV_NONE) {
                safe_close(fd);
                return -ENOTSUP;
        }
        elf = elf_begin(fd, ELF_C_READ, NULL);
        if (!elf || elf_kind(elf) != ELF_K_ELF) {
                elf_end(elf);
                safe_close(fd);
                return -EBADMSG;
        }
        k = has_debug_info(elf);
        if (k < 0) {
                elf_end(elf);
                safe_close(fd);
                return k;
        }
        /*
         * dwarf_begin_elf() checks the sections (elfutils
         * libdw/dwarf_begin_elf.c) and with .gnu_debugaltlink finds the dwz
         * file when first needed (dwarf_getalt()).
         */
        dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
        if (!dw) {
                elf_end(elf);
                safe_close(fd);
                return -EBADMSG;
        }
        s = xcalloc(1, sizeof(*s));
        s->fd = fd;
        s->elf = elf;
        s->dw = dw;
        *ret = s;
        return 0;
}

struct srcline *srcline_close(struct srcline *s) {
        if (!s)
                return NULL;
        free(s->vars);
        dwarf_end(s->dw);
        elf_end(s->elf);
        safe_close(s->fd);
        free(s);
        return NULL;
}

/* The subroutine's name: its linkage name (what addr2line -f prints), else DW_AT_name, through its abstract origin. */
static const char *die_function(Dwarf_Die *die) {
        Dwarf_Attribute attr;
        const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));

        if (!name)
                name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
        return name ?: dwarf_diename(die);
}

size_t srcline_lookup(struct srcline *s, uint64_t addr, struct srcline_frame *ret, size_t max) {
        Dwarf_Die cudie, innermost, *scopes = NULL;
        Dwarf_Files *files = NULL;
        const char *file;
        Dwarf_Line *line;
        uint32_t cur = 0;
        size_t n = 0;
        int lineno = 0, nscopes;

        max = MIN(max, (size_t) SRCLINE_MAX_FRAMES);
        if (max == 0 || !dwarf_addrdie(s->dw, addr, &cudie))
                return 0;
        line = dwarf_getsrc_die(&cudie, addr);
        if (!line)
                return 0;
        file = dwarf_linesrc(line, NULL, NULL);
        if (dwarf_lineno(line, &lineno) == 0 && lineno > 0)
                cur = (uint32_t) lineno;

        /*
         * The innermost scope that holds addr, then its parents in the DIE
         * tree (dwarf_getscopes_die()): dwarf_getscopes() itself goes on from
         * an inlined instance into its abstract origin's scopes, not to the
         * caller it is inlined into. elfutils' own addr2line
         * (src/addr2line.c, print_inline()) walks them the same way.
         */
        nscopes = dwarf_getscopes(&cudie, addr, &scopes);
        if (nscopes > 0) {
                innermost = scopes[0];
                free(scopes);
                scopes = NULL;
                nscopes = dwarf_getscopes_die(&innermost, &scopes);
        }
        if (nscopes > 0 && dwarf_getsrcfiles(&cudie, &files, NULL) != 0)
                files = NULL;
        for (int i = 0; i < nscopes && n < max; i++) {
                Dwarf_Die *die = &scopes[i];
                int tag = dwarf_tag(die);
                Dwarf_Attribute attr;
                Dwarf_Word w;

                if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
                        continue;
                ret[n] = (struct srcline_frame) {
                        .function = die_function(die),
                        .file = absolute(&cudie, file, s->paths[n]),
                        .line = cur,
                };
                n++;
                if (tag == DW_TAG_subprogram)
                        break;
                /* The caller's line: where this one was inlined (DWARF 5 §3.3.8.2). */
                file = NULL;
                cur = 0;
                if (files && dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &w) == 0)
                        file = dwarf_filesrc(files, (size_t) w, NULL, NULL);
                if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &w) == 0 && w <= UINT32_MAX)
                        cur = (uint32_t) w;
        }
        free(scopes);
        if (n == 0)
                /* A line without a subprogram around it (assembly, a unit without DIEs for its code). */
                ret[n++] = (struct srcline_frame) { .file = absolute(&cudie, file, s->paths[0]), .line = cur };
        return n;
}

/* ---- Variables and their members ---- */

struct srcline_var {
        uint64_t addr;
        Dwarf_Off die;          /* the variable's DIE (dwarf_offdie()) */
};

static int var_cmp(const void *a, const void *b) {
        const struct srcline_var *x = a, *y = b;

        return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Its address when die is a variable located at a fixed address (DW_OP_addr, alone). */
static bool var_addr(Dwarf_Die *die, uint64_t *ret) {
        Dwarf_Attribute attr;
        Dwarf_Op *ops;
        size_t n;

        if (dwarf_tag(die) != DW_TAG_variable || !dwarf_attr(die, DW_AT_location, &attr))
                return false;
        if (dwarf_getlocation(&attr, &ops, &n) != 0 || n != 1 || ops[0].atom != DW_OP_addr)
                return false;
        *ret = ops[0].number;
        return true;
}

static void index_variables(struct srcline *s) {
        Dwarf_Off off = 0, next;
        size_t hsize, cap = 0;

        s->indexed = true;
        while (dwarf_nextcu(s->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
                Dwarf_Die cu, child;

                if (dwarf_offdie(s->dw, off + hsize, &cu) && dwarf_child(&cu, &child) == 0)
                        do {
                                uint64_t addr;

                                if (!var_addr(&child, &addr))
                                        continue;
                                if (s->n_vars == SRCLINE_MAX_VARIABLES) {
                                        s->vars_truncated = true;
                                        break;
                                }
                                if (s->n_vars == cap) {
                                        cap = cap ? cap * 2 : 64;
                                        s->vars = xrealloc(s->vars, cap * sizeof(*s->vars));
                                }
                                s->vars[s->n_vars++] = (struct srcline_var) { addr, dwarf_dieoffset(&child) };
                        } while (dwarf_siblingof(&child, &child) == 0);
                off = next;
        }
        if (s->n_vars > 0)
                qsort(s->vars, s->n_vars, sizeof(*s->vars), var_cmp);
}

/* Append to buf at *pos; false when it does not fit. */
static bool put(char *buf, size_t len, size_t *pos, const char *fmt, ...) _printf_(4, 5);
static bool put(char *buf, size_t len, size_t *pos, const char *fmt, ...) {
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vsnprintf(buf + *pos, len - *pos, fmt, ap);
        va_end(ap);
        if (k < 0 || (size_t) k >= len - *pos)
                return false;
        *pos += (size_t) k;
        return true;
}

/* A type's name as C writes it: "struct stats", "int", a typedef's name; "?" for an anonymous one. */
static bool put_type_name(Dwarf_Die *type, char *buf, size_t len, size_t *pos) {
        const char *name = dwarf_diename(type);

        switch (dwarf_tag(type)) {
        case DW_TAG_structure_type:
                return put(buf, len, pos, "struct %s", name ?: "(anonymous)");
        case DW_TAG_union_type:
                return put(buf, len, pos, "union %s", name ?: "(anonymous)");
        case DW_TAG_class_type:
                return put(buf, len, pos, "class %s", name ?: "(anonymous)");
        case DW_TAG_enumeration_type:
                return put(buf, len, pos, "enum %s", name ?: "(anonymous)");
        case DW_TAG_pointer_type:
                return put(buf, len, pos, "pointer");
        default:
                return put(buf, len, pos, "%s", name ?: "?");
        }
}

/* The type die refers to (DW_AT_type), typedefs and qualifiers peeled off when peel. */
static bool die_type(Dwarf_Die *die, Dwarf_Die *ret, bool peel) {
        Dwarf_Attribute attr;

        if (!dwarf_formref_die(dwarf_attr_integrate(die, DW_AT_type, &attr), ret))
                return false;
        return !peel || dwarf_peel_type(ret, ret) == 0;
}

/* The offset of a member in its structure (DW_AT_data_member_location as a constant); 0 for a union's. */
static bool member_offset(Dwarf_Die *member, uint64_t *ret) {
        Dwarf_Attribute attr;
        Dwarf_Word w;

        if (!dwarf_attr(member, DW_AT_data_member_location, &attr)) {
                *ret = 0;
                return true;
        }
        if (dwarf_formudata(&attr, &w) != 0)
                return false; /* a location expression (virtual bases): not followed */
        *ret = w;
        return true;
}

/*
 * The path to offset off inside type (peeled): ".member", "[i]", and "+0xN"
 * inside a scalar, appended to buf.
 */
static int put_path(Dwarf_Die *type, uint64_t off, char *buf, size_t len, size_t *pos) {
        for (unsigned depth = 0; depth < SRCLINE_MAX_TYPE_DEPTH; depth++) {
                int tag = dwarf_tag(type);
                Dwarf_Word size;
                Dwarf_Die child, next;
                bool found = false;

                if (tag == DW_TAG_array_type) {
                        if (!die_type(type, &next, true) || dwarf_aggregate_size(&next, &size) != 0 || size == 0)
                                break;
                        /* Several dimensions: indexed as the one array of elements they are in memory. */
                        if (!put(buf, len, pos, "[%" PRIu64 "]", off / size))
                                return -E2BIG;
                        off %= size;
                        *type = next;
                        continue;
                }
                if (tag != DW_TAG_structure_type && tag != DW_TAG_union_type && tag != DW_TAG_class_type)
                        break;
                if (dwarf_child(type, &child) == 0)
                        do {
                                uint64_t at;

                                if (dwarf_tag(&child) != DW_TAG_member || !member_offset(&child, &at) || off < at ||
                                    !die_type(&child, &next, true) || dwarf_aggregate_size(&next, &size) != 0 ||
                                    off - at >= size)
                                        continue;
                                if (!put(buf, len, pos, ".%s", dwarf_diename(&child) ?: "(anonymous)"))
                                        return -E2BIG;
                                off -= at;
                                *type = next;
                                found = true;
                                break;
                        } while (dwarf_siblingof(&child, &child) == 0);
                if (!found)
                        break; /* padding, or a member this does not follow */
        }
        if (off > 0 && !put(buf, len, pos, "+0x%" PRIx64, off))
                return -E2BIG;
        return 0;
}

/* die without its qualifiers (const, volatile, restrict, _Atomic): a typedef keeps its name. */
static void strip_qualifiers(Dwarf_Die *die) {
        for (unsigned i = 0; i < SRCLINE_MAX_TYPE_DEPTH; i++) {
                int tag = dwarf_tag(die);

                if ((tag != DW_TAG_const_type && tag != DW_TAG_volatile_type && tag != DW_TAG_restrict_type &&
                     tag != DW_TAG_atomic_type) || !die_type(die, die, false))
                        return;
        }
}

int srcline_member(struct srcline *s, uint64_t addr, uint64_t offset, char *buf, size_t len, uint64_t *ret_size) {
        struct srcline_var key = { .addr = addr }, *v;
        Dwarf_Die die, type, elem;
        Dwarf_Word size = 0;
        size_t pos = 0;
        int k;

        if (!s->indexed)
                index_variables(s);
        v = s->n_vars > 0 ? bsearch(&key, s->vars, s->n_vars, sizeof(*s->vars), var_cmp) : NULL;
        if (!v || !dwarf_offdie(s->dw, v->die, &die) || !die_type(&die, &type, true))
                return -ENOENT;
        (void) dwarf_aggregate_size(&type, &size);
        /*
         * An array is named by its elements' type ("struct shard[3].lock"),
         * anything else by its own, typedefs by their names ("uint8_t[12]").
         */
        if (!die_type(&die, &elem, false))
                return -ENOENT;
        strip_qualifiers(&elem);
        /* Bounded: a hostile file's array type may be its own element. */
        for (unsigned i = 0; i < SRCLINE_MAX_TYPE_DEPTH && dwarf_tag(&elem) == DW_TAG_array_type &&
                             die_type(&elem, &elem, false); i++)
                strip_qualifiers(&elem);
        if (len == 0 || !put_type_name(&elem, buf, len, &pos))
                return -E2BIG;
        k = put_path(&type, offset, buf, len, &pos);
        if (k < 0)
                return k;
        *ret_size = size;
        return 0;
}
