"""``pick(log_softmax(x), label)`` as one op: the log-likelihood of the labelled classes.

Gluon's ``SoftmaxCrossEntropyLoss`` (and many symbolic scripts) compute
``-pick(log_softmax(pred, axis), label, axis, keepdims=True)`` averaged per sample. Bound as
written that is eight launches per step (log_softmax, pick, the negation, the mean, and their
four gradients). The graph rewrites declared here (``compiler.rewrite``) replace the pair by
``_log_softmax_pick`` when the log-softmax is read by the pick alone, on float32/float64
data, along the same axis, with no temperature, length or dtype option; then fold a
negation or scalar product of its result into its ``scale``, and a mean over just the picked
axis (length 1 with ``keepdims``) into dropping that axis. The user's symbol is unchanged
(its JSON, its outputs and their names); only the bound plan differs.

Numerics are those of the graph as written, value for value. The forward is ``log_softmax``
followed by a gather of the labelled entries (for a negated pick over the classes of 2-D
scores, torch's NLL loss kernel, which computes exactly ``-y[i, label_i]``). The gradient is
the pick gradient scattered into zeros (the NLL gradient kernel for the negated case) and
then log_softmax's gradient kernel, as the unfused ops run.

Examples
--------
>>> import symgraph as mx
>>> x, y = mx.sym.Variable('x'), mx.sym.Variable('y')
>>> loss = -mx.sym.pick(mx.sym.log_softmax(x), y)
>>> exe = loss.simple_bind(mx.cpu(), x=(4, 3), y=(4,))
>>> [s.split()[1] for s in exe.debug_str().splitlines() if 'pick' in s]
['torch:_log_softmax_pick', 'torch:_backward_log_softmax_pick']
"""
from __future__ import annotations

import functools

import torch

from ..attrs import Param, parse_params
from .base import Case, OpDef, Rewrite, register, register_rewrite
from .indexing import _PICK_PARAMS, _index_fn, _pick_dims, _pick_shape, value_type
from .reduce import reduce_axes
from .softmax import _PARAMS as _SOFTMAX_PARAMS
from .softmax import _softmax

_WIDE = (torch.float32, torch.float64)
_PARAMS = _PICK_PARAMS + (
    Param("scale", "float", 1.0, doc="Multiplies the result (a folded ``-x`` or ``x * s``)."),)


@functools.lru_cache(maxsize=64)
def _log_softmax_params(axis: int):
    return parse_params(_SOFTMAX_PARAMS, {"axis": str(axis)}, "_log_softmax_pick")


def _log_softmax(p, x: torch.Tensor, axis: int) -> torch.Tensor:
    if x.dtype in _WIDE:
        return torch.log_softmax(x, axis)
    return _softmax(_log_softmax_params(p.axis), [x], log=True)


def _shape(p, shapes):
    got = _pick_shape(p, shapes)
    if got is None:
        return None
    ins, outs = got
    return ins, outs + [tuple(ins[0]), _pick_dims(p, tuple(ins[0]))[1]]


def _type(p, types):
    got = value_type((0,))(p, types)
    return None if got is None else (got[0], got[1] * 2 + ["int64"])


def _nll(y: torch.Tensor, axis: int, scale: float) -> bool:
    """Whether torch's NLL loss kernels compute this op: rows of classes, result negated."""
    return scale == -1.0 and y.dim() == 2 and axis == 1


def _forward(p, ins, aux, rt):
    x, index = ins
    axis, drop, keep = _pick_dims(p, tuple(x.shape))
    y = _log_softmax(p, x, axis)
    positions = _index_fn(p, x.shape[axis], drop)(index)
    return _picked(y, axis, positions, keep, keep if p.keepdims else drop, p.scale), y, \
        positions


def _picked(y: torch.Tensor, axis: int, positions: torch.Tensor, keep: tuple, shape: tuple,
            scale: float) -> torch.Tensor:
    """The labelled entries of ``y`` times ``scale`` (``_mul_scalar``'s product), shaped
    ``shape``: ``-y[i, label_i]`` is the NLL loss kernel's exact result."""
    if _nll(y, axis, scale):
        out = torch._C._nn.nll_loss(y, positions, None, 0, -100)  # reduction 'none'
        return out if out.shape == shape else out.reshape(shape)
    out = torch.gather(y, axis, positions.reshape(keep)).reshape(shape)
    return out if scale == 1.0 else out.mul_(scale)  # gather's result is fresh


def _prepare(p, in_shapes, out_shapes, out=None):
    """Shapes fixed: axis, index conversion and output shape decided once."""
    if out is not None:
        return None
    axis, drop, keep = _pick_dims(p, tuple(in_shapes[0]))
    to_positions = _index_fn(p, in_shapes[0][axis], drop)
    shape, scale = keep if p.keepdims else drop, p.scale

    def run(p, ins, aux, rt):
        y = _log_softmax(p, ins[0], axis)
        positions = to_positions(ins[1])
        return _picked(y, axis, positions, keep, shape, scale), y, positions
    return run


def _backward(p, ins, aux, rt):
    g, y, positions = ins
    axis, drop, keep = _pick_dims(p, tuple(y.shape))
    return (_grad(g, y, axis, positions, keep, p.scale),)


def _grad(g: torch.Tensor, y: torch.Tensor, axis: int, positions: torch.Tensor,
          keep: tuple, scale: float) -> torch.Tensor:
    """The log-softmax gradient of the scattered pick gradient ``g * scale``: what the
    graph as written computes, value for value (see the module docstring)."""
    if _nll(y, axis, scale):  # the NLL gradient scatters -g
        dense = torch.ops.aten.nll_loss_backward(
            g.reshape(positions.shape), y, positions, None, 0, -100, _total_weight(y))
    else:
        picked = (g if scale == 1.0 else g * scale).reshape(keep).to(y.dtype)
        dense = torch.zeros_like(y).scatter_add_(axis, positions.reshape(keep), picked)
    return torch._log_softmax_backward_data(dense, y, axis, y.dtype)


def _total_weight(y: torch.Tensor) -> torch.Tensor:
    """The NLL gradient's ``total_weight`` (unread without reduction); one per dtype."""
    key = (y.dtype, y.device)
    t = _TOTAL_WEIGHT.get(key)
    if t is None:
        t = _TOTAL_WEIGHT[key] = torch.zeros((), dtype=y.dtype, device=y.device)
    return t


_TOTAL_WEIGHT: dict = {}


def _backward_prepare(p, in_shapes, out_shapes, out=None):
    if out is not None:
        return None
    axis, drop, keep = _pick_dims(p, tuple(in_shapes[1]))
    scale = p.scale
    return lambda p, ins, aux, rt: (_grad(ins[0], ins[1], axis, ins[2], keep, scale),)


def _triton_forward(p, ins, aux, rt):
    """Triton: the log-softmax kernel, then the pick gather (at the bounded positions)."""
    from ..kernels.index import pick
    from ..kernels.softmax import softmax_fwd
    x, index = ins
    axis, drop, keep = _pick_dims(p, tuple(x.shape))
    y = softmax_fwd(x, axis, None, None, log=True, dtype=x.dtype)
    positions = _index_fn(p, x.shape[axis], drop)(index)
    out = pick(y, positions, axis).reshape(keep if p.keepdims else drop)
    return (out if p.scale == 1.0 else out * p.scale), y, positions


def _triton_backward(p, ins, aux, rt):
    """Triton: the pick gradient scattered, then the log-softmax gradient kernel."""
    from ..kernels.index import pick_backward
    from ..kernels.softmax import softmax_bwd
    g, y, positions = ins
    axis = _pick_dims(p, tuple(y.shape))[0]
    g = g if p.scale == 1.0 else g * p.scale
    dy = pick_backward(g.to(y.dtype), positions, tuple(y.shape), axis)
    return (softmax_bwd(dy, y, axis, None, log=True, dtype=y.dtype),)


register(OpDef(
    name="_log_softmax_pick", inputs=("data", "index"),
    outputs=("output", "log_softmax", "positions"),
    num_visible=lambda p: 1, params=_PARAMS, hidden=True, infer_shape=_shape,
    infer_type=_type, forward=_forward, prepare=_prepare, kernel=_triton_forward,
    gradient=lambda g, p, ins, outs, og: [g.op(
        "_backward_log_softmax_pick", og[0], outs[1], outs[2], axis=p.axis,
        keepdims=p.keepdims, mode=p.mode, scale=p.scale), None],
    cases=(Case(((4, 5), (4,)), ints={1: 5}),
           Case(((3, 4, 2), (3, 1, 2)), {"axis": 1, "keepdims": True}, ints={1: 4}),
           Case(((3, 4), (4,)), {"axis": 0, "mode": "wrap", "scale": -1.0}, ints={1: 7})),
    doc="``pick(log_softmax(data, axis), index, axis)`` in one op (a graph rewrite puts it "
        "in bound plans); the log-softmax and the bounded int64 positions are hidden "
        "outputs for the gradient."))

register(OpDef(
    name="_backward_log_softmax_pick", inputs=("ograd", "log_softmax", "positions"),
    params=_PARAMS, hidden=True,
    infer_shape=lambda p, s: (s, [s[1]]) if s[1] else None,
    infer_type=value_type((1,)), forward=_backward, prepare=_backward_prepare,
    kernel=_triton_backward,
    doc="Gradient of ``_log_softmax_pick``: ``-exp(y) * g``, plus ``g`` at the picked "
        "positions."))


# ---------------------------------------------------------------- the rewrite

def _fuse(node, ctx):
    """``pick(log_softmax(x))`` -> ``_log_softmax_pick(x)`` where that changes nothing
    observable (see the module docstring); None where it does not apply."""
    src = node.inputs[0]
    lsm = src[0]
    if lsm.op is None or lsm.op.name != "log_softmax" or ctx.uses(src) != 1:
        return None
    lp, pp = lsm.params, node.params
    if lp.temperature not in (None, 1.0) or lp.dtype or lp.use_length or pp.axis is None:
        return None
    x = lsm.inputs[0]
    shape, dtype = ctx.shape(x), ctx.dtype(x)
    if not shape or dtype not in ("float32", "float64"):
        return None
    ndim = len(shape)
    if not (-ndim <= lp.axis < ndim and -ndim <= pp.axis < ndim) or \
            lp.axis % ndim != pp.axis % ndim:
        return None
    return ctx.node("_log_softmax_pick", node, [x, node.inputs[1]])


def _fused_input(node, ctx):
    """The fused node ``node`` reads (its single reader), or None."""
    src = node.inputs[0]
    fused = ctx.mapped[id(src[0])]
    if fused.op is None or fused.op.name != "_log_softmax_pick" or src[1] != 0 or \
            ctx.uses(src) != 1:
        return None
    return fused


def _fold_scale(node, ctx):
    """``-f`` or ``f * s`` of the fused op -> the fused op with ``scale`` (the same
    multiplication, on the same values, forward and backward)."""
    fused = _fused_input(node, ctx)
    if fused is None:
        return None
    scalar = -1.0 if node.op.name == "negative" else float(node.params.scalar)
    if fused.params.scale not in (1.0, -1.0) and scalar not in (1.0, -1.0):
        return None  # (v * a) * b is not v * (a * b) in floating point (exact if a = +-1)
    attrs = dict(fused.attrs, scale=repr(float(fused.params.scale) * float(scalar)))
    return ctx.node_from("_log_softmax_pick", fused.name, attrs, fused.inputs)


def _fold_mean(node, ctx):
    """A mean over only the picked axis of length 1 (a loss averaged per sample) -> the
    fused op without that axis (a mean of one value is the value)."""
    fused = _fused_input(node, ctx)
    if fused is None or not fused.params.keepdims or node.params.keepdims:
        return None
    shape = ctx.shape(node.inputs[0])
    if not shape or len(shape) < 2:
        return None
    axis = fused.params.axis % len(shape)
    if reduce_axes(node.params, len(shape)) != (axis,):
        return None
    attrs = dict(fused.attrs, keepdims="False")
    return ctx.node_from("_log_softmax_pick", fused.name, attrs, fused.inputs)


register_rewrite(Rewrite(name="log_softmax_pick", root="pick", apply=_fuse))
for _root in ("_mul_scalar", "negative"):
    register_rewrite(Rewrite(name=f"log_softmax_pick_{_root}", root=_root, apply=_fold_scale))
register_rewrite(Rewrite(name="log_softmax_pick_mean", root="mean", apply=_fold_mean))
