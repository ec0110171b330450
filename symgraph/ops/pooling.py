"""Pooling: max, avg, sum and Lp pooling over 1, 2 or 3 spatial axes, MXNet 1.x semantics.

Output size per spatial axis ``d`` (kernel ``k``, stride ``s``, padding ``p``)::

    valid: 1 + (d + 2p - k) // s
    full:  1 + ceil((d + 2p - k) / s)      the last window may hang over the padded edge
    same:  ceil(d / s)                      1-D only, no padding
    global_pool: 1 (the kernel is the whole axis, no padding)

Window ``o`` covers ``[o*s - p, o*s - p + k)``; padding never wins a max (MXNet pads with
the lowest finite value) and adds zeros to a sum. The avg divisor is the window clipped to
``[-p, d + p)`` (``count_include_pad``, the default) or to the input ``[0, d)``; a window
that hangs beyond the padded edge in the full convention is divided by its clipped size.
Lp pooling computes ``(sum x**p) ** (1/p)`` without abs, for p in 1, 2, 3. A window with
no input element gives 0, except that MXNet's 3-D avg kernels give NaN when the divisor is 0.
``'same'`` is accepted with ``pad`` empty or all zeros (MXNet 1.9.1 itself only passes
its pad check with a 3-entry zero pad, reading ``pad[1]`` and ``pad[2]`` of a 1-D pad).

Backward math: max routes each output gradient to the first input (row-major within the
window) equal to the window's maximum, adding where windows overlap; avg and sum spread
``dy / divisor`` (``dy``) over the window's input elements; Lp gives
``dy * (x / y) ** (p - 1)``, 0 where ``y == 0``.

>>> import symgraph as mx
>>> pool = mx.sym.Pooling(mx.sym.Variable('data'), kernel=(2, 2), stride=(2, 2),
...                       pooling_convention='full', pool_type='avg')
>>> pool.infer_shape(data=(1, 1, 5, 5))[1]
[(1, 1, 3, 3)]
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..attrs import Param
from ..base import AttrError, ShapeError
from .base import Case, OpDef, register

# dmlc::optional<bool> spellings (compared after strip().lower())
_LAYOUTS = {1: ("NCW", "NWC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}
_MAX = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
# torch's CPU max pooling is 2.5-3.5x faster on channels-last data once there are this many
# channels (its NCHW kernel walks one plane at a time); the layout change costs one copy
_CHANNELS_LAST_MIN = 8
_AVG = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}
_BAD_RANK = ("Pooling: Input data should be  3D in (batch, channel, x) Or 4D in (batch, "
             "channel, y, x)  Or 5D in (batch, channel, d, y, x)")
_RANK_TEXT = {1: "3D in (batch, channel, x)", 2: "4D in (batch, channel, y, x)",
              3: "5D in (batch, channel, d, y, x)"}


def _tshape(t) -> str:
    return "[" + ",".join(str(v) for v in t) + "]"


def _check_params(p) -> None:
    """MXNet's parse-time checks, plus the length checks MXNet leaves to an index error."""
    nd = len(p.kernel)
    if nd > 3 or (nd == 0 and not p.global_pool):
        raise AttrError(f"Check failed: param.kernel.ndim() == 3U ({nd} vs. 3) : "
                        f"{nd}D pooling not supported")
    for key in ("kernel", "stride"):
        if any(v <= 0 for v in p[key]):
            which = "nonzero" if 0 in p[key] else "positive"
            raise AttrError(f"value {_tshape(p[key])}for Parameter {key} is invalid, the "
                            f"input shape must be {which} in all dimensions")
    if any(v < 0 for v in p.pad):
        raise AttrError(f"value {_tshape(p.pad)}for Parameter pad is invalid, padding must "
                        "not be negative")
    same = p.pooling_convention == "same"
    if same and any(p.pad):
        raise AttrError("Check failed: param.pad[0] == 0 && param.pad[1] == 0 && param.pad[2]"
                        " == 0: Same pooling convention disables the use of pad parameter.")
    for key in ("stride",) if same else ("stride", "pad"):
        if nd and p[key] and len(p[key]) != nd:
            raise AttrError(f"Pooling: {key} {_tshape(p[key])} must have as many entries as "
                            f"kernel {_tshape(p.kernel)}")
    if nd and p.layout != "None" and p.layout not in _LAYOUTS[nd]:
        raise AttrError(f"Check failed: layout == mshadow::k{_LAYOUTS[nd][0]} || layout == "
                        f"mshadow::k{_LAYOUTS[nd][1]}: Need {nd}D layout (got {p.layout})")


def _channel_last(p, rank: int) -> bool:
    return p.layout != "None" and p.layout.endswith("C") and rank > 2


def _include_pad(p) -> bool:
    return p.count_include_pad is not False  # None means True, as in MXNet


def _geometry(p, spatial: tuple) -> tuple[tuple, tuple, tuple, tuple]:
    """Kernel, stride, padding and output size per spatial axis (0 stays unknown)."""
    nd = len(spatial)
    if p.global_pool:
        return tuple(spatial), (1,) * nd, (0,) * nd, (1,) * nd
    kernel = tuple(p.kernel)
    stride = tuple(p.stride) or (1,) * nd
    pad = tuple(p.pad)[:nd] if any(p.pad) else (0,) * nd
    out = []
    for i, (d, k, s, q) in enumerate(zip(spatial, kernel, stride, pad)):
        if not d:
            out.append(0)
        elif k > d + 2 * q:
            what = (f"kernel size ({k}) exceeds input ({d} padded to {d + 2 * q})" if nd < 3
                    else "kernel size exceeds input")
            raise ShapeError(f"Check failed: param.kernel[{i}] <= dshape[{i + 2}] + 2 * "
                             f"param.pad[{i}]: {what}")
        elif p.pooling_convention == "valid":
            out.append(1 + (d + 2 * q - k) // s)
        elif p.pooling_convention == "full":
            out.append(1 + math.ceil((d + 2 * q - k) / s))
        else:
            out.append(math.ceil((d + 2 * q) / s))
    return kernel, stride, pad, tuple(out)


def _check_data(p, data: tuple) -> None:
    if p.pool_type == "lp" and p.p_value not in (1, 2, 3):
        raise ShapeError("Check failed: param.p_value.has_value(): Lp pooling needs p_value "
                         f"1, 2 or 3, got {p.p_value}")
    if p.pooling_convention == "same" and len(data) != 3:
        raise ShapeError(f"Check failed: dshape.ndim() == 3U ({len(data)} vs. 3) : Pooling: "
                         "Input data should be 3D in (batch, channel, x). Currently 'same' "
                         "supports Max Pooling 1-D")
    if len(data) < 3 or len(data) > 5:
        bound = ">= 3" if len(data) < 3 else "<= 5"
        raise ShapeError(f"Check failed: dshape.ndim() {bound} ({len(data)} vs. "
                         f"{3 if len(data) < 3 else 5}) : {_BAD_RANK}")
    nd = len(p.kernel)
    if not p.global_pool and len(data) != nd + 2:
        raise ShapeError(f"Check failed: dshape.ndim() == {nd + 2}U ({len(data)} vs. "
                         f"{nd + 2}) : Pooling: Input data should be {_RANK_TEXT[nd]}")
    if p.layout != "None" and len(p.layout) != len(data):
        raise ShapeError(f"Pooling: layout {p.layout} does not fit {len(data)}-D data")


def _workspace(p) -> bool:
    """MXNet's (MKLDNN) build gives max pooling a hidden ``workspace`` output (opaque there;
    here each window's int64 argmax, the index type torch's pooling kernels read and write)."""
    return (p.pool_type == "max" and 1 <= len(p.kernel) <= 3
            and p.layout in ("None", "NCW", "NCHW", "NCDHW"))


def _outputs(p) -> list[str]:
    return ["output", "workspace"] if _workspace(p) else ["output"]


def _shape(p, shapes):
    data = tuple(shapes[0])
    if not data:
        return None
    _check_data(p, data)
    if _channel_last(p, len(data)):
        out = (data[0],) + _geometry(p, data[1:-1])[3] + (data[-1],)
    else:
        out = data[:2] + _geometry(p, data[2:])[3]
    return shapes, [out] * len(_outputs(p))


def _type(p, types):
    if types[0] is None:
        return None
    return types, [types[0], "int64"] if _workspace(p) else [types[0]]


def _divisor(p, spatial, geom, like: torch.Tensor) -> torch.Tensor:
    """Per-window avg divisor as MXNet computes it: a product of signed per-axis sizes."""
    kernel, stride, pad, out = geom
    total = torch.ones((), dtype=like.dtype, device=like.device)
    for d, k, s, q, o in zip(spatial, kernel, stride, pad, out):
        start = torch.arange(o, device=like.device) * s - q
        if _include_pad(p):
            size = torch.clamp(start + k, max=d + q) - start
        else:
            size = torch.clamp(start + k, max=d) - torch.clamp(start, min=0)
        total = total[..., None] * size.to(like.dtype)
    return total


def _average(y: torch.Tensor, divisor: torch.Tensor) -> torch.Tensor:
    """Window sums over divisors. A divisor <= 0 belongs to a window without input
    elements (sum 0): MXNet's 1-D/2-D kernels give 0 there, its 3-D kernels NaN for 0."""
    out = y / torch.where(divisor > 0, divisor, torch.ones_like(divisor))
    if y.dim() == 5:
        out = torch.where(divisor == 0, torch.full_like(out, float("nan")), out)
    return out


def _max_pool(x: torch.Tensor, kernel, stride, return_indices: bool = False):
    """torch max pooling of channel-first ``x``; 2-D CPU data with many channels runs through
    the channels-last kernel (same values and argmax indices, contiguous results)."""
    if x.dim() != 4 or x.device.type != "cpu" or x.shape[1] < _CHANNELS_LAST_MIN:
        return _MAX[x.dim() - 2](x, kernel, stride, return_indices=return_indices)
    out = F.max_pool2d(x.contiguous(memory_format=torch.channels_last), kernel, stride,
                       return_indices=return_indices)
    if return_indices:
        return out[0].contiguous(), out[1].contiguous()
    return out.contiguous()


def _pool_cf(p, x: torch.Tensor, pool_type: str) -> torch.Tensor:
    """Pool channel-first ``x`` with MXNet's window, padding and divisor rules."""
    spatial = tuple(x.shape[2:])
    nd = len(spatial)
    geom = _geometry(p, spatial)
    kernel, stride, pad, out = geom
    right = [max(0, (o - 1) * s - q + k - d) for d, k, s, q, o in zip(spatial, *geom)]
    widths = [w for q, r in zip(reversed(pad), reversed(right)) for w in (q, r)]
    if pool_type == "max":
        xp = F.pad(x, widths, value=torch.finfo(x.dtype).min) if any(widths) else x
        y = _max_pool(xp, kernel, stride)
    else:
        base = x if pool_type != "lp" or p.p_value == 1 else x ** p.p_value
        y = _AVG[nd](F.pad(base, widths), kernel, stride) * math.prod(kernel)
        if pool_type == "avg":
            y = _average(y, _divisor(p, spatial, geom, y))
        elif pool_type == "lp" and p.p_value == 2:
            y = torch.sqrt(y)
        elif pool_type == "lp" and p.p_value == 3:
            y = torch.sign(y) * y.abs() ** (1.0 / 3.0)
    for axis, o in enumerate(out):
        y = y.narrow(axis + 2, 0, o)
    return y


def pool(p, x: torch.Tensor, pool_type: str | None = None) -> torch.Tensor:
    """The Pooling forward for params ``p`` (``pool_type`` overrides ``p.pool_type``)."""
    kind = pool_type or p.pool_type
    if _channel_last(p, x.dim()):
        return _pool_cf(p, x.movedim(-1, 1), kind).movedim(1, -1).contiguous()
    return _pool_cf(p, x, kind).contiguous()


def _padded_max(p, x: torch.Tensor):
    """Max-pool channel-first ``x`` once with indices: (y, flat indices into the padded
    input per channel, padded spatial shape), both cropped to the output size."""
    spatial = tuple(x.shape[2:])
    geom = _geometry(p, spatial)
    kernel, stride, pad, out = geom
    right = [max(0, (o - 1) * s - q + k - d) for d, k, s, q, o in zip(spatial, *geom)]
    widths = [w for q, r in zip(reversed(pad), reversed(right)) for w in (q, r)]
    xp = F.pad(x, widths, value=torch.finfo(x.dtype).min) if any(widths) else x
    y, idx = _max_pool(xp, kernel, stride, return_indices=True)
    for axis, o in enumerate(out):
        y, idx = y.narrow(axis + 2, 0, o), idx.narrow(axis + 2, 0, o)
    return y.contiguous(), idx.contiguous(), tuple(xp.shape[2:])


def _max_backward(p, x: torch.Tensor, dy: torch.Tensor, idx=None) -> torch.Tensor:
    """Max-pool gradient without autograd: scatter-add ``dy`` to the first maximum of each
    window (overlapping windows add up), using the forward's workspace indices if given."""
    spatial = tuple(x.shape[2:])
    kernel, stride, pad, out = _geometry(p, spatial)
    padded = tuple(d + q + max(0, (o - 1) * s - q + k - d)
                   for d, k, s, q, o in zip(spatial, kernel, stride, pad, out))
    if idx is None:
        _, idx, padded = _padded_max(p, x)
    n, c = x.shape[:2]
    pooled = tuple((q - k) // st + 1 for q, k, st in zip(padded, kernel, stride))
    if len(spatial) == 2 and pooled == tuple(out):  # torch's native max-pool backward
        dxp = torch.ops.aten.max_pool2d_with_indices_backward(
            dy.contiguous(), torch.empty((n, c) + padded, dtype=dy.dtype, device=dy.device),
            list(kernel), list(stride), [0, 0], [1, 1], False, idx.long())
        for axis, (q, d) in enumerate(zip(pad, spatial)):
            dxp = dxp.narrow(axis + 2, q, d)
        return dxp.contiguous()
    dxp = torch.zeros((n, c, math.prod(padded)), dtype=dy.dtype, device=dy.device)
    dxp.scatter_add_(2, idx.reshape(n, c, -1).long(), dy.reshape(n, c, -1))
    dxp = dxp.reshape((n, c) + padded)
    for axis, (q, d) in enumerate(zip(pad, spatial)):
        dxp = dxp.narrow(axis + 2, q, d)
    return dxp.contiguous()


def _vjp(p, x: torch.Tensor, dy: torch.Tensor, pool_type: str) -> torch.Tensor:
    with torch.enable_grad():
        xg = x.detach().requires_grad_(True)
        (dx,) = torch.autograd.grad(pool(p, xg, pool_type), xg, dy)
    return dx


def _forward(p, ins, aux, rt):
    if not _workspace(p):
        return (pool(p, ins[0]),)
    # MXNet's hidden workspace output: here the argmax of each window (flat index into the
    # padded input plane), which the backward reads instead of pooling again
    y, idx, _ = _padded_max(p, ins[0])
    return y, idx


def _backward_forward(p, ins, aux, rt):
    dy, x = ins[0], ins[1]
    if p.pool_type == "lp" and p.p_value in (2, 3):
        # MXNet's lp_grad: dy * (x / y) ** (p - 1), summed over windows, 0 where y == 0
        y = pool(p, x)
        scaled = torch.where(y == 0, torch.zeros_like(dy), dy / y ** (p.p_value - 1))
        return (x ** (p.p_value - 1) * _vjp(p, x, scaled, "sum"),)
    if p.pool_type == "max" and not _channel_last(p, x.dim()):
        return (_max_backward(p, x, dy, ins[2] if len(ins) > 2 else None),)
    return (_vjp(p, x, dy, p.pool_type),)


def _kernel_geometry(p, x: torch.Tensor):
    """The Triton kernels' description of this node's pooling."""
    from ..kernels.pool import PoolGeometry
    last = _channel_last(p, x.dim())
    spatial = tuple(x.shape[1:-1]) if last else tuple(x.shape[2:])
    kernel, stride, pad, out = _geometry(p, spatial)
    return PoolGeometry(kernel, stride, pad, out, p.pool_type, _include_pad(p),
                        p.p_value or 1, last)


def triton_pooling(p, ins, aux, rt):
    """Pooling forward as one Triton kernel (one lane per output element)."""
    from ..kernels.pool import pool_fwd
    y = pool_fwd(ins[0], _kernel_geometry(p, ins[0]))
    if not _workspace(p):
        return (y,)
    return y, torch.zeros(y.shape, dtype=torch.int64, device=y.device)


def triton_backward_pooling(p, ins, aux, rt):
    """Pooling data gradient: argmax (max) or y (Lp) by the forward kernel, then one
    gather kernel over input elements."""
    from ..kernels.pool import pool_bwd
    return (pool_bwd(ins[0], ins[1], _kernel_geometry(p, ins[1])),)


def _gradient(g, p, ins, outs, og):
    if _workspace(p):
        return [g.op("_backward_Pooling", og[0], ins[0], outs[1], **p)]
    return [g.op("_backward_Pooling", og[0], ins[0], **p)]


_PARAMS = (
    Param("kernel", "shape", (), doc="Pooling window: (x,), (y, x) or (d, y, x)."),
    Param("pool_type", "str", "max", choices=("avg", "lp", "max", "sum"),
          doc="Pooling type."),
    Param("global_pool", "bool", False, doc="Pool over the whole spatial extent."),
    Param("cudnn_off", "bool", False, doc="Turn off cuDNN (accepted, unused)."),
    Param("pooling_convention", "str", "valid", choices=("full", "same", "valid"),
          doc="Output size rule: floor (valid), ceil (full), ceil(d / stride) (same, 1-D)."),
    Param("stride", "shape", (), doc="Window stride; defaults to 1 on each axis."),
    Param("pad", "shape", (), doc="Padding on both sides; defaults to 0 on each axis."),
    Param("p_value", "int_or_none", None, doc="p of Lp pooling: 1, 2 or 3."),
    Param("count_include_pad", "bool_or_none", None,
          doc="avg only: divide by the padded window size (None means True)."),
    Param("layout", "str", "None",
          choices=("None", "NCW", "NCHW", "NCDHW", "NWC", "NHWC", "NDHWC"),
          doc="Data layout; None means channel-first for the data's rank."),
)

register(OpDef(
    name="_backward_Pooling", params=_PARAMS, hidden=True,
    inputs=lambda p: ["ograd", "data", "workspace"] if _workspace(p) else ["ograd", "data"],
    infer_shape=lambda p, s: (list(s), [s[1]]) if s[1] else None,
    infer_type=lambda p, t: (list(t), [t[1]]) if t[1] is not None else None,
    forward=_backward_forward, kernel=triton_backward_pooling,
    doc="The data gradient of Pooling."))

_D = (2, 3, 7, 6)
register(OpDef(
    name="Pooling", params=_PARAMS, inputs=("data",), check=_check_params, outputs=_outputs,
    aliases=("Pooling_v1",),  # MXNet's old form: a subset of these params, same math
    num_visible=lambda p: 1,
    infer_shape=_shape, infer_type=_type, forward=_forward, gradient=_gradient,
    kernel=triton_pooling,
    cases=(
        Case((_D,), {"kernel": (3, 3), "stride": (2, 2)}),
        Case((_D,), {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1),
                     "pooling_convention": "full"}),
        Case((_D,), {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": "avg",
                     "pooling_convention": "full"}),
        Case((_D,), {"kernel": (3, 2), "stride": (2, 1), "pad": (1, 1), "pool_type": "avg",
                     "count_include_pad": False}),
        Case((_D,), {"kernel": (2, 3), "stride": (1, 2), "pool_type": "sum",
                     "pooling_convention": "full"}),
        Case(((2, 3, 9),), {"kernel": (3,), "stride": (2,), "pad": (1,), "pool_type": "avg"}),
        Case(((2, 3, 8),), {"kernel": (3,), "stride": (3,), "pooling_convention": "same"}),
        Case(((2, 3, 5, 4),), {"kernel": (1, 1), "global_pool": True}),
        Case(((2, 3, 5, 4),), {"pool_type": "avg", "global_pool": True}),
        Case(((1, 2, 4, 5, 3),), {"kernel": (2, 3, 2), "stride": (2, 1, 1), "pad": (1, 1, 0),
                                  "pool_type": "avg", "pooling_convention": "full"}),
        Case(((2, 3, 5, 4),), {"kernel": (2, 2), "stride": (1, 2), "pool_type": "lp",
                               "p_value": 2}, low=0.5, high=1.5),
        Case(((2, 3, 5, 4),), {"kernel": (2, 3), "stride": (2, 1), "pool_type": "lp",
                               "p_value": 3}, low=0.5, high=1.5),
        Case(((2, 5, 6, 3),), {"kernel": (2, 3), "stride": (2, 2), "layout": "NHWC",
                               "pooling_convention": "full"}),
    ),
    doc="""Pooling (max, avg, sum or Lp) over 1, 2 or 3 spatial axes.

    ``data`` is (N, C, *spatial), or channel-last with ``layout`` NWC/NHWC/NDHWC. See the
    module notes for the output size of each ``pooling_convention``, the avg divisor with
    and without ``count_include_pad`` and the max-pooling gradient. ``global_pool`` ignores
    ``kernel``, ``stride`` and ``pad`` and pools each channel to size 1.

    Examples
    --------
    >>> import symgraph as mx
    >>> x = mx.sym.Variable('data')
    >>> mx.sym.Pooling(x, kernel=(3,), stride=(2,), pad=(1,), pool_type='avg',
    ...                count_include_pad=False).infer_shape(data=(2, 3, 9))[1]
    [(2, 3, 5)]
    >>> mx.sym.Pooling(x, kernel=(5, 2)).infer_shape(data=(1, 2, 4, 4))
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symgraph.base.ShapeError: ... kernel size (5) exceeds input (4 padded to 4) ...
    """))
