"""ndm.sweep: grids, results keyed by job hash, identical with 1 or 2 workers, resumable."""

import json
import subprocess

import ndm_test_util
import ndm
import ndm.sweeps

GRID = {"cc": ["cubic", "reno"], "profile": "urban-lte", "seed": [1, 2, 3], "duration": 2, "packet_size": 1452}


def test_grid_and_identity_across_workers(tmp_path):
    jobs = ndm.sweeps.expand(GRID)
    assert len(jobs) == 6
    one = ndm.sweeps.sweep(GRID, out=str(tmp_path / "one.jsonl"), workers=1)
    two = ndm.sweeps.sweep(GRID, out=str(tmp_path / "two.jsonl"), workers=2)
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)
    k = ndm.sweeps.job_key(jobs[0])
    direct = ndm.simulate(**jobs[0])
    assert one[k]["receiver_bytes"] == direct["receiver_bytes"]
    assert one[k]["samples"]["cwnd"] == direct["samples"]["cwnd"].tolist()
    assert len((tmp_path / "two.jsonl").read_text().splitlines()) == 6


def test_resume(tmp_path, monkeypatch):
    out = str(tmp_path / "r.jsonl")
    ndm.sweeps.sweep(dict(GRID, seed=[1]), out=out, workers=1)
    with open(out, "a") as f:
        f.write('{"key": "torn')  # a crash mid-line
    calls = []
    real = ndm.sweeps.run_job
    monkeypatch.setattr(ndm.sweeps, "run_job", lambda job: calls.append(job) or real(job))
    results = ndm.sweeps.sweep(GRID, out=out, workers=1)
    assert len(results) == 6
    assert len(calls) == 4  # the two seed-1 jobs were in the file
    assert all(c["seed"] != 1 for c in calls)


def test_bad_job():
    r = ndm.sweeps.sweep([{"cc": "nope", "duration": 1}], workers=1)
    assert 'unknown congestion controller "nope"' in next(iter(r.values()))["error"]


def test_cli(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"cc": ["reno"], "seed": [1, 2], "duration": 1, "packet_size": 1452,
                                "profile": "delay=10ms,rate=10mbit"}))
    cli = ndm_test_util.ndm_sweep_command()
    p = subprocess.run(cli + [str(spec), "-j", "2"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "2 jobs, 0 failed" in p.stdout
    assert len(ndm.sweeps.load(str(tmp_path / "spec.jsonl"))) == 2
    spec.write_text("{not json")
    p = subprocess.run(cli + [str(spec)], capture_output=True, text=True)
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1
