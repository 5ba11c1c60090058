"""ndm.sweep on Dask distributed: a scheduler and two workers on loopback run a 1 000-run grid
with results identical to the local pool's, a partial results file is completed rather than
rerun, and a bad scheduler address is a one-line error within seconds.

Skipped without Debian's python3-distributed, unless NDM_REQUIRE_DASK=1 (.ci/run)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

import ndm_test_util

distributed = ndm_test_util.import_or_skip("distributed", "NDM_REQUIRE_DASK", "python3-distributed")

import ndm  # noqa: E402
import ndm.sweeps  # noqa: E402

PYTHON = sys.executable
# 4 controllers x 5 loss rates x 50 seeds of half a second on a 5 Mbit/s path: ~10 ms a run.
GRID = {"cc": ["cubic", "reno", "bbr", "ndm-cubic"],
        "profile": [f"delay=10ms,rate=5mbit,loss={p}%" for p in (0, 0.5, 1, 2, 5)],
        "seed": list(range(1, 51)), "duration": 0.5}


class Cluster:
    """A Dask scheduler and two single-thread workers on loopback, each process in its own session,
    killed (with anything it started) at the end, pass or fail."""

    def __init__(self, dir):
        self.dir = dir
        self.stops = []
        # The workers import ndm (ndm.sweeps.run_job) from the package under test.
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [os.path.dirname(os.path.dirname(ndm.__file__))] + os.environ.get("PYTHONPATH", "").split(os.pathsep)))
        sched_file = os.path.join(dir, "scheduler.json")
        self.start(["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                    "--scheduler-file", sched_file, "--idle-timeout", "300"], env, "scheduler")
        deadline = time.monotonic() + 60
        while not os.path.exists(sched_file) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.2)  # the file is written, not necessarily closed, when it appears
        with open(sched_file) as f:
            self.address = json.load(f)["address"]
        for i in range(2):
            self.start(["distributed.cli.dask_worker", "--scheduler-file", sched_file, "--host", "127.0.0.1",
                        "--nworkers", "1", "--nthreads", "1", "--no-nanny", "--no-dashboard",
                        "--local-directory", os.path.join(dir, f"worker{i}"), "--death-timeout", "60"],
                       env, f"worker{i}")
        self.client = distributed.Client(self.address, timeout=30, set_as_default=False)
        self.stops.append(self.client.close)
        self.client.wait_for_workers(2, timeout=60)

    def start(self, args, env, name):
        log = open(os.path.join(self.dir, name + ".log"), "w")
        p = subprocess.Popen([PYTHON, "-m"] + args, env=env, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)

        def stop():
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
            log.close()

        self.stops.append(stop)

    def close(self):
        for stop in reversed(self.stops):
            stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(str(tmp_path_factory.mktemp("dask")))
    try:
        yield c
    finally:
        c.close()


def test_1000_run_grid_identical_to_local_pool(cluster, tmp_path):
    assert len(ndm.sweeps.expand(GRID)) == 1000
    with distributed.get_task_stream(cluster.client) as stream:
        t0 = time.monotonic()
        on_dask = ndm.sweep(GRID, out=str(tmp_path / "dask.jsonl"), scheduler=cluster.address)
        t1 = time.monotonic()
    local = ndm.sweep(GRID, out=str(tmp_path / "local.jsonl"), workers=2)
    t2 = time.monotonic()
    print(f"\n1000 runs: Dask (2 workers) {t1 - t0:.1f} s, local pool (2 processes) {t2 - t1:.1f} s",
          file=sys.stderr)
    # Every job ran as a Dask task, on both workers.
    tasks = [t for t in stream.data if t["key"].startswith("ndm-sweep-")]
    assert len(tasks) == 1000
    assert len({t["worker"] for t in tasks}) == 2
    assert list(on_dask) == list(local)
    assert json.dumps(on_dask, sort_keys=True) == json.dumps(local, sort_keys=True)
    assert not [k for k, r in on_dask.items() if r["error"]]
    # The files hold the same lines, in the order the jobs finished.
    dask_lines = (tmp_path / "dask.jsonl").read_text().splitlines()
    local_lines = (tmp_path / "local.jsonl").read_text().splitlines()
    assert len(dask_lines) == 1000
    assert sorted(dask_lines) == sorted(local_lines)


def test_resume_on_dask(cluster, tmp_path):
    grid = dict(GRID, cc=["cubic", "reno"], profile=GRID["profile"][2], seed=list(range(1, 11)))
    out = str(tmp_path / "resume.jsonl")
    ndm.sweep(dict(grid, seed=list(range(1, 6))), out=out, workers=1)
    # A result already in the file is kept as it is (a marker shows it), and a torn last line
    # (a crash mid-write) costs only itself.
    with open(out) as f:
        lines = f.readlines()
    kept = json.loads(lines[0])
    lines[0] = json.dumps(dict(kept, result={"marker": "not rerun"}), sort_keys=True) + "\n"
    with open(out, "w") as f:
        f.writelines(lines)
        f.write('{"key": "torn')
    results = ndm.sweep(grid, out=out, scheduler=cluster.address)
    assert results[kept["key"]] == {"marker": "not rerun"}
    on_disk = ndm.sweeps.load(out)
    assert len(on_disk) == 20
    with open(out) as f:
        assert len(f.readlines()) == 21  # 10 first, the torn line, 10 from Dask
    fresh = ndm.sweep(grid, workers=1)
    del fresh[kept["key"]], on_disk[kept["key"]]
    assert json.dumps(on_disk, sort_keys=True) == json.dumps(fresh, sort_keys=True)


def test_cli_on_dask(cluster, tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(dict(GRID, cc=["reno"], seed=[1, 2])))
    p = subprocess.run(ndm_test_util.ndm_sweep_command() + [str(spec), "--scheduler", cluster.address, "-q"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "10 jobs, 0 failed" in p.stdout
    assert len(ndm.sweeps.load(str(tmp_path / "spec.jsonl"))) == 10


@pytest.mark.parametrize("address, words", [("tcp://127.0.0.1:1", "Timed out"), ("nonsense", "missing port"),
                                            ("foo://127.0.0.1:1", "unknown address scheme")])
def test_bad_address(address, words, tmp_path):
    never = tmp_path / "never.jsonl"
    t0 = time.monotonic()
    with pytest.raises(ValueError) as e:
        ndm.sweep(dict(GRID, cc=["reno"], seed=[1]), out=str(never), scheduler=address, connect_timeout=2)
    assert time.monotonic() - t0 < 10
    assert words in str(e.value)
    assert address in str(e.value)
    assert "\n" not in str(e.value)
    assert not never.exists()


def test_bad_address_cli(cluster, tmp_path):
    spec = tmp_path / "bad.json"
    spec.write_text(json.dumps(dict(GRID, cc=["reno"], seed=[1])))
    cli = ndm_test_util.ndm_sweep_command()
    t0 = time.monotonic()
    p = subprocess.run(cli + [str(spec), "--scheduler", "tcp://127.0.0.1:1", "--connect-timeout", "2"],
                       capture_output=True, text=True)
    assert time.monotonic() - t0 < 15
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "ndm-sweep: Dask scheduler 'tcp://127.0.0.1:1'" in p.stderr
    p = subprocess.run(cli + [str(spec), "--scheduler", cluster.address, "-j", "2"], capture_output=True, text=True)
    assert p.returncode == 2
    assert "--workers" in p.stderr
