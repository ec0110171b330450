"""The ``Optimizer`` base class: registry, learning-rate/weight-decay rules, update counts.

Every rule here is MXNet 1.9.1's ``mxnet.optimizer.Optimizer``: ``lr_mult``/``wd_mult`` come
from the symbol's ``__lr_mult__``/``__wd_mult__`` attributes and from ``set_lr_mult``/
``set_wd_mult``; when ``param_idx2name`` is given, every name not ending in ``_weight`` or
``_gamma`` (biases, betas, ...) gets ``wd_mult = 0``; ``num_update`` is the largest per-index
update count and drives the ``lr_scheduler``.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

from ..base import AttrError, names_from
from ..ndarray import NDArray
from ..ndarray.sparse_array import assign, value_of
from . import fields
from .sparse import has_sparse, run_densely


def _fp16(arr: NDArray) -> bool:
    return np.dtype(arr.dtype) == np.float16


class Optimizer:
    """Base class of optimizers (MXNet's ``mx.optimizer.Optimizer``).

    Parameters
    ----------
    rescale_grad : float
        Multiplies the gradient before the update (often ``1 / batch_size``).
    param_idx2name : dict of int to str
        Parameter names by index; names not ending in ``_weight``/``_gamma`` get no weight
        decay.
    wd : float
        Weight decay (L2 penalty).
    clip_gradient : float or None
        Clip the rescaled gradient to ``[-clip_gradient, clip_gradient]``.
    learning_rate : float or None
        The learning rate (0.01 when neither it nor ``lr_scheduler`` is given).
    lr_scheduler : LRScheduler or None
        Gives the learning rate from ``num_update``.
    sym : Symbol or None
        Its ``__lr_mult__``/``__wd_mult__`` attributes set the multipliers.
    begin_num_update : int
        The update count to start from.
    multi_precision : bool
        Keep an fp32 master copy of fp16 weights and update that.
    param_dict : dict or None
        Gluon-style parameters carrying ``lr_mult``/``wd_mult`` (by index).

    Examples
    --------
    >>> import symgraph as mx
    >>> opt = mx.optimizer.create('sgd', learning_rate=0.1, wd=0.01,
    ...                           param_idx2name={0: 'fc_weight', 1: 'fc_bias'})
    >>> opt._get_lr(0), opt._get_wd(0), opt._get_wd(1)
    (0.1, 0.01, 0.0)
    >>> mx.optimizer.create('nosuchopt')
    Traceback (most recent call last):
    ...
    ValueError: Cannot find optimizer nosuchopt
    """

    opt_registry: dict[str, type] = {}
    # the attributes a states file may set (name -> validator; subclasses add theirs)
    savable_fields: dict = fields.OPTIMIZER_FIELDS
    # whether ``update`` takes sparse arrays (MXNet's update ops); else dense stand-ins
    sparse_ops = False

    def __init__(self, rescale_grad: float = 1.0, param_idx2name: dict | None = None,
                 wd: float = 0.0, clip_gradient: float | None = None,
                 learning_rate: float | None = None, lr_scheduler=None, sym=None,
                 begin_num_update: int = 0, multi_precision: bool = False,
                 param_dict: dict | None = None):
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if self.lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if self.lr_scheduler is not None and learning_rate is not None:
            if self.lr_scheduler.base_lr != learning_rate:
                print(UserWarning("learning rate from ``lr_scheduler`` has been overwritten "
                                  "by ``learning_rate`` in optimizer."))
                self.lr_scheduler.base_lr = learning_rate
        self.wd = wd
        self.lr_mult: dict = {}
        self.wd_mult: dict = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._all_index_update_counts: dict = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.aggregate_num = 0
        if param_idx2name is None:
            param_idx2name = {}
        assert isinstance(param_idx2name, dict), \
            'param_idx2name should be a dict of param indexes to names.'
        self.idx2name = param_idx2name.copy()
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self.allow_np_array = False
        self.set_lr_mult({})
        self.set_wd_mult({})

    @staticmethod
    def register(klass: type) -> type:
        """Register an optimizer class under its lowercase name.

        >>> @Optimizer.register
        ... class MyOpt(Optimizer):
        ...     pass
        >>> type(Optimizer.create_optimizer('MyOpt')).__name__
        'MyOpt'
        """
        assert isinstance(klass, type)
        name = klass.__name__.lower()
        if name in Optimizer.opt_registry:
            old = Optimizer.opt_registry[name]
            warnings.warn(f"WARNING: New optimizer {klass.__module__}.{klass.__name__} is "
                          f"overriding existing optimizer {old.__module__}.{old.__name__}",
                          stacklevel=2)
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name: str, **kwargs) -> Optimizer:
        """Instantiate the optimizer registered as ``name`` (case-insensitive)."""
        if name.lower() in Optimizer.opt_registry:
            return Optimizer.opt_registry[name.lower()](**kwargs)
        raise ValueError(f"Cannot find optimizer {name}")

    @property
    def learning_rate(self) -> float:
        """The current learning rate (from the scheduler when there is one)."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def create_state(self, index, weight: NDArray):
        """The auxiliary state(s) of weight ``index`` (None for stateless rules)."""

    def create_state_multi_precision(self, index, weight: NDArray):
        """``create_state``, with an fp32 master copy first for fp16 weights."""
        if self.multi_precision and _fp16(weight):
            weight_master_copy = weight.astype(np.float32)
            return (weight_master_copy,) + (self.create_state(index, weight_master_copy),)
        if _fp16(weight) and not self.multi_precision:
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy or "
                          "slow convergence. Consider using multi_precision=True option of the "
                          "optimizer", stacklevel=2)
        return self.create_state(index, weight)

    def update(self, index, weight: NDArray, grad: NDArray, state) -> None:
        """Update ``weight`` in place from ``grad`` and ``state`` (the update of weight
        ``index``)."""
        raise NotImplementedError()

    def update_multi_precision(self, index, weight: NDArray, grad: NDArray, state) -> None:
        """``update``, through the fp32 master copy for fp16 weights (sparse arrays: through
        dense stand-ins unless the optimizer runs MXNet's sparse update ops)."""
        if not self.sparse_ops and has_sparse(weight, grad, state):
            run_densely(functools.partial(self.update_multi_precision, index), weight, grad,
                        state)
        elif self.multi_precision and _fp16(weight):
            weight_master_copy, original_state = state[0], state[1]
            self.update(index, weight_master_copy, grad.astype(np.float32), original_state)
            assign(weight, value_of(weight_master_copy))
        else:
            self.update(index, weight, grad, state)

    def _update_aggregated(self, indices: list, weights: list, grads: list, states: list) -> None:
        """Update same-dtype weights ``aggregate_num`` at a time (the ``Updater``'s lists)."""
        step = self.aggregate_num
        for s in range(0, len(indices), step):
            self.update_multi_precision(indices[s:s + step], weights[s:s + step],
                                        grads[s:s + step], states[s:s + step])

    def _prepare_aggregated(self, indices: list, weights: list, grads: list, states: list):
        """A callable applying :meth:`_update_aggregated` to these arrays; optimizers may
        do work once here that every call would repeat (the ``Updater`` keeps it while the
        arrays stay the same)."""
        return functools.partial(self._update_aggregated, indices, weights, grads, states)

    def _aggregated_rates(self, indices: list) -> tuple[list, list]:
        """Count and rate ``indices`` as the chunked calls of :meth:`_update_aggregated`
        would: the same counts, ``lr_scheduler`` calls, lrs and wds."""
        if self.lr_scheduler is None:  # chunking changes nothing then: count all at once
            self._update_count(indices)
            return self._mults(self.lr, indices, self.lr_mult, 'lr_mult'), \
                self._get_wds(indices)
        step, lrs = self.aggregate_num, []
        for s in range(0, len(indices), step):
            chunk = indices[s:s + step]
            self._update_count(chunk)
            lrs += self._get_lrs(chunk)
        return lrs, self._get_wds(indices)

    def set_learning_rate(self, lr: float) -> None:
        """Set the learning rate (only without an ``lr_scheduler``)."""
        if self.lr_scheduler is not None:
            raise UserWarning("LRScheduler of the optimizer has already been defined. Note that "
                              "set_learning_rate can mutate the value of the learning rate of the "
                              "optimizer only when the LRScheduler of the optimizer is undefined.")
        self.lr = lr

    def set_lr_scale(self, args_lrscale) -> None:
        """Removed in MXNet (use ``set_lr_mult``)."""
        raise DeprecationWarning

    def set_lr_mult(self, args_lr_mult: dict) -> None:
        """Set per-name/index lr multipliers (on top of the symbol's ``__lr_mult__``)."""
        self.lr_mult = self._sym_mults('__lr_mult__')
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult: dict) -> None:
        """Set per-name/index wd multipliers; names not ending in ``_weight``/``_gamma`` get 0."""
        self.wd_mult = {n: 0.0 for n in self.idx2name.values()
                        if not (n.endswith('_weight') or n.endswith('_gamma'))}
        self.wd_mult.update(self._sym_mults('__wd_mult__'))
        self.wd_mult.update(args_wd_mult)

    def _sym_mults(self, key: str) -> dict:
        """name -> float(attribute ``key``) of the symbol's arguments that carry it."""
        if not self.sym_info:
            return {}
        attr, arg_names = self.sym_info
        return {name: _mult(name, key, attr[name][key]) for name in arg_names
                if name in attr and key in attr[name]}

    def _set_current_context(self, device_id: int) -> None:
        if device_id not in self._all_index_update_counts:
            self._all_index_update_counts[device_id] = {}
        self._index_update_count = self._all_index_update_counts[device_id]

    def _update_count(self, index) -> None:
        """Count one more update of ``index`` (or each of a list of indices)."""
        if not isinstance(index, (list, tuple)):
            index = [index]
        counts, begin, top = self._index_update_count, self.begin_num_update, self.num_update
        for idx in index:
            count = counts.get(idx, begin) + 1
            counts[idx] = count
            if count > top:
                top = count
        self.num_update = top

    def _mults(self, base: float, indices, mults: dict, attr: str) -> list:
        """``base`` times each index's multiplier: from ``param_dict``, else ``mults`` by
        index, else ``mults`` by name (MXNet's order)."""
        params, names = self.param_dict, self.idx2name
        if not params and not mults and isinstance(base, float):
            return [base] * len(indices)  # every multiplier 1 (x * 1.0 is x for a float)
        return [base * getattr(params[i], attr) if params and i in params
                else base * mults[i] if i in mults
                else base * mults.get(names[i], 1.0) if i in names
                else base for i in indices]

    def _get_lrs(self, indices) -> list:
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        return self._mults(lr, indices, self.lr_mult, 'lr_mult')

    def _get_lr(self, index) -> float:
        """The learning rate of weight ``index`` (scheduler and ``lr_mult`` applied)."""
        return self._get_lrs([index])[0]

    def _get_wds(self, indices) -> list:
        return self._mults(self.wd, indices, self.wd_mult, 'wd_mult')

    def _get_wd(self, index) -> float:
        """The weight decay of weight ``index`` (``wd_mult`` applied)."""
        return self._get_wds([index])[0]


register = Optimizer.register
create = Optimizer.create_optimizer


def _mult(name: str, key: str, value) -> float:
    """A symbol argument's ``__lr_mult__``/``__wd_mult__`` as a finite float."""
    try:
        mult = float(value)
    except (TypeError, ValueError):
        mult = float("nan")
    if not np.isfinite(mult):
        raise AttrError(f"argument {name}: attribute {key}={str(value)[:80]!r} is not a "
                        "finite number")
    return mult


# names MXNet's mxnet/optimizer/optimizer.py defines that symgraph's package holds
__getattr__ = names_from(__name__, 'symgraph.optimizer', (
    'AdaDelta', 'AdaGrad', 'Adam', 'Adamax', 'DCASGD', 'FTML', 'Ftrl', 'LAMB', 'LARS', 'LBSGD',
    'NAG', 'NDabs', 'Nadam', 'RMSProp', 'SGD', 'SGLD', 'Signum', 'Test', 'Updater', 'ccSGD',
    'get_updater',
))
