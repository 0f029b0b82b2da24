"""A hostile target of test_gil_scribbler.py: three threads contend for the
GIL (switching every 50 us: short waits) while a C thread (gil_scribbler.c,
argv[1] built by the test) rewrites gil.last_holder with a new value every
0.2 ms. Prints "ready" once the offset is checked and the scribbler runs;
"bad offset" if last_holder is not where the test thinks it is."""
import ctypes
import sys
import threading

lib = ctypes.CDLL(sys.argv[1])
ctypes.pythonapi.PyThreadState_Get.restype = ctypes.c_void_p
# through pythonapi (PyDLL), the GIL is held across the call
check = ctypes.PyDLL(sys.argv[1]).scribbler_offset_ok
check.argtypes = [ctypes.c_void_p]
if not check(ctypes.pythonapi.PyThreadState_Get()):
    print("bad offset", flush=True)
    sys.exit(1)
sys.setswitchinterval(0.00005)


def spin():
    n = 0
    while True:
        n += 1


for i in range(3):
    threading.Thread(target=spin, name=f"spinner-{i}", daemon=True).start()
if lib.scribbler_start():
    print("no thread", flush=True)
    sys.exit(1)
print("ready", flush=True)
threading.Event().wait()
