#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Cross-compile the PMU library with tests/pmu/arm64-vm-driver.c for arm64
(static) and run it on a real Debian arm64 kernel under qemu, using
$ARMPROFD_SHARED_DIR/tools/arm64-vm (build.sh, run-arm64.sh -i: precise
instruction counting).

Exit 0 when the driver passes, 1 when it fails, 77 (skip) when the shared
directory, the cross compiler or qemu is missing and cannot be set up
(tests/arm64vm.py).
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import arm64vm  # noqa: E402


def main():
    args = arm64vm.arg_parser().parse_args()

    vm = arm64vm.VM()
    src = args.source_dir
    with tempfile.TemporaryDirectory(prefix='pmu-arm64-', dir=vm.work_parent()) as work:
        binary = os.path.join(work, 'pmu-arm64-test')
        built, _ = arm64vm.compile_c(arm64vm.CROSS_CC, binary,
                                     [args.driver] + args.sources + [os.path.join(src, 'common', f) for f in ('parse-util.c', 'strbuf.c')],
                                     arm64vm.includes(src, os.path.join('collectors', 'pmu')),
                                     static=True)
        if not built:
            print('FAIL: cross-compiling the library for arm64')
            return 1
        r, t_run = vm.run(binary, smp=args.smp, icount=True)
        # Again under -cpu neoverse-n1, whose PMU lists the stall events: the
        # top-down group is opened and read on a real kernel.
        vm.env['ARM64_CPU'] = 'neoverse-n1'
        r2, t_run2 = vm.run(binary, args=['topdown-n1'], smp=args.smp, icount=True)
    print(r.stdout, end='')
    print(r.stderr, end='')
    print(f'# setup {vm.setup_seconds:.1f}s, VM boot+run+poweroff {t_run:.1f}s, exit {r.returncode}')
    print('# -cpu neoverse-n1, topdown-n1:')
    print(r2.stdout, end='')
    print(r2.stderr, end='')
    print(f'# VM boot+run+poweroff {t_run2:.1f}s, exit {r2.returncode}')
    if r2.returncode != 0:
        print(f'FAIL: arm64 VM driver under -cpu neoverse-n1 exit {r2.returncode}{arm64vm.exit_reason(r2.returncode)}')
        return 1
    if r.returncode == 0:
        print('PASS: arm64 VM driver')
        return 0
    print(f'FAIL: arm64 VM driver exit {r.returncode}{arm64vm.exit_reason(r.returncode)}')
    return 1


if __name__ == '__main__':
    sys.exit(main())
