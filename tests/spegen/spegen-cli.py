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
        n_rec = 0
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
        if n_rec != 5000:
            fail("%d record rows for 5000 records" % n_rec)
        summary = dict(l.rstrip("\n").split("=", 1) for l in open(os.path.join(out, "g.truth.txt"))
                       if "=" in l and not l.startswith("#"))
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
                    ["--chunk-size", "10"], ["--midr", "x86"], ["extra-arg"]):
            p = subprocess.run([exe, "--out-dir", out, "--prefix", "bad"] + bad,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if p.returncode == 0:
                fail("accepted bad arguments %s" % bad)
        print("cli: %d records, outputs %s" % (n_rec, ", ".join(sorted(first))))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
