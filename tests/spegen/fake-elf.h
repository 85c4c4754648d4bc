/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * A tiny AArch64 ELF (ET_DYN, one PT_LOAD, .text full of NOPs, .symtab with
 * named functions) so that perf resolves the generator's user PCs to
 * symbols. Layout: vaddr == file offset, so a MMAP2 of the file at base B
 * with pgoff 0 puts symbol S at B + S.st_value.
 */

#include <stddef.h>
#include <stdint.h>

struct fake_elf_sym {
        const char *name;
        uint64_t value;          /* vaddr, inside [text_off, text_off + text_size) */
        uint64_t size;
};

/* Write the ELF to fd. Returns 0 or a negative errno. */
int fake_elf_write(int fd, uint64_t text_off, uint64_t text_size, const struct fake_elf_sym *syms,
                   size_t n_syms);
