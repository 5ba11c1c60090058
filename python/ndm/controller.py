"""Congestion controllers written in Python (docs/python.md).

Subclass Controller, override on_ack, on_congestion_event and cwnd (and
whatever else you need), then register the class under a name; every ndm
run (ndm.simulate, ndm.compare, ndm.compete, ndm.gym) can then use it by
that name, in virtual time, as any controller written in C++.

The events carry the fields of include/ndm/cc.hpp under the same names;
instants and durations are integer nanoseconds, so integer arithmetic on
them is exact. cwnd(), ssthresh(), pacing_rate() and state() are asked
once after each event and must depend only on what the events told the
controller.
"""

from . import _ndm


class Controller:
    """Base class of a controller written in Python (ndm::cc::Controller).

    The registry creates it as cls(params, options): params is an
    ndm.Params (max_datagram_size, now), options a dict of the
    "key=value" options given after the controller's name
    ("mine:gain=2" in ndm.compare, ndm-compare's --cc)."""

    def __init__(self, params, options=None):
        self.params = params
        self.options = dict(options or {})

    # Events (ndm::cc::Controller's handlers); the optional ones are no-ops.
    def on_packet_sent(self, ev):
        pass

    def on_packet_lost(self, ev):
        pass

    def on_ack(self, ev):
        raise NotImplementedError("a Controller must implement on_ack(ev)")

    def on_congestion_event(self, ev):
        raise NotImplementedError("a Controller must implement on_congestion_event(ev)")

    def on_spurious_congestion(self, ev):
        pass

    def on_idle_restart(self, now):
        pass

    # Outputs.
    def cwnd(self):
        """The congestion window in bytes (an int)."""
        raise NotImplementedError("a Controller must implement cwnd()")

    def ssthresh(self):
        """The slow-start threshold in bytes, or None for none (in slow start)."""
        return None

    def pacing_rate(self):
        """Bytes per second, or None to let the core pace at 1.25·cwnd/srtt (RFC 9002 §7.7)."""
        return None

    def state(self):
        """A short state name; "slow_start", "congestion_avoidance" and "recovery" are counted as such."""
        return "other"


def register_controller(name, cls, description=""):
    """Registers a Controller subclass under `name` (replacing one of that name)."""
    if not (isinstance(cls, type) and issubclass(cls, Controller)):
        raise TypeError("register_controller: cls must be a subclass of ndm.Controller")
    _ndm._register_controller(name, cls, description or (cls.__doc__ or name).strip().splitlines()[0], Controller)
