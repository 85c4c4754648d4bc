# SPDX-License-Identifier: GPL-2.0-or-later
"""What the arm64-vm tests share: setting up $ARMPROFD_SHARED_DIR/tools/arm64-vm
(build.sh), compiling a driver statically for arm64 (or natively) with the
project's warning flags, and running it under run-arm64.sh on a real Debian
arm64 kernel in qemu.

The VM cache (kernel .deb, initramfs) goes to $ARM64_VM_CACHE, by default
${XDG_CACHE_HOME:-~/.cache}/armprofd-arm64-vm, so it is reused across runs and
tests. A missing shared directory, cross compiler or qemu is a skip (77)."""

import argparse
import os
import shutil
import subprocess
import sys
import time

SKIP = 77
CROSS_CC = 'aarch64-linux-gnu-gcc'
CFLAGS = ['-O2', '-std=gnu17', '-D_GNU_SOURCE', '-Wall', '-Wextra', '-Werror',
          '-Wshadow', '-Wstrict-prototypes', '-Wmissing-prototypes', '-Wformat=2', '-Wundef',
          '-Wvla', '-Wimplicit-fallthrough', '-Wno-unused-parameter',
          '-Wno-missing-field-initializers', '-fno-strict-aliasing']


def arg_parser():
    """The arguments meson passes every arm64-vm test: sources, the driver, vCPUs."""
    ap = argparse.ArgumentParser()
    ap.add_argument('--source-dir', required=True)
    ap.add_argument('--sources', nargs='+', required=True)
    ap.add_argument('--driver', required=True)
    ap.add_argument('--smp', default='2')
    return ap


def includes(source_dir, *subdirs):
    """-I directories of a driver: common/ (macro.h), tests/ (vm-check.h) and subdirs."""
    return [os.path.join(source_dir, d) for d in ('common', 'tests') + subdirs]


def skip(msg):
    print(f'SKIP: {msg}')
    sys.exit(SKIP)


class VM:
    """The arm64 VM tool, set up (or the test skipped) on construction."""

    def __init__(self):
        self.shared = os.environ.get('ARMPROFD_SHARED_DIR')
        if not self.shared or not os.path.isdir(self.shared):
            skip(f'no shared reference directory (ARMPROFD_SHARED_DIR={self.shared!r})')
        vm = os.path.join(self.shared, 'tools', 'arm64-vm')
        build_sh = os.path.join(vm, 'build.sh')
        self.run_sh = os.path.join(vm, 'run-arm64.sh')
        if not (os.path.isfile(build_sh) and os.path.isfile(self.run_sh)):
            skip(f'{vm} has no build.sh/run-arm64.sh')

        self.env = dict(os.environ)
        cache_home = self.env.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache')
        self.env.setdefault('ARM64_VM_CACHE', os.path.join(cache_home, 'armprofd-arm64-vm'))
        os.makedirs(self.env['ARM64_VM_CACHE'], exist_ok=True)

        t0 = time.monotonic()
        # build.sh installs qemu-system-arm and the cross compiler when missing
        # (needs root and apt) and downloads the arm64 kernel once into the cache.
        b = subprocess.run(['bash', build_sh], env=self.env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if b.returncode != 0:
            print(b.stdout[-4000:])
            skip(f'build.sh failed (exit {b.returncode}): cannot set up the arm64 VM here')
        for tool in (CROSS_CC, 'qemu-system-aarch64'):
            if not shutil.which(tool):
                skip(f'{tool} not found after build.sh')
        self.setup_seconds = time.monotonic() - t0

    def work_parent(self):
        """Where temporary build directories go: the build tree when there is one."""
        d = self.env.get('ARMPROFD_BUILD_DIR')
        return d if d and os.path.isdir(d) else None

    def run(self, binary, args=(), smp='2', icount=False):
        """Boot, run binary with args as the only job, power off: (CompletedProcess, seconds)."""
        cmd = ['bash', self.run_sh] + (['-i'] if icount else []) + ['-s', smp, '-t', '600', binary] + list(args)
        t0 = time.monotonic()
        r = subprocess.run(cmd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return r, time.monotonic() - t0


def compile_c(cc, out, sources, includes, static=False):
    """Compile sources into out with the project's warnings: (ok, seconds); prints why not."""
    cmd = [cc] + (['-static'] if static else []) + CFLAGS
    for inc in includes:
        cmd += ['-I', inc]
    cmd += ['-o', out] + list(sources)
    t0 = time.monotonic()
    c = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if c.returncode != 0:
        print(' '.join(cmd))
        print(c.stdout)
    return c.returncode == 0, time.monotonic() - t0


def exit_reason(rc):
    """run-arm64.sh's exit status in words."""
    return {124: ' (timeout)', 125: ' (no exit marker)'}.get(rc, '')
