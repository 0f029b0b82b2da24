"""Issue 9, item 11: the ELF files of a target are hostile. A target maps a
file named like libpython whose symbol table claims 10^12 one-byte entries
over a sparse file: main walked them all (a hang, or SIGBUS on the holes of
a full file system, through its mmap of the file). Now the file is read with
pread only, its size is capped and a table's entry size must be the ELF's."""
import os
import struct
import subprocess
from pathlib import Path

import pytest

from conftest import Profile, cannot_run, require_interpreter, run_ebpfprof

HERE = Path(__file__).resolve().parent
SHT_STRTAB, SHT_DYNSYM = 3, 11


def sparse_elf(path, size, sym_size, entsize=1):
    """An ELF64 shared object with no segments and a .dynsym of sym_size bytes
    of entsize each, in a file of `size` bytes (sparse: holes past 4 KiB)."""
    shstr = b"\0.dynsym\0.dynstr\0.shstrtab\0"
    dynstr = b"\0_PyRuntime\0"
    shoff = 64
    strs_at = shoff + 4 * 64
    ehdr = (b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
            + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 56, 0, 64, 4, 3))
    sh = [bytes(64),
          struct.pack("<IIQQQQIIQQ", 1, SHT_DYNSYM, 2, 0, 0x1000, sym_size, 2, 1, 8, entsize),
          struct.pack("<IIQQQQIIQQ", 9, SHT_STRTAB, 2, 0, strs_at, len(dynstr), 0, 0, 1, 0),
          struct.pack("<IIQQQQIIQQ", 17, SHT_STRTAB, 0, 0, strs_at + len(dynstr), len(shstr), 0, 0, 1, 0)]
    with open(path, "wb") as f:
        f.write(ehdr + b"".join(sh) + dynstr + shstr)
        f.truncate(size)


@pytest.fixture
def small_tmpfs(tmp_path):
    """Holes of a sparse file on a 1 MiB tmpfs: reading them through an
    mmap allocates pages until SIGBUS, instead of filling the page cache."""
    d = tmp_path / "fs"
    d.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(d)]).returncode:
        cannot_run("cannot mount a tmpfs")
    yield d
    subprocess.run(["umount", "-l", str(d)])


# table sizes a multiple of sizeof(Elf64_Sym): libelf itself takes them
@pytest.mark.parametrize("size,sym_size", [
    (1 << 40, ((1 << 40) - 0x2000) // 24 * 24),    # past the file size cap
    (900 << 20, ((900 << 20) - 0x2000) // 24 * 24),    # under it: the entry size check
], ids=["1TiB", "900MiB"])
def test_sparse_symbol_table_of_one_byte_entries(small_tmpfs, out, size, sym_size):
    interp = require_interpreter("debian-3.11")
    lib = small_tmpfs / "libpython3.11.so.1.0"
    sparse_elf(lib, size, sym_size)
    target = subprocess.Popen(interp.argv + [str(HERE / "target_map_file.py"), str(lib), "--seconds", "30"],
                              stderr=subprocess.PIPE, text=True)
    try:
        line = target.stderr.readline()
        assert line.startswith("pid="), line + target.stderr.read()
        assert str(lib) in Path(f"/proc/{target.pid}/maps").read_text()
        path = out()
        res = run_ebpfprof("--pid", target.pid, "-d", 1, "-o", path, timeout=30)
        assert res.returncode == 0, res.stderr
        assert Profile(path).weight_with("crunch") > 0
    finally:
        target.kill()
        target.wait()
