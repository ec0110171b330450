"""``pick(log_softmax(x), label)`` as one op: the log-likelihood of the labelled classes.

Gluon's ``SoftmaxCrossEntropyLoss`` (and many symbolic scripts) compute
``-pick(log_softmax(pred, axis), label, axis)``. Bound as written that is four launches per
step (log_softmax, pick, and their two gradients, the second of which reads a scattered copy
of the first). The graph rewrite declared here (``symgraph.rewrite``) replaces the pair by
``_log_softmax_pick`` when the log-softmax is read by the pick alone, on float32/float64
data, along the same axis, with no temperature, length or dtype option. The user's symbol is
unchanged (its JSON, its outputs and their names); only the bound plan differs.

Numerics are MXNet's, operation for operation. The forward is ``log_softmax`` followed by a
gather of the labelled entries. The gradient is what ``_backward_log_softmax`` gives for the
scattered ``_backward_pick`` output, ``dy - exp(y) * sum(dy)``: ``sum(dy)`` along the axis is
the picked gradient itself, so ``dx = -exp(y) * g``, plus ``g`` at the labelled entries.

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

from ..attrs import parse_params
from .base import Case, OpDef, Rewrite, register, register_rewrite
from .indexing import _PICK_PARAMS, _index_fn, _pick_dims, _pick_shape, value_type
from .softmax import _PARAMS as _SOFTMAX_PARAMS
from .softmax import _softmax

_WIDE = (torch.float32, torch.float64)


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
    return ins, outs + [tuple(ins[0])]


def _type(p, types):
    got = value_type((0,))(p, types)
    return None if got is None else (got[0], got[1] * 2)


def _forward(p, ins, aux, rt):
    x, index = ins
    axis, drop, keep = _pick_dims(p, tuple(x.shape))
    y = _log_softmax(p, x, axis)
    positions = _index_fn(p, x.shape[axis], keep)(index)
    return torch.gather(y, axis, positions).reshape(keep if p.keepdims else drop), y


def _prepare(p, in_shapes, out_shapes, out=None):
    """Shapes fixed: axis, index conversion and output shape decided once."""
    if out is not None:
        return None
    axis, drop, keep = _pick_dims(p, tuple(in_shapes[0]))
    positions, shape = _index_fn(p, in_shapes[0][axis], keep), keep if p.keepdims else drop

    def run(p, ins, aux, rt):
        y = _log_softmax(p, ins[0], axis)
        return torch.gather(y, axis, positions(ins[1])).reshape(shape), y
    return run


def _backward(p, ins, aux, rt):
    g, y, index = ins
    axis, _, keep = _pick_dims(p, tuple(y.shape))
    positions = _index_fn(p, y.shape[axis], keep)(index)
    return (_grad(g, y, axis, keep, positions),)


def _grad(g: torch.Tensor, y: torch.Tensor, axis: int, keep: tuple, positions) -> torch.Tensor:
    gk = g.reshape(keep).to(y.dtype)
    dx = torch.exp(y).mul_(gk).neg_()
    return dx.scatter_add_(axis, positions, gk)


def _backward_prepare(p, in_shapes, out_shapes, out=None):
    if out is not None:
        return None
    axis, _, keep = _pick_dims(p, tuple(in_shapes[1]))
    positions = _index_fn(p, in_shapes[1][axis], keep)
    return lambda p, ins, aux, rt: (_grad(ins[0], ins[1], axis, keep, positions(ins[2])),)


def _triton_forward(p, ins, aux, rt):
    """Triton: the log-softmax kernel, then the pick gather."""
    from kernels.index import pick
    from kernels.softmax import softmax_fwd
    x, index = ins
    axis, drop, keep = _pick_dims(p, tuple(x.shape))
    y = softmax_fwd(x, axis, None, None, log=True, dtype=x.dtype)
    return pick(y, index, axis, p.mode).reshape(keep if p.keepdims else drop), y


def _triton_backward(p, ins, aux, rt):
    """Triton: the pick gradient scattered, then the log-softmax gradient kernel."""
    from kernels.index import pick_backward
    from kernels.softmax import softmax_bwd
    g, y, index = ins
    axis = _pick_dims(p, tuple(y.shape))[0]
    dy = pick_backward(g.to(y.dtype), index, tuple(y.shape), axis, p.mode)
    return (softmax_bwd(dy, y, axis, None, log=True, dtype=y.dtype),)


register(OpDef(
    name="_log_softmax_pick", inputs=("data", "index"), outputs=("output", "log_softmax"),
    num_visible=lambda p: 1, params=_PICK_PARAMS, hidden=True, infer_shape=_shape,
    infer_type=_type, forward=_forward, prepare=_prepare, kernel=_triton_forward,
    gradient=lambda g, p, ins, outs, og: [g.op(
        "_backward_log_softmax_pick", og[0], outs[1], ins[1], axis=p.axis,
        keepdims=p.keepdims, mode=p.mode), None],
    cases=(Case(((4, 5), (4,)), ints={1: 5}),
           Case(((3, 4, 2), (3, 1, 2)), {"axis": 1, "keepdims": True}, ints={1: 4}),
           Case(((3, 4), (4,)), {"axis": 0, "mode": "wrap"}, ints={1: 7})),
    doc="``pick(log_softmax(data, axis), index, axis)`` in one op (a graph rewrite puts it "
        "in bound plans); the log-softmax is a second, hidden output for the gradient."))

register(OpDef(
    name="_backward_log_softmax_pick", inputs=("ograd", "log_softmax", "index"),
    params=_PICK_PARAMS, hidden=True,
    infer_shape=lambda p, s: (s, [s[1]]) if s[1] else None,
    infer_type=value_type((1,)), forward=_backward, prepare=_backward_prepare,
    kernel=_triton_backward,
    doc="Gradient of ``_log_softmax_pick``: ``-exp(y) * g``, plus ``g`` at the picked "
        "entries."))


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


register_rewrite(Rewrite(name="log_softmax_pick", root="pick", apply=_fuse))
