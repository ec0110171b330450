"""DeformableConvolution (v1) and ModulatedDeformableConvolution (v2), MXNet 1.9.1's
``_contrib_`` operators, as composites around one primitive, ``_deformable_im2col``.

Shapes (2-D kernels only, as MXNet), ``K = C * kh * kw``, ``DG = num_deformable_group``::

    data   (N, C, H, W)
    offset (N, 2 * DG * kh * kw, HO, WO)   (h, w) pairs per kernel tap
    mask   (N, DG * kh * kw, HO, WO)       v2 only
    weight (num_filter, C / num_group, kh, kw), bias (num_filter,)
    out    (N, num_filter, HO, WO), HO, WO as Convolution's

The primitive samples the columns ``col`` (K, N, HO, WO) bilinearly at the offset positions
(``kernels/deformable.py`` states the sampling rules of v1 and v2); the rest is a grouped
GEMM over registered ops::

    out = transpose(batch_dot(weight as (G, F / G, K / G), col as (G, K / G, N * HO * WO)))
          + bias

so the weight and bias gradients are the GEMM's, and the data, offset and mask gradients
come from ``_backward_deformable_im2col`` (the derivatives MXNet's col2im and col2im_coord
compute). MXNet 1.9.1 runs v2's backward on GPU only; symgraph runs it everywhere.

>>> import symgraph as mx
>>> net = mx.sym.contrib.DeformableConvolution(mx.sym.Variable('data'),
...     mx.sym.Variable('offset'), kernel=(3, 3), num_filter=4, name='dc')
>>> net.list_arguments()
['data', 'offset', 'dc_weight', 'dc_bias']
>>> net.infer_shape(data=(2, 4, 5, 6), offset=(2, 18, 3, 4))[:2]
([(2, 4, 5, 6), (2, 18, 3, 4), (4, 4, 3, 3), (4,)], [(2, 4, 3, 4)])
"""
from __future__ import annotations

from ..attrs import Param
from ..base import AttrError, ShapeError
from .base import Case, OpDef, register
from .convolution import spatial, tshape


def _geometry(p) -> tuple[int, ...]:
    """(kh, kw, sh, sw, ph, pw, dh, dw) with MXNet's defaults filled in."""
    (sh, sw), (ph, pw), (dh, dw) = (spatial(p, "stride", 1), spatial(p, "pad", 0),
                                    spatial(p, "dilate", 1))
    return (*p.kernel, sh, sw, ph, pw, dh, dw)


def _out_hw(p, data, op: str) -> tuple[int, int]:
    kh, kw, sh, sw, ph, pw, dh, dw = _geometry(p)
    out = []
    for size, k, s, pad, d in ((data[2], kh, sh, ph, dh), (data[3], kw, sw, pw, dw)):
        if k > size + 2 * pad:
            raise ShapeError(f"{op}: kernel size exceed input: kernel {tshape(p.kernel)}, "
                             f"padded input {size + 2 * pad} (data {tshape(data)})")
        out.append((size + 2 * pad - (d * (k - 1) + 1)) // s + 1)
    return out[0], out[1]


# ---------------------------------------------------------------- the im2col primitive

def _col_inputs(p) -> list[str]:
    return ["data", "offset", "mask"] if p.modulated else ["data", "offset"]


def _col_shape(p, shapes):
    data = shapes[0]
    if not data:
        return None
    ho, wo = _out_hw(p, data, "_deformable_im2col")
    kk = p.kernel[0] * p.kernel[1]
    want = [data, (data[0], 2 * p.num_deformable_group * kk, ho, wo)]
    if p.modulated:
        want.append((data[0], p.num_deformable_group * kk, ho, wo))
    return want, [(data[1] * kk, data[0], ho, wo)]


def _col_args(p, ins):
    mask = ins[2] if p.modulated else None
    return ins[0], ins[1], mask, _geometry(p), p.num_deformable_group


def _col_forward(p, ins, aux, rt):
    from ..kernels.deformable import deformable_im2col_ref
    return (deformable_im2col_ref(*_col_args(p, ins)),)


def _col_kernel(p, ins, aux, rt):
    """Triton kernel: one lane per column element (bilinear sample, times the mask)."""
    from ..kernels.deformable import deformable_im2col
    return (deformable_im2col(*_col_args(p, ins)),)


def _col_backward_forward(p, ins, aux, rt):
    from ..kernels.deformable import deformable_col2im_ref
    return tuple(deformable_col2im_ref(ins[0], *_col_args(p, ins[1:])))


def _col_backward_kernel(p, ins, aux, rt):
    """Triton kernel: atomic scatter of dx, d offset and d mask in one launch."""
    from ..kernels.deformable import deformable_col2im
    return deformable_col2im(ins[0], *_col_args(p, ins[1:]))


_COL_PARAMS = (
    Param("kernel", "shape", doc="Kernel size (kh, kw)."),
    Param("stride", "shape", (), doc="Stride; defaults to (1, 1)."),
    Param("dilate", "shape", (), doc="Dilation; defaults to (1, 1)."),
    Param("pad", "shape", (), doc="Zero padding; defaults to (0, 0)."),
    Param("num_deformable_group", "int", 1, lower=1, doc="Deformable groups of channels."),
    Param("modulated", "bool", False, doc="v2: samples are multiplied by the mask input."),
)

register(OpDef(
    name="_backward_deformable_im2col", params=_COL_PARAMS, hidden=True,
    inputs=lambda p: ["ograd"] + _col_inputs(p),
    outputs=lambda p: [f"{n}_grad" for n in _col_inputs(p)],
    infer_shape=lambda p, s: (s, list(s[1:])) if all(s[1:]) else None,
    forward=_col_backward_forward, kernel=_col_backward_kernel,
    doc="Gradients of _deformable_im2col for data, offset (and mask)."))

register(OpDef(
    name="_deformable_im2col", params=_COL_PARAMS, hidden=True, inputs=_col_inputs,
    infer_shape=_col_shape, forward=_col_forward, kernel=_col_kernel,
    gradient=lambda g, p, ins, outs, og: g.multi("_backward_deformable_im2col", og[0], *ins,
                                                  **p),
    cases=(Case(((2, 4, 3, 4), (2, 24, 3, 3)),
                {"kernel": (3, 2), "stride": (1, 2), "pad": (1, 1), "dilate": (1, 1),
                 "num_deformable_group": 2}, low=-1.5, high=1.5),
           Case(((1, 3, 4, 5), (1, 18, 4, 5), (1, 9, 4, 5)),
                {"kernel": (3, 3), "pad": (1, 1), "modulated": True}, low=-1.5, high=1.5)),
    doc="Deformable im2col: columns (C*kh*kw, N, HO, WO) sampled at the offsets."))


# ---------------------------------------------------------------- the convolutions

def _inputs(p, modulated: bool) -> list[str]:
    names = ["data", "offset"] + (["mask"] if modulated else []) + ["weight"]
    return names if p.no_bias else names + ["bias"]


def _decompose(b, p, ins, modulated: bool):
    nin = 3 if modulated else 2
    weight = ins[nin]
    col = b.op("_deformable_im2col", *ins[:nin], kernel=p.kernel, stride=p.stride,
               dilate=p.dilate, pad=p.pad, num_deformable_group=p.num_deformable_group,
               modulated=modulated, name="im2col")
    g = p.num_group
    col3 = b.op("Reshape", b.op("Reshape", col, shape=(0, -1), name="col2"),
                shape=(-4, g, -1, 0), name="col3")
    w3 = b.op("Reshape", b.op("Reshape", weight, shape=(0, -1), name="weight2"),
              shape=(-4, g, -1, 0), name="weight3")
    prod = b.op("Reshape", b.op("batch_dot", w3, col3, name="gemm"), shape=(-3, 0),
                name="gemm2")
    out = b.op("reshape_like", prod, col, lhs_begin=1, lhs_end=2, rhs_begin=1, rhs_end=4,
               name="gemm4")
    out = b.op("transpose", out, axes=(1, 0, 2, 3), name="nchw")
    if p.no_bias:
        return [out]
    bias = b.op("Reshape", ins[nin + 1], shape=(1, -1, 1, 1), name="bias4")
    return [b.op("broadcast_add", out, bias, name="add_bias")]


def _check(p, op: str) -> None:
    if len(p.kernel) != 2:
        raise AttrError(f"{op}: only 2-D kernels are implemented (MXNet: not implemented), "
                        f"got kernel {tshape(p.kernel)}")
    for key in ("stride", "dilate", "pad"):
        if p[key] and len(p[key]) != 2:
            raise AttrError(f"{op}: {key} {tshape(p[key])} must have 2 entries like kernel")
    if p.layout not in ("None", "NCHW"):
        raise AttrError(f"{op}: layout {p.layout} is not supported; only NCHW (the default) "
                        "is, as in MXNet's 2-D operator")


def _check_shapes(p, op: str, data, offset, mask, out) -> None:
    kk = p.kernel[0] * p.kernel[1]
    dg = p.num_deformable_group
    if len(data) != 4:
        raise ShapeError(f"{op}: Input data should be 4D in batch-num_filter-y-x, got "
                         f"{tshape(data)}")
    if data[1] % p.num_group or p.num_filter % p.num_group:
        raise ShapeError(f"{op}: input channels {data[1]} and num_filter {p.num_filter} must "
                         f"divide num_group {p.num_group}")
    if data[1] % dg:
        raise ShapeError(f"{op}: input num_filter {data[1]} must divide deformable group "
                         f"size {dg}")
    for name, got, channels in (("offset", offset, 2 * dg * kk), ("mask", mask, dg * kk)):
        want = (data[0], channels) + out
        if got and tuple(got) != want:
            raise ShapeError(f"{op}: {name} has shape {tshape(got)}, expected "
                             f"{tshape(want)} for data {tshape(data)}, kernel "
                             f"{tshape(p.kernel)} and num_deformable_group={dg}")


def _check_modulated(p, op: str, data) -> None:
    if data[0] > p.im2col_step and data[0] % p.im2col_step:
        raise ShapeError(f"{op}: input batchsize {data[0]} must be smaller than or divide "
                         f"im2col_step {p.im2col_step}")
    if p.num_filter % p.num_deformable_group:
        raise ShapeError(f"{op}: output num_filter {p.num_filter} must divide deformable "
                         f"group size {p.num_deformable_group}")


def _shape_rule(op: str, modulated: bool):
    def rule(p, shapes):
        data = shapes[0]
        if not data:
            return None
        out = _out_hw(p, data, op)
        mask = shapes[2] if modulated else ()
        _check_shapes(p, op, data, shapes[1], mask, out)
        if modulated:
            _check_modulated(p, op, data)
        kk = p.kernel[0] * p.kernel[1]
        dg = p.num_deformable_group
        ins = [data, (data[0], 2 * dg * kk) + out]
        ins += [(data[0], dg * kk) + out] if modulated else []
        ins.append((p.num_filter, data[1] // p.num_group) + tuple(p.kernel))
        ins += [] if p.no_bias else [(p.num_filter,)]
        return ins, [(data[0], p.num_filter) + out]
    return rule


_PARAMS = (
    Param("kernel", "shape", doc="Convolution kernel size: (h, w)."),
    Param("stride", "shape", (), doc="Convolution stride: (h, w); defaults to 1."),
    Param("dilate", "shape", (), doc="Convolution dilate: (h, w); defaults to 1."),
    Param("pad", "shape", (), doc="Zero pad for convolution: (h, w); defaults to 0."),
    Param("num_filter", "int", lower=1, doc="Convolution filter (channel) number."),
    Param("num_group", "int", 1, lower=1, doc="Number of group partitions."),
    Param("num_deformable_group", "int", 1, lower=1,
          doc="Number of deformable group partitions."),
    Param("workspace", "int", 1024, lower=0, doc="Workspace limit in MB (accepted, unused)."),
    Param("no_bias", "bool", False, doc="Whether to disable the bias parameter."),
)
_LAYOUT = Param("layout", "str", "None", choices=("None", "NCW", "NCHW", "NCDHW"),
                doc="Data layout; only NCHW (the default) is supported.")

_V1_CASES = (
    Case(((2, 4, 3, 3), (2, 16, 2, 2), (3, 4, 2, 2), (3,)),
         {"kernel": (2, 2), "num_filter": 3, "num_deformable_group": 2}, low=-1.5, high=1.5),
    Case(((1, 4, 6, 5), (1, 12, 3, 5), (4, 2, 3, 2)),
         {"kernel": (3, 2), "stride": (2, 1), "dilate": (1, 2), "pad": (1, 1),
          "num_filter": 4, "num_group": 2, "no_bias": True}),
)

register(OpDef(
    name="_contrib_DeformableConvolution", params=_PARAMS + (_LAYOUT,),
    inputs=lambda p: _inputs(p, False),
    decompose=lambda b, p, ins: _decompose(b, p, ins, False),
    infer_shape=_shape_rule("DeformableConvolution", False),
    check=lambda p: _check(p, "DeformableConvolution"), cases=_V1_CASES,
    doc="""Deformable convolution (v1): a convolution whose taps are moved by ``offset``.

    ``data`` (N, C, H, W), ``offset`` (N, 2 * num_deformable_group * kh * kw, HO, WO) with
    the (h, w) displacement of every kernel tap at every output pixel, ``weight``
    (num_filter, C / num_group, kh, kw) and ``bias`` (num_filter,). Taps are sampled
    bilinearly where ``0 <= h < H`` and ``0 <= w < W`` (zero elsewhere).

    Examples
    --------
    >>> import symgraph as mx
    >>> x = mx.nd.ones((1, 1, 3, 3))
    >>> off = mx.nd.zeros((1, 2, 3, 3))
    >>> mx.nd.contrib.DeformableConvolution(x, off, mx.nd.ones((1, 1, 1, 1)),
    ...     kernel=(1, 1), num_filter=1, no_bias=True).shape
    (1, 1, 3, 3)
    """))

register(OpDef(
    name="_contrib_ModulatedDeformableConvolution",
    params=_PARAMS + (Param("im2col_step", "int", 64, lower=1,
                            doc="Images per im2col computation (accepted, unused)."),
                      _LAYOUT),
    inputs=lambda p: _inputs(p, True),
    decompose=lambda b, p, ins: _decompose(b, p, ins, True),
    infer_shape=_shape_rule("ModulatedDeformableConvolution", True),
    check=lambda p: _check(p, "ModulatedDeformableConvolution"),
    cases=(Case(((2, 4, 3, 3), (2, 16, 2, 2), (2, 8, 2, 2), (4, 4, 2, 2), (4,)),
                {"kernel": (2, 2), "num_filter": 4, "num_deformable_group": 2}, low=-1.5,
                high=1.5),
           Case(((1, 4, 6, 5), (1, 12, 3, 5), (1, 6, 3, 5), (4, 2, 3, 2)),
                {"kernel": (3, 2), "stride": (2, 1), "dilate": (1, 2), "pad": (1, 1),
                 "num_filter": 4, "num_group": 2, "no_bias": True})),
    doc="""Modulated deformable convolution (v2): deformable taps scaled by ``mask``.

    As ``DeformableConvolution``, plus ``mask`` (N, num_deformable_group * kh * kw, HO, WO)
    multiplying every sampled tap; taps are sampled where ``-1 < h < H`` and
    ``-1 < w < W``, pixels outside the image reading 0.

    Examples
    --------
    >>> import symgraph as mx
    >>> net = mx.sym.contrib.ModulatedDeformableConvolution(mx.sym.Variable('data'),
    ...     mx.sym.Variable('offset'), mx.sym.Variable('mask'), kernel=(3, 3),
    ...     num_filter=2, pad=(1, 1), name='mdc')
    >>> net.infer_shape(data=(1, 3, 4, 4))[1]
    [(1, 2, 4, 4)]
    """))
