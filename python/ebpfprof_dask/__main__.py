"""python3 -m ebpfprof_dask --scheduler ADDR -d SECONDS -o DIR [--gc-log] [--idle] [--workers all|N]"""
import argparse
import os
import shlex
import sys

from . import untrusted
from .core import command_from_env, format_index, profile_cluster


def workers_arg(value):
    if value == "all":
        return value
    try:
        n = int(value)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"'all' or a number of workers, not {value!r}")
    return n


def main(argv=None):
    # installed with pip it also runs as ebpfprof-dask
    prog = os.path.basename(sys.argv[0])
    ap = argparse.ArgumentParser(prog="python3 -m ebpfprof_dask" if prog == "__main__.py" else prog,
                                 description="Profile a Dask scheduler and its workers with ebpfprof.")
    ap.add_argument("--scheduler", required=True, help="the scheduler's address, e.g. tcp://host:8786")
    ap.add_argument("-d", "--duration", type=float, required=True, help="seconds to record")
    ap.add_argument("-o", "--output", required=True, help="directory for the profiles and index")
    ap.add_argument("--gc-log", action="store_true", help="also keep each process's GC log (JSON lines)")
    ap.add_argument("--idle", action="store_true", help="add off-CPU time to the profiles")
    ap.add_argument("--workers", type=workers_arg, default="all", help="all (default) or the first N workers")
    ap.add_argument("--command", help="how to run ebpfprof on the hosts (default: $EBPFPROF_DASK_COMMAND "
                    "or ebpfprof), e.g. 'sudo -n /usr/local/bin/ebpfprof'")
    args = ap.parse_args(argv)
    if not args.duration > 0:
        ap.error("--duration must be > 0")
    from distributed import Client

    command = shlex.split(args.command) if args.command else command_from_env()
    try:
        with Client(args.scheduler, timeout=30) as client:
            results = profile_cluster(client, args.duration, args.output, gc_log=args.gc_log,
                                      idle=args.idle, workers=args.workers, command=command)
    except OSError as e:  # an index that cannot be written (WriteError), an -o that is a file
        print(f"ebpfprof_dask: {e}", file=sys.stderr)
        return 1
    sys.stdout.write(format_index(results))
    failed = [r for r in results if "error" in r]
    for r in failed:
        address = untrusted.printable(r["address"], untrusted.HOST_MAX)
        print(f"ebpfprof_dask: {r['role']} {address}: {r['error']}", file=sys.stderr)
    print(f"ebpfprof_dask: wrote {len(results) - len(failed)} profiles and index.json to {args.output}",
          file=sys.stderr)
    return 1 if len(failed) == len(results) else 0


if __name__ == "__main__":
    sys.exit(main())
