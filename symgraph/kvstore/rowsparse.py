"""What the stores do with row_sparse values: merging pushed copies, ``row_sparse_pull``'s
rows, and the all-gather of rows across workers (:mod:`symgraph.kvstore.dist`).

A row_sparse value (:class:`~symgraph.sparse.formats.RowSparse`) is never densified here:
the sum of row_sparse copies is the union of their rows, and ``row_sparse_pull`` hands out
only the requested rows.

>>> import torch
>>> from symgraph.sparse import formats
>>> a = formats.RowSparse(torch.ones(1, 2), torch.tensor([1]), (4, 2))
>>> b = formats.RowSparse(torch.ones(2, 2) * 2, torch.tensor([1, 3]), (4, 2))
>>> total = merge('w', [a, b], torch.device('cpu'))
>>> total.indices.tolist(), total.data[:, 0].tolist()
([1, 3], [3.0, 2.0])
"""
from __future__ import annotations

import torch

from ..base import MXNetError, ShapeError
from ..sparse import formats
from ..sparse.dispatch import densify
from ..sparse.formats import INDEX, RowSparse

__all__ = ["broadcast_all", "gather_all", "is_rsp", "merge", "overwrite_rows", "pulled_rows",
           "sum_dense"]


def is_rsp(value) -> bool:
    """Whether ``value`` is a row_sparse value."""
    return isinstance(value, RowSparse)


def sum_dense(tensors: list[torch.Tensor], device: torch.device,
              out: torch.Tensor | None = None) -> torch.Tensor:
    """Sum in MXNet's CPU reduction order: ``t0 + (t1 + t2 + t3) + (t4 + ...)`` (into
    ``out`` when given, else a new tensor)."""
    if out is None:
        out = tensors[0].to(device, copy=True)
    else:
        out.copy_(tensors[0])
    for start in range(1, len(tensors), 4):
        chunk = [t.to(device) for t in tensors[start:start + 4]]
        part = chunk[0]
        for t in chunk[1:]:
            part = part + t
        out += part
    return out


def merge(key, values: list, device: torch.device):
    """The sum of the pushed copies of ``key`` on ``device`` (a new value).

    All row_sparse: row_sparse, the union of their rows. All dense: dense. A row_sparse
    first copy with dense ones after it sums densely; a dense first copy with row_sparse
    ones after it, and csr copies, are refused, as MXNet 1.9.1 refuses them.
    """
    stypes = [formats.stype_of(v) for v in values]
    if "csr" in stypes:
        raise MXNetError(f"push of key {key}: unexpected storage type csr detected during "
                         "kvstore push (only default and row_sparse values can be pushed)")
    if all(s == formats.ROW_SPARSE for s in stypes):
        moved = [formats.to_device(v, device) for v in values]
        total = formats.add_rows(moved)
        return formats.clone(total) if len(moved) == 1 and total is values[0] else total
    if stypes[0] == formats.DEFAULT and formats.ROW_SPARSE in stypes:
        i = stypes.index(formats.ROW_SPARSE)
        raise MXNetError(f"push of key {key}: storage type mismatch detected: copy 0 is "
                         f"default, copy {i} is row_sparse (push row_sparse copies first or "
                         "cast them)")
    where = f"kvstore push of key {key}"
    return sum_dense([densify(v, where) for v in values], device)


def pulled_rows(key, stored, row_ids: torch.Tensor) -> RowSparse:
    """The row_sparse value that ``row_sparse_pull`` hands out for ``row_ids`` (any shape,
    order, duplicates, any numeric dtype): exactly those rows of ``stored`` (zeros where it
    has none), or no rows at all when ``stored`` has none, as MXNet does.

    >>> import torch
    >>> stored = RowSparse(torch.ones(2, 2), torch.tensor([0, 2]), (3, 2))
    >>> got = pulled_rows('w', stored, torch.tensor([[2., 1.], [2., 2.]]))
    >>> got.indices.tolist(), got.data.tolist()
    ([1, 2], [[0.0, 0.0], [1.0, 1.0]])
    """
    if not is_rsp(stored):
        raise MXNetError(f"row_sparse_pull of key {key}: PullRowSparse expects row_sparse "
                         f"src NDArray, but the stored value is {formats.stype_of(stored)}")
    rows = row_ids.reshape(-1).to(device=stored.device, dtype=INDEX)
    if rows.numel() and (bool((rows < 0).any()) or bool((rows >= stored.shape[0]).any())):
        bad = rows[(rows < 0) | (rows >= stored.shape[0])][:5].tolist()
        raise ShapeError(f"row_sparse_pull of key {key}: row ids {bad} are out of range for "
                         f"the stored shape {list(stored.shape)}")
    if not stored.indices.numel():
        return formats.empty_like_stype(formats.ROW_SPARSE, stored.shape, stored.dtype,
                                        stored.device)
    return formats.gather_rows(stored, rows)


def gather_all(items: list[RowSparse], all_gather, size: int) -> list[list[RowSparse]]:
    """Every worker's row_sparse value of each item: ``[[rank 0's, rank 1's, ...]]`` per
    item, in rank order. Collectives: one all-gather of the row counts, then (when any
    worker has rows) one of the row indices and one per dtype of the rows' values, each
    padded to the longest worker's; nothing dense of the full shape is ever made.

    ``all_gather(tensor) -> list of size tensors`` runs the collective (after the caller
    checked that the workers agree on the items' keys, shapes and dtypes).
    """
    device = items[0].device
    counts = torch.tensor([v.indices.numel() for v in items], dtype=INDEX, device=device)
    table = torch.stack(all_gather(counts)).cpu()  # (size, items)
    if not int(table.sum()):
        return [[v] * size for v in items]
    indices = _gather_padded([v.indices.to(device) for v in items], table.sum(1), all_gather)
    per_rank_idx = [list(t.split(table[r].tolist())) for r, t in enumerate(indices)]
    data: list[list] = [[None] * len(items) for _ in range(size)]
    for dtype in dict.fromkeys(v.dtype for v in items):
        members = [i for i, v in enumerate(items) if v.dtype == dtype]
        widths = [_row_width(items[i]) for i in members]
        lengths = (table[:, members] * torch.tensor(widths, dtype=INDEX)).sum(1)
        flats = _gather_padded([items[i].data.to(device).reshape(-1) for i in members],
                               lengths, all_gather)
        for r, flat in enumerate(flats):
            sizes = [int(table[r, i]) * w for i, w in zip(members, widths)]
            for i, piece in zip(members, flat.split(sizes)):
                data[r][i] = piece.view(int(table[r, i]), *items[i].shape[1:])
    return [[RowSparse(data[r][i], per_rank_idx[r][i], v.shape) for r in range(size)]
            for i, v in enumerate(items)]


def _row_width(value: RowSparse) -> int:
    width = 1
    for d in value.shape[1:]:
        width *= int(d)
    return width


def _gather_padded(parts: list[torch.Tensor], lengths: torch.Tensor,
                   all_gather) -> list[torch.Tensor]:
    """All-gather the concatenation of ``parts`` (this worker's), each worker's as long as
    ``lengths[rank]``: padded to the longest, trimmed after."""
    longest = int(lengths.max())
    mine = torch.cat(parts) if parts else parts
    if mine.numel() < longest:
        mine = torch.cat([mine, mine.new_zeros(longest - mine.numel())])
    return [t[:int(n)] for t, n in zip(all_gather(mine), lengths.tolist())]


def broadcast_all(items: list[RowSparse], broadcast, is_root: bool) -> list[RowSparse]:
    """The root worker's row_sparse value of each item, on every worker (``broadcast(t)``
    overwrites ``t`` with the root's, in place): the row counts, then the row indices, then
    the rows' values per dtype."""
    device = items[0].device
    counts = torch.tensor([v.indices.numel() for v in items], dtype=INDEX, device=device)
    broadcast(counts)
    n = counts.tolist()
    if not sum(n):
        return [formats.empty_like_stype(formats.ROW_SPARSE, v.shape, v.dtype, v.device)
                for v in items]
    idx = torch.cat([v.indices.to(device) for v in items]) if is_root else \
        torch.empty(sum(n), dtype=INDEX, device=device)
    broadcast(idx)
    indices = list(idx.split(n))
    data: list = [None] * len(items)
    for dtype in dict.fromkeys(v.dtype for v in items):
        members = [i for i, v in enumerate(items) if v.dtype == dtype]
        sizes = [n[i] * _row_width(items[i]) for i in members]
        flat = torch.cat([items[i].data.to(device).reshape(-1) for i in members]) if is_root \
            else torch.empty(sum(sizes), dtype=dtype, device=device)
        broadcast(flat)
        for i, piece in zip(members, flat.split(sizes)):
            data[i] = piece.view(n[i], *items[i].shape[1:])
    return [RowSparse(data[i], indices[i], v.shape) for i, v in enumerate(items)]


def overwrite_rows(stored, merged: RowSparse):
    """``stored`` with the rows of ``merged`` replaced by ``merged``'s (what a distributed
    store without an optimizer keeps after a row_sparse push; the other rows stay).

    >>> import torch
    >>> stored = RowSparse(torch.ones(2, 1), torch.tensor([0, 2]), (3, 1))
    >>> new = overwrite_rows(stored, RowSparse(torch.full((1, 1), 5.), torch.tensor([2]), (3, 1)))
    >>> new.indices.tolist(), new.data.reshape(-1).tolist()
    ([0, 2], [1.0, 5.0])
    """
    merged = formats.astype(merged, stored.dtype)
    if isinstance(stored, torch.Tensor):
        out = stored.clone()
        if merged.indices.numel():
            out.index_copy_(0, merged.indices.to(out.device), merged.data.to(out.device))
        return out
    merged = formats.to_device(merged, stored.device)
    keep = ~torch.isin(stored.indices, merged.indices)
    return formats.row_sparse(torch.cat([stored.data[keep], merged.data]),
                              torch.cat([stored.indices[keep], merged.indices]), stored.shape)
