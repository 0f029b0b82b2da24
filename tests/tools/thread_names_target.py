# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Target for tests/tools/thread_names: a process whose threads have names
that are hard to read from outside (non-ASCII of each str kind, longer than
the reader's buffer, thread objects whose attributes moved to a real dict).

    python3 thread_names_target.py
        starts the threads, prints what threading.enumerate() says as
        "ident<TAB>name" lines (UTF-8, each name cut the way the reader
        cuts it: to 127 bytes at a character boundary), then "ready", and
        waits until stdin closes (or 120 s). Run the reader against its
        pid and compare the sorted lines.
    python3 thread_names_target.py --check TOOL
        does that itself: runs TOOL PID and prints "N passed, N failed".

Runs on CPython 3.8 and later, with nothing outside the standard library.
"""
import _thread
import os
import subprocess
import sys
import threading

NAME_BYTES = 127        # struct py_thread_name.name holds 128 with the NUL

stop = threading.Event()


def wait():
    stop.wait()


class SubThread(threading.Thread):
    """A subclass with attributes of its own set before Thread's."""

    def __init__(self, name):
        self.before = 1
        self.other = "x"
        super().__init__(name=name, target=wait, daemon=True)


def start_threads():
    names = ["worker-1", "wörker-2", "ünïcødé-🙂", "long-" + "é" * 100]
    threads = [threading.Thread(name=n, target=wait, daemon=True) for n in names]
    threads.append(SubThread("sub-class"))
    for t in threads:
        t.start()

    # 3.11+: asking for __dict__ makes one out of the inline values.
    viewed = threading.Thread(name="dict-viewed", target=wait, daemon=True)
    viewed.start()
    vars(viewed)
    # More attributes than the class's shared keys hold: a combined dict.
    many = threading.Thread(name="many-attrs", target=wait, daemon=True)
    many.start()
    for i in range(40):
        setattr(many, "attr%d" % i, i)

    # A thread threading did not start: it shows up as a _DummyThread.
    dummy_ready = threading.Event()

    def foreign():
        threading.current_thread()
        dummy_ready.set()
        stop.wait()

    _thread.start_new_thread(foreign, ())
    dummy_ready.wait()
    return threads + [viewed, many]


def cut(name):
    """The name as the reader gives it: UTF-8, whole characters, <= 127 bytes."""
    out = b""
    for ch in name:
        b = ch.encode("utf-8")
        if len(out) + len(b) > NAME_BYTES:
            break
        out += b
    return out


def expected_lines():
    return sorted(b"%d\t%s" % (t.ident, cut(t.name)) for t in threading.enumerate())


def check(tool):
    want = expected_lines()
    res = subprocess.run([tool, str(os.getpid())],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    got = sorted(l for l in res.stdout.split(b"\n") if l)
    passed = failed = 0
    if res.returncode != 0:
        sys.stdout.write("FAIL: %s exited %d: %s\n" % (tool, res.returncode,
                         res.stderr.decode("utf-8", "replace").strip()))
        failed += 1
    else:
        passed += 1
    for line in want:
        if line in got:
            passed += 1
        else:
            failed += 1
            sys.stdout.write("FAIL: missing %r\n" % line)
    for line in got:
        if line not in want:
            failed += 1
            sys.stdout.write("FAIL: unexpected %r\n" % line)
    sys.stdout.write("%s %d.%d: %d passed, %d failed\n" % (
        sys.executable, sys.version_info[0], sys.version_info[1], passed, failed))
    return failed == 0


def main():
    start_threads()
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        ok = check(sys.argv[2])
        stop.set()
        sys.exit(0 if ok else 1)
    # Started before the names are listed: it is one of them.
    threading.Thread(name="stdin-waiter", daemon=True,
                     target=lambda: (sys.stdin.read(), stop.set())).start()
    out = sys.stdout.buffer
    for line in expected_lines():
        out.write(line + b"\n")
    out.write(b"ready\n")
    out.flush()
    stop.wait(120)


if __name__ == "__main__":
    main()
