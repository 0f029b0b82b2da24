"""Issue 8: off-CPU stacks are walked only for long intervals and, for short
ones, at a rate proportional to off-CPU time; the --idle flame graph must
still give each stack its real share of the off-CPU time."""
import subprocess
import time

import conftest
from conftest import Profile, require_interpreter, wait_for_go


def test_idle_shares_follow_real_off_cpu_time(workloads, out, tmp_path):
    interp = require_interpreter("debian-3.11")
    go = tmp_path / "go"
    w = workloads(interp, "idle_shares.py", "--go", str(go), seconds=8,
                  truth=str(tmp_path / "truth.json"))
    path = out()
    proc = subprocess.Popen([str(conftest.EBPFPROF), "--pid", str(w.pid), "-d", "30", "--idle",
                             "-o", str(path)], stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)  # attached before the measured part
    wait_for_go(go)
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 0, err
    truth = w.truth()["spent"]
    total_truth = sum(truth.values())
    prof = Profile(path)
    slept = {site: sum(wt for names, wt in prof.stacks()
                       if names[-1] == "[sleep]" and site in names)
             for site in truth}
    total = sum(slept.values())
    assert total > 0.5 * total_truth, (slept, truth)
    for site in truth:
        share, true_share = slept[site] / total, truth[site] / total_truth
        assert abs(share - true_share) <= 0.03, (site, share, true_share, slept, truth)
    # the summary says how much was summed in the kernel and how much was sent
    assert "intervals timed exactly in the kernel" in err
