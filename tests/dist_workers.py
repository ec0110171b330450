"""Worker bodies for the distributed tests: ``python -m tests.dist_workers SCENARIO OUT``.

Each scenario runs in every worker process (launched by ``tests/dist_harness.py`` with
PyTorch's or MXNet's environment) and returns a JSON-able dict, written to ``OUT.<rank>``.
"""
from __future__ import annotations

import json
import os
import sys
import time

import numpy as np


def _kv(mx, name="dist_sync"):
    return mx.kv.create(name)


def semantics(mx) -> dict:
    kv = _kv(mx)
    r, n = kv.rank, kv.num_workers
    kv.init(["a", "b"], [mx.nd.ones((2, 3)) * (r + 1), mx.nd.ones((5,)) * (10 + r)])
    a, b = mx.nd.zeros((2, 3)), mx.nd.zeros((5,))
    kv.pull(["a", "b"], out=[a, b])
    got = {"rank": r, "n": n, "init_a": a.asnumpy().tolist(), "init_b": b.asnumpy().tolist()}
    kv.push(["a", "b"], [[mx.nd.ones((2, 3)) * (r + 1)] * 2, mx.nd.arange(5) * r])
    kv.pull(["a", "b"], out=[a, b])
    got["push_a"], got["push_b"] = a.asnumpy().tolist(), b.asnumpy().tolist()
    grads = [mx.nd.ones((2, 3)) * (r + 1), mx.nd.ones((2, 3))]
    kv.pushpull("a", grads)
    got["pushpull"] = [g.asnumpy().tolist() for g in grads]
    outs = [mx.nd.zeros((3,)), mx.nd.zeros((3,))]
    kv.broadcast("c", mx.nd.ones((3,)) * (r + 7), out=outs)
    got["broadcast"] = [o.asnumpy().tolist() for o in outs]
    kv.barrier()
    return got


def optimizer(mx) -> dict:
    kv = _kv(mx)
    r = kv.rank
    kv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9, wd=0.01))
    rng = np.random.RandomState(0)
    kv.init(0, mx.nd.array(rng.uniform(-1, 1, (4, 3)) + r))  # rank 0's value wins
    out = mx.nd.zeros((4, 3))
    for step in range(3):
        g = np.random.RandomState(100 * step + r).uniform(-1, 1, (4, 3)).astype(np.float32)
        kv.push(0, [mx.nd.array(g), mx.nd.array(g * 0.5)])
        kv.pull(0, out=out)
    return {"rank": r, "weight": out.asnumpy().tolist(),
            "bytes": out.asnumpy().tobytes().hex()}


def compression(mx) -> dict:
    kv = _kv(mx)
    r = kv.rank
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.init("w", mx.nd.zeros((6,)))
    out, seen = mx.nd.zeros((6,)), []
    for step in range(3):
        g = np.random.RandomState(10 * step + r).uniform(-1, 1, 6).astype(np.float32)
        kv.push("w", mx.nd.array(g))
        kv.pull("w", out=out)
        seen.append(out.asnumpy().tolist())
    return {"rank": r, "seen": seen}


def async_average(mx) -> dict:
    kv = _kv(mx, "dist_async")
    r = kv.rank
    kv.init(0, mx.nd.zeros((2,)))
    out, seen = mx.nd.zeros((2,)), []
    for _ in range(2):
        kv.push(0, mx.nd.ones((2,)) * (r + 1))
        kv.pull(0, out=out)
        seen.append(out.asnumpy().tolist())
    return {"rank": r, "seen": seen}


def lost_worker(mx) -> dict:
    kv = _kv(mx)
    r = kv.rank
    kv.init(0, mx.nd.zeros((2,)))
    if r == kv.num_workers - 1:
        mode = os.environ.get("LOST_MODE", "die")
        if mode == "die":
            os._exit(3)
        time.sleep(3600)  # hang: the test kills it
    start = time.time()
    try:
        kv.push(0, mx.nd.ones((2,)))
    except mx.MXNetError as err:
        return {"rank": r, "error": type(err).__name__, "message": str(err),
                "seconds": time.time() - start}
    return {"rank": r, "error": None}


def main() -> None:
    scenario, out = sys.argv[1], sys.argv[2]
    import symgraph as mx
    got = globals()[scenario](mx)
    path = f"{out}.{got['rank']}"
    with open(path + ".tmp", "w") as f:
        json.dump(got, f)
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()
