"""The ebpfprof binary of another commit, for a benchmark to compare with:
built once from `git archive REV` (not a worktree) into build/bench/."""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build_at(rev, dest, who):
    """dest, built from rev's tree unless it exists; who names the benchmark."""
    if dest.exists():
        return dest
    print(f"{who}: building ebpfprof at {rev} (once) ...", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="ebpfprof-base-") as tmp:
        tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True,
                             capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=tar, check=True)
        subprocess.run(["make", "-C", tmp, f"-j{os.cpu_count() or 1}", "ebpfprof"], check=True,
                       stdout=subprocess.DEVNULL)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(Path(tmp) / "ebpfprof", dest)
    return dest
