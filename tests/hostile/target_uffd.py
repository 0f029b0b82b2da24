"""A hostile target for issue 28 item 5: a page of its memory is backed by a
userfaultfd it never serves, and the file name of the code object of its hot
function (stuck(), co_filename) is made to point into it. Whoever reads that
string (ebpfprof's symbolizer, with process_vm_readv) waits for a page that
never comes: a wait only SIGKILL ends. Another function, free(), is left
intact. Runs both until --seconds. Prints pid=N on stderr."""
import ctypes
import mmap
import os
import struct
import sys
import threading
import time

seconds = float(sys.argv[sys.argv.index("--seconds") + 1])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.ioctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p]
SYS_userfaultfd, UFFDIO_API, UFFDIO_REGISTER = 323, 0xC018AA3F, 0xC020AA00
UFFD_API, UFFDIO_REGISTER_MODE_MISSING = 0xAA, 1

uffd = libc.syscall(SYS_userfaultfd, os.O_CLOEXEC | os.O_NONBLOCK)
if uffd < 0:
    sys.exit(f"userfaultfd: errno {ctypes.get_errno()}")
api = (ctypes.c_uint64 * 3)(UFFD_API, 0, 0)
if libc.ioctl(uffd, UFFDIO_API, api) < 0:
    sys.exit(f"UFFDIO_API: errno {ctypes.get_errno()}")
page = libc.mmap(None, 4096, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
reg = (ctypes.c_uint64 * 4)(page, 4096, UFFDIO_REGISTER_MODE_MISSING, 0)
if libc.ioctl(uffd, UFFDIO_REGISTER, reg) < 0:
    sys.exit(f"UFFDIO_REGISTER: errno {ctypes.get_errno()}")


def stuck():
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(500))


def free():
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(500))


# co_filename is the one field of stuck's code object holding its file name's address
code = stuck.__code__
head = ctypes.string_at(id(code), 256)
where = [i for i in range(0, 256, 8) if head[i:i + 8] == struct.pack("<Q", id(code.co_filename))]
if len(where) != 1:
    sys.exit(f"co_filename found at {where} in the code object")
ctypes.memmove(id(code) + where[0], struct.pack("<Q", page + 64), 8)
print(f"pid={os.getpid()}", file=sys.stderr, flush=True)
t = threading.Thread(target=free)
t.start()
stuck()
t.join()
