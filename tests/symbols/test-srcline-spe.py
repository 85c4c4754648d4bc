#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""SPE records at the fixture's own store and load instructions (issue 37's test), replayed:

  - the PCs: the instructions of worker_a() (worker_b()) that addr2line -f -i says are
    count_hit() (count_miss()) inlined at the source line holding `s->hits++`
    (`s->misses++`), a store being a mov from a register to memory, a load the reverse
    (objdump -d); the data addresses: stats + offsetof(struct stats, hits/misses), nm and
    a helper compiled from the fixture's source; the mappings: the fixture's PT_LOADs as
    the loader maps them (readelf -l); CPUs 0,1 store .hits, CPUs 2,3 store .misses;
  - /hotlines (armprofd --replay): the line of stats leads, false_sharing; each offset
    names its data symbol (stats+0x0, stats+0x8), member (struct stats.hits, .misses),
    function and source (addr2line's innermost FILE:LINE); the line's summary names both
    members with their writers' CPUs and functions;
  - /debug/pprof/spe: go tool pprof -list count_hit shows the `s->hits++` line with
    samples (skipped without go).

  test-srcline-spe.py FIXTURE SRCLINE_SPE
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

os.environ.setdefault("ARMPROFD_BIN", os.path.join(os.environ["ARMPROFD_BUILD_DIR"], "daemon", "armprofd"))
sys.path.insert(0, os.path.join(os.environ["ARMPROFD_SOURCE_DIR"], "tests", "integration"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon, go_env  # noqa: E402
from importlib import import_module  # noqa: E402

srcline = import_module("test-srcline")

BASE = 0x555555554000
PAGE = 0x1000
PID = 4343
RECORDS = 40    # per store PC and CPU


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def main():
    fixture, tool = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    for t in ("addr2line", "objdump", "readelf", "nm", "cc"):
        if not shutil.which(t):
            print("SKIP: no " + t)
            sys.exit(77)
    src = os.path.join(os.environ["ARMPROFD_SOURCE_DIR"], "tests/symbols/srcline-fixture.c")
    insns = {}
    cur = None
    for line in run(["objdump", "-d", "--no-show-raw-insn", fixture]).splitlines():
        m = re.match(r"^([0-9a-f]+) <([^>]+)>:$", line)
        if m:
            cur = m.group(2)
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(\S+)\s+(.*)$", line)
        if m and cur in ("worker_a", "worker_b"):
            insns[int(m.group(1), 16)] = (cur, m.group(2), m.group(3).split("#")[0].strip())
    frames = srcline.addr2line(fixture, sorted(insns))
    with tempfile.TemporaryDirectory() as tmp:
        lay = srcline.layout(src, tmp)
        stats = srcline.object_symbols(fixture)["stats"][0]
        recs, want = [], {}
        for inner, outer, text, member, cpus in (("count_hit", "worker_a", "s->hits++", "hits", (0, 1)),
                                                 ("count_miss", "worker_b", "s->misses++", "misses", (2, 3))):
            line = srcline.source_line(src, text)
            pcs = {"st": [], "ld": []}
            for v, (fn, op, args) in insns.items():
                fr = frames[v]
                if fn != outer or fr[0][0] != inner or fr[0][2] != line or op not in ("mov", "movq", "add", "addq"):
                    continue
                ops = args.split(",")
                if len(ops) == 2 and ops[0].startswith("%") and "(" in ops[1]:
                    pcs["st"].append(v)
                elif len(ops) == 2 and "(" in ops[0] and ops[1].startswith("%"):
                    pcs["ld"].append(v)
            if not pcs["st"]:
                fail("no store of %s() in %s() at line %d: %s" % (inner, outer, line,
                                                                    [(hex(v), i) for v, i in insns.items()
                                                                     if frames[v][0][0] == inner]))
            va = BASE + stats + lay[member]
            for cpu in cpus:
                for pc in pcs["st"]:
                    recs += ["%d:%d:%#x:%#x:st" % (cpu, PID + 1 + cpu, BASE + pc, va)] * RECORDS
                for pc in pcs["ld"]:
                    recs += ["%d:%d:%#x:%#x:ld" % (cpu, PID + 1 + cpu, BASE + pc, va)] * RECORDS
            for pc in pcs["st"]:
                f = frames[pc][0]
                want[BASE + pc] = (lay[member], "stats+%#x" % lay[member], "struct stats." + member, outer,
                                   "%s:%d" % (f[1], f[2]), set(cpus))
        maps = []
        for off, va, filesz, memsz, flags in srcline.load_segments(fixture):
            start = BASE + (va & ~(PAGE - 1))
            end = BASE + ((va + filesz + PAGE - 1) & ~(PAGE - 1))
            maps.append("map:%x:%x:%x:%s" % (start, end - start, off & ~(PAGE - 1), "rx" if "E" in flags else "rw"))
        data = os.path.join(tmp, "fixture.data")
        run([tool, data, fixture, str(PID), "srcline-fixtur"] + maps + recs)

        with Daemon(args=["--replay", data], config_text="[spe]\nenable = no\n") as d:
            d.wait_ready(60)
            st, _, body = d.get("/hotlines?window=all&all=1")
            assert st == 200, (st, body[:300])
            lines = json.loads(body)["lines"]
            line_va = "%#x" % ((BASE + stats + lay["hits"]) & ~63)
            first = lines[0] if lines else {}
            if first.get("address") != line_va or first.get("class") != "false_sharing":
                fail("/hotlines leads with %s (%s), want stats' line %s false_sharing" %
                     (first.get("address"), first.get("class"), line_va))
            seen = set()
            for o in first["offsets"]:
                pc = int(o["pc"], 16)
                if pc not in want:
                    continue
                off, dsym, member, fn, source, cpus = want[pc]
                have = (int(o["offset"], 16) - (BASE + stats) % 64, o.get("data_symbol"), o.get("data_member"),
                        o.get("symbol"), os.path.normpath(o.get("source", "")), set(o["cpus"]))
                exp = (off, dsym, member, fn, os.path.normpath(source), cpus)
                if have != exp:
                    fail("offset %s pc %s: %s, want %s" % (o["offset"], o["pc"], have, exp))
                seen.add(pc)
            if seen != set(want):
                fail("stores listed %s, want %s" % (sorted(map(hex, seen)), sorted(map(hex, want))))
            o0 = (BASE + stats) % 64
            summary = ("2 members written by different CPUs: .hits @%#x by CPUs 0,1 (worker_a), "
                       ".misses @%#x by CPUs 2,3 (worker_b)" % (o0 + lay["hits"], o0 + lay["misses"]))
            summary = summary.replace("@0x", "@+0x")
            if first.get("summary") != summary:
                fail("summary %r, want %r" % (first.get("summary"), summary))
            print("ok: /hotlines leads with stats' line: %d stores named by data symbol, member, function and "
                  "source as objdump, nm, offsetof() and addr2line give them; %s" % (len(seen), first["summary"]))

            go = shutil.which("go")
            if not go:
                print("go absent: go tool pprof -list not run")
                return
            st, _, body = d.get("/debug/pprof/spe?window=all")
            assert st == 200, (st, body[:200])
            prof = os.path.join(tmp, "spe.pb.gz")
            with open(prof, "wb") as f:
                f.write(body)
            listing = run([go, "tool", "pprof", "-symbolize=none", "-list", "^count_hit$", prof], env=go_env(tmp))
            hit_line = srcline.source_line(src, "s->hits++")
            m = re.search(r"^\s*(\S+)\s+(\S+)\s+%d:\s+s->hits\+\+;" % hit_line, listing, re.M)
            if not m or m.group(2) == ".":
                fail("go tool pprof -list count_hit: no samples at line %d: %s" % (hit_line, listing[-800:]))
            print("ok: /debug/pprof/spe: go tool pprof -list count_hit: " + m.group(0).strip())


if __name__ == "__main__":
    main()
