#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Commands in a replay, against `perf script` on the same generator file (skips
without perf): perf names each record by its thread's command (the file's COMM
records, the CPU's last CONTEXT packet), and so must armprofd, which has no /proc
to read for a file's processes.

- perf's (command, function) of every record equals the generator's truth read the
  same way (spegen_truth.perf_names()): the oracle and the truth agree;
- `--replay FILE --once`: every hot-PC row is one command in one function, with
  perf's count exactly (the tables hold every entry), the rows in perf's order of
  counts; a kernel PC served by address is a row of its own with perf's count;
- a daemon serving the replay: /hotpcs?window=all has exactly perf's rows and
  counts, each with the process's pid beside it, and its text view the command
  of each; every /hotlines entry's command is one perf gives the records at its
  offset and PC, the only one where perf gives one.
"""

import collections
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ["ARMPROFD_SOURCE_DIR"], "tests", "integration"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon, skip  # noqa: E402
from spegen_truth import CONFIG, LINE, perf_names, read_facts  # noqa: E402

build = os.environ["ARMPROFD_BUILD_DIR"]
spegen = os.path.join(build, "tests", "spegen", "armprofd-spegen")
armprofd = os.path.join(build, "daemon", "armprofd")
os.environ.setdefault("ARMPROFD_BIN", armprofd)
perf = shutil.which("perf")
if not perf:
    skip("perf not installed (Debian package linux-perf): no oracle")
VA_MASK = (1 << 56) - 1


def perf_records(data):
    """(command, tid, pc, data address, function) of every record, as perf script names them."""
    r = subprocess.run([perf, "script", "-i", data, "--itrace=i1i", "-F", "comm,tid,ip,sym,addr"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-500:]
    out = []
    for line in r.stdout.splitlines():
        f = line.split()
        comm, tid, addr, ip = f[0], int(f[1]), int(f[2], 16), int(f[3], 16)
        sym = f[4] if len(f) > 4 else None
        # perf's [unknown] for a kernel PC without kallsyms: armprofd's [kernel] function.
        out.append((comm, tid, ip, addr, "[kernel]" if ip >> 56 == 0xFF else sym))
    return out


def row_key(p):
    """A /hotpcs row's identity: command and function, or command and PC for a kernel PC served by address."""
    if "pc" in p and int(p["pc"], 16) >> 56 == 0xFF:
        return (p.get("comm"), int(p["pc"], 16))
    return (p.get("comm"), p.get("symbol"))


def perf_rows(recs):
    """perf's counts by the same identity."""
    return collections.Counter((c, ip if ip >> 56 == 0xFF else sym) for c, _, ip, _, sym in recs)


tmp = tempfile.mkdtemp(prefix="armprofd-comm-")
try:
    subprocess.run([spegen, "--out-dir", tmp, "--prefix", "c", "--seed", "41", "--records", "30000", "--cpus", "4",
                    "--scenario", "all", "--ts"], check=True, stdout=subprocess.DEVNULL)
    data = os.path.join(tmp, "c.data")
    facts = read_facts(os.path.join(tmp, "c.truth.txt"))
    with open(os.path.join(tmp, "c.truth.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    pid = int(facts["pid"])
    recs = perf_records(data)
    want = perf_rows(recs)

    # The oracle and the truth agree on every record's command and function.
    truth = collections.Counter(n for n in perf_names(rows, facts) if n)
    by_fn = collections.Counter((c, sym) for c, _, _, _, sym in recs)
    assert by_fn == truth, (by_fn - truth, truth - by_fn)
    print(f"perf script names {len(recs)} records by {len(set(c for c, *_ in recs))} commands, as the truth does")

    conf = os.path.join(tmp, "armprofd.conf")
    with open(conf, "w") as f:
        f.write(CONFIG)

    # --once: the top 50 rows, each perf's count exactly, in perf's order of counts.
    r = subprocess.run([armprofd, "-c", conf, "--replay", data, "--once"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    pcs = json.loads(r.stdout)["hotpcs"]["pcs"]
    got = [(row_key(p), p["samples"]) for p in pcs]
    assert all(p["error"] == 0 and p["pids"] == [pid] for p in pcs), pcs[:2]
    for k, n in got:
        assert want[k] == n, (k, n, want[k])
    assert [n for _, n in got] == sorted(want.values(), reverse=True)[:len(got)], got[:10]
    print(f"--once: {len(got)} rows, each a command in a function with perf's count")

    # The daemon: every row, and the commands of the hot lines' entries.
    with Daemon(args=["--replay", data], config_text=CONFIG) as d:
        d.wait_ready()
        deadline = time.monotonic() + 60
        while True:
            status, _, body = d.get("/hotpcs?window=all&limit=1000")
            ans = json.loads(body)
            if status == 200 and ans["samples"] == len(recs):
                break
            assert time.monotonic() < deadline, (status, body[:300])
            time.sleep(0.2)
        rows_got = collections.Counter()
        for p in ans["pcs"]:
            assert p["error"] == 0 and p["pids"] == [pid] and p["pid"] == pid, p
            assert row_key(p) not in rows_got, p
            rows_got[row_key(p)] = p["samples"]
        assert rows_got == want, (rows_got - want, want - rows_got)
        text = d.get("/hotpcs?window=all&limit=1000&format=text")[2].decode()
        for p in ans["pcs"]:
            if p.get("comm"):
                assert any(f" {p['comm']} " in l and p.get("pc", p.get("region")) in l for l in text.splitlines()), p
        print(f"/hotpcs: perf's {len(want)} rows of (command, function), every count equal")

        # Per (line, offset, pc): the commands perf gives the records there.
        at = collections.defaultdict(set)
        for c, _, ip, addr, _ in recs:
            if addr:
                a = addr & VA_MASK
                a = a | (0xFF << 56) if (a >> 52) & 0xF == 0xF else a
                at[(a & ~(LINE - 1), a & (LINE - 1), ip)].add(c)
        status, _, body = d.get("/hotlines?window=all&all=1&limit=500")
        entries = single = 0
        for l in json.loads(body)["lines"]:
            for o in l["offsets"]:
                comms = at[(int(l["address"], 16), int(o["offset"], 16), int(o["pc"], 16))]
                assert o.get("comm") in comms, (l["address"], o, comms)
                entries += 1
                single += len(comms) == 1
        assert entries and single, (entries, single)
        print(f"/hotlines: {entries} entries named by a command perf gives their records "
              f"({single} where perf gives one)")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
