"""Shared by the Python tests: optional packages whose tests skip without
them, and the command lines of the package under test."""

import importlib
import os
import sys

import pytest


def import_or_skip(module, require_var, debian_package):
    """`module` imported, or the calling test module skipped when it is not installed, unless the
    environment sets `require_var`=1 (.ci/run: setup.sh installed it, so a skip is a failure)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        if os.environ.get(require_var) == "1":
            pytest.fail(f"{module} is not importable (Debian's {debian_package}) and {require_var}=1: {e}",
                        pytrace=False)
        pytest.skip(f"{module} is not importable (Debian's {debian_package})", allow_module_level=True)


def ndm_sweep_command():
    """ndm-sweep as the package under test has it: <build>/python/ndm-sweep beside the build tree's
    package, else `python3 -m ndm.sweeps` (an installed package's console script is the same code)."""
    import ndm

    script = os.path.join(os.path.dirname(os.path.dirname(ndm.__file__)), "ndm-sweep")
    return [sys.executable, script] if os.path.exists(script) else [sys.executable, "-m", "ndm.sweeps"]
