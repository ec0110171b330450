"""ONNX translations of the samplers: ``_random_uniform``/``_random_normal`` (and their
``_like`` forms), ``_sample_uniform``/``_sample_normal`` (one distribution per element of
parameter arrays) and ``_sample_multinomial``.

The numbers differ from symgraph's generator (ONNX Runtime draws its own); the
distributions are the same. Half-precision samples are drawn in float32 and rounded, as
symgraph does.
"""
from __future__ import annotations

import math

from ..emitter import Emitter, NodeCtx, converts, onnx_type

_DRAWN = ("float32", "float64")  # the dtypes samples are drawn in (half: float32, cast)


def _draw_dtype(dtype: str) -> str:
    return dtype if dtype in _DRAWN else "float32"


def _finish(e: Emitter, y: str, drawn: str, dtype: str, out: str) -> str:
    """``y`` in the output dtype (half samples are drawn in float32)."""
    return y if drawn == dtype else e.cast(y, dtype, out)


def _dist_attrs(n: NodeCtx, dist: str) -> dict:
    if dist == "uniform":
        return dict(low=float(n.p.low), high=float(n.p.high))
    return dict(mean=float(n.p.loc), scale=float(n.p.scale))


def _is_fixed(e: Emitter, n: NodeCtx) -> bool:
    """Whether output 0's shape is fixed at export (no dim follows a dynamic input)."""
    sources = n.out_dim_sources[0] if n.out_dim_sources else None
    return not e.dynamic or not sources or all(s is None for s in sources)


def _unit_like(e: Emitter, n: NodeCtx, shape_value: str, drawn: str) -> str:
    """U[0, 1) samples of the runtime shape ``shape_value`` (a 1-D int64)."""
    zeros = e.one("ConstantOfShape", [shape_value])
    return e.one("RandomUniformLike", [zeros], dtype=onnx_type(drawn), low=0.0, high=1.0)


@converts("_random_uniform", "_random_normal")
def random_creation(e: Emitter, n: NodeCtx):
    dist = n.op[len("_random_"):]
    dtype = n.out_dtypes[0]
    drawn = _draw_dtype(dtype)
    attrs = _dist_attrs(n, dist)
    op_type = "RandomUniform" if dist == "uniform" else "RandomNormal"
    last = n.outs[0] if drawn == dtype else None
    if _is_fixed(e, n):
        y = e.one(op_type, [], last, dtype=onnx_type(drawn), shape=list(n.out_shapes[0]),
                  **attrs)
    else:  # a shape completed from dynamic dims: drawn like a tensor of that shape
        zeros = e.one("ConstantOfShape", [e.out_dims(n)])
        y = e.one(f"{op_type}Like", [zeros], last, dtype=onnx_type(drawn), **attrs)
    return [_finish(e, y, drawn, dtype, n.outs[0])]


@converts("_random_uniform_like", "_random_normal_like")
def random_like(e: Emitter, n: NodeCtx):
    dist = n.op[len("_random_"):-len("_like")]
    dtype = n.out_dtypes[0]
    if dtype not in ("float16", "float32", "float64"):
        raise n.fail(f"{n.op} of {dtype} data")
    drawn = _draw_dtype(dtype)
    op_type = "RandomUniformLike" if dist == "uniform" else "RandomNormalLike"
    y = e.one(op_type, [n.ins[0]], n.outs[0] if drawn == dtype else None,
              dtype=onnx_type(drawn), **_dist_attrs(n, dist))
    return [_finish(e, y, drawn, dtype, n.outs[0])]


@converts("_sample_uniform", "_sample_normal")
def sample_per_element(e: Emitter, n: NodeCtx):
    """``low + (high - low) * U`` / ``mu + sigma * N`` with the parameters viewed as
    ``params.shape + (1,) * len(shape)`` (symgraph's formulas)."""
    dist = n.op[len("_sample_"):]
    dtype = n.out_dtypes[0]
    drawn = _draw_dtype(dtype)
    extra = len(n.out_shapes[0]) - len(n.in_shapes[0])
    a, b = (e.cast(x, drawn) if t != drawn else x for x, t in zip(n.ins, n.in_dtypes))
    if extra:
        rank = len(n.in_shapes[0])
        a, b = (e.unsqueeze(x, list(range(rank, rank + extra))) for x in (a, b))
    shape = e.out_dims(n)
    if dist == "uniform":
        unit = _unit_like(e, n, shape, drawn)
        y = e.one("Add", [a, e.one("Mul", [e.one("Sub", [b, a]), unit])])
    else:
        zeros = e.one("ConstantOfShape", [shape])
        unit = e.one("RandomNormalLike", [zeros], dtype=onnx_type(drawn), mean=0.0, scale=1.0)
        y = e.one("Add", [a, e.one("Mul", [b, unit])])
    return [_finish(e, y, drawn, dtype, n.outs[0])]


@converts("_sample_multinomial")
def sample_multinomial(e: Emitter, n: NodeCtx):
    """symgraph's inverse-CDF draw: class ``i`` where ``cumsum[i - 1] <= u < cumsum[i]``
    with ``u ~ U[0, 1)``, i.e. the count of prefix sums ``<= u`` (rows need not sum to 1:
    ONNX's Multinomial would normalise them)."""
    data, shape = n.ins[0], n.in_shapes[0]
    k = shape[-1]
    drawn = "float64" if n.in_dtypes[0] == "float64" else "float32"
    per_row = math.prod(int(d) for d in n.p.shape)
    rows = e.one("Reshape", [data, e.ints([-1, k])])
    if n.in_dtypes[0] != drawn:
        rows = e.cast(rows, drawn)
    cums = e.one("CumSum", [rows, e.ints([1])])  # axis as a 1-element tensor (any opset)
    count = e.one("Concat", [e.dim_slice(rows, (math.prod(shape[:-1]), k), 0, 1),
                             e.ints([per_row])], axis=0)
    u = _unit_like(e, n, count, drawn)  # (rows, per_row)
    le = e.one("LessOrEqual", [e.unsqueeze(cums, [1]), e.unsqueeze(u, [2])])
    idx = e.reduce("ReduceSum", e.cast(le, "int64"), [2], keepdims=False)
    out_shape = e.out_dims(n)
    outs = [e.cast(e.one("Reshape", [idx, out_shape]), n.out_dtypes[0], n.outs[0])]
    if n.p.get_prob:  # log of the drawn class's probability (index clamped as symgraph)
        safe = e.one("Min", [idx, e.ints([k - 1])])
        logp = e.one("Log", [e.one("GatherElements", [rows, safe], axis=1)])
        outs.append(e.cast(e.one("Reshape", [logp, out_shape]), n.out_dtypes[1], n.outs[1]))
    return outs
