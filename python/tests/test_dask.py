"""ndm.sweep on Dask distributed: a scheduler and two workers on loopback run a 1 000-run grid
with results identical to the local pool's, a partial results file is completed rather than
rerun, and a bad scheduler address is a one-line error within seconds.

Skipped (exit 77) without Debian's python3-distributed, unless NDM_REQUIRE_DASK=1 (.ci/run)."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import ndm_test_util

distributed = ndm_test_util.import_or_skip("distributed", "NDM_REQUIRE_DASK", "python3-distributed")

import ndm
import ndm.sweeps

PYTHON = sys.executable
# 4 controllers x 5 loss rates x 50 seeds of half a second on a 5 Mbit/s path: ~10 ms a run.
GRID = {"cc": ["cubic", "reno", "bbr", "ndm-cubic"],
        "profile": [f"delay=10ms,rate=5mbit,loss={p}%" for p in (0, 0.5, 1, 2, 5)],
        "seed": list(range(1, 51)), "duration": 0.5}


def cli():
    """build/python/ndm-sweep next to the package, else python3 -m ndm.sweeps."""
    script = os.path.join(os.path.dirname(os.path.dirname(ndm.__file__)), "ndm-sweep")
    return [PYTHON, script] if os.path.exists(script) else [PYTHON, "-m", "ndm.sweeps"]


class DaskSweepTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.addClassCleanup(cls.dir.cleanup)
        # The workers import ndm (ndm.sweeps.run_job) from the package under test.
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [os.path.dirname(os.path.dirname(ndm.__file__))] + os.environ.get("PYTHONPATH", "").split(os.pathsep)))
        sched_file = os.path.join(cls.dir.name, "scheduler.json")
        cls.start(["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                   "--scheduler-file", sched_file, "--idle-timeout", "300"], env, "scheduler")
        deadline = time.monotonic() + 60
        while not os.path.exists(sched_file) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.2)  # the file is written, not necessarily closed, when it appears
        with open(sched_file) as f:
            cls.address = json.load(f)["address"]
        for i in range(2):
            cls.start(["distributed.cli.dask_worker", "--scheduler-file", sched_file, "--host", "127.0.0.1",
                       "--nworkers", "1", "--nthreads", "1", "--no-nanny", "--no-dashboard",
                       "--local-directory", os.path.join(cls.dir.name, f"worker{i}"), "--death-timeout", "60"],
                      env, f"worker{i}")
        cls.client = distributed.Client(cls.address, timeout=30, set_as_default=False)
        cls.addClassCleanup(cls.client.close)
        cls.client.wait_for_workers(2, timeout=60)

    @classmethod
    def start(cls, args, env, name):
        """A Dask process in its own session, killed (with anything it started) at the end, pass or fail."""
        log = open(os.path.join(cls.dir.name, name + ".log"), "w")
        p = subprocess.Popen([PYTHON, "-m"] + args, env=env, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)

        def stop():
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
            log.close()

        cls.addClassCleanup(stop)

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def test_1000_run_grid_identical_to_local_pool(self):
        self.assertEqual(len(ndm.sweeps.expand(GRID)), 1000)
        with distributed.get_task_stream(self.client) as stream:
            t0 = time.monotonic()
            on_dask = ndm.sweep(GRID, out=self.path("dask.jsonl"), scheduler=self.address)
            t1 = time.monotonic()
        local = ndm.sweep(GRID, out=self.path("local.jsonl"), workers=2)
        t2 = time.monotonic()
        print(f"\n1000 runs: Dask (2 workers) {t1 - t0:.1f} s, local pool (2 processes) {t2 - t1:.1f} s",
              file=sys.stderr)
        # Every job ran as a Dask task, on both workers.
        tasks = [t for t in stream.data if t["key"].startswith("ndm-sweep-")]
        self.assertEqual(len(tasks), 1000)
        self.assertEqual(len({t["worker"] for t in tasks}), 2)
        self.assertEqual(list(on_dask), list(local))
        self.assertEqual(json.dumps(on_dask, sort_keys=True), json.dumps(local, sort_keys=True))
        self.assertFalse([k for k, r in on_dask.items() if r["error"]])
        # The files hold the same lines, in the order the jobs finished.
        with open(self.path("dask.jsonl")) as d, open(self.path("local.jsonl")) as l:
            dask_lines, local_lines = d.readlines(), l.readlines()
        self.assertEqual(len(dask_lines), 1000)
        self.assertEqual(sorted(dask_lines), sorted(local_lines))

    def test_resume_on_dask(self):
        grid = dict(GRID, cc=["cubic", "reno"], profile=GRID["profile"][2], seed=list(range(1, 11)))
        out = self.path("resume.jsonl")
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
        results = ndm.sweep(grid, out=out, scheduler=self.address)
        self.assertEqual(results[kept["key"]], {"marker": "not rerun"})
        on_disk = ndm.sweeps.load(out)
        self.assertEqual(len(on_disk), 20)
        with open(out) as f:
            self.assertEqual(len(f.readlines()), 21)  # 10 first, the torn line, 10 from Dask
        fresh = ndm.sweep(grid, workers=1)
        del fresh[kept["key"]], on_disk[kept["key"]]
        self.assertEqual(json.dumps(on_disk, sort_keys=True), json.dumps(fresh, sort_keys=True))

    def test_cli_on_dask(self):
        spec = self.path("spec.json")
        with open(spec, "w") as f:
            json.dump(dict(GRID, cc=["reno"], seed=[1, 2]), f)
        p = subprocess.run(cli() + [spec, "--scheduler", self.address, "-q"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("10 jobs, 0 failed", p.stdout)
        self.assertEqual(len(ndm.sweeps.load(self.path("spec.jsonl"))), 10)

    def test_bad_address(self):
        grid = dict(GRID, cc=["reno"], seed=[1])
        for address, words in (("tcp://127.0.0.1:1", "Timed out"), ("nonsense", "missing port"),
                               ("foo://127.0.0.1:1", "unknown address scheme")):
            t0 = time.monotonic()
            with self.assertRaises(ValueError) as e:
                ndm.sweep(grid, out=self.path("never.jsonl"), scheduler=address, connect_timeout=2)
            self.assertLess(time.monotonic() - t0, 10)
            self.assertIn(words, str(e.exception))
            self.assertIn(address, str(e.exception))
            self.assertNotIn("\n", str(e.exception))
        self.assertFalse(os.path.exists(self.path("never.jsonl")))
        spec = self.path("bad.json")
        with open(spec, "w") as f:
            json.dump(grid, f)
        t0 = time.monotonic()
        p = subprocess.run(cli() + [spec, "--scheduler", "tcp://127.0.0.1:1", "--connect-timeout", "2"],
                           capture_output=True, text=True)
        self.assertLess(time.monotonic() - t0, 15)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn("ndm-sweep: Dask scheduler 'tcp://127.0.0.1:1'", p.stderr)
        p = subprocess.run(cli() + [spec, "--scheduler", self.address, "-j", "2"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--workers", p.stderr)


if __name__ == "__main__":
    unittest.main()
