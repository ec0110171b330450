"""ONNX translations of the neural-network layers: convolution, pooling, normalisation,
activations, fully connected, softmax heads, embedding, dropout."""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..emitter import Emitter, NodeCtx, converts


def _spatial(p, name: str, rank: int, default: int) -> list[int]:
    value = tuple(getattr(p, name) or ())
    return list(value) if value else [default] * rank


def _check_layout(n: NodeCtx) -> None:
    layout = str(n.p.get("layout", "None"))
    if layout not in ("None", "NCW", "NCHW", "NCDHW"):
        raise n.fail(f"layout {layout} (ONNX convolutions are channels-first)")


@converts("Convolution")
def convolution(e: Emitter, n: NodeCtx):
    _check_layout(n)
    p, k = n.p, len(n.p.kernel)
    pad = _spatial(p, "pad", k, 0)
    ins = n.ins[:2] if p.no_bias else n.ins[:3]
    return [e.one("Conv", ins, n.outs[0], kernel_shape=list(p.kernel),
                  strides=_spatial(p, "stride", k, 1), dilations=_spatial(p, "dilate", k, 1),
                  pads=pad + pad, group=p.num_group)]


def _deform_conv(e: Emitter, n: NodeCtx, offset: str, mask: str | None):
    p = n.p
    if e.opset < 19:
        raise n.fail(f"DeformConv needs opset 19 or later (asked for {e.opset})")
    pad = _spatial(p, "pad", 2, 0)
    nin = 2 if mask is None else 3
    ins = [n.ins[0], n.ins[nin], offset, "" if p.no_bias else n.ins[nin + 1]]
    return [e.one("DeformConv", ins + ([mask] if mask else []), n.outs[0],
                  kernel_shape=list(p.kernel), strides=_spatial(p, "stride", 2, 1),
                  dilations=_spatial(p, "dilate", 2, 1), pads=pad + pad, group=p.num_group,
                  offset_group=p.num_deformable_group)]


@converts("_contrib_ModulatedDeformableConvolution")
def modulated_deformable_convolution(e: Emitter, n: NodeCtx):
    """DeformConv (opset 19): the same offset layout ((dy, dx) per kernel tap, per
    deformable group) and v2's sampling (corners outside the image read 0)."""
    return _deform_conv(e, n, n.ins[1], n.ins[2])


def _v1_bases(n: NodeCtx) -> tuple[np.ndarray, np.ndarray]:
    """Per offset channel and output pixel: the undeformed sample position, and the size
    (H or W) that bounds it; shape (1, DG * KH * KW * 2, HO, WO)."""
    p = n.p
    (_, _, h, w), (_, _, ho, wo) = n.in_shapes[0], n.out_shapes[0]
    (kh, kw), (sh, sw) = p.kernel, _spatial(p, "stride", 2, 1)
    (ph, pw), (dh, dw) = _spatial(p, "pad", 2, 0), _spatial(p, "dilate", 2, 1)
    rows = np.arange(ho)[None, :, None] * sh - ph + np.arange(kh)[:, None, None] * dh
    cols = np.arange(wo)[None, None, :] * sw - pw + np.arange(kw)[:, None, None] * dw
    base = np.empty((kh, kw, 2, ho, wo), np.float64)
    base[:, :, 0] = np.broadcast_to(rows[:, None], (kh, kw, ho, wo))
    base[:, :, 1] = np.broadcast_to(cols[None, :], (kh, kw, ho, wo))
    size = np.empty_like(base)
    size[:, :, 0], size[:, :, 1] = h, w
    dg = p.num_deformable_group
    return tuple(np.tile(a.reshape(1, -1, ho, wo), (1, dg, 1, 1)) for a in (base, size))


@converts("_contrib_DeformableConvolution")
def deformable_convolution(e: Emitter, n: NodeCtx):
    """v1 samples only where ``0 <= h < H`` (and w alike) and clamps the second row and
    column at the border; DeformConv samples v2's way. The same values come from moved
    offsets: a position outside the image goes to -2 (all four corners read 0), one in
    the last row or column to exactly that row or column (its weight becomes 1)."""
    sources = n.out_dim_sources[0] if n.out_dim_sources else None
    if e.dynamic and sources and any(s is not None for s in sources[2:]):
        raise n.fail("v1's border rule needs the height and width, which this dynamic "
                     "export leaves open (fix them with dynamic_input_shapes)")
    dtype = n.in_dtypes[1]
    base, size = (e.const(a.astype(dtype), hint=h) for a, h in zip(_v1_bases(n), ("base", "size")))
    pos = e.one("Add", [n.ins[1], base])
    inside = e.one("And", [e.one("GreaterOrEqual", [pos, e.scalar(0, dtype)]),
                           e.one("Less", [pos, size])])
    last = e.one("Sub", [size, e.scalar(1, dtype)])
    moved = e.one("Where", [inside, e.one("Min", [pos, last]), e.scalar(-2, dtype)])
    return _deform_conv(e, n, e.one("Sub", [moved, base]), None)


@converts("Deconvolution")
def deconvolution(e: Emitter, n: NodeCtx):
    _check_layout(n)
    p, k = n.p, len(n.p.kernel)
    pad, adj = _spatial(p, "pad", k, 0), _spatial(p, "adj", k, 0)
    stride, dilate = _spatial(p, "stride", k, 1), _spatial(p, "dilate", k, 1)
    if tuple(p.target_shape or ()):  # MXNet derives pad and adj from the wanted size
        got = n.out_shapes[0][2:]
        full = [(i - 1) * s + d * (kk - 1) + 1 for i, s, d, kk in
                zip(n.in_shapes[0][2:], stride, dilate, p.kernel)]
        total = [f - g for f, g in zip(full, got)]
        pad = [(t + 1) // 2 for t in total]
        adj = [2 * pd - t for pd, t in zip(pad, total)]
    ins = n.ins[:2] if p.no_bias else n.ins[:3]
    return [e.one("ConvTranspose", ins, n.outs[0], kernel_shape=list(p.kernel),
                  strides=stride, dilations=dilate, pads=pad + pad, output_padding=adj,
                  group=p.num_group)]


@converts("BatchNorm", "_contrib_SyncBatchNorm")
def batch_norm(e: Emitter, n: NodeCtx):
    p = n.p
    rank = len(n.in_shapes[0])
    axis = p.axis % rank if "axis" in p else 1
    if p.get("output_mean_var"):
        raise n.fail("output_mean_var (batch statistics are outputs of training)")
    gamma = n.ins[1]
    if p.fix_gamma:
        gamma = e.const(np.ones(n.in_shapes[1], dtype=n.in_dtypes[1]), hint="gamma_fixed")
    x = n.ins[0]
    if axis != 1:
        perm = _move(rank, axis, 1)
        x = e.one("Transpose", [x], perm=perm)
    out = e.one("BatchNormalization", [x, gamma, n.ins[2], n.ins[3], n.ins[4]],
                None if axis != 1 else n.outs[0], epsilon=float(p.eps),
                momentum=float(p.momentum))
    if axis != 1:
        out = e.one("Transpose", [out], n.outs[0], perm=list(np.argsort(_move(rank, axis, 1))))
    return [out]


def _move(rank: int, src: int, dst: int) -> list[int]:
    perm = [i for i in range(rank) if i != src]
    perm.insert(dst, src)
    return perm


_ACTIVATIONS = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "softrelu": "Softplus",
                "softsign": "Softsign"}


def activation(e: Emitter, x: str, act: str, out: str | None, n: NodeCtx) -> str:
    """``x`` through MXNet's activation ``act``."""
    if act in _ACTIVATIONS:
        return e.one(_ACTIVATIONS[act], [x], out)
    if act == "log_sigmoid":
        return e.one("Log", [e.one("Sigmoid", [x])], out)
    if act == "mish":
        return e.one("Mul", [x, e.one("Tanh", [e.one("Softplus", [x])])], out)
    raise n.fail(f"activation {act}")


@converts("Activation")
def activation_op(e: Emitter, n: NodeCtx):
    return [activation(e, n.ins[0], n.p.act_type, n.outs[0], n)]


@converts("relu", "sigmoid", "tanh", "softsign")
def activation_fn(e: Emitter, n: NodeCtx):
    return [activation(e, n.ins[0], n.op, n.outs[0], n)]


_SELU_ALPHA, _SELU_GAMMA = 1.6732632423543772, 1.0507009873554805


@converts("LeakyReLU")
def leaky_relu(e: Emitter, n: NodeCtx):
    p, x, out = n.p, n.ins[0], n.outs[0]
    act = p.act_type
    if act == "leaky":
        return [e.one("LeakyRelu", [x], out, alpha=float(p.slope))]
    if act == "rrelu":  # inference uses the mean slope
        return [e.one("LeakyRelu", [x], out, alpha=(p.lower_bound + p.upper_bound) / 2)]
    if act == "elu":
        return [e.one("Elu", [x], out, alpha=float(p.slope))]
    if act == "selu":
        return [e.one("Selu", [x], out, alpha=_SELU_ALPHA, gamma=_SELU_GAMMA)]
    if act == "gelu":
        half = e.scalar(0.5, n.in_dtypes[0])
        erf = e.one("Erf", [e.one("Mul", [x, e.scalar(1 / math.sqrt(2), n.in_dtypes[0])])])
        return [e.one("Mul", [e.one("Mul", [x, half]),
                              e.one("Add", [erf, e.scalar(1.0, n.in_dtypes[0])])], out)]
    if act == "prelu":
        rank = len(n.in_shapes[0])
        gamma = n.ins[1]
        if rank > 2 and n.in_shapes[1] != (1,):  # (C,) broadcast over (N, C, ...)
            gamma = e.unsqueeze(gamma, list(range(1, rank - 1)))
        return [e.one("PRelu", [x, gamma], out)]
    raise n.fail(f"act_type {act}")


@converts("Pooling")
def pooling(e: Emitter, n: NodeCtx):
    _check_layout(n)
    p, x, out = n.p, n.ins[0], n.outs[0]
    rank, kind = len(n.in_shapes[0]) - 2, n.p.pool_type
    if p.global_pool and kind in ("max", "avg"):
        return [e.one("GlobalMaxPool" if kind == "max" else "GlobalAveragePool", [x], out)]
    if kind == "lp":  # MXNet's: the p-th root of the window's sum of x ** p (signed)
        power = int(p.p_value or 2)
        x = x if power == 1 else e.one("Pow", [x, e.scalar(power, n.in_dtypes[0])])
        summed = _sum_pool(e, n, x, rank)
        return [_lp_root(e, summed, power, n.in_dtypes[0], out)]
    if kind == "sum":
        return [_sum_pool(e, n, x, rank, out)]
    if p.pooling_convention == "same":
        raise n.fail("pooling_convention 'same'")
    return [_window_pool(e, n, x, kind, out)]


def _window_pool(e: Emitter, n: NodeCtx, x: str, kind: str, out: str | None) -> str:
    """max, avg or sum pooling over MXNet's windows (``n``'s kernel, stride, pad)."""
    p, rank = n.p, len(n.in_shapes[0]) - 2
    kernel = list(p.kernel)
    pad, stride = _spatial(p, "pad", rank, 0), _spatial(p, "stride", rank, 1)
    include = p.count_include_pad is None or bool(p.count_include_pad)
    window = _Window(kernel, stride, pad, pad, 0)
    if p.pooling_convention == "full":
        x, window = _full_window(e, n, x, window)
    attrs = dict(kernel_shape=kernel, strides=stride, pads=window.begin + window.end,
                 ceil_mode=window.ceil)
    if kind == "max":
        return e.one("MaxPool", [x], out, **attrs)
    scale = _avg_scale(n, window, include) if window.exact_divisor else None
    if kind == "avg" and scale is None:
        return e.one("AveragePool", [x], out, count_include_pad=int(include), **attrs)
    avg = e.one("AveragePool", [x], count_include_pad=1, **attrs)
    if kind == "sum":  # sum = average over the whole window * its size
        scale = np.full(n.out_shapes[0][2:], float(np.prod(kernel)))
    return e.one("Mul", [avg, e.const(scale.astype(_np_type(n.in_dtypes[0])),
                                      hint="window")], out)


def _sum_pool(e: Emitter, n: NodeCtx, x: str, rank: int, out: str | None = None) -> str:
    if n.p.global_pool:
        return e.reduce("ReduceSum", x, list(range(2, rank + 2)), True, out)
    return _window_pool(e, n, x, "sum", out)


def _lp_root(e: Emitter, y: str, power: int, dtype: str, out: str | None) -> str:
    if power == 1:
        return e.one("Identity", [y], out)
    if power == 2:
        return e.one("Sqrt", [y], out)
    root = e.one("Pow", [e.one("Abs", [y]), e.scalar(1.0 / power, dtype)])
    return e.one("Mul", [e.one("Sign", [y]), root], out)  # a signed cube root


def _np_type(dtype: str):
    return np.float32 if dtype == "bfloat16" else np.dtype(dtype)


class _Window(NamedTuple):
    kernel: list
    stride: list
    begin: list  # pads ONNX applies
    end: list
    ceil: int
    mx_pad: list | None = None  # MXNet's pad, when the divisor must be MXNet's (not ONNX's)

    @property
    def exact_divisor(self) -> bool:
        return self.mx_pad is not None


def _full_window(e: Emitter, n: NodeCtx, x: str, w: _Window) -> tuple[str, _Window]:
    """MXNet's 'full' convention keeps a last window ONNX's ceil_mode drops when it starts
    in the padding: with static sizes, pad the end explicitly (a Pad node where ONNX would
    refuse pads as large as the kernel) and pool in floor mode."""
    kernel, stride, pad = w.kernel, w.stride, w.begin
    if e.dynamic:
        if all(p == 0 and s <= k for p, s, k in zip(pad, stride, kernel)):
            return x, w._replace(ceil=1)  # no window can start in the padding
        raise n.fail("pooling_convention 'full' with padding or a stride over the kernel in "
                     "a dynamic export (the last window depends on the input size)")
    sizes = n.in_shapes[0][2:]
    outs = n.out_shapes[0][2:]
    ends = [max(p, (o - 1) * s + k - size - p) for o, size, k, s, p in
            zip(outs, sizes, kernel, stride, pad)]
    if ends == list(pad):
        return x, w
    if all(b < k and t < k for b, t, k in zip(pad, ends, kernel)):
        return x, w._replace(end=ends, mx_pad=list(pad))
    # an empty window's max is the lowest finite value, as MXNet's
    low = float(np.finfo(_np_type(n.in_dtypes[0])).min) if n.p.pool_type == "max" else 0.0
    pads = [0, 0] + list(pad) + [0, 0] + ends
    padded = e.one("Pad", [x, e.ints(pads), e.scalar(low, n.in_dtypes[0])], mode="constant")
    zeros = [0] * len(pad)
    return padded, w._replace(begin=zeros, end=zeros, mx_pad=list(pad))


def _avg_scale(n: NodeCtx, w: _Window, include: bool) -> np.ndarray:
    """Per output position, the ONNX divisor (the whole window) over MXNet's: the window
    clipped to the regular padding (``count_include_pad``) or to the data."""
    axes = []
    for o, size, k, s, p in zip(n.out_shapes[0][2:], n.in_shapes[0][2:], w.kernel, w.stride,
                                w.mx_pad):
        start = np.arange(o) * s - p
        if include:
            counted = np.minimum(start + k, size + p) - start
        else:
            counted = np.minimum(start + k, size) - np.maximum(start, 0)
        axes.append(k / np.maximum(counted, 1))
    scale = axes[0]
    for a in axes[1:]:
        scale = np.multiply.outer(scale, a)
    return scale


@converts("FullyConnected")
def fully_connected(e: Emitter, n: NodeCtx):
    p, x = n.p, n.ins[0]
    rank = len(n.in_shapes[0])
    if p.flatten and rank != 2:
        x = e.one("Flatten", [x], axis=1)
        rank = 2
    if rank == 2:
        ins = [x, n.ins[1]] + ([] if p.no_bias else [n.ins[2]])
        return [e.one("Gemm", ins, n.outs[0], transB=1)]
    wt = e.one("Transpose", [n.ins[1]], perm=[1, 0])
    if p.no_bias:
        return [e.one("MatMul", [x, wt], n.outs[0])]
    return [e.one("Add", [e.one("MatMul", [x, wt]), n.ins[2]], n.outs[0])]


@converts("Flatten")
def flatten(e: Emitter, n: NodeCtx):
    return [e.one("Flatten", [n.ins[0]], n.outs[0], axis=1)]


@converts("Dropout")
def dropout(e: Emitter, n: NodeCtx):
    """Identity at inference; ``mode='always'`` drops at inference too (ONNX's training
    mode Dropout)."""
    if n.p.mode != "always" or n.p.p == 0:
        return [n.ins[0]]
    if tuple(n.p.axes or ()):
        raise n.fail("mode 'always' with axes (a mask shared across axes)")
    ratio = e.scalar(float(n.p.p), n.in_dtypes[0])
    return [e.node("Dropout", [n.ins[0], ratio, e.const(np.array(True))], [n.outs[0]])[0]]


def softmax_axis(e: Emitter, x: str, shape: tuple, axis: int, out: str | None,
                 op_type: str = "Softmax") -> str:
    """``op_type`` (Softmax/LogSoftmax) over one axis in every opset (before 13 ONNX
    flattens from ``axis``: the axis goes last first)."""
    rank = len(shape)
    axis %= rank
    if e.opset >= 13 or axis == rank - 1:
        return e.one(op_type, [x], out, axis=axis)
    perm = _move(rank, axis, rank - 1)
    y = e.one(op_type, [e.one("Transpose", [x], perm=perm)], axis=rank - 1)
    return e.one("Transpose", [y], out, perm=[int(i) for i in np.argsort(perm)])


@converts("SoftmaxOutput")
def softmax_output(e: Emitter, n: NodeCtx):
    """Inference output of the loss head: the probabilities (the label is not read)."""
    p, x, shape = n.p, n.ins[0], n.in_shapes[0]
    if p.preserve_shape:
        return [softmax_axis(e, x, shape, -1, n.outs[0])]
    if p.multi_output:
        return [softmax_axis(e, x, shape, 1, n.outs[0])]
    if len(shape) == 2:
        return [e.one("Softmax", [x], n.outs[0], axis=1)]
    flat = e.one("Softmax", [e.one("Flatten", [x], axis=1)], axis=1)
    return [e.one("Reshape", [flat, e.dims(x, shape)], n.outs[0])]


def _tempered(e: Emitter, n: NodeCtx) -> str:
    t = n.p.get("temperature")
    if t is None or float(t) == 1.0:
        return n.ins[0]
    return e.one("Div", [n.ins[0], e.scalar(float(t), n.in_dtypes[0])])


@converts("softmax", "log_softmax")
def softmax(e: Emitter, n: NodeCtx):
    op_type = "Softmax" if n.op == "softmax" else "LogSoftmax"
    if n.p.get("use_length"):
        return [_length_softmax(e, n)]
    y = softmax_axis(e, _tempered(e, n), n.in_shapes[0], n.p.axis, None, op_type)
    return [_cast_to(e, y, n.in_dtypes[0], n.out_dtypes[0], n.outs[0])]


def _length_softmax(e: Emitter, n: NodeCtx) -> str:
    """softmax over the first ``length`` entries along the axis; the rest of the output is 0
    (all of it where ``length`` is 0)."""
    shape, dtype = n.in_shapes[0], n.in_dtypes[0]
    rank = len(shape)
    axis = n.p.axis % rank
    count = e.squeeze(e.dim_slice(n.ins[0], shape, axis, axis + 1), [0])
    pos = e.one("Range", [e.scalar(0, "int64"), count, e.scalar(1, "int64")])
    pos = e.unsqueeze(pos, list(range(1, rank - axis))) if axis < rank - 1 else pos
    length = e.cast(n.ins[1], "int64")
    if rank > 1:
        length = e.unsqueeze(length, [axis])
    keep = e.one("Less", [pos, length])
    low = e.scalar(-np.inf, dtype if dtype != "bfloat16" else "float32")
    masked = e.one("Where", [keep, _tempered(e, n), low])
    y = softmax_axis(e, masked, shape, axis, None)
    zero = e.scalar(0, n.out_dtypes[0] or dtype)
    return e.one("Where", [keep, _cast_to(e, y, dtype, n.out_dtypes[0], e.fresh("y")), zero],
                 n.outs[0])


def _cast_to(e: Emitter, value: str, have, want, out: str) -> str:
    if want is None or have == want:
        return e.one("Identity", [value], out)
    return e.cast(value, want, out)


@converts("Embedding")
def embedding(e: Emitter, n: NodeCtx):
    idx = e.cast(n.ins[0], "int64")
    # MXNet clips indices into [0, input_dim)
    idx = e.one("Clip", [idx, e.scalar(0, "int64"), e.scalar(n.p.input_dim - 1, "int64")])
    return [e.one("Gather", [n.ins[1], idx], n.outs[0], axis=0)]


@converts("clip")
def clip(e: Emitter, n: NodeCtx):
    dtype = n.in_dtypes[0]
    return [e.one("Clip", [n.ins[0], e.scalar(n.p.a_min, dtype), e.scalar(n.p.a_max, dtype)],
                  n.outs[0])]


@converts("Concat")
def concat(e: Emitter, n: NodeCtx):
    return [e.one("Concat", n.ins, n.outs[0], axis=int(n.p.dim))]
