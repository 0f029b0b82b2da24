"""make install / uninstall lay out the binary and a man page that documents
every option and renders without a warning."""
import os
import re
import subprocess

import pytest

from conftest import EBPFPROF, ROOT, cannot_run

MAN = ROOT / "docs" / "ebpfprof.1"


def make(*args):
    return subprocess.run(["make", "-s", "-C", str(ROOT), *args], capture_output=True, text=True,
                          timeout=300)


@pytest.mark.nobpf
def test_install_and_uninstall_with_destdir(tmp_path):
    if not EBPFPROF.exists():
        cannot_run("ebpfprof is not built (run make)")
    res = make("install", f"DESTDIR={tmp_path}", "PREFIX=/usr")
    assert res.returncode == 0, res.stderr
    binary = tmp_path / "usr" / "bin" / "ebpfprof"
    page = tmp_path / "usr" / "share" / "man" / "man1" / "ebpfprof.1"
    assert binary.stat().st_mode & 0o777 == 0o755
    assert page.stat().st_mode & 0o777 == 0o644
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True)
    assert out.stdout.startswith("ebpfprof ")
    # the default prefix is /usr/local
    res = make("install", f"DESTDIR={tmp_path}")
    assert (tmp_path / "usr" / "local" / "bin" / "ebpfprof").exists()
    assert (tmp_path / "usr" / "local" / "share" / "man" / "man1" / "ebpfprof.1").exists()
    res = make("uninstall", f"DESTDIR={tmp_path}", "PREFIX=/usr")
    assert res.returncode == 0, res.stderr
    assert not binary.exists() and not page.exists()


@pytest.mark.nobpf
def test_man_page_lints_clean():
    for tool in ("mandoc", "groff", "lexgrog"):
        if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode:
            cannot_run(f"{tool} is not installed (scripts/deps.sh)")
    lint = subprocess.run(["mandoc", "-Tlint", "-Wall", str(MAN)], capture_output=True, text=True)
    assert lint.returncode == 0 and not lint.stdout and not lint.stderr, lint.stdout + lint.stderr
    groff = subprocess.run(["groff", "-man", "-ww", "-z", str(MAN)], capture_output=True, text=True)
    assert groff.returncode == 0 and not groff.stderr, groff.stderr
    whatis = subprocess.run(["lexgrog", str(MAN)], capture_output=True, text=True)
    assert whatis.returncode == 0 and "ebpfprof - " in whatis.stdout, whatis.stdout
    rendered = subprocess.run(["man", "-l", str(MAN)], capture_output=True, text=True,
                              env={**os.environ, "MANWIDTH": "80", "MAN_KEEP_FORMATTING": "",
                                   "PAGER": "cat", "LC_ALL": "C.UTF-8"})
    assert rendered.returncode == 0 and not rendered.stderr, rendered.stderr
    for section in ("SYNOPSIS", "SUBCOMMANDS", "OPTIONS", "PRIVILEGES", "EXIT STATUS", "EXAMPLES"):
        assert section in rendered.stdout


def help_options(*subcommand):
    """The long and short options a --help lists, before its examples."""
    res = subprocess.run([str(EBPFPROF), *subcommand, "--help"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    listing = res.stdout.split("Examples:")[0]
    longs = set(re.findall(r"--([a-z][a-z-]+)", listing))
    shorts = set(re.findall(r"^ +-([A-Za-z?]), --", listing, re.MULTILINE))
    return longs, shorts


def man_escaped(option):
    return option.replace("-", "\\-")


@pytest.mark.nobpf
def test_man_page_documents_every_option_and_subcommand():
    if not EBPFPROF.exists():
        cannot_run("ebpfprof is not built (run make)")
    page = MAN.read_text()
    longs, shorts = help_options()
    assert {"pid", "match", "duration", "output", "gc-log"} <= longs
    assert {"p", "m", "d", "o", "G"} <= shorts
    for sub in ("", "diff", "dump", "top"):
        if sub:
            longs, shorts = help_options(sub)
            assert longs and shorts, f"ebpfprof {sub} --help lists no options"
        where = f"ebpfprof {sub}".strip()
        for opt in sorted(longs):
            assert "\\-\\-" + man_escaped(opt) in page, f"{where}: --{opt} is not in the man page"
        for opt in sorted(shorts):
            # on a .B/.BR line, the form an option's heading takes
            heading = r"^\.BR? .*\\-" + re.escape(opt) + r"(?![A-Za-z\\])"
            assert re.search(heading, page, re.MULTILINE), f"{where}: -{opt} is not in the man page"
    for sub in ("record", "diff", "dump", "top"):
        assert f".B {sub}\n" in page, f"subcommand {sub} is not in the man page"
