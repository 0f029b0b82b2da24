#!/bin/sh
# vmtests/smoke.sh - the checks vmtests/run.sh runs inside each test kernel
# (as root, in the repository, booted by vmtests/boot.sh). Can also be run as is on
# any host (root) as a quick end-to-end check of ./ebpfprof.
#
#   btf      /sys/kernel/btf/vmlinux exists (CO-RE needs the kernel's BTF)
#   features what the kernel lacks and what ebpfprof does instead (-v's lines; not a check)
#   cpu      two_hot.py under ebpfprof -d 2 (speedscope): samples in crunch_a and crunch_b,
#            named with their file and line (recorded with pidns's, below)
#   gc       gc_churn.py under ebpfprof --gc-log: "GC timed by USDT probes", and the GC events
#            logged against the collections its gc.callbacks saw in the window
#   idle     thread_mix.py under ebpfprof --idle: a "[GIL wait]" frame with weight, and
#            the exact totals in the thread table (kept in task storage, taken out by
#            a task iterator; before 5.12 in a hash map): the spinner threads' GIL waits, and the locker blocked
#            throughout (seeded and closed through a task iterator, on every kernel), each
#            thread's against its own /proc/PID/task/TID/schedstat: adding up to the window,
#            its on-CPU time, and the blocked state the rest but for its runnable time
#   gcwait   gc_vs_gil.py under ebpfprof --idle: the spinner's waits behind the collector's
#            collections in the thread table's "wait GC" column, against those collections
#            (gc.callbacks)
#   pidns    two_hot.py in a PID namespace of its own (unshare), profiled from outside by
#            its host pid: samples in crunch_a and crunch_b
#
# Under emulation loading the BPF programs (the verifier) is most of a
# recording's time, and it shares the guest's one CPU with the workloads. So cpu
# and pidns are one recording (--pid A,B, one profile each); the workloads that
# spin from their start are stopped (SIGSTOP) until ebpfprof's programs are
# loaded, before it attaches; those with a truth (gc, gcwait) wait at their --go
# until ebpfprof records them, then end on their own --seconds: no fixed sleeps,
# no margin for ebpfprof's start-up. (About 35 s a kernel, 57 s before.)
#
# ebpfprof always runs with -v, so a load failure leaves libbpf's and the
# verifier's log in its stderr; that log is printed when a check fails.
# Work files live on a tmpfs ($SMOKE_TMP, default /run or /dev/shm). If
# SMOKE_KEEP=DIR is set, every profile, log and stderr is copied there at the end
# (run.sh shares a host directory read-write for that).
# Output: one "smoke: NAME: ok|FAIL ..." line per check, then the final line
#   smoke-result: PASS            or
#   smoke-result: FAIL (reason; reason...)
# Exit status 0 only if every check passed.
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
PY=/usr/bin/python3.11          # the interpreter profiled (Debian's, with USDT probes)
CHECKPY=/usr/bin/python3        # for the JSON checks (never a pyenv shim: slow)
EBPFPROF=${SMOKE_EBPFPROF:-$ROOT/ebpfprof}   # (another build to test: SMOKE_EBPFPROF=path)
WL=$ROOT/tests/workloads

pick_tmpfs() {
    for d in ${SMOKE_TMP:-} /run /dev/shm /tmp; do
        [ -d "$d" ] && [ -w "$d" ] && [ "$(stat -f -c %T "$d" 2>/dev/null)" = tmpfs ] && { echo "$d"; return; }
    done
    echo /tmp
}
T=$(mktemp -d "$(pick_tmpfs)/ebpfprof-smoke.XXXXXX") || exit 2
PIDS=""
cleanup() {
    for p in $PIDS; do kill "$p" 2>/dev/null; done
    if [ -n "${SMOKE_KEEP:-}" ] && [ -d "$SMOKE_KEEP" ]; then cp -r "$T"/. "$SMOKE_KEEP"/ 2>/dev/null; fi
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

FAILS=""          # the summary: "check, check: reason; check: reason"
: > "$T/failures.tsv"   # one line per distinct reason: CHECKS<TAB>REASON (kept with SMOKE_KEEP)
NEWREASON=1       # 0 when the last fail() repeated an earlier reason
ok()   { echo "smoke: $1: ok${2:+ ($2)}"; }
fail() {
    echo "smoke: $1: FAIL ($2)"
    r=$(printf '%s' "$2" | tr '\t\n' '  ')
    if cut -f2- "$T/failures.tsv" | grep -qxF -- "$r"; then
        NEWREASON=0
        awk -F'\t' -v OFS='\t' -v n="$1" -v r="$r" '$2 == r { $1 = $1 ", " n } { print }' \
            "$T/failures.tsv" > "$T/failures.tsv.new" && mv "$T/failures.tsv.new" "$T/failures.tsv"
    else
        NEWREASON=1
        printf '%s\t%s\n' "$1" "$r" >> "$T/failures.tsv"
    fi
    FAILS=$(awk -F'\t' '{ printf "%s%s: %s", sep, $1, $2; sep = "; " }' "$T/failures.tsv")
}
now()  { date +%s.%N; }
took() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }

# show_log NAME FILE: ebpfprof's stderr after a failure (libbpf/verifier messages).
# A verifier log can be long: its head and its tail are what matter.
show_log() {
    if [ "$NEWREASON" = 0 ]; then
        echo "----- $1: same failure as above (full stderr: $1.ebpfprof.err) -----"
        return
    fi
    n=$(wc -l < "$2")
    echo "----- $1: ebpfprof -v stderr ($n lines) -----"
    if [ "$n" -le 200 ]; then cat "$2"
    else head -n 60 "$2"; echo "[... $((n - 160)) lines ...]"; tail -n 100 "$2"; fi
    echo "----- end of $1 ebpfprof stderr -----"
}

# start_workload NAME SCRIPT ARGS...: starts it in the background; sets WPID
# from the pid=N line it prints first on stderr. Returns non-zero if none came.
start_workload() {
    name=$1; script=$2; shift 2
    "$PY" "$WL/$script" "$@" 2> "$T/$name.workload.err" &
    PIDS="$PIDS $!"
    WPID=""
    i=0
    while [ $i -lt 300 ]; do                     # up to 30 s (slow guests)
        # (read: a builtin; under emulation every command started costs)
        read -r first 2>/dev/null < "$T/$name.workload.err" || first=""
        case $first in pid=[0-9]*) WPID=${first#pid=}; return 0 ;; esac
        kill -0 "$!" 2>/dev/null || break
        sleep 0.1; i=$((i + 1))
    done
    return 1
}

# profile NAME ARGS...: ./ebpfprof -v ARGS, stderr to $T/NAME.ebpfprof.err; sets ERC.
profile() {
    name=$1; shift
    timeout -k 5 120 "$EBPFPROF" -v "$@" 2> "$T/$name.ebpfprof.err"
    ERC=$?
}

# profile_watch NAME HELD GOFILE GOPID ARGS...: as profile, reading ebpfprof's
# stderr as it comes (no polling: the guest's one CPU is busy loading the BPF
# programs). HELD (pids, or ""): workloads that spin from their start, stopped
# by the caller so that the verifier has the CPU, continued once ebpfprof says
# its programs are loaded, before it attaches. GOFILE (or ""): the --go of the
# workload GOPID, given once ebpfprof records it (its -v line "recording GOPID
# from"), so that the workload's measured part is the recording's and ends on
# its own --seconds after, however long the load took (more on a busy
# machine). Both are done anyway if ebpfprof ends first: its exit says why. Sets ERC.
profile_watch() {
    name=$1 held=$2 go=$3 gopid=$4; shift 4
    { { timeout -k 5 120 "$EBPFPROF" -v "$@" 2>&1 1>&4; echo $? > "$T/$name.rc"; } | {
        while IFS= read -r line; do
            printf '%s\n' "$line"
            case $line in
                "ebpfprof: BPF programs loaded in "*)
                    [ -z "$held" ] || kill -CONT $held; held=""
                    [ -n "$go" ] || break ;;
                "ebpfprof: recording $gopid from"*)
                    break ;;
            esac
        done
        [ -z "$held" ] || kill -CONT $held
        [ -z "$go" ] || : > "$go"
        cat
    } > "$T/$name.ebpfprof.err"; } 4>&1
    read -r ERC < "$T/$name.rc" || ERC=125
}

# wait_exit PID: until that workload has ended (it writes its truth then), at most 30 s.
wait_exit() {
    i=0; while kill -0 "$1" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
}

# The reason, from ebpfprof's stderr: for a program the verifier rejected, its
# name and the verifier's closing message (the lines between the last
# instruction and "processed N insns"); else ebpfprof's own error line.
first_error() {
    awk '
        /BPF program load failed/ && !prog { prog = $0; sub(/^libbpf: /, "", prog); sub(/: BPF program load failed.*/, "", prog); failmsg = $0; sub(/.*BPF program load failed: /, "", failmsg) }
        /^-- BEGIN PROG LOAD LOG --|-- BEGIN PROG LOAD LOG --$/ { inlog = 1; msg = ""; next }
        inlog && /^[0-9]+: / { msg = ""; next }
        inlog && /^processed [0-9]+ insns/ { if (!vmsg) vmsg = msg; inlog = 0; next }
        inlog && /-- END PROG LOAD LOG --/ { if (!vmsg) vmsg = msg; inlog = 0; next }
        inlog && !/^;/ && !/^(caller|callee):/ && !/^ *(frame[0-9]+: )?R[0-9]+(_[a-z]+)?=/ { msg = msg (msg ? " / " : "") $0; next }
        /^ebpfprof: / && !eline { eline = $0 }
        END {
            if (prog) printf "%s rejected by the verifier (%s): %s", prog, failmsg, (vmsg ? vmsg : "no verifier message")
            else if (eline) printf "%s", eline
            else printf "no error line in its stderr"
        }' "$1" | cut -c1-400
}

# crunch_weights PROFILE [lines]: two_hot.py's speedscope profile has samples in
# both crunch_a and crunch_b (prints their weights); with "lines", both frames
# are also named with their file and line. Else the reason, last.
crunch_weights() {
    "$CHECKPY" - "$@" <<'EOF' 2>&1
import json, sys
doc = json.load(open(sys.argv[1]))
frames = doc["shared"]["frames"]
lines = sys.argv[2:] == ["lines"]
for fn, line in (("crunch_a", 18), ("crunch_b", 22)) if lines else ():
    named = [f for f in frames if f["name"] == fn]
    if not any(f.get("line") == line and f.get("file", "").endswith("/two_hot.py") for f in named):
        sys.exit(f"no frame {fn} at two_hot.py:{line}: {named}")
w = {"crunch_a": 0, "crunch_b": 0}
n = 0
for p in doc["profiles"]:
    for s, wt in zip(p["samples"], p["weights"]):
        n += 1
        names = {frames[i]["name"] for i in s}
        for fn in w:
            if fn in names:
                w[fn] += wt
summary = (f"{n} samples{', names and lines' if lines else ''}, "
           f"crunch_a weight {w['crunch_a']:g}, crunch_b weight {w['crunch_b']:g}")
if n == 0 or not w["crunch_a"] or not w["crunch_b"]:
    sys.exit("no samples in " + " and ".join(k for k, v in w.items() if not v) + f" ({summary})")
print(summary)
EOF
}

echo "smoke: kernel $(uname -r), $(nproc) CPU(s), ebpfprof $("$EBPFPROF" --version 2>&1 | head -n1)"

# --- btf --------------------------------------------------------------------------
if [ -r /sys/kernel/btf/vmlinux ]; then
    ok btf "/sys/kernel/btf/vmlinux, $(stat -c %s /sys/kernel/btf/vmlinux) bytes"
else
    fail btf "/sys/kernel/btf/vmlinux missing: the kernel has no BTF"
fi

for f in "$EBPFPROF" "$PY" "$CHECKPY"; do
    [ -x "$f" ] || { fail setup "$f missing (build with make; python3.11 from Debian)"; }
done
[ -n "$FAILS" ] && { echo "smoke-result: FAIL ($FAILS)"; exit 1; }

# --- cpu and pidns: two_hot.py twice, one in a PID namespace of its own (unshare) --------
# Both recorded in one session (--pid A,B: one profile each, the BPF programs
# loaded once, which is most of a recording's time under emulation); the one in
# the namespace is named by its host pid.
t0=$(now)
CPUPID=""
if start_workload cpu two_hot.py --seconds 120; then
    CPUPID=$WPID
else
    fail cpu "two_hot.py printed no pid= line: $(head -c 300 "$T/cpu.workload.err")"
fi
unshare --pid --fork --mount-proc "$PY" "$WL/two_hot.py" --seconds 120 2> "$T/pidns.workload.err" &
UPID=$!
PIDS="$PIDS $UPID"
NSPID=""
i=0
while [ $i -lt 600 ] && [ -z "$NSPID" ]; do     # its python: the child of unshare
    NSPID=""; read -r NSPID _ 2>/dev/null < /proc/$UPID/task/$UPID/children   # (no newline)
    read -r first 2>/dev/null < "$T/pidns.workload.err" || first=""
    [ "$first" = pid=1 ] || NSPID=""
    [ -n "$NSPID" ] || sleep 0.05
    i=$((i + 1))
done
[ -n "$NSPID" ] ||
    fail pidns "two_hot.py under unshare --pid printed no pid=1 line: $(head -c 300 "$T/pidns.workload.err")"
PIDLIST=$(echo $CPUPID $NSPID | tr ' ' ,)
if [ -n "$PIDLIST" ]; then
    mkdir "$T/two_hot"
    kill -STOP $CPUPID $NSPID              # they crunch from their start
    profile_watch cpu "$CPUPID $NSPID" "" "" --pid "$PIDLIST" -d 2 -o "$T/two_hot"
    # (SIGKILL: the init of a PID namespace ignores the others sent from outside)
    kill -KILL $CPUPID $NSPID 2>/dev/null
    for name in cpu pidns; do                    # cpu's frames also named with file and line
        case $name in cpu) pid=$CPUPID lines=lines ;; pidns) pid=$NSPID lines= ;; esac
        [ -n "$pid" ] || continue                # its workload did not start: failed above
        if [ $ERC -ne 0 ]; then
            fail $name "ebpfprof exit $ERC: $(first_error "$T/cpu.ebpfprof.err")"
            show_log $name "$T/cpu.ebpfprof.err"
        elif res=$(crunch_weights "$T/two_hot/ebpfprof-$pid.speedscope.json" $lines); then
            ok $name "$res, $(took "$t0")"
        else
            fail $name "$(echo "$res" | tail -n1)"
            show_log $name "$T/cpu.ebpfprof.err"
        fi
    done
fi

# what the kernel lacks, and what ebpfprof does instead (none on 6.1 and later)
grep -a '^ebpfprof: this kernel lacks' "$T/cpu.ebpfprof.err" 2>/dev/null | sort -u | sed 's/^ebpfprof: /smoke: features: /'

# --- gc: gc_churn.py with --gc-log, GC timed by USDT probes, against gc.callbacks ----
t0=$(now)
# it churns for 3 s from the go given once ebpfprof records it: the 2 s
# recorded fit; its truth (every collection as gc.callbacks saw it) is written
# when it ends
if ! start_workload gc gc_churn.py --seconds 3 --go "$T/gc.go" --truth "$T/gc.truth.json"; then
    fail gc "gc_churn.py printed no pid= line: $(head -c 300 "$T/gc.workload.err")"
else
    GCPID=$WPID
    profile_watch gc "" "$T/gc.go" "$WPID" --pid "$WPID" -d 2 --gc-log "$T/gc.jsonl" \
        -o "$T/gc_churn.speedscope.json"
    wait_exit "$GCPID"
    if [ $ERC -ne 0 ]; then
        fail gc "ebpfprof exit $ERC: $(first_error "$T/gc.ebpfprof.err")"
        show_log gc "$T/gc.ebpfprof.err"
    elif ! grep -q "GC timed by USDT probes" "$T/gc.ebpfprof.err"; then
        fail gc "stderr lacks \"GC timed by USDT probes\": $(grep -m1 'GC timed by' "$T/gc.ebpfprof.err" || echo 'no "GC timed by" line')"
        show_log gc "$T/gc.ebpfprof.err"
    elif res=$("$CHECKPY" - "$T/gc.jsonl" "$T/gc.truth.json" <<'EOF' 2>&1
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
gcs = [l for l in lines if l.get("type") == "gc"]
head = [l for l in lines if l.get("type") == "session"]
if not head:
    sys.exit("--gc-log has no session line")
try:
    truth = json.load(open(sys.argv[2]))["collections"]
except OSError as e:
    sys.exit(f"gc_churn.py wrote no truth: {e}")
# the collections gc.callbacks saw wholly inside the recording's window: each
# one is in the log (callbacks bracket the probes), and at most one more at
# each edge; their time within 20% (the callbacks' own microseconds)
start, end = head[0]["monotonic_start_s"], head[0]["monotonic_start_s"] + head[0]["duration_s"]
inside = [c for c in truth if start <= c[1] and c[1] + c[2] <= end]
logged, true_s = sum(g["duration_s"] for g in gcs), sum(c[2] for c in inside)
if len(inside) < 5 or not len(inside) <= len(gcs) <= len(inside) + 2:
    sys.exit(f"{len(gcs)} GC events logged, {len(inside)} collections by gc.callbacks in the window")
if not 0.8 * true_s <= logged <= 1.02 * true_s + 0.002:
    sys.exit(f"{logged * 1e3:.1f} ms of GC logged, {true_s * 1e3:.1f} ms by gc.callbacks in the window")
gens = sorted({g["generation"] for g in gcs})
print(f"{len(gcs)} GC events ({len(inside)} by gc.callbacks), generations {gens}, "
      f"{logged * 1e3:.1f} ms in GC ({true_s * 1e3:.1f} ms)")
EOF
    ); then
        ok gc "$res, USDT, $(took "$t0")"
    else
        fail gc "$(echo "$res" | tail -n1)"
        show_log gc "$T/gc.ebpfprof.err"
    fi
fi

# --- idle: thread_mix.py with --idle, a [GIL wait] frame ------------------------------
t0=$(now)
if ! start_workload idle thread_mix.py --seconds 120; then
    fail idle "thread_mix.py printed no pid= line: $(head -c 300 "$T/idle.workload.err")"
else
    # its threads started (the main one and six): the sampler below reads each from the first
    i=0
    while set -- /proc/"$WPID"/task/*; [ $# -lt 7 ] && [ $i -lt 300 ]; do
        sleep 0.05; i=$((i + 1))
    done
    # each thread's own kernel account while it is recorded: the truth of the totals
    "$CHECKPY" - "$WPID" "$T/idle.schedstat" <<'EOF' &
import json, os, sys, time
pid, out = sys.argv[1], open(sys.argv[2], "w")
while os.path.exists(f"/proc/{pid}"):
    row = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            row[tid] = [int(x) for x in open(f"/proc/{pid}/task/{tid}/schedstat").read().split()[:2]]
        except (OSError, ValueError):
            pass
    out.write(json.dumps([time.monotonic(), row]) + "\n")
    out.flush()
    time.sleep(0.02)
EOF
    SPID=$!
    profile idle --pid "$WPID" -d 2 --idle --gc-log "$T/idle.gc.jsonl" -o "$T/thread_mix.speedscope.json"
    kill "$WPID" 2>/dev/null
    wait "$SPID" 2>/dev/null
    if [ $ERC -ne 0 ]; then
        fail idle "ebpfprof exit $ERC: $(first_error "$T/idle.ebpfprof.err")"
        show_log idle "$T/idle.ebpfprof.err"
    elif res=$("$CHECKPY" - "$T/thread_mix.speedscope.json" "$T/idle.ebpfprof.err" "$T/idle.gc.jsonl" \
               "$T/idle.schedstat" <<'EOF' 2>&1
import json, re, sys
doc = json.load(open(sys.argv[1]))
err = open(sys.argv[2]).read()
undrained = re.search(r"(\d+) totals not drained", err)
if undrained and int(undrained.group(1)):
    sys.exit("the summary says %s totals were not drained" % undrained.group(1))
if "drained by a task iterator" not in err and not (
        re.search(r"lacks (task storage maps|BPF atomic exchanges)", err) and
        re.search(r"in a hash map \(no (task storage|BPF exchanges) in this kernel\)", err)):
    sys.exit("the totals are not kept per thread (-v says how they are kept)")
# the spinners' many short GIL waits, and the locker blocked from before the
# recording to after it (seeded at the start, closed at the end)
def row(name):
    return [re.findall(r"(\d+\.\d+)s\s+(\d+)%", l) for l in err.splitlines()
            if re.match(r"\s+\d+ %s " % name, l)]
spinners = row(r"spinner-\d")
gil = [float(c[2][0]) for c in spinners if len(c) == 9]
if len(gil) != 2 or min(gil) < 0.05:
    sys.exit("the thread table has no two spinners with GIL wait: %s" % (spinners or err[-800:]))
locker = row("locker")
if len(locker) != 1 or len(locker[0]) != 9 or int(locker[0][4][1]) < 80:
    sys.exit("the thread table has no locker mostly in lock wait: %s" % (locker or err[-800:]))
# the exact totals against each thread's schedstat (on-CPU, runnable ns), read
# every 20 ms and cut to the recording's window: the states add up to the
# window, on-CPU is the kernel's, a thread blocked in one state is in it
# whenever it is neither on a CPU nor runnable (within the reads' spacing)
head = json.loads(open(sys.argv[3]).readline())
start, end = head["monotonic_start_s"], head["monotonic_start_s"] + head["duration_s"]
reads = [json.loads(l) for l in open(sys.argv[4])]
def at(tid, t):
    got = [(w, row[str(tid)]) for w, row in reads if str(tid) in row]
    before = [x for x in got if x[0] <= t]
    after = [x for x in got if x[0] >= t]
    if not before or not after:
        sys.exit("no schedstat read of thread %d around %.3f" % (tid, t))
    (t0, a), (t1, b) = before[-1], after[0]
    f = (t - t0) / (t1 - t0) if t1 > t0 else 0
    return [(x + f * (y - x)) / 1e9 for x, y in zip(a, b)], t1 - t0
table = {t["name"]: t for t in doc["ebpfprof"]["threads"]}
for name, blocked in (("locker", "lock-wait"), ("spinner-1", "gil-wait"), ("spinner-2", "gil-wait")):
    t = table[name]
    (a, gap_a), (b, gap_b) = at(t["tid"], start), at(t["tid"], end)
    on_cpu, runnable = [y - x for x, y in zip(a, b)]
    # interpolated between reads: off by at most the reads' spacing at each end
    tol = gap_a + gap_b + 0.01
    st, window = t["states_s"], head["duration_s"]
    if abs(sum(st.values()) - window) > 0.05:
        sys.exit("%s: states add up to %.3f s in a %.3f s recording: %s" % (name, sum(st.values()), window, st))
    if abs(st["on-cpu"] + st["gc"] - on_cpu) > tol:
        sys.exit("%s: on-CPU %.3f s, its schedstat %.3f s" % (name, st["on-cpu"] + st["gc"], on_cpu))
    rest = window - on_cpu
    if not rest - runnable - tol <= st[blocked] <= rest + tol:
        sys.exit("%s: %s %.3f s, its schedstat leaves %.3f-%.3f s" % (name, blocked, st[blocked], rest - runnable, rest))
frames = doc["shared"]["frames"]
ids = {i for i, f in enumerate(frames) if f["name"] == "[GIL wait]"}
if not ids:
    sys.exit("no [GIL wait] frame in the profile (frames named [...]: %s)"
             % sorted({f["name"] for f in frames if f["name"].startswith("[")}))
weight, threads = 0, set()
for p in doc["profiles"]:
    for s, wt in zip(p["samples"], p["weights"]):
        if ids & set(s):
            weight += wt
            threads.add(p["name"])
if not weight:
    sys.exit("the [GIL wait] frame is in no sample")
print(f"[GIL wait] weight {weight:g} {doc['profiles'][0].get('unit', '')} in {len(threads)} thread(s), "
      f"spinners {gil[0]:.2f} s and {gil[1]:.2f} s in GIL wait, locker {locker[0][4][1]}% in lock wait")
EOF
    ); then
        ok idle "$res, $(took "$t0")"
    else
        fail idle "$(echo "$res" | tail -n1)"
        show_log idle "$T/idle.ebpfprof.err"
    fi
fi

# --- gcwait: gc_vs_gil.py with --idle, the spinner waits for the collector's GC ------
t0=$(now)
# the collector builds its graph while ebpfprof loads, and collects for 4 s
# from the go given once ebpfprof records it: the 3 s recorded fit; its truth
# (the collector's collections, by gc.callbacks) is written when it ends
if ! start_workload gcwait gc_vs_gil.py --seconds 4 --graph 100000 --go "$T/gcwait.go" \
        --truth "$T/gcwait.truth.json"; then
    fail gcwait "gc_vs_gil.py printed no pid= line: $(head -c 300 "$T/gcwait.workload.err")"
else
    GCPID=$WPID
    kill -STOP "$WPID"        # its spinner: from its start
    profile_watch gcwait "$WPID" "$T/gcwait.go" "$WPID" --pid "$WPID" -d 3 --idle \
        --gc-log "$T/gcwait.jsonl" -o "$T/gc_vs_gil.speedscope.json"
    wait_exit "$GCPID"
    if [ $ERC -ne 0 ]; then
        fail gcwait "ebpfprof exit $ERC: $(first_error "$T/gcwait.ebpfprof.err")"
        show_log gcwait "$T/gcwait.ebpfprof.err"
    elif res=$("$CHECKPY" - "$T/gcwait.ebpfprof.err" "$T/gcwait.jsonl" "$T/gcwait.truth.json" <<'EOF' 2>&1
import json, re, sys
err = open(sys.argv[1]).read()
rows = [re.findall(r"(\d+\.\d+)s\s+(\d+)%", l) for l in err.splitlines()
        if re.match(r"\s+\d+ spinner ", l)]
# columns: on-CPU, GC, GIL wait, wait GC, ...
if len(rows) != 1 or len(rows[0]) != 9:
    sys.exit("the thread table has no spinner row: %s" % (rows or err[-800:]))
waited = float(rows[0][3][0])
head = [json.loads(l) for l in open(sys.argv[2]) if '"session"' in l][0]
try:
    truth = json.load(open(sys.argv[3]))["collections"]
except OSError as e:
    sys.exit(f"gc_vs_gil.py wrote no truth: {e}")
# the spinner wants the GIL all the time: it waits for every collection the
# collector makes in the window (gc.callbacks' spans, which also hold the
# collector taking the GIL back around its callbacks, and each short collection
# of this 100,000-object graph begins while the spinner still runs out its
# switch interval: 0.60 of it measured here, 0.92 with test_states.py's graph)
start, end = head["monotonic_start_s"], head["monotonic_start_s"] + head["duration_s"]
true_s = sum(min(s + d, end) - max(s, start) for s, d in truth if s + d > start and s < end)
if not true_s > 0.1 or not 0.4 * true_s <= waited <= 1.25 * true_s:
    sys.exit(f"spinner waited {waited:.2f} s for GC, the collector collected {true_s:.2f} s (gc.callbacks)")
print(f"spinner {waited:.2f} s waiting for the GC, the collector's {true_s:.2f} s")
EOF
    ); then
        ok gcwait "$res, $(took "$t0")"
    else
        fail gcwait "$(echo "$res" | tail -n1)"
        show_log gcwait "$T/gcwait.ebpfprof.err"
    fi
fi

if [ -z "$FAILS" ]; then
    echo "smoke-result: PASS"
    exit 0
fi
echo "smoke-result: FAIL ($FAILS)"
exit 1
