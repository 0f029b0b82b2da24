"""The cost of --native's cage (issue 28): bench/native_cage.c built against
this tree's user/native (the helper process) and against a reference tree's
(default main at 9092b2a: libdwfl in ebpfprof's own process), run on the same
stopped thread of two targets (tests/native/zlib_app.py: a few C frames in
libz; tests/native/deep_app.py 40: ~200 C frames through a C extension):
helper start, the first unwind (modules loaded), the first name of each
module, one unwind round trip, one name. Medians of RUNS runs, alternating.

Run as root; prints the table and puts it into docs/benchmarks.md as the
section "The native cage (issue 28)"."""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from doc_section import put_doc_section  # noqa: E402
from native import KNAP, PY, build_knap, start  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
OUT = ROOT / "build" / "bench"
REF = os.environ.get("NATIVE_CAGE_REF", "9092b2a")
RUNS = 7
TARGETS = (("zlib (libz under zlib.compress)", "zlib_app.py", []),
           ("deep (40 levels through C)", "deep_app.py", ["40"]))
INC = ["-Ibuild", "-Iinclude", "-Iuser/base", "-Iuser/cpython", "-Iuser/native"]
LIBS = ["-ldw", "-lelf", "-llzma", "-lz"]


def build():
    """(cage binary, reference binary)"""
    OUT.mkdir(parents=True, exist_ok=True)
    subprocess.run(["make", "-s", "build/libebpfprof.a"], cwd=ROOT, check=True)
    cage = OUT / "native_cage"
    subprocess.run(["gcc", "-O2", "-DCAGE", *INC, str(ROOT / "bench" / "native_cage.c"),
                    "build/libebpfprof.a", *LIBS, "-o", str(cage)], cwd=ROOT, check=True)
    ref_tree = Path(tempfile.mkdtemp(prefix="native-cage-ref-", dir=OUT))
    archive = subprocess.run(["git", "archive", REF], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(ref_tree)], input=archive, check=True)
    subprocess.run(["make", "-s", "build/libebpfprof.a"], cwd=ref_tree, check=True,
                   stdout=subprocess.DEVNULL)
    ref = OUT / "native_cage_ref"
    subprocess.run(["gcc", "-O2", *INC, str(ROOT / "bench" / "native_cage.c"), "build/libebpfprof.a",
                    *LIBS, "-o", str(ref)], cwd=ref_tree, check=True)
    shutil.rmtree(ref_tree)
    return cage, ref


def measure(binary, pid):
    res = subprocess.run([str(binary), str(pid)], capture_output=True, text=True, check=True, timeout=120)
    return {k: float(v) for k, v in re.findall(r"^(\w+) ([\d.]+)$", res.stdout, re.M)}


def main():
    if os.geteuid() != 0:
        sys.exit("bench/native_cage.py: needs root (ptrace)")
    build_knap()
    cage, ref = build()
    rows = []
    for label, script, args in TARGETS:
        w = start(script, args)
        try:
            time.sleep(0.5)
            got = {"cage": [], "ref": []}
            for _ in range(RUNS):
                got["ref"].append(measure(ref, w.pid))
                got["cage"].append(measure(cage, w.pid))
        finally:
            w.kill()
            w.wait()
        med = {side: {k: statistics.median(r[k] for r in runs) for k in runs[0]}
               for side, runs in got.items()}
        rows.append((label, med))
        print(label, med, flush=True)
    write_doc(rows)


def per_module(m):
    return m["first_names"] / max(m["modules"], 1)


def write_doc(rows):
    kernel = os.uname().release
    load = os.getloadavg()[0]
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    L = ["## The native cage (issue 28)", "",
         f"`bench/native_cage.py` on {kernel}, {when}, {PY}: one thread of the target stopped once, "
         f"its 32 KiB of stack unwound and named by `bench/native_cage.c` built against this tree "
         f"(the helper process of `user/native/native_cage.h`) and against {REF} (libdwfl in the "
         f"profiler's own process). Medians of {RUNS} runs each, alternating; microseconds "
         f"(load average {load:.1f} on {os.cpu_count()} CPUs when written).", "",
         "| target | | helper start | first unwind (loads) | first name a module | unwind | name (cached module) |",
         "|---|---|---|---|---|---|---|"]
    for label, med in rows:
        for side, name in (("ref", f"in-process ({REF})"), ("cage", "caged")):
            m = med[side]
            start_us = f"{m['start']:.0f}" if "start" in m else "-"
            L.append(f"| {label} ({m['frames']:.0f} frames, {m['modules']:.0f} modules) | {name} | "
                     f"{start_us} | {m['first_unwind']:.0f} | {per_module(m):.0f} | "
                     f"{m['unwind']:.1f} | {m['name']:.1f} |")
    extra = ", ".join(f"{med['cage']['unwind'] - med['ref']['unwind']:.1f} us an unwind of the "
                      f"{label.split(' (')[0]} stack" for label, med in rows)
    L += ["", f"What the cage adds: {extra}, {rows[0][1]['cage']['name'] - rows[0][1]['ref']['name']:.1f} us "
          "a name (the recorder names each pc once: its pc cache holds 16,384), the helper's start "
          "once a process, and each module's first load a second time after a helper is lost.",
          "", "The helper start (fork, exec of ebpfprof, the sandbox, an empty report answered) is "
          "paid once a process, at its first native sample (and again after a helper is lost); the "
          "first unwind includes it. Every unwind and every name not in the recorder's pc cache is "
          "one round trip over the socket: the stack copy goes with the unwind request.", ""]
    put_doc_section(DOC, "The native cage (issue 28)", L)


if __name__ == "__main__":
    main()
