"""Code objects that live a few milliseconds: a module's body, freed once
its import ends. The reader names a code object from the target's memory,
so it must read it before it is freed: a record with a new stack wakes it
at once (bpf/pystack.bpf.h, emit_stack_event), where before it read every
50 ms and found most module bodies gone (<unknown>). And the next module's
body is made at the same address: the kernel's identity cache must not
hand it the previous one's identity, whose name the reader has (code_ident
keys it by the frame's globals too); before, one module in ten lost its
samples to the one before it."""
import collections
import re

import pytest

from conftest import require_interpreter, run_ebpfprof

MODULE_FRAME = re.compile(r"<module> \([^;]*(spinmod\d+)\.py:\d+\)")


def collapsed(path):
    for line in open(path):
        stack, _, weight = line.rstrip("\n").rpartition(" ")
        yield stack.split(";"), int(weight)


@pytest.mark.parametrize("name", ["debian-3.11", "pyenv-3.8", "chroot-3.9", "pyenv-3.10", "pyenv-3.12",
                                  "chroot-3.13", "chroot-3.14",
                                  "chroot-3.15"])
def test_module_bodies_are_named_while_they_run(name, tmp_path):
    check_module_bodies(name, tmp_path)


# --native sends every sample whole: a stack seen the first time wakes the
# reader all the same
@pytest.mark.parametrize("name", ["debian-3.11", "pyenv-3.12"])
def test_module_bodies_are_named_with_native_frames(name, tmp_path):
    # (each sample carries 16 KiB of stack the reader unwinds: it comes to a
    # new stack later, and 11 of 119 samples were <unknown> once in CI; once,
    # the first body, read after it ended, was named after the second: the
    # ten modules have one shape, so the second's code object and file name
    # took the first's addresses, which is all the kernel's identity holds)
    check_module_bodies(name, tmp_path, "--native", unknown_share=0.15, merged=1)


# A profiler held up (a loaded host, a slow read of the target) while a short
# script runs and exits: every record is read after the script is gone, and
# userspace can read none of its code objects. The kernel sent their names
# with the first sample of each new stack (bpf/code_names.bpf.c): all named.
# Before, with ebpfprof stopped 1.5 s the same way, 120 of 122 samples were
# <unknown>; CI saw such recordings three times.
@pytest.mark.parametrize("name", ["debian-3.11", "pyenv-3.8", "pyenv-3.12", "chroot-3.14",
                                  "chroot-3.15"])
def test_module_bodies_are_named_when_the_profiler_reads_after_the_target_exited(
        name, tmp_path, monkeypatch):
    monkeypatch.setenv("EBPFPROF_TEST_READ_LATE_MS", "3000")
    check_module_bodies(name, tmp_path, unknown_share=0.02)


def check_module_bodies(name, tmp_path, *extra, unknown_share=0.05, merged=0):
    interp = require_interpreter(name)
    path = tmp_path / "imports.txt"
    res = run_ebpfprof("-r", 200, *extra, "--format", "collapsed", "-o", path, "--",
                       *interp.argv, interp.workload_path("imports.py"), 10, 60, check=True)
    stacks = list(collapsed(path))
    importing = [(s, w) for s, w in stacks if any("spinmod" in f or "<unknown>" in f for f in s)]
    total = sum(w for _, w in importing)
    named = sum(w for s, w in importing if any(MODULE_FRAME.fullmatch(f) for f in s))
    unknown = sum(w for s, w in importing if any(f.startswith("<unknown>") for f in s))
    # 10 module bodies of 60 ms at 200 Hz: about 120 samples
    assert total >= 40, (res.stderr, stacks[:5])
    # (once in CI, every frame of the recording <unknown>: the summary says
    # why, in a string pytest does not shorten)
    assert unknown <= unknown_share * total and named >= (0.95 - unknown_share) * total, \
        "\n".join([f"named {named}, unknown {unknown} of {total}", res.stderr, repr(importing[:3])])
    per_module = collections.Counter()
    for s, w in importing:
        for f in s:
            m = MODULE_FRAME.fullmatch(f)
            if m:
                per_module[m.group(1)] += w
    # each body is 60 ms, about 12 samples: none lost to another, none doubled
    # (but `merged` bodies named after the next)
    assert len(per_module) >= 10 - merged, per_module
    assert all(4 <= n <= 22 * (1 + merged) for n in per_module.values()), per_module
    assert sum(n > 22 for n in per_module.values()) <= merged, per_module
