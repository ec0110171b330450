"""Distributed stores on torch.distributed (gloo over 127.0.0.1), 2 and 3 worker processes:
push/pull/pushpull/broadcast semantics, replicas kept identical under an optimizer, 2-bit
compression equal to the single-process compressed result, dist_async averaging, MXNet's
launch contract (scheduler and server processes exit without running the script), and a
worker that dies or hangs making the others fail in bounded time, naming it. Every test
bounds its run time and kills what it started (``tests/dist_harness.py``)."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx
from symgraph import distributed, launch
from tests import dist_harness

# what symgraph/distributed.py and symgraph/launch.py exposed before they became a package
_DISTRIBUTED_NAMES = ["CollectiveMismatch", "StoreValueError", "WorkerLost", "agree",
                      "all_reduce", "barrier", "broadcast", "fingerprint", "host_store",
                      "num_workers", "one_writer", "rank", "serve_role"]
_LAUNCH_NAMES = ["free_port", "job_env", "main", "start_local", "torchrun_args", "wait"]


def test_the_distributed_package_keeps_its_module_names():
    assert [n for n in _DISTRIBUTED_NAMES if not hasattr(distributed, n)] == []
    assert [n for n in _LAUNCH_NAMES if not hasattr(launch, n)] == []
    assert launch.main is distributed.launch.main  # `python -m symgraph.launch` runs it


def _ok(result: dict, n: int) -> dict:
    assert not result["timed_out"], result
    assert all(c == 0 for c in result["codes"]), result["codes"]
    assert sorted(result["ranks"]) == list(range(n)), result["ranks"].keys()
    return result["ranks"]


@pytest.mark.parametrize("n", [2, 3])
def test_push_pull_semantics(n, tmp_path):
    ranks = _ok(dist_harness.run("semantics", n, tmp_path), n)
    for got in ranks.values():
        assert got["n"] == n
        np.testing.assert_array_equal(got["init_a"], np.ones((2, 3)))  # rank 0's init
        np.testing.assert_array_equal(got["init_b"], np.full(5, 10.0))
        # a pull after a push sees the sum over all workers (each pushed 2 copies of r + 1)
        np.testing.assert_array_equal(got["push_a"], np.full((2, 3), sum(
            2 * (k + 1) for k in range(n))))
        np.testing.assert_array_equal(got["push_b"], np.arange(5) * sum(range(n)))
        want = sum(k + 2 for k in range(n))  # pushpull: (r + 1) + 1 per worker
        for g in got["pushpull"]:
            np.testing.assert_array_equal(g, np.full((2, 3), want))
        for o in got["broadcast"]:
            np.testing.assert_array_equal(o, np.full(3, 7.0))
        assert got["bad_shape"] == ("push of key a: the pushed shape [3, 2] differs from the "
                                    "stored shape [2, 3]")


def test_optimizer_on_the_store_keeps_replicas_identical(tmp_path):
    n = 2
    ranks = _ok(dist_harness.run("optimizer", n, tmp_path), n)
    assert len({got["bytes"] for got in ranks.values()}) == 1  # bit-identical replicas
    # the same updates from one process whose store sums every worker's copies
    kv = mx.kv.create("local")
    kv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9, wd=0.01))
    kv.init(0, mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (4, 3))))
    out = mx.nd.zeros((4, 3))
    for step in range(3):
        copies = []
        for r in range(n):
            g = np.random.RandomState(100 * step + r).uniform(-1, 1, (4, 3)).astype(np.float32)
            copies += [mx.nd.array(g), mx.nd.array(g * 0.5)]
        kv.push(0, copies)
        kv.pull(0, out=out)
    np.testing.assert_allclose(ranks[0]["weight"], out.asnumpy(), rtol=1e-6, atol=1e-7)


def test_compression_equals_the_single_process_compressed_sum(tmp_path):
    n = 3
    ranks = _ok(dist_harness.run("compression", n, tmp_path), n)
    kv = mx.kv.create("device")  # one compressed copy per worker, residual per copy
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.init("w", mx.nd.zeros((6,)))
    out, seen = mx.nd.zeros((6,)), []
    for step in range(3):
        kv.push("w", [mx.nd.array(np.random.RandomState(10 * step + r).uniform(-1, 1, 6)
                                  .astype(np.float32)) for r in range(n)])
        kv.pull("w", out=out)
        seen.append(out.asnumpy().tolist())
    for got in ranks.values():
        np.testing.assert_array_equal(got["seen"], seen)


def test_dist_async_averages_every_period(tmp_path):
    n = 2
    ranks = _ok(dist_harness.run("async_average", n, tmp_path,
                                 env={"SYMGRAPH_ASYNC_PERIOD": "2"}), n)
    for r, got in ranks.items():
        # without an optimizer a push stores the pushed value: first this worker's own
        np.testing.assert_array_equal(got["seen"][0], np.full(2, r + 1.0))
        # the second push reaches the period: the replicas are averaged over the workers
        np.testing.assert_array_equal(got["seen"][1], np.full(2, np.mean(
            [k + 1.0 for k in range(n)])))


def test_mxnet_launch_contract(tmp_path):
    n = 2
    result = dist_harness.run("semantics", n, tmp_path, dmlc=True)
    ranks = _ok(result, n)  # scheduler and server exited 0 and wrote nothing
    assert result["roles"] == ["scheduler", "server", "worker", "worker"]
    assert all(got["n"] == n for got in ranks.values())


@pytest.mark.parametrize("mode", ["die", "hang"])
def test_a_lost_worker_fails_the_others_in_bounded_time(mode, tmp_path):
    n, timeout = 3, 5
    result = dist_harness.run("lost_worker", n, tmp_path, timeout=60,
                              env={"LOST_MODE": mode, "SYMGRAPH_DIST_TIMEOUT": str(timeout)},
                              keep_going=0.5)
    assert not result["timed_out"]
    survivors = result["ranks"]
    assert sorted(survivors) == [0, 1], survivors
    for got in survivors.values():
        assert got["error"] == "WorkerLost", got
        assert f"lost rank(s) [{n - 1}]" in got["message"], got["message"]
        assert got["seconds"] < timeout + 10, got


@pytest.mark.parametrize("style", [[], ["--dmlc"]], ids=["torchrun", "dmlc"])
def test_launcher_runs_n_workers(style, tmp_path):
    import json
    import subprocess
    import sys
    out = tmp_path / "semantics"
    proc = subprocess.run(
        [sys.executable, "-m", "symgraph.launch", "-n", "2", *style, "tests/dist_workers.py",
         "semantics", str(out)], cwd=dist_harness.ROOT, env=dist_harness._env({}),
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    ranks = {r: json.loads((tmp_path / f"semantics.{r}").read_text()) for r in range(2)}
    assert all(got["n"] == 2 for got in ranks.values())
    np.testing.assert_array_equal(ranks[1]["push_a"], np.full((2, 3), 6.0))


def test_stores_on_the_test_device(tmp_path):
    """On a GPU (``SYMGRAPH_TEST_DEVICE=cuda``) dist_sync merges on the CPU over gloo and
    dist_device_sync on the GPU over NCCL, in one process group (one worker: NCCL wants a
    GPU per rank); on the CPU both run over gloo with 2 workers."""
    from tests import device
    n = 1 if device.ON_GPU else 2
    ranks = _ok(dist_harness.run("device_stores", n, tmp_path), n)
    for got in ranks.values():
        for name in ("dist_sync", "dist_device_sync"):
            assert got[name]["sum"] == got[name]["expected"], (name, got[name])
        assert got["dist_sync"]["store_device"] == "cpu"
        assert got["dist_device_sync"]["store_device"].startswith(device.TORCH.type)
