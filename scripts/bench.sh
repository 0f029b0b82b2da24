#!/bin/bash
# Overhead benchmarks (make bench builds ./ebpfprof, then runs this): wall
# and CPU time of fixed-work Python workloads with and without the profiler,
# the profiler's own CPU and memory, and the BPF run time per event. Prints a
# table and writes docs/benchmarks.md; raw numbers go to build/bench/.
# Options are passed to bench/run.py: --reps N, --quick, --no-doc, --output FILE.
set -u
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
	echo "bench.sh: needs root: it loads BPF programs, opens perf events and attaches uprobes to the" >&2
	echo "          benchmark's Python processes (run: sudo make bench)" >&2
	exit 1
fi
# Debian's interpreter, never the pyenv shim that may come first in PATH
PY=/usr/bin/python3
if [ ! -x "$PY" ]; then
	echo "bench.sh: $PY is missing (apt-get install python3)" >&2
	exit 1
fi
if [ ! -x ./ebpfprof ]; then
	echo "bench.sh: ./ebpfprof is not built (run make, or make bench)" >&2
	exit 1
fi
"$PY" bench/run.py "$@" || exit
# the older kernels' mechanisms forced, next to the main paths (a section of its own,
# about 2 minutes)
case " $* " in *" --no-doc "*) exit 0 ;; esac
"$PY" bench/fallbacks.py || exit
# start-up (issue 48): a running target recorded how soon, against older
# binaries, and the sample and switch programs' cost against 9ca0104 (a
# section of its own, about 5 minutes)
case " $* " in *" --quick "*) "$PY" bench/startup.py --quick || exit ;; *) "$PY" bench/startup.py || exit ;; esac
# issue 23's sampling and on-CPU accounting against the binary before it (a
# section of its own; builds that binary once into build/bench/)
case " $* " in *" --quick "*) exec "$PY" bench/sampling.py --quick ;; esac
"$PY" bench/sampling.py || exit
# --native against without it, and how deep it reaches (a section of its own)
"$PY" bench/native.py || exit
# the 10-minute soak: memory growth of a long recording (<= 10 MiB an hour),
# written to build/bench/soak.json for the next report; and --rotate's RSS
# over 30 periods (a minute)
exec make soak
