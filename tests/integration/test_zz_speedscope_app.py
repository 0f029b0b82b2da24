"""Runs last: every speedscope file the other tests wrote must import in
speedscope's own app (headless Chromium), not only pass its schema."""
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
