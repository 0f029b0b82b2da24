"""A hostile target of test_native_cage.py: loads the shared library LIB
(argv[1], built hostile by the test) and spends its time in its cage_spin,
called from Python, until --seconds; with --signals, counts SIGRTMIN+1 in C
and prints the count when its stdin closes; with --rewrite-from FILE,
rewrites LIB in place with FILE's bytes once it is loaded. Prints "ready" when it runs."""
import ctypes
import signal
import sys
import threading
import time

lib = ctypes.CDLL(sys.argv[1])
lib.cage_spin.argtypes = [ctypes.c_double]
lib.cage_spin.restype = ctypes.c_ulong
lib.cage_signals_seen.restype = ctypes.c_ulong
lib.cage_vfork_hold.argtypes = [ctypes.c_double]
lib.cage_vfork_hold.restype = ctypes.c_double
if "--rewrite-from" in sys.argv:
    # the file as loaded, then as ebpfprof will read it (same inode)
    with open(sys.argv[sys.argv.index("--rewrite-from") + 1], "rb") as src, open(sys.argv[1], "r+b") as dst:
        dst.write(src.read())
seconds = float(sys.argv[sys.argv.index("--seconds") + 1])
counting = "--signals" in sys.argv
vforks = int(sys.argv[sys.argv.index("--vfork") + 1]) if "--vfork" in sys.argv else 0
away = [0.0]


def in_and_out():
    while True:
        away[0] = max(away[0], lib.cage_vfork_hold(0.6))
if counting:
    # the C handler counts every one (Python's would merge those queued)
    lib.cage_count_signals(signal.SIGRTMIN + 1)


def report_when_stdin_closes():
    sys.stdin.read()
    print(f"seen={lib.cage_signals_seen()} away={away[0]:.3f}", flush=True)


if vforks:
    # the threads going in and out first: lower tids, dumped before the others
    for _ in range(3):
        threading.Thread(target=in_and_out, daemon=True).start()
    for _ in range(vforks):
        threading.Thread(target=lib.cage_vfork_hold, args=(15.0,), daemon=True).start()
if counting or vforks:
    threading.Thread(target=report_when_stdin_closes, daemon=True).start()
print("ready", flush=True)
end = time.monotonic() + seconds
while time.monotonic() < end:
    lib.cage_spin(0.02)
time.sleep(3600 if counting or vforks else 0)
