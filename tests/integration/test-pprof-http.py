#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""go tool pprof reads both pprof endpoints of a daemon serving a replayed generator
file: its sample totals equal the store's count of samples, -top names the
generator's hottest function first, and /debug/pprof/profile?seconds=N answers
after N seconds. Then the ELF at the mapped path is replaced by another build:
no PC is named from it."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon, skip  # noqa: E402

go = shutil.which("go")
if not go:
    skip("go not installed (Debian package golang-go): no go tool pprof")
spegen = os.path.join(os.environ["ARMPROFD_BUILD_DIR"], "tests", "spegen", "armprofd-spegen")

tmp = tempfile.mkdtemp(prefix="armprofd-pprof-")
env = dict(os.environ, HOME=tmp, GOCACHE=os.path.join(tmp, "gocache"), GOFLAGS="-mod=mod", PPROF_TMPDIR=tmp)
subprocess.run([spegen, "--out-dir", tmp, "--prefix", "g", "--records", "20000", "--scenario", "all"],
               check=True, stdout=subprocess.DEVNULL)
facts = dict(l.rstrip("\n").split("=", 1) for l in open(os.path.join(tmp, "g.truth.txt")) if "=" in l and l[0] != "#")


def pprof(*args):
    # No -symbolize flag, as the README's commands: every mapping is symbolized here (has_functions), so pprof
    # neither reads the generator's files again nor asks /debug/pprof/symbol.
    r = subprocess.run([go, "tool", "pprof", *args], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def raw_total(text, index):
    """Sum of one sample type's column in `pprof -raw` output."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("Samples:"))
    total = 0
    for l in lines[start + 2:]:
        m = re.match(r"^\s+(\d+(?:\s+\d+)*): ", l)
        if not m:
            if l.startswith("Locations"):
                break
            continue
        total += int(m.group(1).split()[index])
    return total


try:
    with Daemon(args=["--replay", os.path.join(tmp, "g.data")], config_text="[store]\nepoch = 60s\n") as d:
        d.wait_ready()
        url = f"http://{d.host}:{d.port}"
        store_samples = json.loads(d.get("/hotpcs?window=all&limit=1")[2])["samples"]
        # Independent of the code under test: every generated record has a PC.
        assert store_samples == int(facts["records"]), (store_samples, facts["records"])

        raw = pprof("-raw", f"{url}/debug/pprof/spe?window=all")
        # "[dflt]" marks the default sample type (samples), as pprof prints it.
        assert re.search(r"samples/count(\[dflt\])? latency/cycles", raw), raw[:400]
        assert raw_total(raw, 0) == store_samples, (raw_total(raw, 0), store_samples)
        # The generator records the SPE event with sample_period 4096, as perf record -c 4096 would.
        assert "PeriodType: operations count" in raw and "Period: 4096" in raw, raw[:300]
        samples_part = raw.split("Samples:", 1)[1].split("Locations", 1)[0]
        n_samples = len(re.findall(r"^\s+\d+(?:\s+\d+)*: ", samples_part, re.M))
        for label in ("pid", "tid", "cpu", "el", "op"):
            assert len(re.findall(rf"\b{label}:\[", samples_part)) == n_samples, (label, n_samples, raw[:800])
        # Loads carry their data source (the generator's false sharing hits peer cores).
        assert "source:[peer_core]" in samples_part and "source:[l1d]" in samples_part, samples_part[:800]
        # The ELF's mapping carries the build id of the perf.data's build-id table (and of the ELF's note).
        mappings = raw.split("Mappings", 1)[1]
        assert facts["elf.build_id"] in mappings, (facts["elf.build_id"], mappings[:600])
        # Its file was read for symbols: pprof sees it symbolized ([FN], has_functions) and asks nobody else.
        elf_line = next(l for l in mappings.splitlines() if facts["elf.build_id"] in l)
        assert elf_line.endswith("[FN]"), elf_line

        top = pprof("-top", f"{url}/debug/pprof/spe?window=all")
        assert "Type: samples" in top, top[:300]  # samples is the default type
        # What its table left out, as pprof prints the profile's comments: the store's own count of the
        # evictions of that table (every epoch of the replay is in the window).
        metrics = d.get("/metrics")[2].decode()
        evicted = int(float(re.search(r'^armprofd_store_evictions_total\{table="samples"\} (\S+)$', metrics,
                                      re.M).group(1)))
        said = re.search(r"armprofd: (?:(\d+) evictions from|no sample left) the table", top)
        assert said and int(said.group(1) or 0) == evicted, (evicted, top[:600])
        print(f"-top says of its table: {said.group(0)}; /metrics: {evicted} evictions")
        first = next(l for l in top.splitlines() if re.match(r"^\s+\d+\s+[\d.]+%", l))
        assert first.split()[-1] == facts["hottest.symbol"], (first, facts["hottest.symbol"])
        print(f"/debug/pprof/spe: {store_samples} samples as the store counts; -top: {first.strip()}")

        # Naming them read the generator's ELF once, and the symbol cache says so.
        metrics = d.get("/metrics")[2].decode()
        sym = {m.group(1): float(m.group(2)) for m in
               re.finditer(r"^(armprofd_symbols_\w+?)(?:\{[^}]*\})? (\S+)$", metrics, re.M)
               if "{" not in m.group(0)}
        assert sym.get("armprofd_symbols_files_loaded_total") == 1, sym
        assert sym.get("armprofd_symbols_file_errors_total") == 0, sym
        assert sym.get("armprofd_symbols_build_id_mismatches_total") == 0, sym
        print(f"/metrics symbol cache: {sym}")
        asked = re.findall(r'^armprofd_http_requests_total\{handler="pprof_symbol",[^}]*\} (\S+)$', metrics, re.M)
        assert not asked, asked

        t0 = time.monotonic()
        proc = subprocess.Popen([go, "tool", "pprof", "-raw", "-seconds=3",
                                 f"{url}/debug/pprof/profile"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env)
        # While that request waits (suspended, no thread held), others are answered at once.
        time.sleep(1.0)
        t1 = time.monotonic()
        assert d.get("/healthz")[0] == 200 and time.monotonic() - t1 < 0.5
        raw, err = proc.communicate(timeout=120)
        took = time.monotonic() - t0
        assert proc.returncode == 0, err
        assert took >= 3.0, took
        assert raw_total(raw, 0) == store_samples, (raw_total(raw, 0), store_samples)
        print(f"/debug/pprof/profile?seconds=3: answered after {took:.1f} s with {store_samples} samples; "
              "/healthz answered meanwhile")
        rc, _ = d.stop()
        assert rc == 0, d.log()

    # Another build of the ELF at the same path (one byte of its build-id note changed): the daemon
    # must not name PCs from it, and says why on /metrics.
    elf = os.path.join(tmp, "g.elf")
    image = bytearray(open(elf, "rb").read())
    at = image.find(bytes.fromhex(facts["elf.build_id"]))
    assert at > 0 and image.count(bytes.fromhex(facts["elf.build_id"])) == 1, at
    image[at] ^= 0xff
    open(elf, "wb").write(image)
    with Daemon(args=["--replay", os.path.join(tmp, "g.data")], config_text="[store]\nepoch = 60s\n") as d:
        d.wait_ready()
        items = json.loads(d.get("/hotpcs?window=all&limit=50")[2])["pcs"]
        named = [i for i in items if "symbol" in i and i["symbol"] != "[kernel]"]
        assert items and not named, named[:3]
        metrics = d.get("/metrics")[2].decode()
        assert re.search(r"^armprofd_symbols_build_id_mismatches_total 1$", metrics, re.M), \
            [l for l in metrics.splitlines() if l.startswith("armprofd_symbols")]
        print(f"another build at the ELF's path: none of the {len(items)} hottest PCs named, mismatch counted")
        rc, _ = d.stop()
        assert rc == 0, d.log()
finally:
    shutil.rmtree(tmp, ignore_errors=True)
