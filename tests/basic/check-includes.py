#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The layers' include directions, checked on every source file.

Data flows one way: collectors -> store -> exporters, with the daemon
composing them (ARCHITECTURE.md). A header included against that flow is a
failure naming the file, the line and the rule. Rules:

  common/        includes only common/
  collectors/    includes collectors/ and common/ (never store/, symbols/,
                 exporters/ or daemon/)
  store/         includes store/, common/ and the collectors' value types
  symbols/       includes symbols/ and common/
  exporters/     includes exporters/, store/, common/, the generated
                 protobuf code and the collectors' value types, never a
                 collector's internals, symbols/ (names reach them through
                 callbacks) or daemon/
  daemon/        anything; nothing outside daemon/ (tests aside) includes
                 a daemon/ header

The collectors' value types are the headers that describe what flows out of
them: the seam (source.h), the decoder's record (spe-rec.h, spe-pkt.h) and
the PMU's published snapshot (pmu-snapshot.h, pmu-event.h, pmu-ratio.h,
pmu-topdown.h, pmu-bandwidth.h, cpulist.h).

Usage: check-includes.py [SOURCE_DIR]   (default: $ARMPROFD_SOURCE_DIR)
"""
import os
import re
import sys

LAYERS = ("common", "collectors", "store", "symbols", "exporters", "daemon")
VALUE_TYPES = {"source.h", "spe-rec.h", "spe-pkt.h", "pmu-snapshot.h", "pmu-event.h", "pmu-ratio.h", "pmu-topdown.h",
               "pmu-bandwidth.h", "cpulist.h"}
ALLOWED = {
    "common": {"common"},
    "collectors": {"collectors", "common"},
    "store": {"store", "common", "collectors:value"},
    "symbols": {"symbols", "common"},
    "exporters": {"exporters", "store", "common", "collectors:value", "generated"},
    "daemon": set(LAYERS) | {"collectors:value", "generated"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(rel):
    top = rel.split("/", 1)[0]
    return top if top in LAYERS else None


def main():
    src = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.environ["ARMPROFD_SOURCE_DIR"])
    headers = {}  # basename -> [relative paths]
    files = []
    for top in LAYERS:
        for d, _, names in os.walk(os.path.join(src, top)):
            for n in names:
                rel = os.path.relpath(os.path.join(d, n), src)
                if n.endswith(".h"):
                    headers.setdefault(n, []).append(rel)
                if n.endswith((".c", ".h")):
                    files.append(rel)
    if not files:
        print(f"check-includes: no sources under {src}", file=sys.stderr)
        return 1
    bad = []
    for rel in sorted(files):
        me = layer_of(rel)
        with open(os.path.join(src, rel), encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                inc = m.group(1)
                name = os.path.basename(inc)
                if name == "build-config.h":
                    continue  # meson's configure_file(): the version and paths
                if name.endswith(".pb-c.h"):
                    target = "generated"
                else:
                    where = headers.get(name)
                    if not where:
                        bad.append(f"{rel}:{lineno}: includes \"{inc}\", which is no header of the tree")
                        continue
                    if len(where) > 1:
                        bad.append(f"{rel}:{lineno}: \"{inc}\" is ambiguous ({', '.join(where)}); "
                                   "header names are unique")
                        continue
                    target = layer_of(where[0])
                    if target == "collectors" and name in VALUE_TYPES:
                        target_ok = {"collectors", "collectors:value"}
                    else:
                        target_ok = {target}
                allowed = ALLOWED[me]
                ok = (target in allowed) if target == "generated" else bool(target_ok & allowed)
                if target == "daemon" and me != "daemon":
                    ok = False
                if not ok:
                    what = where[0] if target != "generated" else inc
                    bad.append(f"{rel}:{lineno}: {me}/ may not include {what} "
                               f"({me}/ includes only {', '.join(sorted(allowed))})")
    for b in bad:
        print(b)
    print(f"check-includes: {len(files)} files, {len(bad)} forbidden includes")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
