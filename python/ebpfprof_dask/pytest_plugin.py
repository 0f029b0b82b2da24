"""A pytest plugin (entry point pytest11): a Dask benchmark suite's memory.

    pytest --ebpfprof-history DB [--ebpfprof-command 'sudo -n ebpfprof'] tests/

profiles, for each test that uses a `client` fixture (a distributed.Client),
that client's cluster -- its scheduler and every worker -- for the test's
duration, and stores the run in ebpfprof's run history DB as a run of the
series named by the test's node id, tagged with the versions of dask and
distributed, as Coiled's benchmark fixtures keep theirs. Then

    ebpfprof history check 'tests/test_x.py::test_y' --history-db DB

says whether the last runs regressed, and in which task prefix and state.
Without --ebpfprof-history the fixture does nothing: no import of dask, no
process started."""
import pytest


def pytest_addoption(parser):
    group = parser.getgroup("ebpfprof", "ebpfprof: the run history of Dask tests")
    group.addoption("--ebpfprof-history", metavar="DB", default=None,
                    help="profile the cluster of each test's `client` fixture for the test's duration "
                         "and store it in ebpfprof's history database DB, a series per test node id")
    group.addoption("--ebpfprof-command", metavar="CMD", default=None,
                    help="how to run ebpfprof (default: $EBPFPROF_DASK_COMMAND, else ebpfprof), "
                         "e.g. 'sudo -n /usr/local/bin/ebpfprof'")
    group.addoption("--ebpfprof-tag", metavar="K=V", action="append", default=[],
                    help="a tag of every run stored (a commit); repeatable")


def versions():
    """The tags of the versions a run ran with."""
    import dask
    import distributed

    return [f"dask={dask.__version__}", f"distributed={distributed.__version__}"]


@pytest.fixture(autouse=True)
def ebpfprof_history(request, tmp_path_factory):
    """Profiles the test's cluster and stores the run (the session, or None
    when there is nothing to do: no --ebpfprof-history, no `client`)."""
    db = request.config.getoption("--ebpfprof-history")
    if not db or "client" not in request.fixturenames:
        yield None
        return
    import shlex

    from .core import ClusterProfile, command_from_env

    client = request.getfixturevalue("client")
    opt = request.config.getoption("--ebpfprof-command")
    command = shlex.split(opt) if opt else command_from_env()
    tags = versions() + list(request.config.getoption("--ebpfprof-tag"))
    outdir = tmp_path_factory.mktemp("ebpfprof-dask")
    session = ClusterProfile(client, outdir, command=command, history=request.node.nodeid,
                             history_db=db, tags=tags).start()
    failed = [r for _, _, r in session.started if "error" in r]
    if failed:
        session.history = None      # nothing to store
        session.stop()
        raise RuntimeError(f"ebpfprof could not profile the cluster: {failed[0]['error']}")
    yield session
    session.stop()
