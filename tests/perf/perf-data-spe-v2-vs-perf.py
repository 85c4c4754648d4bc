#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Version 2 Arm SPE metadata: our reader against a perf that reads it.

Debian 12's perf (6.1) knows only version 1 of the SPE AUXTRACE_INFO and
reads a version 2 area as a PMU type of 2; newer perf writes version 2,
with a MIDR per CPU. pd-spe-v2 writes such a file (file mode) and the test
compares what perf-data-dump reports (spe_info, spe_cpu lines) with what
Debian 13's perf from trixie-backports prints for it in `perf report -D`,
run in the chroot packaging/newer-perf.sh keeps. Exits 77 (skip) without
that chroot or without root.

usage: perf-data-spe-v2-vs-perf.py PATH/TO/pd-spe-v2 PATH/TO/perf-data-dump
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
ROOT = os.environ.get('ARMPROFD_PERF_ROOT', '/var/cache/armprofd-test/perf-trixie')
FIELDS = {'CPU #': 'cpu', 'Num of params': 'nr_params', 'MIDR': 'midr', 'PMU Type': 'pmu',
          'Min Interval': 'min_interval'}


def perf_info(path_in_root):
    """The header and per-CPU blocks perf prints for the SPE AUXTRACE_INFO."""
    out = subprocess.run(['chroot', ROOT, 'perf', 'report', '-D', '-i', path_in_root],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors='replace')
    if out.returncode != 0:
        raise SystemExit(f'FAIL: perf report -D exited {out.returncode}: {out.stderr.strip()[-300:]}')
    lines = out.stdout.splitlines()
    start = next((i for i, l in enumerate(lines) if 'PERF_RECORD_AUXTRACE_INFO type: 4' in l), None)
    if start is None:
        raise SystemExit('FAIL: perf printed no Arm SPE AUXTRACE_INFO')
    hdr, cpus = {}, []
    for line in lines[start + 1:]:
        m = re.match(r'^\s+([A-Za-z0-9 #]+?)\s*:\s*(\S+)\s*$', line)
        if not m:
            break
        key, val = m.group(1), int(m.group(2), 0)
        if key == 'Magic':
            cpus.append({})
        elif cpus and key in FIELDS:
            cpus[-1][FIELDS[key]] = val
        elif not cpus:
            hdr[key] = val
    return hdr, cpus


def our_info(dump, path):
    out = subprocess.run([dump, path], stdout=subprocess.PIPE, text=True, check=True).stdout
    hdr, cpus = {}, []
    for line in out.splitlines():
        f = line.split()
        if f[0] == 'spe_info':
            hdr = {'version': int(f[2]), 'pmu': int(f[4])}
        elif f[0] == 'spe_cpu':
            cpus.append({'cpu': int(f[1]), 'midr': int(f[3], 16), 'pmu': int(f[5]),
                         'min_interval': int(f[7]), 'nr_params': int(f[9])})
    return hdr, cpus


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    gen, dump = sys.argv[1:]
    if os.geteuid() != 0:
        print('SKIP: chroot into the newer perf needs root')
        return SKIP
    if not os.access(os.path.join(ROOT, 'usr/bin/perf'), os.X_OK):
        print(f'SKIP: no newer perf in {ROOT} (packaging/newer-perf.sh builds it; dev.sh deps test runs it)')
        return SKIP

    tmp = tempfile.mkdtemp(prefix='armprofd-spe-v2-', dir=os.path.join(ROOT, 'tmp'))
    try:
        path = os.path.join(tmp, 'v2.data')
        subprocess.run([gen, path], check=True)
        ver = subprocess.run(['chroot', ROOT, 'perf', '--version'], stdout=subprocess.PIPE, text=True).stdout
        theirs_hdr, theirs = perf_info(path[len(ROOT):])
        ours_hdr, ours = our_info(dump, path)
        print(f'{ver.strip()}: header {theirs_hdr}, {len(theirs)} CPUs')
        print(f'ours: {ours_hdr}, {len(ours)} CPUs')
        failed = False
        if theirs_hdr.get('Header version') != 2 or ours_hdr.get('version') != 2:
            print('FAIL: both must read version 2')
            failed = True
        if theirs_hdr.get('PMU type v2') != ours_hdr.get('pmu'):
            print(f'FAIL: PMU type: perf {theirs_hdr.get("PMU type v2")}, ours {ours_hdr.get("pmu")}')
            failed = True
        if len(theirs) != 4 or theirs != ours:
            for t, o in zip(theirs, ours):
                print(f'  perf {t}\n  ours {o}')
            print(f'FAIL: per-CPU metadata differs ({len(theirs)} CPUs for perf, {len(ours)} ours)')
            failed = True
        if len({c['midr'] for c in theirs}) < 3:
            print('FAIL: the fixture should hold three kinds of CPU')
            failed = True
        print('FAIL' if failed else 'OK')
        return 1 if failed else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
