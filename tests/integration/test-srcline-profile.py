#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Source lines in a live daemon's CPU profile (root: the cpu-clock sampler;
go for go tool pprof; skips otherwise), while tests/symbols' srcline-fixture
(built -O2 -g, stores in inlined functions) runs:

  - every location of the fixture's mapping in /debug/pprof/profile has the
    Lines binutils' addr2line -f -i gives for its address (a leaf's, or for a
    caller's return address the call's, address - 1), innermost first: the
    same functions, files and lines, read by go tool pprof -raw;
  - some of its samples are in count_hit() or shard_add() inlined into
    worker_a() (its whole loop);
  - go tool pprof -list count_hit shows the fixture's source text at the line
    of `s->hits++` (the line found in the source file by the test), with
    samples; -lines -top names fixture lines;
  - /hotpcs?pid=FIXTURE: each row of the fixture's file has the "source"
    addr2line gives its pc (placed by /proc/PID/maps, the innermost frame's
    FILE:LINE); the text rendering has a Source:Line column with them.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon, check, failures, go_env, need_cpu_sampling, need_go  # noqa: E402

need_cpu_sampling()
go = need_go()

BUILD = os.environ["ARMPROFD_BUILD_DIR"]
SOURCE = os.environ["ARMPROFD_SOURCE_DIR"]
FIXTURE = os.path.realpath(os.path.join(BUILD, "tests", "symbols", "srcline-fixture"))
FIXTURE_SRC = os.path.join(SOURCE, "tests", "symbols", "srcline-fixture.c")
CONFIG = "[pmu]\nenable = no\n[spe]\nenable = no\n"

tmp = tempfile.mkdtemp(prefix="armprofd-srcline-")
env = go_env(tmp)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=240)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr[-500:]}")
    return r.stdout


def source_line(text):
    with open(FIXTURE_SRC) as f:
        for n, line in enumerate(f, 1):
            if text in line:
                return n
    raise AssertionError(f"no {text!r} in {FIXTURE_SRC}")


def raw(path):
    """go tool pprof -raw: {mapping id: (start, limit, offset, file)}, {location id: (address, mapping id,
    [(function, file, line)])}, and the samples' location ids (leaf first)."""
    text = run([go, "tool", "pprof", "-symbolize=none", "-raw", path])
    maps, locs, samples = {}, {}, []
    section, cur = None, None
    for line in text.splitlines():
        if line.startswith("Samples:"):
            section = "s"
        elif line.startswith("Locations"):
            section = "l"
        elif line.startswith("Mappings"):
            section = "m"
        elif section == "s":
            m = re.match(r"^\s+\d+\s+\d+:((?:\s+\d+)+)\s*$", line)
            if m:
                samples.append([int(x) for x in m.group(1).split()])
        elif section == "l":
            m = re.match(r"^\s+(\d+): (0x[0-9a-f]+) (?:M=(\d+) )?(.*)$", line)
            if m:
                cur = int(m.group(1))
                locs[cur] = (int(m.group(2), 16), int(m.group(3) or 0), [])
                rest = m.group(4)
            else:
                rest = line.strip()
            m = re.match(r"^(\S+) (\S*):(\d+)(?::\d+)? s=\d+", rest)
            if m and cur is not None:
                locs[cur][2].append((m.group(1), m.group(2), int(m.group(3))))
        elif section == "m":
            m = re.match(r"^\s*(\d+): (0x[0-9a-f]+)/(0x[0-9a-f]+)/(0x[0-9a-f]+) (\S+)", line)
            if m:
                maps[int(m.group(1))] = (int(m.group(2), 16), int(m.group(3), 16), int(m.group(4), 16), m.group(5))
    return maps, locs, samples


def file_vaddr(offset):
    """The ELF virtual address of a file offset of the fixture, by its PT_LOADs (readelf -l)."""
    out = run(["readelf", "-lW", FIXTURE])
    for m in re.finditer(r"^\s+LOAD\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+\S+\s+(0x[0-9a-f]+)", out, re.M):
        off, va, size = (int(x, 16) for x in m.groups())
        if off <= offset < off + size:
            return va + offset - off
    raise AssertionError(f"no PT_LOAD of {FIXTURE} holds offset {offset:#x}")


def addr2line(vaddrs):
    out = run(["addr2line", "-a", "-f", "-i", "-e", FIXTURE] + [f"{v:#x}" for v in vaddrs]).splitlines()
    res, cur, i = {}, None, 0
    while i < len(out):
        if re.match(r"^0x[0-9a-f]+$", out[i]):
            cur = int(out[i], 16)
            res[cur] = []
            i += 1
            continue
        loc = re.sub(r" \(discriminator \d+\)$", "", out[i + 1])
        path, _, num = loc.rpartition(":")
        res[cur].append((out[i], os.path.normpath(path) if path != "??" else "", int(num) if num.isdigit() else 0))
        i += 2
    return res


def runtime_vaddr(pid, pc):
    """The fixture's ELF virtual address of runtime pc in process pid: /proc/PID/maps places it in a file offset."""
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            fields = line.split(None, 5)
            if len(fields) < 6 or fields[5].strip() != FIXTURE:
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if start <= pc < end:
                return file_vaddr(pc - start + int(fields[2], 16))
    raise AssertionError(f"{pc:#x} is in no mapping of {FIXTURE} in {pid}")


fixture = None
try:
    with Daemon(config_text=CONFIG) as d:
        d.wait_serving()
        fixture = subprocess.Popen([FIXTURE, "60"])
        path = os.path.join(tmp, "cpu.pb.gz")
        deadline, ours = time.monotonic() + 90, []
        while time.monotonic() < deadline:
            # The fixture's mapping reaches the readers' table at an epoch end: until then, no names.
            st, _, body = d.request("GET", "/debug/pprof/profile?seconds=5", timeout=60)
            assert st == 200, (st, body[:200])
            with open(path, "wb") as f:
                f.write(body)
            maps, locs, samples = raw(path)
            fm = {i for i, m in maps.items() if m[3] == FIXTURE}
            ours = {i: l for i, l in locs.items() if l[1] in fm}
            if any(l[2] for l in ours.values()):
                break
            time.sleep(1)
        check(any(l[2] for l in ours.values()), f"locations of {FIXTURE} with lines: {len(ours)} locations")

        leaves = {s[0] for s in samples}
        callers = {x for s in samples for x in s[1:]}
        want_at = {}
        for i, (addr, mid, lines) in ours.items():
            start, limit, off, _ = maps[mid]
            va = file_vaddr(addr - start + off)
            want_at[i] = va if i in leaves else va - 1
            if i in leaves and i in callers:
                want_at[i] = None  # a leaf here and a return address there: ambiguous, left out
        truth = addr2line([v for v in want_at.values() if v is not None])
        bad, compared = [], 0
        for i, (addr, mid, lines) in ours.items():
            if want_at[i] is None:
                continue
            want = truth[want_at[i]]
            want = [] if want == [(want[0][0], "", 0)] else want
            have = [(f, os.path.normpath(p) if p else "", n) for f, p, n in lines]
            # A location without lines keeps its function's one Line (file "", line 0).
            if not want and len(have) == 1 and have[0][1:] == ("", 0):
                have = []
            compared += 1
            if have != want:
                bad.append(f"{addr:#x} (vaddr {want_at[i]:#x}): ours {have}, addr2line {want}")
        check(compared > 0 and not bad, f"{compared} fixture locations' lines as addr2line -f -i gives them"
              + (": " + "; ".join(bad[:5]) if bad else ""))
        # worker_a's loop is count_hit() and shard_add() inlined: seconds of samples land in them.
        inl = {(l[2][0][0], l[2][-1][0]) for l in ours.values() if len(l[2]) > 1}
        check(("count_hit", "worker_a") in inl or ("shard_add", "worker_a") in inl,
              f"inlined frames (count_hit or shard_add in worker_a): {sorted(inl)}")
        hit_line = source_line("s->hits++")
        listing = run([go, "tool", "pprof", "-symbolize=none", "-list", "^count_hit$", path])
        m = re.search(rf"^\s*(\S+)\s+(\S+)\s+{hit_line}:\s+s->hits\+\+;", listing, re.M)
        check(m is not None and m.group(2) != ".",
              f"-list count_hit shows {FIXTURE_SRC}:{hit_line} `s->hits++;` with samples: "
              + (m.group(0).strip() if m else listing[-600:]))
        st, _, body = d.request("GET", f"/hotpcs?pid={fixture.pid}&window=all&limit=50", timeout=30)
        rows = [r for r in json.loads(body)["pcs"] if r.get("object") == FIXTURE]
        truth = addr2line([runtime_vaddr(fixture.pid, int(r["pc"], 16)) for r in rows])
        bad = []
        for r in rows:
            want = truth[runtime_vaddr(fixture.pid, int(r["pc"], 16))][0]
            want = f"{want[1]}:{want[2]}" if want[2] else None
            if (os.path.normpath(r["source"]) if "source" in r else None) != want:
                bad.append(f"{r['pc']} {r.get('symbol')}: {r.get('source')}, addr2line {want}")
        check(rows and not bad and any("source" in r for r in rows),
              f"/hotpcs: {len(rows)} rows of the fixture, their source as addr2line's: {bad[:4]}")
        st, _, text = d.request("GET", f"/hotpcs?pid={fixture.pid}&window=all&limit=50&format=text", timeout=30)
        text = text.decode()
        check("Source:Line" in text and any(r["source"] in text for r in rows if "source" in r),
              "/hotpcs?format=text: a Source:Line column with the rows' sources")
        top = run([go, "tool", "pprof", "-symbolize=none", "-lines", "-top", path])
        check(re.search(r"srcline-fixture\.c:\d+", top) is not None,
              "-lines -top names fixture lines: " + " | ".join(top.splitlines()[5:9]))
finally:
    if fixture:
        fixture.kill()
        fixture.wait()

sys.exit(1 if failures else 0)
