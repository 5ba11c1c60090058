"""ndm.sweep: grids, results keyed by job hash, identical with 1 or 2 workers, resumable."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import ndm_test_util  # noqa: F401  (paths)
import ndm
import ndm.sweeps


class SweepTest(unittest.TestCase):
    GRID = {"cc": ["cubic", "reno"], "profile": "urban-lte", "seed": [1, 2, 3], "duration": 2, "packet_size": 1452}

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def test_grid_and_identity_across_workers(self):
        jobs = ndm.sweeps.expand(self.GRID)
        self.assertEqual(len(jobs), 6)
        one = ndm.sweeps.sweep(self.GRID, out=self.path("one.jsonl"), workers=1)
        two = ndm.sweeps.sweep(self.GRID, out=self.path("two.jsonl"), workers=2)
        self.assertEqual(json.dumps(one, sort_keys=True), json.dumps(two, sort_keys=True))
        k = ndm.sweeps.job_key(jobs[0])
        direct = ndm.simulate(**jobs[0])
        self.assertEqual(one[k]["receiver_bytes"], direct["receiver_bytes"])
        self.assertEqual(one[k]["samples"]["cwnd"], direct["samples"]["cwnd"].tolist())
        with open(self.path("two.jsonl")) as f:
            self.assertEqual(len(f.readlines()), 6)

    def test_resume(self):
        out = self.path("r.jsonl")
        first = dict(self.GRID, seed=[1])
        ndm.sweeps.sweep(first, out=out, workers=1)
        with open(out, "a") as f:
            f.write('{"key": "torn')  # a crash mid-line
        calls = []
        real = ndm.sweeps.run_job
        ndm.sweeps.run_job = lambda job: calls.append(job) or real(job)
        try:
            results = ndm.sweeps.sweep(self.GRID, out=out, workers=1)
        finally:
            ndm.sweeps.run_job = real
        self.assertEqual(len(results), 6)
        self.assertEqual(len(calls), 4)  # the two seed-1 jobs were in the file
        self.assertTrue(all(c["seed"] != 1 for c in calls))

    def test_bad_job_and_cli(self):
        r = ndm.sweeps.sweep([{"cc": "nope", "duration": 1}], workers=1)
        self.assertIn('unknown congestion controller "nope"', next(iter(r.values()))["error"])
        spec = self.path("spec.json")
        with open(spec, "w") as f:
            json.dump({"cc": ["reno"], "seed": [1, 2], "duration": 1, "packet_size": 1452,
                       "profile": "delay=10ms,rate=10mbit"}, f)
        # build/python/ndm-sweep next to the package; python3 -m ndm.sweeps is the same.
        script = os.path.join(os.path.dirname(os.path.dirname(ndm.__file__)), "ndm-sweep")
        cli = [sys.executable, script] if os.path.exists(script) else [sys.executable, "-m", "ndm.sweeps"]
        p = subprocess.run(cli + [spec, "-j", "2"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("2 jobs, 0 failed", p.stdout)
        self.assertEqual(len(ndm.sweeps.load(self.path("spec.jsonl"))), 2)
        with open(spec, "w") as f:
            f.write("{not json")
        p = subprocess.run(cli + [spec], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1)


if __name__ == "__main__":
    unittest.main()
