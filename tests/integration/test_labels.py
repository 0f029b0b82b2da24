"""Issue 30: --label NAME=FUNCTION:ARGUMENT. A request handler,
handle(request_id), serves three kinds of request of known CPU cost
(tests/workloads/label_requests.py, alpha 1 : beta 2 : gamma 3); the
kernel reads request_id with each stack, and the recording's
ebpfprof.labels gives each value's time per state. Each kind's share of
the labelled on-CPU time must be within 5 points of the program's own
thread_time() per kind. ebpfprof attaches to the running handler
(--pid, as users do) and the handler serves its requests only once the
recording has begun (--go), so the truth covers the recorded time."""
import json
import os
import shlex
from pathlib import Path

import pytest

import conftest
from conftest import Profile, attach_label_requests, require_interpreter, run_ebpfprof

KINDS = ("alpha", "beta", "gamma")
TOLERANCE_POINTS = 5


def record(interp, out, *label_args, key="str", seconds=8, rate=400, extra=()):
    path = out()
    err, truth = attach_label_requests(interp, path, "-r", rate, *label_args, seconds=seconds, key=key, extra=extra)
    return Profile(path), truth, err


def values(prof, name="req"):
    return prof.doc["ebpfprof"]["labels"][name]


def on_cpu(v):
    return v["states_s"]["on-cpu"] + v["states_s"]["gc"]


def check_shares(labels, truth, shown):
    """Each kind's on-CPU share among the labelled values against its
    share of the program's own CPU time; shown(kind) is its value's text."""
    total = sum(on_cpu(v) for v in labels.values())
    true_total = sum(truth["cpu_s"][k] for k in KINDS)
    assert total > 0, labels
    for kind in KINDS:
        assert shown(kind) in labels, (shown(kind), list(labels))
        share = 100 * on_cpu(labels[shown(kind)]) / total
        true_share = 100 * truth["cpu_s"][kind] / true_total
        assert abs(share - true_share) <= TOLERANCE_POINTS, (kind, share, true_share, labels)


def test_str_key_shares_match_thread_time(out):
    interp = require_interpreter("debian-3.11")
    prof, truth, err = record(interp, out, "--label", "req=handle:0", seconds=10)
    labels = values(prof)
    assert set(labels) == set(KINDS), labels
    check_shares(labels, truth, lambda k: k)
    for kind in KINDS:
        assert labels[kind]["samples"] > 0
    # the summary's table, one row per value
    assert "ebpfprof: label req: 3 values" in err, err
    for kind in KINDS:
        assert f"\n  {kind} " in err, err


def test_tuple_key_is_shown_as_python_does(out):
    interp = require_interpreter("debian-3.11")
    prof, truth, _ = record(interp, out, "--label", "req=handle:0", key="tuple", seconds=8)
    labels = values(prof)
    check_shares(labels, truth, lambda k: f"('{k}-6e1f0a3b', 7)")
    assert len(labels) == 3, labels


def test_value_neither_str_nor_int_is_shown_by_type(out):
    interp = require_interpreter("debian-3.11")
    prof, truth, _ = record(interp, out, "--label", "req=handle:0", key="float", seconds=3)
    labels = values(prof)
    assert list(labels) == ["<float>"], labels
    assert on_cpu(labels["<float>"]) > 0.5 * sum(truth["cpu_s"].values())


def test_second_argument_int(out):
    """handle(request_id, units): units is an int, 1, 2 or 3."""
    interp = require_interpreter("debian-3.11")
    prof, truth, _ = record(interp, out, "--label", "units=handle:1", seconds=8)
    labels = values(prof, "units")
    check_shares(labels, truth, lambda k: str(KINDS.index(k) + 1))


def test_sleeping_value_shows_its_sleep(out):
    """A fourth kind, nap, sleeps 20 ms in handle(): its time is sleep."""
    interp = require_interpreter("debian-3.11")
    prof, truth, _ = record(interp, out, "--label", "req=handle:0", seconds=6,
                            extra=("--sleeper",))
    nap = values(prof)["nap"]["states_s"]
    assert nap["sleep"] >= 0.9 * truth["wall_s"]["nap"] - truth["cpu_s"]["nap"], (nap, truth)
    assert nap["on-cpu"] < 0.1 * nap["sleep"], nap


def test_unknown_function_gives_no_label_and_no_error(out):
    interp = require_interpreter("debian-3.11")
    prof, _, err = record(interp, out, "--label", "req=no_such_function:0", seconds=2)
    assert values(prof) == {}
    assert "error" not in err and "warning" not in err, err
    assert "ebpfprof: label req: 0 values" in err, err


@pytest.mark.parametrize("name", ["pyenv-3.8", "pyenv-3.9", "pyenv-3.10", "pyenv-3.12",
                                  "pyenv-3.13", "chroot-3.9", "chroot-3.13", "chroot-3.14",
                                  "chroot-3.15"])
def test_other_versions(out, name):
    interp = require_interpreter(name)
    prof, truth, err = record(interp, out, "--label", "req=handle:0", key="tuple", seconds=8)
    # (no value at all, in CI about once in three runs: the recorder was held
    # in a walk of a blocked thread's frames, a chain that led back to itself,
    # until the target exited; what the recording saw, in a string, which
    # pytest does not shorten)
    assert values(prof), "\n".join([err, "frames: " + ", ".join(
        f["name"] for f in prof.doc["shared"]["frames"][:60])])
    check_shares(values(prof), truth, lambda k: f"('{k}-6e1f0a3b', 7)")


@pytest.mark.nobpf
@pytest.mark.parametrize("spec,message", [
    ("req", "invalid --label req: NAME=FUNCTION:ARGUMENT expected"),
    ("req=handle", "invalid --label req=handle: NAME=FUNCTION:ARGUMENT expected"),
    ("=handle:0", "invalid --label =handle:0: NAME must have 1 to 31 characters"),
    ("r q=handle:0", "NAME may hold letters, digits and _-. only"),
    ("req=:0", "FUNCTION must have 1 to 127 characters"),
    ("req=handle:x", "ARGUMENT must be an argument index, 0 to 31"),
    ("req=handle:32", "ARGUMENT must be an argument index, 0 to 31"),
    ("req=handle:-1", "ARGUMENT must be an argument index, 0 to 31"),
])
def test_bad_label_is_one_clear_line(spec, message):
    res = run_ebpfprof("--label", spec, "--", "true")
    assert res.returncode != 0
    assert message in res.stderr.splitlines()[0], res.stderr


@pytest.mark.nobpf
def test_too_many_labels():
    args = []
    for i in range(5):
        args += ["--label", f"l{i}=f:0"]
    res = run_ebpfprof(*args, "--", "true")
    assert res.returncode != 0
    assert res.stderr.splitlines()[0] == "ebpfprof: too many --label: at most 4", res.stderr


def need_distributed(interp):
    """distributed importable by interp: the host's (bookworm's 2022.12) or
    the chroot's (sid's 2024.12, scripts/make-chroots.sh installs it)."""
    if not interp.chroot:
        try:
            import distributed  # noqa: F401
        except ImportError:
            conftest.cannot_run("python3-distributed is not installed (scripts/deps.sh)")
        return
    if not (Path(interp.chroot) / "usr/lib/python3/dist-packages/distributed").is_dir():
        conftest.cannot_run(f"{interp}: python3-distributed is not installed in {interp.chroot} "
                            "(scripts/make-chroots.sh sid)")


def cluster_argv(interp):
    """How to run a LocalCluster with interp. In a chroot it needs /proc
    (psutil: distributed's memory monitor) and a /dev/shm (multiprocessing's
    semaphores), mounted in a mount namespace of its own: the shared chroot
    is left as it is, and every process of the cluster keeps its pid."""
    if not interp.chroot:
        return list(interp.argv)
    d = shlex.quote(interp.chroot)
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            f"mount -t proc proc {d}/proc && mount -t tmpfs tmpfs {d}/dev/shm && "
            f'exec chroot {d} {shlex.quote(interp.argv[-1])} "$@"', "sh"]


def inside_and_host(interp, tmp_path, name):
    """(the path the workload writes, as it sees it; the same file on the host)."""
    if not interp.chroot:
        return str(tmp_path / name), tmp_path / name
    inside = f"/tmp/{os.getpid()}-{tmp_path.name}-{name}"
    host = Path(interp.chroot) / inside.lstrip("/")
    host.unlink(missing_ok=True)
    return inside, host


@pytest.mark.parametrize("name", ["debian-3.11", "chroot-3.14"])
def test_dask_local_cluster_prefixes(tmp_path, name):
    """--dask on each worker of a real LocalCluster (2 worker processes, 2
    threads each) running three prefixes for 10 s: each prefix's on-CPU
    share within 5 points of the tasks' own thread_time() shares, the
    collections under a task on the garbage prefix, the naps' time as
    sleep. debian-3.11: bookworm's distributed 2022.12 (the key is
    apply_function's argument 4); chroot-3.14: sid's python3 with its
    distributed 2024.12 (_run_task's argument 3)."""
    import subprocess
    import time

    interp = require_interpreter(name)
    need_distributed(interp)
    pids_inside, pids_file = inside_and_host(interp, tmp_path, "pids.json")
    truth_inside, truth_file = inside_and_host(interp, tmp_path, "truth.json")
    go_host, go_inside = conftest.go_file(interp, tmp_path)
    seconds = 10
    # the chroot's own scratch space, not the root of the chroot
    env = dict(os.environ, DASK_TEMPORARY_DIRECTORY="/tmp")
    cluster = subprocess.Popen([*cluster_argv(interp), interp.workload_path("dask_prefixes.py"),
                                "--seconds", str(seconds), "--pids", pids_inside,
                                "--go", go_inside, "--truth", truth_inside],
                               stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    recorders = []
    try:
        deadline = time.monotonic() + 120
        while not pids_file.exists():
            assert cluster.poll() is None and time.monotonic() < deadline, cluster.stderr.read()
            time.sleep(0.2)
        workers = json.loads(pids_file.read_text())
        assert len(workers) == 2
        for pid in workers:
            path = tmp_path / f"w{pid}.speedscope.json"
            recorders.append((pid, path, subprocess.Popen(
                [str(conftest.EBPFPROF), "--dask", "--pid", str(pid), "-d", str(seconds + 8),
                 "-o", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
        time.sleep(3)   # attached
        conftest.wait_for_go(go_host)
        assert cluster.wait(timeout=seconds + 120) == 0, cluster.stderr.read()
        truth = json.loads(truth_file.read_text())
        prefixes, gc_labelled = {}, 0.0
        for pid, path, rec in recorders:
            _, err = rec.communicate(timeout=60)
            assert rec.returncode == 0, err
            assert "ebpfprof: label dask_prefix: 3 values" in err, err
            labels = Profile(path).doc["ebpfprof"]["labels"]
            assert len(labels["dask_key"]) > 100, "a value per task key"
            for prefix, v in labels["dask_prefix"].items():
                acc = prefixes.setdefault(prefix, {"cpu": 0.0, "sleep": 0.0, "gc_s": 0.0})
                acc["cpu"] += on_cpu(v)
                acc["sleep"] += v["states_s"]["sleep"] + v["states_s"]["io"]
                acc["gc_s"] += v["gc_s"]
                gc_labelled += v["gc_s"]
    finally:
        for _, _, rec in recorders:
            if rec.poll() is None:
                rec.kill()
        if cluster.poll() is None:
            cluster.kill()
    assert set(prefixes) == {"crunch", "garbage", "nap"}, prefixes
    total = sum(p["cpu"] for p in prefixes.values())
    true_total = sum(truth["cpu_s"].values())
    for prefix in prefixes:
        share = 100 * prefixes[prefix]["cpu"] / total
        true_share = 100 * truth["cpu_s"][prefix] / true_total
        print(f"{name}: dask prefix {prefix}: on-CPU share {share:.1f}%, tasks' thread_time "
              f"{true_share:.1f}%, GC {prefixes[prefix]['gc_s']:.3f} s of {gc_labelled:.3f} s")
        assert abs(share - true_share) <= TOLERANCE_POINTS, (prefix, share, true_share, prefixes)
    assert prefixes["garbage"]["gc_s"] >= 0.9 * gc_labelled, prefixes
    # the naps slept (wall less CPU); a nap's other time is waits for the GIL
    nap_off = truth["wall_s"]["nap"] - truth["cpu_s"]["nap"]
    assert prefixes["nap"]["sleep"] >= 0.8 * nap_off, (prefixes["nap"], truth)


def test_pprof_samples_carry_the_label(out, tmp_path):
    """Each pprof sample has the label's value as a tag: go tool pprof
    (Debian's golang-go) lists it with the kinds' shares."""
    import os
    import shutil
    import subprocess

    interp = require_interpreter("debian-3.11")
    if not shutil.which("go"):
        conftest.cannot_run("go is not installed (scripts/deps.sh installs golang-go)")
    path = out(".pb.gz")
    _, truth = attach_label_requests(interp, path, "-r", 400, "-f", "pprof", "--label", "req=handle:0", seconds=8)
    env = dict(os.environ, HOME=str(tmp_path), GOCACHE=str(tmp_path / "gocache"))
    tags = subprocess.run(["go", "tool", "pprof", "-tags", str(path)], capture_output=True,
                          text=True, timeout=120, env=env)
    assert tags.returncode == 0, tags.stderr
    section = tags.stdout.split(" req: ")[1].split("\n\n")[0]
    shares = {l.split()[-1]: float(l.split("(")[1].split("%")[0])
              for l in section.splitlines()[1:] if "%" in l}
    cpu = truth["cpu_s"]
    for kind in KINDS:
        true_share = 100 * cpu[kind] / sum(cpu.values())
        assert abs(shares[kind] - true_share) <= TOLERANCE_POINTS, (kind, shares, cpu)


def test_group_by_writes_a_profile_per_value(out):
    """--group-by req: the speedscope file has one profile per value, each
    with its kind's share of the samples, and opens in speedscope."""
    interp = require_interpreter("debian-3.11")
    prof, truth, _ = record(interp, out, "--label", "req=handle:0", "--group-by", "req",
                            seconds=8)
    names = [p["name"] for p in prof.doc["profiles"]]
    assert sorted(names) == [f"req={k}" for k in KINDS], names
    weights = {p["name"][4:]: sum(p["weights"]) for p in prof.doc["profiles"]}
    assert all(sum(1 for s in p["samples"] if s) > 0 for p in prof.doc["profiles"])
    total, true_total = sum(weights.values()), sum(truth["cpu_s"].values())
    for kind in KINDS:
        share = 100 * weights[kind] / total
        true_share = 100 * truth["cpu_s"][kind] / true_total
        assert abs(share - true_share) <= TOLERANCE_POINTS, (kind, weights, truth)
    # every stack of req=gamma runs handle()
    gamma = prof.profile("req=gamma")
    assert all(any(n == "handle" for n in names) for names, _ in prof.stacks(gamma))


@pytest.mark.nobpf
def test_group_by_needs_a_label_and_speedscope():
    res = run_ebpfprof("--group-by", "req", "--", "true")
    assert res.returncode != 0
    assert res.stderr.startswith("ebpfprof: --group-by req: no label of that name"), res.stderr
    res = run_ebpfprof("--label", "req=handle:0", "--group-by", "req", "-f", "pprof", "--", "true")
    assert res.returncode != 0
    assert res.stderr.startswith("ebpfprof: --group-by needs the speedscope format"), res.stderr


def assert_slices_nest(events):
    """Chrome's check of a thread's track: every two "X" slices of a thread
    are nested or apart, never straddling (viewers drop or misdraw those)."""
    eps = 1e-3  # the times are exact in ns; their sums in floats are not
    by_tid = {}
    for e in events:
        if e.get("ph") == "X":
            by_tid.setdefault((e["pid"], e["tid"]), []).append(e)
    for slices in by_tid.values():
        slices.sort(key=lambda e: (e["ts"], -e["dur"]))
        open_ends = []
        for e in slices:
            while open_ends and open_ends[-1] <= e["ts"] + eps:
                open_ends.pop()
            end = e["ts"] + e["dur"]
            assert not open_ends or end <= open_ends[-1] + eps, (e, open_ends[-1])
            open_ends.append(end)


def test_chrome_trace_has_a_slice_per_task(out):
    """-f chrome with --label: each run of a thread's samples under one value
    is a "task" slice on the thread's track named by the value, with the
    label in its args, around that run's calls; every slice still nests;
    each kind's share of the CPU kinds' task slices within 5 points of its
    thread_time() share."""
    interp = require_interpreter("debian-3.11")
    path = out(".trace.json")
    _, truth = attach_label_requests(interp, path, "-r", 400, "-f", "chrome", "--label", "req=handle:0", seconds=6)
    events = json.loads(Path(path).read_text())["traceEvents"]
    tasks = [e for e in events if e.get("cat") == "task"]
    assert {e["name"] for e in tasks} == set(KINDS), {e["name"] for e in tasks}
    assert all(e["ph"] == "X" and e["args"] == {"req": e["name"]} for e in tasks), tasks[:3]
    assert_slices_nest(events)
    # every call of handle() is inside a task slice of its thread, but
    # those before the kernel was told handle's code object (the first 50 ms)
    calls = [e for e in events if e.get("cat") == "python" and e["name"] == "handle"]
    first = min(t["ts"] for t in tasks)
    assert calls and first < 200e3, first
    for c in calls:
        assert c["ts"] < first or any(t["tid"] == c["tid"] and t["ts"] <= c["ts"] + 1e-3 and
                                      c["ts"] + c["dur"] <= t["ts"] + t["dur"] + 1e-3 for t in tasks), c
    spent = {k: sum(e["dur"] for e in tasks if e["name"] == k) for k in KINDS}
    for kind in KINDS:
        share = 100 * spent[kind] / sum(spent.values())
        true_share = 100 * truth["cpu_s"][kind] / sum(truth["cpu_s"][k] for k in KINDS)
        assert abs(share - true_share) <= TOLERANCE_POINTS, (kind, spent, truth["cpu_s"])
