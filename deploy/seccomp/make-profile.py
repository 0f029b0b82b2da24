#!/usr/bin/env python3
"""Writes the seccomp profile of the ebpfprof sidecar: the container runtime's
own default profile, with bpf() and perf_event_open() allowed without
CAP_SYS_ADMIN. Everything else the default denies stays denied.

    deploy/seccomp/make-profile.py [DEFAULT.json] > ebpfprof-seccomp.json

DEFAULT.json is the runtime's default profile in the OCI/Docker JSON format:
/usr/share/containers/seccomp.json (podman, CRI-O) by default. The default
profiles of container runtimes (Kubernetes' RuntimeDefault included) allow
these two calls only to containers holding CAP_SYS_ADMIN; the sidecar holds
CAP_BPF and CAP_PERFMON instead, which is what the kernel checks."""
import json
import sys

NEEDED = ("bpf", "perf_event_open")


def widen(profile):
    rules = []
    for rule in profile.get("syscalls", []):
        names = [n for n in rule.get("names", []) if n not in NEEDED]
        if not names:
            continue  # a rule only about the two calls: replaced below
        rules.append(dict(rule, names=names))
    rules.append({"names": list(NEEDED), "action": "SCMP_ACT_ALLOW",
                  "comment": "ebpfprof: the kernel checks CAP_BPF and CAP_PERFMON itself"})
    profile["syscalls"] = rules
    return profile


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/containers/seccomp.json"
    with open(path) as f:
        profile = json.load(f)
    if profile.get("defaultAction") == "SCMP_ACT_ALLOW":
        sys.exit(f"{path}: allows every call by default; nothing to widen")
    json.dump(widen(profile), sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
