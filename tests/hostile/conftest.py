"""The hostile-target tests share the integration tests' fixtures and helpers
(tests/integration/conftest.py), loaded under a name of their own so that both
directories can run in one pytest session. Nothing is copied here."""
import importlib.util
import sys
from pathlib import Path

_NAME = "ebpfprof_integration_conftest"
if _NAME not in sys.modules:
    _spec = importlib.util.spec_from_file_location(
        _NAME, Path(__file__).resolve().parents[1] / "integration" / "conftest.py")
    sys.modules[_NAME] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules[_NAME])

from ebpfprof_integration_conftest import *  # noqa: E402,F401,F403 (fixtures, helpers)
from ebpfprof_integration_conftest import _bpf_tests_need_root, pytest_configure  # noqa: E402,F401
