"""Issue 8: the exact off-CPU totals are kept per thread in the kernel (task
storage) and taken out by a task iterator every 50 ms; a thread that exits
hands its last ones over at its exit. Threads living a few drain periods
each must so have all their waits in the state table, exactly."""
import re

import conftest
from conftest import Attached, require_interpreter, wait_for_go

# the summary's columns, in the one list's order (include/ep_states.h)
COLUMNS = tuple(row["column"] for row in conftest.state_rows())


def state_table(err):
    """tid -> {column: seconds} from the summary's thread table."""
    rows = {}
    for line in err.splitlines():
        m = re.match(r"\s+(\d+) ", line)
        cells = re.findall(r"(\d+\.\d+)s\s+\d+%", line)
        if m and len(cells) == len(COLUMNS):
            rows[int(m.group(1))] = dict(zip(COLUMNS, map(float, cells)))
    assert rows, err
    return rows


def test_threads_that_exit_keep_all_their_wait_time(workloads, tmp_path):
    interp = require_interpreter("debian-3.11")
    go = tmp_path / "go"
    w = workloads(interp, "short_sleepers.py", "--go", str(go), seconds=3,
                  truth=str(tmp_path / "truth.json"))
    rec = Attached(w.pid, "-d", 30, "-o", tmp_path / "p.json")
    wait_for_go(go)
    status, err = rec.finish(timeout=90)
    assert status == 0, err
    truth = w.truth()
    rows = state_table(err)
    assert len(rows) >= truth["threads"], (len(rows), truth["threads"])
    # from switch-out to switch-in: time.sleep's own figure also holds the
    # GIL wait on the way out of it (and the system call); a thread's last
    # undrained totals lost at its exit would take ~40% away
    slept = sum(r["sleep"] + r["GIL wait"] for tid, r in rows.items() if tid != w.pid)
    assert 0.9 * truth["slept"] <= slept <= 1.02 * truth["slept"] + 0.02, (slept, truth)
