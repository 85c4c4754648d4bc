/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * perf-style text of SPE packets. The strings and their order follow Linux
 * perf's arm_spe_pkt_desc() (tools/perf/util/arm-spe-decoder/
 * arm-spe-pkt-decoder.c) so that a line-by-line comparison with
 * `perf report -D` works; SPE_DUMP_F_PERF61 selects the 6.1 variant.
 */
#include "spe-dump.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>

#include "macro.h"
#include "spe-rec.h"

/* perf prints packets in columns of 16 bytes and merges PAD runs up to that. */
#define DUMP_COLUMNS 16U
/* Events bits that perf 6.1 names (arm_spe_pkt_desc_event of that version). */
#define PERF61_EVENTS_MASK (UINT64_C(0x0FFF) | SPE_EV_BIT(SPE_EV_SVE_PARTIAL_PRED) | \
                            SPE_EV_BIT(SPE_EV_SVE_EMPTY_PRED))
/* perf 6.1 tested the ld/st subclass on payload bits [7:1] and indirect branches as == 0x02. */
#define PERF61_SUB_MASK 0xFEU

struct desc {
        char *p;
        size_t left;
        bool trunc;
};

_printf_(2, 3)
static void add(struct desc *d, const char *fmt, ...) {
        va_list ap;
        int r;

        if (d->trunc || d->left == 0) {
                d->trunc = true;
                return;
        }
        va_start(ap, fmt);
        r = vsnprintf(d->p, d->left, fmt, ap);
        va_end(ap);
        if (r < 0 || (size_t) r >= d->left) {
                d->trunc = true;
                d->p += d->left - 1;
                d->left = 1;
                return;
        }
        d->p += r;
        d->left -= (size_t) r;
}

static void desc_events(struct desc *d, uint64_t v, uint64_t midr, unsigned flags) {
        add(d, "EV");
        if (flags & SPE_DUMP_F_PERF61)
                v &= PERF61_EVENTS_MASK;

        for (unsigned bit = 0; bit < 64; bit++) {
                const char *name = spe_event_name(bit);

                if (!(v & SPE_EV_BIT(bit)) || !name)
                        continue;
                add(d, " %s", name);
                v &= ~SPE_EV_BIT(bit);
        }

        /* perf names IMPDEF bit 12 on Neoverse N1 only. */
        if ((v & SPE_EV_BIT(SPE_EV_IMPDEF_12)) &&
            SPE_MIDR_IMPL(midr) == SPE_MIDR_IMPL_ARM &&
            SPE_MIDR_PART(midr) == SPE_MIDR_PART_NEOVERSE_N1) {
                add(d, " LATE-PREFETCH");
                v &= ~SPE_EV_BIT(SPE_EV_IMPDEF_12);
        }

        if (v) {
                add(d, " IMPDEF:");
                for (unsigned bit = 0; bit < 64; bit++) {
                        if (!(v & SPE_EV_BIT(bit)))
                                continue;
                        v &= ~SPE_EV_BIT(bit);
                        add(d, "%u%s", bit, v ? "," : "");
                }
        }
}

static void desc_op_other(struct desc *d, uint8_t v, unsigned flags) {
        if ((v & SPE_OP_OTHER_SVE_MASK) == SPE_OP_OTHER_SVE) {
                add(d, "SVE-OTHER EVLEN %u", SPE_OP_SVE_EVL_BITS(v));
                if (v & SPE_OP_OTHER_FP)
                        add(d, " FP");
                if (v & SPE_OP_OTHER_PRED)
                        add(d, " PRED");
                return;
        }
        if (flags & SPE_DUMP_F_PERF61) {
                add(d, "OTHER %s", (v & SPE_OP_OTHER_COND) ? "COND-SELECT" : "INSN-OTHER");
                return;
        }
        if ((v & SPE_OP_OTHER_SVE_MASK) == SPE_OP_OTHER_SME) {
                add(d, "SME-OTHER ETS %u", SPE_OP_SME_ETS_BITS(v));
                if (v & SPE_OP_OTHER_FP)
                        add(d, " FP");
                return;
        }
        if ((v & SPE_OP_OTHER_SUB_MASK) == SPE_OP_OTHER_SUB_OTHER) {
                add(d, "OTHER");
                if (v & SPE_OP_OTHER_ASE)
                        add(d, " ASE");
                if (v & SPE_OP_OTHER_FP)
                        add(d, " FP");
                add(d, " %s", (v & SPE_OP_OTHER_COND) ? "COND-SELECT" : "INSN-OTHER");
                return;
        }
        /* perf prints nothing here; the raw form is more useful. */
        add(d, "OP-TYPE 0x%x (%u)", v, (unsigned) SPE_OP_CLASS_OTHER);
}

static void desc_op_ldst_perf61(struct desc *d, uint8_t v) {
        switch (v & PERF61_SUB_MASK) {
        case SPE_OP_LDST_SIMD_FP:
                add(d, " SIMD-FP");
                break;
        case SPE_OP_LDST_GP_REG:
                add(d, " GP-REG");
                break;
        case SPE_OP_LDST_UNSPEC_REG:
                add(d, " UNSPEC-REG");
                break;
        case SPE_OP_LDST_NV_SYSREG:
                add(d, " NV-SYSREG");
                break;
        default:
                break;
        }
        if ((v & SPE_OP_LDST_SVE_MASK) == SPE_OP_LDST_SVE) {
                add(d, " EVLEN %u", SPE_OP_SVE_EVL_BITS(v));
                if (v & SPE_OP_LDST_SVE_PRED)
                        add(d, " PRED");
                if (v & SPE_OP_LDST_SVE_SG)
                        add(d, " SG");
        }
}

static void desc_op_ldst(struct desc *d, uint8_t v, unsigned flags) {
        add(d, "%s", (v & SPE_OP_LDST_ST) ? "ST" : "LD");

        if ((v & SPE_OP_LDST_EXT_MASK) == SPE_OP_LDST_EXT) {
                if (v & SPE_OP_LDST_AT)
                        add(d, " AT");
                if (v & SPE_OP_LDST_EXCL)
                        add(d, " EXCL");
                if (v & SPE_OP_LDST_AR)
                        add(d, " AR");
                if (!(flags & SPE_DUMP_F_PERF61))
                        return;
        }
        if (flags & SPE_DUMP_F_PERF61) {
                desc_op_ldst_perf61(d, v);
                return;
        }

        if ((v & SPE_OP_LDST_SUB_MASK) == SPE_OP_LDST_SIMD_FP)
                add(d, " SIMD-FP");
        else if ((v & SPE_OP_LDST_SUB_MASK) == SPE_OP_LDST_GP_REG)
                add(d, " GP-REG");
        else if ((v & SPE_OP_LDST_SUB_MASK) == SPE_OP_LDST_UNSPEC_REG)
                add(d, " UNSPEC-REG");
        else if ((v & SPE_OP_LDST_SUB_MASK) == SPE_OP_LDST_NV_SYSREG)
                add(d, " NV-SYSREG");
        else if ((v & SPE_OP_LDST_SUB_MASK) == SPE_OP_LDST_MTE_TAG)
                add(d, " MTE-TAG");
        else if ((v & SPE_OP_LDST_SUB_MASK) == SPE_OP_LDST_MEMCPY)
                add(d, " MEMCPY");
        else if ((v & SPE_OP_LDST_MEMSET_MASK) == SPE_OP_LDST_MEMSET)
                add(d, " MEMSET");
        else if ((v & SPE_OP_LDST_SVE_MASK) == SPE_OP_LDST_SVE) {
                add(d, " SVE-SME-REG EVLEN %u", SPE_OP_SVE_EVL_BITS(v));
                if (v & SPE_OP_LDST_SVE_PRED)
                        add(d, " PRED");
                if (v & SPE_OP_LDST_SVE_SG)
                        add(d, " SG");
        } else if ((v & SPE_OP_LDST_GCS_MASK) == SPE_OP_LDST_GCS) {
                add(d, " GCS");
                if (v & SPE_OP_LDST_GCS_COMM)
                        add(d, " COMM");
        }
}

static void desc_op_branch(struct desc *d, uint8_t v, unsigned flags) {
        add(d, "B");
        if (v & SPE_OP_BR_COND)
                add(d, " COND");
        if (flags & SPE_DUMP_F_PERF61) {
                if ((v & PERF61_SUB_MASK) == SPE_OP_BR_IND)
                        add(d, " IND");
                return;
        }
        if (v & SPE_OP_BR_IND)
                add(d, " IND");
        if (v & SPE_OP_BR_GCS)
                add(d, " GCS");
        switch ((v >> SPE_OP_BR_CR_SHIFT) & SPE_OP_BR_CR_MASK) {
        case SPE_OP_BR_CR_BL:
                add(d, " CR-BL");
                break;
        case SPE_OP_BR_CR_RET:
                add(d, " CR-RET");
                break;
        case SPE_OP_BR_CR_OTHER:
                add(d, " CR-NON-BL-RET");
                break;
        default:
                break;
        }
}

/* perf's fallback for packets it cannot describe: "NAME 0xPAYLOAD (INDEX)". */
static void desc_raw(struct desc *d, const struct spe_pkt *pkt) {
        add(d, "%s 0x%" PRIx64 " (%u)", spe_pkt_type_name(pkt->type), pkt->payload, pkt->index);
}

int spe_pkt_desc(const struct spe_pkt *pkt, uint64_t midr, unsigned flags, char *buf, size_t len) {
        struct desc d = { .p = buf, .left = len };
        uint64_t v;

        if (!pkt || !buf || len == 0)
                return -EINVAL;
        buf[0] = '\0';
        v = pkt->payload;

        switch (pkt->type) {
        case SPE_PKT_PAD:
        case SPE_PKT_END:
                add(&d, "%s", spe_pkt_type_name(pkt->type));
                break;
        case SPE_PKT_TIMESTAMP:
        case SPE_PKT_DATA_SOURCE:
                /* perf prints these two in decimal. */
                add(&d, "%s %" PRIu64, spe_pkt_type_name(pkt->type), v);
                break;
        case SPE_PKT_EVENTS:
                desc_events(&d, v, midr, flags);
                break;
        case SPE_PKT_CONTEXT:
                add(&d, "CONTEXT 0x%" PRIx64 " el%u", v, pkt->index + 1U);
                break;
        case SPE_PKT_OP_TYPE:
                switch (pkt->index) {
                case SPE_OP_CLASS_OTHER:
                        desc_op_other(&d, (uint8_t) v, flags);
                        break;
                case SPE_OP_CLASS_LDST:
                        desc_op_ldst(&d, (uint8_t) v, flags);
                        break;
                case SPE_OP_CLASS_BRANCH:
                        desc_op_branch(&d, (uint8_t) v, flags);
                        break;
                default:
                        desc_raw(&d, pkt);
                        break;
                }
                break;
        case SPE_PKT_ADDRESS:
                switch (pkt->index) {
                case SPE_ADDR_IDX_PC:
                case SPE_ADDR_IDX_BR_TGT:
                case SPE_ADDR_IDX_PBT:
                        add(&d, "%s 0x%" PRIx64 " el%u ns=%u",
                            pkt->index == SPE_ADDR_IDX_PC ? "PC" :
                            pkt->index == SPE_ADDR_IDX_BR_TGT ? "TGT" : "PBT",
                            v & SPE_ADDR_VA_MASK, SPE_ADDR_EL(v), SPE_ADDR_NS(v));
                        break;
                case SPE_ADDR_IDX_DATA_VA:
                        /* perf prints the raw payload, tag byte included. */
                        add(&d, "VA 0x%" PRIx64, v);
                        break;
                case SPE_ADDR_IDX_DATA_PA:
                        add(&d, "PA 0x%" PRIx64 " ns=%u ch=%u pat=%x",
                            v & SPE_ADDR_VA_MASK, SPE_ADDR_NS(v), SPE_ADDR_CH(v), SPE_ADDR_PAT(v));
                        break;
                default:
                        desc_raw(&d, pkt);
                        break;
                }
                break;
        case SPE_PKT_COUNTER:
                /* An unknown index prints "LAT n " with the trailing blank, like perf. */
                add(&d, "LAT %u %s", (unsigned) (v & SPE_CNT_VALUE_MASK),
                    pkt->index == SPE_CNT_IDX_TOTAL ? "TOT" :
                    pkt->index == SPE_CNT_IDX_ISSUE ? "ISSUE" :
                    pkt->index == SPE_CNT_IDX_XLAT ? "XLAT" : "");
                break;
        default:
                desc_raw(&d, pkt);
                break;
        }

        if (d.trunc)
                return -ENOBUFS;
        return (int) (d.p - buf);
}

/* Output sink: a FILE or a strbuf. */
struct sink {
        FILE *f;
        struct strbuf *sb;
};

_printf_(2, 3)
static void out(struct sink *s, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        if (s->f)
                (void) vfprintf(s->f, fmt, ap);
        else
                strbuf_vprintf(s->sb, fmt, ap);
        va_end(ap);
}

static void dump(struct sink *s, const uint8_t *buf, size_t len, uint64_t midr, unsigned flags) {
        size_t pos = 0;

        if (!(flags & SPE_DUMP_F_NO_HEADER))
                out(s, ". ... ARM SPE data: size %#zx bytes\n", len);

        while (pos < len) {
                char desc[SPE_PKT_DESC_MAX];
                struct spe_pkt pkt;
                size_t n, i;
                int k;

                k = spe_pkt_decode(buf + pos, len - pos, &pkt);
                n = k > 0 ? (size_t) k : 1;
                if (k > 0 && pkt.type == SPE_PKT_PAD)
                        while (n < DUMP_COLUMNS && pos + n < len && buf[pos + n] == SPE_HDR_PAD)
                                n++;

                out(s, ".  %08zx: ", pos);
                for (i = 0; i < n; i++)
                        out(s, " %02x", buf[pos + i]);
                for (; i < DUMP_COLUMNS; i++)
                        out(s, "   ");

                if (k > 0 && spe_pkt_desc(&pkt, midr, flags, desc, sizeof(desc)) >= 0)
                        out(s, " %s\n", desc);
                else
                        out(s, " Bad packet!\n");
                pos += n;
        }
}

int spe_dump_file(FILE *f, const uint8_t *buf, size_t len, uint64_t midr, unsigned flags) {
        struct sink s = { .f = f };

        if (!f || (!buf && len > 0))
                return -EINVAL;
        dump(&s, buf, len, midr, flags);
        if (ferror(f))
                return -EIO;
        return 0;
}

void spe_dump_strbuf(struct strbuf *sb, const uint8_t *buf, size_t len, uint64_t midr, unsigned flags) {
        struct sink s = { .sb = sb };

        if (!sb || (!buf && len > 0))
                return;
        dump(&s, buf, len, midr, flags);
}
