"""Storage rules and sparse kernels shared by the elementwise operators (MXNet's
FInferStorageType + FComputeEx of its elemwise unary, binary, scalar and broadcast ops).

Each rule here is a :class:`Storage`, the value of an op row's ``OpDef.storage``:

- :data:`KEEP_SPARSE`: a zero-preserving unary op (``f(0) == 0``: abs, sqrt, sin, ...) keeps a
  row_sparse or csr input's storage and runs on the stored values only;
- :func:`scalar_rule`: an array-with-scalar op keeps the storage when ``f(0, s) == 0`` for its
  scalar (``x * s`` always, ``x + s`` only for ``s == 0``, comparisons when 0 fails them);
- :func:`union_rule` (add, sub, maximum, minimum, hypot): row_sparse with row_sparse gives the
  union of their rows, csr with csr the union of their entries; :func:`additive_rule` adds
  the dense-with-sparse forms of add/sub (dense out, the sparse operand scattered in);
- :data:`MULTIPLY`: ``elemwise_mul`` keeps the sparse operand's storage against a dense one
  and intersects two sparse ones;
- :func:`broadcast_scale`: ``broadcast_mul``/``broadcast_div`` of a csr by a dense array
  broadcast to it stays csr;
- :func:`masked_rule`: relu's gradient keeps the output's sparse storage;
- :data:`ADD_N`, :data:`WHERE`, :func:`clip_rule`, :data:`ZEROS_LIKE`.

Where a rule's ``infer`` returns None the dispatcher runs the dense forward on dense copies (MXNet's
storage fallback), so a rule only lists what MXNet keeps sparse. The kernels never densify a
sparse operand.

>>> import torch
>>> from symgraph.sparse.formats import from_dense, to_dense
>>> a = from_dense(torch.tensor([[1., 0.], [0., 0.], [0., 2.]]), "row_sparse")
>>> b = from_dense(torch.tensor([[0., 0.], [3., 0.], [0., 4.]]), "row_sparse")
>>> out = union_kernel(torch.add)(None, [a, b], [], None)[0]
>>> out.indices.tolist(), to_dense(out).tolist()
([0, 1, 2], [[1.0, 0.0], [3.0, 0.0], [0.0, 6.0]])
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..base import MXNetError, ShapeError
from .formats import (
    CSR,
    CSR_STYPE,
    DEFAULT,
    INDEX,
    ROW_SPARSE,
    RowSparse,
    csr_rows,
    empty_like_stype,
    gather_rows,
    scatter_rows,
)

RSP, CSR_S, DNS = ROW_SPARSE, CSR_STYPE, DEFAULT
SPARSE = (RSP, CSR_S)
Binary = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Storage:
    """MXNet's FInferStorageType and FComputeEx: what an op does on sparse storage (the
    ``OpDef.storage`` field; the shared rules below are instances an op row names).

    ``infer(p, input stypes (inputs then aux))`` gives the outputs' storage types where the
    op has a sparse kernel for these input types, or None: the dense forward then runs on
    dense copies (MXNet's storage fallback). ``forward(p, ins, aux, rt)`` runs on tensors and
    :class:`~symgraph.sparse.formats.RowSparse`/:class:`~symgraph.sparse.formats.CSR`
    values; None means the op is zero-preserving and elementwise, so its dense forward
    applied to the stored values is its sparse forward.
    """

    infer: Callable  # (p, input stypes) -> output stypes, or None: the dense fallback
    forward: Callable | None = None  # None: the dense forward on the stored values


# ------------------------------------------------------------------ unary and scalar


def _keep_sparse(p, stypes: list[str]) -> list[str] | None:
    return [stypes[0]] if stypes[0] in SPARSE else None


KEEP_SPARSE = Storage(_keep_sparse)  # forward None: the dense forward on the stored values


def scalar_rule(keeps: Callable | None = None) -> Storage:
    """The storage of an array-with-scalar op: the input's when ``keeps(p)`` (always when
    None), the dense fallback otherwise.

    >>> from types import SimpleNamespace
    >>> rule = scalar_rule(scalar_is_zero)
    >>> rule.infer(SimpleNamespace(scalar=0.0), ["csr"])
    ['csr']
    >>> rule.infer(SimpleNamespace(scalar=1.0), ["csr"]) is None
    True
    """
    def infer(p, stypes):
        return _keep_sparse(p, stypes) if keeps is None or keeps(p) else None
    return Storage(infer)


def zero_kept(ref: Callable) -> Callable:
    """``p -> ref(0, p.scalar) == 0``: whether the scalar op leaves a zero a zero.

    >>> from types import SimpleNamespace
    >>> keeps = zero_kept(torch.gt)  # x > s
    >>> keeps(SimpleNamespace(scalar=0.0)), keeps(SimpleNamespace(scalar=-1.0))
    (True, False)
    """
    def keeps(p) -> bool:
        return bool(ref(torch.zeros(1), p.scalar).eq(0).all())
    return keeps


def scalar_is_zero(p) -> bool:
    """``x + s`` and ``x - s`` keep the storage only for ``s == 0`` (as MXNet)."""
    return p.scalar == 0


def _zeros_like(p, ins, aux, rt):
    v = ins[0]
    return (empty_like_stype(v.stype, v.shape, v.dtype, v.device),)


ZEROS_LIKE = Storage(_keep_sparse, _zeros_like)


def clip_rule(op: str = "clip") -> Storage:
    """``clip`` keeps sparse storage when ``a_min <= 0 <= a_max``; MXNet has no kernel
    (an error, not a fallback) for other bounds on sparse input.

    >>> from types import SimpleNamespace
    >>> clip_rule().infer(SimpleNamespace(a_min=-1.0, a_max=1.0), ["row_sparse"])
    ['row_sparse']
    >>> clip_rule().infer(SimpleNamespace(a_min=0.5, a_max=1.0), ["csr"])
    Traceback (most recent call last):
    ...
    symgraph.base.MXNetError: Operator not implemented: operator = clip, ...
    """
    def infer(p, stypes):
        if stypes[0] not in SPARSE:
            return None
        if not p.a_min <= 0 <= p.a_max:
            raise MXNetError(f"Operator not implemented: operator = {op}, input storage type "
                             f"{stypes[0]} with a_min={p.a_min}, a_max={p.a_max} (a sparse "
                             "input needs a_min <= 0 <= a_max)")
        return [stypes[0]]
    return Storage(infer)


# ------------------------------------------------------------------ csr entry algebra


def _csr_keys(v: CSR) -> tuple[torch.Tensor, torch.Tensor]:
    """The flat position ``row * cols + col`` of each stored entry (sorted) and its value."""
    keys = csr_rows(v) * v.shape[1] + v.indices
    order = torch.argsort(keys)
    return keys[order], v.data[order]


def _lookup(keys: torch.Tensor, vals: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
    """``vals`` at ``query`` in the sorted ``keys`` (zero where absent)."""
    out = torch.zeros(query.shape, dtype=vals.dtype, device=vals.device)
    if keys.numel() and query.numel():
        pos = torch.searchsorted(keys, query).clamp_(max=keys.numel() - 1)
        hit = keys[pos] == query
        out[hit] = vals[pos[hit]]
    return out


def _csr_from_keys(keys: torch.Tensor, data: torch.Tensor, shape: tuple) -> CSR:
    """A csr matrix from sorted flat positions and their values."""
    rows, cols = keys // shape[1], keys % shape[1]
    indptr = torch.zeros(shape[0] + 1, dtype=INDEX, device=keys.device)
    indptr[1:] = torch.bincount(rows, minlength=shape[0]).cumsum(0)
    return CSR(data, cols.to(INDEX), indptr, tuple(shape))


def csr_combine(fn: Binary, a: CSR, b: CSR, union: bool = True) -> CSR:
    """``fn`` of two csr matrices over the union (or intersection) of their entries.

    >>> from symgraph.sparse.formats import from_dense
    >>> a = from_dense(torch.tensor([[1., 0.], [0., 2.]]), "csr")
    >>> b = from_dense(torch.tensor([[3., 4.], [0., 0.]]), "csr")
    >>> csr_combine(torch.mul, a, b, union=False).data.tolist()
    [3.0]
    >>> csr_combine(torch.add, a, b).indptr.tolist()
    [0, 2, 3]
    """
    ka, va = _csr_keys(a)
    kb, vb = _csr_keys(b)
    if union:
        keys = torch.unique(torch.cat([ka, kb]), sorted=True)
    else:
        keys = ka[torch.isin(ka, kb)]
    return _csr_from_keys(keys, fn(_lookup(ka, va, keys), _lookup(kb, vb, keys)), a.shape)


def rsp_combine(fn: Binary, a: RowSparse, b: RowSparse, union: bool = True) -> RowSparse:
    """``fn`` of two row_sparse arrays over the union (or intersection) of their rows."""
    if union:
        rows = torch.unique(torch.cat([a.indices, b.indices]), sorted=True)
    else:
        rows = a.indices[torch.isin(a.indices, b.indices)]
    return RowSparse(fn(gather_rows(a, rows).data, gather_rows(b, rows).data), rows, a.shape)


def _combine(fn: Binary, a, b, union: bool):
    if isinstance(a, RowSparse):
        return rsp_combine(fn, a, b, union)
    return csr_combine(fn, a, b, union)


# ------------------------------------------------------------------ binary, same shape


def _same_sparse(stypes: list[str]) -> bool:
    return stypes[0] == stypes[1] and stypes[0] in SPARSE


def union_kernel(fn: Binary) -> Callable:
    """The sparse forward of a binary op with ``fn(0, 0) == 0`` on two arrays of one
    sparse storage type: ``fn`` over the union of their stored rows/entries."""
    def forward(p, ins, aux, rt):
        return (_combine(fn, ins[0], ins[1], union=True),)
    return forward


def union_rule(fn: Binary) -> Storage:
    """row_sparse (op) row_sparse -> row_sparse, csr (op) csr -> csr; else the fallback."""
    return Storage(lambda p, s: [s[0]] if _same_sparse(s) else None, union_kernel(fn))


def _scatter_sparse(dense: torch.Tensor, value, sign: float) -> torch.Tensor:
    """``dense += sign * value`` (sign +-1, any dtype) for a sparse ``value``, touching its
    stored part only."""
    data = value.data if sign > 0 else value.data.neg()
    if isinstance(value, RowSparse):
        return scatter_rows(dense, value._replace(data=data.to(dense.dtype)))
    if data.numel():
        dense.index_put_((csr_rows(value), value.indices), data.to(dense.dtype), accumulate=True)
    return dense


def additive_rule(fn: Binary, sign: float) -> Storage:
    """``lhs + sign * rhs``: :func:`union_rule`, and dense with sparse -> dense without a
    dense copy of the sparse operand.

    >>> from symgraph.sparse.formats import from_dense
    >>> rsp = from_dense(torch.tensor([[0., 0.], [1., 2.]]), "row_sparse")
    >>> sub = additive_rule(torch.sub, -1.0)
    >>> sub.infer(None, ["default", "row_sparse"])
    ['default']
    >>> sub.forward(None, [torch.ones(2, 2), rsp], [], None)[0].tolist()
    [[1.0, 1.0], [0.0, -1.0]]
    """
    def infer(p, stypes):
        if _same_sparse(stypes):
            return [stypes[0]]
        return [DNS] if DNS in stypes and (stypes[0] in SPARSE or stypes[1] in SPARSE) else None

    def forward(p, ins, aux, rt):
        lhs, rhs = ins
        if not isinstance(lhs, torch.Tensor) and not isinstance(rhs, torch.Tensor):
            return (_combine(fn, lhs, rhs, union=True),)
        if isinstance(lhs, torch.Tensor):
            return (_scatter_sparse(lhs.clone(), rhs, sign),)
        base = rhs.neg() if sign < 0 else rhs.clone()
        return (_scatter_sparse(base, lhs, 1.0),)
    return Storage(infer, forward)


def _dense_at(dense: torch.Tensor, value) -> torch.Tensor:
    """The entries of ``dense`` where the sparse ``value`` stores its values."""
    if isinstance(value, RowSparse):
        return dense.index_select(0, value.indices)
    return dense[csr_rows(value), value.indices]


def _multiply_infer(p, stypes):
    lhs, rhs = stypes
    if _same_sparse(stypes):
        return [lhs]
    if DNS in stypes and (lhs in SPARSE or rhs in SPARSE):
        return [lhs if lhs in SPARSE else rhs]
    return None


def _multiply(p, ins, aux, rt):
    lhs, rhs = ins
    if not isinstance(lhs, torch.Tensor) and not isinstance(rhs, torch.Tensor):
        return (_combine(torch.mul, lhs, rhs, union=False),)
    if isinstance(lhs, torch.Tensor):
        return (rhs._replace(data=_dense_at(lhs, rhs) * rhs.data),)
    return (lhs._replace(data=lhs.data * _dense_at(rhs, lhs)),)


# elemwise_mul: the sparse operand's storage against a dense one; two sparse ones intersect
MULTIPLY = Storage(_multiply_infer, _multiply)


def masked_rule(fn: Binary) -> Storage:
    """``fn(ograd, y)`` that is zero wherever ``y`` is (``_backward_relu``): a sparse ``y``
    gives its own storage, read at its stored values only (MXNet keeps relu's gradient
    sparse).

    >>> from symgraph.sparse.formats import from_dense
    >>> y = from_dense(torch.tensor([[0., 0.], [0., 2.]]), "row_sparse")
    >>> rule = masked_rule(lambda dy, out: dy * (out > 0))
    >>> rule.infer(None, ["default", "row_sparse"])
    ['row_sparse']
    >>> rule.forward(None, [torch.full((2, 2), 3.), y], [], None)[0].data.tolist()
    [[0.0, 3.0]]
    """
    def infer(p, stypes):
        grad, out = stypes
        return [out] if out in SPARSE and grad in (DNS, out) else None

    def forward(p, ins, aux, rt):
        grad, out = ins
        if isinstance(grad, torch.Tensor):
            return (out._replace(data=fn(_dense_at(grad, out), out.data)),)
        return (_combine(fn, grad, out, union=False),)
    return Storage(infer, forward)


# ------------------------------------------------------------------ broadcast with csr


def broadcast_scale(fn: Binary, same_shape_ok: bool, op: str) -> Storage:
    """``broadcast_mul``/``broadcast_div`` of a csr lhs by a dense rhs broadcast to its
    shape: csr, the stored values scaled by the rhs entries at their positions (MXNet
    refuses a same-shape rhs for the division: ``same_shape_ok=False``)."""
    def infer(p, stypes):
        return [CSR_S] if stypes == [CSR_S, DNS] else None

    def forward(p, ins, aux, rt):
        lhs, rhs = ins
        if tuple(rhs.shape) == tuple(lhs.shape) and not same_shape_ok:
            raise MXNetError(f"{op}: use elemwise_div for the division of a csr array and a "
                             f"dense array of the same shape {tuple(lhs.shape)}")
        if rhs.dim() > 2 or any(r not in (1, s) for r, s in
                                zip(reversed(rhs.shape), reversed(lhs.shape))):
            raise ShapeError(f"{op}: rhs of shape {tuple(rhs.shape)} does not broadcast to "
                             f"the csr lhs of shape {tuple(lhs.shape)}")
        full = rhs.reshape((1,) * (2 - rhs.dim()) + tuple(rhs.shape))
        rows = csr_rows(lhs).clamp(max=full.shape[0] - 1)
        cols = lhs.indices.clamp(max=full.shape[1] - 1)
        return (lhs._replace(data=fn(lhs.data, full[rows, cols])),)
    return Storage(infer, forward)



# ------------------------------------------------------------------ add_n, where


def _add_n_infer(p, stypes):
    if all(s == RSP for s in stypes):
        return [RSP]
    return [DNS] if any(s in SPARSE for s in stypes) else None


def _add_n(p, ins, aux, rt):
    if all(isinstance(v, RowSparse) for v in ins):
        rows = torch.unique(torch.cat([v.indices for v in ins]), sorted=True)
        data = gather_rows(ins[0], rows).data
        for v in ins[1:]:
            data = data + gather_rows(v, rows).data
        return (RowSparse(data, rows, ins[0].shape),)
    dense = [v for v in ins if isinstance(v, torch.Tensor)]
    first = ins[0]
    out = sum(dense[1:], dense[0].clone()) if dense else \
        torch.zeros(first.shape, dtype=first.dtype, device=first.device)
    for v in ins:
        if not isinstance(v, torch.Tensor):
            _scatter_sparse(out, v, 1.0)
    return (out,)


# add_n: all row_sparse -> row_sparse (the union of rows); any other sparse mix -> dense
ADD_N = Storage(_add_n_infer, _add_n)


def _where(p, ins, aux, rt):
    cond, x, y = ins
    out = y.clone()
    if cond.data.numel():
        rows, cols = csr_rows(cond), cond.indices
        pick = cond.data != 0
        out[rows[pick], cols[pick]] = x[rows[pick], cols[pick]]
    return (out,)


# where(csr condition, dense x, dense y) -> dense, reading the condition's stored entries only
WHERE = Storage(lambda p, s: [DNS] if s == [CSR_S, DNS, DNS] else None, _where)
