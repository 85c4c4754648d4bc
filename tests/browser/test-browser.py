#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The daemon's HTML pages in a real browser (issue 18, "A real browser"): Chromium driven
by playwright-core (pages.mjs) against a daemon replaying a generator file whose ELF names
the top hot line's function with markup, <script>"'&XX:

- the JSON carries that name as it is, the text rendering too, the HTML page escapes it;
- in the browser (pages.mjs): every link of the index and of the view pages answers 200;
  no request leaves the daemon's origin; no console error, CSP violation, page error or
  dialog; the top line and its symbol are where the JSON says; the name is a cell's text
  and nothing was injected; sorting by a number and by text orders the rows; the latency
  histograms and the counters table are drawn; a screenshot of each view
  ($ARMPROFD_BUILD_DIR/browser-screenshots/*.png).

Needs Chromium ($CHROMIUM or /usr/bin/chromium), node and npm (playwright-core is installed
from the lock file into $ARMPROFD_BUILD_DIR/tests/browser-node); skips (77) without them.
"""

import csv
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

source = os.environ["ARMPROFD_SOURCE_DIR"]
build = os.environ["ARMPROFD_BUILD_DIR"]
sys.path.insert(0, os.path.join(source, "tests", "integration"))
sys.path.insert(0, os.path.join(source, "tests", "daemon"))
from armprofd_test import Daemon, skip  # noqa: E402
from spegen_truth import CONFIG, truth_lines  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
spegen = os.path.join(build, "tests", "spegen", "armprofd-spegen")
os.environ.setdefault("ARMPROFD_BIN", os.path.join(build, "daemon", "armprofd"))
RECORDS = 50000
# The generator's function at the top hot line, and the name put in its place: as long, so
# the ELF's string table keeps its layout.
FUNCTION = b"writer_thread"
HOSTILE = b"<script>\"'&XX"
assert len(HOSTILE) == len(FUNCTION), (len(HOSTILE), len(FUNCTION))
HOSTILE_HTML = b"&lt;script&gt;&quot;&#39;&amp;XX"

t0 = time.monotonic()
chromium = os.environ.get("CHROMIUM") or "/usr/bin/chromium"
if not os.access(chromium, os.X_OK):
    skip(f"no Chromium at {chromium} (set CHROMIUM, or apt-get install chromium)")
node, npm = shutil.which("node"), shutil.which("npm")
if not node or not npm:
    skip(f"node or npm missing (node {node}, npm {npm}): apt-get install nodejs npm")


def node_modules():
    """playwright-core as the lock file pins it, in the build tree; npm ci only when the lock changed."""
    d = os.path.join(build, "tests", "browser-node")
    os.makedirs(d, exist_ok=True)
    lock, stamp = os.path.join(here, "package-lock.json"), os.path.join(d, "installed-package-lock.json")
    installed = os.path.isdir(os.path.join(d, "node_modules", "playwright-core"))
    if installed and os.path.exists(stamp) and filecmp.cmp(lock, stamp, shallow=False):
        print(f"npm: {d}/node_modules is up to date with the lock")
        return d
    for f in ("package.json", "package-lock.json"):
        shutil.copyfile(os.path.join(here, f), os.path.join(d, f))
    if os.path.exists(stamp):
        os.unlink(stamp)
    t = time.monotonic()
    r = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=d, capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"npm ci in {d} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    shutil.copyfile(lock, stamp)
    print(f"npm ci: playwright-core into {d} in {time.monotonic() - t:.1f} s")
    return d


def get(d, path, want=200, headers=None):
    status, hdrs, body = d.get(path, headers=headers)
    assert status == want, (path, status, body[:300])
    return hdrs, body


def get_json(d, path):
    return json.loads(get(d, path, headers={"Accept": "application/json"})[1])


def plant(elf):
    """The generator's function renamed HOSTILE in the ELF's string table, in place."""
    with open(elf, "rb") as f:
        data = f.read()
    old, new = b"\0" + FUNCTION + b"\0", b"\0" + HOSTILE + b"\0"
    assert data.count(old) == 1, f"{elf}: {data.count(old)} NUL-terminated {FUNCTION!r}, want 1"
    assert data.count(new) == 0
    with open(elf, "wb") as f:
        f.write(data.replace(old, new))
    print(f"{elf}: {FUNCTION.decode()} renamed {HOSTILE.decode()} ({len(HOSTILE)} bytes)")


def serve(data, records):
    """A replaying daemon with every record in its tables."""
    d = Daemon(args=["--replay", data], config_text=CONFIG)
    try:
        d.wait_ready()
        deadline = time.monotonic() + 60
        while True:
            lines = get_json(d, "/hotlines?window=all&all=1&limit=1")["records"]
            samples = get_json(d, "/hotpcs?window=all&limit=1")["samples"]
            if (lines, samples) == (records, RECORDS):
                return d
            assert time.monotonic() < deadline, ((lines, records), (samples, RECORDS), d.log())
            time.sleep(0.1)
    except BaseException:
        d.close()
        raise


def counting(d):
    """Whether /counters has a counted event (software events count wherever perf_event_open works)."""
    status, _, body = d.get("/counters?format=json")
    if status != 200:
        print(f"/counters: {status}: {body[:200]!r}")
        return False
    events = json.loads(body).get("host", {}).get("events", {})
    counted = [name for name, e in events.items() if e.get("counted")]
    print(f"/counters: {len(counted)} counted events: {', '.join(counted)}")
    return bool(counted)


nodedir = node_modules()
with tempfile.TemporaryDirectory(prefix="armprofd-browser-") as tmp:
    subprocess.run([spegen, "--out-dir", tmp, "--prefix", "t", "--scenario", "all", "--records", str(RECORDS), "--ts"],
                   check=True, stdout=subprocess.DEVNULL)
    data, elf = os.path.join(tmp, "t.data"), os.path.join(tmp, "t.elf")
    with open(os.path.join(tmp, "t.truth.csv"), newline="") as f:
        records = sum(t["loads"] + t["stores"] for t in truth_lines(csv.DictReader(f), "va").values())
    plant(elf)

    with serve(data, records) as d:
        base = f"http://{d.address}"
        top = get_json(d, "/hotlines?window=all")["lines"][0]
        first = top["offsets"][0]
        assert first.get("symbol") == HOSTILE.decode(), (first, HOSTILE)
        assert first.get("object") == elf, (first.get("object"), elf)
        hot = [p for p in get_json(d, "/hotpcs?window=all")["pcs"] if p.get("symbol") == HOSTILE.decode()]
        assert hot, "no hot PC in the planted function"
        print(f"JSON: top line {top['address']}, its first PC {first['pc']} in {first['symbol']!r} "
              f"(exact), {len(hot)} hot PCs in it")

        for path in ("/hotlines?window=all", "/hotpcs?window=all"):
            _, text = get(d, path + "&format=text")
            assert HOSTILE in text, (path, "text rendering without the name as is")
            hdrs, html = get(d, path + "&format=html")
            assert hdrs["content-type"].startswith("text/html"), hdrs
            assert HOSTILE_HTML in html, (path, "HTML without the name escaped")
            assert HOSTILE not in html and b"<script>\"" not in html, (path, "the name raw in the HTML")
            assert html.count(b"<script") == 1, (path, html.count(b"<script"))
            print(f"{path}: text has the name as is ({text.count(HOSTILE)} times), HTML escaped "
                  f"({html.count(HOSTILE_HTML)} times) and never raw, one <script")

        expect = {
            "address": top["address"],
            "symbol_cell": f"[{'k' if first.get('el', 0) > 0 else '.'}] {first['symbol']}",
            "hostile": HOSTILE.decode(),
            "counters": counting(d),
        }
        expect_path = os.path.join(tmp, "expect.json")
        with open(expect_path, "w") as f:
            json.dump(expect, f)
        shots = os.path.join(build, "browser-screenshots")
        shutil.rmtree(shots, ignore_errors=True)
        t = time.monotonic()
        r = subprocess.run([node, os.path.join(here, "pages.mjs"), base, shots, expect_path], cwd=nodedir,
                           env=dict(os.environ, CHROMIUM=chromium))
        print(f"pages.mjs: {time.monotonic() - t:.1f} s, exit {r.returncode}; screenshots in {shots}")
        if r.returncode != 0:
            print(f"armprofd's log:\n{d.log()}", file=sys.stderr)
            sys.exit(1)
        assert d.proc.poll() is None, d.log()

print(f"browser: passed in {time.monotonic() - t0:.1f} s")
