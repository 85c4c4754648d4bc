#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Build a simulated-SPE scenario directory and the fake sysfs tree it needs.

  simpmu-setup.py --spegen-dir D [--prefix spegen] --dir SCEN --sysfs ROOT
                  [--cpus 0-3] [--possible LIST] [--online LIST] [--type 42]
                  [--fixture DIR] [KEY=VALUE ...]

D holds armprofd-spegen output made with --ts (PREFIX.cpuN.bin,
PREFIX.truth.csv). SCEN gets cpuN.bin, cpuN.idx ("offset size timestamp pid
tid", one line per record) and the scenario file (type, cpus, then every
KEY=VALUE given). ROOT gets bus/event_source/devices/arm_spe_0 copied from
the fixture with cpumask and type rewritten (and arm_spe_1 the same way when the
keys give a second PMU, type2= and cpus2=), and devices/system/cpu/online and
possible. The contract is in README.md beside this file; a test imports
setup() or runs this script.
"""

import argparse
import csv
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_FIXTURE = os.path.join(HERE, '..', 'pmu', 'fixtures', 'spe-n1')


def cpulist(s):
    out = []
    for part in s.split(','):
        if not part:
            continue
        a, _, b = part.partition('-')
        out.extend(range(int(a), int(b or a) + 1))
    return out


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


def build_sysfs(root, cpus, type_, possible, online, fixture=DEFAULT_FIXTURE, second=None):
    """The arm_spe_0 PMU of the fixture covering cpus, and the CPU lists; second: (cpus, type)
    of an arm_spe_1 beside it, the fixture's too (each probed SPE device is a PMU of its own)."""
    src = os.path.join(fixture, 'bus')
    dst = os.path.join(root, 'bus')
    if os.path.exists(dst):
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    pmu = os.path.join(dst, 'event_source', 'devices', 'arm_spe_0')
    write(os.path.join(pmu, 'cpumask'), cpus + '\n')
    write(os.path.join(pmu, 'type'), '%d\n' % type_)
    if second:
        pmu1 = os.path.join(dst, 'event_source', 'devices', 'arm_spe_1')
        shutil.copytree(pmu, pmu1)
        write(os.path.join(pmu1, 'cpumask'), second[0] + '\n')
        write(os.path.join(pmu1, 'type'), '%d\n' % second[1])
    set_online(root, online)
    write(os.path.join(root, 'devices', 'system', 'cpu', 'possible'), possible + '\n')


def set_online(root, online):
    """Rewrite <root>/devices/system/cpu/online (the shim re-reads it)."""
    path = os.path.join(root, 'devices', 'system', 'cpu', 'online')
    write(path + '.tmp', online + '\n')
    os.replace(path + '.tmp', path)


def write_streams(spegen_dir, prefix, scen_dir, cpus):
    """cpuN.bin and cpuN.idx from the generator's output; returns {cpu: [rows]}."""
    rows = {c: [] for c in cpus}
    with open(os.path.join(spegen_dir, prefix + '.truth.csv')) as f:
        for r in csv.DictReader(f):
            if r['kind'] != 'record':
                continue
            c = int(r['cpu'])
            if c not in rows:
                continue
            if not r['timestamp']:
                raise SystemExit('simpmu-setup: records need a timestamp (spegen --ts)')
            rows[c].append(r)
    os.makedirs(scen_dir, exist_ok=True)
    for c in cpus:
        shutil.copyfile(os.path.join(spegen_dir, '%s.cpu%d.bin' % (prefix, c)),
                        os.path.join(scen_dir, 'cpu%d.bin' % c))
        with open(os.path.join(scen_dir, 'cpu%d.idx' % c), 'w') as f:
            for r in rows[c]:
                f.write('%s %s %s %s %s\n' % (r['offset'], r['size'], r['timestamp'], r['pid'], r['tid']))
    return rows


def setup(spegen_dir, scen_dir, sysfs_root, cpus='0-3', type_=42, possible=None, online=None,
          prefix='spegen', fixture=DEFAULT_FIXTURE, keys=()):
    kv = dict(k.split('=', 1) for k in keys if '=' in k)
    # A second PMU (type2=, cpus2=): its CPUs' streams too.
    second = (kv['cpus2'], int(kv['type2'])) if 'type2' in kv and 'cpus2' in kv else None
    every = sorted(set(cpulist(cpus)) | set(cpulist(second[0]) if second else []))
    possible = possible or (cpus if not second else ','.join(str(c) for c in every))
    online = online or possible
    for name in os.listdir(scen_dir) if os.path.isdir(scen_dir) else []:
        if name.endswith(('.dropped', '.log')):
            os.unlink(os.path.join(scen_dir, name))
    rows = write_streams(spegen_dir, prefix, scen_dir, every)
    text = '# armprofd-simpmu scenario\ntype=%d\ncpus=%s\n' % (type_, cpus)
    text += ''.join(k + '\n' for k in keys)
    write(os.path.join(scen_dir, 'scenario'), text)
    build_sysfs(sysfs_root, cpus, type_, possible, online, fixture, second)
    return rows


def drops(scen_dir, cpu):
    """[(record index, reason)] of cpuN.dropped, a line each (records never committed; a
    looping core may drop an index again in a later round)."""
    path = os.path.join(scen_dir, 'cpu%d.dropped' % cpu)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [(int(idx), why) for idx, _, why in (line.strip().partition(' ') for line in f)]


def drop_counts(scen_dir, cpu, reasons):
    """{reason: how many lines of cpuN.dropped give it} for the reasons asked, counted on the
    file's bytes: a core of a saturated host drops millions of records, which a line-by-line
    parse would take seconds of the CPU the daemon under test needs."""
    path = os.path.join(scen_dir, 'cpu%d.dropped' % cpu)
    if not os.path.exists(path):
        return {why: 0 for why in reasons}
    with open(path, 'rb') as f:
        data = f.read()
    return {why: data.count(b' ' + why.encode() + b'\n') for why in reasons}


def dropped(scen_dir, cpu):
    """{record index: reason} of cpuN.dropped."""
    return dict(drops(scen_dir, cpu))


def unknown(scen_dir, cpu):
    """Indices of cpuN.unknown (cx=0): records committed whose thread no reader following the data ring
    could know (a switch may have gone unreported or been lost since the last one, and none after names
    them before their PERF_RECORD_AUX). Empty without the file."""
    path = os.path.join(scen_dir, f'cpu{cpu}.unknown')
    if not os.path.exists(path):
        return []
    return list(unknown_why(scen_dir, cpu))


def unknown_why(scen_dir, cpu):
    """{index: 'off' | 'lost' | 'no_clock'} of cpuN.unknown: the doubt the record met last, as a reader
    that places the doubts among the switches meets them (a window the event was off, a data-ring loss,
    or, with no time conversion, a switch in the record's AUX chunk)."""
    path = os.path.join(scen_dir, f'cpu{cpu}.unknown')
    if not os.path.exists(path):
        return {}
    out = {}
    with open(path) as f:
        for line in f:
            w = line.split()
            if w:
                out[int(w[0])] = w[1]
    return out


def done(scen_dir):
    """{cpu: (written, dropped)} of the `cpu=N done written=W dropped=D` lines of sim.log."""
    out = {}
    path = os.path.join(scen_dir, 'sim.log')
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                w = line.split()
                if len(w) == 4 and w[1] == 'done':
                    out[int(w[0][4:])] = (int(w[2][8:]), int(w[3][8:]))
    return out


def committed(scen_dir, rows):
    """The truth rows (setup()'s return) a reader ends with once every core is
    done and flushed: all but the dropped ones (`partial` ones included in
    neither: only half of their bytes arrive, the decoder drops them)."""
    return {c: [r for i, r in enumerate(rs) if i not in dropped(scen_dir, c)] for c, rs in rows.items()}


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument('--spegen-dir', required=True)
    p.add_argument('--prefix', default='spegen')
    p.add_argument('--dir', required=True)
    p.add_argument('--sysfs', required=True)
    p.add_argument('--cpus', default='0-3')
    p.add_argument('--possible')
    p.add_argument('--online')
    p.add_argument('--type', type=int, default=42)
    p.add_argument('--fixture', default=DEFAULT_FIXTURE)
    p.add_argument('keys', nargs='*')
    a = p.parse_args(argv)
    setup(a.spegen_dir, a.dir, a.sysfs, a.cpus, a.type, a.possible, a.online, a.prefix, a.fixture, a.keys)


if __name__ == '__main__':
    main(sys.argv[1:])
