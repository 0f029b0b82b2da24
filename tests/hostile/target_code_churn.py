"""A hostile target for issue 9 item 4: it keeps swapping in new code objects,
each with a 1 MiB line table, so that every sample names a code object the
profiler has not seen. Prints pid=N on stderr; runs for --seconds."""
import os
import sys
import time
import types

seconds = float(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv else 10
print(f"pid={os.getpid()}", file=sys.stderr, flush=True)


def churn():
    end = time.perf_counter() + 0.001
    while time.perf_counter() < end:
        pass


# one shared 1 MiB table: costs the target nothing per code object
table = bytes([0x80 | (14 << 3)]) * (1 << 20)
field = "co_linetable" if sys.version_info >= (3, 10) else "co_lnotab"
stop = time.monotonic() + seconds
i = 1
while time.monotonic() < stop:
    code = churn.__code__.replace(**{field: table, "co_firstlineno": i})
    types.FunctionType(code, globals())()
    i += 1
