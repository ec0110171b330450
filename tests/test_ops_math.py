"""Logical, hypot, special-function, softmin, cumsum, contrib math, AMP-cast, finite checks,
khatri_rao and histogram ops against MXNet 1.9.1 (fixtures written by
``tests/fixtures/math/generate.py`` with the MXNet oracle; nothing here imports MXNet).

Each case binds one node with MXNet's stored attribute strings, runs a training forward
and, where MXNet has a gradient, a backward with MXNet's recorded head gradient.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError
from symgraph.symbol.op_api import invoke

HERE = Path(__file__).parent / "fixtures" / "math"
META = json.loads((HERE / "cases.json").read_text())
ARRAYS = dict(np.load(HERE / "arrays.npz", allow_pickle=False))
CASES = [pytest.param(c, id=c["id"]) for c in META["cases"]]
# MXNet returns allclose as a 0-d array; symgraph's shapes keep () for "unknown", so (1,)
SCALAR_OUT = {"_contrib_allclose"}


def _inputs(case) -> list[np.ndarray]:
    return [ARRAYS[f"{case['id']}/in:{i}"] for i in range(len(case["dtypes"]))]


def _bind(case):
    values = _inputs(case)
    names = [f"in{i}" for i in range(len(values))]
    sym = invoke(case["op"], [mx.sym.Variable(n) for n in names], dict(case["attrs"]))
    req = {n: "write" if case["backward"] and v.dtype.kind == "f" else "null"
           for n, v in zip(names, values)}
    exe = sym.simple_bind(mx.cpu(), grad_req=req, type_dict=dict(zip(names, case["dtypes"])),
                          **{n: v.shape for n, v in zip(names, values)})
    for n, v in zip(names, values):
        exe.arg_dict[n][:] = v
    return exe


def _tol(dtype) -> tuple[float, float]:
    return (2e-3, 2e-3) if np.dtype(dtype) == np.float16 else (2e-5, 2e-6)


@pytest.mark.parametrize("case", CASES)
def test_forward_and_backward_match_mxnet(case):
    exe = _bind(case)
    cid = case["id"]
    outs = [o.asnumpy() for o in exe.forward(is_train=True)]
    assert [str(o.dtype) for o in outs] == case["out_types"]
    for i, got in enumerate(outs):
        want = ARRAYS[f"{cid}/out:{i}"]
        if case["op"] in SCALAR_OUT:
            want = want.reshape(1)
        np.testing.assert_allclose(got, want, *_tol(want.dtype), err_msg=f"{cid} out {i}")
    if not case["backward"]:
        return
    heads = [ARRAYS[f"{cid}/ograd:{i}"] for i in range(len(outs))]
    exe.backward([mx.nd.array(h, dtype=h.dtype) for h in heads])
    for i, v in enumerate(_inputs(case)):
        if v.dtype.kind == "f":
            want = ARRAYS[f"{cid}/grad:{i}"]
            np.testing.assert_allclose(exe.grad_dict[f"in{i}"].asnumpy(), want,
                                       *_tol(want.dtype), err_msg=f"{cid} grad {i}")


@pytest.mark.parametrize("case", CASES)
def test_imperative_call_matches_mxnet(case):
    """``mx.nd.<op>`` (the eager path: composites run their parts in turn) agrees too."""
    from symgraph.ndarray.register import invoke as nd_invoke
    values = [mx.nd.array(v, dtype=v.dtype) for v in _inputs(case)]
    outs = nd_invoke(case["op"], tuple(values), dict(case["attrs"]))
    outs = outs if isinstance(outs, list) else [outs]
    for i, got in enumerate(outs):
        want = ARRAYS[f"{case['id']}/out:{i}"]
        np.testing.assert_allclose(got.asnumpy().reshape(want.shape), want, *_tol(want.dtype))


def test_cumsum_gradient_is_the_reversed_running_sum():
    """Independent numpy check: d/dx sum(w * cumsum(x)) = reversed cumsum of w."""
    x = np.random.RandomState(0).uniform(-1, 1, (3, 4)).astype(np.float32)
    w = np.random.RandomState(1).uniform(-1, 1, (3, 4)).astype(np.float32)
    arr = mx.nd.array(x)
    arr.attach_grad()
    with mx.autograd.record():
        y = mx.nd.cumsum(arr, axis=1)
    y.backward(mx.nd.array(w))
    np.testing.assert_allclose(y.asnumpy(), np.cumsum(x, axis=1), rtol=1e-6)
    np.testing.assert_allclose(arr.grad.asnumpy(), np.cumsum(w[:, ::-1], axis=1)[:, ::-1],
                               rtol=1e-5)


def test_histogram_needs_a_range_and_has_no_gradient():
    with pytest.raises(MXNetError, match="range must be given"):
        mx.sym.histogram(mx.sym.Variable("a"), bins=3, range=(1.0,)).infer_shape(a=(4,))
    exe = mx.sym.histogram(mx.sym.Variable("a"), bins=3, range=(0, 1)).simple_bind(
        mx.cpu(), grad_req="null", a=(5,))
    exe.arg_dict["a"][:] = np.array([0.1, 0.5, 0.9, 1.0, 2.0])
    assert exe.forward()[0].asnumpy().tolist() == [1, 1, 2]


def test_khatri_rao_rejects_column_mismatch():
    sym = mx.sym.khatri_rao(mx.sym.Variable("a"), mx.sym.Variable("b"))
    with pytest.raises(MXNetError, match=r"3 columns, got input 1 of shape \(4, 2\)"):
        sym.infer_shape(a=(2, 3), b=(4, 2))


def test_round_is_exact_below_a_half():
    """Regression: floor(|x| + 0.5) rounded 0.49999997 (float32) up to 1; MXNet's round is
    C's roundf. Checked on every path (nd function, NDArray method, bound symbol)."""
    x = mx.nd.array(np.array([0.49999997, -0.49999997, 0.5, -2.5, 2.4999998], "float32"))
    want = [0.0, -0.0, 1.0, -3.0, 2.0]
    sym = mx.sym.round(mx.sym.var("x"))
    for got in (mx.nd.round(x), x.round(), sym.eval(x=x)[0], mx.nd.contrib.round_ste(x)):
        np.testing.assert_array_equal(got.asnumpy(), want)


def test_integer_inputs_take_the_scalar_in_their_dtype():
    """Regression (MXNet's ONNX test_onnx_export_scalar_op): bound scalar ops on integer
    arrays cast the scalar to the array's dtype first, as MXNet 1.9.1 (values from MXNet);
    integer mean divides with truncation and sum keeps the dtype."""
    x = mx.nd.array([[23, 85, 19]], dtype="int32")
    v = mx.sym.var("x", dtype="int32")
    want = {"mul": [[2024, 7480, 1672]], "rminus": [[32, -30, 36]], "div": [[1, 7, 1]],
            "power": [[23, 85, 19]]}
    for key, sym in (("mul", v * 88.4), ("rminus", 55.5 - v), ("div", v / 12.3),
                     ("power", v ** 1.3)):
        np.testing.assert_array_equal(sym.eval(x=x)[0].asnumpy(), want[key], err_msg=key)
    y = mx.nd.array([[1, 2, 4], [3, 5, 8]], dtype="int32")
    got = mx.sym.mean(mx.sym.var("y", dtype="int32"), axis=1).eval(y=y)[0]
    assert got.asnumpy().tolist() == [2, 5] and got.dtype == np.int32
    assert mx.nd.sum(y, axis=1).dtype == np.int32


def test_integer_prod_keeps_the_dtype_and_wraps():
    """Regression (MXNet's ONNX test_onnx_export_reduce_op): prod of int32 stays int32 and
    wraps on overflow, the values MXNet 1.9.1 gives for this input."""
    x = mx.nd.array(np.arange(1, 25).reshape(2, 3, 4) * 1000, dtype="int32")
    got = mx.nd.prod(x, axis=2)
    assert got.dtype == np.int32
    assert got.asnumpy()[0].tolist() == [-277250048, 2067333120, 200179712]
    assert mx.nd.prod(x, axis=(0, 2)).asnumpy().tolist() == [0, -2147483648, -2147483648]


def test_integer_power_of_a_negative_scalar():
    """int32 ** -1 is C's pow truncated (0, 1, -1), as MXNet 1.9.1 gives it."""
    x = mx.nd.array([[2, 1, -1, 3]], dtype="int32")
    v = mx.sym.var("x", dtype="int32")
    assert (v ** -1).eval(x=x)[0].asnumpy().tolist() == [[0, 1, -1, 0]]
    assert (v ** 2.7).eval(x=x)[0].asnumpy().tolist() == [[4, 1, 1, 9]]


def test_rdiv_scalar_divides_as_mxnet():
    """``s / x`` in a bound graph: an integer input truncates the scalar then divides with
    C's truncation (55.87 / 55 is 1 on int32; torch's ``s / x`` multiplies by a float
    reciprocal and gave 0, found by MXNet's ONNX scalar test); float inputs divide exactly
    (numpy's quotient, not a product with the reciprocal)."""
    x = mx.sym.var("x")
    ints = np.array([55, 54, 56, 27, 28, 7, 1], np.int32)
    exe = (55.868982844575164 / x).simple_bind(mx.cpu(), x=ints.shape,
                                               type_dict={"x": np.int32})
    got = exe.forward(x=mx.nd.array(ints, dtype="int32"))[0].asnumpy()
    np.testing.assert_array_equal(got, 55 // ints)
    rng = np.random.RandomState(0)
    floats = rng.uniform(0.1, 100, 1000).astype(np.float32)
    exe = (3.7 / x).simple_bind(mx.cpu(), x=floats.shape)
    got = exe.forward(x=mx.nd.array(floats))[0].asnumpy()
    np.testing.assert_array_equal(got, np.float32(3.7) / floats)
