"""A fixed amount of work per 100 ms tick (a few % of a CPU: it fits in a
thread's fair share even on a loaded machine), so its CPU time per second does
not depend on how busy the machine is: each tick calls steady() and changed(),
then sleeps until the next tick. --slower N makes changed() do N times the
work (the "2x slower function" of an A/B comparison). The truth is each
function's CPU time (time.thread_time) over the measured part, and tick by
tick on the clock of time.monotonic() (CLOCK_MONOTONIC) so that it can be
cut to a recording's window. --jitter S starts each tick up to S seconds
late, at random: a tick of exactly 100 ms is in phase with a 100 Hz sampling
clock, which then always lands in the same function (aliasing).

--cpu-ms MS makes each function run until it has used MS ms of CPU time
instead of a fixed number of rounds: two copies of this program side by side
on a shared VM can get CPUs up to 30% apart in speed (measured: the same rounds
took 0.173 s/s of CPU in one copy and 0.224 in the other), a real difference a
diff rightly flags; an A/A comparison wants the same CPU time on both sides.

SIGUSR1 ends the measured part at the end of its tick, before --seconds: a
harness that cuts the truth to a recording's window stops the program when
the recording has ended, not a margin for a slow attach later."""
import random
import signal
import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402


# the same loop in each, so each function's time is its own (self) time
def steady(rounds, cpu_s):
    acc = 0
    end = time.thread_time() + cpu_s
    while True:
        for i in range(rounds):
            acc ^= (i * 31) % 11
        if time.thread_time() >= end:
            return acc


def changed(rounds, cpu_s):
    acc = 0
    end = time.thread_time() + cpu_s
    while True:
        for i in range(rounds):
            acc ^= (i * 31) % 11
        if time.thread_time() >= end:
            return acc


def main():
    args = common.parse({"--slower": {"type": float, "default": 1.0},
                         "--rounds": {"type": int, "default": 60000},
                         "--jitter": {"type": float, "default": 0.0},
                         "--cpu-ms": {"type": float, "default": 0.0}})
    spent = {"steady": 0.0, "changed": 0.0}
    ticks = []  # [monotonic, steady's CPU so far, changed's CPU so far] per tick
    ended = []
    signal.signal(signal.SIGUSR1, lambda *_: ended.append(True))
    common.wait_for_go(args)
    begin = time.monotonic()
    tick = begin
    # by CPU time: short rounds, the clock read between them
    rounds = [args.rounds, int(args.rounds * args.slower)] if not args.cpu_ms else [500, 500]
    cpu_s = [args.cpu_ms / 1e3, args.cpu_ms * args.slower / 1e3]
    while time.monotonic() - begin < args.seconds and not ended:
        for name, fn, n, c in (("steady", steady, rounds[0], cpu_s[0]),
                               ("changed", changed, rounds[1], cpu_s[1])):
            t = time.thread_time()
            fn(n, c)
            spent[name] += time.thread_time() - t
        ticks.append([time.monotonic(), spent["steady"], spent["changed"]])
        tick += 0.1 + random.uniform(0, args.jitter)
        time.sleep(max(0.0, tick - time.monotonic()))
    end = time.monotonic()
    common.write_truth(args, {"cpu_seconds": spent, "wall_seconds": end - begin, "ticks": ticks})


if __name__ == "__main__":
    main()
