"""The sparse NDArray classes: ``RowSparseNDArray`` and ``CSRNDArray`` over the value bundles
of :mod:`symgraph.sparse.formats`, and :func:`wrap`, which gives any value its array class.

A sparse array holds its value in ``_value`` and has no dense tensor of its own: ``_t`` (what
dense code reads) is a dense copy made on demand, refused beyond the fallback limit
(:func:`symgraph.sparse.dispatch.densify`), so dense-only functions work on sparse input the
way MXNet's storage fallback makes them work. Everything that writes into a sparse array
replaces its value (:meth:`BaseSparseNDArray._assign`); nothing writes through ``_t``.
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np
import torch

from ..base import MXNetError, NotSupportedForSparseNDArray, ShapeError, to_torch_dtype
from ..context import Context, context_of
from ..sparse import formats
from ..sparse.dispatch import densify
from ..sparse.formats import CSR, RowSparse
from . import hooks
from .ndarray import NDArray


class BaseSparseNDArray(NDArray):
    """An NDArray stored in a sparse format (see :class:`CSRNDArray`, :class:`RowSparseNDArray`)."""

    _is_sparse = True
    _stype = ""

    def __init__(self, value):
        if value is None:  # pickle's __reduce__ path fills the state afterwards
            return
        if not isinstance(value, RowSparse | CSR) or value.stype != self._stype:
            raise TypeError(f"{type(self).__name__} wraps a {self._stype} value, got "
                            f"{type(value).__name__}")
        self._value = value

    # ----------------------------------------------------------------- attributes
    @property
    def _t(self) -> torch.Tensor:
        """A dense copy (storage fallback for dense code); writes to it are lost."""
        return densify(self._value, f"dense use of a {self._stype} array")

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._value.shape)

    @property
    def dtype(self) -> type:
        from ..base import to_numpy_dtype
        return to_numpy_dtype(self._value.dtype)

    @property
    def stype(self) -> str:
        """Storage type: ``'row_sparse'`` or ``'csr'``."""
        return self._stype

    @property
    def context(self) -> Context:
        ctx = self._ctx
        if ctx is None:
            ctx = self._ctx = context_of(self._value.device)
        return ctx

    ctx = context

    @property
    def ndim(self) -> int:
        return len(self._value.shape)

    @property
    def size(self) -> int:
        raise NotImplementedError("size is not defined for sparse arrays (MXNet)")

    @property
    def _num_aux(self) -> int:
        return len(self._value.aux())

    @property
    def _aux_types(self) -> list:
        return [self._aux_type(i) for i in range(self._num_aux)]

    def _aux_type(self, i: int):
        from ..base import to_numpy_dtype
        return to_numpy_dtype(self._value.aux()[i].dtype)

    def _data(self) -> NDArray:
        """A deep copy of the stored values."""
        return self._plain(self._value.data.clone())

    def _aux_data(self, i: int) -> NDArray:
        """A deep copy of aux array ``i`` (MXNet's order: csr 0 indptr, 1 indices)."""
        return self._plain(self._value.aux()[i].clone())

    def _plain(self, t: torch.Tensor) -> NDArray:
        arr = NDArray(t)
        arr._ctx = self._ctx
        return arr

    @property
    def data(self) -> NDArray:
        """A deep copy of the stored values."""
        return self._data()

    @property
    def indices(self) -> NDArray:
        """A deep copy of the indices (row_sparse: rows; csr: columns)."""
        return self._plain(self._value.indices.clone())

    def check_format(self, full_check: bool = True) -> None:
        """Raise unless the aux arrays describe a valid array (``full_check``: every index)."""
        formats.check_format(self._value, full_check)

    # ----------------------------------------------------------------- conversion
    def __repr__(self) -> str:
        shape_info = "x".join(str(d) for d in self.shape)
        return f"\n<{type(self).__name__} {shape_info} @{self.context}>"

    def asnumpy(self) -> np.ndarray:
        """A dense numpy copy."""
        return self.tostype("default").asnumpy()

    def tostype(self, stype: str) -> NDArray:
        """A copy in storage ``stype`` (csr <-> row_sparse is refused, as in MXNet)."""
        formats.check_stype(stype, "tostype")
        if stype not in ("default", self._stype):
            raise ValueError(f"cast_storage from {self._stype} to {stype} is not supported")
        from .register import invoke
        return invoke("cast_storage", (self,), {"stype": stype})

    def astype(self, dtype, copy: bool = True) -> NDArray:
        """A copy with the values cast to ``dtype`` (the same storage type)."""
        target = to_torch_dtype(dtype)
        if not copy and target == self._value.dtype:
            return self
        return wrap(formats.clone(formats.astype(self._value, target)), self._ctx)

    def copy(self) -> NDArray:
        return wrap(formats.clone(self._value), self._ctx)

    def copyto(self, other):
        """Copy into ``other`` (an array of this stype or dense, same shape) or to a Context."""
        if isinstance(other, Context):
            return wrap(formats.to_device(formats.clone(self._value), other.torch_device), other)
        if not isinstance(other, NDArray):
            raise TypeError(f"copyto does not support type {type(other)}")
        if other is self:
            warnings.warn("You are attempting to copy an array to itself", RuntimeWarning,
                          stacklevel=2)
            return False
        if other.stype not in ("default", self._stype):
            raise TypeError(f"copyto does not support destination NDArray stype {other.stype}")
        if other.shape != self.shape:
            raise ShapeError(f"copyto: shape mismatch, source {self.shape}, target {other.shape}")
        assign(other, self._value)
        return other

    def as_in_context(self, context: Context) -> NDArray:
        if self.context == context:
            return self
        return self.copyto(context)

    def detach(self) -> NDArray:
        return wrap(self._value, self._ctx)

    def wait_to_read(self) -> None:
        return None

    def zeros_like(self) -> NDArray:
        v = self._value
        return wrap(formats.empty_like_stype(self._stype, v.shape, v.dtype, v.device), self._ctx)

    def _assign(self, value) -> None:
        """Replace this array's value by ``value`` (any storage; cast to this array's)."""
        value = formats.cast(value, self._stype)
        if tuple(value.shape) != self.shape:
            raise ShapeError(f"cannot assign a value of shape {tuple(value.shape)} to a "
                             f"{self._stype} array of shape {self.shape}")
        self._value = formats.astype(value, self._value.dtype) \
            if value.dtype != self._value.dtype else value

    # ----------------------------------------------------------------- refused
    def reshape(self, *shape, **kwargs):
        raise NotSupportedForSparseNDArray(self.reshape, None, shape)

    def _at(self, idx):
        raise NotSupportedForSparseNDArray(self._at, "[idx]", idx)

    def _slice(self, start, stop):
        raise NotSupportedForSparseNDArray(self._slice, None, start, stop)

    def _sync_copyfrom(self, source_array):
        raise NotImplementedError()

    def __setitem__(self, key, value) -> None:
        if not isinstance(key, slice) or key != slice(None):
            raise TypeError(f"{type(self).__name__} only supports [:] for assignment")
        if isinstance(value, NDArray):
            if value is not self:
                assign(self, value._value if value._is_sparse else value._t)
        elif isinstance(value, int | float) and self._stype == "row_sparse":
            v = self._value
            rows = torch.arange(v.shape[0], device=v.device)
            self._value = RowSparse(torch.full(v.shape, float(value), dtype=v.dtype,
                                               device=v.device), rows, v.shape)
        elif isinstance(value, int | float):
            raise ValueError("Assigning numeric types to CSRNDArray is not implemented yet.")
        elif isinstance(value, np.ndarray | np.generic):
            warnings.warn(f"Assigning non-NDArray object to {type(self).__name__} is not "
                          "efficient", RuntimeWarning, stacklevel=2)
            assign(self, torch.as_tensor(np.asarray(value)).to(self._value.device))
        else:
            raise TypeError(f"type {type(value)} not supported")

    # ----------------------------------------------------------------- arithmetic
    def _binary(self, name: str, other, reflected: bool = False) -> NDArray:
        from . import sparse
        fn = {"add": sparse.add, "sub": sparse.subtract, "mul": sparse.multiply,
              "div": sparse.divide}.get(name)
        if fn is None or reflected:  # MXNet's sparse classes override +-*/ only
            return binary_op(name, self, other, reflected)
        return fn(self, other)

    def _inplace(self, name: str, other) -> NDArray:
        result = self._binary(name, other)
        assign(self, result._value if result._is_sparse else result._t)
        return self

    def _unary(self, name: str) -> NDArray:
        """An elementwise operator (``sqrt``, ``abs``...) through its storage rule."""
        from .register import invoke
        return invoke(name, (self,), {})

    def clip(self, a_min, a_max) -> NDArray:
        """``clip`` through its storage rule (sparse stays sparse)."""
        from .register import invoke
        return invoke("clip", (self,), {"a_min": a_min, "a_max": a_max})

    def _reduce(self, name: str, axis, keepdims, exclude) -> NDArray:
        """``sum``/``mean``/``max``... through the operator's storage rule (MXNet has sparse
        kernels for some: they never densify the array)."""
        from .register import invoke
        return invoke(name, (self,), {"axis": axis, "keepdims": bool(keepdims),
                                      "exclude": bool(exclude)})

    def norm(self, ord=2, axis=None, out_dtype=None, keepdims=False) -> NDArray:
        """``norm`` through its storage rule."""
        from .register import invoke
        return invoke("norm", (self,), {"ord": ord, "axis": axis, "out_dtype": out_dtype,
                                        "keepdims": bool(keepdims)})

    def ones_like(self) -> NDArray:
        """A dense array of ones of this shape and dtype (MXNet's ``ones_like`` is dense)."""
        v = self._value
        return wrap(torch.ones(v.shape, dtype=v.dtype, device=v.device), self._ctx)

    def __neg__(self) -> NDArray:
        from .register import invoke
        return invoke("_mul_scalar", (self,), {"scalar": -1.0})  # as MXNet's NDArray.__neg__

    # pickling: MXNet's record of the array (symgraph.ndarray.io)
    def __reduce__(self):
        return type(self), (None,), self.__getstate__()

    def __setstate__(self, state: dict) -> None:
        from .io import load_raw
        handle = state.get("handle") if isinstance(state, dict) else None
        if not isinstance(handle, bytes | bytearray):
            raise MXNetError("NDArray pickle state must hold the array's bytes under 'handle'")
        loaded = load_raw(handle)
        if not loaded._is_sparse or loaded.stype != self._stype:
            raise MXNetError(f"pickled array has storage type {loaded.stype}, expected "
                             f"{self._stype}")
        self._value = loaded._value

    def attach_grad(self, grad_req: str = "write", stype=None) -> None:
        """A gradient array of storage ``stype`` (this array's by default)."""
        v = self._value
        grad = wrap(formats.empty_like_stype(stype or self._stype, v.shape, v.dtype, v.device),
                    self._ctx)
        self._mark(grad, grad_req)


class CSRNDArray(BaseSparseNDArray):
    """A 2-D array in compressed sparse row form: ``data``, ``indices`` and ``indptr``.

    >>> import symgraph as mx
    >>> a = mx.nd.sparse.csr_matrix(([1., 2., 3.], [1, 0, 2], [0, 1, 2, 2, 3]), shape=(4, 3))
    >>> a.indptr.asnumpy().tolist(), a.stype
    ([0, 1, 2, 2, 3], 'csr')
    >>> a.asnumpy().tolist()
    [[0.0, 1.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 3.0]]
    """

    _stype = "csr"

    @property
    def indptr(self) -> NDArray:
        """A deep copy of the row pointers."""
        return self._plain(self._value.indptr.clone())

    def __getitem__(self, key) -> NDArray:
        from .register import invoke
        if isinstance(key, int):
            begin = self.shape[0] - 1 if key == -1 else key
            return invoke("slice", (self,), {"begin": (begin,), "end": (begin + 1,)})
        if isinstance(key, slice):
            if key.step is not None:
                raise ValueError("CSRNDArray only supports continuous slicing on axis 0")
            if key.start is None and key.stop is None:
                return self
            begin = key.start or 0
            end = self.shape[0] if key.stop is None else key.stop
            return invoke("slice", (self,), {"begin": (begin,), "end": (end,)})
        if isinstance(key, tuple):
            raise ValueError("Multi-dimension indexing is not supported")
        raise ValueError(f"Undefined behaviour for {key}")

    def asscipy(self):
        """A ``scipy.sparse.csr_matrix`` copy."""
        import scipy.sparse as spsp
        v = self._value
        return spsp.csr_matrix((v.data.cpu().numpy(), v.indices.cpu().numpy(),
                                v.indptr.cpu().numpy()), shape=v.shape, dtype=self.dtype)

    def __reduce__(self):
        return CSRNDArray, (None,), self.__getstate__()


class RowSparseNDArray(BaseSparseNDArray):
    """Rows ``indices`` of a larger array, their values in ``data``; other rows are zero.

    >>> import symgraph as mx
    >>> a = mx.nd.sparse.row_sparse_array(([[1., 2.], [3., 4.]], [1, 3]), shape=(5, 2))
    >>> a.indices.asnumpy().tolist(), a.asnumpy()[3].tolist()
    ([1, 3], [3.0, 4.0])
    """

    _stype = "row_sparse"

    def __getitem__(self, key) -> NDArray:
        if isinstance(key, int):
            raise TypeError("__getitem__ with int key is not implemented for RowSparseNDArray")
        if isinstance(key, slice):
            if key != slice(None):
                raise TypeError("RowSparseNDArray only supports [:] for __getitem__")
            return self
        if isinstance(key, tuple):
            raise ValueError("Multi-dimension indexing is not supported")
        raise ValueError(f"Undefined behaviour for {key}")

    def retain(self, *args, **kwargs) -> NDArray:
        """Only the rows whose index is in ``indices`` (:func:`symgraph.ndarray.sparse.retain`)."""
        from .register import invoke
        return invoke("_sparse_retain", (self, *args), kwargs)

    def __reduce__(self):
        return RowSparseNDArray, (None,), self.__getstate__()


_CLASSES = {"row_sparse": RowSparseNDArray, "csr": CSRNDArray}

# MXNet's NDArray operators: (op on two arrays, op on array and scalar, op when the scalar is
# the left operand; None: the array-scalar op serves both)
_BINARY_OPS = {
    "add": ("broadcast_add", "_plus_scalar", None),
    "sub": ("broadcast_sub", "_minus_scalar", "_rminus_scalar"),
    "mul": ("broadcast_mul", "_mul_scalar", None),
    "div": ("broadcast_div", "_div_scalar", "_rdiv_scalar"),
    "mod": ("broadcast_mod", "_mod_scalar", "_rmod_scalar"),
    "pow": ("broadcast_power", "_power_scalar", "_rpower_scalar"),
    "maximum": ("broadcast_maximum", "_maximum_scalar", None),
    "minimum": ("broadcast_minimum", "_minimum_scalar", None),
    "eq": ("broadcast_equal", "_equal_scalar", None),
    "ne": ("broadcast_not_equal", "_not_equal_scalar", None),
    "gt": ("broadcast_greater", "_greater_scalar", "_lesser_scalar"),
    "ge": ("broadcast_greater_equal", "_greater_equal_scalar", "_lesser_equal_scalar"),
    "lt": ("broadcast_lesser", "_lesser_scalar", "_greater_scalar"),
    "le": ("broadcast_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar"),
}


def binary_op(name: str, array: NDArray, other, reflected: bool = False) -> NDArray:
    """``array <name> other`` (``other <name> array`` when ``reflected``) with a sparse
    operand, through the registered operator MXNet's NDArray uses, so its storage rule
    decides the result's storage type (``1 == rsp`` stays row_sparse, ``0 == rsp`` is dense).

    >>> import symgraph as mx
    >>> rsp = mx.nd.array([[0, 1], [0, 0]]).tostype('row_sparse')
    >>> binary_op("eq", rsp, 1).stype, binary_op("eq", rsp, 0).stype
    ('row_sparse', 'default')
    >>> binary_op("sub", rsp, 1, reflected=True).asnumpy().tolist()  # 1 - rsp
    [[1.0, 0.0], [1.0, 1.0]]
    """
    from .register import invoke
    on_arrays, on_scalar, scalar_first = _BINARY_OPS[name]
    if isinstance(other, NDArray):
        lhs, rhs = (other, array) if reflected else (array, other)
        return invoke(on_arrays, (lhs, rhs), {})
    if not isinstance(other, numbers.Number):
        raise TypeError(f"type {type(other)} not supported")
    op = scalar_first if reflected and scalar_first is not None else on_scalar
    return invoke(op, (array,), {"scalar": float(other)})


def wrap(value, ctx: Context | None = None) -> NDArray:
    """``value`` (a tensor or a sparse value) as an array of its storage class."""
    arr = NDArray(value) if isinstance(value, torch.Tensor) else _CLASSES[value.stype](value)
    arr._ctx = ctx
    return arr


def value_of(arr: NDArray):
    """The array's value: its tensor, or its sparse value bundle."""
    return arr._value if arr._is_sparse else arr._t


def assign(target: NDArray, value) -> None:
    """Write ``value`` (any storage) into ``target`` (any storage), casting storage and dtype."""
    if target._is_sparse:
        target._assign(value)
        return
    dense = densify(value, "assignment into a dense array")
    if tuple(dense.shape) != tuple(target._t.shape):
        raise ShapeError(f"cannot assign a value of shape {tuple(dense.shape)} to an array of "
                         f"shape {target.shape}")
    target._t.copy_(dense)


def recorder_tracks(*arrays) -> bool:
    """Whether autograd records a call on ``arrays``."""
    rec = hooks.STATE.recorder
    return rec is not None and rec.tracks(*arrays)
