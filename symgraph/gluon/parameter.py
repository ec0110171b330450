"""``mx.gluon.Parameter``, ``Constant`` and ``ParameterDict``, as MXNet 1.9.1.

A Parameter holds one data array (and, unless ``grad_req='null'``, one gradient array) per
context it was initialized on; ``cpu(0)`` and ``cpu(1)`` are distinct contexts whose arrays
share the CPU device. Initialization is deferred while the shape has unknown (0) dims and
``allow_deferred_init`` is set; blocks call ``_finish_deferred_init`` once it is known.

Data arrays are marked as autograd variables with their gradient arrays
(``autograd.mark_variables``), and carry ``_fresh_grad`` (set by a backward, cleared by
Trainer). A ``row_sparse`` parameter (``stype``) is read through its Trainer's kvstore
(:meth:`Parameter.row_sparse_data`), not :meth:`Parameter.data`; ``grad_stype`` is the
storage of the gradient arrays (an ``Embedding`` with ``sparse_grad=True`` writes row_sparse
gradients holding only the rows a batch used).

>>> import symgraph as mx
>>> w = mx.gluon.Parameter('fc_weight', shape=(2, 3), init=mx.init.One())
>>> w.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
>>> w
Parameter fc_weight (shape=(2, 3), dtype=<class 'numpy.float32'>)
>>> w.data(mx.cpu(1)).asnumpy()
array([[1., 1., 1.],
       [1., 1., 1.]], dtype=float32)
>>> w.data(mx.cpu(2))
Traceback (most recent call last):
...
RuntimeError: Parameter 'fc_weight' was not initialized on context cpu(2). It was only \
initialized on [cpu(0), cpu(1)].
"""
from __future__ import annotations

import warnings
from collections import OrderedDict

import numpy as np
import torch

from .. import context, initializer, ndarray, symbol  # noqa: F401 - MXNet's names
from ..base import MXNetError, dtype_name
from ..context import Context, cpu, current_context
from ..imperative import autograd
from ..ndarray import NDArray
from ..ndarray import array as _nd_array
from ..ndarray import load as _nd_load
from ..ndarray import save as _nd_save
from ..ndarray import zeros as _nd_zeros
from ..ndarray.sparse_array import value_of, wrap
from ..sparse import formats
from ..symbol import Symbol
from ..symbol import var as _sym_var
from ..util import is_np_array, is_np_shape  # noqa: F401 - MXNet's names
from .utils import _brief_print_list, _indent, _require, shape_is_known

__all__ = ["DeferredInitializationError", "Parameter", "Constant", "ParameterDict",
           "tensor_types"]

mx_real_t = np.float32
tensor_types = (Symbol, NDArray)
_VALID_STYPES = ('default', 'row_sparse', 'csr')
_NAMING_URL = "https://mxnet.io/api/python/docs/tutorials/packages/gluon/blocks/naming.html"
# MXNet's default initializers are instances created once, at definition
_DEFAULT_INIT = initializer.Uniform()


class ParameterLoadError(AssertionError, MXNetError):
    """Saved parameters do not match the Parameters they are loaded into (names, shapes,
    dtypes, contexts); nothing was loaded. An ``AssertionError`` first, as MXNet raises."""


class ParameterNameError(ValueError, MXNetError):
    """A parameter file holds a name the Block does not have; nothing was loaded. A
    ``ValueError`` first, as MXNet raises."""


class DeferredInitializationError(MXNetError):
    """Error for unfinished deferred initialization."""


def _check_stype(name: str, stype: str, grad_stype: str) -> None:
    """MXNet's stype assertions."""
    if grad_stype not in _VALID_STYPES:
        raise AssertionError(
            f"grad_stype for Parameter '{name}' must be one of "
            f"'default', 'row_sparse', or 'csr', but got '{grad_stype}'")
    if stype not in _VALID_STYPES:
        raise AssertionError(
            f"stype for Parameter '{name}' must be one of "
            f"'default', 'row_sparse', or 'csr', but got '{stype}'")


def _as_ctx_list(ctx) -> list[Context]:
    """``None`` -> ``[current_context()]``, a Context -> ``[ctx]``, a list as is."""
    if ctx is None:
        return [current_context()]
    if isinstance(ctx, Context):
        return [ctx]
    return ctx


def _fresh(arr: NDArray, like: NDArray | None = None) -> NDArray:
    """``arr`` with ``_fresh_grad`` cleared, labelled with ``like``'s context if given."""
    arr._fresh_grad = False
    if like is not None:
        arr._ctx = like.context
    return arr


def _zeros_like(arr: NDArray, stype: str = 'default') -> NDArray:
    """A zero array of storage ``stype`` with ``arr``'s shape, dtype and context (cpu(1)
    included); a sparse one holds no rows (entries)."""
    if stype == 'default' and not arr._is_sparse:
        return _fresh(NDArray(arr._t.new_zeros(arr._t.shape)), arr)
    v = value_of(arr)
    return _fresh(wrap(formats.empty_like_stype(stype, tuple(v.shape), v.dtype, v.device)),
                  arr)


def _dtype_str(arr: NDArray) -> str:
    """``str(arr.dtype)`` as MXNet prints it (``bfloat16`` has no numpy type)."""
    name = dtype_name(arr._t.dtype)
    return name if name == 'bfloat16' else str(arr.dtype)


_ARRAYS_VERSION = [0]


def arrays_version() -> int:
    """A number that changes whenever any parameter's arrays, contexts, gradient request or
    deferred initialisation change (not their values)."""
    return _ARRAYS_VERSION[0]


class Parameter:
    """A container holding a parameter (weight) of Blocks, one copy per context.

    Parameters
    ----------
    name : str
        Name of this parameter.
    grad_req : {'write', 'add', 'null'}, default 'write'
        How gradients are written to the gradient arrays; 'null' allocates none.
    shape : int or tuple of int, default None
        Shape of this parameter; 0 marks an unknown dimension.
    dtype : numpy.dtype or str, default 'float32'
        Data type of this parameter.
    lr_mult, wd_mult : float, default 1.0
        Learning rate and weight decay multipliers.
    init : Initializer, default None
        Initializer of this parameter; the global initializer is used when None.
    allow_deferred_init : bool, default False
        Defer initialization while the shape is unknown.
    differentiable : bool, default True
        False forces ``grad_req='null'``.
    stype, grad_stype : {'default', 'row_sparse', 'csr'}, default 'default'
        Storage types of the data and of the gradient arrays; a 'row_sparse' parameter
        is read with :meth:`row_sparse_data` once a Trainer holds it.

    Examples
    --------
    >>> import symgraph as mx
    >>> b = mx.gluon.Parameter('fc_bias', shape=(2,), init=mx.init.Zero())
    >>> b.data()
    Traceback (most recent call last):
    ...
    RuntimeError: Parameter 'fc_bias' has not been initialized. Note that you should \
initialize parameters and create Trainer with Block.collect_params() instead of Block.params \
because the later does not include Parameters of nested child Blocks
    >>> b.initialize()
    >>> b.data().asnumpy(), b.grad().asnumpy()
    (array([0., 0.], dtype=float32), array([0., 0.], dtype=float32))
    >>> b.shape = (3,)
    Traceback (most recent call last):
    ...
    AssertionError: Expected shape (3,) is incompatible with given shape (2,).
    """

    # assigning any of these changes which arrays a block's graph must use: bumps
    # ``arrays_version()``, so blocks can keep their parameter arrays between calls
    _VERSIONED = frozenset({"_data", "_grad", "_grad_req", "_ctx_list", "_ctx_map",
                            "_deferred_init"})

    def __setattr__(self, name: str, value) -> None:
        if name in Parameter._VERSIONED:
            _ARRAYS_VERSION[0] += 1
        object.__setattr__(self, name, value)

    def __init__(self, name: str, grad_req: str = 'write', shape=None, dtype=mx_real_t,
                 lr_mult: float = 1.0, wd_mult: float = 1.0, init=None,
                 allow_deferred_init: bool = False, differentiable: bool = True,
                 stype: str = 'default', grad_stype: str = 'default'):
        _check_stype(name, stype, grad_stype)
        self._var = None
        self._data: list[NDArray] | None = None
        self._grad: list[NDArray] | None = None
        self._ctx_list: list[Context] | None = None
        self._ctx_map: list[list] | None = None
        self._trainer = None
        self._deferred_init: tuple = ()
        self._differentiable = differentiable
        self._allow_deferred_init = allow_deferred_init
        self._grad_req = None
        self._shape = (shape,) if isinstance(shape, int) else shape
        self.name = name
        self._dtype = dtype
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.grad_req = grad_req
        self.init = init
        self._grad_stype = grad_stype
        self._stype = stype

    def __repr__(self) -> str:
        return f'Parameter {self.name} (shape={self.shape}, dtype={self.dtype})'

    # ----------------------------------------------------------------- attributes
    @property
    def grad_req(self) -> str:
        """'write', 'add' or 'null'; 'null' drops the gradient arrays, others allocate zeros."""
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req: str) -> None:
        if req not in ['write', 'add', 'null']:
            raise AssertionError(
                f"grad_req must be one of 'write', 'add', or 'null', but got '{req}'")
        if not self._differentiable:
            req = 'null'
        if self._grad_req == req:
            return
        self._grad_req = req
        if req == 'null' and self._grad is not None:
            self._grad = None
            # as MXNet: new handles on the same memory, no longer autograd variables
            self._data = [_fresh(arr.detach(), arr) for arr in self._data]
        elif self._data is not None:
            self._init_grad()

    @property
    def dtype(self):
        """The data type; setting it casts the data and gradients (:meth:`cast`)."""
        return self._dtype

    @dtype.setter
    def dtype(self, dtype) -> None:
        self.cast(dtype)

    @property
    def shape(self):
        """The shape; 0 marks an unknown dimension (legacy MXNet shapes)."""
        return self._shape

    @shape.setter
    def shape(self, new_shape) -> None:
        if self._shape is None:
            self._shape = new_shape
            return
        if len(self._shape) != len(new_shape) or \
                not all(j in (-1, 0, i) for i, j in zip(new_shape, self._shape)):
            raise AssertionError(
                f"Expected shape {new_shape} is incompatible with given shape {self._shape}.")
        self._shape = new_shape

    def _set_trainer(self, trainer) -> None:
        """Set the trainer this parameter is associated with (a sparse one has only one)."""
        if self._stype != 'default' and self._trainer and trainer and \
                self._trainer is not trainer:
            raise RuntimeError(
                f"Failed to set the trainer for Parameter '{self.name}' because it was already "
                f"set. More than one trainers for a {self._stype} Parameter is not supported.")
        self._trainer = trainer

    # ----------------------------------------------------------------- access
    def _check_and_get(self, arr_list, ctx):
        """The array on ``ctx`` (all of them for ``ctx is list``), or MXNet's error."""
        if arr_list is not None:
            if ctx is list:
                return arr_list
            if ctx is None:
                if len(arr_list) == 1:
                    return arr_list[0]
                ctx = current_context()
            ctx_list = self._ctx_map[ctx.device_typeid & 1]
            if ctx.device_id < len(ctx_list) and ctx_list[ctx.device_id] is not None:
                return arr_list[ctx_list[ctx.device_id]]
            raise RuntimeError(
                f"Parameter '{self.name}' was not initialized on context {ctx}. "
                f"It was only initialized on {self._ctx_list}.")
        if self._deferred_init:
            raise DeferredInitializationError(
                f"Parameter '{self.name}' has not been initialized yet because initialization "
                "was deferred. Actual initialization happens during the first forward pass. "
                "Please pass one batch of data through the network before accessing "
                "Parameters. You can also avoid deferred initialization by specifying "
                "in_units, num_features, etc., for network layers.")
        raise RuntimeError(
            f"Parameter '{self.name}' has not been initialized. Note that you should "
            "initialize parameters and create Trainer with Block.collect_params() instead of "
            "Block.params because the later does not include Parameters of nested child Blocks")

    def data(self, ctx: Context | None = None) -> NDArray:
        """This parameter's array on ``ctx`` (the only one, or the current context's); a
        sparse parameter is read with :meth:`row_sparse_data` instead."""
        if self._stype != 'default':
            raise RuntimeError(
                f"Cannot return a copy of Parameter '{self.name}' on ctx {ctx} via data() "
                f"because its storage type is {self._stype}. Please use row_sparse_data() "
                "instead.")
        return self._check_and_get(self._data, ctx)

    def _get_row_sparse(self, arr_list, ctx, row_id: NDArray):
        """The arrays on ``ctx`` (``list``: all) holding the rows ``row_id`` pulled from the
        Trainer's kvstore."""
        if not isinstance(row_id, NDArray):
            raise TypeError(f"row_id must have NDArray type, but {type(row_id)} is given")
        if not self._trainer:
            raise RuntimeError(f"Cannot get row_sparse data for Parameter '{self.name}' when "
                               "no Trainer is created with it.")
        results = self._check_and_get(arr_list, ctx)
        self._trainer._row_sparse_pull(self, results, row_id)
        return results

    def row_sparse_data(self, row_id: NDArray) -> NDArray:
        """The 'row_sparse' parameter on ``row_id``'s context holding only the rows
        ``row_id`` (pulled from the Trainer's kvstore).

        >>> import symgraph as mx
        >>> w = mx.gluon.Parameter('w', shape=(4, 2), stype='row_sparse')
        >>> w.initialize(init=mx.init.One(), ctx=mx.cpu())
        >>> trainer = mx.gluon.Trainer([w], 'sgd')
        >>> rows = w.row_sparse_data(mx.nd.array([1, 3]))
        >>> rows.stype, rows.indices.asnumpy().tolist()
        ('row_sparse', [1, 3])
        >>> mx.gluon.Parameter('d', shape=(2,)).row_sparse_data(mx.nd.array([0]))
        Traceback (most recent call last):
        ...
        RuntimeError: Cannot return a copy of Parameter d via row_sparse_data() because its \
storage type is default. Please use data() instead.
        """
        if self._stype != 'row_sparse':
            raise RuntimeError(f"Cannot return a copy of Parameter {self.name} via "
                               f"row_sparse_data() because its storage type is {self._stype}. "
                               "Please use data() instead.")
        return self._get_row_sparse(self._data, row_id.ctx, row_id)

    def list_row_sparse_data(self, row_id: NDArray) -> list[NDArray]:
        """:meth:`row_sparse_data` on every context, in the order of :meth:`list_ctx`."""
        if self._stype != 'row_sparse':
            raise RuntimeError(f"Cannot return copies of Parameter '{self.name}' on all "
                               "contexts via list_row_sparse_data() because its storage type "
                               f"is {self._stype}. Please use data() instead.")
        return self._get_row_sparse(self._data, list, row_id)

    def list_data(self) -> list[NDArray]:
        """The arrays on all contexts, in the order of :meth:`list_ctx` (dense only)."""
        if self._stype != 'default':
            raise RuntimeError(
                f"Cannot return copies of Parameter '{self.name}' on all contexts via "
                f"list_data() because its storage type is {self._stype}. Please use "
                "row_sparse_data() instead.")
        return self._check_and_get(self._data, list)

    def _check_grad(self) -> None:
        if self._data is not None and self._grad is None:
            raise RuntimeError(f"Cannot get gradient array for Parameter '{self.name}' "
                               "because grad_req='null'")

    def grad(self, ctx: Context | None = None) -> NDArray:
        """The gradient array on ``ctx``."""
        self._check_grad()
        return self._check_and_get(self._grad, ctx)

    def list_grad(self) -> list[NDArray]:
        """The gradient arrays on all contexts, in the order of :meth:`list_ctx`."""
        self._check_grad()
        return self._check_and_get(self._grad, list)

    def list_ctx(self) -> list[Context]:
        """The contexts this parameter is (or, deferred, will be) initialized on."""
        if self._data is None:
            if self._deferred_init:
                return self._deferred_init[1]
            raise RuntimeError(f"Parameter '{self.name}' has not been initialized")
        return self._ctx_list

    # ----------------------------------------------------------------- initialization
    def initialize(self, init=None, ctx=None, default_init=_DEFAULT_INIT,
                   force_reinit: bool = False) -> None:
        """Initialize data and gradient arrays on ``ctx`` (a Context or a list).

        The initializer is ``init``, else ``self.init``, else ``default_init``; it is called
        as ``default_init(InitDesc(name, {'__init__': init}), arr)``, so the chosen one's
        ``_init_weight`` runs whatever the name. Initialization is deferred while the shape
        is unknown and ``allow_deferred_init`` is set; otherwise that raises ``ValueError``.
        An initialized parameter warns and is left alone unless ``force_reinit``.
        """
        if self._data is not None and not force_reinit:
            warnings.warn(f"Parameter '{self.name}' is already initialized, ignoring. "
                          "Set force_reinit=True to re-initialize.", stacklevel=2)
            return
        self._data = self._grad = None
        ctx = _as_ctx_list(ctx)
        if init is None:
            init = default_init if self.init is None else self.init
        if not shape_is_known(self.shape):
            if self._allow_deferred_init:
                self._deferred_init = (init, ctx, default_init, None)
                return
            raise ValueError(f"Cannot initialize Parameter '{self.name}' because it has "
                             f"invalid shape: {self.shape}.")
        self._deferred_init = (init, ctx, default_init, None)
        self._finish_deferred_init()

    def _finish_deferred_init(self) -> None:
        """Run the deferred initialization (the shape must be known by now)."""
        if not self._deferred_init:
            return
        init, ctx, default_init, data = self._deferred_init
        self._deferred_init = ()
        if not shape_is_known(self.shape):
            raise AssertionError(
                f"Cannot initialize Parameter '{self.name}' because it has invalid shape: "
                f"{self.shape}. Please specify in_units, in_channels, etc for `Block`s.")
        with autograd.pause():
            if data is None:
                data = _nd_zeros(self.shape, ctx=cpu(), dtype=self.dtype, stype=self._stype)
                initializer.create(default_init)(
                    initializer.InitDesc(self.name, {'__init__': init}), data)
            self._init_impl(data, ctx)

    def _init_impl(self, data: NDArray, ctx_list: list[Context]) -> None:
        """Copy ``data`` to every context and allocate gradients."""
        self._ctx_list = list(ctx_list)
        self._ctx_map = [[], []]
        for i, ctx in enumerate(self._ctx_list):
            dev_list = self._ctx_map[ctx.device_typeid & 1]
            while len(dev_list) <= ctx.device_id:
                dev_list.append(None)
            dev_list[ctx.device_id] = i
        if not isinstance(data, NDArray):
            data = _nd_array(data, ctx=cpu(), dtype=self.dtype)
        self._data = [_fresh(data.copyto(ctx)) for ctx in self._ctx_list]
        self._init_grad()

    def _init_grad(self) -> None:
        """Allocate zero gradient arrays (none for grad_req 'null')."""
        if self.grad_req == 'null':
            self._grad = None
            return
        self._grad = [_zeros_like(arr, self._grad_stype) for arr in self._data]
        autograd.mark_variables(self._data, self._grad, self.grad_req)

    def _load_init(self, data: NDArray, ctx, cast_dtype: bool = False,
                   dtype_source: str = 'current') -> None:
        """(Re)initialize from loaded ``data`` on ``ctx``, checking shape and dtype."""
        self._apply_load(*self._check_load(data, ctx, cast_dtype, dtype_source))

    def _check_load(self, data: NDArray, ctx, cast_dtype: bool = False,
                    dtype_source: str = 'current') -> tuple:
        """``(data, contexts, dtype to adopt or None)`` for :meth:`_apply_load`, ``data``
        checked against shape (0 matches any size), dtype and contexts (MXNet's errors);
        changes nothing, so a loader checks every parameter before loading any."""
        if cast_dtype:
            _require(dtype_source in ['current', 'saved'])
        if self.shape and (len(self.shape) != len(data.shape) or any(
                dim not in (0, got) for dim, got in zip(self.shape, data.shape))):
            raise ParameterLoadError(
                f"Failed loading Parameter '{self.name}' from saved params: shape "
                f"incompatible expected {self.shape} vs saved {data.shape}")
        dtype = None
        if self.dtype:
            data, dtype = self._load_dtype(data, cast_dtype, dtype_source)
        if isinstance(ctx, Context):
            ctx = [ctx]
        known = self.list_ctx() if self._data is not None else \
            (self._deferred_init[1] if self._deferred_init else None)
        if ctx is not None and known is not None and set(ctx) != set(known):
            raise ParameterLoadError(
                f"Failed to load Parameter '{self.name}' on {ctx} because it was "
                f"previous initialized on {known}.")
        return data, known or ctx or [cpu()], dtype

    def _apply_load(self, data: NDArray, ctx: list, dtype) -> None:
        """Load ``data`` checked by :meth:`_check_load`."""
        if data.stype != self._stype:
            data = data.tostype(self._stype)
        if dtype is not None:
            self.dtype = dtype
        if self.shape:
            self.shape = tuple(i if i != 0 else j for i, j in zip(self.shape, data.shape))
        if self._data is None:
            self._init_impl(data, ctx)
        else:
            self.set_data(data)
        self._deferred_init = ()

    def _load_dtype(self, data: NDArray, cast_dtype: bool, dtype_source: str) -> tuple:
        """``(data, dtype to adopt or None)``: ``data`` checked against or cast to the dtype."""
        same = dtype_name(self.dtype) == dtype_name(data._t.dtype)
        if cast_dtype and not same:
            if dtype_source == 'current':
                return data.astype(self.dtype, copy=False), None
            return data, data.dtype
        if not same:
            raise ParameterLoadError(
                f"Failed loading Parameter '{self.name}' from saved params: dtype incompatible "
                f"expected {self.dtype} vs saved {_dtype_str(data)}. "
                "Set cast_dtype=True to cast the dtype of saved params.")
        return data, None

    # ----------------------------------------------------------------- changing values
    def _reduce(self) -> NDArray:
        """The mean of the copies on all contexts, on ``cpu()``; a sparse parameter's every
        row, pulled from its Trainer's kvstore."""
        if self._stype != 'default':
            data = _nd_zeros(self.shape, ctx=cpu(), dtype=self.dtype, stype='row_sparse')
            rows = NDArray(torch.arange(self.shape[0], dtype=torch.int64))
            self._trainer._row_sparse_pull(self, data, rows, full_idx=True)
            return data
        block = self.list_data()
        if len(block) == 1:
            return self.data().copyto(cpu())
        total = block[0].copyto(cpu())
        for arr in block[1:]:
            total = total + arr.copyto(cpu())
        return total / len(block)

    def reset_ctx(self, ctx) -> None:
        """Move the parameter to ``ctx`` (a Context or list), keeping the mean value."""
        ctx = _as_ctx_list(ctx)
        if self._data:
            data = self._reduce()
            with autograd.pause():
                self._init_impl(data, ctx)
        elif self._deferred_init:
            init, _, default_init, data = self._deferred_init
            self._deferred_init = (init, ctx, default_init, data)
        else:
            raise ValueError(f"Cannot reset context for Parameter '{self.name}' because it "
                             "has not been initialized.")

    def set_data(self, data) -> None:
        """Set the value on all contexts (kept while initialization is deferred); a shape
        that does not match (0 matches any size) changes nothing."""
        if self._data is None and not self._deferred_init:
            raise AssertionError(f"Parameter '{self.name}' has not been initialized")
        self.shape = data.shape
        if self._data is None:
            self._deferred_init = self._deferred_init[:3] + (data,)
            return
        trainer = self._trainer
        # with update_on_kvstore, the kvstore's copy must be re-synced from the new value
        if trainer is not None and getattr(trainer, '_kv_initialized', False) \
                and getattr(trainer, '_update_on_kvstore', False) \
                and self not in trainer._params_to_init:
            trainer._reset_kvstore()
        for arr in self._check_and_get(self._data, list):
            arr[:] = data

    def zero_grad(self) -> None:
        """Set the gradient arrays to 0 (nothing without gradients)."""
        if self._grad is None:
            return
        for g in self._grad:
            if g._is_sparse:
                g._assign(_zeros_like(g, g.stype)._value)
            else:
                g._t.zero_()

    def cast(self, dtype) -> None:
        """Cast data and gradients to ``dtype`` (new arrays)."""
        self._dtype = dtype
        if self._data is None:
            return
        with autograd.pause():
            self._data = [_fresh(arr.astype(dtype), arr) for arr in self._data]
            if self._grad is None:
                return
            self._grad = [_fresh(g.astype(dtype), g) for g in self._grad]
            autograd.mark_variables(self._data, self._grad, self.grad_req)

    def var(self):
        """A cached ``mx.sym.Variable`` carrying shape, dtype, lr_mult, wd_mult and init."""
        if self._var is None:
            self._var = _sym_var(self.name, shape=self.shape, dtype=self.dtype,
                                 lr_mult=self.lr_mult, wd_mult=self.wd_mult, init=self.init,
                                 stype=self._stype)
        return self._var


class Constant(Parameter):
    """A parameter with a fixed value, ignored by autograd and Trainer (``set_data`` works).

    Its ``init`` is the name of an initializer registered for this constant
    (``'Constant_<name>_<id>'``) that copies ``value``, as MXNet.

    >>> import symgraph as mx
    >>> c = mx.gluon.Constant('const', [[1, 2], [3, 4]])
    >>> c, c.grad_req
    (Constant const (shape=(2, 2), dtype=<class 'numpy.float32'>), 'null')
    >>> c.initialize()
    >>> c.data().asnumpy()
    array([[1., 2.],
           [3., 4.]], dtype=float32)
    """

    def __init__(self, name: str, value):
        if not isinstance(value, NDArray):
            value = _nd_array(value)
        self.value = value

        class Init(initializer.Initializer):
            def _init_weight(self, _, arr):
                value.copyto(arr)

        init_name = f'Constant_{name}_{id(self)}'
        initializer.alias(init_name)(Init)
        super().__init__(name, grad_req='null', shape=value.shape, dtype=value.dtype,
                         init=init_name)

    def __repr__(self) -> str:
        return f'Constant {self.name} (shape={self.shape}, dtype={self.dtype})'

    @property
    def grad_req(self) -> str:
        return 'null'

    @grad_req.setter
    def grad_req(self, req: str) -> None:
        if req != 'null':
            warnings.warn(f'Constant parameter "{self.name}" does not support grad_req other '
                          f'than "null", and new value "{req}" is ignored.', stacklevel=2)


def _merge_shape(wanted, stored):
    """``wanted`` merged with ``stored`` (0 = unknown), or None when a dim conflicts."""
    merged = []
    for dim1, dim2 in zip(wanted, stored):
        if dim1 != dim2 and dim1 > 0 and dim2 > 0:
            return None
        merged.append(dim2 if dim1 in (0, -1) else dim1)
    return tuple(merged)


def _match_attr(param: Parameter, name: str, key: str, value) -> None:
    """Check (or merge, or set) one attribute ``ParameterDict.get`` was given."""
    existing = getattr(param, key, None)
    if existing is None:
        setattr(param, key, value)
        return
    if key == 'shape' and value is not None:
        value = (value,) if isinstance(value, int) else value
        if len(value) == len(existing):
            merged = _merge_shape(value, existing)
            if merged is not None:
                param._shape = merged
                return
    elif key == 'dtype' and np.dtype(value) == np.dtype(existing):
        return
    if value is not None and value != existing:
        raise AssertionError(
            f"Cannot retrieve Parameter '{name}' because desired attribute does not match with "
            f"stored for attribute '{key}': desired '{value}' vs stored '{existing}'.")


class ParameterDict:
    """An ordered dictionary of Parameters whose ``get`` creates names from ``prefix``.

    Parameters
    ----------
    prefix : str, default ''
        Prepended to the names of Parameters created by :meth:`get`.
    shared : ParameterDict or None
        Looked up by :meth:`get` before creating a Parameter (parameter sharing).

    Examples
    --------
    >>> import symgraph as mx
    >>> params = mx.gluon.ParameterDict('net_')
    >>> w = params.get('weight', shape=(0, 3), allow_deferred_init=True)
    >>> params.get('weight', shape=(2, 0)) is w, w.shape
    (True, (2, 3))
    >>> params
    net_ (
      Parameter net_weight (shape=(2, 3), dtype=<class 'numpy.float32'>)
    )
    >>> params.get('weight', shape=(4, 3))
    Traceback (most recent call last):
    ...
    AssertionError: Cannot retrieve Parameter 'net_weight' because desired attribute does \
not match with stored for attribute 'shape': desired '(4, 3)' vs stored '(2, 3)'.
    """

    def __init__(self, prefix: str = '', shared: ParameterDict | None = None):
        self._prefix = prefix
        self._params: OrderedDict[str, Parameter] = OrderedDict()
        self._shared = shared

    def __repr__(self) -> str:
        name = self._prefix + ' ' if self._prefix else ''
        content = '\n'.join([_indent(f'  {v}', 2) for v in self.values()])
        return f'{name}(\n{content}\n)'

    def __getitem__(self, key: str) -> Parameter:
        return self._params[key]

    def __iter__(self):
        return iter(self._params)

    def __len__(self) -> int:
        return len(self._params)

    def __contains__(self, key) -> bool:
        return key in self._params

    def items(self):
        return self._params.items()

    def keys(self):
        return self._params.keys()

    def values(self):
        return self._params.values()

    @property
    def prefix(self) -> str:
        """Prepended to the names of Parameters created by :meth:`get`."""
        return self._prefix

    def _get_impl(self, name: str) -> Parameter | None:
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._shared._params[name]
        return None

    def get(self, name: str, **kwargs) -> Parameter:
        """The Parameter ``prefix + name``: existing, shared, or created with ``kwargs``.

        An existing one must agree with ``kwargs`` (unknown shape dims are merged;
        attributes it does not have or has as None are set).
        """
        name = self.prefix + name
        param = self._get_impl(name)
        if param is None:
            param = Parameter(name, **kwargs)
            self._params[name] = param
            return param
        for key, value in kwargs.items():
            _match_attr(param, name, key, value)
        return param

    def get_constant(self, name: str, value=None) -> Constant:
        """The Constant ``prefix + name``: existing (whose value must equal ``value``),
        shared, or created from ``value``."""
        name = self.prefix + name
        param = self._get_impl(name)
        if param is None:
            if value is None:
                raise KeyError(f"No constant named '{name}'. Please specify value if you want "
                               "to create a new constant.")
            param = Constant(name, value)
            self._params[name] = param
        elif value is not None:
            if not isinstance(param, Constant):
                raise AssertionError(
                    f"Parameter '{name}' already exists but it is not a constant.")
            value = value.asnumpy() if isinstance(value, NDArray) else np.asarray(value)
            if param.shape != value.shape or not (param.value.asnumpy() == value).all():
                raise AssertionError(
                    f"Constant '{name}' already exists but it's value doesn't match new value")
        return param

    def update(self, other: ParameterDict) -> None:
        """Copy all Parameters of ``other`` into this dict (same names must be the same)."""
        for k, v in other.items():
            if k in self._params:
                if self._params[k] is not v:
                    raise AssertionError(
                        "Cannot update self with other because they "
                        f"have different Parameters with the same name '{k}'")
        for k, v in other.items():
            self._params[k] = v

    def initialize(self, init=_DEFAULT_INIT, ctx=None, verbose: bool = False,
                   force_reinit: bool = False) -> None:
        """Initialize every Parameter; ``init`` is the default where ``param.init`` is None."""
        if verbose:
            init.set_verbosity(verbose=verbose)
        for v in self.values():
            v.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self) -> None:
        """Set every gradient array to 0."""
        for p in self.values():
            if p.grad_req != 'null' and p._grad is not None:
                p.zero_grad()

    def reset_ctx(self, ctx) -> None:
        """Move every Parameter to ``ctx`` (a Context or list)."""
        for p in self.values():
            p.reset_ctx(ctx)

    def list_ctx(self) -> list[Context]:
        """All contexts the Parameters are initialized on (unordered, as MXNet)."""
        s: set = set()
        for p in self.values():
            s.update(p.list_ctx())
        return list(s)

    def setattr(self, name: str, value) -> None:
        """Set attribute ``name`` to ``value`` on every Parameter (e.g. ``grad_req``)."""
        for p in self.values():
            setattr(p, name, value)

    def save(self, filename: str, strip_prefix: str = '') -> None:
        """Save the (context-averaged) values to an MXNet ``.params`` file."""
        arg_dict = {}
        for param in self.values():
            weight = param._reduce()
            if not param.name.startswith(strip_prefix):
                raise ValueError(
                    f"Prefix '{strip_prefix}' is to be striped before saving, but Parameter's "
                    f"name '{param.name}' does not start with '{strip_prefix}'. this may be due "
                    "to your Block shares parameters from other Blocks or you forgot to use "
                    "'with name_scope()' when creating child blocks. For more info on naming, "
                    f"please see {_NAMING_URL}")
            arg_dict[param.name[len(strip_prefix):]] = weight
        _nd_save(filename, arg_dict)

    def load(self, filename: str, ctx=None, allow_missing: bool = False,
             ignore_extra: bool = False, restore_prefix: str = '', cast_dtype: bool = False,
             dtype_source: str = 'current') -> None:
        """Load values from a ``.params`` file (names get ``restore_prefix`` prepended)."""
        if restore_prefix:
            for name in self.keys():
                if not name.startswith(restore_prefix):
                    raise ParameterLoadError(
                        f"restore_prefix is '{restore_prefix}' but Parameters name '{name}' does "
                        f"not start with '{restore_prefix}'. For more info on naming, please see "
                        f"{_NAMING_URL}")
        self.load_dict(_nd_load(filename), ctx, allow_missing, ignore_extra, restore_prefix,
                       filename, cast_dtype, dtype_source)

    def load_dict(self, param_dict, ctx=None, allow_missing: bool = False,
                  ignore_extra: bool = False, restore_prefix: str = '', filename=None,
                  cast_dtype: bool = False, dtype_source: str = 'current') -> None:
        """Load values from a dict of arrays (``arg:``/``aux:`` name prefixes dropped)."""
        lprefix = len(restore_prefix)
        loaded = [(k[4:] if k.startswith(('arg:', 'aux:')) else k, v)
                  for k, v in param_dict.items()] if isinstance(param_dict, dict) else param_dict
        arg_dict = {restore_prefix + k: v for k, v in loaded}
        source = f"file: {filename}" if filename else "param_dict"
        if not allow_missing:
            for name in self.keys():
                if name not in arg_dict:
                    raise ParameterLoadError(
                        f"Parameter '{name[lprefix:]}' is missing in {source}, which contains "
                        f"parameters: {_brief_print_list(arg_dict.keys())}. Please make sure "
                        "source and target networks have the same prefix.For more info on "
                        f"naming, please see {_NAMING_URL}")
        staged = []  # all or nothing: every entry is checked before any is loaded
        for name in arg_dict:
            if name not in self._params:
                if not ignore_extra:
                    raise ParameterLoadError(
                        f"Parameter '{name[lprefix:]}' loaded from {source} is not present in "
                        f"ParameterDict, choices are: {_brief_print_list(self._params.keys())}. "
                        "Set ignore_extra to True to ignore. Please make sure source and target "
                        "networks have the same prefix.For more info on naming, please see "
                        f"{_NAMING_URL}")
                continue
            staged.append((self[name], self[name]._check_load(arg_dict[name], ctx, cast_dtype,
                                                              dtype_source)))
        for param, checked in staged:
            param._apply_load(*checked)
