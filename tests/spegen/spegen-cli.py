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
import shutil
import subprocess
import sys
import tempfile

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


# The Neoverse N1 fixed-slot record (../shared/reference/spe-format.md §10,
# the quipper and WindowsPerf captures in ../shared/testdata/spe): the
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

        for bad in (["--cpus", "0"], ["--cpus", "65"], ["--garbage", "1.5"], ["--garbage", "-1"],
                    ["--records", "12abc"], ["--scenario", "nope"], ["--scenario", "dram,"], ["--seed", "-3"],
                    ["--chunk-size", "10"], ["--midr", "x86"], ["extra-arg"], ["--padded", "--pad-layout=nope"],
                    ["--padded", "--pad-layout="], ["--pad-layout=split"]):
            p = subprocess.run([exe, "--out-dir", out, "--prefix", "bad"] + bad,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if p.returncode == 0:
                fail("accepted bad arguments %s" % bad)
        print("cli: %d records (%d = %.1f%% in N1 slots), outputs %s" % (
            n_rec, n_slots, 100.0 * n_slots / max(n_rec, 1), ", ".join(sorted(first))))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
