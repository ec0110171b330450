"""Correlation: FlowNet's correlation of two feature maps over a window of displacements.

``data1`` and ``data2`` are (N, C, H, W); the output (N, (2R + 1)^2, OH, OW) holds, per
displacement ``(dy, dx)`` on a grid of step ``stride2`` up to ``max_displacement`` (``R =
max_displacement // stride2``), the mean over a ``kernel_size`` window and the channels of
``data1 * data2`` shifted (``is_multiply``) or of ``|data1 - data2|``; both inputs are
zero-padded by ``pad_size`` first. The rules and kernels are in ``kernels/correlation.py``.

>>> import symgraph as mx
>>> a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
>>> c = mx.sym.Correlation(a, b, kernel_size=1, max_displacement=2, stride2=2, pad_size=2)
>>> c.infer_shape(a=(1, 3, 5, 6), b=(1, 3, 5, 6))[1]
[(1, 9, 5, 6)]
"""
from __future__ import annotations

from ..attrs import Param
from ..base import AttrError, ShapeError
from .base import Case, OpDef, register


def _args(p) -> tuple:
    return (p.kernel_size, p.max_displacement, p.stride1, p.stride2, p.pad_size)


def _check(p) -> None:
    if p.kernel_size % 2 == 0:
        raise AttrError(f"Correlation: kernel size should be odd number, got {p.kernel_size}")


def _shape(p, shapes):
    a, b = shapes
    for name, s in (("data1", a), ("data2", b)):
        if s and len(s) != 4:
            raise ShapeError(f"Correlation: {name} should be a 4D tensor, got {s}")
    if a and b and a != b:
        raise ShapeError(f"Correlation: data1 {a} and data2 {b} must have the same shape")
    x = a or b
    if not x:
        return None
    from ..kernels.correlation import corr_geometry
    t, oh, ow = corr_geometry(x, *_args(p)[:4], p.pad_size)
    if oh < 1 or ow < 1:
        raise ShapeError(f"Correlation cannot be done with current settings: neighborhood and "
                         f"kernel don't fit in blob {x} (max_displacement={p.max_displacement}, "
                         f"kernel_size={p.kernel_size}, pad_size={p.pad_size})")
    return [x, x], [(x[0], t, oh, ow)]


def _forward(p, ins, aux, rt):
    from ..kernels.correlation import correlation_ref
    return (correlation_ref(*ins, _args(p), p.is_multiply),)


def triton_correlation(p, ins, aux, rt):
    """Correlation as one Triton kernel (a window x channel sum per output)."""
    from ..kernels.correlation import correlation
    return (correlation(*ins, _args(p), p.is_multiply),)


def _backward(p, ins, aux, rt):
    from ..kernels.correlation import correlation_backward_ref
    return correlation_backward_ref(*ins, _args(p), p.is_multiply)


def triton_backward_correlation(p, ins, aux, rt):
    """Both Correlation gradients in one Triton launch (atomic adds)."""
    from ..kernels.correlation import correlation_backward
    return correlation_backward(*ins, _args(p), p.is_multiply)


_PARAMS = (
    Param("kernel_size", "int", 1, lower=1, doc="Odd size of the comparison window."),
    Param("max_displacement", "int", 1, lower=0, doc="Largest displacement compared."),
    Param("stride1", "int", 1, lower=1, doc="Stride over data1's positions."),
    Param("stride2", "int", 1, lower=1, doc="Step of the displacement grid."),
    Param("pad_size", "int", 0, lower=0, doc="Zero padding of both inputs."),
    Param("is_multiply", "bool", True, doc="Multiply (True) or absolute difference."),
)

register(OpDef(
    name="_backward_Correlation", params=_PARAMS, hidden=True,
    inputs=("ograd", "data1", "data2"), outputs=("data1_grad", "data2_grad"),
    infer_shape=lambda p, s: (s, [s[1], s[2]]) if s[1] and s[2] else None,
    forward=_backward, kernel=triton_backward_correlation,
    doc="Gradients of Correlation with respect to both inputs."))

register(OpDef(
    name="Correlation", params=_PARAMS, inputs=("data1", "data2"), infer_shape=_shape,
    forward=_forward, kernel=triton_correlation, check=_check,
    gradient=lambda g, p, ins, outs, og: g.multi("_backward_Correlation", og[0], *ins, **p),
    cases=(Case(((1, 2, 5, 6), (1, 2, 5, 6)), {"kernel_size": 3, "max_displacement": 1,
                                               "pad_size": 2}),
           Case(((2, 3, 4, 5), (2, 3, 4, 5)), {"max_displacement": 2, "stride1": 2,
                                               "stride2": 2, "pad_size": 1,
                                               "is_multiply": False})),
    doc="Correlation of two feature maps over displacements (FlowNet)."))
