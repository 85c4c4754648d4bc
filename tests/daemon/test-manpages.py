#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The man pages against the daemon: every option `armprofd --help` prints
is documented under OPTIONS in armprofd(8), and the page documents no option
--help does not know; both pages render with groff and man(1) without a
warning. (armprofd.conf(5) against the configuration table is test-config's
test_manpage_keys.)"""

import re
import shutil
import subprocess
import sys

SKIP = 77


def help_options(daemon):
    out = subprocess.run([daemon, '--help'], capture_output=True, text=True, check=True).stdout
    opts = set()
    for line in out.splitlines():
        m = re.match(r'^\s+(?:(-\w), )?(--[a-z][a-z-]*)', line)
        if m:
            opts.update(o for o in m.groups() if o)
    return opts


def page_options(page):
    """Options in the tags of the .TP entries of the OPTIONS section."""
    lines = open(page).read().splitlines()
    opts, in_options = set(), False
    for i, line in enumerate(lines):
        if line.startswith('.SH '):
            in_options = line == '.SH OPTIONS'
        elif in_options and line == '.TP' and i + 1 < len(lines):
            tag = lines[i + 1].replace('\\-', '-')
            opts.update(re.findall(r'(?<![\w-])(--[a-z][a-z-]*|-[a-zA-Z])(?![\w-])', tag))
    return opts


def main():
    daemon, page8, page5 = sys.argv[1:4]
    failed = False
    have, documented = help_options(daemon), page_options(page8)
    print(f'--help: {" ".join(sorted(have))}')
    for o in sorted(have - documented):
        print(f'FAIL: {o} is in --help but not under OPTIONS in armprofd(8)')
        failed = True
    for o in sorted(documented - have):
        print(f'FAIL: armprofd(8) documents {o}, which --help does not know')
        failed = True
    if len(have) < 10:
        print(f'FAIL: only {len(have)} options read from --help')
        failed = True
    if not shutil.which('groff') or not shutil.which('man'):
        print('SKIP: groff or man missing (packages groff-base, man-db)')
        return SKIP
    for page in (page8, page5):
        for cmd in (['groff', '-man', '-Tutf8', '-ww', '-z', page], ['man', '--warnings', '-l', page]):
            r = subprocess.run(cmd, capture_output=True, text=True, env={'MANWIDTH': '80', 'PATH': '/usr/bin:/bin'})
            if r.returncode != 0 or r.stderr.strip():
                print(f'FAIL: {" ".join(cmd)}: exit {r.returncode}: {r.stderr.strip()[:800]}')
                failed = True
    print('FAILED' if failed else f'{len(have)} options documented, both pages render without warnings')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
