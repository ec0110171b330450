"""``Module``: a symbol bound on one or more contexts, with parameters and an optimizer.

Internal handles that real scripts reach into keep MXNet's names: ``_exec_group`` (the
shared :class:`~symgraph.module.executor_group.DataParallelExecutorGroup`, ``.execs``),
``_arg_params``, ``_aux_params``, ``_optimizer``, ``_kvstore``, ``_updater``.

>>> import symgraph as mx
>>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc')
>>> mod = Module(net, label_names=None, context=[mx.cpu(0), mx.cpu(1)])
>>> mod.bind(data_shapes=[('data', (4, 3))]); mod.init_params()
>>> len(mod._exec_group.execs), sorted(mod.get_params()[0])
(2, ['fc_bias', 'fc_weight'])
"""
from __future__ import annotations

import logging
import warnings

import numpy as np
import torch

from .. import checkpoint
from .. import optimizer as opt
from ..base import BindError, MXNetError, ShapeError
from ..context import Context, cpu
from ..distributed import one_writer
from ..executor import checked_source
from ..executor_storage import store
from ..fileio import atomic_write
from ..initializer import InitDesc, Uniform
from ..io import DataDesc
from ..ndarray import NDArray, arange, zeros
from ..ndarray.sparse_array import value_of
from ..training.model_io import MissingParamError, _checkpoint_dict, load_checkpoint
from ..training.model_kvstore import (
    _create_kvstore,
    _initialize_kvstore,
    _update_params,
    _update_params_on_kvstore,
)
from .base_module import BaseModule, _check_input_names
from .executor_group import DataParallelExecutorGroup


def _names(desc_list) -> list[str]:
    return [d.name if hasattr(d, "name") else d[0] for d in desc_list or []]


def _shapes(desc_list) -> tuple:
    """The shapes of DataDescs or ``(name, shape)`` pairs, as a tuple of tuples."""
    return tuple(tuple(d.shape if hasattr(d, "shape") else d[1]) for d in desc_list or [])


def _check_names_match(names, descs, kind: str, throw: bool) -> None:
    given = _names(descs)
    if sorted(names) != sorted(given):
        msg = (f"Data provided by {kind}_shapes don't match names specified by {kind}_names: "
               f"{kind}_names {list(names)} ({len(names)}), {kind}_shapes {given} "
               f"({len(given)})")
        if throw:
            raise BindError(msg)
        warnings.warn(msg, stacklevel=3)


def _parse_data_desc(data_names, label_names, data_shapes, label_shapes):
    """MXNet's rule: ``(name, shape)`` pairs become DataDescs; data names must match the
    module's (BindError, a ValueError as MXNet's); label names should (a warning), and must
    when both the module and the shapes have labels (else a batch's labels would be loaded
    into the wrong inputs by position)."""
    data_shapes = [d if isinstance(d, DataDesc) else DataDesc(*d) for d in data_shapes]
    _check_names_match(data_names, data_shapes, "data", True)
    if label_shapes is not None:
        label_shapes = [d if isinstance(d, DataDesc) else DataDesc(*d) for d in label_shapes]
    _check_names_match(label_names, label_shapes or [], "label",
                       bool(label_names) and bool(label_shapes))
    return data_shapes, label_shapes


def _source(params) -> str:
    """`` (in FILE)`` for values read by ``model.load_params``, else nothing."""
    source = getattr(params, "source", None)
    return f" (in {source})" if source else ""


def _desc_like(desc, shape):
    """A DataDesc named (and typed, laid out) like ``desc`` with another shape."""
    name = desc.name if hasattr(desc, "name") else desc[0]
    return DataDesc(name, tuple(shape), getattr(desc, "dtype", np.float32),
                    getattr(desc, "layout", "NCHW"))


class Module(BaseModule):
    """A trainable symbol (MXNet's ``mx.mod.Module``).

    Parameters
    ----------
    symbol : Symbol
    data_names, label_names : sequence of str
    logger : logging.Logger
    context : Context or list of Context
    work_load_list : list of float, optional
    fixed_param_names : list of str, optional
        Parameters that are never updated (bound with grad_req 'null').
    state_names : list of str, optional
    group2ctxs, compression_params : optional
        ``compression_params`` goes to the KVStore (``{'type': '2bit', 'threshold': t}``).
    """

    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",),
                 logger=logging, context=None, work_load_list=None, fixed_param_names=None,
                 state_names=None, group2ctxs=None, compression_params=None):
        super().__init__(logger=logger)
        context = context if context is not None else cpu()
        self._context = [context] if isinstance(context, Context) else list(context)
        self._work_load_list = work_load_list or [1] * len(self._context)
        self._symbol = symbol
        self._data_names = list(data_names or [])
        self._label_names = list(label_names or [])
        self._state_names = list(state_names or [])
        self._fixed_param_names = list(fixed_param_names or [])
        ig = symbol._graph()  # one walk for both name lists (bind speed)
        arg_names = [ig.nodes[i].name for i in ig.argument_ids]
        for names, kind, throw in ((self._data_names, "data", True),
                                   (self._label_names, "label", False),
                                   (self._state_names, "state", True),
                                   (self._fixed_param_names, "fixed_param", True)):
            _check_input_names(symbol, names, kind, throw, args=arg_names)
        inputs = set(self._data_names + self._label_names + self._state_names)
        self._param_names = [n for n in arg_names if n not in inputs]
        self._aux_names = [ig.nodes[i].name for i in ig.aux_state_ids]
        self._output_names = symbol.list_outputs()
        self._compression_params = compression_params
        self._group2ctxs = group2ctxs
        self._arg_params = self._aux_params = None
        self._params_dirty = False
        self._synced_token = None  # see _sync_params_from_devices
        self._optimizer = self._kvstore = self._updater = None
        self._update_on_kvstore = None
        self._preload_opt_states = None
        self._exec_group = None
        self._data_shapes = self._label_shapes = None
        self._bound_data_shapes = None

    # ------------------------------------------------------------ checkpoints
    @staticmethod
    def load(prefix: str, epoch: int, load_optimizer_states: bool = False, **kwargs) -> Module:
        """A Module from a checkpoint (parameters are set at bind/init_params)."""
        sym, args, auxs = load_checkpoint(prefix, epoch)
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params, mod._aux_params = args, auxs
        mod.params_initialized = True
        if load_optimizer_states:
            checkpoint.load_states(prefix, epoch)  # never pairs files of different saves
            mod._preload_opt_states = checkpoint.states_path(prefix, epoch)
        return mod

    @one_writer
    def save_checkpoint(self, prefix: str, epoch: int, save_optimizer_states: bool = False,
                        remove_amp_cast: bool = True) -> None:
        """Save symbol, parameters (and optimizer states) in MXNet's file layout as one
        consistent save (see :mod:`symgraph.checkpoint`); in a distributed job only rank 0
        writes."""
        arg_params, aux_params = self.get_params()
        states = self._optimizer_states() if save_optimizer_states else None
        checkpoint.save(prefix, epoch, self._symbol, _checkpoint_dict(arg_params, aux_params),
                        states, remove_amp_cast)
        logging.info('Saved checkpoint to "%s"', checkpoint.params_path(prefix, epoch))

    # ------------------------------------------------------------ properties
    @property
    def data_names(self) -> list[str]:
        return self._data_names

    @property
    def label_names(self) -> list[str]:
        return self._label_names

    @property
    def output_names(self) -> list[str]:
        return self._output_names

    @property
    def data_shapes(self):
        assert self.binded
        return self._data_shapes

    @property
    def label_shapes(self):
        assert self.binded
        return self._label_shapes

    @property
    def output_shapes(self):
        assert self.binded
        return self._exec_group.get_output_shapes()

    # ------------------------------------------------------------ parameters
    def get_params(self):
        """``(arg_params, aux_params)``, averaged over the contexts."""
        assert self.binded and self.params_initialized
        if self._params_dirty:
            self._sync_params_from_devices()
        return self._arg_params, self._aux_params

    def init_params(self, initializer=None, arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False) -> None:
        """Initialise parameters from given dicts, falling back to ``initializer``.

        All or nothing: every given value is checked first (exact shape, castable dtype; a
        name the module needs and the dicts lack raises :class:`MissingParamError` unless
        ``allow_missing``), then all are copied to the host and the device arrays.
        """
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "init_params call ignored.", stacklevel=2)
            return
        assert self.binded, "call bind before initializing the parameters"
        initializer = initializer if initializer is not None else Uniform(0.01)
        staged = self._stage_init(initializer, arg_params, aux_params, allow_missing)
        for arr, src in staged:
            store(arr, src)
        self.params_initialized = True
        self._params_dirty = False
        if not self._devices_hold_host_params():
            self._exec_group.set_params(self._arg_params, self._aux_params,
                                        allow_extra=allow_extra)

    def _check_init_params(self, arg_params, aux_params, allow_missing: bool) -> None:
        """Raise what :meth:`init_params` with these values would raise; change nothing."""
        for params, given in ((self._arg_params, arg_params), (self._aux_params, aux_params)):
            for name, arr in params.items():
                if given is not None and given.get(name) is not arr:
                    self._given_value(name, arr, given, allow_missing)

    def _stage_init(self, initializer, arg_params, aux_params, allow_missing) -> list[tuple]:
        """``(host array, new value)`` of every parameter to set, all checked first; values
        not given come from ``initializer``, written into copies while the current values
        must survive an error (force_init of initialised parameters)."""
        self._check_init_params(arg_params, aux_params, allow_missing)
        attrs, staged = None, []
        for params, given in ((self._arg_params, arg_params), (self._aux_params, aux_params)):
            for name, arr in sorted(params.items()):
                if given is not None and given.get(name) is arr:
                    continue  # given the array itself: nothing to copy
                src = None if given is None else self._given_value(name, arr, given, True)
                if src is None:
                    attrs = self._symbol.attr_dict() if attrs is None else attrs
                    target = arr.copy() if self.params_initialized else arr
                    initializer(InitDesc(name, attrs.get(name, None)), target)
                    if target is arr:
                        continue
                    src = value_of(target)
                staged.append((arr, src))
        return staged

    @staticmethod
    def _given_value(name, arr, given, allow_missing: bool):
        """``given[name]`` checked against ``arr`` (None when missing and allowed)."""
        if name not in given:
            if not allow_missing:
                raise MissingParamError(f"{name} is not presented{_source(given)}")
            return None
        value = given[name]
        if arr._is_sparse or getattr(value, "_is_sparse", False):  # kept sparse, not densified
            if tuple(value.shape) != tuple(arr.shape):
                raise ShapeError(f"parameter {name}{_source(given)}: shape {tuple(value.shape)} "
                                 f"does not match the bound shape {tuple(arr.shape)}")
            return value_of(value) if isinstance(value, NDArray) else \
                torch.as_tensor(np.asarray(value, dtype=arr.dtype))
        return checked_source(value, arr._t, f"{name}{_source(given)}", "parameter")

    def _assign_params(self, arg_params, aux_params, force_init: bool, allow_extra: bool):
        """Copy the values into every context."""
        self._exec_group.set_params(arg_params, aux_params, allow_extra=allow_extra)

    def _sync_params_from_devices(self) -> None:
        """Device values into the host arrays; row_sparse parameters updated on the kvstore
        are pulled from it whole (the devices hold only the rows last pulled)."""
        self._exec_group.get_params(self._arg_params, self._aux_params)
        if self._kvstore and self._update_on_kvstore:
            for name, value in sorted(self._arg_params.items()):
                if value.stype == "row_sparse":
                    rows = arange(0, value.shape[0], dtype="int64")
                    self._kvstore.row_sparse_pull(name, value, row_ids=rows)
        self._params_dirty = False
        # fit's get_params + set_params at each epoch end copies the values straight back:
        # remember what must stay untouched for that copy to be a no-op
        self._synced_token = self._exec_group.params_token(self._arg_params, self._aux_params)

    def _devices_hold_host_params(self) -> bool:
        """True when nothing was written to the host or device arrays since a one-context
        sync, so copying the host arrays to the devices would change no bit."""
        token = self._synced_token
        if token is None:
            return False
        now = self._exec_group.params_token(self._arg_params, self._aux_params)
        return now is not None and now[0] == token[0]

    # ------------------------------------------------------------ binding
    def _reset_bind(self) -> None:
        self.binded = False
        self._exec_group = None
        self._synced_token = None
        self._data_shapes = self._label_shapes = None
        self._bound_data_shapes = None

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write") -> None:
        """Bind executors on the contexts for these input shapes."""
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if not for_training and inputs_need_grad:
            raise ValueError("inputs_need_grad needs for_training=True")
        descs = _parse_data_desc(self._data_names, self._label_names, data_shapes,
                                 label_shapes)
        if shared_module is None and self.params_initialized:
            self._check_params_complete()
        try:
            self._bind_group(descs, for_training, inputs_need_grad, shared_module, grad_req)
        except BaseException:
            self._reset_bind()  # all or nothing: a failed bind leaves the module unbound
            raise

    def _check_params_complete(self) -> None:
        """Values set before bind (``Module.load``) must cover every parameter and aux
        state: a missing one would be bound as zeros and left out of checkpoints."""
        missing = [n for n in self._param_names if n not in self._arg_params] + \
            [n for n in self._aux_names if n not in self._aux_params]
        if missing:
            where = _source(self._arg_params) or " (in the parameters set before bind)"
            raise MissingParamError(
                f"cannot bind: parameters {missing} of the symbol are not presented{where}. "
                "To initialize them, load the values with mx.model.load_checkpoint and call "
                "init_params(arg_params=..., aux_params=..., allow_missing=True) after bind.")

    def _bind_group(self, descs, for_training, inputs_need_grad, shared_module,
                    grad_req) -> None:
        self.for_training, self.inputs_need_grad = for_training, inputs_need_grad
        self._grad_req = grad_req  # MXNet's handle (BucketingModule's buckets read it)
        self._data_shapes, self._label_shapes = descs
        self._bound_data_shapes = _shapes(self._data_shapes)
        shared_group = shared_module._exec_group if shared_module is not None else None
        self._exec_group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, self._data_shapes,
            self._label_shapes or [], self._param_names, for_training, inputs_need_grad,
            shared_group, logger=self.logger, fixed_param_names=self._fixed_param_names,
            grad_req=grad_req, state_names=self._state_names, group2ctxs=self._group2ctxs)
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params, self._aux_params = shared_module._arg_params, \
                shared_module._aux_params
        elif self.params_initialized:
            try:
                self._exec_group.set_params(self._arg_params, self._aux_params)
            except MXNetError as err:
                where = _source(self._arg_params)
                raise type(err)(f"{err}{where}") if where else err from None
        else:
            self._arg_params = {n: zeros(b[0].shape, dtype=b[0].dtype, stype=b[0].stype)
                                for n, b in zip(self._param_names,
                                                self._exec_group.param_arrays)}
            self._aux_params = {n: zeros(b[0].shape, dtype=b[0].dtype, stype=b[0].stype)
                                for n, b in zip(self._aux_names, self._exec_group.aux_arrays)}
        if shared_module is not None and shared_module.optimizer_initialized:
            self.borrow_optimizer(shared_module)
        self.binded = True

    def reshape(self, data_shapes, label_shapes=None) -> None:
        """Rebind for new input shapes (parameters are shared)."""
        assert self.binded
        self._data_shapes, self._label_shapes = _parse_data_desc(
            self._data_names, self._label_names, data_shapes, label_shapes)
        self._bound_data_shapes = _shapes(self._data_shapes)
        self._exec_group.reshape(self._data_shapes, self._label_shapes or [])

    # ------------------------------------------------------------ optimizer
    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False) -> None:
        """Create the optimizer (rescale_grad = 1/batch size) and the KVStore or updater."""
        assert self.binded and self.params_initialized
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        if self._params_dirty:
            self._sync_params_from_devices()
        kvstore, update_on_kvstore = _create_kvstore(kvstore, len(self._context),
                                                     self._arg_params)
        batch_size = self._exec_group.batch_size
        if kvstore and "dist" in kvstore.type and "_sync" in kvstore.type:
            batch_size *= kvstore.num_workers
        names = self._exec_group.param_names
        n_ctx = len(self._context)
        idx2name = dict(enumerate(names)) if update_on_kvstore else \
            {i * n_ctx + k: n for k in range(n_ctx) for i, n in enumerate(names)}
        if isinstance(optimizer, str):
            params = dict(optimizer_params)
            params.setdefault("rescale_grad", 1.0 / batch_size)
            optimizer = opt.create(optimizer, sym=self._symbol, param_idx2name=idx2name,
                                   **params)
        elif not getattr(optimizer, "idx2name", None):
            optimizer.idx2name = dict(idx2name)
        self._optimizer, self._kvstore = optimizer, kvstore
        self._update_on_kvstore, self._updater = update_on_kvstore, None
        if kvstore:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
            _initialize_kvstore(kvstore, self._exec_group.param_arrays, self._arg_params,
                                self._param_names, update_on_kvstore)
        if not update_on_kvstore:
            self._updater = opt.get_updater(optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            try:
                self.load_optimizer_states(self._preload_opt_states)
            except BaseException:
                self.optimizer_initialized = False  # all or nothing: a retry starts over
                raise
            self._preload_opt_states = None

    def borrow_optimizer(self, shared_module) -> None:
        """Use ``shared_module``'s optimizer, kvstore and updater."""
        assert shared_module.optimizer_initialized
        self._optimizer, self._kvstore = shared_module._optimizer, shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self.optimizer_initialized = True

    @one_writer
    def save_optimizer_states(self, fname: str) -> None:
        """Write optimizer states (safe format, atomically; in a distributed job only rank 0
        writes)."""
        atomic_write(fname, self._optimizer_states())

    def _optimizer_states(self) -> bytes:
        """The updater's states blob (the kvstore's when it updates)."""
        assert self.optimizer_initialized
        if self._update_on_kvstore:
            return self._kvstore._need_updater("save").get_states()
        return self._updater.get_states()

    def load_optimizer_states(self, fname: str) -> None:
        """Load optimizer states written by :meth:`save_optimizer_states`, each checked
        against its weight first (``StatesShapeError`` naming the parameter and both
        shapes); on error the optimizer and its states are left as they were."""
        assert self.optimizer_initialized
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            return
        with open(fname, "rb") as f:
            blob = f.read()
        n = len(self._context)  # the updater's index of device copy k: index * n + k
        weights = {i * n + k: arrays[k]
                   for i, arrays in enumerate(self._exec_group.param_arrays) for k in range(n)}
        self._updater.set_states(blob, weights=weights, source=fname)

    # ------------------------------------------------------------ computation
    def forward(self, data_batch, is_train=None) -> None:
        """Forward a batch, rebinding first when its data arrays' shapes differ from the bound
        ones (as MXNet 1.9.1: the new shapes come from the batch's ``provide_data`` and
        ``provide_label`` if it has them, else from its arrays)."""
        assert self.binded and self.params_initialized
        if data_batch is not None:
            new_shapes = tuple(d.shape for d in data_batch.data)
            if new_shapes != self._bound_data_shapes:
                if len(new_shapes) != len(self._data_names):
                    raise BindError(f"data batch has {len(new_shapes)} data arrays for "
                                    f"{len(self._data_names)} data names {self._data_names}")
                self._reshape_to_batch(data_batch, new_shapes)
        self._exec_group.forward(data_batch, is_train)

    def _reshape_to_batch(self, data_batch, new_shapes) -> None:
        data_descs = getattr(data_batch, "provide_data", None)
        if not data_descs:
            data_descs = [_desc_like(d, shape) for d, shape in zip(self._data_shapes, new_shapes)]
        label_descs = getattr(data_batch, "provide_label", None)
        labels = getattr(data_batch, "label", None)
        if not label_descs and labels:
            label_descs = [_desc_like(d, lab.shape)
                           for d, lab in zip(self._label_shapes or [], labels)]
        self.reshape(data_descs, label_descs or None)

    def backward(self, out_grads=None) -> None:
        """Backward on every context."""
        assert self.binded and self.params_initialized
        self._exec_group.backward(out_grads=out_grads)

    def update(self) -> None:
        """Apply the optimizer to the gradients of the last backward."""
        assert self.binded and self.params_initialized and self.optimizer_initialized
        self._params_dirty = True
        self._exec_group.note_params_written()
        group = self._exec_group
        if self._update_on_kvstore:
            _update_params_on_kvstore(group.param_arrays, group.grad_arrays, self._kvstore,
                                      group.param_names)
        else:
            _update_params(group.param_arrays, group.grad_arrays, updater=self._updater,
                           num_device=len(self._context), kvstore=self._kvstore,
                           param_names=group.param_names)

    def get_outputs(self, merge_multi_context=True):
        """Outputs of the last forward."""
        assert self.binded and self.params_initialized
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        """Gradients of the inputs (bind with inputs_need_grad=True)."""
        assert self.binded and self.params_initialized and self.inputs_need_grad
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def get_states(self, merge_multi_context=True):
        """The state arrays (``state_names``), per state a list over the contexts."""
        assert self.binded and self.params_initialized
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None) -> None:
        """Set the state arrays from ``states`` (per state, per context) or a scalar."""
        assert self.binded and self.params_initialized
        self._exec_group.set_states(states, value)

    def update_metric(self, eval_metric, labels, pre_sliced=False) -> None:
        """Update ``eval_metric`` with the last outputs."""
        self._exec_group.update_metric(eval_metric, labels, pre_sliced)

    def prepare(self, data_batch, sparse_row_id_fn=None) -> None:
        """Pull the rows of row_sparse parameters the next batch needs from the kvstore.

        With updates on the kvstore, a row_sparse parameter's device copies are not
        refreshed by :meth:`update`; ``sparse_row_id_fn(data_batch)`` gives, per parameter
        name, the row ids to pull before the batch runs.

        >>> import symgraph as mx
        >>> mod = mx.mod.Module(mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=2),
        ...                     label_names=None)
        >>> mod.bind(data_shapes=[('data', (1, 3))])
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as w:
        ...     warnings.simplefilter('always')
        ...     mod.prepare(None, sparse_row_id_fn=lambda batch: {})
        >>> str(w[0].message)
        'Parameters are not updated in the KVStore. No need to call sparse_row_id_fn.'
        """
        assert self.binded
        if sparse_row_id_fn is None:
            return
        if not self._kvstore or not self._update_on_kvstore:
            warnings.warn(UserWarning("Parameters are not updated in the KVStore. "
                                      "No need to call sparse_row_id_fn."), stacklevel=2)
            return
        row_ids = sparse_row_id_fn(data_batch)
        if not isinstance(row_ids, dict):
            raise AssertionError("Expected dict output from sparse_row_id_fn")
        group = self._exec_group
        for name, row_id in row_ids.items():
            idx = group.param_names.index(name)
            arrays = [exe.arg_dict[name] for exe in group.execs]
            if arrays[0].stype != "row_sparse":
                warnings.warn(UserWarning(f"{name}.stype is not 'row_sparse'. No need to "
                                          "perform row_sparse_pull."), stacklevel=2)
            else:
                self._kvstore.row_sparse_pull(name, arrays, row_ids=row_id, priority=-idx)

    def install_monitor(self, mon) -> None:
        """Install ``mon`` on every executor."""
        assert self.binded
        self._exec_group.install_monitor(mon)
