#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""perf.data -> spe_replay (reader, per-CPU decoders, thread attribution) reproduces the
generator's ground truth for every record, in file and pipe mode, with garbage
injected between records; the decoder's error counts equal the garbage bytes."""

import csv
import os
import subprocess
import sys
import tempfile

spegen = os.path.join(os.environ["ARMPROFD_BUILD_DIR"], "tests", "spegen", "armprofd-spegen")
dump = os.path.join(os.environ["ARMPROFD_BUILD_DIR"], "tests", "spe", "spe-replay-dump")
VA_MASK = (1 << 56) - 1


def num(s):
    return int(s, 16) if s.startswith("0x") else int(s)


def expected(row):
    """What the decoder must report for a truth row (perf's address rules, arm-spe-decoder.c)."""
    el, ns = int(row["el"]), int(row["ns"])
    pc = num(row["pc"])
    if ns == 1 and el in (1, 2):
        pc |= 0xFF << 56
    va = ""
    if row["va"]:
        v = num(row["va"]) & VA_MASK
        if (v >> 52) & 0xF == 0xF:
            v |= 0xFF << 56
        va = f"{v:x}"
    return [row["cpu"], f"{pc:x}", str(el), str(ns), va,
            f"{num(row['pa']):x}" if row["pa"] else "",
            str(num(row["tot_lat"]) if row["tot_lat"] else 0),
            str(num(row["issue_lat"]) if row["issue_lat"] else 0),
            str(num(row["xlat_lat"]) if row["xlat_lat"] else 0),
            f"{num(row['events']) if row['events'] else 0:x}",
            f"{num(row['data_source']):x}" if row["data_source"] else "",
            row["context"], row["pid"], row["tid"]]


def check(args, tag):
    with tempfile.TemporaryDirectory(prefix="armprofd-replay-") as tmp:
        subprocess.run([spegen, "--out-dir", tmp, "--prefix", "r", *args], check=True,
                       stdout=subprocess.DEVNULL)
        truth = {}
        garbage = {}
        last_context = {}
        with open(os.path.join(tmp, "r.truth.csv"), newline="") as f:
            for row in csv.DictReader(f):
                if row["kind"] == "record":
                    e = expected(row)
                    # Without a CONTEXT packet the stream does not say which thread ran:
                    # the last CONTEXT on that CPU holds, as in perf (the generator's
                    # truth knows the real thread, which no decoder can).
                    if row["context"]:
                        last_context[row["cpu"]] = row["context"]
                    else:
                        e[-1] = last_context.get(row["cpu"], "-1")
                        if e[-1] == "-1":
                            e[-2] = "-1"
                    truth.setdefault(row["cpu"], []).append(e)
                else:
                    garbage[row["cpu"]] = garbage.get(row["cpu"], 0) + int(row["size"])
        out = subprocess.run([dump, os.path.join(tmp, "r.data")], check=True, capture_output=True,
                             text=True).stdout
    got, stats, mappings = {}, {}, []
    for line in out.splitlines():
        if line.startswith("# mapping "):
            mappings.append(line.split())
        elif line.startswith("# cpu "):
            f = line.split()
            stats[f[2]] = dict(zip(f[3::2], f[4::2]))
        elif not line.startswith("#"):
            row = line.split(",")
            got.setdefault(row[0], []).append(row)
    assert set(got) == set(truth), (sorted(got), sorted(truth))
    n = 0
    for cpu in truth:
        assert len(got[cpu]) == len(truth[cpu]), (tag, cpu, len(got[cpu]), len(truth[cpu]))
        for i, (g, t) in enumerate(zip(got[cpu], truth[cpu])):
            if g != t:
                raise AssertionError(f"{tag}: cpu {cpu} record {i}:\n got  {g}\n want {t}")
            n += 1
        assert int(stats[cpu]["bad_header"]) == garbage.get(cpu, 0), (tag, cpu, stats[cpu], garbage)
        assert int(stats[cpu]["dropped"]) == 0, stats[cpu]
    # The fake ELF the user PCs live in reaches the sink as pid 4242's mapping at 0xaaaac0000000.
    elf = [m for m in mappings if m[3] == "4242" and m[5] == "aaaac0000000"]
    assert elf and elf[0][-1].endswith("r.elf"), mappings
    print(f"{tag}: {n} records equal the truth; decode errors {sum(garbage.values())} = garbage bytes")


check(["--seed", "11", "--records", "30000", "--cpus", "4", "--scenario", "all", "--garbage", "0.01"],
      "file mode, END, garbage")
check(["--seed", "12", "--records", "20000", "--cpus", "8", "--scenario", "all", "--ts", "--padded",
       "--midr", "v1", "--chunk-size", "4096"], "file mode, TIMESTAMP, padded, small AUX chunks")
check(["--seed", "13", "--records", "10000", "--cpus", "2", "--scenario", "all", "--pipe", "--garbage", "0.02"],
      "pipe mode")
