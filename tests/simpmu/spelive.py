# SPDX-License-Identifier: GPL-2.0-or-later
"""What the daemon tests against the simulated SPE PMU (test-spe-live.py,
test-spe-kernels.py, test-spe-faults.py) share: their arguments and paths,
the shim's setup module, the daemon's answers read back (/metrics per CPU,
JSON endpoints), the shim's log, and the daemon started under the shim."""

import json
import os
import sys
import time

SRC = os.environ["ARMPROFD_SOURCE_DIR"]
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
sys.path.insert(0, os.path.join(SRC, "tests", "daemon"))
from armprofd_test import Daemon, parse_prom_text, simpmu_setup  # noqa: E402

simpmu = simpmu_setup()
# Every such test's arguments (meson.build): the generator and the shim.
spegen, shim = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
os.environ.setdefault("ARMPROFD_BIN", os.path.join(os.environ["ARMPROFD_BUILD_DIR"], "daemon", "armprofd"))

N1_MIDR = "0x00000000413fd0c1"
# Reasons a record never reaches the daemon; a 'lost' or 'datalost' chunk lost only its
# PERF_RECORD_AUX: its bytes stay in the ring and are read (collectors/perf/aux-ring.h).
READABLE = {"lost", "datalost"}
# Epochs and drains short enough for a test to wait on.
LIVE = "epoch = 1s\n[spe]\ndrain_interval = 100ms\n"


def start_daemon(scen, sysfs, cpus, config_text, **env):
    """The daemon under the shim, serving: scenario scen, sysfs root sysfs whose CPUs (an iterable)
    are Neoverse N1s; env: additions to its environment. Its /proc for the simulated tasks is an
    empty one (ARMPROFD_PROCFS_ROOT), unless env gives one: the host's pids are not the generator's."""
    for cpu in cpus:
        simpmu.write(os.path.join(sysfs, "devices", "system", "cpu", f"cpu{cpu}", "regs", "identification",
                                  "midr_el1"), N1_MIDR + "\n")
    if "ARMPROFD_PROCFS_ROOT" not in env:
        env["ARMPROFD_PROCFS_ROOT"] = os.path.join(scen, "proc")
        os.makedirs(env["ARMPROFD_PROCFS_ROOT"], exist_ok=True)
    env = dict(os.environ, LD_PRELOAD=shim, ARMPROFD_SIMPMU_DIR=scen, ARMPROFD_SYSFS_ROOT=sysfs, **env)
    # Under ASan the shim comes before the runtime the daemon links (README.md).
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
    d = Daemon(config_text=config_text, env=env)
    d.wait_serving()
    return d


def metrics(d):
    """/metrics parsed: {(name, labels): value}."""
    status, _, body = d.get("/metrics")
    assert status == 200, status
    return parse_prom_text(body.decode() if isinstance(body, bytes) else body)


def per_cpu(m, name, **want):
    """{cpu: value} of the series `name` whose other labels are `want`."""
    out = {}
    for (n, labels), v in m.items():
        labels = dict(labels)
        if n == name and all(labels.get(k) == x for k, x in want.items()):
            out[int(labels["cpu"])] = v
    return out


def get_raw(d, path):
    """The body of a 200 answer."""
    status, _, body = d.get(path)
    assert status == 200, (path, status, body[:300])
    return body


def get(d, path):
    """A 200 JSON answer, parsed."""
    return json.loads(get_raw(d, path))


def sim_log(scen):
    """The shim's sim.log, a list of lines ([] before it exists)."""
    path = os.path.join(scen, "sim.log")
    return open(path).read().splitlines() if os.path.exists(path) else []


def wait_counted(d, want, deadline, name, query="/hotlines?window=all&limit=1", field="records"):
    """Until the daemon counts `want` ({cpu: records}) on /metrics and a closed epoch holds them all
    (queries read closed epochs): `query`'s `field` is their sum. Fails past `deadline` (monotonic)."""
    while True:
        got = per_cpu(metrics(d), "armprofd_spe_records_total")
        if got == want:
            break
        assert time.monotonic() < deadline, (name, got, want, d.log()[-2000:])
        time.sleep(0.1)
    while get(d, query)[field] != sum(want.values()):
        assert time.monotonic() < deadline, (name, d.log()[-2000:])
        time.sleep(0.1)
