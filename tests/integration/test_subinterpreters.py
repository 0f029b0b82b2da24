"""A process with a subinterpreter alive (3.14's concurrent.interpreters,
InterpreterPoolExecutor): _PyRuntime.interpreters.head names the newest
interpreter, so the profiler must take .main, or it walks the
subinterpreter's threads, GIL and modules and loses the main program.
Code run inside the subinterpreter shows as the main interpreter's frame
that called into it (docs/limitations.md)."""
import time

import pytest

from conftest import Profile, require_interpreter, run_ebpfprof


@pytest.mark.parametrize("name", ["chroot-3.14", "chroot-3.15"])
def test_the_main_interpreter_is_profiled_beside_a_subinterpreter(name, workloads, out):
    interp = require_interpreter(name)
    w = workloads(interp, "subinterpreter.py", seconds=30)  # killed when done
    time.sleep(0.8)
    path = out()
    # -v: the samples without a thread state are counted there, any of them
    # (the default summary's loss line only from 1%)
    res = run_ebpfprof("-v", "--pid", w.pid, "-d", 2, "-r", 200, "-o", path, check=True)
    prof = Profile(path)
    main = prof.profile('"MainThread"')
    main_total = sum(wt for _, wt in prof.stacks(main))
    assert main_total > 0, res.stderr
    assert prof.weight_with("main_crunch", main) >= 0.9 * main_total, list(prof.stacks(main))[:5]
    caller = prof.profile('"sub-caller"')
    stacks = list(prof.stacks(caller))
    assert stacks, res.stderr
    assert all("call_into_sub" in names for names, _ in stacks), stacks[:5]
    assert "without a Python thread state" not in res.stderr, res.stderr


@pytest.mark.parametrize("name", ["chroot-3.14", "chroot-3.15"])
def test_native_shows_the_subinterpreters_eval_loop_above_its_caller(name, workloads, out):
    """--native: the subinterpreter's eval call, inner to the thread's own,
    claims none of the thread's Python frames (native_weave.c:
    foreign_evals): the stack reads Thread._bootstrap ... call_into_sub >
    Interpreter.exec > the C call into the interpreter > its eval loop."""
    interp = require_interpreter(name)
    w = workloads(interp, "subinterpreter.py", seconds=30)  # killed when done
    time.sleep(0.8)
    path = out()
    res = run_ebpfprof("--pid", w.pid, "-d", 2, "-r", 200, "--native", "-o", path, check=True)
    prof = Profile(path)
    stacks = list(prof.stacks(prof.profile('"sub-caller"')))
    total = sum(wt for _, wt in stacks)
    assert total > 0, res.stderr
    good = 0
    for names, wt in stacks:
        if names[0] != "Thread._bootstrap" or "Interpreter.exec" not in names:
            continue
        inner = names[names.index("Interpreter.exec") + 1:]
        if any(n.startswith("_PyEval_EvalFrameDefault") for n in inner):
            good += wt
    assert good >= 0.9 * total, stacks[:5]
