#!/usr/bin/env python3
"""Where the suite's time went: reads the JUnit XML `make integration` keeps
(build/test-times.xml) and prints each file's total and the slowest cases.

    scripts/test-times.py [XML] [--slowest N]

The figures in docs/benchmarks.md ("The test suite's time") come from it."""
import argparse
import collections
import sys
import xml.etree.ElementTree as ET


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("xml", nargs="?", default="build/test-times.xml")
    ap.add_argument("--slowest", type=int, default=20)
    args = ap.parse_args()
    try:
        root = ET.parse(args.xml).getroot()
    except (OSError, ET.ParseError) as e:
        sys.exit(f"test-times: {args.xml}: {e}")
    cases = [(float(c.get("time", 0)), c.get("classname", ""), c.get("name", ""))
             for c in root.iter("testcase")]
    per_file = collections.Counter()
    for seconds, cls, _ in cases:
        per_file[cls.replace(".", "/") + ".py"] += seconds
    total = sum(s for s, _, _ in cases)
    print(f"{len(cases)} cases, {total:.0f} s in their setup, call and teardown")
    print("\nper file (s):")
    for name, seconds in per_file.most_common():
        print(f"{seconds:8.1f}  {name}")
    print(f"\nslowest {args.slowest} (s):")
    for seconds, cls, name in sorted(cases, reverse=True)[:args.slowest]:
        print(f"{seconds:8.1f}  {cls.rsplit('.', 1)[-1]}.py::{name}")


if __name__ == "__main__":
    main()
