"""Resizing NCHW data: ``contrib.BilinearResize2D`` and ``contrib.AdaptiveAvgPooling2D``.

Both are primitives with kernels in ``kernels/sampling.py``; MXNet's sampling rules:

- BilinearResize2D reads output row ``i`` from source row ``s * i`` (``align_corners``,
  ``s = (H - 1) / (OH - 1)``) or ``max(s * (i + 0.5) - 0.5, 0)`` (``s = H / OH``), in fp32,
  blending rows ``floor`` and ``floor + 1`` (the last row with itself); columns alike. The
  output size comes from ``mode``: ``size`` (``height``/``width``, or the input size times
  ``scale_height``/``scale_width``), ``odd_scale``, ``like`` (a second input's size),
  ``to_even_down``, ``to_even_up``, ``to_odd_down``, ``to_odd_up``.
- AdaptiveAvgPooling2D averages, for output ``o`` of an axis of size ``OH``, the rows
  ``[floor(o * H / OH), ceil((o + 1) * H / OH))``; ``output_size`` is one int (square),
  two, or empty (1 x 1).

>>> import symgraph as mx
>>> x = mx.nd.array([[[[1, 2], [3, 4]]]])
>>> mx.nd.contrib.BilinearResize2D(x, height=3, width=3).asnumpy()[0, 0]
array([[1. , 1.5, 2. ],
       [2. , 2.5, 3. ],
       [3. , 3.5, 4. ]], dtype=float32)
>>> mx.nd.contrib.AdaptiveAvgPooling2D(x, output_size=1).asnumpy()
array([[[[2.5]]]], dtype=float32)
"""
from __future__ import annotations

import numpy as np

from ..attrs import Param
from ..base import AttrError, ShapeError
from .base import Case, OpDef, register


def _scaled(size: int, scale: float) -> int:
    """``int(size * scale)`` in fp32, as MXNet's shape rule computes it."""
    return int(np.float32(size) * np.float32(scale))


def _scales(p) -> tuple[float, float]:
    if p.scale_height is None or p.scale_width is None:
        raise AttrError(f"BilinearResize2D: mode '{p.mode}' with scale_height="
                        f"{p.scale_height} needs both scale_height and scale_width")
    return p.scale_height, p.scale_width


def _odd_scaled(size: int, scale: float) -> int:
    return _scaled(size, scale) if size % 2 == 0 else _scaled(size - 1, scale) + 1


_PARITY = {"to_even_down": (0, -1), "to_even_up": (0, 1), "to_odd_down": (1, -1),
           "to_odd_up": (1, 1)}


def _resize_hw(p, data: tuple, like: tuple) -> tuple | None:
    """The output (height, width) for input ``data`` (None: not known yet)."""
    h, w = data[2], data[3]
    if p.mode == "size":
        if p.scale_height is None:
            return p.height, p.width
        sh, sw = _scales(p)
        return _scaled(h, sh), _scaled(w, sw)
    if p.mode == "odd_scale":
        sh, sw = _scales(p)
        return _odd_scaled(h, sh), _odd_scaled(w, sw)
    if p.mode == "like":
        return (like[2], like[3]) if like else None
    parity, step = _PARITY[p.mode]
    return tuple(d if d % 2 == parity else d + step for d in (h, w))


def _resize_shape(p, shapes):
    data, like = shapes[0], (shapes[1] if len(shapes) > 1 else ())
    for name, s in (("data", data), ("like", like)):
        if s and len(s) != 4:
            raise ShapeError(f"BilinearResize2D: {name} should be 4D (NCHW), got {s}")
    if not data:
        return None
    hw = _resize_hw(p, data, like)
    if hw is None:
        return None
    if min(hw) <= 0:
        raise ShapeError(f"BilinearResize2D: output size {hw} of input {data} (mode "
                         f"'{p.mode}') must be positive")
    return shapes, [(data[0], data[1]) + tuple(hw)]


def _resize_forward(p, ins, aux, rt):
    from ..kernels.sampling import bilinear_resize_ref
    hw = _resize_shape(p, [tuple(t.shape) for t in ins])[1][0][2:]
    return (bilinear_resize_ref(ins[0], hw, p.align_corners),)


def triton_bilinear_resize(p, ins, aux, rt):
    """BilinearResize2D as one Triton kernel."""
    from ..kernels.sampling import bilinear_resize
    hw = _resize_shape(p, [tuple(t.shape) for t in ins])[1][0][2:]
    return (bilinear_resize(ins[0], hw, p.align_corners),)


def _resize_backward(p, ins, aux, rt):
    from ..kernels.sampling import bilinear_resize_backward_ref
    return (bilinear_resize_backward_ref(ins[0], ins[1], p.align_corners),)


def triton_backward_bilinear_resize(p, ins, aux, rt):
    """The BilinearResize2D data gradient: Triton zero fill and atomic adds."""
    from ..kernels.sampling import bilinear_resize_backward
    return (bilinear_resize_backward(ins[0], ins[1], p.align_corners),)


def _resize_gradient(g, p, ins, outs, og):
    dx = g.op("_backward_contrib_BilinearResize2D", og[0], ins[0], **p)
    return [dx] + [g.zeros(t) for t in ins[1:]]  # MXNet writes zeros for ``like``


_RESIZE_PARAMS = (
    Param("height", "int", 1, lower=1, doc="Output height (mode 'size' without scales)."),
    Param("width", "int", 1, lower=1, doc="Output width (mode 'size' without scales)."),
    Param("scale_height", "float_or_none", None, doc="Height scale (modes size, odd_scale)."),
    Param("scale_width", "float_or_none", None, doc="Width scale (modes size, odd_scale)."),
    Param("mode", "str", "size", choices=("size", "odd_scale", "like", "to_even_down",
                                          "to_even_up", "to_odd_down", "to_odd_up"),
          doc="How the output size is chosen."),
    Param("align_corners", "bool", True, doc="Align the corner pixels' centres."),
)


def _grad_shape(p, s):
    return (s, [s[1]]) if s[1] else None


register(OpDef(
    name="_backward_contrib_BilinearResize2D", params=_RESIZE_PARAMS, hidden=True,
    inputs=("ograd", "data"), outputs=("data_grad",), infer_shape=_grad_shape,
    forward=_resize_backward, kernel=triton_backward_bilinear_resize,
    doc="Gradient of BilinearResize2D with respect to its data."))

register(OpDef(
    name="_contrib_BilinearResize2D", params=_RESIZE_PARAMS,
    inputs=lambda p: ["data", "like"] if p.mode == "like" else ["data"],
    infer_shape=_resize_shape, forward=_resize_forward, kernel=triton_bilinear_resize,
    gradient=_resize_gradient,
    cases=(Case(((2, 3, 4, 5),), {"height": 7, "width": 3}),
           Case(((1, 2, 5, 4),), {"height": 3, "width": 9, "align_corners": False}),
           Case(((1, 2, 3, 5),), {"scale_height": 1.5, "scale_width": 0.6}),
           Case(((1, 1, 5, 3),), {"scale_height": 2.0, "scale_width": 0.5, "mode": "odd_scale"}),
           Case(((1, 2, 3, 4), (1, 1, 6, 2)), {"mode": "like", "align_corners": False}),
           Case(((1, 1, 3, 4),), {"mode": "to_odd_up"})),
    doc="Resize NCHW data bilinearly to the size ``mode`` picks (MXNet's sampling rules)."))


# ---------------------------------------------------------------- AdaptiveAvgPooling2D

def _pool_hw(p) -> tuple:
    size = tuple(p.output_size)
    if len(size) == 1:
        return size * 2
    return size if len(size) == 2 else (1, 1)


def _pool_shape(p, shapes):
    data = shapes[0]
    if not data:
        return None
    if len(data) != 4:
        raise ShapeError(f"AdaptiveAvgPooling2D: data should be 4D (NCHW), got {data}")
    hw = _pool_hw(p)
    if min(hw) <= 0:
        raise ShapeError(f"AdaptiveAvgPooling2D: output_size {tuple(p.output_size)} must be "
                         "positive")
    return shapes, [(data[0], data[1]) + hw]


def _pool_forward(p, ins, aux, rt):
    from ..kernels.sampling import adaptive_avg_pool_ref
    return (adaptive_avg_pool_ref(ins[0], _pool_hw(p)),)


def triton_adaptive_avg_pool(p, ins, aux, rt):
    """AdaptiveAvgPooling2D as one Triton kernel (a window loop per output)."""
    from ..kernels.sampling import adaptive_avg_pool
    return (adaptive_avg_pool(ins[0], _pool_hw(p)),)


def _pool_backward(p, ins, aux, rt):
    from ..kernels.sampling import adaptive_avg_pool_backward_ref
    return (adaptive_avg_pool_backward_ref(ins[0], ins[1]),)


def triton_backward_adaptive_avg_pool(p, ins, aux, rt):
    """The AdaptiveAvgPooling2D gradient: Triton zero fill and atomic adds."""
    from ..kernels.sampling import adaptive_avg_pool_backward
    return (adaptive_avg_pool_backward(ins[0], ins[1]),)


_POOL_PARAMS = (Param("output_size", "shape", (),
                      doc="Output (H, W); one int for a square, empty for 1 x 1."),)

register(OpDef(
    name="_backward_contrib_AdaptiveAvgPooling2D", params=_POOL_PARAMS, hidden=True,
    inputs=("ograd", "data"), outputs=("data_grad",), infer_shape=_grad_shape,
    forward=_pool_backward, kernel=triton_backward_adaptive_avg_pool,
    doc="Gradient of AdaptiveAvgPooling2D with respect to its data."))

register(OpDef(
    name="_contrib_AdaptiveAvgPooling2D", params=_POOL_PARAMS, infer_shape=_pool_shape,
    forward=_pool_forward, kernel=triton_adaptive_avg_pool,
    gradient=lambda g, p, ins, outs, og: [
        g.op("_backward_contrib_AdaptiveAvgPooling2D", og[0], ins[0], **p)],
    cases=(Case(((2, 3, 5, 7),), {"output_size": (3, 2)}),
           Case(((1, 2, 4, 4),), {"output_size": 3}),
           Case(((1, 2, 3, 5),))),
    doc="Average pooling to a fixed output size (windows of MXNet's adaptive rule)."))
