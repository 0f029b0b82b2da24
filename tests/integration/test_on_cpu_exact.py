"""Issue 23: a recording says its on-CPU state time is exact (the scheduler's
switch-in to switch-out time, not samples): `"on_cpu_exact": true` in its
`ebpfprof` object. diff's noise model reads it and gives those lines no
sampling noise, only run-to-run noise, so the same difference of on-CPU
time stands out more than it would in a recording that does not say so."""
import json
import subprocess

from conftest import EBPFPROF, require_interpreter, run_ebpfprof


def diff_json(a, b):
    res = subprocess.run([str(EBPFPROF), "diff", "--json", str(a), str(b)], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def on_cpu_lines(report):
    return {l.get("thread"): l for l in report["states"] if l["state"] == "on-cpu"}


def test_fresh_recording_has_exact_on_cpu_and_diff_treats_it_so(workloads, tmp_path):
    w = workloads(require_interpreter("debian-3.11"), "thread_mix.py", seconds=60)
    runs = []
    for i in range(2):
        out = tmp_path / f"r{i}.json"
        run_ebpfprof("record", "--pid", w.pid, "-d", 2, "-o", out, check=True)
        with open(out) as f:
            doc = json.load(f)
        assert doc["ebpfprof"]["on_cpu_exact"] is True, doc["ebpfprof"].keys()
        # the same recording, as one that does not say so (before issue 23)
        del doc["ebpfprof"]["on_cpu_exact"]
        sampled = tmp_path / f"s{i}.json"
        with open(sampled, "w") as f:
            json.dump(doc, f)
        runs.append((out, sampled))
    exact = on_cpu_lines(diff_json(runs[0][0], runs[1][0]))
    assumed = on_cpu_lines(diff_json(runs[0][1], runs[1][1]))
    assert exact.keys() == assumed.keys() and exact, exact
    moved = 0
    for thread, line in exact.items():
        other = assumed[thread]
        assert (line["base"], line["new"]) == (other["base"], other["new"]), (line, other)
        # less noise for the same difference: a statistic at least as large
        assert abs(line["stat"]) >= abs(other["stat"]) - 1e-9, (thread, line, other)
        if line["new"] != line["base"]:
            assert abs(line["stat"]) > abs(other["stat"]), (thread, line, other)
            moved += 1
    assert moved, exact
