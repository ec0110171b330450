"""``NDArray``: MXNet 1.x's imperative array as a thin wrapper around a ``torch.Tensor``."""
from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import torch
import torch.utils.dlpack

from ..base import (
    DTypeError,
    MXNetError,
    ShapeError,
    dtype_name,
    names_from,
    to_numpy_dtype,
    to_torch_dtype,
    unsupported,
)
from ..context import Context, context_of
from . import _index, _math, hooks
from ._out import _accepts_out


def _records_as(op: str, dropped: tuple[str, ...] = ("inplace",)):
    """A method written with torch that, under ``autograd.record()``, runs as the registered
    operator ``op`` instead (so it is differentiated); ``dropped`` keywords do not apply."""
    def decorate(method):
        def call(self, *args, **kwargs):
            rec = hooks.STATE.recorder
            if rec is not None and rec.tracks(self):
                return rec.invoke(op, (self, *args), {k: v for k, v in kwargs.items()
                                                      if k not in dropped})
            return method(self, *args, **kwargs)

        call.__name__ = call.__qualname__ = method.__name__
        call.__doc__, call.__wrapped__ = method.__doc__, method
        return call
    return decorate


def _box(begin, end, step) -> tuple:
    """The index of ``slice_assign``'s box (``None`` entries: whole axis / step 1)."""
    step = step or (None,) * len(begin)
    return tuple(slice(b, e, st) for b, e, st in zip(begin, end, step))


py_slice = slice  # MXNet's name for the builtin (its module shadows ``slice`` with the op)
# MXNet's storage type ids; symgraph stores 'default' (dense) only
_STORAGE_TYPE_STR_TO_ID = {"_undefined": -1, "default": 0, "row_sparse": 1, "csr": 2}
_STORAGE_TYPE_ID_TO_STR = {v: k for k, v in _STORAGE_TYPE_STR_TO_ID.items()}


class NDArray:
    """An n-dimensional array on a device, with MXNet 1.x's semantics.

    ``NDArray(tensor)`` wraps ``tensor`` without copying it (the executor wraps its own
    buffers this way); use :func:`symgraph.ndarray.array` to build one from data.
    Operators keep the dtype (no promotion), full reductions have shape ``(1,)`` and
    comparisons return 0/1 in the operands' dtype.

    Parameters
    ----------
    tensor : torch.Tensor
        The storage, kept in ``self._t``.

    Examples
    --------
    >>> from symgraph import ndarray as nd
    >>> a = nd.array([[1, 2], [3, 4]])
    >>> a
    <BLANKLINE>
    [[1. 2.]
     [3. 4.]]
    <NDArray 2x2 @cpu(0)>
    >>> (a * 2 + 1).asnumpy()
    array([[3., 5.],
           [7., 9.]], dtype=float32)
    >>> a.sum()
    <BLANKLINE>
    [10.]
    <NDArray 1 @cpu(0)>
    >>> a > 2
    <BLANKLINE>
    [[0. 0.]
     [1. 1.]]
    <NDArray 2x2 @cpu(0)>
    >>> nd.NDArray([1, 2])
    Traceback (most recent call last):
    ...
    TypeError: NDArray wraps a torch.Tensor, got list; use nd.array(...) to convert data
    """

    __array_priority__ = 1000.0  # numpy defers to our reflected operators
    __hash__ = object.__hash__  # identity hash, as MXNet (defining __eq__ would drop it)

    _pending_error = None  # a DeferredError of the executor step that wrote this array
    _pending_checks = None  # its deferred data checks: (device flag, error) pairs
    _is_sparse = False  # RowSparseNDArray / CSRNDArray (ndarray.sparse_array) hold a _value

    def __init__(self, tensor: torch.Tensor):
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"NDArray wraps a torch.Tensor, got {type(tensor).__name__}; "
                            "use nd.array(...) to convert data")
        self._t = tensor

    # ----------------------------------------------------------------- attributes
    @property
    def shape(self) -> tuple[int, ...]:
        """The shape as a tuple of ints."""
        return tuple(self._t.shape)

    @property
    def dtype(self) -> type:
        """The numpy scalar type of the elements (``numpy.float32`` by default)."""
        return to_numpy_dtype(self._t.dtype)

    # the context an array was created for when its device alone does not say it (cpu(1)
    # and cpu(0) share the CPU): MXNet keeps per-context copies apart that way
    _ctx: Context | None = None
    # autograd: the recorded call that produced this array, (tape node, output index)
    _ag_node = None
    # autograd: the gradient array of a marked variable (attach_grad), and its grad_req
    _ag_grad = None
    _ag_req = "null"
    # whether a backward wrote a gradient for this (parameter) array since the last update
    _fresh_grad = False
    # the chain of recorded calls that will compute this array (``imperative.deferred``)
    _chain = None

    @property
    def context(self) -> Context:
        """The device the array lives on."""
        ctx = self._ctx
        if ctx is None:  # kept: an array's tensor never moves to another device
            ctx = self._ctx = context_of(self._t.device)
        return ctx

    ctx = context

    @property
    def size(self) -> int:
        """Number of elements."""
        return self._t.numel()

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return self._t.dim()

    @property
    def stype(self) -> str:
        """Storage type; symgraph arrays are always ``'default'`` (dense)."""
        return "default"

    @property
    def T(self) -> NDArray:
        """A transposed copy (axes reversed); arrays with fewer than 2 dims return self."""
        if self.ndim < 2:
            return self
        return self.transpose()

    # ----------------------------------------------------------------- conversion
    # ----------------------------------------------------------------- autograd
    def attach_grad(self, grad_req: str = "write", stype=None) -> None:
        """Allocate a gradient array (``.grad``) that ``backward`` writes (or adds) into;
        ``stype``: its storage type (dense by default)."""
        if stype not in (None, "default"):
            from .sparse import zeros as sparse_zeros
            self._mark(sparse_zeros(stype, self.shape, ctx=self._ctx, dtype=self.dtype),
                       grad_req)
            return
        grad = NDArray(torch.zeros_like(self._t))
        grad._ctx = self._ctx
        self._mark(grad, grad_req)

    def _mark(self, grad: NDArray | None, grad_req: str) -> None:
        """Make this array a variable whose gradient a backward pass writes (``'write'``) or
        adds (``'add'``) into ``grad`` (``autograd.mark_variables``; ``'null'``: none)."""
        if grad_req not in ("write", "add", "null"):
            raise MXNetError(f"mark_variables: grad_req must be 'write', 'add' or 'null', "
                             f"got {grad_req!r}")
        self._ag_grad = None if grad_req == "null" else grad
        self._ag_req = grad_req
        self._ag_node = None  # a variable starts a new graph

    @property
    def grad(self) -> NDArray | None:
        """The gradient array attached by :meth:`attach_grad` (None without one)."""
        return self._ag_grad

    def backward(self, out_grad=None, retain_graph: bool = False,
                 train_mode: bool = True) -> None:
        """Gradients of this recorded array with respect to every marked variable."""
        hooks.backward([self], None if out_grad is None else [out_grad],
                       retain_graph=retain_graph, train_mode=train_mode)

    def detach(self) -> NDArray:
        """The same values, outside any recorded graph."""
        out = NDArray(self._t)
        out._ctx = self._ctx
        return out

    def asnumpy(self) -> np.ndarray:
        """A numpy copy of the data.

        >>> from symgraph import ndarray as nd
        >>> nd.array([1, 2], dtype='int32').asnumpy()
        array([1, 2], dtype=int32)
        """
        self.wait_to_read()
        if self._t.dtype == torch.bfloat16:
            raise DTypeError("bfloat16 arrays have no numpy equivalent; use astype first")
        return self._t.detach().cpu().numpy().copy()

    def asscalar(self):
        """The only element as a numpy scalar.

        >>> from symgraph import ndarray as nd
        >>> print(nd.array([3]).asscalar())
        3.0
        >>> nd.array([1, 2]).asscalar()
        Traceback (most recent call last):
        ...
        symgraph.base.ShapeError: The current array is not a scalar
        """
        if self.size != 1:
            raise ShapeError("The current array is not a scalar")
        return self.asnumpy().reshape(-1)[0]

    def astype(self, dtype, copy: bool = True) -> NDArray:
        """A copy cast to ``dtype`` (floats to ints truncate); ``copy=False`` may return self.

        >>> from symgraph import ndarray as nd
        >>> nd.array([1.7, -1.7]).astype('int32')
        <BLANKLINE>
        [ 1 -1]
        <NDArray 2 @cpu(0)>
        """
        target = to_torch_dtype(dtype)
        if not copy and target == self._t.dtype:
            return self
        return NDArray(self._t.to(target, copy=True))

    def copy(self) -> NDArray:
        """A deep copy on the same context."""
        return NDArray(self._t.clone(memory_format=torch.contiguous_format))

    def copyto(self, other) -> NDArray:
        """Copy into ``other`` (an NDArray of the same shape, cast to its dtype) or a Context.

        >>> from symgraph import ndarray as nd
        >>> dst = nd.zeros((2,), dtype='int32')
        >>> nd.array([1.5, 2.5]).copyto(dst)
        <BLANKLINE>
        [1 2]
        <NDArray 2 @cpu(0)>
        >>> nd.ones((2, 3)).copyto(nd.zeros((3, 2)))
        Traceback (most recent call last):
        ...
        symgraph.base.ShapeError: copyto: shape mismatch, source (2, 3), target (3, 2)
        """
        if isinstance(other, NDArray):
            if other is self:
                return self
            if other.shape != self.shape:
                raise ShapeError(f"copyto: shape mismatch, source {self.shape}, "
                                 f"target {other.shape}")
            if other._is_sparse:  # its value is replaced (cast to its storage and dtype)
                other._assign(self._t)
                return other
            other._t.copy_(self._t)
            return other
        if isinstance(other, Context):
            out = NDArray(self._t.to(other.torch_device, copy=True))
            out._ctx = other
            return out
        raise TypeError(f"copyto does not support type {type(other)}")

    def as_in_context(self, context: Context) -> NDArray:
        """This array if it is on ``context`` already, else a copy there."""
        if self.context == context:
            return self
        return self.copyto(context)

    # ----------------------------------------------------------------- MXNet extras
    writable = True  # MXNet arrays can be read-only views; symgraph's never are
    handle = None  # MXNet's C handle: symgraph arrays have none

    def as_nd_ndarray(self) -> NDArray:
        """This array (it is a legacy NDArray already)."""
        return self

    def as_np_ndarray(self):
        """MXNet's NumPy-interface array: not provided."""
        raise unsupported("NDArray.as_np_ndarray", "the NumPy-compatible interface (mx.np) "
                          "is not implemented")

    def tostype(self, stype: str) -> NDArray:
        """A copy in storage type ``stype`` (``'default'``, ``'row_sparse'`` or ``'csr'``).

        >>> from symgraph import ndarray as nd
        >>> nd.array([[0, 1], [0, 0]]).tostype('csr')
        <BLANKLINE>
        <CSRNDArray 2x2 @cpu(0)>
        """
        if stype == "default":
            return self.copy()
        from .register import invoke
        return invoke("cast_storage", (self,), {"stype": stype})

    def to_dlpack_for_read(self):
        """A DLPack capsule sharing this array's memory."""
        return torch.utils.dlpack.to_dlpack(self._t)

    to_dlpack_for_write = to_dlpack_for_read

    def slice_assign(self, rhs: NDArray, begin, end, step) -> NDArray:
        """Write ``rhs`` into the box ``begin:end:step`` of this array, in place."""
        self[_box(begin, end, step)] = rhs
        return self

    def slice_assign_scalar(self, value, begin, end, step) -> NDArray:
        """Fill the box ``begin:end:step`` of this array with ``value``, in place."""
        self[_box(begin, end, step)] = value
        return self

    def split_v2(self, indices_or_sections, axis=0, squeeze_axis=False):
        """See ``nd.split_v2``."""
        from .helpers import split_v2
        return split_v2(self, indices_or_sections, axis=axis, squeeze_axis=squeeze_axis)

    def wait_to_read(self) -> None:
        """Block until pending writes to this array are done; raises the error of the
        operator that wrote it, if it failed (:class:`~symgraph.base.DeferredError`)."""
        if self._pending_checks:
            checks, self._pending_checks = self._pending_checks, None
            failed = next((error for bad, error in checks if bool(bad)), None)
            if failed is not None:
                self._pending_error = failed()
        if self._pending_error is not None:
            raise self._pending_error
        if self._t.is_cuda:
            torch.cuda.current_stream(self._t.device).synchronize()

    # ----------------------------------------------------------------- protocol
    def __repr__(self) -> str:
        data = self if self._t.dtype != torch.bfloat16 else self.astype("float32")
        shape_info = "x".join(str(d) for d in self.shape)
        return f"\n{data.asnumpy()}\n<{type(self).__name__} {shape_info} @{self.context}>"

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """numpy conversion (``np.asarray(x)``, ``np.all(x == 1)``): a copy of the data.
        MXNet 1.9.1 has none and relied on numpy < 1.24 walking the array as a sequence."""
        out = self.asnumpy()
        return out if dtype is None else out.astype(dtype, copy=False)

    def __getstate__(self) -> dict:
        """Pickled as MXNet does: the array's record in MXNet's byte format."""
        from .io import save_raw
        return {"handle": save_raw(self)}

    def __setstate__(self, state: dict) -> None:
        from .io import load_raw
        handle = state.get("handle") if isinstance(state, dict) else None
        if not isinstance(handle, (bytes, bytearray)):
            raise MXNetError("NDArray pickle state must hold the array's bytes under 'handle'")
        self._t = load_raw(handle)._t

    # MXNet's private helper, which scripts reach (test_dropin)
    _basic_indexing_slice_is_contiguous = staticmethod(_index.slice_is_contiguous)

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d NDArray")
        return self.shape[0]

    def __iter__(self) -> Iterator[NDArray]:
        for i in range(len(self)):
            yield self[i]

    def __bool__(self) -> bool:
        size = self.size
        if size == 0:
            return False
        if size == 1:
            return bool(self.asscalar())
        raise ShapeError("The truth value of an NDArray with multiple elements is ambiguous.")

    def __getitem__(self, key) -> NDArray:
        out = NDArray(_index.getitem(self._t, _unwrap_key(key)))
        rec = hooks.STATE.recorder
        if rec is not None and rec.tracks(self):
            return rec.getitem(self, key, out.shape)
        return out

    def __setitem__(self, key, value) -> None:
        rec = hooks.STATE.recorder
        if key is not None and key is not Ellipsis and rec is not None and \
                rec.tracks(self, value):
            raise MXNetError("Inplace operations (+=, -=, x[:]=, etc) are not supported when "
                             "recording with autograd.")
        _index.setitem(self._t, _unwrap_key(key), _value_tensor(value, self._t))

    # ----------------------------------------------------------------- arithmetic
    def _binary(self, name: str, other, reflected: bool = False) -> NDArray:
        rec = hooks.STATE.recorder
        if rec is not None and rec.tracks(self, other):
            out = rec.binary(name, self, other, reflected)
            if out is not None:
                return out
        if isinstance(other, NDArray) and other._is_sparse:
            from .sparse_array import binary_op  # the operator's storage rule decides
            return binary_op(name, self, other, reflected)
        if isinstance(other, NDArray):
            if other._t.device != self._t.device:
                raise MXNetError(f"{name}: operands are on different contexts, "
                                 f"{self.context} and {other.context}")
            return NDArray(_math.binary(name, self._t, other._t, reflected))
        if _math.is_scalar(other):
            return NDArray(_math.binary(name, self._t, other, reflected))
        raise TypeError(f"type {type(other)} not supported")

    def _inplace(self, name: str, other) -> NDArray:
        result = self._binary(name, other)._t
        if result.shape != self._t.shape:
            raise ShapeError(f"in-place {name}: result shape {tuple(result.shape)} differs from "
                             f"the array's shape {self.shape}")
        self._t.copy_(result)
        return self

    def __add__(self, other) -> NDArray:
        return self._binary("add", other)

    def __radd__(self, other) -> NDArray:
        return self._binary("add", other, reflected=True)

    def __iadd__(self, other) -> NDArray:
        return self._inplace("add", other)

    def __sub__(self, other) -> NDArray:
        return self._binary("sub", other)

    def __rsub__(self, other) -> NDArray:
        return self._binary("sub", other, reflected=True)

    def __isub__(self, other) -> NDArray:
        return self._inplace("sub", other)

    def __mul__(self, other) -> NDArray:
        return self._binary("mul", other)

    def __rmul__(self, other) -> NDArray:
        return self._binary("mul", other, reflected=True)

    def __imul__(self, other) -> NDArray:
        return self._inplace("mul", other)

    def __truediv__(self, other) -> NDArray:
        return self._binary("div", other)

    def __rtruediv__(self, other) -> NDArray:
        return self._binary("div", other, reflected=True)

    def __itruediv__(self, other) -> NDArray:
        return self._inplace("div", other)

    def __mod__(self, other) -> NDArray:
        return self._binary("mod", other)

    def __rmod__(self, other) -> NDArray:
        return self._binary("mod", other, reflected=True)

    def __imod__(self, other) -> NDArray:
        return self._inplace("mod", other)

    def __pow__(self, other) -> NDArray:
        return self._binary("pow", other)

    def __rpow__(self, other) -> NDArray:
        return self._binary("pow", other, reflected=True)

    def __neg__(self) -> NDArray:
        rec = hooks.STATE.recorder
        if rec is not None and rec.tracks(self):
            return rec.apply("negative", [self])
        return NDArray(torch.neg(self._t))

    def __abs__(self) -> NDArray:
        return self.abs()

    def __eq__(self, other) -> NDArray:  # type: ignore[override]
        return self._binary("eq", other)

    def __ne__(self, other) -> NDArray:  # type: ignore[override]
        return self._binary("ne", other)

    def __gt__(self, other) -> NDArray:
        return self._binary("gt", other)

    def __ge__(self, other) -> NDArray:
        return self._binary("ge", other)

    def __lt__(self, other) -> NDArray:
        return self._binary("lt", other)

    def __le__(self, other) -> NDArray:
        return self._binary("le", other)

    # ----------------------------------------------------------------- shape
    def reshape(self, *shape, **kwargs) -> NDArray:
        """A view with a new shape; MXNet's codes 0 (keep), -1 (infer), -2, -3, -4 work.

        >>> from symgraph import ndarray as nd
        >>> x = nd.zeros((2, 3, 4))
        >>> x.reshape(0, -1).shape, x.reshape((-3, 4)).shape, x.reshape(shape=(4, 6)).shape
        ((2, 12), (6, 4), (4, 6))
        >>> x.reshape(5, -1)
        Traceback (most recent call last):
        ...
        symgraph.base.ShapeError: Cannot reshape array of size 24 into shape (5, -1)
        """
        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = tuple(shape[0])
        elif not shape:
            shape = kwargs.pop("shape", None)
            if shape is None:
                raise ShapeError("Shape must be provided.")
            shape = (shape,) if isinstance(shape, int) else tuple(shape)
        kwargs.pop("shape", None)
        reverse = bool(kwargs.pop("reverse", False))
        if kwargs:
            raise TypeError(f"Got unknown keywords in reshape: {', '.join(kwargs)}. "
                            "Accepted keyword arguments are 'shape' and 'reverse'.")
        new = _math.infer_reshape(self.shape, shape, reverse)
        if any(d < 0 for d in new) or math.prod(new) != self.size:
            raise ShapeError(f"Cannot reshape array of size {self.size} into shape {tuple(shape)}")
        rec = hooks.STATE.recorder
        if rec is not None and rec.tracks(self):
            return rec.apply("Reshape", [self], shape=tuple(new))
        return NDArray(self._t.reshape(new))

    @_records_as("transpose")
    def transpose(self, *axes, **kwargs) -> NDArray:
        """A copy with permuted axes (reversed when none are given).

        >>> from symgraph import ndarray as nd
        >>> nd.zeros((2, 3, 4)).transpose(axes=(1, 0, 2)).shape
        (3, 2, 4)
        """
        if "axes" in kwargs:
            axes = (kwargs.pop("axes"),)
        if kwargs:
            raise TypeError(f"transpose got unexpected keywords {sorted(kwargs)}")
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (list, tuple))):
            axes = axes[0] or ()
        perm = tuple(axes) if axes else tuple(reversed(range(self.ndim)))
        if sorted(_math.norm_axes(perm, self.ndim)) != list(range(self.ndim)) or \
                len(perm) != self.ndim:
            raise ShapeError(f"transpose: axes {perm} are not a permutation of the dimensions "
                             f"of an array of shape {self.shape}")
        return NDArray(self._t.permute(perm).clone(memory_format=torch.contiguous_format))

    @_records_as("Flatten")
    def flatten(self, inplace: bool = False) -> NDArray:
        """A copy (``inplace``: a view) with every axis but the first collapsed: shape
        ``(d0, d1*d2*...)``."""
        if inplace:
            return self.reshape((self.shape[0], -1)) if self.ndim else self.reshape((1, 1))
        if self.ndim == 0:
            return NDArray(self._t.reshape(1, 1).clone())
        return NDArray(self._t.reshape(self.shape[0], -1).clone())

    @_records_as("expand_dims")
    def expand_dims(self, axis: int, inplace: bool = False) -> NDArray:
        """A copy (``inplace``: a view) with a new axis of size 1 at ``axis``."""
        out = self._t.unsqueeze(axis)
        return NDArray(out if inplace else out.clone())

    @_records_as("squeeze")
    def squeeze(self, axis=None, inplace: bool = False) -> NDArray:
        """A copy (``inplace``: a view) without the size-1 axes (or only those in ``axis``)."""
        axes = [a for a in range(self.ndim) if self.shape[a] == 1] if axis is None \
            else _math.norm_axes(axis, self.ndim)
        out = self._t
        for a in sorted(axes, reverse=True):
            out = out.squeeze(a)
        out = out.reshape(1) if out.dim() == 0 else out
        return NDArray(out if inplace else out.clone())

    @_records_as("broadcast_to")
    def broadcast_to(self, shape) -> NDArray:
        """A copy broadcast to ``shape`` (numpy rules; a 0 keeps this array's dim)."""
        shape = tuple(int(d) for d in shape)
        if len(shape) == self.ndim:
            shape = tuple(d or own for d, own in zip(shape, self.shape))
        _math.check_broadcast("broadcast_to", self.shape, shape)
        return NDArray(torch.broadcast_to(self._t, shape).clone())

    def zeros_like(self) -> NDArray:
        """An array of zeros with this shape, dtype and context."""
        return NDArray(torch.zeros_like(self._t))

    def ones_like(self) -> NDArray:
        """An array of ones with this shape, dtype and context."""
        return NDArray(torch.ones_like(self._t))

    # ----------------------------------------------------------------- reductions
    def _reduce(self, name: str, axis, keepdims, exclude) -> NDArray:
        rec = hooks.STATE.recorder
        if rec is not None and rec.tracks(self):
            return rec.apply(name, [self], axis=axis, keepdims=keepdims, exclude=exclude)
        return NDArray(_math.reduce(name, self._t, axis, bool(keepdims), bool(exclude)))

    @_accepts_out
    def sum(self, axis=None, keepdims: bool = False, exclude: bool = False) -> NDArray:
        """Sum over ``axis`` (all axes by default); see :func:`symgraph.ndarray.sum`."""
        return self._reduce("sum", axis, keepdims, exclude)

    @_accepts_out
    def mean(self, axis=None, keepdims: bool = False, exclude: bool = False) -> NDArray:
        """Mean over ``axis``; integer arrays give a truncated integer mean."""
        return self._reduce("mean", axis, keepdims, exclude)

    @_accepts_out
    def max(self, axis=None, keepdims: bool = False, exclude: bool = False) -> NDArray:
        """Maximum over ``axis``."""
        return self._reduce("max", axis, keepdims, exclude)

    @_accepts_out
    def min(self, axis=None, keepdims: bool = False, exclude: bool = False) -> NDArray:
        """Minimum over ``axis``."""
        return self._reduce("min", axis, keepdims, exclude)

    @_accepts_out
    def prod(self, axis=None, keepdims: bool = False, exclude: bool = False) -> NDArray:
        """Product over ``axis``."""
        return self._reduce("prod", axis, keepdims, exclude)

    def norm(self, ord=2, axis=None, out_dtype=None, keepdims=False) -> NDArray:
        """L2 norm over ``axis`` (all elements by default, giving shape ``(1,)``); other
        ``ord``/``out_dtype`` run the registered ``norm`` operator."""
        if ord != 2 or out_dtype is not None:
            from .register import invoke
            return invoke("norm", (self,), {"ord": ord, "axis": axis, "out_dtype": out_dtype,
                                            "keepdims": keepdims})
        keepdims = bool(keepdims)
        rec = hooks.STATE.recorder
        if rec is not None and rec.tracks(self):
            return rec.apply("norm", [self], axis=axis, keepdims=keepdims)
        return NDArray(_math.reduce("norm", self._t, axis, keepdims))

    @_accepts_out
    def argmax(self, axis=None, keepdims: bool = False) -> NDArray:
        """Index of the maximum along ``axis``, in this array's dtype (float32 by default)."""
        return NDArray(_math.arg_reduce("argmax", self._t, axis, keepdims))

    @_accepts_out
    def argmin(self, axis=None, keepdims: bool = False) -> NDArray:
        """Index of the minimum along ``axis``, in this array's dtype."""
        return NDArray(_math.arg_reduce("argmin", self._t, axis, keepdims))

    # ----------------------------------------------------------------- elementwise
    def _unary(self, name: str) -> NDArray:
        rec = hooks.STATE.recorder
        if rec is not None and rec.tracks(self):
            return rec.apply(name, [self])
        return NDArray(_math.unary(name, self._t))

    @_records_as("clip")
    def clip(self, a_min, a_max) -> NDArray:
        """Clamp every element into ``[a_min, a_max]``."""
        return NDArray(_math.clip(self._t, a_min, a_max))

    def exp(self) -> NDArray:
        """Elementwise ``e**x``; see :func:`symgraph.ndarray.exp`."""
        return self._unary("exp")

    def expm1(self) -> NDArray:
        """Elementwise ``e**x - 1``."""
        return self._unary("expm1")

    def log(self) -> NDArray:
        """Elementwise natural logarithm."""
        return self._unary("log")

    def log1p(self) -> NDArray:
        """Elementwise ``log(1 + x)``."""
        return self._unary("log1p")

    def log2(self) -> NDArray:
        """Elementwise base-2 logarithm."""
        return self._unary("log2")

    def log10(self) -> NDArray:
        """Elementwise base-10 logarithm."""
        return self._unary("log10")

    def sqrt(self) -> NDArray:
        """Elementwise square root."""
        return self._unary("sqrt")

    def rsqrt(self) -> NDArray:
        """Elementwise ``1 / sqrt(x)``."""
        return self._unary("rsqrt")

    def square(self) -> NDArray:
        """Elementwise ``x * x``."""
        return self._unary("square")

    def abs(self) -> NDArray:
        """Elementwise absolute value."""
        return self._unary("abs")

    def sign(self) -> NDArray:
        """Elementwise sign (-1, 0 or 1)."""
        return self._unary("sign")

    def reciprocal(self) -> NDArray:
        """Elementwise ``1 / x``."""
        return self._unary("reciprocal")

    def relu(self) -> NDArray:
        """Elementwise ``max(x, 0)``."""
        return self._unary("relu")

    def sigmoid(self) -> NDArray:
        """Elementwise logistic function ``1 / (1 + exp(-x))``."""
        return self._unary("sigmoid")

    def tanh(self) -> NDArray:
        """Elementwise hyperbolic tangent."""
        return self._unary("tanh")

    def sin(self) -> NDArray:
        """Elementwise sine."""
        return self._unary("sin")

    def cos(self) -> NDArray:
        """Elementwise cosine."""
        return self._unary("cos")

    def floor(self) -> NDArray:
        """Elementwise floor."""
        return self._unary("floor")

    def ceil(self) -> NDArray:
        """Elementwise ceiling."""
        return self._unary("ceil")

    def round(self) -> NDArray:
        """Round to the nearest integer, halves away from zero."""
        return self._unary("round")

    def rint(self) -> NDArray:
        """Round to the nearest integer, halves downwards (``rint(1.5) == 1``) as MXNet."""
        return self._unary("rint")

    def fix(self) -> NDArray:
        """Round towards zero."""
        return self._unary("fix")


def _unwrap_key(key):
    """NDArrays inside an index key to their tensors."""
    if isinstance(key, NDArray):
        return key._t
    if isinstance(key, tuple):
        return tuple(k._t if isinstance(k, NDArray) else k for k in key)
    return key


def _value_tensor(value, like: torch.Tensor) -> torch.Tensor:
    """A value assigned with ``a[key] = value`` as a tensor of ``like``'s dtype and device."""
    if isinstance(value, NDArray):
        return value._t.to(device=like.device, dtype=like.dtype)
    if isinstance(value, torch.Tensor):
        return value.to(device=like.device, dtype=like.dtype)
    if _math.is_scalar(value):
        return _math.scalar_like(value, like)
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as err:
        raise TypeError(f"cannot assign a value of type {type(value)} to an NDArray") from err
    if arr.dtype == object:
        raise TypeError(f"cannot assign a value of type {type(value)} to an NDArray")
    name = dtype_name(like.dtype)
    arr = arr.astype(np.float32 if name == "bfloat16" else name)
    return torch.from_numpy(np.ascontiguousarray(arr)).to(device=like.device, dtype=like.dtype)


# names MXNet's mxnet/ndarray/ndarray.py defines that symgraph's package holds
__getattr__ = names_from(__name__, "symgraph.ndarray", """add arange concatenate divide equal
    eye from_dlpack from_numpy full get_indexing_dispatch_code get_oshape_of_gather_nd_op
    greater greater_equal histogram imdecode indexing_key_expand_implicit_axes lesser
    lesser_equal linspace logical_and logical_or logical_xor maximum minimum modulo moveaxis
    multiply not_equal onehot_encode ones power split_v2 subtract to_dlpack_for_read
    to_dlpack_for_write true_divide waitall zeros""".split())
