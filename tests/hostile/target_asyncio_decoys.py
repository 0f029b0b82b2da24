"""A hostile target of test_asyncio_decoys.py (3.14+): a file named like
the _asyncio extension module, an ELF whose section-name table is 64 MiB
of one long name, mapped COPIES times; asyncio never imported, so the
interpreter has no .AsyncioDebug section mapped and a reader that looks
for one parses each mapping it finds. A coroutine driven by hand (no
event loop) runs for ever: its frames are a coroutine's, so a recorder
looks for tasks to name them. Prints "ready" once mapped."""
import mmap
import os
import struct
import sys

COPIES = int(sys.argv[1]) if len(sys.argv) > 1 else 30
NAMES = 64 << 20        # the section-name table: the most a section may be
SECTIONS = 16


def decoy(path):
    """ELF64 header, SECTIONS section headers, then the name table: 'A'
    bytes with a NUL at the end, every section named from its start."""
    shoff, strtab_off = 64, 4096
    ehdr = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    ehdr += struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64,
                        SECTIONS, 1)
    shdrs = bytes(64)                                       # SHN_UNDEF
    shdrs += struct.pack("<IIQQQQIIQQ", 0, 3, 0, 0, strtab_off, NAMES, 0, 0, 1, 0)   # .shstrtab
    for _ in range(SECTIONS - 2):
        shdrs += struct.pack("<IIQQQQIIQQ", 0, 1, 0, 0, strtab_off, 8, 0, 0, 1, 0)   # PROGBITS
    with open(path, "wb") as f:
        f.write(ehdr + shdrs)
        f.seek(strtab_off)
        chunk = b"A" * (1 << 20)
        for _ in range(NAMES >> 20):
            f.write(chunk)
        f.seek(strtab_off + NAMES - 1)
        f.write(b"\0")


async def spin():
    x = 0
    while True:
        x += 1


def main():
    path = f"/tmp/_asyncio.cpython-314-x86_64-linux-gnu.so.{os.getpid()}"
    decoy(path)
    fd = os.open(path, os.O_RDONLY)
    os.unlink(path)
    maps = [mmap.mmap(fd, 4096, prot=mmap.PROT_READ) for _ in range(COPIES)]
    print("ready", flush=True)
    coro = spin()
    coro.send(None)
    del maps


main()
