"""Issue 10: py-spy's remaining recording flags change the output as py-spy's
do (--nolineno, -t/--threads, --full-filenames, -n/--native), and the progress
line shows only on a terminal."""
import re
import subprocess

from conftest import EBPFPROF, Profile, require_interpreter, run_ebpfprof

STDLIB = "/usr/lib/python3.11/"


def record(pid, path, *flags, fmt="collapsed"):
    run_ebpfprof("--pid", pid, "-d", 2, "-f", fmt, "-o", path, *flags, check=True)
    return path.read_text() if fmt == "collapsed" else path


def lines(text):
    """(frames root first, count) per collapsed line."""
    for line in text.splitlines():
        stack, count = line.rsplit(" ", 1)
        yield stack.split(";"), int(count)


def encoder_frames(text):
    return [f for frames, _ in lines(text) for f in frames if f.startswith("encode_loop ")]


def test_nolineno_drops_line_numbers(workloads, out):
    w = workloads(require_interpreter("debian-3.11"), "stdlib_hot.py", seconds=60)
    default = record(w.pid, out(".txt"))
    plain = record(w.pid, out(".txt"), "--nolineno")
    assert re.fullmatch(r"encode_loop \(\S+stdlib_hot\.py:\d+\)", encoder_frames(default)[0])
    assert set(encoder_frames(plain)) == {f"encode_loop ({w.interp.workload_path('stdlib_hot.py')})"}
    assert not re.search(r":\d+\)", plain), "a frame still has a line number"
    Profile(record(w.pid, out(), "--nolineno", fmt="speedscope"))  # still imports


def test_threads_puts_each_thread_at_the_root(workloads, out):
    w = workloads(require_interpreter("debian-3.11"), "stdlib_hot.py", seconds=60)
    merged = record(w.pid, out(".txt"))
    for _ in range(3):  # on a loaded machine one thread may get no CPU for a while
        per_thread = record(w.pid, out(".txt"), "-t")
        roots = {frames[0] for frames, _ in lines(per_thread)}
        if len(roots) >= 2:
            break
    assert all(frames[0].startswith("Thread._bootstrap ") for frames, _ in lines(merged)), merged[:500]
    assert {re.sub(r"^Thread \d+ ", "", r) for r in roots} >= {'"encoder-1"', '"encoder-2"'}, roots
    assert all(re.fullmatch(r'Thread \d+ "[^"]+"', r) for r in roots), roots
    # the two threads run the same code: with -t some stack shows under both
    # roots; without, each stack is one line
    under = {}
    for frames, _ in lines(per_thread):
        under.setdefault(tuple(frames[1:]), set()).add(frames[0])
    assert any(len(r) == 2 for r in under.values()), per_thread[:500]
    stacks = [tuple(frames) for frames, _ in lines(merged)]
    assert len(stacks) == len(set(stacks))
    assert run_ebpfprof("--pid", w.pid, "-d", 1, "--threads", "-f", "collapsed", "-o", out(".txt")).returncode == 0


def test_filenames_are_short_unless_full_filenames(workloads, out):
    w = workloads(require_interpreter("debian-3.11"), "stdlib_hot.py", seconds=60)
    short = record(w.pid, out(".txt"))
    full = record(w.pid, out(".txt"), "--full-filenames")
    assert "(threading.py:" in short and "(json/encoder.py:" in short
    assert STDLIB not in short
    assert f"({STDLIB}threading.py:" in full and f"({STDLIB}json/encoder.py:" in full
    # the application's own file keeps its full path either way
    assert w.interp.workload_path("stdlib_hot.py") + ":" in short


def test_native_stack_out_of_range_is_refused_clearly():
    # --native itself: tests/native
    for kib in ("3", "33", "x"):
        res = run_ebpfprof("-n", "--native-stack", kib, "--pid", "1")
        assert res.returncode == 2
        assert res.stderr.startswith(f"ebpfprof: invalid --native-stack: {kib} (KiB, 4 to 32)"), res.stderr


def test_progress_line_only_on_a_terminal(workloads, out):
    w = workloads(require_interpreter("debian-3.11"), "stdlib_hot.py", seconds=60)
    piped = run_ebpfprof("--pid", w.pid, "-d", 2, "-o", out(), check=True)
    assert "recording" not in piped.stderr and "\r" not in piped.stderr
    # script(1) gives ebpfprof a terminal on stderr
    cmd = f"{EBPFPROF} --pid {w.pid} -d 2 -o {out()}"
    res = subprocess.run(["script", "-qfec", cmd, "/dev/null"], capture_output=True, timeout=60)
    text = res.stdout.decode()
    assert res.returncode == 0, text
    shown = re.findall(r"\r\x1b\[Kebpfprof: recording ([0-9.]+) s, (\d+) samples, (\d+) lost, (\d+) GC pauses", text)
    assert len(shown) >= 3, text
    assert float(shown[-1][0]) > float(shown[0][0]) and int(shown[-1][1]) > 0
    # rewritten in place, and erased before the summary
    assert "\n" not in text.split("ebpfprof: recorded")[0], text[:400]
    assert "\r\x1b[Kebpfprof: recorded" in text, text[-400:]
