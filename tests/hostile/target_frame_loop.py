"""A hostile target of test_frame_loop.py (Debian's python3.11): a thread
points its own frame's caller at a frame of its making that has no code and
is its own caller, then sleeps, while the main thread spins in spin(). A
walk of the sleeping thread's stack meets a chain that never ends and keeps
no frame of it. Prints "ready" once the loop is in place; "bad layout" if
3.11's frame fields are not where this script thinks they are."""
import ctypes
import sys
import threading
import time

FRAME_F_FRAME = 24      # PyFrameObject.f_frame
IFRAME_CODE = 32        # _PyInterpreterFrame.f_code
IFRAME_PREVIOUS = 48    # _PyInterpreterFrame.previous


def u64(addr):
    return ctypes.c_uint64.from_address(addr)


def looper(ready, failed):
    frame = sys._getframe()
    iframe = u64(id(frame) + FRAME_F_FRAME).value
    caller = u64(iframe + IFRAME_PREVIOUS).value
    if u64(iframe + IFRAME_CODE).value != id(frame.f_code) or \
       not caller or u64(caller + IFRAME_CODE).value != id(frame.f_back.f_code):
        failed.append(True)
        ready.set()
        return
    # no code (a walk keeps none of it), and its own caller
    fake = ctypes.create_string_buffer(IFRAME_PREVIOUS + 64)
    u64(ctypes.addressof(fake) + IFRAME_PREVIOUS).value = ctypes.addressof(fake)
    u64(iframe + IFRAME_PREVIOUS).value = ctypes.addressof(fake)
    ready.set()
    time.sleep(3600)    # killed first: the chain is never walked back
    u64(iframe + IFRAME_PREVIOUS).value = caller


def spin():
    n = 0
    while True:
        n += 1


ready, failed = threading.Event(), []
threading.Thread(target=looper, args=(ready, failed), name="looper", daemon=True).start()
ready.wait()
print("bad layout" if failed else "ready", flush=True)
if failed:
    sys.exit(1)
spin()
