"""The optimizer update operators on sparse storage (MXNet 1.9.1's ``FComputeEx`` of
``sgd_update``, ``sgd_mom_update``, ``adam_update``, ``ftrl_update``,
``_sparse_adagrad_update`` and ``_contrib_group_adagrad_update``).

With a row_sparse ``grad`` an update is one of two kinds:

- *lazy* (``lazy_update=True``): only the gradient's rows of the weight and of its states
  change; every other row is left as it was (its momentum does not decay). The kernel
  gathers those rows, runs the op's dense rule on them and scatters them back in place:
  the temporaries hold ``len(grad.indices)`` rows, never the whole weight;
- *standard* (``lazy_update=False``): the dense update with the gradient read as zero
  outside its rows (every row's states decay).

A row_sparse weight must store all its rows (MXNet refuses the others); a row_sparse state
storing fewer rows (a fresh ``zeros(stype='row_sparse')``) is first filled with its zero rows,
in place. The weight is written in place, as MXNet requires (``out=weight``, its
``kWriteInplace``). Every other combination of storage types with a sparse input runs the
dense rule on dense copies and writes the mutated states back into their sparse arrays
(MXNet's storage fallback).

>>> import symgraph as mx
>>> w = mx.nd.ones((4, 2))
>>> g = mx.nd.sparse.row_sparse_array(([[1., 1.]], [2]), shape=(4, 2))
>>> _ = mx.nd.sgd_update(w, g, lr=0.5, wd=0.5, out=w)
>>> w.asnumpy()[:, 0].tolist()
[1.0, 1.0, 0.25, 1.0]
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from ..base import MXNetError, UnsupportedError
from ..sparse import formats
from ..sparse.formats import RowSparse, stype_of
from .base import Storage

DNS, RSP = formats.DEFAULT, formats.ROW_SPARSE
LAZY_ROWS, STD, FLAG = "lazy", "std", "flag"  # FLAG: lazy or standard by ``lazy_update``

# (p, ins with the weight/grad/state rows, triton) -> the new weight rows; states in place
RowStep = Callable[[object, list, bool], torch.Tensor]


def update_kind(kinds: dict, p, stypes) -> str | None:
    """``'lazy'``, ``'std'``, or None (no sparse kernel) for these input storage types."""
    kind = kinds.get(tuple(stypes))
    if kind == FLAG:
        return LAZY_ROWS if p.lazy_update else STD
    return kind


def sparse_storage(name: str, step: RowStep, kinds: dict, strict: bool = False) -> Storage:
    """The storage rule of update op ``name``: ``kinds`` maps input storage types (weight,
    grad, states...) to how they update; ``strict``: no dense fallback (an error)."""
    def infer(p, stypes):
        if all(s == DNS for s in stypes):
            return None  # the dense rule (MXNet has none for a strict op: more lenient)
        kind = update_kind(kinds, p, stypes)
        if strict and (kind is None or p.get("wd", 0.0) != 0.0):
            raise UnsupportedError(
                f"Operator not implemented: operator = {name}, input storage types = "
                f"{list(stypes)}, wd = {p.get('wd', 0.0)} (it takes a row_sparse grad with "
                "a weight and history both dense or both row_sparse, and wd = 0)")
        return [stypes[0]]

    def forward(p, ins, aux, rt):
        kind = update_kind(kinds, p, [stype_of(v) for v in ins])
        if kind is None:
            return fallback(name, p, ins, aux, rt)
        return (update_rows(name, step, p, ins, kind == LAZY_ROWS),)
    return Storage(infer, forward)


def full_rows(value, where: str, weight: bool) -> torch.Tensor:
    """The dense ``(rows, ...)`` tensor holding every row of ``value``, written in place by
    the update: a tensor itself, or a row_sparse array's values once all rows are stored."""
    if isinstance(value, torch.Tensor):
        return value
    if value.indices.numel() == value.shape[0]:
        return value.data
    if weight:
        raise MXNetError(f"{where}: a row_sparse weight must store all its rows (it stores "
                         f"{value.indices.numel()} of {value.shape[0]}); MXNet implements the "
                         "sparse update only for such weights")
    every = torch.arange(value.shape[0], device=value.device)
    overwrite(value, formats.gather_rows(value, every))
    return value.data


def update_rows(name: str, step: RowStep, p, ins: list, lazy: bool):
    """Update the weight ``ins[0]`` (in place) and its states from the row_sparse
    ``ins[1]``; the other inputs that are not scalars are states. Returns the weight."""
    from .base import get_op
    where = f"operator {name}"
    states = get_op(name).mutated_inputs(p)
    weight = ins[0]
    if 0 not in p.get("_out_is_input", ()):
        if states:  # MXNet: "kWriteInplace is expected for sparse <op>"
            raise MXNetError(f"{where}: the sparse update writes the weight in place; call "
                             "it with out=weight")
        weight = formats.clone(weight)
    table = full_rows(weight, where, True)
    full = {i: full_rows(ins[i], where, False) for i in states}
    grad: RowSparse = ins[1]
    idx = grad.indices
    if lazy and _plain_sgd(name, p, states, table, grad):  # w[rows] -= lr * rescale * g
        rows = torch.sparse_coo_tensor(idx[None], grad.data, tuple(table.shape),
                                       check_invariants=False)
        table.add_(rows, alpha=-p.lr * p.rescale_grad)  # torch's dense += sparse kernel
        return weight
    if lazy and _plain_adam(name, p, table, grad, full):
        _adam_rows(p, table, full[2], full[3], grad)
        return weight
    rows = list(ins)
    rows[0], rows[1] = table.index_select(0, idx), grad.data.contiguous()
    for i, t in full.items():
        rows[i] = t.index_select(0, idx)
    triton = table.is_cuda
    if not lazy:  # every row: the dense rule with a zero gradient; then the grad's rows
        dense = list(ins)
        dense[0] = table
        dense[1] = torch.zeros((), dtype=grad.dtype, device=table.device).expand(table.shape)
        for i, t in full.items():
            dense[i] = t
        table.copy_(step(p, dense, False))
    if idx.numel():
        table.index_copy_(0, idx, step(p, rows, triton).to(table.dtype))
        for i, t in full.items():
            t.index_copy_(0, idx, rows[i])
    return weight


def _plain_sgd(name: str, p, states, table: torch.Tensor, grad) -> bool:
    """A lazy SGD step without momentum, weight decay or clipping: one scatter-add of the
    scaled gradient rows (what torch's SGD does with a sparse gradient)."""
    return (name in ("sgd_update", "_sparse_sgd_update") and not states and p.wd == 0.0
            and p.clip_gradient < 0 and table.dtype == grad.data.dtype)


def _plain_adam(name: str, p, table: torch.Tensor, grad, full: dict) -> bool:
    """A lazy Adam step without weight decay on float32 rows: the weight's rows need not be
    read (what torch's SparseAdam does), one gather fewer."""
    return (name in ("adam_update", "_sparse_adam_update") and p.wd == 0.0 and
            sorted(full) == [2, 3] and table.dtype == grad.data.dtype == torch.float32 and
            full[2].dtype == full[3].dtype == torch.float32)


def _adam_rows(p, table: torch.Tensor, mean: torch.Tensor, var: torch.Tensor, grad) -> None:
    """MXNet's adam_update on the gradient's rows, in the dense rule's order of operations
    (same values): ``w -= lr * m / (sqrt(v) + eps)`` as one scatter-add of the step."""
    idx = grad.indices
    g = p.rescale_grad * grad.data
    if p.clip_gradient >= 0:
        g = g.clamp(-p.clip_gradient, p.clip_gradient)
    m = mean.index_select(0, idx).mul_(p.beta1).add_((1 - p.beta1) * g)
    v = var.index_select(0, idx).mul_(p.beta2).add_((1 - p.beta2) * g * g)
    table.index_add_(0, idx, p.lr * m / (v.sqrt() + p.epsilon), alpha=-1.0)
    mean.index_copy_(0, idx, m)
    var.index_copy_(0, idx, v)


def overwrite(target, value) -> None:
    """Make the sparse value ``target`` hold ``value`` (same format and shape) in place: its
    tensors take ``value``'s storage, so every array holding ``target`` sees the new rows
    (MXNet's in-place write of a sparse optimizer state)."""
    if target.stype != value.stype or tuple(target.shape) != tuple(value.shape):
        raise MXNetError(f"cannot overwrite a {target.stype} array of shape {target.shape} "
                         f"with a {value.stype} value of shape {tuple(value.shape)}")
    for old, new in zip(target, value):
        if isinstance(old, torch.Tensor):
            old.set_(new.to(old.dtype))


def fallback(name: str, p, ins: list, aux: list, rt) -> tuple:
    """The dense rule on dense copies; mutated sparse inputs get their new values back in
    place, the result has the weight's storage type (MXNet's storage fallback)."""
    from ..sparse.dispatch import densify
    from .base import get_op
    op = get_op(name)
    where = f"operator {name}"
    dense = [densify(v, where) for v in ins]
    outs = op.forward(p, dense, [densify(v, where) for v in aux], rt)
    for i in op.mutated_inputs(p):
        if not isinstance(ins[i], torch.Tensor):
            overwrite(ins[i], formats.from_dense(dense[i], ins[i].stype))
    return (formats.from_dense(outs[0], stype_of(ins[0])), *outs[1:])
