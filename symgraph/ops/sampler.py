"""Spatial transformer ops: GridGenerator, BilinearSampler and SpatialTransformer.

- ``GridGenerator`` (a composite) makes a sampling grid (N, 2, H, W) of normalised source
  coordinates in [-1, 1] (x in channel 0, y in channel 1). ``affine``: ``data`` (N, 6) is a
  2x3 matrix per sample applied to the target pixel grid ``(x_j, y_i, 1)`` with
  ``x_j = -1 + 2 j / (W - 1)`` (a ``dot`` with that 3 x HW basis); ``warp``: ``data`` is an
  optical flow (N, 2, H, W) and the grid is ``(flow + pixel) / ((size - 1) / 2) - 1``.
- ``BilinearSampler`` (a primitive, ``kernels/sampling.py``) samples ``data`` (N, C, H, W)
  at the grid with bilinear weights, pixels outside the image reading as 0; its gradient
  goes to both the data and the grid.
- ``SpatialTransformer`` (a composite) is ``BilinearSampler(data, GridGenerator(loc))`` with
  an affine transform, MXNet's only supported form.

>>> import symgraph as mx
>>> grid = mx.nd.GridGenerator(mx.nd.array([[1, 0, 0, 0, 1, 0]]), transform_type='affine',
...                            target_shape=(2, 3))
>>> grid.asnumpy()[0, 0]
array([[-1.,  0.,  1.],
       [-1.,  0.,  1.]], dtype=float32)
>>> data = mx.nd.arange(6).reshape((1, 1, 2, 3))
>>> mx.nd.BilinearSampler(data, grid).asnumpy()[0, 0]
array([[0., 1., 2.],
       [3., 4., 5.]], dtype=float32)
"""
from __future__ import annotations

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, register


def _step(size: int) -> float:
    """``2 / (size - 1)``, MXNet's normalised pixel spacing (inf for a single pixel)."""
    return 2.0 / (size - 1) if size > 1 else float("inf")


def _affine_grid(b, p, theta):
    """dot(theta as (2N, 3), the (3, H*W) basis of target pixels) as (N, 2, H, W)."""
    h, w = p.target_shape
    corner = b.op("slice_axis", b.op("slice_axis", theta, axis=0, begin=0, end=1, name="row"),
                  axis=1, begin=0, end=1, name="corner")
    plane = b.op("broadcast_to", corner, shape=(h, w), name="plane")  # theta's dtype
    xs = b.op("_contrib_arange_like", plane, axis=1, start=-1.0, step=_step(w), name="xs")
    xs = b.op("broadcast_to", b.op("Reshape", xs, shape=(1, -1), name="xrow"), shape=(h, w),
              name="xplane")
    ys = b.op("_contrib_arange_like", plane, start=-1.0, step=_step(h), repeat=w, name="ys")
    ones = b.op("_contrib_arange_like", plane, start=1.0, step=0.0, name="ones")
    rows = [b.op("Reshape", t, shape=(1, -1), name="basis_row") for t in (xs, ys, ones)]
    basis = b.op("Concat", *rows, dim=0, num_args=3, name="basis")
    flat = b.op("dot", b.op("Reshape", theta, shape=(-1, 3), name="theta"), basis, name="dot")
    return b.op("Reshape", flat, shape=(-1, 2, h, w), name="grid")


def _warp_grid(b, flow):
    """(flow + pixel index) / ((size - 1) / 2) - 1 per channel (x: width, y: height)."""
    parts = []
    for channel, axis, shape in ((0, 3, (1, 1, 1, -1)), (1, 2, (1, 1, -1, 1))):
        f = b.op("slice_axis", flow, axis=1, begin=channel, end=channel + 1, name="flow")
        index = b.op("_contrib_arange_like", flow, axis=axis, name="pixels")
        half = b.op("_div_scalar", b.op("max", index, name="last"), scalar=2.0, name="half")
        shifted = b.op("broadcast_add", f, b.op("Reshape", index, shape=shape, name="pixel"),
                       name="shifted")
        scaled = b.op("broadcast_div", shifted, half, name="scaled")
        parts.append(b.op("_minus_scalar", scaled, scalar=1.0, name="normalised"))
    return b.op("Concat", *parts, dim=1, num_args=2, name="grid")


def _grid_decompose(b, p, ins):
    if p.transform_type == "affine":
        return [_affine_grid(b, p, ins[0])]
    return [_warp_grid(b, ins[0])]


def _target(p, op: str) -> tuple:
    if any(d <= 0 for d in p.target_shape):
        raise ShapeError(f"{op}: incorrect target_shape {tuple(p.target_shape)}: both sizes "
                         "must be > 0 for an affine transform")
    return tuple(p.target_shape)


def _grid_shape(p, shapes):
    x = shapes[0]
    if not x:
        return None
    if p.transform_type == "affine":
        if len(x) != 2 or (x[1] and x[1] != 6):
            raise ShapeError(f"GridGenerator: affine data should be (batch, 6), got {x}")
        return [x], [(x[0], 2) + _target(p, "GridGenerator")]
    if len(x) != 4 or (x[1] and x[1] != 2):
        raise ShapeError(f"GridGenerator: warp data (flow) should be (batch, 2, height, width), "
                         f"got {x}")
    return [x], [x]


register(OpDef(
    name="GridGenerator", decompose=_grid_decompose, infer_shape=_grid_shape,
    params=(Param("transform_type", "str", choices=("affine", "warp"),
                  doc="affine: data is (N, 6) matrices; warp: data is an (N, 2, H, W) flow."),
            Param("target_shape", "shape", (0, 0),
                  doc="Output (H, W); required for affine, ignored for warp.")),
    cases=(Case(((2, 6),), {"transform_type": "affine", "target_shape": (3, 4)}),
           Case(((1, 6),), {"transform_type": "affine", "target_shape": (5, 2)}),
           Case(((2, 2, 3, 4),), {"transform_type": "warp"})),
    doc="A sampling grid for BilinearSampler from affine matrices or an optical flow."))


# ---------------------------------------------------------------- BilinearSampler

def _sampler_shape(p, shapes):
    data, grid = shapes
    if data and len(data) != 4:
        raise ShapeError(f"BilinearSampler: data should be 4D in batch-num_filter-y-x, got {data}")
    if not data or not grid:
        return None
    if len(grid) != 4 or grid[1] != 2:
        raise ShapeError(f"BilinearSampler: grid should be (batch, 2, height, width), got {grid}")
    if data[0] != grid[0]:
        raise ShapeError(f"BilinearSampler: data {data} and grid {grid} differ in batch size")
    return shapes, [(data[0], data[1], grid[2], grid[3])]


def _sampler_forward(p, ins, aux, rt):
    from ..kernels.sampling import bilinear_sample_ref
    return (bilinear_sample_ref(ins[0], ins[1]),)


def triton_bilinear_sampler(p, ins, aux, rt):
    """BilinearSampler as one Triton gather-and-blend kernel."""
    from ..kernels.sampling import bilinear_sample
    return (bilinear_sample(ins[0], ins[1]),)


def _sampler_backward(p, ins, aux, rt):
    from ..kernels.sampling import bilinear_sample_backward_ref
    return bilinear_sample_backward_ref(*ins)


def triton_backward_bilinear_sampler(p, ins, aux, rt):
    """Both BilinearSampler gradients in one Triton launch (atomic adds into the data's)."""
    from ..kernels.sampling import bilinear_sample_backward
    return bilinear_sample_backward(*ins)


_SAMPLER_PARAMS = (Param("cudnn_off", "bool_or_none", None,
                         doc="Whether to turn cuDNN off (accepted, unused)."),)

register(OpDef(
    name="_backward_BilinearSampler", params=_SAMPLER_PARAMS, hidden=True,
    inputs=("ograd", "data", "grid"), outputs=("data_grad", "grid_grad"),
    infer_shape=lambda p, s: (s, [s[1], s[2]]) if s[1] and s[2] else None,
    forward=_sampler_backward, kernel=triton_backward_bilinear_sampler,
    doc="Gradients of BilinearSampler with respect to data and grid."))

register(OpDef(
    name="BilinearSampler", params=_SAMPLER_PARAMS, inputs=("data", "grid"),
    infer_shape=_sampler_shape, forward=_sampler_forward, kernel=triton_bilinear_sampler,
    gradient=lambda g, p, ins, outs, og: g.multi("_backward_BilinearSampler", og[0], *ins,
                                                 **p),
    cases=(Case(((2, 3, 4, 5), (2, 2, 3, 2)), low=-1.2, high=1.2),
           Case(((1, 2, 3, 3), (1, 2, 4, 4)), low=-0.9, high=0.9)),
    doc="Sample ``data`` bilinearly at ``grid`` (normalised x, y in [-1, 1]; zero outside)."))


# ---------------------------------------------------------------- SpatialTransformer

def _transformer_decompose(b, p, ins):
    grid = b.op("GridGenerator", ins[1], transform_type="affine",
                target_shape=p.target_shape, name="grid")
    return [b.op("BilinearSampler", ins[0], grid, name="sampler")]


def _transformer_shape(p, shapes):
    data, loc = shapes
    if data and len(data) != 4:
        raise ShapeError(f"SpatialTransformer: input data should be 4D in "
                         f"batch-num_filter-y-x, got {data}")
    if loc and (len(loc) != 2 or loc[1] != 6):
        raise ShapeError(f"SpatialTransformer: loc should be (batch, 6), got {loc}")
    if not data or not loc:
        return None
    return shapes, [(data[0], data[1]) + _target(p, "SpatialTransformer")]


register(OpDef(
    name="SpatialTransformer", inputs=("data", "loc"), decompose=_transformer_decompose,
    infer_shape=_transformer_shape,
    params=(Param("target_shape", "shape", (0, 0), doc="Output (H, W)."),
            Param("transform_type", "str", choices=("affine",), doc="Only affine."),
            Param("sampler_type", "str", choices=("bilinear",), doc="Only bilinear."),
            Param("cudnn_off", "bool_or_none", None, doc="Accepted, unused.")),
    cases=(Case(((2, 2, 5, 4), (2, 6)), {"target_shape": (3, 3), "transform_type": "affine",
                                         "sampler_type": "bilinear"}, low=-0.8, high=0.8),),
    doc="Affine spatial transformer: BilinearSampler of ``data`` at GridGenerator(``loc``)."))
