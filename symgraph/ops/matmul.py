"""Matrix products: ``dot`` (MXNet's N-d contraction) and ``batch_dot``.

``dot`` also runs on sparse storage with MXNet 1.9.1's storage rules (CPU): ``csr . dense``
and ``csr . row_sparse`` give dense, ``csr.T . dense`` gives row_sparse (only the rows of
the columns the csr matrix uses), ``dense . csr`` gives csr; ``forward_stype`` asks for
another output storage. Its gradient for ``dot(csr, W)`` is row_sparse in ``W``: the rows
the batch touched, computed without a dense ``W``-shaped intermediate.

>>> import symgraph as mx
>>> x = mx.nd.sparse.csr_matrix(mx.nd.array([[0, 2], [0, 0], [1, 0]]))
>>> w = mx.nd.array([[1, 1, 1], [2, 2, 2]])
>>> mx.nd.dot(x, w).asnumpy().tolist()
[[4.0, 4.0, 4.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]
>>> g = mx.nd.dot(x, mx.nd.ones((3, 3)), transpose_a=True)
>>> g.stype, g.indices.asnumpy().tolist()
('row_sparse', [0, 1])
"""
from __future__ import annotations

import torch

from ..attrs import Param
from ..base import ShapeError
from ..sparse import formats
from ..sparse.formats import CSR, RowSparse, stype_of
from .base import Case, OpDef, PlanHints, Storage, register

_PARAMS = (Param("transpose_a", "bool", False), Param("transpose_b", "bool", False),
           Param("forward_stype", "str", "None", ("None", "csr", "default", "row_sparse"),
                 doc="Storage type of the output (None: MXNet's rule for the inputs)."))


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
    need_a, need_b = p.get("_needed") or (True, True)
    da = matmul(dy2, b2.t()).reshape(a_eff.shape) if need_a else None
    db = matmul(a2.t(), dy2).reshape(b_eff.shape) if need_b else None
    return (_t(da) if p.transpose_a and need_a else da, _t(db) if p.transpose_b and need_b else db)


def triton_batch_dot(p, ins, aux, rt):
    """Triton kernel: batched matmul with transposes as strided views (N-D inputs: the
    batch dims flattened into one)."""
    from ..kernels.gemm import bmm
    a, b = _bt(ins[0], p.transpose_a), _bt(ins[1], p.transpose_b)
    batch = a.shape[:-2]
    out = bmm(a.reshape((-1,) + a.shape[-2:]), b.reshape((-1,) + b.shape[-2:]))
    return (out.reshape(batch + out.shape[-2:]),)


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
    need_a, need_b = p.get("_needed") or (True, True)  # an unread gradient is skipped
    da = torch.mm(dy2, b2.t()).reshape(a_eff.shape) if need_a else None
    db = torch.mm(a2.t(), dy2).reshape(b_eff.shape) if need_b else None
    return (_t(da) if p.transpose_a and need_a else da, _t(db) if p.transpose_b and need_b else db)


# ------------------------------------------------------------------ dot on sparse storage

DNS, RSP, CSR_S = "default", "row_sparse", "csr"


def _hint(p) -> str | None:
    return None if p.forward_stype in (None, "None") else p.forward_stype


def _mxnet_out_stype(p, lhs: str, rhs: str) -> str:
    """The output storage MXNet 1.9.1 gives on CPU, by its kernel or by its fallback."""
    hint = _hint(p)
    if hint is not None:
        return hint
    if lhs == CSR_S and rhs in (DNS, RSP) and p.transpose_a and not p.transpose_b:
        return RSP
    if lhs == DNS and rhs == CSR_S and not p.transpose_a:
        return CSR_S
    return DNS


def _has_kernel(p, lhs: str, rhs: str) -> bool:
    """Whether :func:`_sparse_product` computes these operands without densifying them."""
    tb = p.transpose_b
    return (lhs == CSR_S and rhs in (DNS, RSP) and not tb) or \
        (lhs == DNS and rhs == CSR_S) or (lhs == RSP and rhs == DNS) or \
        (lhs == DNS and rhs == RSP and not tb)


def _dot_storage(p, stypes):
    lhs, rhs = stypes[:2]
    out = _mxnet_out_stype(p, lhs, rhs)
    if out == DNS and not _has_kernel(p, lhs, rhs):
        return None  # the dense forward on dense copies (MXNet's fallback)
    return [out]


def _dot_sparse(p, ins, aux, rt):
    lhs, rhs = ins
    target = _mxnet_out_stype(p, stype_of(lhs), stype_of(rhs))
    out = _sparse_product(lhs, rhs, p.transpose_a, p.transpose_b, target)
    if out is None:  # MXNet's fallback to a sparse output: dense product, then cast
        from ..sparse.dispatch import densify  # dispatch sits above the op table
        where = f"operator dot (lhs {stype_of(lhs)} {tuple(lhs.shape)}, rhs {stype_of(rhs)} " \
                f"{tuple(rhs.shape)})"
        out = _dot_forward(p, [densify(lhs, where), densify(rhs, where)], aux, rt)[0]
    return (formats.cast(out, target),)


def _spmm(rows: torch.Tensor, cols: torch.Tensor, vals: torch.Tensor, n_rows: int,
          dense: torch.Tensor) -> torch.Tensor:
    """``S @ dense`` for the ``(n_rows, len(dense))`` matrix S with entries (rows, cols, vals)."""
    if vals.numel() and vals.dtype in (torch.float32, torch.float64):
        s = torch.sparse_coo_tensor(torch.stack([rows, cols]), vals, (n_rows, dense.shape[0]),
                                    check_invariants=False)
        return torch.sparse.mm(s, dense)
    out = torch.zeros((n_rows, dense.shape[1]), dtype=dense.dtype, device=dense.device)
    if not vals.numel():
        return out
    return out.index_add_(0, rows, vals.unsqueeze(1) * dense.index_select(0, cols))


def csr_mm(c: CSR, rhs) -> torch.Tensor:
    """``c @ rhs`` for a csr ``c`` and a dense or row_sparse ``rhs`` (only its stored rows
    are read), as a dense tensor.

    >>> m = formats.from_dense(torch.tensor([[0., 2.], [1., 0.]]), "csr")
    >>> csr_mm(m, torch.tensor([[1., 1.], [3., 4.]])).tolist()
    [[6.0, 8.0], [1.0, 1.0]]
    """
    rows, cols, vals = formats.csr_rows(c), c.indices, c.data
    if isinstance(rhs, RowSparse):
        stored = rhs.indices
        pos = torch.searchsorted(stored, cols).clamp_(max=max(stored.numel() - 1, 0))
        hit = stored[pos] == cols if stored.numel() else torch.zeros_like(cols, dtype=bool)
        rows, cols, vals, rhs = rows[hit], pos[hit], vals[hit], rhs.data
    return _spmm(rows, cols, vals, c.shape[0], rhs)


def _csr_t_mm(c: CSR, dense: torch.Tensor, rows: bool):
    """``c.T @ dense``: row_sparse over the columns ``c`` stores (``rows``), else dense."""
    r = formats.csr_rows(c)
    if not rows:
        return _spmm(c.indices, r, c.data, c.shape[1], dense)
    uniq, pos = torch.unique(c.indices, sorted=True, return_inverse=True)
    return RowSparse(_spmm(pos.reshape(-1), r, c.data, uniq.numel(), dense), uniq,
                     (c.shape[1], dense.shape[1]))


def _sparse_product(lhs, rhs, ta: bool, tb: bool, target: str):
    """``op(lhs) @ op(rhs)`` with a sparse 2-D operand, never densified; None: no kernel."""
    if isinstance(lhs, CSR) and not tb and not isinstance(rhs, CSR) and len(rhs.shape) == 2:
        if ta:
            return _csr_t_mm(lhs, formats.to_dense(rhs), rows=target == RSP)
        return csr_mm(lhs, rhs)
    dense_l = isinstance(lhs, torch.Tensor) and lhs.dim() == 2
    if isinstance(rhs, CSR) and dense_l:  # a @ csr == (csr.T @ a.T).T
        a_t = lhs if ta else lhs.t()
        prod = csr_mm(rhs, a_t) if tb else _csr_t_mm(rhs, a_t, rows=False)
        return prod.t().contiguous()
    if isinstance(lhs, RowSparse) and len(lhs.shape) == 2 and isinstance(rhs, torch.Tensor) \
            and rhs.dim() == 2:
        b = rhs.t() if tb else rhs
        if ta:  # lhs.T @ b: only the rows of b the stored rows of lhs meet
            return lhs.data.t() @ b.index_select(0, lhs.indices)
        out = torch.zeros((lhs.shape[0], b.shape[1]), dtype=b.dtype, device=b.device)
        return out.index_copy_(0, lhs.indices, lhs.data @ b)
    if isinstance(rhs, RowSparse) and len(rhs.shape) == 2 and dense_l and not tb:
        a = lhs.t() if ta else lhs
        return a.index_select(1, rhs.indices) @ rhs.data
    return None


def _backward_storage(p, stypes):
    """MXNet's gradient storage of ``dot``: a row_sparse rhs gradient for ``dot(csr, rhs)``."""
    og, lhs, rhs = stypes[:3]
    ta, tb = p.transpose_a, p.transpose_b
    if lhs == CSR_S and not ta and not tb and og in (DNS, RSP):
        return [DNS, RSP]
    if lhs == CSR_S and ta and not tb and og == DNS:
        return [DNS, DNS]
    if lhs == DNS and rhs == CSR_S and not ta and og == DNS:
        return [DNS, DNS]
    return None


def _backward_sparse(p, ins, aux, rt):
    og, lhs, rhs = formats.to_dense(ins[0]), ins[1], ins[2]
    need_a, need_b = p.get("_needed") or (True, True)
    ta, tb = p.transpose_a, p.transpose_b
    if isinstance(lhs, CSR):  # out = op(csr) @ rhs
        da = None
        if need_a:  # a dense csr-shaped gradient (MXNet refuses to compute it)
            rhs_d = formats.to_dense(rhs)
            da = rhs_d @ og.t() if ta else og @ rhs_d.t()
        db = _sparse_product(lhs, og, not ta, False, DNS if ta else RSP) if need_b else None
        return (da, db)
    da = _sparse_product(og, rhs, False, not tb, DNS) if need_a else None  # out = lhs @ op(csr)
    db = (og.t() @ lhs if tb else lhs.t() @ og) if need_b else None
    return (da, db)


register(OpDef(
    name="_backward_dot", params=_PARAMS, inputs=("ograd", "lhs", "rhs"), hidden=True,
    outputs=("lhs_grad", "rhs_grad"),
    infer_shape=lambda p, s: (s, [s[1], s[2]]) if s[1] and s[2] else None,
    forward=_backward_dot, kernel=triton_backward_dot,
    storage=Storage(_backward_storage, _backward_sparse),
    hints=PlanHints(skips_unused_outputs=True),
    doc="Gradients of ``dot`` with respect to both operands."))


register(OpDef(
    name="dot", params=_PARAMS, inputs=("lhs", "rhs"), infer_shape=_dot_shape,
    forward=_dot_forward, gradient=_dot_grad, prepare=_dot_prepare, kernel=triton_dot,
    storage=Storage(_dot_storage, _dot_sparse),
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
    same_batch = all(x == y or not x or not y for x, y in zip(a[:-2], b[:-2]))
    if len(a) < 3 or len(a) != len(b) or not same_batch:
        raise ShapeError(f"batch_dot expects N-D inputs (N >= 3) with the same batch dims, "
                         f"got lhs {a}, rhs {b}")
    m, k = (a[-1], a[-2]) if p.transpose_a else (a[-2], a[-1])
    k2, n = (b[-1], b[-2]) if p.transpose_b else (b[-2], b[-1])
    if not k or not k2:
        return None  # MXNet waits until the contracted sizes are known
    if k != k2:
        raise ShapeError(f"batch_dot shape error: lhs {a} and rhs {b} do not match on the "
                         "contracted axis")
    batch = tuple(x or y for x, y in zip(a[:-2], b[:-2]))
    return shapes, [batch + (m, n)]


def _bt(x, flag):
    return x.transpose(-1, -2) if flag else x


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
    forward=lambda p, ins, aux, rt: (torch.matmul(_bt(ins[0], p.transpose_a),
                                                  _bt(ins[1], p.transpose_b)),),
    gradient=_batch_grad, kernel=triton_batch_dot,
    cases=(Case(((2, 3, 4), (2, 4, 5))),
           Case(((2, 2, 3, 4), (2, 2, 5, 4)), {"transpose_b": True}),
           Case(((2, 4, 3), (2, 4, 5)), {"transpose_a": True}),
           Case(((2, 3, 4), (2, 5, 4)), {"transpose_b": True}),
           Case(((2, 4, 3), (2, 5, 4)), {"transpose_a": True, "transpose_b": True})),
    doc="Batched matrix product over the leading dims: (B..., M, K) x (B..., K, N) -> "
        "(B..., M, N)."))
