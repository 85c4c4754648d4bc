#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A CPU profile written by exporters/cpu-profile.c (test-cpu-profile --write:
stacks the test fed into the store over two epochs, named by a fake
symbolizer) read back by `go tool pprof`, compared with what was fed:

  -traces   each fed stack once, its functions in order leaf first, its
            labels (pid, tid, comm, thread, cgroup, service; empty ones
            absent) and its CPU time in nanoseconds;
  -top      with -sample_index=cpu the total is the sum of the weights fed,
            with -sample_index=samples the number of samples fed;
  -raw      the period type cpu/nanoseconds, the period, the sample types
            samples/count and cpu/nanoseconds with cpu the default.

Usage: test-cpu-profile.py TEST-CPU-PROFILE
Exits 77 when go is missing."""

import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def expect(cond, msg):
    if not cond:
        fail(msg)


def facts(text):
    out = {}
    for line in text.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k] = v
    return out


def run_pprof(env, *args):
    r = subprocess.run(["go", "tool", "pprof", "-symbolize=none", *args], env=env, capture_output=True,
                       text=True, timeout=240)
    expect(r.returncode == 0, f"go tool pprof {' '.join(args)} failed ({r.returncode}): {r.stderr}")
    return r.stdout


def parse_traces(text):
    """-traces output: blocks between separator lines, label lines 'key:  value', then
    'VALUEns   leaf' and one function a line. Returns [(value, labels, functions)]."""
    blocks = re.split(r"^-+\+-+$", text, flags=re.M)[1:]
    out = []
    for b in blocks:
        labels, funcs, value = {}, [], None
        for line in b.splitlines():
            if not line.strip():
                continue
            m = re.match(r"^\s*(\w+):\s+(.*)$", line)
            if m and value is None:
                labels[m.group(1)] = m.group(2).strip()
                continue
            m = re.match(r"^\s*(\d+)ns\s+(\S.*)$", line)
            if m and value is None:
                value = int(m.group(1))
                funcs.append(m.group(2).strip())
                continue
            funcs.append(line.strip())
        if value is not None:
            out.append((value, labels, funcs))
    return out


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    if not shutil.which("go"):
        print("SKIP: go not found (Debian: golang-go)")
        return SKIP
    with tempfile.TemporaryDirectory(prefix="armprofd-cpu-profile-") as tmp:
        profile = os.path.join(tmp, "cpu.pb.gz")
        fed = facts(subprocess.run([sys.argv[1], "--write", profile], check=True, capture_output=True,
                                   text=True).stdout)
        home = os.path.join(tmp, "home")
        os.mkdir(home)
        env = dict(os.environ, HOME=home, GOCACHE=os.path.join(tmp, "gocache"), PPROF_TMPDIR=home,
                   GOTOOLCHAIN="local", GOFLAGS="")

        traces = parse_traces(run_pprof(env, "-traces", "-unit=ns", profile))
        n = int(fed["stacks"])
        expect(len(traces) == n, f"-traces shows {len(traces)} stacks, {n} were fed")
        for i in range(n):
            labels = dict(kv.split(":", 1) for kv in fed[f"stack.{i}.labels"].split(","))
            # pprof shows a location without a function as <unknown>.
            funcs = [f if f != "?" else "<unknown>" for f in fed[f"stack.{i}.functions"].split(";")]
            cpu = int(fed[f"stack.{i}.cpu"])
            hits = [t for t in traces if t[1] == labels and t[2] == funcs]
            expect(len(hits) == 1, f"stack {i} ({';'.join(funcs)} with {labels}) shown {len(hits)} times in -traces:"
                   f" {traces}")
            expect(hits[0][0] == cpu, f"stack {i}: -traces shows {hits[0][0]} ns, fed {cpu}")
        print(f"go tool pprof -traces: {n} stacks in order with their labels and CPU time")

        top = run_pprof(env, "-sample_index=cpu", "-unit=ns", "-top", profile)
        m = re.search(r"of (\d+)ns total", top)
        expect(m and int(m.group(1)) == int(fed["cpu"]), f"-sample_index=cpu -top total is not {fed['cpu']} ns:\n{top}")
        top = run_pprof(env, "-sample_index=samples", "-top", profile)
        m = re.search(r"of (\d+) total", top)
        expect(m and int(m.group(1)) == int(fed["samples"]), f"-sample_index=samples -top total is not {fed['samples']}")
        print(f"go tool pprof -top: {fed['cpu']} ns in {fed['samples']} samples")

        raw = run_pprof(env, "-raw", profile)
        expect(re.search(r"^PeriodType: cpu nanoseconds$", raw, re.M), f"-raw period type:\n{raw[:300]}")
        expect(re.search(rf"^Period: {fed['period']}$", raw, re.M), f"-raw period is not {fed['period']}")
        expect(re.search(r"^samples/count cpu/nanoseconds\[dflt\]$", raw, re.M), f"-raw sample types:\n{raw[:400]}")
        print("go tool pprof -raw: period type cpu/nanoseconds, period", fed["period"])
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
