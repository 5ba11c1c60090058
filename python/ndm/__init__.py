"""ndm from Python: the virtual-time simulator, the emulator's profiles and
the controller registry of ndm (docs/python.md).

    import ndm
    r = ndm.simulate(profile="urban-lte", cc="cubic", duration=10)
    r["goodput_bps"], r["samples"]["cwnd"]

Errors in what you pass raise ValueError with the one-line message the
command-line tools print.
"""

import os as _os

# An installed package (pip, python/setup.py) carries the traces and models ndm
# ships in ndm/data; the library finds them through NDM_DATA_DIR
# (src/util/data_dir.hpp), unless the environment names a directory already.
# The build tree's package has none: the library finds the checkout's data/.
_DATA = _os.path.join(_os.path.dirname(__file__), "data")
if _os.path.isdir(_DATA):
    _os.environ.setdefault("NDM_DATA_DIR", _DATA)

from ._ndm import (  # noqa: E402, F401  (the package's API)
    Closed,
    Connection,
    Established,
    SimulatedPair,
    StreamOpened,
    StreamReadable,
    StreamReset,
    StreamStopped,
    StreamWritable,
    AckEvent,
    CongestionEvent,
    PacketLost,
    PacketSent,
    Params,
    Preset,
    Profile,
    RateSample,
    SpuriousEvent,
    __version__,
    compare,
    compete,
    controllers,
    generate_dataset,
    join_datasets,
    presets,
    run_live,
    scenarios,
    simulate,
    trace_search_path,
)
from .controller import Controller, register_controller  # noqa: E402, F401
from .traces import Trace, traces  # noqa: E402, F401


def sweep(spec, out=None, workers=None, progress=False, scheduler=None, connect_timeout=5):
    """Runs a grid or list of jobs on a local process pool, or on the Dask cluster of `scheduler`
    ("tcp://host:port"), results in a resumable JSONL file (ndm.sweeps)."""
    from . import sweeps  # imported here so that `python3 -m ndm.sweeps` finds it not yet loaded

    return sweeps.sweep(spec, out=out, workers=workers, progress=progress, scheduler=scheduler,
                        connect_timeout=connect_timeout)

__all__ = [
    "AckEvent", "Closed", "CongestionEvent", "Connection", "Controller", "Established", "SimulatedPair",
    "StreamOpened", "StreamReadable", "StreamReset", "StreamStopped", "StreamWritable", "PacketLost", "PacketSent", "Params", "Preset", "Profile",
    "RateSample", "SpuriousEvent", "Trace", "compare", "compete", "controllers", "presets", "register_controller", "run_live", "scenarios",
    "simulate", "sweep", "trace_search_path", "traces",
]
