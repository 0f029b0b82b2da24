"""A hostile target for issue 9 items 1 and 11 and issue 28 item 2: maps the
first page of each FILE (the arguments before --seconds) read-only at low
addresses, in order (the first at 0x200000), so that /proc/PID/maps lists
them before the interpreter's own executable, then runs Python code until
--seconds. Prints pid=N on stderr."""
import ctypes
import mmap
import os
import sys

from hostile_target import announce_and_crunch

paths = sys.argv[1:sys.argv.index("--seconds")]
seconds = float(sys.argv[sys.argv.index("--seconds") + 1])
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
MAP_FIXED_NOREPLACE = 0x100000
for i, path in enumerate(paths):
    want = 0x200000 + i * 0x2000
    fd = os.open(path, os.O_RDONLY)
    addr = libc.mmap(want, 4096, mmap.PROT_READ, mmap.MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0)
    if addr != want:
        sys.exit(f"mmap of {path} at {want:#x} failed: {addr!r} errno {ctypes.get_errno()}")
    os.close(fd)
announce_and_crunch(seconds)
