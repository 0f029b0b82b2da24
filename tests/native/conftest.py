"""The --native tests share the integration tests' fixtures and helpers, loaded
the way tests/hostile/conftest.py loads them (under a name of their own, so that
every test directory can run in one pytest session)."""
import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "ebpfprof_hostile_conftest", Path(__file__).resolve().parents[1] / "hostile" / "conftest.py")
_spec.loader.exec_module(importlib.util.module_from_spec(_spec))

from ebpfprof_integration_conftest import *  # noqa: E402,F401,F403 (fixtures, helpers)
from ebpfprof_integration_conftest import _bpf_tests_need_root, pytest_configure  # noqa: E402,F401
