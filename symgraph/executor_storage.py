"""What an executor does differently when its plan holds sparse values (row_sparse, csr).

Dense arguments share their tensors with the plan and gradients are written into dense
tensors; a sparse array instead holds a value bundle that is replaced, not written in place.
So before each forward the plan reads the sparse arguments' current values, after it the
sparse outputs take the computed values, and after backward each gradient is stored in its
array's storage type: a row_sparse gradient into a row_sparse array keeps only the rows it
has; into a dense array it is scattered (``grad_req='add'`` adds only those rows).
An executor whose plan has no sparse value has no :class:`SparseIO` and pays nothing.
"""
from __future__ import annotations

from .ndarray.ndarray import NDArray
from .ndarray.sparse_array import wrap
from .sparse import formats
from .sparse.formats import DEFAULT


class SparseIO:
    """The sparse arguments, outputs and gradients of one executor."""

    def __init__(self, plan, arrays: dict[str, NDArray]):
        self.inputs = [(plan.var_slot[n], a) for n, a in arrays.items() if a._is_sparse]
        self.outputs: list[tuple[int, NDArray]] = []
        self.grads: list[tuple[int | None, NDArray, bool]] = []

    @staticmethod
    def wanted(plan, arrays: dict[str, NDArray], grads: dict[str, NDArray | None]) -> bool:
        """Whether the plan or any bound array involves sparse storage."""
        return bool(plan.storage.slots) or any(
            a is not None and a._is_sparse for a in (*arrays.values(), *grads.values()))

    def make_output(self, plan, slot: int, ctx, dense: NDArray) -> NDArray:
        """The output array of head ``slot``: ``dense`` unless the head is sparse."""
        stype = plan.storage.stype(slot)
        if stype == DEFAULT:
            return dense
        out = wrap(formats.empty_like_stype(stype, plan.shapes[slot], dense._t.dtype,
                                            dense._t.device), ctx)
        self.outputs.append((slot, out))
        return out

    def feed(self, values: list) -> None:
        """Put the sparse arguments' current values into the plan's slots."""
        for slot, arr in self.inputs:
            values[slot] = arr._value

    def deliver(self, values: list) -> None:
        """Hand the computed sparse head values to the output arrays."""
        for slot, out in self.outputs:
            out._value = values[slot]

    def takes_grad(self, plan, slot: int | None, grad: NDArray) -> bool:
        """Whether this writer handles the gradient (sparse array or sparse value)."""
        if grad._is_sparse or (slot is not None and plan.storage.stype(slot) != DEFAULT):
            return True
        return False

    def add_grad(self, slot: int | None, grad: NDArray, add: bool) -> None:
        self.grads.append((slot, grad, add))

    def write_grads(self, values: list) -> None:
        """Store each gradient in its array's storage (write or add)."""
        for slot, grad, add in self.grads:
            if slot is None:
                _zero(grad)
            else:
                store(grad, values[slot], add)


def _zero(grad: NDArray) -> None:
    if grad._is_sparse:
        v = grad._value
        grad._value = formats.empty_like_stype(grad.stype, v.shape, v.dtype, v.device)
    else:
        grad._t.zero_()


def store(target: NDArray, value, add: bool = False) -> None:
    """Write (or add) ``value`` of any storage into ``target`` of any storage."""
    if target._is_sparse:
        target._assign(formats.add(target._value, value) if add else value)
        return
    dense = target._t
    if isinstance(value, formats.RowSparse):
        if not add:
            dense.zero_()
        formats.scatter_rows(dense, value)
    elif add:
        dense.add_(formats.to_dense(value))
    else:
        dense.copy_(formats.to_dense(value))

