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
if "--rewrite-from" in sys.argv:
    # the file as loaded, then as ebpfprof will read it (same inode)
    with open(sys.argv[sys.argv.index("--rewrite-from") + 1], "rb") as src, open(sys.argv[1], "r+b") as dst:
        dst.write(src.read())
seconds = float(sys.argv[sys.argv.index("--seconds") + 1])
counting = "--signals" in sys.argv
if counting:
    # the C handler counts every one (Python's would merge those queued)
    lib.cage_count_signals(signal.SIGRTMIN + 1)


def report_when_stdin_closes():
    sys.stdin.read()
    print(f"seen={lib.cage_signals_seen()}", flush=True)


if counting:
    threading.Thread(target=report_when_stdin_closes, daemon=True).start()
print("ready", flush=True)
end = time.monotonic() + seconds
while time.monotonic() < end:
    lib.cage_spin(0.02)
time.sleep(3600 if counting else 0)
