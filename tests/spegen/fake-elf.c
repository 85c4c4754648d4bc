/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "fake-elf.h"

#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "macro.h"
#include "strbuf.h"

#include "spegen-io.h"

/* A64 NOP (Arm ARM C6.2 NOP: 0xd503201f), so the text disassembles. */
#define A64_NOP         UINT32_C(0xd503201f)
#define FAKE_ELF_ALIGN  UINT64_C(0x1000)

/* The build-id note (ELF gABI "Note Section"; ld --build-id): namesz,
 * descsz, type, then "GNU\0" and the descriptor, each padded to 4. */
#define NOTE_NAME       "GNU"
#define NOTE_NAME_SIZE  sizeof(NOTE_NAME)
#define NOTE_DESC_OFF   (3 * sizeof(Elf64_Word) + NOTE_NAME_SIZE)
#define NOTE_SIZE       (NOTE_DESC_OFF + FAKE_ELF_BUILD_ID_SIZE)
#define NOTE_ALIGN      4U

#define SHA1_BLOCK      64U

static void pad_to(struct strbuf *sb, size_t off) {
        while (sb->len < off)
                strbuf_putc(sb, 0);
}

/* ---- SHA-1 (FIPS 180-4 §6.1), for the build id as ld/lld compute it ---- */

static uint32_t rol32(uint32_t x, unsigned k) {
        return (x << k) | (x >> (32 - k));
}

static void sha1_block(uint32_t h[5], const uint8_t *p) {
        uint32_t w[80], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];

        for (unsigned i = 0; i < 16; i++)
                w[i] = (uint32_t) p[4 * i] << 24 | (uint32_t) p[4 * i + 1] << 16 |
                       (uint32_t) p[4 * i + 2] << 8 | p[4 * i + 3];
        for (unsigned i = 16; i < 80; i++)
                w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
        for (unsigned i = 0; i < 80; i++) {
                uint32_t f, k, t;

                if (i < 20) {
                        f = (b & c) | (~b & d);
                        k = UINT32_C(0x5a827999);
                } else if (i < 40) {
                        f = b ^ c ^ d;
                        k = UINT32_C(0x6ed9eba1);
                } else if (i < 60) {
                        f = (b & c) | (b & d) | (c & d);
                        k = UINT32_C(0x8f1bbcdc);
                } else {
                        f = b ^ c ^ d;
                        k = UINT32_C(0xca62c1d6);
                }
                t = rol32(a, 5) + f + e + k + w[i];
                e = d;
                d = c;
                c = rol32(b, 30);
                b = a;
                a = t;
        }
        h[0] += a;
        h[1] += b;
        h[2] += c;
        h[3] += d;
        h[4] += e;
}

static void sha1(const void *data, size_t n, uint8_t out[FAKE_ELF_BUILD_ID_SIZE]) {
        uint32_t h[5] = {
                UINT32_C(0x67452301), UINT32_C(0xefcdab89), UINT32_C(0x98badcfe),
                UINT32_C(0x10325476), UINT32_C(0xc3d2e1f0),
        };
        const uint8_t *p = data;
        uint8_t last[2 * SHA1_BLOCK] = {};
        size_t full = n / SHA1_BLOCK * SHA1_BLOCK, rest = n - full;
        /* 0x80, zeros, then the length in bits (big-endian u64). */
        size_t tail = rest + 1 + sizeof(uint64_t) <= SHA1_BLOCK ? SHA1_BLOCK : 2 * SHA1_BLOCK;
        uint64_t bits = (uint64_t) n * 8;

        for (size_t i = 0; i < full; i += SHA1_BLOCK)
                sha1_block(h, p + i);
        memcpy(last, p + full, rest);
        last[rest] = 0x80;
        for (unsigned i = 0; i < sizeof(bits); i++)
                last[tail - 1 - i] = (uint8_t) (bits >> (8 * i));
        for (size_t i = 0; i < tail; i += SHA1_BLOCK)
                sha1_block(h, last + i);
        for (unsigned i = 0; i < 5; i++)
                for (unsigned j = 0; j < 4; j++)
                        out[4 * i + j] = (uint8_t) (h[i] >> (24 - 8 * j));
}

/* ---- the ELF ---- */

/* Section names, appended to .shstrtab in this order. */
static const char *const section_names[] = { "", ".text", ".symtab", ".strtab", ".shstrtab", ".note.gnu.build-id" };
enum { NAME_NULL, NAME_TEXT, NAME_SYMTAB, NAME_STRTAB, NAME_SHSTRTAB, NAME_NOTE };

/* Build the file into f; with_note adds the build-id note and stores its
 * id in build_id. */
static int build(struct strbuf *f, uint64_t text_off, uint64_t text_size, const struct fake_elf_sym *syms,
                 size_t n_syms, bool with_note, uint8_t build_id[FAKE_ELF_BUILD_ID_SIZE]) {
        struct strbuf strtab = STRBUF_INIT, shstrtab = STRBUF_INIT;
        Elf64_Word name_off[ELEMENTSOF(section_names)] = {};
        /* Section indices, in address order as ld sorts them: the note
         * (when present) before .text. */
        unsigned sec_note = 0, sec_text, sec_symtab, sec_strtab, sec_shstrtab, n_sec = 1;
        unsigned n_ph = with_note ? 2 : 1;
        uint64_t note_off = sizeof(Elf64_Ehdr) + n_ph * sizeof(Elf64_Phdr);
        uint64_t headers_end = with_note ? note_off + NOTE_SIZE : note_off;
        uint64_t symtab_off, strtab_off, shstr_off, shdr_off;
        Elf64_Shdr sh[ELEMENTSOF(section_names)] = {};
        Elf64_Phdr ph[2] = {};
        Elf64_Ehdr eh = {};

        if (text_off < headers_end || text_size % 4 != 0)
                return -EINVAL;
        for (size_t i = 0; i < n_syms; i++)
                if (syms[i].value < text_off || syms[i].value + syms[i].size > text_off + text_size)
                        return -EINVAL;

        if (with_note)
                sec_note = n_sec++;
        sec_text = n_sec++;
        sec_symtab = n_sec++;
        sec_strtab = n_sec++;
        sec_shstrtab = n_sec++;
        for (unsigned i = 0; i < ELEMENTSOF(section_names); i++) {
                if (i == NAME_NOTE && !with_note)
                        break;
                name_off[i] = (Elf64_Word) shstrtab.len;
                /* the null section's name is the leading NUL */
                strbuf_append(&shstrtab, section_names[i], strlen(section_names[i]) + 1);
        }

        /* The headers are filled in last; the note follows them, zero for
         * now, so the hash covers it as ld does (descriptor zero). */
        pad_to(f, headers_end);
        if (with_note) {
                Elf64_Nhdr nh = {
                        .n_namesz = NOTE_NAME_SIZE,
                        .n_descsz = FAKE_ELF_BUILD_ID_SIZE,
                        .n_type = NT_GNU_BUILD_ID,
                };

                memcpy(f->buf + note_off, &nh, sizeof(nh));
                memcpy(f->buf + note_off + sizeof(nh), NOTE_NAME, NOTE_NAME_SIZE);
        }

        /* Text next, so that its file offset is text_off. */
        pad_to(f, text_off);
        for (uint64_t i = 0; i < text_size; i += 4) {
                uint32_t nop = A64_NOP;

                strbuf_append(f, &nop, sizeof(nop));
        }

        /* .symtab: the null symbol, then one global FUNC per entry. */
        pad_to(f, (f->len + 7) & ~(size_t) 7);
        symtab_off = f->len;
        strbuf_putc(&strtab, 0);
        {
                Elf64_Sym null_sym = {};

                strbuf_append(f, &null_sym, sizeof(null_sym));
        }
        for (size_t i = 0; i < n_syms; i++) {
                Elf64_Sym s = {
                        .st_name = (Elf64_Word) strtab.len,
                        .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
                        .st_other = STV_DEFAULT,
                        .st_shndx = (Elf64_Section) sec_text,
                        .st_value = syms[i].value,
                        .st_size = syms[i].size,
                };

                strbuf_append(&strtab, syms[i].name, strlen(syms[i].name) + 1);
                strbuf_append(f, &s, sizeof(s));
        }
        strtab_off = f->len;
        strbuf_append(f, strtab.buf, strtab.len);
        shstr_off = f->len;
        strbuf_append(f, shstrtab.buf, shstrtab.len);
        pad_to(f, (f->len + 7) & ~(size_t) 7);
        shdr_off = f->len;

        if (with_note)
                sh[sec_note] = (Elf64_Shdr) {
                        .sh_name = name_off[NAME_NOTE], .sh_type = SHT_NOTE, .sh_flags = SHF_ALLOC,
                        .sh_addr = note_off, .sh_offset = note_off, .sh_size = NOTE_SIZE,
                        .sh_addralign = NOTE_ALIGN,
                };
        sh[sec_text] = (Elf64_Shdr) {
                .sh_name = name_off[NAME_TEXT], .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
                .sh_addr = text_off, .sh_offset = text_off, .sh_size = text_size, .sh_addralign = 4,
        };
        sh[sec_symtab] = (Elf64_Shdr) {
                .sh_name = name_off[NAME_SYMTAB], .sh_type = SHT_SYMTAB, .sh_offset = symtab_off,
                .sh_size = (n_syms + 1) * sizeof(Elf64_Sym), .sh_link = sec_strtab,
                .sh_info = 1, /* index of the first non-local symbol */
                .sh_addralign = 8, .sh_entsize = sizeof(Elf64_Sym),
        };
        sh[sec_strtab] = (Elf64_Shdr) {
                .sh_name = name_off[NAME_STRTAB], .sh_type = SHT_STRTAB, .sh_offset = strtab_off,
                .sh_size = strtab.len, .sh_addralign = 1,
        };
        sh[sec_shstrtab] = (Elf64_Shdr) {
                .sh_name = name_off[NAME_SHSTRTAB], .sh_type = SHT_STRTAB, .sh_offset = shstr_off,
                .sh_size = shstrtab.len, .sh_addralign = 1,
        };
        strbuf_append(f, sh, n_sec * sizeof(sh[0]));

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
        eh.e_phentsize = sizeof(Elf64_Phdr);
        eh.e_phnum = (Elf64_Half) n_ph;
        eh.e_shentsize = sizeof(Elf64_Shdr);
        eh.e_shnum = (Elf64_Half) n_sec;
        eh.e_shstrndx = (Elf64_Half) sec_shstrtab;

        /* PT_LOAD first: readers (and tests/symbols/test-symbols.c) take the
         * first program header as the text segment. */
        ph[0] = (Elf64_Phdr) {
                .p_type = PT_LOAD, .p_flags = PF_R | PF_X,
                .p_offset = 0, .p_vaddr = 0, .p_paddr = 0,
                .p_filesz = text_off + text_size, .p_memsz = text_off + text_size,
                .p_align = FAKE_ELF_ALIGN,
        };
        if (with_note)
                ph[1] = (Elf64_Phdr) {
                        .p_type = PT_NOTE, .p_flags = PF_R,
                        .p_offset = note_off, .p_vaddr = note_off, .p_paddr = note_off,
                        .p_filesz = NOTE_SIZE, .p_memsz = NOTE_SIZE,
                        .p_align = NOTE_ALIGN,
                };

        memcpy(f->buf, &eh, sizeof(eh));
        memcpy(f->buf + sizeof(eh), ph, n_ph * sizeof(ph[0]));

        if (with_note) {
                sha1(f->buf, f->len, build_id);
                memcpy(f->buf + note_off + NOTE_DESC_OFF, build_id, FAKE_ELF_BUILD_ID_SIZE);
        }
        strbuf_done(&strtab);
        strbuf_done(&shstrtab);
        return 0;
}

static int write_elf(int fd, uint64_t text_off, uint64_t text_size, const struct fake_elf_sym *syms,
                     size_t n_syms, bool with_note, uint8_t *ret_build_id) {
        struct strbuf f = STRBUF_INIT;
        uint8_t id[FAKE_ELF_BUILD_ID_SIZE];
        int r;

        r = build(&f, text_off, text_size, syms, n_syms, with_note, id);
        if (r >= 0 && fd >= 0)
                r = spegen_write_full(fd, f.buf, f.len, -1);
        if (r >= 0 && ret_build_id)
                memcpy(ret_build_id, id, sizeof(id));
        strbuf_done(&f);
        return r;
}

int fake_elf_write(int fd, uint64_t text_off, uint64_t text_size, const struct fake_elf_sym *syms,
                   size_t n_syms) {
        if (fd < 0)
                return -EBADF;
        return write_elf(fd, text_off, text_size, syms, n_syms, false, NULL);
}

int fake_elf_write_build_id(int fd, uint64_t text_off, uint64_t text_size, const struct fake_elf_sym *syms,
                            size_t n_syms, uint8_t ret_build_id[FAKE_ELF_BUILD_ID_SIZE]) {
        if (fd < 0)
                return -EBADF;
        return write_elf(fd, text_off, text_size, syms, n_syms, true, ret_build_id);
}

int fake_elf_build_id(uint64_t text_off, uint64_t text_size, const struct fake_elf_sym *syms, size_t n_syms,
                      uint8_t ret_build_id[FAKE_ELF_BUILD_ID_SIZE]) {
        return write_elf(-1, text_off, text_size, syms, n_syms, true, ret_build_id);
}
