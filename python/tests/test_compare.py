"""ndm.compare and ndm.compete: the numbers of ndm-compare --virtual and --compete."""

import json
import os
import subprocess

import numpy as np
import pytest

import ndm


def test_compare_runs():
    r = ndm.compare(profile="urban-lte", cc="cubic,reno", duration=3, repeat=2, packet_size="realistic")
    assert r["controllers"] == ["cubic", "reno"]
    assert r["packet_size"] == 1452
    assert [(x["controller"], x["repeat"], x["seed"]) for x in r["runs"]] == \
        [("cubic", 0, 1), ("reno", 0, 1), ("cubic", 1, 2), ("reno", 1, 2)]
    for run in r["runs"]:
        assert run["byte_exact"], run["error"]
        assert len(run["intervals"]["cwnd"]) == 3  # the send phase only
        assert isinstance(run["intervals"]["bytes_received"], np.ndarray)
    # Each run is simulate()'s run with the same seed.
    s = ndm.simulate(profile="urban-lte", cc="reno", duration=3, seed=2, packet_size=1452)
    assert r["runs"][3]["receiver_bytes"] == s["receiver_bytes"]
    assert r["runs"][3]["goodput_bps"] == s["goodput_bps"]


@pytest.mark.skipif(not os.environ.get("NDM_COMPARE"), reason="NDM_COMPARE (the ndm-compare binary) not set")
def test_same_numbers_as_ndm_compare(tmp_path):
    out = subprocess.run([os.environ["NDM_COMPARE"], "--virtual", "-J", "-q", "--cc", "cubic,ndm-cubic", "-t", "3",
                          "--packets", "realistic", "--seed", "5", "--out", str(tmp_path / "compare")],
                         check=True, capture_output=True, text=True).stdout
    tool = json.loads(out)
    py = ndm.compare(cc=["cubic", "ndm-cubic"], duration=3, packet_size="realistic", seed=5)
    assert len(tool["controllers"]) == len(py["runs"]) == 2
    for c, run in zip(tool["controllers"], py["runs"]):
        t = c["runs"][0]
        assert c["name"] == run["controller"]
        assert t["receiver"]["bytes"] == run["receiver_bytes"]
        assert t["sender"]["bytes"] == run["sender_bytes"]
        assert t["sender"]["retransmits"] == run["retransmits"]
        assert t["receiver"]["goodput_bps"] == pytest.approx(run["goodput_bps"], rel=1e-6)
        assert t["path"]["sent"] == run["path"]["sent"]
        assert [i["bytes_received"] for i in t["intervals"]] == list(run["intervals"]["bytes_received"])


def test_compete():
    r = ndm.compete(profile="delay=10ms,rate=20mbit,queue=40pkt", cc=["cubic", "reno"], duration=6,
                    stagger=1, packet_size=1452, seed=3)
    assert r["mode"] == "compete"
    (run,) = r["runs"]
    assert run["seed"] == 3
    assert [f["start_s"] for f in run["flows"]] == [0.0, 1.0]
    for f in run["flows"]:
        assert f["byte_exact"], f["error"]
        assert len(f["interval_bps"]) == 6
        assert f["goodput_bps"] > 1e6
    # Together they fill the bottleneck, and no more.
    total = sum(f["interval_bps"] for f in run["flows"])
    assert total.mean() < 20e6 * 1.01
    assert total[2:].mean() > 15e6
    assert 0.5 < run["jain_last_half"] <= 1.0
    assert run["bottleneck"]["queue_delay_p95_ms"] > 0
    again = ndm.compete(profile="delay=10ms,rate=20mbit,queue=40pkt", cc="cubic,reno", duration=6, stagger=1,
                        packet_size=1452, seed=3)
    assert np.array_equal(run["flows"][1]["interval_bps"], again["runs"][0]["flows"][1]["interval_bps"])
