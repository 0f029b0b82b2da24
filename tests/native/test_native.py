"""--native: C frames woven into the Python stacks, unwound from .eh_frame.

The C extension (knap.c) is built here from its source without frame pointers
and without debug information: its functions are static, known only from
.symtab. knap_solve_outer spends a known share of its time in each of two inner
functions (1:3), so the profile must put both under the outer function, under
the Python caller, in nearly every sample of the caller, with the split right.
zlib's deflate is Debian's libz, stripped to .dynsym: its exported functions
are named, its static ones by where their unwind information starts. In a
chroot, files are named as the target sees them (not under the chroot's path)."""
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (Profile, SchedStat, cannot_run, read_gc_log, require_interpreter, run_ebpfprof,
                      start_ready, thread_truth)

HERE = Path(__file__).resolve().parent
FILL_SHARE = 0.25   # knap.c: FILL_UNITS / (FILL_UNITS + SCAN_UNITS)
# "+fallbacks": the older kernels' paths forced (registers from the perf
# context, not bpf_task_pt_regs; the walk in global-function calls)
EXT_INTERPRETERS = ["debian-3.11", "pyenv-3.11", "pyenv-3.9", "pyenv-3.12", "pyenv-3.13",
                    "debian-3.11+fallbacks"]
# chroot-3.14 and 3.15: Debian's PGO builds, stripped, run the eval loop in a
# ".cold" part without a symbol (native_dwfl.c: find_eval_cold)
# "+xperf": run with -X perf, whose trampolines (code in no file) call each
# eval call
ZLIB_INTERPRETERS = ["debian-3.11", "pyenv-3.11", "chroot-3.13", "chroot-3.14", "chroot-3.15",
                     "chroot-3.14+xperf"]
# what runs below the outermost eval loop, and the trampolines: cut when the
# weave found the eval loop's frames
PLUMBING = ("Py_RunMain", "Py_BytesMain", "__libc_start_main", "[unknown]")


def include_dir(interp):
    """Where the interpreter's Python.h is."""
    res = subprocess.run(interp.argv + ["-c", "import sysconfig; print(sysconfig.get_paths()['include'])"],
                         capture_output=True, text=True, check=True)
    inc = res.stdout.strip()
    if not (Path(inc) / "Python.h").exists():
        cannot_run(f"{interp.name}: no Python.h in {inc}")
    return inc


def build_extension(interp, dest):
    """knap.c without frame pointers or debug information; its functions
    must be static (.symtab only), none exported but PyInit_knap."""
    suffix = subprocess.run(interp.argv + ["-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                            capture_output=True, text=True, check=True).stdout.strip()
    so = dest / f"knap{suffix}"
    subprocess.run(["gcc", "-O2", "-fomit-frame-pointer", "-g0", "-fPIC", "-shared",
                    f"-I{include_dir(interp)}", str(HERE / "knap.c"), "-o", str(so)], check=True)
    dynsyms = subprocess.run(["nm", "-D", "--defined-only", str(so)], capture_output=True,
                             text=True, check=True).stdout
    assert "knap_" not in dynsyms and "solve" not in dynsyms, dynsyms
    local = subprocess.run(["nm", str(so)], capture_output=True, text=True, check=True).stdout
    for fn in ("knap_solve_outer", "knap_inner_fill", "knap_inner_scan", "solve"):
        assert re.search(rf" t {fn}$", local, re.M), f"{fn} is not a local symbol: {local}"
    return so




def record_native(argv, path, env=None):
    """Starts argv, records it with --native for 4 s into path, ends it."""
    proc = start_ready(argv, env)
    try:
        # 1000 Hz for 5 s: on a loaded machine the target may get a fifth of
        # a CPU, still ~1000 samples, so the split's standard error stays
        # ~1.4 points (at 250 Hz, 200 samples made it 3)
        res = run_ebpfprof("-n", "-r", 1000, "-d", 5, "-p", proc.pid, "-o", path)
    finally:
        proc.kill()
        proc.wait()
    assert res.returncode == 0, res.stderr
    return Profile(path)


def caller_stacks(prof, caller):
    return [(names, w) for names, w in prof.stacks() if caller in names]


@pytest.mark.parametrize("name", EXT_INTERPRETERS)
def test_extension_frames_under_their_python_caller(name, tmp_path, monkeypatch):
    name, _, fallbacks = name.partition("+")
    if fallbacks:
        monkeypatch.setenv("EBPFPROF_FORCE_MISSING", fallbacks)
    interp = require_interpreter(name)
    build_extension(interp, tmp_path)
    prof = record_native(interp.argv + [str(HERE / "app.py")], tmp_path / "native.speedscope.json",
                         env={"KNAP_DIR": str(tmp_path)})
    stacks = caller_stacks(prof, "plan_route")
    total = sum(w for _, w in stacks)
    assert len(stacks) >= 300, f"{len(stacks)} samples of plan_route: too few to judge a split"
    woven = {"knap_inner_fill": 0, "knap_inner_scan": 0}
    for names, w in stacks:
        inner = names[-1]
        if inner not in woven:
            continue
        # <module> -> main -> plan_route -> solve -> knap_solve_outer -> inner
        at = names.index("plan_route")
        if names[at + 1:] == ["solve", "knap_solve_outer", inner] and names[:at] == ["<module>", "main"]:
            woven[inner] += w
    both = woven["knap_inner_fill"] + woven["knap_inner_scan"]
    assert both >= 0.9 * total, f"{both / total:.0%} of plan_route's samples woven: {stacks[:5]}"
    share = woven["knap_inner_fill"] / both
    assert abs(share - FILL_SHARE) <= 0.05, f"knap_inner_fill has {share:.0%} of the outer's time, not 25%"


@pytest.mark.parametrize("name", ZLIB_INTERPRETERS)
def test_zlib_deflate_under_compress(name, tmp_path):
    name, _, xperf = name.partition("+")
    interp = require_interpreter(name)
    script = HERE / "zlib_app.py"
    flags = ["-X", "perf"] if xperf else []
    if interp.chroot:
        inside = Path(interp.chroot) / "tmp" / "zlib_app.py"
        inside.write_text(script.read_text())
        argv = interp.argv + flags + ["/tmp/zlib_app.py"]
    else:
        argv = interp.argv + flags + [str(script)]
    prof = record_native(argv, tmp_path / "zlib.speedscope.json")
    frames = prof.frames
    stacks = []
    for p in prof.doc["profiles"]:
        for s, w in zip(p["samples"], p["weights"]):
            names = [frames[i]["name"] for i in s]
            if "squeeze" in names:
                stacks.append(([frames[i] for i in s], names, w))
    total = sum(w for _, _, w in stacks)
    assert total, "no sample of squeeze"
    under = 0
    for fr, names, w in stacks:
        assert not set(PLUMBING) & set(names), f"the eval loop not woven: {names}"
        at = names.index("squeeze")
        # zlib_compress (an extension module, or hidden in a static
        # interpreter), then libz's deflate
        deflate = [f for f in fr[at + 1:] if f["name"] == "deflate" and
                   re.search(r"^/usr/lib/x86_64-linux-gnu/libz\.so\.1[.0-9]*$", f.get("file", ""))]
        if deflate:
            under += w
    assert under >= 0.8 * total, f"deflate under squeeze in {under / total:.0%} of its samples"


@pytest.mark.parametrize("name", ["debian-3.11", "pyenv-3.12"])
def test_dump_native_shows_each_threads_native_frames(name, tmp_path):
    interp = require_interpreter(name)
    build_extension(interp, tmp_path)
    proc = start_ready(interp.argv + [str(HERE / "app.py")],
                 env={"KNAP_DIR": str(tmp_path), "KNAP_SLEEPER": "1"})
    try:
        res = run_ebpfprof("dump", "--native", "--json", "-p", proc.pid)
        plain = run_ebpfprof("dump", "-p", proc.pid)
        alive = proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
    assert res.returncode == 0, res.stderr
    assert alive, "the target died of being stopped"
    threads = {t["name"]: t for t in json.loads(res.stdout)["threads"]}
    main = [f["function"] for f in threads[next(n for n in threads if n != "sleeper")]["stack"]]
    assert main[0] in ("knap_inner_fill", "knap_inner_scan"), main
    assert main[1:] == ["knap_solve_outer", "solve", "plan_route", "main", "<module>"], main
    nap = threads["sleeper"]["stack"]
    # innermost: libc's sleep, under the Python function that called time.sleep
    assert nap[0]["file"].split("/")[-1].startswith("libc.so"), nap
    assert [f["function"] for f in nap].index("nap") > 0, nap
    assert "knap_solve_outer" not in plain.stdout, "native frames without --native"


@pytest.mark.parametrize("swap", ["deleted", "replaced", "fifo"])
def test_extension_swapped_after_load_is_read_as_mapped(swap, tmp_path):
    """Hostile: once the extension is loaded, its path is deleted, or replaced
    by another ELF (libz, whose symbols would name the code wrongly), or by a
    FIFO (opening it would block): the frames still come from the very file
    mapped (through /proc/PID/map_files), and nothing hangs."""
    interp = require_interpreter("debian-3.11")
    so = build_extension(interp, tmp_path)
    proc = start_ready(interp.argv + [str(HERE / "app.py")], env={"KNAP_DIR": str(tmp_path)})
    try:
        so.unlink()
        if swap == "replaced":
            so.write_bytes(Path("/usr/lib/x86_64-linux-gnu/libz.so.1").read_bytes())
        elif swap == "fifo":
            os.mkfifo(so)
        out = tmp_path / "swapped.speedscope.json"
        stat = SchedStat(proc.pid)
        try:
            res = run_ebpfprof("-n", "-r", 250, "-d", 3, "-p", proc.pid, "-o", out,
                               "--gc-log", tmp_path / "window.gc.jsonl", timeout=60)
        finally:
            stat.finish()
    finally:
        proc.kill()
        proc.wait()
    assert res.returncode == 0, res.stderr
    prof = Profile(out)
    inner = sum(w for names, w in prof.stacks() if names[-2:] in
                (["knap_solve_outer", "knap_inner_fill"], ["knap_solve_outer", "knap_inner_scan"]))
    total = sum(w for names, w in prof.stacks() if "plan_route" in names)
    # the main thread calls plan_route and little else: its samples there
    # weigh its on-CPU time (the kernel's, schedstat) but for the loop
    # around it and the first sample's 6 periods at most
    truth, _ = thread_truth(stat, read_gc_log(tmp_path / "window.gc.jsonl")[0], proc.pid)
    assert truth > 1 and truth * 0.9 - 6 / 250 <= total / 1e9 <= truth + 0.05, (total / 1e9, truth)
    assert inner >= 0.9 * total, f"{inner / total:.0%} of plan_route's samples named from the mapped file"


def test_diff_compares_native_frames(tmp_path):
    """Two --native recordings, the second also spending time in a C function of
    its own (knap_extra_pass): diff names it among those that grew, with its file."""
    interp = require_interpreter("debian-3.11")
    so = build_extension(interp, tmp_path)
    argv = interp.argv + [str(HERE / "app.py")]
    base = tmp_path / "base.speedscope.json"
    new = tmp_path / "new.speedscope.json"
    record_native(argv, base, env={"KNAP_DIR": str(tmp_path)})
    record_native(argv, new, env={"KNAP_DIR": str(tmp_path), "KNAP_EXTRA": "1"})
    res = run_ebpfprof("diff", "--json", base, new)
    assert res.returncode in (0, 1), res.stderr
    grew = [f for f in json.loads(res.stdout)["functions_self"] if f["verdict"] == "grew"]
    assert [f["file"] for f in grew if f["function"] == "knap_extra_pass"] == [str(so)], grew
