"""What runs inside the scheduler and each worker process (through
client.run_on_scheduler / client.run): start ebpfprof on this very process,
later stop it and hand back what it wrote. Standard library only, and sent by
value, so the cluster's hosts need the ebpfprof binary but not this package."""
import asyncio
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time


def _running():
    """The recordings running in this process, by session token. Kept in a
    module of its own in sys.modules: functions sent by value each get a
    fresh copy of this module's globals."""
    import sys
    import types

    mod = sys.modules.get("_ebpfprof_dask_running")
    if mod is None:
        mod = types.ModuleType("_ebpfprof_dask_running")
        mod.runs = {}
        sys.modules[mod.__name__] = mod
    return mod.runs

# how long ebpfprof may take to load its programs and start recording (the
# verifier on a loaded machine or an old kernel takes seconds)
_START_TIMEOUT_S = 60.0


def _recording(stderr_path, pid):
    """Whether ebpfprof's -v has said that it records pid: its probes are in
    place, the process's time counts from here."""
    try:
        with open(stderr_path, "rb") as f:
            return f"ebpfprof: recording {pid} from ".encode() in f.read()
    except OSError:
        return False


async def start(token, command, options, duration):
    """Starts `command options -v --pid <this process>` and returns once it
    records, with a description or an error (never raises: one broken worker
    must not stop the others). Coroutines, so that the server's event loop
    goes on while they wait."""
    info = {"host": socket.gethostname(), "pid": os.getpid()}
    workdir = tempfile.mkdtemp(prefix="ebpfprof-dask-")
    profile = os.path.join(workdir, "profile.speedscope.json")
    gc_log = os.path.join(workdir, "gc.jsonl")
    stderr_path = os.path.join(workdir, "stderr")
    # -v: the line that says the recording started, instead of a fixed wait
    argv = list(command) + list(options) + ["-v", "--pid", str(os.getpid()), "-o", profile,
                                            "--gc-log", gc_log]
    if duration:
        argv += ["-d", str(duration)]
    try:
        stderr = open(stderr_path, "w+b")
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=stderr, start_new_session=True)
    except OSError as e:
        shutil.rmtree(workdir, ignore_errors=True)
        return dict(info, error=f"cannot run {command[0]}: {e}")
    _running()[token] = dict(proc=proc, workdir=workdir, profile=profile, gc_log=gc_log,
                           stderr=stderr, started=time.time())
    deadline = time.monotonic() + _START_TIMEOUT_S
    while proc.poll() is None and not _recording(stderr_path, os.getpid()):
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            _finish(token)
            return dict(info, error=f"ebpfprof did not start recording within {_START_TIMEOUT_S:.0f} s")
        await asyncio.sleep(0.02)
    # a missing capability or a wrong command fails at once: say so now
    if proc.poll() is not None and proc.returncode != 0:
        return dict(info, error=_finish(token)["error"])
    return info


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _finish(token):
    run = _running().pop(token)
    run["stderr"].seek(0)
    err = run["stderr"].read().decode("utf-8", "replace")
    run["stderr"].close()
    out = {"host": socket.gethostname(), "pid": os.getpid(), "returncode": run["proc"].returncode,
           "stderr": err, "profile": _read(run["profile"]), "gc_log": _read(run["gc_log"])}
    shutil.rmtree(run["workdir"], ignore_errors=True)
    if run["proc"].returncode != 0 or out["profile"] is None:
        lines = [line for line in err.splitlines() if line.strip()]
        out["error"] = lines[-1] if lines else f"ebpfprof exited with status {run['proc'].returncode}"
    return out


async def stop(token, timeout):
    """Ends the recording (SIGINT unless it already ended by its duration),
    waits for its files and returns them."""
    run = _running().get(token)
    if run is None:
        return {"host": socket.gethostname(), "pid": os.getpid(),
                "error": "no recording was started in this process"}
    proc = run["proc"]
    if proc.poll() is None and timeout == 0:
        proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + max(timeout, 0) + 60
    while proc.poll() is None:
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            break
        await asyncio.sleep(0.1)
    return _finish(token)
