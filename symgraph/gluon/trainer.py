"""``mx.gluon.Trainer``: applies an optimizer to a set of Parameters (MXNet 1.9.1's
``mxnet.gluon.trainer``).

Every decision and error is MXNet's: the ``update_on_kvstore`` choice (dense, sparse and
distributed cases, ``MXNET_UPDATE_ON_KVSTORE`` through ``model._create_kvstore``), the
stale-gradient ``UserWarning`` raised as an exception, the rescale check of distributed
stores and the AMP loss scaler's skip on overflow. One thing differs, on purpose:
``save_states`` writes the ``Updater``'s pickle-free states atomically (MXNet pickles them),
so ``load_states`` reads only files written by symgraph.
"""
from __future__ import annotations

from .. import optimizer as opt
from ..fileio import atomic_write
from ..kvstore import KVStore, each_key
from ..model import _create_kvstore, _create_sparse_kvstore
from .parameter import Parameter, ParameterDict, arrays_version

__all__ = ["Trainer"]

_STALE_GRAD = (
    "Gradient of Parameter `%s` on context %s has not been updated "
    "by backward since last `step`. This could mean a bug in your "
    "model that made it only use a subset of the Parameters (Blocks) "
    "for this iteration. If you are intentionally only using a subset, "
    "call step with ignore_stale_grad=True to suppress this "
    "warning and skip updating of Parameters with stale gradient")
_BATCH_SIZE_CHANGED = (
    "Possible change in the `batch_size` from previous `step` detected. Optimizer gradient "
    "normalizing factor will not change w.r.t new batch_size when update_on_kvstore=True "
    "and when distributed kvstore is used.")
_ON_KVSTORE = ("%s() when parameters are updated on kvstore is not supported. Try setting "
               "`update_on_kvstore` to False when creating trainer.")


def _param_list(params) -> list:
    """The Parameters of a list, tuple or dict (dicts in sorted key order)."""
    if isinstance(params, (dict, ParameterDict)):
        params = [params[key] for key in sorted(list(params.keys()))]
    if not isinstance(params, (list, tuple)):
        raise ValueError("First argument must be a list or dict of Parameters, "
                         f"got {type(params)}.")
    return list(params)


class Trainer:
    """Applies an `Optimizer` on a set of Parameters. Trainer should be used together with
    `autograd` (here, gradients may also be written into ``param.grad()`` directly).

    .. note:: For the following cases, updates always happen on kvstore, i.e., you cannot set
       ``update_on_kvstore=False``: dist kvstore with sparse weights or sparse gradients;
       dist async kvstore.

    Parameters
    ----------
    params : ParameterDict, dict or list of Parameter
        The set of parameters to optimize.
    optimizer : str or Optimizer
        The optimizer to use (a name registered with ``mx.optimizer.register``).
    optimizer_params : dict
        Key-word arguments to be passed to optimizer constructor, e.g.
        ``{'learning_rate': 0.1}``.
    kvstore : str or KVStoreBase
        kvstore type for multi-device training (see ``mx.kv.create``).
    compression_params : dict
        Gradient compression, e.g. ``{'type': '2bit', 'threshold': 0.5}``.
    update_on_kvstore : bool, default None
        Whether to perform parameter updates on kvstore. If None, the trainer chooses
        depending on the type of kvstore; if given, ``MXNET_UPDATE_ON_KVSTORE`` is ignored.

    Examples
    --------
    >>> import symgraph as mx
    >>> w = mx.gluon.Parameter('w', shape=(2,))
    >>> w.initialize(init=mx.init.One(), ctx=mx.cpu())
    >>> trainer = mx.gluon.Trainer([w], 'sgd', {'learning_rate': 0.5})
    >>> w.grad()[:] = 1
    >>> w.data()._fresh_grad = True
    >>> trainer.step(batch_size=2)
    >>> w.data().asnumpy()
    array([0.75, 0.75], dtype=float32)
    >>> trainer.step(batch_size=2)
    Traceback (most recent call last):
    ...
    UserWarning: Gradient of Parameter `w` on context cpu(0) has not been updated by \
backward since last `step`. This could mean a bug in your model that made it only use a \
subset of the Parameters (Blocks) for this iteration. If you are intentionally only using a \
subset, call step with ignore_stale_grad=True to suppress this warning and skip updating of \
Parameters with stale gradient
    >>> mx.gluon.Trainer('w', 'sgd')
    Traceback (most recent call last):
    ...
    ValueError: First argument must be a list or dict of Parameters, got <class 'str'>.
    """

    def __init__(self, params, optimizer, optimizer_params=None, kvstore="device",
                 compression_params=None, update_on_kvstore=None):
        params = _param_list(params)
        self._params: list = []
        self._contains_sparse_weight = False
        self._contains_sparse_grad = False
        self._param2idx: dict = {}
        for i, param in enumerate(params):
            if not isinstance(param, Parameter):
                raise ValueError("First argument must be a list or dict of Parameters, "
                                 f"got list of {type(param)}.")
            self._param2idx[param.name] = i
            self._params.append(param)
            param._set_trainer(self)
            if param._stype != "default":
                self._contains_sparse_weight = True
            if param._grad_stype != "default":
                self._contains_sparse_grad = True
        self._compression_params = compression_params
        self._contexts = self._check_contexts()
        self._init_optimizer(optimizer, optimizer_params if optimizer_params else {})
        self._scale = self._optimizer.rescale_grad
        self._kvstore_params = {"kvstore": kvstore, "update_on_kvstore": update_on_kvstore}
        self._kv_initialized = False
        self._kvstore = None
        self._update_on_kvstore = None
        self._distributed = None
        self._params_to_init: list = []
        self._reset_kvstore()

    def _check_contexts(self):
        """The contexts shared by every Parameter (AssertionError when they differ)."""
        contexts = None
        for param in self._params:
            ctx = param.list_ctx()
            if not (contexts is None or contexts == ctx):
                raise AssertionError(
                    "All Parameters must be initialized on the same set of contexts, "
                    f"but Parameter {param.name} is initialized on {ctx} while previous "
                    f"Parameters are initialized on {contexts}.")
            contexts = ctx
        return contexts

    def _init_optimizer(self, optimizer, optimizer_params: dict) -> None:
        """Create (or adopt) the optimizer and one updater per context."""
        # param_dict is shared, not copied: later lr_mult/wd_mult changes take effect
        param_dict = dict(enumerate(self._params))
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params:
                raise AssertionError("optimizer_params must be None if optimizer is an "
                                     "instance of Optimizer instead of str")
            self._optimizer = optimizer
            self._optimizer.param_dict = param_dict
        else:
            self._optimizer = opt.create(optimizer, param_dict=param_dict, **optimizer_params)
        self._updaters = [opt.get_updater(self._optimizer) for _ in self._contexts]

    # ------------------------------------------------------------------ kvstore
    def _init_params(self) -> None:
        """Initialize parameters in the KVStore; deferred ones wait for a later call."""
        if not self._kv_initialized:
            raise AssertionError("Cannot initialize parameters in KVStore "
                                 "when KVStore is not initialized.")
        params_to_init, dense = [], []
        if self._kvstore:
            for param in self._params_to_init:
                if param._deferred_init:
                    params_to_init.append(param)
                    continue
                param_arrays = param._check_and_get(param._data, list)
                idx = self._param2idx[param.name]
                if param._stype != "default":
                    self._kvstore.init(idx, param_arrays[0])
                else:
                    dense.append((idx, param_arrays))
            each_key(self._kvstore, "broadcast", [i for i, _ in dense],
                     value=[arrays[0] for _, arrays in dense], out=[a for _, a in dense])
        self._params_to_init = params_to_init

    def _reset_kvstore(self) -> None:
        """Forget the kvstore (re-created at the next step); distributed ones cannot be."""
        if self._kvstore and "dist" in self._kvstore.type:
            raise RuntimeError("Cannot reset distributed KVStore.")
        self._kv_initialized = False
        self._kvstore = None
        self._distributed = None
        self._update_on_kvstore = None
        self._params_to_init = list(self._params)

    def _init_kvstore(self) -> None:
        """Create the kvstore and decide ``update_on_kvstore`` (MXNet's table)."""
        config = self._kvstore_params
        if self._contains_sparse_weight:
            kvstore, update_on_kvstore = self._sparse_weight_kvstore(config)
        elif self._contains_sparse_grad:
            kvstore, update_on_kvstore = self._sparse_grad_kvstore(config)
        else:
            kvstore, update_on_kvstore = self._dense_kvstore(config)
        if kvstore:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                # set before init: multi-precision optimizers need it first
                kvstore.set_optimizer(self._optimizer)
            self._kvstore = kvstore
            self._update_on_kvstore = update_on_kvstore
        else:
            self._kvstore = None
            self._update_on_kvstore = None
        self._kv_initialized = True

    def _sparse_weight_kvstore(self, config: dict):
        """Sparse weights: a kvstore is required and updates always run on it."""
        kvstore, update_on_kvstore = _create_sparse_kvstore(config["kvstore"])
        self._distributed = "dist" in kvstore.type
        if config["update_on_kvstore"] is False:
            raise ValueError("Cannot set update_on_kvstore=False when sparse weights "
                             "are present.")
        return kvstore, update_on_kvstore

    def _sparse_grad_kvstore(self, config: dict):
        """Dense weights, sparse gradients: update locally unless distributed."""
        arg_arrays = {param.name: param.data(self._contexts[0]) for param in self._params}
        kvstore, _ = _create_kvstore(config["kvstore"], len(self._contexts), arg_arrays)
        self._distributed = "dist" in kvstore.type if kvstore else False
        update_on_kvstore = self._distributed
        if config["update_on_kvstore"] is not None:
            if config["update_on_kvstore"] is False and self._distributed:
                raise ValueError("Cannot set update_on_kvstore=False on dist kvstore "
                                 "when sparse gradients are present.")
            update_on_kvstore = config["update_on_kvstore"]
        if kvstore is not None and not isinstance(kvstore, KVStore):
            raise ValueError(f"Cannot use {type(kvstore)} for multi-device training with "
                             "sparse gradients")
        return kvstore, update_on_kvstore

    def _dense_kvstore(self, config: dict):
        """Dense weights and gradients: only async with local updates is refused."""
        arg_arrays = {param.name: param.data(self._contexts[0]) for param in self._params}
        kvstore, update_on_kvstore = _create_kvstore(config["kvstore"], len(self._contexts),
                                                     arg_arrays)
        self._distributed = "dist" in kvstore.type if kvstore else False
        if self._distributed and "async" in kvstore.type:
            update_on_kvstore = True
            if config["update_on_kvstore"] is False:
                raise ValueError("Please set update_on_kvstore=True "
                                 "when training in async mode.")
        if config["update_on_kvstore"] is not None:
            update_on_kvstore = config["update_on_kvstore"]
        # as MXNet: with no kvstore (one context), update_on_kvstore=True fails here with
        # AttributeError ('NoneType' object has no attribute 'is_capable')
        if update_on_kvstore and not kvstore.is_capable("optimizer"):
            if config["update_on_kvstore"]:
                raise ValueError("Please set update_on_kvstore=False "
                                 f"when training with {type(kvstore)}")
            update_on_kvstore = False
        return kvstore, update_on_kvstore

    def _ensure_kvstore(self) -> None:
        """Create the kvstore and initialize parameters in it, when not done yet."""
        if not self._kv_initialized:
            self._init_kvstore()
        if self._params_to_init:
            self._init_params()

    # ------------------------------------------------------------------ learning rate
    @property
    def learning_rate(self) -> float:
        """The current learning rate of the optimizer."""
        if not isinstance(self._optimizer, opt.Optimizer):
            raise UserWarning("Optimizer has to be defined before its learning "
                              "rate can be accessed.")
        return self._optimizer.learning_rate

    @property
    def optimizer(self) -> opt.Optimizer:
        """The optimizer (UserWarning when it has not been set)."""
        if isinstance(self._optimizer, opt.Optimizer):
            return self._optimizer
        raise UserWarning("Optimizer has not been initialized yet")

    def set_learning_rate(self, lr: float) -> None:
        """Sets a new learning rate of the optimizer.

        Parameters
        ----------
        lr : float
            The new learning rate of the optimizer.

        >>> import symgraph as mx
        >>> w = mx.gluon.Parameter('w', shape=(1,)); w.initialize(ctx=mx.cpu())
        >>> trainer = mx.gluon.Trainer([w], 'sgd', {'learning_rate': 0.1})
        >>> trainer.set_learning_rate(0.2); trainer.learning_rate
        0.2
        """
        if not isinstance(self._optimizer, opt.Optimizer):
            raise UserWarning("Optimizer has to be defined before its learning "
                              "rate is mutated.")
        self._optimizer.set_learning_rate(lr)

    # ------------------------------------------------------------------ steps
    def _row_sparse_pull(self, parameter, out, row_id, full_idx: bool = False) -> None:
        """Pull ``parameter`` from the kvstore into ``out`` (``pull`` when ``full_idx`` on a
        non-distributed store, else ``row_sparse_pull``)."""
        self._ensure_kvstore()
        idx = self._param2idx[parameter.name]
        if full_idx and "dist" not in self._kvstore.type:
            if row_id.size != out.shape[0]:
                raise AssertionError()
            self._kvstore.pull(idx, out=out, priority=-idx, ignore_sparse=False)
        else:
            self._kvstore.row_sparse_pull(idx, out=out, row_ids=row_id, priority=-idx)

    def _check_and_rescale_grad(self, scale: float) -> None:
        """Set the optimizer's ``rescale_grad``; a distributed store cannot follow changes."""
        if self._update_on_kvstore and self._distributed and self._kv_initialized:
            if self._optimizer.rescale_grad != scale:
                raise UserWarning(_BATCH_SIZE_CHANGED)
        self._optimizer.rescale_grad = scale

    def step(self, batch_size: int, ignore_stale_grad: bool = False) -> None:
        """Makes one step of parameter update: ``allreduce_grads()`` then ``update()``.

        Parameters
        ----------
        batch_size : int
            Batch size of data processed. Gradient will be normalized by `1/batch_size`.
        ignore_stale_grad : bool, optional, default=False
            If true, skips Parameters whose gradient has not been updated since the last
            step instead of raising ``UserWarning``.
        """
        self._check_and_rescale_grad(self._scale / batch_size)
        self._ensure_kvstore()
        self._allreduce_grads()
        self._update(ignore_stale_grad)

    def allreduce_grads(self) -> None:
        """Reduce each parameter's gradients over the contexts (before ``update``), e.g. to
        clip them in between; not available when updates run on the kvstore."""
        self._ensure_kvstore()
        if self._kvstore and self._update_on_kvstore:
            raise AssertionError(_ON_KVSTORE % "allreduce_grads")
        self._allreduce_grads()

    def _allreduce_grads(self) -> None:
        if not self._kvstore:
            return
        dense, grads = [], []
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            grad_list = param.list_grad()
            if grad_list[0].stype != "default":
                self._push_pull_sparse(i, param, grad_list)
            else:
                dense.append(i)
                grads.append(grad_list)
        # on the kvstore: push gradients, pull updated weights; else allreduce in place
        outs = [self._params[i].list_data() for i in dense] if self._update_on_kvstore \
            else None
        each_key(self._kvstore, "pushpull", dense, [-i for i in dense], value=grads, out=outs)

    def _push_pull_sparse(self, i: int, param, grad_list: list) -> None:
        """Sparse gradients: push, then pull weights (or gradients) of dense Parameters."""
        self._kvstore.push(i, grad_list, priority=-i)
        if param._stype == "default":
            pull_list = param.list_data() if self._update_on_kvstore else param.list_grad()
            self._kvstore.pull(i, pull_list, priority=-i, ignore_sparse=self._distributed)

    def update(self, batch_size: int, ignore_stale_grad: bool = False) -> None:
        """Makes one step of parameter update from the (already reduced) gradients.

        Parameters
        ----------
        batch_size : int
            Batch size of data processed. Gradient will be normalized by `1/batch_size`.
        ignore_stale_grad : bool, optional, default=False
            If true, skips Parameters with stale gradients instead of raising.
        """
        self._ensure_kvstore()
        if self._kvstore and self._update_on_kvstore:
            raise AssertionError(_ON_KVSTORE % "update")
        self._check_and_rescale_grad(self._scale / batch_size)
        self._update(ignore_stale_grad)

    def _trained_arrays(self) -> tuple:
        """:func:`_trained` of this trainer's parameters, every data array, and each
        updater's ``(indices, grads, weights)`` when all are fresh; kept until any
        parameter's arrays change (``arrays_version``): a step does not look them up."""
        version = arrays_version()
        kept = getattr(self, "_trained_cache", None)
        if kept is None or kept[0] != version or kept[1] is not self._params:
            trained = _trained(self._params)
            datas = [d for _, _, ds, _ in trained for d in ds]
            batches = [tuple(zip(*[(i, grads[k], datas_[k]) for i, _, datas_, grads in trained]))
                       for k in range(len(self._updaters))]
            kept = self._trained_cache = (version, self._params, trained, datas, batches)
        return kept[2:]

    def _update(self, ignore_stale_grad: bool = False) -> None:
        loss_scaler = getattr(self, "_amp_loss_scaler", None)
        if loss_scaler is not None and loss_scaler.has_overflow(self._params):
            return  # skip on overflow
        on_kvstore = bool(self._kvstore and self._update_on_kvstore)
        trained, all_datas, batches = self._trained_arrays()
        if not on_kvstore and all(d._fresh_grad for d in all_datas):  # the usual step
            for d in all_datas:
                d._fresh_grad = False
            for updater, batch in zip(self._updaters, batches):
                if batch:
                    updater(*batch)
            return
        updates: list[list] = [[] for _ in self._updaters]
        for i, param, datas, grads in trained:
            if not ignore_stale_grad:
                for data in datas:
                    if not data._fresh_grad:
                        _check_fresh(param)
            if on_kvstore:
                continue  # the kvstore updated it (and fresh flags stay set, as in MXNet)
            for upd, arr, grad in zip(updates, datas, grads):
                if not ignore_stale_grad or arr._fresh_grad:
                    upd.append((i, grad, arr))
                    arr._fresh_grad = False
        if on_kvstore:
            return
        for updater, upd in zip(self._updaters, updates):
            if upd:
                indices, grads, weights = zip(*upd)
                updater(indices, grads, weights)

    # ------------------------------------------------------------------ states
    def save_states(self, fname: str) -> None:
        """Saves trainer states (e.g. optimizer, momentum) to a file, atomically and without
        pickle (``optimizer.param_dict`` is not saved).

        Parameters
        ----------
        fname : str
            Path to output states file.
        """
        if self._optimizer is None:
            raise AssertionError()
        self._ensure_kvstore()
        if self._update_on_kvstore:
            if self._params_to_init:
                raise AssertionError("Cannot save trainer states when some "
                                     "parameters are not yet initialized in kvstore.")
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
        else:
            atomic_write(fname, self._updaters[0].get_states(dump_optimizer=True))

    def load_states(self, fname: str) -> None:
        """Loads trainer states (e.g. optimizer, momentum) from a file written by
        :meth:`save_states`; ``optimizer.param_dict`` is set from this Trainer's parameters.
        The file is validated, and each state checked against its parameter, before any
        updater changes (``StatesShapeError`` naming the parameter and both shapes).

        Parameters
        ----------
        fname : str
            Path to input states file.
        """
        self._ensure_kvstore()
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            self._optimizer = self._kvstore._updater.optimizer
        else:
            with open(fname, "rb") as f:
                blob = f.read()
            # every updater's states read and checked against its context's weights first:
            # an error leaves all of them as they were
            loaded = [updater._read_states(blob, {i: p._data[k] for i, p in
                                                  enumerate(self._params) if p._data}, fname)
                      for k, updater in enumerate(self._updaters)]
            optimizer = loaded[0][1]  # one optimizer shared by the updaters, as before
            for updater, (states, _) in zip(self._updaters, loaded):
                updater._install(states, optimizer, fname)
            self._optimizer = self._updaters[0].optimizer
        self._optimizer.param_dict = dict(enumerate(self._params))


def _trained(params: list) -> list[tuple]:
    """(index, parameter, data arrays, gradient arrays) of the parameters with gradients."""
    return [(i, p, p._check_and_get(p._data, list), p.list_grad()) for i, p in enumerate(params)
            if p.grad_req != "null"]


def _check_fresh(param) -> None:
    """Raise MXNet's stale-gradient ``UserWarning`` for the first stale copy of ``param``."""
    for data in param._check_and_get(param._data, list):
        if not data._fresh_grad:
            raise UserWarning(_STALE_GRAD % (param.name, str(data.context)))
