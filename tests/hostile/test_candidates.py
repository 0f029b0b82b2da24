"""Issue 28, item 2: the search for the interpreter among the files a target
maps is bounded in files, bytes and time, and each file is judged by its ELF
header, read before libelf allocates anything. A target mapping eight 1 GiB
sparse files named libpython3.99-a.so and -b.so, alternately, whose section
header 0 claims 16.7 million sections (extended numbering) held main's
`--pid P -d 2` for 39 s at 3.4 GB before it recorded anything: libelf's
elf_begin() allocated per section before the section count was checked, and
the two names alternating defeated the skip of a file seen just before."""
import os
import re
import struct
import subprocess
import time
from pathlib import Path

from conftest import EBPFPROF, Profile, peak_rss_kib, require_interpreter, with_peak_rss

HERE = Path(__file__).resolve().parent
GiB = 1 << 30


def many_sections_elf(path, size=GiB, claimed=(1 << 24) - 1):
    """An ELF64 shared object with e_shnum 0 (extended numbering): section
    header 0, at 64, says `claimed` sections, which a file of `size` bytes
    (sparse past its first page) holds: 64 * 16.7 million < 1 GiB."""
    shoff = 64
    ehdr = (b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
            + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 56, 0, 64, 0, 0xffff))
    sh0 = struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, claimed, 1, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(ehdr + sh0)
        f.truncate(size)


def decoys_mapped(tmp_path, n, **elf):
    """A target mapping n ELF files (many_sections_elf(**elf)) named
    libpython3.99-a.so and -b.so alternately, each in a directory of its own."""
    interp = require_interpreter("debian-3.11")
    decoys = []
    for i in range(n):
        d = tmp_path / f"d{i}"
        d.mkdir()
        decoys.append(d / f"libpython3.99-{'ab'[i % 2]}.so")
        many_sections_elf(decoys[-1], **elf)
    target = subprocess.Popen(interp.argv + [str(HERE / "target_map_file.py"), *map(str, decoys),
                                             "--seconds", "120"],
                              stderr=subprocess.PIPE, text=True)
    line = target.stderr.readline()
    if not line.startswith("pid="):
        target.kill()
        raise AssertionError(line + target.stderr.read())
    return target, decoys


def test_eight_decoys_claiming_millions_of_sections(tmp_path, out):
    target, decoys = decoys_mapped(tmp_path, 8)
    try:
        maps = Path(f"/proc/{target.pid}/maps").read_text()
        assert all(str(d) in maps for d in decoys)
        path, trace = out(), tmp_path / "strace.log"
        started = time.monotonic()
        rss = tmp_path / "rss.txt"
        prof = subprocess.Popen(with_peak_rss([EBPFPROF, "--pid", target.pid, "-d", "2", "-o", path], rss),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            _, status, _ = os.wait4(prof.pid, 0)
        finally:
            if prof.poll() is None:
                prof.kill()
        took = time.monotonic() - started
        stderr = prof.stderr.read()
        assert os.waitstatus_to_exitcode(status) == 0, stderr
        assert took < 2 + 5, f"the recording took {took:.1f} s"
        assert peak_rss_kib(rss) < 256 * 1024, f"peak RSS {peak_rss_kib(rss)} KiB"
        assert Profile(path).weight_with("crunch") > 0
        # again under strace (slower, so not timed): nothing is opened but
        # the target's own mappings, through map_files, never by a name it chose
        res = subprocess.run(["strace", "-f", "--seccomp-bpf", "-qq", "-e", "trace=%file", "-o", str(trace),
                              str(EBPFPROF), "--pid", str(target.pid), "-d", "1", "-o", str(out())],
                             capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stderr
        opened = trace.read_text()
        assert not any(str(d.parent) in opened for d in decoys), opened
        def span(text):
            return tuple(int(x, 16) for x in text.split("-"))
        ranges = {span(l.split()[0]) for l in maps.splitlines()}
        files = {span(r) for r in re.findall(rf"/proc/{target.pid}/map_files/([0-9a-f]+-[0-9a-f]+)", opened)}
        assert files and files <= ranges, files - ranges
    finally:
        target.kill()
        target.wait()


def test_more_decoys_than_the_cap_end_the_search_in_one_line(tmp_path):
    """Twenty small ELF files named like libpython, each a file of its own,
    mapped before the interpreter: the first 16 are examined, then the search
    ends with one line saying so (main examined them all, however many)."""
    target, _ = decoys_mapped(tmp_path, 20, size=4096, claimed=1)
    try:
        res = subprocess.run([str(EBPFPROF), "--pid", str(target.pid), "-d", "1", "-o", str(tmp_path / "p.json")],
                             capture_output=True, text=True, timeout=30)
        assert res.returncode != 0
        assert f"process {target.pid} (python3.11): no _PyRuntime found in the first 16 files it maps named " \
            "like an interpreter, and no more are examined (files examined at most: 16)" in res.stderr, res.stderr
        assert len(res.stderr.splitlines()) == 1, res.stderr
    finally:
        target.kill()
        target.wait()
