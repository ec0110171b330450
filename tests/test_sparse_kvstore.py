"""KVStore with row_sparse values on the single-machine stores ('local', 'device', MXNet's
aliases): push sums row_sparse copies as the union of their rows, pull into dense or
row_sparse outputs, row_sparse_pull hands out exactly the requested rows, and nothing of
the full shape is allocated for a few pushed rows. Expected values are numpy's; the
behaviours (and error cases) are MXNet 1.9.1's, checked with its own build (kvstore_local.h,
comm.h; test_kvstore.py::test_row_sparse_pull, test_sparse_aggregator, test_invalid_pull)."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx
from symgraph import config
from symgraph.base import MXNetError, ShapeError

SHAPE = (6, 3)
STORES = ["local", "device", "local_allreduce_cpu"]


def rsp(rows: list[int], scale: float = 1.0, shape=SHAPE, dtype="float32"):
    """A row_sparse array with ``rows`` set to ``scale * (row + 1)``."""
    data = np.stack([np.full(shape[1:], scale * (r + 1), dtype) for r in rows]) if rows \
        else np.zeros((0, *shape[1:]), dtype)
    return mx.nd.sparse.row_sparse_array((data, np.array(rows, dtype="int64")), shape=shape)


def dense_of(rows: list[int], scale: float = 1.0) -> np.ndarray:
    out = np.zeros(SHAPE, "float32")
    for r in rows:
        out[r] += scale * (r + 1)
    return out


def store(name: str, init_rows=(0, 2, 5)):
    kv = mx.kv.create(name)
    kv.init("w", rsp(list(init_rows)))
    return kv


# ------------------------------------------------------------------ push

PUSHES = [  # (pushed copies as (rows, scale), expected rows of the sum)
    ([([1, 4], 1.0)], [1, 4]),
    ([([1], 1.0), ([1, 3], 2.0)], [1, 3]),
    ([([0], 1.0), ([5], 1.0), ([0, 5], 0.5), ([2], 3.0), ([2, 0], 1.0)], [0, 2, 5]),
    ([([], 1.0), ([], 1.0)], []),
]


@pytest.mark.parametrize("name", STORES)
@pytest.mark.parametrize("copies,rows", PUSHES)
def test_push_sums_row_sparse_copies_as_the_union_of_rows(name, copies, rows):
    kv = store(name)
    kv.push("w", [rsp(sorted(set(r)), s) for r, s in copies])
    want = sum(dense_of(sorted(set(r)), s) for r, s in copies)
    stored = kv._store["w"]
    assert stored.stype == "row_sparse"  # never densified
    assert stored.indices.tolist() == rows
    out = mx.nd.zeros(SHAPE)
    kv.pull("w", out=out)
    np.testing.assert_array_equal(out.asnumpy(), want)


def test_push_of_a_list_of_keys_with_device_copies():
    kv = mx.kv.create("local")
    kv.init(["a", "b"], [rsp([]), mx.nd.zeros(SHAPE)])
    devs = [mx.cpu(i) for i in range(3)]
    kv.push(["a", "b"], [[rsp([i], 1.0).copyto(d) for i, d in enumerate(devs)],
                         [mx.nd.ones(SHAPE, d) for d in devs]])
    outs = [mx.nd.sparse.zeros("row_sparse", SHAPE, ctx=d) for d in devs]
    kv.pull("a", out=outs, ignore_sparse=False)
    for o, d in zip(outs, devs):
        assert o.stype == "row_sparse" and o.context == d
        np.testing.assert_array_equal(o.asnumpy(), dense_of([0, 1, 2]))
    dense = mx.nd.zeros(SHAPE)
    kv.pull("b", out=dense)
    np.testing.assert_array_equal(dense.asnumpy(), np.full(SHAPE, 3.0))


def test_without_an_updater_the_stored_storage_type_follows_the_push():
    kv = store("local")  # MXNet's local store keeps the merged value in its own stype
    kv.push("w", mx.nd.ones(SHAPE) * 5)
    assert kv._store["w"].__class__.__name__ == "Tensor"
    with pytest.raises(MXNetError, match="expects row_sparse src"):
        kv.row_sparse_pull("w", out=mx.nd.sparse.zeros("row_sparse", SHAPE),
                           row_ids=mx.nd.array([1]))
    kv.init("d", mx.nd.zeros(SHAPE))
    kv.push("d", rsp([3]))
    out = mx.nd.sparse.zeros("row_sparse", SHAPE)
    kv.row_sparse_pull("d", out=out, row_ids=mx.nd.array([3, 4]))
    np.testing.assert_array_equal(out.asnumpy(), dense_of([3]))


@pytest.mark.parametrize("weight_stype", ["default", "row_sparse"])
def test_the_updater_gets_the_row_sparse_sum(weight_stype):
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.zeros(SHAPE).tostype(weight_stype) if weight_stype != "default"
            else mx.nd.zeros(SHAPE))
    seen = []

    def updater(key, grad, weight):
        seen.append((key, grad.stype, grad.indices.asnumpy().tolist(), weight.stype))
        weight[:] = grad

    kv._set_updater(updater)
    kv.push(0, [rsp([4, 1]), rsp([1], 2.0)])
    assert seen == [(0, "row_sparse", [1, 4], weight_stype)]
    out = mx.nd.zeros(SHAPE)
    kv.pull(0, out=out)
    np.testing.assert_array_equal(out.asnumpy(), dense_of([4, 1]) + dense_of([1], 2.0))


# ------------------------------------------------------------------ pull

PULLS = [  # (out stype, ignore_sparse, written?)
    ("default", True, True),
    ("default", False, True),
    ("row_sparse", True, False),  # MXNet skips sparse outputs of pull by default
    ("row_sparse", False, True),
]


@pytest.mark.parametrize("name", STORES)
@pytest.mark.parametrize("stype,ignore,written", PULLS)
def test_pull_of_a_row_sparse_key(name, stype, ignore, written):
    kv = store(name)
    before = np.full(SHAPE, 7.0, "float32")
    out = mx.nd.array(before).tostype(stype)
    kv.pull("w", out=out, ignore_sparse=ignore)
    assert out.stype == stype
    np.testing.assert_array_equal(out.asnumpy(), dense_of([0, 2, 5]) if written else before)


def test_pull_of_a_float16_key_into_float32_outputs():
    kv = mx.kv.create("local")
    kv.init("h", rsp([1, 2], dtype="float16"))
    out = mx.nd.sparse.zeros("row_sparse", SHAPE)
    kv.row_sparse_pull("h", out=out, row_ids=mx.nd.array([2]))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.asnumpy(), dense_of([2]))


# ------------------------------------------------------------------ row_sparse_pull

ROW_IDS = [  # (row ids as given, their dtype)
    ([3, 1, 3, 0], "float32"),  # unsorted, duplicates
    ([[5, 2], [2, 1]], "float32"),  # 2-D, as test_kvstore.py passes them
    ([4, 0], "int64"),
    ([], "float32"),
    ([5, 5, 5], "int32"),
]


@pytest.mark.parametrize("name", STORES)
@pytest.mark.parametrize("ids,dtype", ROW_IDS)
def test_row_sparse_pull_gives_exactly_the_requested_rows(name, ids, dtype):
    kv = store(name)
    out = mx.nd.sparse.zeros("row_sparse", SHAPE)
    kv.row_sparse_pull("w", out=out, row_ids=mx.nd.array(ids, dtype=dtype))
    wanted = sorted(set(np.array(ids, "int64").reshape(-1).tolist()))
    assert out.stype == "row_sparse"
    assert out.indices.asnumpy().tolist() == wanted  # zeros where the store has none
    expect = np.zeros(SHAPE, "float32")
    full = dense_of([0, 2, 5])
    expect[wanted] = full[wanted]
    np.testing.assert_array_equal(out.asnumpy(), expect)


def test_row_sparse_pull_row_ids_per_output_and_shared():
    kv = store("local")
    outs = [mx.nd.sparse.zeros("row_sparse", SHAPE, ctx=mx.cpu(i)) for i in range(3)]
    ids = [mx.nd.array([0]), mx.nd.array([5, 2]), mx.nd.array([1])]
    kv.row_sparse_pull("w", out=outs, row_ids=ids)
    assert [o.indices.asnumpy().tolist() for o in outs] == [[0], [2, 5], [1]]
    kv.row_sparse_pull("w", out=outs, row_ids=mx.nd.array([2]))  # one for all: copied
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), dense_of([2]))
    outs = [[mx.nd.sparse.zeros("row_sparse", SHAPE)] for _ in range(2)]
    kv.init("v", rsp([1]))
    kv.row_sparse_pull(["w", "v"], out=outs, row_ids=[[mx.nd.array([0])], [mx.nd.array([1])]])
    np.testing.assert_array_equal(outs[0][0].asnumpy(), dense_of([0]))
    np.testing.assert_array_equal(outs[1][0].asnumpy(), dense_of([1]))


def test_row_sparse_pull_of_a_key_without_rows_gives_no_rows():
    kv = mx.kv.create("local")
    kv.init("z", mx.nd.sparse.zeros("row_sparse", SHAPE))
    out = rsp([1, 2])
    kv.row_sparse_pull("z", out=out, row_ids=mx.nd.array([1, 2]))
    assert out.indices.asnumpy().tolist() == []


def test_pulled_rows_do_not_alias_the_store():
    kv = store("local")
    out = mx.nd.sparse.zeros("row_sparse", SHAPE)
    kv.row_sparse_pull("w", out=out, row_ids=mx.nd.array([0]))
    out.data[:] = 100  # writes into the output's own rows only
    again = mx.nd.sparse.zeros("row_sparse", SHAPE)
    kv.row_sparse_pull("w", out=again, row_ids=mx.nd.array([0]))
    np.testing.assert_array_equal(again.asnumpy(), dense_of([0]))


ERRORS = [  # (what, call(kv), error type, message part)
    ("dense output", lambda kv: kv.row_sparse_pull("w", out=mx.nd.zeros(SHAPE),
                                                   row_ids=mx.nd.array([1])),
     MXNetError, "Expected row_sparse storage type for row_sparse_pull values"),
    ("dense key", lambda kv: kv.row_sparse_pull("d", out=rsp([]), row_ids=mx.nd.array([1])),
     MXNetError, "PullRowSparse expects row_sparse src"),
    ("row_ids count", lambda kv: kv.row_sparse_pull("w", out=[rsp([]), rsp([]), rsp([])],
                                                    row_ids=[mx.nd.array([1])] * 2),
     AssertionError, "the number of row_ids doesn't match"),
    ("row out of range", lambda kv: kv.row_sparse_pull("w", out=rsp([]),
                                                       row_ids=mx.nd.array([6])),
     ShapeError, r"row ids \[6\] are out of range"),
    ("output shape", lambda kv: kv.row_sparse_pull(
        "w", out=mx.nd.sparse.zeros("row_sparse", (7, 3)), row_ids=mx.nd.array([1])),
     ShapeError, "shape mismatch"),
    ("int key", lambda kv: kv.row_sparse_pull(3, out=rsp([]), row_ids=mx.nd.array([1])),
     MXNetError, "Mixed key types"),
    ("csr push", lambda kv: kv.push("w", mx.nd.sparse.zeros("csr", SHAPE)),
     MXNetError, "unexpected storage type csr"),
    ("dense copy before rsp", lambda kv: kv.push("w", [mx.nd.ones(SHAPE), rsp([1])]),
     MXNetError, "storage type mismatch"),
    ("push shape", lambda kv: kv.push("w", rsp([1], shape=(7, 3))),
     ShapeError, "differs from the stored shape"),
]


@pytest.mark.parametrize("what,call,error,match", ERRORS, ids=[e[0] for e in ERRORS])
def test_invalid_calls_raise_as_mxnet(what, call, error, match):
    kv = store("local")
    kv.init("d", mx.nd.zeros(SHAPE))
    with pytest.raises(error, match=match):
        call(kv)


def test_a_row_sparse_copy_before_dense_ones_sums_densely():
    kv = store("local")
    kv.push("w", [rsp([1]), mx.nd.ones(SHAPE)])
    out = mx.nd.zeros(SHAPE)
    kv.pull("w", out=out)
    np.testing.assert_array_equal(out.asnumpy(), dense_of([1]) + 1)


def test_device_store_compresses_row_sparse_copies_densely():
    kv = mx.kv.create("device")
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.init(0, mx.nd.sparse.zeros("row_sparse", SHAPE))
    g = mx.nd.sparse.row_sparse_array((np.full((1, 3), 0.3, "float32"), [1]), shape=SHAPE)
    kv.push(0, [g, g])  # 0.3 each: below the threshold, kept as residual
    out = mx.nd.zeros(SHAPE)
    kv.pull(0, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.zeros(SHAPE))
    kv.push(0, g)  # copy 0's residual 0.3 + 0.3 reaches it
    kv.pull(0, out=out)
    want = np.zeros(SHAPE, "float32")
    want[1] = 0.5
    np.testing.assert_array_equal(out.asnumpy(), want)


# ------------------------------------------------------------------ no densification

@pytest.mark.parametrize("rows", [10 ** 6, 10 ** 12])
def test_a_few_pushed_rows_of_a_huge_array_are_never_densified(rows):
    """(10**12, 8) cannot be allocated densely at all (32 TB): any dense step fails; the
    fallback limit makes any densify of the (10**6, 8) array raise as well."""
    shape = (rows, 8)
    picks = [[5, 70, rows - 1], [4, 70, rows - 2]]
    with config.override(sparse_fallback_limit=10 ** 5):
        kv = mx.kv.create("local")
        kv.init("e", mx.nd.sparse.zeros("row_sparse", shape))
        grads = [mx.nd.sparse.row_sparse_array(
            (np.full((3, 8), i + 1.0, "float32"), np.array(p)), shape=shape)
            for i, p in enumerate(picks)]
        seen = []
        kv._set_updater(lambda key, grad, weight: (
            seen.append(grad.indices.asnumpy().tolist()), weight.__setitem__(slice(None), grad)))
        kv.push("e", grads)
        out = mx.nd.sparse.zeros("row_sparse", shape)
        kv.row_sparse_pull("e", out=out, row_ids=mx.nd.array([70, 4, rows - 1, 70],
                                                             dtype="int64"))
    assert seen == [[4, 5, 70, rows - 2, rows - 1]]
    assert out.indices.asnumpy().tolist() == [4, 70, rows - 1]
    np.testing.assert_array_equal(out.data.asnumpy()[:, 0], [2.0, 3.0, 1.0])
    assert kv._store["e"].data.shape == (5, 8)
