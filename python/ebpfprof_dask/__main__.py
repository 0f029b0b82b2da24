"""python3 -m ebpfprof_dask --scheduler ADDR -d SECONDS -o DIR [--gc-log] [--idle] [--workers all|N]
       [--history SERIES [--history-db PATH] [--tag K=V ...]]
   python3 -m ebpfprof_dask --report DIR   (the cluster report again, from DIR's recordings)"""
import argparse
import os
import shlex
import sys

from . import untrusted
from .core import ClusterProfile, command_from_env, format_index, report_from_directory
from .history import HistoryError, check_tag
from .report import format_report


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


def tag_arg(value):
    try:
        return check_tag(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def main(argv=None):
    # installed with pip it also runs as ebpfprof-dask
    prog = os.path.basename(sys.argv[0])
    ap = argparse.ArgumentParser(prog="python3 -m ebpfprof_dask" if prog == "__main__.py" else prog,
                                 description="Profile a Dask scheduler and its workers with ebpfprof.")
    ap.add_argument("--scheduler", help="the scheduler's address, e.g. tcp://host:8786")
    ap.add_argument("-d", "--duration", type=float, help="seconds to record")
    ap.add_argument("-o", "--output", help="directory for the profiles, the index and the report")
    ap.add_argument("--report", metavar="DIR", help="write the cluster report again from DIR (a -o "
                    "directory of an earlier run), profiling nothing")
    ap.add_argument("--no-dask", action="store_true", help="record without --dask: no task labels, "
                    "no report per task prefix")
    ap.add_argument("--gc-log", action="store_true", help="also keep each process's GC log (JSON lines)")
    ap.add_argument("--idle", action="store_true", help="add off-CPU time to the profiles")
    ap.add_argument("--workers", type=workers_arg, default="all", help="all (default) or the first N workers")
    ap.add_argument("--command", help="how to run ebpfprof on the hosts (default: $EBPFPROF_DASK_COMMAND "
                    "or ebpfprof), e.g. 'sudo -n /usr/local/bin/ebpfprof'")
    ap.add_argument("--history", metavar="SERIES", help="also store the cluster's run in ebpfprof's "
                    "run history as a run of SERIES (per role its states and GC, per task prefix its "
                    "tasks, time per state, GC and top functions); `ebpfprof history check SERIES`")
    ap.add_argument("--history-db", metavar="PATH", help="the history database (default: ebpfprof's, "
                    "~/.local/share/ebpfprof/history.db)")
    ap.add_argument("--tag", metavar="K=V", action="append", default=[], type=tag_arg,
                    help="--history: a tag of the run (a commit); repeatable")
    args = ap.parse_args(argv)
    if (args.history_db or args.tag) and not args.history:
        ap.error("--history-db and --tag are for --history")
    if args.report:
        return report_again(args.report)
    for option, value in (("--scheduler", args.scheduler), ("-d", args.duration), ("-o", args.output)):
        if value is None:
            ap.error(f"{option} is required (or --report DIR)")
    if not args.duration > 0:
        ap.error("--duration must be > 0")
    from distributed import Client

    command = shlex.split(args.command) if args.command else command_from_env()
    try:
        with Client(args.scheduler, timeout=30) as client:
            session = ClusterProfile(client, args.output, duration=args.duration, gc_log=args.gc_log,
                                     idle=args.idle, workers=args.workers, command=command,
                                     dask=not args.no_dask, history=args.history,
                                     history_db=args.history_db, tags=args.tag).start()
            try:
                results = session.stop()
            except HistoryError as e:  # the profiles and the index are written
                results, history_error = session.results, e
            else:
                history_error = None
    except OSError as e:  # an index that cannot be written (WriteError), an -o that is a file
        print(f"ebpfprof_dask: {e}", file=sys.stderr)
        return 1
    sys.stdout.write(format_index(results))
    failed = [r for r in results if "error" in r]
    for r in failed:
        address = untrusted.printable(r["address"], untrusted.HOST_MAX)
        print(f"ebpfprof_dask: {r['role']} {address}: {r['error']}", file=sys.stderr)
    if session.report is not None:
        sys.stdout.write(format_report(session.report))
    report = " and the report per task prefix (report.txt, report.html)" if session.report else ""
    print(f"ebpfprof_dask: wrote {len(results) - len(failed)} profiles and index.json{report} to "
          f"{args.output}", file=sys.stderr)
    if history_error is not None:
        print(f"ebpfprof_dask: {history_error}", file=sys.stderr)
        return 1
    if session.history_run is not None:
        print(f"ebpfprof_dask: stored run #{session.history_run} of series {args.history} "
              f"(ebpfprof history check {shlex.quote(args.history)})", file=sys.stderr)
    return 1 if len(failed) == len(results) else 0


def report_again(outdir):
    try:
        report = report_from_directory(outdir)
    except OSError as e:
        print(f"ebpfprof_dask: {e}", file=sys.stderr)
        return 1
    if report is None:
        print(f"ebpfprof_dask: {outdir}: no worker's recording has task prefixes (recorded with "
              "--no-dask, or by an ebpfprof without --dask)", file=sys.stderr)
        return 1
    sys.stdout.write(format_report(report))
    print(f"ebpfprof_dask: wrote report.json, report.txt, balance.svg and report.html to {outdir}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
