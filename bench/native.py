"""--native's cost (issue 22): the sampler's BPF time per run and the
profiler's own CPU time per sample, without --native and with it (16 and 32
KiB of stack copied), at a shallow native stack (tests/native/app.py: ~15 C
frames under a C extension) and a deep one (tests/native/deep_app.py 40: 40
levels of Python recursion through map(), ~200 C frames); and how deep the
unwind reaches (deep_app.py at several depths: the share of stacks unwound to
the thread's first frame). The extension is built from tests/native/knap.c.

Run as root (scripts/bench.sh runs it); prints the table and puts it into
docs/benchmarks.md as the section "Native frames"."""
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from bpfprogs import owned_prog_ids, prog_stats
from doc_section import put_doc_section

ROOT = Path(__file__).resolve().parents[1]
EBPFPROF = ROOT / "ebpfprof"
PY = "/usr/bin/python3.11"
STATS = Path("/proc/sys/kernel/bpf_stats_enabled")
DOC = ROOT / "docs" / "benchmarks.md"
KNAP = ROOT / "build" / "bench" / "knap"
RATE = 1000
SECONDS = 6
MODES = (("without --native", []), ("--native (16 KiB)", ["-n"]),
         ("--native --native-stack 32", ["-n", "--native-stack", "32"]))
SHAPES = (("shallow (~15 C frames)", "app.py", []), ("deep (40 levels through C)", "deep_app.py", ["40"]))
DEPTHS = (10, 20, 30, 45, 60)


def build_knap():
    KNAP.mkdir(parents=True, exist_ok=True)
    subprocess.run(["gcc", "-O2", "-fomit-frame-pointer", "-fPIC", "-shared", "-I/usr/include/python3.11",
                    str(ROOT / "tests" / "native" / "knap.c"), "-o",
                    str(KNAP / "knap.cpython-311-x86_64-linux-gnu.so")], check=True)


def sampler_stats(pid):
    """(run_time_ns, run_cnt) of the sampler loaded by ebpfprof process pid
    (others may run on the machine, their programs of the same name come and go)."""
    return prog_stats(owned_prog_ids(pid), "sample_on_cpu")


def cpu_s(pid):
    """CPU seconds of ebpfprof process pid and of its running children (the
    native cage's helper unwinds and names in a process of its own)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    children = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children += (task / "children").read_text().split()
        except OSError:
            continue
    total = own
    for child in children:
        try:
            total += cpu_s(int(child))
        except OSError:
            continue        # ended meanwhile
    return total


def start(script, args):
    p = subprocess.Popen([PY, str(ROOT / "tests" / "native" / script), *args],
                         stdout=subprocess.PIPE, text=True, env=dict(os.environ, KNAP_DIR=str(KNAP)))
    assert p.stdout.readline().strip() == "ready"
    return p


def run(script, args, flags, seconds=SECONDS, rate=RATE):
    """(BPF ns per run, profiler CPU s per target sample, target samples, summary line)"""
    w = start(script, args)
    out = ROOT / "build" / "bench" / "native.collapsed"
    # -v: the summary's "native:" line of the unwinds is -v's
    prof = subprocess.Popen([str(EBPFPROF), "-v", "-p", str(w.pid), "-r", str(rate), "-d", str(seconds + 1),
                             "-f", "collapsed", "-o", str(out), *flags],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while sampler_stats(prof.pid)[1] == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(0.5)
        ns0, n0 = sampler_stats(prof.pid)
        c0 = cpu_s(prof.pid)
        time.sleep(seconds - 1)
        ns1, n1 = sampler_stats(prof.pid)
        c1 = cpu_s(prof.pid)
        err = prof.communicate(timeout=120)[1]
    finally:
        w.kill()
        w.wait()
    samples = int(re.search(r"(\d+) samples", err).group(1))
    native = re.search(r"native: .*", err)
    # the window is (seconds - 1) of the recording's seconds + 1: its share of the samples
    window_samples = samples * (seconds - 1) / (seconds + 1)
    return ((ns1 - ns0) / max(n1 - n0, 1), (c1 - c0) / max(window_samples, 1), samples,
            native.group(0) if native else "", (ns1 - ns0) / max(window_samples, 1))


def main():
    if os.geteuid() != 0:
        sys.exit("bench/native.py: needs root (BPF, bpf_stats)")
    build_knap()
    old = STATS.read_text().strip()
    STATS.write_text("1\n")
    rows, reach = [], []
    try:
        for shape, script, args in SHAPES:
            for label, flags in MODES:
                bpf, cpu, n, line, bpf_sample = run(script, args, flags)
                rows.append((shape, label, bpf, cpu, n, bpf_sample))
                unwind = re.search(r"([\d.]+) us of CPU a stack", line)
                rows[-1] += (float(unwind.group(1)) if unwind else None,)
                print(f"{shape:28} {label:28} BPF {bpf / 1e3:6.2f} us/run, "
                      f"ebpfprof {cpu * 1e6:7.1f} us CPU/sample ({n} samples) {line}", flush=True)
        for depth in DEPTHS:
            got = []
            for kib in (16, 32):
                line = run("deep_app.py", [str(depth)], ["-n", "--native-stack", str(kib)],
                           seconds=3, rate=300)[3]
                m = re.search(r"(\d+)% to the thread's first frame.*?([\d.]+) native frames", line)
                got.append((int(m.group(1)), float(m.group(2))) if m else (0, 0.0))
            reach.append((depth, got))
            print(f"depth {depth}: 16 KiB {got[0][0]}% whole ({got[0][1]:.0f} frames), "
                  f"32 KiB {got[1][0]}% whole ({got[1][1]:.0f} frames)", flush=True)
    finally:
        STATS.write_text(old + "\n")
    write_doc(rows, reach, image_sizes(), symbolizers())


def image_sizes():
    """What --native adds to the sidecar image: libdw1's installed size, and
    the image's size if make container built it here."""
    out = []
    kib = subprocess.run(["dpkg-query", "-W", "-f", "${Installed-Size}", "libdw1"],
                         capture_output=True, text=True).stdout.strip()
    if kib:
        out.append(f"libdw1 (the one package the runtime image gains) installs {int(kib) / 1024:.1f} MiB")
    # the images in podman's store (make container tags them localhost/ebpfprof:VERSION;
    # one built with and one without --native's library, if both are there)
    try:
        listing = subprocess.run(["podman", "images", "--format", "{{.Repository}}:{{.Tag}} {{.Size}}"],
                                 capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        listing = ""
    for line in listing.splitlines():
        if line.startswith("localhost/ebpfprof") and "example" not in line:
            name, size = line.split(" ", 1)
            out.append(f"`{name}` in podman's store: {size}")
    return out


def symbolizers():
    """bench/symbolizers.sh's lines (user/native against BCC), if libbcc is here."""
    if not Path("/usr/include/bcc/bcc_syms.h").exists():
        return []
    res = subprocess.run([str(ROOT / "bench" / "symbolizers.sh")], capture_output=True, text=True)
    return [l for l in res.stdout.splitlines() if l.startswith(("dw:", "bcc:"))]


def write_doc(rows, reach, sizes, syms):
    L = ["## Native frames (issue 22)", "",
         f"`bench/native.py` on {os.uname().release}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
         f"{RATE} Hz, Debian's python3.11 (no frame pointers) calling a C extension built without "
         "them: the sampler's BPF time per run (kernel.bpf_stats_enabled: every tick of every CPU, "
         "the target's and the few others') and ebpfprof's own CPU time per sample of the target "
         "(userspace: reading the ring buffer, unwinding with libdwfl, weaving, symbolizing; "
         "measured while the target runs, after the start).", "",
         "The unwind column is ebpfprof's own thread CPU time in the unwinder and symbolizer per "
         "stack (CLOCK_THREAD_CPUTIME_ID around it: load on the machine does not inflate it); the "
         "CPU column is the whole process per sample, which the machine's load makes noisy.", "",
         "BPF per target sample is the sampler's whole time over the target's samples (an upper "
         "bound: other threads' ticks return at once, but count).", "",
         "| native stack | mode | BPF per run | BPF per target sample | unwind per stack | "
         "ebpfprof CPU per sample | samples |",
         "|---|---|---|---|---|---|---|"]
    for shape, label, bpf, cpu, n, bpf_sample, unwind in rows:
        L.append(f"| {shape} | {label} | {bpf / 1e3:.2f} us | {bpf_sample / 1e3:.2f} us | "
                 f"{f'{unwind:.0f} us' if unwind is not None else '-'} | {cpu * 1e6:.0f} us | {n} |")
    L += ["", "How deep it reaches: `deep_app.py DEPTH` (each level a Python call through `map()`, "
          "about 5 C frames and 0.7 KiB of C stack a level), the share of stacks unwound to the "
          "thread's first frame and the native frames found a stack:", "",
          "| levels through C | 16 KiB copied (default) | 32 KiB copied |", "|---|---|---|"]
    for depth, got in reach:
        L.append(f"| {depth} | {got[0][0]}% ({got[0][1]:.0f} frames) | {got[1][0]}% ({got[1][1]:.0f} frames) |")
    if sizes:
        L += ["", "The sidecar image: " + "; ".join(sizes) + "."]
    if syms:
        L += ["", "Symbolizers (`bench/symbolizers.sh`: the same pcs spread over the code of a "
              "python3.11 running zlib, named by user/native on libdwfl (`dw`, without BCC linked) "
              "and by BCC's `bcc_symcache_resolve`, each in a process of its own):", "", "```"]
        L += syms + ["```"]
    L.append("")
    put_doc_section(DOC, "Native frames (issue 22)", L)


if __name__ == "__main__":
    main()
