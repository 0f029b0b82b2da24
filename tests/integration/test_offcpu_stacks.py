"""Issue 8: a blocked thread's stack is not read at every switch-out. Where
the thread has an rseq area (glibc 2.35+ registers one for every thread) the
stack of an interval being sent is taken when the thread returns to user
mode; without one (older glibc, musl; here glibc's own tunable turns it off)
it is fingerprinted at switch-out. Both ways must put each wait on the call
site it came from, in the --idle profile as in its shares."""
import os
import re

import pytest

from test_idle_shares import check_sleep_total
from conftest import Attached, Profile, SchedStat, require_interpreter, wait_for_go


def counts(err):
    m = re.search(r"(\d+) of them sent .*?, (\d+) of those with their stack taken on the thread's "
                  r"return to user mode; stacks walked (\d+) times, reused (\d+) times", err)
    assert m, err
    return dict(zip(("sent", "on_return", "walked", "reused"), map(int, m.groups())))


@pytest.mark.parametrize("rseq", [True, False], ids=["rseq", "no-rseq"])
def test_wait_stacks_with_and_without_rseq(workloads, out, tmp_path, monkeypatch, rseq):
    interp = require_interpreter("debian-3.11")
    if not rseq:
        # glibc 2.35+ registers no rseq area for the process's threads
        monkeypatch.setenv("GLIBC_TUNABLES", "glibc.pthread.rseq=0")
    go = tmp_path / "go"
    w = workloads(interp, "idle_shares.py", "--go", str(go), seconds=4,
                  truth=str(tmp_path / "truth.json"))
    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
    path = out()
    # -r 400: a 2.5 ms sampling period, so the 2 ms naps are sent 4 times in 5 and the
    # shares carry little sampling noise (which test_idle_shares covers): what is
    # tested here is the stack each sent wait gets; -v: the counters are -v's
    stat = SchedStat(w.pid)
    try:
        rec = Attached(w.pid, "-d", 30, "--idle", "-r", 400, "-o", path, env=env)
        wait_for_go(go)
        status, err = rec.finish(timeout=90)
    finally:
        stat.finish()
    assert status == 0, err
    c = counts(err)
    assert c["sent"] > 100, c
    if rseq:
        # the sent waits got their stack on the return (preemptions are sent without one)
        assert c["on_return"] > 0.7 * c["sent"], c
        assert c["walked"] + c["reused"] <= c["on_return"] + 10, c
    else:
        # every blocking switch-out was fingerprinted, sent or not
        assert c["on_return"] == 0 and c["walked"] + c["reused"] > 0.9 * c["sent"], c
    assert "sent without their stack" not in err
    assert "have no stack" not in err   # nor the default summary's loss line
    full = w.truth()
    truth = full["spent"]
    prof = Profile(path)
    slept = {site: sum(wt for names, wt in prof.stacks()
                       if names[-1] == "[sleep]" and site in names)
             for site in truth}
    total, total_truth = sum(slept.values()), sum(truth.values())
    check_sleep_total(slept, full, prof.doc["ebpfprof"]["rate_hz"], stat)
    for site in truth:
        share, true_share = slept[site] / total, truth[site] / total_truth
        assert abs(share - true_share) <= 0.03, (site, share, true_share, slept, truth)
