"""Non-elementwise operators on sparse storage: output storage types as MXNet 1.9.1 gives
them (each expected stype below was read off the MXNet 1.9.1 CPU oracle) and values against
numpy on the dense inputs; dot's row_sparse weight gradient in a bound graph."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError, ShapeError
from symgraph.ndarray.register import invoke
from symgraph.ndarray.sparse_array import value_of
from symgraph.sparse import formats

RNG_SEED = 20


def _dense(shape, density=0.5, seed=0):
    rng = np.random.RandomState(seed)
    return (rng.rand(*shape) * (rng.rand(*shape) < density)).astype("float32")


def _arr(shape, stype, density=0.5, seed=0):
    return mx.nd.array(_dense(shape, density, seed)).tostype(stype)


def _t(x, flag):
    return x.T if flag else x


def _np_dot(a, b, attrs):
    return _t(a, attrs.get("transpose_a")) @ _t(b, attrs.get("transpose_b"))


def _np_sum(axis, keepdims=False, mean=False):
    def ref(x):
        out = (x.mean if mean else x.sum)(axis=axis, keepdims=keepdims)
        return np.asarray(out).reshape(-1) if np.ndim(out) == 0 else out
    return ref


# (op, [(shape, stype)], attrs, expected output stype (MXNet 1.9.1 CPU), numpy reference)
DOT = [
    ([(4, 5), "csr"], [(5, 6), "default"], {}, "default"),
    ([(4, 5), "csr"], [(4, 6), "default"], {"transpose_a": True}, "row_sparse"),
    ([(4, 5), "csr"], [(4, 6), "default"], {"transpose_a": True, "forward_stype": "default"},
     "default"),
    ([(4, 5), "csr"], [(4, 6), "default"], {"transpose_a": True, "forward_stype": "csr"},
     "csr"),
    ([(4, 5), "csr"], [(5, 6), "default"], {"forward_stype": "row_sparse"}, "row_sparse"),
    ([(4, 5), "csr"], [(5, 6), "default"], {"forward_stype": "csr"}, "csr"),
    ([(4, 5), "csr"], [(5, 6), "row_sparse"], {}, "default"),
    ([(4, 5), "csr"], [(4, 6), "row_sparse"], {"transpose_a": True}, "row_sparse"),
    ([(4, 5), "csr"], [(6, 5), "default"], {"transpose_b": True}, "default"),
    ([(4, 5), "default"], [(5, 6), "csr"], {}, "csr"),
    ([(4, 5), "default"], [(6, 5), "csr"], {"transpose_b": True}, "csr"),
    ([(4, 5), "default"], [(5, 6), "csr"], {"forward_stype": "default"}, "default"),
    ([(5, 4), "default"], [(5, 6), "csr"], {"transpose_a": True}, "default"),
    ([(4, 5), "row_sparse"], [(5, 6), "default"], {}, "default"),
    ([(4, 5), "row_sparse"], [(4, 6), "default"], {"transpose_a": True}, "default"),
    ([(4, 5), "row_sparse"], [(6, 5), "default"], {"transpose_b": True}, "default"),
    ([(4, 5), "default"], [(5, 6), "row_sparse"], {}, "default"),
    ([(4, 5), "csr"], [(5, 6), "csr"], {}, "default"),
    ([(4, 5), "default"], [(5, 6), "default"], {"forward_stype": "csr"}, "csr"),
    ([(4, 5), "row_sparse"], [(5, 6), "row_sparse"], {}, "default"),
]

CASES = [("dot", [lhs, rhs], attrs, out, lambda a, b, at=attrs: _np_dot(a, b, at))
         for lhs, rhs, attrs, out in DOT]
for _op, _mean in (("sum", False), ("mean", True)):
    for _stype in ("csr", "row_sparse"):
        for _axis in (0, 1):
            CASES.append((_op, [[(6, 5), _stype]], {"axis": _axis}, "default",
                          _np_sum(_axis, mean=_mean)))
    CASES += [(_op, [[(6, 5), "csr"]], {"axis": 0, "keepdims": True}, "default",
               _np_sum(0, True, _mean)),
              (_op, [[(6, 5), "csr"]], {}, "default", _np_sum(None, mean=_mean)),
              (_op, [[(4, 3, 2), "row_sparse"]], {"axis": (1, 2)}, "default",
               _np_sum((1, 2), mean=_mean))]
CASES += [
    ("norm", [[(6, 5), "csr"]], {}, "default", lambda x: np.sqrt((x * x).sum()).reshape(1)),
    ("norm", [[(6, 5), "csr"]], {"axis": 1}, "default", lambda x: np.sqrt((x * x).sum(1))),
    ("norm", [[(6, 5), "row_sparse"]], {"ord": 1, "axis": 0}, "default",
     lambda x: np.abs(x).sum(0)),
    ("norm", [[(6, 5), "row_sparse"]], {"keepdims": True}, "default",
     lambda x: np.sqrt((x * x).sum()).reshape(1, 1)),
    ("_square_sum", [[(6, 5), "row_sparse"]], {"axis": 1, "keepdims": True}, "row_sparse",
     lambda x: (x * x).sum(1, keepdims=True)),
    ("_square_sum", [[(6, 5), "row_sparse"]], {"axis": 1}, "default",
     lambda x: (x * x).sum(1)),
    ("_square_sum", [[(6, 5), "row_sparse"]], {"axis": 0, "keepdims": True}, "default",
     lambda x: (x * x).sum(0, keepdims=True)),
    ("slice", [[(6, 5), "csr"]], {"begin": (1,), "end": (3,)}, "csr", lambda x: x[1:3]),
    ("slice", [[(6, 5), "csr"]], {"begin": (1, 1), "end": (4, 4)}, "csr", lambda x: x[1:4, 1:4]),
    ("slice", [[(6, 5), "csr"]], {"begin": (-3, None), "end": (None, None)}, "csr",
     lambda x: x[-3:]),
    ("slice", [[(6, 5), "csr"]], {"begin": (1,), "end": (5,), "step": (2,)}, "default",
     lambda x: x[1:5:2]),
    ("crop", [[(6, 5), "csr"]], {"begin": (2,), "end": (6,)}, "csr", lambda x: x[2:]),
    ("concat", [[(3, 5), "csr"], [(2, 5), "csr"], [(4, 5), "csr"]], {"dim": 0}, "csr",
     lambda *xs: np.concatenate(xs, 0)),
    ("concat", [[(3, 5), "csr"], [(3, 2), "csr"]], {"dim": 1}, "default",
     lambda *xs: np.concatenate(xs, 1)),
    ("FullyConnected", [[(4, 6), "csr"], [(3, 6), "default"], [(3,), "default"]],
     {"num_hidden": 3}, "default", lambda x, w, b: x @ w.T + b),
    ("FullyConnected", [[(4, 6), "csr"], [(3, 6), "row_sparse"], [(3, 1), "row_sparse"]],
     {"num_hidden": 3}, "default", lambda x, w, b: x @ w.T + b.reshape(-1)),
]


@pytest.mark.parametrize("op,inputs,attrs,stype,ref", CASES,
                         ids=[f"{c[0]}-{'-'.join(s for _, s in c[1])}-{c[2]}" for c in CASES])
def test_sparse_op_stype_and_values(op, inputs, attrs, stype, ref):
    arrays = [_arr(shape, st, seed=i) for i, (shape, st) in enumerate(inputs)]
    out = invoke(op, tuple(arrays), {k: v for k, v in attrs.items()})
    assert out.stype == stype
    formats.check_format(value_of(out))
    expected = ref(*[a.asnumpy() for a in arrays])
    assert out.shape == expected.shape
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode,density", [("clip", 0.5), ("wrap", 0.5), ("clip", 0.0),
                                          ("wrap", 1.0)])
def test_take_csr_rows_stays_csr(mode, density):
    """Ported from MXNet's test_sparse_ndarray.py::test_sparse_take."""
    data = _arr((6, 5), "csr", density).astype("int32")
    idx = np.random.RandomState(RNG_SEED).randint(-5, 15, size=7)
    out = mx.nd.take(data, mx.nd.array(idx), mode=mode)
    assert out.stype == "csr" and out.indptr[0].asscalar() == 0
    np.testing.assert_array_equal(out.asnumpy(), np.take(data.asnumpy(), idx, 0, mode=mode))
    assert mx.nd.take(data, mx.nd.array([0, 2]), mode="raise").stype == "default"
    with pytest.raises(ShapeError, match="1-D indices"):
        mx.nd.take(data, mx.nd.array([[0, 2]]))


def test_embedding_reads_row_sparse_weight_rows():
    weight = _arr((6, 4), "row_sparse")
    idx = np.array([[0, 5], [3, 3]])
    for out in (mx.nd.Embedding(mx.nd.array(idx), weight, input_dim=6, output_dim=4),
                mx.nd.contrib.SparseEmbedding(mx.nd.array(idx), weight, input_dim=6,
                                              output_dim=4, deterministic=True)):
        assert out.stype == "default"
        np.testing.assert_array_equal(out.asnumpy(), weight.asnumpy()[idx])


def test_sparse_embedding_params_are_mxnets():
    """MXNet 1.9.1's _contrib_SparseEmbedding takes deterministic and no sparse_grad."""
    sym = mx.sym.contrib.SparseEmbedding(mx.sym.var("d"), mx.sym.var("w"), input_dim=3,
                                         output_dim=2, deterministic=True, name="e")
    assert sym.list_attr()["deterministic"] == "True"
    with pytest.raises(Exception, match="sparse_grad"):
        mx.sym.contrib.SparseEmbedding(mx.sym.var("d"), mx.sym.var("w"), input_dim=3,
                                       output_dim=2, sparse_grad=True)


# ------------------------------------------------------------------ bound graphs

def _bind_dot(x, w_shape, grad_req, **attrs):
    lhs, rhs = mx.sym.var("lhs", stype="csr"), mx.sym.var("rhs")
    out = mx.sym.dot(lhs, rhs, **attrs)
    return out.simple_bind(mx.cpu(), lhs=x.shape, rhs=w_shape, stype_dict={"lhs": "csr"},
                           grad_req=grad_req)


@pytest.mark.parametrize("lhs_req", ["null", "write"])
def test_dot_csr_weight_gradient_is_row_sparse_on_touched_rows(lhs_req):
    x = _dense((8, 30), density=0.05, seed=1)  # most of the 30 rows of W are untouched
    w = np.random.RandomState(2).rand(30, 4).astype("float32")
    og = np.random.RandomState(3).rand(8, 4).astype("float32")
    ex = _bind_dot(x, w.shape, {"lhs": lhs_req, "rhs": "write"})
    out = ex.forward(is_train=True, lhs=mx.nd.array(x).tostype("csr"), rhs=mx.nd.array(w))[0]
    np.testing.assert_allclose(out.asnumpy(), x @ w, rtol=1e-5, atol=1e-6)
    ex.backward(mx.nd.array(og))
    grad = ex.grad_dict["rhs"]
    assert grad.stype == "row_sparse"
    touched = np.nonzero(x.any(0))[0]
    assert 0 < len(touched) < 30
    np.testing.assert_array_equal(grad.indices.asnumpy(), touched)
    assert grad.data.shape == (len(touched), 4)
    np.testing.assert_allclose(grad.asnumpy(), x.T @ og, rtol=1e-5, atol=1e-6)
    if lhs_req == "write":
        np.testing.assert_allclose(ex.grad_dict["lhs"].asnumpy(), og @ w.T, rtol=1e-5,
                                   atol=1e-6)


def test_dot_csr_gradient_into_dense_grad_array():
    x = _dense((5, 12), density=0.1, seed=4)
    w = np.random.RandomState(5).rand(12, 3).astype("float32")
    og = np.random.RandomState(6).rand(5, 3).astype("float32")
    lhs, rhs = mx.sym.var("lhs", stype="csr"), mx.sym.var("rhs")
    grad = mx.nd.ones((12, 3))
    ex = mx.sym.dot(lhs, rhs).bind(mx.cpu(), {"lhs": mx.nd.array(x).tostype("csr"),
                                              "rhs": mx.nd.array(w)},
                                   args_grad={"rhs": grad}, grad_req={"lhs": "null",
                                                                       "rhs": "write"})
    ex.forward(is_train=True)
    ex.backward(mx.nd.array(og))
    np.testing.assert_allclose(grad.asnumpy(), x.T @ og, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("attrs,rhs_shape,out_shape", [
    # a dense head: feeding the head gradient of a row_sparse head is the executor's part
    ({"transpose_a": True, "forward_stype": "default"}, (5, 3), (9, 3)),
])
def test_dot_csr_transposed_gradient_is_dense(attrs, rhs_shape, out_shape):
    x = _dense((5, 9), seed=7)
    w = np.random.RandomState(8).rand(*rhs_shape).astype("float32")
    og = np.random.RandomState(9).rand(*out_shape).astype("float32")
    ex = _bind_dot(x, rhs_shape, {"lhs": "null", "rhs": "write"}, **attrs)
    out = ex.forward(is_train=True, lhs=mx.nd.array(x).tostype("csr"), rhs=mx.nd.array(w))[0]
    assert out.stype == "default"
    np.testing.assert_allclose(out.asnumpy(), x.T @ w, rtol=1e-5, atol=1e-6)
    ex.backward(mx.nd.array(og))
    assert ex.grad_dict["rhs"].stype == "default"
    np.testing.assert_allclose(ex.grad_dict["rhs"].asnumpy(), x @ og, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("forward_stype", ["None", "default"])
def test_dot_dense_csr_bound(transpose_b, forward_stype):
    a = np.random.RandomState(10).rand(4, 6).astype("float32")
    c = _dense((7, 6) if transpose_b else (6, 7), seed=11)
    og = np.random.RandomState(12).rand(4, 7).astype("float32")
    lhs, rhs = mx.sym.var("lhs"), mx.sym.var("rhs", stype="csr")
    ex = mx.sym.dot(lhs, rhs, transpose_b=transpose_b, forward_stype=forward_stype).simple_bind(
        mx.cpu(), lhs=a.shape, rhs=c.shape, stype_dict={"rhs": "csr"})
    out = ex.forward(is_train=True, lhs=mx.nd.array(a), rhs=mx.nd.array(c).tostype("csr"))[0]
    assert out.stype == ("csr" if forward_stype == "None" else "default")
    np.testing.assert_allclose(out.asnumpy(), a @ _t(c, transpose_b), rtol=1e-5, atol=1e-6)
    if forward_stype == "None":
        return  # a csr head: feeding its head gradient is the executor's part
    ex.backward(mx.nd.array(og))
    np.testing.assert_allclose(ex.grad_dict["lhs"].asnumpy(), og @ _t(c, transpose_b).T,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ex.grad_dict["rhs"].asnumpy(), _t(a.T @ og, transpose_b),
                               rtol=1e-5, atol=1e-6)


def test_square_sum_gradient_is_row_sparse():
    x = _dense((6, 5), density=0.4, seed=13)
    og = np.random.RandomState(14).rand(5).astype("float32")
    data = mx.sym.var("data", stype="row_sparse")
    ex = mx.sym._internal._square_sum(data, axis=0).simple_bind(
        mx.cpu(), data=x.shape, stype_dict={"data": "row_sparse"})
    out = ex.forward(is_train=True, data=mx.nd.array(x).tostype("row_sparse"))[0]
    np.testing.assert_allclose(out.asnumpy(), (x * x).sum(0), rtol=1e-5)
    ex.backward(mx.nd.array(og))
    grad = ex.grad_dict["data"]
    assert grad.stype == "row_sparse"
    np.testing.assert_array_equal(grad.indices.asnumpy(), np.nonzero(x.any(1))[0])
    np.testing.assert_allclose(grad.asnumpy(), 2 * x * og, rtol=1e-5, atol=1e-6)


def test_fully_connected_csr_data_bound():
    x = _dense((5, 10), seed=15)
    w = np.random.RandomState(16).rand(3, 10).astype("float32")
    b = np.random.RandomState(17).rand(3).astype("float32")
    og = np.random.RandomState(18).rand(5, 3).astype("float32")
    fc = mx.sym.FullyConnected(mx.sym.var("data", stype="csr"), num_hidden=3, name="fc")
    ex = fc.simple_bind(mx.cpu(), data=x.shape, stype_dict={"data": "csr"},
                        grad_req={"data": "null", "fc_weight": "write", "fc_bias": "write"})
    out = ex.forward(is_train=True, data=mx.nd.array(x).tostype("csr"),
                     fc_weight=mx.nd.array(w), fc_bias=mx.nd.array(b))[0]
    np.testing.assert_allclose(out.asnumpy(), x @ w.T + b, rtol=1e-5, atol=1e-6)
    ex.backward(mx.nd.array(og))
    assert ex.grad_dict["fc_weight"].stype == "default"  # as MXNet 1.9.1 (a fallback there)
    np.testing.assert_allclose(ex.grad_dict["fc_weight"].asnumpy(), og.T @ x, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(ex.grad_dict["fc_bias"].asnumpy(), og.sum(0), rtol=1e-5)


@pytest.mark.parametrize("op", ["LinearRegressionOutput", "LogisticRegressionOutput",
                                "MAERegressionOutput"])
def test_regression_output_csr_label(op):
    data = np.random.RandomState(19).rand(4, 6).astype("float32")
    label = _arr((4, 6), "csr", seed=20)
    head = getattr(mx.sym, op)(mx.sym.var("data"), mx.sym.var("label", stype="csr"))
    results = []
    for stype, lab in (("csr", label), ("default", label.tostype("default"))):
        ex = head.simple_bind(mx.cpu(), data=data.shape, label=data.shape,
                              stype_dict={"label": stype}, grad_req={"data": "write",
                                                                     "label": "null"})
        out = ex.forward(is_train=True, data=mx.nd.array(data), label=lab)[0]
        ex.backward()
        results.append((out.asnumpy(), ex.grad_dict["data"].asnumpy()))
    assert out.stype == "default"
    for got, want in zip(results[0], results[1]):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_fully_connected_column_bias():
    """MXNet takes a (num_hidden, 1) bias too (test_sparse_ndarray.py::test_sparse_fc)."""
    x = np.random.RandomState(21).rand(4, 5).astype("float32")
    fc = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=3, name="fc")
    assert fc.infer_shape(x=(4, 5), fc_bias=(3, 1))[0][2] == (3, 1)
    ex = fc.simple_bind(mx.cpu(), x=(4, 5), fc_bias=(3, 1))
    out = ex.forward(is_train=True, x=mx.nd.array(x), fc_weight=mx.nd.ones((3, 5)),
                     fc_bias=mx.nd.array([[1], [2], [3]]))[0]
    np.testing.assert_allclose(out.asnumpy(), x.sum(1, keepdims=True) + [1, 2, 3], rtol=1e-5)
    ex.backward(mx.nd.ones((4, 3)))
    np.testing.assert_array_equal(ex.grad_dict["fc_bias"].asnumpy(), np.full((3, 1), 4.0))


@pytest.mark.parametrize("fix_gamma", [True, False])
def test_batchnorm_on_sparse_inputs(fix_gamma):
    """Ported from MXNet's test_sparse_operator.py::test_batchnorm_fallback: fix_gamma=True
    is refused on sparse arrays, otherwise BatchNorm runs on dense copies."""
    data = mx.sym.var("data", stype="row_sparse")
    bn = mx.sym.BatchNorm(data, fix_gamma=fix_gamma, name="bn")
    bind = functools.partial(bn.simple_bind, mx.cpu(), data=(2, 3),
                             stype_dict={"data": "row_sparse"})
    if fix_gamma:
        with pytest.raises(MXNetError, match="fix_gamma=True is not supported"):
            bind()
        return
    x = _dense((2, 3), density=1.0, seed=22)
    out = bind().forward(is_train=True, data=mx.nd.array(x).tostype("row_sparse"),
                         bn_gamma=mx.nd.ones(3), bn_beta=mx.nd.zeros(3))[0]
    want = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_scatter_forms_keep_storage_in_bound_graphs(stype):
    """Ported from MXNet's test_sparse_operator.py::test_scatter_ops: only stored values
    change, and the result keeps the input's storage in a bound graph."""
    x = _arr((6, 4), stype, density=0.4, seed=23)
    rhs = np.random.RandomState(24).uniform(1, 2, (6, 4)).astype("float32")
    lhs = mx.sym.var("lhs", stype=stype)
    dense = x.asnumpy()
    stored = dense != 0  # csr: the non-zeros; row_sparse: every value of a stored row
    if stype == "row_sparse":
        stored = np.zeros_like(stored)
        stored[x.indices.asnumpy()] = True
    for sym, want in ((mx.sym._internal._scatter_plus_scalar(lhs, scalar=2.0),
                       np.where(stored, dense + 2, 0)),
                      (mx.sym._internal._scatter_elemwise_div(lhs, mx.sym.var("rhs")),
                       x.asnumpy() / rhs)):
        args = {"lhs": x, "rhs": mx.nd.array(rhs)}
        ex = sym.bind(mx.cpu(), {k: v for k, v in args.items() if k in sym.list_arguments()})
        out = ex.forward()[0]
        assert out.stype == stype
        if stype == "row_sparse":
            np.testing.assert_array_equal(out.indices.asnumpy(), x.indices.asnumpy())
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)
