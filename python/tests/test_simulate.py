"""ndm.simulate, profiles, presets, traces, scenarios and the errors."""

import re

import numpy as np
import pytest

import ndm


def test_acceptance_command():
    r = ndm.simulate(profile="urban-lte", cc="cubic", duration=10)
    assert r["controller"] == "cubic"
    assert r["profile"] == "urban-lte"
    assert r["byte_exact"], r["error"]
    assert r["error"] == ""
    assert r["goodput_bps"] > 0
    s = r["samples"]
    assert isinstance(s["cwnd"], np.ndarray)
    assert len(s["cwnd"]) >= 10  # ten send intervals, then the drain
    for k in ("begin_s", "end_s", "bytes", "bytes_sent", "retransmits", "packets_lost", "bytes_in_flight", "srtt_ms"):
        assert len(s[k]) == len(s["cwnd"]), k
    # The samples add up to the totals.
    assert int(s["bytes"].sum()) == r["receiver_bytes"]
    assert int(s["bytes_sent"].sum()) == r["sender_bytes"]
    assert r["receiver_bytes"] == r["sender_bytes"]
    assert "urban-lte" in repr(r["profile"])
    assert "goodput_bps" in str(r)


def test_deterministic_and_seeded():
    a = ndm.simulate(profile="urban-lte", cc="reno", duration=3, seed=7, packet_size=1452)
    b = ndm.simulate(profile="urban-lte", cc="reno", duration=3, seed=7, packet_size=1452)
    c = ndm.simulate(profile="urban-lte", cc="reno", duration=3, seed=8, packet_size=1452)
    assert np.array_equal(a["samples"]["cwnd"], b["samples"]["cwnd"])
    assert a["receiver_bytes"] == b["receiver_bytes"]
    assert a["receiver_bytes"] != c["receiver_bytes"]


def test_rate_limited_path():
    r = ndm.simulate(profile="delay=10ms,rate=20mbit,queue=50pkt", cc="cubic", duration=4, packet_size=1452)
    assert r["byte_exact"]
    assert 10e6 < r["goodput_bps"] < 20e6
    assert r["path"]["measured"]
    assert r["path"]["queue_delay_p95_ms"] > 0
    assert r["packet_size"] == 1452
    assert ndm.simulate(profile="delay=10ms", duration=1, packet_size="seed")["packet_size"] == 65507


def test_profile_objects():
    p = ndm.Profile("urban-lte,loss=1%")
    assert "1" in p.up
    assert p.description.startswith("up: ")
    r1 = ndm.simulate(profile=p, duration=2, packet_size=1452)
    r2 = ndm.simulate(profile="urban-lte,loss=1%", duration=2, packet_size=1452)
    assert r1["receiver_bytes"] == r2["receiver_bytes"]
    assert "urban-lte" in [x.name for x in ndm.presets()]
    preset = next(x for x in ndm.presets() if x.name == "urban-lte")
    assert "delay=50ms" in preset.spec
    assert preset.profile().up == ndm.Profile("urban-lte").up


def test_traces():
    t = {x.name: x for x in ndm.traces()}
    assert "Verizon-LTE-short" in t
    v = t["Verizon-LTE-short"]
    ops = v.opportunities("up")
    assert len(ops) > 100
    assert ops == sorted(ops)
    r = ndm.simulate(profile=v.profile("delay=20ms"), duration=2, packet_size=1452)
    assert r["byte_exact"]


def test_controllers_and_scenarios():
    cs = ndm.controllers()
    for name in ("reno", "cubic", "bbr", "ndm", "ndm-lkm"):
        assert name in cs
    a = ndm.scenarios(seed=3, count=20)
    assert a == ndm.scenarios(seed=3, count=20)
    assert a != ndm.scenarios(seed=4, count=20)
    assert len(a) == 20
    assert {s["split"] for s in a} <= {"train", "val", "test"}
    ndm.Profile(a[0]["profile"])  # the generator's profiles parse


# Bad input raises ValueError with the tools' one-line message.
@pytest.mark.parametrize("fn, fragment, kw", [
    (ndm.simulate, 'unknown congestion controller "nope"', {"cc": "nope"}),
    (ndm.simulate, "unknown", {"profile": "no-such-preset"}),
    (ndm.simulate, "delay", {"profile": "delay=5parsecs"}),
    (ndm.simulate, "packet_size 100 is outside 1200..65507", {"packet_size": 100}),
    (ndm.simulate, 'unknown packet preset "huge"', {"packet_size": "huge"}),
    (ndm.simulate, "duration nan is outside", {"duration": float("nan")}),
    (ndm.simulate, "beta", {"cc": "reno:beta=7"}),
    (ndm.compare, "duration 0.1 is outside 0.5..3600", {"duration": 0.1}),
    (ndm.compare, 'unknown congestion controller "x"', {"cc": ["cubic", "x"]}),
    (ndm.compete, "--stagger 5 s starts the last flow after the 10 s run ends",
     {"cc": "cubic,reno,reno", "stagger": 5}),
    (ndm.Profile, "unknown", {"spec": "no-such-preset"}),
])
def test_error_messages(fn, fragment, kw):
    with pytest.raises(ValueError, match=re.escape(fragment)) as e:
        fn(**kw)
    assert "\n" not in str(e.value)


def test_wrong_type():
    with pytest.raises(TypeError):
        ndm.simulate(profile=42)


def test_same_message_as_the_library():
    # The message is the one ndm-compare prints after "ndm-compare: ".
    with pytest.raises(ValueError, match=r'^unknown congestion controller "nope" \(known: .*reno.*\)$'):
        ndm.simulate(cc="nope")
