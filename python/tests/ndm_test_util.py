"""Shared by the Python tests: the package under test (PYTHONPATH, set by
CTest to <build>/python) and the source tree (NDM_SOURCE_DIR)."""

import os
import sys

SOURCE_DIR = os.environ.get("NDM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "examples", "python"))


def import_or_skip(module, require_var, debian_package):
    """`module` imported, or exit 77 (CTest's SKIP_RETURN_CODE) when it is not installed, unless
    the environment sets `require_var`=1 (.ci/run: setup.sh installed it, so a skip is a failure)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        if os.environ.get(require_var) == "1":
            raise
        print(f"SKIP: {module} is not importable (Debian's {debian_package})", file=sys.stderr)
        sys.exit(77)
