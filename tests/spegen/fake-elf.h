/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * A tiny AArch64 ELF (ET_DYN, one PT_LOAD, .text full of NOPs, .symtab with
 * named functions) so that perf resolves the generator's user PCs to
 * symbols. Layout: vaddr == file offset, so a MMAP2 of the file at base B
 * with pgoff 0 puts symbol S at B + S.st_value.
 *
 * With a build id, the file also has what `ld --build-id=sha1` gives a
 * real binary: a .note.gnu.build-id section (SHT_NOTE, SHF_ALLOC, aligned
 * to 4, name "GNU", type NT_GNU_BUILD_ID, a 20-byte descriptor) right after
 * the program headers, inside the PT_LOAD, and a PT_NOTE covering it. The
 * id is, as lld computes it, the SHA-1 of the whole file with the 20
 * descriptor bytes zero: deterministic, and another symbol table or text
 * gives another id.
 */

#include <stddef.h>
#include <stdint.h>

/* NT_GNU_BUILD_ID descriptor size of a SHA-1 build id. */
#define FAKE_ELF_BUILD_ID_SIZE 20U

struct fake_elf_sym {
        const char *name;
        uint64_t value;          /* vaddr, inside [text_off, text_off + text_size) */
        uint64_t size;
};

/* Write the ELF to fd, without a build id. Returns 0 or a negative errno. */
int fake_elf_write(int fd, uint64_t text_off, uint64_t text_size, const struct fake_elf_sym *syms,
                   size_t n_syms);

/* Write the ELF with its .note.gnu.build-id; the id goes to ret_build_id
 * when not NULL. Returns 0 or a negative errno. */
int fake_elf_write_build_id(int fd, uint64_t text_off, uint64_t text_size, const struct fake_elf_sym *syms,
                            size_t n_syms, uint8_t ret_build_id[FAKE_ELF_BUILD_ID_SIZE]);

/* The build id fake_elf_write_build_id() writes for these arguments,
 * without writing anything. Returns 0 or a negative errno. */
int fake_elf_build_id(uint64_t text_off, uint64_t text_size, const struct fake_elf_sym *syms, size_t n_syms,
                      uint8_t ret_build_id[FAKE_ELF_BUILD_ID_SIZE]);
