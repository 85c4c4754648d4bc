#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""README.md's first screen works as written on a fresh Debian 12: every
program its commands run (the sh block, then "from another shell") is in
the checkout, or is shipped by a Debian package (as dpkg says of the
installed program) that `packaging/dev.sh run` installs before it builds
(`packaging/dev.sh packages` lists them)."""

import os
import re
import shlex
import shutil
import subprocess
import sys

SRC = sys.argv[1]


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(77)


def first_screen_commands(readme):
    screen = readme.split("\n## ", 1)[0]
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", screen, re.S):
        commands += [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    commands += re.findall(r"from another shell: `([^`]+)`", screen)
    return commands


def programs(command):
    """The program each part of a pipeline or list runs."""
    out = []
    for part in re.split(r"\|\|?|&&|;", command):
        words = [w for w in shlex.split(part) if not re.match(r"^\w+=", w)]
        if words:
            out.append(words[0])
    return out


def package_of(program):
    """The Debian package that ships the installed program, by dpkg's database."""
    path = shutil.which(program)
    if not path:
        return None
    for p in dict.fromkeys((path, os.path.realpath(path), re.sub(r"^/usr", "", os.path.realpath(path)))):
        r = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout.split(":", 1)[0]
    return None


def main():
    if not shutil.which("dpkg"):
        skip("no dpkg: not a Debian system")
    commands = first_screen_commands(open(os.path.join(SRC, "README.md")).read())
    listed = subprocess.run([os.path.join(SRC, "packaging", "dev.sh"), "packages"], capture_output=True,
                            text=True, check=True).stdout.split()
    failures, checked = [], 0
    print(f"first screen: {commands}")
    for cmd in commands:
        for prog in programs(cmd):
            if "/" in prog:
                ok = os.access(os.path.join(SRC, prog), os.X_OK)
                print(f"{'ok  ' if ok else 'FAIL'}  {prog}: in the checkout, executable")
            else:
                pkg = package_of(prog)
                if pkg is None:
                    skip(f"{prog} is not installed here: dpkg cannot say which package ships it")
                ok = pkg in listed
                print(f"{'ok  ' if ok else 'FAIL'}  {prog}: Debian package {pkg}, "
                      f"{'' if ok else 'not '}installed by packaging/dev.sh run")
            checked += 1
            if not ok:
                failures.append(prog)
    if checked < 3:
        failures.append(f"only {checked} programs found on the first screen: the reader lost some")
    print(f"{checked} programs checked; failed: {failures}" if failures else f"{checked} programs checked")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
