# The --native tests' target: plan_route calls the C extension knap (built by
# the test next to this file, or in $KNAP_DIR) in a loop; marks its start.
# With KNAP_SLEEPER set, a thread "sleeper" sleeps in nap() meanwhile; with
# KNAP_EXTRA, plan_route also calls knap_extra_pass (knap.extra).
import os
import sys
import threading
import time

sys.path.insert(0, os.environ.get("KNAP_DIR", os.path.dirname(os.path.abspath(__file__))))
import knap  # noqa: E402

EXTRA = bool(os.environ.get("KNAP_EXTRA"))


def plan_route(rounds):
    if EXTRA:
        knap.extra(rounds * 2)
    return knap.solve(rounds)


def nap():
    while True:
        time.sleep(1)


def main():
    if os.environ.get("KNAP_SLEEPER"):
        threading.Thread(target=nap, name="sleeper", daemon=True).start()
    print("ready", flush=True)
    while True:
        plan_route(20)


main()
