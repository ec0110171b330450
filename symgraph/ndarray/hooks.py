"""Where NDArray operations meet autodiff, without knowing it: two slots the imperative layer
fills (:mod:`symgraph.imperative`), as JAX's tracers and PyTorch's dispatcher keys keep the
array type ignorant of differentiation.

- ``STATE.recorder`` (per thread): None unless ``autograd.record()`` (or
  ``set_recording(True)``) is active in this thread; then an object with the
  :class:`Recorder` methods. An NDArray operation reads it once; outside recording that one
  attribute read is all it costs.
- ``STATE.training`` (per thread): whether operators run in training mode (dropout active,
  batch statistics), as ``autograd.train_mode()`` sets it.
- :class:`Scope`: a ``with`` block setting either, restoring it after.
- :func:`backward`: the backward pass of ``NDArray.backward``, installed once by
  :mod:`symgraph.imperative.autograd` (imported by ``import symgraph``).

>>> from symgraph.ndarray import hooks
>>> hooks.STATE.recorder is None and hooks.STATE.training is False
True
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from ..base import MXNetError


class Recorder(Protocol):
    """What ``autograd.record()`` installs: recorded counterparts of NDArray operations."""

    def tracks(self, *arrays) -> bool:
        """Whether an operation on ``arrays`` must be recorded (one takes part in
        differentiation)."""

    def apply(self, op: str, inputs: list, **attrs):
        """Registered operator ``op`` on NDArrays, recorded; its first output."""

    def binary(self, name: str, lhs, rhs, reflected: bool):
        """NDArray arithmetic ``name`` recorded, or None (comparisons: plain values)."""

    def getitem(self, arr, key, shape: tuple):
        """``arr[key]`` recorded (the result has ``shape``)."""

    def invoke(self, op: str, args: tuple, kwargs: dict, out=None):
        """``nd.<op>(*args, **kwargs)`` recorded."""

    def apply_op(self, op: str, attrs: dict, arrays: list, n_regular: int) -> list:
        """Operator ``op`` with attribute strings ``attrs`` on ``arrays`` (inputs, then aux
        states), recorded; its visible outputs."""

    def constant(self, arr, inputs: list) -> None:
        """Make ``arr`` a recorded output of ``inputs`` with a zero gradient to them."""

    def call_graph(self, graph, inputs: list, ctx) -> list:
        """A call of a ``CachedGraph`` (the imperative layer's own graphs) under recording."""


class _State(threading.local):
    """Per-thread: the active recorder (None: not recording) and the training flag."""

    recorder: Recorder | None = None
    training: bool = False


STATE = _State()

KEEP = object()  # a Scope leaves the recorder as it is


class Scope:
    """Sets this thread's recorder (``KEEP``: unchanged) and/or training flag (None:
    unchanged) for a ``with`` block and restores them after: ``autograd.record``, ``pause``,
    ``train_mode`` and ``predict_mode`` are such scopes, and an operator that calls user code
    (``Custom``) pauses recording with ``Scope(None, training)``."""

    __slots__ = ("_enter", "_prev")

    def __init__(self, recorder: Recorder | None | object = KEEP, training: bool | None = None):
        self._enter = (recorder, training)
        self._prev: tuple = (KEEP, None)

    def __enter__(self) -> Scope:
        recorder, training = self._enter
        state = STATE
        self._prev = (KEEP if recorder is KEEP else state.recorder,
                      None if training is None else state.training)
        if recorder is not KEEP:
            state.recorder = recorder
        if training is not None:
            state.training = bool(training)
        return self

    def __exit__(self, *exc) -> None:
        recorder, training = self._prev
        state = STATE
        if recorder is not KEEP:
            state.recorder = recorder
        if training is not None:
            state.training = training

_BACKWARD: list[Callable] = []


def install_backward(run: Callable) -> None:
    """Make ``run(heads, head_grads, retain_graph, train_mode)`` the backward pass of
    ``NDArray.backward`` (the imperative layer calls this once, at its import)."""
    _BACKWARD[:] = [run]


def backward(heads: list, head_grads, retain_graph: bool, train_mode: bool) -> None:
    """Run the installed backward pass (``NDArray.backward``)."""
    if not _BACKWARD:
        raise MXNetError("backward: no autograd layer is loaded (import symgraph.imperative)")
    _BACKWARD[0](heads, head_grads, retain_graph=retain_graph, train_mode=train_mode)
