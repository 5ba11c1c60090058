"""Sweeps of virtual-time runs on a local process pool or a Dask cluster (docs/python.md):

    ndm.sweep({"cc": ["cubic", "reno"], "profile": ["urban-lte"], "seed": range(1, 11), "duration": [10]},
              out="sweep.jsonl")

or from the command line, `python3 -m ndm.sweeps spec.json --out sweep.jsonl` (or
build/python/ndm-sweep). Every job is one call of ndm.simulate (or "function":
"compare" / "compete") with the job's arguments; its key is a hash of the job (its
seed included), and each result is appended to the JSONL file as soon as it is in,
one line per job, so a sweep that was stopped resumes where it was: jobs whose key
is in the file are not run again. Runs are deterministic, so the results are the
same, bit for bit, with 1 worker or N, local or on Dask (scheduler="tcp://host:port",
ndm-sweep --scheduler; the workers import ndm themselves).
"""

import argparse
import asyncio
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


def _open_results(path):
    """`path` for appending; a torn last line (a crash mid-write) is ended first, so that the next
    result starts a line of its own instead of being lost with it."""
    torn = False
    if os.path.exists(path) and os.path.getsize(path) > 0:
        with open(path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            torn = f.read(1) != b"\n"
    f = open(path, "a")
    if torn:
        f.write("\n")
    return f


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


def _local_results(todo, workers):
    """(key, result) pairs as the jobs finish, in this process (1 worker) or on a fork pool."""
    if workers == 1:
        yield from ((k, run_job(j)) for k, j in todo)
        return
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = {pool.submit(run_job, j): k for k, j in todo}
        for fu in concurrent.futures.as_completed(futures):
            yield futures[fu], fu.result()


def _dask_client(scheduler, timeout):
    """A distributed.Client of the scheduler at `scheduler`, or ValueError in one line.

    The address is tried with a bare connection first: a Client that fails to
    connect still prints a traceback from its finaliser when the interpreter exits."""
    try:
        import distributed
        import distributed.comm
    except ImportError:
        raise ValueError("--scheduler needs Dask distributed (Debian's python3-distributed)") from None

    async def probe():
        comm = await distributed.comm.connect(scheduler, timeout=timeout)
        await comm.close()

    try:
        asyncio.run(probe())
        return distributed.Client(scheduler, timeout=timeout, set_as_default=False)
    except (OSError, ValueError, TypeError) as e:
        raise ValueError(f"Dask scheduler {scheduler!r}: {e}") from None


def _dask_results(todo, client):
    """(key, result) pairs as the jobs finish on a Dask cluster: run_job per job, by reference
    (the workers import ndm.sweeps), the task named after the job's key."""
    import distributed

    # ndm.sweeps.run_job by name even when this file runs as __main__ (python3 -m ndm.sweeps): the
    # workers import it, while __main__'s would be pickled by value, with the extension in it.
    from ndm.sweeps import run_job as importable_run_job

    if not todo:
        return
    futures = client.map(importable_run_job, [j for _, j in todo], key=[f"ndm-sweep-{k}" for k, _ in todo],
                         pure=False)
    keys = {fu.key: k for fu, (k, _) in zip(futures, todo)}
    for fu, result in distributed.as_completed(futures, loop=client.loop, with_results=True):
        yield keys[fu.key], result
        fu.release()


def sweep(spec, out=None, workers=None, progress=False, scheduler=None, connect_timeout=5):
    """Runs every job of `spec` (see expand) not already in `out`, on a local process pool or, given
    `scheduler` ("tcp://host:port"), on that Dask cluster; returns key → result for all of them."""
    jobs = {job_key(j): j for j in expand(spec)}
    results = {k: v for k, v in load(out).items() if k in jobs}
    todo = [(k, j) for k, j in jobs.items() if k not in results]
    client = _dask_client(scheduler, connect_timeout) if scheduler is not None else None
    f = finished = None
    try:
        f = _open_results(out) if out else None
        if client is not None:
            finished = _dask_results(todo, client)
        else:
            finished = _local_results(todo, workers or os.cpu_count() or 1)
        if progress:
            _progress(len(results), len(jobs))
        # One collection for both: each result is on disk before the next is taken.
        for k, r in finished:
            results[k] = r
            if f:
                _append(f, k, jobs[k], r)
            if progress:
                _progress(len(results), len(jobs))
    finally:
        if finished is not None:
            finished.close()
        if client is not None:
            client.close()
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
    ap.add_argument("--scheduler", metavar="ADDR", help="run the jobs on the Dask cluster of this scheduler "
                    "(tcp://HOST:PORT; its workers need ndm on their PYTHONPATH) instead of a local pool")
    ap.add_argument("--connect-timeout", type=float, default=5, metavar="S",
                    help="seconds to wait for the Dask scheduler (default 5)")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    a = ap.parse_args(argv)
    if a.workers < 0:
        ap.error(f"--workers {a.workers} must be at least 1 (0: one per CPU)")
    if a.scheduler is not None and a.workers:
        ap.error("--workers sets the local pool; with --scheduler the cluster's workers run the jobs")
    if not a.connect_timeout > 0:
        ap.error(f"--connect-timeout {a.connect_timeout} must be more than 0 s")
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
    try:
        results = sweep(spec, out=out, workers=a.workers or None, progress=not a.quiet and sys.stderr.isatty(),
                        scheduler=a.scheduler, connect_timeout=a.connect_timeout)
    except ValueError as e:
        print(f"ndm-sweep: {e}", file=sys.stderr)
        return 2
    failed = sum(1 for r in results.values() if "error" in r and r["error"] and "goodput_bps" not in r)
    print(f"ndm-sweep: {len(results)} jobs, {failed} failed; results in {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
