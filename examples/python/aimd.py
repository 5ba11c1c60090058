#!/usr/bin/python3
"""A congestion controller written in Python: AIMD with slow start, the
NewReno of RFC 9002 §7 as ndm's C++ "reno" implements it (src/cc/reno.cpp),
step for step, so that in virtual time it gives the very same trajectory:
the same window at every interval and the same bytes delivered.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/aimd.py --profile urban-lte -t 10
"""

import argparse
import math

import ndm

NEVER = -(2**63)  # Instant::min(): no recovery period yet


def initial_window(mds):
    """RFC 9002 §7.2: min(10·MDS, max(14720, 2·MDS))."""
    return min(10 * mds, max(14720, 2 * mds))


def round_half_away(x):
    """std::round for x ≥ 0 (Python's round() rounds half to even)."""
    floor = math.floor(x)
    return floor + 1 if x - floor >= 0.5 else floor


class AIMD(ndm.Controller):
    """AIMD in Python (NewReno, RFC 9002 §7); option beta (default 0.5)"""

    def __init__(self, params, options=None):
        super().__init__(params, options)
        self.mds = params.max_datagram_size
        self.beta = float(self.options.pop("beta", 0.5))
        if self.options:
            raise ValueError(f"congestion controller \"py-aimd\": unknown option \"{next(iter(self.options))}\"")
        if not 0.1 <= self.beta <= 0.95:
            raise ValueError(f"congestion controller \"py-aimd\": beta {self.beta} is outside 0.1..0.95")
        self.window = initial_window(self.mds)
        self.threshold = None        # None: no slow-start threshold yet
        self.ca_acked = 0            # bytes acked in congestion avoidance, not yet growth
        self.recovery_start = NEVER  # RFC 9002 §7.3.2, in nanoseconds
        self.in_recovery_state = False
        self.undo = None             # (cwnd, ssthresh) before the last undoable reduction

    def on_ack(self, ev):
        if ev.largest_acked_sent_time > self.recovery_start:
            self.in_recovery_state = False
        # No growth for packets sent before recovery began (§7.3.2), nor while
        # the window is not what limits the sender (§7.8).
        if ev.largest_acked_sent_time <= self.recovery_start or ev.app_limited:
            return
        acked = ev.bytes_acked
        if self.threshold is None or self.window < self.threshold:
            grow = acked if self.threshold is None else min(acked, self.threshold - self.window)
            self.window += grow
            acked -= grow
        # Congestion avoidance with exact byte counting: one MDS per window acked.
        self.ca_acked += acked
        while self.ca_acked >= self.window:
            self.ca_acked -= self.window
            self.window += self.mds

    def on_congestion_event(self, ev):
        if ev.largest_lost_sent_time > self.recovery_start:  # a new recovery period (Appendix B.6)
            self.recovery_start = ev.now
            self.in_recovery_state = True
            self.undo = (self.window, self.threshold) if ev.ecn_ce == 0 else None
            self.threshold = round_half_away(self.window * self.beta)
            self.window = max(self.threshold, 2 * self.mds)
            self.ca_acked = 0
        if ev.persistent:  # §7.6.2: collapse, forget the period
            self.window = 2 * self.mds
            self.ca_acked = 0
            self.recovery_start = NEVER
            self.in_recovery_state = False

    def on_spurious_congestion(self, ev):
        # RFC 9438 §4.9's undo: back to the window before the reduction.
        if self.undo is None:
            return
        cwnd, ssthresh = self.undo
        self.undo = None
        self.window = max(self.window, cwnd)
        self.threshold = None if ssthresh is None or self.threshold is None else max(self.threshold, ssthresh)
        self.ca_acked = 0
        self.recovery_start = NEVER
        self.in_recovery_state = False

    def cwnd(self):
        return self.window

    def ssthresh(self):
        return self.threshold

    def state(self):
        if self.in_recovery_state:
            return "recovery"
        return "slow_start" if self.threshold is None or self.window < self.threshold else "congestion_avoidance"


ndm.register_controller("py-aimd", AIMD)


def main():
    ap = argparse.ArgumentParser(description="py-aimd against the C++ reno in virtual time")
    ap.add_argument("--profile", default="urban-lte")
    ap.add_argument("-t", "--time", type=float, default=10)
    ap.add_argument("-l", "--packet-size", type=int, default=1452)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    runs = {cc: ndm.simulate(profile=a.profile, cc=cc, duration=a.time, packet_size=a.packet_size, seed=a.seed)
            for cc in ("reno", "py-aimd")}
    for cc, r in runs.items():
        print(f"{cc:8} goodput {r['goodput_bps'] / 1e6:7.3f} Mbit/s, {r['receiver_bytes']} bytes, "
              f"cwnd per interval {list(r['samples']['cwnd'])}")
    same = all((runs["reno"]["samples"][k] == runs["py-aimd"]["samples"][k]).all() for k in ("cwnd", "bytes"))
    print("identical trajectories" if same else "trajectories differ")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
