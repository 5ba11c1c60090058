"""The Mahimahi traces ndm ships and finds (data/traces, $NDM_DATA_DIR/traces)
as Python objects: a trace becomes a profile with "trace=NAME"."""

import os

from . import _ndm


class Trace:
    """A packet-delivery trace: the uplink and downlink files of one name."""

    def __init__(self, name, up, down):
        self.name = name
        self.up = up      # path of the sender → receiver file
        self.down = down  # path of the receiver → sender file

    def profile(self, extra=""):
        """An ndm.Profile driven by this trace, with optional extra keys ("delay=20ms")."""
        return _ndm.Profile(f"trace={self.name}" + (f",{extra}" if extra else ""))

    def opportunities(self, direction="up"):
        """The delivery opportunities of one direction, in milliseconds from the start (one line each)."""
        with open(self.up if direction == "up" else self.down) as f:
            return [int(line) for line in f if line.strip()]

    def __repr__(self):
        return f"ndm.Trace({self.name!r})"


def traces():
    """Every trace with both an .up and a .down file on the search path, first found first."""
    found = {}
    for directory in _ndm.trace_search_path():
        if not os.path.isdir(directory):
            continue
        for entry in sorted(os.listdir(directory)):
            stem, ext = os.path.splitext(entry)
            if ext == ".up" and stem not in found and os.path.isfile(os.path.join(directory, stem + ".down")):
                found[stem] = Trace(stem, os.path.join(directory, entry), os.path.join(directory, stem + ".down"))
    return list(found.values())
