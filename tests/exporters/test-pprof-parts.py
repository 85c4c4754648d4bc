#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The parts of a split profile (exporters/pprof.c, pprof_finish_parts(); written
by test-pprof-parts DIR: 50 samples of weights 1..50 and 1000 times that in
nanoseconds, at most 16 samples a part) each read by `go tool pprof -raw`:

  every part reads, with the sample types samples/count and cpu/nanoseconds;
  parts hold 16, 16, 16 and 2 samples, the heaviest first;
  the values over all parts sum to what the test added: 1275 and 1275000.

Usage: test-pprof-parts.py TEST-PPROF-PARTS
Exits 77 when go is missing."""

import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
N = 50


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def expect(cond, msg):
    if not cond:
        fail(msg)


def raw_samples(text):
    """The (samples, cpu) values of -raw's "Samples:" section."""
    expect(re.search(r"^samples/count(\[dflt\])? cpu/nanoseconds$", text, flags=re.M), f"sample types missing:\n{text}")
    section = text.split("Samples:", 1)[1].split("Locations", 1)[0]
    return [(int(m.group(1)), int(m.group(2)))
            for m in re.finditer(r"^\s*(-?\d+)\s+(-?\d+):", section, flags=re.M)]


def main():
    if len(sys.argv) != 2:
        fail("usage: test-pprof-parts.py TEST-PPROF-PARTS")
    if not shutil.which("go"):
        print("go not found: skipping")
        sys.exit(SKIP)
    with tempfile.TemporaryDirectory(prefix="armprofd-pprof-parts-") as tmp:
        home = os.path.join(tmp, "home")
        os.mkdir(home)
        r = subprocess.run([sys.argv[1], tmp], capture_output=True, text=True, timeout=60)
        expect(r.returncode == 0, f"test-pprof-parts {tmp} failed: {r.stderr}")
        n = int(r.stdout.strip())
        expect(n == 4, f"{n} parts, want 4 (50 samples, 16 a part)")
        env = dict(os.environ, HOME=home, GOCACHE=os.path.join(tmp, "gocache"), PPROF_TMPDIR=home,
                   GOTOOLCHAIN="local", GOFLAGS="")
        total = [0, 0]
        prev_min = None
        for i in range(n):
            path = os.path.join(tmp, f"part-{i}.pb.gz")
            p = subprocess.run(["go", "tool", "pprof", "-symbolize=none", "-raw", path], env=env,
                               capture_output=True, text=True, timeout=240)
            expect(p.returncode == 0, f"go tool pprof -raw part {i} failed ({p.returncode}): {p.stderr}")
            samples = raw_samples(p.stdout)
            expect(len(samples) == (16 if i < 3 else 2), f"part {i}: {len(samples)} samples")
            for s, c in samples:
                expect(c == 1000 * s, f"part {i}: sample {s} {c}")
            if prev_min is not None:
                expect(max(s for s, _ in samples) < prev_min, f"part {i} not lighter than part {i - 1}")
            prev_min = min(s for s, _ in samples)
            total[0] += sum(s for s, _ in samples)
            total[1] += sum(c for _, c in samples)
        want = N * (N + 1) // 2
        expect(total == [want, 1000 * want], f"sums {total}, want {[want, 1000 * want]}")
    print(f"{n} parts read by go tool pprof -raw; sums {total}")


if __name__ == "__main__":
    main()
