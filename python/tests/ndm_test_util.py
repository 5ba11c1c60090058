"""Shared by the Python tests: the package under test (PYTHONPATH, set by
CTest to <build>/python) and the source tree (NDM_SOURCE_DIR)."""

import os
import sys

SOURCE_DIR = os.environ.get("NDM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "examples", "python"))
