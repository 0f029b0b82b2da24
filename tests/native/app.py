# The --native tests' target: plan_route calls the C extension knap (built by
# the test next to this file, or in $KNAP_DIR) in a loop; marks its start.
import os
import sys

sys.path.insert(0, os.environ.get("KNAP_DIR", os.path.dirname(os.path.abspath(__file__))))
import knap  # noqa: E402


def plan_route(rounds):
    return knap.solve(rounds)


def main():
    print("ready", flush=True)
    while True:
        plan_route(20)


main()
