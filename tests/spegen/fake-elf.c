/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "fake-elf.h"

#include <elf.h>
#include <errno.h>
#include <string.h>

#include "macro.h"
#include "strbuf.h"

#include "spegen-io.h"

/* A64 NOP (Arm ARM C6.2 NOP: 0xd503201f), so the text disassembles. */
#define A64_NOP         UINT32_C(0xd503201f)
#define FAKE_ELF_ALIGN  UINT64_C(0x1000)

enum {
        SEC_NULL,
        SEC_TEXT,
        SEC_SYMTAB,
        SEC_STRTAB,
        SEC_SHSTRTAB,
        _SEC_MAX,
};

static void pad_to(struct strbuf *sb, size_t off) {
        while (sb->len < off)
                strbuf_putc(sb, 0);
}

int fake_elf_write(int fd, uint64_t text_off, uint64_t text_size, const struct fake_elf_sym *syms,
                   size_t n_syms) {
        struct strbuf f = STRBUF_INIT, strtab = STRBUF_INIT;
        static const char shstrtab[] = "\0.text\0.symtab\0.strtab\0.shstrtab";
        /* offsets of the names inside shstrtab */
        enum { N_TEXT = 1, N_SYMTAB = 7, N_STRTAB = 15, N_SHSTRTAB = 23 };
        Elf64_Ehdr eh = {};
        Elf64_Phdr ph = {};
        Elf64_Shdr sh[_SEC_MAX] = {};
        uint64_t symtab_off, strtab_off, shstr_off, shdr_off;
        int r;

        if (text_off < sizeof(eh) + sizeof(ph) || text_size % 4 != 0)
                return -EINVAL;
        for (size_t i = 0; i < n_syms; i++)
                if (syms[i].value < text_off || syms[i].value + syms[i].size > text_off + text_size)
                        return -EINVAL;

        /* Text first, so that its file offset is text_off. */
        pad_to(&f, text_off);
        for (uint64_t i = 0; i < text_size; i += 4) {
                uint32_t nop = A64_NOP;

                strbuf_append(&f, &nop, sizeof(nop));
        }

        /* .symtab: the null symbol, then one global FUNC per entry. */
        pad_to(&f, (f.len + 7) & ~(size_t) 7);
        symtab_off = f.len;
        strbuf_putc(&strtab, 0);
        {
                Elf64_Sym null_sym = {};

                strbuf_append(&f, &null_sym, sizeof(null_sym));
        }
        for (size_t i = 0; i < n_syms; i++) {
                Elf64_Sym s = {
                        .st_name = (Elf64_Word) strtab.len,
                        .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
                        .st_other = STV_DEFAULT,
                        .st_shndx = SEC_TEXT,
                        .st_value = syms[i].value,
                        .st_size = syms[i].size,
                };

                strbuf_append(&strtab, syms[i].name, strlen(syms[i].name) + 1);
                strbuf_append(&f, &s, sizeof(s));
        }
        strtab_off = f.len;
        strbuf_append(&f, strtab.buf, strtab.len);
        shstr_off = f.len;
        strbuf_append(&f, shstrtab, sizeof(shstrtab));
        pad_to(&f, (f.len + 7) & ~(size_t) 7);
        shdr_off = f.len;

        sh[SEC_TEXT] = (Elf64_Shdr) {
                .sh_name = N_TEXT, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
                .sh_addr = text_off, .sh_offset = text_off, .sh_size = text_size, .sh_addralign = 4,
        };
        sh[SEC_SYMTAB] = (Elf64_Shdr) {
                .sh_name = N_SYMTAB, .sh_type = SHT_SYMTAB, .sh_offset = symtab_off,
                .sh_size = (n_syms + 1) * sizeof(Elf64_Sym), .sh_link = SEC_STRTAB,
                .sh_info = 1, /* index of the first non-local symbol */
                .sh_addralign = 8, .sh_entsize = sizeof(Elf64_Sym),
        };
        sh[SEC_STRTAB] = (Elf64_Shdr) {
                .sh_name = N_STRTAB, .sh_type = SHT_STRTAB, .sh_offset = strtab_off,
                .sh_size = strtab.len, .sh_addralign = 1,
        };
        sh[SEC_SHSTRTAB] = (Elf64_Shdr) {
                .sh_name = N_SHSTRTAB, .sh_type = SHT_STRTAB, .sh_offset = shstr_off,
                .sh_size = sizeof(shstrtab), .sh_addralign = 1,
        };
        strbuf_append(&f, sh, sizeof(sh));

        memcpy(eh.e_ident, ELFMAG, SELFMAG);
        eh.e_ident[EI_CLASS] = ELFCLASS64;
        eh.e_ident[EI_DATA] = ELFDATA2LSB;
        eh.e_ident[EI_VERSION] = EV_CURRENT;
        eh.e_ident[EI_OSABI] = ELFOSABI_NONE;
        eh.e_type = ET_DYN;
        eh.e_machine = EM_AARCH64;
        eh.e_version = EV_CURRENT;
        eh.e_entry = text_off;
        eh.e_phoff = sizeof(eh);
        eh.e_shoff = shdr_off;
        eh.e_ehsize = sizeof(eh);
        eh.e_phentsize = sizeof(ph);
        eh.e_phnum = 1;
        eh.e_shentsize = sizeof(Elf64_Shdr);
        eh.e_shnum = _SEC_MAX;
        eh.e_shstrndx = SEC_SHSTRTAB;

        ph.p_type = PT_LOAD;
        ph.p_flags = PF_R | PF_X;
        ph.p_offset = 0;
        ph.p_vaddr = 0;
        ph.p_paddr = 0;
        ph.p_filesz = text_off + text_size;
        ph.p_memsz = text_off + text_size;
        ph.p_align = FAKE_ELF_ALIGN;

        memcpy(f.buf, &eh, sizeof(eh));
        memcpy(f.buf + sizeof(eh), &ph, sizeof(ph));

        r = spegen_write_full(fd, f.buf, f.len, -1);
        strbuf_done(&f);
        strbuf_done(&strtab);
        return r;
}
