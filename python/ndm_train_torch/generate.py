"""The labelled dataset of `ndm-train generate`, its scenarios run on Dask workers
(docs/ndm-training.md §1): the seeded scenario list is cut into shards, each shard
runs in virtual time on a worker (ndm.generate_dataset), and the shards' datasets
joined in list order (ndm.join_datasets) are the file `ndm-train generate` writes
for the same options, byte for byte. Without a scheduler address a local cluster
of `workers` single-threaded processes is started for the run."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class GenerateOptions:
    seed: int = 1
    scenarios: int = 600
    seconds: float = 12.0
    controllers: list = field(default_factory=lambda: ["cubic", "reno", "ndm-cubic"])
    ndm_options: str | None = None  # ndm-cubic's; None: the library's pinned default
    ndm_bbr_options: str | None = None  # ndm's; None: the library's pinned default
    compete: float = 0.0


def _shard(job: dict) -> str:
    """One shard's dataset text; runs on a worker (imported there by name)."""
    import ndm

    return ndm.generate_dataset(**job)


def shards(o: GenerateOptions, size: int) -> list[dict]:
    """The generate_dataset arguments of each shard of `size` scenarios, in list order."""
    base = dict(seed=o.seed, scenarios=o.scenarios, seconds=o.seconds, controllers=list(o.controllers),
                ndm_options=o.ndm_options, ndm_bbr_options=o.ndm_bbr_options, compete=o.compete)
    return [dict(base, first=first, count=min(size, o.scenarios - first)) for first in range(0, o.scenarios, size)]


@dataclass
class Generated:
    text: str          # the dataset file's text
    shards: int
    workers: int
    seconds: float     # wall time of the runs (cluster start-up excluded)


def _client(workers: int, scheduler: str | None, timeout: float):
    try:
        import distributed
    except ImportError:
        raise ValueError("generating on Dask needs Dask distributed (Debian's python3-distributed)") from None
    if scheduler is not None:
        from ndm.sweeps import _dask_client

        return _dask_client(scheduler, timeout), None
    cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=50)
    return distributed.Client(cluster, set_as_default=False), cluster


def generate(o: GenerateOptions, workers: int = 1, scheduler: str | None = None, shard_size: int = 10,
             progress=None, connect_timeout: float = 5) -> Generated:
    """Runs o's scenarios on Dask (`scheduler`, or a local cluster of `workers` processes) and
    returns the joined dataset; progress(done, total) after each shard."""
    import ndm

    jobs = shards(o, shard_size)
    client, cluster = _client(workers, scheduler, connect_timeout)  # a one-line error without Dask
    import distributed
    try:
        n_workers = len(client.scheduler_info()["workers"])
        t0 = time.monotonic()
        futures = client.map(_shard, jobs, key=[f"ndm-generate-{o.seed}-{j['first']}" for j in jobs], pure=False)
        index = {fu.key: i for i, fu in enumerate(futures)}
        parts = [None] * len(jobs)
        for done, (fu, text) in enumerate(distributed.as_completed(futures, loop=client.loop, with_results=True), 1):
            parts[index[fu.key]] = text
            fu.release()
            if progress:
                progress(done, len(jobs))
        seconds = time.monotonic() - t0
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return Generated(ndm.join_datasets(parts), len(jobs), n_workers, seconds)
