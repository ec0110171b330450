"""Writing into a box of an array: ``_slice_assign`` (``_crop_assign``),
``_slice_assign_scalar`` (``_crop_assign_scalar``) and ``_set_value``.

``_slice_assign(lhs, rhs, begin, end, step)`` is a copy of ``lhs`` with ``rhs`` written
into the box ``slice`` would cut out (MXNet's ``x[1:3] = y``); ``_slice_assign_scalar``
fills the box with ``scalar``. Called with ``out=lhs`` (as MXNet's NDArray does) they
assign in place. ``_set_value(src=v, out=x)`` fills all of ``x`` with ``v`` (MXNet's
legacy NDArray function: its output shape is ``out``'s, or ``shape`` in a graph). MXNet
registers no gradient for them; symgraph gives the assignments one (the box's gradient goes
to ``rhs``, the rest to ``lhs``) so code recorded under autograd differentiates through
them. Each is one Triton copy (plus the box write).

>>> import symgraph as mx
>>> x = mx.nd.zeros((3, 4))
>>> _ = mx.nd._internal._slice_assign(x, mx.nd.ones((2, 2)), begin=(0, 1), end=(2, 3),
...                                   out=x)
>>> x.asnumpy()
array([[0., 1., 1., 0.],
       [0., 1., 1., 0.],
       [0., 0., 0., 0.]], dtype=float32)
>>> mx.nd._internal._slice_assign_scalar(x, scalar=5, begin=(None, 3), end=(None, None),
...                                      step=(2, 1)).asnumpy()[:, 3]
array([5., 0., 5.], dtype=float32)
>>> _ = mx.nd._internal._set_value(src=2.5, out=x)
>>> float(x.asnumpy().sum())
30.0
>>> mx.nd._internal._slice_assign(x, mx.nd.ones((3, 2)), begin=(0, 1), end=(2, 3))
... # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
ShapeError: _slice_assign: input 'rhs' has shape (3, 2), the box (0, 1):(2, 3) of lhs ...
"""
from __future__ import annotations

import torch

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, register
from .slicing import _SLICE_PARAMS, _gather, _slice_shape, _starts_steps, slice_ranges


def _box_shape(p, lhs: tuple) -> tuple:
    """The shape of the box ``begin:end:step`` of ``lhs`` (slice's rules and errors)."""
    return tuple(_slice_shape(p, [lhs])[1][0])


def _assign_shape(p, shapes):
    lhs, rhs = shapes
    if not lhs:
        return None
    box = _box_shape(p, lhs)
    if rhs and tuple(rhs) != box:
        raise ShapeError(f"_slice_assign: input 'rhs' has shape {tuple(rhs)}, the box "
                         f"{p.begin}:{p.end} (step {p.step or None}) of lhs {tuple(lhs)} has "
                         f"shape {box}")
    return [lhs, box], [lhs]


def _scalar_shape(p, shapes):
    if not shapes[0]:
        return None
    _box_shape(p, shapes[0])
    return shapes, [shapes[0]]


def _reference(p, base: torch.Tensor, value) -> torch.Tensor:
    """``base`` with ``value`` written into the box (negative steps included)."""
    ranges = slice_ranges(p, tuple(base.shape))
    index = torch.arange(base.numel(), device=base.device).reshape(base.shape)
    flat = _gather(index, ranges).reshape(-1)
    out = base.clone().reshape(-1)
    out[flat] = value.reshape(-1) if torch.is_tensor(value) else torch.tensor(
        float(value), dtype=base.dtype)
    return out.reshape(base.shape)


def _triton(p, base: torch.Tensor, value) -> torch.Tensor:
    from ..kernels.copy import slice_assign
    return slice_assign(base, value, *_starts_steps(slice_ranges(p, tuple(base.shape))))


def _box(p) -> dict:
    return {"begin": p.begin, "end": p.end, "step": p.step}


def _assign_grad(g, p, ins, outs, og):
    """lhs keeps the gradient outside the box, rhs takes the box's (MXNet registers no
    gradient; symgraph has one so recorded code differentiates through assignments)."""
    return [g.op("_slice_assign_scalar", og[0], scalar=0.0, **_box(p)),
            g.op("slice", og[0], **_box(p))]


register(OpDef(
    name="_slice_assign", aliases=("_crop_assign",), inputs=("lhs", "rhs"),
    params=_SLICE_PARAMS, infer_shape=_assign_shape, gradient=_assign_grad,
    forward=lambda p, ins, aux, rt: (_reference(p, ins[0], ins[1]),),
    kernel=lambda p, ins, aux, rt: (_triton(p, ins[0], ins[1]),),
    cases=(Case(((3, 4, 5), (2, 2, 5)), {"begin": (0, 1), "end": (2, 3)}),
           Case(((4, 5), (2, 2)), {"begin": (-1, 4), "end": (-5, 0), "step": (-2, -3)})),
    doc="""A copy of ``lhs`` with ``rhs`` written into the box ``begin:end:step``
    (``slice``'s indexing rules; ``rhs`` has the box's shape)."""))

register(OpDef(
    name="_slice_assign_scalar", aliases=("_crop_assign_scalar",),
    params=(Param("scalar", "float", 0.0, doc="The value written into the box."),
            *_SLICE_PARAMS),
    infer_shape=_scalar_shape,
    gradient=lambda g, p, ins, outs, og: [
        g.op("_slice_assign_scalar", og[0], scalar=0.0, **_box(p))],
    forward=lambda p, ins, aux, rt: (_reference(p, ins[0], p.scalar),),
    kernel=lambda p, ins, aux, rt: (_triton(p, ins[0], p.scalar),),
    cases=(Case(((3, 4),), {"scalar": 2.5, "begin": (1,), "end": (None,)}),
           Case(((4, 3, 2),), {"begin": (None, 2), "end": (None, 0), "step": (3, -1)})),
    doc="""A copy of ``data`` with ``scalar`` written into the box ``begin:end:step``."""))


def _set_value_shape(p, shapes):
    return ([], [tuple(p.shape)]) if p.shape else None


def _set_value_forward(p, ins, aux, rt):
    return (torch.full(tuple(p.shape), p.src, dtype=torch.float32, device=rt.device),)


def triton_set_value(p, ins, aux, rt):
    """_set_value as one Triton fill."""
    from ..kernels.copy import fill
    return (fill(torch.empty(tuple(p.shape), device=rt.device), p.src),)


register(OpDef(
    name="_set_value", inputs=(), differentiable=False,
    params=(Param("src", "float", doc="The value every element takes."),
            Param("shape", "shape", (), doc="The output shape in a graph (symgraph; "
                  "imperatively ``out=``'s shape, as in MXNet).")),
    infer_shape=_set_value_shape, infer_type=lambda p, t: ([], ["float32"]),
    forward=_set_value_forward, kernel=triton_set_value,
    cases=(Case((), {"src": -1.5, "shape": (2, 3)}, grad=False),),
    doc="""Fill ``out`` with ``src`` (``mx.nd._internal._set_value(src=v, out=x)``)."""))
