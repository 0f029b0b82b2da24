"""Issue 30: --label on values a target chooses (tests/hostile/target_labels.py):
terminal controls, a str beyond latin-1, a 10 MB str, a str whose length
field lies (2^62), a tuple of 1000 items, a nested tuple, a 200-bit int.
Every read in the kernel is bounded by its room, every text is escaped
before it reaches the terminal, and the recording holds each value as a
bounded text."""
import json
import subprocess
from pathlib import Path

from conftest import EBPFPROF, require_interpreter
from test_terminal_escapes import shown

HERE = Path(__file__).resolve().parent


def test_hostile_label_values(tmp_path):
    interp = require_interpreter("debian-3.11")
    out = tmp_path / "p.json"
    res = subprocess.run([str(EBPFPROF), "-r", "400", "-o", str(out), "--label", "req=handle:0",
                          "--", *interp.argv, str(HERE / "target_labels.py"), "--seconds", "6"],
                         capture_output=True, timeout=120)
    err = shown(res.stderr)
    assert res.returncode == 0, err
    values = json.loads(out.read_text())["ebpfprof"]["labels"]["req"]
    want = {
        "\\x1b[2J\\x9b2J-esc",                      # latin-1 bytes, each control as \xHH
        "<str beyond latin-1>",
        "x" * 64 + "...",                           # the first 64 bytes, said cut
        "(0, 1, 2, 3, ...)",                        # four items, said there are more
        "(<tuple>, 3)",
        "<big int>",
    }
    assert want <= set(values), sorted(values)
    # the lying length: 64 bytes at most were read, from the object's own data on
    forged = [v for v in values if v.startswith("forged-len")]
    assert len(forged) == 1 and forged[0].endswith("...") and len(forged[0]) <= 64 * 4 + 3, forged
    assert all(len(v) <= 256 for v in values), [v for v in values if len(v) > 256]
    assert "ebpfprof: label req: 7 values" in err, err
