"""A Gym-style congestion-control environment on ndm's virtual-time simulator
(docs/python.md): the reset/step API of Gymnasium, without needing the
package (Debian 12 does not ship it); when gymnasium is importable the
environment is registered with it as "ndm/Congestion-v0".

Every episode is one scenario of ndm-train's generator (ndm.scenarios: a
bottleneck, wireless or trace path with its RTT, rate, buffer and loss),
drawn by the seed given to reset(). A bulk transfer runs through it in
virtual time with a controller the agent drives: every RTT (or every N
ACKs) the agent sees the features of the last round and answers with a
multiplicative action on the congestion window (action="cwnd") or on the
pacing rate (action="pacing"): the value a in [-1, 1] multiplies it by 2**a.
The same seed and the same actions give the same trajectory.

An episode is the scenario's transfer: it terminates when the scenario's
`seconds` of virtual time (12 s by default, with the last ACKs of the drain
after it) have passed, so it has about seconds / RTT decisions with
decision="rtt": ~46 on a 225 ms path, ~1300 on a 9 ms one. info["end"] says
why an episode ended ("time" or "max_steps"), info["episode_seconds"] how
long it lasts.

The simulation runs in a thread of its own that hands each decision to
step() and waits for the action, so the controller's view is exact and
nothing runs ahead of the agent.
"""

import itertools
import math
import queue
import threading

import numpy as np

from . import _ndm
from .controller import Controller, register_controller

FEATURES = (
    "delivery_rate_mbps",  # the last valid delivery-rate sample of the round (draft-cheng-iccrg-delivery-rate-estimation)
    "throughput_mbps",     # bytes acknowledged in the round over its length
    "rtt_mean_ms",         # mean of the round's RTT samples
    "rtt_min_ms",          # the connection's minimum RTT
    "srtt_ms",             # smoothed RTT (RFC 9002 §5.3)
    "rtt_ratio",           # rtt_mean / rtt_min: queueing
    "loss_fraction",       # bytes declared lost / (acked + lost) in the round
    "ecn_fraction",        # CE-marked packets / packets acked in the round
    "cwnd_packets",        # the window in datagrams
    "inflight_ratio",      # bytes in flight / cwnd at the decision
)


class Box:
    """A box of float32 vectors, the shape of gymnasium.spaces.Box."""

    def __init__(self, low, high, shape):
        self.shape = tuple(shape)
        self.dtype = np.float32
        self.low = np.full(self.shape, low, dtype=np.float32)
        self.high = np.full(self.shape, high, dtype=np.float32)

    def sample(self, rng=None):
        rng = rng or np.random.default_rng()
        low = np.maximum(self.low, -1e6)
        high = np.minimum(self.high, 1e6)
        return rng.uniform(low, high).astype(np.float32)

    def contains(self, x):
        x = np.asarray(x, dtype=np.float32)
        return x.shape == self.shape and bool(np.all(x >= self.low) and np.all(x <= self.high))

    def __repr__(self):
        return f"Box({self.low.min()}, {self.high.max()}, {self.shape}, float32)"


def _space(low, high, shape):
    try:
        import gymnasium
        return gymnasium.spaces.Box(low=low, high=high, shape=shape, dtype=np.float32)
    except ImportError:
        return Box(low, high, shape)


class Reward:
    """Aurora's and Orca's shape: throughput · log(Mbit/s) − delay · (RTT/min RTT − 1) − loss · loss fraction."""

    def __init__(self, throughput=1.0, delay=1.0, loss=10.0):
        self.throughput, self.delay, self.loss = throughput, delay, loss

    def __call__(self, f):
        return (self.throughput * math.log(max(f["throughput_mbps"], 1e-3))
                - self.delay * (f["rtt_ratio"] - 1.0) - self.loss * f["loss_fraction"])


class _Abort(Exception):
    """Ends a running episode from inside its controller (reset or close)."""


_channels = {}
_next_channel = itertools.count(1)


class _AgentController(Controller):
    """The controller the agent drives; option channel names its environment."""

    def __init__(self, params, options=None):
        super().__init__(params, options)
        self.env = _channels[int(self.options["channel"])]
        self.mds = params.max_datagram_size
        self.window = min(10 * self.mds, max(14720, 2 * self.mds))
        self.rate = None  # bytes/s; pacing mode only
        self.next_decision = None
        self._new_round()

    def _new_round(self):
        self.acked = self.lost = self.acked_packets = self.ce = 0
        self.rtts = []
        self.delivery_rate = 0.0
        self.round_start = None
        self.acks = 0

    def on_ack(self, ev):
        if self.round_start is None:
            self.round_start = ev.now
        self.acked += ev.bytes_acked
        self.acked_packets += ev.packets_acked
        self.acks += 1
        if ev.has_rtt_sample:
            self.rtts.append(ev.latest_rtt)
        if ev.rate.valid:
            self.delivery_rate = ev.rate.delivery_rate
        self.srtt, self.min_rtt, self.in_flight = ev.smoothed_rtt, ev.min_rtt, ev.bytes_in_flight
        if self._due(ev):
            self._decide(ev.now)

    def _due(self, ev):
        if ev.min_rtt <= 0:
            return False
        every = self.env.decision
        if every == "rtt":
            if self.next_decision is None:
                self.next_decision = ev.now + ev.smoothed_rtt
            return ev.now >= self.next_decision
        return self.acks >= every

    def on_congestion_event(self, ev):
        self.lost += ev.bytes_lost
        self.ce += ev.ecn_ce

    def _decide(self, now):
        length = max(now - self.round_start, 1) if self.round_start is not None else 1
        mean_rtt = sum(self.rtts) / len(self.rtts) if self.rtts else self.srtt
        f = {
            "delivery_rate_mbps": self.delivery_rate * 8e-6,
            "throughput_mbps": self.acked * 8e3 / length,
            "rtt_mean_ms": mean_rtt * 1e-6,
            "rtt_min_ms": self.min_rtt * 1e-6,
            "srtt_ms": self.srtt * 1e-6,
            "rtt_ratio": mean_rtt / self.min_rtt,
            "loss_fraction": self.lost / (self.acked + self.lost) if self.acked + self.lost else 0.0,
            "ecn_fraction": self.ce / self.acked_packets if self.acked_packets else 0.0,
            "cwnd_packets": self.window / self.mds,
            "inflight_ratio": self.in_flight / self.window,
        }
        a = self.env._exchange(now, f)  # blocks until the agent acts
        factor = 2.0 ** float(np.clip(a, -1.0, 1.0))
        if self.env.action == "cwnd":
            self.window = int(min(max(self.window * factor, 2 * self.mds), self.env.max_cwnd))
        else:
            if self.rate is None:
                self.rate = max(self.window / (self.srtt * 1e-9), self.delivery_rate)
            self.rate = min(max(self.rate * factor, self.mds / 0.1), self.env.max_cwnd / (self.min_rtt * 1e-9))
            # The window only bounds the pacer: two rounds of the rate.
            self.window = int(min(max(2 * self.rate * self.srtt * 1e-9, 2 * self.mds), self.env.max_cwnd))
        self._new_round()
        self.round_start = now
        self.next_decision = now + self.srtt

    def cwnd(self):
        return self.window

    def pacing_rate(self):
        return self.rate

    def state(self):
        return "agent"


register_controller("ndm-gym-agent", _AgentController, "driven by an ndm.gym.CongestionEnv agent")


class CongestionEnv:
    """reset(seed) → (obs, info); step(action) → (obs, reward, terminated, truncated, info).

    action: "cwnd" or "pacing" (what the multiplicative action scales);
    decision: "rtt" (once per smoothed RTT) or N (every N ACKs);
    reward: a callable of the features dict (Reward() by default);
    scenario_seed, scenarios, seconds, split: the scenario pool
    (ndm.scenarios(seed=scenario_seed, count=scenarios, seconds=seconds),
    restricted to split "train", "val", "test" or None for all);
    max_steps: truncation; max_cwnd: the window's cap in bytes.

    An episode terminates when the scenario's `seconds` of virtual time have
    passed (about seconds / RTT steps); info["end"] is then "time", or
    "max_steps" when truncated, and info["episode_seconds"] the scenario's
    length."""

    metadata = {"render_modes": []}

    def __init__(self, action="cwnd", decision="rtt", reward=None, scenario_seed=1, scenarios=600, seconds=12.0,
                 split="train", max_steps=None, max_cwnd=64 << 20):
        if action not in ("cwnd", "pacing"):
            raise ValueError(f'action must be "cwnd" or "pacing", not {action!r}')
        if decision != "rtt" and not (isinstance(decision, int) and decision >= 1):
            raise ValueError(f'decision must be "rtt" or a number of ACKs >= 1, not {decision!r}')
        self.action, self.decision, self.max_steps, self.max_cwnd = action, decision, max_steps, max_cwnd
        self.reward_fn = reward or Reward()
        pool = _ndm.scenarios(seed=scenario_seed, count=scenarios, seconds=seconds)
        self.pool = [s for s in pool if split is None or s["split"] == split]
        if not self.pool:
            raise ValueError(f"no scenario of split {split!r} among {scenarios}")
        self.observation_space = _space(0.0, np.inf, (len(FEATURES),))
        self.action_space = _space(-1.0, 1.0, (1,))
        self.channel = next(_next_channel)
        _channels[self.channel] = self
        self._thread = None
        self._np_random = np.random.default_rng()

    # ---- the simulation thread's side
    def _exchange(self, now, features):
        self._to_agent.put(("decision", now, features))
        a = self._to_sim.get()
        if a is _Abort:
            raise _Abort()
        return a

    def _run(self, scenario):
        try:
            r = _ndm.simulate(profile=scenario["profile"], cc=f"ndm-gym-agent:channel={self.channel}",
                              duration=scenario["seconds"], seed=scenario["seed"] & 0x7FFFFFFF,
                              packet_size=scenario["packet_size"])
            self._to_agent.put(("done", r))
        except _Abort:
            self._to_agent.put(("aborted", None))
        except BaseException as e:  # noqa: B902 - handed to the agent's thread
            self._to_agent.put(("error", e))

    def _stop(self):
        if self._thread is None:
            return
        if self._thread.is_alive() and not self._done:
            self._to_sim.put(_Abort)
            while self._to_agent.get()[0] not in ("aborted", "done", "error"):
                self._to_sim.put(_Abort)
        self._thread.join()
        self._thread = None

    def _next(self):
        msg = self._to_agent.get()
        if msg[0] == "decision":
            _, now, f = msg
            self._features = f
            self._time_s = now * 1e-9
            return False
        self._done = True
        if msg[0] == "error":
            raise msg[1]
        self._result = msg[1]
        return True

    def _obs(self):
        return np.array([self._features[k] for k in FEATURES], dtype=np.float32)

    def _info(self, end=None):
        return {"time_s": self._time_s, "features": dict(self._features), "scenario": self.scenario,
                "steps": self._steps, "result": self._result, "episode_seconds": self.scenario["seconds"],
                "end": end}

    # ---- the agent's side
    def reset(self, seed=None, options=None):
        self._stop()
        if seed is not None:
            self._np_random = np.random.default_rng(seed)
        self.scenario = (options or {}).get("scenario") or self.pool[int(self._np_random.integers(len(self.pool)))]
        self._to_agent, self._to_sim = queue.Queue(), queue.Queue()
        self._done, self._steps, self._result, self._time_s = False, 0, None, 0.0
        self._features = {k: 0.0 for k in FEATURES}
        self._thread = threading.Thread(target=self._run, args=(self.scenario,), daemon=True)
        self._thread.start()
        self._next()  # the first decision (or an episode too short for one)
        return self._obs(), self._info()

    def step(self, action):
        if self._thread is None:
            raise RuntimeError("step() before reset()")
        if self._done:
            raise RuntimeError("step() after the episode ended: call reset()")
        self._to_sim.put(float(np.asarray(action, dtype=np.float64).reshape(-1)[0]))
        terminated = self._next()
        self._steps += 1
        reward = 0.0 if terminated else float(self.reward_fn(self._features))
        truncated = not terminated and self.max_steps is not None and self._steps >= self.max_steps
        if truncated:
            self._stop()
        # Why the episode ended: the scenario's virtual time ran out, or max_steps.
        end = "time" if terminated else "max_steps" if truncated else None
        return self._obs(), reward, terminated, truncated, self._info(end)

    def close(self):
        self._stop()
        _channels.pop(self.channel, None)

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


try:  # Gymnasium, when installed, finds the environment by id.
    import gymnasium

    if "ndm/Congestion-v0" not in gymnasium.registry:
        gymnasium.register(id="ndm/Congestion-v0", entry_point="ndm.gym:CongestionEnv")
except ImportError:
    pass
