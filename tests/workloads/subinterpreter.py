"""A program with a subinterpreter alive (3.14+: concurrent.interpreters),
as InterpreterPoolExecutor makes: a thread named sub-caller runs
sub_crunch() inside it while the main thread runs main_crunch(). The
subinterpreter is created before the pid line, so the profiler always
attaches with it alive: _PyRuntime.interpreters.head is then the
subinterpreter, not the main one."""
import sys
import threading
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
from concurrent import interpreters  # noqa: E402
import common  # noqa: E402

SUB = """
import time

def sub_crunch():
    acc = 0
    for i in range(20000):
        acc ^= (i * 31) % 11
    return acc

end = time.monotonic() + {seconds}
while time.monotonic() < end:
    sub_crunch()
"""


def call_into_sub(interp, seconds):
    interp.exec(SUB.format(seconds=seconds))


def main_crunch():
    acc = 0
    for i in range(20000):
        acc ^= (i * 31) % 11
    return acc


def main():
    interp = interpreters.create()
    args = common.parse()
    caller = threading.Thread(target=call_into_sub, args=(interp, args.seconds),
                              name="sub-caller")
    caller.start()
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        main_crunch()
    caller.join()
    interp.close()


if __name__ == "__main__":
    main()
