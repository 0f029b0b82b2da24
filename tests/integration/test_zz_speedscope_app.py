"""Runs last: every speedscope file the other tests wrote must import in
speedscope's own app (headless Chromium), not only pass its schema, and the
app's export of it must hold the file's profiles (their number, names and
total weights). A running app takes the files one after another, as a tab
does when its user opens one file after another (tests/speedscope/check.js:
an app started for each file took 561 s for 145 of the suite's files, the
same files in turn 52 s); a file it rejects after serving others is checked again in a
fresh app, so no file's verdict is another file's doing."""
import json
import subprocess

from conftest import COLLECTED, SPEEDSCOPE_CHECK, cannot_run


def test_every_profile_imports_in_speedscope_app():
    files = sorted(COLLECTED.glob("*.json")) if COLLECTED.exists() else []
    if not files:
        cannot_run("no profiles were written by the other tests")
    if not SPEEDSCOPE_CHECK.exists():
        cannot_run("tests/speedscope/check.js is missing")
    res = subprocess.run(["node", str(SPEEDSCOPE_CHECK), *map(str, files)],
                         capture_output=True, text=True, timeout=1800)
    results = [json.loads(l) for l in res.stdout.splitlines() if l.startswith("{")]
    rejected = [r for r in results if not r.get("accepted")]
    assert len(results) == len(files), res.stderr[-2000:]
    assert not rejected, json.dumps(rejected, indent=1)[:4000]
    assert res.returncode == 0, res.stderr[-2000:]
