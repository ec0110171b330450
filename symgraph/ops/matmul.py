"""Matrix products: ``dot`` (MXNet's N-d contraction) and ``batch_dot``."""
from __future__ import annotations

import torch

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, register

_PARAMS = (Param("transpose_a", "bool", False), Param("transpose_b", "bool", False),
           Param("forward_stype", "str", "None"))


def _t(x: torch.Tensor) -> torch.Tensor:
    """MXNet's transpose of an N-d operand: reverse every axis."""
    return x.permute(*range(x.dim() - 1, -1, -1)) if x.dim() > 1 else x


def _dot_shape(p, shapes):
    a, b = shapes
    if not a or not b:
        return None
    a2 = a[::-1] if p.transpose_a else a
    b2 = b[::-1] if p.transpose_b else b
    if not a2[-1] or not b2[0]:
        return None  # the contracted size must be known (unknown batch dims pass through)
    if a2[-1] != b2[0]:
        raise ShapeError(f"dot shape error: lhs {a}{' (transposed)' if p.transpose_a else ''} "
                         f"and rhs {b}{' (transposed)' if p.transpose_b else ''} do not match on "
                         "the contracted axis")
    out = tuple(a2[:-1]) + tuple(b2[1:])
    return shapes, [out or (1,)]


def _dot_forward(p, ins, aux, rt):
    a = _t(ins[0]) if p.transpose_a else ins[0]
    b = _t(ins[1]) if p.transpose_b else ins[1]
    if a.dim() == 2 and b.dim() == 2:
        return (torch.mm(a, b),)
    out = torch.tensordot(a, b, dims=1)
    return (out.reshape(1) if out.dim() == 0 else out,)


def _as_matrices(p, a, b):
    """MXNet's dot operands (after transposes) as (M, K) and (K, N) views where possible."""
    a_eff = _t(a) if p.transpose_a else a
    b_eff = _t(b) if p.transpose_b else b
    k = a_eff.shape[-1] if a_eff.dim() else 1
    return a_eff, b_eff, a_eff.reshape(-1, k), b_eff.reshape(k, -1)


def triton_dot(p, ins, aux, rt):
    """Triton kernel: N-d dot as one (M, K) x (K, N) matmul on strided views."""
    from ..kernels.gemm import matmul
    a_eff, b_eff, a2, b2 = _as_matrices(p, ins[0], ins[1])
    out = matmul(a2, b2).reshape(tuple(a_eff.shape[:-1]) + tuple(b_eff.shape[1:]))
    return (out.reshape(1) if out.dim() == 0 else out,)


def triton_backward_dot(p, ins, aux, rt):
    """Triton kernels: ``da = dy @ b.T`` and ``db = a.T @ dy`` on transposed views."""
    from ..kernels.gemm import matmul
    a_eff, b_eff, a2, b2 = _as_matrices(p, ins[1], ins[2])
    dy2 = ins[0].reshape(a2.shape[0], b2.shape[1])
    da = matmul(dy2, b2.t()).reshape(a_eff.shape)
    db = matmul(a2.t(), dy2).reshape(b_eff.shape)
    return (_t(da) if p.transpose_a else da, _t(db) if p.transpose_b else db)


def triton_batch_dot(p, ins, aux, rt):
    """Triton kernel: batched matmul with transposes as strided views."""
    from ..kernels.gemm import bmm
    return (bmm(_bt(ins[0], p.transpose_a), _bt(ins[1], p.transpose_b)),)


def _dot_prepare(p, in_shapes, out_shapes, out=None):
    """2-D ``dot``: transposes resolved at bind time; ``out`` given: ``torch.mm`` into it."""
    if len(in_shapes[0]) != 2 or len(in_shapes[1]) != 2:
        return None
    ta, tb = p.transpose_a, p.transpose_b
    if out is None:
        def mm(p, ins, aux, rt):
            return (torch.mm(ins[0].t() if ta else ins[0], ins[1].t() if tb else ins[1]),)
        return mm
    result = (out,)

    def mm_into(p, ins, aux, rt):
        torch.mm(ins[0].t() if ta else ins[0], ins[1].t() if tb else ins[1], out=out)
        return result
    return mm_into


def _dot_grad(g, p, ins, outs, og):
    return g.multi("_backward_dot", og[0], ins[0], ins[1], transpose_a=p.transpose_a,
                   transpose_b=p.transpose_b)


def _backward_dot(p, ins, aux, rt):
    dy, a, b = ins
    a_eff = _t(a) if p.transpose_a else a
    b_eff = _t(b) if p.transpose_b else b
    k = a_eff.shape[-1]
    a2 = a_eff.reshape(-1, k)
    b2 = b_eff.reshape(k, -1)
    dy2 = dy.reshape(a2.shape[0], b2.shape[1])
    da = torch.mm(dy2, b2.t()).reshape(a_eff.shape)
    db = torch.mm(a2.t(), dy2).reshape(b_eff.shape)
    return (_t(da) if p.transpose_a else da, _t(db) if p.transpose_b else db)


register(OpDef(
    name="_backward_dot", params=_PARAMS, inputs=("ograd", "lhs", "rhs"), hidden=True,
    outputs=("lhs_grad", "rhs_grad"),
    infer_shape=lambda p, s: (s, [s[1], s[2]]) if s[1] and s[2] else None,
    forward=_backward_dot, kernel=triton_backward_dot,
    doc="Gradients of ``dot`` with respect to both operands."))


register(OpDef(
    name="dot", params=_PARAMS, inputs=("lhs", "rhs"), infer_shape=_dot_shape,
    forward=_dot_forward, gradient=_dot_grad, prepare=_dot_prepare, kernel=triton_dot,
    cases=(Case(((3, 4), (4, 5))), Case(((4, 3), (4, 5)), {"transpose_a": True}),
           Case(((3, 4), (5, 4)), {"transpose_b": True}),
           Case(((4, 3), (5, 4)), {"transpose_a": True, "transpose_b": True}),
           Case(((4,), (4,))), Case(((2, 3, 4), (4, 5))), Case(((4, 3), (4, 2, 5)),
                                                                 {"transpose_a": True})),
    doc="Dot product: contracts the last axis of lhs with the first axis of rhs."))


def _batch_shape(p, shapes):
    a, b = shapes
    if not a or not b:
        return None
    if len(a) != 3 or len(b) != 3 or (a[0] and b[0] and a[0] != b[0]):
        raise ShapeError(f"batch_dot expects 3-D inputs with one batch size, got lhs {a}, "
                         f"rhs {b}")
    m, k = (a[2], a[1]) if p.transpose_a else (a[1], a[2])
    k2, n = (b[2], b[1]) if p.transpose_b else (b[1], b[2])
    if not k or not k2:
        return None  # MXNet waits until the contracted sizes are known
    if k != k2:
        raise ShapeError(f"batch_dot shape error: lhs {a} and rhs {b} do not match on the "
                         "contracted axis")
    return shapes, [(a[0] or b[0], m, n)]


def _bt(x, flag):
    return x.transpose(1, 2) if flag else x


def _batch_grad(g, p, ins, outs, og):
    a, b = ins
    dy = og[0]
    ta, tb = p.transpose_a, p.transpose_b
    if not ta:
        da = g.op("batch_dot", dy, b, transpose_b=not tb)
    else:
        da = g.op("batch_dot", b, dy, transpose_a=tb, transpose_b=True)
    if not tb:
        db = g.op("batch_dot", a, dy, transpose_a=not ta)
    else:
        db = g.op("batch_dot", dy, a, transpose_a=True, transpose_b=ta)
    return [da, db]


register(OpDef(
    name="batch_dot", params=_PARAMS, inputs=("lhs", "rhs"), infer_shape=_batch_shape,
    forward=lambda p, ins, aux, rt: (torch.bmm(_bt(ins[0], p.transpose_a),
                                               _bt(ins[1], p.transpose_b)),),
    gradient=_batch_grad, kernel=triton_batch_dot,
    cases=(Case(((2, 3, 4), (2, 4, 5))),
           Case(((2, 4, 3), (2, 4, 5)), {"transpose_a": True}),
           Case(((2, 3, 4), (2, 5, 4)), {"transpose_b": True}),
           Case(((2, 4, 3), (2, 5, 4)), {"transpose_a": True, "transpose_b": True})),
    doc="Batched matrix product of two 3-D arrays: (B, M, K) x (B, K, N) -> (B, M, N)."))
