#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The Grafana dashboard and the Prometheus rules against the daemon:
promtool checks the rules and runs their unit tests; the dashboard parses,
has its variables and panels; every PromQL expression of the dashboard and
the rules passes promtool's parser, and every metric name in them is on a
live /metrics of the daemon (replaying a generator file, so the SPE series
exist, and a sampler-only daemon, each with a push configured to a closed
port, so the push series exist), is a histogram's series, or a recording
rule of the rules file. The PMU's hardware-event families are not on a
machine without a hardware PMU (this one): those must be in the daemon's
event catalogue (collectors/pmu/pmu-event.c) or families exporters/counters.c
writes (the top-down fractions), and are named when accepted that way.

Then the real Prometheus scrapes both daemons with the rules loaded and
evaluates every panel's queries for each: on the sampler-only daemon (what
this VM is) a query returns a series, or its panel's description says why it
cannot (a host without SPE, without a hardware PMU, without [push] url);
on the SPE daemon every query of SPE metrics returns one (the native
histogram's in a second Prometheus with native histograms enabled)."""

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from armprofd_test import Daemon, prom_query, prom_wait_query, prometheus, skip  # noqa: E402

SRC = os.environ["ARMPROFD_SOURCE_DIR"]
BUILD = os.environ["ARMPROFD_BUILD_DIR"]
SPEGEN = os.path.join(BUILD, "tests", "spegen", "armprofd-spegen")
RULES = os.path.join(SRC, "packaging", "prometheus", "armprofd.rules.yml")
RULES_TEST = os.path.join(SRC, "packaging", "prometheus", "armprofd.rules.test.yml")
DASHBOARD = os.path.join(SRC, "packaging", "grafana", "armprofd.json")

PANELS = ["IPC per CPU", "IPC per host", "L1D and LLC miss ratios", "TLB walk ratio", "Top-down level 1 per host",
          "Top-down per CPU", "Memory bandwidth", "Misses per kilo-instruction", "SPE loads by data source",
          "Peer-snoop rate", "Load latency quantiles (classic histogram)", "Load latency quantiles (native histogram)",
          "Sampler and SPE", "Truncations and losses", "Push to the profile store", "armprofd's own CPU and memory"]

# PromQL's functions and keywords (prometheus/promql/parser/functions.go, lex.go): words followed by "("
# or standing as operators are not metric names.
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless",
            "offset", "atan2", "inf", "nan"}

failures = []


def fail(msg):
    print(f"FAIL: {msg}")
    failures.append(msg)


def metric_names(expr):
    """The metric names an expression selects: identifiers that are not
    functions (followed by "("), aggregation modifiers' label lists, label
    matchers, strings, durations or keywords."""
    e = re.sub(r'"(?:\\.|[^"\\])*"', '""', expr)                       # strings
    e = re.sub(r"\{[^}]*\}", "", e)                                        # label matchers
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\[[^\]]*\]", "", e)                                       # ranges
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        word, rest = m.group(0), e[m.end():].lstrip()
        if rest.startswith("(") or word in KEYWORDS or word.startswith("$"):
            continue
        if e[max(0, m.start() - 1)] == "$":                                 # $__rate_interval, $instance
            continue
        names.add(word)
    return names


def live_names(d):
    status, _, body = d.get("/metrics")
    assert status == 200, status
    names = set()
    for line in body.decode().splitlines():
        if line.startswith("# TYPE "):
            name, typ = line.split()[2:4]
            names.add(name)
            if typ == "histogram":
                names.update(name + s for s in ("_bucket", "_sum", "_count"))
    return names


def catalogue_names():
    """The PMU's families: the event catalogue's, and those exporters/counters.c
    derives from hardware counts (armprofd_topdown_fraction)."""
    text = open(os.path.join(SRC, "collectors", "pmu", "pmu-event.c")).read()
    names = set(re.findall(r'\.metric\s*=\s*"([a-z0-9_:]+)"', text))
    text = open(os.path.join(SRC, "exporters", "counters.c")).read()
    return names | set(re.findall(r'prom_family(?:_unit)?\(\s*w,\s*"(armprofd_[a-z0-9_]+)"', text))


def check_promql_syntax(exprs):
    """Every expression through promtool's parser, as a recording rule, with
    Grafana's variables replaced by what they stand for."""
    rules = {"groups": [{"name": "syntax", "rules": []}]}
    for i, (where, e) in enumerate(exprs):
        e = e.replace("$__rate_interval", "5m").replace("$instance", ".*").replace("$cpu", ".*")
        rules["groups"][0]["rules"].append({"record": f"syntax_check_{i}", "expr": e})
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        yaml.safe_dump(rules, f)
    r = subprocess.run(["promtool", "check", "rules", f.name], capture_output=True, text=True)
    os.unlink(f.name)
    if r.returncode != 0:
        fail(f"promtool rejects a dashboard or rule expression: {(r.stdout + r.stderr).strip()[-1500:]}")
    else:
        print(f"promtool parses all {len(exprs)} expressions")


# Why a panel's query may return nothing on a host, and what its description then says.
def spe_metric(n):
    return n.startswith(("armprofd_spe_", "instance:armprofd_spe_"))


EMPTY_BECAUSE = (("SPE", "Empty on hosts without SPE", spe_metric),
                 ("a hardware PMU", "Empty on hosts without a hardware PMU", None),  # the catalogue's, below
                 ("[push] url", "Empty on hosts without [push] url", lambda n: n.startswith("armprofd_push_")))
RATE_INTERVAL = "15s"   # $__rate_interval at a 1 s scrape interval: Grafana's max(4 x scrape, ...)


@contextlib.contextmanager
def scraping(tmp, name, targets, native=False):
    """Prometheus scraping targets with the rules, once it has four scrapes of each: a rate over
    RATE_INTERVAL has two points, and the rules ran on them."""
    with prometheus(tmp, targets, native=native, rule_files=[RULES], name=name) as port:
        for t in targets:
            prom_wait_query(port, f'count_over_time(up{{job="armprofd",instance="{t}"}}[1m]) >= 4', timeout=60)
        yield port


def panel_query(expr, instance):
    """A panel's query as Grafana sends it for one instance: $instance a regex (in a PromQL string, whose
    backslashes are escapes themselves), every CPU."""
    return (expr.replace("$__rate_interval", RATE_INTERVAL)
            .replace("$instance", re.escape(instance).replace("\\", "\\\\")).replace("$cpu", ".*"))


def check_panels_live(panels, catalogue, recorded_from_pmu, sampler, spe, tmp):
    """Each panel's queries through the real Prometheus, for the sampler-only and the SPE daemon."""
    def empty_because(names):
        for what, phrase, pred in EMPTY_BECAUSE:
            if any((pred(n) if pred else (n in catalogue or n in recorded_from_pmu)) for n in names):
                return what, phrase
        return None, None

    with scraping(tmp, "prom", [sampler, spe]) as port, scraping(tmp, "prom-native", [spe], native=True) as native_port:
        # The SPE recording rules ran on the SPE daemon's series.
        prom_wait_query(port, f'instance:armprofd_spe_peer_snoops:rate5m{{instance="{spe}"}}', timeout=60)
        for p in panels:
            native = "native histogram" in p["title"]
            for t in p["targets"]:
                names = metric_names(t["expr"])
                where = f"panel {p['title']!r} {t['refId']}"
                if not native:
                    got = prom_query(port, panel_query(t["expr"], sampler))
                    if got:
                        print(f"ok    {where}: {len(got)} series on the sampler-only daemon")
                    else:
                        what, phrase = empty_because(names)
                        if what and phrase.lower() in p.get("description", "").lower():
                            print(f"ok    {where}: empty on the sampler-only daemon, as its description says "
                                  f"(a host without {what})")
                        else:
                            fail(f"{where}: no series on the sampler-only daemon, and the description does not "
                                 f"say why{f' (want: {phrase!r})' if phrase else ''}: {t['expr']}")
                if any(spe_metric(n) for n in names):
                    got = prom_query(native_port if native else port, panel_query(t["expr"], spe))
                    if got:
                        print(f"ok    {where}: {len(got)} series on the SPE daemon")
                    else:
                        fail(f"{where}: no series on the SPE daemon: {t['expr']}")


def main():
    if not shutil.which("promtool"):
        skip("promtool not installed (Debian package prometheus)")
    for args, what in ((["check", "rules", RULES], "check rules"), (["test", "rules", RULES_TEST], "test rules")):
        r = subprocess.run(["promtool"] + args, capture_output=True, text=True)
        out = (r.stdout + r.stderr).strip()
        print(f"promtool {what}: exit {r.returncode}: {out.splitlines()[-1] if out else ''}")
        if r.returncode != 0:
            fail(f"promtool {what}: {out[-2000:]}")

    dash = json.load(open(DASHBOARD))
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    for v in ("instance", "cpu"):
        if v not in variables:
            fail(f"dashboard variable ${v} missing")
    if not any(i.get("name") == "DS_PROMETHEUS" for i in dash.get("__inputs", [])):
        fail("dashboard has no DS_PROMETHEUS input (not importable into another Grafana)")
    titles = [p["title"] for p in dash["panels"] if p["type"] != "row"]
    for t in PANELS:
        if t not in titles:
            fail(f"dashboard panel {t!r} missing")
    exprs = []
    for p in dash["panels"]:
        if p["type"] == "row":
            continue
        if not p.get("targets"):
            fail(f"panel {p['title']!r} has no query")
        for t in p.get("targets", []):
            if not t.get("expr"):
                fail(f"panel {p['title']!r} target {t.get('refId')} has no expr")
            else:
                exprs.append((f"panel {p['title']!r}", t["expr"]))
    label_values = []
    for v in variables.values():
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", q)
        if not m:
            fail(f"variable ${v['name']}: not a label_values() query: {q}")
            continue
        label_values.append((f"variable ${v['name']}", m.group(1)))

    rules = yaml.safe_load(open(RULES))
    recorded = set()
    for g in rules["groups"]:
        for r in g["rules"]:
            if "record" in r:
                recorded.add(r["record"])
            exprs.append((f"rule {r.get('record') or r.get('alert')}", r["expr"]))
    check_promql_syntax(exprs + label_values)

    if not shutil.which("prometheus"):
        skip("prometheus not installed (Debian package prometheus)")
    if os.geteuid() != 0:
        skip("the sampler-only daemon needs root: CPU-wide perf events")
    tmp = tempfile.mkdtemp(prefix="armprofd-dash-")
    subprocess.run([SPEGEN, "--out-dir", tmp, "--prefix", "g", "--records", "20000"], check=True,
                   stdout=subprocess.DEVNULL)
    push = "[push]\nurl = http://127.0.0.1:9\ninterval = 1s\ntimeout = 1s\nspool_dir = %s/spool-%s\n"
    # What this VM is without --replay: no SPE, no hardware PMU; the sampler runs.
    sampler_config = push % (tmp, "sampler") + "[spe]\nenable = auto\n[sampler]\nenable = auto\n"
    catalogue = catalogue_names()
    recorded_from_pmu = set()
    for g in rules["groups"]:
        for r in g["rules"]:
            if "record" in r and metric_names(r["expr"]) & catalogue:
                recorded_from_pmu.add(r["record"])
    with Daemon(["--replay", os.path.join(tmp, "g.data")], config_text=push % (tmp, "spe")) as spe, \
            Daemon(config_text=sampler_config) as sampler:
        spe.wait_ready(timeout=30)
        sampler.wait_serving(timeout=30)
        live = live_names(spe) | live_names(sampler)
        panels = [p for p in dash["panels"] if p["type"] != "row"]
        # What the sampler-only host loses or evicts is on a panel (its evictions were on none).
        on_panels = {n for p in panels for t in p["targets"] for n in metric_names(t["expr"])}
        losses = {n for n in live_names(sampler) if n.startswith(("armprofd_cpu_", "armprofd_store_")) and
                  re.search(r"_(evictions|lost|lost_records|dropped)_total$", n)}
        for n in sorted(losses - on_panels):
            fail(f"{n}: the sampler-only daemon counts losses there, on no panel")
        print(f"the sampler-only daemon's losses, all on panels: {' '.join(sorted(losses))}")
        check_panels_live(panels, catalogue, recorded_from_pmu, sampler.address, spe.address, tmp)
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(live)} metric names live, {len(catalogue)} in the PMU event catalogue, {len(recorded)} recorded")

    used, by_catalogue = 0, set()
    for where, e in exprs + label_values:
        for name in sorted(metric_names(e)):
            used += 1
            if name in live or name in recorded or name == "up":
                continue
            if name in catalogue:
                by_catalogue.add(name)
                continue
            fail(f"{where}: {name} is not on the daemon's /metrics, nor a recording rule")
    if by_catalogue:
        print(f"not live here (no hardware PMU), in the event catalogue: {' '.join(sorted(by_catalogue))}")
    if used < 40:
        fail(f"only {used} metric names read from the expressions: the tokenizer lost some")
    print(f"{used} metric names checked in {len(exprs) + len(label_values)} expressions")
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
