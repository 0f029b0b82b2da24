"""A hostile target for issue 9 items 3 and 9: its thread names and comm hold
terminal escapes, and the function it runs is named 505 'a's and a control
character, so that the JSON escape of the name ends exactly at the end of the
writer's 512-byte buffer. Prints pid=N on stderr; runs for --seconds."""
import os
import sys
import threading
import time
import types

seconds = float(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv else 10
EVIL_COMM = "\x1b[31mcomm\x07"
EVIL_THREAD = "\x1b]0;owned\x07\x1b[2Jthread"
LONG_NAME = "a" * 505 + "\x01"


def spin(end):
    while time.monotonic() < end:
        sum(range(200))


code = spin.__code__.replace(co_name=LONG_NAME, co_qualname=LONG_NAME)
evil = types.FunctionType(code, globals())

with open("/proc/self/comm", "w") as f:
    f.write(EVIL_COMM)
print(f"pid={os.getpid()}", file=sys.stderr, flush=True)
end = time.monotonic() + seconds
t = threading.Thread(target=evil, args=(end,), name=EVIL_THREAD)
t.start()
evil(end)
t.join()
