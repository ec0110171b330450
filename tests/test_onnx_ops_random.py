"""ONNX export of the samplers, the regression heads and ``_rnn_param_concat``. ONNX
Runtime draws other numbers than symgraph: random outputs are checked by shape, dtype,
range and moments of a large sample; the deterministic ops are compared value for value."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx
from tests.onnx_check import OPSETS, check_onnx, run_onnx, run_symgraph

onnx = pytest.importorskip("onnx")
import symgraph.onnx.ops.random  # noqa: E402 - registers the samplers
import symgraph.onnx.ops.regression  # noqa: E402 - registers the regression heads

RNG = np.random.default_rng(21)
# ONNX Runtime has no kernels for the random ops' version 22 (opset 22 on): later opsets are
# exported and checked with the ONNX checker only
RUNS = tuple(o for o in OPSETS if o < 22)


def op(name: str):
    return getattr(mx.sym, name, None) or getattr(mx.sym._internal, name)


def export_run(sym, inputs: dict, tmp_path, dynamic: bool = False, run_with=None) -> dict:
    """Export in every tested opset (checked); ONNX Runtime's outputs by opset (on
    ``run_with`` when given, else ``inputs``)."""
    got = {}
    for opset in OPSETS:
        path = str(tmp_path / f"m{opset}.onnx")
        mx.onnx.export_model(sym, {}, [v.shape for v in inputs.values()],
                             [v.dtype for v in inputs.values()], path, opset_version=opset,
                             dynamic=dynamic)
        onnx.checker.check_model(onnx.load(path), full_check=True)
        if opset in RUNS:
            got[opset] = run_onnx(path, run_with or inputs)
    assert got
    return got


def dummy() -> dict:
    return {"x": np.ones((1,), np.float32)}


# ------------------------------------------------------------------ scalar-parameter samplers

CREATION = [
    ("_random_uniform", dict(low=-10.0, high=10.0, shape=(40, 50)), "float32"),
    ("_random_uniform", dict(low=2.0, high=3.0, shape=(2000,), dtype="float64"), "float64"),
    ("_random_uniform", dict(low=0.0, high=1.0, shape=(30, 70), dtype="float16"), "float16"),
    ("_random_normal", dict(loc=1.0, scale=2.0, shape=(50, 40)), "float32"),
    ("_random_normal", dict(loc=-3.0, scale=0.5, shape=(2000,), dtype="float64"), "float64"),
    ("_random_normal", dict(shape=(40, 50), dtype="float16"), "float16"),
]


def _check_sample(got: np.ndarray, want: np.ndarray, op_name: str, p: dict) -> None:
    """Same shape and dtype; uniform in [low, high] with the mean and spread of U(low, high);
    normal with mean loc and std scale (loose bounds: 2000 draws)."""
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype)
    g = got.astype(np.float64)
    if "uniform" in op_name:
        low, high = p.get("low", 0.0), p.get("high", 1.0)
        assert g.min() >= low and g.max() <= high
        assert abs(g.mean() - (low + high) / 2) < 0.1 * (high - low)
        assert abs(g.std() - (high - low) / 12 ** 0.5) < 0.1 * (high - low)
    else:
        loc, scale = p.get("loc", 0.0), p.get("scale", 1.0)
        assert abs(g.mean() - loc) < 0.15 * scale and abs(g.std() - scale) < 0.15 * scale
    assert len(np.unique(g)) > g.size // 4  # not a constant or a few values


@pytest.mark.parametrize("name,attrs,dtype", CREATION)
def test_random_creation(name, attrs, dtype, tmp_path):
    sym = mx.sym.Group([op(name)(**attrs), mx.sym.Variable("x")])
    want = run_symgraph(sym, dummy(), {})[0]
    assert want.dtype == np.dtype(dtype)
    for got in export_run(sym, dummy(), tmp_path).values():
        _check_sample(got[0], want, name, attrs)


@pytest.mark.parametrize("name,attrs", [("_random_uniform_like", dict(low=-10.0, high=10.0)),
                                        ("_random_normal_like", dict(loc=2.0, scale=3.0))])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_random_like(name, attrs, dtype, tmp_path):
    x = {"x": np.zeros((40, 50), dtype)}
    sym = op(name)(mx.sym.Variable("x"), **attrs)
    want = run_symgraph(sym, x, {})[0]
    for got in export_run(sym, x, tmp_path).values():
        _check_sample(got[0], want, name, attrs)


def test_random_like_dynamic(tmp_path):
    """Exported for one batch, drawn for another."""
    sym = op("_random_uniform_like")(mx.sym.Variable("x"), low=1.0, high=2.0)
    other = {"x": np.zeros((70, 30), np.float32)}
    want = run_symgraph(sym, other, {})[0]
    got = export_run(sym, {"x": np.zeros((3, 30), np.float32)}, tmp_path, dynamic=True,
                     run_with=other)
    for out in got.values():
        _check_sample(out[0], want, "uniform", dict(low=1.0, high=2.0))


def test_random_creation_dynamic(tmp_path):
    """A creation sampler in a dynamic export keeps its fixed shape."""
    sym = mx.sym.Group([op("_random_normal")(shape=(40, 50)), mx.sym.Variable("x")])
    want = run_symgraph(sym, dummy(), {})[0]
    for got in export_run(sym, dummy(), tmp_path, dynamic=True).values():
        _check_sample(got[0], want, "normal", {})


# ------------------------------------------------------------------ per-element parameters

@pytest.mark.parametrize("name,shape,dtype", [("_sample_uniform", (3000,), None),
                                              ("_sample_normal", (1500, 2), "float64"),
                                              ("_sample_uniform", (), "float16")])
def test_sample_per_element(name, shape, dtype, tmp_path):
    a = np.array([[-1.0, 2.0], [0.0, 5.0]], np.float32)
    b = np.array([[1.0, 4.0], [0.5, 6.0]], np.float32)
    inputs = {"a": a, "b": b}
    attrs = dict(shape=shape) if dtype is None else dict(shape=shape, dtype=dtype)
    sym = op(name)(mx.sym.Variable("a"), mx.sym.Variable("b"), **attrs)
    want = run_symgraph(sym, inputs, {})[0]
    for got in export_run(sym, inputs, tmp_path).values():
        g = got[0]
        assert g.shape == want.shape and g.dtype == want.dtype
        if not shape:
            continue
        for i, j in np.ndindex(2, 2):
            cell = g[i, j]
            key = "low" if "uniform" in name else "loc"
            other = "high" if "uniform" in name else "scale"
            _check_sample(cell, want[i, j], name, {key: a[i, j], other: b[i, j]})


# ------------------------------------------------------------------ multinomial

def _probs(rows: int, k: int, dtype="float32") -> np.ndarray:
    p = RNG.uniform(0.05, 1.0, (rows, k))
    return (p / p.sum(axis=1, keepdims=True)).astype(dtype)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("out_dtype", ["int32", "float32", "uint8"])
def test_multinomial_frequencies(dtype, out_dtype, tmp_path):
    """Class frequencies of 4000 draws per row within 0.04 of the probabilities."""
    probs = _probs(3, 5, dtype)
    sym = op("_sample_multinomial")(mx.sym.Variable("x"), shape=(40, 100), dtype=out_dtype)
    want = run_symgraph(sym, {"x": probs}, {})[0]
    for got in export_run(sym, {"x": probs}, tmp_path).values():
        g = got[0]
        assert g.shape == want.shape == (3, 40, 100) and g.dtype == want.dtype
        for r in range(3):
            # half rows may sum to just under 1: index 5 for the rest, as in symgraph
            freq = np.bincount(g[r].ravel().astype(np.int64), minlength=6)[:5] / 4000
            np.testing.assert_allclose(freq, probs[r].astype(np.float64), atol=0.04)


def test_multinomial_unnormalised_rows(tmp_path):
    """Rows summing to less than 1 draw the index ``k`` for the rest, as symgraph does."""
    probs = np.array([[0.2, 0.3], [0.1, 0.1]], np.float32)
    sym = op("_sample_multinomial")(mx.sym.Variable("x"), shape=(5000,))
    want = run_symgraph(sym, {"x": probs}, {})[0]
    for got in export_run(sym, {"x": probs}, tmp_path).values():
        for r in range(2):
            f_got = np.bincount(got[0][r], minlength=3) / 5000
            f_want = np.bincount(want[r], minlength=3) / 5000
            np.testing.assert_allclose(f_got, f_want, atol=0.04)


@pytest.mark.parametrize("shape", [(6,), (2, 3, 4)])
def test_multinomial_get_prob(shape, tmp_path):
    """The second output is log(probs[drawn class]) of the same draws."""
    probs = _probs(int(np.prod(shape[:-1])), shape[-1]).reshape(shape)
    sym = op("_sample_multinomial")(mx.sym.Variable("x"), shape=(7,), get_prob=True)
    want = run_symgraph(sym, {"x": probs}, {})
    for idx, logp in export_run(sym, {"x": probs}, tmp_path).values():
        assert idx.shape == want[0].shape and logp.shape == want[1].shape
        assert idx.dtype == want[0].dtype and logp.dtype == want[1].dtype
        rows = probs.reshape(-1, shape[-1])
        pick = np.take_along_axis(rows, idx.reshape(rows.shape[0], -1), axis=1)
        np.testing.assert_allclose(logp.reshape(pick.shape), np.log(pick), rtol=1e-6)


def test_multinomial_one_draw_1d_and_dynamic(tmp_path):
    """A 1-D distribution with no ``shape`` gives shape (1,); a dynamic export draws for
    another batch."""
    sym = op("_sample_multinomial")(mx.sym.Variable("x"))
    p1 = _probs(1, 4)[0]
    for got in export_run(sym, {"x": p1}, tmp_path).values():
        assert got[0].shape == (1,) and 0 <= got[0][0] < 4
    sym = op("_sample_multinomial")(mx.sym.Variable("x"), shape=(2,))
    other = {"x": _probs(9, 4)}
    got = export_run(sym, {"x": _probs(3, 4)}, tmp_path, dynamic=True, run_with=other)
    for out in got.values():
        assert out[0].shape == (9, 2) and out[0].dtype == np.int32
        assert out[0].min() >= 0 and out[0].max() < 4


# ------------------------------------------------------------------ deterministic ops

@pytest.mark.parametrize("head", ["LinearRegressionOutput", "LogisticRegressionOutput",
                                  "MAERegressionOutput"])
@pytest.mark.parametrize("shape", [(3, 4, 5), (8,)])
def test_regression_heads(head, shape, tmp_path):
    """Inference output: the data (Linear, MAE) or its sigmoid (Logistic); the label is
    left out of the exported model."""
    x = RNG.uniform(-3, 3, shape).astype(np.float32)
    sym = op(head)(mx.sym.Variable("x") * 2.0, name="head")  # label "head_label" left out
    check_onnx(sym, {"x": x}, tmp_path, rtol=1e-5, atol=1e-6)


def test_regression_head_dynamic(tmp_path):
    sym = op("LogisticRegressionOutput")(mx.sym.Variable("x"), name="head")
    check_onnx(sym, {"x": RNG.uniform(-3, 3, (4, 3)).astype(np.float32)}, tmp_path,
               dynamic=True)
    other = {"x": RNG.uniform(-3, 3, (7, 3)).astype(np.float32)}
    for opset in OPSETS:
        got = run_onnx(str(tmp_path / f"model{opset}.onnx"), other)[0]
        np.testing.assert_allclose(got, 1 / (1 + np.exp(-other["x"])), rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "float32", "int32", "int64"])
@pytest.mark.parametrize("shape,dim", [((2, 3), 1), ((1, 2, 3), 0), ((4, 5), -1)])
def test_rnn_param_concat(dtype, shape, dim, tmp_path):
    a = RNG.uniform(-5, 5, shape).astype(dtype)
    b = RNG.uniform(-5, 5, shape).astype(dtype)
    sym = op("_rnn_param_concat")(mx.sym.Variable("a"), mx.sym.Variable("b"), num_args=2,
                                  dim=dim)
    check_onnx(sym, {"a": a, "b": b}, tmp_path, dynamic=dim != 0)
