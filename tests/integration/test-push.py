#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""[push]: the daemon pushes its profiles to a loopback Pyroscope push endpoint
(pushstore.py), which records every request and decodes it with protoc, its
own wire reader and go tool pprof. A daemon per case; [push] interval = 1s,
timeout = 2s, the spool in a temp dir.

test-push.py cpu   the cpu-clock sampler (root: perf-sw suite), with
                   tests/sampler/spin burning a CPU so that every interval
                   has samples (or a python loop with many stacks where
                   requests must be large):
  happy      N intervals give N requests; labels, sample types, UUID IDs,
             non-overlapping times; with [store] epoch = 1h the pushed
             samples/count up to the store's interval end equal /hotpcs'
             count of samples (the store's figure, not the push's).
  outage     down, 500, 429 with Retry-After, hang past the timeout, reset
             mid-body, then ok: every interval arrives once, in time order,
             and the store's count equals the pushed total; no request
             within Retry-After of a 429; errors counted by kind.
  kill       store down, requests spooled, SIGKILL, a stray .tmp-x: a
             restart delivers the spooled IDs and removes .tmp-x.
  spoolcap   the smallest cap (64 KiB: a few requests of a varied python
             workload sampled at 1000 Hz, ~14 KB each) and an outage
             until two were dropped: the spool never exceeds the cap on
             disk (checked every quarter interval); the oldest were dropped
             and counted, the newest delivered.
  splitbytes max_profile_bytes = 64 KiB (its smallest), 3 s intervals of a
             varied workload at 1000 Hz (~90 KB profiles):
             parts each under it decompressed, totals equal the store's
             count, splits counted.
  maxage     max_age = 3s, 6 s down: nothing older arrives; counted.
  rejected   400: each ID seen once, the body's text in the log, counted as
             rejected; once the store accepts, pushing goes on.
  badconfig  unknown scheme, missing password file, spool_dir under a
             regular file: exit non-zero naming [push]; the same at SIGHUP
             is "reload failed" and the old push keeps pushing.
  slowstore  a store that keeps what it reads and answers after 3 s (a
             proxy in front of a slow store), for 10 s, with timeout 2s:
             no profile stored more than twice (the attempt after a
             timeout may take 4 s), all stored in the end.
  reload     push off at start, then reloads turning it on, the same
             configuration, another store's URL, off, on again: the first
             profile after each "on" starts after the SIGHUP (not at the
             daemon's start, nor where the push stopped); no push counter
             ever goes down, and requests ok is between the distinct
             requests both stores took and the 200s they sent.

test-push.py spe   a replayed generator file (no perf_event_open):
  happy      a slow FIFO feed (one epoch of file time: one request): the
             pushed samples sum to the generator's record count, nothing
             pushed twice or early; SPE sample types.
  split      max_samples lowered to 100 (the generator's `all` mix has
             ~360 distinct PCs: far fewer than Pyroscope's 16,000, which
             no generator file reaches in a test's time): several RawSamples
             of one series, each <= 100 samples, totals equal, counted.
  tls        HTTPS with a test CA: tls_ca_file accepted, a wrong CA refused
             and counted as error="tls", tls_insecure_skip_verify accepted.
  auth       basic auth + tenant, and a bearer token, reach the store; the
             secrets are absent from /status, /metrics, the log and
             /proc/PID/cmdline.

PUSH_CASES=happy,outage,... runs a subset.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon, binary, check, failures, need_cpu_sampling, parse_prom_text, skip, stat_field  # noqa: E402
from pushstore import PushStore, make_certs  # noqa: E402

GROUPS = {"cpu": ["happy", "outage", "kill", "spoolcap", "splitbytes", "maxage", "rejected", "badconfig", "slowstore",
                  "reload"],
          "spe": ["happy", "split", "tls", "auth"]}
if len(sys.argv) != 2 or sys.argv[1] not in GROUPS:
    print(__doc__, file=sys.stderr)
    sys.exit(2)
GROUP = sys.argv[1]
CASES = [c for c in GROUPS[GROUP] if c in (os.environ.get("PUSH_CASES") or ",".join(GROUPS[GROUP])).split(",")]

for tool, pkg in (("protoc", "protobuf-compiler"), ("go", "golang-go"), ("openssl", "openssl")):
    if not shutil.which(tool):
        skip(f"{tool} not installed (Debian package {pkg})")
if GROUP == "cpu":
    need_cpu_sampling()

BUILD = os.environ["ARMPROFD_BUILD_DIR"]
SPIN = os.path.join(BUILD, "tests", "sampler", "spin-fp")
SPEGEN = os.path.join(BUILD, "tests", "spegen", "armprofd-spegen")
CPU = 1 if os.cpu_count() > 1 else 0
HOST = socket.gethostname()
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
CPU_TYPES = [("samples", "count"), ("cpu", "nanoseconds")]
SPE_TYPES = [("samples", "count"), ("latency", "cycles"), ("l1d_refills", "count"), ("llc_misses", "count"),
             ("tlb_walks", "count"), ("mispredicts", "count")]
# Bounds on how long the test waits for something that must happen; never a measurement.
WAIT = 15.0

tmp = tempfile.mkdtemp(prefix="armprofd-push-")



def config(store, spool, extra="", source="cpu", store_epoch=None, frequency=97, interval="1s"):
    """[push] toward the store, interval 1 s, timeout 2 s; [store] epoch = 1h makes the store's epochs
    close only at push ticks, so the store's counts and the pushed profiles cover the same spans."""
    src = (f"[spe]\nenable = no\n[pmu]\nenable = no\n[sampler]\nenable = yes\nfrequency = {frequency}\n"
           if source == "cpu" else "[sampler]\nenable = no\n")
    store_epoch = store_epoch or ("1h" if source == "cpu" else "10s")
    return (f"{src}[store]\nepoch = {store_epoch}\n"
            f"[push]\nurl = {store.url}\ninterval = {interval}\ntimeout = 2s\nspool_dir = {spool}\n"
            f"service_name = armprofd-test\nlabels = env=ci, team=perf\n{extra}")


def spool_dir(name):
    d = os.path.join(tmp, name)
    os.makedirs(d, exist_ok=True)
    return d


def metrics(d):
    st, _, body = d.get("/metrics")
    assert st == 200, st
    return parse_prom_text(body.decode())


def metric(m, name, **labels):
    return m.get((name, frozenset(labels.items())), 0)


def push_status(d):
    st, _, body = d.get("/status")
    assert st == 200, st
    return json.loads(body)["push"]


def spooled(spool):
    """{name: size} of the spool's request files (one sent meanwhile is gone from the answer); not its
    temp files (".tmp-*.req"): a SIGKILL between a temp file's write and its rename leaves one whole,
    yet the request was never spooled and the next start rightly removes it."""
    out = {}
    for f in os.listdir(spool):
        if f.endswith(".req") and not f.startswith(".tmp-"):
            try:
                out[f] = os.path.getsize(os.path.join(spool, f))
            except FileNotFoundError:
                pass
    return out


def spooled_ids(spool):
    """The sample IDs in the spool's files, per file: whatever framing the spool uses, the body holds
    each ID as a plain string field (push.proto RawSample.ID)."""
    out = {}
    for f in spooled(spool):
        try:
            data = open(os.path.join(spool, f), "rb").read()
        except FileNotFoundError:
            continue
        out[f] = re.findall(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", data)
    return {f: [i.decode() for i in ids] for f, ids in out.items()}


# Python code with many distinct stacks (the interpreter's C functions under json, re, hashlib, sorting):
# sampled at 1000 Hz its profiles weigh ~15 KB a second, where spin's single stack weighs ~1 KB.
VARIED = """
import hashlib, json, random, re, sys
print("ready", flush=True)
while True:
    d = {str(i): [i] * (i % 7) for i in range(200)}
    s = json.dumps(d)
    len(re.findall(r"\\d+", s)) + len(hashlib.sha256(s.encode()).hexdigest())
    sorted(random.random() for _ in range(300))
"""


class Spin:
    """tests/sampler/spin burning CPU for the whole case, so that every interval has samples; varied=True:
    a python loop with many stacks instead, for large requests."""

    def __init__(self, seconds=120, varied=False):
        argv = [sys.executable, "-c", VARIED] if varied else [SPIN, str(seconds), str(CPU)]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("ready"), line

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


def profiles(store, records=None, go=True, kind=None):
    """[(record, series, sample ID, Profile)] of the delivered requests, decoded, in arrival order."""
    out = []
    for r in (store.delivered() if records is None else records):
        for s in r.decode(store, go=go):
            if kind and s.labels.get("__name__") != kind:
                continue
            for (i, _), p in zip(s.samples, s.profiles):
                out.append((r, s, i, p))
    return out


def check_series_labels(s, name, source):
    want = {"__name__": name, "service_name": "armprofd-test", "host": HOST, "source": source,
            "__delta__": "false", "env": "ci", "team": "perf"}
    check(s.labels == want, f"{name} series labels {s.labels}")
    check(len(s.label_list) == len(s.labels), f"no label name twice: {s.label_list}")


def check_headers(store):
    for r in store.pushes():
        h = r.headers
        if not (h.get("content-type") == "application/proto" and h.get("connect-protocol-version") == "1"):
            return check(False, f"Connect unary headers: {h}")
    return check(True, f"{len(store.pushes())} requests with Content-Type: application/proto, "
                       "Connect-Protocol-Version: 1")


def check_no_overlap(profs, what):
    spans = sorted((p.time_nanos, p.time_nanos + p.duration_nanos) for _, _, _, p in profs)
    ok = all(p.duration_nanos > 0 for _, _, _, p in profs) and \
        all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    return check(ok, f"{what}: {len(spans)} profiles, positive durations, none overlapping: {spans[:4]}...")


def check_contiguous(profs, what):
    """Each profile starts where the previous one ended: no interval missing (the epochs close at push ticks)."""
    spans = sorted((p.time_nanos, p.time_nanos + p.duration_nanos) for _, _, _, p in profs)
    gaps = [(a[1], b[0]) for a, b in zip(spans, spans[1:]) if a[1] != b[0]]
    return check(not gaps, f"{what}: {len(spans)} profiles end to end, gaps {gaps[:3]}")


def store_count_vs_pushed(d, store, kind="process_cpu", wait=WAIT):
    """/hotpcs?window=all counts the samples of the closed epochs, up to its interval's end_unix_ms;
    the profiles pushed up to that end must sum to it exactly."""
    st, _, body = d.get("/hotpcs?window=all&limit=1")
    assert st == 200, body
    hp = json.loads(body)
    end_ms = hp["interval"]["end_unix_ms"]
    # The push of the last closed epoch may still be on its way.
    store.wait_for(lambda: any((p.time_nanos + p.duration_nanos) // 1_000_000 >= end_ms - 1
                               for _, _, _, p in profiles(store, go=False, kind=kind)), wait,
                   f"a profile reaching {end_ms}")
    pushed = sum(p.total("samples") for _, _, _, p in profiles(store, go=False, kind=kind)
                 if (p.time_nanos + p.duration_nanos) // 1_000_000 <= end_ms + 1)
    return check(pushed == hp["samples"] and pushed > 0,
                 f"the store counted {hp['samples']} samples up to {end_ms}; the pushed profiles sum to {pushed}")


def stop(d):
    # Within the unit's TimeoutStopSec (systemd/armprofd.service.in: 20 s), after which systemd would
    # kill it: a loaded machine's stop (the last push built and sent, the store freed) takes seconds.
    rc, took = d.stop(timeout=20)
    check(rc == 0, f"SIGTERM: exit {rc} after {took:.1f} s")


# ---------------------------------------------------------------- the CPU cases

def cpu_happy():
    with PushStore() as store, Spin(), Daemon(config_text=config(store, spool_dir("happy"))) as d:
        d.wait_serving()
        st = push_status(d)
        check(st["url"] == store.url and st["interval_seconds"] == 1 and st["service_name"] == "armprofd-test"
              and st["labels"] == {"env": "ci", "team": "perf"} and st["auth"] == "none" and not st["tenant"],
              f"/status push: {st}")
        n = 4
        store.wait_for(lambda: len(store.delivered()) >= n, n + WAIT, f"{n} requests")
        store_count_vs_pushed(d, store)
        before = store.delivered()
        m = metrics(d)
        after = store.delivered()
        stop(d)
    last = metric(m, "armprofd_push_last_success_timestamp_seconds")
    check(before[-1].t - 1 <= last <= after[-1].answered_at + 1,
          f"last success {last:.3f}, the store's last 200 answered at {before[-1].answered_at:.3f}")
    n_dur = metric(m, "armprofd_push_duration_seconds_count")
    check(len(before) <= n_dur <= len(after), f"push_duration_seconds_count {n_dur}: one per request")
    recs = store.pushes()
    print(f"      request bodies (bytes, 1 s intervals, spin at 97 Hz): {[len(r.body) for r in recs]}")
    check(all(r.status == 200 for r in recs), f"every request answered 200: {[r.status for r in recs]}")
    check_headers(store)
    profs = profiles(store)
    check(all(len(r.series) == 1 for r in recs), "one series per request (CPU only)")
    check_series_labels(profs[0][1], "process_cpu", "cpu-clock")
    check(all(s.labels == profs[0][1].labels for _, s, _, _ in profs), "the same labels in every request")
    ids = [i for _, _, i, _ in profs]
    check(all(UUID_RE.match(i) for i in ids) and len(set(ids)) == len(ids), f"UUID IDs, unique: {ids[:3]}...")
    check(all(p.sample_types == CPU_TYPES and p.period_type == ("cpu", "nanoseconds") for _, _, _, p in profs),
          f"sample types {profs[0][3].sample_types}, period type {profs[0][3].period_type}")
    check(all(p.label_keys() <= {"service"} for _, _, _, p in profs),
          f"sample labels only 'service': {set().union(*(p.label_keys() for _, _, _, p in profs))}")
    check(all(p.total("samples") > 0 for _, _, _, p in profs), "no empty profile pushed")
    check_no_overlap(profs, "CPU")
    check_contiguous(profs, "CPU")
    # Each profile's time is Unix time near its arrival (the pushed interval, then the request).
    check(all(abs(r.t - (p.time_nanos + p.duration_nanos) / 1e9) < WAIT for r, _, _, p in profs),
          "time_nanos are Unix times")


def cpu_outage():
    with PushStore() as store, Spin(), Daemon(config_text=config(store, spool_dir("outage"))) as d:
        d.wait_serving()
        store.wait_for(lambda: len(store.delivered()) >= 1, WAIT, "a first delivery")
        phases = [("down", 3.0, {}), ("500", 2.5, {}), ("429", 4.0, {"retry_after": 3}), ("hang", 3.5, {}),
                  ("reset", 2.5, {})]
        for mode, secs, kw in phases:
            store.set_mode(mode, **kw)
            if mode == "down":
                time.sleep(secs)
            else:
                # At least one request met this mode (a backoff may hold the next one back a little).
                n0 = len(store.pushes())
                time.sleep(secs)
                store.wait_for(lambda: len([r for r in store.pushes()[n0:] if r.mode == mode]) >= 1, WAIT,
                               f"a request answered {mode}")
            check(len(spooled(spool_dir("outage"))) > 0 or mode != "down",
                  f"after {secs:.1f} s {mode}: spool holds {len(spooled(spool_dir('outage')))} requests")
        store.set_mode("ok")
        store.wait_for(lambda: not spooled(spool_dir("outage")) and push_status(d)["state"] == "ok", 3 * WAIT,
                       "the spool drained")
        n = len(store.delivered())
        store.wait_for(lambda: len(store.delivered()) >= n + 2, WAIT, "two more deliveries")
        store_count_vs_pushed(d, store)
        # A push may land while the metrics are read: bound them by what the store saw before and after.
        before = store.delivered()
        m = metrics(d)
        st = push_status(d)
        after = store.delivered()
        stop(d)
    check(store.duplicates() == [], f"no ID delivered twice: {store.duplicates()}")
    seen = {}
    for r in store.pushes():
        for i in (r.ids if r.body is not None else []):
            seen.setdefault(i, []).append(r.mode)
    delivered = set(store.ids_in_order())
    check(set(seen) == delivered, f"every ID sent arrived: {len(set(seen) - delivered)} never delivered")
    profs = profiles(store, go=False)
    starts = [p.time_nanos for _, _, _, p in profs]
    check(starts == sorted(starts), "delivered in time order (oldest spooled first)")
    check_no_overlap(profs, "after the outage")
    check_contiguous(profs, "after the outage")
    # Retry-After: 3 honoured: no request sooner than 3 s after a 429.
    recs = store.pushes()
    gaps = [(b.t - a.answered_at) for a, b in zip(recs, recs[1:]) if a.status == 429]
    check(gaps and min(gaps) >= 3 - 0.05, f"after a 429 with Retry-After: 3 the next request came after {gaps}")
    errs = {k: metric(m, "armprofd_push_errors_total", error=k) for k in ("connect", "timeout", "reset", "http")}
    check(all(v > 0 for v in errs.values()), f"errors by kind: {errs}")
    req = {k: metric(m, "armprofd_push_requests_total", result=k) for k in ("ok", "retry", "rejected", "dropped")}
    check(req["retry"] > 0 and len(before) <= req["ok"] <= len(after) and req["rejected"] == 0 and
          req["dropped"] == 0, f"requests by result {req}; the store answered {len(before)} with 200")
    bytes_ok = metric(m, "armprofd_push_bytes_total")
    check(sum(len(r.body) for r in before) <= bytes_ok <= sum(len(r.body) for r in after),
          f"push_bytes_total {bytes_ok} = the bodies delivered")
    check(len(before) <= st["requests"]["ok"] <= len(after) and st["spool"]["files"] == 0 and st["state"] == "ok",
          f"/status push after recovery: {st}")


def cpu_kill():
    spool = spool_dir("kill")
    with PushStore() as store, Spin():
        store.set_mode("down")
        with Daemon(config_text=config(store, spool)) as d:
            d.wait_serving()
            store.wait_for(lambda: len(spooled(spool)) >= 3, WAIT, "3 spooled requests")
            d.proc.kill()
            d.proc.wait()
        ids = spooled_ids(spool)
        want = [i for f in sorted(ids) for i in ids[f]]
        check(len(spooled(spool)) >= 3 and all(ids.values()),
              f"{len(ids)} requests spooled at SIGKILL, IDs {want[:3]}...")
        with open(os.path.join(spool, ".tmp-x"), "wb") as f:
            f.write(b"\x0a\x03half")  # what a kill in the middle of writing leaves
        store.set_mode("ok")
        with Daemon(config_text=config(store, spool)) as d:
            d.wait_serving()
            try:
                store.wait_for(lambda: set(want) <= set(store.ids_in_order()), WAIT, "the spooled IDs")
            except AssertionError:
                # What the daemon saw of its spool, for whoever reads a failure.
                missing = sorted(set(want) - set(store.ids_in_order()))
                print(f"missing {missing}; spool now {spooled_ids(spool)}; log:\n{d.log()}\n"
                      f"{sorted((k, v) for k, v in metrics(d).items() if k[0].startswith('armprofd_push_'))}",
                      file=sys.stderr)
                raise
            check(not os.path.exists(os.path.join(spool, ".tmp-x")), "the stray .tmp-x is removed")
            check(store.duplicates() == [], f"each once: {store.duplicates()}")
            got = [i for i in store.ids_in_order() if i in set(want)]
            times = {i: p.time_nanos for _, _, i, p in profiles(store, go=False)}
            check([times[i] for i in got] == sorted(times[i] for i in got), "the spooled ones oldest first")
            stop(d)


def cpu_spoolcap():
    spool = spool_dir("cap")
    # The smallest cap [push] takes (64 KiB): a few requests of a varied workload sampled at 250 Hz
    # (~15 KB a second; at 1000 Hz a second's request took 53 KB, and 88 KB on a loaded machine, whose
    # late pushes cover more than a second: over the cap, none was ever kept).
    cap = 64 * 1024
    store = PushStore().start()
    cfg = config(store, spool, f"spool_max_bytes = {cap}\n", frequency=250)
    with store, Spin(varied=True), Daemon(config_text=cfg) as d:
        d.wait_serving()
        store.wait_for(lambda: len(store.delivered()) >= 1, WAIT, "a delivery")
        size = max(len(r.body) for r in store.delivered())
        store.set_mode("down")
        first_seen, biggest, checks = {}, 0, 0
        deadline = time.monotonic() + 3 * WAIT + 2 * cap / size
        # Every quarter interval until two were dropped for room, and one interval more.
        while time.monotonic() < deadline:
            # Every file in the directory, temp files too: the cap is on what the spool holds on disk.
            total = 0
            for f in os.listdir(spool):
                try:
                    total += os.path.getsize(os.path.join(spool, f))
                except FileNotFoundError:
                    pass
            biggest, checks = max(biggest, total), checks + 1
            if total > cap:
                check(False, f"the spool holds {total} bytes on disk, over the cap {cap}")
            for ids in spooled_ids(spool).values():
                for i in ids:
                    first_seen.setdefault(i, time.monotonic())
            if metric(metrics(d), "armprofd_push_spool_dropped_total", reason="full") >= 2:
                break
            time.sleep(0.25)
        time.sleep(1)
        # The drops counted before the kept ones are read: any later one may be of a kept one.
        dropped_before = metric(metrics(d), "armprofd_push_spool_dropped_total", reason="full")
        kept = {i for ids in spooled_ids(spool).values() for i in ids}
        for i in kept:
            first_seen.setdefault(i, time.monotonic())
        m = metrics(d)
        dropped_full = metric(m, "armprofd_push_spool_dropped_total", reason="full")
        check(dropped_full >= 2, f"dropped full: {dropped_full}")
        check(metric(m, "armprofd_push_spool_bytes") <= cap, "push_spool_bytes <= cap")
        dropped = set(first_seen) - kept
        check(dropped and kept and max(first_seen[i] for i in dropped) <= min(first_seen[i] for i in kept),
              f"{len(dropped)} dropped, all older than the {len(kept)} kept")
        print(f"      one request ~{size} bytes, cap {cap}: at most {biggest} bytes on disk in {checks} checks")
        # Until the store is back the spool goes on taking requests and dropping its oldest for
        # room: kept ones may still go, as many as the drops counted since they were read, the oldest
        # first (under load a new request can take a kept one's room before the metrics above).
        store.set_mode("ok")
        store.wait_for(lambda: not spooled_ids(spool), WAIT, "the spool emptied")

        def settled():
            """Every kept one delivered or dropped for room since it was read: a drop unlinks the file
            before its count shows, and the spool looks empty in between."""
            late = metric(metrics(d), "armprofd_push_spool_dropped_total", reason="full") - dropped_before
            return len(kept - set(store.ids_in_order())) <= late
        try:
            store.wait_for(settled, WAIT, "the kept ones delivered or counted as dropped")
        except AssertionError:
            pass  # the check below says what is missing
        m_end = metrics(d)
        late = metric(m_end, "armprofd_push_spool_dropped_total", reason="full") - dropped_before
        delivered = set(store.ids_in_order())
        missing = kept - delivered
        # What the daemon and the store saw of each missing one, for the reader of a failure.
        seen = {i: [(r.status, r.mode) for r in store.pushes() if i in r.ids] for i in missing}
        counts = {f"{name[len('armprofd_push_'):]}{dict(labels)}": v for (name, labels), v in m_end.items()
                  if name in ("armprofd_push_spool_dropped_total", "armprofd_push_requests_total")}
        check(len(missing) <= late and all(first_seen[i] <= min((first_seen[j] for j in kept & delivered), default=1e18)
                                           for i in missing),
              f"the kept ones delivered but the {len(missing)} oldest ({late} dropped after they were read); "
              f"the missing ones at the store: {seen}; the daemon's counts {counts}")
        check(not (dropped & delivered), "no dropped one delivered")
        stop(d)


def cpu_splitbytes():
    # The smallest max_profile_bytes [push] takes (64 KiB); a varied workload sampled at 1000 Hz for 3 s
    # makes profiles over it (uncompressed: the store's limit is on the decompressed size).
    limit = 64 * 1024
    store = PushStore().start()
    cfg = config(store, spool_dir("splitbytes"), f"max_profile_bytes = {limit}\n", frequency=1000, interval="3s")
    with store, Spin(varied=True), Daemon(config_text=cfg) as d:
        d.wait_serving()
        store.wait_for(lambda: sum(len(s.samples) > 1 for r in store.delivered() for s in r.decode_wire()) >= 2,
                       3 * WAIT, "two profiles sent in parts")
        store_count_vs_pushed(d, store)
        m = metrics(d)
        stop(d)
    profs = profiles(store)
    sizes = [len(p.data) for _, _, _, p in profs]
    check(max(sizes) <= limit, f"every part under {limit} bytes decompressed: {sizes}")
    parts = [len(s.samples) for r in store.delivered() for s in r.series]
    check(metric(m, "armprofd_push_split_profiles_total") >= 2,
          f"split counted {metric(m, 'armprofd_push_split_profiles_total')}; parts per profile {parts}")
    check_contiguous([x for x in profs if x[2] == x[1].ids[0]], "the first parts of each interval")


def cpu_maxage():
    spool = spool_dir("maxage")
    with PushStore() as store, Spin(), Daemon(config_text=config(store, spool, "max_age = 3s\n")) as d:
        d.wait_serving()
        store.wait_for(lambda: len(store.delivered()) >= 1, WAIT, "a first delivery")
        n = len(store.pushes())
        store.set_mode("down")
        time.sleep(6)
        store.set_mode("ok")
        store.wait_for(lambda: not spooled(spool) and len(store.delivered()) >= 3, WAIT, "the spool emptied")
        m = metrics(d)
        check(metric(m, "armprofd_push_spool_dropped_total", reason="age") > 0,
              f"dropped age: {metric(m, 'armprofd_push_spool_dropped_total', reason='age')}")
        late = [(round(r.t - p.time_nanos / 1e9, 2)) for r, _, _, p in profiles(store, store.delivered()[n:], go=False)]
        # Older than 3 s at delivery: the profile's start more than max_age before its arrival (the
        # margin is the time between the daemon's check and the request's arrival, on loopback).
        check(all(a <= 3.0 + 0.25 for a in late), f"ages (from their start) at delivery after the outage: {late}")
        stop(d)


def cpu_rejected():
    with PushStore() as store, Spin():
        store.set_mode("400")
        with Daemon(config_text=config(store, spool_dir("rejected"))) as d:
            d.wait_serving()
            store.wait_for(lambda: len(store.pushes()) >= 3, WAIT, "3 requests refused")
            d.wait_log(re.escape(store.message), timeout=WAIT)
            check(True, "the store's message is in the daemon's log")
            refused = [i for r in store.pushes() for i in r.ids]
            store.set_mode("ok")
            store.wait_for(lambda: len(store.delivered()) >= 2, WAIT, "deliveries after the 400s")
            m = metrics(d)
            stop(d)
    ids = [i for r in store.pushes() for i in r.ids]
    check(len(ids) == len(set(ids)), f"no request sent twice: {len(ids)} IDs, {len(set(ids))} distinct")
    check(not set(refused) & set(store.ids_in_order()), "none of the refused delivered later")
    n400 = len([r for r in store.pushes() if r.status == 400])
    check(metric(m, "armprofd_push_requests_total", result="rejected") == n400,
          f"rejected {metric(m, 'armprofd_push_requests_total', result='rejected')} = {n400} answered 400")
    check(not spooled(spool_dir("rejected")), "nothing refused kept in the spool")


def cpu_badconfig():
    with PushStore() as store:
        reg = os.path.join(tmp, "a-file")
        open(reg, "w").close()
        bad = {"unknown scheme": f"url = ftp://127.0.0.1:{store.port}\n",
               "missing password file": "basic_auth_user = u\nbasic_auth_password_file = /nonexistent/pw\n",
               "spool_dir not writable": f"spool_dir = {reg}/spool\n"}

        def bad_config(extra):
            c = config(store, spool_dir("bad"))
            for line in extra.splitlines():
                key = line.split("=")[0].strip()
                c = re.sub(rf"^{key} = .*\n", "", c, flags=re.M)
            return c + extra
        for what, extra in bad.items():
            with Daemon(config_text=bad_config(extra)) as d:
                try:
                    rc = d.proc.wait(WAIT)
                except subprocess.TimeoutExpired:
                    rc = None
                time.sleep(0.1)
                check(rc not in (0, None) and "[push]" in d.log(),
                      f"{what}: exit {rc}, {d.log().splitlines()[-1:] if d.log() else 'nothing logged'}")
        with Spin(), Daemon(config_text=config(store, spool_dir("bad"))) as d:
            d.wait_serving()
            store.wait_for(lambda: len(store.delivered()) >= 1, WAIT, "a delivery")
            for what, extra in bad.items():
                with open(d.config, "w") as f:
                    f.write(bad_config(extra))
                n_failed = d.log().count("reload failed")
                d.signal(signal.SIGHUP)
                deadline = time.monotonic() + WAIT
                while d.log().count("reload failed") == n_failed and time.monotonic() < deadline:
                    time.sleep(0.05)
                check(d.log().count("reload failed") > n_failed, f"reload with {what}: reload failed")
                n = len(store.delivered())
                store.wait_for(lambda: len(store.delivered()) >= n + 2, WAIT, "the old push pushing")
                check(d.proc.poll() is None and push_status(d)["url"] == store.url,
                      f"after the failed reload ({what}) the old push goes on")
            stop(d)


def cpu_slowstore():
    spool = spool_dir("slow")
    with PushStore() as store, Spin(), Daemon(config_text=config(store, spool)) as d:
        d.wait_serving()
        store.wait_for(lambda: len(store.delivered()) >= 1, WAIT, "a first delivery")
        store.set_mode("slow", delay=3.0)
        time.sleep(10)
        store.set_mode("ok")
        store.wait_for(lambda: not spooled(spool) and push_status(d)["state"] == "ok", 3 * WAIT, "the spool drained")
        m = metrics(d)
        stop(d)
    stored = store.stored()
    sent = {i for r in store.pushes() for i in (r.ids if r.body is not None else [])}
    twice = sorted(n for n in stored.values() if n > 1)
    print(f"      {len(stored)} profiles stored, {len(twice)} of them more than once: {twice}")
    check(max(stored.values()) <= 2, f"no profile stored more than twice: {max(stored.values())} at most")
    check(set(stored) == sent, f"every profile sent was stored: {len(sent - set(stored))} never")
    check(metric(m, "armprofd_push_errors_total", error="timeout") >= 1,
          f"timeouts counted: {metric(m, 'armprofd_push_errors_total', error='timeout')}")


def push_counters(m):
    """Every push counter series of a /metrics (histogram buckets, sums and counts included)."""
    return {k: v for k, v in m.items() if k[0].startswith("armprofd_push_") and
            (k[0].endswith(("_total", "_bucket", "_count", "_sum")))}


def cpu_reload():
    """Every reload path keeps the push's counters, and a push turned on sends from then on."""
    spool = spool_dir("reload")
    with PushStore() as a, PushStore() as b, Spin():
        on_a = config(a, spool)
        off = re.sub(r"^url = .*\n", "", on_a, flags=re.M)
        on_b = config(b, spool)
        with Daemon(config_text=off) as d:
            d.wait_serving()
            reloads = [0]
            seen = {}

            def reload(text):
                with open(d.config, "w") as f:
                    f.write(text)
                t = time.time()
                d.signal(signal.SIGHUP)
                reloads[0] += 1
                deadline = time.monotonic() + WAIT
                while d.log().count("Configuration reloaded") < reloads[0] and time.monotonic() < deadline:
                    time.sleep(0.02)
                check(d.log().count("Configuration reloaded") == reloads[0], f"reload {reloads[0]} done")
                return t

            def counters_kept(what):
                now = push_counters(metrics(d))
                down = {k: (seen[k], v) for k, v in now.items() if k in seen and v < seen[k]}
                gone = sorted(k for k in seen if k not in now)
                check(not down and not gone and now, f"{what}: {len(now)} push counters, none went down "
                      f"{list(down.items())[:3]} or away {gone[:3]}")
                seen.update(now)

            def none_across(store, n0, t_on, what):
                """The profiles delivered from the n0-th request on: those built before the SIGHUP at t_on
                (spooled when the push went off) end before it; those built after start after it, with
                the epoch closed when the daemon read the SIGHUP. None spans it."""
                store.wait_for(lambda: any(p.time_nanos / 1e9 >= t_on - 0.1 for _, _, _, p in
                                           profiles(store, store.delivered()[n0:], go=False)), WAIT,
                               f"a profile of the push {what}")
                spans = [(p.time_nanos / 1e9 - t_on, (p.time_nanos + p.duration_nanos) / 1e9 - t_on)
                         for _, _, _, p in profiles(store, store.delivered()[n0:], go=False)]
                spans = [(round(a, 3), round(b, 3)) for a, b in spans]
                across = [(a, b) for a, b in spans if a < -0.1 and b > 0]
                check(not across, f"{what}: no profile spans the SIGHUP: {across or spans[:3]} (seconds from it)")

            # What the store collects while the push is off is not the push's: 3 s of samples.
            time.sleep(3)
            check(push_status(d) == {"state": "off"}, "push off at start")
            none_across(a, 0, reload(on_a), "turned on")
            counters_kept("after it was turned on")
            n = len(a.delivered())
            reload(on_a)
            a.wait_for(lambda: len(a.delivered()) >= n + 2, WAIT, "deliveries after the same configuration")
            counters_kept("the same configuration reloaded")
            ok_before = push_status(d)["requests"]["ok"]
            reload(on_b)
            b.wait_for(lambda: len(b.delivered()) >= 2, WAIT, "deliveries to the new URL")
            counters_kept("the URL changed")
            st = push_status(d)
            check(st["url"] == b.url and st["requests"]["ok"] >= ok_before and st["last_success_unix_ms"],
                  f"/status push after the URL changed: ok {st['requests']['ok']} >= {ok_before}, "
                  f"last success {st['last_success_unix_ms']}")
            reload(off)
            check(push_status(d) == {"state": "off"}, "push off")
            time.sleep(2.5)
            n = len(a.delivered())
            none_across(a, n, reload(on_a), "turned on again")
            counters_kept("turned off and on again")
            # What the daemon counted as delivered, against the stores: every distinct request they
            # answered 200 at least, every 200 at most (a reload cuts short a request in flight,
            # whose 200 the daemon may not read: it sends it again, at least once). The stores
            # refuse from now on; once the daemon saw a refusal it has read every answer before.
            a.set_mode("500")
            t = time.time()
            a.wait_for(lambda: (push_status(d).get("last_error_unix_ms") or 0) >= t * 1000, WAIT, "a refusal seen")
            distinct = {tuple(r.ids) for r in a.delivered() + b.delivered()}
            answered = len(a.delivered()) + len(b.delivered())
            ok = metric(metrics(d), "armprofd_push_requests_total", result="ok")
            check(len(distinct) <= ok <= answered, f"requests ok {ok}: the stores took {len(distinct)} distinct "
                  f"requests, answered {answered} with 200")
            stop(d)


# ---------------------------------------------------------------- the SPE replay cases

def generate(name, records, seed=7):
    subprocess.run([SPEGEN, "--out-dir", tmp, "--prefix", name, "--seed", str(seed), "--records", str(records),
                    "--cpus", "2", "--scenario", "all", "--pipe", "--chunk-size", "65536", "--ts"], check=True,
                   stdout=subprocess.DEVNULL)
    facts = dict(l.rstrip("\n").split("=", 1) for l in open(os.path.join(tmp, f"{name}.truth.txt"))
                 if "=" in l and l[0] != "#")
    return os.path.join(tmp, f"{name}.data"), facts


def feed_slowly(fifo, data, pieces, pause):
    """Write data to the FIFO in pieces with pauses: the replay then spans several push intervals."""
    def run():
        deadline = time.monotonic() + WAIT
        while True:
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                os.set_blocking(fd, True)
                break
            except OSError:
                if time.monotonic() > deadline:
                    return
                time.sleep(0.02)
        step = -(-len(data) // pieces)
        for i in range(0, len(data), step):
            os.write(fd, data[i:i + step])
            time.sleep(pause)
        os.close(fd)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def spe_happy():
    path, facts = generate("happy", 40000)
    fifo = os.path.join(tmp, "happy.fifo")
    os.mkfifo(fifo)
    with PushStore() as store:
        with Daemon(args=["--replay", fifo], config_text=config(store, spool_dir("spe"), source="spe")) as d:
            feeder = feed_slowly(fifo, open(path, "rb").read(), 4, 1.2)
            d.wait_serving(timeout=WAIT)
            feeder.join()
            d.wait_replay_done(timeout=WAIT)
            want = int(facts["records"])
            total = lambda: sum(p.total("samples") for _, _, _, p in profiles(store, go=False))  # noqa: E731
            store.wait_for(lambda: total() >= want, WAIT, f"{want} samples pushed")
            # The push thread answers too: it runs below the collector (common/thread-prio.h).
            nice = {comm: stat_field(fields, 19) for comm, fields in d.threads().values()}
            check("collector" in nice and nice.get("push") == min(nice["collector"] + 10, 19),
                  f"the push thread runs 10 nice steps below the collector ({nice})")
            n = len(store.pushes())
            # Two intervals more with nothing new: no request (an interval without samples sends none).
            time.sleep(2.5)
            check(len(store.pushes()) == n, f"no request once the replay is pushed ({len(store.pushes())} vs {n})")
            stop(d)
    profs = profiles(store)
    print(f"      request bodies (bytes) for {want} records: {[len(r.body) for r in store.delivered()]}")
    # The generator's timestamps span under a millisecond of perf time and a replay's epochs follow the
    # file's clock: the whole file is one epoch, pushed once, however slowly the FIFO brings it.
    check(len(store.delivered()) == 1, f"the replay pushed in {len(store.delivered())} request(s)")
    check(total() == want, f"pushed samples {total()} = the generator's records {want}")
    check_headers(store)
    check(all(s.labels.get("__name__") == "spe" for _, s, _, _ in profs), "SPE series only")
    check_series_labels(profs[0][1], "spe", "spe")
    check(all(p.sample_types == SPE_TYPES for _, _, _, p in profs), f"SPE sample types {profs[0][3].sample_types}")
    check(all(p.label_keys() <= {"service"} for _, _, _, p in profs), "sample labels only 'service'")
    # Stamped with the time they are pushed: near the request's arrival (Pyroscope refuses > 1 h old).
    check(all(abs(r.t - (p.time_nanos + p.duration_nanos) / 1e9) < WAIT for r, _, _, p in profs),
          "a replay's profiles carry the time they are pushed")
    check_no_overlap(profs, "SPE")
    # [privacy] kernel_addresses = no (the default): the kernel scenario's PCs reach the store as the one
    # [kernel] location, address 0 and no mapping, never as a kernel address (the generator's are 0xffff...).
    locs = [loc for _, _, _, p in profs for loc in p.locations.values()]
    kernel = [loc for loc in locs if "[kernel]" in loc[2]]
    check(all(a >> 56 != 0xFF for a, _, _ in locs), "no kernel address in the pushed profiles")
    check(len(kernel) >= 1 and all(a == 0 and m == 0 for a, m, _ in kernel),
          f"kernel PCs pushed as [kernel] at address 0 ({kernel[:3]})")


def spe_split():
    path, facts = generate("split", 30000)
    with PushStore() as store:
        cfg = config(store, spool_dir("split"), "max_samples = 100\n", source="spe")
        with Daemon(args=["--replay", path], config_text=cfg) as d:
            d.wait_ready(timeout=WAIT)
            want = int(facts["records"])
            total = lambda: sum(p.total("samples") for _, _, _, p in profiles(store, go=False))  # noqa: E731
            store.wait_for(lambda: total() >= want, WAIT, f"{want} samples pushed")
            m = metrics(d)
            stop(d)
    profs = profiles(store)
    series = [s for r in store.delivered() for s in r.series]
    check(len(series) == 1 and len(series[0].samples) > 1,
          f"one series, {len(series[0].samples)} RawSamples (parts)")
    check(all(len(p.samples) <= 100 for _, _, _, p in profs), f"parts' samples {[len(p.samples) for *_, p in profs]}")
    check(total() == want, f"parts sum to the generator's {want} records: {total()}")
    ids = [i for _, _, i, _ in profs]
    check(len(set(ids)) == len(ids), "each part its own ID")
    check(metric(m, "armprofd_push_split_profiles_total") >= 1,
          f"split counted: {metric(m, 'armprofd_push_split_profiles_total')}")
    check(metric(m, "armprofd_push_trimmed_samples_total") == 0, "nothing trimmed (under 64 parts)")


def spe_tls():
    certs = make_certs(tmp)
    path, _ = generate("tls", 3000)
    for what, extra, good in (("tls_ca_file = the test CA", f"tls_ca_file = {certs['ca']}\n", True),
                              ("tls_ca_file = another CA", f"tls_ca_file = {certs['other_ca']}\n", False),
                              ("tls_insecure_skip_verify", "tls_insecure_skip_verify = yes\n", True)):
        with PushStore(tls=(certs["cert"], certs["key"])) as store:
            with Daemon(args=["--replay", path], config_text=config(store, spool_dir("tls-" + str(good)), extra,
                                                                    source="spe")) as d:
                d.wait_ready(timeout=WAIT)
                if good:
                    store.wait_for(lambda: store.delivered(), WAIT, "a delivery over TLS")
                    check(True, f"{what}: delivered over HTTPS")
                else:
                    m = store.wait_for(lambda: (lambda m: metric(m, "armprofd_push_errors_total", error="tls") and m)(
                        metrics(d)), WAIT, "error tls counted")
                    check(not store.delivered() and store.tls_failures,
                          f"{what}: refused ({store.tls_failures[:1]}), "
                          f"tls errors {metric(m, 'armprofd_push_errors_total', error='tls')}")
                    check(push_status(d)["state"] == "retrying", f"state {push_status(d)['state']}")
                stop(d)


def spe_auth():
    path, _ = generate("auth", 3000)
    secret_pw, secret_tok = "pw-" + os.urandom(8).hex(), "tok-" + os.urandom(8).hex()
    for kind in ("basic", "bearer"):
        pwfile = os.path.join(tmp, f"{kind}.secret")
        with open(pwfile, "w") as f:
            f.write((secret_pw if kind == "basic" else secret_tok) + "\n")
        store = PushStore(basic=("fleet", secret_pw), tenant="team-a") if kind == "basic" else \
            PushStore(bearer=secret_tok)
        extra = (f"basic_auth_user = fleet\nbasic_auth_password_file = {pwfile}\ntenant = team-a\n"
                 if kind == "basic" else f"bearer_token_file = {pwfile}\n")
        with store, Daemon(args=["--replay", path],
                           config_text=config(store, spool_dir("auth-" + kind), extra, source="spe")) as d:
            d.wait_ready(timeout=WAIT)
            store.wait_for(lambda: store.delivered(), WAIT, f"a delivery with {kind} auth")
            r = store.delivered()[0]
            check(r.status == 200 and (kind != "basic" or r.headers.get("x-scope-orgid") == "team-a"),
                  f"{kind}: the store accepted the credentials" + (", tenant team-a" if kind == "basic" else ""))
            st = push_status(d)
            check(st["auth"] == kind and st["tenant"] == (kind == "basic"), f"/status auth {st['auth']}, "
                  f"tenant {st['tenant']}")
            secret = secret_pw if kind == "basic" else secret_tok
            places = {"/status": d.get("/status")[2].decode(), "/metrics": d.get("/metrics")[2].decode(),
                      "cmdline": open(f"/proc/{d.proc.pid}/cmdline", "rb").read().decode(errors="replace")}
            stop(d)
            places["stderr"] = d.log()
            check(all(secret not in v for v in places.values()),
                  f"{kind}: the secret in none of {list(places)}: "
                  f"{[k for k, v in places.items() if secret in v]}")


def main():
    subprocess.run([binary(), "--version"], capture_output=True)
    cases = {"cpu": {"happy": cpu_happy, "outage": cpu_outage, "kill": cpu_kill, "spoolcap": cpu_spoolcap,
                     "splitbytes": cpu_splitbytes,
                     "maxage": cpu_maxage, "rejected": cpu_rejected, "badconfig": cpu_badconfig,
                     "slowstore": cpu_slowstore, "reload": cpu_reload},
             "spe": {"happy": spe_happy, "split": spe_split, "tls": spe_tls, "auth": spe_auth}}[GROUP]
    try:
        for name in CASES:
            t0 = time.monotonic()
            print(f"== {GROUP} {name}", flush=True)
            try:
                cases[name]()
            except AssertionError as e:
                check(False, f"{name}: {e}")
            except Exception:  # noqa: BLE001 -- one case's error is its failure; the others still run
                traceback.print_exc()
                check(False, f"{name}: {traceback.format_exc().splitlines()[-1]}")
            print(f"   ({time.monotonic() - t0:.1f} s)", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failed:\n  " + "\n  ".join(f[:300] for f in failures))
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
