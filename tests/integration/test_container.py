"""The container image and the sidecar Pod, for real with podman: the image
is built from the Containerfile (`make container`), the Pod manifest of
deploy/kubernetes is played with `podman kube play`, and the sidecar, holding
only CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE under the seccomp profile made by
deploy/seccomp/make-profile.py, profiles the app container's Python process
found by --match through the shared PID namespace, one file per period."""
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT, Profile, cannot_run, read_gc_log

VERSION = re.search(r"^VERSION\s*\?=\s*(\S+)", (ROOT / "Makefile").read_text(), re.M).group(1)
IMAGE = f"localhost/ebpfprof:{VERSION}"
APP_IMAGE = f"localhost/ebpfprof-example-app:{VERSION}"
POD = "app-with-ebpfprof"
SIDECAR = f"{POD}-ebpfprof"
MANIFEST = ROOT / "deploy" / "kubernetes" / "ebpfprof-sidecar.yaml"

# This machine's podman: runc (crun refuses its hybrid cgroups), cgroupfs,
# and rlimits no higher than the host allows. EBPFPROF_CONTAINERS_CONF may
# name another containers.conf.
CONTAINERS_CONF = """[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
"""


@pytest.fixture(scope="module")
def podman_env(tmp_path_factory):
    if not shutil.which("podman"):
        cannot_run("podman is not installed (scripts/deps.sh installs it)")
    if os.geteuid() != 0:
        cannot_run("the sidecar test runs rootful podman (root)")
    conf = os.environ.get("EBPFPROF_CONTAINERS_CONF")
    if not conf:
        conf = tmp_path_factory.mktemp("podman") / "containers.conf"
        conf.write_text(CONTAINERS_CONF)
    env = dict(os.environ, CONTAINERS_CONF=str(conf))
    probe = subprocess.run(["podman", "info", "--format", "{{.Host.OCIRuntime.Name}}"], env=env,
                           capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        cannot_run(f"podman cannot run here: {probe.stderr.strip()}")
    return env


def podman(env, *args, timeout=600, check=True, cwd=None):
    res = subprocess.run(["podman", *args], env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    if check and res.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)}: {res.returncode}\n{res.stdout}\n{res.stderr}")
    return res


# The label an image built here carries: a digest of what it was built from.
INPUTS_LABEL = "org.ebpfprof.inputs"


def inputs_digest(env, containerfile, context, *extra):
    """A digest of what podman builds an image from: the Containerfile, every
    file under the sources its COPY lines name (all of them, ignored or not:
    one too many only costs a build), its base image and extra. podman's own
    layer cache missed for a fresh copy of the same files (their times
    differ): a fresh clone rebuilt the build stage (~25 s) into the same image."""
    text = containerfile.read_text()
    h = hashlib.sha256(text.encode())
    for base in re.findall(r"^FROM\s+(\S+)", text, re.M):
        res = podman(env, "image", "inspect", "--format", "{{.Id}}", base, check=False)
        h.update(f"FROM {base} {res.stdout.strip()}\n".encode())
    sources = []
    for line in re.findall(r"^COPY\s+(?!--from)(.+)$", text, re.M):
        sources += line.split()[:-1]
    for src in sorted(set(sources)):
        top = context / src
        files = sorted(top.rglob("*")) if top.is_dir() else [top]
        for f in files:
            if f.is_file():
                h.update(f"{f.relative_to(context)}\0".encode())
                h.update(hashlib.sha256(f.read_bytes()).digest())
    for x in extra:
        h.update(f"{x}\0".encode())
    return h.hexdigest()


def built_from(env, image, digest):
    res = podman(env, "image", "inspect", "--format", f'{{{{index .Labels "{INPUTS_LABEL}"}}}}', image,
                 check=False)
    return res.returncode == 0 and res.stdout.strip() == digest


@pytest.fixture(scope="module")
def images(podman_env):
    """make container, and the example app's image: each built unless the
    image there was built from the same files (its label says their digest).
    A clean machine builds both from the repository's files."""
    # the base image first (make container's first step): its id is an input
    base = subprocess.run([str(ROOT / "scripts" / "container-base.sh")], env=podman_env, capture_output=True,
                          text=True, timeout=1800)
    assert base.returncode == 0, base.stdout[-3000:] + base.stderr[-3000:]
    flags = os.environ.get("PODMAN_BUILD_FLAGS", "")
    digest = inputs_digest(podman_env, ROOT / "Containerfile", ROOT, VERSION, flags)
    if not built_from(podman_env, IMAGE, digest):
        res = subprocess.run(["make", "-s", "-C", str(ROOT), "container",
                              f"PODMAN_BUILD_FLAGS={flags} --label {INPUTS_LABEL}={digest}"],
                             env=podman_env, capture_output=True, text=True, timeout=1800)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
        assert built_from(podman_env, IMAGE, digest), f"make container did not build {IMAGE}"
    app = ROOT / "deploy" / "example-app"
    digest = inputs_digest(podman_env, app / "Containerfile", app)
    if not built_from(podman_env, APP_IMAGE, digest):
        podman(podman_env, "build", "--label", f"{INPUTS_LABEL}={digest}", "-t", APP_IMAGE,
               "-f", str(app / "Containerfile"), str(app), timeout=1800)
    return podman_env


def test_image_holds_only_the_runtime(images):
    env = images
    res = podman(env, "run", "--rm", "--entrypoint", "sh", IMAGE, "-c",
                 "dpkg-query -W -f='${Package}\\n' | grep -E '^(libbpf|libelf|zlib|clang|llvm|gcc|make|bpftool)';"
                 " ldd /usr/local/bin/ebpfprof; /usr/local/bin/ebpfprof --version")
    pkgs = {l for l in res.stdout.splitlines() if re.fullmatch(r"[a-z0-9.+-]+", l)}
    assert {"libbpf1", "libelf1", "zlib1g"} <= pkgs, res.stdout
    assert not pkgs & {"clang", "llvm", "gcc", "make", "bpftool", "libbpf-dev"}, pkgs
    assert f"ebpfprof {VERSION}" in res.stdout


def sidecar_manifest(tmp_path):
    text = MANIFEST.read_text()
    out = tmp_path / "profiles"
    out.mkdir()
    assert '"--rotate", "300"' in text and "/var/lib/ebpfprof/profiles" in text
    text = text.replace("/var/lib/ebpfprof/profiles", str(out))
    path = tmp_path / "pod.yaml"
    path.write_text(text)
    return path, out


def test_sidecar_pod_profiles_the_app(images, tmp_path):
    env = images
    seccomp = tmp_path / "seccomp"
    seccomp.mkdir()
    with open(seccomp / "ebpfprof.json", "w") as f:
        subprocess.run([str(ROOT / "deploy" / "seccomp" / "make-profile.py")], stdout=f, check=True)
    manifest, out = sidecar_manifest(tmp_path)
    podman(env, "pod", "rm", "-f", POD, check=False)
    # cwd: kube play would otherwise look for images to build in ./ebpfprof
    podman(env, "kube", "play", "--build=false", "--seccomp-profile-root", str(seccomp), str(manifest),
           cwd=tmp_path)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and "profiling process" not in podman(env, "logs", SIDECAR).stderr:
            time.sleep(0.5)
        time.sleep(3)
        # the manifest's way to write the current period now (its --rotate is 300 s)
        usr1 = re.search(r"kubectl exec POD -c ebpfprof -- sh -c '(.*?)'$", MANIFEST.read_text(), re.S | re.M)
        script = " ".join(l.lstrip("#").strip() for l in usr1.group(1).splitlines())
        podman(env, "exec", SIDECAR, "sh", "-c", script)
        while time.monotonic() < deadline and not list(out.glob("*.speedscope.json")):
            time.sleep(0.2)
        time.sleep(2)
        info = json.loads(podman(env, "inspect", SIDECAR).stdout)[0]
        assert sorted(info["EffectiveCaps"]) == ["CAP_BPF", "CAP_PERFMON", "CAP_SYS_PTRACE"]
        assert info["HostConfig"]["Privileged"] is False
        assert info["HostConfig"]["PidMode"].startswith("container:")
        status = Path(f"/proc/{info['State']['Pid']}/status").read_text()
        assert re.search(r"^Seccomp:\s+2$", status, re.M), "the sidecar runs under a seccomp filter"
        logs = podman(env, "logs", SIDECAR).stderr
        assert len(list(out.glob("*.speedscope.json"))) == 1, logs
    finally:
        # the sidecar first, as kubelet does: podman stops the pod's
        # containers together, and the infra container's exit (PID 1 of
        # the shared namespace) kills every process left in it
        podman(env, "stop", "-t", "20", SIDECAR, check=False)
        podman(env, "pod", "stop", "-t", "20", POD, check=False)
        logs = podman(env, "logs", SIDECAR, check=False).stdout + podman(env, "logs", SIDECAR, check=False).stderr
        podman(env, "pod", "rm", "-f", POD, check=False)
    m = re.search(r"profiling process (\d+): python3 /app/app.py", logs)
    assert m, logs
    app_pid = m.group(1)
    profiles = sorted(out.glob(f"ebpfprof-{app_pid}-*.speedscope.json"))
    # the period SIGUSR1 ended, and the last one
    assert len(profiles) == 2, (list(out.iterdir()), logs)
    assert len(re.findall(r"ebpfprof: period \d+: ", logs)) == 1, logs
    assert "1 process recorded into /profiles, 0 failed" in logs, logs[-1500:]
    for path in profiles:
        p = Profile(path)
        assert p.weight_with("handle_request") > 0, path.name
    gc_logs = sorted(out.glob(f"ebpfprof-{app_pid}-*.gc.jsonl"))
    assert len(gc_logs) == len(profiles)
    for log in gc_logs:
        head, _, _ = read_gc_log(log)
        assert head["duration_s"] > 0
    assert info["State"]["Pid"] > 0


def test_default_seccomp_profile_refuses_bpf(images, tmp_path):
    """Why the manifest carries its own seccomp profile."""
    env = images
    name = "ebpfprof-test-target"
    podman(env, "rm", "-f", name, check=False)
    podman(env, "run", "-d", "--name", name, APP_IMAGE, "60")
    try:
        res = podman(env, "run", "--rm", "--pid", f"container:{name}", "--cap-drop", "all", "--cap-add",
                     "BPF,PERFMON,SYS_PTRACE", "-v", "/sys/kernel/btf:/sys/kernel/btf:ro", IMAGE,
                     "--pid", "1", "-d", "1", "-o", "/tmp/p.json", check=False, timeout=120)
    finally:
        podman(env, "rm", "-f", name, check=False)
    assert res.returncode == 1
    assert "cannot load the BPF programs: Operation not permitted" in res.stderr, res.stderr
