"""ndm from Python: the virtual-time simulator, the emulator's profiles and
the controller registry of ndm (docs/python.md).

    import ndm
    r = ndm.simulate(profile="urban-lte", cc="cubic", duration=10)
    r["goodput_bps"], r["samples"]["cwnd"]

Errors in what you pass raise ValueError with the one-line message the
command-line tools print.
"""

from ._ndm import (  # noqa: F401  (the package's API)
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
    presets,
    run_live,
    scenarios,
    simulate,
    trace_search_path,
)
from .controller import Controller, register_controller  # noqa: F401
from .traces import Trace, traces  # noqa: F401


def sweep(spec, out=None, workers=None, progress=False, scheduler=None, connect_timeout=5):
    """Runs a grid or list of jobs on a local process pool, or on the Dask cluster of `scheduler`
    ("tcp://host:port"), results in a resumable JSONL file (ndm.sweeps)."""
    from . import sweeps  # imported here so that `python3 -m ndm.sweeps` finds it not yet loaded

    return sweeps.sweep(spec, out=out, workers=workers, progress=progress, scheduler=scheduler,
                        connect_timeout=connect_timeout)

__all__ = [
    "AckEvent", "CongestionEvent", "Controller", "PacketLost", "PacketSent", "Params", "Preset", "Profile",
    "RateSample", "SpuriousEvent", "Trace", "compare", "compete", "controllers", "presets", "register_controller", "run_live", "scenarios",
    "simulate", "sweep", "trace_search_path", "traces",
]
