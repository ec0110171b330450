"""InstanceNorm: per-sample, per-channel normalisation over the spatial axes (a composite).

With ``x`` of shape (N, C, ...) viewed as (N, C, S) and statistics over S::

    out = (x - mean) / sqrt(var + eps) * gamma[c] + beta[c]      (biased variance)

>>> import symgraph as mx
>>> net = mx.sym.InstanceNorm(mx.sym.Variable('x'), name='in0')
>>> net.list_arguments()
['x', 'in0_gamma', 'in0_beta']
>>> net.infer_shape(x=(2, 3, 4, 4))[0]
[(2, 3, 4, 4), (3,), (3,)]
"""
from __future__ import annotations

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, merge_shape, register


def normalise(b, x3, eps: float, name: str = ""):
    """``(x3 - mean) / sqrt(var + eps)`` over axis 2 of an (N, G, S) value; also the
    keepdims mean and std (shared with GroupNorm)."""
    mean = b.op("mean", x3, axis=(2,), keepdims=True, name=f"{name}mean")
    centred = b.op("broadcast_sub", x3, mean, name=f"{name}centred")
    var = b.op("mean", b.op("square", centred), axis=(2,), keepdims=True, name=f"{name}var")
    std = b.op("sqrt", b.op("_plus_scalar", var, scalar=eps), name=f"{name}std")
    return b.op("broadcast_div", centred, std, name=f"{name}xhat"), mean, std


def affine(b, xhat, gamma, beta, like):
    """``xhat * gamma + beta`` with per-axis-1 ``gamma``/``beta``, reshaped like ``like``."""
    g = b.op("Reshape", gamma, shape=(1, -1, 1), name="gamma3")
    be = b.op("Reshape", beta, shape=(1, -1, 1), name="beta3")
    out = b.op("broadcast_add", b.op("broadcast_mul", xhat, g), be)
    return b.op("reshape_like", out, like)


def _decompose(b, p, ins):
    x, gamma, beta = ins
    xhat, _, _ = normalise(b, b.op("Reshape", x, shape=(0, 0, -1), name="data3"), p.eps)
    return [affine(b, xhat, gamma, beta, x)]


def channel_params_shape(op: str, groups):
    """Shape rule of (data, gamma, beta) -> data with gamma/beta of length ``groups(p, x)``."""
    def rule(p, shapes):
        x = shapes[0]
        if not x:
            return None
        if len(x) < 3:
            raise ShapeError(f"{op} expects an input of at least 3 dimensions (N, C, ...), "
                             f"got {x}")
        n = groups(p, x)
        vec = (n,)
        return [x, merge_shape(shapes[1], vec, "input 'gamma'"),
                merge_shape(shapes[2], vec, "input 'beta'")], [x]
    return rule


register(OpDef(
    name="InstanceNorm", inputs=("data", "gamma", "beta"), decompose=_decompose,
    infer_shape=channel_params_shape("InstanceNorm", lambda p, x: x[1]),
    params=(Param("eps", "float", 1e-3, doc="Epsilon added to the variance."),),
    cases=(Case(((2, 3, 4, 5), (3,), (3,))), Case(((2, 2, 7), (2,), (2,)), {"eps": 0.1})),
    doc="Instance normalisation: each (sample, channel) normalised over its spatial axes, "
        "then scaled by ``gamma`` and shifted by ``beta`` per channel."))
