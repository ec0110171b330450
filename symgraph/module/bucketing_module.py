"""``BucketingModule``: one symbol per bucket key (sequence length...), parameters shared.

MXNet 1.x's ``mx.mod.BucketingModule``: ``sym_gen(bucket_key) -> (symbol, data_names,
label_names)``; the default bucket is bound by ``bind`` and every other bucket is bound on
first use as a :class:`Module` sharing the default bucket's parameters, gradients, aux
states and optimizer. Internal handles keep MXNet's names (``_buckets``, ``_curr_module``,
``_curr_bucket_key``, ``_default_bucket_key``, ``_sym_gen``).

Beyond MXNet:

- a :class:`BucketArena` shared by every bucket's executors: the intermediate memory of
  the module is the largest bucket's plan, not the sum over buckets (the bucket switched
  away from drops its intermediates; on CUDA all buckets' graph captures share one
  graph memory pool); ``memory_stats()`` reports it;
- at most ``max_buckets`` bound buckets are cached (least recently used evicted, never the
  default or the current one; ``config.max_buckets`` / ``SYMGRAPH_MAX_BUCKETS``).

>>> import symgraph as mx
>>> def sym_gen(length):
...     return mx.sym.Variable('data') * 2, ('data',), None
>>> mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=4)
>>> mod.bind([('data', (1, 4))], for_training=False)
>>> mod._default_bucket_key, list(mod._buckets)
(4, [4])
"""
from __future__ import annotations

import logging
from collections import OrderedDict

import numpy as np
import torch

from .. import config
from .. import ndarray as nd
from .. import symbol as sym
from ..context import cpu
from ..distributed import one_writer
from ..symbol.naming import NameManager
from ..training.model_io import load_params
from .base_module import BaseModule, _check_input_names
from .module import Module

_MODULE_KWARGS = ("logger", "context", "work_load_list", "fixed_param_names", "state_names",
                  "group2ctxs", "compression_params")


def _storage_bytes(tensors, seen: set) -> int:
    """Bytes of the distinct storages behind ``tensors`` not yet in ``seen``."""
    total = 0
    for t in tensors:
        if t is None:
            continue
        storage = t.untyped_storage()
        key = (t.device, storage.data_ptr())
        if key not in seen:
            seen.add(key)
            total += storage.nbytes()
    return total


class BucketArena:
    """The memory of the intermediate values of several executors of which only one runs
    at a time (the buckets of one :class:`BucketingModule`).

    Each executor's plan needs ``plan.memory.planned_bytes`` for its intermediates; the
    arena holds, per device, the largest of them (``planned_bytes``) instead of their sum
    (``unshared_bytes``): activating a bucket releases the intermediates the previously
    active one kept (:meth:`Executor.release_values`), and on CUDA every executor's graph
    captures draw on one ``torch.cuda.graph_pool_handle()`` pool, to which a released
    bucket's captured intermediates go back (its graphs stay: ``cuda_graph.StepCalls``).
    ``peak_bytes`` is the largest ``planned_bytes`` seen, including buckets evicted since.

    >>> import symgraph as mx
    >>> arena = BucketArena()
    >>> for n in (8, 2, 4):
    ...     net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=16, name='fc')
    ...     arena.register(n, [net.simple_bind(mx.cpu(), data=(n, 4))])
    >>> sizes = arena.bucket_bytes()
    >>> arena.planned_bytes == max(sizes.values()), arena.unshared_bytes == sum(sizes.values())
    (True, True)
    """

    def __init__(self):
        self._execs: dict = {}  # bucket key -> executors
        self._active = None
        self._pools: dict[str, object] = {}
        self.peak_bytes = 0

    def register(self, key, execs) -> None:
        """Account for (or replace) bucket ``key``'s executors."""
        execs = list(execs)
        for exe in execs:
            device = exe._ctx.torch_device
            if device.type == "cuda" and not exe._calls.calls:
                exe._calls.pool = self._graph_pool(device)
        self._execs[key] = execs
        self.peak_bytes = max(self.peak_bytes, self.planned_bytes)

    def _graph_pool(self, device):
        name = str(device)
        if name not in self._pools:
            with torch.cuda.device(device):
                self._pools[name] = torch.cuda.graph_pool_handle()
        return self._pools[name]

    def unregister(self, key) -> None:
        """Forget bucket ``key`` (its executors are no longer referenced from here)."""
        self._execs.pop(key, None)
        if self._active == key:
            self._active = None

    def activate(self, key) -> None:
        """Make ``key`` the running bucket: the previous one releases its intermediates."""
        if key == self._active:
            return
        for exe in self._execs.get(self._active, ()):
            exe.release_values()
        self._active = key

    def bucket_bytes(self) -> dict:
        """Planned intermediate bytes of each bucket (summed over its devices)."""
        return {k: sum(e._plan.memory.planned_bytes for e in ex) for k, ex in self._execs.items()}

    def _per_device(self) -> list[dict[str, int]]:
        rows = []
        for execs in self._execs.values():
            row: dict[str, int] = {}
            for exe in execs:
                name = str(exe._ctx)
                row[name] = row.get(name, 0) + exe._plan.memory.planned_bytes
            rows.append(row)
        return rows

    @property
    def planned_bytes(self) -> int:
        """The arena's size: per device, the largest bucket's planned bytes."""
        rows = self._per_device()
        devices = {d for row in rows for d in row}
        return sum(max(row.get(d, 0) for row in rows) for d in devices)

    @property
    def unshared_bytes(self) -> int:
        """What the buckets would take with one buffer set each (the sum of their plans)."""
        return sum(self.bucket_bytes().values())

    def held_bytes(self) -> int:
        """Bytes of intermediate values (outputs included) the executors reference now."""
        seen: set = set()
        total = 0
        for execs in self._execs.values():
            for exe in execs:
                params = set(exe._plan.var_slot.values())
                total += _storage_bytes([t for i, t in enumerate(exe._values)
                                         if i not in params], seen)
        return total


class BucketingModule(BaseModule):
    """A module over several symbols, one per bucket key (MXNet's ``mx.mod.BucketingModule``).

    Parameters
    ----------
    sym_gen : callable
        ``sym_gen(bucket_key) -> (symbol, data_names, label_names)``.
    default_bucket_key : hashable
        The bucket bound by :meth:`bind`; every other bucket shares its parameters.
    logger, context, work_load_list, fixed_param_names, state_names, group2ctxs, \
compression_params
        As for :class:`Module`.
    max_buckets : int, optional
        How many bound buckets to keep (least recently used evicted first; the default and
        the current bucket never are). ``None``: ``config.get().max_buckets``
        (``SYMGRAPH_MAX_BUCKETS``); 0: no bound.

    Examples
    --------
    >>> import symgraph as mx
    >>> def sym_gen(length):  # (batch, length, 4) -> (batch, length, 3): one weight for all
    ...     net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=3, flatten=False,
    ...                                 name='fc')
    ...     return net, ('data',), None
    >>> mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=5)
    >>> mod.bind([('data', (2, 5, 4))], for_training=False); mod.init_params()
    >>> mod.switch_bucket(3, [('data', (2, 3, 4))])
    >>> mod._curr_bucket_key, list(mod._buckets), mod.output_shapes
    (3, [5, 3], [('fc_output', (2, 3, 3))])
    >>> weight = lambda key: mod._buckets[key]._exec_group.execs[0].arg_dict['fc_weight']
    >>> weight(3) is weight(5)
    True
    >>> BucketingModule(sym_gen)
    Traceback (most recent call last):
    ...
    ValueError: BucketingModule needs a default_bucket_key
    """

    def __init__(self, sym_gen, default_bucket_key=None, logger=logging, context=None,
                 work_load_list=None, fixed_param_names=None, state_names=None,
                 group2ctxs=None, compression_params=None, max_buckets=None):
        super().__init__(logger=logger)
        if default_bucket_key is None:
            raise ValueError("BucketingModule needs a default_bucket_key")
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        state_names = list(state_names or [])
        fixed_param_names = list(fixed_param_names or [])
        _check_input_names(symbol, list(data_names or []), "data", True)
        _check_input_names(symbol, list(label_names or []), "label", False)
        _check_input_names(symbol, state_names, "state", True)
        _check_input_names(symbol, fixed_param_names, "fixed_param", True)
        self._compression_params = compression_params
        self._fixed_param_names = fixed_param_names
        self._state_names = state_names
        self._context = context if context is not None else cpu()
        self._work_load_list = work_load_list
        self._group2ctxs = group2ctxs
        self._max_buckets = config.get().max_buckets if max_buckets is None else max_buckets
        self._buckets: dict = {}  # in binding order, as MXNet's
        self._recent: OrderedDict = OrderedDict()  # the same keys, least recently used first
        self._seen_keys: list = []  # every bucket bound so far (checkpoints list them)
        self._arena = BucketArena()
        self._curr_module = None
        self._curr_bucket_key = None
        self._params_dirty = False
        self._monitor = None
        self._grad_req = None

    def _reset_bind(self) -> None:
        self.binded = False
        self._buckets = {}
        self._recent = OrderedDict()
        self._arena = BucketArena()
        self._curr_module = None
        self._curr_bucket_key = None

    def _call_sym_gen(self, *args, **kwargs):
        with NameManager():
            return self._sym_gen(*args, **kwargs)

    def _new_module(self, symbol, data_names, label_names) -> Module:
        return Module(symbol, data_names, label_names, logger=self.logger,
                      context=self._context, work_load_list=self._work_load_list,
                      fixed_param_names=self._fixed_param_names, state_names=self._state_names,
                      group2ctxs=self._group2ctxs, compression_params=self._compression_params)

    # ------------------------------------------------------------ properties
    @property
    def data_names(self) -> list[str]:
        if self.binded:
            return self._curr_module.data_names
        return self._call_sym_gen(self._default_bucket_key)[1]

    @property
    def output_names(self) -> list[str]:
        if self.binded:
            return self._curr_module.output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    @property
    def data_shapes(self):
        assert self.binded
        return self._curr_module.data_shapes

    @property
    def label_shapes(self):
        assert self.binded
        return self._curr_module.label_shapes

    @property
    def output_shapes(self):
        assert self.binded
        return self._curr_module.output_shapes

    @property
    def symbol(self):
        """The symbol of the current bucket."""
        assert self.binded
        return self._curr_module.symbol

    # ------------------------------------------------------------ parameters
    def get_params(self):
        """``(arg_params, aux_params)`` of the shared parameters."""
        assert self.params_initialized
        self._curr_module._params_dirty = self._params_dirty or self._curr_module._params_dirty
        params = self._curr_module.get_params()
        self._params_dirty = False
        return params

    def _assign_params(self, arg_params, aux_params, force_init: bool, allow_extra: bool):
        """Through the current bucket (the arrays are shared by every bucket)."""
        self._curr_module.set_params(arg_params, aux_params, allow_missing=True,
                                     force_init=force_init, allow_extra=allow_extra)

    def init_params(self, initializer=None, arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False) -> None:
        """Initialise the shared parameters (through the current bucket)."""
        if self.params_initialized and not force_init:
            return
        assert self.binded, "call bind before initializing the parameters"
        self._curr_module.init_params(initializer=initializer, arg_params=arg_params,
                                      aux_params=aux_params, allow_missing=allow_missing,
                                      force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = False
        self.params_initialized = True

    def _check_init_params(self, arg_params, aux_params, allow_missing: bool) -> None:
        """The current bucket's check (its parameters are every bucket's)."""
        self._curr_module._check_init_params(arg_params, aux_params, allow_missing)

    def get_states(self, merge_multi_context=True):
        """States of the current bucket (``state_names``)."""
        assert self.binded and self.params_initialized
        return self._curr_module.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None) -> None:
        """Set the current bucket's states."""
        assert self.binded and self.params_initialized
        self._curr_module.set_states(states, value)

    # ------------------------------------------------------------ binding
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write") -> None:
        """Bind the default bucket (the others are bound by :meth:`switch_bucket`)."""
        saved = None
        if self.params_initialized and self._curr_module is not None and \
                self._curr_module.binded:  # keep initialised values over a rebind
            saved = self.get_params()
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        assert shared_module is None, "shared_module for BucketingModule is not supported"
        self.for_training, self.inputs_need_grad = for_training, inputs_need_grad
        self._grad_req = grad_req
        key = self._default_bucket_key
        module = self._buckets.get(key)
        if module is None:
            module = self._new_module(*self._call_sym_gen(key))
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                    force_rebind=False, shared_module=None, grad_req=grad_req)
        self.binded = True  # only once the default bucket is bound
        self._curr_module, self._curr_bucket_key = module, key
        self._buckets[key] = module
        self._recent[key] = None
        self._note_bound(key, module)
        if saved is not None:
            self.set_params(*saved)

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None) -> None:
        """Make ``bucket_key`` current, binding it (sharing the default bucket's parameters)
        the first time it is seen or after it was evicted."""
        assert self.binded, "call bind before switching bucket"
        module = self._buckets.get(bucket_key)
        if module is None:
            module = self._new_module(*self._call_sym_gen(bucket_key))
            self._buckets[bucket_key] = module
        if not module.binded:
            module.bind(data_shapes, label_shapes, self._curr_module.for_training,
                        self._curr_module.inputs_need_grad, force_rebind=False,
                        shared_module=self._buckets[self._default_bucket_key],
                        grad_req=self._grad_req)
            if self._monitor is not None:
                module.install_monitor(self._monitor)
            self._note_bound(bucket_key, module)
        self._recent[bucket_key] = None
        self._recent.move_to_end(bucket_key)
        self._curr_module, self._curr_bucket_key = module, bucket_key
        self._evict()

    def _note_bound(self, key, module) -> None:
        self._arena.register(key, module._exec_group.execs)
        if key not in self._seen_keys:
            self._seen_keys.append(key)

    def _evict(self) -> None:
        """Drop least recently used buckets beyond ``max_buckets`` (never the default or the
        current one): no reference to their executors is left here."""
        if not self._max_buckets:
            return
        keep = (self._default_bucket_key, self._curr_bucket_key)
        for key in [k for k in self._recent if k not in keep]:
            if len(self._buckets) <= self._max_buckets:
                break
            del self._recent[key]
            module = self._buckets.pop(key)
            self._arena.unregister(key)
            if self._monitor is not None and module.binded:
                dropped = {id(e) for e in module._exec_group.execs}
                self._monitor.exes[:] = [e for e in self._monitor.exes if id(e) not in dropped]

    def memory_stats(self) -> dict:
        """Intermediate memory of the bound buckets, from their plans and their arrays.

        ``planned_bytes``: the shared arena (per device, the largest bucket's plan);
        ``peak_planned_bytes``: its largest size so far; ``largest_bucket_bytes`` and
        ``unshared_bytes``: the largest plan and the sum of the plans;
        ``held_bytes``: intermediates the executors hold now; ``buckets``: bound buckets.
        """
        arena = self._arena
        sizes = arena.bucket_bytes()
        return {"buckets": len(sizes), "planned_bytes": arena.planned_bytes,
                "peak_planned_bytes": arena.peak_bytes,
                "largest_bucket_bytes": max(sizes.values(), default=0),
                "unshared_bytes": arena.unshared_bytes, "held_bytes": arena.held_bytes()}

    # ------------------------------------------------------------ optimizer
    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False) -> None:
        """Create the optimizer on the current bucket; every bucket shares it."""
        assert self.binded and self.params_initialized
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        self._curr_module.init_optimizer(kvstore, optimizer, optimizer_params,
                                         force_init=force_init)
        for mod in self._buckets.values():
            if mod is not self._curr_module and mod.binded:
                mod.borrow_optimizer(self._curr_module)
        self.optimizer_initialized = True

    # ------------------------------------------------------------ computation
    def prepare(self, data_batch, sparse_row_id_fn=None) -> None:
        """Bind the batch's bucket if needed (the current bucket stays current)."""
        assert self.binded and self.params_initialized
        original = self._curr_bucket_key
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data,
                           data_batch.provide_label)
        self._curr_module.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self.switch_bucket(original, None, None)

    def forward(self, data_batch, is_train=None) -> None:
        """Switch to ``data_batch.bucket_key`` and run forward."""
        assert self.binded and self.params_initialized
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data,
                           data_batch.provide_label)
        module = self._curr_module
        self._arena.activate(self._curr_bucket_key)  # the bucket run before lets go
        execs = module._exec_group.execs
        module.forward(data_batch, is_train=is_train)
        if module._exec_group.execs is not execs:  # reshaped to the batch: new executors
            self._arena.register(self._curr_bucket_key, module._exec_group.execs)

    def backward(self, out_grads=None) -> None:
        """Backward through the current bucket."""
        assert self.binded and self.params_initialized
        self._curr_module.backward(out_grads=out_grads)

    def update(self) -> None:
        """Update the shared parameters with the current bucket's gradients."""
        assert self.binded and self.params_initialized and self.optimizer_initialized
        self._params_dirty = True
        self._curr_module.update()

    def get_outputs(self, merge_multi_context=True):
        """Outputs of the last forward."""
        assert self.binded and self.params_initialized
        return self._curr_module.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        """Input gradients of the last backward."""
        assert self.binded and self.params_initialized and self.inputs_need_grad
        return self._curr_module.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False) -> None:
        """Update ``eval_metric`` with the current bucket's outputs."""
        assert self.binded and self.params_initialized
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon) -> None:
        """Install ``mon`` on every bucket (present and future)."""
        assert self.binded
        self._monitor = mon
        for mod in self._buckets.values():
            if mod.binded:
                mod.install_monitor(mon)

    # ------------------------------------------------------------ checkpoints
    @one_writer
    def save_checkpoint(self, prefix: str, epoch: int, remove_amp_cast: bool = False) -> None:
        """Save the parameters, one ``prefix-<key>-symbol.json`` per bucket and the bucket
        keys (``prefix.buckets``, int32), as MXNet does (in a distributed job only rank 0
        writes)."""
        assert len(self._buckets) > 0, "Empty BucketingModule cannot be saved"
        self.save_params(f"{prefix}-{epoch:04d}.params")
        keys = list(self._seen_keys)
        for key in keys:
            symbol = self._call_sym_gen(key)[0]
            symbol.save(f"{prefix}-{key}-symbol.json", remove_amp_cast=remove_amp_cast)
        nd.save(f"{prefix}.buckets", nd.array(keys, dtype=np.int32))

    @staticmethod
    def load(prefix: str, epoch: int, sym_gen=None, default_bucket_key=None,
             **kwargs) -> BucketingModule:
        """A BucketingModule from :meth:`save_checkpoint` files (parameters are set at bind)."""
        assert sym_gen is not None, "sym_gen is required for loading BucketingModule"
        assert default_bucket_key is not None, \
            "default_bucket_key is required for loading BucketingModule"
        keys = [int(k) for k in nd.load(f"{prefix}.buckets")[0].asnumpy().astype("int32")]
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        module_kwargs = {k: v for k, v in kwargs.items() if k in _MODULE_KWARGS}
        for key in keys:
            _, data_names, label_names = sym_gen(key)
            symbol = sym.load(f"{prefix}-{key}-symbol.json")
            mod._buckets[key] = Module(symbol, data_names, label_names, **module_kwargs)
            mod._recent[key] = None
            if key == default_bucket_key:
                mod._curr_module = mod._buckets[key]
        if mod._curr_module is None:  # the default bucket was not saved: make it
            mod._curr_module = mod._new_module(*mod._call_sym_gen(default_bucket_key))
            mod._buckets[default_bucket_key] = mod._curr_module
            mod._recent[default_bucket_key] = None
        arg_params, aux_params = load_params(prefix, epoch)
        mod._curr_module._arg_params, mod._curr_module._aux_params = arg_params, aux_params
        mod._curr_module.params_initialized = True
        mod.params_initialized = True
        return mod

    @staticmethod
    def load_dict(sym_dict=None, sym_gen=None, default_bucket_key=None, arg_params=None,
                  aux_params=None, **kwargs) -> BucketingModule:
        """A BucketingModule from ``{bucket_key: symbol}`` and shared parameters (MXNet's
        ``load_dict``; every bucket takes the default bucket's data and label names)."""
        assert sym_dict is not None, "sym_dict needs to be provided for BucketingModule.load_dict"
        assert arg_params is not None, \
            "arg_params need to be provided for BucketingModule.load_dict"
        assert aux_params is not None, \
            "aux_params need to be provided for BucketingModule.load_dict"
        assert default_bucket_key is not None, \
            "default_bucket_key needs to be provided for BucketingModule.load_dict"
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        module_kwargs = {k: v for k, v in kwargs.items() if k in _MODULE_KWARGS}
        _, data_names, label_names = sym_gen(default_bucket_key)
        for key, symbol in sym_dict.items():
            mod._buckets[key] = Module(symbol, data_names, label_names, **module_kwargs)
            mod._recent[key] = None
            if key == default_bucket_key:
                mod._curr_module = mod._buckets[key]
        mod._curr_module._arg_params, mod._curr_module._aux_params = arg_params, aux_params
        mod._curr_module.params_initialized = True
        mod.params_initialized = True
        return mod
