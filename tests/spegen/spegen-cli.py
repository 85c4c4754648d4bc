#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# armprofd-spegen's command line: same seed => byte-identical outputs,
# another seed => different streams, the outputs are complete and
# consistent with each other, and bad arguments are refused.
#
# Usage: spegen-cli.py PATH-TO-armprofd-spegen

import csv
import hashlib
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


# The Neoverse N1 fixed-slot record (the N1 records of perf_data_converter's
# quipper test data and of the WindowsPerf captures in ../shared/testdata/spe): the
# offset of each packet in the 64-byte record. Absent packets leave zeros.
SLOT_PC, SLOT_CTX, SLOT_OP, SLOT_EV, SLOT_ISSUE, SLOT_TOT = 0x00, 0x0e, 0x13, 0x15, 0x18, 0x1b
SLOT_ADDR, SLOT_XLAT, SLOT_PA, SLOT_DS, SLOT_TS, SLOT_END = 0x1e, 0x27, 0x2a, 0x33, 0x37, 0x3f


def n1_record(row):
    """The 64 bytes a CSV row of layout 'slots' must have been written as,
    built from the row alone (independent of the generator's encoder)."""
    b = bytearray(64)

    def put(off, hdr, val, n):
        b[off] = hdr
        b[off + 1:off + 1 + n] = val.to_bytes(n, "little")

    num = lambda k: int(row[k], 0)
    put(SLOT_PC, 0xb0, num("pc") | num("el") << 61 | num("ns") << 63, 8)
    if row["context"]:
        put(SLOT_CTX, 0x64 | (num("context_el") - 1), num("context"), 4)
    if row["op_class"]:
        put(SLOT_OP, 0x48 | num("op_class"), num("op_subclass"), 1)
    if row["events"]:
        put(SLOT_EV, 0x52, num("events"), 2)
    if row["issue_lat"]:
        put(SLOT_ISSUE, 0x99, num("issue_lat"), 2)
    if row["tot_lat"]:
        put(SLOT_TOT, 0x98, num("tot_lat"), 2)
    if row["va"]:
        put(SLOT_ADDR, 0xb2, num("va"), 8)
    if row["tgt"]:
        put(SLOT_ADDR, 0xb1, num("tgt") | num("el") << 61 | num("ns") << 63, 8)
    if row["xlat_lat"]:
        put(SLOT_XLAT, 0x9a, num("xlat_lat"), 2)
    if row["pa"]:
        put(SLOT_PA, 0xb3, num("pa") | num("pa_pat") << 56 | num("pa_ch") << 62 | num("pa_ns") << 63, 8)
    if row["data_source"]:
        put(SLOT_DS, 0x43, num("data_source"), 1)
    if row["timestamp"]:
        put(SLOT_TS, 0x71, num("timestamp"), 8)
    else:
        b[SLOT_END] = 0x01
    return bytes(b)


def csv_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def summary_of(path):
    return dict(l.rstrip("\n").split("=", 1) for l in open(path) if "=" in l and not l.startswith("#"))


# ELF-64 constants (<elf.h>) and perf's build-id table (tools/perf/util/
# header.c write_buildid(), tools/lib/perf/include/perf/event.h).
SHT_NOTE, SHF_ALLOC, PT_LOAD, PT_NOTE, NT_GNU_BUILD_ID = 7, 0x2, 1, 4, 3
PERF_RECORD_MMAP2, PERF_RECORD_HEADER_BUILD_ID, PERF_RECORD_HEADER_FEATURE = 10, 67, 80
MISC_USER, MISC_BUILD_ID_SIZE, NAME_ALIGN, HEADER_BUILD_ID = 2, 1 << 15, 64, 2


def elf_build_id(path):
    """Check the fake ELF's .note.gnu.build-id and PT_NOTE the way ld
    lays them out; return the descriptor (hex) or None."""
    b = open(path, "rb").read()
    phoff, shoff = struct.unpack_from("<QQ", b, 32)
    phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", b, 54)
    shdrs = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize) for i in range(shnum)]
    strtab_off = shdrs[shstrndx][4]
    name = lambda off: b[strtab_off + off:b.index(b"\0", strtab_off + off)].decode()
    notes = [sh for sh in shdrs if name(sh[0]) == ".note.gnu.build-id"]
    if len(notes) != 1:
        fail("ELF: %d .note.gnu.build-id sections" % len(notes))
        return None
    _, typ, flags, addr, off, size, _, _, align, _ = notes[0]
    if typ != SHT_NOTE or not flags & SHF_ALLOC or align != 4 or off % 4 or size != 36 or addr != off:
        fail("ELF: .note.gnu.build-id type %d flags %#x align %d offset %#x size %d addr %#x" % (
            typ, flags, align, off, size, addr))
    namesz, descsz, ntype = struct.unpack_from("<III", b, off)
    if (namesz, descsz, ntype, b[off + 12:off + 16]) != (4, 20, NT_GNU_BUILD_ID, b"GNU\0"):
        fail("ELF: build-id note header %s" % ((namesz, descsz, ntype, b[off + 12:off + 16]),))
    phdrs = [struct.unpack_from("<IIQQQQQQ", b, phoff + i * phentsize) for i in range(phnum)]
    if [p[0] for p in phdrs] != [PT_LOAD, PT_NOTE]:
        fail("ELF: program headers %s, want PT_LOAD, PT_NOTE" % [p[0] for p in phdrs])
    elif phdrs[1][2:6] != (off, addr, addr, size) or phdrs[1][6] != size or phdrs[1][7] != 4 or \
            not (phdrs[0][2] <= off and off + size <= phdrs[0][2] + phdrs[0][5]):
        fail("ELF: PT_NOTE %s does not cover the note (offset %#x size %d) inside the PT_LOAD" % (phdrs[1], off, size))
    desc = b[off + 16:off + 36]
    # ld/lld --build-id=sha1: the SHA-1 of the file with the id zero.
    if hashlib.sha1(b[:off + 16] + bytes(20) + b[off + 36:]).digest() != desc:
        fail("ELF: build id %s is not the SHA-1 of the file with the id zeroed" % desc.hex())
    readelf = shutil.which("readelf")
    if readelf:
        n = subprocess.run([readelf, "-n", "-W", path], stdout=subprocess.PIPE, universal_newlines=True).stdout
        m = re.search(r"NT_GNU_BUILD_ID.*?\s+Build ID: ([0-9a-f]+)", n, re.S)
        if not m or m.group(1) != desc.hex():
            fail("readelf -n: %r, want build id %s" % (n, desc.hex()))
        l = subprocess.run([readelf, "-l", "-W", path], stdout=subprocess.PIPE, universal_newlines=True).stdout
        if not re.search(r"^\s+01\s+\.note\.gnu\.build-id\s*$", l, re.M):
            fail("readelf -l: the NOTE segment does not hold .note.gnu.build-id:\n%s" % l)
    return desc.hex()


def build_id_entry(b, p, want_type, want_id, want_name):
    """One build-id table entry at b[p:] as perf 6.1 writes it; its size."""
    typ, misc, size, pid = struct.unpack_from("<IHHi", b, p)
    field, name = b[p + 12:p + 36], b[p + 36:p + size]
    padded = (len(want_name) + 1 + NAME_ALIGN - 1) // NAME_ALIGN * NAME_ALIGN
    want_field = bytes.fromhex(want_id) + bytes([20, 0, 0, 0])
    want_name_b = want_name.encode() + bytes(padded - len(want_name))
    if (typ, misc, size, pid, field, name) != (want_type, MISC_USER | MISC_BUILD_ID_SIZE, 36 + padded, -1,
                                               want_field, want_name_b):
        fail("build-id entry: type %d misc %#x size %d pid %d id %s name %r (%d bytes); want type %d misc %#x "
             "size %d pid -1 id %s name %r (%d bytes)" % (
                 typ, misc, size, pid, field.hex(), name.rstrip(b"\0"), len(name), want_type,
                 MISC_USER | MISC_BUILD_ID_SIZE, 36 + padded, want_field.hex(), want_name, padded))
    return max(size, 8)


def check_build_id_table(data_path, elf_path, want_id):
    """File mode: one HEADER_BUILD_ID entry for the ELF. Pipe mode: one
    PERF_RECORD_HEADER_BUILD_ID right before the ELF's MMAP2 (where perf
    inject --buildid-all puts it), no HEADER_BUILD_ID feature event."""
    b = open(data_path, "rb").read()
    name = os.path.realpath(elf_path)
    if int.from_bytes(b[8:16], "little") == 104:
        data_off, data_size = struct.unpack_from("<QQ", b, 40)
        bits = int.from_bytes(b[72:104], "little")
        if not bits >> HEADER_BUILD_ID & 1:
            fail("file mode: no HEADER_BUILD_ID feature")
            return
        # the index has one {offset, size} per set bit, in bit order
        k = bin(bits & ((1 << HEADER_BUILD_ID) - 1)).count("1")
        off, size = struct.unpack_from("<QQ", b, data_off + data_size + 16 * k)
        n = build_id_entry(b, off, 0, want_id, name)
        if n != size:
            fail("file mode: HEADER_BUILD_ID is %d bytes, one entry is %d" % (size, n))
        return
    p, seen, prev, mmaps = 16, 0, None, 0
    while p + 8 <= len(b):
        typ, _, size = struct.unpack_from("<IHH", b, p)
        if typ == PERF_RECORD_HEADER_BUILD_ID:
            seen += 1
            build_id_entry(b, p, PERF_RECORD_HEADER_BUILD_ID, want_id, name)
        elif typ == PERF_RECORD_MMAP2 and b[p + 72:p + 72 + len(name) + 1] == name.encode() + b"\0":
            mmaps += 1
            if prev != PERF_RECORD_HEADER_BUILD_ID:
                fail("pipe mode: the ELF's MMAP2 follows record type %s, not its build id" % prev)
        elif typ == PERF_RECORD_HEADER_FEATURE and struct.unpack_from("<Q", b, p + 8)[0] == HEADER_BUILD_ID:
            fail("pipe mode: HEADER_BUILD_ID sent as a feature event")
        prev = typ
        if typ == 71:  # PERF_RECORD_AUXTRACE: the payload follows
            p += struct.unpack_from("<Q", b, p + 8)[0]
        p += max(size, 8)
    if seen != 1 or mmaps != 1:
        fail("pipe mode: %d PERF_RECORD_HEADER_BUILD_ID records and %d MMAP2 of the ELF, want 1 and 1" % (
            seen, mmaps))


def digests(d):
    return {n: hashlib.sha256(open(os.path.join(d, n), "rb").read()).hexdigest() for n in sorted(os.listdir(d))}


def main():
    exe = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="spegen-cli-")
    try:
        out = os.path.join(tmp, "out")
        args = ["--records", "5000", "--cpus", "3", "--garbage", "0.01", "--padded", "--ts"]

        def gen(seed, prefix="g", extra=()):
            p = subprocess.run([exe, "--out-dir", out, "--prefix", prefix, "--seed", str(seed)] + args + list(extra),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
            if p.returncode != 0:
                fail("seed %d: exit %d: %s" % (seed, p.returncode, p.stderr))
            return digests(out)

        first = gen(5)
        want = {"g.cpu0.bin", "g.cpu1.bin", "g.cpu2.bin", "g.truth.csv", "g.truth.txt", "g.data", "g.elf"}
        if set(first) != want:
            fail("outputs %s, expected %s" % (sorted(first), sorted(want)))
        if gen(5) != first:
            fail("same seed gave different outputs")
        third = gen(6)
        for n in ("g.cpu0.bin", "g.truth.csv", "g.data"):
            if third.get(n) == first.get(n):
                fail("seed 6 gave the same %s as seed 5" % n)
        gen(5)

        # The CSV and the .bin streams agree: every record's bytes lie
        # inside its CPU's stream, start with a header byte and end with the
        # terminator the row says; garbage rows point at their bytes.
        streams = {c: open(os.path.join(out, "g.cpu%d.bin" % c), "rb").read() for c in range(3)}
        n_rec = n_slots = 0
        with open(os.path.join(out, "g.truth.csv"), newline="") as f:
            for row in csv.DictReader(f):
                b = streams[int(row["cpu"])]
                off, size = int(row["offset"]), int(row["size"])
                if off + size > len(b):
                    fail("row %s beyond stream end" % row)
                    break
                if row["kind"] == "garbage":
                    if b[off:off + size].hex() != row["garbage_bytes"]:
                        fail("garbage row %s does not match stream bytes %s" % (row, b[off:off + size].hex()))
                    continue
                n_rec += 1
                if size != 64:
                    fail("padded record of %d bytes" % size)
                last = b[off + size - 9] if row["timestamp"] else b[off + size - 1]
                if last != (0x71 if row["timestamp"] else 0x01):
                    fail("record cpu %s index %s does not end in its terminator" % (row["cpu"], row["index"]))
                if row["timestamp"] and int.from_bytes(b[off + size - 8:off + size], "little") != int(row["timestamp"]):
                    fail("record cpu %s index %s: TS payload differs from the CSV" % (row["cpu"], row["index"]))
                # --padded defaults to the N1 fixed slots: those records
                # are byte for byte what the CSV row says, at the N1
                # offsets; the rest (extended headers, shuffled noise,
                # 1/4-byte events) keep the split padding.
                if row["layout"] == "slots":
                    n_slots += 1
                    if row["ds_size"] not in ("", "1") or row["ext_hdr"] != "0x0" or \
                            row["events_size"] not in ("", "2"):
                        fail("slot-layout record cpu %s index %s: ds_size %s events_size %s ext_hdr %s" % (
                            row["cpu"], row["index"], row["ds_size"], row["events_size"], row["ext_hdr"]))
                    want = n1_record(row)
                    if b[off:off + size] != want:
                        fail("slot-layout record cpu %s index %s:\n have %s\n want %s" % (
                            row["cpu"], row["index"], b[off:off + size].hex(), want.hex()))
                elif row["layout"] == "split":
                    if row["scenario"] not in ("ext-header", "noise"):
                        fail("record cpu %s index %s (%s) not in the N1 slots" % (
                            row["cpu"], row["index"], row["scenario"]))
                else:
                    fail("padded record cpu %s index %s has layout '%s'" % (row["cpu"], row["index"], row["layout"]))
        if n_rec != 5000:
            fail("%d record rows for 5000 records" % n_rec)
        summary = summary_of(os.path.join(out, "g.truth.txt"))
        if summary["pad_layout"] != "slots" or int(summary["layout.slots"]) != n_slots or \
                int(summary["layout.split"]) != n_rec - n_slots or int(summary["layout.packed"]) != 0:
            fail("summary layout counts %s differ from the CSV's %d slots of %d" % (
                {k: v for k, v in summary.items() if "layout" in k}, n_slots, n_rec))
        # An 'all' mix: only ext-header (5/105) and part of noise do not fit.
        if n_slots <= 0.8 * n_rec:
            fail("only %d of %d padded records in the N1 slot layout (want > 80%%)" % (n_slots, n_rec))

        # --pad-layout=split: the same records (same seed), none in slots;
        # only the data-source payload size may differ (slots write 1 byte).
        split = os.path.join(tmp, "split")
        p = subprocess.run([exe, "--out-dir", split, "--prefix", "g", "--seed", "5", "--pad-layout=split"] + args,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        if p.returncode != 0:
            fail("--pad-layout=split: exit %d: %s" % (p.returncode, p.stderr))
        srows = csv_rows(os.path.join(split, "g.truth.csv"))
        ssum = summary_of(os.path.join(split, "g.truth.txt"))
        if ssum["pad_layout"] != "split" or int(ssum["layout.slots"]) != 0 or int(ssum["layout.split"]) != 5000:
            fail("--pad-layout=split summary %s" % {k: v for k, v in ssum.items() if "layout" in k})
        if any(r["layout"] != "split" for r in srows if r["kind"] == "record"):
            fail("--pad-layout=split wrote records in another layout")
        same = lambda r: {k: v for k, v in r.items() if k not in ("ds_size", "layout")}
        if [same(r) for r in srows] != [same(r) for r in csv_rows(os.path.join(out, "g.truth.csv"))]:
            fail("--pad-layout=split and slots of one seed differ in more than layout and ds_size")
        if digests(split)["g.cpu0.bin"] == first["g.cpu0.bin"]:
            fail("--pad-layout=split wrote the same bytes as slots")

        # --no-context: the same records (same seed) without CONTEXT packets;
        # pid/tid stay in the truth. In the N1 slots a record is the same 64
        # bytes with its CONTEXT slot left as zeros.
        noctx = os.path.join(tmp, "noctx")
        p = subprocess.run([exe, "--out-dir", noctx, "--prefix", "g", "--seed", "5", "--no-context"] + args,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        if p.returncode != 0:
            fail("--no-context: exit %d: %s" % (p.returncode, p.stderr))
        crows = csv_rows(os.path.join(out, "g.truth.csv"))
        nrows = csv_rows(os.path.join(noctx, "g.truth.csv"))
        if any(r["context"] or r["context_el"] for r in nrows):
            fail("--no-context wrote a CONTEXT packet")
        if not all(r["tid"] for r in nrows if r["kind"] == "record"):
            fail("--no-context lost the truth's tid")
        ctx_free = lambda r: {k: v for k, v in r.items() if k not in ("context", "context_el")}
        if [ctx_free(r) for r in nrows] != [ctx_free(r) for r in crows]:
            fail("--no-context changed more than the CONTEXT packets")
        nstreams = {c: open(os.path.join(noctx, "g.cpu%d.bin" % c), "rb").read() for c in range(3)}
        n_cmp = 0
        for r in crows:
            if r["kind"] != "record" or r["layout"] != "slots":
                continue
            off, c = int(r["offset"]), int(r["cpu"])
            want = bytearray(streams[c][off:off + 64])
            want[SLOT_CTX:SLOT_OP] = bytes(SLOT_OP - SLOT_CTX)
            if nstreams[c][off:off + 64] != want:
                fail("--no-context slot record cpu %s index %s differs beyond its CONTEXT slot" % (c, r["index"]))
                break
            n_cmp += 1
        if n_cmp < 1000:
            fail("--no-context: only %d slot records compared" % n_cmp)

        # Unpadded: packed records, no pad layout.
        packed = os.path.join(tmp, "packed")
        subprocess.run([exe, "--out-dir", packed, "--prefix", "g", "--records", "500"], check=True)
        psum = summary_of(os.path.join(packed, "g.truth.txt"))
        if psum["pad_layout"] != "" or int(psum["layout.packed"]) != 500 or int(psum["layout.slots"]) != 0:
            fail("unpadded summary %s" % {k: v for k, v in psum.items() if "layout" in k})
        if sum(int(summary["cpu%d.records" % c]) for c in range(3)) != 5000:
            fail("summary per-CPU record counts do not add up")
        for c in range(3):
            if int(summary["cpu%d.bytes" % c]) != len(streams[c]):
                fail("summary cpu%d.bytes differs from the .bin size" % c)
        if summary["hottest.symbol"] != "hot_loop":
            fail("hottest symbol of an 'all' mix is %s, not hot_loop" % summary["hottest.symbol"])

        elf = open(os.path.join(out, "g.elf"), "rb").read()
        if elf[:4] != b"\x7fELF" or int.from_bytes(elf[18:20], "little") != 183:
            fail("fake ELF is not an AArch64 ELF (EM_AARCH64 = 183)")
        data = open(os.path.join(out, "g.data"), "rb").read()
        if data[:8] != b"PERFILE2" or int.from_bytes(data[8:16], "little") != 104:
            fail("perf.data does not start with a 104-byte PERFILE2 header")

        # The ELF's build id: a well-formed note, the summary says it, the
        # perf.data's build-id table carries it for the MMAP2's path, in
        # file and pipe mode; without a perf.data the summary still has it.
        build_id = elf_build_id(os.path.join(out, "g.elf"))
        if not re.fullmatch(r"[0-9a-f]{40}", summary.get("elf.build_id", "")) or summary["elf.build_id"] != build_id:
            fail("summary elf.build_id %s, ELF note %s" % (summary.get("elf.build_id"), build_id))
        if build_id:
            check_build_id_table(os.path.join(out, "g.data"), os.path.join(out, "g.elf"), build_id)
            pipe = os.path.join(tmp, "pipe")
            subprocess.run([exe, "--out-dir", pipe, "--prefix", "g", "--records", "300", "--pipe"], check=True)
            check_build_id_table(os.path.join(pipe, "g.data"), os.path.join(pipe, "g.elf"), build_id)
            nodata = os.path.join(tmp, "nodata")
            subprocess.run([exe, "--out-dir", nodata, "--prefix", "g", "--records", "30", "--no-perf-data"],
                           check=True)
            if summary_of(os.path.join(nodata, "g.truth.txt")).get("elf.build_id") != build_id:
                fail("--no-perf-data: the summary's elf.build_id differs")

        for bad in (["--cpus", "0"], ["--cpus", "65"], ["--garbage", "1.5"], ["--garbage", "-1"],
                    ["--records", "12abc"], ["--scenario", "nope"], ["--scenario", "dram,"], ["--seed", "-3"],
                    ["--chunk-size", "10"], ["--midr", "x86"], ["extra-arg"], ["--padded", "--pad-layout=nope"],
                    ["--padded", "--pad-layout="], ["--pad-layout=split"]):
            p = subprocess.run([exe, "--out-dir", out, "--prefix", "bad"] + bad,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if p.returncode == 0:
                fail("accepted bad arguments %s" % bad)
        print("cli: %d records (%d = %.1f%% in N1 slots), outputs %s; ELF build id %s" % (
            n_rec, n_slots, 100.0 * n_slots / max(n_rec, 1), ", ".join(sorted(first)), build_id))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
