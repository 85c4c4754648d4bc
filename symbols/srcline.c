/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "srcline.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "strbuf.h"

struct srcline {
        int fd;
        Elf *elf;
        Dwarf *dw;
        /* The last lookup's file names made absolute (the strings it handed out). */
        char paths[SRCLINE_MAX_FRAMES][PATH_MAX];
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

/* Whether the file has DWARF debug info: a .debug_info section (.zdebug_info: GNU's compressed ones, -gz=zlib-gnu). */
static bool has_debug_info(Elf *elf) {
        Elf_Scn *scn = NULL;
        size_t shstrndx;

        if (elf_getshdrstrndx(elf, &shstrndx) != 0)
                return false;
        while ((scn = elf_nextscn(elf, scn))) {
                GElf_Shdr sh;
                const char *name;

                if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
                        continue;
                name = elf_strptr(elf, shstrndx, sh.sh_name);
                if (name && (streq(name, ".debug_info") || streq(name, ".zdebug_info")))
                        return true;
        }
        return false;
}

int srcline_open(const char *path, struct srcline **ret) {
        struct srcline *s;
        struct stat st;
        Dwarf *dw;
        Elf *elf;
        int fd;

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
        if (!has_debug_info(elf)) {
                elf_end(elf);
                safe_close(fd);
                return -ENODATA;
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
