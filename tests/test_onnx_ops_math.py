"""ONNX export of elementwise math and reductions: every case exported in opsets 12, 13,
18 and 21, run in ONNX Runtime and compared with symgraph (values and dtypes)."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx
from symgraph.export.graph import ExportError
from tests.onnx_check import OPSETS, check_onnx, run_onnx, run_symgraph

onnx = pytest.importorskip("onnx")
import symgraph.onnx.ops.reduce  # noqa: E402 - registers the reductions

RNG = np.random.default_rng(21)


def op(name: str):
    """The symbol creator of an op, public or internal."""
    return getattr(mx.sym, name, None) or getattr(mx.sym._internal, name)


def var(name: str = "x"):
    return mx.sym.Variable(name)


def data(shape, low=-2.0, high=2.0, dtype="float32", step=None):
    """Random data; ``step`` rounds it to multiples (ties and equal values on purpose)."""
    x = RNG.uniform(low, high, size=shape)
    if step:
        x = np.round(x / step) * step
    return x.astype(dtype)


def check(sym, inputs, tmp_path, **kw) -> None:
    """check_onnx, and the ONNX outputs' element types are symgraph's dtypes."""
    check_onnx(sym, inputs, tmp_path, **kw)
    want = run_symgraph(sym, inputs, kw.get("params") or {})
    opset = kw.get("opsets", OPSETS)[-1]
    model = onnx.load(str(tmp_path / f"model{opset}.onnx"))
    for info, w in zip(model.graph.output, want):
        got = onnx.helper.tensor_dtype_to_np_dtype(info.type.tensor_type.elem_type)
        assert got == w.dtype, (info.name, got, w.dtype)


def export_run(sym, inputs: dict, tmp_path) -> dict:
    """Export in every tested opset; ONNX Runtime's outputs by opset."""
    got = {}
    for opset in OPSETS:
        path = str(tmp_path / f"m{opset}.onnx")
        mx.onnx.export_model(sym, {}, [v.shape for v in inputs.values()],
                             [v.dtype for v in inputs.values()], path, opset_version=opset)
        got[opset] = run_onnx(path, inputs)
    return got


# ------------------------------------------------------------------ binary

SAME = ["elemwise_add", "elemwise_sub", "elemwise_mul", "elemwise_div", "_maximum", "_minimum",
        "_hypot", "_mod", "_equal", "_not_equal", "_greater", "_greater_equal", "_lesser",
        "_lesser_equal", "_logical_and", "_logical_or", "_logical_xor", "_grad_add"]
BROADCAST = ["broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div",
             "broadcast_maximum", "broadcast_minimum", "broadcast_hypot", "broadcast_mod",
             "broadcast_equal", "broadcast_not_equal", "broadcast_greater",
             "broadcast_greater_equal", "broadcast_lesser", "broadcast_lesser_equal",
             "broadcast_logical_and", "broadcast_logical_or", "broadcast_logical_xor"]
# ops symgraph runs on integers (hypot is float-only in torch)
INT_OK = {n for n in SAME + BROADCAST if "hypot" not in n}


def _binary_cases():
    for name in SAME:
        yield name, "float32", (3, 4), (3, 4)
    for name in BROADCAST:
        yield name, "float32", (2, 1, 4), (3, 1)
    for name in sorted(INT_OK):
        yield name, "int32", (3, 4), (3, 4) if name in SAME else (4,)
    for name in ("elemwise_div", "_mod", "broadcast_greater", "_maximum"):
        yield name, "float64", (2, 3), (2, 3) if name in SAME else (3,)
    for name in ("elemwise_add", "elemwise_sub", "elemwise_mul", "elemwise_div", "_mod",
                 "broadcast_mul", "_greater", "_maximum"):
        yield name, "int8", (3, 4), (3, 4) if name in SAME else (4,)
    for name in ("elemwise_add", "broadcast_sub", "elemwise_mul", "elemwise_div"):
        yield name, "uint8", (3, 4), (3, 4) if name in SAME else (4,)
    yield "_power", "float32", (3, 4), (3, 4)
    yield "broadcast_power", "float32", (2, 3, 1), (3, 5)
    yield "broadcast_power", "int32", (2, 3), (3,)


@pytest.mark.parametrize("name,dtype,sa,sb", list(_binary_cases()))
def test_binary(name, dtype, sa, sb, tmp_path):
    if "power" in name:  # positive bases (fractional powers of negatives are NaN)
        a, b = data(sa, 0.5, 2.0, dtype, step=0.5), data(sb, 0.0, 3.0, dtype, step=1.0)
    elif dtype == "uint8":
        a, b = data(sa, 0, 200, dtype, step=1.0), data(sb, 0, 9, dtype, step=1.0)
    else:  # ties, zeros (mod/div by 0), negatives, int8 overflow on purpose
        big = 100 if dtype == "int8" else 4
        a, b = data(sa, -big, big, dtype, step=1.0), data(sb, -3, 3, dtype, step=1.0)
    sym = op(name)(var("a"), var("b"))
    check(sym, {"a": a, "b": b}, tmp_path)


# ------------------------------------------------------------------ with a scalar

SCALAR = ["_plus_scalar", "_minus_scalar", "_rminus_scalar", "_mul_scalar", "_div_scalar",
          "_rdiv_scalar", "_mod_scalar", "_rmod_scalar", "_maximum_scalar", "_minimum_scalar",
          "_equal_scalar", "_not_equal_scalar", "_greater_scalar", "_greater_equal_scalar",
          "_lesser_scalar", "_lesser_equal_scalar", "_logical_and_scalar",
          "_logical_or_scalar", "_logical_xor_scalar", "_hypot_scalar"]


def _scalar_cases():
    for name in SCALAR:
        yield name, "float32", 1.5
        if name != "_hypot_scalar":
            yield name, "int32", 2.0  # integral scalars: symgraph and MXNet agree there
    for name in ("_mod_scalar", "_rmod_scalar", "_div_scalar", "_logical_and_scalar",
                 "_logical_or_scalar", "_equal_scalar"):
        yield name, "float32", -2.0 if "mod" in name else 0.0
    yield "_mod_scalar", "int32", -3.0
    yield "_power_scalar", "float32", 2.5
    yield "_power_scalar", "float32", 2.0
    yield "_rpower_scalar", "float32", 1.7
    yield "_power_scalar", "int32", 3.0
    yield "_mul_scalar", "float64", 0.1
    yield "_greater_scalar", "float64", 0.5
    for name in ("_plus_scalar", "_rminus_scalar", "_mul_scalar", "_div_scalar",
                 "_power_scalar"):
        yield name, "int8", 3.0


@pytest.mark.parametrize("name,dtype,s", list(_scalar_cases()))
def test_scalar(name, dtype, s, tmp_path):
    low = 0.5 if name == "_power_scalar" and s != int(s) else -4
    x = data((3, 5), low, 4, dtype, step=0.5 if "int" not in dtype else 1.0)
    if name in ("_rdiv_scalar", "_rmod_scalar") and dtype == "int32":
        x[x == 0] = 3  # symgraph computes these in floats: no integer division by 0
    check(op(name)(var(), scalar=s), {"x": x}, tmp_path)


# ------------------------------------------------------------------ unary

UNARY = {  # op -> (low, high) of its test data
    "negative": (-2, 2), "abs": (-2, 2), "sign": (-2, 2), "round": (-3, 3), "rint": (-3, 3),
    "ceil": (-3, 3), "floor": (-3, 3), "trunc": (-3, 3), "fix": (-3, 3), "sqrt": (0.1, 4),
    "rsqrt": (0.1, 4), "cbrt": (-3, 3), "rcbrt": (0.2, 3), "square": (-2, 2), "exp": (-2, 2),
    "expm1": (-1e-3, 1e-3), "log": (0.1, 4), "log10": (0.1, 4), "log2": (0.1, 4),
    "log1p": (-1e-3, 1e-3), "reciprocal": (0.2, 3), "sin": (-3, 3), "cos": (-3, 3),
    "tan": (-1, 1), "arcsin": (-0.9, 0.9), "arccos": (-0.9, 0.9), "arctan": (-3, 3),
    "sinh": (-2, 2), "cosh": (-2, 2), "tanh": (-2, 2), "arcsinh": (-3, 3),
    "arccosh": (1.1, 4), "arctanh": (-0.9, 0.9), "degrees": (-3, 3), "radians": (-90, 90),
    "erf": (-2, 2), "logical_not": (-1, 1), "relu": (-1, 1), "sigmoid": (-3, 3),
    "softsign": (-3, 3), "identity": (-1, 1), "_copy": (-1, 1), "BlockGrad": (-1, 1),
    "stop_gradient": (-1, 1), "make_loss": (-1, 1), "MakeLoss": (-1, 1),
    "_contrib_round_ste": (-3, 3), "_contrib_sign_ste": (-2, 2),
    "_contrib_gradientmultiplier": (-1, 1), "_contrib_div_sqrt_dim": (-1, 1),
}
# rounding ops see exact halves; logical_not sees zeros
STEPPED = {"round": 0.5, "rint": 0.5, "ceil": 0.5, "floor": 0.5, "trunc": 0.5, "fix": 0.5,
           "_contrib_round_ste": 0.5, "logical_not": 1.0, "sign": 1.0}
UNARY_INT = ["negative", "abs", "sign", "square", "rint", "floor", "fix", "logical_not",
             "identity"]


def _unary_cases():
    for name in UNARY:
        yield name, "float32"
    for name in UNARY_INT:
        yield name, "int32"
    for name in ("round", "rint", "exp", "sqrt", "log1p", "expm1", "sign"):
        yield name, "float64"
    for name in ("negative", "square"):
        yield name, "int8"
    yield "negative", "uint8"
    for name in ("exp", "expm1", "log1p", "round", "sin", "sqrt", "abs"):
        yield name, "float16"


@pytest.mark.parametrize("name,dtype", list(_unary_cases()))
def test_unary(name, dtype, tmp_path):
    low, high = UNARY[name]
    step = STEPPED.get(name)
    if "int" in dtype:
        low, high, step = (0, 9, 1.0) if dtype == "uint8" else (-20, 20, 1.0)
    x = data((2, 3, 4), low, high, dtype, step)
    kw = {"scalar": 2.0} if name == "_contrib_gradientmultiplier" else {}
    tol = {"float16": 2e-3, "float32": 1e-5}.get(dtype, 1e-6)
    check(op(name)(var(), **kw), {"x": x}, tmp_path, rtol=tol, atol=tol)


def test_round_exact_values(tmp_path):
    """MXNet 1.9.1's own outputs: halves away from zero (round; symgraph's reference rounds
    0.49999997 up) and rint's floor on a tie."""
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -3.2, 7.0], np.float32)
    v = var()
    for opset, got in export_run(mx.sym.Group([mx.sym.round(v), mx.sym.rint(v)]), {"x": x},
                                 tmp_path).items():
        assert got[0].tolist() == [-3, -2, -1, 1, 2, 3, 0, -3, 7], opset
        assert got[1].tolist() == [-3, -2, -1, 0, 1, 2, 0, -3, 7], opset


def test_expm1_log1p_small(tmp_path):
    """The exact forms keep relative accuracy near 0 (exp(x) - 1 would not)."""
    x = np.array([1e-7, -3e-6, 2e-4, 0.0, 5.0, -30.0, 100.0], np.float32)
    v = var()
    sym = mx.sym.Group([mx.sym.expm1(v), mx.sym.log1p(v)])
    check(sym, {"x": x}, tmp_path, rtol=1e-6, atol=0)


@pytest.mark.parametrize("name", ["erfinv", "gamma", "gammaln"])
def test_refused(name, tmp_path):
    with pytest.raises(ExportError, match=name):
        mx.onnx.export_model(op(name)(var()), {}, [(2, 3)], [np.float32],
                             str(tmp_path / "m.onnx"))


# ------------------------------------------------------------------ other elementwise

OTHER = [  # (id, symbol builder, {input: array})
    ("add_n3", lambda: mx.sym.add_n(var("a"), var("b"), var("c")),
     {k: data((2, 3)) for k in "abc"}),
    ("add_n_int", lambda: mx.sym.ElementWiseSum(var("a"), var("b"), var("c")),
     {k: data((2, 3), -5, 5, "int32", 1.0) for k in "abc"}),
    ("add_n1", lambda: mx.sym.add_n(var("a")), {"a": data((4,))}),
    ("cast_f16", lambda: mx.sym.Cast(var(), dtype="float16"), {"x": data((3, 4))}),
    ("cast_f64", lambda: mx.sym.cast(var(), dtype="float64"), {"x": data((3, 4))}),
    ("cast_int32", lambda: mx.sym.Cast(var(), dtype="int32"), {"x": data((3, 4), -9, 9)}),
    ("cast_uint8", lambda: mx.sym.Cast(var(), dtype="uint8"), {"x": data((3, 4), -9, 9)}),
    ("cast_int8", lambda: mx.sym.Cast(var(), dtype="int8"), {"x": data((3, 4), -9, 9)}),
    ("cast_bool", lambda: mx.sym.Cast(var(), dtype="bool"), {"x": data((3, 4), -1, 1, step=1)}),
    ("cast_from_int", lambda: mx.sym.Cast(var(), dtype="float32"),
     {"x": data((3, 4), -9, 9, "int64", 1.0)}),
    ("amp_cast", lambda: mx.sym.amp_cast(var(), dtype="float16"), {"x": data((3, 4))}),
    ("amp_cast_keep", lambda: mx.sym.amp_cast(var(), dtype="float16"),
     {"x": data((3, 4), -9, 9, "int32", 1.0)}),
    ("hard_sigmoid", lambda: mx.sym.hard_sigmoid(var(), alpha=0.3, beta=0.4),
     {"x": data((3, 4), -5, 5)}),
    ("hard_sigmoid_f16", lambda: mx.sym.hard_sigmoid(var()), {"x": data((3, 4), -5, 5, "float16")}),
    ("smooth_l1", lambda: mx.sym.smooth_l1(var(), scalar=2.0), {"x": data((3, 5), -2, 2)}),
    ("smooth_l1_0", lambda: mx.sym.smooth_l1(var(), scalar=0.0), {"x": data((3, 5), -2, 2)}),
    ("where", lambda: mx.sym.where(var("c"), var("a"), var("b")),
     {"c": data((3, 4), -1, 1, step=1), "a": data((3, 4)), "b": data((3, 4))}),
    ("where_rows", lambda: mx.sym.where(var("c"), var("a"), var("b")),
     {"c": np.array([0, 1, 2], np.float32), "a": data((3, 2, 2)), "b": data((3, 2, 2))}),
    ("where_int", lambda: mx.sym.where(var("c"), var("a"), var("b")),
     {"c": data((3, 4), -1, 1, "int32", 1), "a": data((3, 4), -5, 5, "int32", 1),
      "b": data((3, 4), -5, 5, "int32", 1)}),
    ("identity_like_rhs", lambda: op("_identity_with_attr_like_rhs")(var("a"), var("b")),
     {"a": data((2, 3)), "b": data((2, 3))}),
    ("quadratic", lambda: mx.sym.contrib.quadratic(var(), a=1.5, b=-2, c=0.3),
     {"x": data((3, 4))}),
    ("allclose", lambda: mx.sym.contrib.allclose(var("a"), var("b")),
     {"a": np.ones((3, 4), np.float32), "b": np.ones((3, 4), np.float32) + 1e-9}),
    ("khatri_rao", lambda: mx.sym.khatri_rao(var("a"), var("b")),
     {"a": data((3, 4)), "b": data((2, 4))}),
    ("chain", lambda: mx.sym.sqrt(mx.sym.abs(var("a") * 2 - var("b")) + 1) / 3,
     {"a": data((3, 4)), "b": data((3, 4))}),
]


@pytest.mark.parametrize("sym,inputs", [c[1:] for c in OTHER], ids=[c[0] for c in OTHER])
def test_other(sym, inputs, tmp_path):
    half = any(v.dtype == np.float16 for v in inputs.values())  # rounding steps differ
    check(sym(), inputs, tmp_path, rtol=2e-3 if half else 1e-4, atol=2e-3 if half else 1e-5)


# ------------------------------------------------------------------ reductions

REDUCE_ATTRS = [{}, {"axis": 1}, {"axis": (0, 2), "keepdims": True}, {"axis": -1},
                {"axis": 1, "exclude": True}, {"axis": (), "keepdims": True},
                {"axis": (0, 1, 2), "exclude": True}]


def _reduce_cases():
    for name in ("sum", "mean", "prod", "max", "min"):
        for attrs in REDUCE_ATTRS:
            yield name, attrs, "float32"
    for name in ("max", "min"):
        yield name, {"axis": (1, 2)}, "int32"
    yield "max", {"axis": 1}, "int8"
    yield "sum_axis", {"axis": 0}, "float32"
    yield "max_axis", {"axis": 2, "keepdims": True}, "float32"
    yield "min_axis", {}, "float64"
    for name in ("nansum", "nanprod"):
        yield name, {"axis": 1}, "float32"
        yield name, {}, "float32"
        yield name, {"axis": 0, "exclude": True, "keepdims": True}, "float32"


@pytest.mark.parametrize("name,attrs,dtype", list(_reduce_cases()))
def test_reduce(name, attrs, dtype, tmp_path):
    low, high = (0.5, 1.5) if "prod" in name else (-2, 2)
    if dtype == "int8":
        low, high = -60, 60
    x = data((2, 3, 4), low, high, dtype, step=1.0 if "int" in dtype else None)
    if name.startswith("nan"):
        x.reshape(-1)[[1, 7, 8]] = np.nan
    check(op(name)(var(), **attrs), {"x": x}, tmp_path)


# integer ops keep MXNet's dtypes (float math truncated back, sums and products wrapping):
# these follow MXNet 1.9.1's own outputs
INT_MXNET = [
    ("sum", lambda x: mx.sym.sum(x, axis=(1, 2)), lambda x: x.sum((1, 2)).astype(np.int32)),
    ("prod", lambda x: mx.sym.prod(x, axis=0), lambda x: x.prod(0).astype(np.int32)),
    ("nansum", lambda x: mx.sym.nansum(x), lambda x: x.sum().reshape(1).astype(np.int32)),
    ("round", mx.sym.round, lambda x: x),
    ("sqrt", mx.sym.sqrt, lambda x: np.sqrt(x.astype(np.float32)).astype(np.int32)),
    ("exp", mx.sym.exp, lambda x: np.exp(x.astype(np.float32)).astype(np.int32)),
    ("mod_scalar", lambda x: x % 2.5, lambda x: np.mod(x, 2).astype(np.int32)),
    ("plus_scalar", lambda x: x + 1.5, lambda x: x + np.int32(1)),
    ("sum_int8", lambda x: mx.sym.sum(x, axis=1), lambda x: x.sum(1).astype(np.int8)),
    ("prod_int8", lambda x: mx.sym.prod(x, axis=(0, 2)),
     lambda x: x.astype(np.int64).prod((0, 2)).astype(np.int8)),
]


@pytest.mark.parametrize("build,want", [c[1:] for c in INT_MXNET],
                         ids=[c[0] for c in INT_MXNET])
def test_int_like_mxnet(build, want, tmp_path):
    x = data((2, 3, 4), 0, 6, "int32", 1.0)
    if want(x).dtype == np.int8:  # wrapping on purpose
        x = data((2, 3, 4), -100, 100, "int8", 1.0)
    for opset, got in export_run(build(var()), {"x": x}, tmp_path).items():
        assert got[0].dtype == x.dtype, opset
        np.testing.assert_array_equal(got[0], want(x), err_msg=str(opset))


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
@pytest.mark.parametrize("axis", [None, 1, (0, 2)])
def test_integer_prod_wraps(dtype, axis, tmp_path):
    """ONNX Runtime's ReduceProd saturates on overflow; MXNet's product wraps (a Loop of
    Mul in the export)."""
    low, high = (0, 255) if dtype == "uint8" else (-3000, 3000)
    x = data((3, 5, 4), low, high, dtype, 1.0)
    want = x.prod(axis=axis, dtype=dtype)
    want = want.reshape(1) if axis is None else want  # MXNet's (1,) for a full reduction
    for opset, got in export_run(mx.sym.prod(var(), axis=axis), {"x": x}, tmp_path).items():
        assert got[0].dtype == x.dtype, opset
        np.testing.assert_array_equal(got[0], want, err_msg=str(opset))
    check(mx.sym.prod(var(), axis=axis, keepdims=True), {"x": x}, tmp_path)


def test_reduce_rank1_full(tmp_path):
    """A full reduction of a vector gives MXNet's (1,)."""
    x = data((5,))
    v = var()
    check(mx.sym.Group([mx.sym.sum(v), mx.sym.max(v, axis=0)]), {"x": x}, tmp_path)


NORM_ATTRS = [{}, {"ord": 1}, {"axis": 1}, {"axis": (0, 2), "keepdims": True, "ord": 1},
              {"axis": -1, "out_dtype": "float64"}, {"axis": ()}]


@pytest.mark.parametrize("attrs", NORM_ATTRS)
def test_norm(attrs, tmp_path):
    check(mx.sym.norm(var(), **attrs), {"x": data((2, 3, 4))}, tmp_path)


def test_norm_int(tmp_path):
    x = data((3, 4), -9, 9, "int32", 1.0)
    check(mx.sym.norm(var(), axis=1), {"x": x}, tmp_path)


ARG_ATTRS = [{}, {"axis": 1}, {"axis": -1, "keepdims": True}, {"keepdims": True},
             {"axis": 0}]


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("attrs", ARG_ATTRS)
def test_arg_reduce(name, attrs, tmp_path):
    x = data((3, 4, 2), -3, 3, step=1.0)  # ties: the first index wins
    check(op(name)(var(), **attrs), {"x": x}, tmp_path)


@pytest.mark.parametrize("sym,inputs", [
    (lambda: mx.sym.argmax(var(), axis=0), {"x": data((5,))}),
    (lambda: mx.sym.argmin(var(), axis=1), {"x": data((3, 4), -5, 5, "int32", 1.0)}),
    (lambda: mx.sym.argmax_channel(var()), {"x": data((3, 4, 2))}),
    (lambda: mx.sym.moments(var(), axes=(0, 2))[1], {"x": data((3, 4, 2))}),
], ids=["rank1", "int", "argmax_channel", "moments"])
def test_reduce_other(sym, inputs, tmp_path):
    check(sym(), inputs, tmp_path)


# ------------------------------------------------------------------ dynamic dims

DYNAMIC = [  # a model of many ops, exported with dynamic dims
    ("mixed", lambda x: mx.sym.Group([
        mx.sym.sum(mx.sym.broadcast_mul(x, mx.sym.max(x, axis=1, keepdims=True)), axis=0),
        mx.sym.argmax(mx.sym.round(x * 2.5), axis=1),
        mx.sym.norm(x, axis=(1,), keepdims=True),
        mx.sym.mean(x, axis=0, exclude=True),
        op("_contrib_div_sqrt_dim")(x),
        mx.sym.where(mx.sym.sum(x, axis=1) > 0, x, mx.sym.expm1(x)),
        mx.sym.broadcast_greater_equal(x % 0.7, mx.sym.nansum(x)),
    ])),
]


@pytest.mark.parametrize("build", [d[1] for d in DYNAMIC], ids=[d[0] for d in DYNAMIC])
def test_dynamic(build, tmp_path):
    """Exported for one batch, run for another: no data dim is baked in."""
    sym = build(var())
    check(sym, {"x": data((3, 4))}, tmp_path, dynamic=True)
    other = {"x": data((5, 6))}
    want = run_symgraph(sym, other, {})
    for opset in OPSETS:
        got = run_onnx(str(tmp_path / f"model{opset}.onnx"), other)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=str(opset))


# ------------------------------------------------------------------ integer powers

def _int_pow_grid(dtype):
    """Every base in -5..5 against every exponent in -12..12, and overflowing powers."""
    b, e = np.meshgrid(np.arange(-5, 6), np.arange(-12, 13))
    extra = np.array([[3, 39], [3, 40], [7, 22], [-3, 39], [2, 31], [2, 32], [5, 27], [0, 0],
                      [0, -1], [-7, 63], [3, 2**20 + 1], [-1, -2**31]])
    x, y = np.concatenate([b.ravel(), extra[:, 0]]), np.concatenate([e.ravel(), extra[:, 1]])
    if dtype == "uint8":
        x, y = np.abs(x), np.abs(y)
    return x.astype(dtype), y.astype(dtype)


@pytest.mark.parametrize("name,dtype", [("_power", "int32"), ("_power", "int64"),
                                        ("broadcast_power", "int32"),
                                        ("broadcast_power", "int64"), ("_power", "int8"),
                                        ("broadcast_power", "uint8")])
def test_int_power_exact(name, dtype, tmp_path):
    """Negative exponents (0, or +-1 for |base| == 1), 0 ** -1 and wrapping overflow: exactly
    symgraph's integers (ONNX Runtime's Pow goes through a double)."""
    x, y = _int_pow_grid(dtype)
    check(op(name)(var("a"), var("b")), {"a": x, "b": y}, tmp_path, rtol=0, atol=0)


@pytest.mark.parametrize("name,s", [("_power_scalar", 2.5), ("_power_scalar", 7.0),
                                    ("_power_scalar", 0.0), ("_rpower_scalar", 2.0),
                                    ("_rpower_scalar", -1.5), ("_rpower_scalar", 3.0)])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_int_power_scalar(name, s, dtype, tmp_path):
    """Integer data with a scalar: the scalar truncated to the dtype, an integer power
    (negative exponents of an integer scalar base included)."""
    x = np.arange(-5, 6).astype(dtype) if name == "_power_scalar" else \
        np.arange(-6, 30).astype(dtype)
    check(op(name)(var(), scalar=s), {"x": x}, tmp_path, rtol=0, atol=0)


def test_int_power_param_exponent(tmp_path):
    """A parameter exponent: only as many square-and-multiply steps as it needs."""
    x = np.arange(-4, 5).astype("int64").reshape(3, 3)
    y = np.array([[0, 1, 2], [3, -1, 5], [6, 2, 1]], dtype="int64")
    check(op("_power")(var("a"), var("b")), {"a": x}, tmp_path, params={"b": y}, rtol=0, atol=0)
