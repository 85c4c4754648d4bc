#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Oracle test: our packet dump (spe_dump_file with SPE_DUMP_F_PERF61, via
# spe-dump-tool) must print every AUXTRACE buffer of a perf.data exactly as
# `perf report -D` does, line for line (offsets, raw bytes, PAD merging,
# "Bad packet!", every packet description). The perf.data files come from
# the synthetic generator (tests/spegen, armprofd-spegen) with all scenarios
# and garbage bytes; the raw SPE bytes are taken from perf's own dump. Each
# buffer is dumped with the MIDR its variant was generated for: the one in
# the generator's truth, which must be the one perf reads from the file's
# HEADER_CPUID. (Today nothing in this text depends on it: perf 6.1 prints
# DATA-SOURCE as a number and drops event bit 12, the one MIDR-specific
# name. The data source's meaning per MIDR is checked on decoded records,
# by test-spe-rec's MIDR cases and, through perf, by spe-oracle.py script.)
#
# Skips (77) without perf. meson builds the generator before the test.
#
# Usage: spe-dump-vs-perf.py PATH-TO-spe-dump-tool PATH-TO-armprofd-spegen

import os
import re
import shutil
import subprocess
import sys
import tempfile

LINE = re.compile(r'^\.  ([0-9a-f]{8}): ((?: [0-9a-f]{2}){1,16})')
HEADER = re.compile(r'^\. \.\.\. ARM SPE data: size (0x[0-9a-f]+|\d+) bytes$')
CPUID = re.compile(r'^# cpuid : (0x[0-9a-f]+)$', re.M)

VARIANTS = [
    ("unpadded-ts-garbage", ["--ts", "--seed", "17", "--records", "1500", "--cpus", "2",
                             "--scenario", "all", "--garbage", "0.03"]),
    ("padded-end", ["--no-ts", "--seed", "18", "--records", "1000", "--cpus", "2", "--padded",
                    "--scenario", "all", "--garbage", "0.01", "--midr", "v1"]),
    ("small-chunks", ["--ts", "--seed", "19", "--records", "800", "--cpus", "1",
                      "--chunk-size", "4K", "--scenario", "all"]),
]


def skip(why):
    print("skip: " + why)
    sys.exit(77)


def truth_midr(path):
    """The MIDR the generator wrote the variant for (truth.txt "midr=")."""
    with open(path) as f:
        for line in f:
            if line.startswith("midr="):
                return int(line[len("midr="):], 0)
    return None


def buffers_of(dump_text):
    """Yield (size, [lines]) for every ARM SPE buffer in `perf report -D` output."""
    cur = None
    for line in dump_text.splitlines():
        m = HEADER.match(line)
        if m:
            if cur is not None:
                yield cur
            cur = (int(m.group(1), 0), [])
            continue
        if cur is not None:
            if LINE.match(line):
                cur[1].append(line)
            else:
                yield cur
                cur = None
    if cur is not None:
        yield cur


def main():
    if len(sys.argv) != 3:
        print("usage: spe-dump-vs-perf.py PATH-TO-spe-dump-tool PATH-TO-armprofd-spegen")
        return 2
    tool, spegen = sys.argv[1], sys.argv[2]
    perf = shutil.which("perf")
    if not perf:
        skip("perf is not installed")
    if subprocess.run([perf, "version"], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode != 0:
        skip("perf does not run here")

    total_lines = total_buffers = bad_lines = 0
    midrs = {}
    with tempfile.TemporaryDirectory(prefix="spe-dump-vs-perf-") as tmp:
        for label, args in VARIANTS:
            data = os.path.join(tmp, label + ".data")
            subprocess.run([spegen, "--out-dir", tmp, "--prefix", label, "--perf-data", data,
                            "--no-bin"] + args, check=True,
                           stdout=subprocess.DEVNULL)
            midr = truth_midr(os.path.join(tmp, label + ".truth.txt"))
            header = subprocess.run([perf, "report", "--header-only", "-i", data], check=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    text=True).stdout
            m = CPUID.search(header)
            if midr is None or not m or int(m.group(1), 16) != midr:
                print("%s: generator truth MIDR %s, perf reads cpuid %s" % (
                    label, midr and hex(midr), m and m.group(1)))
                return 1
            midrs[label] = midr
            out = subprocess.run([perf, "report", "-D", "-i", data], check=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 text=True).stdout
            nbuf = 0
            for size, lines in buffers_of(out):
                raw = bytearray()
                for line in lines:
                    m = LINE.match(line)
                    if int(m.group(1), 16) != len(raw):
                        print("%s: perf dump offsets not contiguous at %s" % (label, line))
                        return 1
                    raw += bytes(int(b, 16) for b in m.group(2).split())
                if len(raw) != size:
                    print("%s: perf dumped %d of %d bytes" % (label, len(raw), size))
                    return 1
                raw_path = os.path.join(tmp, "buf.bin")
                with open(raw_path, "wb") as f:
                    f.write(raw)
                ours = subprocess.run([tool, "--perf61", "--no-header", "--midr", "%x" % midr, raw_path], check=True,
                                      stdout=subprocess.PIPE, text=True).stdout.splitlines()
                if len(ours) != len(lines):
                    print("%s: buffer %d: %d lines, perf has %d" % (label, nbuf, len(ours), len(lines)))
                for a, b in zip(lines, ours):
                    if a != b:
                        bad_lines += 1
                        if bad_lines <= 10:
                            print("%s: buffer %d:\n  perf: %r\n  ours: %r" % (label, nbuf, a, b))
                bad_lines += abs(len(ours) - len(lines))
                total_lines += len(lines)
                nbuf += 1
            if nbuf == 0:
                print("%s: perf printed no ARM SPE buffer" % label)
                return 1
            total_buffers += nbuf

    print("compared %d dump lines in %d buffers: %d mismatches; MIDRs %s" % (
        total_lines, total_buffers, bad_lines, ", ".join("%s %#x" % kv for kv in midrs.items())))
    return 1 if bad_lines else 0


if __name__ == "__main__":
    sys.exit(main())
