"""The two sparse storage formats as plain tensor bundles, and the conversions between them.

MXNet stores an array in one of three storage types (``stype``):

- ``'default'``: a dense tensor;
- ``'row_sparse'`` (:class:`RowSparse`): the rows ``indices`` (int64, ascending, unique) of an
  array of shape ``(D0, D1, ...)``, their values in ``data`` of shape ``(len(indices), D1, ...)``;
  every other row is zero. The gradient of an embedding is one: only the rows a batch
  touched are stored;
- ``'csr'`` (:class:`CSR`): a 2-D matrix in compressed sparse row form, the column indices of
  row ``i`` in ``indices[indptr[i]:indptr[i + 1]]`` (ascending) and their values in ``data``.

Values of these types flow through the operators' sparse forwards (``OpDef.storage``) the
way tensors flow through the dense ones. Nothing here densifies unless asked to
(:func:`to_dense`); conversions keep the aux arrays int64, as MXNet does.

>>> import torch
>>> rsp = from_dense(torch.tensor([[0., 0.], [1., 2.], [0., 0.]]), "row_sparse")
>>> rsp.indices.tolist(), rsp.data.tolist()
([1], [[1.0, 2.0]])
>>> to_dense(rsp).tolist()
[[0.0, 0.0], [1.0, 2.0], [0.0, 0.0]]
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from ..base import MXNetError, ShapeError

DEFAULT, ROW_SPARSE, CSR_STYPE = "default", "row_sparse", "csr"
STYPES = (DEFAULT, ROW_SPARSE, CSR_STYPE)
INDEX = torch.int64  # MXNet's aux type of both formats


class SparseFormatError(MXNetError):
    """A sparse array whose aux arrays do not describe a valid array (MXNet's check_format)."""


class RowSparse(NamedTuple):
    """Rows ``indices`` of an array of ``shape``; the other rows are zero."""

    data: torch.Tensor  # (k, *shape[1:])
    indices: torch.Tensor  # (k,) int64, ascending, unique
    shape: tuple[int, ...]

    stype = ROW_SPARSE

    @property
    def dtype(self) -> torch.dtype:
        return self.data.dtype

    @property
    def device(self) -> torch.device:
        return self.data.device

    def aux(self) -> list[torch.Tensor]:
        """MXNet's aux arrays in its order (0: indices)."""
        return [self.indices]


class CSR(NamedTuple):
    """A 2-D matrix of ``shape`` in compressed sparse row form."""

    data: torch.Tensor  # (nnz,)
    indices: torch.Tensor  # (nnz,) int64 column of each value
    indptr: torch.Tensor  # (rows + 1,) int64
    shape: tuple[int, ...]

    stype = CSR_STYPE

    @property
    def dtype(self) -> torch.dtype:
        return self.data.dtype

    @property
    def device(self) -> torch.device:
        return self.data.device

    def aux(self) -> list[torch.Tensor]:
        """MXNet's aux arrays in its order (0: indptr, 1: indices)."""
        return [self.indptr, self.indices]

    def torch_csr(self) -> torch.Tensor:
        """The same matrix as a torch ``sparse_csr`` tensor (sharing the arrays)."""
        return torch.sparse_csr_tensor(self.indptr, self.indices, self.data, self.shape)


Value = torch.Tensor | RowSparse | CSR


def stype_of(value) -> str:
    """``'default'`` for a tensor, else the format's stype."""
    return value.stype if isinstance(value, RowSparse | CSR) else DEFAULT


def check_stype(stype: str, where: str = "storage type") -> str:
    """``stype`` when it is one of MXNet's three, else a typed error naming ``where``."""
    if stype not in STYPES:
        raise MXNetError(f"{where}: unknown storage type {stype!r}; expected one of "
                         f"{list(STYPES)}")
    return stype


# ---------------------------------------------------------------- construction

def empty_like_stype(stype: str, shape: tuple, dtype: torch.dtype,
                     device: torch.device) -> Value:
    """An all-zero array of ``stype`` (no rows / no stored values)."""
    shape = tuple(int(d) for d in shape)
    if stype == DEFAULT:
        return torch.zeros(shape, dtype=dtype, device=device)
    if stype == ROW_SPARSE:
        if len(shape) < 1:
            raise ShapeError(f"a row_sparse array needs at least 1 dimension, got shape {shape}")
        return RowSparse(torch.zeros((0, *shape[1:]), dtype=dtype, device=device),
                         torch.zeros(0, dtype=INDEX, device=device), shape)
    if len(shape) != 2:
        raise ShapeError(f"a csr array is 2-D, got shape {shape}")
    return CSR(torch.zeros(0, dtype=dtype, device=device),
               torch.zeros(0, dtype=INDEX, device=device),
               torch.zeros(shape[0] + 1, dtype=INDEX, device=device), shape)


def row_sparse(data: torch.Tensor, indices: torch.Tensor, shape: tuple) -> RowSparse:
    """A :class:`RowSparse` from rows given in any order, duplicates summed."""
    indices = indices.to(INDEX)
    if indices.numel() > 1 and not bool((indices[1:] > indices[:-1]).all()):
        # torch's COO coalesce sorts and sums in one native call (faster than unique +
        # index_add); the shape's leading size does not matter to it
        coo = torch.sparse_coo_tensor(indices[None], data, (int(shape[0]), *data.shape[1:]),
                                      check_invariants=False).coalesce()
        data, indices = coo._values(), coo._indices()[0]
    return RowSparse(data, indices, tuple(shape))


def from_dense(t: torch.Tensor, stype: str) -> Value:
    """``t`` in storage ``stype``: the rows (row_sparse) or entries (csr) that are not zero."""
    if stype == DEFAULT:
        return t
    shape = tuple(t.shape)
    if stype == ROW_SPARSE:
        if t.dim() < 1:
            raise ShapeError(f"cast_storage to row_sparse needs at least 1 dimension, got {shape}")
        keep = t.reshape(shape[0], -1).ne(0).any(1).nonzero().reshape(-1) if t.numel() \
            else torch.zeros(0, dtype=INDEX, device=t.device)
        return RowSparse(t.index_select(0, keep), keep, shape)
    if t.dim() != 2:
        raise ShapeError(f"cast_storage to csr needs a 2-D array, got shape {shape}")
    rows, cols = t.ne(0).nonzero(as_tuple=True)
    indptr = torch.zeros(shape[0] + 1, dtype=INDEX, device=t.device)
    indptr[1:] = torch.bincount(rows, minlength=shape[0]).cumsum(0)
    return CSR(t[rows, cols], cols, indptr, shape)


def to_dense(value: Value) -> torch.Tensor:
    """The dense tensor of any storage type (a tensor is returned as it is)."""
    if isinstance(value, RowSparse):
        out = torch.zeros(value.shape, dtype=value.dtype, device=value.device)
        if value.indices.numel():
            out.index_copy_(0, value.indices, value.data)
        return out
    if isinstance(value, CSR):
        out = torch.zeros(value.shape, dtype=value.dtype, device=value.device)
        if value.data.numel():
            out[csr_rows(value), value.indices] = value.data
        return out
    return value


def cast(value: Value, stype: str) -> Value:
    """``value`` in storage ``stype`` (csr <-> row_sparse go through dense, as MXNet refuses
    them at the array level only)."""
    if stype_of(value) == stype:
        return value
    if isinstance(value, RowSparse) and stype == DEFAULT:
        return to_dense(value)
    return from_dense(to_dense(value), stype)


def csr_rows(value: CSR) -> torch.Tensor:
    """The row of every stored value of a csr matrix."""
    counts = value.indptr[1:] - value.indptr[:-1]
    return torch.repeat_interleave(torch.arange(value.shape[0], device=value.device), counts)


def astype(value: Value, dtype: torch.dtype) -> Value:
    """``value`` with its values cast to ``dtype`` (aux arrays shared)."""
    if isinstance(value, torch.Tensor):
        return value.to(dtype)
    return value._replace(data=value.data.to(dtype))


def clone(value: Value) -> Value:
    """A deep copy."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    return type(value)(*[t.clone() if isinstance(t, torch.Tensor) else t for t in value])


def to_device(value: Value, device: torch.device) -> Value:
    """``value`` on ``device`` (a copy when it moves)."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    return type(value)(*[t.to(device) if isinstance(t, torch.Tensor) else t for t in value])


def nbytes(value: Value) -> int:
    """Bytes held by the value's arrays."""
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    return sum(t.numel() * t.element_size() for t in value if isinstance(t, torch.Tensor))


# ---------------------------------------------------------------- row_sparse algebra

def retain(value: RowSparse, keep: torch.Tensor) -> RowSparse:
    """Only the rows of ``value`` whose index is in ``keep`` (MXNet's sparse_retain)."""
    mask = torch.isin(value.indices, keep.to(INDEX))
    return RowSparse(value.data[mask], value.indices[mask], value.shape)


def gather_rows(value: Value, rows: torch.Tensor) -> RowSparse:
    """A row_sparse array with the rows ``rows`` of ``value`` (zeros where it has none):
    what ``row_sparse_pull`` hands out."""
    rows = torch.unique(rows.to(INDEX).reshape(-1), sorted=True)
    if isinstance(value, torch.Tensor):
        return RowSparse(value.index_select(0, rows), rows, tuple(value.shape))
    dense_rows = torch.zeros((rows.numel(), *value.shape[1:]), dtype=value.dtype,
                             device=value.device)
    if value.indices.numel() and rows.numel():
        pos = torch.searchsorted(value.indices, rows).clamp_(max=value.indices.numel() - 1)
        hit = value.indices[pos] == rows
        dense_rows[hit] = value.data[pos[hit]]
    return RowSparse(dense_rows, rows, value.shape)


def add_rows(values: list[RowSparse]) -> RowSparse:
    """The sum of row_sparse arrays of one shape: the union of their rows."""
    first = values[0]
    if len(values) == 1:
        return first
    return row_sparse(torch.cat([v.data for v in values]),
                      torch.cat([v.indices for v in values]), first.shape)


def add(a: Value, b: Value) -> Value:
    """``a + b`` of one shape: row_sparse + row_sparse stays row_sparse (the union of rows),
    csr + csr stays csr, anything with a dense operand is dense."""
    if isinstance(a, RowSparse) and isinstance(b, RowSparse):
        return add_rows([a, b])
    if isinstance(a, torch.Tensor) and isinstance(b, RowSparse):
        return scatter_rows(a.clone(), b)
    if isinstance(b, torch.Tensor) and isinstance(a, RowSparse):
        return scatter_rows(b.clone(), a)
    total = to_dense(a) + to_dense(b)
    if isinstance(a, CSR) and isinstance(b, CSR):
        return from_dense(total, CSR_STYPE)
    return total


def scatter_rows(dense: torch.Tensor, value: RowSparse, alpha: float = 1.0) -> torch.Tensor:
    """``dense += alpha * value`` touching only ``value``'s rows; returns ``dense``."""
    if value.indices.numel():
        dense.index_add_(0, value.indices, value.data, alpha=alpha)
    return dense


# ---------------------------------------------------------------- validation

def check_format(value: Value, full_check: bool = True) -> None:
    """Raise :class:`SparseFormatError` unless the aux arrays describe a valid array
    (``full_check``: also every index in range, ascending and unique)."""
    if isinstance(value, RowSparse):
        _check_rsp(value, full_check)
    elif isinstance(value, CSR):
        _check_csr(value, full_check)


def _check_rsp(v: RowSparse, full: bool) -> None:
    if v.indices.dim() != 1 or v.data.shape[0] != v.indices.numel() or \
            tuple(v.data.shape[1:]) != tuple(v.shape[1:]):
        raise SparseFormatError(f"row_sparse array of shape {v.shape}: data shape "
                                f"{tuple(v.data.shape)} does not match indices shape "
                                f"{tuple(v.indices.shape)}")
    if full and v.indices.numel():
        idx = v.indices
        if bool((idx < 0).any()) or bool((idx >= v.shape[0]).any()):
            raise SparseFormatError(f"row_sparse indices out of range [0, {v.shape[0]}): "
                                    f"{idx.tolist()[:10]}")
        if idx.numel() > 1 and not bool((idx[1:] > idx[:-1]).all()):
            raise SparseFormatError("row_sparse indices are not sorted ascending and unique")


def _check_csr(v: CSR, full: bool) -> None:
    rows, cols = v.shape
    if v.indptr.dim() != 1 or v.indptr.numel() != rows + 1 or v.indices.dim() != 1 or \
            v.data.dim() != 1 or v.data.numel() != v.indices.numel():
        raise SparseFormatError(f"csr array of shape {v.shape}: indptr has shape "
                                f"{tuple(v.indptr.shape)} (expected ({rows + 1},)), indices "
                                f"{tuple(v.indices.shape)}, data {tuple(v.data.shape)}")
    if not full:
        return
    ptr = v.indptr
    if int(ptr[0]) != 0 or int(ptr[-1]) != v.indices.numel() or \
            bool((ptr[1:] < ptr[:-1]).any()):
        raise SparseFormatError(f"csr indptr must start at 0, not decrease and end at nnz "
                                f"{v.indices.numel()}: {ptr.tolist()[:10]}")
    idx = v.indices
    if idx.numel() and (bool((idx < 0).any()) or bool((idx >= cols).any())):
        raise SparseFormatError(f"csr column indices out of range [0, {cols})")
    if idx.numel() > 1:
        same_row = csr_rows(v)
        step_ok = (idx[1:] > idx[:-1]) | (same_row[1:] != same_row[:-1])
        if not bool(step_ok.all()):
            raise SparseFormatError("csr column indices of a row are not ascending and unique")


# ---------------------------------------------------------------- csr rows

def csr_take_rows(value: CSR, rows: torch.Tensor) -> CSR:
    """The csr matrix whose row ``i`` is row ``rows[i]`` of ``value`` (any order, repeats
    allowed): a batch of a csr data set, or its rows shuffled.

    >>> m = from_dense(torch.tensor([[0., 1.], [2., 0.], [0., 3.]]), "csr")
    >>> to_dense(csr_take_rows(m, torch.tensor([2, 0, 2]))).tolist()
    [[0.0, 3.0], [0.0, 1.0], [0.0, 3.0]]
    """
    rows = rows.to(device=value.indptr.device, dtype=INDEX).reshape(-1)
    # index_select, not advanced indexing: the latter is ~1000x slower on a busy CPU
    starts = value.indptr.index_select(0, rows)
    counts = value.indptr.index_select(0, rows + 1) - starts
    indptr = torch.zeros(rows.numel() + 1, dtype=INDEX, device=value.indptr.device)
    indptr[1:] = torch.cumsum(counts, 0)
    nnz = int(indptr[-1])
    # the source position of every output value: its rank plus its row's shift (source
    # start - output start), spread by a cumsum of the shifts' steps placed at the row
    # starts (repeat_interleave is ~1000x slower on a busy CPU); empty rows add no step
    shift = starts - indptr[:-1]
    steps = torch.zeros(nnz + 1, dtype=INDEX, device=indptr.device).index_add_(
        0, indptr[:-1], torch.diff(shift, prepend=shift.new_zeros(1)))
    pos = torch.arange(nnz, dtype=INDEX, device=indptr.device) + torch.cumsum(steps[:nnz], 0)
    return CSR(value.data.index_select(0, pos), value.indices.index_select(0, pos), indptr,
               (rows.numel(), value.shape[1]))
