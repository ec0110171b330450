"""Sparse storage in bound plans: the ``infer_storage`` pass (compiler/storage.py), storage
launch units, the executor's sparse arguments, outputs and gradients (executor_storage.py),
and the storage formats and dispatch underneath (sparse/formats.py, sparse/dispatch.py)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import symgraph as mx
from symgraph import config
from symgraph.base import StorageFallbackError
from symgraph.compiler import plan as P
from symgraph.sparse import formats

RNG = np.random.RandomState(0)


def _embedding_net(sparse_grad: bool = True, vocab: int = 10, dim: int = 3):
    data, weight = mx.sym.var("data"), mx.sym.var("w")
    emb = mx.sym.Embedding(data, weight, input_dim=vocab, output_dim=dim,
                           sparse_grad=sparse_grad, name="e")
    return mx.sym.sum(emb * mx.sym.var("scale"))


def _dense_weight_grad(ids, scale, vocab=10, dim=3):
    want = np.zeros((vocab, dim), np.float32)
    for i, row in enumerate(ids):
        want[int(row)] += scale[i]
    return want


# ------------------------------------------------------------------ formats and dispatch

@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_formats_round_trip_and_validate(stype):
    dense = torch.tensor(RNG.randn(5, 4).astype(np.float32))
    dense[[0, 3]] = 0
    dense[1, 2] = 0
    value = formats.from_dense(dense, stype)
    formats.check_format(value)
    assert formats.stype_of(value) == stype
    torch.testing.assert_close(formats.to_dense(value), dense)
    if stype == "row_sparse":
        assert value.indices.tolist() == [1, 2, 4]
        bad = value._replace(indices=torch.tensor([1, 1, 4]))
    else:
        assert value.indptr.tolist()[0] == 0 and value.indptr.tolist()[-1] == value.data.numel()
        bad = value._replace(indices=value.indices.flip(0))
    with pytest.raises(formats.SparseFormatError):
        formats.check_format(bad)


def test_row_sparse_algebra_keeps_only_rows():
    a = formats.row_sparse(torch.ones(2, 3), torch.tensor([4, 1]), (6, 3))
    assert a.indices.tolist() == [1, 4]  # sorted on construction
    b = formats.row_sparse(torch.full((2, 3), 2.0), torch.tensor([1, 5]), (6, 3))
    total = formats.add(a, b)
    assert isinstance(total, formats.RowSparse) and total.indices.tolist() == [1, 4, 5]
    assert total.data[:, 0].tolist() == [3.0, 1.0, 2.0]
    kept = formats.retain(total, torch.tensor([5, 0]))
    assert kept.indices.tolist() == [5]
    pulled = formats.gather_rows(total, torch.tensor([0, 4, 4]))
    assert pulled.indices.tolist() == [0, 4] and pulled.data[:, 0].tolist() == [0.0, 1.0]


def test_fallback_beyond_the_limit_raises_instead_of_densifying():
    previous = config.set(sparse_fallback_limit=100)
    try:
        big = mx.nd.sparse.zeros("row_sparse", (1000, 10))
        with pytest.raises(StorageFallbackError, match=r"\(1000, 10\).*10000 elements"):
            mx.nd.topk(big, k=1)  # no sparse kernel: a dense copy would be 10000 elements
        small = mx.nd.array([[0, 2], [0, 0]]).tostype("row_sparse")
        assert mx.nd.topk(small, k=1).stype == "default"  # fallback under the limit
    finally:
        config.set(**{"sparse_fallback_limit": previous.sparse_fallback_limit})


# ------------------------------------------------------------------ the infer_storage pass

def test_infer_storage_marks_sparse_entries_and_launches():
    net = _embedding_net()
    shapes = {"data": (4,), "w": (10, 3), "scale": (4, 3)}
    dtypes = dict.fromkeys(shapes, "float32")
    seen = {}
    plan = P.build_plan(net._outputs, shapes, dtypes, ["w"], torch.device("cpu"),
                        trace=lambda name, stage: seen.setdefault(name, str(stage)))
    grad = plan.grad_slot["w"]
    assert plan.storage.stype(grad) == "row_sparse"
    assert any(s.node.name.startswith("e_backward") and plan.impl[s.node.name].startswith(
        "sparse:") for s in plan.backward)
    assert "infer_storage" in [p.__name__ for p in P.PASSES]
    # a dense graph has no sparse entry and no storage launch
    dense = P.build_plan(_embedding_net(False)._outputs, shapes, dtypes, ["w"],
                         torch.device("cpu"))
    assert not dense.storage.slots and not any(v.startswith("sparse:")
                                               for v in dense.impl.values())


def test_bind_refuses_a_huge_fallback_naming_the_node():
    x = mx.sym.var("x", stype="csr")
    net = mx.sym.topk(x, k=1, name="top")
    previous = config.set(sparse_fallback_limit=50)
    try:
        with pytest.raises(StorageFallbackError, match="top"):
            net.simple_bind(mx.cpu(), x=(10, 10), grad_req="null")
    finally:
        config.set(sparse_fallback_limit=previous.sparse_fallback_limit)


# ------------------------------------------------------------------ executors

def _run(exe, ids, scale):
    exe.arg_dict["data"][:] = mx.nd.array(ids)
    exe.arg_dict["w"][:] = mx.nd.ones((10, 3))
    exe.arg_dict["scale"][:] = mx.nd.array(scale)
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((1,)))


def test_simple_bind_gives_a_row_sparse_gradient_of_the_touched_rows():
    ids, scale = [1, 5, 1, 7], RNG.rand(4, 3).astype(np.float32)
    exe = _embedding_net().simple_bind(mx.cpu(), data=(4,), w=(10, 3), scale=(4, 3))
    _run(exe, ids, scale)
    grad = exe.grad_dict["w"]
    assert grad.stype == "row_sparse"
    assert grad.indices.asnumpy().tolist() == [1, 5, 7]
    np.testing.assert_allclose(grad.asnumpy(), _dense_weight_grad(ids, scale), rtol=1e-6)
    _run(exe, [2, 2, 3, 3], scale)  # write replaces the rows of the previous step
    assert grad.indices.asnumpy().tolist() == [2, 3]


@pytest.mark.parametrize("grad_stype", ["default", "row_sparse"])
def test_bind_stores_the_gradient_in_the_given_array_write_and_add(grad_stype):
    ids, scale = [0, 4, 4, 9], RNG.rand(4, 3).astype(np.float32)
    start = np.zeros((10, 3), np.float32)
    start[[4, 6]] = 1.5
    grad = mx.nd.array(start).tostype(grad_stype)
    args = {"data": mx.nd.array(ids), "w": mx.nd.ones((10, 3)), "scale": mx.nd.array(scale)}
    want = _dense_weight_grad(ids, scale)
    for req, expected in (("add", start + want), ("write", want)):
        grad[:] = mx.nd.array(start).tostype(grad_stype)
        exe = _embedding_net().bind(mx.cpu(), args, args_grad={"w": grad},
                                    grad_req={"w": req, "data": "null", "scale": "null"})
        exe.forward(is_train=True)
        exe.backward(mx.nd.ones((1,)))
        assert exe.grad_dict["w"] is grad and grad.stype == grad_stype
        np.testing.assert_allclose(grad.asnumpy(), expected, rtol=1e-6)


def test_sparse_arguments_are_read_at_each_forward_and_outputs_stay_sparse():
    x = mx.sym.var("x", stype="csr")
    net = mx.sym.dot(x, mx.sym.var("y"))
    exe = net.simple_bind(mx.cpu(), x=(2, 3), y=(3, 2), grad_req="null")
    assert exe.arg_dict["x"].stype == "csr"
    exe.arg_dict["y"][:] = mx.nd.ones((3, 2))
    for rows in ([[0, 1, 0], [2, 0, 0]], [[0, 0, 3], [0, 0, 0]]):
        exe.arg_dict["x"][:] = mx.nd.array(rows).tostype("csr")
        out = exe.forward()[0]
        np.testing.assert_allclose(out.asnumpy(), np.array(rows) @ np.ones((3, 2)))
    keep = mx.sym.cast_storage(mx.sym.var("d"), stype="row_sparse")
    exe = keep.bind(mx.cpu(), {"d": mx.nd.array([[0, 0], [1, 2]])})
    out = exe.forward()[0]
    assert out.stype == "row_sparse" and out.indices.asnumpy().tolist() == [1]
