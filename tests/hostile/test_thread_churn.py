"""Issue 9 item 5: kernel state kept per thread must not fill up with threads
that are gone. 20,000 short-lived threads used to fill the off-CPU map
(a hash keyed by tid that kept every exited thread's entry): a sleeper's
waits afterwards went from 40 logged to 1, and the summary said 0 lost."""
import importlib.util
import subprocess
import time
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "ebpfprof_integration_conftest", Path(__file__).resolve().parents[1] / "integration" / "conftest.py")
itc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(itc)
workloads, out = itc.workloads, itc.out  # fixtures


def test_waits_after_thread_churn_are_all_logged(workloads, tmp_path):
    itc.need_bpf()
    interp = itc.require_interpreter("debian-3.11")
    go, log = tmp_path / "go", tmp_path / "waits.jsonl"
    w = workloads(interp, "thread_churn.py", "--go", str(go), "--threads", "20000", "--naps", "40",
                  truth=str(tmp_path / "truth.json"))
    # -v: the summary's counters (the intervals timed) are -v's
    proc = subprocess.Popen([str(itc.EBPFPROF), "-v", "--pid", str(w.pid), "-d", "300", "--idle",
                             "--gc-log", str(log), "-o", str(tmp_path / "p.json")],
                            stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)  # attached before the churn
    itc.wait_for_go(go)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    truth = w.truth()
    head, _, waits = itc.read_gc_log(log)
    t0 = head["monotonic_start_s"]
    naps = [x for x in waits if x["tid"] == w.pid and x["reason"] == "sleep"
            and truth["begin"] - 1e-3 <= t0 + x["start_s"] <= truth["end"]
            and x["duration_s"] >= 0.010]
    # every 20 ms nap is a wait over the 10 ms threshold, logged whole; on a
    # loaded machine a preemption on the way into the sleep can take a few
    # ms of one off it (shown as [preempted]), hence the 10 ms bound and one
    # nap of slack; before the fix 0 to 1 of 40 were logged
    slept = sum(x["duration_s"] for x in naps)
    assert len(naps) >= truth["naps"] - 1, (len(naps), err)
    assert slept >= 0.9 * truth["naps"] * 0.020, (slept, err)
    # each nap's own stack: a wait whose switch-in went unseen (the drain
    # iterator racing the thread's wake-up, a few per run here) once went
    # without one, and was drawn under the thread's last sample instead
    assert [x for x in naps if not any(f["name"] == "nap" for f in x["stack"])] == [], err
    # no short-lived thread waited from before it was started: one the drain
    # found not yet run was given an interval from the recording's start
    early = [x for x in waits if x["tid"] != w.pid and t0 + x["start_s"] < truth["churn_begin"] - 1e-3]
    assert early == [], (early, err)
    # nothing was lost or refused by a full map, and the summary says so
    assert "intervals timed exactly in the kernel" in err
    # the losses line may be there for other reasons ("0 kernel map updates failed, ...")
    assert not __import__("re").search(r"\b[1-9][0-9]* kernel map updates failed", err), err
