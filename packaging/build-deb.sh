#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# packaging/build-deb.sh [OUTDIR]: builds armprofd's Debian package from a
# clean tree of this checkout and moves it (with its .buildinfo and
# .changes) to OUTDIR, the current directory by default. The tree is what
# git knows of the checkout, uncommitted changes and new files included,
# without build directories or anything ignored; packaging/debian becomes
# its debian/. Runs `dpkg-buildpackage -us -uc -b`, so DEB_BUILD_OPTIONS
# applies (nocheck skips the unit suite). Prints the .deb's path last.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
outdir=$(realpath -m "${1:-.}")
die() { echo "build-deb.sh: $*" >&2; exit 1; }

command -v dpkg-buildpackage >/dev/null || die "dpkg-buildpackage is missing (apt install dpkg-dev debhelper)"
mkdir -p "$outdir"
work=$(mktemp -d "${TMPDIR:-/tmp}/armprofd-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
src=$work/armprofd
mkdir "$src"

git -C "$top" ls-files -z --cached --others --exclude-standard |
        (cd "$top" && tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -C "$src" -xf -
git -C "$top" ls-files -z --deleted | (cd "$src" && xargs -0r rm -f --)
cp -a "$src/packaging/debian" "$src/debian"

cd "$src"
# Says which build dependencies are missing, by name, before building.
dpkg-checkbuilddeps || die "install the missing build dependencies (packaging/dev.sh deps test installs them)"
log=$work/build.log
if ! dpkg-buildpackage -us -uc -b >"$log" 2>&1; then
        tail -40 "$log" >&2
        die "dpkg-buildpackage failed"
fi
cd "$work"
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
mv armprofd_"$version"_* "$outdir"/
deb=$outdir/armprofd_${version}_$arch.deb
[ -f "$deb" ] || die "dpkg-buildpackage made no $deb"
echo "$deb"
