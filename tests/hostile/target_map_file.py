"""A hostile target for issue 9 items 1 and 11: maps the first page of FILE
(argv[1]) read-only at a low address, so that /proc/PID/maps lists it before
the interpreter's own executable, then runs Python code until --seconds.
Prints pid=N on stderr."""
import ctypes
import mmap
import os
import sys
import time

path = sys.argv[1]
seconds = float(sys.argv[sys.argv.index("--seconds") + 1])
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
MAP_FIXED_NOREPLACE = 0x100000
fd = os.open(path, os.O_RDONLY)
addr = libc.mmap(0x200000, 4096, mmap.PROT_READ, mmap.MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0)
if addr != 0x200000:
    sys.exit(f"mmap at 0x200000 failed: {addr!r} errno {ctypes.get_errno()}")
print(f"pid={os.getpid()}", file=sys.stderr, flush=True)


def crunch():
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(500))


crunch()
