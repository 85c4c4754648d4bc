#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Source lines and inlined frames (symbols/srcline.c through symbols_lines())
# against binutils' addr2line -f -i, an independent reading of the same DWARF,
# at every instruction of the fixture's functions (their addresses from
# objdump -d, the mapping from readelf -l: nothing of ours computes them):
#   - the fixture built -O2 -g: every PC's frames (function, file, line,
#     innermost first) are addr2line's, and the stores of the inlined
#     count_hit()/count_miss() name them inside worker_a()/worker_b() at the
#     lines of the source text that hold them;
#   - a copy stripped of everything, its debug file only under a build-id
#     root: the same frames (and names), from the debug file; without the
#     root, neither names nor lines;
#   - the same copy with a .gnu_debuglink (objcopy --add-gnu-debuglink) and
#     its debug file in .debug/ beside it: the same frames; another build's
#     debug file of that name refused (build id), and without build ids the
#     link's CRC-32 decides;
#   - a copy stripped of its DWARF only: names from .symtab, no lines;
#   - a copy whose .debug_info is overwritten: no crash, names still given;
#     compressed DWARF read, and refused (counted) when it claims 1 TiB;
#   - data symbols (perf c2c's Data Symbol): the fixture's segments mapped as
#     the loader maps them (readelf -l: each PT_LOAD's file pages, and .bss
#     past them as anonymous memory after the file's mapping), every sized
#     OBJECT symbol nm -S lists is named at its first, middle and last byte
#     as SYMBOL+0xOFFSET, padding between them by none; TLS (tls_ops) is no
#     address; a stripped copy names them through its debug file;
#   - members from the variables' DWARF types: at offsets a helper compiled
#     here from the fixture's own source prints (offsetof, sizeof), stats'
#     members, a byte inside one, shards[i]'s members through the array and
#     an array member's element, ring's element by its typedef's name; the
#     stripped copy through its debug file; none without DWARF.
#
#   test-srcline.py FIXTURE SRCLINE_DUMP

import os
import re
import shutil
import subprocess
import sys
import tempfile

BASE = 0x555555554000
PAGE = 0x1000
FUNCS = ("worker_a", "worker_b", "node_update", "main")


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def skip(msg):
    print("SKIP: " + msg)
    sys.exit(77)


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def exec_segment(elf):
    """(offset, vaddr, filesz) of the executable PT_LOAD, from readelf -lW."""
    for line in run(["readelf", "-lW", elf]).splitlines():
        f = line.split()
        if f and f[0] == "LOAD" and "E" in f[6:-1]:
            return int(f[1], 16), int(f[2], 16), int(f[4], 16)
    fail("no executable PT_LOAD in " + elf)


def instructions(elf):
    """ELF vaddrs of every instruction of FUNCS, from objdump -d, within the symbol's size (nm -S): the
    padding after a function is no function's (addr2line still names it by the symbol before)."""
    sizes = {}
    for line in run(["nm", "-S", elf]).splitlines():
        f = line.split()
        if len(f) == 4 and f[3] in FUNCS:
            sizes[f[3]] = (int(f[0], 16), int(f[1], 16))
    out, cur = [], None
    for line in run(["objdump", "-d", "--no-show-raw-insn", elf]).splitlines():
        m = re.match(r"^([0-9a-f]+) <([^>]+)>:$", line)
        if m:
            cur = m.group(2)
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s", line)
        if m and cur in sizes and int(m.group(1), 16) < sizes[cur][0] + sizes[cur][1]:
            out.append(int(m.group(1), 16))
    if not out:
        fail("objdump found none of %s" % (FUNCS,))
    return out


def norm_file(path):
    return os.path.normpath(path) if path not in ("??", "?") else None


def addr2line(elf, vaddrs):
    """vaddr -> [(function, file, line)], innermost first, from addr2line -a -f -i."""
    res, cur = {}, None
    lines = run(["addr2line", "-a", "-f", "-i", "-e", elf] + ["0x%x" % v for v in vaddrs]).splitlines()
    i = 0
    while i < len(lines):
        if re.match(r"^0x[0-9a-f]+$", lines[i]):
            cur = int(lines[i], 16)
            res[cur] = []
            i += 1
            continue
        func, loc = lines[i], lines[i + 1]
        i += 2
        loc = re.sub(r" \(discriminator \d+\)$", "", loc)
        path, _, num = loc.rpartition(":")
        res[cur].append((func if func != "??" else None, norm_file(path), int(num) if num.isdigit() else 0))
    return res


def dump(tool, roots, elf, seg, vaddrs):
    """vaddr -> (symbol, [(function, file, line)]) and the stats line, from our srcline-dump."""
    off, vaddr, filesz = seg
    start = BASE + (vaddr & ~(PAGE - 1))
    pgoff = off & ~(PAGE - 1)
    length = (vaddr + filesz - (vaddr & ~(PAGE - 1)) + PAGE - 1) & ~(PAGE - 1)
    out = run([tool, roots, elf, hex(start), hex(length), hex(pgoff)] + ["0x%x" % (BASE + v) for v in vaddrs])
    res, cur, stats = {}, None, ""
    for line in out.splitlines():
        f = line.split(" ")
        if f[0] == "pc":
            cur = int(f[1], 16) - BASE
            res[cur] = (None if f[2] in ("?", "-") else f[2], [])
        elif f[0] == "frame":
            path, _, num = f[2].rpartition(":")
            res[cur][1].append((None if f[1] == "?" else f[1], norm_file(path), int(num)))
        elif f[0] == "stats":
            stats = line
    return res, stats


def load_segments(elf):
    """[(offset, vaddr, filesz, memsz, flags)] of the PT_LOADs, from readelf -lW."""
    out = []
    for line in run(["readelf", "-lW", elf]).splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            out.append((int(f[1], 16), int(f[2], 16), int(f[4], 16), int(f[5], 16), "".join(f[6:-1])))
    return out


def data_maps(elf):
    """map: arguments of srcline-dump for the data segments as the loader maps them: each non-executable
    PT_LOAD's pages of the file, then what its memory image has past them as anonymous memory."""
    args = []
    for off, va, filesz, memsz, flags in load_segments(elf):
        if "E" in flags:
            continue
        start = BASE + (va & ~(PAGE - 1))
        file_end = BASE + ((va + filesz + PAGE - 1) & ~(PAGE - 1))
        mem_end = BASE + ((va + memsz + PAGE - 1) & ~(PAGE - 1))
        args.append("map:%#x:%#x:%#x:%s" % (start, file_end - start, off & ~(PAGE - 1), elf))
        if mem_end > file_end:
            args.append("map:%#x:%#x:0://anon" % (file_end, mem_end - file_end))
    return args


def object_symbols(elf):
    """{name: (value, size)} of the sized data symbols nm -S lists (d, b, r: .data, .bss, .rodata)."""
    # TLS variables (readelf -s type TLS): their value is an offset in a thread's block, not an address.
    tls = {l.split()[7] for l in run(["readelf", "-sW", elf]).splitlines() if len(l.split()) >= 8 and l.split()[3] == "TLS"}
    out = {}
    for line in run(["nm", "-S", elf]).splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "dDbBrR" and int(f[1], 16) > 0 and f[3] not in tls:
            out[f[3]] = (int(f[0], 16), int(f[1], 16))
    if "tls_ops" in out:
        fail("readelf -s does not say tls_ops is TLS")
    return out


def check_data(tool, roots, elf, truth_elf, seg, label):
    """Every sized OBJECT symbol of truth_elf at its first, middle and last byte; the bytes between them none."""
    syms = object_symbols(truth_elf)
    if "stats" not in syms or "ring" not in syms:
        fail("nm -S lists no stats or ring in the fixture")
    want, queries = {}, []
    for name, (v, size) in syms.items():
        for o in sorted({0, size // 2, size - 1}):
            want[v + o] = "%s+%#x" % (name, o)
    taken = sorted((v, v + size) for v, size in syms.values())
    for (a, b), (c, _) in zip(taken, taken[1:]):
        if c > b and not any(v <= b < v + z for v, z in syms.values()):
            want[b] = None  # padding between two variables
    off, vaddr, filesz = seg
    start = BASE + (vaddr & ~(PAGE - 1))
    length = (vaddr + filesz - (vaddr & ~(PAGE - 1)) + PAGE - 1) & ~(PAGE - 1)
    queries = ["d%#x" % (BASE + a) for a in sorted(want)]
    out = run([tool, roots, elf, hex(start), hex(length), hex(off & ~(PAGE - 1))] + data_maps(elf) + queries)
    have = {}
    for line in out.splitlines():
        f = line.split(" ")
        if f[0] == "data":
            have[int(f[1], 16) - BASE] = None if f[2] == "-" else f[2]
    bad = ["%#x: %s, want %s" % (a, have.get(a), w) for a, w in sorted(want.items()) if have.get(a) != w]
    if bad:
        fail("%s: data symbols: %s" % (label, "; ".join(bad[:6])))
    v, size = syms["ring"]
    past_file = [a for a in want if a >= v and BASE + a >= BASE + ((seg_rw(elf)[1] + seg_rw(elf)[2] + PAGE - 1) & ~(PAGE - 1))]
    if not past_file:
        fail("%s: no query of ring past the file's pages: the anonymous .bss is untested" % label)
    print("ok: %s: %d data addresses named as nm -S gives them (%d past the file, in anonymous .bss)"
          % (label, len(want), len(past_file)))


HELPER = r"""
#define main fixture_main
#include "%s"
#undef main
#include <stddef.h>
#include <stdio.h>
int main(void) {
        printf("hits %%zu\nmisses %%zu\nstats %%zu\n", offsetof(struct stats, hits), offsetof(struct stats, misses),
               sizeof(struct stats));
        printf("shard %%zu\ncount %%zu\nlock %%zu\npad %%zu\n", sizeof(struct shard), offsetof(struct shard, count),
               offsetof(struct shard, lock), offsetof(struct shard, pad));
        return 0;
}
"""


def layout(src, tmp):
    """The fixture's struct layout as its own compiler lays it out: offsetof and sizeof printed by a helper."""
    c, exe = os.path.join(tmp, "layout.c"), os.path.join(tmp, "layout")
    with open(c, "w") as f:
        f.write(HELPER % src)
    run(["cc", "-O2", "-pthread", "-o", exe, c])
    return {k: int(v) for k, v in (l.split() for l in run([exe]).splitlines())}


def check_members(tool, roots, elf, truth_elf, seg, src, tmp, label, want_members=True):
    lay = layout(src, tmp)
    syms = object_symbols(truth_elf)
    stats, shards, ring = syms["stats"][0], syms["shards"][0], syms["ring"][0]
    want = {
        stats + lay["hits"]: ("stats+%#x" % lay["hits"], lay["stats"], "struct stats.hits"),
        stats + lay["misses"]: ("stats+%#x" % lay["misses"], lay["stats"], "struct stats.misses"),
        stats + lay["misses"] + 3: ("stats+%#x" % (lay["misses"] + 3), lay["stats"], "struct stats.misses+0x3"),
        shards + 3 * lay["shard"] + lay["lock"]: ("shards+%#x" % (3 * lay["shard"] + lay["lock"]), 4 * lay["shard"],
                                                  "struct shard[3].lock"),
        shards + 2 * lay["shard"] + lay["count"]: ("shards+%#x" % (2 * lay["shard"] + lay["count"]),
                                                   4 * lay["shard"], "struct shard[2].count"),
        shards + lay["shard"] + lay["pad"] + 5: ("shards+%#x" % (lay["shard"] + lay["pad"] + 5), 4 * lay["shard"],
                                                 "struct shard[1].pad[5]"),
        ring + 1234: ("ring+%#x" % 1234, syms["ring"][1], "uint8_t[1234]"),
    }
    off, vaddr, filesz = seg
    start = BASE + (vaddr & ~(PAGE - 1))
    length = (vaddr + filesz - (vaddr & ~(PAGE - 1)) + PAGE - 1) & ~(PAGE - 1)
    out = run([tool, roots, elf, hex(start), hex(length), hex(off & ~(PAGE - 1))] + data_maps(elf)
              + ["d%#x" % (BASE + a) for a in sorted(want)])
    have = {}
    for line in out.splitlines():
        f = line.split(" ", 4)
        if f[0] == "data" and len(f) == 5:
            have[int(f[1], 16) - BASE] = (f[2], int(f[3]), f[4])
    for a, (sym, size, member) in want.items():
        exp = (sym, size, member if want_members else "?")
        if have.get(a) != exp:
            fail("%s: %#x: %s, want %s" % (label, a, have.get(a), exp))
    print("ok: %s: %d members %s" % (label, len(want), "as offsetof() places them" if want_members else
                                     "absent, names kept"))


def seg_rw(elf):
    for s in load_segments(elf):
        if "W" in s[4]:
            return s
    fail("no writable PT_LOAD in " + elf)


def source_line(src, text):
    """The 1-based line of the fixture's source that holds text (the truth of where a store is)."""
    with open(src) as f:
        for n, line in enumerate(f, 1):
            if text in line:
                return n
    fail("no %r in %s" % (text, src))


def check_same(label, ours, theirs, want_names=True):
    inlined = 0
    for v, want in theirs.items():
        sym, frames = ours[v]
        # "??:0": addr2line found no line table row (its function name then comes from .symtab).
        rows = [] if want == [(want[0][0], None, 0)] else want
        if frames != rows:
            fail("%s: 0x%x: ours %s, addr2line %s" % (label, v, frames, want))
        if want_names and sym != want[-1][0]:
            fail("%s: 0x%x: symbol %s, addr2line's outermost function %s" % (label, v, sym, want[-1][0]))
        inlined += len(frames) > 1
    return inlined


def main():
    fixture, tool = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    for t in ("addr2line", "objdump", "readelf", "objcopy", "strip", "nm", "cc"):
        if not shutil.which(t):
            skip("no " + t)
    src = os.path.join(os.environ.get("ARMPROFD_SOURCE_DIR", "."), "tests/symbols/srcline-fixture.c")
    seg = exec_segment(fixture)
    vaddrs = instructions(fixture)
    want = addr2line(fixture, vaddrs)
    if not any(f[0][2] for f in want.values()):
        fail("addr2line gives no line for the fixture: not built with -g?")

    ours, stats = dump(tool, "", fixture, seg, vaddrs)
    inlined = check_same("-O2 -g", ours, want)
    if inlined == 0:
        fail("no PC with inlined frames (addr2line's truth has %d)" % inlined)
    # The inlined stores, at the source lines that hold them, inside their callers.
    for inner, outer, text in (("count_hit", "worker_a", "s->hits++"), ("count_miss", "worker_b", "s->misses++")):
        line = source_line(src, text)
        hits = [v for v, (_, fr) in ours.items()
                if len(fr) >= 2 and fr[0][0] == inner and fr[0][2] == line and fr[-1][0] == outer]
        if not hits:
            fail("no PC of %s() inlined into %s() at %s:%d" % (inner, outer, src, line))
    print("ok: %d PCs as addr2line gives them, %d with inlined frames" % (len(vaddrs), inlined))
    check_data(tool, "", fixture, fixture, seg, "-O2 -g")
    with tempfile.TemporaryDirectory() as tmp:
        check_members(tool, "", fixture, fixture, seg, src, tmp, "-O2 -g")

    with tempfile.TemporaryDirectory() as tmp:
        # Stripped of everything; the debug file only under ROOT/.build-id/xx/yyyy.debug.
        stripped = os.path.join(tmp, "fixture-stripped")
        debug = os.path.join(tmp, "fixture.debug")
        run(["objcopy", "--only-keep-debug", fixture, debug])
        run(["strip", "--strip-all", "-o", stripped, fixture])
        m = re.search(r"Build ID: ([0-9a-f]+)", run(["readelf", "-n", fixture]))
        if not m:
            fail("fixture has no build id")
        bid = m.group(1)
        root = os.path.join(tmp, "debug")
        os.makedirs(os.path.join(root, ".build-id", bid[:2]))
        shutil.copy(debug, os.path.join(root, ".build-id", bid[:2], bid[2:] + ".debug"))
        ours, stats = dump(tool, root, stripped, seg, vaddrs)
        check_same("stripped, debug file by build id", ours, want)
        if "debug_files=1" not in stats or "dwarf_loaded=1" not in stats:
            fail("stripped: want the debug file read once: %s" % stats)
        ours, stats = dump(tool, "", stripped, seg, vaddrs)
        if any(fr for _, fr in ours.values()) or any(s for s, _ in ours.values() if s in FUNCS):
            fail("stripped without its debug file: names or lines from nowhere")
        check_data(tool, root, stripped, fixture, seg, "stripped, debug file by build id")
        check_members(tool, root, stripped, fixture, seg, src, tmp, "stripped, debug file by build id")
        print("ok: stripped binary, debug file by build id: the same frames")

        # .gnu_debuglink only (no build-id root): the debug file in the binary's directory's .debug/, as GDB
        # looks for it; another build's debug file of that name is refused (its build id differs).
        linkdir = os.path.join(tmp, "link")
        os.makedirs(os.path.join(linkdir, ".debug"))
        linked = os.path.join(linkdir, "fixture-linked")
        shutil.copy(debug, os.path.join(linkdir, ".debug", "fixture.debug"))
        run(["objcopy", "--add-gnu-debuglink=" + os.path.join(linkdir, ".debug", "fixture.debug"), stripped, linked])
        if ".gnu_debuglink" not in run(["readelf", "-SW", linked]):
            fail("objcopy --add-gnu-debuglink left no .gnu_debuglink")
        ours, stats = dump(tool, "", linked, seg, vaddrs)
        check_same("stripped, debug file by .gnu_debuglink", ours, want)
        check_data(tool, "", linked, fixture, seg, "stripped, debug file by .gnu_debuglink")
        seed = os.path.join(os.environ.get("ARMPROFD_SOURCE_DIR", "."), "tests/symbols/corpus/fuzz-symbols/dwarf-inline")
        run(["objcopy", "--only-keep-debug", seed, os.path.join(linkdir, ".debug", "fixture.debug")])
        ours, stats = dump(tool, "", linked, seg, vaddrs)
        if any(fr for _, fr in ours.values()) or any(s in FUNCS for s, _ in ours.values()):
            fail("another build's debug file of the linked name was used")
        print("ok: stripped binary, debug file by .gnu_debuglink: the same frames; another build's refused")

        # Neither has a build id: the link's CRC-32 decides (binutils computes it, we check it).
        nobid_dir = os.path.join(tmp, "nobid")
        os.makedirs(nobid_dir)
        nobid_debug = os.path.join(nobid_dir, "nobid.debug")
        nobid = os.path.join(nobid_dir, "fixture-nobid")
        run(["objcopy", "--remove-section=.note.gnu.build-id", debug, nobid_debug])
        run(["objcopy", "--remove-section=.note.gnu.build-id", "--add-gnu-debuglink=" + nobid_debug, stripped, nobid])
        if "Build ID" in run(["readelf", "-n", nobid]):
            fail("objcopy left a build id")
        ours, stats = dump(tool, "", nobid, seg, vaddrs)
        check_same("no build id, debug file by .gnu_debuglink's CRC", ours, want)
        with open(nobid_debug, "ab") as f:
            f.write(b"\0")
        ours, stats = dump(tool, "", nobid, seg, vaddrs)
        if any(fr for _, fr in ours.values()):
            fail("a debug file whose CRC-32 is not the link's was used")
        print("ok: no build id: the debug file by its CRC-32, refused once it changes")

        # Names kept, DWARF gone (strip -g): names, no lines.
        nodebug = os.path.join(tmp, "fixture-nodebug")
        run(["strip", "--strip-debug", "-o", nodebug, fixture])
        ours, stats = dump(tool, "", nodebug, seg, vaddrs)
        for v in vaddrs:
            sym, fr = ours[v]
            if fr or sym != want[v][-1][0]:
                fail("no DWARF: 0x%x: want %s and no lines, have %s %s" % (v, want[v][-1][0], sym, fr))
        if "dwarf_loaded=0 dwarf_errors=0" not in stats:
            fail("no DWARF: %s" % stats)
        check_members(tool, "", nodebug, fixture, seg, src, tmp, "no DWARF", want_members=False)
        print("ok: without DWARF: names by symbol, no lines")

        # Compressed DWARF (objcopy --compress-debug-sections, SHF_COMPRESSED): the same frames. Its
        # .debug_info then claiming 1 TiB uncompressed (the Elf64_Chdr's ch_size, gABI "Compressed
        # Sections"): over the bound, refused and counted, names kept.
        packed = os.path.join(tmp, "fixture-zlib")
        run(["objcopy", "--compress-debug-sections=zlib", fixture, packed])
        ours, stats = dump(tool, "", packed, seg, vaddrs)
        check_same("compressed DWARF", ours, want)
        for line in run(["readelf", "-SW", packed]).splitlines():
            m = re.search(r"\]\s+\.debug_info\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+[0-9a-f]+\s+\S+\s+(\S*C\S*)", line)
            if m:
                with open(packed, "r+b") as f:
                    f.seek(int(m.group(1), 16) + 8)  # ch_type, ch_reserved, then ch_size (ELFCLASS64, LE)
                    f.write((1 << 40).to_bytes(8, "little"))
                break
        else:
            fail("objcopy left no compressed .debug_info (flag C) in readelf -S")
        ours, stats = dump(tool, "", packed, seg, vaddrs)
        if any(fr for _, fr in ours.values()) or "dwarf_loaded=0 dwarf_errors=1" not in stats:
            fail("1 TiB of DWARF: want it refused and counted, have %s" % stats)
        if any(ours[v][0] != want[v][-1][0] for v in vaddrs):
            fail("1 TiB of DWARF: names lost")
        print("ok: compressed DWARF read; one claiming 1 TiB refused (%s)" % stats)

        # .debug_info overwritten: libdw refuses or reads garbage; never a crash, names stay.
        bad = os.path.join(tmp, "fixture-bad")
        shutil.copy(fixture, bad)
        for line in run(["readelf", "-SW", fixture]).splitlines():
            m = re.search(r"\]\s+\.debug_info\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
            if m:
                off, size = int(m.group(1), 16), int(m.group(2), 16)
                with open(bad, "r+b") as f:
                    f.seek(off)
                    f.write(bytes([0xff]) * min(size, 64))
                break
        else:
            fail("no .debug_info in readelf -S of the fixture")
        ours, stats = dump(tool, "", bad, seg, vaddrs)
        for v in vaddrs:
            if ours[v][0] != want[v][-1][0]:
                fail("corrupt DWARF: 0x%x: name %s, want %s" % (v, ours[v][0], want[v][-1][0]))
        print("ok: corrupt .debug_info: %s" % stats)


if __name__ == "__main__":
    main()
