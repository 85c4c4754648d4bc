#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A profile written by exporters/pprof.c from the generator's perf.data
(replayed, symbolized by symbols/symbols.c) read back by independent tools:

  protoc  `protoc --decode=perftools.profiles.Profile` with proto/profile.proto
          parses it; string_table[0] is ""; as many samples as the writer
          made, their values summing to the records with a PC.
  go      `go tool pprof -raw` totals equal the records with a PC; `-top`
          names the generator's hottest symbol first and every function with
          the generator's own count.

Usage: test-pprof-tools.py protoc|go ARMPROFD-SPEGEN PPROF-FROM-PERF
Exits 77 when the tool is missing."""

import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
RECORDS = 2000


def facts(text):
    out = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            k, v = line.split("=", 1)
            out[k] = v
    return out


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def expect(cond, msg):
    if not cond:
        fail(msg)


def make_profile(tmp, spegen, tool):
    subprocess.run([spegen, "--out-dir", tmp, "--prefix", "p", "--records", str(RECORDS),
                    "--scenario", "all", "--no-bin", "--no-truth"], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(tmp, "p.truth.txt")) as f:
        truth = facts(f.read())
    out = os.path.join(tmp, "p.pb.gz")
    written = facts(subprocess.run([tool, os.path.join(tmp, "p.data"), out], check=True,
                                   capture_output=True, text=True).stdout)
    expect(int(written["records_with_pc"]) == RECORDS,
           f"records with a PC: {written['records_with_pc']}, generator wrote {RECORDS}")
    return truth, written, out


def check_protoc(tmp, truth, written, profile):
    src = os.environ.get("ARMPROFD_SOURCE_DIR",
                         os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    proto_dir = os.path.join(src, "proto")
    with gzip.open(profile) as f:
        raw = f.read()
    r = subprocess.run(["protoc", "--decode=perftools.profiles.Profile", f"--proto_path={proto_dir}",
                        os.path.join(proto_dir, "profile.proto")], input=raw, capture_output=True)
    expect(r.returncode == 0, f"protoc --decode failed: {r.stderr.decode(errors='replace')}")
    text = r.stdout.decode()
    samples = re.findall(r"^sample \{\n((?:  .*\n)*?)\}", text, re.M)
    print(f"protoc: {len(samples)} samples, {len(text)} bytes of text")
    expect(len(samples) == int(written["samples"]),
           f"protoc shows {len(samples)} samples, the writer made {written['samples']}")
    total = sum(int(v) for s in samples for v in re.findall(r"^  value: (\d+)$", s, re.M))
    expect(total == RECORDS, f"sample values sum to {total}, expected {RECORDS}")
    strings = re.findall(r'^string_table: "(.*)"$', text, re.M)
    expect(strings and strings[0] == "", f"string_table[0] is {strings[:1]!r}, must be \"\"")
    expect(truth["hottest.symbol"] in strings, "the hottest symbol is not in the string table")


def run_pprof(tmp, env, *args):
    r = subprocess.run(["go", "tool", "pprof", "-symbolize=none", *args], env=env, capture_output=True,
                       text=True, timeout=240)
    expect(r.returncode == 0, f"go tool pprof {' '.join(args)} failed ({r.returncode}): {r.stderr}")
    return r.stdout


def check_go(tmp, truth, written, profile):
    home = os.path.join(tmp, "home")
    os.mkdir(home)
    env = dict(os.environ, HOME=home, GOCACHE=os.path.join(tmp, "gocache"), PPROF_TMPDIR=home,
               GOTOOLCHAIN="local", GOFLAGS="")

    raw = run_pprof(tmp, env, "-raw", profile)
    print("go tool pprof -raw (first lines):\n" + "\n".join(raw.splitlines()[:8]))
    m = re.search(r"^Samples:\n(.*?)^Locations", raw, re.M | re.S)
    expect(m, "no Samples/Locations sections in -raw output")
    counts = [int(v) for v in re.findall(r"^\s+(\d+): [\d ]+$", m.group(1), re.M)]
    expect(len(counts) == int(written["samples"]), f"-raw shows {len(counts)} samples, wrote {written['samples']}")
    expect(sum(counts) == RECORDS, f"-raw sample total {sum(counts)}, records with a PC {RECORDS}")

    top = run_pprof(tmp, env, "-top", profile)
    print("go tool pprof -top (first lines):\n" + "\n".join(top.splitlines()[:8]))
    m = re.search(r"of (\d+) total", top)
    expect(m and int(m.group(1)) == RECORDS, f"-top total is not {RECORDS}")
    rows = re.findall(r"^\s*(\d+)\s+\S+%\s+\S+%\s+\d+\s+\S+%\s+(\S+)\s*$", top, re.M)
    expect(rows, "no rows in -top output")
    expect(rows[0][1] == truth["hottest.symbol"],
           f"-top names {rows[0][1]} first, the generator's hottest is {truth['hottest.symbol']}")
    for flat, name in rows:
        want = truth.get(f"function_records.{name}")
        expect(want is not None and int(flat) == int(want),
               f"-top: {name} has {flat} samples, the generator made {want}")
    expect(len(rows) == sum(1 for k, v in truth.items() if k.startswith("function_records.") and int(v) > 0),
           "-top does not list every function with records")


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("protoc", "go"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, spegen, tool = sys.argv[1:]
    if not shutil.which(mode):
        print(f"SKIP: {mode} not found (Debian: {'protobuf-compiler' if mode == 'protoc' else 'golang-go'})")
        return SKIP
    with tempfile.TemporaryDirectory(prefix="armprofd-pprof-") as tmp:
        truth, written, profile = make_profile(tmp, spegen, tool)
        (check_protoc if mode == "protoc" else check_go)(tmp, truth, written, profile)
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
