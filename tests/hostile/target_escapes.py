"""A hostile target for issue 18 item 5: a thread, the function it runs and
that function's file are named with terminal controls (ESC [2J clears the
screen, OSC 0 retitles the window, C1 CSI U+009B, a bidi override U+202E).
--plain runs the same threads under ordinary names, for diff's other side.
Prints pid=N on stderr; runs for --seconds."""
import os
import sys
import threading
import time
import types

CONTROLS = "\x1b[2J" + "\x1b]0;owned\x07" + "\x9b2J" + "\u202e"
EVIL_THREAD = "thr" + CONTROLS + "end"
EVIL_FUNCTION = "fn" + CONTROLS + "end"
EVIL_FILE = "/srv/app" + CONTROLS + ".py"

seconds = float(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv else 10
plain = "--plain" in sys.argv


def spin(end):
    while time.monotonic() < end:
        sum(range(200))


def nap(end):
    while time.monotonic() < end:
        time.sleep(0.05)


if plain:
    work, name = spin, "plain-thread"
else:
    work = types.FunctionType(spin.__code__.replace(co_name=EVIL_FUNCTION, co_qualname=EVIL_FUNCTION,
                                                    co_filename=EVIL_FILE), globals())
    name = EVIL_THREAD

print(f"pid={os.getpid()}", file=sys.stderr, flush=True)
end = time.monotonic() + seconds
t = threading.Thread(target=work, args=(end,), name=name)
t.start()
nap(end)
t.join()
