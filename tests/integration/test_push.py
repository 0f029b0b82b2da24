"""--push: each period's profile of each process sent to a Grafana Pyroscope
ingest endpoint. No Pyroscope server can be installed here: the server below
is a stand-in that implements the documented contract (POST /ingest, the
query parameters, a pprof body plain or gzip, or multipart/form-data with a
"profile" and a "sample_type_config" part) and checks every request it gets.
Down means down: nothing listens on its port (connections refused)."""
import base64
import email.parser
import email.policy
import gzip
import json
import os
import re
import socket
import ssl
import stat
import subprocess
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import EBPFPROF, ROOT, cannot_run, require_interpreter, run_ebpfprof, state_rows

LABEL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
NAME = re.compile(r"(?P<app>[^{}=,]+)\{(?P<labels>[^{}]*)\}\Z")
# --push's sample types after samples and cpu: every state but on-CPU, '_' for '-'
STATES = [row["name"].replace("-", "_") for row in state_rows()[1:]]


# --- a minimal protobuf reader: enough of profile.proto to check a pprof ---

def varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return v, i


def fields(buf):
    """(field number, wire type, value) of a message: ints or bytes."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = varint(buf, i)
        elif wire == 2:
            n, i = varint(buf, i)
            v = buf[i:i + n]
            assert len(v) == n, "truncated field"
            i += n
        else:
            raise AssertionError(f"unexpected wire type {wire}")
        yield num, wire, v


def packed(v, wire):
    if wire == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def parse_pprof(data):
    """The profile's sample types, and its samples as (values, labels)."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    strings, types, raw_samples = [], [], []
    for num, wire, v in fields(data):
        if num == 6:
            strings.append(v.decode("utf-8"))
        elif num == 1:
            t = {n: x for n, _, x in fields(v)}
            types.append((t.get(1, 0), t.get(2, 0)))
        elif num == 2:
            raw_samples.append(v)
    samples = []
    for raw in raw_samples:
        values, labels = [], {}
        for num, wire, v in fields(raw):
            if num == 2:
                values += packed(v, wire)
            elif num == 3:
                lab = {n: x for n, _, x in fields(v)}
                labels[strings[lab[1]]] = strings[lab[2]] if 2 in lab else lab.get(3, 0)
        samples.append((values, labels))
    return [(strings[a], strings[b]) for a, b in types], samples


# --- the stand-in ingest server ---

class Ingest:
    """Records every request; a request that breaks the contract is noted
    in self.errors (the tests assert there are none)."""

    def __init__(self, port=0, tls=None):
        self.requests, self.errors = [], []
        self.lock = threading.Lock()
        self.port = port
        self.tls = tls          # (certificate, key): https
        self.server = None

    def start(self):
        ingest = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                try:
                    ingest.check(self.command, self.path, self.headers, body)
                    code = 200
                except AssertionError as e:
                    with ingest.lock:
                        ingest.errors.append(f"{self.path}: {e}")
                    code = 400
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self):
                with ingest.lock:
                    ingest.errors.append(f"GET {self.path}")
                self.send_response(405)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self.server.server_address[1]
        if self.tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*map(str, self.tls))
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()

    @property
    def url(self):
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def check(self, method, path, headers, body):
        url = urllib.parse.urlsplit(path)
        assert method == "POST" and url.path == "/ingest", (method, url.path)
        q = urllib.parse.parse_qs(url.query, keep_blank_values=True, strict_parsing=True)
        assert all(len(v) == 1 for v in q.values()), q
        q = {k: v[0] for k, v in q.items()}
        for key in ("name", "from", "until"):
            assert key in q, f"no {key}"
        assert q.get("format") == "pprof" and q.get("spyName") == "ebpfprof", q
        assert q.get("aggregationType") == "sum" and q.get("units"), q
        assert re.fullmatch(r"\d+", q["sampleRate"]) and int(q["sampleRate"]) > 0, q
        assert re.fullmatch(r"\d+", q["from"]) and re.fullmatch(r"\d+", q["until"]), q
        frm, until = int(q["from"]), int(q["until"])
        assert frm < until and abs(until - time.time()) < 600, (frm, until)
        m = NAME.match(q["name"])
        assert m, q["name"]
        labels = {}
        for pair in m["labels"].split(",") if m["labels"] else []:
            k, _, v = pair.partition("=")
            assert LABEL_NAME.match(k) and v and k not in labels, pair
            labels[k] = v
        ctype = headers.get("Content-Type", "")
        if ctype.startswith("multipart/form-data"):
            msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                f"Content-Type: {ctype}\r\n\r\n".encode() + body)
            assert msg.is_multipart(), "multipart without parts"
            parts = {p.get_param("name", header="content-disposition"): p.get_payload(decode=True)
                     for p in msg.iter_parts()}
            assert "profile" in parts, parts.keys()
            profile = parts["profile"]
            config = json.loads(parts["sample_type_config"]) if "sample_type_config" in parts else None
        else:
            profile, config = body, None
        types, samples = parse_pprof(profile)
        assert types and all(len(v) == len(types) for v, _ in samples), (types, samples[:2])
        if config is not None:
            assert set(config) == {t for t, _ in types}, (config, types)
            for t, unit in types:
                assert config[t]["units"] in ("samples", unit), (t, config[t])
                assert config[t]["aggregation"] in ("sum", "average"), config[t]
        with self.lock:
            self.requests.append({"query": q, "app": m["app"], "labels": labels, "types": types,
                                  "samples": samples, "profile": profile, "headers": dict(headers),
                                  "at": time.monotonic()})


@pytest.fixture
def ingest():
    servers = []

    def make(port=0, start=True, tls=None):
        s = Ingest(port, tls)
        servers.append(s)
        return s.start() if start else s

    yield make
    for s in servers:
        s.stop()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def push_run(pid, *args, duration=7, rotate=2):
    return subprocess.Popen([str(EBPFPROF), "--pid", str(pid), "--rotate", str(rotate), "-d", str(duration),
                             "--idle", *map(str, args)], stderr=subprocess.PIPE, text=True)


def periods_of(stderr):
    """The periods recorded: one line each but the last, taken as it stops."""
    return len(re.findall(r"^ebpfprof: period \d+: .* pushed$", stderr, re.M)) + 1


def test_every_period_arrives_labelled(workloads, ingest, tmp_path):
    """--rotate 2 -d 7: four periods, each pushed once, in order, labelled
    with the process's name, pid, host and the tags; the pprof has the CPU
    and every off-CPU state as sample types, and go tool pprof reads it."""
    interp = require_interpreter("debian-3.11")
    w = workloads(interp, "thread_mix.py", seconds=30)
    server = ingest()
    rec = push_run(w.pid, "--push", server.url, "--tag", "env=test", "--tag", "team=perf-1")
    _, err = rec.communicate(timeout=60)
    ended = time.monotonic()
    assert rec.returncode == 0, err
    assert not server.errors, server.errors
    reqs = server.requests
    assert periods_of(err) == 4 and len(reqs) == 4, (err, len(reqs))
    # each as its period ends (at 2, 4 and 6 s), not all at the end (7 s)
    before_end = [ended - r["at"] for r in reqs]
    assert before_end[0] > 4.5 and all(1.5 < a - b < 2.5 for a, b in zip(before_end, before_end[1:3])), \
        before_end
    assert "push: 4 of 4 requests sent" in err, err
    comm = Path(f"/proc/{w.pid}/comm").read_text().strip()
    host = socket.gethostname()
    for r in reqs:
        assert r["app"] == comm, r["app"]
        assert r["labels"] == {"pid": str(w.pid), "host": host, "env": "test", "team": "perf-1"}, r["labels"]
        names = [t for t, _ in r["types"]]
        assert names == ["samples", "cpu", *STATES], names
        assert all(s[1].get("pid") == w.pid for s in r["samples"]), "a sample of another process"
        cpu = sum(v[1] for v, _ in r["samples"])
        io = sum(v[names.index("io")] for v, _ in r["samples"])
        assert cpu > 0 and io > 0, (cpu, io)      # thread_mix: a spinner and a reader in recv
    # in order, one after the other, covering the run
    froms = [int(r["query"]["from"]) for r in reqs]
    untils = [int(r["query"]["until"]) for r in reqs]
    assert froms == sorted(froms) and all(u >= f for f, u in zip(froms[1:], untils)), (froms, untils)
    assert 6 <= untils[-1] - froms[0] <= 9, (froms, untils)
    # go tool pprof (Debian's golang-go) reads what was pushed
    path = tmp_path / "pushed.pb.gz"
    path.write_bytes(reqs[1]["profile"])
    raw = subprocess.run(["go", "tool", "pprof", "-raw", str(path)], capture_output=True, text=True, timeout=120)
    assert raw.returncode == 0, raw.stderr
    assert "gil_wait/nanoseconds" in raw.stdout and "cpu/nanoseconds" in raw.stdout, raw.stdout[:400]


def test_app_name_and_subprocess_each_pushed(workloads, ingest, tmp_path):
    """--app names the service; --subprocesses: each process of the period
    is its own request, labelled with its own pid, holding only its samples."""
    interp = require_interpreter("debian-3.11")
    server = ingest()
    script = tmp_path / "parent.py"
    script.write_text(
        "import subprocess, sys, time\n"
        "time.sleep(1)\n"     # started once the recording follows it
        "child = subprocess.Popen([sys.executable, '-c', 'import time\\nt=time.time()+12\\nwhile time.time()<t: pass'])\n"
        "t = time.time() + 12\n"
        "while time.time() < t: sum(range(1000))\n"
        "child.wait()\n")
    rec = subprocess.Popen([str(EBPFPROF), "--rotate", "2", "-d", "5", "--subprocesses", "--push", server.url,
                            "--app", "shop{api},x=y", "--", *interp.argv, str(script)],
                           stderr=subprocess.PIPE, text=True)
    _, err = rec.communicate(timeout=60)
    assert rec.returncode == 0, err
    assert not server.errors, server.errors
    by_pid = {}
    for r in server.requests:
        # the name syntax has no escapes: {, }, = and , are each written _
        assert r["app"] == "shop_api__x_y", r["app"]
        pids = {s[1]["pid"] for s in r["samples"]}
        assert pids == {int(r["labels"]["pid"])}, (pids, r["labels"])
        by_pid.setdefault(r["labels"]["pid"], []).append(r)
    assert len(by_pid) == 2, by_pid.keys()
    assert all(len(rs) >= 2 for rs in by_pid.values()), {p: len(rs) for p, rs in by_pid.items()}


def test_match_pushes_each_process_and_writes_no_file(workloads, ingest, tmp_path):
    """--match with --push and no -o (the node agent's way): every matching
    process's periods are pushed under its own pid, and no profile file is
    written anywhere."""
    interp = require_interpreter("debian-3.11")
    marker = tmp_path / "push-match-marker"
    ws = [workloads(interp, "two_hot.py", seconds=30, truth=f"{marker}-{i}") for i in range(2)]
    server = ingest()
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    res = subprocess.run([str(EBPFPROF), "--match", re.escape(str(marker)), "--rotate", "2", "-d", "5",
                          "--push", server.url, "--spool", cwd / "spool"],
                         capture_output=True, text=True, timeout=60, cwd=cwd)
    assert res.returncode == 0, res.stderr
    assert not server.errors, server.errors
    pids = sorted(int(r["labels"]["pid"]) for r in server.requests)
    assert sorted({*pids}) == sorted(w.pid for w in ws), (pids, res.stderr)
    assert all(pids.count(w.pid) >= 2 for w in ws), pids
    assert [p.name for p in cwd.iterdir()] == ["spool"], list(cwd.iterdir())
    assert not list((cwd / "spool").iterdir())


def test_backend_down_for_two_periods_then_up(workloads, ingest, tmp_path):
    """Nothing listens for the first two periods: the recording goes on, and
    those periods arrive once the server is up, before the later ones."""
    interp = require_interpreter("debian-3.11")
    w = workloads(interp, "two_hot.py", seconds=30)
    port = free_port()
    spool = tmp_path / "spool"
    rec = push_run(w.pid, "--push", f"http://127.0.0.1:{port}", "--spool", spool, duration=9)
    time.sleep(4.8)         # periods end at 2 and 4 s (plus the start)
    server = ingest(port)
    _, err = rec.communicate(timeout=60)
    assert rec.returncode == 0, err
    assert periods_of(err) == 5, err
    # every period recorded while the server was down was still cut on time
    assert not server.errors, server.errors
    reqs = server.requests
    assert len(reqs) == 5, (len(reqs), err)
    froms = [int(r["query"]["from"]) for r in reqs]
    assert froms == sorted(froms), froms
    assert all(r["labels"]["pid"] == str(w.pid) for r in reqs)
    assert "push: 5 of 5 requests sent" in err, err
    assert not list(spool.iterdir()), list(spool.iterdir())


def test_backend_down_for_good_spool_stays_bounded(workloads, ingest, tmp_path):
    """Nothing ever listens: the spool never holds more than its bound, the
    oldest periods are dropped first and counted, the newest are left in it
    (mode 0600), and the recording ends on time. The next run with the same
    spool sends them first, in order; a live writer's file stays its own."""
    interp = require_interpreter("debian-3.11")
    w = workloads(interp, "thread_mix.py", seconds=30)
    spool = tmp_path / "spool"
    bound = 0.01            # MB: a few periods of thread_mix (1.5 to 2 KB each)
    start = time.monotonic()
    rec = push_run(w.pid, "--push", f"http://127.0.0.1:{free_port()}", "--spool", spool,
                   "--spool-max-mb", bound, duration=8, rotate=0.5)
    biggest = 0
    while rec.poll() is None:
        if spool.exists():
            sizes = []
            for f in spool.iterdir():
                try:
                    if not f.name.startswith("."):
                        sizes.append(f.stat().st_size)
                except FileNotFoundError:
                    pass
            biggest = max(biggest, sum(sizes))
        time.sleep(0.05)
    err = rec.stderr.read()
    took = time.monotonic() - start
    assert rec.returncode == 0, err
    assert took < 8 + 12, took      # the last try stops at the first failure
    periods = periods_of(err)
    assert periods >= 14, err
    assert 0 < biggest <= bound * 1048576, biggest
    m = re.search(r"push: 0 of (\d+) requests sent to \S+, (\d+) dropped \(spool full or unwritable\), "
                  r"(\d+) not sent \(left in the spool\); last error: (.+)", err)
    assert m, err
    added, dropped, left = map(int, m.group(1, 2, 3))
    assert added == periods and dropped + left == added and dropped > 0 and left > 0, m.groups()
    assert "connect" in m.group(4).lower(), m.group(4)
    files = sorted(spool.iterdir())
    assert len(files) == left, files
    seqs = [int(f.name.rsplit("-", 1)[1]) for f in files]
    # the newest kept, the oldest dropped; but the one being sent when room
    # was made, which may stay ahead of them
    newest = list(range(added - left + 1, added + 1))
    assert seqs == newest or (seqs[0] < newest[0] and seqs[1:] == newest[1:]), seqs
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)
    left_froms = []
    for f in files:
        query = f.read_bytes().split(b"\n", 2)[1].decode()
        left_froms.append(int(urllib.parse.parse_qs(query)["from"][0]))
    # a crashed write's temporary file, and another live writer's request
    (spool / ".push-999999-0000000001.AbC123").write_bytes(b"half")
    fake = tmp_path / "ebpfprof"     # comm "ebpfprof": another recording, running
    fake.write_bytes(Path("/bin/sleep").read_bytes())
    fake.chmod(0o755)
    sibling = subprocess.Popen([str(fake), "30"])
    try:
        (spool / f"push-{sibling.pid}-0000000001").write_bytes(b"theirs")
        # the next run, the server up: what the first left goes first, in order
        server = ingest()
        res = run_ebpfprof("--pid", w.pid, "--rotate", 1, "-d", 2.5, "--push", server.url, "--spool", spool,
                           "--spool-max-mb", bound, check=True)
    finally:
        sibling.kill()
    assert not server.errors, server.errors
    froms = [int(r["query"]["from"]) for r in server.requests]
    assert froms[:left] == left_froms and len(froms) == left + 3, (froms, left_froms)
    assert f"push: {left + 3} of {left + 3} requests sent to {server.url}/ingest ({left} of them left by an earlier run)" \
        in res.stderr, res.stderr
    # the live writer's file is its own: kept, not sent
    assert sorted(p.name for p in spool.iterdir()) == [f"push-{sibling.pid}-0000000001"]


def test_hung_backend_never_holds_the_recording(workloads, tmp_path):
    """A backend that takes the connection and never answers: every period
    is still cut on time, and the end waits for it at most the last round's
    10 s (the request under way abandoned), its periods counted as not sent."""
    interp = require_interpreter("debian-3.11")
    w = workloads(interp, "two_hot.py", seconds=60)
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(16)         # the kernel completes the handshakes; no one reads
        start = time.monotonic()
        rec = push_run(w.pid, "--push", f"http://127.0.0.1:{hung.getsockname()[1]}", duration=5, rotate=1)
        _, err = rec.communicate(timeout=60)
        took = time.monotonic() - start
    assert rec.returncode == 0, err
    secs = [float(x) for x in re.findall(r"^ebpfprof: period \d+: ([\d.]+) s", err, re.M)]
    # (the first period also holds the attach, whose time follows the machine's load)
    assert len(secs) == 4 and all(0.8 < x < 1.3 for x in secs[1:]), err
    assert 5 + 9 < took < 5 + 14, took
    assert re.search(r"push: 0 of 5 requests sent to \S+, 5 not sent \(lost: no --spool\); last error: ", err), err


def test_auth_from_files(workloads, ingest, tmp_path):
    """A bearer token and basic auth come from files (never argv) and go in
    every request's Authorization header; --push-tenant in X-Scope-OrgID."""
    interp = require_interpreter("debian-3.11")
    w = workloads(interp, "two_hot.py", seconds=30)
    server = ingest()
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    token.chmod(0o600)
    res = run_ebpfprof("--pid", w.pid, "--rotate", 1, "-d", 2.5, "--push", server.url,
                       "--push-token-file", token, "--push-tenant", "team-a", check=True)
    assert not server.errors and len(server.requests) == 3, (server.errors, res.stderr)
    assert all(r["headers"].get("Authorization") == "Bearer s3cret-token" for r in server.requests)
    assert all(r["headers"].get("X-Scope-OrgID") == "team-a" for r in server.requests)
    assert "s3cret" not in res.stderr
    basic = tmp_path / "basic"
    basic.write_text("agent:pa:ss\n")
    basic.chmod(0o640)
    run_ebpfprof("--pid", w.pid, "--rotate", 1, "-d", 1.5, "--push", server.url,
                 "--push-basic-auth-file", basic, check=True)
    want = "Basic " + base64.b64encode(b"agent:pa:ss").decode()
    assert [r["headers"].get("Authorization") for r in server.requests[3:]] == [want, want]


def test_tls_verified_as_curl_does(workloads, ingest, tmp_path):
    """https: a server whose certificate no trusted CA signed gets nothing
    (the error says why); trusted through --push-ca-file, every period."""
    interp = require_interpreter("debian-3.11")
    w = workloads(interp, "two_hot.py", seconds=30)
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    made = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                           "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    server = ingest(tls=(cert, key))
    res = run_ebpfprof("--pid", w.pid, "--rotate", 1, "-d", 2.5, "--push", server.url, check=True)
    assert not server.requests
    m = re.search(r"push: 0 of 3 requests sent to \S+, 3 not sent \(lost: no --spool\); last error: (.+)", res.stderr)
    assert m and "certificate" in m.group(1).lower(), res.stderr
    res = run_ebpfprof("--pid", w.pid, "--rotate", 1, "-d", 2.5, "--push", server.url, "--push-ca-file", cert,
                       check=True)
    assert not server.errors and len(server.requests) == 3, (server.errors, res.stderr)
    assert "push: 3 of 3 requests sent" in res.stderr


def one_line_error(res, text):
    first = res.stderr.splitlines()[0] if res.stderr else ""
    assert res.returncode != 0 and first.startswith("ebpfprof: ") and text in first, res.stderr


def test_bad_push_options(workloads, tmp_path):
    """Each mistake is one line and a non-zero exit, before anything is recorded."""
    interp = require_interpreter("debian-3.11")
    w = workloads(interp, "two_hot.py", seconds=30)
    url = "http://127.0.0.1:9"
    one_line_error(run_ebpfprof("--pid", w.pid, "--push", url), "--push needs --rotate")
    one_line_error(run_ebpfprof("--pid", w.pid, "--rotate", 1, "--push", url, "--tag", "9lives=x"),
                   "invalid --tag for --push")
    one_line_error(run_ebpfprof("--pid", w.pid, "--rotate", 1, "--push", url, "--tag", "__name__=x"),
                   "invalid --tag for --push")
    one_line_error(run_ebpfprof("--pid", w.pid, "--rotate", 1, "--push", "ftp://host"),
                   "invalid --push URL")
    one_line_error(run_ebpfprof("--pid", w.pid, "--spool", tmp_path), "need --push URL")
    one_line_error(run_ebpfprof("--pid", w.pid, "--rotate", 1, "--push", url, "--push-tenant", "a b\r\nX: y"),
                   "invalid --push-tenant")
    missing = tmp_path / "no-such-token"
    one_line_error(run_ebpfprof("--pid", w.pid, "--rotate", 1, "--push", url, "--push-token-file", missing),
                   f"cannot read token file {missing}")
    shared = tmp_path / "shared-token"
    shared.write_text("t\n")
    shared.chmod(0o644)
    one_line_error(run_ebpfprof("--pid", w.pid, "--rotate", 1, "--push", url, "--push-token-file", shared),
                   "others may access it")
    basic = tmp_path / "basic"
    basic.write_text("no-colon\n")
    basic.chmod(0o600)
    one_line_error(run_ebpfprof("--pid", w.pid, "--rotate", 1, "--push", url, "--push-basic-auth-file", basic),
                   "not USER:PASSWORD")
    # the spool: never through a symlink, never a directory others can write
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    one_line_error(run_ebpfprof("--pid", w.pid, "--rotate", 1, "--push", url, "--spool", link),
                   "spool directory")
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    one_line_error(run_ebpfprof("--pid", w.pid, "--rotate", 1, "--push", url, "--spool", open_dir),
                   "writable by no one else")
    assert not list(real.iterdir())


def test_node_agent_manifest_least_privilege_and_push(tmp_path):
    """deploy/kubernetes/ebpfprof-node-agent.yaml: a DaemonSet with the
    sidecar's privileges and no more (podman 4.3 cannot play a DaemonSet:
    its fields are checked here), pushing to a configurable URL with a
    token from a Secret mounted 0400, and its arguments are accepted by
    ebpfprof itself."""
    try:
        import yaml
    except ImportError:
        cannot_run("python3-yaml is not installed (scripts/deps.sh installs it)")
    agent = yaml.safe_load((ROOT / "deploy" / "kubernetes" / "ebpfprof-node-agent.yaml").read_text())
    sidecar = yaml.safe_load((ROOT / "deploy" / "kubernetes" / "ebpfprof-sidecar.yaml").read_text())
    assert agent["kind"] == "DaemonSet"
    pod = agent["spec"]["template"]["spec"]
    assert pod["hostPID"] is True and pod["automountServiceAccountToken"] is False
    assert "hostNetwork" not in pod and "hostIPC" not in pod
    (c,) = pod["containers"]
    side = next(x for x in sidecar["spec"]["containers"] if x["name"] == "ebpfprof")
    sec = c["securityContext"]
    for key in ("privileged", "allowPrivilegeEscalation", "capabilities", "seccompProfile"):
        assert sec[key] == side["securityContext"][key], key
    assert sec["capabilities"] == {"drop": ["ALL"], "add": ["BPF", "PERFMON", "SYS_PTRACE"]}
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    vols = {v["name"]: v for v in pod["volumes"]}
    assert mounts["btf"]["readOnly"] and mounts["push-credentials"]["readOnly"]
    assert vols["push-credentials"]["secret"]["defaultMode"] == 0o400
    assert all("hostPath" not in v or v["hostPath"]["path"] in ("/sys/kernel/btf", "/var/lib/ebpfprof/spool")
               for v in vols.values()), vols
    env = {e["name"]: e for e in c["env"]}
    args = c["args"]
    assert args[args.index("--push") + 1] == "$(PUSH_URL)" and env["PUSH_URL"]["value"].startswith("http")
    assert "-o" not in args and "--rotate" in args
    # the arguments, their variables filled in, are ebpfprof's: parsed up to
    # the point where a real run needs the token file and a target
    token = tmp_path / "token"
    token.write_text("t\n")
    token.chmod(0o400)
    values = {"PUSH_URL": "http://127.0.0.1:9", "PUSH_MATCH": "no-such-process-[0-9]{40}",
              "CLUSTER": "c1", "NODE_NAME": "node-1"}
    filled = [re.sub(r"\$\((\w+)\)", lambda m: values[m[1]], a) for a in args]
    filled[filled.index("--push-token-file") + 1] = str(token)
    filled[filled.index("--spool") + 1] = str(tmp_path / "spool")
    filled[filled.index("--rotate") + 1] = "1"
    res = run_ebpfprof(*filled, "-d", 1)
    assert res.returncode == 0, res.stderr
    # the agent checks the credentials itself, before any process matches
    token.chmod(0o444)
    one_line_error(run_ebpfprof(*filled, "-d", 1), "others may access it")
