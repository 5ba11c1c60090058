"""pytest's set-up for the Python tests (docs/python.md, "Tests").

The package under test is the first `ndm` on the path: the build tree's
(CTest sets PYTHONPATH=<build>/python) or an installed one (pip install
./python). The source folder python/ndm alone lacks the extension, and
importing it is a one-line error here rather than one per test module.
The examples (examples/python, under NDM_SOURCE_DIR or the checkout around
this file) are importable: test_controller runs aimd.py's controller.

--skipped-exit-code N: exit N when tests were collected and every one was
skipped (CTest's SKIP_RETURN_CODE 77: a module whose optional package is
missing reports as skipped, not passed)."""

import os
import sys

import pytest

SOURCE_DIR = os.environ.get("NDM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "examples", "python"))


def pytest_addoption(parser):
    parser.addoption("--skipped-exit-code", type=int, default=None, metavar="N",
                     help="exit with N when every test was skipped (CTest's SKIP_RETURN_CODE)")


def pytest_configure(config):
    try:
        import ndm  # noqa: F401
    except ImportError as e:
        raise pytest.UsageError(f"cannot import ndm ({e}): set PYTHONPATH=<build>/python or install the package "
                                "(pip install --no-build-isolation ./python; docs/python.md)") from None


def pytest_sessionfinish(session, exitstatus):
    code = session.config.getoption("--skipped-exit-code")
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    # A module skipped as a whole collects nothing: pytest's exit code is then NO_TESTS_COLLECTED.
    if code is None or exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED) or reporter is None:
        return
    ran = [k for k in ("passed", "failed", "error", "xfailed", "xpassed") if reporter.stats.get(k)]
    if not ran and reporter.stats.get("skipped"):
        session.exitstatus = code
