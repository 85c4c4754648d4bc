#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Compare the armprofd perf.data reader with perf's own dump.

Records `perf record -e cpu-clock -a -- sleep 0.2` in file mode and in pipe
mode, reads both with perf-data-dump (the pipe stream also through a real
pipe), and checks that every record perf's `perf report -D` lists is found
at the same byte offset with the same type, and that nr_cpus and cpuid
match `perf report --header-only`, that the build-id table is the one
`perf buildid-list` prints, and that every sample's ip, pid, tid, time and
cpu are the ones `perf script -F ip,pid,tid,time,cpu --ns` prints. Exits 77
(skip) without perf or without the permission to record system-wide.

usage: perf-data-vs-perf.py PATH/TO/perf-data-dump
"""

import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77

# "CPU TIME OFFSET [SIZE]: PERF_RECORD_NAME..." as perf report -D prints it;
# OFFSET is "0" for the attrs perf synthesizes from a file header.
PERF_LINE = re.compile(r'^\S+ \S+ (0x[0-9a-f]+|0) \[0x[0-9a-f]+\]: PERF_RECORD_([A-Z0-9_]+)')
PIPE_HEADER_SIZE = 16


def skip(why):
    print(f'SKIP: {why}')
    sys.exit(SKIP)


def perf_records(perf, path, pipe):
    """(offset, type) of each record perf dumps; header attrs of a file as offset None."""
    out = subprocess.run([perf, 'report', '-D', '-i', path], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, errors='replace', check=True).stdout
    recs = []
    for line in out.splitlines():
        m = PERF_LINE.match(line)
        if not m:
            continue
        off = int(m.group(1), 16) if m.group(1) != '0' else 0
        if pipe:
            # perf counts pipe offsets from after the 16-byte pipe header.
            recs.append((off + PIPE_HEADER_SIZE, m.group(2)))
        elif m.group(1) == '0':
            recs.append((None, m.group(2)))
        else:
            recs.append((off, m.group(2)))
    return recs


def perf_header(perf, path):
    out = subprocess.run([perf, 'report', '--header-only', '-i', path], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, errors='replace').stdout
    hdr = {}
    for line in out.splitlines():
        m = re.match(r'^# (nrcpus online|nrcpus avail|cpuid) : (.*)$', line)
        if m:
            hdr[m.group(1)] = m.group(2).strip()
    return hdr


def perf_build_ids(perf, path):
    """(hex id, file) of each build-id table entry, as perf buildid-list prints them (pipe mode: none)."""
    out = subprocess.run([perf, 'buildid-list', '-i', path], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, errors='replace').stdout
    return {(m.group(1), m.group(2)) for m in re.finditer(r'^([0-9a-f]{16,40}) (.+)$', out, re.M)}


# "  PID/TID  [CPU]  SEC.NSEC:  IP" as perf script -F pid,tid,cpu,time,ip --ns prints it.
# A task that is exiting can have pid or tid -1: the u32 the sample carries, as perf prints it signed.
SCRIPT_LINE = re.compile(r'^\s*(-?\d+)/(-?\d+)\s+\[(\d+)\]\s+(\d+)\.(\d{9}):\s+([0-9a-f]+)\s*$')


def perf_samples(perf, path):
    """Sorted (ip, pid, tid, time ns, cpu) of every sample, as perf script prints them."""
    out = subprocess.run([perf, 'script', '-F', 'pid,tid,cpu,time,ip', '--ns', '-i', path],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors='replace',
                         check=True).stdout
    samples, odd = [], []
    for line in out.splitlines():
        m = SCRIPT_LINE.match(line)
        if not m:
            odd.append(line)
            continue
        pid, tid, cpu, sec, nsec, ip = m.groups()
        samples.append((int(ip, 16), int(pid) & 0xFFFFFFFF, int(tid) & 0xFFFFFFFF, int(sec) * 10**9 + int(nsec),
                        int(cpu)))
    return sorted(samples), odd


def our_dump(dump, path, via_pipe=False):
    if via_pipe:
        with open(path, 'rb') as f:
            data = f.read()
        p = subprocess.run([dump, '--offsets', '--samples', '-'], input=data, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    else:
        p = subprocess.run([dump, '--offsets', '--samples', path], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    out = p.stdout.decode()
    if p.returncode != 0:
        print(out)
        print(p.stderr.decode())
        raise SystemExit(f'FAIL: perf-data-dump {path} exited {p.returncode}')
    recs, info = [], {'build_ids': set(), 'samples': []}
    for line in out.splitlines():
        f = line.split(' ', 2)
        if f[0] == 'sample':
            v = line.split()[1:]
            if '-' in v:
                raise SystemExit(f'FAIL: {path}: a sample without ip/tid/time/cpu: {line}')
            info['samples'].append((int(v[0], 16), int(v[1]), int(v[2]), int(v[3]), int(v[4])))
        elif f[0] == 'record':
            recs.append((int(f[1], 16), f[2]))
        elif f[0] == 'build_id':
            info['build_ids'].add((f[1], f[2]))
        elif f[0] in ('mode', 'attrs', 'nr_cpus_avail', 'nr_cpus_online', 'cpuid', 'records'):
            info[f[0]] = line.split(' ', 1)[1]
    return recs, info


def compare(perf, dump, path, pipe, via_pipe=False):
    label = f'{os.path.basename(path)}{" via a pipe" if via_pipe else ""}'
    theirs = perf_records(perf, path, pipe)
    ours, info = our_dump(dump, path, via_pipe)
    failed = False

    if info.get('mode') != ('pipe' if pipe else 'file'):
        print(f'{label}: mode {info.get("mode")}, expected {"pipe" if pipe else "file"}')
        failed = True

    header_attrs = [t for o, t in theirs if o is None]
    theirs = [(o, t) for o, t in theirs if o is not None]
    if header_attrs and int(info['attrs']) != len(header_attrs):
        print(f'{label}: {info["attrs"]} attrs, perf shows {len(header_attrs)}')
        failed = True

    c_theirs = collections.Counter(t for _, t in theirs)
    c_ours = collections.Counter(t for _, t in ours)
    print(f'{label}: {len(ours)} records (perf: {len(theirs)}), attrs {info.get("attrs")}')
    for t in sorted(set(c_theirs) | set(c_ours)):
        mark = '' if c_theirs[t] == c_ours[t] else '   <-- MISMATCH'
        print(f'  {t:16} ours {c_ours[t]:6}  perf {c_theirs[t]:6}{mark}')
        if mark:
            failed = True
    missing = sorted(set(theirs) - set(ours))
    extra = sorted(set(ours) - set(theirs))
    if missing or extra:
        print(f'{label}: offsets differ; missing {missing[:5]} extra {extra[:5]}')
        failed = True
    for t in ('SAMPLE', 'COMM', 'MMAP2'):
        if c_ours[t] == 0:
            print(f'{label}: no {t} records at all')
            failed = True

    # perf 6.1 writes the table in file mode only (pipe mode: none at all).
    bids = perf_build_ids(perf, path)
    print(f'{label}: build-id table: {len(info["build_ids"])} entries (perf buildid-list: {len(bids)})')
    if info['build_ids'] != bids or (not pipe and not bids):
        print(f'{label}: build ids differ: only ours {sorted(info["build_ids"] - bids)[:3]}, '
              f'only perf {sorted(bids - info["build_ids"])[:3]}')
        failed = True

    theirs_s, odd = perf_samples(perf, path)
    ours_s = sorted(info['samples'])
    print(f'{label}: {len(ours_s)} samples (perf script: {len(theirs_s)})')
    if odd:
        print(f'{label}: perf script printed {len(odd)} lines not understood, e.g. {odd[:2]}')
        failed = True
    if not ours_s or ours_s != theirs_s:
        only_ours = sorted(set(ours_s) - set(theirs_s))
        only_perf = sorted(set(theirs_s) - set(ours_s))
        print(f'{label}: samples differ: only ours {len(only_ours)} {[tuple(map(hex, x)) for x in only_ours[:2]]}'
              f', only perf {len(only_perf)} {[tuple(map(hex, x)) for x in only_perf[:2]]}')
        failed = True

    hdr = perf_header(perf, path)
    for key, ours_key in (('nrcpus online', 'nr_cpus_online'), ('nrcpus avail', 'nr_cpus_avail'),
                          ('cpuid', 'cpuid')):
        if key not in hdr:
            print(f'{label}: perf --header-only printed no "{key}"')
            failed = True
        elif hdr[key] != info.get(ours_key):
            print(f'{label}: {ours_key} {info.get(ours_key)!r}, perf header says {hdr[key]!r}')
            failed = True
    return not failed


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    dump = sys.argv[1]
    perf = shutil.which('perf')
    if not perf:
        skip('perf is not installed')

    tmp = tempfile.mkdtemp(prefix='perf-data-vs-perf-')
    try:
        data = os.path.join(tmp, 'sw.data')
        pipe = os.path.join(tmp, 'sw.pipe')
        r = subprocess.run([perf, 'record', '-q', '-e', 'cpu-clock', '-a', '-o', data, '--', 'sleep', '0.2'],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if r.returncode != 0 or not os.path.exists(data):
            skip(f'perf record -a failed (needs root or perf_event_paranoid <= 0): '
                 f'{r.stderr.decode(errors="replace").strip()[:200]}')
        with open(pipe, 'wb') as f:
            r = subprocess.run([perf, 'record', '-q', '-e', 'cpu-clock', '-a', '-o', '-', '--', 'sleep', '0.2'],
                               stdout=f, stderr=subprocess.PIPE)
        if r.returncode != 0:
            skip(f'perf record -o - failed: {r.stderr.decode(errors="replace").strip()[:200]}')

        ok = compare(perf, dump, data, pipe=False)
        ok = compare(perf, dump, pipe, pipe=True) and ok
        ok = compare(perf, dump, pipe, pipe=True, via_pipe=True) and ok
        if not ok:
            print('FAIL')
            return 1
        print('OK')
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
