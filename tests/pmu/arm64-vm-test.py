#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Cross-compile the PMU library with tests/pmu/arm64-vm-driver.c for arm64
(static) and run it on a real Debian arm64 kernel under qemu, using
$ARMPROFD_SHARED_DIR/tools/arm64-vm (build.sh, run-arm64.sh -i).

Exit 0 when the driver passes, 1 when it fails, 77 (skip) when the shared
directory, the cross compiler or qemu is missing and cannot be set up.
The VM cache (kernel .deb, initramfs) goes to $ARM64_VM_CACHE, by default
${XDG_CACHE_HOME:-~/.cache}/armprofd-arm64-vm, so it is reused across runs.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77
CROSS_CC = 'aarch64-linux-gnu-gcc'
CFLAGS = ['-static', '-O2', '-std=gnu17', '-D_GNU_SOURCE', '-Wall', '-Wextra', '-Werror',
          '-Wshadow', '-Wstrict-prototypes', '-Wmissing-prototypes', '-Wformat=2', '-Wundef',
          '-Wvla', '-Wimplicit-fallthrough', '-Wno-unused-parameter',
          '-Wno-missing-field-initializers', '-fno-strict-aliasing']


def skip(msg):
    print(f'SKIP: {msg}')
    sys.exit(SKIP)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--source-dir', required=True)
    ap.add_argument('--sources', nargs='+', required=True)
    ap.add_argument('--driver', required=True)
    ap.add_argument('--smp', default='2')
    args = ap.parse_args()

    shared = os.environ.get('ARMPROFD_SHARED_DIR')
    if not shared or not os.path.isdir(shared):
        skip(f'no shared reference directory (ARMPROFD_SHARED_DIR={shared!r})')
    vm = os.path.join(shared, 'tools', 'arm64-vm')
    build_sh = os.path.join(vm, 'build.sh')
    run_sh = os.path.join(vm, 'run-arm64.sh')
    if not (os.path.isfile(build_sh) and os.path.isfile(run_sh)):
        skip(f'{vm} has no build.sh/run-arm64.sh')

    env = dict(os.environ)
    cache_home = env.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache')
    env.setdefault('ARM64_VM_CACHE', os.path.join(cache_home, 'armprofd-arm64-vm'))
    os.makedirs(env['ARM64_VM_CACHE'], exist_ok=True)

    t0 = time.monotonic()
    # build.sh installs qemu-system-arm and the cross compiler when missing
    # (needs root and apt) and downloads the arm64 kernel once into the cache.
    b = subprocess.run(['bash', build_sh], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if b.returncode != 0:
        print(b.stdout[-4000:])
        skip(f'build.sh failed (exit {b.returncode}): cannot set up the arm64 VM here')
    for tool in (CROSS_CC, 'qemu-system-aarch64'):
        if not shutil.which(tool):
            skip(f'{tool} not found after build.sh')
    t_setup = time.monotonic() - t0

    src = args.source_dir
    work_parent = env.get('ARMPROFD_BUILD_DIR')
    with tempfile.TemporaryDirectory(prefix='pmu-arm64-', dir=work_parent) as work:
        binary = os.path.join(work, 'pmu-arm64-test')
        cmd = [CROSS_CC] + CFLAGS + [
            '-I', os.path.join(src, 'daemon'),
            '-I', os.path.join(src, 'collectors', 'pmu'),
            '-o', binary, args.driver] + args.sources + [
            os.path.join(src, 'daemon', 'parse-util.c')]
        c = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if c.returncode != 0:
            print(' '.join(cmd))
            print(c.stdout)
            print('FAIL: cross-compiling the library for arm64')
            return 1

        t1 = time.monotonic()
        r = subprocess.run(['bash', run_sh, '-i', '-s', args.smp, '-t', '600', binary],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        t_run = time.monotonic() - t1
    print(r.stdout, end='')
    print(f'# setup {t_setup:.1f}s, VM boot+run+poweroff {t_run:.1f}s, exit {r.returncode}')
    if r.returncode == 0:
        print('PASS: arm64 VM driver')
        return 0
    print(f'FAIL: arm64 VM driver exit {r.returncode}'
          + (' (timeout)' if r.returncode == 124 else '')
          + (' (no exit marker)' if r.returncode == 125 else ''))
    return 1


if __name__ == '__main__':
    sys.exit(main())
