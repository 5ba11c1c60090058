"""Sweeps of virtual-time runs on a local process pool (docs/python.md):

    ndm.sweep({"cc": ["cubic", "reno"], "profile": ["urban-lte"], "seed": range(1, 11), "duration": [10]},
              out="sweep.jsonl")

or from the command line, `python3 -m ndm.sweeps spec.json --out sweep.jsonl` (or
build/python/ndm-sweep). Every job is one call of ndm.simulate (or "function":
"compare" / "compete") with the job's arguments; its key is a hash of the job (its
seed included), and each result is appended to the JSONL file as soon as it is in,
one line per job, so a sweep that was stopped resumes where it was: jobs whose key
is in the file are not run again. Runs are deterministic, so the results are the
same, bit for bit, with 1 worker or N.
"""

import argparse
import concurrent.futures
import hashlib
import itertools
import json
import multiprocessing
import os
import sys

import numpy as np

from . import _ndm

FUNCTIONS = {"simulate": _ndm.simulate, "compare": _ndm.compare, "compete": _ndm.compete}


def expand(spec):
    """A list of jobs: a list of dicts as it is, or a grid (a dict of value lists; scalars stay) as its product."""
    if isinstance(spec, dict):
        keys = sorted(spec)
        values = [v if isinstance(v, (list, tuple, range)) else [v] for v in (spec[k] for k in keys)]
        return [dict(zip(keys, combo)) for combo in itertools.product(*values)]
    return [dict(job) for job in spec]


def job_key(job):
    """The hash of a job's canonical JSON (sorted keys): its identity in the results file."""
    return hashlib.sha256(json.dumps(job, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:20]


def _plain(x):
    """JSON-able: NumPy arrays to lists, NumPy scalars to Python numbers."""
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    return x


def run_job(job):
    """Runs one job in this process; a bad job gives {"error": message} rather than stopping the sweep."""
    args = dict(job)
    fn = FUNCTIONS.get(args.pop("function", "simulate"))
    if fn is None:
        return {"error": f"unknown function {job['function']!r} (known: {', '.join(FUNCTIONS)})"}
    try:
        return _plain(fn(**args))
    except (ValueError, TypeError) as e:
        return {"error": str(e)}


def load(path):
    """The results already in a JSONL file, key → result; a torn last line (a crash mid-write) is ignored."""
    done = {}
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue
                done[entry["key"]] = entry["result"]
    return done


def _append(f, key, job, result):
    f.write(json.dumps({"key": key, "job": job, "result": result}, sort_keys=True) + "\n")
    f.flush()
    os.fsync(f.fileno())


def _progress(n, total, stream=sys.stderr):
    width = 30
    filled = width * n // max(total, 1)
    stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {n}/{total}")
    if n == total:
        stream.write("\n")
    stream.flush()


def sweep(spec, out=None, workers=None, progress=False):
    """Runs every job of `spec` (see expand) not already in `out`; returns key → result for all of them."""
    jobs = {job_key(j): j for j in expand(spec)}
    results = {k: v for k, v in load(out).items() if k in jobs}
    todo = [(k, j) for k, j in jobs.items() if k not in results]
    workers = workers or os.cpu_count() or 1
    f = open(out, "a") if out else None
    try:
        if progress:
            _progress(len(results), len(jobs))
        if workers == 1:
            finished = ((k, run_job(j)) for k, j in todo)
        else:
            pool = concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
            futures = {pool.submit(run_job, j): k for k, j in todo}
            finished = ((futures[fu], fu.result()) for fu in concurrent.futures.as_completed(futures))
        for k, r in finished:
            results[k] = r
            if f:
                _append(f, k, jobs[k], r)
            if progress:
                _progress(len(results), len(jobs))
        if workers != 1:
            pool.shutdown()
    finally:
        if f:
            f.close()
    return {k: results[k] for k in jobs}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="ndm-sweep", description="Runs a sweep of virtual-time ndm runs: SPEC is a "
                                 "JSON file holding a grid (an object of value lists) or a list of jobs (objects of "
                                 "ndm.simulate's arguments, or with \"function\": \"compare\" or \"compete\").")
    ap.add_argument("spec")
    ap.add_argument("--out", help="the JSONL results file (default: SPEC with .jsonl); resumed if it exists")
    ap.add_argument("-j", "--workers", type=int, default=0, help="processes (default: one per CPU)")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    a = ap.parse_args(argv)
    if a.workers < 0:
        ap.error(f"--workers {a.workers} must be at least 1 (0: one per CPU)")
    try:
        with open(a.spec) as f:
            spec = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        print(f"ndm-sweep: {a.spec}: {e}", file=sys.stderr)
        return 2
    if not isinstance(spec, (dict, list)):
        print(f"ndm-sweep: {a.spec}: a grid (object) or a list of jobs expected", file=sys.stderr)
        return 2
    out = a.out or os.path.splitext(a.spec)[0] + ".jsonl"
    results = sweep(spec, out=out, workers=a.workers or None, progress=not a.quiet and sys.stderr.isatty())
    failed = sum(1 for r in results.values() if "error" in r and r["error"] and "goodput_bps" not in r)
    print(f"ndm-sweep: {len(results)} jobs, {failed} failed; results in {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
