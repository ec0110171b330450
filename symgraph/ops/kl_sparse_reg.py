"""IdentityAttachKLSparseReg: the identity, with a KL sparseness penalty in its gradient.

Meant to follow a sigmoid (MXNet 1.9.1's op). With ``a`` the aux state ``moving_avg`` (one
value per channel, axis 1), ``t = sparseness_target`` and ``beta = penalty``::

    training forward:  a = momentum * a + (1 - momentum) * mean(data over all axes but 1)
    out  = data
    dx   = dy + beta * (-t / a + (1 - t) / (1 - a))        (broadcast along axis 1)

the gradient of ``beta * KL(t || a)`` per unit. MXNet updates ``moving_avg`` in its
backward pass; symgraph does in the training forward (the same values after a forward +
backward step, as for BatchNorm).

>>> import symgraph as mx
>>> net = mx.sym.IdentityAttachKLSparseReg(mx.sym.Variable('data'), name='kl')
>>> net.list_auxiliary_states(), net.infer_shape(data=(4, 3))
(['kl_moving_avg'], ([(4, 3)], [(4, 3)], [(3,)]))
"""
from __future__ import annotations

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, PlanHints, Special, register

_PARAMS = (
    Param("sparseness_target", "float", 0.1, doc="The sparseness target."),
    Param("penalty", "float", 0.001, doc="Weight of the sparseness penalty."),
    Param("momentum", "float", 0.9, doc="Momentum of the running average."),
)


def _shape(p, shapes):
    data = shapes[0]
    if not data:
        return None
    if len(data) < 2:
        raise ShapeError(f"IdentityAttachKLSparseReg: data must have at least 2 dimensions "
                         f"(a channel axis 1), got {data}")
    return [data, (data[1],)], [data]


def _axes(x) -> list[int]:
    return [i for i in range(x.dim()) if i != 1]


def _channel_view(x, a):
    """``a`` shaped to broadcast along axis 1 of ``x``."""
    return a.reshape([1, -1] + [1] * (x.dim() - 2))


def _forward(p, ins, aux, rt):
    x, moving = ins[0], aux[0]
    if rt.is_train:
        mean = x.to(moving.dtype).mean(dim=_axes(x))
        moving.mul_(p.momentum).add_(mean, alpha=1.0 - p.momentum)
    return (x.clone(),)


def _backward(p, ins, aux, rt):
    dy, moving = ins
    a = _channel_view(dy, moving)
    t = p.sparseness_target
    return (dy + p.penalty * (-t / a + (1 - t) / (1 - a)).to(dy.dtype),)


_UPDATE = "({0} * {m} + {1} * {rest})"
_PENALTY = "({0} + {beta} * (-{t} / {1} + {u} / (1.0 - {1})))"


def triton_kl_sparse_reg(p, ins, aux, rt):
    """Copy, and in training the batch mean (``symgraph.kernels.reduce``) folded into ``moving_avg``
    by a generated elementwise kernel writing it in place."""
    from ..kernels.copy import copy_view
    from ..kernels.elementwise import Program, run
    from ..kernels.reduce import reduce
    x, moving = ins[0], aux[0]
    if rt.is_train:
        n = x.numel() // x.shape[1]
        total = reduce(x, tuple(_axes(x)), "sum")
        expr = _UPDATE.format("{0}", "{1}", m=repr(float(p.momentum)),
                              rest=repr((1.0 - p.momentum) / n))
        run(Program(2, ((expr, ("x0", "x1")),), ("t0",)), [moving, total],
            tuple(moving.shape), moving.dtype, out=[moving])
    return (copy_view(x),)


def triton_kl_sparse_reg_backward(p, ins, aux, rt):
    """The penalised gradient as one generated elementwise kernel."""
    from ..kernels.elementwise import Program, run
    dy, moving = ins
    t = float(p.sparseness_target)
    expr = _PENALTY.format("{0}", "{1}", beta=repr(float(p.penalty)), t=repr(t),
                           u=repr(1.0 - t))
    prog = Program(2, ((expr, ("x0", "x1")),), ("t0",))
    return run(prog, [dy, _channel_view(dy, moving)], tuple(dy.shape), dy.dtype)


register(OpDef(
    name="_backward_IdentityAttachKLSparseReg", params=_PARAMS, hidden=True,
    inputs=("ograd", "moving_avg"), infer_shape=lambda p, s: (s, [s[0]]) if s[0] else None,
    forward=_backward, kernel=triton_kl_sparse_reg_backward,
    doc="The data gradient of IdentityAttachKLSparseReg from its head gradient and "
        "moving average."))

register(OpDef(
    name="IdentityAttachKLSparseReg", params=_PARAMS, inputs=("data",), aux=("moving_avg",),
    infer_shape=_shape, forward=_forward, kernel=triton_kl_sparse_reg,
    hints=PlanHints(mutates_aux=True),
    special=Special(var_attrs={"moving_avg": {"__init__": '["zero", {}]'}}),
    gradient=lambda g, p, ins, outs, og: [
        g.op("_backward_IdentityAttachKLSparseReg", og[0], ins[1], **p), None],
    cases=(Case(((4, 3), (3,)), low=0.2, high=0.8, grad=False),
           Case(((2, 3, 2), (3,)), {"sparseness_target": 0.3, "penalty": 0.01,
                                    "momentum": 0.5}, low=0.2, high=0.8, grad=False),
           Case(((3, 2), (2,)), low=0.2, high=0.8, train=False, grad=False)),
    doc="""The identity, attaching a KL-divergence sparseness penalty to the gradient.

    In training, ``moving_avg`` (one value per channel of axis 1) is updated with the batch
    mean: ``moving_avg = momentum * moving_avg + (1 - momentum) * mean``; the gradient adds
    ``penalty * (-sparseness_target / moving_avg + (1 - sparseness_target) /
    (1 - moving_avg))`` to the head gradient, broadcast along axis 1.
    """))
