"""Distributed training end to end: the unchanged MXNet 1.x script ``tests/scripts/dist_fit.py``
(Module.fit, FeedForward, gluon.Trainer; one or two contexts per worker) under
``python -m symgraph.launch`` or PyTorch's launch environment, with 2 and 3 gloo workers on
127.0.0.1. Each run must leave bit-identical replicas, equal the single-process run on the
combined batches, and equal MXNet 1.9.1's own ``dist_sync`` run of the same script
(fixtures by ``tests/fixtures/dist/generate.py``). A job restarted from a checkpoint ends
where the uninterrupted job ends. Every run is bounded in time and killed if late."""
from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from symgraph.distributed import group
from tests import dist_harness, fixture_scripts

SCRIPT = "tests/scripts/dist_fit.py"
FIXTURES = Path(__file__).parent / "fixtures" / "dist"
BATCH = 8  # per worker
TOL = {"rtol": 1e-5, "atol": 2e-6}


def _load(path) -> dict:
    return {k: v.asnumpy() for k, v in mx.nd.load(str(path)).items()}


def _assert_close(got: dict, want: dict, what: str) -> None:
    assert sorted(got) == sorted(want), (what, sorted(got), sorted(want))
    for key in want:
        np.testing.assert_allclose(got[key], want[key], err_msg=f"{what}: {key}", **TOL)


def _launch(out: Path, n: int, args: list, timeout: float = 120) -> list[dict]:
    """``args`` on ``n`` workers (PyTorch's launch environment): each rank's parameters."""
    procs, _ = dist_harness.start([sys.executable, SCRIPT, str(out), *args], n)
    codes, timed_out = dist_harness.wait(procs, timeout)
    assert not timed_out and codes == [0] * n, codes
    return _replicas(out, n)


def _replicas(out: Path, n: int) -> list[dict]:
    files = [Path(f"{out}-rank{r}.params") for r in range(n)]
    assert len({f.read_bytes() for f in files}) == 1, "replicas differ"
    return [_load(f) for f in files]


def _single(out: Path, args: list) -> dict:
    """The same script in this process (no distributed store)."""
    script = fixture_scripts.load("dist_fit.py", root=Path(__file__).parent / "scripts")
    saved = dict(os.environ)  # the script may set MXNET_UPDATE_ON_KVSTORE, as users do
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # FeedForward's, as in MXNet
            script.main([str(out), *args])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return _load(f"{out}-rank0.params")


@pytest.fixture(scope="module")
def launched(tmp_path_factory):
    """The done-when run: the script under ``python -m symgraph.launch -n 2``, 3 epochs,
    checkpointing every epoch (also the uninterrupted run of the restart test)."""
    tmp = tmp_path_factory.mktemp("launched")
    proc = subprocess.run(
        [sys.executable, "-m", "symgraph.launch", "-n", "2", SCRIPT, str(tmp / "out"),
         "--kvstore", "dist_sync", "--checkpoint", str(tmp / "ckpt")],
        cwd=dist_harness.ROOT, env=dist_harness._env({}), capture_output=True, text=True,
        timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return tmp, _replicas(tmp / "out", 2)


def test_module_fit_dist_sync_under_the_launcher(launched, tmp_path):
    _, replicas = launched
    single = _single(tmp_path / "single", ["--kvstore", "local", "--batch-size", str(2 * BATCH)])
    _assert_close(replicas[0], single, "2 workers vs one process on the combined batches")
    _assert_close(replicas[0], _load(FIXTURES / "module.params"), "vs MXNet 1.9.1 dist_sync")


# fixture -> the script's arguments ('module' is the launcher test's case above)
CASES = {k: v for k, v in fixture_scripts.load("dist/generate.py").CASES.items()
         if k != "module"}


@pytest.mark.parametrize("case", sorted(CASES))
def test_training_apis_match_one_process_and_mxnet(case, tmp_path):
    args = CASES[case]
    replicas = _launch(tmp_path / "dist", 2, args)
    api = [a for a in args if a in ("feedforward", "gluon")] or ["module"]
    single = _single(tmp_path / "single", ["--api", api[0], "--kvstore", "local",
                                           "--batch-size", str(2 * BATCH)])
    _assert_close(replicas[0], single, f"{case}: 2 workers vs one process")
    _assert_close(replicas[0], _load(FIXTURES / f"{case}.params"), f"{case}: vs MXNet")


def test_three_workers_equal_one_process_with_three_contexts(tmp_path):
    replicas = _launch(tmp_path / "dist", 3, [])
    single = _single(tmp_path / "single", ["--kvstore", "local", "--num-ctx", "3",
                                           "--batch-size", str(3 * BATCH)])
    _assert_close(replicas[0], single, "3 workers vs one process")


@pytest.mark.parametrize("api", ["module", "gluon"])
def test_compressed_training_equals_one_process_compressing_each_context(api, tmp_path):
    # each worker quantises its gradient; one process with a context per worker quantises
    # each context's copy: the same sums (MXNet 1.9.1 itself refuses compression with
    # pushpull on dist stores, so there is no MXNet fixture)
    replicas = _launch(tmp_path / "dist", 2, ["--api", api, "--compression"])
    single = _single(tmp_path / "single", ["--api", api, "--kvstore", "device", "--num-ctx",
                                           "2", "--batch-size", str(2 * BATCH),
                                           "--compression"])
    _assert_close(replicas[0], single, f"{api}: compressed, 2 workers vs one process")
    plain = _load(FIXTURES / ("module.params" if api == "module" else "gluon.params"))
    assert any(not np.allclose(replicas[0][k], plain[k]) for k in plain)  # it did compress


def test_restart_from_checkpoint_equals_uninterrupted(launched, tmp_path):
    tmp, uninterrupted = launched
    for epoch in (1, 2, 3):  # rank 0 wrote every epoch's checkpoint with optimizer states
        for suffix in (f"-{epoch:04d}.params", f"-{epoch:04d}.states"):
            assert (tmp / f"ckpt{suffix}").exists(), suffix
    ckpt = tmp_path / "ckpt"
    _launch(tmp_path / "first", 2, ["--checkpoint", str(ckpt), "--num-epochs", "1"])
    resumed = _launch(tmp_path / "resumed", 2, ["--checkpoint", str(ckpt), "--resume", "1",
                                                "--num-epochs", "3"])
    for key, value in uninterrupted[0].items():
        np.testing.assert_array_equal(resumed[0][key], value, err_msg=key)


def test_only_rank_zero_writes_checkpoints(tmp_path, monkeypatch):
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")
    params = {"fc_weight": mx.nd.ones((2, 3)), "fc_bias": mx.nd.zeros((2,))}
    monkeypatch.setattr(group, "_STATE", {"rank": 1})
    mx.model.save_checkpoint(str(tmp_path / "r1"), 1, net, params, {})
    assert os.listdir(tmp_path) == []
    monkeypatch.setattr(group, "_STATE", {"rank": 0})
    mx.model.save_checkpoint(str(tmp_path / "r0"), 1, net, params, {})
    assert sorted(os.listdir(tmp_path)) == ["r0-0001.params", "r0-symbol.json"]


def test_bucketing_module_equals_one_process_on_the_combined_batches(tmp_path):
    from tests import dist_workers
    n = 2
    result = dist_harness.run("bucketing", n, tmp_path)
    assert not result["timed_out"] and result["codes"] == [0] * n, result["codes"]
    ranks = result["ranks"]
    assert ranks[0]["params"] == ranks[1]["params"]  # replicas identical
    combined = []
    for (key0, data0, label0), (key1, data1, label1) in zip(ranks[0]["batches"],
                                                           ranks[1]["batches"]):
        assert key0 == key1  # every step sees one bucket on every worker
        combined.append((key0, data0 + data1, label0 + label1))
    assert len(combined) == len(ranks[0]["batches"]) == len(ranks[1]["batches"]) > 2
    single = dist_workers.train_bucketing(mx, combined, None)
    _assert_close({k: np.array(v) for k, v in ranks[0]["params"].items()},
                  {k: np.array(v) for k, v in single.items()}, "bucketing")
