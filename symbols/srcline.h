/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Source lines of code addresses from an ELF file's DWARF (elfutils libdw),
 * with the inlined frames that hold the address: what `addr2line -f -i`
 * prints (binutils), innermost first, which is also the order pprof's
 * Location.line wants ("line[i] is inlined into line[i+1]", profile.proto).
 *
 * For an address, the compile unit that covers it (.debug_aranges, else the
 * units' ranges: dwarf_addrdie()) gives the line table row at or before it
 * (dwarf_getsrc_die(): DWARF 5 §6.2, "Line Number Information"); the scopes
 * that contain it, innermost first (dwarf_getscopes()), give the inlined
 * subroutines (DW_TAG_inlined_subroutine, DWARF 5 §3.3.8.2) up to the
 * subprogram that holds them. Each frame is named by its subroutine's
 * DW_AT_linkage_name, else DW_AT_name (through DW_AT_abstract_origin for an
 * inlined instance: dwarf_attr_integrate()), and located at the address's
 * line for the innermost one, else at the DW_AT_call_file/DW_AT_call_line
 * of the frame it holds inlined (the call site, §3.3.8.2).
 *
 * A DWARF file is outside input: libdw checks its structure, and a chain of
 * inlined frames is cut at SRCLINE_MAX_FRAMES (the innermost kept).
 *
 * Library code: no logging, errors are negative errno values.
 */

#include <stddef.h>
#include <stdint.h>

/*
 * Inlined frames kept per address. GCC at -O2 rarely nests more than a few;
 * the outermost of a deeper chain are left out (the innermost, where the
 * address is, matter most).
 */
#define SRCLINE_MAX_FRAMES      8

struct srcline_frame {
        const char *function;   /* NULL when the DWARF names none */
        const char *file;       /* as the line table gives it: absolute when it has the directory */
        uint32_t line;          /* 0: no line */
};

struct srcline;

/*
 * The DWARF sections of one file libdw may hold in memory (read, or
 * decompressed): a file with more is not read for lines (a large C++
 * library's debug file has gigabytes; the daemon is bounded by its unit's
 * MemoryMax=). 512 MiB covers a debug file of millions of lines of C.
 */
#define SRCLINE_MAX_DWARF_BYTES (UINT64_C(512) << 20)

/*
 * The DWARF of the ELF file at path (a binary with -g, a detached debug
 * file). Returns 0 and *ret, -ENODATA when it has no DWARF, -EFBIG when its
 * DWARF is over SRCLINE_MAX_DWARF_BYTES, -EBADMSG when libdw refuses it, or
 * -errno of the file.
 */
int srcline_open(const char *path, struct srcline **ret);
struct srcline *srcline_close(struct srcline *s);

/*
 * The frames of the ELF virtual address addr into ret (up to max, innermost
 * first). Returns how many (0 when no line table row covers addr). Strings
 * stay valid until srcline_close().
 */
size_t srcline_lookup(struct srcline *s, uint64_t addr, struct srcline_frame *ret, size_t max);

/*
 * The member of a global variable at an offset, from the DWARF type of the
 * variable whose DW_AT_location is the address var_addr (DW_OP_addr; DWARF 5
 * §2.5.1.1, §4.1): through structures and unions (DW_TAG_member and its
 * DW_AT_data_member_location, §5.7.6), arrays (the element's size, §5.5) and
 * typedefs and qualifiers, written as C would ("struct shard[3].lock",
 * "struct stats.misses", "+0x2" for bytes inside a scalar, "uint8_t[1234]"),
 * into buf (len bytes), and the variable's type size in *ret_size.
 * Returns 0, -ENOENT when no variable of the DWARF is at var_addr or its
 * type is unknown, -E2BIG when the name does not fit.
 *
 * The variables are indexed by address at the first call (a walk of every
 * compile unit's top-level DIEs), at most SRCLINE_MAX_VARIABLES of them.
 */
#define SRCLINE_MAX_VARIABLES   (1U << 18)
/* Members and array levels followed from a variable down to the offset. */
#define SRCLINE_MAX_TYPE_DEPTH  16
int srcline_member(struct srcline *s, uint64_t var_addr, uint64_t offset, char *buf, size_t len,
                   uint64_t *ret_size);
