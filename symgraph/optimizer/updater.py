"""``Updater``: applies an optimizer to (index, grad, weight) and keeps the states.

The states are saved without pickle (MXNet pickles them, and unpickling runs arbitrary
code): ``get_states`` returns a self-describing container, ``MAGIC``, an 8-byte header
length, a JSON header and an ``.npz`` archive (read back with ``allow_pickle=False``). The
header holds the state tree (None, numbers, strings, tuples, lists, dicts and references to
the arrays in the archive) and, with ``dump_optimizer=True``, the optimizer: its registered
class name and its attributes, update counters and learning-rate scheduler included. Only
classes registered with ``mx.optimizer.register`` and the schedulers of
``symgraph.lr_scheduler`` are rebuilt.
"""
from __future__ import annotations

import io
import json
import operator
import struct
from itertools import repeat
from operator import is_

import numpy as np

from .. import lr_scheduler as _lrs
from ..ndarray import NDArray
from ..ndarray import array as _nd_array
from .optimizer import Optimizer

MAGIC = b"SYMGRAPH-OPTIMIZER-STATES\n"
_VERSION = 1


class _Encoder:
    """JSON-able tree of a value; NDArrays go to ``self.arrays``."""

    def __init__(self):
        self.arrays: list[np.ndarray] = []

    def __call__(self, v):
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, np.generic):
            return v.item()
        if isinstance(v, NDArray):
            self.arrays.append(v.asnumpy())
            return {"@nd": len(self.arrays) - 1}
        if isinstance(v, (tuple, list)):
            return {"@tuple" if isinstance(v, tuple) else "@list": [self(x) for x in v]}
        if isinstance(v, dict):
            return {"@dict": [[self(k), self(x)] for k, x in v.items()]}
        if isinstance(v, _lrs.LRScheduler) and getattr(_lrs, type(v).__name__, None) is type(v):
            return {"@sched": type(v).__name__, "state": self(vars(v))}
        raise TypeError(f"cannot save optimizer state value of type {type(v).__name__} "
                        "(only numbers, strings, NDArrays, tuples, lists, dicts and "
                        "symgraph.lr_scheduler schedulers are saved)")


def _decode(v, arrays):
    if not isinstance(v, dict):
        return v
    if "@nd" in v:
        return _nd_array(arrays[f"a{v['@nd']}"], dtype=arrays[f"a{v['@nd']}"].dtype)
    if "@tuple" in v:
        return tuple(_decode(x, arrays) for x in v["@tuple"])
    if "@list" in v:
        return [_decode(x, arrays) for x in v["@list"]]
    if "@dict" in v:
        return {_decode(k, arrays): _decode(x, arrays) for k, x in v["@dict"]}
    if "@sched" in v:
        klass = getattr(_lrs, v["@sched"], None)
        if not (isinstance(klass, type) and issubclass(klass, _lrs.LRScheduler)):
            raise ValueError(f"unknown lr_scheduler class {v['@sched']!r} in optimizer states")
        sched = klass.__new__(klass)
        sched.__dict__.update(_decode(v["state"], arrays))
        return sched
    raise ValueError(f"malformed optimizer states: unexpected object {sorted(v)}")


def _dump_optimizer(opt: Optimizer, enc: _Encoder) -> dict:
    name = type(opt).__name__.lower()
    if Optimizer.opt_registry.get(name) is not type(opt):
        raise TypeError(f"optimizer class {type(opt).__name__} is not registered; "
                        "register it with mx.optimizer.register to save it")
    attrs = {k: v for k, v in vars(opt).items()
             if k not in ("param_dict", "_index_update_count")}
    current = next((dev for dev, counts in opt._all_index_update_counts.items()
                    if counts is opt._index_update_count), 0)
    return {"class": name, "attrs": enc(attrs), "current_context": current}


def _load_optimizer(desc: dict, arrays) -> Optimizer:
    klass = Optimizer.opt_registry.get(desc["class"])
    if klass is None:
        raise ValueError(f"optimizer {desc['class']!r} in the states is not registered")
    opt = klass.__new__(klass)
    opt.__dict__.update(_decode(desc["attrs"], arrays))
    opt.param_dict = {}
    counts = opt._all_index_update_counts.setdefault(desc["current_context"], {})
    opt._index_update_count = counts
    return opt


def dumps_states(states: dict, optimizer: Optimizer | None = None) -> bytes:
    """Serialize an updater's states (and optionally its optimizer) without pickle."""
    enc = _Encoder()
    header = {"format": "symgraph-optimizer-states", "version": _VERSION,
              "states": enc(states),
              "optimizer": None if optimizer is None else _dump_optimizer(optimizer, enc)}
    buf = io.BytesIO()
    np.savez(buf, **{f"a{i}": a for i, a in enumerate(enc.arrays)})
    head = json.dumps(header).encode("utf-8")
    return MAGIC + struct.pack("<Q", len(head)) + head + buf.getvalue()


def loads_states(blob: bytes) -> tuple[dict, Optimizer | None]:
    """Read what :func:`dumps_states` wrote: ``(states, optimizer or None)``."""
    if not isinstance(blob, (bytes, bytearray)) or not blob.startswith(MAGIC):
        raise ValueError("not a symgraph optimizer-states blob (MXNet's pickled optimizer "
                         "states are not read: see docs/compat.md, 'Training')")
    start = len(MAGIC) + 8
    (size,) = struct.unpack("<Q", blob[len(MAGIC):start])
    header = json.loads(blob[start:start + size].decode("utf-8"))
    if header.get("version") != _VERSION:
        raise ValueError(f"unsupported optimizer-states version {header.get('version')}")
    with np.load(io.BytesIO(blob[start + size:]), allow_pickle=False) as arrays:
        arrays = dict(arrays)
    states = _decode(header["states"], arrays)
    opt = None if header["optimizer"] is None else _load_optimizer(header["optimizer"], arrays)
    return states, opt


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
    ValueError: not a symgraph optimizer-states blob (MXNet's pickled optimizer states are \
not read: see docs/compat.md, 'Training')
    """

    def __init__(self, optimizer: Optimizer):
        self.optimizer = optimizer
        self.states: dict = {}
        self.states_synced: dict = {}
        self.aggregate_updates = optimizer.aggregate_num > 0
        self._plans: dict[tuple, _Plan] = {}

    def __call__(self, index, grad, weight) -> None:
        """Update ``weight`` (one NDArray or a list) from ``grad`` with the optimizer."""
        if not isinstance(index, (list, tuple)):
            indices, grads, weights = [index], [grad], [weight]
        else:
            indices, grads, weights = list(index), list(grad), list(weight)
        if not weights:
            return
        self.optimizer._set_current_context(_device_id(weights[0]))
        if not self.aggregate_updates:
            states = self._states_of(indices, weights)
            for i, w, g, s in zip(indices, weights, grads, states):
                self.optimizer.update_multi_precision(i, w, g, s)
            return
        plan = self._plan(indices, weights, grads, keep=isinstance(index, (list, tuple)))
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
        """The state of each index (decoding bytes indices in place), created on first use
        and moved to the weight's device after :meth:`set_states`."""
        states, synced = self.states, self.states_synced
        for i, idx in enumerate(indices):
            if isinstance(idx, bytes):
                indices[i] = idx = idx.decode()
            if idx not in states:
                states[idx] = self.optimizer.create_state_multi_precision(idx, weights[i])
                synced[idx] = True
            elif not synced[idx]:
                states[idx] = self.sync_state_context(states[idx], weights[i].context)
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

    def set_states(self, states: bytes) -> None:
        """Load states written by :meth:`get_states` (and the optimizer, if it was dumped)."""
        loaded, optimizer = loads_states(states)
        self.states = loaded
        self._plans.clear()
        if optimizer is not None:
            self.optimizer = optimizer
            # MXNet keeps the old optimizer's choice and loops forever when it had none
            self.aggregate_updates = optimizer.aggregate_num > 0
        self.states_synced = dict.fromkeys(self.states.keys(), False)

    def get_states(self, dump_optimizer: bool = False) -> bytes:
        """The states (and, with ``dump_optimizer``, the optimizer) as bytes, without pickle."""
        return dumps_states(self.states, self.optimizer if dump_optimizer else None)


_MAX_PLANS = 64
_T = operator.attrgetter("_t")
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
        self.tensors = list(map(_T, self.arrays))
        self.steps = [updater.optimizer._prepare_aggregated(*group)
                      for group in _by_dtype(indices, weights, grads, states)]

    def matches(self, updater: Updater, weights: list, grads: list) -> bool:
        arrays = weights + grads
        return (updater.optimizer is self.optimizer and len(arrays) == self.size
                and all(map(is_, arrays, self.arrays))
                and all(map(is_, map(updater.states.get, self.keys, repeat(_MISSING)),
                            self.states))
                and all(map(is_, map(_T, self.arrays), self.tensors)))


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
    t = weight._t
    return (t.device.index or 0) if t.is_cuda else 0


def _by_dtype(indices: list, weights: list, grads: list, states: list) -> list[tuple]:
    """``(indices, weights, grads, states)`` per weight dtype, in first-seen order."""
    dtypes = [w._t.dtype for w in weights]
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
