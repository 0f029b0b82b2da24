"""Fixtures for the integration tests: real Python processes under the real
profiler, as root, with the kernel's BPF. Nothing on the kernel side is faked.

A test that cannot run here (not root, no BTF, an interpreter missing) says why
and is skipped; under CI (CI=true) the same condition fails the test instead,
so nothing is silently skipped there."""
import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EBPFPROF = ROOT / "ebpfprof"
WORKLOADS = ROOT / "tests" / "workloads"
SPEEDSCOPE_CHECK = ROOT / "tests" / "speedscope" / "check.js"
SCHEMA = ROOT / "tests" / "speedscope" / "node_modules" / "speedscope" / "dist" / "release" / "file-format-schema.json"
IN_CI = os.environ.get("CI") == "true"
CHROOTS = Path(os.environ.get("EBPFPROF_CHROOTS", "/var/cache/ebpfprof/chroots"))
PYENV = Path(os.environ.get("PYENV_ROOT", "/root/.pyenv")) / "versions"


STATE_FIELDS = ("id", "reason", "group", "name", "title", "column", "short_label", "top_col", "marker",
                "dump_name", "run_noise")


def state_rows():
    """The rows of the one list of states (include/ep_states.h's EP_STATES),
    in its order, as dicts of STATE_FIELDS: strings unquoted, NULL None,
    numbers as numbers. The tests read the states from there, as the binary
    is made from it, rather than keep a copy."""
    text = re.sub(r"/\*.*?\*/", " ", (ROOT / "include" / "ep_states.h").read_text(), flags=re.S)
    body = re.search(r"#define EP_STATES\(X\)(.*?)(?:\n#|\Z)", text.replace("\\\n", " "), re.S).group(1)
    rows = []
    for args in re.findall(r"\bX\(((?:[^()\"]|\"[^\"]*\"|\([^()]*\))*)\)", body):
        tokens = [t.strip() for t in re.findall(r'"[^"]*"|[^,]+', args)]
        assert len(tokens) == len(STATE_FIELDS), tokens
        values = []
        for t in tokens:
            if t.startswith('"'):
                values.append(t[1:-1])
            elif t == "NULL":
                values.append(None)
            elif re.fullmatch(r"[0-9.]+", t):
                values.append(float(t) if "." in t else int(t))
            else:
                values.append(t)
        rows.append(dict(zip(STATE_FIELDS, values)))
    assert rows and rows[0]["name"] == "on-cpu", rows
    return rows


def cannot_run(reason):
    """Skip locally, fail in CI: CI must run every test."""
    if IN_CI:
        pytest.fail(f"cannot run in CI: {reason}")
    pytest.skip(reason)


def start_ready(argv, env=None, stdin=None):
    """A target that prints "ready" on stdout once set up (the native
    tests' apps and hostile modules), started and waited for."""
    proc = subprocess.Popen([str(a) for a in argv], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **(env or {})})
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        raise AssertionError(f"target did not start: {line!r} {proc.stderr.read()}")
    time.sleep(0.3)
    return proc


def with_peak_rss(cmd, path):
    """cmd run under GNU time, which writes its peak RSS (KiB: the largest
    of the process and its descendants) to path. Not wait4's ru_maxrss of a
    child of pytest: a forked child counts its parent's pages until it
    execs, so in a long session every child read as large as pytest
    (334 MiB) and failed a 256 MiB bound."""
    return ["/usr/bin/time", "-f", "%M", "-o", str(path), *map(str, cmd)]


def peak_rss_kib(path):
    """What with_peak_rss wrote (its last line: time adds a line when the
    command was killed by a signal)."""
    return int(Path(path).read_text().split()[-1])


def need_bpf():
    if os.geteuid() != 0:
        cannot_run("needs root (BPF, perf events, reading another process's memory)")
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        cannot_run("kernel has no BTF (/sys/kernel/btf/vmlinux)")
    if not EBPFPROF.exists():
        cannot_run(f"{EBPFPROF} is not built (run make)")


class Interpreter:
    """A way to run Python: a command prefix, and for chroots the directory the
    workloads must be copied into (their paths inside differ from the host's)."""

    def __init__(self, name, argv, version, chroot=None):
        self.name, self.argv, self.version, self.chroot = name, argv, version, chroot

    def workload_path(self, script):
        if not self.chroot:
            return str(WORKLOADS / script)
        inside = Path(self.chroot) / "ebpfprof-workloads"
        if not (inside / script).exists() or (inside / script).stat().st_mtime < (WORKLOADS / script).stat().st_mtime:
            shutil.copytree(WORKLOADS, inside, dirs_exist_ok=True)
        return f"/ebpfprof-workloads/{script}"

    def __repr__(self):
        return self.name


def _pyenv(minor, build="shared"):
    hits = sorted(PYENV.glob(f"3.{minor}.*/bin/python3.{minor}"))
    return str(hits[-1]) if hits else None


def interpreters():
    """Every interpreter the version tests cover, available or not."""
    out = {
        "debian-3.11": Interpreter("debian-3.11", ["/usr/bin/python3.11"], (3, 11)),
        "debian-3.11-dbg": Interpreter("debian-3.11-dbg", ["/usr/bin/python3.11d"], (3, 11)),
    }
    for minor in (8, 9, 10, 11, 12, 13):
        path = _pyenv(minor)
        out[f"pyenv-3.{minor}"] = Interpreter(f"pyenv-3.{minor}", [path] if path else None, (3, minor))
    for suite, minor in (("bullseye", 9), ("trixie", 13), ("sid", 14), ("sid", 15)):
        d = CHROOTS / suite
        out[f"chroot-3.{minor}"] = Interpreter(f"chroot-3.{minor}", ["chroot", str(d), f"python3.{minor}"], (3, minor), chroot=str(d))
        out[f"chroot-3.{minor}-dbg"] = Interpreter(f"chroot-3.{minor}-dbg", ["chroot", str(d), f"python3.{minor}d"], (3, minor), chroot=str(d))
    return out


def require_interpreter(name):
    it = interpreters()[name]
    if it.argv is None and name.startswith("pyenv-"):
        minor = name.split("-")[1]
        why = (f"no reachable Debian suite carries python{minor}" if minor in ("3.8", "3.10", "3.12") else
               "Debian's builds of it are stripped and have USDT probes; this case is for a shared, "
               "unstripped libpython timed by uprobes")
        cannot_run(f"{name}: no {PYENV}/{minor}.*/bin/python{minor}, and this project cannot install "
                   f"it ({why}; python.org and PyPI are out of reach here): build it with "
                   f"`pyenv install {minor}`")
    if it.argv is None:
        cannot_run(f"{name}: interpreter not installed")
    if it.chroot:
        if not (Path(it.chroot) / ".ebpfprof-ready").exists():
            cannot_run(f"{name}: chroot {it.chroot} not built (scripts/make-chroots.sh)")
        if not (Path(it.chroot) / "usr" / "bin" / it.argv[-1]).exists():
            cannot_run(f"{name}: {it.argv[-1]} not in {it.chroot}")
    elif not os.path.exists(it.argv[0]):
        cannot_run(f"{name}: {it.argv[0]} not installed")
    return it


class Workload:
    """A workload process; its pid comes from the pid=N line it prints first."""

    def __init__(self, interp, script, *args, seconds=6, truth=None):
        self.truth_path = truth
        argv = interp.argv + [interp.workload_path(script), "--seconds", str(seconds), *args]
        if truth:
            argv += ["--truth", truth if not interp.chroot else self._chroot_truth(interp, truth)]
        self.interp = interp
        self.proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()
        if not line.startswith("pid="):
            self.proc.kill()
            raise RuntimeError(f"workload did not start: {line!r} {self.proc.stderr.read()}")
        self.pid = int(line.strip().split("=")[1])

    _chroot_truths = itertools.count()

    def _chroot_truth(self, interp, truth):
        # the chroot's /tmp is shared with other tests and runs: a name per
        # workload, so a test waiting for its truth never reads an older one
        name = f"{os.getpid()}-{next(self._chroot_truths)}-{Path(truth).name}"
        self.truth_path = str(Path(interp.chroot) / "tmp" / name)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.truth_path)
        return "/tmp/" + name

    def wait(self, timeout=60):
        self.proc.wait(timeout=timeout)
        return self.proc.returncode

    def truth(self):
        self.wait()
        with open(self.truth_path) as f:
            return json.load(f)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def workloads():
    started = []

    def start(interp, script, *args, **kw):
        w = Workload(interp, script, *args, **kw)
        started.append(w)
        return w

    yield start
    for w in started:
        w.stop()


def run_ebpfprof(*args, timeout=90, preexec=None, check=False):
    res = subprocess.run([str(EBPFPROF), *map(str, args)], capture_output=True, text=True,
                         timeout=timeout)
    if check and res.returncode != 0:
        raise AssertionError(f"ebpfprof failed ({res.returncode}): {res.stderr}")
    return res


# Every speedscope file the tests write is kept here; test_zz_speedscope_app.py,
# which runs last, imports them all in speedscope's app in one browser session.
COLLECTED = ROOT / "build" / "test-profiles"
_collected = iter(range(100000))
_collected_digests = set()


def check_speedscope_schema(path, test_name):
    """The profile must follow speedscope's published schema (checked here, at
    once) and import in its app (checked for every file at the end)."""
    import jsonschema
    if not SCHEMA.exists():
        cannot_run("speedscope schema not installed (scripts/deps-speedscope.sh)")
    with open(SCHEMA) as f:
        schema = json.load(f)
    with open(path) as f:
        jsonschema.validate(json.load(f), schema)
    # each distinct file once: a profile parsed again (by Profile() in the
    # same or another test) would only be imported again
    import hashlib
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).digest()
    if digest in _collected_digests:
        return
    _collected_digests.add(digest)
    COLLECTED.mkdir(parents=True, exist_ok=True)
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in test_name)[:80]
    shutil.copy(path, COLLECTED / f"{safe}-{next(_collected)}.json")


class Profile:
    """A parsed speedscope file, per thread: stacks of frame dicts, root first."""

    def __init__(self, path, check=True):
        with open(path) as f:
            self.doc = json.load(f)
        self.frames = self.doc["shared"]["frames"]
        if check:
            check_speedscope_schema(path, os.environ.get("PYTEST_CURRENT_TEST", "profile").split(" ")[0])

    def threads(self):
        return [p["name"] for p in self.doc["profiles"]]

    def profile(self, name_part):
        hits = [p for p in self.doc["profiles"] if name_part in p["name"]]
        assert hits, f"no profile named like {name_part!r} in {self.threads()}"
        return hits[0]

    def stacks(self, profile=None):
        """(names root first, weight) of every non-empty sample."""
        for p in [profile] if profile else self.doc["profiles"]:
            for s, w in zip(p["samples"], p["weights"]):
                if s:
                    yield [self.frames[i]["name"] for i in s], w

    def weight_with(self, fn, profile=None):
        return sum(w for names, w in self.stacks(profile) if fn in names)

    def weight_with_leaf(self, leaf, profile=None):
        return sum(w for names, w in self.stacks(profile) if names[-1] == leaf)

    UNIT_SECONDS = {"nanoseconds": 1e-9, "microseconds": 1e-6, "milliseconds": 1e-3, "seconds": 1.0}

    def seconds(self, profile=None, fn=None, leaf=None):
        """The time of a thread's samples (every thread's if no profile),
        of those with fn on their stack, or leaf at its top, if given, in
        seconds: where a weight meets a time, its unit is never guessed."""
        def kept(s):
            return s and (fn is None or fn in (self.frames[i]["name"] for i in s)) and \
                (leaf is None or self.frames[s[-1]]["name"] == leaf)
        total = 0.0
        for p in [profile] if profile else self.doc["profiles"]:
            unit = self.UNIT_SECONDS[p["unit"]]
            total += unit * sum(w for s, w in zip(p["samples"], p["weights"]) if kept(s))
        return total


def read_gc_log(path):
    """(session header, collections, waits) of a --gc-log file."""
    with open(path) as f:
        lines = [json.loads(l) for l in f]
    head = [l for l in lines if l["type"] == "session"]
    assert len(head) == 1, "the log starts with one session line"
    return head[0], [l for l in lines if l["type"] == "gc"], [l for l in lines if l["type"] == "wait"]


@pytest.fixture
def out(tmp_path):
    """A fresh output path for each profile a test writes."""
    counter = iter(range(1000))

    def make(suffix=".speedscope.json"):
        return tmp_path / f"profile{next(counter)}{suffix}"

    return make


@pytest.fixture(autouse=True)
def _bpf_tests_need_root(request):
    if request.node.get_closest_marker("nobpf") is None:
        need_bpf()


def pytest_configure(config):
    config.addinivalue_line("markers", "nobpf: runs without root or BPF")


def pytest_sessionstart(session):
    shutil.rmtree(COLLECTED, ignore_errors=True)


def go_file(interp, tmp_path, name="go"):
    """A --go file for a workload: (the path the harness writes, the path the
    workload waits on). In a chroot the workload sees it under its own root,
    in the chroot's /tmp, which other test runs share: named per run."""
    if not interp.chroot:
        return tmp_path / name, str(tmp_path / name)
    inside = f"/tmp/{name}-{os.getpid()}-{tmp_path.name}"
    host = Path(interp.chroot) / inside.lstrip("/")
    host.unlink(missing_ok=True)
    return host, inside


def wait_for_go(path):
    """Tells a workload started with --go FILE to begin."""
    Path(path).write_text("go")


class Attached:
    """ebpfprof -v --pid PID ARGS on a running process, returned once -v
    says the pid is being recorded (its probes are in place), the way a
    user's `sudo ebpfprof --pid` starts; no fixed wait. finish() returns
    (exit status, all of its stderr)."""

    def __init__(self, pid, *args, env=None):
        self.proc = subprocess.Popen([str(EBPFPROF), "-v", "--pid", str(pid), *map(str, args)],
                                     stderr=subprocess.PIPE, text=True, env=env)
        self.head, line = "", ""
        while not line.startswith(f"ebpfprof: recording {pid} from "):
            line = self.proc.stderr.readline()
            if not line:
                self.proc.wait()
                raise AssertionError(f"ebpfprof exited {self.proc.returncode} before recording {pid}:\n{self.head}")
            self.head += line

    def finish(self, timeout=90):
        try:
            _, err = self.proc.communicate(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode, self.head + err


class SchedStat:
    """Each task's own kernel account, /proc/PID/task/TID/schedstat (ns on
    the CPU, ns runnable but waiting for one), read every 20 ms with
    time.monotonic(), so that it can be cut to a recording's window."""

    def __init__(self, pid):
        import threading
        self.pid, self.reads, self.stop = pid, [], threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop.is_set():
            now, row = time.monotonic(), {}
            for tid in os.listdir(f"/proc/{self.pid}/task"):
                try:
                    on, runq, _ = open(f"/proc/{self.pid}/task/{tid}/schedstat").read().split()
                    row[int(tid)] = (int(on) / 1e9, int(runq) / 1e9)
                except (OSError, ValueError):
                    pass
            self.reads.append((now, row))
            time.sleep(0.02)

    def finish(self):
        self.stop.set()
        self.thread.join()

    def at(self, tid, t):
        """(on-CPU s, runnable-waiting s) of tid at time t, interpolated."""
        before = [(at, row[tid]) for at, row in self.reads if at <= t and tid in row]
        after = [(at, row[tid]) for at, row in self.reads if at >= t and tid in row]
        assert before and after, f"no schedstat read of {tid} around {t}"
        (t0, a), (t1, b) = before[-1], after[0]
        f = (t - t0) / (t1 - t0) if t1 > t0 else 0
        return tuple(x + f * (y - x) for x, y in zip(a, b))

    def gap(self, tid, t):
        """Seconds between the two reads of tid around t: how far at most
        at() may be off there (a thread runs at most a second a second)."""
        before = [at for at, row in self.reads if at <= t and tid in row]
        after = [at for at, row in self.reads if at >= t and tid in row]
        return after[0] - before[-1]


def thread_truth(stat, head, tid):
    """tid's on-CPU and runnable-waiting seconds over the recording."""
    start, end = head["monotonic_start_s"], head["monotonic_start_s"] + head["duration_s"]
    a, b = stat.at(tid, start), stat.at(tid, end)
    return b[0] - a[0], b[1] - a[1]


def truth_slack(stat, head, tid):
    """How far thread_truth's on-CPU may be from the recording's: 0.05 s (a
    read apart at each end, reads 20 ms apart), or the reads' real gaps at
    the window's ends when this loaded machine held the reader longer."""
    start, end = head["monotonic_start_s"], head["monotonic_start_s"] + head["duration_s"]
    return max(0.05, stat.gap(tid, start) + stat.gap(tid, end))


def check_exact_states(t, stat, head, blocked):
    """A thread of the profile's table (t), alive through the recording, in
    the states `blocked` whenever it is neither on a CPU nor runnable: its
    exact totals against the kernel's own account (schedstat): on-CPU within
    0.05 s (a read apart at each end), the blocked states the rest of the
    recording's window (not observed_s: that is the states' own sum), its
    preempted time within its runnable time, and all of them the window. A wake-up's latency counts as
    the state it ends here and as runnable there."""
    on_cpu, runnable = thread_truth(stat, head, t["tid"])
    states, window = t["states_s"], head["duration_s"]
    # every moment of the window in one state: nothing lost, nothing twice
    assert abs(sum(states.values()) - window) <= 0.05, (t["name"], states, window)
    slack = truth_slack(stat, head, t["tid"])
    assert abs(states["on-cpu"] + states["gc"] - on_cpu) <= slack, (t["name"], states, on_cpu, slack)
    assert states["preempted"] <= runnable + 0.05, (t["name"], states, runnable)
    rest, got = window - on_cpu, sum(states[b] for b in blocked)
    assert rest - runnable - 0.05 <= got <= rest + 0.05, (t["name"], blocked, states, on_cpu, runnable)


def attach_label_requests(interp, path, *options, seconds=8, key="str", extra=()):
    """ebpfprof --pid on a running label_requests.py (the --label tests),
    which serves its requests once the recording has begun (-v says when:
    the line "recording PID", kept out of the stderr returned) and then
    exits, which ends the recording. Returns (ebpfprof's stderr, the
    handler's truth)."""
    go, go_inside = go_file(interp, Path(path).parent, f"go-{Path(path).stem}")
    w = Workload(interp, "label_requests.py", "--key", key, "--go", go_inside, *extra,
                 seconds=seconds, truth=str(Path(path).parent / f"{Path(path).stem}.truth.json"))
    try:
        rec = Attached(w.pid, "-d", seconds + 60, "-o", path, *options)
        wait_for_go(go)
        status, err = rec.finish(timeout=seconds + 90)
        assert status == 0, err
        return err[len(rec.head):], w.truth()
    finally:
        w.stop()
