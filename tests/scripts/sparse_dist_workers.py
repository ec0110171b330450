"""Worker bodies for tests/test_sparse_dist_kvstore.py, run in every worker process (started
by ``tests/dist_harness.py``) as ``python tests/scripts/sparse_dist_workers.py SCENARIO STORE
OUT``; each writes a JSON dict to ``OUT.<rank>``.
"""
from __future__ import annotations

import sys

import numpy as np

SHAPE = (8, 2)


def rsp(mx, rows, value, shape=SHAPE):
    data = np.full((len(rows), *shape[1:]), value, "float32")
    return mx.nd.sparse.row_sparse_array((data, np.array(rows, "int64")), shape=shape)


def pull_rows(mx, kv, key, rows, shape=SHAPE):
    out = mx.nd.sparse.zeros("row_sparse", shape)
    kv.row_sparse_pull(key, out=out, row_ids=mx.nd.array(rows))
    return out


def _errors(mx, kv) -> dict:
    got = {}
    try:
        kv.pull("w", out=mx.nd.zeros(SHAPE))
    except mx.base.MXNetError as err:
        got["pull_dense"] = str(err)
    try:
        kv.pull("w", out=mx.nd.sparse.zeros("row_sparse", SHAPE), ignore_sparse=False)
    except mx.base.MXNetError as err:
        got["pull_rsp"] = str(err)
    try:
        kv.set_gradient_compression({"type": "2bit"})
    except mx.base.MXNetError as err:
        got["compression"] = str(err)
    skipped = rsp(mx, [0], 9.0)
    kv.pull("w", out=skipped)  # ignore_sparse: left as it was
    got["skipped"] = skipped.asnumpy().tolist()
    return got


def _big(mx, kv, r: int) -> dict:
    """A (10**6, 8) key: a few rows pushed (all-gathered and summed without an optimizer),
    never densified (the fallback limit would raise), then a few rows pulled."""
    from symgraph import config
    shape = (10 ** 6, 8)
    with config.override(sparse_fallback_limit=10 ** 5):
        kv.init("big", mx.nd.sparse.zeros("row_sparse", shape))
        kv.push("big", rsp(mx, [10 * r, shape[0] - 1 - r], r + 1.0, shape))
        out = pull_rows(mx, kv, "big", [0, 10, shape[0] - 2, shape[0] - 1, 5], shape)
    return {"big_rows": out.indices.asnumpy().tolist(),
            "big_vals": out.data.asnumpy()[:, 0].tolist(),
            "big_stored": int(kv._store["big"].data.shape[0])}


def sync(mx, name: str) -> dict:
    kv = mx.kv.create(name)
    r, n = kv.rank, kv.num_workers
    kv.init(["w", "d"], [rsp(mx, [r, 7], r + 1.0), mx.nd.ones(SHAPE) * (r + 1)])
    got = {"rank": r, "n": n, "init": pull_rows(mx, kv, "w", range(8)).asnumpy().tolist()}
    # no optimizer: the summed rows replace those rows of the stored value
    kv.push("w", [rsp(mx, [r], 1.0), rsp(mx, [r, 4], 2.0)])
    got["after_push"] = pull_rows(mx, kv, "w", range(8)).asnumpy().tolist()
    part = pull_rows(mx, kv, "w", [[4, 0], [4, 4]])
    got["part_rows"] = part.indices.asnumpy().tolist()
    got["part"] = part.asnumpy().tolist()
    got.update(_errors(mx, kv))
    got.update(_big(mx, kv, r))  # no optimizer yet: 'test' updates densely
    # keys of two dtypes in one push: one all-gather of the rows' values per dtype
    kv.init(["h", "g"], [mx.nd.sparse.zeros("row_sparse", SHAPE, dtype="float16"),
                         mx.nd.sparse.zeros("row_sparse", SHAPE)])
    kv.push(["h", "g"], [rsp(mx, [r], r + 1.0).astype("float16"), rsp(mx, [r, 3], r + 1.0)])
    got["h"] = pull_rows(mx, kv, "h", range(8)).asnumpy().tolist()
    got["g"] = pull_rows(mx, kv, "g", range(8)).asnumpy().tolist()
    # an optimizer on the store; dense and row_sparse keys in one push
    kv.init("v", mx.nd.ones(SHAPE).tostype("row_sparse"))
    kv.set_optimizer(mx.optimizer.create("test", rescale_grad=2.0))
    for step in range(3):
        kv.push(["d", "v"], [mx.nd.ones(SHAPE) * (r + 1), rsp(mx, [r + step, 6], r + 1.0)])
    full = pull_rows(mx, kv, "v", range(8))
    got["v"] = full.asnumpy().tolist()
    got["v_bytes"] = full.asnumpy().tobytes().hex()
    dense = mx.nd.zeros(SHAPE)
    kv.pull("d", out=dense)
    got["d"] = dense.asnumpy().tolist()
    kv.barrier()
    return got


def async_average(mx, name: str) -> dict:
    kv = mx.kv.create(name)
    r = kv.rank
    kv.init("w", mx.nd.sparse.zeros("row_sparse", SHAPE))
    seen = []
    for _ in range(2):  # the period is 2: the second push averages the replicas
        kv.push("w", rsp(mx, [r], r + 1.0))
        seen.append(pull_rows(mx, kv, "w", range(8)).asnumpy().tolist())
    kv.barrier()
    return {"rank": r, "seen": seen}


def main() -> None:
    scenario, name, out = sys.argv[1:4]
    import symgraph as mx
    from tests.dist_workers import write_result  # the tests' harness puts the repo on the path
    write_result(globals()[scenario](mx, name), out)


if __name__ == "__main__":
    main()
