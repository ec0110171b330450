"""_split_v2, index_array, _slice_assign(_scalar) and their _crop_ names, im2col/col2im and
the imperative boolean_mask against MXNet 1.9.1; _set_value, the split_v2 wrappers and
1-D/3-D im2col (which MXNet 1.9.1 itself fails to run) against numpy.

The fixtures (``tests/fixtures/index_rest``, written by its ``generate.py`` with the MXNet
oracle) hold per symbol case the names, inferred shapes, training forward and backward for
a random head gradient, or MXNet's error; per boolean_mask case the imperative output and
the gradient recorded under ``autograd.record()``. Nothing here imports MXNet.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError
from tests.test_ops_index_more import _function

HERE = Path(__file__).parent / "fixtures" / "index_rest"
META = json.loads((HERE / "cases.json").read_text())
ARRAYS = dict(np.load(HERE / "arrays.npz", allow_pickle=False))
OK = [pytest.param(c, id=c["id"]) for c in META["cases"] if c["expect"] == "ok"]
ERRORS = [pytest.param(c, id=c["id"]) for c in META["cases"] if c["expect"] != "ok"]
PHRASES = {"err_split_v2_squeeze": "expected axis size of 1 but got 2",
           "err_im2col_kernel": "kernel size exceed input"}


def _symbol(case):
    inputs = [mx.sym.Variable(n) for n in case["arguments"]]
    with mx.name.NameManager():
        return _function(mx.sym, case["op"])(*inputs, name=case["node_name"], **case["attrs"])


@pytest.mark.parametrize("case", OK)
def test_symbol_cases_match_mxnet(case):
    sym = _symbol(case)
    shapes = {n: tuple(s) for n, s in case["shapes"].items()}
    assert sym.list_outputs() == case["outputs"]
    assert [list(s) for s in sym.infer_shape(**shapes)[1]] == case["out_shapes"]
    exe = sym.simple_bind(mx.cpu(), grad_req=case["grad_req"], type_dict=case["dtypes"],
                          **shapes)
    cid = case["id"]
    for n in shapes:
        exe.arg_dict[n][:] = ARRAYS[f"{cid}/in:{n}"]
    outs = [o.asnumpy() for o in exe.forward(is_train=True)]
    assert [str(o.dtype) for o in outs] == case["out_types"]
    for i, got in enumerate(outs):
        np.testing.assert_allclose(got, ARRAYS[f"{cid}/out:{i}"], 1e-5, 1e-6)
    if f"{cid}/ograd:0" in ARRAYS:
        exe.backward([mx.nd.array(ARRAYS[f"{cid}/ograd:{i}"]) for i in range(len(outs))])
        for n, req in case["grad_req"].items():
            if req != "null":
                np.testing.assert_allclose(exe.grad_dict[n].asnumpy(),
                                           ARRAYS[f"{cid}/grad:{n}"], 1e-5, 1e-6)


@pytest.mark.parametrize("case", ERRORS)
def test_errors_match_mxnet(case):
    phrase = PHRASES[case["id"]]
    assert phrase in case["error"], "fixture and phrase table disagree"
    with pytest.raises(MXNetError, match=phrase):
        _symbol(case).infer_shape(**{n: tuple(s) for n, s in case["shapes"].items()})


@pytest.mark.parametrize("cid", META["boolean_mask"])
def test_boolean_mask_and_its_gradient_match_mxnet(cid):
    x = mx.nd.array(ARRAYS[f"{cid}/data"])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.contrib.boolean_mask(x, mx.nd.array(ARRAYS[f"{cid}/index"]))
    y.backward(mx.nd.array(ARRAYS[f"{cid}/head"]))
    np.testing.assert_array_equal(y.asnumpy(), ARRAYS[f"{cid}/out"])
    np.testing.assert_array_equal(x.grad.asnumpy(), ARRAYS[f"{cid}/grad"])


def test_boolean_mask_in_a_bound_graph_is_refused_naming_the_op():
    sym = mx.sym.contrib.boolean_mask(mx.sym.Variable("d"), mx.sym.Variable("i"), name="bm")
    assert sym.infer_shape_partial(d=(3, 2), i=(3,))[1] == [()]
    with pytest.raises(MXNetError, match="bm.*depends on its input values"):
        sym.simple_bind(mx.cpu(), d=(3, 2), i=(3,))


def test_boolean_mask_other_axis_and_empty_result_against_numpy():
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = mx.nd.contrib.boolean_mask(mx.nd.array(data), mx.nd.array([1, 0, 0, 1]), axis=1)
    np.testing.assert_array_equal(got.asnumpy(), data[:, [0, 3]])
    x = mx.nd.array(data)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.contrib.boolean_mask(x, mx.nd.zeros((3,)))
    y.backward()
    assert y.shape == (0, 4)
    np.testing.assert_array_equal(x.grad.asnumpy(), np.zeros_like(data))


@pytest.mark.parametrize("sections", [3, (1, 4), (2,)])
def test_split_v2_wrappers_match_numpy_split(sections):
    data = np.random.RandomState(0).uniform(size=(2, 6, 3)).astype(np.float32)
    want = np.array_split(data, sections, axis=1) if isinstance(sections, int) else \
        np.split(data, sections, axis=1)
    got = mx.nd.split_v2(mx.nd.array(data), sections, axis=1)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.asnumpy(), w)
    sym = mx.sym.split_v2(mx.sym.Variable("x"), sections, axis=1)
    assert sym.infer_shape(x=data.shape)[1] == [w.shape for w in want]


def test_assigning_in_place_through_out_and_set_value():
    x = mx.nd.ones((2, 3, 4))
    mx.nd._internal._crop_assign(x, mx.nd.zeros((2, 1, 3)), begin=(0, 0, 0), end=(2, 1, 3),
                                 out=x)
    want = np.ones((2, 3, 4), np.float32)
    want[:, 0:1, 0:3] = 0
    np.testing.assert_array_equal(x.asnumpy(), want)
    y = mx.nd.zeros((2, 3), dtype="float16")
    assert mx.nd._internal._set_value(src=3.5, out=y) is y
    np.testing.assert_array_equal(y.asnumpy(), np.full((2, 3), 3.5, np.float16))


def _im2col_numpy(x, kernel, stride, dilate, pad):
    """Independent im2col: loops over block positions and kernel taps."""
    sp = x.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    outs = [(n + 2 * p - d * (k - 1) - 1) // s + 1
            for n, p, d, k, s in zip(sp, pad, dilate, kernel, stride)]
    cols = np.zeros((x.shape[0], x.shape[1], int(np.prod(kernel)), int(np.prod(outs))))
    for li, pos in enumerate(np.ndindex(*outs)):
        for ki, tap in enumerate(np.ndindex(*kernel)):
            at = tuple(o * s + t * d for o, s, t, d in zip(pos, stride, tap, dilate))
            cols[:, :, ki, li] = xp[(slice(None), slice(None)) + at]
    return cols.reshape(x.shape[0], -1, cols.shape[-1])


@pytest.mark.parametrize("shape,geo", [
    ((1, 2, 7), ((3,), (2,), (1,), (1,))),
    ((1, 2, 3, 4, 5), ((2, 2, 3), (1, 2, 1), (1, 1, 2), (0, 1, 1)))])
def test_im2col_1d_3d_and_col2im_adjoint_against_numpy(shape, geo):
    kernel, stride, dilate, pad = geo
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    attrs = {"kernel": kernel, "stride": stride, "dilate": dilate, "pad": pad}
    col = mx.nd.im2col(mx.nd.array(x), **attrs).asnumpy()
    np.testing.assert_allclose(col, _im2col_numpy(x, *geo), 1e-6, 1e-6)
    c = rng.uniform(-1, 1, col.shape).astype(np.float32)
    back = mx.nd.col2im(mx.nd.array(c), output_size=shape[2:], **attrs).asnumpy()
    np.testing.assert_allclose((back * x).sum(), (c * col).sum(), 1e-4)  # <im2col x, c>


def test_slice_assign_differentiates_under_autograd():
    """MXNet registers no gradient; symgraph's: rhs gets the box, lhs the rest."""
    lhs, rhs = mx.nd.ones((3, 4)), mx.nd.ones((2, 2))
    lhs.attach_grad()
    rhs.attach_grad()
    head = np.arange(12, dtype=np.float32).reshape(3, 4)
    with mx.autograd.record():
        out = mx.nd._internal._slice_assign(lhs, rhs, begin=(0, 1), end=(2, 3))
    out.backward(mx.nd.array(head))
    want = head.copy()
    want[0:2, 1:3] = 0
    np.testing.assert_array_equal(lhs.grad.asnumpy(), want)
    np.testing.assert_array_equal(rhs.grad.asnumpy(), head[0:2, 1:3])


def test_slice_step_none_is_no_step():
    """Regression (MXNet's ONNX test_onnx_export_slice): ``step=None`` reaches the op as the
    string 'None', which MXNet reads as no step, whatever the length of begin."""
    x = mx.nd.arange(60).reshape((3, 4, 5))
    got = mx.nd.slice(x, begin=(None, 1), end=(None, 3), step=None)
    np.testing.assert_array_equal(got.asnumpy(), x.asnumpy()[:, 1:3])
    sym = mx.sym.slice(mx.sym.var("x"), begin=(None, 1), end=(None, 3), step=None)
    assert sym.infer_shape(x=(3, 4, 5))[1] == [(3, 2, 5)]


def test_split_v2_binds_an_empty_section():
    """An index at the start gives an empty first section: its (4, 5, 0, 7) shape comes
    from the rule with every input known, so it binds as an empty array (MXNet reads a 0
    as unknown only in shapes given at its API); a 0 in a given shape is still unknown."""
    x = mx.sym.var("x")
    sym = mx.sym.split_v2(x, indices_or_sections=(0, 2, 4), axis=2)
    exe = sym.simple_bind(mx.cpu(), grad_req="null", x=(4, 5, 6, 7))
    data = np.arange(4 * 5 * 6 * 7, dtype=np.float32).reshape(4, 5, 6, 7)
    outs = [o.asnumpy() for o in exe.forward(x=mx.nd.array(data))]
    assert [o.shape for o in outs] == [(4, 5, 0, 7), (4, 5, 2, 7), (4, 5, 2, 7), (4, 5, 2, 7)]
    np.testing.assert_array_equal(np.concatenate(outs, axis=2), data)
    with pytest.raises(MXNetError, match="cannot infer"):
        mx.sym.relu(x).simple_bind(mx.cpu(), x=(4, 0, 6))
