"""An embedding host: a C program (tests/embed/embed.c, not named python*)
linked against Debian's libpython3.11.so. Its executable holds no _PyRuntime,
so the profiler must find the interpreter in the mapped library, and the
Python frames must come out under the names, file and lines of the code the
host compiled from a C string."""
import re
import subprocess
import time

from conftest import ROOT, Profile, SchedStat, cannot_run, read_gc_log, run_ebpfprof, thread_truth

EMBED_HOST = ROOT / "build" / "tests" / "embed-host"
APP_FILE = "embedded_app.py"  # the filename embed.c compiles its code with


def need_host():
    if not EMBED_HOST.exists():
        cannot_run(f"{EMBED_HOST} is not built (run make {EMBED_HOST.relative_to(ROOT)})")


def app_lines():
    """(line of host_work's call of inner_loop, lines of inner_loop's loop and return),
    taken from the very code string the host runs."""
    src = subprocess.run([str(EMBED_HOST), "--print-source"], capture_output=True, text=True,
                         check=True).stdout.splitlines()

    def line_of(text):
        hits = [i + 1 for i, l in enumerate(src) if l.strip() == text]
        assert len(hits) == 1, f"{text!r} in the embedded code: lines {hits}"
        return hits[0]

    # the host calls host_work in 0.25 s slices: a sample can land as a slice's
    # inner_loop returns
    return (line_of("return inner_loop(deadline)"),
            {line_of("while time.monotonic() < deadline:"), line_of("n += 1"),
             line_of("return n")})


def start_host(seconds):
    proc = subprocess.Popen([str(EMBED_HOST), "--seconds", str(seconds)],
                            stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    if not line.startswith("pid="):
        proc.kill()
        raise RuntimeError(f"embed-host did not start: {line!r} {proc.stderr.read()}")
    return proc, int(line.strip().split("=")[1])


def mapped_files(pid):
    with open(f"/proc/{pid}/maps") as f:
        return {l.split(None, 5)[5].strip() for l in f if len(l.split(None, 5)) == 6}


def test_embedded_libpython_is_profiled_with_its_python_frames(out):
    need_host()
    call_line, loop_lines = app_lines()
    # long enough to outlast the profiler's start on a loaded machine; killed below
    host, pid = start_host(60)
    try:
        # the setup this test is about: the interpreter is a mapped libpython
        maps = mapped_files(pid)
        assert any(re.search(r"/libpython3\.11\.so[.0-9]*$", m) for m in maps), sorted(maps)
        time.sleep(0.5)
        path = out()
        stat = SchedStat(pid)
        try:
            res = run_ebpfprof("--pid", pid, "-d", 2, "-o", path, "--gc-log", path.with_suffix(".gc.jsonl"),
                               check=True)
        finally:
            stat.finish()
        assert host.poll() is None, "embed-host ended under the profiler"
    finally:
        host.kill()
        host.wait()

    assert re.search(r"\bCPython 3\.11\b", res.stderr), res.stderr
    prof = Profile(path)
    main = prof.profile('"MainThread"')
    assert main["name"] == f'Thread {pid} "MainThread"'
    weight, seen_lines = 0, set()
    for s, w in zip(main["samples"], main["weights"]):
        frames = [prof.frames[i] for i in s]
        names = [f["name"] for f in frames]
        if "inner_loop" not in names:
            continue
        # C calls host_work, which calls inner_loop: nothing above or below
        assert names == ["host_work", "inner_loop"], names
        outer, leaf = frames
        assert (outer["file"], outer["line"]) == (APP_FILE, call_line), outer
        assert leaf["file"] == APP_FILE and leaf["line"] in loop_lines, leaf
        seen_lines.add(leaf["line"])
        weight += w
    # the host thread spins in host_work > inner_loop but for the C between
    # slices (microseconds): its on-CPU time is the kernel's (schedstat, a
    # read apart at each end), and those samples weigh it, less the
    # stretches before its first sample and after its last and a first
    # sample's busy-time weight (6 periods at most) and 0.03 s of margin
    head = prof.doc["ebpfprof"]
    table = [t for t in head["threads"] if t["tid"] == pid]
    on_cpu, rate = table[0]["states_s"]["on-cpu"], head["rate_hz"]
    window, _, _ = read_gc_log(path.with_suffix(".gc.jsonl"))   # its monotonic start
    truth, _ = thread_truth(stat, window, pid)
    assert truth > 0.5 and abs(on_cpu - truth) <= 0.05, (table, truth)
    assert truth - 6 / rate - 0.08 <= weight / 1e9 <= truth + 0.05, \
        f"{weight / 1e9:.3f} s of host_work > inner_loop against {truth:.3f} s on the CPU (schedstat)"
    assert seen_lines, "no inner_loop lines"
