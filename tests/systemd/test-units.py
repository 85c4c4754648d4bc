#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The units as systemd reads them: `systemd-analyze verify` on the built
armprofd.service and armprofd.socket says nothing, and `systemd-analyze
security --offline=true` gives the service an exposure of at most 2.9
("OK"), printed. The service's ExecStart points at the build's daemon, so
that verify finds the binary it names. The same unit, installed from the
package and started, is scored again in the VM test (test-vm.py)."""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
MAX_EXPOSURE = 2.9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--service', required=True)
    ap.add_argument('--socket', required=True)
    ap.add_argument('--daemon', required=True)
    args = ap.parse_args()
    if not shutil.which('systemd-analyze'):
        print('SKIP: no systemd-analyze (package systemd)')
        return SKIP
    failed = False
    with tempfile.TemporaryDirectory() as d:
        text = open(args.service).read()
        text, n = re.subn(r'^ExecStart=\S+', f'ExecStart={os.path.abspath(args.daemon)}', text, flags=re.M)
        assert n == 1, 'the service has one ExecStart='
        with open(os.path.join(d, 'armprofd.service'), 'w') as f:
            f.write(text)
        shutil.copy(args.socket, os.path.join(d, 'armprofd.socket'))
        # --man=no: the man pages are not installed where this runs.
        r = subprocess.run(['systemd-analyze', 'verify', '--man=no', 'armprofd.service', 'armprofd.socket'],
                           cwd=d, capture_output=True, text=True)
        out = (r.stdout + r.stderr).strip()
        print(f'systemd-analyze verify: exit {r.returncode}{": " + out if out else ", nothing to say"}')
        if r.returncode != 0 or out:
            failed = True
        r = subprocess.run(['systemd-analyze', 'security', '--offline=true', '--no-pager', 'armprofd.service'],
                           cwd=d, capture_output=True, text=True)
        m = re.search(r'Overall exposure level for armprofd.service:\s*([0-9.]+)\s*(\S+)', r.stdout)
        if not m:
            print(f'systemd-analyze security: no score (exit {r.returncode}): {r.stdout[-500:]}{r.stderr[-500:]}')
            return 1
        score = float(m.group(1))
        print(f'systemd-analyze security --offline=true: exposure {score} {m.group(2)} (at most {MAX_EXPOSURE})')
        if score > MAX_EXPOSURE:
            failed = True
            print('\n'.join(line for line in r.stdout.splitlines() if line.startswith('✗')))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
