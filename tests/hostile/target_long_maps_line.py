"""A hostile target for issue 28 item 3: maps a file whose path is so long
that a /proc/PID/maps reader with a buffer of SPLIT_AT + 1 bytes (main's
fgets of PATH_MAX + 128) cuts its line there, and whose path from that very
byte on reads as a maps line of its own: a mapping at offset 0 of FORGED
(argv[2], a file this process never maps) with FORGED's device and inode.
argv[1] is the directory to build the long path in. Then runs Python code
until --seconds. Prints pid=N on stderr."""
import ctypes
import mmap
import os
import sys

from hostile_target import announce_and_crunch

SPLIT_AT = 4096 + 128 - 1       # bytes fgets(line, PATH_MAX + 128) returns
PAD = 73                        # maps pads the fields before the path to this column
ADDR = 0x300000

base, forged = sys.argv[1], sys.argv[2]
seconds = float(sys.argv[sys.argv.index("--seconds") + 1])
st = os.stat(forged)
line = (f"7f0000000000-7f0000001000 r--p 00000000 {os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}"
        f" {st.st_ino} ")
# the forged line's path is forged itself: its components follow line as
# directories; the real path must put line's first byte at SPLIT_AT
tail = [line] + forged.strip("/").split("/")
head_len = SPLIT_AT - PAD - 1   # the '/' before line's directory ends the first piece
fill = head_len - len(base)
assert fill > 0
dirfd = os.open(base, os.O_DIRECTORY)
comps = []
while fill > 0:                 # "/" and a name each, never a rest of 1 (no empty name)
    n = min(200, fill - 1)
    if fill - (n + 1) == 1:
        n -= 1
    comps.append("d" * n)
    fill -= n + 1
for name in comps + tail[:-1]:
    os.mkdir(name, dir_fd=dirfd)
    fd = os.open(name, os.O_DIRECTORY, dir_fd=dirfd)
    os.close(dirfd)
    dirfd = fd
fd = os.open(tail[-1], os.O_RDWR | os.O_CREAT, 0o644, dir_fd=dirfd)
os.write(fd, b"\0" * 4096)
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
MAP_FIXED_NOREPLACE = 0x100000
addr = libc.mmap(ADDR, 4096, mmap.PROT_READ, mmap.MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0)
if addr != ADDR:
    sys.exit(f"mmap failed: errno {ctypes.get_errno()}")
with open("/proc/self/maps") as f:
    mine = next(m for m in f if m.startswith(f"{ADDR:08x}-"))
if not mine[SPLIT_AT:].startswith(line) or not mine.rstrip("\n").endswith(forged):
    sys.exit(f"the maps line is not cut where planned: {mine[SPLIT_AT - 8:SPLIT_AT + 60]!r}")
announce_and_crunch(seconds)
