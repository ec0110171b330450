"""ONNX layers: convolution, pooling, normalisation, softmax, matrix products, recurrent layers."""
from __future__ import annotations

import math

import numpy as np

import symgraph as mx

from .common import const_in, imports, rank_of, static_shape
from .elementwise import _lift


# ---------------------------------------------------------------- convolution and pooling
def _pads(g, n, x: str, kernel: list[int], stride: list[int], dilate: list[int]) -> list:
    """``[begin..., end...]`` pads of a conv or pool, ``auto_pad`` resolved."""
    k = len(kernel)
    auto = n.a.get("auto_pad", "NOTSET")
    if auto in ("NOTSET", ""):
        return list(n.a.get("pads", [0] * 2 * k))
    if auto == "VALID":
        return [0] * 2 * k
    spatial = static_shape(g, n, x)[2:]
    begin, end = [], []
    for i, s, kk, d in zip(spatial, stride, kernel, dilate):
        total = max((math.ceil(i / s) - 1) * s + (kk - 1) * d + 1 - i, 0)
        small = total // 2
        begin.append(small if auto == "SAME_UPPER" else total - small)
        end.append(total - begin[-1])
    return begin + end


def _symmetric(g, n, x: str, pads: list, value: float):
    """``(data, pad)`` for MXNet's symmetric ``pad``: asymmetric pads become a Pad first."""
    k = len(pads) // 2
    begin, end = pads[:k], pads[k:]
    if begin == end:
        return g.sym(x), tuple(begin)
    if k not in (2, 3):
        raise n.fail(f"asymmetric pads {pads} on a {k}-D window (MXNet's Pad is 2-D/3-D)")
    width = [0, 0, 0, 0] + [v for b, e in zip(begin, end) for v in (b, e)]
    padded = mx.sym.Pad(g.sym(x), mode="constant", pad_width=tuple(width),
                        constant_value=value, name=n.sub("pad"))
    return padded, (0,) * k


def _window(n) -> tuple[list, list, list]:
    kernel = list(n.a["kernel_shape"])
    k = len(kernel)
    return kernel, list(n.a.get("strides", [1] * k)), list(n.a.get("dilations", [1] * k))


@imports("Conv")
def _conv(g, n):
    w = static_shape(g, n, n.ins[1])
    if "kernel_shape" not in n.a:
        n.a["kernel_shape"] = list(w[2:])
    kernel, stride, dilate = _window(n)
    x, pad = _symmetric(g, n, n.ins[0], _pads(g, n, n.ins[0], kernel, stride, dilate), 0.0)
    group = int(n.a.get("group", 1))
    ins = [x, g.sym(n.ins[1])] + ([g.sym(n.ins[2])] if n.has(2) else [])
    return [mx.sym.Convolution(*ins, kernel=tuple(kernel), stride=tuple(stride),
                               dilate=tuple(dilate), pad=pad, num_filter=w[0],
                               num_group=group, no_bias=not n.has(2), name=n.name)]


@imports("ConvTranspose")
def _deconv(g, n):
    w = static_shape(g, n, n.ins[1])
    kernel = list(n.a.get("kernel_shape", w[2:]))
    k = len(kernel)
    stride, dilate = list(n.a.get("strides", [1] * k)), list(n.a.get("dilations", [1] * k))
    extra = list(n.a.get("output_padding", [0] * k))
    pads = list(n.a.get("pads", [0] * 2 * k))
    auto = n.a.get("auto_pad", "NOTSET")
    if "output_shape" in n.a or auto in ("SAME_UPPER", "SAME_LOWER"):
        spatial = static_shape(g, n, n.ins[0])[2:]
        want = list(n.a["output_shape"])[-k:] if "output_shape" in n.a else \
            [i * s for i, s in zip(spatial, stride)]
        pads = [0] * 2 * k
        for j, (i, s, kk, d, o, t) in enumerate(zip(spatial, stride, kernel, dilate, extra,
                                                    want)):
            total = s * (i - 1) + o + (kk - 1) * d + 1 - t
            if total < 0 or total % 2:  # runtimes disagree on which end gets an odd pad
                raise n.fail(f"output_shape {want} needs a total padding of {total} on "
                             f"axis {j} (only even, non-negative totals import exactly)")
            pads[j] = pads[j + k] = total // 2
    # MXNet crops ``pad`` at both ends and adds ``adj`` at the end
    adj = [o + b - e for o, b, e in zip(extra, pads[:k], pads[k:])]
    if any(a < 0 for a in adj):
        raise n.fail(f"pads {pads} with output_padding {extra} crop more at the end than "
                     "the start (MXNet's Deconvolution cannot)")
    group = int(n.a.get("group", 1))
    ins = [g.sym(n.ins[0]), g.sym(n.ins[1])] + ([g.sym(n.ins[2])] if n.has(2) else [])
    return [mx.sym.Deconvolution(*ins, kernel=tuple(kernel), stride=tuple(stride),
                                 dilate=tuple(dilate), pad=tuple(pads[:k]), adj=tuple(adj),
                                 num_filter=w[1] * group, num_group=group,
                                 no_bias=not n.has(2), name=n.name)]


def _ceil_ok(g, n, x: str, kernel, stride, pads) -> None:
    """ONNX drops a ceil-mode window that starts in the end padding; MXNet's "full"
    convention keeps it: refuse where that happens."""
    shape = g.shape(x)
    k = len(kernel)
    if not any(pads):
        return
    if shape is None or None in shape[2:]:
        raise n.fail("ceil_mode with pads needs static spatial dims")
    for i, kk, s, b, e in zip(shape[2:], kernel, stride, pads[:k], pads[k:]):
        out = math.ceil((i + b + e - kk) / s) + 1
        if (out - 1) * s >= i + b:
            raise n.fail("ceil_mode where the last window starts in the padding")


@imports("MaxPool", "AveragePool", "LpPool")
def _pool(g, n):
    if len([o for o in n.outs if o]) > 1:
        raise n.fail("the Indices output of MaxPool")
    kernel, stride, dilate = _window(n)
    if any(d != 1 for d in dilate):
        raise n.fail(f"dilations {dilate}")
    pads = _pads(g, n, n.ins[0], kernel, stride, dilate)
    kind = {"MaxPool": "max", "AveragePool": "avg", "LpPool": "lp"}[n.op]
    include = bool(n.a.get("count_include_pad", 0))
    k = len(kernel)
    if pads[:k] != pads[k:] and kind != "max" and not include:
        raise n.fail(f"asymmetric pads {pads} (the average would count the padding)")
    x, pad = _symmetric(g, n, n.ins[0], pads, -np.inf if kind == "max" else 0.0)
    ceil = bool(n.a.get("ceil_mode", 0))
    if ceil:
        _ceil_ok(g, n, n.ins[0], kernel, stride, [*pad, *pad])
    extra = {"p_value": int(n.a.get("p", 2))} if kind == "lp" else {}
    if kind == "avg":
        extra["count_include_pad"] = include
    return [mx.sym.Pooling(x, kernel=tuple(kernel), stride=tuple(stride), pad=pad,
                           pool_type=kind, pooling_convention="full" if ceil else "valid",
                           name=n.name, **extra)]


@imports("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def _global_pool(g, n):
    kind = {"GlobalAveragePool": "avg", "GlobalMaxPool": "max", "GlobalLpPool": "lp"}[n.op]
    extra = {"p_value": int(n.a.get("p", 2))} if kind == "lp" else {}
    return [mx.sym.Pooling(g.sym(n.ins[0]), kernel=(1,) * (rank_of(g, n, n.ins[0]) - 2),
                           global_pool=True, pool_type=kind, name=n.name, **extra)]


# ---------------------------------------------------------------- normalisation
@imports("BatchNormalization")
def _batch_norm(g, n):
    if n.a.get("training_mode", 0) or len([o for o in n.outs if o]) > 1:
        raise n.fail("training mode (running statistics as outputs)")
    if n.a.get("spatial", 1) == 0:
        raise n.fail("spatial=0 (statistics per activation, not per channel)")
    for slot in (3, 4):  # MXNet keeps the statistics as auxiliary states: variables
        if g.const(n.ins[slot]) is None and n.ins[slot] not in g.inputs:
            raise n.fail(f"input {n.ins[slot]!r} (mean/var) is computed, not a tensor")
    ins = [g.sym(i) for i in n.ins[:5]]
    return [mx.sym.BatchNorm(*ins, eps=float(n.a.get("epsilon", 1e-5)),
                             momentum=float(n.a.get("momentum", 0.9)), fix_gamma=False,
                             use_global_stats=True, name=n.name)]


@imports("InstanceNormalization")
def _instance_norm(g, n):
    return [mx.sym.InstanceNorm(*[g.sym(i) for i in n.ins[:3]],
                                eps=float(n.a.get("epsilon", 1e-5)), name=n.name)]


@imports("LayerNormalization")
def _layer_norm(g, n):
    rank = rank_of(g, n, n.ins[0])
    axis = int(n.a.get("axis", -1)) % rank
    if len([o for o in n.outs if o]) > 1:
        raise n.fail("the Mean and InvStdDev outputs")
    if axis != rank - 1:
        raise n.fail(f"normalising over axes {axis}..{rank - 1} (MXNet's LayerNorm takes one)")
    scale = g.shape(n.ins[1])
    if scale is None or len(scale) != 1:
        raise n.fail(f"Scale of shape {scale} (MXNet's LayerNorm takes a 1-D gamma)")
    beta = g.sym(n.ins[2]) if n.has(2) else \
        g.param(np.zeros(scale, dtype=np.float32), f"{n.label}_beta")
    return [mx.sym.LayerNorm(g.sym(n.ins[0]), g.sym(n.ins[1]), beta, axis=-1,
                             eps=float(n.a.get("epsilon", 1e-5)), name=n.name)]


@imports("LRN")
def _lrn(g, n):
    return [mx.sym.LRN(g.sym(n.ins[0]), nsize=int(n.a["size"]),
                       alpha=float(n.a.get("alpha", 1e-4)), beta=float(n.a.get("beta", 0.75)),
                       knorm=float(n.a.get("bias", 1.0)), name=n.name)]


@imports("Softmax", "LogSoftmax")
def _softmax(g, n):
    fn = mx.sym.softmax if n.op == "Softmax" else mx.sym.log_softmax
    x = g.sym(n.ins[0])
    if g.opset >= 13:
        return [fn(x, axis=int(n.a.get("axis", -1)), name=n.name)]
    rank = rank_of(g, n, n.ins[0])
    axis = int(n.a.get("axis", 1)) % rank
    if axis == rank - 1:
        return [fn(x, axis=-1, name=n.name)]
    # before opset 13 the input is seen as 2-D: dims from ``axis`` on are one row
    flat = mx.sym.reshape(x, shape=(0,) * axis + (-1,))
    return [mx.sym.reshape_like(fn(flat, axis=-1), x, name=n.name)]


# ---------------------------------------------------------------- matrix products
@imports("Gemm")
def _gemm(g, n):
    alpha, beta = float(n.a.get("alpha", 1.0)), float(n.a.get("beta", 1.0))
    ta, tb = bool(n.a.get("transA", 0)), bool(n.a.get("transB", 0))
    w, c = g.shape(n.ins[1]), g.shape(n.ins[2]) if n.has(2) else None
    if not ta and tb and alpha == 1.0 and (beta == 1.0 or c is None) and w is not None \
            and None not in w and (c is None or c == (w[0],)):
        # MXNet's own export form: a fully connected layer keeps its weight and bias
        ins = [g.sym(n.ins[0]), g.sym(n.ins[1])] + ([g.sym(n.ins[2])] if c else [])
        return [mx.sym.FullyConnected(*ins, num_hidden=w[0], no_bias=c is None,
                                      flatten=False, name=n.name)]
    y = mx.sym.dot(g.sym(n.ins[0]), g.sym(n.ins[1]), transpose_a=ta, transpose_b=tb)
    if alpha != 1.0:
        y = y * alpha
    if n.has(2) and beta != 0.0:
        bias = g.sym(n.ins[2]) if c is None or len(c) == 2 else _lift(g, n.ins[2], 2 - len(c))
        y = mx.sym.broadcast_add(y, bias * beta if beta != 1.0 else bias)
    return [mx.sym.identity(y, name=n.name)]


@imports("MatMul")
def _matmul(g, n):
    a, b = g.shape(n.ins[0]), g.shape(n.ins[1])
    if a is None or b is None:
        raise n.fail("the ranks of its inputs are unknown")
    sa, sb = g.sym(n.ins[0]), g.sym(n.ins[1])
    if len(b) <= 2 and len(a) >= 1 and not (len(a) == 1 and len(b) == 1):
        return [mx.sym.dot(sa, sb, name=n.name)]  # MXNet's dot contracts a's last axis
    if len(a) < 2 or len(b) < 2:
        raise n.fail(f"a product of ranks {len(a)} and {len(b)}")
    if a[:-2] != b[:-2]:
        out = g.shape(n.outs[0])
        if out is None or None in out:
            raise n.fail(f"broadcast batch dims {a[:-2]} and {b[:-2]} of unknown size")
        rank = len(out)
        sa = mx.sym.broadcast_to(_lift(g, n.ins[0], rank - len(a)) if len(a) < rank else sa,
                                 shape=out[:-2] + tuple(a[-2:]))
        sb = mx.sym.broadcast_to(_lift(g, n.ins[1], rank - len(b)) if len(b) < rank else sb,
                                 shape=out[:-2] + tuple(b[-2:]))
        a = b = out
    if len(a) == 3:
        return [mx.sym.batch_dot(sa, sb, name=n.name)]
    flat_a = mx.sym.reshape(sa, shape=(-1, 0, 0), reverse=True)
    flat_b = mx.sym.reshape(sb, shape=(-1, 0, 0), reverse=True)
    y = mx.sym.batch_dot(flat_a, flat_b)
    return [mx.sym.reshape_like(y, sa, lhs_begin=0, lhs_end=1, rhs_begin=0,
                                rhs_end=len(a) - 2, name=n.name)]



# ---------------------------------------------------------------- recurrent layers
# ONNX gate k is MXNet's gate _TO_MXNET[op][k] (LSTM ONNX [i, o, f, c] vs MXNet [i, f, c, o],
# GRU ONNX [z, r, h] vs MXNet [r, z, n])
_TO_MXNET = {"LSTM": (0, 3, 1, 2), "GRU": (1, 0, 2), "RNN": (0,)}


def _mx_gates(a: np.ndarray, op: str, hidden: int) -> np.ndarray:
    """Rows of ``a`` (ONNX's gate stack) in MXNet's gate order."""
    order = _TO_MXNET[op]
    back = [order.index(j) for j in range(len(order))]
    return np.concatenate([a[k * hidden:(k + 1) * hidden] for k in back], axis=0)


def _rnn_mode(g, n, op: str, dirs: int) -> str:
    acts = [a.lower() for a in n.a.get("activations", [])]
    default = {"LSTM": ["sigmoid", "tanh", "tanh"], "GRU": ["sigmoid", "tanh"],
               "RNN": ["tanh"]}[op]
    if op == "RNN" and acts and set(acts) == {"relu"}:
        return "rnn_relu"
    if acts and acts != default * dirs and acts != default:
        raise n.fail(f"activations {acts}")
    for what in ("clip", "input_forget", "layout"):
        if n.a.get(what):
            raise n.fail(f"{what}={n.a[what]}")
    if op == "GRU" and not n.a.get("linear_before_reset", 0):
        raise n.fail("linear_before_reset=0 (MXNet's GRU applies the reset after R)")
    if n.has(4) or n.has(7):
        raise n.fail("sequence_lens or peepholes")
    return {"LSTM": "lstm", "GRU": "gru", "RNN": "rnn_tanh"}[op]


def _rnn_state(g, n, slot: int, dirs: int, hidden: int):
    """The initial state of ``slot``, zeros shaped (dirs, batch, hidden) when absent."""
    if n.has(slot):
        return g.sym(n.ins[slot])
    x = mx.sym.slice_axis(g.sym(n.ins[0]), axis=0, begin=0, end=1)
    zero = mx.sym.sum(mx.sym.zeros_like(x), axis=2, keepdims=True)  # (1, batch, 1)
    return mx.sym.broadcast_to(zero, shape=(dirs, 0, hidden))


@imports("LSTM", "GRU", "RNN")
def _rnn(g, n):
    direction = n.a.get("direction", "forward")
    if direction == "reverse":
        raise n.fail("direction 'reverse' (MXNet runs forward or bidirectional)")
    dirs = 2 if direction == "bidirectional" else 1
    mode = _rnn_mode(g, n, n.op, dirs)
    w, r = const_in(g, n, 1, "W"), const_in(g, n, 2, "R")
    hidden = int(n.a["hidden_size"])
    gh = w.shape[1]
    b = const_in(g, n, 3, "B")
    b = np.zeros((dirs, 2 * gh), w.dtype) if b is None else b
    weights = [np.concatenate([_mx_gates(w[d], n.op, hidden).ravel(),
                               _mx_gates(r[d], n.op, hidden).ravel()]) for d in range(dirs)]
    biases = [np.concatenate([_mx_gates(b[d, :gh], n.op, hidden),
                              _mx_gates(b[d, gh:], n.op, hidden)]) for d in range(dirs)]
    flat = g.param(np.concatenate(weights + biases).astype(w.dtype), f"{n.label}_parameters")
    ins = [g.sym(n.ins[0]), flat, _rnn_state(g, n, 5, dirs, hidden)]
    if n.op == "LSTM":
        ins.append(_rnn_state(g, n, 6, dirs, hidden))
    out = mx.sym.RNN(*ins, mode=mode, state_size=hidden, num_layers=1,
                     bidirectional=dirs == 2, state_outputs=True, name=n.name)
    # MXNet's (T, N, dirs * H) -> ONNX's (T, dirs, N, H)
    y = mx.sym.reshape(out[0], shape=(0, 0, dirs, hidden))
    return [mx.sym.transpose(y, axes=(0, 2, 1, 3)), *[out[k] for k in range(1, len(out))]]
