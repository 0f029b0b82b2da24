"""A request handler, handle(request_id), serving three kinds of request of
known CPU cost (alpha 1, beta 2, gamma 3 units) in a shuffled order, for
--label. --key says what the request id is: the kind's name (str), a tuple
like Dask's ('alpha-6e1f0a3b', 7), or a float (neither: shown by its type).
--sleeper adds a fourth kind, 'nap', that sleeps 20 ms. The truth is each
kind's thread_time() and wall time as the program measured them."""
import random
import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import common  # noqa: E402

KINDS = {"alpha": 1, "beta": 2, "gamma": 3}
UNIT_ROUNDS = 4000


def work(units):
    acc = 0
    for i in range(units * UNIT_ROUNDS):
        acc ^= (i * 31) % 11
    return acc


def handle(request_id, units):
    if units:
        return work(units)
    time.sleep(0.02)
    return 0


def request_id(kind, how):
    if how == "str":
        return kind
    if how == "tuple":
        return (kind + "-6e1f0a3b", 7)
    return float(len(kind))


def main():
    args = common.parse({"--key": {"default": "str"},
                         "--sleeper": {"action": "store_true"}})
    kinds = dict(KINDS)
    if args.sleeper:
        kinds["nap"] = 0
    order = list(kinds) * 5
    rng = random.Random(3)
    cpu = {k: 0.0 for k in kinds}
    wall = {k: 0.0 for k in kinds}
    common.wait_for_go(args)
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        rng.shuffle(order)
        for kind in order:
            rid = request_id(kind, args.key)
            t, w = time.thread_time(), time.monotonic()
            handle(rid, kinds[kind])
            cpu[kind] += time.thread_time() - t
            wall[kind] += time.monotonic() - w
    common.write_truth(args, {"cpu_s": cpu, "wall_s": wall})


if __name__ == "__main__":
    main()
