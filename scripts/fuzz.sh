#!/bin/bash
# Runs libFuzzer targets: scripts/fuzz.sh SECONDS JOBS BIN...
# Each runs for SECONDS on its corpus in build/fuzz/corpus-NAME (seeded on
# the first run), JOBS at a time; a crash, a leak, a hang of over 10 s or
# over 2 GiB of memory fails it (the reproducer is left in build/fuzz/).
# Prints one line per target: executions, corpus size, result.
set -u
cd "$(dirname "$0")/.."
seconds=$1 jobs=$2
shift 2
out=build/fuzz

seed() {	# NAME DIR: a few real inputs to start from
	case $1 in
	elf)	cp /bin/true "$2/true" 2>/dev/null
		printf '\177ELF' > "$2/magic" ;;
	debug_offsets)
		for b in 0 1 2 3 4 5 6 7; do printf "\\x$b" > "$2/blob$b"; done ;;
	recording)	# a small recording as ebpfprof writes it (two threads, GC)
		printf '%s' '{"shared":{"frames":[{"name":"main","file":"a.py","line":1},{"name":"[GC gen 0]"},{"name":"f","file":"a.py","line":5}]},"profiles":[{"type":"sampled","name":"py (pid 1) thread 1 \"MainThread\"","samples":[[0,2],[0,1],[0]],"weights":[10000000.0,20000000.0,0]},{"type":"sampled","name":"py (pid 1) thread 2 \"w\"","samples":[[0,2,2]],"weights":[30000000.0]}],"ebpfprof":{"duration_s":2.5,"rate_hz":100,"samples":4,"threads":[{"pid":1,"tid":1,"name":"MainThread","process":"py","states_s":{"on-cpu":0.25,"gc":0.25,"gil-wait":0.25,"waiting-for-gc":0.25,"lock-wait":0.25,"io":0.25,"sleep":0.25,"preempted":0.25,"other":0.25}},{"pid":1,"tid":2,"name":"w","process":"py","states_s":{"on-cpu":0.5,"gc":0.5,"gil-wait":0.5,"waiting-for-gc":0.5,"lock-wait":0.5,"io":0.5,"sleep":0.5,"preempted":0.5,"other":0.5}}],"gc":[{"pid":1,"generation":0,"count":3,"total_s":0.01,"p50_s":0.003,"p99_s":0.004,"max_s":0.004},{"pid":1,"generation":2,"count":1,"total_s":0.1,"p50_s":0.1,"p99_s":0.1,"max_s":0.1}]}}' > "$2/small.json" ;;
	*)	printf 'seed' > "$2/seed" ;;
	esac
}

run_one() {
	local bin=$1 name=${1##*/fuzz_} log
	local corpus=$out/corpus-$name
	log=$out/fuzz-$name.log
	mkdir -p "$corpus"
	[ -n "$(ls -A "$corpus")" ] || seed "$name" "$corpus"
	local maxlen=4096
	[ "$name" = elf ] && maxlen=65536
	"$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=$maxlen \
		-artifact_prefix="$out/crash-$name-" -print_final_stats=1 "$corpus" > "$log" 2>&1
	local rc=$?
	local execs cov
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
	if [ $rc -eq 0 ]; then
		echo "fuzz $name: ${execs:-?} executions in ${seconds}s, $cov, corpus $(ls "$corpus" | wc -l): clean"
	else
		echo "fuzz $name: FAILED (exit $rc) after ${execs:-?} executions; see $log"
		grep -E 'ERROR|SUMMARY|Test unit written' "$log" | head -5
	fi
	return $rc
}

status=0
pids=()
for bin in "$@"; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		sleep 1
	done
	run_one "$bin" &
	pids+=($!)
done
for pid in "${pids[@]}"; do
	wait "$pid" || status=1
done
exit $status
