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
