"""The training dataset generated in shards (ndm.generate_dataset, ndm.join_datasets) and on
Dask workers (ndm_train_torch.generate, `ndm-train-torch generate`): any shard layout, on any
number of workers, joins to the file one process writes, byte for byte (docs/ndm-training.md §1).

The Dask cases skip without Debian's python3-distributed, unless NDM_REQUIRE_DASK=1 (.ci/run)."""

import os
import subprocess
import sys

import pytest

import ndm_test_util

import ndm  # noqa: E402

# ndm_train_torch is a source package (python/), found after the built ndm (build/python),
# which python/ndm (no extension) must not shadow.
SOURCE = os.path.join(os.environ.get("NDM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")), "python")
sys.path.append(SOURCE)
PYTHONPATH = os.pathsep.join([p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p] + [SOURCE])
from ndm_train_torch.generate import GenerateOptions, generate, shards  # noqa: E402

# Six short scenarios with ndm and cubic senders, half of the bottleneck ones with competitors.
RUN = dict(seed=5, scenarios=6, seconds=3.0, controllers=["ndm", "cubic"], compete=0.5)


@pytest.fixture(scope="module")
def whole():
    return ndm.generate_dataset(**RUN)


def test_shards_join_to_the_whole_list(whole):
    assert whole.startswith("# ndm-dataset v1\n")
    assert "# ndm-train 1 generate --seed 5 --scenarios 6 --seconds 3 --cc ndm,cubic" in whole
    assert whole.count("\nS\t") == 6
    for size in (1, 4):
        o = GenerateOptions(**RUN)
        parts = [ndm.generate_dataset(**job) for job in shards(o, size)]
        assert len(parts) == -(-6 // size)
        assert ndm.join_datasets(parts) == whole


def test_a_shard_past_the_end_is_empty_and_join_refuses_other_runs(whole):
    empty = ndm.generate_dataset(**RUN, first=10)
    assert empty.count("\nS\t") == 0
    assert ndm.join_datasets([whole, empty]) == whole
    other = ndm.generate_dataset(**dict(RUN, seed=6), first=0, count=1)
    with pytest.raises(ValueError, match="another generate run"):
        ndm.join_datasets([whole, other])
    with pytest.raises(ValueError, match="no parts"):
        ndm.join_datasets([])


def test_bad_arguments_are_one_line_errors():
    with pytest.raises(ValueError, match="seconds"):
        ndm.generate_dataset(seconds=0.5)
    with pytest.raises(ValueError, match="controllers"):
        ndm.generate_dataset(controllers=[])


def test_on_two_dask_workers_the_file_is_the_same(whole, monkeypatch):
    ndm_test_util.import_or_skip("distributed", "NDM_REQUIRE_DASK", "python3-distributed")
    # The workers are new processes: they find ndm_train_torch (imported by name) through PYTHONPATH.
    monkeypatch.setenv("PYTHONPATH", PYTHONPATH)
    g = generate(GenerateOptions(**RUN), workers=2, shard_size=2)
    assert g.workers == 2 and g.shards == 3
    assert g.text == whole


def test_cli_writes_the_file_and_rejects_a_bad_command_line(whole, tmp_path):
    ndm_test_util.import_or_skip("distributed", "NDM_REQUIRE_DASK", "python3-distributed")
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    out = tmp_path / "d.tsv"
    cmd = [sys.executable, "-m", "ndm_train_torch", "generate", "--seed", "5", "-n", "6", "--seconds", "3",
           "--cc", "ndm,cubic", "--compete", "0.5", "--workers", "1", "-q", "-o", str(out)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "6 scenarios in 1 shards on 1 Dask workers" in r.stdout
    assert out.read_text() == whole
    bad = subprocess.run(cmd[:4] + ["--workers", "0"], env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "--workers" in bad.stderr
