"""``Updater``: applies an optimizer to (index, grad, weight) and keeps the states.

``get_states``/``set_states`` use the pickle-free format of
:mod:`symgraph.optimizer.states_file`, validated before anything changes. A loaded state is
checked against what the optimizer would create for its weight (structure, shapes, dtypes)
before any update kernel sees it: at load when the weights are given (``set_states(...,
weights=...)``, as ``Module``, ``Trainer`` and ``KVStore`` do), else at its first update.
"""
from __future__ import annotations

import warnings
from itertools import repeat
from operator import is_

from .. import profiler as _profiler
from ..base import DTypeError, ShapeError, dtype_name
from ..ndarray import NDArray
from .optimizer import Optimizer
from .states_file import MAGIC, StatesFormatError, dumps_states, loads_states

__all__ = ["MAGIC", "StatesDTypeError", "StatesFormatError", "StatesShapeError", "Updater",
           "adopt_state", "dumps_states", "get_updater", "loads_states"]


class StatesShapeError(StatesFormatError, ShapeError):
    """A loaded optimizer state's shape differs from the one its weight needs."""


class StatesDTypeError(StatesFormatError, DTypeError):
    """A loaded optimizer state's dtype differs from the one its weight needs."""


def adopt_state(optimizer: Optimizer, index, state, weight: NDArray, source: str,
                name: str | None = None):
    """A new state for ``weight`` holding the values of the loaded ``state``.

    The new state is ``optimizer.create_state_multi_precision(index, weight)`` (on the
    weight's device); ``state`` must have its structure, shapes and dtypes, else
    :class:`StatesShapeError`, :class:`StatesDTypeError` or :class:`StatesFormatError`
    (what MXNet reports at the update: "Incompatible attr ... expected [5,4], got [3]").
    Messages name the weight (``name``, else the optimizer's ``idx2name``/``param_dict``).

    >>> import symgraph as mx
    >>> sgd = mx.optimizer.SGD(momentum=0.9, param_idx2name={0: 'fc_weight'})
    >>> adopt_state(sgd, 0, mx.nd.ones((3,)), mx.nd.ones((5, 4)), 'a.states')
    Traceback (most recent call last):
    ...
    symgraph.optimizer.updater.StatesShapeError: Error in optimizer state of weight 0 \
(fc_weight) from a.states: Shape inconsistent, Provided=(3,), expected shape=(5, 4)
    """
    with warnings.catch_warnings():  # fp16 advice was given when the state was created
        warnings.simplefilter("ignore")
        fresh = optimizer.create_state_multi_precision(index, weight)
    name = name if name is not None else _weight_name(optimizer, index)
    weight_desc = f"of weight {index!r}" + (f" ({name})" if name is not None else "")
    _match(state, fresh, lambda path: f"Error in optimizer state{path} {weight_desc} from "
                                      f"{source}", "")
    for got, want in zip(_nd_leaves(state), _nd_leaves(fresh)):
        want._t.copy_(got._t)
    return fresh


def _match(got, want, where, path: str) -> None:
    """Raise unless ``got`` has ``want``'s structure, shapes and dtypes (``where(path)``
    starts the message; ``path`` is the element, e.g. ``[1][0]``)."""
    if isinstance(want, NDArray):
        if not isinstance(got, NDArray):
            raise StatesFormatError(f"{where(path)}: expected an array of shape {want.shape}, "
                                    f"got {_describe(got)}")
        if got.shape != want.shape:
            raise StatesShapeError(f"{where(path)}: Shape inconsistent, Provided={got.shape}, "
                                   f"expected shape={want.shape}")
        if got._t.dtype != want._t.dtype:
            raise StatesDTypeError(f"{where(path)}: dtype inconsistent, Provided="
                                   f"{dtype_name(got._t.dtype)}, expected dtype="
                                   f"{dtype_name(want._t.dtype)}")
    elif isinstance(want, (tuple, list)):
        if type(got) is not type(want) or len(got) != len(want):
            raise StatesFormatError(f"{where(path)}: expected a {type(want).__name__} of "
                                    f"{len(want)}, got {_describe(got)}")
        for i, (g, w) in enumerate(zip(got, want)):
            _match(g, w, where, f"{path}[{i}]")
    elif type(got) is not type(want):
        raise StatesFormatError(f"{where(path)}: expected {_describe(want)}, got "
                                f"{_describe(got)}")


def _describe(value) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    if isinstance(value, NDArray):
        return f"an array of shape {value.shape}"
    return "None" if value is None else type(value).__name__


def _weight_name(optimizer: Optimizer, index) -> str | None:
    """The parameter name of ``index`` (``idx2name``, else gluon's ``param_dict``)."""
    name = getattr(optimizer, "idx2name", {}).get(index)
    if name is None:
        name = getattr(getattr(optimizer, "param_dict", {}).get(index), "name", None)
    return name


class Updater:
    """Applies an optimizer to ``(index, grad, weight)``, creating each weight's state on
    first use (MXNet's ``mx.optimizer.Updater``).

    ``index``, ``grad`` and ``weight`` may be lists; optimizers with ``aggregate_num > 0``
    (SGD: 4) then update same-dtype weights ``aggregate_num`` at a time, as MXNet does (SGD
    counts and rates them so, and updates them all in one multi-tensor call). What a list's
    update needs besides the numbers (its states, dtype groups, tensors, their checks) is
    prepared once and kept while its arrays, their tensors and its states stay the same.

    Examples
    --------
    >>> import symgraph as mx
    >>> upd = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    >>> w, g = mx.nd.ones((2,)), mx.nd.ones((2,))
    >>> upd(0, g, w); w.asnumpy()
    array([0.9, 0.9], dtype=float32)
    >>> blob = upd.get_states(dump_optimizer=True)
    >>> upd2 = mx.optimizer.get_updater(mx.optimizer.SGD()); upd2.set_states(blob)
    >>> upd2.optimizer.momentum, upd2.states[0].asnumpy()
    (0.9, array([-0.1, -0.1], dtype=float32))
    >>> upd2.set_states(b'not states')
    Traceback (most recent call last):
    ...
    symgraph.optimizer.states_file.StatesFormatError: <states>: not a symgraph \
optimizer-states blob (MXNet's pickled optimizer states are not read: see docs/compat.md, \
'Training')
    >>> upd2.set_states(blob, weights={0: mx.nd.ones((3,))})  # checked against the weights
    Traceback (most recent call last):
    ...
    symgraph.optimizer.updater.StatesShapeError: Error in optimizer state of weight 0 from \
<states>: Shape inconsistent, Provided=(2,), expected shape=(3,)
    """

    def __init__(self, optimizer: Optimizer):
        self.optimizer = optimizer
        self.states: dict = {}
        self.states_synced: dict = {}
        self.aggregate_updates = optimizer.aggregate_num > 0
        self._plans: dict[tuple, _Plan] = {}
        self._source = "<states>"  # where the unsynced states came from (error messages)

    def __call__(self, index, grad, weight) -> None:
        """Update ``weight`` (one NDArray or a list) from ``grad`` with the optimizer."""
        if not isinstance(index, (list, tuple)):
            indices, grads, weights = [index], [grad], [weight]
        else:
            indices, grads, weights = list(index), list(grad), list(weight)
        if not weights:
            return
        keep = isinstance(index, (list, tuple))
        if _profiler.ACTIVE.symbolic or _profiler.ACTIVE.imperative:
            names = [str(self.optimizer.idx2name.get(i, i)) for i in indices]
            _profiler.call_imperative(f"{type(self.optimizer).__name__.lower()}_update",
                                      self._update, indices, grads, weights, keep,
                                      device=weights[0]._t.device, info={"params": names})
            return
        self._update(indices, grads, weights, keep)

    def _update(self, indices: list, grads: list, weights: list, keep: bool) -> None:
        self.optimizer._set_current_context(_device_id(weights[0]))
        if not self.aggregate_updates:
            states = self._states_of(indices, weights)
            for i, w, g, s in zip(indices, weights, grads, states):
                self.optimizer.update_multi_precision(i, w, g, s)
            return
        plan = self._plan(indices, weights, grads, keep=keep)
        for step in plan.steps:
            step()

    def _plan(self, indices: list, weights: list, grads: list, keep: bool) -> _Plan:
        """The prepared update of these arrays: the kept one while they are the same, else a
        new one (kept for lists; a kvstore's single-array calls wrap new NDArrays each time)."""
        key = tuple(indices)
        plan = self._plans.get(key) if keep else None
        if plan is not None and plan.matches(self, weights, grads):
            return plan
        plan = _Plan(self, indices, weights, grads)
        if keep:
            if len(self._plans) >= _MAX_PLANS:  # plans keep their arrays alive
                self._plans.clear()
            self._plans[key] = plan
        return plan

    def _states_of(self, indices: list, weights: list) -> list:
        """The state of each index (decoding bytes indices in place), created on first use;
        a state from :meth:`set_states` is checked against its weight and copied to the
        weight's device at its first use (:func:`adopt_state`)."""
        states, synced = self.states, self.states_synced
        for i, idx in enumerate(indices):
            if isinstance(idx, bytes):
                indices[i] = idx = idx.decode()
            if idx not in states:
                states[idx] = self.optimizer.create_state_multi_precision(idx, weights[i])
                synced[idx] = True
            elif not synced[idx]:
                states[idx] = adopt_state(self.optimizer, idx, states[idx], weights[i],
                                          self._source)
                synced[idx] = True
        return [states[idx] for idx in indices]

    def sync_state_context(self, state, context):
        """``state`` (an NDArray or a nest of them) moved to ``context``."""
        if isinstance(state, NDArray):
            return state.as_in_context(context)
        if isinstance(state, (tuple, list)):
            synced = [self.sync_state_context(s, context) for s in state]
            return tuple(synced) if isinstance(state, tuple) else synced
        return state

    def set_states(self, states: bytes, weights: dict | None = None,
                   source: str | None = None) -> None:
        """Load states written by :meth:`get_states` (and the optimizer, if it was dumped).

        Everything is validated before anything changes: on error this updater keeps its
        states and optimizer.

        Parameters
        ----------
        states : bytes
            What :meth:`get_states` returned.
        weights : dict, optional
            index -> weight NDArray: the states of these indices are checked against them
            now (:func:`adopt_state`); other states are checked at their first update.
        source : str, optional
            Where ``states`` came from (a file name), for error messages.
        """
        self._install(*self._read_states(states, weights, source), source)

    def _read_states(self, blob: bytes, weights: dict | None,
                     source: str | None) -> tuple[dict, Optimizer | None]:
        """The states and optimizer in ``blob``, validated (against ``weights`` where
        given); this updater does not change."""
        source = source or "<states>"
        states, optimizer = loads_states(blob, source)
        opt = optimizer if optimizer is not None else self.optimizer
        for index, weight in (weights or {}).items():
            if index in states:  # the new state is dropped: only the check counts here
                adopt_state(opt, index, states[index], weight, source,
                            _weight_name(opt, index) or _weight_name(self.optimizer, index))
        return states, optimizer

    def _install(self, states: dict, optimizer: Optimizer | None, source: str | None) -> None:
        """Take states (and an optimizer) :meth:`_read_states` validated."""
        self.states = states
        self._plans.clear()
        if optimizer is not None:
            self.optimizer = optimizer
            # MXNet keeps the old optimizer's choice and loops forever when it had none
            self.aggregate_updates = optimizer.aggregate_num > 0
        self.states_synced = dict.fromkeys(self.states.keys(), False)
        self._source = source or "<states>"

    def get_states(self, dump_optimizer: bool = False) -> bytes:
        """The states (and, with ``dump_optimizer``, the optimizer) as bytes, without pickle."""
        return dumps_states(self.states, self.optimizer if dump_optimizer else None)


_MAX_PLANS = 64


def _T(arr: NDArray):
    """What an array holds: its tensor, or for a sparse array its value (never a dense
    copy)."""
    return arr._value if arr._is_sparse else arr._t


def _held(arr: NDArray):
    """What a kept plan depends on: a dense array's tensor (prepared steps capture it); a
    sparse array itself (its value changes every step, and the steps read it at call time)."""
    return arr if arr._is_sparse else arr._t


_MISSING = object()


class _Plan:
    """One aggregated :class:`Updater` call prepared: the optimizer's prepared update of each
    dtype group, kept while the call's arrays, their tensors, the states and the optimizer
    are the same objects (checked each call, by identity)."""

    def __init__(self, updater: Updater, indices: list, weights: list, grads: list):
        states = updater._states_of(indices, weights)
        self.optimizer, self.keys, self.states = updater.optimizer, list(indices), states
        self.size = len(weights) + len(grads)
        self.arrays = weights + grads + [a for s in states for a in _nd_leaves(s)]
        self.tensors = list(map(_held, self.arrays))
        self.steps = [updater.optimizer._prepare_aggregated(*group)
                      for group in _by_dtype(indices, weights, grads, states)]

    def matches(self, updater: Updater, weights: list, grads: list) -> bool:
        arrays = weights + grads
        return (updater.optimizer is self.optimizer and len(arrays) == self.size
                and all(map(is_, arrays, self.arrays))
                and all(map(is_, map(updater.states.get, self.keys, repeat(_MISSING)),
                            self.states))
                and all(map(is_, map(_held, self.arrays), self.tensors)))


def _nd_leaves(state) -> list:
    """The NDArrays in a state (an NDArray, None, or a nest of tuples and lists)."""
    if isinstance(state, NDArray):
        return [state]
    if isinstance(state, (tuple, list)):
        return [a for s in state for a in _nd_leaves(s)]
    return []


def _device_id(weight: NDArray) -> int:
    """``weight.context.device_id`` without building the Context (cpu(1) arrays say 1)."""
    ctx = weight._ctx
    if ctx is not None:
        return ctx.device_id
    device = _T(weight).device  # a sparse weight's value: never a dense copy
    return (device.index or 0) if device.type == "cuda" else 0


def _by_dtype(indices: list, weights: list, grads: list, states: list) -> list[tuple]:
    """``(indices, weights, grads, states)`` per weight dtype, in first-seen order."""
    dtypes = [_T(w).dtype for w in weights]
    if dtypes.count(dtypes[0]) == len(dtypes):
        return [(indices, weights, grads, states)]
    groups: dict = {}
    for i, dtype in enumerate(dtypes):
        groups.setdefault(dtype, []).append(i)
    return [tuple([xs[i] for i in pos] for xs in (indices, weights, grads, states))
            for pos in groups.values()]


def get_updater(optimizer: Optimizer) -> Updater:
    """An :class:`Updater` for ``optimizer`` (MXNet's ``mx.optimizer.get_updater``).

    >>> import symgraph as mx
    >>> type(get_updater(mx.optimizer.create('adam'))).__name__
    'Updater'
    """
    return Updater(optimizer)

