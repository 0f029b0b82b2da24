"""The sidecar manifest (deploy/kubernetes/ebpfprof-sidecar.yaml) against
the node it runs on: the sidecar's capabilities are the host's, so what it
says about privilege must be true, and a flood of processes matching
--match (one recording each) must fill the sidecar's limits, not the node."""
import re

import pytest

from conftest import ROOT, cannot_run

pytestmark = pytest.mark.nobpf

MANIFEST = ROOT / "deploy" / "kubernetes" / "ebpfprof-sidecar.yaml"
README = ROOT / "README.md"
SECURITY = ROOT / "docs" / "security.md"

# one recording: 36 MB resident and 30 MB of BPF maps (measured, 2 CPUs)
RECORDING_MB = 70


def pod():
    try:
        import yaml
    except ImportError:
        cannot_run("python3-yaml is not installed (scripts/deps.sh)")
    return yaml.safe_load(MANIFEST.read_text())


def sidecar():
    containers = {c["name"]: c for c in pod()["spec"]["containers"]}
    assert "--match" in containers["ebpfprof"]["args"]
    return containers["ebpfprof"]


def mebibytes(quantity):
    m = re.fullmatch(r"(\d+)(Mi|Gi)", str(quantity))
    assert m, f"memory as NMi or NGi, not {quantity!r}"
    return int(m.group(1)) * (1024 if m.group(2) == "Gi" else 1)


def millicores(quantity):
    m = re.fullmatch(r"(\d+)(m?)", str(quantity))
    assert m, f"cpu as N or Nm, not {quantity!r}"
    return int(m.group(1)) * (1 if m.group(2) else 1000)


def test_sidecar_has_cpu_and_memory_requests_and_limits():
    res = sidecar().get("resources", {})
    req, lim = res.get("requests", {}), res.get("limits", {})
    assert set(req) == {"cpu", "memory"} and set(lim) == {"cpu", "memory"}, res
    # room for at least one recording, and not the whole node
    assert RECORDING_MB < mebibytes(req["memory"]) <= mebibytes(lim["memory"]) <= 1024
    assert 0 < millicores(req["cpu"]) <= millicores(lim["cpu"]) <= 2000
    assert (req, lim) == ({"cpu": "100m", "memory": "128Mi"}, {"cpu": "1", "memory": "512Mi"})


def test_sidecar_holds_exactly_its_three_capabilities():
    sc = sidecar()["securityContext"]
    assert sc["privileged"] is False and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"], "add": ["BPF", "PERFMON", "SYS_PTRACE"]}


def comment_text(path_text):
    """The manifest's comments, as one line of words."""
    return " ".join(" ".join(l.lstrip()[1:].split()) for l in path_text.splitlines() if l.lstrip().startswith("#"))


def test_manifest_says_what_its_capabilities_give():
    words = comment_text(MANIFEST.read_text())
    # "privileged: false" is not "unprivileged": it must not claim that
    assert "not privileged" not in words, words
    for claim in ("That does not make the sidecar unprivileged",
                  "these are capabilities in the host's user namespace",
                  "CAP_BPF with CAP_PERFMON let a BPF program read the memory of every process on the node "
                  "and the kernel's memory",
                  "treat it as root on the node",
                  "a flood of matching processes would fill the node",
                  "set the kubelet's podPidsLimit",
                  "podman kube play (4.3) sets none, not even containers.conf's pids_limit: there the memory "
                  "limit is what bounds the recordings"):
        assert claim in words, claim


def security_section():
    """The security page the README links to (docs/security.md)."""
    return SECURITY.read_text()


def paragraphs(section):
    return [" ".join(p.split()) for p in section.split("\n\n") if p.strip()]


def test_security_page_has_the_sidecar_paragraph_before_known_limits():
    paras = paragraphs(security_section())
    heads = [p.split("**")[1] for p in paras if p.startswith("**")]
    assert "The sidecar." in heads and "Known limits." in heads
    assert heads.index("Known limits.") == heads.index("The sidecar.") + 1, heads
    sidecar_para = next(p for p in paras if p.startswith("**The sidecar.**"))
    for claim in ("CAP_BPF and CAP_PERFMON", "the host's user namespace", "every process on the node",
                  "the kernel's memory", "root on the node", "--match", "podPidsLimit",
                  "no pids limit, not even containers.conf's `pids_limit`"):
        assert claim in sidecar_para, claim
    # the limits it names are the manifest's
    res = sidecar()["resources"]
    for kind in ("requests", "limits"):
        named = f"{kind} " + ", ".join(f"`{key}: {value}`" for key, value in res[kind].items())
        assert named in sidecar_para, named


def test_readme_sidecar_section_does_not_call_it_unprivileged():
    text = README.read_text()
    start = text.index("\n## Running as a Kubernetes sidecar\n")
    section = " ".join(text[start:text.index("\n## ", start + 1)].split())
    assert "every other dropped, not privileged" not in section
    assert "not unprivileged" in section and "Security" in section


AGENT = ROOT / "deploy" / "kubernetes" / "ebpfprof-node-agent.yaml"


def agent_env():
    try:
        import yaml
    except ImportError:
        cannot_run("python3-yaml is not installed (scripts/deps.sh)")
    (c,) = yaml.safe_load(AGENT.read_text())["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e.get("value") for e in c["env"]}


def test_node_agent_sends_its_token_over_https_by_default():
    """Issue 44, item 8: the bearer token is a credential; the manifest's
    default URL was http:// (9ca0104)."""
    assert agent_env()["PUSH_URL"].startswith("https://")


def test_node_agent_match_is_one_application():
    """Issue 44, item 8: every Pod of the node shares the agent's 16 slots;
    the default match was "python" (9ca0104), any tenant's process. Now one
    application's command line, anchored."""
    match = re.compile(agent_env()["PUSH_MATCH"])
    assert match.search("python3 /app/app.py")
    for other in ("python3 /home/tenant/flood.py", "/usr/bin/python3 -c pass",
                  "python3 /app/app.py.bak", "sh -c python3 /app/app.py"):
        assert not match.search(other), other
