"""The BPF programs of one ebpfprof process, and the kernel's run-time
statistics of them (kernel.bpf_stats_enabled): several benchmarks measure
their own session's programs only, never another session's that happens to
run on the machine."""
import json
import os
import re
import subprocess
from pathlib import Path


def owned_prog_ids(pid):
    """The ids of the BPF programs process pid holds (from its descriptors)."""
    ids = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            m = re.search(r"^prog_id:\s*(\d+)", Path(f"/proc/{pid}/fdinfo/{fd}").read_text(), re.M)
        except OSError:
            continue
        if m:
            ids.add(int(m.group(1)))
    return ids


def prog_stats(ids, prefix):
    """(run_time_ns, run_cnt) summed over the programs of ids named prefix*."""
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                         check=True).stdout
    ns = cnt = 0
    for p in json.loads(out):
        # bpftool shows names cut to 15 characters
        if p.get("id") in ids and p.get("name", "").startswith(prefix[:15]):
            ns += p.get("run_time_ns", 0)
            cnt += p.get("run_cnt", 0)
    return ns, cnt
