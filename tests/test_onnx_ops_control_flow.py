"""ONNX export of the control-flow operators (``_foreach``, ``_while_loop`` as Loop,
``_cond`` as If): ONNX Runtime gives symgraph's outputs."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx
import symgraph.onnx.ops.control_flow
from symgraph.export.graph import ExportError
from tests.onnx_check import check_onnx, run_onnx, run_symgraph

RNG = np.random.default_rng(7)
X, S, T, W = (mx.sym.var(k) for k in ("x", "s", "t", "w"))


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _group(outs, states):
    outs = outs if isinstance(outs, list) else [outs]
    return mx.sym.Group([*outs, *states])


def _foreach_simple():
    outs, st = mx.sym.contrib.foreach(lambda x, s: (x * s[0] + s[0], [s[0] + x]), X, [S])
    return _group(outs, st), {"x": _f32(4, 3), "s": _f32(3)}, {}


def _foreach_1d_two_states():
    def step(x, s):
        return [x * s[1], s[0] - x], [s[0] + x, s[1] * 0.5]
    outs, st = mx.sym.contrib.foreach(step, X, [S, T])
    return _group(outs, st), {"x": _f32(5), "s": _f32(1), "t": _f32(1)}, {}


def _foreach_free_vars():
    """Two data arrays, a free data input and a parameter read in the body."""
    def step(xs, s):
        y = mx.sym.FullyConnected(xs[0] + s[0], W, num_hidden=3, no_bias=True) * T
        return y + xs[1], [mx.sym.tanh(y)]
    outs, st = mx.sym.contrib.foreach(step, [X, mx.sym.var("z")], [S])
    inputs = {"x": _f32(4, 2, 3), "z": _f32(4, 2, 3), "s": _f32(2, 3), "t": _f32(2, 3)}
    return _group(outs, st), inputs, {"w": _f32(3, 3)}


def _lstm(batch=2):
    cell = mx.rnn.LSTMCell(num_hidden=5, prefix="l_")
    outs, st = mx.sym.contrib.foreach(lambda x, s: cell(x, s), X,
                                      [mx.sym.var("h"), mx.sym.var("c")])
    sym = _group(outs, st)
    inputs = {"x": _f32(6, batch, 4), "h": _f32(batch, 5), "c": _f32(batch, 5)}
    shapes = dict(zip(sym.list_arguments(), sym.infer_shape(
        **{k: v.shape for k, v in inputs.items()})[0]))
    params = {k: _f32(*v) * 0.5 for k, v in shapes.items() if k.startswith("l_")}
    return sym, inputs, params


def _while(stop=5.0, max_it=8):
    """A counter and an accumulator; stops on the counter or on the accumulator's sum."""
    i, a = mx.sym.var("i"), mx.sym.var("a")
    out, vs = mx.sym.contrib.while_loop(
        lambda i, a: mx.sym.broadcast_logical_and(i < stop, mx.sym.sum(a) < 30),
        lambda i, a: ([a * 2, mx.sym.broadcast_add(a, i)],
                      [i + 1, mx.sym.broadcast_add(a + mx.sym.abs(a), i)]),
        [i, a], max_iterations=max_it)
    return _group(out, vs), {"i": np.zeros(1, np.float32), "a": np.abs(_f32(2, 3))}, {}


def _while_no_outputs():
    i, a = mx.sym.var("i"), mx.sym.var("a")
    _, vs = mx.sym.contrib.while_loop(lambda i, a: i < 3, lambda i, a: ([], [i + 1, a * 1.5]),
                                      [i, a], max_iterations=5)
    return mx.sym.Group(vs), {"i": np.zeros(1, np.float32), "a": _f32(3)}, {}


def _cond(flip):
    a, b = mx.sym.var("a"), mx.sym.var("b")
    out = mx.sym.contrib.cond(mx.sym.sum(a) < mx.sym.sum(b) * flip,
                              lambda: [a * 2 + b, mx.sym.exp(b)],
                              lambda: [b * 3, a - b])
    return mx.sym.Group(out), {"a": _f32(2, 3), "b": _f32(2, 3)}, {}


CASES = {
    "foreach_simple": _foreach_simple,
    "foreach_1d_two_states": _foreach_1d_two_states,
    "foreach_free_vars": _foreach_free_vars,
    "foreach_lstm": _lstm,
    "while_counter": lambda: _while(5.0, 8),
    "while_max_iterations": lambda: _while(100.0, 3),
    "while_no_step": lambda: _while(-1.0, 4),
    "while_no_outputs": _while_no_outputs,
    "cond_then": lambda: _cond(1e6),
    "cond_else": lambda: _cond(-1e6),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_control_flow(name, tmp_path):
    sym, inputs, params = CASES[name]()
    check_onnx(sym, inputs, tmp_path, params=params)


@pytest.mark.parametrize("name", ["foreach_simple", "foreach_lstm", "while_no_outputs",
                                  "cond_then"])
def test_control_flow_dynamic(name, tmp_path):
    sym, inputs, params = CASES[name]()
    check_onnx(sym, inputs, tmp_path, params=params, opsets=(13, 21), dynamic=True)


def test_lstm_dynamic_other_sizes(tmp_path):
    """A dynamic export run with another sequence length and batch than exported with."""
    sym, inputs, params = _lstm(batch=2)
    path = str(tmp_path / "m.onnx")
    mx.onnx.export_model(sym, {k: mx.nd.array(v) for k, v in params.items()},
                         [inputs[k].shape for k in ("x", "h", "c")], np.float32, path,
                         dynamic=True)
    other = {"x": _f32(3, 4, 4), "h": _f32(4, 5), "c": _f32(4, 5)}
    for got, want in zip(run_onnx(path, other), run_symgraph(sym, other, params)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_refused_changing_state(tmp_path):
    """A state whose shape changes from step to step cannot be a Loop-carried value."""
    outs, st = mx.sym.contrib.foreach(
        lambda x, s: (x, [mx.sym.sum(s[0], axis=0, keepdims=True) + x]), X, [S])
    with pytest.raises(ExportError, match="changes"):
        mx.onnx.export_model(_group(outs, st), {}, [(3, 1, 2), (2, 2)], np.float32,
                             str(tmp_path / "m.onnx"))


def test_parameters_carried(tmp_path):
    """Parameters as a foreach state, a free variable and a while_loop variable: the loops
    carry them from their initializers, the body reads the free one as a constant."""
    w, s0, i = mx.sym.var("w"), mx.sym.var("s0"), mx.sym.var("i")
    outs, st = mx.sym.contrib.foreach(
        lambda x, s: (mx.sym.FullyConnected(x, w, num_hidden=2, no_bias=True) + s[0],
                      [s[0] + 1]), X, [s0])
    out, vs = mx.sym.contrib.while_loop(lambda i, v: i < 2, lambda i, v: (v * 2, [i + 1, v + 1]),
                                        [i, s0], max_iterations=3)
    sym = mx.sym.Group([outs, st[0], out, *vs])
    params = {"w": _f32(2, 3), "s0": _f32(4, 2)}
    inputs = {"x": _f32(5, 4, 3), "i": np.zeros(1, np.float32)}
    path = str(tmp_path / "m.onnx")
    mx.onnx.export_model(sym, {k: mx.nd.array(v) for k, v in params.items()},
                         [inputs["x"].shape, inputs["i"].shape], np.float32, path)
    want = sym.eval(**{k: mx.nd.array(v) for k, v in {**inputs, **params}.items()})
    for got, w_ in zip(run_onnx(path, inputs), want):
        np.testing.assert_allclose(got, w_.asnumpy(), rtol=1e-4, atol=1e-5)


def test_refused_branch_shapes(tmp_path):
    """If's branches must agree on what they give."""
    a = mx.sym.var("a")
    out = mx.sym.contrib.cond(mx.sym.sum(a) > 0, lambda: a, lambda: mx.sym.sum(a))
    with pytest.raises(ExportError, match="else-branch"):
        mx.onnx.export_model(out, {}, [(2,)], np.float32, str(tmp_path / "m.onnx"))


def test_refused_dynamic_untraced(tmp_path):
    """A body whose shapes do not follow its inputs' grown dims (a (1,) counter broadcast
    against the data) is refused in a dynamic export rather than given fixed dims."""
    sym, inputs, _ = _while()
    with pytest.raises(ExportError, match="dynamic"):
        mx.onnx.export_model(sym, {}, [inputs["i"].shape, inputs["a"].shape], np.float32,
                             str(tmp_path / "m.onnx"), dynamic=True)
