#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The text views (?format=text) against the JSON of the same query and against perf:

- /hotlines of a daemon replaying the generator's sharing scenarios: the Shared Data
  Cache Line Table and the Pareto, row by row and in order, equal the JSON answer
  (the load-hit columns recomputed here from loads_by_source by perf c2c's rule,
  spe-format.md §7.2-7.3) and `perf c2c report --stdio -i` on the same file, every
  count and percentage of both tables;
- every table of every text answer is aligned: each row's cells sit inside the
  column spans the header's dotted line marks, flush to one of their edges;
- ?format=text with every combination of the parameters the JSON takes gives as many
  rows as the JSON has entries, in its order; a bad value is the same 400;
- Accept chooses: text/plain -> text, text/html -> a page, */* and none -> JSON;
- /hotpcs's Command on a live daemon is the sampled process's /proc/PID/comm;
- /counters as text on a live daemon (real perf_event_open, as root): every event
  that `perf stat -A` says is <not supported> on this machine is <not supported> here
  on every CPU, and every counted event's count is the JSON's.
"""

import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ["ARMPROFD_SOURCE_DIR"], "tests", "integration"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon  # noqa: E402
from spegen_truth import CONFIG  # noqa: E402

build = os.environ["ARMPROFD_BUILD_DIR"]
spegen = os.path.join(build, "tests", "spegen", "armprofd-spegen")
os.environ.setdefault("ARMPROFD_BIN", os.path.join(build, "daemon", "armprofd"))


def get(d, path, want=200, accept=None):
    status, headers, body = d.get(path, headers={"Accept": accept} if accept else None)
    assert status == want, (path, status, body[:300])
    return headers, body.decode()


def get_json(d, path, want=200):
    return json.loads(get(d, path, want, "application/json")[1])


def sections(text):
    """{heading: [lines]} of a text answer."""
    out, cur = {}, None
    for line in text.split("\n"):
        m = re.match(r"^# ==== (.*) ====$", line)
        if m:
            cur = out.setdefault(m.group(1), [])
        elif cur is not None:
            cur.append(line)
    return out


def spans(lines):
    """The column spans [(start, end)) the '# .....  ....' line marks."""
    dots = [l for l in lines if re.match(r"^# \.+( +\.+)*$", l)]
    assert len(dots) == 1, lines[:6]
    return [(m.start(), m.end()) for m in re.finditer(r"\.+", dots[0])]


def rows(lines):
    """Data rows of a table: not a header, not a separator, not blank."""
    return [l for l in lines if l.strip() and not l.startswith("#") and set(l.strip()) != {"-"}]


def cells(line, cols):
    """The row cut at its columns; asserts every cell is inside its span, flush to an edge."""
    out = []
    for i, (a, b) in enumerate(cols):
        # Between columns: blanks only (the last column runs to the line's end).
        if i > 0:
            gap = line[cols[i - 1][1]:a]
            assert gap.strip() == "", (line, i, gap)
        cell = line[a:b] if i + 1 < len(cols) else line[a:]
        if cell.strip():
            assert cell == cell.strip() or cell == cell.lstrip() or cell == cell.rstrip(), (line, i, cell)
            assert cell[0] != " " or cell.rstrip() == cell or i + 1 == len(cols), (line, i, cell)
        out.append(cell.strip())
    return out


def table(lines):
    """Every row of a section's table as its cells, alignment checked."""
    cols = spans(lines)
    return [cells(l, cols) for l in rows(lines)]


def table_or_none(lines):
    """table(), or [] for a section that says (none)."""
    return [] if any(l.startswith("#   (none)") for l in lines) else table(lines)


def check_aligned(text):
    n = 0
    for heading, lines in sections(text).items():
        if any(l.startswith("#   (none)") for l in lines):
            continue
        n += len(table(lines))
    return n


def pct(part, whole):
    return f"{100.0 * part / whole if whole else 0:.2f}%"


def c2c_levels(src):
    """perf c2c's load columns from SPE sources (spe-format.md §7.2: the data_src perf gives each;
    §7.3: how c2c_decode_stats() counts it): FB L1 L2 LclHit LclHitm RmtHit RmtHitm Lcl Rmt."""
    g = lambda k: src.get(k, 0)  # noqa: E731
    return [0, g("l1d"), g("l2") + g("peer_core"), g("local_cluster") + g("peer_cluster") + g("sys_cache"), 0,
            g("remote"), 0, g("dram"), 0]


def perf_c2c(data):
    perf = shutil.which("perf")
    if not perf:
        return None
    r = subprocess.run([perf, "c2c", "report", "--stdio", "-i", data], capture_output=True, text=True)
    assert r.returncode == 0 and "Shared Data Cache Line Table" in r.stdout, r.stderr[-300:]
    top, pareto = r.stdout.split("Shared Data Cache Line Table", 1)[1].split(
        "Shared Cache Line Distribution Pareto")
    lines = [l.split() for l in top.split("\n") if re.match(r"^\s+\d+\s+0x", l)]
    blocks, cur = [], None
    for l in pareto.split("\n"):
        f = l.split()
        if re.match(r"^\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+0x[0-9a-f]+\s*$", l):
            cur = {"summary": f, "rows": []}
            blocks.append(cur)
        elif cur is not None and len(f) > 14 and f[0].endswith("%"):
            cur["rows"].append(f)
    return lines, blocks


def check_hotlines(d, data):
    js = get_json(d, "/hotlines?window=all")
    text = get(d, "/hotlines?window=all&format=text")[1]
    sec = sections(text)
    top = table(sec["Shared Data Cache Line Table"])
    peers = js["peer_snoops"]["local"] + js["peer_snoops"]["remote"]
    assert len(top) == len(js["lines"]) > 0, (len(top), len(js["lines"]))
    for i, (row, line) in enumerate(zip(top, js["lines"])):
        p = line["peer_snoops"]
        want = [str(i), line["address"], str(line.get("node", "N/A")), pct(p["local"] + p["remote"], peers)] + \
            [str(x) for x in [p["local"] + p["remote"], p["local"], p["remote"], line["records"], line["loads"],
                              line["stores"], 0, 0, line["stores"]] + c2c_levels(line["loads_by_source"])] + \
            [line["class"], str(line["records_max"])]
        assert row == want, (row, want)
    # The Pareto: a summary row per line, then its (offset, pc) entries in the JSON's order.
    pareto = rows(sec["Shared Cache Line Distribution Pareto"])
    cols = spans(sec["Shared Cache Line Distribution Pareto"])
    blocks, cur = [], None
    for l in pareto:
        c = cells(l, cols)
        if c[0] != "":
            cur = {"summary": c, "rows": []}
            blocks.append(cur)
        else:
            cur["rows"].append(c)
    assert len(blocks) == len(js["lines"])
    for i, (b, line) in enumerate(zip(blocks, js["lines"])):
        p, st = line["peer_snoops"], line["stores"]
        assert b["summary"][:7] == [str(i), str(p["remote"]), str(p["local"]), "0", "0", str(st), line["address"]], \
            b["summary"]
        assert len(b["rows"]) == len(line["offsets"])
        for r, o in zip(b["rows"], line["offsets"]):
            mean = f"{o['latency_mean_cycles']:.0f}" if "latency_mean_cycles" in o else ""
            want = [pct(o["peer_snoops"]["remote"], p["remote"]), pct(o["peer_snoops"]["local"], p["local"]),
                    "0.00%", "0.00%", pct(o["stores"], st), o["offset"], str(line.get("node", "N/A")), o["pc"], mean,
                    str(o["loads"] + o["stores"]), str(len(o["cpus"])), "[.] " + o["symbol"],
                    os.path.basename(o["object"]), o.get("source", ""), o.get("data_symbol", ""), str(o["loads"]),
                    str(o["stores"]),
                    str(o["records_max"]),
                    ",".join(str(t) for t in o["tids"]), o.get("comm", "")]
            assert r[1:] == want, (r, want)
    print(f"hotlines text: {len(top)} lines, {sum(len(b['rows']) for b in blocks)} Pareto rows = the JSON's")

    oracle = perf_c2c(data)
    if oracle is None:
        print("perf absent: the text is not compared with perf c2c")
        return
    lines, pblocks = oracle
    assert len(lines) == len(top), (len(lines), len(top))
    for ours, theirs in zip(top, lines):
        # Index, Address; perf's Node and PA cnt need physical addresses (ours: N/A by VA); then every count.
        assert ours[:2] == theirs[:2], (ours, theirs)
        assert ours[3:22] == theirs[4:23], (ours, theirs)
    assert len(pblocks) == len(blocks)
    for ours, theirs in zip(blocks, pblocks):
        assert ours["summary"][:7] == theirs["summary"][:7], (ours["summary"], theirs["summary"])
        assert len(ours["rows"]) == len(theirs["rows"]), (ours, theirs)
        for r, t in zip(ours["rows"], theirs["rows"]):
            # Percentages, offset; code address; records, cpu cnt; symbol and object.
            assert r[1:7] == t[0:6], (r, t)
            assert r[8] == t[8] and r[10:12] == t[12:14], (r, t)
            assert r[12] == t[14] + " " + t[15] and r[13] == t[16], (r, t)
    print(f"hotlines text = perf c2c report --stdio: {len(top)} shared lines, every count and percentage, "
          f"{sum(len(b['rows']) for b in blocks)} Pareto rows with their PCs, records, CPUs and symbols")


def check_combinations(d):
    windows, n = ("10s", "1m", "all", "600"), 0
    for w, limit, pid, cg, al in itertools.product(windows, (None, "1", "500"), (None, "4242", "1"),
                                                  (None, "/system.slice/"), (None, "0", "1")):
        q = "&".join(f"{k}={v}" for k, v in (("window", w), ("limit", limit), ("pid", pid), ("cgroup", cg),
                                              ("all", al)) if v is not None)
        js = get_json(d, "/hotlines?" + q)
        text = get(d, f"/hotlines?{q}&format=text")[1]
        n += check_aligned(text)
        got = [r[1] for r in table_or_none(sections(text)["Shared Data Cache Line Table"])]
        assert got == [l["address"] for l in js["lines"]], (q, got, js["lines"][:2])
    for w, limit, pid, cg in itertools.product(windows, (None, "1", "1000"), (None, "4242", "1"),
                                              (None, "/system.slice/")):
        q = "&".join(f"{k}={v}" for k, v in (("window", w), ("limit", limit), ("pid", pid), ("cgroup", cg))
                     if v is not None)
        js = get_json(d, "/hotpcs?" + q)
        text = get(d, f"/hotpcs?{q}&format=text")[1]
        n += check_aligned(text)
        got = [(r[1], r[3]) for r in table_or_none(sections(text)["Hot PCs"])]
        assert got == [(str(p["samples"]), p.get("pc") or p["region"]) for p in js["pcs"]], (q, got[:3])
    for w in windows:
        js = get_json(d, "/latency?window=" + w)
        text = get(d, f"/latency?window={w}&format=text")[1]
        n += check_aligned(text)
        want = sum(len(k["by_op"]) + len(k["loads_by_source"]) for k in js["latency_cycles"].values())
        got = len(table_or_none(sections(text)["Latency by op and data source"]))
        assert got == want, (w, got, want)
        for name, s in js["latency_cycles"]["total"]["by_op"].items():
            hist = table(sections(text)[f"Histogram: total latency: {name}, {s['count']} samples"])
            assert [(int(r[0]), int(r[1])) for r in hist] == [(b["le"], b["count"]) for b in s["buckets"]]
            assert sum(int(r[1]) for r in hist) == s["count"]
    # Bad values are the same 400 whatever the rendering; a format the endpoint does not have is one too.
    for path in ("/hotlines?window=bogus", "/hotpcs?limit=0", "/hotlines?all=2", "/latency?limit=1"):
        a = get(d, path, want=400)[1]
        b = get(d, path + "&format=text", want=400)[1]
        assert json.loads(a) == json.loads(b), (a, b)
    err = get_json(d, "/hotlines?format=xml", want=400)
    assert "format" in err["error"] and "text" in err["error"], err
    assert "format" in get_json(d, "/debug/pprof/spe?format=text", want=400)["error"]
    print(f"format=text: 216 /hotlines, 72 /hotpcs and 4 /latency queries = their JSON, {n} rows aligned")


def check_accept(d):
    for accept, want in (("text/plain", "text/plain"), ("text/html", "text/html"), ("*/*", "application/json"),
                         (None, "application/json"), ("application/json, text/plain;q=0.5", "application/json"),
                         ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "text/html"),
                         ("application/x-protobuf", "application/x-protobuf")):
        status, headers, _ = d.get("/hotlines?window=all", headers={"Accept": accept} if accept else None)
        assert status == 200 and headers["content-type"].startswith(want), (accept, headers["content-type"])
        assert "Accept" in headers.get("vary", ""), headers
    headers, page = get(d, "/hotlines?window=all&format=html")
    csp = headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "unsafe" not in csp, csp
    assert not re.search(r"<script>|\sstyle=|\son[a-z]+=", page), "inline script, style or handler in the page"
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page), "a link to another host"
    print("Accept: text/plain, text/html, */*, none, q-values and protobuf as negotiated; the page's CSP is strict")


def check_counters_vs_perf_stat():
    perf = shutil.which("perf")
    if os.geteuid() != 0 or not perf:
        print("counters: not root or no perf: perf stat is not compared")
        return
    # perf's names for the events ours are named after (pmu-event.c's catalogue, perf list's generic names).
    events = {"cycles": "cycles", "instructions": "instructions", "branch_mispredicts": "branch-misses",
              "context_switches": "context-switches", "page_faults": "page-faults"}
    r = subprocess.run([perf, "stat", "-A", "-a", "-x", ",", "-e", ",".join(events.values()), "sleep", "0.2"],
                       capture_output=True, text=True)
    unsupported = set()
    for l in r.stderr.splitlines():
        f = l.split(",")
        if len(f) > 3 and f[1] in ("<not supported>", "<not counted>"):
            unsupported.add(f[3])
    with Daemon(config_text="[pmu]\ninterval = 200ms\n[spe]\nenable = no\n[sampler]\nenable = no\n") as d:
        d.wait_ready()
        deadline = time.monotonic() + 20
        while True:
            js = get_json(d, "/counters")
            if js.get("reads", 0) >= 2:
                break
            assert time.monotonic() < deadline, js
            time.sleep(0.1)
        text = get(d, "/counters?format=text")[1]
        js2 = get_json(d, "/counters")
        check_aligned(text)
        t = table(sections(text)["Performance counter stats"])
        said = {(r[0], r[2]): r[1] for r in t}
        ncpus = len(js["cpus"])
        for ours, theirs in events.items():
            mine = [said.get((f"CPU{c['cpu']}", ours)) for c in js["cpus"]]
            if theirs in unsupported:
                assert mine == ["<not supported>"] * ncpus, (ours, mine)
            else:
                assert "<not supported>" not in mine, (ours, mine)
        # Counts between two reads of the JSON: the text was rendered from one in between.
        for c0, c1 in zip(js["cpus"], js2["cpus"]):
            for name, e in c1["events"].items():
                v = said[(f"CPU{c1['cpu']}", name)]
                if e["counted"]:
                    assert c0["events"][name]["total"] <= int(v) <= e["total"], (name, v)
        print(f"counters text: {sorted(e for e in events if events[e] in unsupported)} <not supported> on "
              f"all {ncpus} CPUs as perf stat -A says; {sorted(e for e in events if events[e] not in unsupported)} "
              f"counted as the JSON says")


def check_comm():
    """/hotpcs's Command on a live daemon: a busy process's name as /proc says it."""
    if os.geteuid() != 0:
        print("comm: not root: no live sampler")
        return
    busy = subprocess.Popen(["sh", "-c", "while :; do :; done"])
    try:
        with Daemon(config_text="[store]\nepoch = 1s\n[sampler]\nfrequency = 99\n[spe]\nenable = no\n") as d:
            d.wait_ready()
            deadline = time.monotonic() + 30
            while True:
                pcs = get_json(d, f"/hotpcs?pid={busy.pid}&window=all")["pcs"]
                if pcs:
                    break
                assert time.monotonic() < deadline, "the busy process was never sampled"
                time.sleep(0.2)
            # Read now: right after the fork it was still the test's own name, before the exec.
            with open(f"/proc/{busy.pid}/comm") as f:
                comm = f.read().strip()
            text = get(d, f"/hotpcs?pid={busy.pid}&window=all&format=text")[1]
            t = table(sections(text)["Hot PCs"])
            assert t and all(r[4] == str(busy.pid) and r[5] == comm for r in t), (comm, t[:3])
            print(f"hotpcs text: Command '{comm}' on all {len(t)} rows of pid {busy.pid}, as /proc/PID/comm says")
    finally:
        busy.kill()
        busy.wait()


with tempfile.TemporaryDirectory(prefix="armprofd-views-") as tmp:
    subprocess.run([spegen, "--out-dir", tmp, "--prefix", "t", "--scenario", "all", "--records", "50000", "--ts"],
                   check=True, stdout=subprocess.DEVNULL)
    data = os.path.join(tmp, "t.data")
    with Daemon(args=["--replay", data], config_text=CONFIG) as d:
        d.wait_ready()
        d.wait_replay_done(timeout=60)
        check_hotlines(d, data)
        check_combinations(d)
        check_accept(d)
    check_counters_vs_perf_stat()
    check_comm()
