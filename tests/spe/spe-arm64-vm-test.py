#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The SPE record decoder on x86 and on arm64: decodes the same seeded stream
with tests/spe/spe-arm64-driver.c built natively (cc) and cross-compiled
statically for arm64 and run on a real Debian arm64 kernel under qemu
($ARMPROFD_SHARED_DIR/tools/arm64-vm, build.sh + run-arm64.sh).

spe-rec.c has architecture-specific inline assembly (select_nz(): cmovz on
x86-64, csel on aarch64); the driver compares its fast path with the checked
slow path and with a model on each CPU, and prints one line
"spe-arm64: records N ... stream 0x... hash 0x..." that must be identical on
both architectures.

The real captures shared/testdata/spe/spe-b1-ts{0,1}.data are read here and
passed to both runs as hex arguments.

Exit 0 when both runs pass and print the same line, 1 otherwise, 77 (skip)
when the shared directory, a real capture, a compiler or qemu is missing and
cannot be set up (tests/arm64vm.py).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import arm64vm  # noqa: E402

HOST_CC = 'cc'
SUMMARY = re.compile(r'^spe-arm64: .*$', re.M)
CAPTURES = (('-0', 'spe-b1-ts0.data'), ('-1', 'spe-b1-ts1.data'))


def capture_args(shared):
    """The real 64-byte captures in ../shared, as the driver's hex arguments
    (the VM holds only the driver, and the captures stay out of the project).
    Without them half of what the test checks is not checked: skip, saying
    which file is missing."""
    out = []
    for opt, name in CAPTURES:
        path = os.path.join(shared, 'testdata', 'spe', name)
        if not os.path.isfile(path):
            arm64vm.skip(f'real SPE capture {path} missing (the driver checks the decode of both captures)')
        out += [opt, open(path, 'rb').read().hex()]
    return out


def summary_line(out, what):
    lines = SUMMARY.findall(out)
    if len(lines) != 1:
        print(f'FAIL: {what} printed {len(lines)} "spe-arm64:" lines, want 1')
        return None
    return lines[0].strip()


def main():
    ap = arm64vm.arg_parser()
    ap.add_argument('--driver-args', default='',
                    help='passed to both runs, e.g. --driver-args="-n 50000 -s 7"')
    args = ap.parse_args()

    if not shutil.which(HOST_CC):
        arm64vm.skip(f'no host compiler ({HOST_CC})')
    vm = arm64vm.VM()
    driver_args = shlex.split(args.driver_args) + capture_args(vm.shared)
    src = args.source_dir
    includes = arm64vm.includes(src, os.path.join('collectors', 'spe'), os.path.join('tests', 'spegen'))
    files = [args.driver] + args.sources
    with tempfile.TemporaryDirectory(prefix='spe-arm64-', dir=vm.work_parent()) as work:
        host_bin = os.path.join(work, 'spe-arm64-host')
        a64_bin = os.path.join(work, 'spe-arm64-aarch64')
        built, t_cc_host = arm64vm.compile_c(HOST_CC, host_bin, files, includes)
        if not built:
            print('FAIL: building the driver for the host')
            return 1
        built, t_cc_a64 = arm64vm.compile_c(arm64vm.CROSS_CC, a64_bin, files, includes, static=True)
        if not built:
            print('FAIL: cross-compiling the driver for arm64')
            return 1

        t1 = time.monotonic()
        h = subprocess.run([host_bin] + driver_args, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=600)
        t_host = time.monotonic() - t1
        r, t_vm = vm.run(a64_bin, driver_args, smp=args.smp)

    print('## host (x86) run:')
    print(h.stdout, end='')
    print('## arm64 VM run:')
    print(r.stdout, end='' if r.stdout.endswith('\n') or not r.stdout else '\n')
    print(r.stderr, end='')

    host_line = summary_line(h.stdout, 'host run')
    a64_line = summary_line(r.stdout, 'arm64 run')
    print(f'# setup {vm.setup_seconds:.1f}s, compile host {t_cc_host:.1f}s + arm64 {t_cc_a64:.1f}s, '
          f'host run {t_host:.1f}s (exit {h.returncode}), '
          f'VM boot+run+poweroff {t_vm:.1f}s (exit {r.returncode})')
    print(f'host : {host_line}')
    print(f'arm64: {a64_line}')

    ok = True
    if h.returncode != 0:
        print(f'FAIL: host driver exit {h.returncode}')
        ok = False
    if r.returncode != 0:
        print(f'FAIL: arm64 VM driver exit {r.returncode}{arm64vm.exit_reason(r.returncode)}')
        ok = False
    if host_line is None or a64_line is None:
        ok = False
    elif host_line != a64_line:
        hs = re.search(r'stream (0x[0-9a-f]+)', host_line)
        as_ = re.search(r'stream (0x[0-9a-f]+)', a64_line)
        if hs and as_ and hs.group(1) != as_.group(1):
            print('FAIL: the generated stream differs between x86 and arm64 (driver not portable)')
        else:
            print('FAIL: same stream, different decode on x86 and arm64')
        ok = False
    if ok:
        print('PASS: arm64 decodes exactly like x86')
        return 0
    return 1


if __name__ == '__main__':
    sys.exit(main())
