"""MultiBox (SSD) operators: ``MultiBoxPrior``, the anchor boxes of a feature map.

``MultiBoxPrior`` reads only its input's spatial size; its Triton kernel writes each anchor
from its flat index (fp32 arithmetic, as MXNet), and its gradient is zero.

>>> import symgraph as mx
>>> anchors = mx.nd.contrib.MultiBoxPrior(mx.nd.zeros((1, 3, 2, 2)), sizes=(0.5,))
>>> anchors.shape
(1, 4, 4)
>>> anchors[0, 0].asnumpy()
array([0. , 0. , 0.5, 0.5], dtype=float32)
"""
from __future__ import annotations

from ..attrs import Param
from ..base import AttrError, ShapeError
from .base import Case, OpDef, register


def _prior_check(p) -> None:
    if not p.sizes or not p.ratios:
        raise AttrError("MultiBoxPrior: sizes and ratios must not be empty")
    if len(p.steps) != 2 or len(p.offsets) != 2:
        raise AttrError(f"MultiBoxPrior: steps and offsets take 2 values (y, x), got "
                        f"steps={p.steps} offsets={p.offsets}")
    if not all(0.0 <= o <= 1.0 for o in p.offsets):
        raise AttrError(f"MultiBoxPrior: offsets must lie in [0, 1], got {p.offsets}")
    if p.steps[0] * p.steps[1] < 0:
        raise AttrError(f"MultiBoxPrior: must specify both step_y and step_x, got {p.steps}")


def _prior_shape(p, shapes):
    data = shapes[0]
    if not data:
        return None
    if len(data) < 4:
        raise ShapeError(f"MultiBoxPrior: input data should be 4D (batch, channel, y, x), got "
                         f"shape {tuple(data)}")
    if not data[2] or not data[3]:
        return None
    return shapes, [(1, data[2] * data[3] * (len(p.sizes) + len(p.ratios) - 1), 4)]


def _args(p) -> dict:
    return {"sizes": p.sizes, "ratios": p.ratios, "clip": p.clip, "steps": p.steps,
            "offsets": p.offsets}


def _prior_forward(p, ins, aux, rt):
    from kernels.multibox import multibox_prior_ref
    return (multibox_prior_ref(ins[0], **_args(p)),)


def triton_multibox_prior(p, ins, aux, rt):
    from kernels.multibox import multibox_prior
    return (multibox_prior(ins[0], **_args(p)),)


register(OpDef(
    name="_contrib_MultiBoxPrior", infer_shape=_prior_shape, forward=_prior_forward,
    kernel=triton_multibox_prior, check=_prior_check,
    gradient=lambda g, p, ins, outs, og: [g.zeros(ins[0])],
    params=(Param("sizes", "floats", (1.0,), doc="Anchor sizes (fractions of the image)."),
            Param("ratios", "floats", (1.0,), doc="Anchor aspect ratios."),
            Param("clip", "bool", False, doc="Clip the boxes to [0, 1]."),
            Param("steps", "floats", (-1.0, -1.0),
                  doc="Anchor step (y, x); -1 for 1 / feature size."),
            Param("offsets", "floats", (0.5, 0.5), doc="Centre offsets (y, x) in a cell.")),
    cases=(Case(((1, 2, 3, 4),), {"sizes": (0.5, 0.2), "ratios": (1, 2)}, grad=False),
           Case(((2, 1, 2, 3),), {"sizes": (0.7,), "ratios": (1, 0.5, 3), "clip": True,
                                  "steps": (0.3, 0.2), "offsets": (0.2, 0.9)}, grad=False)),
    doc="""Anchor boxes for every cell of NCHW ``data``: (1, H * W * A, 4) corner boxes.

    Per cell, ``A = len(sizes) + len(ratios) - 1`` anchors: the first ratio with every
    size, then the first size with every other ratio; width ``size * H / W * sqrt(ratio)``,
    height ``size / sqrt(ratio)``, centred at ``((x + offsets[1]) * steps[1], (y +
    offsets[0]) * steps[0])``. The gradient is zero.

    Examples
    --------
    >>> import symgraph as mx
    >>> x = mx.sym.Variable('x')
    >>> mx.sym.contrib.MultiBoxPrior(x, sizes=(0.5, 0.25), ratios=(1, 2)).infer_shape(
    ...     x=(1, 3, 4, 4))[1]
    [(1, 48, 4)]
    """))
