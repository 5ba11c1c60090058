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
    scenarios,
    simulate,
    trace_search_path,
)
from .controller import Controller, register_controller  # noqa: F401
from .traces import Trace, traces  # noqa: F401

__all__ = [
    "AckEvent", "CongestionEvent", "Controller", "PacketLost", "PacketSent", "Params", "Preset", "Profile",
    "RateSample", "SpuriousEvent", "Trace", "compare", "compete", "controllers", "presets", "register_controller", "scenarios",
    "simulate", "trace_search_path", "traces",
]
